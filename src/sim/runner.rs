//! Runs one schedule: starts the cluster in a temporary directory, applies each step, lets
//! simulated time pass, and hands a sample of the cluster to the checker after every step (and
//! every simulated second of a long wait). Then it heals every fault, waits for the cluster to
//! settle, stops the clients, reads everything back through the consumer path and measures
//! the work the idle cluster does.
//!
//! Time only moves when every task waits (the paused clock), so a livelock freezes it: a
//! watchdog thread notices simulated time standing still while the runner waits and wakes
//! the runner, which reports the spin and ends the run.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use tempfile::TempDir;
use tokio::sync::{Notify, broadcast};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::checker::{Checker, CheckerConfig, FinalState, Invariant, Observation, ReplicaLogs};
use super::schedule::{Action, LiveChange, Schedule, TopicSpec};
use super::wire::WireClients;
use super::workload::Workload;
use super::{SimOptions, SimReport};
use crate::client::consumer::{Consumer, ConsumerConfig, OffsetReset};
use crate::engine::group::OFFSETS_TOPIC;
use crate::engine::txn::TXN_STATE_TOPIC;
use crate::engine::{
    BrokerId, BrokerState, Cluster, ClusterConfig, ClusterEvent, ErrorCode, EventKind, IsolationLevel, LinkFault,
    NodeId, OffsetSpec, TopicConfig, TopicPartition,
};
use crate::storage::{CleanupPolicy, LogConfig};

/// How long the healed cluster has to settle.
const SETTLE_WITHIN: Duration = Duration::from_secs(60);
/// How often the checker samples while the cluster settles, and during long waits.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);
/// The idle window whose work is measured.
const IDLE_WINDOW: Duration = Duration::from_secs(10);

/// Why a run ends early.
enum Halt {
    /// Tasks kept spinning for a long stretch of forced time.
    Stalled,
    /// The cluster is gone (a restart failed); the violation is reported.
    Broken,
}

/// How far the clock is pushed each time the runtime is found spinning.
const BUSY_STEP: Duration = Duration::from_millis(50);
/// Pushes after which a spin is taken to last for ever (a minute of simulated time).
const MAX_BUSY_STEPS: u64 = 1_200;

/// Notices simulated time standing still while the runner waits: tasks that never wait keep
/// the runtime busy (or a task loops without returning), so the paused clock never advances.
/// In real time the clock would move on while they burn the CPU, so the watchdog pushes it
/// forward itself, from its own thread (the clock is shared and can be moved from any thread
/// in the runtime's context), quickly while the spin lasts. The runner reports the spin; after
/// a minute of pushes it gives up on the run.
struct Watchdog {
    gave_up: Arc<Notify>,
    waiting: Arc<AtomicBool>,
    pushes: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    ticker: JoinHandle<()>,
}

impl Watchdog {
    fn start(stall_after: Duration) -> Self {
        let ticks = Arc::new(AtomicU64::new(0));
        let ticker = tokio::spawn({
            let ticks = Arc::clone(&ticks);
            async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    ticks.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let runtime = tokio::runtime::Handle::current();
        let busy = BusyTime::of_this_thread();
        let gave_up = Arc::new(Notify::new());
        let waiting = Arc::new(AtomicBool::new(false));
        let pushes = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let (gave_up, waiting, stop, pushes) = (
                Arc::clone(&gave_up),
                Arc::clone(&waiting),
                Arc::clone(&stop),
                Arc::clone(&pushes),
            );
            move || {
                let _context = runtime.enter();
                let mut last = ticks.load(Ordering::Relaxed);
                let mut since = busy.time();
                let mut spinning = false;
                let push = |last: &mut u64| {
                    if pushes.fetch_add(1, Ordering::Relaxed) >= MAX_BUSY_STEPS {
                        gave_up.notify_one();
                    } else {
                        push_clock(BUSY_STEP);
                    }
                    *last = ticks.load(Ordering::Relaxed);
                };
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                    let now = ticks.load(Ordering::Relaxed);
                    if !waiting.load(Ordering::Relaxed) || (now != last && !spinning) {
                        spinning = false;
                        last = now;
                        since = busy.time();
                    } else if spinning {
                        // One push moves the 100 ms ticker at most once: more means the
                        // runtime went idle and the clock moves by itself again.
                        if now >= last + 2 {
                            spinning = false;
                            last = now;
                            since = busy.time();
                        } else {
                            push(&mut last);
                        }
                    } else if busy.time().saturating_sub(since) >= stall_after {
                        spinning = true;
                        push(&mut last);
                    }
                }
            }
        });
        Watchdog {
            gave_up,
            waiting,
            pushes,
            stop,
            thread: Some(thread),
            ticker,
        }
    }

    /// Awaits `work`; gives up once the runtime has spun for [`MAX_BUSY_STEPS`] pushes.
    async fn guard<T>(&self, work: impl Future<Output = T>) -> Result<T, Halt> {
        self.waiting.store(true, Ordering::Relaxed);
        let result = tokio::select! {
            biased;
            () = self.gave_up.notified() => Err(Halt::Stalled),
            value = work => Ok(value),
        };
        self.waiting.store(false, Ordering::Relaxed);
        result
    }

    /// How many times the clock was pushed so far.
    fn pushes(&self) -> u64 {
        self.pushes.load(Ordering::Relaxed)
    }
}

/// How long the runtime's thread has been busy: its CPU time where Linux tells it (so a
/// machine too loaded to run the simulation is not mistaken for a spin), else wall time.
struct BusyTime {
    schedstat: Option<std::path::PathBuf>,
    epoch: std::time::Instant,
}

impl BusyTime {
    /// For the calling thread.
    fn of_this_thread() -> Self {
        let schedstat = std::fs::read_link("/proc/thread-self")
            .ok()
            .map(|task| std::path::Path::new("/proc").join(task).join("schedstat"))
            .filter(|path| path.exists());
        BusyTime {
            schedstat,
            epoch: std::time::Instant::now(),
        }
    }

    fn time(&self) -> Duration {
        // schedstat's first field: nanoseconds spent on a CPU.
        let on_cpu = self.schedstat.as_ref().and_then(|path| {
            let text = std::fs::read_to_string(path).ok()?;
            text.split_whitespace().next()?.parse::<u64>().ok()
        });
        on_cpu.map_or_else(|| self.epoch.elapsed(), Duration::from_nanos)
    }
}

/// Moves the paused clock of the runtime entered on this thread forward by `by`.
fn push_clock(by: Duration) {
    let mut advance = std::pin::pin!(tokio::time::advance(by));
    // The first poll moves the clock; what remains is a yield nobody needs to wait for.
    let _ = advance
        .as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.ticker.abort();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The checker reads replica logs straight from the brokers.
struct ClusterLogs<'a>(&'a Cluster);

impl ReplicaLogs for ClusterLogs<'_> {
    fn read(&self, broker: BrokerId, tp: &TopicPartition, from: i64, upper: i64) -> Result<Bytes, ErrorCode> {
        self.0.inspect().read_replica(broker, tp, from, upper, 1 << 20)
    }
}

struct Sim {
    schedule: Schedule,
    options: SimOptions,
    _dir: TempDir,
    config: ClusterConfig,
    cluster: Cluster,
    events: broadcast::Receiver<ClusterEvent>,
    event_count: u64,
    checker: Checker,
    workload: Workload,
    watchdog: Watchdog,
    links: BTreeSet<(NodeId, NodeId)>,
    one_way: BTreeSet<(NodeId, NodeId)>,
    max_brokers: i32,
    step: usize,
    steps_run: usize,
    faults: u64,
    faults_by_kind: BTreeMap<&'static str, u64>,
    elections: BTreeMap<String, u64>,
    start: Instant,
    delivered_at_sample: BTreeMap<(NodeId, BrokerId), u64>,
    pushes_at_sample: u64,
    /// Leader, epoch and ISR per partition as last traced.
    traced_metadata: BTreeMap<TopicPartition, (BrokerId, i32, Vec<BrokerId>)>,
}

pub(super) async fn run(schedule: Schedule, options: SimOptions) -> anyhow::Result<SimReport> {
    let dir = scratch_dir(&options)?;
    let setup = &schedule.setup;
    let config = ClusterConfig {
        data_dir: dir.path().to_path_buf(),
        brokers: setup.brokers,
        replica_lag_time_max_ms: setup.replica_lag_time_max_ms,
        broker_heartbeat_interval_ms: 500,
        broker_session_timeout_ms: 3_000,
        replica_fetch_wait_max_ms: setup.replica_fetch_wait_max_ms,
        replica_fetch_backoff_ms: 200,
        unclean_leader_election: setup.unclean_leader_election,
        leader_election: setup.leader_election,
        auto_leader_rebalance: setup.auto_rebalance_ms.is_some(),
        leader_imbalance_check_interval_ms: setup.auto_rebalance_ms.unwrap_or(300_000),
        controller_failover_ms: 1_500,
        min_insync_replicas: 1,
        // The cleaner runs with the retention check: often where a topic is compacted.
        retention_check_interval_ms: if setup.topics.iter().any(|t| t.compacted) {
            1_000
        } else {
            60_000
        },
        offsets_topic_partitions: setup.offsets_topic_partitions,
        offsets_topic_replication_factor: 3,
        group_initial_rebalance_delay_ms: setup.group_initial_rebalance_delay_ms,
        offsets_retention_minutes: 10_080,
        producer_id_expiration_ms: 86_400_000,
        transaction_state_partitions: 3,
        transaction_state_replication_factor: 3,
        transaction_max_timeout_ms: 900_000,
        transaction_abort_timed_out_interval_ms: 1_000,
        transactional_id_expiration_ms: 604_800_000,
        log: LogConfig {
            segment_bytes: setup.segment_bytes,
            flush: setup.flush,
            ..LogConfig::default()
        },
    };
    let start = Instant::now();
    let watchdog = Watchdog::start(options.stall_after);
    let mut checker = Checker::new(CheckerConfig {
        offsets_topic_partitions: setup.offsets_topic_partitions,
        unclean_leader_election: setup.unclean_leader_election,
        // A wire seed's producers send each batch on its own, with none of a producer's
        // ordering.
        ordered_producers: setup
            .producers
            .iter()
            .enumerate()
            .filter(|(_, p)| !schedule.wire && (p.idempotent || p.max_in_flight == 1))
            .map(|(i, _)| i)
            .collect(),
        power_loss_loses_data: setup.flush != crate::storage::FlushPolicy::Always,
    });
    let started = watchdog
        .guard(tokio::time::timeout(
            Duration::from_secs(60),
            Cluster::start_observed(config.clone()),
        ))
        .await;
    let (cluster, events) = match started {
        Ok(Ok(Ok(started))) => started,
        failed => {
            let why = match failed {
                Ok(Ok(Err(e))) => format!("{e:#}"),
                Ok(Err(_)) => "not within 60 s".into(),
                _ => "simulated time stopped".into(),
            };
            checker.violate(
                Invariant::Restart,
                "first start",
                format!("the cluster did not start: {why}"),
            );
            return Ok(SimReport {
                seed: schedule.seed,
                steps: 0,
                faults: 0,
                faults_by_kind: BTreeMap::new(),
                elections: BTreeMap::new(),
                simulated: start.elapsed(),
                violations: checker.violations().to_vec(),
                allowed_losses: Vec::new(),
                acked_records: 0,
                consumed_records: 0,
                acknowledged_commits: 0,
                cleaned_records: 0,
                excused: BTreeMap::new(),
                transactions: BTreeMap::new(),
                wire: false,
                fingerprint: 0,
                schedule,
            });
        }
    };
    let mut workload = Workload::new(cluster.clone(), &setup.producers, &setup.groups, start);
    workload.set_compacted(setup.topics.iter().filter(|t| t.compacted).map(|t| t.name.clone()));
    if schedule.wire {
        match watchdog.guard(workload.speak_wire()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => checker.violate(
                Invariant::Liveness,
                "wire clients",
                format!("the Kafka-protocol clients cannot connect: {e}"),
            ),
            Err(_) => checker.violate(
                Invariant::Progress,
                "wire clients",
                "simulated time stopped while the Kafka-protocol clients connected",
            ),
        }
    }
    let mut sim = Sim {
        max_brokers: setup.brokers,
        schedule,
        options,
        _dir: dir,
        config,
        events,
        event_count: 0,
        cluster,
        checker,
        workload,
        watchdog,
        links: BTreeSet::new(),
        one_way: BTreeSet::new(),
        step: 0,
        steps_run: 0,
        faults: 0,
        faults_by_kind: BTreeMap::new(),
        elections: BTreeMap::new(),
        start,
        delivered_at_sample: BTreeMap::new(),
        pushes_at_sample: 0,
        traced_metadata: BTreeMap::new(),
    };
    if let Err(Halt::Stalled) = sim.play().await {
        sim.report_spin(true);
    }
    sim.cluster.shutdown().await;
    Ok(sim.report())
}

fn scratch_dir(options: &SimOptions) -> anyhow::Result<TempDir> {
    let shm = std::path::Path::new("/dev/shm");
    let dir = match &options.dir {
        Some(d) => tempfile::tempdir_in(d),
        None if shm.is_dir() => tempfile::tempdir_in(shm).or_else(|_| tempfile::tempdir()),
        None => tempfile::tempdir(),
    };
    dir.context("creating the simulation's data directory")
}

impl Sim {
    async fn play(&mut self) -> Result<(), Halt> {
        let topics = self.schedule.setup.topics.clone();
        for t in &topics {
            let outcome = self.create_topic(t).await;
            self.note(format!("setup: create topic {}: {outcome}", t.name));
        }
        let writers = self.schedule.setup.txn_writers.clone();
        self.workload.start_txn_writers(&writers, self.schedule.seed);
        self.wait(Duration::from_secs(1)).await?;
        let steps = self.schedule.steps.clone();
        for (i, step) in steps.iter().enumerate() {
            if self.options.skip.contains(&i) {
                continue;
            }
            self.step = i;
            self.steps_run += 1;
            let outcome = self.apply(&step.action).await?;
            if outcome == "ok"
                && let Some(kind) = step.action.fault_kind()
            {
                self.faults += 1;
                *self.faults_by_kind.entry(kind).or_insert(0) += 1;
            }
            self.note(format!("step {i}: {}: {outcome}", step.action));
            self.sample();
            self.wait(step.wait).await?;
        }
        self.step = steps.len();
        self.heal().await?;
        self.settle("after healing").await?;
        self.watchdog.guard(self.workload.shutdown()).await?;
        self.sample();
        self.settle("after the clients stopped").await?;
        self.sample();
        let final_state = self.read_back().await?;
        if self.options.trace {
            for r in self.cluster.inspect().replica_probes() {
                self.note(format!(
                    "final: {} on broker {}: leader {:?} epoch {}, log {}..{}, HW {}",
                    r.tp, r.broker, r.leader, r.leader_epoch, r.log_start_offset, r.log_end_offset, r.high_watermark
                ));
            }
        }
        self.checker.finish(&final_state);
        self.idle().await
    }

    fn note(&mut self, line: String) {
        if self.options.trace {
            eprintln!(
                "seed {} t={:.3}: {line}",
                self.schedule.seed,
                self.start.elapsed().as_secs_f64()
            );
        }
    }

    /// Lets `duration` of simulated time pass, sampling every half second of it.
    async fn wait(&mut self, duration: Duration) -> Result<(), Halt> {
        let deadline = Instant::now() + duration;
        while Instant::now() < deadline {
            let chunk = SAMPLE_EVERY.min(deadline - Instant::now());
            self.watchdog.guard(tokio::time::sleep(chunk)).await?;
            self.sample();
        }
        Ok(())
    }

    /// Hands the checker what happened since the last sample and the cluster as it is now.
    fn sample(&mut self) {
        // Losses the events reveal happened by now: records sent before it are at risk.
        self.checker.at_step(self.step, self.start.elapsed());
        loop {
            match self.events.try_recv() {
                Ok(event) => {
                    self.event_count += 1;
                    if let EventKind::LeaderElected { reason, .. } = &event.kind {
                        *self.elections.entry(format!("{reason:?}")).or_insert(0) += 1;
                    }
                    if self.options.trace {
                        self.note(format!("    event {:?}", event.kind));
                    }
                    self.checker.event(&event);
                }
                Err(broadcast::error::TryRecvError::Lagged(n)) => {
                    self.note(format!("    {n} events lost (the checker relies on samples for them)"));
                    self.checker.events_lost();
                }
                Err(_) => break,
            }
        }
        let outbox = self.workload.take();
        for ack in outbox.acks {
            if self.options.trace {
                self.note(format!(
                    "    acked {} at {}: {:?}",
                    ack.tp,
                    ack.offset,
                    String::from_utf8_lossy(&ack.value)
                ));
            }
            self.checker.acked(ack);
        }
        for read in outbox.reads {
            self.checker.consumed(read);
        }
        for commit in outbox.commits {
            self.checker.committed(commit);
        }
        for txn in outbox.txns {
            if self.options.trace {
                self.note(format!(
                    "    transaction {} of writer {} (instance {}): {:?}{}, {} records",
                    txn.txn,
                    txn.writer,
                    txn.instance,
                    txn.fate,
                    if txn.fenced { ", fenced" } else { "" },
                    txn.sent.iter().map(|(_, v)| v.len()).sum::<usize>()
                ));
            }
            self.checker.transaction(txn);
        }
        self.report_spin(false);
        let image = self.cluster.metadata();
        if self.options.trace {
            for (tp, p) in image.partitions() {
                let now = (p.leader, p.leader_epoch, p.isr.clone());
                if self.traced_metadata.get(&tp) != Some(&now) {
                    self.note(format!(
                        "    metadata {tp}: leader {} epoch {} ISR {:?}",
                        now.0, now.1, now.2
                    ));
                    self.traced_metadata.insert(tp, now);
                }
            }
        }
        let snapshot = self.cluster.snapshot();
        let replicas = self.cluster.inspect().replica_probes();
        self.delivered_at_sample = self.cluster.inspect().requests_delivered();
        self.checker.observe(&Observation {
            step: self.step,
            at: self.start.elapsed(),
            image: &image,
            snapshot: &snapshot,
            replicas: &replicas,
            logs: &ClusterLogs(&self.cluster),
        });
    }

    async fn apply(&mut self, action: &Action) -> Result<String, Halt> {
        let done = |r: anyhow::Result<()>| r.map_or_else(|e| format!("failed: {e:#}"), |()| "ok".to_string());
        let outcome = match action {
            Action::Produce {
                producer,
                topic,
                partition,
                records,
                keyed,
            } => {
                let produced = self
                    .watchdog
                    .guard(self.workload.produce(*producer, topic, *partition, *records, *keyed))
                    .await?;
                produced.map_or_else(|e| format!("failed: {e}"), |()| "ok".into())
            }
            Action::CrashProducer(p) => client(self.workload.crash_producer(*p)),
            Action::CrashTxnWriter { writer, zombie } => client(self.workload.crash_txn_writer(*writer, *zombie)),
            Action::Wait => "ok".into(),
            Action::JoinConsumer { group, member } => client(self.workload.join(*group, *member)),
            Action::CloseConsumer { group, member } => client(self.workload.close(*group, *member)),
            Action::CrashConsumer { group, member } => client(self.workload.crash(*group, *member)),
            Action::CommitConsumer { group, member } => client(self.workload.commit(*group, *member)),
            Action::Kill(b) => done(self.cluster.kill(*b)),
            Action::PowerLoss(b) => {
                let image = self.cluster.metadata();
                let result = self.cluster.kill_power_loss(*b);
                if result.is_ok() {
                    self.checker.power_loss(*b, &image);
                }
                done(result)
            }
            Action::Stop(b) => done(self.watchdog.guard(self.cluster.stop(*b)).await?),
            Action::Start(b) => done(self.cluster.start_broker(*b)),
            Action::Pause(b) => done(self.cluster.pause(*b)),
            Action::Resume(b) => done(self.cluster.resume(*b)),
            Action::Link { a, b, fault } => {
                self.set_link(*a, *b, *fault);
                "ok".into()
            }
            Action::OneWayLink { from, to, fault } => {
                self.cluster.set_link_one_way(*from, *to, *fault);
                match fault {
                    Some(_) => self.one_way.insert((*from, *to)),
                    None => self.one_way.remove(&(*from, *to)),
                };
                "ok".into()
            }
            Action::Setting(change) => {
                let result = match change {
                    LiveChange::Unclean { topic, enabled } => {
                        self.watchdog
                            .guard(self.cluster.set_unclean_election(topic.as_deref(), *enabled))
                            .await?
                    }
                    LiveChange::MinInsync { topic, value } => {
                        self.watchdog.guard(self.cluster.set_min_insync(topic, *value)).await?
                    }
                    LiveChange::AutoRebalance(on) => {
                        self.cluster.set_auto_rebalance(*on);
                        Ok(())
                    }
                };
                done(result)
            }
            Action::AddPartitions { topic, total } => done(
                self.watchdog
                    .guard(self.cluster.create_partitions(topic, *total))
                    .await?,
            ),
            Action::PowerLossCluster { brokers } => self.power_loss_cluster(*brokers).await?,
            Action::ElectPreferred => {
                let elected = self
                    .watchdog
                    .guard(self.cluster.elect_preferred_leaders(|_| true))
                    .await?;
                done(elected.map(|_| ()))
            }
            Action::CreateTopic(spec) => self.create_topic(spec).await,
            Action::DeleteTopic(name) => done(self.watchdog.guard(self.cluster.delete_topic(name)).await?),
            Action::RestartCluster { brokers } => self.restart(*brokers).await?,
        };
        Ok(outcome)
    }

    fn set_link(&mut self, a: NodeId, b: NodeId, fault: Option<LinkFault>) {
        self.cluster.set_link(a, b, fault);
        match fault {
            Some(_) => self.links.insert((a, b)),
            None => self.links.remove(&(a, b)),
        };
    }

    async fn create_topic(&mut self, spec: &TopicSpec) -> String {
        let mut config = TopicConfig::new(spec.partitions, spec.replication_factor)
            .with_min_insync_replicas(spec.min_insync_replicas)
            .with_unclean_leader_election(spec.unclean_leader_election);
        if spec.compacted {
            // Segments of a few batches, cleaned as soon as one is sealed.
            config = config
                .with_cleanup_policy(CleanupPolicy::Compact)
                .with_segment_bytes(COMPACTED_SEGMENT_BYTES);
            config.min_cleanable_dirty_ratio = Some(0.0);
            config.min_compaction_lag_ms = Some(0);
        }
        match self.cluster.create_topic(&spec.name, config).await {
            Ok(()) => "ok".into(),
            Err(e) => format!("failed: {e:#}"),
        }
    }

    /// Every running broker loses power at once, then the cluster starts again.
    async fn power_loss_cluster(&mut self, brokers: i32) -> Result<String, Halt> {
        let image = self.cluster.metadata();
        let running: Vec<BrokerId> = self
            .cluster
            .broker_states()
            .into_iter()
            .filter(|(_, state)| *state != BrokerState::Stopped && *state != BrokerState::Killed)
            .map(|(id, _)| id)
            .collect();
        for id in running {
            if let Err(e) = self.cluster.kill_power_loss(id) {
                return Ok(format!("failed: power loss on broker {id}: {e:#}"));
            }
            self.checker.power_loss(id, &image);
        }
        self.restart(brokers).await
    }

    /// Shuts every broker down and starts the cluster again on the same data directory.
    async fn restart(&mut self, brokers: i32) -> Result<String, Halt> {
        self.sample();
        self.workload.detach();
        self.cluster.shutdown().await;
        self.sample();
        self.config.brokers = brokers;
        let started = self
            .watchdog
            .guard(tokio::time::timeout(
                Duration::from_secs(60),
                Cluster::start_observed(self.config.clone()),
            ))
            .await?;
        let (cluster, events) = match started {
            Ok(Ok(started)) => started,
            failed => {
                let why = match failed {
                    Ok(Err(e)) => format!("{e:#}"),
                    _ => "not within 60 s".into(),
                };
                self.checker.violate(
                    Invariant::Restart,
                    format!("restart {}", self.step),
                    format!("the cluster did not start again with {brokers} brokers: {why}"),
                );
                return Err(Halt::Broken);
            }
        };
        // The subscription came before the start: the checker judges the start-up's
        // elections (unclean ones too) from their events.
        self.events = events;
        self.delivered_at_sample.clear();
        self.cluster = cluster.clone();
        self.links.clear();
        self.one_way.clear();
        self.max_brokers = self.max_brokers.max(brokers);
        self.watchdog.guard(self.workload.rebind(cluster)).await?;
        Ok("ok".into())
    }

    /// Every fault removed, every broker running, the cluster at its largest size.
    async fn heal(&mut self) -> Result<(), Halt> {
        let links: Vec<(NodeId, NodeId)> = self.links.iter().copied().collect();
        for (a, b) in links {
            self.set_link(a, b, None);
        }
        for (from, to) in std::mem::take(&mut self.one_way) {
            self.cluster.set_link_one_way(from, to, None);
        }
        for (id, state) in self.cluster.broker_states() {
            let outcome = match state {
                BrokerState::Paused => self.cluster.resume(id),
                BrokerState::Stopped | BrokerState::Killed => self.cluster.start_broker(id),
                BrokerState::Running => Ok(()),
            };
            self.note(format!("heal: broker {id} was {state:?}: {outcome:?}"));
        }
        if (self.config.brokers) < self.max_brokers {
            let outcome = self.restart(self.max_brokers).await?;
            self.note(format!("heal: restart with {} brokers: {outcome}", self.max_brokers));
        }
        self.sample();
        Ok(())
    }

    /// Waits for the cluster to settle (see [`Checker::unsettled`]), sampling as it goes.
    async fn settle(&mut self, when: &str) -> Result<(), Halt> {
        let deadline = Instant::now() + SETTLE_WITHIN;
        loop {
            let reason = {
                let image = self.cluster.metadata();
                let snapshot = self.cluster.snapshot();
                let replicas = self.cluster.inspect().replica_probes();
                self.checker.unsettled(
                    &Observation {
                        step: self.step,
                        at: self.start.elapsed(),
                        image: &image,
                        snapshot: &snapshot,
                        replicas: &replicas,
                        logs: &ClusterLogs(&self.cluster),
                    },
                    &self.workload.live_members(),
                )
            };
            let Some(reason) = reason else {
                self.note(format!(
                    "settled {when} at t={:.1} s",
                    self.start.elapsed().as_secs_f64()
                ));
                return Ok(());
            };
            if Instant::now() >= deadline {
                self.checker.at_step(self.step, self.start.elapsed());
                self.checker.violate(
                    Invariant::Liveness,
                    when,
                    format!("not settled {} s {when}: {reason}", SETTLE_WITHIN.as_secs()),
                );
                return Ok(());
            }
            self.watchdog.guard(tokio::time::sleep(SAMPLE_EVERY)).await?;
            self.sample();
        }
    }

    /// What fresh clients read back: every partition of the clients' topics by a consumer
    /// of its own (no group), and each group's committed offsets.
    async fn read_back(&mut self) -> Result<FinalState, Halt> {
        let tps: Vec<TopicPartition> = self
            .cluster
            .metadata()
            .partitions()
            .map(|(tp, _)| tp)
            .filter(|tp| tp.topic != OFFSETS_TOPIC && tp.topic != TXN_STATE_TOPIC)
            .collect();
        let mut out = match self.workload.wire() {
            Some(wire) => self.read_back_over_wire(&wire, &tps).await?,
            None => self.read_back_in_process(&tps).await?,
        };
        self.read_back_committed(&tps, &mut out).await?;
        Ok(out)
    }

    /// The partitions transactional writers wrote, read at read_committed (in process, in a
    /// wire seed too) once no transaction is open on them: writers ended theirs at shutdown,
    /// and the coordinator aborts what dead ones left open within their transaction timeout.
    async fn read_back_committed(&mut self, tps: &[TopicPartition], out: &mut FinalState) -> Result<(), Halt> {
        let topics: BTreeSet<String> = self
            .schedule
            .setup
            .txn_writers
            .iter()
            .map(|w| w.topic.clone())
            .collect();
        let reader = self.cluster.as_client(READ_BACK_CLIENT);
        for tp in tps.iter().filter(|tp| topics.contains(&tp.topic)) {
            let read = self
                .watchdog
                .guard(tokio::time::timeout(
                    Duration::from_secs(60),
                    read_partition_committed(&reader, tp),
                ))
                .await?;
            match read {
                Ok(Ok(records)) => {
                    out.committed_logs.insert(tp.clone(), records);
                }
                Ok(Err(e)) => self.checker.violate(
                    Invariant::Liveness,
                    format!("read back committed {tp}"),
                    format!("{tp} cannot be read back at read_committed after the cluster settled: {e}"),
                ),
                // A loss Kafka allows can leave a transaction's records without their
                // marker: a hanging transaction holds the last stable offset back for ever,
                // as in Kafka (KIP-664).
                Err(_) if self.checker.had_allowed_loss(tp) => {
                    self.note(format!("read back committed {tp}: a transaction hangs after an allowed loss"));
                }
                Err(_) => self.checker.violate(
                    Invariant::Liveness,
                    format!("read back committed {tp}"),
                    format!(
                        "{tp} cannot be read back at read_committed within 60 s after the cluster settled (a transaction left open?)"
                    ),
                ),
            }
        }
        Ok(())
    }

    /// Every partition read back by in-process clients, and each group's committed offsets.
    async fn read_back_in_process(&mut self, tps: &[TopicPartition]) -> Result<FinalState, Halt> {
        let reader = self.cluster.as_client(READ_BACK_CLIENT);
        let mut out = FinalState::default();
        for tp in tps {
            let read = self
                .watchdog
                .guard(tokio::time::timeout(
                    Duration::from_secs(30),
                    read_partition(&reader, tp),
                ))
                .await?;
            match read {
                Ok(Ok(records)) => out.insert_log(tp, records),
                Ok(Err(e)) => self.checker.violate(
                    Invariant::Liveness,
                    format!("read back {tp}"),
                    format!("{tp} cannot be read back after the cluster settled: {e}"),
                ),
                Err(_) => self.checker.violate(
                    Invariant::Liveness,
                    format!("read back {tp}"),
                    format!("{tp} cannot be read back within 30 s after the cluster settled"),
                ),
            }
        }
        for group in self.schedule.setup.groups.clone() {
            let consumer = Consumer::new(
                reader.clone(),
                ConsumerConfig {
                    group_id: Some(group.name.clone()),
                    enable_auto_commit: false,
                    ..ConsumerConfig::default()
                },
            );
            let committed = self
                .watchdog
                .guard(tokio::time::timeout(
                    Duration::from_secs(30),
                    consumer.committed(tps.to_vec()),
                ))
                .await?;
            match committed {
                Ok(Ok(offsets)) => {
                    let stored = offsets.into_iter().filter(|(_, o)| *o >= 0).collect();
                    out.commits.insert(group.name.clone(), stored);
                }
                Ok(Err(e)) => self.checker.violate(
                    Invariant::Liveness,
                    format!("read back {}", group.name),
                    format!("group {}'s committed offsets cannot be read back: {e}", group.name),
                ),
                Err(_) => self.checker.violate(
                    Invariant::Liveness,
                    format!("read back {}", group.name),
                    format!(
                        "group {}'s committed offsets cannot be read back within 30 s",
                        group.name
                    ),
                ),
            }
        }
        Ok(out)
    }

    /// A wire seed's read-back, over the Kafka protocol as well.
    async fn read_back_over_wire(&mut self, wire: &WireClients, tps: &[TopicPartition]) -> Result<FinalState, Halt> {
        let mut out = FinalState::default();
        for tp in tps {
            let read = self.watchdog.guard(read_partition_over_wire(wire, tp)).await?;
            match read {
                Ok(records) => out.insert_log(tp, records),
                Err(e) => self.checker.violate(
                    Invariant::Liveness,
                    format!("read back {tp}"),
                    format!("{tp} cannot be read back over the Kafka protocol after the cluster settled: {e}"),
                ),
            }
        }
        for group in self.schedule.setup.groups.clone() {
            match self.watchdog.guard(wire.committed(&group.name)).await? {
                Ok(offsets) => {
                    out.commits.insert(group.name.clone(), offsets);
                }
                Err(e) => self.checker.violate(
                    Invariant::Liveness,
                    format!("read back {}", group.name),
                    format!("group {}'s committed offsets cannot be read back: {e}", group.name),
                ),
            }
        }
        Ok(out)
    }

    /// With every client gone, counts the requests the brokers handle.
    async fn idle(&mut self) -> Result<(), Halt> {
        let before = self.cluster.inspect().requests_delivered();
        self.watchdog.guard(tokio::time::sleep(IDLE_WINDOW)).await?;
        let after = self.cluster.inspect().requests_delivered();
        let work: BTreeMap<(NodeId, BrokerId), u64> = after
            .iter()
            .map(|(k, v)| (*k, v.saturating_sub(before.get(k).copied().unwrap_or(0))))
            .filter(|(_, v)| *v > 0)
            .collect();
        let image = self.cluster.metadata();
        let followers: usize = image
            .partitions()
            .map(|(_, p)| p.replicas.len().saturating_sub(1))
            .sum();
        let brokers = image.brokers.len() as f64;
        // Heartbeats every 500 ms, and one long poll per follower replica every fetch wait:
        // three times that is plenty for an idle cluster.
        let fetches = 1000.0 / self.config.replica_fetch_wait_max_ms.max(1) as f64;
        let bound = 3.0 * (2.0 * brokers + followers as f64 * fetches) + 20.0;
        self.checker.at_step(self.step, self.start.elapsed());
        self.checker.idle_work(IDLE_WINDOW, &work, bound);
        Ok(())
    }

    /// The links that carried the most requests since the last sample.
    fn busiest_links(&self) -> (String, String) {
        let now = self.cluster.inspect().requests_delivered();
        let mut busy: Vec<((NodeId, BrokerId), u64)> = now
            .iter()
            .map(|(k, v)| {
                (
                    *k,
                    v.saturating_sub(self.delivered_at_sample.get(k).copied().unwrap_or(0)),
                )
            })
            .filter(|(_, v)| *v > 0)
            .collect();
        busy.sort_by_key(|b| std::cmp::Reverse(b.1));
        let kind = busy.first().map_or_else(String::new, |((from, _), _)| match from {
            NodeId::Client(_) => "a client".to_string(),
            NodeId::Broker(_) => "a broker".to_string(),
            NodeId::Controller => "the controller".to_string(),
        });
        let top: Vec<String> = busy
            .iter()
            .take(4)
            .map(|((from, to), n)| format!("{from:?} -> broker {to}: {n}"))
            .collect();
        (kind, if top.is_empty() { "none".into() } else { top.join(", ") })
    }

    /// Reports tasks that ran without waiting since the last sample (the clock had to be
    /// pushed), once per kind of busiest sender; `for_good` when the spin never ended.
    fn report_spin(&mut self, for_good: bool) {
        let pushes = self.watchdog.pushes();
        if pushes == self.pushes_at_sample && !for_good {
            return;
        }
        let (kind, links) = self.busiest_links();
        self.checker.at_step(self.step, self.start.elapsed());
        let how = if for_good {
            format!(
                "for {} s of simulated time, until the run gave up",
                (BUSY_STEP * MAX_BUSY_STEPS as u32).as_secs()
            )
        } else {
            format!(
                "for {} ms of simulated time",
                BUSY_STEP.as_millis() as u64 * (pushes - self.pushes_at_sample)
            )
        };
        self.checker.violate(
            Invariant::Progress,
            format!("spin {kind} {for_good}"),
            format!(
                "tasks ran without ever waiting {how} (the paused clock only moves when every task waits; real time would have passed with the CPU busy); requests since the last sample: {links}"
            ),
        );
        self.pushes_at_sample = pushes;
    }

    fn report(self) -> SimReport {
        let mut hasher = std::hash::DefaultHasher::new();
        let image = self.cluster.metadata();
        for (tp, p) in image.partitions() {
            (tp, p.leader, p.leader_epoch, p.partition_epoch, &p.isr).hash(&mut hasher);
        }
        for r in self.cluster.inspect().replica_probes() {
            (&r.tp, r.broker, r.log_end_offset, r.high_watermark).hash(&mut hasher);
        }
        self.event_count.hash(&mut hasher);
        for v in self.checker.violations() {
            (v.step, v.invariant).hash(&mut hasher);
        }
        SimReport {
            seed: self.schedule.seed,
            steps: self.steps_run,
            faults: self.faults,
            faults_by_kind: self.faults_by_kind,
            elections: self.elections,
            simulated: self.start.elapsed(),
            violations: self.checker.violations().to_vec(),
            allowed_losses: self.checker.allowed_losses().to_vec(),
            acked_records: self.checker.acked_records(),
            consumed_records: self.checker.consumed_records(),
            acknowledged_commits: self.checker.acknowledged_commits(),
            cleaned_records: self.checker.cleaned_records(),
            excused: self.checker.excused().clone(),
            transactions: self.checker.transactions(),
            wire: self.workload.speaks_wire(),
            fingerprint: hasher.finish(),
            schedule: self.schedule,
        }
    }
}

fn client(result: Result<(), String>) -> String {
    result.map_or_else(|e| format!("failed: {e}"), |()| "ok".into())
}

/// A partition from its log start to its HW, fetched over the Kafka protocol.
async fn read_partition_over_wire(wire: &WireClients, tp: &TopicPartition) -> Result<Vec<(i64, Bytes, i32)>, String> {
    let mut offset = wire.list_offsets(tp, OffsetSpec::Earliest).await?;
    let end = wire.list_offsets(tp, OffsetSpec::Latest).await?;
    let mut out = Vec::new();
    while offset < end {
        let (records, next) = wire.fetch_with_next(tp, offset).await?;
        let before = offset;
        for (at, value, epoch) in records.into_iter().filter(|r| r.0 >= before) {
            offset = at + 1;
            out.push((at, value, epoch));
        }
        // Past a batch compaction emptied (a fetch inside it gets the next batch).
        offset = offset.max(next.min(end));
        if offset == before {
            return Err(format!("no records at {offset}, below the HW {end}"));
        }
    }
    Ok(out)
}

/// `segment.bytes` of a compacted topic: a few batches each, so segments seal and the
/// cleaner has work within a seed's minute.
const COMPACTED_SEGMENT_BYTES: u64 = 2_048;

/// A partition as a fresh read_committed consumer reads it, once its last stable offset has
/// caught up with its HW (no transaction open): (offset, value) of every record of a
/// committed transaction (and every non-transactional one).
async fn read_partition_committed(cluster: &Cluster, tp: &TopicPartition) -> Result<Vec<(i64, Bytes)>, String> {
    let end = loop {
        let hw = cluster
            .list_offset(tp, OffsetSpec::Latest)
            .await
            .map_err(|e| format!("ListOffsets: {e:?}"))?;
        let stable = cluster
            .list_offset_isolated(tp, OffsetSpec::Latest, IsolationLevel::ReadCommitted)
            .await
            .map_err(|e| format!("ListOffsets (read_committed): {e:?}"))?;
        if stable >= hw {
            break stable;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let mut consumer = Consumer::new(
        cluster.clone(),
        ConsumerConfig {
            group_id: None,
            auto_offset_reset: OffsetReset::Earliest,
            enable_auto_commit: false,
            fetch_max_wait_ms: 100,
            isolation_level: IsolationLevel::ReadCommitted,
            ..ConsumerConfig::default()
        },
    );
    consumer.assign(vec![tp.clone()]);
    consumer.seek_to_beginning(tp).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while consumer.position(tp).is_none_or(|p| p < end) {
        for r in consumer
            .poll(Duration::from_millis(500))
            .await
            .map_err(|e| e.to_string())?
        {
            out.push((r.offset, r.value.unwrap_or_default()));
        }
    }
    consumer.close().await;
    Ok(out)
}

/// The client node of the fresh consumers that read everything back at the end.
const READ_BACK_CLIENT: u32 = 9_999;

/// A partition's committed records, from its log start to its HW, as a fresh consumer of its
/// own reads them (manual assignment, from the beginning, until its position reaches the
/// end offset ListOffsets gives).
async fn read_partition(cluster: &Cluster, tp: &TopicPartition) -> Result<Vec<(i64, Bytes, i32)>, String> {
    let end = cluster
        .list_offset(tp, OffsetSpec::Latest)
        .await
        .map_err(|e| format!("ListOffsets: {e:?}"))?;
    let mut consumer = Consumer::new(
        cluster.clone(),
        ConsumerConfig {
            group_id: None,
            auto_offset_reset: OffsetReset::Earliest,
            enable_auto_commit: false,
            fetch_max_wait_ms: 100,
            ..ConsumerConfig::default()
        },
    );
    consumer.assign(vec![tp.clone()]);
    consumer.seek_to_beginning(tp).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while consumer.position(tp).is_none_or(|p| p < end) {
        for r in consumer
            .poll(Duration::from_millis(500))
            .await
            .map_err(|e| e.to_string())?
        {
            out.push((r.offset, r.value.unwrap_or_default(), r.leader_epoch.unwrap_or(-1)));
        }
    }
    consumer.close().await;
    Ok(out)
}
