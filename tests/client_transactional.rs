//! kdeck's in-process transactional producer against the embedded cluster's transaction
//! coordinator: what a read_committed consumer sees of committed and aborted transactions,
//! fencing by a newer instance, offsets committed inside a transaction, and a transaction
//! carried through the kill of its coordinator. Paused clock throughout.

mod common;

use std::time::Duration;

use bytes::Bytes;
use kdeck::client::consumer::{Consumer, ConsumerConfig, OffsetReset};
use kdeck::client::transactional::{TransactionalProducer, TxnConfig, TxnError};
use kdeck::engine::{
    Cluster, IsolationLevel, TXN_STATE_TOPIC, TopicConfig, TopicPartition, TxnRequest, TxnResponse, TxnState,
};

use common::engine::{config, coordinators_ready, ready};

async fn cluster(dir: &std::path::Path) -> Cluster {
    let cluster = Cluster::start(config(dir)).await.expect("cluster starts");
    cluster
        .create_topic("orders", TopicConfig::new(3, 3).with_min_insync_replicas(2))
        .await
        .expect("topic");
    ready(&cluster, "orders", 3).await;
    coordinators_ready(&cluster).await;
    cluster
}

fn records(prefix: &str, n: usize) -> Vec<(Option<Bytes>, Option<Bytes>)> {
    (0..n)
        .map(|i| (None, Some(Bytes::from(format!("{prefix}-{i}")))))
        .collect()
}

/// Every value a fresh consumer reads from `topic` at `isolation`, per partition, in order.
async fn read(cluster: &Cluster, topic: &str, partitions: i32, isolation: IsolationLevel) -> Vec<Vec<String>> {
    let mut consumer = Consumer::new(
        cluster.clone(),
        ConsumerConfig {
            group_id: None,
            auto_offset_reset: OffsetReset::Earliest,
            isolation_level: isolation,
            ..ConsumerConfig::default()
        },
    );
    let tps: Vec<TopicPartition> = (0..partitions).map(|p| TopicPartition::new(topic, p)).collect();
    consumer.assign(tps.clone());
    let mut out = vec![Vec::new(); partitions as usize];
    // Polls until a few empty polls in a row: everything readable has been read.
    let mut empty = 0;
    while empty < 3 {
        let batch = consumer.poll(Duration::from_millis(500)).await.expect("poll");
        if batch.is_empty() {
            empty += 1;
        } else {
            empty = 0;
        }
        for r in batch {
            let value = r
                .value
                .map(|v| String::from_utf8_lossy(&v).into_owned())
                .unwrap_or_default();
            out[r.partition as usize].push(value);
        }
    }
    consumer.close().await;
    out
}

#[tokio::test(start_paused = true)]
async fn read_committed_sees_committed_transactions_once_in_order_and_never_aborted_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = cluster(dir.path()).await;
    let mut producer = TransactionalProducer::init(cluster.clone(), TxnConfig::new("orders-writer"))
        .await
        .expect("init");
    let mut committed = vec![Vec::new(); 3];
    let mut everything = vec![Vec::new(); 3];
    for (round, commit) in [true, false, true, false, true].into_iter().enumerate() {
        producer.begin().expect("begin");
        for p in 0..3 {
            let tag = format!("r{round}p{p}");
            let batch = records(&tag, 4);
            producer
                .send(&TopicPartition::new("orders", p), &batch)
                .await
                .expect("send");
            let values: Vec<String> = (0..4).map(|i| format!("{tag}-{i}")).collect();
            everything[p as usize].extend(values.clone());
            if commit {
                committed[p as usize].extend(values);
            }
        }
        if commit {
            producer.commit().await.expect("commit");
        } else {
            producer.abort().await.expect("abort");
        }
    }
    assert_eq!(
        read(&cluster, "orders", 3, IsolationLevel::ReadCommitted).await,
        committed
    );
    assert_eq!(
        read(&cluster, "orders", 3, IsolationLevel::ReadUncommitted).await,
        everything
    );

    let described = cluster
        .txn_request(
            "orders-writer",
            TxnRequest::Describe {
                transactional_id: "orders-writer".into(),
            },
            Duration::from_secs(5),
        )
        .await
        .expect("coordinator answers");
    match described {
        TxnResponse::Describe(Ok(d)) => {
            assert_eq!(d.state, TxnState::CompleteCommit);
            assert_eq!(d.producer_id, producer.producer_id());
            assert!(
                d.partitions.is_empty(),
                "a completed transaction holds no partitions: {d:?}"
            );
        }
        other => panic!("DescribeTransactions answered {other:?}"),
    }
    assert!(cluster.metadata().topics.contains_key(TXN_STATE_TOPIC));
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_second_instance_fences_the_first_and_aborts_what_it_left_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = cluster(dir.path()).await;
    let tp = TopicPartition::new("orders", 0);
    let mut zombie = TransactionalProducer::init(cluster.clone(), TxnConfig::new("fenced"))
        .await
        .expect("init");
    zombie.begin().expect("begin");
    zombie.send(&tp, &records("zombie", 2)).await.expect("send");

    let mut successor = TransactionalProducer::init(cluster.clone(), TxnConfig::new("fenced"))
        .await
        .expect("a second init succeeds");
    assert_eq!(successor.producer_id(), zombie.producer_id());
    assert!(successor.epoch() > zombie.epoch(), "the epoch is bumped");

    // The zombie can neither write nor commit.
    let refused = zombie.send(&tp, &records("zombie-late", 1)).await;
    assert!(matches!(refused, Err(TxnError::Fenced(_))), "zombie send: {refused:?}");
    let refused = zombie.commit().await;
    assert!(refused.is_err(), "zombie commit: {refused:?}");

    successor.begin().expect("begin");
    successor.send(&tp, &records("successor", 2)).await.expect("send");
    successor.commit().await.expect("commit");
    let read = read(&cluster, "orders", 1, IsolationLevel::ReadCommitted).await;
    assert_eq!(
        read[0],
        vec!["successor-0", "successor-1"],
        "the zombie's open transaction was aborted"
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn offsets_sent_in_a_transaction_are_committed_only_with_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = cluster(dir.path()).await;
    let tp = TopicPartition::new("orders", 1);
    let committed = |cluster: Cluster| async move {
        let consumer = Consumer::new(
            cluster,
            ConsumerConfig {
                group_id: Some("transformer".into()),
                enable_auto_commit: false,
                ..ConsumerConfig::default()
            },
        );
        consumer
            .committed(vec![TopicPartition::new("orders", 1)])
            .await
            .expect("offset fetch")
    };
    let mut producer = TransactionalProducer::init(cluster.clone(), TxnConfig::new("transformer-1"))
        .await
        .expect("init");

    producer.begin().expect("begin");
    producer.send(&tp, &records("out", 1)).await.expect("send");
    producer
        .send_offsets("transformer", &[(tp.clone(), 10)])
        .await
        .expect("send offsets");
    producer.abort().await.expect("abort");
    let after_abort = committed(cluster.clone()).await;
    assert!(
        after_abort.iter().all(|(_, o)| *o < 0),
        "an aborted transaction's offsets are not committed: {after_abort:?}"
    );

    producer.begin().expect("begin");
    producer.send(&tp, &records("out", 1)).await.expect("send");
    producer
        .send_offsets("transformer", &[(tp.clone(), 20)])
        .await
        .expect("send offsets");
    producer.commit().await.expect("commit");
    assert_eq!(committed(cluster.clone()).await, vec![(tp, 20)]);
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_transaction_survives_the_kill_of_its_coordinator() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = cluster(dir.path()).await;
    let mut producer = TransactionalProducer::init(cluster.clone(), TxnConfig::new("survivor"))
        .await
        .expect("init");
    producer.begin().expect("begin");
    for p in 0..3 {
        producer
            .send(&TopicPartition::new("orders", p), &records(&format!("before-{p}"), 2))
            .await
            .expect("send");
    }
    let coordinator = cluster.find_txn_coordinator("survivor").await.expect("a coordinator");
    cluster.kill(coordinator).expect("kill");
    // The new coordinator replays __transaction_state and knows the open transaction.
    producer.commit().await.expect("commit through the new coordinator");
    let moved = cluster.find_txn_coordinator("survivor").await.expect("a coordinator");
    assert_ne!(moved, coordinator);
    let read = read(&cluster, "orders", 3, IsolationLevel::ReadCommitted).await;
    for (p, values) in read.iter().enumerate() {
        assert_eq!(values, &[format!("before-{p}-0"), format!("before-{p}-1")]);
    }
    cluster.shutdown().await;
}
