//! When segments roll and when `flush = <ms>` fsyncs, driven by the explicit clock the log is
//! given (no sleeping).

mod common;

use common::{producer_batch, scratch_dir};
use kdeck::storage::{FlushPolicy, Log, LogConfig};

#[test]
fn a_segment_older_than_segment_ms_rolls_on_the_next_append() {
    let dir = scratch_dir();
    let config = LogConfig {
        segment_ms: 1000,
        ..LogConfig::default()
    };
    let log = Log::open(dir.path().join("ms-0"), config, 0).expect("open");
    // Age counts from the first batch's max timestamp (records stamped 0 and 1).
    log.append_as_leader(&mut producer_batch(2, 0, 1, 10), 0, 0)
        .expect("append");
    log.append_as_leader(&mut producer_batch(2, 900, 2, 10), 0, 900)
        .expect("append");
    assert_eq!(log.segments().len(), 1, "not old yet");
    log.append_as_leader(&mut producer_batch(2, 1002, 3, 10), 0, 1002)
        .expect("append");
    let bases: Vec<i64> = log.segments().iter().map(|s| s.0).collect();
    assert_eq!(bases, vec![0, 4]);
}

#[test]
fn a_full_offset_index_rolls_the_segment() {
    let dir = scratch_dir();
    let config = LogConfig {
        segment_index_bytes: 16, // room for two entries
        index_interval_bytes: 1,
        ..LogConfig::default()
    };
    let log = Log::open(dir.path().join("idx-0"), config, 0).expect("open");
    for i in 0..4 {
        log.append_as_leader(&mut producer_batch(1, 0, i, 10), 0, 0)
            .expect("append");
    }
    // The first batch of a segment adds no entry; batches 2 and 3 fill the index.
    let bases: Vec<i64> = log.segments().iter().map(|s| s.0).collect();
    assert_eq!(bases, vec![0, 3]);
}

#[test]
fn a_segment_reaching_segment_bytes_rolls() {
    let dir = scratch_dir();
    let batch = producer_batch(1, 0, 0, 100);
    let config = LogConfig {
        segment_bytes: (batch.len() * 3) as u64,
        ..LogConfig::default()
    };
    let log = Log::open(dir.path().join("bytes-0"), config, 0).expect("open");
    for i in 0..7 {
        log.append_as_leader(&mut producer_batch(1, 0, i, 100), 0, 0)
            .expect("append");
    }
    let segments = log.segments();
    assert_eq!(segments.iter().map(|s| s.0).collect::<Vec<_>>(), vec![0, 3, 6]);
    assert!(segments.iter().all(|s| s.1 <= (batch.len() * 3) as u64));
}

#[test]
fn flush_interval_fsyncs_only_when_the_interval_has_passed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig {
        flush: FlushPolicy::IntervalMs(1000),
        ..LogConfig::default()
    };
    let log = Log::open(dir.path().join("interval-0"), config, 0).expect("open");
    log.append_as_leader(&mut producer_batch(1, 0, 1, 10), 0, 10)
        .expect("append");
    log.append_as_leader(&mut producer_batch(1, 0, 2, 10), 0, 999)
        .expect("append");
    assert_eq!(log.fsync_count(), 0);
    log.append_as_leader(&mut producer_batch(1, 0, 3, 10), 0, 1000)
        .expect("append");
    assert_eq!(log.fsync_count(), 1);
    log.append_as_leader(&mut producer_batch(1, 0, 4, 10), 0, 1500)
        .expect("append");
    assert_eq!(log.fsync_count(), 1);
    log.append_as_leader(&mut producer_batch(1, 0, 5, 10), 0, 2100)
        .expect("append");
    assert_eq!(log.fsync_count(), 2);
}
