//! `kdeck bench produce`: Kafka's `kafka-producer-perf-test` against an embedded cluster.
//! Records of a fixed random payload and no key go through [`Producer`] as fast as it takes
//! them (many in flight, none awaited one by one); latency is enqueue to acknowledgement per
//! record. The last line is ProducerPerformance's final line, in its format.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;

use super::mb;
use crate::cli::ProduceBenchArgs;
use crate::client::producer::{DeliveryResult, ProduceError, Producer, ProducerConfig, ProducerRecord};
use crate::engine::{Acks, Cluster, TopicConfig};
use crate::out::outln;

const TOPIC: &str = "bench";

/// ProducerPerformance keeps at most this many latency samples for the percentiles.
const MAX_SAMPLES: u64 = 500_000;

pub fn run(args: &ProduceBenchArgs) -> Result<()> {
    super::block_on(run_async(args))
}

async fn run_async(args: &ProduceBenchArgs) -> Result<()> {
    let (_tmp, cluster) = super::embedded_cluster(args.dir.as_deref(), args.brokers).await?;
    let min_insync = if args.replication_factor >= 2 { 2 } else { 1 };
    cluster
        .create_topic(
            TOPIC,
            TopicConfig::new(args.partitions, args.replication_factor).with_min_insync_replicas(min_insync),
        )
        .await?;
    let (partitions, replication_factor) = (args.partitions, args.replication_factor);
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            let mine: Vec<_> = s.partitions.iter().filter(|p| p.tp.topic == TOPIC).collect();
            mine.len() == partitions as usize
                && mine.iter().all(|p| {
                    p.leader.is_some() && p.isr.len() == replication_factor as usize && p.high_watermark.is_some()
                })
        })
        .await?;

    let config = ProducerConfig {
        acks: args.acks,
        compression: args.compression,
        // Kafka turns idempotence off by itself when acks is not all.
        enable_idempotence: args.acks == Acks::All,
        ..ProducerConfig::default()
    };
    outln!(
        "produce setup: {} brokers, {partitions} partitions, RF {replication_factor}, min.insync.replicas {min_insync}, \
         acks={}, compression={:?}, idempotence {}, batch.size {}, linger.ms {}, {} producer(s), {} records of {} bytes",
        args.brokers,
        match args.acks {
            Acks::None => "0",
            Acks::Leader => "1",
            Acks::All => "all",
        },
        args.compression,
        config.enable_idempotence,
        config.batch_size,
        config.linger_ms,
        args.producers,
        args.records,
        args.record_size,
    );

    let payload = payload(args.record_size as usize);
    let stats = Arc::new(Stats::new(args.records, u64::from(args.record_size)));
    // Every producer is created (InitProducerId) before the clock starts, as in
    // ProducerPerformance; the gate lets them all start at once.
    let gate = Arc::new(Barrier::new(args.producers as usize + 1));
    let share = args.records / u64::from(args.producers);
    let extra = args.records % u64::from(args.producers);
    let mut first = 0;
    let mut clients = Vec::new();
    for i in 0..u64::from(args.producers) {
        let count = share + u64::from(i < extra);
        let client = Client {
            cluster: cluster.clone(),
            config: config.clone(),
            records: first..first + count,
            payload: payload.clone(),
            stats: Arc::clone(&stats),
            gate: Arc::clone(&gate),
        };
        first += count;
        clients.push(
            std::thread::Builder::new()
                .name(format!("producer-{i}"))
                .spawn(move || client.run())
                .context("starting a producer thread")?,
        );
    }
    let start_gate = Arc::clone(&gate);
    tokio::task::spawn_blocking(move || start_gate.wait())
        .await
        .context("waiting for the producers")?;
    let start = Instant::now();
    for client in clients {
        tokio::task::spawn_blocking(move || client.join())
            .await
            .context("waiting for a producer")?
            .map_err(|_| anyhow::anyhow!("a producer thread panicked"))??;
    }
    let elapsed = start.elapsed();
    outln!("{}", stats.summary(elapsed));
    if let Some(line) = stats.failures() {
        outln!("{line}");
    }
    cluster.shutdown().await;
    Ok(())
}

/// One producer on a thread and runtime of its own, like a client process of its own: its
/// enqueues, batching and callbacks stay on one thread, off the brokers' workers, and what it
/// allocates is freed where it was allocated.
struct Client {
    cluster: Cluster,
    config: ProducerConfig,
    /// The send order numbers of this producer's records.
    records: Range<u64>,
    payload: Bytes,
    stats: Arc<Stats>,
    gate: Arc<Barrier>,
}

impl Client {
    fn run(self) -> Result<()> {
        let ready = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting a producer runtime")
            .and_then(|runtime| {
                let producer = runtime.block_on(Producer::new(self.cluster.clone(), self.config.clone()))?;
                Ok((runtime, producer))
            });
        // Through the gate even on failure, so the others are not kept waiting.
        self.gate.wait();
        let (runtime, producer) = ready?;
        runtime.block_on(produce(producer, self.records, self.payload, self.stats));
        Ok(())
    }
}

/// Enqueues the records numbered `records` without awaiting any, then waits for them all.
async fn produce(producer: Producer, records: Range<u64>, payload: Bytes, stats: Arc<Stats>) {
    for iteration in records {
        let record = ProducerRecord {
            topic: TOPIC.to_owned(),
            value: Some(payload.clone()),
            ..ProducerRecord::default()
        };
        let sent = Instant::now();
        let on_delivery = Arc::clone(&stats);
        let enqueued = producer
            .enqueue_with_callback(record, move |result| on_delivery.record(iteration, sent, result))
            .await;
        if let Err(e) = enqueued {
            stats.failed(&e);
        }
    }
    producer.flush().await;
    producer.close().await;
}

/// Random upper-case letters, as ProducerPerformance fills its payload.
fn payload(size: usize) -> Bytes {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    (0..size)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            b'A' + (seed % 26) as u8
        })
        .collect::<Vec<u8>>()
        .into()
}

/// ProducerPerformance's `Stats`: totals over every record, percentiles over a sample of at
/// most [`MAX_SAMPLES`] (every `sampling`-th record by send order).
struct Stats {
    record_bytes: u64,
    sampling: u64,
    acknowledged: AtomicU64,
    total_latency_us: AtomicU64,
    max_latency_us: AtomicU64,
    samples_ms: Mutex<Vec<u32>>,
    failed: AtomicU64,
    first_failure: Mutex<Option<String>>,
}

impl Stats {
    fn new(records: u64, record_bytes: u64) -> Self {
        let sampling = (records / records.clamp(1, MAX_SAMPLES)).max(1);
        Stats {
            record_bytes,
            sampling,
            acknowledged: AtomicU64::new(0),
            total_latency_us: AtomicU64::new(0),
            max_latency_us: AtomicU64::new(0),
            samples_ms: Mutex::new(Vec::with_capacity((records / sampling + 1) as usize)),
            failed: AtomicU64::new(0),
            first_failure: Mutex::new(None),
        }
    }

    fn record(&self, iteration: u64, sent: Instant, result: DeliveryResult) {
        if let Err(e) = result {
            return self.failed(&e);
        }
        let latency_us = u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.acknowledged.fetch_add(1, Ordering::Relaxed);
        self.total_latency_us.fetch_add(latency_us, Ordering::Relaxed);
        self.max_latency_us.fetch_max(latency_us, Ordering::Relaxed);
        if iteration.is_multiple_of(self.sampling) {
            let ms = u32::try_from(latency_us / 1000).unwrap_or(u32::MAX);
            self.samples_ms.lock().unwrap_or_else(|p| p.into_inner()).push(ms);
        }
    }

    fn failed(&self, error: &ProduceError) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        self.first_failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert_with(|| error.to_string());
    }

    /// ProducerPerformance's `printTotal` line (Java's `%f` prints six decimals).
    fn summary(&self, elapsed: Duration) -> String {
        let count = self.acknowledged.load(Ordering::Relaxed);
        let secs = elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
        let avg_ms = if count == 0 {
            0.0
        } else {
            self.total_latency_us.load(Ordering::Relaxed) as f64 / count as f64 / 1000.0
        };
        let max_ms = self.max_latency_us.load(Ordering::Relaxed) as f64 / 1000.0;
        let mut samples = std::mem::take(&mut *self.samples_ms.lock().unwrap_or_else(|p| p.into_inner()));
        samples.sort_unstable();
        // Kafka takes the sample at index `(int) (p * size)`.
        let percentile = |p: f64| {
            let index = ((p * samples.len() as f64) as usize).min(samples.len().saturating_sub(1));
            samples.get(index).copied().unwrap_or(0)
        };
        format!(
            "{count} records sent, {:.6} records/sec ({:.2} MB/sec), {avg_ms:.2} ms avg latency, {max_ms:.2} ms max latency, \
             {} ms 50th, {} ms 95th, {} ms 99th, {} ms 99.9th.",
            count as f64 / secs,
            mb(count * self.record_bytes) / secs,
            percentile(0.5),
            percentile(0.95),
            percentile(0.99),
            percentile(0.999),
        )
    }

    fn failures(&self) -> Option<String> {
        let failed = self.failed.load(Ordering::Relaxed);
        let first = self.first_failure.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
        Some(format!("{failed} records failed; the first because: {first}"))
    }
}
