//! `kdeck bench ...`: measurements that print Kafka-perf-test-style lines. Benchmarks live
//! here, apart from the tests, which never assert a duration.

pub mod consume;
pub mod e2e;
pub mod engine;
pub mod produce;
pub mod reassign;
pub mod render;
pub mod sim;
pub mod soak;
pub mod storage;

use std::future::Future;
use std::path::Path;

use anyhow::{Context, Result};
use bytes::Bytes;
use tempfile::TempDir;

use crate::engine::{Cluster, ClusterConfig};

use crate::storage::records::{self, Compression};

/// Kafka's perf tools count MB as 1024 * 1024 bytes.
pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// A batch of uncompressed records of `record_bytes` each, about `batch_bytes` in all.
pub fn make_batch(batch_bytes: u64, record_bytes: u32) -> Result<Vec<u8>> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut value = vec![0u8; record_bytes as usize];
    for b in value.iter_mut() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        *b = b'a' + (seed % 26) as u8;
    }
    let value = Bytes::from(value);
    let now = now_ms();
    let encode = |count: u64| {
        let recs: Vec<_> = (0..count as i64)
            .map(|i| records::record(i, now, None, Some(value.clone())))
            .collect();
        records::encode_batch(&recs, Compression::None).map(|b| b.to_vec())
    };
    // Start from an estimate of the record overhead, then shrink to fit.
    let mut count = (batch_bytes / (u64::from(record_bytes) + 7)).max(1);
    let mut batch = encode(count)?;
    while batch.len() as u64 > batch_bytes && count > 1 {
        count -= 1;
        batch = encode(count)?;
    }
    Ok(batch)
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Runs a benchmark on a multi-threaded runtime, as the console does.
pub fn block_on<F: Future<Output = Result<()>>>(bench: F) -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?
        .block_on(bench)
}

/// An embedded cluster of `brokers` in a temporary directory (under `dir` when given),
/// removed when the returned guard drops.
pub async fn embedded_cluster(dir: Option<&Path>, brokers: i32) -> Result<(TempDir, Cluster)> {
    let tmp = match dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .context("creating the benchmark directory")?;
    let cluster = Cluster::start(ClusterConfig {
        data_dir: tmp.path().to_path_buf(),
        brokers,
        ..ClusterConfig::default()
    })
    .await?;
    Ok((tmp, cluster))
}
