//! Helpers shared by the storage tests.
#![allow(dead_code)]

use bytes::Bytes;
use kdeck::storage::batch::{self, BatchHeader};
use kdeck::storage::records::{self, Compression};
use kdeck::storage::{Log, LogError};

/// A producer batch of `count` records whose values say where they came from.
pub fn producer_batch(count: usize, timestamp: i64, tag: u64, value_len: usize) -> Vec<u8> {
    let recs: Vec<_> = (0..count as i64)
        .map(|i| {
            let mut value = format!("tag {tag} record {i} ").into_bytes();
            value.resize(value_len.max(value.len()), b'.');
            records::record(
                i,
                timestamp + i,
                Some(Bytes::from(format!("k{i}"))),
                Some(Bytes::from(value)),
            )
        })
        .collect();
    records::encode_batch(&recs, Compression::None)
        .expect("encodable")
        .to_vec()
}

/// Headers and bytes of each batch in a buffer that must be entirely valid.
pub fn split(bytes: &[u8]) -> Vec<(BatchHeader, Vec<u8>)> {
    batch::Batches::new(bytes)
        .map(|item| {
            let (_, h, b) = item.expect("a valid batch");
            (h, b.to_vec())
        })
        .collect()
}

/// Reads the log from its start to its end. Returns the batches read and the error that
/// stopped the reading early, if any.
pub fn read_all(log: &Log) -> (Vec<(BatchHeader, Vec<u8>)>, Option<LogError>) {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    let end = log.log_end_offset();
    while offset < end {
        match log.read(offset, 3000, None) {
            Ok(data) => {
                let batches = split(&data.records);
                let Some((last, _)) = batches.last() else {
                    return (
                        out,
                        Some(LogError::InvalidRecord(format!(
                            "empty read at {offset} below end {end}"
                        ))),
                    );
                };
                offset = last.next_offset();
                out.extend(batches);
            }
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

/// A scratch directory, in memory where the machine has one: these tests fsync often and
/// test logic, not disks.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("a temporary directory")
}

pub mod engine;
pub mod listeners;
pub mod wire;
