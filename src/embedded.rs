//! The embedded cluster as a [`ClusterSource`]: a room beside `view.rs`, the one place that
//! knows both the engine and the view types. It starts the cluster (and the demo workload)
//! from the configuration and the command-line flags, turns engine snapshots and events
//! into `Arc<ClusterView>`s a few times a second, runs console commands in the background
//! and fills message tails. The same start-up serves a headless `kdeck serve`.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use tempfile::TempDir;
use tokio::sync::{OnceCell, broadcast, watch};
use tokio::task::JoinHandle;

use crate::cli::ClusterArgs;
use crate::client::assignor::decode_assignment;
use crate::client::consumer::{Consumer, ConsumerConfig, OffsetReset};
use crate::client::producer::{Producer, ProducerConfig, ProducerRecord};
use crate::config::{ConsoleConfig, KdeckConfig};
use crate::engine::{BrokerState, Cluster, ClusterEvent, ClusterSnapshot, ElectionReason, ErrorCode, EventKind};
use crate::engine::{TopicConfig, TopicPartition};
use crate::storage::CleanupPolicy;
use crate::view::{
    BrokerRow, BrokerStatus, ClusterSource, ClusterView, Command, CommandOutcome, GroupOffsetRow, GroupRow, MemberRow,
    OutcomeSender, PartitionRow, ReplicaRole, ReplicaRow, Retention, SeekPosition, Severity, SourceKind, TailBuffer,
    TailHandle, TailRecord, TailSpec, Throughput, TopicRow, ViewEvent,
};
use crate::wire::{Listener, WireServer};
use crate::workload::{DemoConfig, Workload};

/// Samples kept for sparklines and trends.
const HISTORY: usize = 60;

/// Where the cluster keeps its data.
#[derive(Debug)]
pub enum DataDir {
    /// Kept across runs.
    Persistent(PathBuf),
    /// Removed when dropped.
    Ephemeral(TempDir),
}

const EPHEMERAL_PREFIX: &str = "kdeck-";
/// In an ephemeral data directory: the id of the process that owns it.
const EPHEMERAL_OWNER: &str = "kdeck.pid";

/// Removes the ephemeral data directories of runs that died without cleaning up (a crash,
/// SIGKILL): those under `temp` named `kdeck-*` whose owner file names a process that no
/// longer runs. Directories without that file are left alone; failures are only logged.
pub fn remove_stale_ephemeral_dirs(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let named = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(EPHEMERAL_PREFIX));
        if !named || !path.is_dir() {
            continue;
        }
        let Ok(owner) = std::fs::read_to_string(path.join(EPHEMERAL_OWNER)) else {
            continue;
        };
        let Ok(pid) = owner.trim().parse::<i32>() else { continue };
        if pid <= 0 || process_alive(pid) {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => {
                tracing::info!(dir = %path.display(), pid, "removed the data directory of an ephemeral run that did not clean up")
            }
            Err(e) => {
                tracing::warn!(dir = %path.display(), error = %e, "cannot remove a stale ephemeral data directory")
            }
        }
    }
}

/// Whether process `pid` may still run: on Linux its `/proc` entry tells; where there is no
/// `/proc` every owner counts as running, so nothing is removed by mistake.
fn process_alive(pid: i32) -> bool {
    let proc = Path::new("/proc");
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}

impl DataDir {
    /// `--ephemeral`: a new temporary directory; `--data-dir DIR`: that directory; otherwise
    /// `kdeck/` in the platform data directory.
    pub fn prepare(args: &ClusterArgs) -> Result<DataDir> {
        let dir = if args.ephemeral {
            let temp = std::env::temp_dir();
            remove_stale_ephemeral_dirs(&temp);
            let dir = tempfile::Builder::new()
                .prefix(EPHEMERAL_PREFIX)
                .tempdir_in(&temp)
                .context("creating a temporary data directory")?;
            std::fs::write(dir.path().join(EPHEMERAL_OWNER), std::process::id().to_string())
                .with_context(|| format!("marking {} as this run's", dir.path().display()))?;
            DataDir::Ephemeral(dir)
        } else {
            let path = match &args.data_dir {
                Some(d) => d.clone(),
                None => dirs::data_dir()
                    .map(|d| d.join("kdeck"))
                    .ok_or_else(|| anyhow!("no platform data directory here; pass --data-dir DIR or --ephemeral"))?,
            };
            std::fs::create_dir_all(&path)
                .with_context(|| format!("creating the data directory {}", path.display()))?;
            DataDir::Persistent(path)
        };
        Ok(dir)
    }

    pub fn path(&self) -> &Path {
        match self {
            DataDir::Persistent(p) => p,
            DataDir::Ephemeral(t) => t.path(),
        }
    }
}

struct Shared {
    cluster: Cluster,
    demo: Option<DemoConfig>,
    workload: tokio::sync::Mutex<Option<Workload>>,
    demo_running: std::sync::atomic::AtomicBool,
    producer: OnceCell<Producer>,
    console: ConsoleConfig,
}

/// A running embedded cluster with its view task; call [`Embedded::shutdown`] to stop it.
pub struct Embedded {
    shared: Arc<Shared>,
    views: watch::Receiver<Arc<ClusterView>>,
    snapshot_task: Mutex<Option<JoinHandle<()>>>,
    data_dir: Mutex<Option<DataDir>>,
    data_path: PathBuf,
    wire: Option<WireServer>,
}

impl Embedded {
    /// Prepares the data directory from the flags and starts everything.
    pub async fn start(config: &KdeckConfig, args: &ClusterArgs) -> Result<Embedded> {
        let dir = DataDir::prepare(args)?;
        Embedded::start_in(config, args, dir).await
    }

    /// Starts the cluster in an already prepared data directory (the console prepares it
    /// first to put its log file there).
    pub async fn start_in(config: &KdeckConfig, args: &ClusterArgs, data_dir: DataDir) -> Result<Embedded> {
        let mut cluster_config = config.cluster_config();
        cluster_config.data_dir = data_dir.path().to_path_buf();
        if let Some(n) = args.brokers {
            cluster_config.brokers = n;
        }
        let cluster = Cluster::start(cluster_config).await?;
        // Kafka clients reach the same brokers the console shows (`[wire]`).
        let wire = if config.wire.enabled {
            match WireServer::start(cluster.clone(), config.wire.clone()).await {
                Ok(server) => Some(server),
                Err(e) => {
                    cluster.shutdown().await;
                    return Err(anyhow::Error::new(e).context("starting the Kafka listeners ([wire])"));
                }
            }
        } else {
            None
        };
        let events = cluster.events();
        let demo = (!args.no_demo).then(|| config.demo.clone());
        let workload = match &demo {
            Some(d) => Some(
                Workload::start(&cluster, d.clone())
                    .await
                    .context("starting the demo workload")?,
            ),
            None => None,
        };
        let shared = Arc::new(Shared {
            demo_running: std::sync::atomic::AtomicBool::new(workload.is_some()),
            cluster,
            demo,
            workload: tokio::sync::Mutex::new(workload),
            producer: OnceCell::new(),
            console: config.console.clone(),
        });
        let listeners = wire.as_ref().map_or_else(Vec::new, WireServer::listeners);
        let mut builder = ViewBuilder::new(&config.console, &listeners);
        let first = Arc::new(builder.build(&shared.cluster.snapshot(), shared.demo_state(), Utc::now()));
        let (tx, views) = watch::channel(first);
        let task = tokio::spawn(snapshot_loop(Arc::clone(&shared), builder, events, tx));
        Ok(Embedded {
            shared,
            views,
            snapshot_task: Mutex::new(Some(task)),
            data_path: data_dir.path().to_path_buf(),
            data_dir: Mutex::new(Some(data_dir)),
            wire,
        })
    }

    pub fn cluster(&self) -> &Cluster {
        &self.shared.cluster
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_path
    }

    /// Every broker's Kafka listener address (none when `[wire] enabled = false`).
    pub fn wire_listeners(&self) -> Vec<Listener> {
        self.wire.as_ref().map_or_else(Vec::new, WireServer::listeners)
    }

    /// Brings the Kafka listeners in step with the brokers' states now, so a script that
    /// just killed or started a broker sees its port closed or open.
    pub async fn wire_sync(&self) {
        if let Some(server) = &self.wire {
            server.sync().await;
        }
    }

    /// Stops the demo, the view task and every broker (logs closed cleanly); an ephemeral
    /// data directory is removed.
    pub async fn shutdown(&self) {
        if let Some(w) = self.shared.workload.lock().await.take() {
            w.stop();
        }
        if let Some(t) = lock(&self.snapshot_task).take() {
            t.abort();
        }
        if let Some(server) = &self.wire {
            server.shutdown();
        }
        if let Some(p) = self.shared.producer.get() {
            p.clone().close().await;
        }
        self.shared.cluster.shutdown().await;
        lock(&self.data_dir).take();
    }
}

impl Shared {
    fn demo_state(&self) -> Option<bool> {
        self.demo
            .as_ref()
            .map(|_| self.demo_running.load(std::sync::atomic::Ordering::Relaxed))
    }

    async fn producer(&self) -> Result<&Producer> {
        self.producer
            .get_or_try_init(|| async {
                let config = ProducerConfig {
                    request_timeout_ms: 5_000,
                    delivery_timeout_ms: 15_000,
                    ..ProducerConfig::default()
                };
                Producer::new(self.cluster.clone(), config).await
            })
            .await
    }

    async fn execute(&self, command: &Command) -> Result<String> {
        let cluster = &self.cluster;
        match command {
            Command::Produce(request) => {
                let record = ProducerRecord {
                    topic: request.topic.clone(),
                    partition: request.partition,
                    key: request.key.clone().map(Bytes::from),
                    value: Some(Bytes::from(request.value.clone())),
                    headers: request
                        .headers
                        .iter()
                        .map(|(k, v)| (k.clone(), Some(Bytes::from(v.clone()))))
                        .collect(),
                    timestamp: None,
                };
                let meta = self.producer().await?.send(record).await?;
                Ok(format!(
                    "produced to {}-{} at offset {}",
                    meta.topic, meta.partition, meta.offset
                ))
            }
            Command::KillBroker(id) => {
                cluster.kill(*id)?;
                Ok(format!(
                    "broker {id} killed; the controller fences it after {} ms without heartbeats",
                    cluster.config().broker_session_timeout_ms
                ))
            }
            Command::StopBroker(id) => {
                cluster.stop(*id).await?;
                Ok(format!("broker {id} stopped after moving its leaderships away"))
            }
            Command::StartBroker(id) => {
                cluster.start_broker(*id)?;
                Ok(format!("broker {id} starting: it recovers its logs and catches up"))
            }
            Command::PauseBroker(id) => {
                cluster.pause(*id)?;
                Ok(format!("broker {id} paused (frozen, like a long GC pause)"))
            }
            Command::ResumeBroker(id) => {
                cluster.resume(*id)?;
                Ok(format!("broker {id} resumed"))
            }
            Command::ElectPreferredLeaders { topic } => {
                let results = cluster
                    .elect_preferred_leaders(|tp| topic.as_ref().is_none_or(|t| &tp.topic == t))
                    .await?;
                let moved = results.iter().filter(|(_, e)| *e == ErrorCode::None).count();
                let failed = results
                    .iter()
                    .filter(|(_, e)| !matches!(e, ErrorCode::None | ErrorCode::ElectionNotNeeded))
                    .count();
                Ok(format!(
                    "preferred-leader election: {moved} leaders moved, {failed} partitions could not move, {} already led by their preferred replica",
                    results.len() - moved - failed
                ))
            }
            Command::CreateTopic {
                name,
                partitions,
                replication_factor,
                cleanup_policy,
            } => {
                let min_isr = cluster.config().min_insync_replicas.min(*replication_factor).max(1);
                let policy: CleanupPolicy = cleanup_policy.parse().map_err(|e: String| anyhow::anyhow!(e))?;
                let config = TopicConfig::new(*partitions, *replication_factor)
                    .with_min_insync_replicas(min_isr)
                    .with_cleanup_policy(policy);
                cluster.create_topic(name, config).await?;
                Ok(format!("topic {name} created"))
            }
            Command::DeleteTopic { name } => {
                cluster.delete_topic(name).await?;
                Ok(format!("topic {name} deleted"))
            }
            Command::PauseDemo => {
                let workload = self.workload.lock().await.take();
                match workload {
                    Some(w) => {
                        w.stop();
                        self.demo_running.store(false, std::sync::atomic::Ordering::Relaxed);
                        Ok("demo workload paused".into())
                    }
                    None => bail!("the demo workload is not running"),
                }
            }
            Command::ResumeDemo => {
                let Some(demo) = &self.demo else {
                    bail!("this console runs without the demo workload (--no-demo)");
                };
                let mut slot = self.workload.lock().await;
                if slot.is_some() {
                    bail!("the demo workload is already running");
                }
                *slot = Some(Workload::start(cluster, demo.clone()).await?);
                self.demo_running.store(true, std::sync::atomic::Ordering::Relaxed);
                Ok("demo workload resumed".into())
            }
        }
    }
}

impl ClusterSource for Embedded {
    fn views(&self) -> watch::Receiver<Arc<ClusterView>> {
        self.views.clone()
    }

    fn submit(&self, command: Command, outcomes: OutcomeSender) {
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move {
            let result = shared.execute(&command).await.map_err(|e| format!("{e:#}"));
            if let Err(e) = &result {
                tracing::warn!(%command, error = %e, "console command failed");
            }
            let _ = outcomes.send(CommandOutcome { command, result });
        });
    }

    fn tail(&self, spec: TailSpec, capacity: usize) -> TailHandle {
        let buffer = Arc::new(TailBuffer::new(capacity));
        tokio::spawn(tail_loop(
            self.shared.cluster.clone(),
            spec.clone(),
            Arc::clone(&buffer),
        ));
        TailHandle { spec, buffer }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

async fn snapshot_loop(
    shared: Arc<Shared>,
    mut builder: ViewBuilder,
    mut events: broadcast::Receiver<ClusterEvent>,
    tx: watch::Sender<Arc<ClusterView>>,
) {
    let mut interval = tokio::time::interval(Duration::from_millis(shared.console.refresh_ms.max(20)));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        interval.tick().await;
        loop {
            match events.try_recv() {
                Ok(event) => builder.record(&event),
                Err(broadcast::error::TryRecvError::Lagged(n)) => builder.push_event(ViewEvent {
                    at: Utc::now(),
                    severity: Severity::Warn,
                    text: format!("{n} events were dropped: the console fell behind"),
                }),
                Err(_) => break,
            }
        }
        let view = builder.build(&shared.cluster.snapshot(), shared.demo_state(), Utc::now());
        if !crate::view::publish_if_changed(&tx, view) {
            return;
        }
    }
}

/// Turns snapshots and events into views, keeping what a single snapshot cannot tell:
/// rates, histories, the event timeline and when things last changed.
struct ViewBuilder {
    cluster_name: String,
    event_history: usize,
    events: VecDeque<ViewEvent>,
    broker_changed: HashMap<i32, DateTime<Utc>>,
    partition_changed: HashMap<(String, i32), DateTime<Utc>>,
    last_bytes: HashMap<i32, (u64, u64, DateTime<Utc>)>,
    broker_rates: HashMap<i32, (f64, f64)>,
    produce_history: HashMap<i32, VecDeque<u64>>,
    lag_history: HashMap<String, VecDeque<u64>>,
    /// Kafka listener of each broker; the port stays the same across restarts.
    addresses: HashMap<i32, String>,
}

fn push_sample(history: &mut VecDeque<u64>, sample: u64) {
    if history.len() == HISTORY {
        history.pop_front();
    }
    history.push_back(sample);
}

impl ViewBuilder {
    fn new(console: &ConsoleConfig, listeners: &[Listener]) -> ViewBuilder {
        ViewBuilder {
            addresses: listeners.iter().map(|l| (l.broker, l.addr.to_string())).collect(),
            cluster_name: console.cluster_name.clone(),
            event_history: console.event_history.max(1),
            events: VecDeque::new(),
            broker_changed: HashMap::new(),
            partition_changed: HashMap::new(),
            last_bytes: HashMap::new(),
            broker_rates: HashMap::new(),
            produce_history: HashMap::new(),
            lag_history: HashMap::new(),
        }
    }

    fn push_event(&mut self, event: ViewEvent) {
        if self.events.len() == self.event_history {
            self.events.pop_front();
        }
        self.events.push_back(event);
    }

    /// Drops the change times and histories of partitions, topics and groups the snapshot no
    /// longer has: created and deleted by the thousand over days, they would otherwise stay.
    fn forget_what_is_gone(&mut self, snapshot: &ClusterSnapshot) {
        let partitions: std::collections::HashSet<(&str, i32)> = snapshot
            .partitions
            .iter()
            .map(|p| (p.tp.topic.as_str(), p.tp.partition))
            .collect();
        self.partition_changed
            .retain(|(topic, partition), _| partitions.contains(&(topic.as_str(), *partition)));
        let groups: std::collections::HashSet<&str> = snapshot.groups.iter().map(|g| g.group_id.as_str()).collect();
        self.lag_history.retain(|group, _| groups.contains(group.as_str()));
    }

    fn record(&mut self, event: &ClusterEvent) {
        let at = event.at;
        match &event.kind {
            EventKind::BrokerStarted { broker, .. }
            | EventKind::BrokerFenced { broker, .. }
            | EventKind::BrokerUnfenced { broker }
            | EventKind::BrokerStopped { broker, .. }
            | EventKind::BrokerPaused { broker }
            | EventKind::BrokerResumed { broker } => {
                self.broker_changed.insert(*broker, at);
            }
            EventKind::LeaderElected { tp, .. }
            | EventKind::PartitionOffline { tp, .. }
            | EventKind::IsrShrunk { tp, .. }
            | EventKind::IsrExpanded { tp, .. } => {
                self.partition_changed.insert((tp.topic.clone(), tp.partition), at);
            }
            _ => {}
        }
        let (severity, text) = describe(&event.kind);
        self.push_event(ViewEvent { at, severity, text });
    }

    fn build(&mut self, snapshot: &ClusterSnapshot, demo: Option<bool>, now: DateTime<Utc>) -> ClusterView {
        self.forget_what_is_gone(snapshot);
        let brokers = snapshot
            .brokers
            .iter()
            .map(|b| {
                let (rate_in, rate_out) = self.rates(b.id, b.bytes_in, b.bytes_out, now);
                let status = match b.state {
                    BrokerState::Running if b.fenced => BrokerStatus::Fenced,
                    BrokerState::Running => BrokerStatus::Online,
                    BrokerState::Paused => BrokerStatus::Paused,
                    BrokerState::Stopped => BrokerStatus::Stopped,
                    BrokerState::Killed => BrokerStatus::Killed,
                };
                BrokerRow {
                    id: b.id,
                    status,
                    is_controller: b.is_controller,
                    leaders: b.leaders,
                    replicas: b.replicas,
                    throughput: Throughput::Bytes {
                        in_per_sec: rate_in,
                        out_per_sec: rate_out,
                    },
                    address: self.addresses.get(&b.id).cloned(),
                    produce_history: self
                        .produce_history
                        .get(&b.id)
                        .map(|h| h.iter().copied().collect())
                        .unwrap_or_default(),
                    changed_at: self.broker_changed.get(&b.id).copied(),
                }
            })
            .collect();
        let partitions: Vec<PartitionRow> = snapshot
            .partitions
            .iter()
            .map(|p| PartitionRow {
                topic: p.tp.topic.clone(),
                partition: p.tp.partition,
                leader: p.leader,
                leader_epoch: p.leader_epoch,
                replicas: p
                    .replicas
                    .iter()
                    .map(|r| ReplicaRow {
                        broker: r.broker,
                        role: if !r.online {
                            ReplicaRole::Offline
                        } else if r.is_leader {
                            ReplicaRole::Leader
                        } else if r.in_isr {
                            ReplicaRole::InSync
                        } else {
                            ReplicaRole::OutOfSync
                        },
                        log_end_offset: r.log_end_offset,
                    })
                    .collect(),
                isr: p.isr.clone(),
                preferred_leader: p.preferred_leader,
                high_watermark: p.high_watermark,
                log_start_offset: p.log_start_offset,
                under_replicated: p.under_replicated,
                changed_at: self
                    .partition_changed
                    .get(&(p.tp.topic.clone(), p.tp.partition))
                    .copied(),
            })
            .collect();
        let groups: Vec<GroupRow> = snapshot
            .groups
            .iter()
            .map(|g| {
                let total_lag: i64 = g.offsets.iter().filter_map(|o| o.lag).sum();
                let history = self.lag_history.entry(g.group_id.clone()).or_default();
                push_sample(history, total_lag.max(0) as u64);
                GroupRow {
                    group_id: g.group_id.clone(),
                    state: format!("{:?}", g.state),
                    protocol: g.protocol.clone(),
                    generation: g.generation,
                    coordinator: g.coordinator,
                    members: g
                        .members
                        .iter()
                        .map(|(id, assignment)| MemberRow {
                            member_id: id.clone(),
                            assignment: decode_assignment(assignment)
                                .unwrap_or_default()
                                .into_iter()
                                .map(|tp| (tp.topic, tp.partition))
                                .collect(),
                        })
                        .collect(),
                    offsets: g
                        .offsets
                        .iter()
                        .map(|o| GroupOffsetRow {
                            topic: o.tp.topic.clone(),
                            partition: o.tp.partition,
                            committed: o.committed,
                            end: o.end,
                            lag: o.lag,
                        })
                        .collect(),
                    total_lag,
                    lag_history: history.iter().copied().collect(),
                }
            })
            .collect();
        let mut topics: Vec<TopicRow> = snapshot
            .topics
            .iter()
            .map(|t| {
                let lags: Vec<i64> = groups
                    .iter()
                    .flat_map(|g| g.offsets.iter())
                    .filter(|o| o.topic == t.name)
                    .filter_map(|o| o.lag)
                    .collect();
                TopicRow {
                    name: t.name.clone(),
                    internal: crate::engine::is_internal_topic(&t.name),
                    partitions: t.partitions,
                    replication_factor: t.replication_factor,
                    under_replicated: t.under_replicated,
                    offline: t.offline,
                    messages: t.messages,
                    size_bytes: Some(t.size_bytes),
                    messages_per_sec: t.messages_per_sec,
                    total_lag: (!lags.is_empty()).then(|| lags.iter().sum()),
                    retention: Some(Retention {
                        compact: t.log.cleanup_policy.compacts(),
                        delete: t.log.cleanup_policy.deletes(),
                        ms: t.log.retention_ms,
                        bytes: t.log.retention_bytes,
                    }),
                }
            })
            .collect();
        topics.sort_by(|a, b| (a.internal, &a.name).cmp(&(b.internal, &b.name)));
        ClusterView {
            cluster_name: self.cluster_name.clone(),
            source: SourceKind::Embedded,
            taken_at: now,
            controller: snapshot.controller,
            brokers,
            topics,
            partitions,
            groups,
            events: self.events.iter().cloned().collect(),
            demo,
            problems: Vec::new(),
        }
    }

    /// Bytes per second in and out since the previous snapshot at least a second ago.
    fn rates(&mut self, id: i32, bytes_in: u64, bytes_out: u64, now: DateTime<Utc>) -> (f64, f64) {
        let last = *self.last_bytes.entry(id).or_insert((bytes_in, bytes_out, now));
        let dt = (now - last.2).num_milliseconds() as f64 / 1000.0;
        if dt >= 1.0 {
            let rate_in = bytes_in.saturating_sub(last.0) as f64 / dt;
            let rate_out = bytes_out.saturating_sub(last.1) as f64 / dt;
            self.last_bytes.insert(id, (bytes_in, bytes_out, now));
            self.broker_rates.insert(id, (rate_in, rate_out));
            push_sample(self.produce_history.entry(id).or_default(), rate_in as u64);
        }
        self.broker_rates.get(&id).copied().unwrap_or((0.0, 0.0))
    }
}

fn list(ids: &[i32]) -> String {
    let items: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
    format!("[{}]", items.join(","))
}

/// One timeline line per event: what happened and why.
fn describe(kind: &EventKind) -> (Severity, String) {
    use Severity::{Error, Info, Warn};
    match kind {
        EventKind::BrokerStarted { broker, broker_epoch } => {
            (Info, format!("broker {broker} started (broker epoch {broker_epoch})"))
        }
        EventKind::BrokerFenced { broker, reason } if reason == crate::engine::CONTROLLED_SHUTDOWN => (
            Info,
            format!("broker {broker} controlled shutdown: its leaderships move before it stops"),
        ),
        EventKind::BrokerFenced { broker, reason } => (Warn, format!("broker {broker} fenced: {reason}")),
        EventKind::BrokerUnfenced { broker } => (Info, format!("broker {broker} unfenced: back in service")),
        EventKind::BrokerStopped { broker, how } => (Warn, format!("broker {broker} down: {how}")),
        EventKind::BrokerPaused { broker } => (Warn, format!("broker {broker} paused")),
        EventKind::BrokerResumed { broker } => (Info, format!("broker {broker} resumed")),
        EventKind::ControllerMoved { from, to } => (
            Warn,
            match from {
                Some(f) => format!("controller moved: broker {f} -> {to}"),
                None => format!("controller is broker {to}"),
            },
        ),
        EventKind::TopicCreated {
            topic,
            partitions,
            replication_factor,
        } => (
            Info,
            format!("topic {topic} created: {partitions} partitions, RF {replication_factor}"),
        ),
        EventKind::TopicDeleted { topic } => (Info, format!("topic {topic} deleted")),
        EventKind::LeaderElected {
            tp,
            old,
            new,
            leader_epoch,
            reason,
        } => {
            let (severity, why) = match reason {
                ElectionReason::Created => (Info, "created"),
                ElectionReason::LeaderUnavailable => (Warn, "leader unavailable"),
                ElectionReason::ControlledShutdown => (Info, "controlled shutdown"),
                ElectionReason::ReplicaReturned => (Info, "an in-sync replica returned"),
                ElectionReason::Preferred => (Info, "preferred leader"),
                ElectionReason::Unclean => (Error, "UNCLEAN: out-of-sync replica, data may be lost"),
            };
            let old = old.map_or("none".to_string(), |o| o.to_string());
            (
                severity,
                format!("leader {tp}: {old} -> {new}, epoch {leader_epoch} ({why})"),
            )
        }
        EventKind::PartitionOffline { tp, isr } => (
            Error,
            format!("{tp} OFFLINE: no live in-sync replica (ISR {})", list(isr)),
        ),
        EventKind::IsrShrunk {
            tp,
            removed,
            isr,
            reason,
        } => (
            Warn,
            format!("ISR {tp} shrank: -{} -> {} ({reason})", list(removed), list(isr)),
        ),
        EventKind::IsrExpanded { tp, added, isr } => (
            Info,
            format!("ISR {tp} expanded: +{} -> {} (caught up)", list(added), list(isr)),
        ),
        EventKind::FollowerTruncated { tp, broker, from, to } => (
            Warn,
            format!("broker {broker} truncated {tp} from {from} to {to} (diverged from the leader's epoch)"),
        ),
        EventKind::ProduceRejected { tp, error, reason } => {
            (Error, format!("produce to {tp} rejected: {error:?}: {reason}"))
        }
        EventKind::LinkChanged { a, b, fault } => (
            Warn,
            match fault {
                Some(f) => format!("link {a} <-> {b}: {f}"),
                None => format!("link {a} <-> {b} healed"),
            },
        ),
        EventKind::GroupRebalanced {
            group,
            generation,
            members,
            protocol,
        } => (
            Info,
            format!("group {group} rebalanced: generation {generation}, {members} members ({protocol})"),
        ),
        EventKind::GroupMemberRemoved { group, member, reason } => {
            (Warn, format!("group {group}: member {member} removed ({reason})"))
        }
    }
}

async fn tail_loop(cluster: Cluster, spec: TailSpec, buffer: Arc<TailBuffer>) {
    let partitions: Vec<i32> = match cluster.metadata().topics.get(&spec.topic) {
        Some(t) => match spec.partition {
            Some(p) if p >= 0 && (p as usize) < t.partitions.len() => vec![p],
            Some(p) => {
                buffer.set_error(Some(format!("topic {} has no partition {p}", spec.topic)));
                return;
            }
            None => (0..t.partitions.len() as i32).collect(),
        },
        None => {
            buffer.set_error(Some(format!("topic {} does not exist", spec.topic)));
            return;
        }
    };
    let tps: Vec<TopicPartition> = partitions
        .iter()
        .map(|p| TopicPartition::new(&spec.topic, *p))
        .collect();
    let mut consumer = Consumer::new(
        cluster.clone(),
        ConsumerConfig {
            group_id: None,
            auto_offset_reset: OffsetReset::Latest,
            enable_auto_commit: false,
            fetch_max_wait_ms: 250,
            max_poll_records: 500,
            ..ConsumerConfig::default()
        },
    );
    consumer.assign(tps.clone());
    for tp in &tps {
        let positioned = match spec.start {
            SeekPosition::Beginning => consumer.seek_to_beginning(tp),
            SeekPosition::End => consumer.seek_to_end(tp),
            SeekPosition::Offset(o) => consumer.seek(tp, o.max(0)),
            SeekPosition::Timestamp(t) => consumer.seek_to_timestamp(tp, t.timestamp_millis()).await,
            SeekPosition::Last(n) => match (cluster.list_offset(tp, -2).await, cluster.list_offset(tp, -1).await) {
                (Ok(start), Ok(end)) => consumer.seek(tp, (end - n).max(start)),
                _ => consumer.seek_to_end(tp),
            },
        };
        if let Err(e) = positioned {
            buffer.set_error(Some(format!("seeking {tp}: {e}")));
        }
    }
    while !buffer.is_closed() {
        match consumer.poll(Duration::from_millis(500)).await {
            Ok(records) => {
                buffer.set_error(None);
                if !records.is_empty() {
                    buffer.push(records.into_iter().map(|r| TailRecord {
                        partition: r.partition,
                        offset: r.offset,
                        timestamp: r.timestamp,
                        key: r.key,
                        value: r.value,
                        headers: r.headers,
                    }));
                }
            }
            Err(e) => {
                buffer.set_error(Some(e.to_string()));
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

#[cfg(test)]
mod ephemeral_tests {
    use super::*;

    #[test]
    fn only_ephemeral_dirs_of_processes_that_are_gone_are_removed() {
        let temp = tempfile::tempdir().expect("tempdir");
        let mut child = std::process::Command::new("true").spawn().expect("spawn true");
        let gone = child.id();
        child.wait().expect("wait");
        let make = |name: &str, owner: Option<String>| {
            let dir = temp.path().join(name);
            std::fs::create_dir(&dir).expect("mkdir");
            if let Some(pid) = owner {
                std::fs::write(dir.join(EPHEMERAL_OWNER), pid).expect("owner file");
            }
            dir
        };
        let stale = make("kdeck-stale", Some(gone.to_string()));
        let live = make("kdeck-live", Some(std::process::id().to_string()));
        let unmarked = make("kdeck-unmarked", None);
        let other = make("other-stale", Some(gone.to_string()));
        remove_stale_ephemeral_dirs(temp.path());
        assert!(!stale.exists(), "a dead run's directory is removed");
        assert!(live.exists(), "a running kdeck's directory stays");
        assert!(unmarked.exists(), "a directory kdeck did not mark stays");
        assert!(other.exists(), "only kdeck-* directories are considered");
    }
}

#[cfg(test)]
mod view_builder_tests {
    use super::*;

    #[test]
    fn the_event_ring_and_the_histories_keep_only_the_newest() {
        let console = ConsoleConfig {
            event_history: 5,
            ..ConsoleConfig::default()
        };
        let mut builder = ViewBuilder::new(&console, &[]);
        for n in 0..100 {
            builder.push_event(ViewEvent {
                at: Utc::now(),
                severity: Severity::Info,
                text: format!("event {n}"),
            });
        }
        let texts: Vec<&str> = builder.events.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(texts, vec!["event 95", "event 96", "event 97", "event 98", "event 99"]);
        let mut history = VecDeque::new();
        for n in 0..1_000 {
            push_sample(&mut history, n);
        }
        assert_eq!(history.len(), HISTORY);
        assert_eq!(history.back(), Some(&999));
    }

    #[tokio::test(start_paused = true)]
    async fn a_deleted_topic_and_a_vanished_group_leave_nothing_in_the_view_builder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cluster = Cluster::start(crate::engine::ClusterConfig {
            data_dir: dir.path().to_path_buf(),
            brokers: 1,
            ..crate::engine::ClusterConfig::default()
        })
        .await
        .expect("start");
        let mut builder = ViewBuilder::new(&ConsoleConfig::default(), &[]);
        for i in 0..20 {
            let name = format!("run-{i}");
            cluster
                .create_topic(&name, TopicConfig::new(2, 1))
                .await
                .expect("create");
            builder.partition_changed.insert((name.clone(), 0), Utc::now());
            builder.partition_changed.insert((name, 1), Utc::now());
            builder
                .lag_history
                .insert(format!("group-{i}"), VecDeque::from([1, 2, 3]));
        }
        builder.build(&cluster.snapshot(), None, Utc::now());
        assert_eq!(builder.partition_changed.len(), 40);
        assert!(builder.lag_history.is_empty(), "no such groups in the cluster");
        for i in 0..20 {
            cluster.delete_topic(&format!("run-{i}")).await.expect("delete");
        }
        builder.build(&cluster.snapshot(), None, Utc::now());
        assert!(builder.partition_changed.is_empty());
        cluster.shutdown().await;
    }
}
