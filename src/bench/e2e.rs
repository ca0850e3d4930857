//! `kdeck bench e2e`: end-to-end latency, from the moment a record is due to be produced to
//! the moment a group consumer receives it. Records are sent on a fixed schedule (so a slow
//! moment delays the records behind it and shows in their latency: no coordinated
//! omission), through the client producer (acks=all) and the client consumer. The schedule
//! is kept by a thread of its own in steps of 200 µs, finer than the runtime's millisecond
//! timer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bytes::{BufMut, BytesMut};
use tokio::time::Instant;

use crate::cli::EndToEndBenchArgs;
use crate::client::consumer::{Consumer, ConsumerConfig, OffsetReset};
use crate::client::producer::{Producer, ProducerConfig, ProducerRecord};
use crate::engine::{TopicConfig, TopicPartition};
use crate::out::outln;

/// How often the generator hands the producer the records due by then.
const GENERATOR_STEP: Duration = Duration::from_micros(200);

pub fn run(args: &EndToEndBenchArgs) -> Result<()> {
    super::block_on(run_async(args))
}

async fn run_async(args: &EndToEndBenchArgs) -> Result<()> {
    let (_tmp, cluster) = super::embedded_cluster(args.dir.as_deref(), 3).await?;
    let partitions = args.partitions;
    outln!(
        "end-to-end setup: 3 brokers, {partitions} partitions, RF 3, min.insync.replicas 2, acks=all, idempotence true, \
         linger.ms {}, batch.size {}, records of {} bytes, {} s",
        args.linger_ms,
        args.batch_size,
        args.record_size,
        args.secs,
    );
    cluster
        .create_topic("e2e", TopicConfig::new(partitions, 3).with_min_insync_replicas(2))
        .await?;
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            (0..partitions).all(|i| {
                s.partition(&TopicPartition::new("e2e", i))
                    .is_some_and(|p| p.high_watermark.is_some() && p.isr.len() == 3)
            })
        })
        .await?;

    let mut consumer = Consumer::new(
        cluster.clone(),
        ConsumerConfig {
            group_id: Some("e2e".into()),
            auto_offset_reset: OffsetReset::Latest,
            enable_auto_commit: false,
            fetch_max_wait_ms: 100,
            max_poll_records: 100_000,
            ..ConsumerConfig::default()
        },
    );
    consumer.subscribe(vec!["e2e".into()]);
    let ready_by = Instant::now() + Duration::from_secs(30);
    while consumer.assignment().len() < partitions as usize {
        if Instant::now() > ready_by {
            bail!("the consumer never got its partitions");
        }
        let _ = consumer.poll(Duration::from_millis(100)).await;
    }

    let producer = Producer::new(
        cluster.clone(),
        ProducerConfig {
            linger_ms: args.linger_ms,
            batch_size: args.batch_size as usize,
            ..ProducerConfig::default()
        },
    )
    .await?;
    let origin = Instant::now();
    let total = (f64::from(args.rate) * args.secs) as u64;
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(total as usize)));
    let received = {
        let latencies = Arc::clone(&latencies);
        tokio::spawn(async move {
            let mut got = 0u64;
            let give_up = Instant::now() + Duration::from_secs(60) + Duration::from_secs_f64(total as f64 / 1000.0);
            while got < total && Instant::now() < give_up {
                let Ok(records) = consumer.poll(Duration::from_millis(200)).await else {
                    continue;
                };
                let now = origin.elapsed().as_micros() as u64;
                let mut l = latencies.lock().unwrap_or_else(|p| p.into_inner());
                for r in records {
                    let Some(due) = r
                        .value
                        .as_ref()
                        .and_then(|v| v.get(..8))
                        .and_then(|b| b.try_into().ok())
                    else {
                        continue;
                    };
                    l.push(now.saturating_sub(u64::from_be_bytes(due)));
                    got += 1;
                }
            }
            consumer.close().await;
        })
    };

    // The records are generated on a thread of their own that wakes every GENERATOR_STEP
    // (a tokio timer fires only on whole milliseconds, which would add up to a millisecond of
    // the generator's own lateness to every record). Each wake hands the producer every record
    // due by then, stamped with its due time.
    let per_us = f64::from(args.rate) / 1e6;
    let value_size = args.record_size.max(8) as usize;
    let generator = {
        let (producer, runtime, origin) = (producer.clone(), tokio::runtime::Handle::current(), origin.into_std());
        std::thread::Builder::new()
            .name("e2e-generator".into())
            .spawn(move || -> Result<()> {
                let mut sent = 0u64;
                while sent < total {
                    let elapsed_us = origin.elapsed().as_secs_f64() * 1e6;
                    let due_by_now = ((elapsed_us * per_us) as u64).min(total);
                    // The values due together share one buffer, as a client's serializer
                    // would fill one: generating the load should not weigh on what it measures.
                    let mut values = BytesMut::with_capacity((due_by_now - sent) as usize * value_size);
                    runtime.block_on(async {
                        while sent < due_by_now {
                            let due_us = (sent as f64 / per_us) as u64;
                            values.put_u64(due_us);
                            values.put_bytes(b'x', value_size - 8);
                            let record = ProducerRecord {
                                topic: "e2e".into(),
                                value: Some(values.split().freeze()),
                                ..ProducerRecord::default()
                            };
                            producer
                                .enqueue_with_callback(record, |_| {})
                                .await
                                .map_err(|e| anyhow::anyhow!("enqueue failed: {e}"))?;
                            sent += 1;
                        }
                        anyhow::Ok(())
                    })?;
                    std::thread::sleep(GENERATOR_STEP);
                }
                Ok(())
            })
            .context("starting the generator thread")?
    };
    tokio::task::spawn_blocking(move || generator.join())
        .await
        .context("waiting for the generator")?
        .map_err(|_| anyhow::anyhow!("the generator thread panicked"))??;
    producer.flush().await;
    received.await.context("the consumer task failed")?;
    let mut l = Arc::try_unwrap(latencies).map_or_else(
        |a| a.lock().map(|v| v.clone()).unwrap_or_default(),
        |m| m.into_inner().unwrap_or_default(),
    );
    l.sort_unstable();
    if l.is_empty() {
        bail!("no record arrived");
    }
    let pct = |q: f64| l[((l.len() as f64 * q).ceil() as usize).clamp(1, l.len()) - 1] as f64 / 1000.0;
    let avg = l.iter().sum::<u64>() as f64 / l.len() as f64 / 1000.0;
    outln!(
        "end-to-end: {} of {total} records received at {} records/sec target, {avg:.2} ms avg latency, {:.2} ms max latency, {:.2} ms 50th, {:.2} ms 95th, {:.2} ms 99th, {:.2} ms 99.9th.",
        l.len(),
        args.rate,
        pct(1.0),
        pct(0.5),
        pct(0.95),
        pct(0.99),
        pct(0.999),
    );
    cluster.shutdown().await;
    Ok(())
}
