//! The message browser's tails on the embedded engine, on the paused clock: a window reads
//! from an offset and pauses when full until the console moves it on; an offset outside the
//! log starts at its nearest bound; a search scans to the end the partition had when it
//! started, keeps only the matches and says when it is done.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::engine::{config, ready};
use common::{producer_batch, scratch_dir};
use kdeck::embedded::tail_cluster;
use kdeck::engine::{Acks, Cluster, ClusterConfig, TopicConfig, TopicPartition};
use kdeck::storage::records::{self, Compression};
use kdeck::view::{SeekPosition, TailBuffer, TailMode, TailSpec};
use tokio::time::Instant;

const PATIENCE: Duration = Duration::from_secs(60);
const RECORDS: i64 = 6_000;
/// The offsets whose key or value says "needle".
const NEEDLES: [i64; 3] = [7, 2_500, 5_999];

/// A three-broker cluster with `topic` (one partition, RF 3) holding offsets 0..6000, each
/// value `record N`, but for the needles.
async fn cluster_with_records(dir: &std::path::Path, topic: &str) -> Cluster {
    let cluster = Cluster::start(config(dir)).await.expect("start");
    cluster
        .create_topic(topic, TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, topic, 1).await;
    let tp = TopicPartition::new(topic, 0);
    // Recent timestamps, or retention.ms would delete the records while the test waits.
    let now = chrono::Utc::now().timestamp_millis();
    for base in (0..RECORDS).step_by(100) {
        let batch: Vec<_> = (0..100)
            .map(|delta| {
                let offset = base + delta;
                let (key, value) = match NEEDLES.iter().position(|n| *n == offset) {
                    Some(0) => (format!("needle-{offset}"), format!("record {offset}")),
                    Some(_) => (format!("k{offset}"), format!("a needle at {offset}")),
                    None => (format!("k{offset}"), format!("record {offset}")),
                };
                records::record(delta, now + offset, Some(key.into()), Some(value.into()))
            })
            .collect();
        let bytes = records::encode_batch(&batch, Compression::None).expect("encodable");
        let at = cluster
            .produce(&tp, bytes.to_vec(), Acks::All, Duration::from_secs(10))
            .await
            .expect("produced");
        assert_eq!(at, base);
    }
    cluster
}

fn offsets(buffer: &TailBuffer) -> Vec<i64> {
    buffer.records().iter().map(|r| r.offset).collect()
}

/// Waits (on the paused clock) until `condition` holds for the buffer.
async fn until(what: &str, buffer: &TailBuffer, condition: impl Fn(&TailBuffer) -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition(buffer) {
        let held = offsets(buffer);
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {} records ({:?}..{:?}), scanned {}, matched {}, error {:?}",
            held.len(),
            held.first(),
            held.last(),
            buffer.scanned(),
            buffer.matched(),
            buffer.error()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn window(topic: &str, start: SeekPosition) -> TailSpec {
    TailSpec {
        mode: TailMode::Window,
        ..TailSpec::ring(topic, Some(0), start)
    }
}

#[tokio::test(start_paused = true)]
async fn a_window_holds_the_records_from_its_offset_and_moves_on_only_when_advanced() {
    let dir = scratch_dir();
    let cluster = cluster_with_records(dir.path(), "browse").await;
    let tail = tail_cluster(&cluster, window("browse", SeekPosition::Offset(100)), 1_000);
    let buffer = &tail.buffer;
    until("a full window", buffer, |b| b.room() == 0).await;
    assert_eq!(offsets(buffer), (100..1_100).collect::<Vec<_>>());
    assert_eq!(buffer.log_starts(), vec![(0, 0)]);

    // The reader pauses: minutes later the window is the same and the partition unread.
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(offsets(buffer), (100..1_100).collect::<Vec<_>>());
    assert!(
        buffer.scanned() < (RECORDS - 100) as u64,
        "the reader read on: {} scanned",
        buffer.scanned()
    );
    assert_eq!(buffer.scanned(), buffer.matched(), "no filter: everything read matches");
    assert!(!buffer.is_done(), "a window that is no search is never done");

    buffer.advance(500);
    until("the window moved on", buffer, |b| b.room() == 0).await;
    assert_eq!(offsets(buffer), (600..1_600).collect::<Vec<_>>());
    assert_eq!(buffer.error(), None);
    drop(tail);
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_offset_below_the_log_start_starts_at_the_log_start_and_one_past_the_end_at_the_end() {
    let dir = scratch_dir();
    let cluster = Cluster::start(ClusterConfig {
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
    let tp = TopicPartition::new("short", 0);
    // Recent timestamps: only retention.bytes removes segments, not retention.ms.
    let now = chrono::Utc::now().timestamp_millis();
    for n in 0..60 {
        cluster
            .produce(&tp, producer_batch(1, now, n, 64), Acks::All, Duration::from_secs(10))
            .await
            .expect("produced");
    }
    let snapshot = cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partition(&tp).and_then(|p| p.log_start_offset).is_some_and(|o| o > 0)
        })
        .await
        .expect("retention moved the log start");
    let log_start = snapshot
        .partition(&tp)
        .and_then(|p| p.log_start_offset)
        .expect("a log start");

    for mode in [TailMode::Window, TailMode::Ring] {
        let spec = TailSpec {
            mode,
            ..TailSpec::ring("short", Some(0), SeekPosition::Offset(0))
        };
        let tail = tail_cluster(&cluster, spec, 1_000);
        until("the kept records", &tail.buffer, |b| {
            b.records().last().is_some_and(|r| r.offset == 59)
        })
        .await;
        assert_eq!(
            offsets(&tail.buffer),
            (log_start..60).collect::<Vec<_>>(),
            "{mode:?} starts at the log start"
        );
        assert_eq!(tail.buffer.log_starts(), vec![(0, log_start)]);
    }

    let past = tail_cluster(&cluster, window("short", SeekPosition::Offset(1_000)), 100);
    until("the log start is known", &past.buffer, |b| !b.log_starts().is_empty()).await;
    cluster
        .produce(&tp, producer_batch(1, now, 60, 64), Acks::All, Duration::from_secs(10))
        .await
        .expect("produced");
    until("the new record", &past.buffer, |b| !b.records().is_empty()).await;
    assert_eq!(offsets(&past.buffer), vec![60], "past the end starts at the end");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_search_scans_to_the_end_keeps_only_the_matches_and_is_done() {
    let dir = scratch_dir();
    let cluster = cluster_with_records(dir.path(), "haystack").await;
    let search = |capacity| {
        let spec = TailSpec {
            filter: Some("needle".into()),
            until_end: true,
            ..window("haystack", SeekPosition::Beginning)
        };
        tail_cluster(&cluster, spec, capacity)
    };
    let tail = search(1_000);
    until("the search done", &tail.buffer, TailBuffer::is_done).await;
    assert_eq!(tail.buffer.scanned(), RECORDS as u64);
    assert_eq!(tail.buffer.matched(), 3);
    assert_eq!(offsets(&tail.buffer), NEEDLES.to_vec());
    assert_eq!(tail.buffer.error(), None);

    // A window of one: the reader pauses at each match until the console moves on. A needle
    // produced meanwhile is not found: the search stops at the end it started with.
    let small = search(1);
    until("the second match read", &small.buffer, |b| b.matched() == 2).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(offsets(&small.buffer), vec![NEEDLES[0]]);
    assert!(
        small.buffer.scanned() < RECORDS as u64,
        "the reader waits with the second match"
    );
    let tp = TopicPartition::new("haystack", 0);
    let late = records::record(
        0,
        chrono::Utc::now().timestamp_millis(),
        None,
        Some(Bytes::from_static(b"a late needle")),
    );
    let bytes = records::encode_batch(&[late], Compression::None).expect("encodable");
    let at = cluster
        .produce(&tp, bytes.to_vec(), Acks::All, Duration::from_secs(10))
        .await
        .expect("produced");
    assert_eq!(at, RECORDS);
    small.buffer.advance(1);
    until("the third match read", &small.buffer, |b| b.matched() == 3).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(offsets(&small.buffer), vec![NEEDLES[1]]);
    assert!(!small.buffer.is_done(), "a match still waits for room");
    small.buffer.advance(1);
    until("the small search done", &small.buffer, TailBuffer::is_done).await;
    assert_eq!(offsets(&small.buffer), vec![NEEDLES[2]]);
    assert_eq!(small.buffer.scanned(), RECORDS as u64, "not the record after the end");
    assert_eq!(small.buffer.matched(), 3);
    drop((tail, small));
    cluster.shutdown().await;
}
