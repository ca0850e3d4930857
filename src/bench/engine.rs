//! `kdeck bench engine`: the raw engine path. Three brokers, one topic (6 partitions, RF 3,
//! min.insync.replicas 2), pre-built batches produced with acks=all by concurrent in-process
//! producers; no client batching logic. Prints throughput, produce latency and the bytes
//! the replicas wrote, and holds those bytes against the raw write speed of the same disk
//! measured in the same run, for as long, just before the produce.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::sync::Mutex;

use super::storage::{RawWrite, raw_write};
use super::{make_batch, mb};
use crate::cli::EngineBenchArgs;
use crate::engine::{Acks, TopicConfig, TopicPartition};
use crate::out::outln;
use crate::storage::batch::BatchHeader;

pub fn run(args: &EngineBenchArgs) -> Result<()> {
    super::block_on(run_async(args))
}

async fn run_async(args: &EngineBenchArgs) -> Result<()> {
    let (tmp, cluster) = super::embedded_cluster(args.dir.as_deref(), 3).await?;
    cluster
        .create_topic(
            "bench",
            TopicConfig::new(args.partitions, 3).with_min_insync_replicas(2),
        )
        .await?;
    let partitions = args.partitions;
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            let bench: Vec<_> = s.partitions.iter().filter(|p| p.tp.topic == "bench").collect();
            bench.len() == partitions as usize
                && bench.iter().all(|p| {
                    p.isr.len() == 3
                        && p.high_watermark.is_some()
                        && p.replicas.iter().all(|r| r.log_end_offset.is_some())
                })
        })
        .await?;
    let batch = make_batch(args.batch_bytes, args.record_bytes)?;
    let records_per_batch = BatchHeader::parse(&batch)?.records_count as u64;
    outln!(
        "engine setup: 3 brokers, {partitions} partitions, RF 3, min.insync.replicas 2, acks=all, {} in flight per partition, batches of {} bytes ({records_per_batch} records of {} bytes), {} s",
        args.in_flight,
        batch.len(),
        args.record_bytes,
        args.secs
    );

    let raw_path = tmp.path().join("raw-write.bin");
    // The disk's plain sequential write speed for as long as the produce will run, so that
    // both meet the page cache's writeback the same way.
    let (raw_bytes, raw_took) = raw_write(&raw_path, &batch, RawWrite::For(Duration::from_secs_f64(args.secs)))?;
    let raw = mb(raw_bytes) / raw_took.as_secs_f64().max(1e-9);

    let mut events = cluster.events();
    let latencies = Arc::new(Mutex::new(Vec::<u32>::new()));
    let deadline = Instant::now() + Duration::from_secs_f64(args.secs);
    let start = Instant::now();
    let mut producers = Vec::new();
    for p in 0..partitions {
        for _ in 0..args.in_flight {
            let (cluster, batch, latencies) = (cluster.clone(), batch.clone(), Arc::clone(&latencies));
            let tp = TopicPartition::new("bench", p);
            producers.push(tokio::spawn(async move {
                let mut mine = Vec::new();
                let mut failures = std::collections::BTreeMap::<String, u64>::new();
                while Instant::now() < deadline {
                    let t0 = Instant::now();
                    match cluster
                        .produce(&tp, batch.clone(), Acks::All, Duration::from_secs(30))
                        .await
                    {
                        Ok(_) => mine.push(t0.elapsed().as_micros().min(u128::from(u32::MAX)) as u32),
                        Err(e) => *failures.entry(format!("{e:?}")).or_default() += 1,
                    }
                }
                latencies.lock().await.extend(mine);
                failures
            }));
        }
    }
    let mut failures = std::collections::BTreeMap::<String, u64>::new();
    for p in producers {
        for (k, v) in p.await.context("a producer task failed")? {
            *failures.entry(k).or_default() += v;
        }
    }
    let failed: u64 = failures.values().sum();
    let elapsed = start.elapsed().as_secs_f64();
    let mut lat = Arc::try_unwrap(latencies).map(Mutex::into_inner).unwrap_or_default();
    lat.sort_unstable();
    let batches = lat.len() as u64;
    let records = batches * records_per_batch;
    let bytes = batches * batch.len() as u64;
    let pct = |q: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 * q).ceil() as usize).clamp(1, lat.len()) - 1;
        f64::from(lat[i]) / 1000.0
    };
    let avg = if lat.is_empty() {
        0.0
    } else {
        lat.iter().map(|v| f64::from(*v)).sum::<f64>() / lat.len() as f64 / 1000.0
    };
    let mut changes = Vec::new();
    while let Ok(e) = events.try_recv() {
        changes.push(format!("{:?}", e.kind));
    }
    if !changes.is_empty() {
        outln!("engine events during the run: {}", changes.join("; "));
    }
    let snapshot = cluster.snapshot();
    outln!(
        "engine produce: {records} records sent, {:.1} records/sec ({:.2} MB/sec), {avg:.2} ms avg latency, {:.2} ms p50, {:.2} ms p99, {:.2} ms p99.9, {failed} failed {failures:?}",
        records as f64 / elapsed,
        mb(bytes) / elapsed,
        pct(0.5),
        pct(0.99),
        pct(0.999),
    );
    outln!(
        "engine replication: {:.1} MB/sec written by leaders, {:.1} MB/sec fetched by followers (3 replicas of every byte on disk)",
        mb(snapshot.brokers.iter().map(|b| b.bytes_in).sum::<u64>()) / elapsed,
        mb(snapshot.brokers.iter().map(|b| b.bytes_out).sum::<u64>()) / elapsed,
    );
    cluster.shutdown().await;
    let written = 3.0 * mb(bytes) / elapsed;
    outln!(
        "engine against raw write: {:.0}% ({written:.1} MB/sec of 3 replicas against {raw:.1} MB/sec of plain sequential writes of the same batches for as long, just before)",
        100.0 * written / raw.max(1e-9),
    );
    Ok(())
}
