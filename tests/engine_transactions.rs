//! Transactions in the partition logs (KIP-98, the half a transaction coordinator calls):
//! transactional batches, end-transaction markers, the last stable offset, the aborted
//! transaction index and read_committed reads, on the leader, on a follower that takes over,
//! and across a restart and a damaged segment.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use common::engine::{config, ready, txn_batch, wall_clock_ms};
use common::scratch_dir;
use kdeck::client::consumer::{Consumer, ConsumerConfig, OffsetReset};
use kdeck::engine::{Acks, Cluster, ErrorCode, IsolationLevel, OffsetSpec, TopicConfig, TopicPartition};
use kdeck::storage::records::{self, Compression};
use kdeck::storage::txn::{self, AbortedTxn};
use kdeck::storage::{Log, LogConfig};

const PATIENCE: Duration = Duration::from_secs(30);

fn plain_batch(value: &str) -> Vec<u8> {
    let rec = records::record(0, wall_clock_ms(), None, Some(Bytes::from(value.to_string())));
    records::encode_batch(&[rec], Compression::None)
        .expect("encodable")
        .to_vec()
}

/// The data records' values of a fetch answer, in offset order, from `from` on.
fn values(bytes: &[u8], from: i64) -> Vec<String> {
    records::decode(bytes)
        .expect("decodes")
        .into_iter()
        .filter(|r| !r.control && r.offset >= from)
        .map(|r| String::from_utf8_lossy(&r.value.unwrap_or_default()).into_owned())
        .collect()
}

async fn consume_all(cluster: &Cluster, tp: &TopicPartition, isolation: IsolationLevel, want: usize) -> Vec<String> {
    let mut consumer = Consumer::new(
        cluster.clone(),
        ConsumerConfig {
            auto_offset_reset: OffsetReset::Earliest,
            isolation_level: isolation,
            ..ConsumerConfig::default()
        },
    );
    consumer.assign(vec![tp.clone()]);
    let mut seen = Vec::new();
    for _ in 0..40 {
        for r in consumer.poll(Duration::from_millis(500)).await.expect("poll") {
            seen.push(String::from_utf8_lossy(&r.value.unwrap_or_default()).into_owned());
        }
        if seen.len() >= want {
            break;
        }
    }
    consumer.close().await;
    seen
}

fn lso(cluster: &Cluster, tp: &TopicPartition) -> (Option<i64>, Option<i64>) {
    let snapshot = cluster.snapshot();
    let p = snapshot.partition(tp).expect("partition");
    (p.last_stable_offset, p.high_watermark)
}

#[tokio::test(start_paused = true)]
async fn interleaved_transactions_commit_and_abort_and_read_committed_sees_only_committed_records() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("tx", TopicConfig::new(1, 3).with_min_insync_replicas(2))
        .await
        .expect("create");
    ready(&cluster, "tx", 1).await;
    let tp = TopicPartition::new("tx", 0);
    let (a, _) = cluster.init_producer_id().await.expect("pid a");
    let (b, _) = cluster.init_producer_id().await.expect("pid b");

    let produce = |bytes: Vec<u8>| cluster.produce(&tp, bytes, Acks::All, PATIENCE);
    assert_eq!(produce(plain_batch("p0")).await, Ok(0));
    assert_eq!(produce(txn_batch(a, 0, 0, &["a1", "a2"])).await, Ok(1));
    assert_eq!(produce(txn_batch(b, 0, 0, &["b1"])).await, Ok(3));
    assert_eq!(produce(txn_batch(a, 0, 2, &["a3"])).await, Ok(4));
    // A plain batch from a producer inside a transaction is refused.
    let mut plain_from_a = plain_batch("stray");
    {
        let mut recs = records::decode(&plain_from_a).expect("decodes");
        recs[0].producer_id = a;
        recs[0].producer_epoch = 0;
        recs[0].sequence = 3;
        plain_from_a = records::encode_batch(&recs, Compression::None)
            .expect("encodes")
            .to_vec();
    }
    assert_eq!(produce(plain_from_a).await, Err(ErrorCode::InvalidTxnState));

    // Both transactions are open: read_committed stops at a's first offset.
    assert_eq!(lso(&cluster, &tp), (Some(1), Some(5)));
    let committed = cluster
        .fetch_isolated(&tp, 0, 1 << 20, Duration::ZERO, IsolationLevel::ReadCommitted)
        .await
        .expect("fetch");
    assert_eq!(values(&committed.records, 0), ["p0"]);
    assert_eq!(committed.last_stable_offset, 1);
    assert_eq!(committed.high_watermark, 5);
    assert_eq!(committed.aborted_transactions, Some(vec![]));
    let uncommitted = cluster
        .fetch_isolated(&tp, 0, 1 << 20, Duration::ZERO, IsolationLevel::ReadUncommitted)
        .await
        .expect("fetch");
    assert_eq!(values(&uncommitted.records, 0), ["p0", "a1", "a2", "b1", "a3"]);
    assert_eq!(uncommitted.aborted_transactions, None);
    let leader = cluster
        .snapshot()
        .partition(&tp)
        .and_then(|p| p.leader)
        .expect("leader");
    let latest = |isolation| cluster.list_offset_isolated_on(leader, &tp, OffsetSpec::Latest, isolation);
    assert_eq!(latest(IsolationLevel::ReadCommitted).await.map(|o| o.0), Ok(1));
    assert_eq!(latest(IsolationLevel::ReadUncommitted).await.map(|o| o.0), Ok(5));

    // a commits: b's transaction now holds the LSO back.
    assert_eq!(cluster.write_txn_marker(&tp, a, 0, 0, true).await, Ok(5));
    assert_eq!(lso(&cluster, &tp), (Some(3), Some(6)));
    assert_eq!(produce(txn_batch(b, 0, 1, &["b2"])).await, Ok(6));
    // b aborts: everything is stable.
    assert_eq!(cluster.write_txn_marker(&tp, b, 0, 0, false).await, Ok(7));
    assert_eq!(lso(&cluster, &tp), (Some(8), Some(8)));
    let done = cluster
        .fetch_isolated(&tp, 0, 1 << 20, Duration::ZERO, IsolationLevel::ReadCommitted)
        .await
        .expect("fetch");
    assert_eq!(
        done.aborted_transactions,
        Some(vec![AbortedTxn {
            producer_id: b,
            first_offset: 3,
            last_offset: 7,
            last_stable_offset: 8,
        }])
    );
    assert_eq!(
        consume_all(&cluster, &tp, IsolationLevel::ReadCommitted, 4).await,
        ["p0", "a1", "a2", "a3"],
        "exactly the committed records, in order"
    );
    assert_eq!(
        consume_all(&cluster, &tp, IsolationLevel::ReadUncommitted, 6).await,
        ["p0", "a1", "a2", "b1", "a3", "b2"]
    );

    // A marker of an older producer epoch is refused; a marker with no open transaction
    // is written all the same.
    assert_eq!(produce(txn_batch(a, 1, 0, &["a4"])).await, Ok(8));
    assert_eq!(
        cluster.write_txn_marker(&tp, a, 0, 0, false).await,
        Err(ErrorCode::InvalidProducerEpoch)
    );
    assert_eq!(cluster.write_txn_marker(&tp, b, 0, 0, true).await, Ok(9));
    assert_eq!(lso(&cluster, &tp), (Some(8), Some(10)), "a's new transaction is open");

    // The follower that takes over has the same open transaction and aborted list.
    cluster.kill(leader).expect("kill");
    cluster
        .wait_for(PATIENCE, |s| {
            s.partition(&tp)
                .is_some_and(|p| p.leader.is_some_and(|l| l != leader) && p.high_watermark == Some(10))
        })
        .await
        .expect("a new leader with the whole log");
    assert_eq!(lso(&cluster, &tp), (Some(8), Some(10)));
    let after = cluster
        .fetch_isolated(&tp, 0, 1 << 20, Duration::ZERO, IsolationLevel::ReadCommitted)
        .await
        .expect("fetch from the new leader");
    assert_eq!(after.aborted_transactions, done.aborted_transactions);
    assert_eq!(values(&after.records, 0), ["p0", "a1", "a2", "b1", "a3", "b2"]);
    assert_eq!(cluster.write_txn_marker(&tp, a, 1, 0, false).await, Ok(10));
    assert_eq!(lso(&cluster, &tp), (Some(11), Some(11)));
    assert_eq!(
        consume_all(&cluster, &tp, IsolationLevel::ReadCommitted, 4).await,
        ["p0", "a1", "a2", "a3"],
        "a's aborted second transaction is filtered too"
    );
    cluster.shutdown().await;

    // A restart rebuilds the open transactions and keeps the aborted-transaction index.
    let cluster = Cluster::start(config(dir.path())).await.expect("restart");
    ready(&cluster, "tx", 1).await;
    cluster
        .wait_for(PATIENCE, |s| {
            s.partition(&tp).is_some_and(|p| p.high_watermark == Some(11))
        })
        .await
        .expect("the HW is back");
    assert_eq!(lso(&cluster, &tp), (Some(11), Some(11)));
    let restarted = cluster
        .fetch_isolated(&tp, 0, 1 << 20, Duration::ZERO, IsolationLevel::ReadCommitted)
        .await
        .expect("fetch after restart");
    let producers: BTreeSet<i64> = restarted
        .aborted_transactions
        .iter()
        .flatten()
        .map(|t| t.producer_id)
        .collect();
    assert_eq!(producers, BTreeSet::from([a, b]));
    cluster.shutdown().await;
}

/// Appends `bytes` (a producer's or a coordinator's batch) to a log as its leader.
fn append(log: &Log, mut bytes: Vec<u8>) -> i64 {
    log.append_as_leader(&mut bytes, 0, wall_clock_ms())
        .expect("appended")
        .first_offset
}

/// `log` with producer 7's transaction (offsets 0-1) aborted at 3, and producers 8 (from 2)
/// and 9 (from 4) still open.
fn three_transactions(log: Log) -> Log {
    append(&log, txn_batch(7, 0, 0, &["x1", "x2"]));
    append(&log, txn_batch(8, 0, 0, &["y1"]));
    append(&log, txn::end_txn_marker_batch(7, 0, 0, false, wall_clock_ms()));
    append(&log, txn_batch(9, 0, 0, &["z1"]));
    log
}

#[test]
fn the_txnindex_survives_a_reopen_and_is_rebuilt_after_damage_or_a_crash() {
    let dir = scratch_dir();
    let path = dir.path().join("t-0");
    let open = || Log::open(&path, LogConfig::default(), wall_clock_ms()).expect("opens");
    let log = three_transactions(open());
    let expected = vec![AbortedTxn {
        producer_id: 7,
        first_offset: 0,
        last_offset: 3,
        last_stable_offset: 2,
    }];
    assert_eq!(log.collect_aborted_txns(0, 5), expected);
    assert_eq!(log.ongoing_transactions(), vec![(8, 2), (9, 4)]);
    assert_eq!(
        log.first_unstable_offset(3),
        Some(0),
        "the abort is not below the HW yet"
    );
    assert_eq!(
        log.first_unstable_offset(4),
        Some(2),
        "replicated, it holds nothing back"
    );
    log.close().expect("closes");
    let index = path.join(format!("{:020}.txnindex", 0));
    assert_eq!(std::fs::metadata(&index).expect("a .txnindex").len(), 34);

    // A clean reopen reads it back; the open transactions come back from the log.
    let log = open();
    assert_eq!(log.collect_aborted_txns(0, 5), expected);
    assert_eq!(log.ongoing_transactions(), vec![(8, 2), (9, 4)]);
    assert_eq!(log.first_unstable_offset(10), Some(2));
    drop(log);

    // A damaged index is rebuilt, never trusted.
    std::fs::write(&index, b"not an index").expect("damaged");
    let log = open();
    assert_eq!(log.collect_aborted_txns(0, 5), expected);
    assert_eq!(std::fs::metadata(&index).expect("rebuilt").len(), 34);
    // A crash (no clean shutdown) with the index gone: recovery of the segment rebuilds it.
    drop(log);
    std::fs::remove_file(&index).expect("removed");
    let log = open();
    assert_eq!(log.collect_aborted_txns(0, 5), expected);
    assert!(index.exists());

    // Truncation below the marker reopens the transaction and drops its index entry.
    log.truncate_to(3).expect("truncated");
    assert_eq!(log.collect_aborted_txns(0, 5), vec![]);
    assert_eq!(log.ongoing_transactions(), vec![(7, 0), (8, 2)]);
    assert!(!index.exists(), "an empty index has no file");
}

/// A clean shutdown leaves the open transactions in its marker, so a clean open need not
/// read every batch header again; a marker without them (an empty one, as kdeck wrote before
/// transactions, or a damaged one) makes the open replay the log, with the same outcome.
#[test]
fn a_clean_shutdown_keeps_the_open_transactions_and_any_other_marker_replays_them() {
    let dir = scratch_dir();
    let path = dir.path().join("t-0");
    let open = || Log::open(&path, LogConfig::default(), wall_clock_ms()).expect("opens");
    let log = three_transactions(open());
    let state = |log: &Log| {
        (
            log.ongoing_transactions(),
            log.collect_aborted_txns(0, 5),
            log.first_unstable_offset(10),
        )
    };
    let before = state(&log);
    assert_eq!(before.0, vec![(8, 2), (9, 4)]);
    log.close().expect("closes");
    let marker = path.join(kdeck::storage::checkpoint::CLEAN_SHUTDOWN_MARKER);
    let written = std::fs::read_to_string(&marker).expect("the marker");
    assert!(
        written.contains("ongoing 8 2") && written.contains("ongoing 9 4"),
        "{written}"
    );

    for (what, replace) in [
        ("the snapshot", None),
        ("an empty marker", Some(&b""[..])),
        ("a damaged marker", Some(&b"kdeck transactions 1\nongoing 8"[..])),
    ] {
        if let Some(bytes) = replace {
            std::fs::write(&marker, bytes).expect("marker replaced");
        }
        let log = open();
        assert_eq!(state(&log), before, "after a clean open with {what}");
        log.close().expect("closes");
    }
}

/// A batch of one keyed record, transactional when `pid` is given.
fn keyed(key: &str, value: &str, txn: Option<(i64, i32)>) -> Vec<u8> {
    let mut r = records::record(
        0,
        wall_clock_ms(),
        Some(Bytes::from(key.to_string())),
        Some(Bytes::from(value.to_string())),
    );
    if let Some((pid, seq)) = txn {
        r.transactional = true;
        r.producer_id = pid;
        r.producer_epoch = 0;
        r.sequence = seq;
    }
    records::encode_batch(&[r], Compression::None)
        .expect("encodable")
        .to_vec()
}

#[test]
fn compaction_removes_aborted_records_keeps_markers_and_never_lets_an_aborted_value_win() {
    let dir = scratch_dir();
    let config = LogConfig {
        cleanup_policy: "compact".parse().expect("a policy"),
        ..LogConfig::default()
    };
    let log = Log::open(dir.path().join("c-0"), config, wall_clock_ms()).expect("opens");
    append(&log, keyed("k", "committed", None));
    append(&log, keyed("k", "aborted", Some((5, 0))));
    append(&log, txn::end_txn_marker_batch(5, 0, 0, false, wall_clock_ms()));
    append(&log, keyed("j", "kept", Some((6, 0))));
    append(&log, txn::end_txn_marker_batch(6, 0, 0, true, wall_clock_ms()));
    log.roll(wall_clock_ms()).expect("rolled");
    append(&log, keyed("other", "active", None));
    let stats = log.clean(wall_clock_ms()).expect("cleans").expect("a clean was due");
    assert_eq!(stats.records_removed, 1, "the aborted record only");
    // The cleaned segment, read whole.
    let all = records::decode(&log.read(0, 1 << 20, Some(5)).expect("reads").records).expect("decodes");
    let data: Vec<(i64, String)> = all
        .iter()
        .filter(|r| !r.control)
        .map(|r| {
            (
                r.offset,
                String::from_utf8_lossy(&r.value.clone().unwrap_or_default()).into_owned(),
            )
        })
        .collect();
    assert_eq!(data, [(0, "committed".to_string()), (3, "kept".into())]);
    let markers: Vec<i64> = all.iter().filter(|r| r.control).map(|r| r.offset).collect();
    assert_eq!(markers, [2, 4], "both markers stay");
    assert_eq!(
        log.collect_aborted_txns(0, 6).len(),
        1,
        "the aborted transaction stays indexed"
    );
}
