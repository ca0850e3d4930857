//! A scenario's traffic: producers with the scenario's `acks`, idempotence and rate, and
//! consumer groups whose members can join, leave, pause and resume on a step's command.
//! It counts what a room is told: records acknowledged, produce failures by Kafka error,
//! acknowledged records later gone from the log (an unclean election's price), keys seen in
//! more than one partition, and per-key order as consumers saw it.
//!
//! Values are `"<key> #<n>"`: the key's own sequence, so a consumer can tell whether it saw
//! a key's records in order, and the checker whether the record at an acknowledged offset
//! is still the one that was acknowledged.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Result, bail};
use bytes::Bytes;
use tokio::task::JoinHandle;

use super::format::{GroupSetup, ProducerSetup, Setup};
use crate::client::consumer::{Consumer, ConsumerConfig, OffsetReset};
use crate::client::producer::{ProduceError, Producer, ProducerConfig, ProducerRecord};
use crate::config::KdeckConfig;
use crate::embedded::{ClusterSetup, DataDir, Embedded, Steered, Traffic};
use crate::engine::{Acks, Clock, Cluster, ErrorCode, TopicPartition};
use crate::storage::records;
pub use crate::view::WorkloadStats;

#[derive(Default)]
struct Counters {
    stats: WorkloadStats,
    /// Acknowledged offsets by partition, with the value acknowledged there.
    acked: HashMap<TopicPartition, BTreeMap<i64, Bytes>>,
    key_partitions: HashMap<String, BTreeSet<i32>>,
}

/// The most acknowledged records remembered per partition for the loss check.
const TRACKED_PER_PARTITION: usize = 50_000;

/// Kafka's name of an error code (`NotEnoughReplicas` -> `NOT_ENOUGH_REPLICAS`).
pub fn kafka_name(code: ErrorCode) -> String {
    let debug = format!("{code:?}");
    let mut out = String::new();
    for (i, c) in debug.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

fn error_name(e: &ProduceError) -> String {
    match e {
        ProduceError::Kafka { error, .. } => kafka_name(*error),
        ProduceError::DeliveryTimeout {
            last_error: Some(error),
            ..
        } => kafka_name(*error),
        ProduceError::DeliveryTimeout { .. } => "DELIVERY_TIMEOUT".into(),
        other => format!("{other}"),
    }
}

struct Member {
    task: JoinHandle<()>,
    /// Set to make the member close its consumer (LeaveGroup) and end.
    leave: Arc<AtomicBool>,
}

struct GroupRun {
    setup: GroupSetup,
    members: Vec<Member>,
    paused: Arc<AtomicBool>,
    /// Members started so far.
    next: usize,
}

/// The running workload; [`ScenarioWorkload::stop`] ends it.
pub struct ScenarioWorkload {
    cluster: Cluster,
    counters: Arc<Mutex<Counters>>,
    acks: Arc<AtomicI16>,
    producer_tasks: Mutex<Vec<JoinHandle<()>>>,
    producers: Vec<ProducerSetup>,
    groups: tokio::sync::Mutex<BTreeMap<String, GroupRun>>,
    verifier: Mutex<Option<JoinHandle<()>>>,
}

/// The embedded cluster `setup` describes, in `data_dir`, with the scenario's producers and
/// groups steering it in place of the demo.
pub async fn start_embedded(config: &KdeckConfig, setup: &Setup, data_dir: DataDir) -> Result<Embedded> {
    let cluster = ClusterSetup {
        cluster: setup.cluster_config(config.cluster_config()),
        topics: setup
            .topics
            .iter()
            .map(|t| (t.name.clone(), setup.topic_config(t)))
            .collect(),
    };
    let starting = Embedded::set_up(config, &cluster, data_dir).await?;
    match ScenarioWorkload::start(starting.cluster(), &setup.producers, &setup.groups).await {
        Ok(workload) => Ok(starting.run(Box::new(workload))),
        Err(e) => {
            starting.abandon().await;
            Err(e.context("starting the scenario's producers and consumers"))
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn acks_of(code: i16) -> Acks {
    match code {
        0 => Acks::None,
        1 => Acks::Leader,
        _ => Acks::All,
    }
}

impl ScenarioWorkload {
    pub async fn start(
        cluster: &Cluster,
        producers: &[ProducerSetup],
        groups: &[GroupSetup],
    ) -> Result<ScenarioWorkload> {
        let acks = producers.first().map_or(-1, |p| p.acks.code());
        let counters = Arc::new(Mutex::new(Counters::default()));
        lock(&counters).stats.acks = (!producers.is_empty()).then_some(acks);
        let workload = ScenarioWorkload {
            cluster: cluster.clone(),
            counters,
            acks: Arc::new(AtomicI16::new(acks)),
            producer_tasks: Mutex::new(Vec::new()),
            producers: producers.to_vec(),
            groups: tokio::sync::Mutex::new(BTreeMap::new()),
            verifier: Mutex::new(None),
        };
        workload.start_producers().await?;
        {
            let mut runs = workload.groups.lock().await;
            for g in groups {
                let mut run = GroupRun {
                    setup: g.clone(),
                    members: Vec::new(),
                    paused: Arc::new(AtomicBool::new(false)),
                    next: 0,
                };
                for _ in 0..g.members {
                    workload.spawn_member(&mut run);
                }
                runs.insert(g.name.clone(), run);
            }
        }
        let verifier = tokio::spawn(verify_loop(cluster.clone(), Arc::clone(&workload.counters)));
        *lock(&workload.verifier) = Some(verifier);
        Ok(workload)
    }

    async fn start_producers(&self) -> Result<()> {
        let acks = self.acks.load(Ordering::Relaxed);
        let mut tasks = Vec::new();
        for (i, p) in self.producers.iter().enumerate() {
            let config = ProducerConfig {
                acks: acks_of(acks),
                enable_idempotence: p.idempotence && acks == -1,
                linger_ms: 5,
                request_timeout_ms: 3_000,
                delivery_timeout_ms: 6_000,
                retry_backoff_ms: 200,
                ..ProducerConfig::default()
            };
            let producer = Producer::new(self.cluster.clone(), config).await?;
            tasks.push(tokio::spawn(produce_loop(
                producer,
                self.cluster.clock().clone(),
                p.clone(),
                i,
                Arc::clone(&self.counters),
            )));
        }
        *lock(&self.producer_tasks) = tasks;
        Ok(())
    }

    /// The counts now.
    pub fn stats(&self) -> WorkloadStats {
        lock(&self.counters).stats.clone()
    }

    /// Restarts the producers with another `acks` (Kafka producers cannot change it live).
    pub async fn set_acks(&self, acks: i16) -> Result<()> {
        if ![-1, 0, 1].contains(&acks) {
            bail!("acks must be all (-1), 1 or 0, not {acks}");
        }
        if self.producers.is_empty() {
            bail!("there are no producers to set acks on");
        }
        self.acks.store(acks, Ordering::Relaxed);
        for t in lock(&self.producer_tasks).drain(..) {
            t.abort();
        }
        lock(&self.counters).stats.acks = Some(acks);
        self.start_producers().await
    }

    fn spawn_member(&self, run: &mut GroupRun) {
        let leave = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(consume_loop(
            self.cluster.clone(),
            run.setup.clone(),
            Arc::clone(&run.paused),
            Arc::clone(&leave),
            Arc::clone(&self.counters),
        ));
        run.next += 1;
        run.members.push(Member { task, leave });
    }

    pub async fn add_member(&self, group: &str) -> Result<usize> {
        let mut runs = self.groups.lock().await;
        let Some(run) = runs.get_mut(group) else {
            bail!("the scenario runs no group {group}");
        };
        self.spawn_member(run);
        Ok(run.members.len())
    }

    /// The newest member leaves the group (its consumer closes: LeaveGroup).
    pub async fn remove_member(&self, group: &str) -> Result<usize> {
        let mut runs = self.groups.lock().await;
        let Some(run) = runs.get_mut(group) else {
            bail!("the scenario runs no group {group}");
        };
        let Some(member) = run.members.pop() else {
            bail!("group {group} has no member left to remove");
        };
        // The loop sees the flag, closes its consumer (LeaveGroup) and ends.
        member.leave.store(true, Ordering::Relaxed);
        Ok(run.members.len())
    }

    pub async fn pause_group(&self, group: &str, paused: bool) -> Result<()> {
        let runs = self.groups.lock().await;
        let Some(run) = runs.get(group) else {
            bail!("the scenario runs no group {group}");
        };
        run.paused.store(paused, Ordering::Relaxed);
        Ok(())
    }

    pub fn stop(&self) {
        for t in lock(&self.producer_tasks).drain(..) {
            t.abort();
        }
        if let Some(v) = lock(&self.verifier).take() {
            v.abort();
        }
        if let Ok(mut runs) = self.groups.try_lock() {
            for (_, run) in std::mem::take(&mut *runs) {
                for m in run.members {
                    m.task.abort();
                }
            }
        }
    }
}

/// Paced on the cluster's clock: a frozen cluster gets no new records, slow motion slows
/// them down with everything else.
async fn produce_loop(
    producer: Producer,
    clock: Clock,
    setup: ProducerSetup,
    index: usize,
    counters: Arc<Mutex<Counters>>,
) {
    let rate = setup.rate.max(1);
    let tick = Duration::from_millis(100);
    let per_tick = rate.div_ceil(10);
    let mut next_seq: HashMap<String, u64> = HashMap::new();
    let mut n: u64 = 0;
    let mut interval = clock.interval(tick);
    loop {
        interval.tick().await;
        for _ in 0..per_tick {
            let key = if setup.keys > 0 {
                format!("key-{}", n % u64::from(setup.keys))
            } else {
                format!("p{index}")
            };
            n += 1;
            let seq = next_seq.entry(key.clone()).or_insert(0);
            *seq += 1;
            let value = Bytes::from(format!("{key} #{seq}"));
            let record = ProducerRecord {
                topic: setup.topic.clone(),
                partition: setup.partition,
                key: (setup.keys > 0).then(|| Bytes::from(key.clone())),
                value: Some(value.clone()),
                headers: Vec::new(),
                timestamp: None,
            };
            let shared = Arc::clone(&counters);
            let keyed = setup.keys > 0;
            let enqueued = producer
                .enqueue_with_callback(record, move |outcome| {
                    let mut c = lock(&shared);
                    match outcome {
                        Ok(meta) => {
                            c.stats.acked += 1;
                            if meta.offset >= 0 {
                                let tp = TopicPartition::new(&*meta.topic, meta.partition);
                                let tracked = c.acked.entry(tp).or_default();
                                // An offset acknowledged twice: the first record is gone.
                                let replaced = tracked.insert(meta.offset, value);
                                if tracked.len() > TRACKED_PER_PARTITION {
                                    tracked.pop_first();
                                }
                                if replaced.is_some() {
                                    c.stats.lost_acked += 1;
                                }
                            }
                            if keyed {
                                let partitions = c.key_partitions.entry(key).or_default();
                                if partitions.insert(meta.partition) && partitions.len() == 2 {
                                    c.stats.keys_in_many_partitions += 1;
                                }
                            }
                        }
                        Err(e) => *c.stats.errors.entry(error_name(&e)).or_insert(0) += 1,
                    }
                })
                .await;
            if let Err(e) = enqueued {
                *lock(&counters).stats.errors.entry(error_name(&e)).or_insert(0) += 1;
            }
        }
    }
}

/// Compares every remembered acknowledged record with what the partition's leader holds at
/// its offset below the high watermark; one that differs was lost (and is forgotten).
async fn verify_loop(cluster: Cluster, counters: Arc<Mutex<Counters>>) {
    let clock = cluster.clock().clone();
    loop {
        clock.sleep(Duration::from_millis(500)).await;
        let partitions: Vec<(TopicPartition, i64)> = lock(&counters)
            .acked
            .iter()
            .filter_map(|(tp, offsets)| offsets.first_key_value().map(|(o, _)| (tp.clone(), *o)))
            .collect();
        for (tp, from) in partitions {
            let mut at = from;
            let mut held: HashMap<i64, Bytes> = HashMap::new();
            let mut high_watermark = from;
            while let Ok(fetched) = cluster.fetch(&tp, at, 1 << 20).await {
                high_watermark = fetched.high_watermark;
                if fetched.records.is_empty() {
                    break;
                }
                let mut last = at;
                let _ = records::for_each_shared(fetched.records.clone(), |r| {
                    last = last.max(r.offset + 1);
                    if let Some(v) = r.value {
                        held.insert(r.offset, v);
                    }
                });
                match records::next_offset_after(&fetched.records) {
                    Some(next) if next > at => at = next.max(last),
                    _ => break,
                }
                if at >= high_watermark {
                    break;
                }
            }
            let mut c = lock(&counters);
            let Some(tracked) = c.acked.get_mut(&tp) else {
                continue;
            };
            let lost: Vec<i64> = tracked
                .range(from..high_watermark)
                .filter(|(offset, value)| held.get(offset) != Some(value))
                .map(|(o, _)| *o)
                .collect();
            for o in &lost {
                tracked.remove(o);
            }
            c.stats.lost_acked += lost.len() as u64;
        }
    }
}

async fn consume_loop(
    cluster: Cluster,
    setup: GroupSetup,
    paused: Arc<AtomicBool>,
    leave: Arc<AtomicBool>,
    counters: Arc<Mutex<Counters>>,
) {
    let clock = cluster.clock().clone();
    let mut consumer = Consumer::new(
        cluster,
        ConsumerConfig {
            group_id: Some(setup.name.clone()),
            auto_offset_reset: OffsetReset::Earliest,
            auto_commit_interval_ms: 1_000,
            session_timeout_ms: 6_000,
            heartbeat_interval_ms: 1_000,
            max_poll_records: 50,
            assignors: vec![setup.assignor.clone()],
            ..ConsumerConfig::default()
        },
    );
    consumer.subscribe(vec![setup.topic.clone()]);
    let mut last_seq: HashMap<Bytes, u64> = HashMap::new();
    let mut generation = None;
    loop {
        if leave.load(Ordering::Relaxed) {
            consumer.close().await;
            return;
        }
        if paused.load(Ordering::Relaxed) {
            clock.sleep(Duration::from_millis(200)).await;
            continue;
        }
        match consumer.poll(Duration::from_millis(500)).await {
            Ok(batch) => {
                if consumer.generation() != generation {
                    // A rebalance hands partitions over from their committed offsets: some
                    // records come again, which is at-least-once, not disorder.
                    generation = consumer.generation();
                    last_seq.clear();
                }
                let (mut disorder, mut checked) = (0, 0);
                for r in &batch {
                    let (Some(key), Some(value)) = (&r.key, &r.value) else {
                        continue;
                    };
                    let Some(seq) = std::str::from_utf8(value)
                        .ok()
                        .and_then(|v| v.rsplit_once(" #"))
                        .and_then(|(_, n)| n.parse::<u64>().ok())
                    else {
                        continue;
                    };
                    let last = last_seq.entry(key.clone()).or_insert(0);
                    if seq < *last {
                        disorder += 1;
                    }
                    checked += 1;
                    *last = seq;
                }
                if checked > 0 {
                    let stats = &mut lock(&counters).stats;
                    *stats.order_checked.entry(setup.name.clone()).or_insert(0) += checked;
                    if disorder > 0 {
                        *stats.out_of_order.entry(setup.name.clone()).or_insert(0) += disorder;
                    }
                }
                if setup.ms_per_record > 0 && !batch.is_empty() {
                    clock
                        .sleep(Duration::from_millis(setup.ms_per_record * batch.len() as u64))
                        .await;
                }
            }
            Err(_) => clock.sleep(Duration::from_millis(500)).await,
        }
    }
}

impl Traffic for ScenarioWorkload {
    fn stats(&self) -> WorkloadStats {
        ScenarioWorkload::stats(self)
    }

    fn stop(&self) {
        ScenarioWorkload::stop(self);
    }

    fn set_acks(&self, acks: i16) -> Steered<'_, ()> {
        Box::pin(ScenarioWorkload::set_acks(self, acks))
    }

    fn add_member<'a>(&'a self, group: &'a str) -> Steered<'a, usize> {
        Box::pin(ScenarioWorkload::add_member(self, group))
    }

    fn remove_member<'a>(&'a self, group: &'a str) -> Steered<'a, usize> {
        Box::pin(ScenarioWorkload::remove_member(self, group))
    }

    fn pause_group<'a>(&'a self, group: &'a str, paused: bool) -> Steered<'a, ()> {
        Box::pin(ScenarioWorkload::pause_group(self, group, paused))
    }
}
