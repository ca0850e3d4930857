//! The embedded cluster as a [`ClusterSource`]: a room beside `view/`, the one place that
//! knows both the engine and the view types. It starts the cluster (and the demo workload)
//! from the configuration and the command-line flags, maps engine snapshots to rows and
//! engine events to timeline lines (the view-model in `view/` keeps histories, rates and
//! change times and says every sentence) into `Arc<ClusterView>`s a few times a second,
//! runs console commands in the background and fills message tails. The same start-up
//! serves a headless `kdeck serve`.

use std::collections::HashMap;
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
use crate::client::consumer::{Consumer, ConsumerConfig, ConsumerRecord, OffsetReset};
use crate::client::producer::{Producer, ProducerConfig, ProducerRecord};
use crate::config::{ConsoleConfig, KdeckConfig};
use crate::engine::{
    BrokerState, ClockChange, Cluster, ClusterEvent, ClusterSnapshot, ElectionReason, ErrorCode, EventKind, LinkFault,
    LiveSetting, NodeId,
};
use crate::engine::{OffsetSpec, TopicConfig, TopicPartition};
use crate::scenario::format::Setup;
use crate::scenario::workload::ScenarioWorkload;
use crate::storage::CleanupPolicy;
use crate::view::history::{CounterRates, Trends, topic_lag};
use crate::view::outcome::{self, Elected};
use crate::view::timeline::{self, ElectionCause, Line, Timeline};
use crate::view::{
    BrokerRow, BrokerStatus, ClusterSource, ClusterView, Command, CommandOutcome, Controls, EpochStart, EventClass,
    GroupOffsetRow, GroupRow, LinkState, MemberRow, OutcomeSender, PartitionRow, ReplicaRole, ReplicaRow, Retention,
    SeekPosition, SourceKind, TailBuffer, TailFeed, TailHandle, TailMode, TailRecord, TailSpec, Throughput, TopicRow,
};
use crate::wire::{Listener, WireServer};
use crate::workload::{DemoConfig, Workload};

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
    /// A scenario's producers and groups (instead of the demo).
    scenario: Option<ScenarioWorkload>,
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
        let wire = Embedded::listen(config, &cluster).await?;
        let demo = (!args.no_demo).then(|| config.demo.clone());
        let workload = match &demo {
            Some(d) => match Workload::start(&cluster, d.clone()).await {
                Ok(w) => Some(w),
                Err(e) => {
                    cluster.shutdown().await;
                    return Err(e.context("starting the demo workload"));
                }
            },
            None => None,
        };
        Ok(Embedded::assemble(
            config, cluster, wire, data_dir, demo, workload, None,
        ))
    }

    /// Starts the cluster a scenario sets up (its brokers, rules, topics, producers and
    /// groups) in `data_dir`, without the demo.
    pub async fn start_scenario(config: &KdeckConfig, setup: &Setup, data_dir: DataDir) -> Result<Embedded> {
        let mut cluster_config = setup.cluster_config(config.cluster_config());
        cluster_config.data_dir = data_dir.path().to_path_buf();
        let cluster = Cluster::start(cluster_config).await?;
        let started = async {
            for t in &setup.topics {
                cluster
                    .create_topic(&t.name, setup.topic_config(t))
                    .await
                    .with_context(|| format!("creating topic {}", t.name))?;
            }
            // Producers start once every partition has a leader, so the story starts calm.
            let names: Vec<&str> = setup.topics.iter().map(|t| t.name.as_str()).collect();
            cluster
                .wait_for(Duration::from_secs(30), |s| {
                    names.iter().all(|n| s.partitions.iter().any(|p| p.tp.topic == *n))
                        && s.partitions
                            .iter()
                            .filter(|p| names.contains(&p.tp.topic.as_str()))
                            .all(|p| p.leader.is_some())
                })
                .await
                .context("waiting for the scenario's partitions to have leaders")?;
            let wire = Embedded::listen(config, &cluster).await?;
            let workload = ScenarioWorkload::start(&cluster, &setup.producers, &setup.groups)
                .await
                .context("starting the scenario's producers and consumers")?;
            anyhow::Ok((wire, workload))
        };
        match started.await {
            Ok((wire, workload)) => Ok(Embedded::assemble(
                config,
                cluster,
                wire,
                data_dir,
                None,
                None,
                Some(workload),
            )),
            Err(e) => {
                cluster.shutdown().await;
                Err(e)
            }
        }
    }

    /// Kafka clients reach the same brokers the console shows (`[wire]`).
    async fn listen(config: &KdeckConfig, cluster: &Cluster) -> Result<Option<WireServer>> {
        if !config.wire.enabled {
            return Ok(None);
        }
        match WireServer::start(cluster.clone(), config.wire.clone()).await {
            Ok(server) => Ok(Some(server)),
            Err(e) => {
                cluster.shutdown().await;
                Err(anyhow::Error::new(e).context("starting the Kafka listeners ([wire])"))
            }
        }
    }

    fn assemble(
        config: &KdeckConfig,
        cluster: Cluster,
        wire: Option<WireServer>,
        data_dir: DataDir,
        demo: Option<DemoConfig>,
        workload: Option<Workload>,
        scenario: Option<ScenarioWorkload>,
    ) -> Embedded {
        let events = cluster.events();
        let shared = Arc::new(Shared {
            demo_running: std::sync::atomic::AtomicBool::new(workload.is_some()),
            cluster,
            demo,
            workload: tokio::sync::Mutex::new(workload),
            scenario,
            producer: OnceCell::new(),
            console: config.console.clone(),
        });
        let listeners = wire.as_ref().map_or_else(Vec::new, WireServer::listeners);
        let mut builder = ViewBuilder::new(&config.console, &listeners);
        let first = Arc::new(builder.build(&shared.cluster.snapshot(), shared.demo_state(), Utc::now()));
        let (tx, views) = watch::channel(first);
        let task = tokio::spawn(snapshot_loop(Arc::clone(&shared), builder, events, tx));
        Embedded {
            shared,
            views,
            snapshot_task: Mutex::new(Some(task)),
            data_path: data_dir.path().to_path_buf(),
            data_dir: Mutex::new(Some(data_dir)),
            wire,
        }
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
        if let Some(w) = &self.shared.scenario {
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
    fn scenario(&self) -> Result<&ScenarioWorkload> {
        self.scenario
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!(outcome::NO_SCENARIO_WORKLOAD))
    }

    /// The clock and the settings as they are now.
    fn controls(&self) -> Controls {
        let config = self.cluster.config();
        let (frozen, slow_motion) = self.cluster.clock().state();
        Controls {
            frozen,
            slow_motion,
            auto_rebalance: self.cluster.auto_rebalance(),
            unclean_election: self.cluster.unclean_election_default(),
            balanced_election: config.leader_election == crate::engine::LeaderElection::Balanced,
            replica_lag_time_max_ms: config.replica_lag_time_max_ms,
            broker_session_timeout_ms: config.broker_session_timeout_ms,
            producer_acks: self.scenario.as_ref().and_then(|w| w.stats().acks),
        }
    }

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
                Ok(outcome::produced(&meta.topic, meta.partition, meta.offset))
            }
            Command::KillBroker(id) => {
                cluster.kill(*id)?;
                Ok(outcome::broker_killed(*id, cluster.config().broker_session_timeout_ms))
            }
            Command::StopBroker(id) => {
                cluster.stop(*id).await?;
                Ok(outcome::broker_stopped(*id))
            }
            Command::StartBroker(id) => {
                cluster.start_broker(*id)?;
                Ok(outcome::broker_starting(*id))
            }
            Command::PauseBroker(id) => {
                cluster.pause(*id)?;
                Ok(outcome::broker_paused(*id))
            }
            Command::ResumeBroker(id) => {
                cluster.resume(*id)?;
                Ok(outcome::broker_resumed(*id))
            }
            Command::ElectPreferredLeaders { topic } => {
                let results = cluster
                    .elect_preferred_leaders(|tp| topic.as_ref().is_none_or(|t| &tp.topic == t))
                    .await?;
                Ok(outcome::preferred_election(results.iter().map(|(tp, e)| match e {
                    ErrorCode::None => Elected::Moved,
                    ErrorCode::ElectionNotNeeded => Elected::Already,
                    e => Elected::Failed(format!("{tp}: {e:?}")),
                })))
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
                Ok(outcome::topic_created(name))
            }
            Command::DeleteTopic { name } => {
                cluster.delete_topic(name).await?;
                Ok(outcome::topic_deleted(name))
            }
            Command::PauseDemo => {
                let workload = self.workload.lock().await.take();
                match workload {
                    Some(w) => {
                        w.stop();
                        self.demo_running.store(false, std::sync::atomic::Ordering::Relaxed);
                        Ok(outcome::DEMO_PAUSED.into())
                    }
                    None => bail!(outcome::DEMO_NOT_RUNNING),
                }
            }
            Command::ResumeDemo => {
                let Some(demo) = &self.demo else {
                    bail!(outcome::NO_DEMO);
                };
                let mut slot = self.workload.lock().await;
                if slot.is_some() {
                    bail!(outcome::DEMO_ALREADY_RUNNING);
                }
                *slot = Some(Workload::start(cluster, demo.clone()).await?);
                self.demo_running.store(true, std::sync::atomic::Ordering::Relaxed);
                Ok(outcome::DEMO_RESUMED.into())
            }
            Command::Freeze => {
                if !cluster.freeze() {
                    bail!(outcome::ALREADY_FROZEN);
                }
                Ok(outcome::CLOCK_FROZEN.into())
            }
            Command::Thaw => {
                if !cluster.thaw() {
                    bail!(outcome::NOT_FROZEN);
                }
                Ok(outcome::CLOCK_THAWED.into())
            }
            Command::SlowMotion { factor } => {
                let changed = cluster.set_slow_motion(*factor)?;
                Ok(outcome::slow_motion(*factor, changed))
            }
            Command::SetLink { a, b, state } => {
                for id in [a, b] {
                    if !cluster.broker_states().iter().any(|(b, _)| b == id) {
                        bail!("there is no broker {id}");
                    }
                }
                if a == b {
                    bail!("a link joins two different brokers");
                }
                let fault = match state {
                    LinkState::Up => None,
                    LinkState::Cut => Some(LinkFault::Cut),
                    LinkState::Delay(ms) => Some(LinkFault::Delay(Duration::from_millis(*ms))),
                };
                cluster.set_link(NodeId::Broker(*a), NodeId::Broker(*b), fault);
                Ok(outcome::link_set(*a, *b, &state.to_string()))
            }
            Command::Isolate(id) => {
                let hosts_controller = cluster.controller() == Some(*id);
                cluster.isolate(*id)?;
                Ok(outcome::broker_isolated(
                    *id,
                    hosts_controller,
                    cluster.config().controller_failover_ms,
                ))
            }
            Command::HealLinks => Ok(outcome::links_healed(cluster.heal_links())),
            Command::SetAutoRebalance(on) => {
                cluster.set_auto_rebalance(*on);
                Ok(outcome::setting_set(
                    "auto.leader.rebalance.enable",
                    None,
                    &on.to_string(),
                ))
            }
            Command::SetUncleanElection { topic, enabled } => {
                cluster.set_unclean_election(topic.as_deref(), *enabled).await?;
                Ok(match topic {
                    Some(t) if !*enabled && cluster.unclean_election_default() => outcome::unclean_still_allowed(t),
                    t => outcome::setting_set("unclean.leader.election.enable", t.as_deref(), &enabled.to_string()),
                })
            }
            Command::SetMinInsync { topic, value } => {
                cluster.set_min_insync(topic, *value).await?;
                Ok(outcome::setting_set(
                    "min.insync.replicas",
                    Some(topic),
                    &value.to_string(),
                ))
            }
            Command::SetProducerAcks(acks) => {
                self.scenario()?.set_acks(*acks).await?;
                Ok(outcome::producer_acks(*acks))
            }
            Command::AddMember { group } => {
                let members = self.scenario()?.add_member(group).await?;
                Ok(outcome::member_added(group, members))
            }
            Command::RemoveMember { group } => {
                let members = self.scenario()?.remove_member(group).await?;
                Ok(outcome::member_removed(group, members))
            }
            Command::PauseGroup { group } => {
                self.scenario()?.pause_group(group, true).await?;
                Ok(outcome::group_paused(group))
            }
            Command::ResumeGroup { group } => {
                self.scenario()?.pause_group(group, false).await?;
                Ok(outcome::group_resumed(group))
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
        tail_cluster(&self.shared.cluster, spec, capacity)
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
                Err(broadcast::error::TryRecvError::Lagged(n)) => {
                    builder.timeline.say(Utc::now(), timeline::events_dropped(n))
                }
                Err(_) => break,
            }
        }
        let mut view = builder.build(&shared.cluster.snapshot(), shared.demo_state(), Utc::now());
        view.controls = Some(shared.controls());
        view.workload = shared.scenario.as_ref().map(ScenarioWorkload::stats);
        if !crate::view::publish_if_changed(&tx, view) {
            return;
        }
    }
}

/// Turns snapshots and events into views; what a single snapshot cannot tell (rates,
/// histories, the timeline, when things last changed) is kept by the shared view-model.
struct ViewBuilder {
    cluster_name: String,
    timeline: Timeline,
    trends: Trends,
    bytes_in: CounterRates<i32>,
    bytes_out: CounterRates<i32>,
    /// Kafka listener of each broker; the port stays the same across restarts.
    addresses: HashMap<i32, String>,
}

impl ViewBuilder {
    fn new(console: &ConsoleConfig, listeners: &[Listener]) -> ViewBuilder {
        ViewBuilder {
            addresses: listeners.iter().map(|l| (l.broker, l.addr.to_string())).collect(),
            cluster_name: console.cluster_name.clone(),
            timeline: Timeline::new(console.event_history),
            trends: Trends::default(),
            bytes_in: CounterRates::default(),
            bytes_out: CounterRates::default(),
        }
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
                self.trends.broker_changed.mark(*broker, at);
            }
            EventKind::LeaderElected { tp, .. }
            | EventKind::PartitionOffline { tp, .. }
            | EventKind::IsrShrunk { tp, .. }
            | EventKind::IsrExpanded { tp, .. } => {
                self.trends.partition_changed.mark((tp.topic.clone(), tp.partition), at);
            }
            _ => {}
        }
        self.timeline.say_as(at, describe(&event.kind), classify(&event.kind));
    }

    fn build(&mut self, snapshot: &ClusterSnapshot, demo: Option<bool>, now: DateTime<Utc>) -> ClusterView {
        // Both directions are sampled at the same moments, so they round together.
        let sampled = self
            .bytes_in
            .sample(snapshot.brokers.iter().map(|b| (b.id, b.bytes_in)), now);
        self.bytes_out
            .sample(snapshot.brokers.iter().map(|b| (b.id, b.bytes_out)), now);
        let brokers = snapshot
            .brokers
            .iter()
            .map(|b| {
                let (rate_in, rate_out) = (self.bytes_in.rate(&b.id), self.bytes_out.rate(&b.id));
                let produce_history = if sampled {
                    self.trends.produce_history.push(b.id, rate_in as u64)
                } else {
                    self.trends.produce_history.samples(&b.id)
                };
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
                    produce_history,
                    changed_at: None,
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
                        log_start_offset: r.log_start_offset,
                        high_watermark: r.high_watermark,
                        epochs: r
                            .epochs
                            .iter()
                            .map(|e| EpochStart {
                                epoch: e.epoch,
                                start_offset: e.start_offset,
                            })
                            .collect(),
                        caught_up_ms_ago: r.caught_up_ms_ago,
                    })
                    .collect(),
                isr: p.isr.clone(),
                preferred_leader: p.preferred_leader,
                high_watermark: p.high_watermark,
                log_start_offset: p.log_start_offset,
                under_replicated: p.under_replicated,
                min_insync_replicas: Some(p.min_insync_replicas),
                changed_at: None,
            })
            .collect();
        let groups: Vec<GroupRow> = snapshot
            .groups
            .iter()
            .map(|g| {
                let mut row = GroupRow {
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
                    total_lag: 0,
                    lag_history: Vec::new(),
                };
                self.trends.sample_lag(&mut row);
                row
            })
            .collect();
        let topics: Vec<TopicRow> = snapshot
            .topics
            .iter()
            .map(|t| TopicRow {
                name: t.name.clone(),
                internal: crate::engine::is_internal_topic(&t.name),
                partitions: t.partitions,
                replication_factor: t.replication_factor,
                under_replicated: t.under_replicated,
                offline: t.offline,
                messages: t.messages,
                size_bytes: Some(t.size_bytes),
                messages_per_sec: t.messages_per_sec,
                total_lag: topic_lag(&groups, &t.name),
                retention: Some(Retention {
                    compact: t.log.cleanup_policy.compacts(),
                    delete: t.log.cleanup_policy.deletes(),
                    ms: t.log.retention_ms,
                    bytes: t.log.retention_bytes,
                }),
                unclean_election: Some(t.unclean_leader_election),
            })
            .collect();
        let mut view = ClusterView {
            cluster_name: self.cluster_name.clone(),
            source: SourceKind::Embedded,
            taken_at: now,
            controller: snapshot.controller,
            brokers,
            topics,
            partitions,
            groups,
            events: self.timeline.events(),
            demo,
            problems: Vec::new(),
            controls: None,
            workload: None,
        };
        crate::view::sort_rows(&mut view);
        self.trends.forget_what_is_gone(&view);
        self.trends.stamp_changes(&mut view);
        view
    }
}

/// An engine event's timeline line: the engine says what happened and why, the view says it.
/// The part an engine event plays in an incident.
fn classify(kind: &EventKind) -> EventClass {
    match kind {
        EventKind::BrokerStopped { broker, .. }
        | EventKind::BrokerPaused { broker }
        | EventKind::BrokerIsolated { broker } => EventClass::Fault(*broker),
        EventKind::BrokerFenced { broker, reason } if reason == crate::engine::CONTROLLED_SHUTDOWN => {
            EventClass::Fault(*broker)
        }
        EventKind::BrokerFenced { broker, .. } => EventClass::Fenced(*broker),
        EventKind::BrokerStarted { broker, .. } => EventClass::Restarted(*broker),
        EventKind::BrokerUnfenced { broker } | EventKind::BrokerResumed { broker } => EventClass::Recovered(*broker),
        EventKind::LeaderElected { .. } => EventClass::LeaderMoved,
        EventKind::IsrShrunk { .. } => EventClass::IsrShrunk,
        EventKind::IsrExpanded { .. } => EventClass::IsrExpanded,
        EventKind::PartitionOffline { .. } => EventClass::Offline,
        EventKind::ProduceRejected { .. } => EventClass::ProduceRejected,
        _ => EventClass::Other,
    }
}

fn describe(kind: &EventKind) -> Line {
    match kind {
        EventKind::BrokerStarted { broker, broker_epoch } => timeline::broker_started(*broker, *broker_epoch),
        EventKind::BrokerFenced { broker, reason } if reason == crate::engine::CONTROLLED_SHUTDOWN => {
            timeline::broker_controlled_shutdown(*broker)
        }
        EventKind::BrokerFenced { broker, reason } => timeline::broker_fenced(*broker, reason),
        EventKind::BrokerUnfenced { broker } => timeline::broker_unfenced(*broker),
        EventKind::BrokerStopped { broker, how } => timeline::broker_down(*broker, how),
        EventKind::BrokerPaused { broker } => timeline::broker_paused(*broker),
        EventKind::BrokerResumed { broker } => timeline::broker_resumed(*broker),
        EventKind::ControllerMoved { from, to } => timeline::controller_moved(*from, *to),
        EventKind::TopicCreated {
            topic,
            partitions,
            replication_factor,
        } => timeline::topic_created(topic, *partitions, *replication_factor),
        EventKind::TopicDeleted { topic } => timeline::topic_deleted(topic),
        EventKind::LeaderElected {
            tp,
            old,
            new,
            leader_epoch,
            reason,
        } => {
            let cause = match reason {
                ElectionReason::Created => ElectionCause::Created,
                ElectionReason::LeaderUnavailable => ElectionCause::LeaderUnavailable,
                ElectionReason::ControlledShutdown => ElectionCause::ControlledShutdown,
                ElectionReason::ReplicaReturned => ElectionCause::ReplicaReturned,
                ElectionReason::Preferred => ElectionCause::Preferred,
                ElectionReason::Unclean => ElectionCause::Unclean,
            };
            timeline::leader_elected(&tp.topic, tp.partition, *old, *new, *leader_epoch, Some(cause))
        }
        EventKind::PartitionOffline { tp, isr } => timeline::partition_offline(&tp.topic, tp.partition, isr),
        EventKind::IsrShrunk {
            tp,
            removed,
            isr,
            reason,
        } => timeline::isr_shrunk(&tp.topic, tp.partition, removed, isr, Some(reason)),
        EventKind::IsrExpanded { tp, added, isr } => timeline::isr_expanded(&tp.topic, tp.partition, added, isr),
        EventKind::FollowerTruncated { tp, broker, from, to } => {
            timeline::follower_truncated(&tp.topic, tp.partition, *broker, *from, *to)
        }
        EventKind::ProduceRejected { tp, error, reason } => {
            timeline::produce_rejected(&tp.topic, tp.partition, &format!("{error:?}"), reason)
        }
        EventKind::LinkChanged { a, b, fault } => {
            timeline::link_changed(&node_label(*a), &node_label(*b), fault.map(link_fault_label).as_deref())
        }
        EventKind::BrokerIsolated { broker } => timeline::broker_isolated(*broker),
        EventKind::LinksHealed => timeline::links_healed(),
        EventKind::ClockChanged(ClockChange::Frozen) => timeline::clock_frozen(),
        EventKind::ClockChanged(ClockChange::Thawed { frozen_for }) => timeline::clock_thawed(frozen_for.as_secs_f64()),
        EventKind::ClockChanged(ClockChange::SlowMotion { factor }) => timeline::slow_motion(*factor),
        EventKind::SettingChanged(setting) => match setting {
            LiveSetting::AutoRebalance(on) => {
                timeline::setting_changed("auto.leader.rebalance.enable", None, &on.to_string())
            }
            LiveSetting::UncleanElection { topic, enabled } => {
                timeline::setting_changed("unclean.leader.election.enable", topic.as_deref(), &enabled.to_string())
            }
            LiveSetting::MinInsync { topic, value } => {
                timeline::setting_changed("min.insync.replicas", Some(topic), &value.to_string())
            }
        },
        EventKind::GroupRebalanced {
            group,
            generation,
            members,
            protocol,
        } => timeline::group_rebalanced(group, Some(*generation), *members, protocol),
        EventKind::GroupMemberRemoved { group, member, reason } => {
            timeline::group_member_removed(group, member, reason)
        }
    }
}

/// A node as the timeline names it: a broker by its id.
fn node_label(node: NodeId) -> String {
    match node {
        NodeId::Broker(b) => b.to_string(),
        NodeId::Controller => "controller".into(),
        NodeId::Client(c) => format!("client {c}"),
    }
}

fn link_fault_label(fault: LinkFault) -> String {
    match fault {
        LinkFault::Cut => "cut".into(),
        LinkFault::Delay(d) => format!("delayed {} ms", d.as_millis()),
        LinkFault::Drop { one_in } => format!("dropping 1 request in {one_in}"),
    }
}

/// Starts a tail on `cluster`: what [`Embedded`]'s `tail` does, for a cluster started
/// without the rest of the console (tests, benchmarks).
pub fn tail_cluster(cluster: &Cluster, spec: TailSpec, capacity: usize) -> TailHandle {
    let buffer = Arc::new(TailBuffer::with_mode(capacity, spec.mode));
    tokio::spawn(tail_loop(cluster.clone(), spec.clone(), Arc::clone(&buffer)));
    TailHandle { spec, buffer }
}

/// How long the tail waits before asking again for a partition's bounds.
const TAIL_RETRY: Duration = Duration::from_millis(500);

/// The log start and the end (HW) of a partition, as a consumer sees them.
async fn log_bounds(cluster: &Cluster, tp: &TopicPartition) -> Result<(i64, i64), ErrorCode> {
    let start = cluster.list_offset(tp, OffsetSpec::Earliest).await?;
    let end = cluster.list_offset(tp, OffsetSpec::Latest).await?;
    Ok((start, end))
}

async fn tail_loop(cluster: Cluster, spec: TailSpec, buffer: Arc<TailBuffer>) {
    let partitions: Vec<i32> = match cluster.metadata().topics.get(&spec.topic) {
        Some(t) => match spec.partition {
            Some(p) if p >= 0 && (p as usize) < t.partitions.len() => vec![p],
            Some(p) => {
                buffer.set_error(Some(outcome::no_such_partition(&spec.topic, p)));
                return;
            }
            None => (0..t.partitions.len() as i32).collect(),
        },
        None => {
            buffer.set_error(Some(outcome::no_such_topic(&spec.topic)));
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
            // A ring follows the end; a window that retention overtakes goes on from what is
            // left rather than skip everything.
            auto_offset_reset: match spec.mode {
                TailMode::Ring => OffsetReset::Latest,
                TailMode::Window => OffsetReset::Earliest,
            },
            enable_auto_commit: false,
            fetch_max_wait_ms: 250,
            max_poll_records: 500,
            ..ConsumerConfig::default()
        },
    );
    consumer.assign(tps.clone());
    let mut log_starts = Vec::new();
    // A search's end offsets: where each partition's reading stops.
    let mut ends: HashMap<i32, i64> = HashMap::new();
    for tp in &tps {
        let bounds = loop {
            match log_bounds(&cluster, tp).await {
                Ok(bounds) => break Some(bounds),
                // A search cannot start without knowing where it ends: wait for a leader.
                Err(e) if spec.until_end => {
                    buffer.set_error(Some(format!("finding the end of {tp}: {e:?}")));
                    if buffer.is_closed() {
                        return;
                    }
                    tokio::time::sleep(TAIL_RETRY).await;
                }
                Err(_) => break None,
            }
        };
        if let Some((start, end)) = bounds {
            log_starts.push((tp.partition, start));
            if spec.until_end {
                ends.insert(tp.partition, end);
            }
        }
        let positioned = match (spec.start, bounds) {
            (SeekPosition::Beginning, _) => consumer.seek_to_beginning(tp),
            (SeekPosition::End, _) => consumer.seek_to_end(tp),
            (SeekPosition::Timestamp(t), _) => consumer.seek_to_timestamp(tp, t.timestamp_millis()).await,
            (SeekPosition::Offset(_) | SeekPosition::Last(_), Some((start, end))) => {
                consumer.seek(tp, spec.start.within(start, end).unwrap_or(end))
            }
            (SeekPosition::Offset(o), None) => consumer.seek(tp, o.max(0)),
            (SeekPosition::Last(_), None) => consumer.seek_to_end(tp),
        };
        if let Err(e) = positioned {
            buffer.set_error(Some(format!("seeking {tp}: {e}")));
        }
    }
    buffer.set_log_starts(log_starts);
    let mut feed = TailFeed::new(Arc::clone(&buffer), &spec);
    // The partitions a search has not read to their end yet.
    let mut reading = tps;
    while !buffer.is_closed() {
        if feed.is_waiting() {
            feed.wait_for_room().await;
            continue;
        }
        if spec.until_end {
            let before = reading.len();
            reading.retain(|tp| {
                let end = ends.get(&tp.partition).copied().unwrap_or(i64::MAX);
                consumer.position(tp).is_none_or(|at| at < end)
            });
            if reading.is_empty() {
                buffer.set_done();
                return;
            }
            if reading.len() < before {
                consumer.assign(reading.clone());
            }
        }
        match consumer.poll(Duration::from_millis(500)).await {
            Ok(records) => {
                buffer.set_error(None);
                // A search reads up to its end offsets, even when more has arrived since.
                let before_end =
                    |r: &ConsumerRecord| !spec.until_end || ends.get(&r.partition).is_some_and(|end| r.offset < *end);
                feed.offer(records.into_iter().filter(before_end).map(|r| TailRecord {
                    partition: r.partition,
                    offset: r.offset,
                    timestamp: r.timestamp,
                    key: r.key,
                    value: r.value,
                    headers: r.headers,
                }));
            }
            Err(e) => {
                buffer.set_error(Some(e.to_string()));
                tokio::time::sleep(TAIL_RETRY).await;
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
    use crate::view::Severity;

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
            builder.trends.partition_changed.mark((name.clone(), 0), Utc::now());
            builder.trends.partition_changed.mark((name, 1), Utc::now());
            builder.trends.lag_history.push(format!("group-{i}"), 1);
        }
        builder.build(&cluster.snapshot(), None, Utc::now());
        assert_eq!(builder.trends.partition_changed.len(), 40);
        assert!(builder.trends.lag_history.is_empty(), "no such groups in the cluster");
        for i in 0..20 {
            cluster.delete_topic(&format!("run-{i}")).await.expect("delete");
        }
        builder.build(&cluster.snapshot(), None, Utc::now());
        assert!(builder.trends.partition_changed.is_empty());
        cluster.shutdown().await;
    }

    /// The same happening, learnt from the engine and inferred by comparing two views of an
    /// external cluster, reads the same on the timeline.
    mod same_sentence_from_both_sources {
        use super::*;
        use crate::remote::source::diff;
        use crate::view::BrokerId;

        fn row(leader: Option<BrokerId>, epoch: i32, isr: &[BrokerId]) -> PartitionRow {
            PartitionRow {
                topic: "orders".into(),
                partition: 0,
                leader,
                leader_epoch: epoch,
                replicas: [0, 1, 2]
                    .iter()
                    .map(|&broker| ReplicaRow {
                        broker,
                        role: ReplicaRole::InSync,
                        log_end_offset: None,
                        log_start_offset: None,
                        high_watermark: None,
                        epochs: Vec::new(),
                        caught_up_ms_ago: None,
                    })
                    .collect(),
                isr: isr.to_vec(),
                preferred_leader: 0,
                high_watermark: None,
                log_start_offset: None,
                under_replicated: isr.len() < 3,
                min_insync_replicas: None,
                changed_at: None,
            }
        }

        /// What an external source says going from partition `old` to `new`.
        fn remote(old: PartitionRow, new: PartitionRow) -> Vec<Line> {
            let mut before = ClusterView::empty("c", SourceKind::External);
            before.partitions = vec![old];
            let mut after = before.clone();
            after.partitions = vec![new];
            diff(&before, &after)
        }

        fn tp() -> TopicPartition {
            TopicPartition::new("orders", 0)
        }

        #[test]
        fn a_preferred_leader_election() {
            let embedded = describe(&EventKind::LeaderElected {
                tp: tp(),
                old: Some(1),
                new: 0,
                leader_epoch: 6,
                reason: ElectionReason::Preferred,
            });
            assert_eq!(
                embedded,
                (
                    Severity::Info,
                    "leader orders-0: 1 -> 0, epoch 6 (preferred leader)".to_string()
                )
            );
            assert_eq!(
                remote(row(Some(1), 5, &[0, 1, 2]), row(Some(0), 6, &[0, 1, 2])),
                vec![embedded]
            );
        }

        #[test]
        fn a_partition_that_goes_offline_and_comes_back() {
            let offline = describe(&EventKind::PartitionOffline { tp: tp(), isr: vec![1] });
            assert_eq!(remote(row(Some(1), 4, &[1]), row(None, 4, &[1])), vec![offline]);
            let back = describe(&EventKind::LeaderElected {
                tp: tp(),
                old: None,
                new: 1,
                leader_epoch: 5,
                reason: ElectionReason::ReplicaReturned,
            });
            assert_eq!(remote(row(None, 4, &[1]), row(Some(1), 5, &[1])), vec![back]);
        }

        #[test]
        fn an_isr_shrink_and_expansion() {
            let reason = "follower fell behind by more than replica.lag.time.max.ms";
            let (severity, embedded) = describe(&EventKind::IsrShrunk {
                tp: tp(),
                removed: vec![1],
                isr: vec![0, 2],
                reason: reason.into(),
            });
            let inferred = remote(row(Some(0), 4, &[0, 1, 2]), row(Some(0), 4, &[0, 2]));
            assert_eq!(inferred.len(), 1);
            // An external cluster does not tell why; the rest of the sentence is the same.
            assert_eq!(severity, inferred[0].0);
            assert_eq!(embedded, format!("{} ({reason})", inferred[0].1));
            let expanded = describe(&EventKind::IsrExpanded {
                tp: tp(),
                added: vec![1],
                isr: vec![0, 2, 1],
            });
            assert_eq!(
                remote(row(Some(0), 4, &[0, 2]), row(Some(0), 4, &[0, 2, 1])),
                vec![expanded]
            );
        }
    }
}
