//! Topics, reads and the snapshot: what operators and clients rely on besides failover.

mod common;

use std::time::Duration;

use common::engine::{Acked, config, coordinators_ready, read_committed, ready};
use common::{producer_batch, scratch_dir};
use kdeck::engine::{Acks, Cluster, ErrorCode, LinkFault, NodeId, TopicConfig, TopicPartition};

#[tokio::test(start_paused = true)]
async fn topic_admin_validates_and_grows_and_deletes() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    let err = cluster
        .create_topic("wide", TopicConfig::new(1, 4))
        .await
        .expect_err("RF 4 on 3 brokers");
    assert!(err.to_string().contains("replication factor 4"), "{err}");
    let err = cluster
        .create_topic("bad name!", TopicConfig::new(1, 1))
        .await
        .expect_err("illegal name");
    assert!(err.to_string().contains("legal topic name"), "{err}");
    coordinators_ready(&cluster).await;
    let (code, message) = cluster
        .delete_topic_checked("__consumer_offsets")
        .await
        .expect_err("an internal topic stays");
    assert_eq!(code, ErrorCode::InvalidRequest);
    assert!(message.contains("internal topic"), "{message}");
    assert!(cluster.metadata().topics.contains_key("__consumer_offsets"));
    cluster
        .create_topic("grow", TopicConfig::new(2, 2))
        .await
        .expect("create");
    let err = cluster
        .create_topic("grow", TopicConfig::new(2, 2))
        .await
        .expect_err("duplicate");
    assert!(err.to_string().contains("already exists"), "{err}");
    ready(&cluster, "grow", 2).await;

    cluster.create_partitions("grow", 5).await.expect("add partitions");
    ready(&cluster, "grow", 5).await;
    assert!(
        cluster.create_partitions("grow", 3).await.is_err(),
        "partitions never shrink"
    );
    let t = TopicPartition::new("grow", 4);
    assert!(
        cluster
            .produce(&t, producer_batch(1, 0, 1, 8), Acks::All, Duration::from_secs(5))
            .await
            .is_ok()
    );

    cluster.delete_topic("grow").await.expect("delete");
    cluster
        .wait_for(Duration::from_secs(10), |s| {
            s.partitions.iter().all(|p| p.tp.topic != "grow")
        })
        .await
        .expect("gone from the metadata");
    let gone = cluster
        .wait_for(Duration::from_secs(10), |_| {
            (0..3).all(|b| !dir.path().join(format!("broker-{b}/grow-4")).exists())
        })
        .await;
    assert!(gone.is_ok(), "replica directories are deleted");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn consumers_read_only_up_to_the_high_watermark_and_list_offsets_answers() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("hw", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "hw", 1).await;
    let t = TopicPartition::new("hw", 0);
    let mut acked = Acked::default();
    for n in 0..5 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(10))
            .await
            .expect("produce");
    }
    let s = cluster.snapshot();
    let leader = s.partition(&t).and_then(|p| p.leader).expect("leader");
    for b in (0..3).filter(|b| *b != leader) {
        cluster.set_link(NodeId::Broker(leader), NodeId::Broker(b), Some(LinkFault::Cut));
    }
    for n in 10..13 {
        cluster
            .produce(&t, producer_batch(1, 0, n, 8), Acks::Leader, Duration::from_secs(5))
            .await
            .expect("acks=1");
    }
    let p = cluster.snapshot().partition(&t).cloned().expect("partition");
    let leader_leo = p.replicas.iter().find(|r| r.is_leader).and_then(|r| r.log_end_offset);
    assert_eq!(leader_leo, Some(8));
    assert_eq!(p.high_watermark, Some(5), "nothing past the followers is committed");
    assert_eq!(cluster.list_offset(&t, -1).await, Ok(5), "latest is the high watermark");
    assert_eq!(cluster.list_offset(&t, -2).await, Ok(0));
    let committed = read_committed(&cluster, &t).await;
    assert_eq!(committed.keys().copied().collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
    let data = cluster.fetch(&t, 5, 1 << 20).await.expect("fetch at the HW");
    assert!(data.records.is_empty(), "uncommitted records are not served");
    assert_eq!(
        cluster.fetch(&t, 9, 1 << 20).await.err(),
        Some(ErrorCode::OffsetOutOfRange)
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn list_offsets_by_timestamp_finds_the_first_record_at_or_after_it() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("times", TopicConfig::new(1, 1))
        .await
        .expect("create");
    ready(&cluster, "times", 1).await;
    let t = TopicPartition::new("times", 0);
    for (n, ts) in [(0u64, 1_000i64), (1, 2_000), (2, 3_000)] {
        cluster
            .produce(&t, producer_batch(1, ts, n, 8), Acks::All, Duration::from_secs(5))
            .await
            .expect("produce");
    }
    assert_eq!(cluster.list_offset_with_time(&t, 1_500).await, Ok((1, 2_000)));
    assert_eq!(cluster.list_offset_with_time(&t, 3_000).await, Ok((2, 3_000)));
    assert_eq!(cluster.list_offset(&t, 9_999).await, Ok(-1));
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_snapshot_reports_rates_sizes_and_broker_traffic() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("rates", TopicConfig::new(2, 3))
        .await
        .expect("create");
    ready(&cluster, "rates", 2).await;
    let first = cluster.snapshot();
    assert!(first.topics.iter().any(|t| t.name == "rates"));
    let t = TopicPartition::new("rates", 0);
    for n in 0..20 {
        cluster
            .produce(&t, producer_batch(5, 0, n, 50), Acks::All, Duration::from_secs(5))
            .await
            .expect("produce");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let s = cluster.snapshot();
    let topic = s.topics.iter().find(|t| t.name == "rates").expect("topic");
    assert_eq!(
        (topic.name.as_str(), topic.partitions, topic.replication_factor),
        ("rates", 2, 3)
    );
    assert_eq!(topic.messages, 100);
    assert!(topic.size_bytes > 0);
    assert!(topic.messages_per_sec > 0.0 && topic.bytes_per_sec > 0.0, "{topic:?}");
    let leader = s.partition(&t).and_then(|p| p.leader).expect("leader");
    let b = s.broker(leader).expect("broker");
    assert!(
        b.bytes_in > 0 && b.bytes_out > 0,
        "the leader took produce and served follower fetches"
    );
    assert_eq!(s.brokers.iter().filter(|b| b.is_controller).count(), 1);
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_power_loss_drops_unflushed_data_and_replication_brings_it_back() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("power", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "power", 1).await;
    let t = TopicPartition::new("power", 0);
    let mut acked = Acked::default();
    for n in 0..10 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(10))
            .await
            .expect("produce");
    }
    let leader = cluster.snapshot().partition(&t).and_then(|p| p.leader).expect("leader");
    let victim = (0..3).find(|b| *b != leader).expect("a follower");
    cluster.kill_power_loss(victim).expect("power loss");
    // flush = never: nothing was fsynced, so the victim's copy is gone.
    let log = kdeck::storage::Log::open(
        dir.path().join(format!("broker-{victim}/power-0")),
        kdeck::storage::LogConfig::default(),
        0,
    )
    .expect("open the victim's log");
    assert_eq!(log.log_end_offset(), 0, "unflushed records do not survive a power cut");
    drop(log);
    cluster.start_broker(victim).expect("restart");
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partition(&t)
                .is_some_and(|p| p.isr.len() == 3 && p.replicas.iter().all(|r| r.log_end_offset == p.high_watermark))
        })
        .await
        .expect("the victim refetches everything and rejoins");
    acked.verify(&cluster, &t).await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn retention_deletes_old_segments_on_every_replica_and_moves_the_log_start() {
    let dir = scratch_dir();
    let cluster = Cluster::start(kdeck::engine::ClusterConfig {
        retention_check_interval_ms: 1_000,
        ..config(dir.path())
    })
    .await
    .expect("start");
    cluster
        .create_topic(
            "short",
            TopicConfig::new(1, 3)
                .with_segment_bytes(1024)
                .with_retention(None, Some(2048)),
        )
        .await
        .expect("create");
    ready(&cluster, "short", 1).await;
    let t = TopicPartition::new("short", 0);
    let mut acked = Acked::default();
    for n in 0..60 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(10))
            .await
            .expect("produce");
    }
    let s = cluster
        .wait_for(Duration::from_secs(10), |s| {
            s.partition(&t).and_then(|p| p.log_start_offset).is_some_and(|o| o > 0)
        })
        .await
        .expect("retention moved the log start");
    let start = s.partition(&t).and_then(|p| p.log_start_offset).expect("log start");
    assert_eq!(cluster.list_offset(&t, -2).await, Ok(start));
    assert_eq!(
        cluster.fetch(&t, 0, 1024).await.err(),
        Some(ErrorCode::OffsetOutOfRange)
    );
    let kept = read_committed(&cluster, &t).await;
    assert_eq!(kept.keys().next().copied(), Some(start));
    assert_eq!(kept.keys().last().copied(), Some(59));
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_lossy_link_slows_replication_but_loses_nothing() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("lossy", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "lossy", 1).await;
    let t = TopicPartition::new("lossy", 0);
    let leader = cluster.snapshot().partition(&t).and_then(|p| p.leader).expect("leader");
    for b in (0..3).filter(|b| *b != leader) {
        cluster.set_link(
            NodeId::Broker(leader),
            NodeId::Broker(b),
            Some(LinkFault::Drop { one_in: 3 }),
        );
    }
    let mut acked = Acked::default();
    for n in 0..30 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(60))
            .await
            .expect("produce");
    }
    acked.verify(&cluster, &t).await;
    cluster
        .wait_for(Duration::from_secs(60), |s| {
            s.partition(&t)
                .is_some_and(|p| p.replicas.iter().all(|r| r.log_end_offset == p.high_watermark))
        })
        .await
        .expect("followers catch up through the loss");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_controlled_shutdown_moves_leadership_first_and_restarts_without_recovery() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    let mut events = cluster.events();
    cluster
        .create_topic("graceful", TopicConfig::new(3, 3).with_min_insync_replicas(2))
        .await
        .expect("create");
    ready(&cluster, "graceful", 3).await;
    let t = TopicPartition::new("graceful", 0);
    let mut acked = Acked::default();
    for n in 0..10 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(10))
            .await
            .expect("produce");
    }
    let leader = cluster.snapshot().partition(&t).and_then(|p| p.leader).expect("leader");
    cluster.stop(leader).await.expect("stop");
    let s = cluster.snapshot();
    assert!(
        s.partitions
            .iter()
            .all(|p| p.leader.is_some() && p.leader != Some(leader)),
        "leaders moved at once"
    );
    assert!(s.partitions.iter().all(|p| !p.isr.contains(&leader)));
    let (mut fenced_for_shutdown, mut moved) = (false, 0);
    while let Ok(e) = events.try_recv() {
        match e.kind {
            kdeck::engine::EventKind::BrokerFenced { broker, reason } => {
                fenced_for_shutdown |= broker == leader && reason == kdeck::engine::CONTROLLED_SHUTDOWN;
            }
            kdeck::engine::EventKind::LeaderElected { old, reason, .. } if old == Some(leader) => {
                assert_eq!(reason, kdeck::engine::ElectionReason::ControlledShutdown);
                moved += 1;
            }
            kdeck::engine::EventKind::IsrShrunk { removed, reason, .. } if removed == vec![leader] => {
                assert_eq!(reason, format!("broker {leader} controlled shutdown"));
            }
            _ => {}
        }
    }
    assert!(fenced_for_shutdown, "the timeline says why the broker left");
    assert!(moved > 0, "its leaderships moved, for the controlled shutdown");
    for n in 10..20 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(10))
            .await
            .expect("produce while stopped");
    }
    let marker = dir
        .path()
        .join(format!("broker-{leader}/graceful-0/.kafka_cleanshutdown"));
    assert!(marker.exists(), "a controlled shutdown closes the logs cleanly");
    cluster.start_broker(leader).expect("start again");
    ready(&cluster, "graceful", 3).await;
    acked.verify(&cluster, &t).await;
    cluster.shutdown().await;
}

/// One idempotent batch: producer id, epoch and base sequence as a producer sets them.
fn idempotent_batch(producer_id: i64, sequence: i32, n: u64) -> Vec<u8> {
    use kdeck::storage::records;
    let mut r = records::record(
        0,
        common::engine::wall_clock_ms(),
        None,
        Some(format!("idem {n}").into_bytes().into()),
    );
    r.producer_id = producer_id;
    r.producer_epoch = 0;
    r.sequence = sequence;
    records::encode_batch(&[r], records::Compression::None)
        .expect("encode")
        .to_vec()
}

#[tokio::test(start_paused = true)]
async fn a_retried_idempotent_batch_is_written_once_even_across_a_leader_change() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("idem", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "idem", 1).await;
    let t = TopicPartition::new("idem", 0);
    let (pid, _) = cluster.init_producer_id().await.expect("producer id");
    let (other, _) = cluster.init_producer_id().await.expect("second id");
    assert_ne!(pid, other, "producer ids are unique");
    let mut offsets = Vec::new();
    for seq in 0..5 {
        let batch = idempotent_batch(pid, seq, seq as u64);
        offsets.push(
            cluster
                .produce(&t, batch, Acks::All, Duration::from_secs(5))
                .await
                .expect("produce"),
        );
    }
    // The leader dies; the client retries its last batch against the new leader.
    let leader = cluster.snapshot().partition(&t).and_then(|p| p.leader).expect("leader");
    cluster.kill(leader).expect("kill");
    let retried = loop {
        match cluster
            .produce(&t, idempotent_batch(pid, 4, 4), Acks::All, Duration::from_secs(5))
            .await
        {
            Ok(offset) => break offset,
            Err(e) if e.is_retriable() => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("retry failed: {e:?}"),
        }
    };
    assert_eq!(retried, offsets[4], "the retry is answered with the original offset");
    let gap = cluster
        .produce(&t, idempotent_batch(pid, 9, 9), Acks::All, Duration::from_secs(5))
        .await;
    assert_eq!(gap, Err(ErrorCode::OutOfOrderSequenceNumber));
    let next = cluster
        .produce(&t, idempotent_batch(pid, 5, 5), Acks::All, Duration::from_secs(5))
        .await;
    assert_eq!(next, Ok(offsets[4] + 1));
    let committed = read_committed(&cluster, &t).await;
    assert_eq!(committed.len(), 6, "every record exactly once");
    cluster.shutdown().await;
}

/// A client with several batches of one partition in flight sends them in sequence order; the
/// broker handles requests concurrently but appends them in the order they arrived, so none is
/// refused as out of order. On a multi-threaded runtime, where the broker's request tasks
/// really do run in any order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_in_flight_together_are_appended_in_the_order_they_arrive() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("pipelined", TopicConfig::new(1, 3).with_min_insync_replicas(2))
        .await
        .expect("create");
    ready(&cluster, "pipelined", 1).await;
    let t = TopicPartition::new("pipelined", 0);
    let (pid, _) = cluster.init_producer_id().await.expect("producer id");
    let send = |seq: i32| {
        cluster.produce(
            &t,
            idempotent_batch(pid, seq, seq as u64),
            Acks::All,
            Duration::from_secs(10),
        )
    };
    let mut offsets = Vec::new();
    for round in 0..20 {
        let base = round * 5;
        // join! polls its futures in order the first time, so the requests leave in order.
        let (a, b, c, d, e) = tokio::join!(
            send(base),
            send(base + 1),
            send(base + 2),
            send(base + 3),
            send(base + 4)
        );
        for (n, outcome) in [a, b, c, d, e].into_iter().enumerate() {
            offsets.push(outcome.unwrap_or_else(|e| panic!("batch {} refused: {e:?}", base as usize + n)));
        }
    }
    assert_eq!(
        offsets,
        (0..100).collect::<Vec<i64>>(),
        "each batch where its sequence puts it"
    );
    let committed: Vec<Vec<u8>> = read_committed(&cluster, &t).await.into_values().collect();
    let expected: Vec<Vec<u8>> = (0..100).map(|n| format!("idem {n}").into_bytes()).collect();
    assert_eq!(committed, expected);
    cluster.shutdown().await;
}

/// A batch of one record with this key and value (None: a tombstone).
fn keyed_batch(key: &str, value: Option<&str>) -> Vec<u8> {
    let rec = kdeck::storage::records::record(
        0,
        common::engine::wall_clock_ms(),
        Some(bytes::Bytes::from(key.to_string())),
        value.map(|v| bytes::Bytes::from(v.to_string())),
    );
    kdeck::storage::records::encode_batch(&[rec], kdeck::storage::records::Compression::None)
        .expect("encodable")
        .to_vec()
}

/// Each key's last value (None for a tombstone) and the number of records, in `bytes`
/// from `from` on, and the offset after the last record.
fn latest_by_key(
    bytes: &[u8],
    from: i64,
    latest: &mut std::collections::BTreeMap<Vec<u8>, Option<Vec<u8>>>,
) -> (usize, i64) {
    let mut count = 0;
    let mut next = from;
    for r in kdeck::storage::records::decode(bytes).expect("valid batches") {
        if r.offset < from {
            continue;
        }
        assert!(r.offset >= next, "offsets only grow");
        let key = r.key.expect("every record of a compacted topic has a key").to_vec();
        latest.insert(key, r.value.map(|v| v.to_vec()));
        count += 1;
        next = r.offset + 1;
    }
    (count, next)
}

#[tokio::test(start_paused = true)]
async fn a_compacted_topic_keeps_the_latest_value_of_every_key_on_every_replica() {
    let dir = scratch_dir();
    let cluster = Cluster::start(kdeck::engine::ClusterConfig {
        retention_check_interval_ms: 1_000,
        ..config(dir.path())
    })
    .await
    .expect("start");
    cluster
        .create_topic(
            "profiles",
            TopicConfig::new(1, 3)
                .with_segment_bytes(1024)
                .with_cleanup_policy(kdeck::storage::CleanupPolicy::Compact),
        )
        .await
        .expect("create");
    ready(&cluster, "profiles", 1).await;
    let t = TopicPartition::new("profiles", 0);
    let mut expected = std::collections::BTreeMap::new();
    const WRITES: usize = 400;
    for n in 0..WRITES {
        let key = format!("user-{}", n % 12);
        // Every 50th write deletes its key; a later write may bring it back.
        let value = (n % 50 != 49).then(|| format!("profile {n}"));
        let batch = keyed_batch(&key, value.as_deref());
        cluster
            .produce(&t, batch, Acks::All, Duration::from_secs(10))
            .await
            .expect("produce");
        expected.insert(key.into_bytes(), value.map(String::into_bytes));
    }
    // The cleaner runs on each replica on its own, between retention passes.
    tokio::time::sleep(Duration::from_secs(30)).await;
    let high_watermark = cluster.list_offset(&t, -1).await.expect("end");
    assert_eq!(high_watermark, WRITES as i64, "compaction never moves the log end");

    // A consumer reading from 0 sees every key's latest value, tombstones included (they
    // stay for delete.retention.ms), and far fewer records than were written; it moves
    // across the gaps compaction left.
    let mut consumer = kdeck::client::consumer::Consumer::new(
        cluster.clone(),
        kdeck::client::consumer::ConsumerConfig {
            auto_offset_reset: kdeck::client::consumer::OffsetReset::Earliest,
            ..kdeck::client::consumer::ConsumerConfig::default()
        },
    );
    consumer.assign(vec![t.clone()]);
    let mut consumed = std::collections::BTreeMap::new();
    let mut records_read = 0;
    for _ in 0..100 {
        for r in consumer.poll(Duration::from_millis(500)).await.expect("poll") {
            consumed.insert(r.key.expect("keyed").to_vec(), r.value.map(|v| v.to_vec()));
            records_read += 1;
        }
        if consumer.position(&t) == Some(high_watermark) {
            break;
        }
    }
    assert_eq!(consumer.position(&t), Some(high_watermark));
    assert_eq!(consumed, expected);
    assert!(
        records_read < WRITES / 4,
        "the consumer read {records_read} of {WRITES} records"
    );

    // Each replica cleaned its own log, and they agree.
    for broker in 0..3 {
        let mut replica = std::collections::BTreeMap::new();
        let (mut offset, mut kept) = (0, 0);
        while offset < high_watermark {
            let bytes = cluster
                .inspect()
                .read_replica(broker, &t, offset, high_watermark, 1 << 16)
                .expect("replica readable");
            let (count, _) = latest_by_key(&bytes, offset, &mut replica);
            let next = kdeck::storage::records::next_offset_after(&bytes).expect("a whole batch");
            assert!(next > offset);
            kept += count;
            offset = next;
        }
        assert_eq!(replica, expected, "replica on broker {broker}");
        assert!(kept < WRITES / 4, "broker {broker} kept {kept} of {WRITES} records");
    }
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_compacted_topic_refuses_a_record_without_a_key_and_writes_nothing() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic(
            "profiles",
            TopicConfig::new(1, 3).with_cleanup_policy(kdeck::storage::CleanupPolicy::Compact),
        )
        .await
        .expect("create");
    ready(&cluster, "profiles", 1).await;
    let t = TopicPartition::new("profiles", 0);
    // Kafka's LogValidator: "Compacted topic cannot accept message without key" (INVALID_RECORD),
    // for the whole batch even when only one of its records lacks a key.
    let keyed = kdeck::storage::records::record(0, 1_000, Some(bytes::Bytes::from("k")), Some(bytes::Bytes::from("a")));
    let keyless = kdeck::storage::records::record(1, 1_000, None, Some(bytes::Bytes::from("b")));
    let mixed = kdeck::storage::records::encode_batch(&[keyed, keyless], kdeck::storage::records::Compression::Lz4)
        .expect("encodable")
        .to_vec();
    let refused = cluster.produce(&t, mixed, Acks::All, Duration::from_secs(10)).await;
    assert_eq!(refused.err(), Some(ErrorCode::InvalidRecord));
    assert_eq!(
        cluster.list_offset(&t, -1).await.expect("end"),
        0,
        "nothing was written"
    );
    let offset = cluster
        .produce(&t, keyed_batch("k", Some("a")), Acks::All, Duration::from_secs(10))
        .await
        .expect("a keyed record is written");
    assert_eq!(offset, 0);
    // A topic that deletes takes records without keys as before.
    cluster
        .create_topic("events", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "events", 1).await;
    let plain = kdeck::storage::records::encode_batch(
        &[kdeck::storage::records::record(
            0,
            1_000,
            None,
            Some(bytes::Bytes::from("x")),
        )],
        kdeck::storage::records::Compression::None,
    )
    .expect("encodable")
    .to_vec();
    cluster
        .produce(
            &TopicPartition::new("events", 0),
            plain,
            Acks::All,
            Duration::from_secs(10),
        )
        .await
        .expect("a keyless record on a delete topic is written");
}

/// Every live replica's log start offset, by broker, as each broker sees its own replica.
fn log_starts(s: &kdeck::engine::ClusterSnapshot, tp: &TopicPartition) -> Vec<Option<i64>> {
    s.partition(tp).map_or_else(Vec::new, |p| {
        p.replicas
            .iter()
            .filter(|r| r.online)
            .map(|r| r.log_start_offset)
            .collect()
    })
}

#[tokio::test(start_paused = true)]
async fn delete_records_moves_the_log_start_on_the_leader_and_its_followers_and_survives_a_failover() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("trim", TopicConfig::new(1, 3).with_segment_bytes(1024))
        .await
        .expect("create");
    ready(&cluster, "trim", 1).await;
    let t = TopicPartition::new("trim", 0);
    let mut acked = Acked::default();
    for n in 0..60 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(10))
            .await
            .expect("produce");
    }
    let before = cluster.snapshot();
    let sizes_before: Vec<u64> = before
        .partition(&t)
        .expect("partition")
        .replicas
        .iter()
        .map(|r| r.size_bytes.expect("size"))
        .collect();

    assert_eq!(cluster.delete_records(&t, 30).await, Ok(30), "the new low watermark");
    let after = cluster
        .wait_for(Duration::from_secs(10), |s| log_starts(s, &t) == vec![Some(30); 3])
        .await
        .expect("every follower follows the leader's log start");
    let sizes_after: Vec<u64> = after
        .partition(&t)
        .expect("partition")
        .replicas
        .iter()
        .map(|r| r.size_bytes.expect("size"))
        .collect();
    for (b, a) in sizes_before.iter().zip(&sizes_after) {
        assert!(
            a < b,
            "whole segments below the log start are deleted on every replica: {sizes_before:?} -> {sizes_after:?}"
        );
    }
    assert_eq!(cluster.list_offset(&t, -2).await, Ok(30));
    assert_eq!(
        cluster.fetch(&t, 29, 1024).await.err(),
        Some(ErrorCode::OffsetOutOfRange)
    );
    let kept = read_committed(&cluster, &t).await;
    assert_eq!(kept.keys().next().copied(), Some(30));
    assert_eq!(
        cluster.delete_records(&t, 10).await,
        Ok(30),
        "an offset below the log start changes nothing"
    );

    let old_leader = after.partition(&t).and_then(|p| p.leader).expect("leader");
    cluster.kill(old_leader).expect("kill");
    let s = cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partition(&t)
                .is_some_and(|p| p.leader.is_some_and(|l| l != old_leader) && p.high_watermark.is_some())
        })
        .await
        .expect("a new leader");
    assert_eq!(
        s.partition(&t).and_then(|p| p.log_start_offset),
        Some(30),
        "the new leader kept the log start"
    );
    assert_eq!(cluster.list_offset(&t, -2).await, Ok(30));
    let hw = cluster.list_offset(&t, -1).await.expect("high watermark");
    assert_eq!(hw, 60);
    assert_eq!(
        cluster
            .delete_records(&t, kdeck::engine::DELETE_TO_HIGH_WATERMARK)
            .await,
        Ok(60),
        "-1 deletes up to the high watermark"
    );
    cluster
        .wait_for(Duration::from_secs(10), |s| log_starts(s, &t) == vec![Some(60); 2])
        .await
        .expect("the remaining follower follows the new leader's log start");
    cluster.start_broker(old_leader).expect("restart");
    cluster
        .wait_for(Duration::from_secs(30), |s| log_starts(s, &t) == vec![Some(60); 3])
        .await
        .expect("the old leader comes back with the log start of the new one");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn delete_records_refuses_offsets_past_the_high_watermark_followers_and_compacted_topics() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("trim", TopicConfig::new(1, 2))
        .await
        .expect("create");
    cluster
        .create_topic(
            "kept",
            TopicConfig::new(1, 1).with_cleanup_policy(kdeck::storage::CleanupPolicy::Compact),
        )
        .await
        .expect("create");
    ready(&cluster, "trim", 1).await;
    ready(&cluster, "kept", 1).await;
    let t = TopicPartition::new("trim", 0);
    let mut acked = Acked::default();
    for n in 0..5 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(10))
            .await
            .expect("produce");
    }
    assert_eq!(cluster.delete_records(&t, 6).await, Err(ErrorCode::OffsetOutOfRange));
    assert_eq!(cluster.delete_records(&t, -2).await, Err(ErrorCode::OffsetOutOfRange));
    let p = cluster.snapshot().partition(&t).cloned().expect("partition");
    let follower = p.replicas.iter().find(|r| !r.is_leader).expect("follower").broker;
    assert_eq!(
        cluster.delete_records_on(follower, &t, 2).await,
        Err(ErrorCode::NotLeaderOrFollower)
    );
    assert_eq!(
        cluster.delete_records(&TopicPartition::new("kept", 0), -1).await,
        Err(ErrorCode::PolicyViolation)
    );
    assert_eq!(
        cluster.delete_records(&TopicPartition::new("nowhere", 0), 0).await,
        Err(ErrorCode::UnknownTopicOrPartition)
    );
    assert_eq!(
        cluster.list_offset(&t, -2).await,
        Ok(0),
        "nothing refused moved the log start"
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_broker_describes_its_log_dir_with_each_replica_it_hosts_and_its_size() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("sized", TopicConfig::new(2, 3))
        .await
        .expect("create");
    cluster
        .create_topic("other", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "sized", 2).await;
    ready(&cluster, "other", 1).await;
    let t = TopicPartition::new("sized", 0);
    let mut acked = Acked::default();
    for n in 0..10 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(10))
            .await
            .expect("produce");
    }
    let s = cluster
        .wait_for(Duration::from_secs(10), |s| {
            s.partition(&t)
                .is_some_and(|p| p.replicas.iter().all(|r| r.log_end_offset == Some(10)))
        })
        .await
        .expect("replicated");
    let only = ["sized".to_string()];
    let d = cluster.describe_log_dir(1, Some(&only)).expect("broker 1 is up");
    assert_eq!(d.path, dir.path().join("broker-1"));
    assert!(
        d.total_bytes
            .is_some_and(|total| d.usable_bytes.is_some_and(|free| free <= total))
    );
    let listed: Vec<&TopicPartition> = d.replicas.iter().map(|r| &r.tp).collect();
    assert_eq!(
        listed,
        [&t, &TopicPartition::new("sized", 1)],
        "only the topics asked for"
    );
    let own = s
        .partition(&t)
        .and_then(|p| p.replicas.iter().find(|r| r.broker == 1))
        .and_then(|r| r.size_bytes);
    assert_eq!(Some(d.replicas[0].size_bytes), own);
    assert!(d.replicas[0].size_bytes > 0);
    assert_eq!(d.replicas[0].offset_lag, 0, "a caught-up replica has no lag");
    let all = cluster.describe_log_dir(1, None).expect("broker 1 is up");
    assert!(all.replicas.iter().any(|r| r.tp.topic == "other"));
    assert_eq!(all.size_bytes(), all.replicas.iter().map(|r| r.size_bytes).sum::<u64>());
    cluster.kill(2).expect("kill");
    assert_eq!(
        cluster.describe_log_dir(2, None).err(),
        Some(ErrorCode::NetworkException)
    );
    cluster.shutdown().await;
}
