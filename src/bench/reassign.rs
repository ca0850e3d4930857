//! `kdeck bench reassign`: what moving replicas costs. Four brokers, one topic (6 partitions,
//! RF 3, min.insync.replicas 2) filled with `--bytes` of records; then every replica on one
//! broker moves to the others (the drain planner of `kdeck reassign plan --drain`), optionally
//! under the replication throttle, while a producer sends at a steady rate with acks=all.
//! Prints how long the move took and how fast it copied, and the producer's throughput and
//! latency during the move against the same length of time just before it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use tokio::time::Instant;

use super::{make_batch, mb};
use crate::cli::ReassignBenchArgs;
use crate::engine::{Acks, BrokerId, Cluster, ConfigAlteration, ConfigResource, TopicConfig, TopicPartition};
use crate::kafka::reassign::{self, Assignment, Goal, Throttle, ThrottleTarget};
use crate::out::outln;
use crate::storage::records::{self, Compression};

const TOPIC: &str = "bench";
const PARTITIONS: i32 = 6;
const BROKERS: i32 = 4;
/// The broker whose replicas move away.
const DRAINED: BrokerId = 3;
/// The steady producer sends one batch per partition this often.
const SEND_EVERY: Duration = Duration::from_millis(10);
/// How often the steady producer tries a batch, and how long it waits between tries (Kafka's
/// retry.backoff.ms).
const RETRIES: u32 = 10;
const RETRY_BACKOFF: Duration = Duration::from_millis(100);

pub fn run(args: &ReassignBenchArgs) -> Result<()> {
    super::block_on(run_async(args))
}

/// One acks=all produce of the steady producer: when it was sent, how long it took.
#[derive(Clone, Copy)]
struct Sent {
    at: Instant,
    latency: Duration,
    ok: bool,
}

async fn run_async(args: &ReassignBenchArgs) -> Result<()> {
    // The guard removes the data directory when this returns, on success and on error alike.
    let (_tmp, cluster) = super::embedded_cluster(args.dir.as_deref(), BROKERS).await?;
    let result = bench(&cluster, args).await;
    cluster.shutdown().await;
    result
}

async fn bench(cluster: &Cluster, args: &ReassignBenchArgs) -> Result<()> {
    cluster
        .create_topic(TOPIC, TopicConfig::new(PARTITIONS, 3).with_min_insync_replicas(2))
        .await?;
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            (0..PARTITIONS).all(|i| {
                s.partition(&TopicPartition::new(TOPIC, i))
                    .is_some_and(|p| p.isr.len() == 3 && p.high_watermark.is_some())
            })
        })
        .await?;
    let rate = args.rate;
    outln!(
        "reassign setup: {BROKERS} brokers, {PARTITIONS} partitions, RF 3, min.insync.replicas 2, {:.0} MiB to fill, \
         drain broker {DRAINED}, throttle {}, steady producer {rate} records/sec of {} bytes with acks=all",
        mb(args.bytes),
        args.throttle.map_or("none".to_string(), |t| format!("{t} bytes/sec")),
        args.record_size,
    );

    let filled = Instant::now();
    fill(cluster, args.bytes).await?;
    let took = filled.elapsed();
    outln!(
        "reassign fill: {:.1} MiB in {:.1} s ({:.1} MB/sec with acks=all, 3 replicas of each byte)",
        mb(args.bytes),
        took.as_secs_f64(),
        mb(args.bytes) / took.as_secs_f64().max(1e-9)
    );

    let sent = Arc::new(Mutex::new(Vec::<Sent>::new()));
    let batch = steady_batch(rate, args.record_size)?;
    let per_batch = records_in(&batch)?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut producers = Vec::new();
    for p in 0..PARTITIONS {
        let (cluster, batch, sent, stop) = (cluster.clone(), batch.clone(), Arc::clone(&sent), Arc::clone(&stop));
        producers.push(tokio::spawn(async move {
            let tp = TopicPartition::new(TOPIC, p);
            let mut next = Instant::now();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                tokio::time::sleep_until(next).await;
                next += SEND_EVERY;
                let at = Instant::now();
                // As a Kafka producer does: a retriable error (the leader moved as the drain
                // ended) is retried after retry.backoff.ms against the new leader, and the
                // latency counts from the first send.
                let mut tries = 0;
                let ok = loop {
                    tries += 1;
                    match cluster
                        .produce(&tp, batch.to_vec(), Acks::All, Duration::from_secs(30))
                        .await
                    {
                        Ok(_) => break true,
                        Err(e) if e.is_retriable() && tries < RETRIES => tokio::time::sleep(RETRY_BACKOFF).await,
                        Err(_) => break false,
                    }
                };
                let latency = at.elapsed();
                sent.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(Sent { at, latency, ok });
                // A late send goes at once; the schedule does not pile up behind it.
                next = next.max(Instant::now());
            }
        }));
    }
    let before = Duration::from_secs_f64(args.before_secs);
    tokio::time::sleep(before).await;

    let snapshot = cluster.snapshot();
    let metadata = cluster.metadata();
    let current: Vec<Assignment> = metadata
        .partitions()
        .map(|(tp, p)| Assignment::new(tp.topic, tp.partition, p.replicas.clone()))
        .collect();
    let live: Vec<BrokerId> = metadata
        .brokers
        .keys()
        .copied()
        .filter(|b| metadata.is_live(*b))
        .collect();
    let plan = reassign::propose(
        &current,
        &live,
        &Goal::Drain {
            broker: DRAINED,
            topics: vec![TOPIC.to_string()],
        },
    )
    .map_err(anyhow::Error::msg)?;
    let mut moved_bytes = 0u64;
    let mut copies = 0usize;
    for (now, after) in plan.diff(&current) {
        let size = snapshot
            .partition(&TopicPartition::new(now.topic.clone(), now.partition))
            .and_then(|p| p.replicas.iter().find(|r| r.is_leader).and_then(|r| r.size_bytes))
            .unwrap_or(0);
        let added = after.iter().filter(|b| !now.replicas.contains(b)).count();
        copies += added;
        moved_bytes += size * added as u64;
    }
    if let Some(rate) = args.throttle {
        for (target, set) in Throttle::of(&plan, &current, rate).configs() {
            let resource = match target {
                ThrottleTarget::Broker(b) => ConfigResource::Broker(b),
                ThrottleTarget::Topic(t) => ConfigResource::Topic(t),
            };
            let set: Vec<ConfigAlteration> = set.iter().map(|(k, v)| ConfigAlteration::set(k, v)).collect();
            cluster
                .alter_configs(&resource, &set, false)
                .await
                .map_err(|(code, message)| anyhow::anyhow!("setting the throttle: {code:?}: {message}"))?;
        }
    }
    let targets: Vec<(TopicPartition, Vec<BrokerId>)> = plan
        .partitions
        .iter()
        .map(|a| (TopicPartition::new(a.topic.clone(), a.partition), a.replicas.clone()))
        .collect();
    let move_started = Instant::now();
    let asked: Vec<(TopicPartition, Option<Vec<BrokerId>>)> =
        targets.iter().map(|(tp, r)| (tp.clone(), Some(r.clone()))).collect();
    let refused: Vec<String> = cluster
        .alter_reassignments(&asked)
        .await
        .map_err(|(code, message)| anyhow::anyhow!("{code:?}: {message}"))?
        .into_iter()
        .filter_map(|(tp, e)| e.map(|(code, m)| format!("{tp}: {code:?}: {m}")))
        .collect();
    if !refused.is_empty() {
        bail!("the move was refused: {}", refused.join("; "));
    }
    cluster
        .wait_for(Duration::from_secs(24 * 3600), |s| {
            targets.iter().all(|(tp, target)| {
                s.partition(tp).is_some_and(|p| {
                    let on: Vec<BrokerId> = p.replicas.iter().map(|r| r.broker).collect();
                    on == *target && p.isr.len() == target.len()
                })
            })
        })
        .await
        .context("waiting for the move to complete")?;
    let moved = move_started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for p in producers {
        p.await.context("a producer task failed")?;
    }

    outln!(
        "reassign move: {} partitions, {copies} replicas, {:.1} MiB copied in {:.2} s, {:.1} MB/sec moved",
        plan.partitions.len(),
        mb(moved_bytes),
        moved.as_secs_f64(),
        mb(moved_bytes) / moved.as_secs_f64().max(1e-9),
    );
    let sent = std::mem::take(&mut *sent.lock().unwrap_or_else(|p| p.into_inner()));
    let window = moved.min(before);
    let batch_bytes = batch.len() as u64;
    let phase = |name: &str, from: Instant, to: Instant| {
        let mine: Vec<Sent> = sent.iter().filter(|s| s.at >= from && s.at < to).copied().collect();
        producer_line(name, &mine, to - from, per_batch, batch_bytes)
    };
    outln!("{}", phase("before the move", move_started - window, move_started));
    outln!("{}", phase("during the move", move_started, move_started + moved));
    if window < moved {
        outln!(
            "reassign note: the phase before the move is {:.1} s, shorter than the move (raise --before-secs)",
            window.as_secs_f64()
        );
    }
    Ok(())
}

/// Fills the topic with `bytes` of 1 KiB records, acks=all, two requests in flight per
/// partition.
async fn fill(cluster: &Cluster, bytes: u64) -> Result<()> {
    let batch = Bytes::from(make_batch(1 << 20, 1024)?);
    let batches = bytes.div_ceil(batch.len() as u64);
    let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks = Vec::new();
    for p in 0..PARTITIONS {
        for _ in 0..2 {
            let (cluster, batch, next) = (cluster.clone(), batch.clone(), Arc::clone(&next));
            tasks.push(tokio::spawn(async move {
                let tp = TopicPartition::new(TOPIC, p);
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < batches {
                    cluster
                        .produce(&tp, batch.to_vec(), Acks::All, Duration::from_secs(60))
                        .await
                        .map_err(|e| anyhow::anyhow!("filling {tp}: {e:?}"))?;
                }
                anyhow::Ok(())
            }));
        }
    }
    for t in tasks {
        t.await.context("a fill task failed")??;
    }
    Ok(())
}

/// The steady producer's batch: `rate` records a second over every partition, one batch per
/// partition every [`SEND_EVERY`].
fn steady_batch(rate: u32, record_size: u32) -> Result<Bytes> {
    let per_second_per_partition = f64::from(rate) / f64::from(PARTITIONS);
    let count = (per_second_per_partition * SEND_EVERY.as_secs_f64()).round().max(1.0) as i64;
    let value = Bytes::from(vec![b'r'; record_size as usize]);
    let now = super::now_ms();
    let recs: Vec<_> = (0..count)
        .map(|i| records::record(i, now, None, Some(value.clone())))
        .collect();
    Ok(records::encode_batch(&recs, Compression::None)?.freeze())
}

fn records_in(batch: &[u8]) -> Result<u64> {
    Ok(crate::storage::batch::BatchHeader::parse(batch)?.records_count as u64)
}

/// A phase's producer figures in the producer perf test's words.
fn producer_line(name: &str, sent: &[Sent], length: Duration, per_batch: u64, batch_bytes: u64) -> String {
    let mut lat: Vec<Duration> = sent.iter().filter(|s| s.ok).map(|s| s.latency).collect();
    lat.sort_unstable();
    let failed = sent.len() - lat.len();
    let secs = length.as_secs_f64().max(1e-9);
    let pct = |q: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 * q).ceil() as usize).clamp(1, lat.len()) - 1;
        lat[i].as_secs_f64() * 1000.0
    };
    let records = lat.len() as u64 * per_batch;
    format!(
        "reassign producer {name}: {:.1} s, {records} records sent, {:.1} records/sec ({:.2} MB/sec), {:.2} ms p50, {:.2} ms p99, {:.2} ms max latency, {failed} failed",
        secs,
        records as f64 / secs,
        mb(lat.len() as u64 * batch_bytes) / secs,
        pct(0.5),
        pct(0.99),
        lat.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0),
    )
}
