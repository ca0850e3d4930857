//! The producer: where records go, how they are batched and compressed, what fails fast, and
//! that retries across a leader failure write every record exactly once and in order. All on
//! tokio's paused clock.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use common::engine::{config, read_committed, ready};
use common::{scratch_dir, split};
use kdeck::client::partitioner::partition_for_key;
use kdeck::client::producer::{Delivery, ProduceError, Producer, ProducerConfig, ProducerRecord, RecordMetadata};
use kdeck::engine::{Acks, Cluster, ErrorCode, LinkFault, NodeId, TopicConfig, TopicPartition};
use kdeck::storage::records::{self, Compression};
use tokio::sync::oneshot::error::TryRecvError;

async fn cluster_with_topic(dir: &std::path::Path, topic: &str, partitions: i32, rf: i32) -> Cluster {
    let cluster = Cluster::start(config(dir)).await.expect("start");
    cluster
        .create_topic(
            topic,
            TopicConfig::new(partitions, rf).with_min_insync_replicas(rf.min(2)),
        )
        .await
        .expect("create");
    ready(&cluster, topic, partitions).await;
    cluster
}

async fn resolved(delivery: Delivery) -> RecordMetadata {
    delivery.await.expect("resolved").expect("acknowledged")
}

/// Every record of a partition as (key, value), by offset.
async fn fetch_records(cluster: &Cluster, tp: &TopicPartition) -> Vec<(Option<Bytes>, Option<Bytes>)> {
    let data = cluster.fetch(tp, 0, 1 << 20).await.expect("fetch");
    records::decode(&data.records)
        .expect("valid batches")
        .into_iter()
        .map(|r| (r.key, r.value))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn keyed_records_go_where_murmur2_says_and_explicit_partitions_win() {
    let dir = scratch_dir();
    let cluster = cluster_with_topic(dir.path(), "keys", 6, 1).await;
    let producer = Producer::new(cluster.clone(), ProducerConfig::default())
        .await
        .expect("producer");

    let keys: Vec<String> = (0..30)
        .map(|i| format!("user-{i}"))
        .chain(["kafka".to_owned()])
        .collect();
    let mut deliveries = Vec::new();
    for round in 0..2 {
        for key in &keys {
            let record = ProducerRecord::new("keys", format!("{key} #{round}")).with_key(key.clone());
            deliveries.push((key.clone(), producer.enqueue(record).await.expect("enqueue")));
        }
    }
    for (key, delivery) in deliveries {
        let metadata = resolved(delivery).await;
        assert_eq!(&*metadata.topic, "keys");
        assert_eq!(
            metadata.partition,
            partition_for_key(key.as_bytes(), 6),
            "{key} goes where the Java client puts it, every time"
        );
    }
    assert_eq!(partition_for_key(b"kafka", 6), 4);
    let on_four = fetch_records(&cluster, &TopicPartition::new("keys", 4)).await;
    for round in 0..2 {
        let expected = (Some(Bytes::from("kafka")), Some(Bytes::from(format!("kafka #{round}"))));
        assert!(on_four.contains(&expected), "partition 4 holds {expected:?}");
    }

    let explicit = ProducerRecord::new("keys", "pinned")
        .with_key("kafka")
        .with_partition(2);
    let metadata = producer.send(explicit).await.expect("explicit partition");
    assert_eq!(metadata.partition, 2, "an explicit partition beats the key");
    let on_two = fetch_records(&cluster, &TopicPartition::new("keys", 2)).await;
    assert_eq!(
        on_two.get(metadata.offset as usize).and_then(|r| r.1.clone()),
        Some(Bytes::from("pinned"))
    );

    for partition in [6, -1] {
        let err = producer
            .send(ProducerRecord::new("keys", "nowhere").with_partition(partition))
            .await
            .expect_err("no such partition");
        assert_eq!(
            err,
            ProduceError::UnknownPartition {
                topic: "keys".into(),
                partition,
                partitions: 6
            }
        );
    }
    producer.close().await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn records_enqueued_together_linger_into_one_batch() {
    let dir = scratch_dir();
    let cluster = cluster_with_topic(dir.path(), "linger", 1, 1).await;
    let producer = Producer::new(
        cluster.clone(),
        ProducerConfig {
            linger_ms: 50,
            batch_size: 1 << 20,
            ..ProducerConfig::default()
        },
    )
    .await
    .expect("producer");
    let mut deliveries = Vec::new();
    for n in 0..10 {
        let record = ProducerRecord::new("linger", format!("record {n}"));
        deliveries.push(producer.enqueue(record).await.expect("enqueue"));
    }
    tokio::time::sleep(Duration::from_millis(40)).await;
    for delivery in &mut deliveries {
        assert_eq!(delivery.try_recv().err(), Some(TryRecvError::Empty), "still lingering");
    }
    for (n, delivery) in deliveries.into_iter().enumerate() {
        assert_eq!(resolved(delivery).await.offset, n as i64);
    }

    let tp = TopicPartition::new("linger", 0);
    let data = cluster.fetch(&tp, 0, 1 << 20).await.expect("fetch");
    let batches = split(&data.records);
    assert_eq!(batches.len(), 1, "one batch for the ten records");
    assert_eq!((batches[0].0.base_offset, batches[0].0.records_count), (0, 10));
    let values: Vec<_> = records::decode(&data.records)
        .expect("decodes")
        .into_iter()
        .map(|r| r.value)
        .collect();
    let expected: Vec<_> = (0..10).map(|n| Some(Bytes::from(format!("record {n}")))).collect();
    assert_eq!(values, expected);
    producer.close().await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_full_batch_goes_out_at_once_and_flush_sends_the_rest() {
    let dir = scratch_dir();
    let cluster = cluster_with_topic(dir.path(), "full", 1, 1).await;
    let batch_size = 1024;
    let producer = Producer::new(
        cluster.clone(),
        ProducerConfig {
            linger_ms: 60_000,
            batch_size,
            delivery_timeout_ms: 180_000,
            ..ProducerConfig::default()
        },
    )
    .await
    .expect("producer");
    let mut deliveries = Vec::new();
    for n in 0..30 {
        let record = ProducerRecord::new("full", format!("{n:0>100}"));
        deliveries.push(producer.enqueue(record).await.expect("enqueue"));
    }
    let mut deliveries = deliveries.into_iter();
    let first = deliveries.next().expect("a delivery");
    let metadata = tokio::time::timeout(Duration::from_secs(5), first)
        .await
        .expect("the full first batch does not wait for the minute of linger")
        .expect("resolved")
        .expect("acknowledged");
    assert_eq!(metadata.offset, 0);
    let mut last = deliveries.next_back().expect("a delivery");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        last.try_recv().err(),
        Some(TryRecvError::Empty),
        "the open batch lingers"
    );

    producer.flush().await;
    assert_eq!(
        last.try_recv()
            .expect("flush resolved it")
            .expect("acknowledged")
            .offset,
        29
    );
    for delivery in deliveries {
        resolved(delivery).await;
    }
    let tp = TopicPartition::new("full", 0);
    let batches = split(&cluster.fetch(&tp, 0, 1 << 20).await.expect("fetch").records);
    assert!(batches.len() >= 3, "30 records of 100 bytes fill several 1 KiB batches");
    assert!(batches.iter().all(|(_, bytes)| bytes.len() <= batch_size));
    assert_eq!(batches.iter().map(|(h, _)| h.records_count).sum::<i32>(), 30);
    producer.close().await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn every_compression_codec_round_trips() {
    let dir = scratch_dir();
    let codecs = [
        (Compression::None, 0u8),
        (Compression::Gzip, 1),
        (Compression::Snappy, 2),
        (Compression::Lz4, 3),
        (Compression::Zstd, 4),
    ];
    let cluster = cluster_with_topic(dir.path(), "codecs", codecs.len() as i32, 1).await;
    for (partition, (codec, attribute)) in (0..).zip(codecs) {
        let producer = Producer::new(
            cluster.clone(),
            ProducerConfig {
                compression: codec,
                ..ProducerConfig::default()
            },
        )
        .await
        .expect("producer");
        let sent: Vec<ProducerRecord> = (0..50)
            .map(|n| ProducerRecord {
                headers: vec![
                    ("codec".into(), Some(Bytes::from(format!("{codec:?}")))),
                    ("empty".into(), None),
                ],
                ..ProducerRecord::new("codecs", format!("{codec:?} value {n} ").repeat(20))
                    .with_key(format!("key {n}"))
                    .with_partition(partition)
            })
            .collect();
        let mut deliveries = Vec::new();
        for record in sent.clone() {
            deliveries.push(producer.enqueue(record).await.expect("enqueue"));
        }
        producer.flush().await;
        for delivery in deliveries {
            resolved(delivery).await;
        }
        let tp = TopicPartition::new("codecs", partition);
        let data = cluster.fetch(&tp, 0, 1 << 20).await.expect("fetch");
        for (header, _) in split(&data.records) {
            assert_eq!(header.compression(), attribute, "{codec:?} batches say so");
        }
        let got = records::decode(&data.records).expect("decompresses");
        assert_eq!(got.len(), sent.len(), "{codec:?}");
        for (record, original) in got.iter().zip(&sent) {
            assert_eq!(
                (&record.key, &record.value),
                (&original.key, &original.value),
                "{codec:?}"
            );
            let headers: Vec<_> = record
                .headers
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                .collect();
            assert_eq!(headers, original.headers, "{codec:?}");
        }
        producer.close().await;
    }
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn retries_across_a_leader_kill_write_every_record_once_and_in_order() {
    let dir = scratch_dir();
    let partitions = 3;
    let cluster = cluster_with_topic(dir.path(), "orders", partitions, 3).await;
    let producer = Producer::new(cluster.clone(), ProducerConfig::default())
        .await
        .expect("producer");
    let victim_tp = TopicPartition::new("orders", 0);
    let victim = cluster
        .snapshot()
        .partition(&victim_tp)
        .and_then(|p| p.leader)
        .expect("a leader");

    let mut sent: BTreeMap<i32, Vec<Bytes>> = BTreeMap::new();
    let mut deliveries = Vec::new();
    for n in 0..600 {
        let partition = n % partitions;
        let value = Bytes::from(format!("order {n}"));
        sent.entry(partition).or_default().push(value.clone());
        let record = ProducerRecord::new("orders", value).with_partition(partition);
        deliveries.push((partition, producer.enqueue(record).await.expect("enqueue")));
        if n % 20 == 19 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        if n == 300 {
            let in_flight = deliveries.iter().filter(|(p, d)| *p == 0 && d.is_empty()).count();
            assert!(
                in_flight > 0,
                "records of partition 0 are on their way when its leader dies"
            );
            cluster.kill(victim).expect("kill the leader");
        }
    }
    each_record_once_in_send_order(&cluster, &victim_tp, victim, sent, deliveries, "leader kill").await;
    producer.close().await;
    cluster.shutdown().await;
}

/// After a failover of `victim_tp`'s leader `victim`: every delivery was acknowledged, the
/// partition has a new leader, and each partition holds each record sent to it exactly once,
/// in send order, acknowledged at offsets 0, 1, 2...
async fn each_record_once_in_send_order(
    cluster: &Cluster,
    victim_tp: &TopicPartition,
    victim: i32,
    sent: BTreeMap<i32, Vec<Bytes>>,
    deliveries: Vec<(i32, Delivery)>,
    fault: &str,
) {
    let mut offsets: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for (partition, delivery) in deliveries {
        let metadata = delivery
            .await
            .expect("resolved")
            .unwrap_or_else(|e| panic!("acknowledged despite the {fault}: {e}"));
        assert_eq!(metadata.partition, partition);
        offsets.entry(partition).or_default().push(metadata.offset);
    }
    assert_ne!(
        cluster.snapshot().partition(victim_tp).and_then(|p| p.leader),
        Some(victim),
        "partition 0 failed over"
    );
    for (partition, values) in &sent {
        let tp = TopicPartition::new("orders", *partition);
        let committed: Vec<Bytes> = read_committed(cluster, &tp)
            .await
            .into_values()
            .map(Bytes::from)
            .collect();
        assert_eq!(&committed, values, "{tp}: each record once, in send order ({fault})");
        assert_eq!(
            offsets[partition],
            (0..values.len() as i64).collect::<Vec<_>>(),
            "{tp}: acknowledged in send order ({fault})"
        );
    }
}

/// How the partition's leader fails in [`batches_in_flight_survive_a_failed_leader`].
#[derive(Debug, Clone, Copy)]
enum LeaderFault {
    Kill,
    /// A frozen process (a long GC pause): it is fenced, and when it wakes up it handles the
    /// produce requests queued meanwhile as if still the leader.
    Pause,
}

/// Five batches in flight per partition (tiny batches, so partition 0 has several out when its
/// leader fails): every record is acknowledged, written exactly once and in send order.
async fn batches_in_flight_survive_a_failed_leader(fault: LeaderFault) {
    let dir = scratch_dir();
    let partitions = 3;
    let cluster = cluster_with_topic(dir.path(), "orders", partitions, 3).await;
    let producer = Producer::new(
        cluster.clone(),
        ProducerConfig {
            max_in_flight: 5,
            // Two records a batch.
            batch_size: 120,
            linger_ms: 1,
            request_timeout_ms: 5_000,
            ..ProducerConfig::default()
        },
    )
    .await
    .expect("producer");
    let victim_tp = TopicPartition::new("orders", 0);
    let victim = cluster
        .snapshot()
        .partition(&victim_tp)
        .and_then(|p| p.leader)
        .expect("a leader");

    let mut sent: BTreeMap<i32, Vec<Bytes>> = BTreeMap::new();
    let mut deliveries = Vec::new();
    for n in 0..900 {
        let partition = n % partitions;
        let value = Bytes::from(format!("order {n}"));
        sent.entry(partition).or_default().push(value.clone());
        let record = ProducerRecord::new("orders", value).with_partition(partition);
        deliveries.push((partition, producer.enqueue(record).await.expect("enqueue")));
        if n % 30 == 29 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if n == 450 {
            let in_flight = deliveries.iter().filter(|(p, d)| *p == 0 && d.is_empty()).count();
            assert!(
                in_flight > 0,
                "records of partition 0 are on their way when its leader fails"
            );
            match fault {
                LeaderFault::Kill => cluster.kill(victim).expect("kill the leader"),
                LeaderFault::Pause => cluster.pause(victim).expect("pause the leader"),
            }
        }
    }
    if let LeaderFault::Pause = fault {
        cluster
            .wait_for(Duration::from_secs(30), |s| {
                s.partition(&victim_tp)
                    .is_some_and(|p| p.leader.is_some_and(|l| l != victim))
            })
            .await
            .expect("the paused leader is fenced and replaced");
        cluster.resume(victim).expect("resume the old leader");
    }
    let label = format!("{fault:?}");
    each_record_once_in_send_order(&cluster, &victim_tp, victim, sent, deliveries, &label).await;
    producer.close().await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn five_batches_in_flight_survive_a_leader_kill() {
    batches_in_flight_survive_a_failed_leader(LeaderFault::Kill).await;
}

#[tokio::test(start_paused = true)]
async fn five_batches_in_flight_survive_a_paused_leader() {
    batches_in_flight_survive_a_failed_leader(LeaderFault::Pause).await;
}

/// A batch waiting for its acks=all answer does not hold up the next ones: up to
/// `max_in_flight` of a partition reach the leader at once, no more, and their records are
/// acknowledged in order.
#[tokio::test(start_paused = true)]
async fn up_to_max_in_flight_batches_of_a_partition_are_sent_at_once() {
    let dir = scratch_dir();
    let cluster = cluster_with_topic(dir.path(), "pipelined", 1, 3).await;
    let tp = TopicPartition::new("pipelined", 0);
    let leader = cluster
        .snapshot()
        .partition(&tp)
        .and_then(|p| p.leader)
        .expect("a leader");
    let producer = Producer::new(
        cluster.clone(),
        ProducerConfig {
            max_in_flight: 3,
            // One record a batch.
            batch_size: 1,
            linger_ms: 0,
            ..ProducerConfig::default()
        },
    )
    .await
    .expect("producer");
    // The followers' fetches crawl, so the HW (and every acks=all answer) waits.
    for follower in (1..=3).filter(|b| *b != leader) {
        cluster.set_link(
            NodeId::Broker(follower),
            NodeId::Broker(leader),
            Some(LinkFault::Delay(Duration::from_secs(1))),
        );
    }
    let mut deliveries = Vec::new();
    for n in 0..8 {
        deliveries.push(
            producer
                .enqueue(ProducerRecord::new("pipelined", format!("r{n}")))
                .await
                .expect("enqueue"),
        );
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let leader_end = |cluster: &Cluster| {
        cluster
            .snapshot()
            .partition(&tp)
            .and_then(|p| p.replicas.iter().find(|r| r.is_leader).and_then(|r| r.log_end_offset))
    };
    assert!(deliveries.iter().all(|d| d.is_empty()), "nothing is acknowledged yet");
    assert_eq!(
        leader_end(&cluster),
        Some(3),
        "three batches reached the leader, the rest wait"
    );
    for follower in (1..=3).filter(|b| *b != leader) {
        cluster.set_link(NodeId::Broker(follower), NodeId::Broker(leader), None);
    }
    for (n, delivery) in deliveries.into_iter().enumerate() {
        assert_eq!(resolved(delivery).await.offset, n as i64, "acknowledged in order");
    }
    producer.close().await;
    cluster.shutdown().await;
}

/// A batch that overtakes its predecessor on the way to the leader (here the link slows down
/// the first one only) is refused as out of order and sent again after it: order holds.
#[tokio::test(start_paused = true)]
async fn a_batch_that_overtakes_an_earlier_one_is_sent_again_after_it() {
    let dir = scratch_dir();
    let cluster = cluster_with_topic(dir.path(), "overtake", 1, 1).await;
    let tp = TopicPartition::new("overtake", 0);
    let leader = cluster
        .snapshot()
        .partition(&tp)
        .and_then(|p| p.leader)
        .expect("a leader");
    let producer = Producer::new(
        cluster.clone(),
        ProducerConfig {
            linger_ms: 0,
            ..ProducerConfig::default()
        },
    )
    .await
    .expect("producer");
    // The leader knows the producer from here on, so it checks its sequence numbers.
    assert_eq!(
        producer
            .send(ProducerRecord::new("overtake", "first"))
            .await
            .expect("sent")
            .offset,
        0
    );
    cluster.set_link(
        NodeId::Client(0),
        NodeId::Broker(leader),
        Some(LinkFault::Delay(Duration::from_millis(200))),
    );
    let slow = producer
        .enqueue(ProducerRecord::new("overtake", "slow"))
        .await
        .expect("enqueue");
    tokio::time::sleep(Duration::from_millis(10)).await;
    cluster.set_link(NodeId::Client(0), NodeId::Broker(leader), None);
    let fast = producer
        .enqueue(ProducerRecord::new("overtake", "fast"))
        .await
        .expect("enqueue");
    let (slow, fast) = (resolved(slow).await, resolved(fast).await);
    assert_eq!(
        (slow.offset, fast.offset),
        (1, 2),
        "the overtaking batch lands after the slow one"
    );
    let values: Vec<_> = fetch_records(&cluster, &tp).await.into_iter().map(|(_, v)| v).collect();
    assert_eq!(
        values,
        ["first", "slow", "fast"].map(|v| Some(Bytes::from(v))).to_vec(),
        "each record once, in send order"
    );
    producer.close().await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn max_in_flight_is_limited_as_in_kafka() {
    let dir = scratch_dir();
    let cluster = cluster_with_topic(dir.path(), "limits", 1, 1).await;
    for (max_in_flight, idempotent, accepted) in
        [(0, false, false), (6, true, false), (5, true, true), (6, false, true)]
    {
        let outcome = Producer::new(
            cluster.clone(),
            ProducerConfig {
                max_in_flight,
                enable_idempotence: idempotent,
                acks: if idempotent { Acks::All } else { Acks::Leader },
                ..ProducerConfig::default()
            },
        )
        .await;
        assert_eq!(
            outcome.is_ok(),
            accepted,
            "max_in_flight {max_in_flight}, idempotence {idempotent}"
        );
    }
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn errors_retrying_cannot_fix_come_back_at_once() {
    let dir = scratch_dir();
    let mut cluster_config = config(dir.path());
    cluster_config.log.max_message_bytes = 4096;
    let cluster = Cluster::start(cluster_config).await.expect("start");
    cluster
        .create_topic("small", TopicConfig::new(1, 1))
        .await
        .expect("create");
    ready(&cluster, "small", 1).await;
    let producer = Producer::new(cluster.clone(), ProducerConfig::default())
        .await
        .expect("producer");

    assert_eq!(
        producer.send(ProducerRecord::new("missing", "x")).await,
        Err(ProduceError::UnknownTopic("missing".into()))
    );
    let too_large = tokio::time::timeout(
        Duration::from_secs(10),
        producer.send(ProducerRecord::new("small", vec![b'x'; 10_000])),
    )
    .await
    .expect("refused long before delivery.timeout.ms");
    assert_eq!(
        too_large,
        Err(ProduceError::Kafka {
            tp: TopicPartition::new("small", 0),
            error: ErrorCode::MessageTooLarge
        })
    );
    let duplicate_header = ProducerRecord {
        headers: vec![("h".into(), None), ("h".into(), Some(Bytes::from("again")))],
        ..ProducerRecord::new("small", "x")
    };
    assert!(matches!(
        producer.send(duplicate_header).await,
        Err(ProduceError::InvalidRecord(_))
    ));
    let negative_time = ProducerRecord {
        timestamp: Some(-5),
        ..ProducerRecord::new("small", "x")
    };
    assert!(matches!(
        producer.send(negative_time).await,
        Err(ProduceError::InvalidRecord(_))
    ));

    let after = producer
        .send(ProducerRecord::new("small", "fits"))
        .await
        .expect("the producer carries on");
    assert_eq!(after.offset, 0, "nothing of the refused batch was written");

    let closed = producer.clone();
    producer.close().await;
    assert_eq!(
        closed.send(ProducerRecord::new("small", "late")).await,
        Err(ProduceError::Closed)
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn acks_settings_follow_kafka() {
    let dir = scratch_dir();
    let cluster = cluster_with_topic(dir.path(), "acks", 1, 3).await;
    let refused = Producer::new(
        cluster.clone(),
        ProducerConfig {
            acks: Acks::Leader,
            ..ProducerConfig::default()
        },
    )
    .await;
    assert!(refused.is_err(), "idempotence needs acks=all");

    // acks=0 writes at offset 0 but learns no offset.
    for (acks, offset) in [(Acks::None, -1), (Acks::Leader, 1), (Acks::All, 2)] {
        let producer = Producer::new(
            cluster.clone(),
            ProducerConfig {
                acks,
                enable_idempotence: acks == Acks::All,
                ..ProducerConfig::default()
            },
        )
        .await
        .expect("producer");
        let metadata = producer
            .send(ProducerRecord::new("acks", format!("{acks:?}")))
            .await
            .expect("sent");
        assert_eq!(metadata.offset, offset, "acks {acks:?}");
        producer.close().await;
    }
    let committed = read_committed(&cluster, &TopicPartition::new("acks", 0)).await;
    assert_eq!(committed.len(), 3);
    cluster.shutdown().await;
}

#[test]
fn bench_produce_prints_the_producer_performance_line() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kdeck"))
        .args([
            "bench",
            "produce",
            "--records",
            "20000",
            "--partitions",
            "2",
            "--replication-factor",
            "1",
            "--brokers",
            "1",
            "--compression",
            "lz4",
        ])
        .output()
        .expect("run kdeck");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().expect("output");
    let rest = last.strip_prefix("20000 records sent, ").expect(last);
    for part in [
        " records/sec (",
        " MB/sec), ",
        " ms avg latency, ",
        " ms max latency, ",
        " ms 50th, ",
        " ms 95th, ",
        " ms 99th, ",
    ] {
        assert!(rest.contains(part), "{part:?} in {last:?}");
    }
    assert!(rest.ends_with(" ms 99.9th."), "{last:?}");
}

/// An idempotent batch of `count` records from producer `(id, epoch)` starting at `sequence`.
fn idempotent_batch(id: i64, epoch: i16, sequence: i32, count: i64) -> Vec<u8> {
    let recs: Vec<_> = (0..count)
        .map(|i| {
            let mut r = records::record(i, 1_000 + i, None, Some(Bytes::from(format!("value {i}"))));
            r.producer_id = id;
            r.producer_epoch = epoch;
            r.sequence = sequence + i as i32;
            r
        })
        .collect();
    records::encode_batch(&recs, Compression::None)
        .expect("encodable")
        .to_vec()
}

/// The leader reads a batch's sequence from its framing alone and leaves the CRC to the log's
/// append; a batch it would answer without appending (a duplicate, an out-of-order sequence)
/// must still be refused as corrupt first, as Kafka validates before it checks sequences.
#[tokio::test(start_paused = true)]
async fn corrupt_batches_are_refused_as_corrupt_whatever_their_sequence_says() {
    let dir = scratch_dir();
    let cluster = cluster_with_topic(dir.path(), "crc", 1, 3).await;
    let tp = TopicPartition::new("crc", 0);
    let (id, epoch) = cluster.init_producer_id().await.expect("producer id");
    let timeout = Duration::from_secs(10);
    let first = idempotent_batch(id, epoch, 0, 5);
    let offset = cluster
        .produce(&tp, first.clone(), Acks::All, timeout)
        .await
        .expect("first append");
    assert_eq!(offset, 0);
    // The same batch again is a duplicate: answered with its offsets, written once.
    assert_eq!(cluster.produce(&tp, first.clone(), Acks::All, timeout).await, Ok(0));

    let flip = |mut bytes: Vec<u8>| {
        let last = bytes.len() - 1;
        bytes[last] ^= 0x40;
        bytes
    };
    // A damaged duplicate, a damaged out-of-order batch and a damaged next batch.
    for bytes in [
        flip(first),
        flip(idempotent_batch(id, epoch, 20, 5)),
        flip(idempotent_batch(id, epoch, 5, 5)),
    ] {
        assert_eq!(
            cluster.produce(&tp, bytes, Acks::All, timeout).await,
            Err(ErrorCode::CorruptMessage)
        );
    }
    // Nothing damaged was written, and the producer's next batch still fits.
    assert_eq!(
        cluster
            .produce(&tp, idempotent_batch(id, epoch, 5, 5), Acks::All, timeout)
            .await,
        Ok(5)
    );
    assert_eq!(read_committed(&cluster, &tp).await.len(), 10);
    cluster.shutdown().await;
}

/// KIP-360: a batch whose fate the producer never learns (its leader froze past the delivery
/// timeout) leaves its sequence unresolved; the producer then bumps the epoch of the same
/// producer id and numbers from 0 again, as Java's and librdkafka's producers do, and the
/// leader takes the new epoch from sequence 0.
#[tokio::test(start_paused = true)]
async fn an_unresolved_sequence_bumps_the_epoch_of_the_same_producer_id() {
    let dir = scratch_dir();
    let cluster = cluster_with_topic(dir.path(), "bump", 1, 1).await;
    let tp = TopicPartition::new("bump", 0);
    let producer = Producer::new(
        cluster.clone(),
        ProducerConfig {
            enable_idempotence: true,
            acks: Acks::All,
            linger_ms: 0,
            request_timeout_ms: 1_000,
            delivery_timeout_ms: 2_000,
            ..ProducerConfig::default()
        },
    )
    .await
    .expect("producer");
    resolved(
        producer
            .enqueue(ProducerRecord::new("bump", "a"))
            .await
            .expect("enqueue"),
    )
    .await;
    let leader = cluster.metadata().partition(&tp).expect("partition").leader;
    cluster.pause(leader).expect("pause");
    let lost = producer.send(ProducerRecord::new("bump", "b")).await;
    assert!(
        matches!(lost, Err(ProduceError::DeliveryTimeout { .. })),
        "the frozen leader never answers: {lost:?}"
    );
    cluster.resume(leader).expect("resume");
    let after = producer
        .send(ProducerRecord::new("bump", "c"))
        .await
        .expect("the producer carries on after the bump");

    let data = cluster.fetch(&tp, 0, 1 << 20).await.expect("fetch");
    let log = records::decode(&data.records).expect("valid batches");
    let first = log.first().expect("the first record");
    let last = log
        .iter()
        .find(|r| r.offset == after.offset)
        .expect("the record after the bump");
    assert_eq!(last.producer_id, first.producer_id, "the same producer id");
    assert_eq!(last.producer_epoch, first.producer_epoch + 1, "the next epoch");
    assert_eq!(last.sequence, 0, "sequences start again at 0");
    producer.close().await;
    cluster.shutdown().await;
}
