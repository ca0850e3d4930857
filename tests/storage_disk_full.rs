//! A full disk: appends fail cleanly, nothing acknowledged is lost, no partial batch stays
//! behind, and the log takes appends again once there is room.
//!
//! The full disk is simulated with RLIMIT_FSIZE, which makes a write past the limit fail
//! after a partial write, exactly like ENOSPC. The limit is process-wide, which is why this
//! file holds a single test: it runs in its own test binary.

mod common;

use common::{producer_batch, read_all, scratch_dir};
use kdeck::storage::{Log, LogConfig, LogError};

fn set_file_size_limit(bytes: libc::rlim_t) {
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: plain libc calls with valid arguments; ignoring SIGXFSZ turns the signal a write
    // past the limit would raise into an EFBIG error for the writer.
    let rc = unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        libc::setrlimit(libc::RLIMIT_FSIZE, &limit)
    };
    assert_eq!(rc, 0, "setrlimit failed");
}

#[test]
fn a_full_disk_fails_the_append_cleanly_and_loses_nothing_acknowledged() {
    let dir = scratch_dir();
    let path = dir.path().join("full-0");
    let config = LogConfig {
        segment_bytes: 1 << 20,
        ..LogConfig::default()
    };
    let log = Log::open(&path, config.clone(), 0).expect("open");
    set_file_size_limit(40_000);
    let mut acknowledged = Vec::new();
    let failure = loop {
        let mut batch = producer_batch(10, 0, acknowledged.len() as u64, 300);
        match log.append_as_leader(&mut batch, 0, 0) {
            Ok(info) => acknowledged.push((info.first_offset, batch)),
            Err(e) => break e,
        }
        assert!(acknowledged.len() < 1000, "the size limit never took effect");
    };
    assert!(matches!(failure, LogError::Io { .. }), "{failure}");
    assert_eq!(failure.kafka_error_code(), 56, "clients see KAFKA_STORAGE_ERROR");
    let acked_end = acknowledged.len() as i64 * 10;
    assert_eq!(log.log_end_offset(), acked_end);
    let segment_len = std::fs::metadata(path.join("00000000000000000000.log"))
        .expect("stat")
        .len();
    let acked_bytes: usize = acknowledged.iter().map(|(_, b)| b.len()).sum();
    assert_eq!(segment_len, acked_bytes as u64, "a partial batch was left behind");
    let (read, error) = read_all(&log);
    assert!(error.is_none());
    assert_eq!(read.len(), acknowledged.len());
    for ((_, got), (_, want)) in read.iter().zip(&acknowledged) {
        assert_eq!(got, want);
    }

    // Room again: appends resume at the log end.
    set_file_size_limit(libc::RLIM_INFINITY);
    let mut batch = producer_batch(10, 0, 9999, 300);
    let info = log.append_as_leader(&mut batch, 0, 0).expect("append with room");
    assert_eq!(info.first_offset, acked_end);
    drop(log);
    let reopened = Log::open(&path, config, 0).expect("reopen");
    assert_eq!(reopened.log_end_offset(), acked_end + 10);
}
