//! The durability policy: with `flush = "always"` concurrent appends all succeed, get
//! distinct contiguous offsets, and are on disk when append returns (group commit shares the
//! fsyncs); a clean close leaves a marker so the next open skips recovery.

mod common;

use std::sync::Arc;

use common::{producer_batch, read_all, scratch_dir};
use kdeck::storage::checkpoint::CLEAN_SHUTDOWN_MARKER;
use kdeck::storage::{FlushPolicy, Log, LogConfig};

#[test]
fn concurrent_appends_with_flush_always_share_fsyncs_and_lose_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig {
        flush: FlushPolicy::Always,
        segment_bytes: 64 << 10,
        ..LogConfig::default()
    };
    let log = Arc::new(Log::open(dir.path().join("gc-0"), config.clone(), 0).expect("open"));
    let writers: Vec<_> = (0..6)
        .map(|w| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                (0..40)
                    .map(|i| {
                        let mut batch = producer_batch(2, i, w * 1000 + i as u64, 200);
                        log.append_as_leader(&mut batch, 0, i).expect("append").first_offset
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut offsets: Vec<i64> = writers.into_iter().flat_map(|h| h.join().expect("writer")).collect();
    offsets.sort_unstable();
    assert_eq!(offsets, (0..240).map(|i| i * 2).collect::<Vec<_>>());
    let fsyncs = log.fsync_count();
    assert!((1..=240 + 10).contains(&fsyncs), "{fsyncs} fsyncs for 240 appends");
    let log = Arc::into_inner(log).expect("writers are done");
    drop(log); // unclean
    let reopened = Log::open(dir.path().join("gc-0"), config, 0).expect("reopen");
    assert_eq!(reopened.log_end_offset(), 480);
    let (batches, error) = read_all(&reopened);
    assert!(error.is_none());
    assert_eq!(batches.len(), 240);
}

#[test]
fn log_config_reads_from_toml_with_kafka_defaults_and_clear_errors() {
    let parse = |text: &str| toml::from_str::<LogConfig>(text);
    assert_eq!(parse("flush = \"never\"").expect("never").flush, FlushPolicy::Never);
    assert_eq!(parse("flush = \"always\"").expect("always").flush, FlushPolicy::Always);
    let interval = parse("flush = 250\nsegment_bytes = 1048576").expect("interval");
    assert_eq!(interval.flush, FlushPolicy::IntervalMs(250));
    assert_eq!(interval.segment_bytes, 1 << 20);
    assert_eq!(interval.retention_bytes, -1, "unset keys keep Kafka's defaults");
    let err = parse("flush = \"sometimes\"").expect_err("not a policy").to_string();
    assert!(err.contains("line 1") && err.contains("never"), "{err}");
    let err = parse("segmnet_bytes = 5").expect_err("typo").to_string();
    assert!(err.contains("segmnet_bytes"), "{err}");
}

#[test]
fn clean_close_leaves_a_marker_that_the_next_open_consumes() {
    let dir = scratch_dir();
    let path = dir.path().join("clean-0");
    let log = Log::open(&path, LogConfig::default(), 0).expect("open");
    let mut batch = producer_batch(3, 0, 1, 10);
    log.append_as_leader(&mut batch, 0, 0).expect("append");
    log.close().expect("close");
    assert!(path.join(CLEAN_SHUTDOWN_MARKER).exists());
    let log = Log::open(&path, LogConfig::default(), 0).expect("reopen");
    assert!(
        !path.join(CLEAN_SHUTDOWN_MARKER).exists(),
        "a crash after opening must count as unclean"
    );
    assert_eq!(log.log_end_offset(), 3);
}

#[test]
fn flush_on_an_interval_syncs_the_tail_once_the_interval_passed_without_another_append() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig {
        flush: FlushPolicy::IntervalMs(1_000),
        ..LogConfig::default()
    };
    let log = Log::open(dir.path().join("timer-0"), config, 0).expect("open");
    let mut batch = producer_batch(3, 0, 1, 100);
    log.append_as_leader(&mut batch, 0, 10).expect("append");
    // The append came before the interval was up: nothing was synced.
    assert_eq!(log.durable_offset(), 0);
    assert!(!log.flush_if_due(900).expect("flush check"));
    assert_eq!(log.durable_offset(), 0);
    // No more appends: the timer syncs the tail once the interval has passed.
    assert!(log.flush_if_due(1_000).expect("flush check"));
    assert_eq!(log.durable_offset(), 3);
    // Nothing left to sync: no flush.
    assert!(!log.flush_if_due(5_000).expect("flush check"));
}
