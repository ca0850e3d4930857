//! `Cluster`, its control plane: starts the brokers and the controller, creates and deletes
//! topics, controls broker lifecycles, links and live settings, runs elections, and reports
//! the whole state as a snapshot plus a stream of events. The requests a client sends are in
//! `cluster/requests.rs`; the read-only probes of invariant checkers in `engine/inspect.rs`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use super::broker::{Broker, BrokerContext};
use super::clock::{ClockChange, ClockError};
use super::config::{ClusterConfig, TopicConfig};
use super::configs::{self, ConfigAlteration, ConfigEntry, ConfigResource};
use super::controller::{Controller, ControllerError, MetadataImage, NO_LEADER};
use super::events::{ClusterEvent, EventBus, EventKind, LiveSetting};
use super::group::{GroupState, OFFSETS_TOPIC};
use super::network::{LinkFault, Network, NodeId};
use super::partition::Role;
use super::protocol::ErrorCode;
use super::{BrokerId, Clock, TopicPartition, WallClock};
use crate::storage::{CleanupPolicy, EpochEntry, Log, LogConfig};

mod log_dirs;
mod membership;
mod requests;

pub use log_dirs::{LogDirDescription, LogDirReplica};
pub use requests::{ConsumerRead, ProduceOutcome};

/// Where a broker stands in the cluster's membership, beside its running state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Membership {
    Member,
    /// Added live: launched, not yet registered and unfenced by the controller.
    Joining,
    /// Being decommissioned: its replicas move away (`left` of the `total` it held remain),
    /// then it shuts down and leaves the metadata.
    Draining {
        left: usize,
        total: usize,
    },
}

/// What a broker is doing, as the console shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerState {
    Running,
    Paused,
    /// Shut down cleanly (controlled shutdown).
    Stopped,
    /// Crashed (killed); its files are as it left them.
    Killed,
}

struct Slot {
    state: BrokerState,
    broker: Option<Arc<Broker>>,
}

/// The last sample of a topic's totals, for rates.
#[derive(Clone, Copy)]
struct RateSample {
    at: tokio::time::Instant,
    messages: i64,
    bytes: u64,
    messages_per_sec: f64,
    bytes_per_sec: f64,
}

struct Inner {
    config: ClusterConfig,
    rates: Mutex<std::collections::HashMap<String, RateSample>>,
    ctx: BrokerContext,
    slots: Mutex<BTreeMap<BrokerId, Slot>>,
    supervisor: Mutex<Option<JoinHandle<()>>>,
    /// The broker that hosted the controller role until it stopped or crashed: the role
    /// is vacant until the supervisor gives it to a running broker.
    vacated: Mutex<Option<BrokerId>>,
    /// Brokers added live that have not been seen unfenced yet.
    joining: Mutex<std::collections::BTreeSet<BrokerId>>,
    /// Adding and decommissioning brokers one at a time (ids and checks stay consistent).
    membership: Mutex<()>,
    /// The tasks following decommissions, by broker.
    drains: Mutex<BTreeMap<BrokerId, JoinHandle<()>>>,
}

/// A running embedded cluster. Cheap to clone; dropping the last clone does not stop it:
/// call [`Cluster::shutdown`].
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
    /// The client node this handle's requests come from (see [`Cluster::as_client`]).
    client: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BrokerView {
    pub id: BrokerId,
    pub state: BrokerState,
    pub fenced: bool,
    pub is_controller: bool,
    pub broker_epoch: i64,
    pub leaders: usize,
    pub replicas: usize,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub membership: Membership,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaView {
    pub broker: BrokerId,
    pub is_leader: bool,
    pub in_isr: bool,
    /// The broker is running and unfenced.
    pub online: bool,
    /// This replica's log end offset, when its broker is up.
    pub log_end_offset: Option<i64>,
    /// This replica's own log start offset and high watermark (a follower's HW lags the
    /// leader's), when its broker is up.
    pub log_start_offset: Option<i64>,
    pub high_watermark: Option<i64>,
    /// Its last stable offset (below the HW while a transaction is open), when its broker is up.
    pub last_stable_offset: Option<i64>,
    /// Bytes of its segment files, when its broker is up.
    pub size_bytes: Option<u64>,
    /// Its leader-epoch cache, when its broker is up: a handful of entries.
    pub epochs: Vec<EpochEntry>,
    /// How long ago the leader last saw this follower caught up to its log end (Kafka's
    /// `lastCaughtUpTimeMs`); `None` for the leader, or when the leader has not seen it
    /// caught up in its epoch.
    pub caught_up_ms_ago: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PartitionView {
    pub tp: TopicPartition,
    pub leader: Option<BrokerId>,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub replicas: Vec<ReplicaView>,
    pub isr: Vec<BrokerId>,
    pub offline_replicas: Vec<BrokerId>,
    pub preferred_leader: BrokerId,
    pub high_watermark: Option<i64>,
    /// The leader's last stable offset: what read_committed consumers may read up to.
    pub last_stable_offset: Option<i64>,
    pub log_start_offset: Option<i64>,
    pub under_replicated: bool,
    pub min_insync_replicas: i32,
    /// A reassignment in progress (KIP-455): replicas joining, and replicas leaving once
    /// those have caught up. Both empty when nothing moves.
    pub adding: Vec<BrokerId>,
    pub removing: Vec<BrokerId>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TopicView {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i32,
    pub under_replicated: usize,
    pub offline: usize,
    /// Sum of the leaders' log end offsets.
    pub messages: i64,
    /// Sum of the leaders' log sizes.
    pub size_bytes: u64,
    /// The topic's effective log settings (its overrides on the cluster's defaults).
    pub log: crate::storage::LogConfig,
    /// `unclean.leader.election.enable` as elections apply it: the topic's or the cluster's.
    pub unclean_leader_election: bool,
    /// Rates over the last second or more between snapshots.
    pub messages_per_sec: f64,
    pub bytes_per_sec: f64,
}

/// One consumer group as its coordinator sees it. Assignments are the consumer protocol's
/// bytes, opaque to the broker as in Kafka (`client::assignor::decode_assignment` reads them).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupView {
    pub group_id: String,
    pub state: GroupState,
    pub protocol: String,
    pub generation: i32,
    pub coordinator: BrokerId,
    /// Each member with its client id, host and assignment.
    pub members: Vec<super::group::MemberDescription>,
    /// Per partition: committed offset, end offset (HW) and lag.
    pub offsets: Vec<GroupOffsetView>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupOffsetView {
    pub tp: TopicPartition,
    pub committed: i64,
    pub end: Option<i64>,
    pub lag: Option<i64>,
}

/// Everything a console needs, at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSnapshot {
    pub controller: Option<BrokerId>,
    pub metadata_version: u64,
    pub brokers: Vec<BrokerView>,
    pub topics: Vec<TopicView>,
    pub partitions: Vec<PartitionView>,
    pub groups: Vec<GroupView>,
}

impl PartitionView {
    /// A leader that is up: its broker runs, unfenced. A partition whose leader died is
    /// unavailable until the controller moves the leadership (never, when no broker is left).
    pub fn available(&self) -> bool {
        self.leader
            .is_some_and(|leader| self.replicas.iter().any(|r| r.broker == leader && r.online))
    }
}

impl ClusterSnapshot {
    pub fn partition(&self, tp: &TopicPartition) -> Option<&PartitionView> {
        self.partitions.iter().find(|p| &p.tp == tp)
    }

    pub fn broker(&self, id: BrokerId) -> Option<&BrokerView> {
        self.brokers.iter().find(|b| b.id == id)
    }
}

impl Cluster {
    /// Starts `config.brokers` brokers (ids `0..brokers`) on `config.data_dir`, recovering
    /// whatever is there, and returns once every broker has registered. The metadata decides
    /// beyond that: brokers added live come back, decommissioned ones stay gone, and drains in
    /// progress resume. Brokers the metadata knows beyond those are fenced when their session
    /// expires.
    pub async fn start(config: ClusterConfig) -> Result<Cluster> {
        Ok(Cluster::start_observed(config).await?.0)
    }

    /// Like [`Cluster::start`], with a subscription to the cluster's events taken before
    /// any broker runs: the elections and ISR changes of the start-up itself included.
    pub async fn start_observed(config: ClusterConfig) -> Result<(Cluster, broadcast::Receiver<ClusterEvent>)> {
        if config.brokers < 1 {
            bail!("a cluster needs at least one broker, not {}", config.brokers);
        }
        config.log.validate()?;
        std::fs::create_dir_all(&config.data_dir)
            .with_context(|| format!("creating the data directory {}", config.data_dir.display()))?;
        let wall = WallClock::new();
        let clock = Clock::new();
        let events = EventBus::new(wall, clock.clone());
        let observed = events.subscribe();
        let controller = Arc::new(Controller::load(config.clone(), events.clone(), clock.clone())?);
        let image = controller.image();
        let members: Vec<BrokerId> = (0..config.brokers)
            .chain(image.added_brokers.iter().copied())
            .filter(|id| !image.decommissioned.contains(id))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let Some(&first) = members.first() else {
            bail!(
                "every broker of this data directory was decommissioned ({:?}); start with more brokers",
                image.decommissioned
            );
        };
        let network = Network::new(clock.clone());
        network.set_controller(Some(first));
        controller.reset_heartbeats();
        let ctx = BrokerContext {
            config: config.clone(),
            network,
            controller,
            events,
            wall,
            clock,
            auto_rebalance: Arc::new(AtomicBool::new(config.auto_leader_rebalance)),
        };
        let cluster = Cluster {
            inner: Arc::new(Inner {
                config: config.clone(),
                rates: Mutex::new(std::collections::HashMap::new()),
                ctx,
                slots: Mutex::new(BTreeMap::new()),
                supervisor: Mutex::new(None),
                vacated: Mutex::new(None),
                joining: Mutex::new(std::collections::BTreeSet::new()),
                membership: Mutex::new(()),
                drains: Mutex::new(BTreeMap::new()),
            }),
            client: 0,
        };
        for id in &members {
            cluster.launch(*id);
        }
        if let Some(host) = cluster.running_broker(first) {
            host.spawn_controller_duties();
        }
        let supervisor = tokio::spawn(cluster.clone().supervise());
        *lock(&cluster.inner.supervisor) = Some(supervisor);
        // The metadata may still show brokers unfenced from before the restart: only a broker
        // epoch from this run says a broker registered.
        cluster
            .wait_for(Duration::from_secs(30), |s| {
                s.brokers.iter().all(|b| !b.fenced && b.broker_epoch >= 0)
            })
            .await
            .context("brokers did not register with the controller")?;
        for id in image.draining.keys() {
            cluster.follow_drain(*id);
        }
        if !cluster.metadata().topics.contains_key(OFFSETS_TOPIC) {
            let rf = config.offsets_topic_replication_factor.clamp(1, members.len() as i32);
            // Kafka's offsets topic: compacted, 100 MiB segments (offsets.topic.segment.bytes)
            // so that sealed segments, and so cleaning, come before long.
            let offsets = TopicConfig::new(config.offsets_topic_partitions, rf)
                .with_segment_bytes(100 << 20)
                .with_cleanup_policy(CleanupPolicy::Compact);
            cluster.create_topic(OFFSETS_TOPIC, offsets).await?;
        }
        Ok((cluster, observed))
    }

    fn slots(&self) -> MutexGuard<'_, BTreeMap<BrokerId, Slot>> {
        lock(&self.inner.slots)
    }

    fn launch(&self, id: BrokerId) {
        let broker = Broker::start(id, self.inner.ctx.clone());
        self.slots().insert(
            id,
            Slot {
                state: BrokerState::Running,
                broker: Some(broker),
            },
        );
    }

    fn running_broker(&self, id: BrokerId) -> Option<Arc<Broker>> {
        let slots = self.slots();
        let slot = slots.get(&id)?;
        (slot.state == BrokerState::Running)
            .then(|| slot.broker.clone())
            .flatten()
    }

    /// Each broker instance (running or paused) by id, seen at one moment: the slots stay
    /// locked while `f` runs. For the read-only probes in `inspect`.
    pub(super) fn with_instances<R>(&self, f: impl FnOnce(&[(BrokerId, &Broker)]) -> R) -> R {
        let slots = self.slots();
        let instances: Vec<(BrokerId, &Broker)> = slots
            .iter()
            .filter_map(|(id, s)| Some((*id, s.broker.as_deref()?)))
            .collect();
        f(&instances)
    }

    /// The in-process network, for the read-only probes in `inspect`.
    pub(super) fn network(&self) -> &Network {
        &self.inner.ctx.network
    }

    /// Moves the controller role when its broker is gone, frozen or cut off from the
    /// cluster for `controller_failover_ms` (the KRaft quorum electing a new active
    /// controller; an isolated one cannot reach the quorum).
    async fn supervise(self) {
        let failover = Duration::from_millis(self.inner.config.controller_failover_ms);
        let clock = self.inner.ctx.clock.clone();
        let network = self.inner.ctx.network.clone();
        let mut unhealthy_since: Option<tokio::time::Instant> = None;
        loop {
            clock.sleep(Duration::from_millis(100)).await;
            let host = network.controller();
            if host.is_some_and(|h| self.running_broker(h).is_some() && !network.cut_off_from_controller(h)) {
                unhealthy_since = None;
                continue;
            }
            let since = *unhealthy_since.get_or_insert_with(|| clock.now());
            if clock.elapsed(since) < failover {
                continue;
            }
            let candidate = self
                .slots()
                .iter()
                .find(|(id, s)| s.state == BrokerState::Running && !network.cut_off_from_controller(**id))
                .and_then(|(id, s)| s.broker.clone().map(|b| (*id, b)));
            if let Some((id, broker)) = candidate {
                self.inner.ctx.network.set_controller(Some(id));
                self.inner.ctx.controller.reset_heartbeats();
                broker.spawn_controller_duties();
                let from = self
                    .inner
                    .vacated
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
                    .or(host);
                self.inner
                    .ctx
                    .events
                    .publish(EventKind::ControllerMoved { from, to: id });
                broker.publish(self.inner.ctx.controller.image());
                unhealthy_since = None;
            }
        }
    }

    pub fn config(&self) -> &ClusterConfig {
        &self.inner.config
    }

    /// The cluster's wall clock in milliseconds since the epoch (record timestamps,
    /// transaction start times).
    pub fn wall_now_ms(&self) -> i64 {
        self.inner.ctx.wall.now_ms()
    }

    /// The cluster's clock: every engine timer runs on it, and so do the in-process clients
    /// built on this cluster.
    pub fn clock(&self) -> &Clock {
        &self.inner.ctx.clock
    }

    /// Stops the cluster's clock; whether it was running.
    pub fn freeze(&self) -> bool {
        self.clock_changed(self.inner.ctx.clock.freeze())
    }

    /// Holds the cluster still between a trainer's steps: the clock stops as with
    /// [`Cluster::freeze`], without a timeline event (the console's header says HELD);
    /// whether it was running.
    pub fn hold(&self) -> bool {
        self.inner.ctx.clock.hold().is_some()
    }

    /// Ends a hold, quietly; whether the clock was held (a trainer's own freeze stays).
    pub fn release(&self) -> bool {
        self.inner.ctx.clock.release().is_some()
    }

    /// Lets the cluster's clock run again; whether it was frozen.
    pub fn thaw(&self) -> bool {
        self.clock_changed(self.inner.ctx.clock.thaw())
    }

    /// Runs every timer `factor` times slower (1..=20; 1 is real time); whether it changed.
    pub fn set_slow_motion(&self, factor: u32) -> Result<bool, ClockError> {
        Ok(self.clock_changed(self.inner.ctx.clock.set_factor(factor)?))
    }

    fn clock_changed(&self, change: Option<ClockChange>) -> bool {
        match change {
            Some(change) => {
                self.inner.ctx.events.publish(EventKind::ClockChanged(change));
                true
            }
            None => false,
        }
    }

    /// `auto.leader.rebalance.enable` as it is now.
    pub fn auto_rebalance(&self) -> bool {
        self.inner.ctx.auto_rebalance.load(Ordering::Relaxed)
    }

    /// `auto.leader.rebalance.enable`, live: the controller's next imbalance check obeys it.
    pub fn set_auto_rebalance(&self, enabled: bool) {
        if self.inner.ctx.auto_rebalance.swap(enabled, Ordering::Relaxed) != enabled {
            self.inner
                .ctx
                .events
                .publish(EventKind::SettingChanged(LiveSetting::AutoRebalance(enabled)));
        }
    }

    /// The cluster's `unclean.leader.election.enable` as it is now.
    pub fn unclean_election_default(&self) -> bool {
        self.inner.ctx.controller.unclean_default(&self.metadata())
    }

    /// `unclean.leader.election.enable` of one topic, or of the cluster, live. Through the
    /// controller's metadata, so every election from now on uses it; turning it on elects a
    /// leader at once where only an out-of-sync replica is left.
    pub async fn set_unclean_election(&self, topic: Option<&str>, enabled: bool) -> Result<()> {
        let resource = match topic {
            Some(topic) => ConfigResource::Topic(topic.to_string()),
            None => ConfigResource::ClusterDefault,
        };
        let set = ConfigAlteration::set("unclean.leader.election.enable", enabled.to_string());
        self.alter_configs(&resource, &[set], false)
            .await
            .map_err(|(_, message)| anyhow!(message))
    }

    /// A topic's `min.insync.replicas`, live (1..=its replication factor): leaders check
    /// acks=all appends against it as soon as they have the new metadata.
    pub async fn set_min_insync(&self, topic: &str, value: i32) -> Result<()> {
        let set = ConfigAlteration::set("min.insync.replicas", value.to_string());
        self.alter_configs(&ConfigResource::Topic(topic.to_string()), &[set], false)
            .await
            .map_err(|(_, message)| anyhow!(message))
    }

    /// Every config of a topic, of a broker or of the cluster-wide defaults, with its value
    /// in force and where it comes from (DescribeConfigs). A broker's are the cluster's, with
    /// its own replication throttle rates where it has them.
    pub fn describe_configs(&self, resource: &ConfigResource) -> Result<Vec<ConfigEntry>, configs::ConfigError> {
        let image = self.metadata();
        let config = &self.inner.ctx.config;
        match resource {
            ConfigResource::Topic(name) => match image.topics.get(name) {
                Some(t) => Ok(configs::describe_topic(&image, config, &t.config)),
                None => Err((
                    ErrorCode::UnknownTopicOrPartition,
                    format!("topic {name} does not exist"),
                )),
            },
            ConfigResource::Broker(id) if !image.brokers.contains_key(id) => {
                Err((ErrorCode::InvalidRequest, format!("there is no broker {id}")))
            }
            ConfigResource::Broker(id) => Ok(configs::describe_broker(&image, config, self.auto_rebalance(), *id)),
            ConfigResource::ClusterDefault => Ok(configs::describe_cluster(&image, config, self.auto_rebalance())),
        }
    }

    /// IncrementalAlterConfigs: changes a topic's configs or the cluster-wide defaults live,
    /// all or nothing; `validate_only` checks and changes nothing. Refusals carry Kafka's
    /// error code: UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG (an unknown name, a bad value),
    /// INVALID_REQUEST (a config kdeck cannot change while running, a per-broker change of
    /// anything but the replication throttle rates).
    pub async fn alter_configs(
        &self,
        resource: &ConfigResource,
        alterations: &[ConfigAlteration],
        validate_only: bool,
    ) -> Result<(), configs::ConfigError> {
        let host = self
            .controller_host()
            .map_err(|e| (ErrorCode::NotController, e.to_string()))?;
        let controller = &self.inner.ctx.controller;
        let rejected = |e: ControllerError| match e {
            ControllerError::Rejected { code, message } => (code, message),
            other => (other.code(), other.to_string()),
        };
        // auto.leader.rebalance.enable lives beside the metadata (the controller's loop reads
        // it): checked with the rest first, so a refused alteration changes nothing.
        let rebalance = match resource {
            ConfigResource::ClusterDefault => {
                configs::alter_cluster(&self.metadata(), &self.inner.ctx.config, alterations)?.auto_rebalance
            }
            _ => None,
        };
        if let Some(image) = controller
            .alter_configs(resource, alterations, validate_only)
            .map_err(rejected)?
        {
            host.publish(image);
        }
        if let Some(on) = rebalance
            && !validate_only
        {
            self.set_auto_rebalance(on.unwrap_or(self.inner.ctx.config.auto_leader_rebalance));
        }
        Ok(())
    }

    pub fn metadata(&self) -> Arc<MetadataImage> {
        self.inner.ctx.controller.image()
    }

    pub fn events(&self) -> broadcast::Receiver<ClusterEvent> {
        self.inner.ctx.events.subscribe()
    }

    /// The broker hosting the controller, to run controller operations from.
    fn controller_host(&self) -> Result<Arc<Broker>> {
        let host = self
            .inner
            .ctx
            .network
            .controller()
            .ok_or_else(|| anyhow!("no active controller"))?;
        self.running_broker(host)
            .ok_or_else(|| anyhow!("the controller's broker {host} is down; a new controller is being elected"))
    }

    pub async fn create_topic(&self, name: &str, config: TopicConfig) -> Result<()> {
        let host = self.controller_host()?;
        let image = self.inner.ctx.controller.create_topic(name, config)?;
        host.publish(image);
        Ok(())
    }

    /// Grows a topic to `total` partitions.
    pub async fn create_partitions(&self, name: &str, total: i32) -> Result<()> {
        let host = self.controller_host()?;
        let image = self.inner.ctx.controller.create_partitions(name, total)?;
        host.publish(image);
        Ok(())
    }

    pub async fn delete_topic(&self, name: &str) -> Result<()> {
        let host = self.controller_host()?;
        let image = self.inner.ctx.controller.delete_topic(name)?;
        host.publish(image);
        Ok(())
    }

    /// Preferred-leader election for every partition `scope` accepts.
    pub async fn elect_preferred_leaders(
        &self,
        scope: impl Fn(&TopicPartition) -> bool,
    ) -> Result<Vec<(TopicPartition, ErrorCode)>> {
        let host = self.controller_host()?;
        let (results, image) = self.inner.ctx.controller.elect_preferred(scope)?;
        if let Some(image) = image {
            host.publish(image);
        }
        Ok(results)
    }

    /// Hard crash of a broker: tasks aborted, memory gone, files kept as written.
    pub fn kill(&self, id: BrokerId) -> Result<()> {
        let broker = self.take_running(id, BrokerState::Killed)?;
        broker.kill();
        self.inner.ctx.events.publish(EventKind::BrokerStopped {
            broker: id,
            how: "killed".into(),
        });
        Ok(())
    }

    /// A crash that also loses what the broker never fsynced (a power cut): every log is
    /// cut back to its durable offset. Shows why Kafka relies on replication.
    pub fn kill_power_loss(&self, id: BrokerId) -> Result<()> {
        let broker = self.take_running(id, BrokerState::Killed)?;
        let durable = broker.durable_offsets();
        broker.kill();
        drop(broker);
        for (dir, offset) in durable {
            let log = Log::open(
                &dir,
                LogConfig::clone(&self.inner.config.log),
                self.inner.ctx.wall.now_ms(),
            )?;
            log.truncate_to(offset)?;
        }
        self.inner.ctx.events.publish(EventKind::BrokerStopped {
            broker: id,
            how: "power loss: unflushed data dropped".into(),
        });
        Ok(())
    }

    /// Controlled shutdown: leadership moves away first, then logs close cleanly.
    pub async fn stop(&self, id: BrokerId) -> Result<()> {
        if self.running_broker(id).is_none() {
            bail!("broker {id} is not running");
        }
        let host = self.controller_host()?;
        let result = self.inner.ctx.controller.controlled_shutdown(id);
        host.publish_result(result);
        let broker = self.take_running(id, BrokerState::Stopped)?;
        broker.shutdown();
        self.inner.ctx.events.publish(EventKind::BrokerStopped {
            broker: id,
            how: "controlled shutdown".into(),
        });
        Ok(())
    }

    /// Starts a stopped or killed broker: it recovers its logs, registers, and its replicas
    /// truncate by leader epoch and catch up.
    pub fn start_broker(&self, id: BrokerId) -> Result<()> {
        match self.slots().get(&id).map(|s| s.state) {
            Some(BrokerState::Stopped | BrokerState::Killed) => {}
            Some(state) => bail!("broker {id} is {state:?}"),
            None => bail!("no broker {id}"),
        }
        // A stopped or crashed broker hosts no controller role: `take_running` vacated it,
        // and the supervisor gives it to a running broker with duties of its own.
        self.launch(id);
        Ok(())
    }

    pub fn pause(&self, id: BrokerId) -> Result<()> {
        let broker = self
            .running_broker(id)
            .ok_or_else(|| anyhow!("broker {id} is not running"))?;
        broker.pause();
        if let Some(slot) = self.slots().get_mut(&id) {
            slot.state = BrokerState::Paused;
        }
        self.inner.ctx.events.publish(EventKind::BrokerPaused { broker: id });
        Ok(())
    }

    pub fn resume(&self, id: BrokerId) -> Result<()> {
        let mut slots = self.slots();
        let slot = slots.get_mut(&id).ok_or_else(|| anyhow!("no broker {id}"))?;
        if slot.state != BrokerState::Paused {
            bail!("broker {id} is not paused");
        }
        slot.state = BrokerState::Running;
        if let Some(b) = &slot.broker {
            b.resume();
        }
        drop(slots);
        self.inner.ctx.events.publish(EventKind::BrokerResumed { broker: id });
        Ok(())
    }

    fn take_running(&self, id: BrokerId, new_state: BrokerState) -> Result<Arc<Broker>> {
        let mut slots = self.slots();
        let slot = slots.get_mut(&id).ok_or_else(|| anyhow!("no broker {id}"))?;
        if !matches!(slot.state, BrokerState::Running | BrokerState::Paused) {
            bail!("broker {id} is not running");
        }
        slot.state = new_state;
        let broker = slot
            .broker
            .take()
            .ok_or_else(|| anyhow!("broker {id} is not running"))?;
        drop(slots);
        // The controller's duties ran in the instance that is going away: the role is
        // vacant, even if this broker starts again before the failover would have moved
        // it (a restarted instance has no controller duties of its own).
        if self.inner.ctx.network.controller() == Some(id) {
            self.inner.ctx.network.set_controller(None);
            *self
                .inner
                .vacated
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(id);
        }
        Ok(broker)
    }

    /// Injects (or with `None` heals) a fault on the link between two nodes.
    pub fn set_link(&self, a: NodeId, b: NodeId, fault: Option<LinkFault>) {
        self.inner.ctx.network.set_link(a, b, fault);
        self.inner.ctx.events.publish(EventKind::LinkChanged { a, b, fault });
    }

    /// Sets or clears a fault on the way from `from` to `to` only: with a cut, requests
    /// from `from` vanish while `to`'s requests still arrive and only their answers are lost
    /// (a firewall rule on one side, an asymmetric partition).
    pub fn set_link_one_way(&self, from: NodeId, to: NodeId, fault: Option<LinkFault>) {
        self.inner.ctx.network.set_link_one_way(from, to, fault);
    }

    /// The same cluster seen from another client node: its requests cross the links of
    /// `NodeId::Client(id)`, so faults can cut one client off and leave the others.
    pub fn as_client(&self, id: u32) -> Cluster {
        Cluster {
            inner: Arc::clone(&self.inner),
            client: id,
        }
    }

    /// The client node this handle's requests come from.
    pub fn client_id(&self) -> u32 {
        self.client
    }

    /// Cuts a broker off from every other broker and from the controller; clients still
    /// reach it (a "zombie" leader keeps answering them until it learns it was replaced).
    /// When it hosts the controller, the role moves after `controller_failover_ms`.
    pub fn isolate(&self, id: BrokerId) -> Result<()> {
        if !self.slots().contains_key(&id) {
            bail!("there is no broker {id}");
        }
        let network = &self.inner.ctx.network;
        let others: Vec<BrokerId> = self.slots().keys().copied().filter(|b| *b != id).collect();
        for other in others {
            network.set_link(NodeId::Broker(id), NodeId::Broker(other), Some(LinkFault::Cut));
        }
        network.set_link(NodeId::Broker(id), NodeId::Controller, Some(LinkFault::Cut));
        self.inner.ctx.events.publish(EventKind::BrokerIsolated { broker: id });
        Ok(())
    }

    /// The faults on links now, each direction apart (set by [`Cluster::set_link`],
    /// [`Cluster::set_link_one_way`] and [`Cluster::isolate`]).
    pub fn link_faults(&self) -> Vec<(NodeId, NodeId, LinkFault)> {
        self.inner.ctx.network.faults()
    }

    /// Clears every link fault; whether there was any.
    pub fn heal_links(&self) -> bool {
        let healed = self.inner.ctx.network.heal_all();
        if healed {
            self.inner.ctx.events.publish(EventKind::LinksHealed);
        }
        healed
    }

    pub fn snapshot(&self) -> ClusterSnapshot {
        let image = self.metadata();
        let controller = self.inner.ctx.network.controller();
        let slots = self.slots();
        let mut brokers = Vec::new();
        let mut status = BTreeMap::new();
        let mut group_snapshots = Vec::new();
        for (id, slot) in slots.iter() {
            let reg = image.brokers.get(id);
            let (bytes_in, bytes_out, epoch) = match &slot.broker {
                Some(b) => {
                    for p in b.partitions() {
                        status.insert((p.tp.clone(), *id), p.status());
                    }
                    if slot.state == BrokerState::Running {
                        group_snapshots.extend(b.group_snapshot().into_iter().map(|g| (*id, g)));
                    }
                    (
                        b.bytes_in.load(Ordering::Relaxed),
                        b.bytes_out.load(Ordering::Relaxed),
                        b.broker_epoch(),
                    )
                }
                None => (0, 0, reg.map_or(-1, |r| r.epoch)),
            };
            brokers.push(BrokerView {
                id: *id,
                state: slot.state,
                fenced: reg.is_none_or(|r| r.fenced),
                is_controller: controller == Some(*id),
                broker_epoch: epoch,
                leaders: image.leader_count(*id),
                replicas: image.partitions().filter(|(_, p)| p.replicas.contains(id)).count(),
                bytes_in,
                bytes_out,
                membership: self.membership(&image, *id, reg.is_some_and(|r| !r.fenced)),
            });
        }
        let running = |b: BrokerId| slots.get(&b).is_some_and(|s| s.state == BrokerState::Running);
        let now_ms = self.inner.ctx.clock.now_ms();
        let mut totals: BTreeMap<String, (i64, u64)> = BTreeMap::new();
        let partitions: Vec<PartitionView> = image
            .partitions()
            .map(|(tp, p)| {
                let leader_status = status.get(&(tp.clone(), p.leader)).filter(|s| s.role == Role::Leader);
                let replicas: Vec<ReplicaView> = p
                    .replicas
                    .iter()
                    .map(|r| {
                        let own = status.get(&(tp.clone(), *r));
                        let caught_up = leader_status
                            .and_then(|l| l.last_caught_up_ms.iter().find(|(b, _)| b == r))
                            .map(|(_, at)| u64::try_from(now_ms - at).unwrap_or(0));
                        ReplicaView {
                            broker: *r,
                            is_leader: p.leader == *r,
                            in_isr: p.isr.contains(r),
                            online: running(*r) && image.is_live(*r),
                            log_end_offset: own.map(|s| s.log_end_offset),
                            log_start_offset: own.map(|s| s.log_start_offset),
                            high_watermark: own.map(|s| s.high_watermark),
                            last_stable_offset: own.map(|s| s.last_stable_offset),
                            size_bytes: own.map(|s| s.size_bytes),
                            epochs: own.map_or_else(Vec::new, |s| s.epochs.clone()),
                            caught_up_ms_ago: caught_up,
                        }
                    })
                    .collect();
                let offline_replicas = replicas.iter().filter(|r| !r.online).map(|r| r.broker).collect();
                let min_isr = image.topics.get(&tp.topic).map_or(1, |t| t.config.min_insync_replicas);
                if let Some(s) = leader_status {
                    let entry = totals.entry(tp.topic.clone()).or_insert((0i64, 0u64));
                    entry.0 += s.log_end_offset;
                    entry.1 += s.size_bytes;
                }
                PartitionView {
                    leader: (p.leader != NO_LEADER).then_some(p.leader),
                    leader_epoch: p.leader_epoch,
                    partition_epoch: p.partition_epoch,
                    isr: p.isr.clone(),
                    offline_replicas,
                    preferred_leader: p.preferred(),
                    high_watermark: leader_status.map(|s| s.high_watermark),
                    last_stable_offset: leader_status.map(|s| s.last_stable_offset),
                    log_start_offset: leader_status.map(|s| s.log_start_offset),
                    // As Kafka's: while replicas move, the replication factor is the
                    // original assignment's (adding replicas not yet counted).
                    under_replicated: p.isr.len() < p.original_replicas().len(),
                    min_insync_replicas: min_isr,
                    adding: p.adding.clone(),
                    removing: p.removing.clone(),
                    replicas,
                    tp,
                }
            })
            .collect();
        drop(slots);
        let topics = self.topic_views(&image, &partitions, &totals);
        let hw = |tp: &TopicPartition| partitions.iter().find(|p| &p.tp == tp).and_then(|p| p.high_watermark);
        let groups = group_snapshots
            .into_iter()
            .map(|(coordinator, (d, offsets))| GroupView {
                group_id: d.group_id,
                state: d.state,
                protocol: d.protocol,
                generation: d.generation_id,
                coordinator,
                members: d.members,
                offsets: offsets
                    .into_iter()
                    .map(|(tp, committed)| {
                        let end = hw(&tp);
                        GroupOffsetView {
                            lag: end.map(|e| (e - committed).max(0)),
                            end,
                            committed,
                            tp,
                        }
                    })
                    .collect(),
            })
            .collect();
        ClusterSnapshot {
            controller,
            metadata_version: image.version,
            brokers,
            topics,
            partitions,
            groups,
        }
    }

    fn topic_views(
        &self,
        image: &MetadataImage,
        partitions: &[PartitionView],
        totals: &BTreeMap<String, (i64, u64)>,
    ) -> Vec<TopicView> {
        // Rates are what an observer sees per (tokio) second, slow motion included.
        let now = tokio::time::Instant::now();
        let unclean_default = self.inner.ctx.controller.unclean_default(image);
        let mut rates = lock(&self.inner.rates);
        // A deleted topic's sample goes with it (a test suite may create thousands).
        rates.retain(|name, _| image.topics.contains_key(name));
        image
            .topics
            .iter()
            .map(|(name, t)| {
                let (messages, bytes) = totals.get(name).copied().unwrap_or_default();
                let sample = rates.entry(name.clone()).or_insert(RateSample {
                    at: now,
                    messages,
                    bytes,
                    messages_per_sec: 0.0,
                    bytes_per_sec: 0.0,
                });
                let dt = now.duration_since(sample.at).as_secs_f64();
                if dt >= 1.0 {
                    *sample = RateSample {
                        at: now,
                        messages,
                        bytes,
                        messages_per_sec: (messages - sample.messages).max(0) as f64 / dt,
                        bytes_per_sec: bytes.saturating_sub(sample.bytes) as f64 / dt,
                    };
                }
                let mine = partitions.iter().filter(|p| &p.tp.topic == name);
                TopicView {
                    name: name.clone(),
                    partitions: t.partitions.len() as i32,
                    replication_factor: t.config.replication_factor,
                    under_replicated: mine.clone().filter(|p| p.under_replicated).count(),
                    offline: mine.filter(|p| !p.available()).count(),
                    messages,
                    size_bytes: bytes,
                    log: configs::topic_log_config(image, &self.inner.ctx.config.log, &t.config),
                    unclean_leader_election: t.config.unclean_election(unclean_default),
                    messages_per_sec: sample.messages_per_sec,
                    bytes_per_sec: sample.bytes_per_sec,
                }
            })
            .collect()
    }

    /// Waits until `condition` holds for a snapshot, checking every 10 ms of (tokio) time.
    /// An observer's wait, so on tokio time, not the cluster's clock: a frozen cluster makes
    /// it time out rather than hang.
    pub async fn wait_for(
        &self,
        limit: Duration,
        condition: impl Fn(&ClusterSnapshot) -> bool,
    ) -> Result<ClusterSnapshot> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let snapshot = self.snapshot();
            if condition(&snapshot) {
                return Ok(snapshot);
            }
            if tokio::time::Instant::now() >= deadline {
                bail!("condition not reached within {limit:?}; last snapshot: {snapshot:#?}");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Stops every broker cleanly (logs flushed and closed), the supervisor and the drains
    /// being followed (they resume at the next start).
    pub async fn shutdown(&self) {
        if let Some(s) = lock(&self.inner.supervisor).take() {
            s.abort();
        }
        for (_, drain) in std::mem::take(&mut *lock(&self.inner.drains)) {
            drain.abort();
        }
        let ids: Vec<BrokerId> = self.slots().keys().copied().collect();
        for id in ids {
            if let Ok(broker) = self.take_running(id, BrokerState::Stopped) {
                broker.shutdown();
            }
        }
    }

    /// The broker hosting the active controller.
    pub fn controller(&self) -> Option<BrokerId> {
        self.inner.ctx.network.controller()
    }

    /// Every broker slot and its state, cheaper than a snapshot (the wire layer polls it to
    /// open and close listeners).
    pub fn broker_states(&self) -> Vec<(BrokerId, BrokerState)> {
        self.slots().iter().map(|(id, s)| (*id, s.state)).collect()
    }
}

/// A controller refusal as the operator reads it: the sentence, without the error code.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
