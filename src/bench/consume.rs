//! `kdeck bench consume`, kafka-consumer-perf-test style: an embedded cluster is filled with
//! pre-built batches, then one consumer in a group reads everything back. Prints Kafka's
//! ConsumerPerformance header and data line.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::{make_batch, mb};
use crate::cli::ConsumeBenchArgs;
use crate::client::consumer::{Consumer, ConsumerConfig, OffsetReset};
use crate::engine::{Acks, TopicConfig, TopicPartition};
use crate::out::outln;
use crate::storage::batch::BatchHeader;

pub fn run(args: &ConsumeBenchArgs) -> Result<()> {
    super::block_on(run_async(args))
}

async fn run_async(args: &ConsumeBenchArgs) -> Result<()> {
    let (_tmp, cluster) = super::embedded_cluster(args.dir.as_deref(), 3).await?;
    let rf = args.replication_factor.min(3);
    cluster
        .create_topic("consume-bench", TopicConfig::new(args.partitions, rf))
        .await?;
    let partitions = args.partitions;
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            (0..partitions).all(|i| {
                s.partition(&TopicPartition::new("consume-bench", i))
                    .is_some_and(|p| p.high_watermark.is_some() && p.isr.len() == rf as usize)
            })
        })
        .await?;
    let batch = make_batch(16 << 10, args.record_size)?;
    let per_batch = BatchHeader::parse(&batch)?.records_count as u64;
    let batches = args.records.div_ceil(per_batch);
    for i in 0..batches {
        let tp = TopicPartition::new("consume-bench", (i % partitions as u64) as i32);
        if let Err(e) = cluster
            .produce(&tp, batch.clone(), Acks::All, Duration::from_secs(30))
            .await
        {
            bail!("filling the topic failed at batch {i}: {e:?}");
        }
    }
    let total_records = batches * per_batch;

    let mut consumer = Consumer::new(
        cluster.clone(),
        ConsumerConfig {
            group_id: Some("consume-bench".into()),
            auto_offset_reset: OffsetReset::Earliest,
            enable_auto_commit: false,
            max_poll_records: 100_000,
            ..ConsumerConfig::default()
        },
    );
    consumer.subscribe(vec!["consume-bench".into()]);
    let start = Instant::now();
    let start_wall = chrono::Local::now();
    let mut first_record: Option<Instant> = None;
    let mut records = 0u64;
    let mut bytes = 0u64;
    while records < total_records {
        let polled = consumer
            .poll(Duration::from_secs(5))
            .await
            .map_err(|e| anyhow::anyhow!("poll failed: {e}"))?;
        if polled.is_empty() && start.elapsed() > Duration::from_secs(120) {
            bail!("consumed {records} of {total_records} records before stalling");
        }
        if !polled.is_empty() && first_record.is_none() {
            first_record = Some(Instant::now());
        }
        for r in &polled {
            bytes += r.value.as_ref().map_or(0, |v| v.len()) as u64 + r.key.as_ref().map_or(0, |k| k.len()) as u64;
        }
        records += polled.len() as u64;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let rebalance = first_record.map_or(0.0, |f| (f - start).as_secs_f64());
    let fetch = (elapsed - rebalance).max(f64::EPSILON);
    let end_wall = chrono::Local::now();
    consumer.close().await;
    outln!(
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
    );
    outln!(
        "{}, {}, {:.4}, {:.4}, {}, {:.4}, {}, {}, {:.4}, {:.4}",
        start_wall.format("%Y-%m-%d %H:%M:%S:%3f"),
        end_wall.format("%Y-%m-%d %H:%M:%S:%3f"),
        mb(bytes),
        mb(bytes) / elapsed,
        records,
        records as f64 / elapsed,
        (rebalance * 1000.0) as u64,
        (fetch * 1000.0) as u64,
        mb(bytes) / fetch,
        records as f64 / fetch,
    );
    cluster.shutdown().await;
    Ok(())
}
