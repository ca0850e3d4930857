//! `ClusterView`: the immutable snapshot every console pane renders from, its rows, and the
//! view-model layer both sources share. The embedded engine (`embedded.rs`) and an external
//! Kafka cluster (`remote/source.rs`) only map raw data to rows; what one snapshot cannot
//! tell (histories, rates, change times, the timeline) and every sentence the console shows
//! are made here, once, so both sources say the same thing the same way.
//!
//! - [`source`]: the `ClusterSource` trait the console drives a cluster through, its
//!   commands and message tails;
//! - [`history`]: bounded histories, rates from counter samples, change times, lag totals;
//! - [`timeline`]: the bounded event ring and the sentence of every timeline event;
//! - [`explain`]: why the cluster is as it is (a partition's HW and leader, a broker's
//!   fencing, a group's rebalance, a rejected produce), in Kafka's own terms;
//! - [`outcome`]: the sentence of every command outcome;
//! - [`reassignments`]: partition moves followed across views: lag, pace, ETA, how they ended;
//! - [`merge`]: a window over several partitions in one order (by timestamp), for both sources.
//!
//! Nothing here imports the engine: a source for an external cluster needs none. What both
//! sides share is Kafka's vocabulary in [`crate::kafka`], two items of which the console
//! reaches through here: [`topic_name_error`], so it checks a name the way the cluster will,
//! and [`OffsetSpec`], the one name of a ListOffsets lookup (earliest, latest, by time).

pub mod acls;
pub mod configs;
pub mod epochs;
pub mod explain;
pub mod history;
pub mod lang;
pub mod merge;
pub mod outcome;
pub mod reassignments;
pub mod source;
pub mod timeline;
pub mod transactions;
pub mod words;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

pub use crate::kafka::{BrokerId, OffsetSpec, topic_name_error};
pub use configs::{ConfigOrigin, ConfigRow, ConfigTarget};
pub use epochs::{EpochStart, Epochs};
pub use source::{
    Capabilities, ClusterSource, Command, CommandOutcome, LinkState, OutcomeSender, ProduceRequest, ReplicaMove,
    SeekPosition, TailBuffer, TailFeed, TailHandle, TailMode, TailRecord, TailSpec, TxnMark, TxnMarker,
};

/// Where the view comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Embedded,
    External,
}

impl SourceKind {
    pub fn label(self) -> &'static str {
        match self {
            SourceKind::Embedded => "embedded",
            SourceKind::External => "external",
        }
    }
}

/// A broker's state as an operator reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerStatus {
    Online,
    /// Running but fenced by the controller (missed heartbeats, or not yet registered).
    Fenced,
    Paused,
    /// Shut down cleanly.
    Stopped,
    /// Crashed.
    Killed,
    /// External cluster: seen before and now missing from the cluster's metadata.
    Down,
    /// External cluster: in the metadata, but kdeck cannot talk to it.
    Unreachable,
}

impl BrokerStatus {
    pub fn label(self) -> &'static str {
        match self {
            BrokerStatus::Online => "online",
            BrokerStatus::Fenced => "fenced",
            BrokerStatus::Paused => "paused",
            BrokerStatus::Stopped => "stopped",
            BrokerStatus::Killed => "killed",
            BrokerStatus::Down => "down",
            BrokerStatus::Unreachable => "unreach",
        }
    }

    pub fn is_up(self) -> bool {
        self == BrokerStatus::Online
    }
}

/// What a broker's throughput columns measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Throughput {
    /// Bytes in and out per second, from the broker's own counters.
    Bytes { in_per_sec: f64, out_per_sec: f64 },
    /// Records appended per second to the partitions the broker leads, from successive end
    /// offsets: all an external cluster tells without JMX (no byte rates, nothing outbound).
    Messages { in_per_sec: f64 },
}

impl Throughput {
    /// The inbound rate, whatever its unit.
    pub fn in_per_sec(self) -> f64 {
        match self {
            Throughput::Bytes { in_per_sec, .. } | Throughput::Messages { in_per_sec } => in_per_sec,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BrokerRow {
    pub id: BrokerId,
    pub status: BrokerStatus,
    pub is_controller: bool,
    pub leaders: usize,
    pub replicas: usize,
    pub throughput: Throughput,
    /// `host:port` where Kafka clients reach the broker (none when it serves no clients).
    pub address: Option<String>,
    /// Bytes of the replicas the broker hosts (its log dirs), `None` when the source cannot
    /// tell: the broker is down, or an external cluster refuses DescribeLogDirs.
    pub disk_bytes: Option<u64>,
    /// The inbound rate ([`Throughput::in_per_sec`]), oldest first, one sample per refresh.
    pub produce_history: Vec<u64>,
    /// When the broker last changed state (for the brief flash of changed cells).
    pub changed_at: Option<DateTime<Utc>>,
    /// Joining or leaving the cluster (the embedded cluster's add and decommission).
    pub lifecycle: Option<BrokerLifecycle>,
}

/// A broker on its way into or out of the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerLifecycle {
    /// Added, not yet registered and unfenced by the controller.
    Joining,
    /// Being decommissioned: `moved` of the `total` replicas it held have left it.
    Draining { moved: usize, total: usize },
}

/// A replica's role, shown by colour and by glyph so it reads without colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaRole {
    Leader,
    InSync,
    OutOfSync,
    Offline,
}

impl ReplicaRole {
    pub fn glyph(self) -> &'static str {
        match self {
            ReplicaRole::Leader => "★",
            ReplicaRole::InSync => "●",
            ReplicaRole::OutOfSync => "○",
            ReplicaRole::Offline => "✗",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            ReplicaRole::Leader => "leader",
            ReplicaRole::InSync => "in-sync follower",
            ReplicaRole::OutOfSync => "out-of-sync",
            ReplicaRole::Offline => "offline",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaRow {
    pub broker: BrokerId,
    pub role: ReplicaRole,
    /// The replica's log end offset, when its broker reports one.
    pub log_end_offset: Option<i64>,
    /// The replica's own log start offset, when known.
    pub log_start_offset: Option<i64>,
    /// The replica's own high watermark, when known: a follower's lags the leader's.
    pub high_watermark: Option<i64>,
    /// Bytes of the replica's segment files, when its broker tells (an external cluster
    /// through DescribeLogDirs).
    pub size_bytes: Option<u64>,
    /// The replica's leader-epoch cache, oldest first: which offsets each leader epoch
    /// wrote (empty when the source cannot tell). Short ones sit in the row, long ones are
    /// shared between views: a new view per tick copies no replica's epochs.
    pub epochs: Epochs,
    /// How long ago the leader last saw this follower caught up to its log end (Kafka's
    /// `lastCaughtUpTimeMs`, on which an ISR shrink is decided); `None` for the leader or
    /// when unknown.
    pub caught_up_ms_ago: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PartitionRow {
    pub topic: String,
    pub partition: i32,
    pub leader: Option<BrokerId>,
    pub leader_epoch: i32,
    /// In assignment order; the first is the preferred leader.
    pub replicas: Vec<ReplicaRow>,
    pub isr: Vec<BrokerId>,
    pub preferred_leader: BrokerId,
    pub high_watermark: Option<i64>,
    /// The leader's last stable offset, when known: read_committed consumers read up to it;
    /// below the high watermark while a transaction is open on the partition.
    pub last_stable_offset: Option<i64>,
    pub log_start_offset: Option<i64>,
    pub under_replicated: bool,
    /// The topic's `min.insync.replicas`, when the source tells it.
    pub min_insync_replicas: Option<i32>,
    /// A reassignment in progress (KIP-455): the replicas joining, and those leaving once
    /// the joining ones are in the ISR; both empty when nothing moves.
    pub adding: Vec<BrokerId>,
    pub removing: Vec<BrokerId>,
    pub changed_at: Option<DateTime<Utc>>,
}

impl PartitionRow {
    /// No leader, or a leader whose broker is down (a cluster whose only broker died, or
    /// whose controller has not moved the leadership yet): nothing can be read or written.
    pub fn offline(&self) -> bool {
        match self.leader {
            None => true,
            Some(leader) => self
                .replicas
                .iter()
                .any(|r| r.broker == leader && r.role == ReplicaRole::Offline),
        }
    }

    pub fn preferred_leads(&self) -> bool {
        self.leader == Some(self.preferred_leader)
    }

    /// The replica on `broker`.
    pub fn replica(&self, broker: BrokerId) -> Option<&ReplicaRow> {
        self.replicas.iter().find(|r| r.broker == broker)
    }

    /// Whether replicas are moving.
    pub fn reassigning(&self) -> bool {
        !self.adding.is_empty() || !self.removing.is_empty()
    }

    /// An open transaction holds read_committed consumers back: the last stable offset is
    /// below the high watermark.
    pub fn held_back_by_transaction(&self) -> bool {
        matches!((self.last_stable_offset, self.high_watermark), (Some(lso), Some(hw)) if lso < hw)
    }

    /// The leader's log end offset.
    pub fn leader_log_end(&self) -> Option<i64> {
        self.replicas
            .iter()
            .find(|r| r.role == ReplicaRole::Leader)
            .and_then(|r| r.log_end_offset)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TopicRow {
    pub name: String,
    pub internal: bool,
    pub partitions: i32,
    pub replication_factor: i32,
    pub under_replicated: usize,
    pub offline: usize,
    pub messages: i64,
    /// The sum of the partition leaders' sizes; `None` when the source cannot tell (an
    /// external cluster that refuses DescribeLogDirs).
    pub size_bytes: Option<u64>,
    pub messages_per_sec: f64,
    /// Sum of every group's lag on this topic; `None` when no group reads it.
    pub total_lag: Option<i64>,
    /// What the topic keeps; `None` when the source cannot tell.
    pub retention: Option<Retention>,
    /// `unclean.leader.election.enable` as the topic's elections apply it (its own or the
    /// cluster's); `None` when the source cannot tell (an external cluster).
    pub unclean_election: Option<bool>,
}

/// A topic's effective `cleanup.policy`, `retention.ms` and `retention.bytes` (-1: no
/// limit); time and size apply only when the policy deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub compact: bool,
    pub delete: bool,
    pub ms: i64,
    pub bytes: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MemberRow {
    pub member_id: String,
    /// KIP-345 `group.instance.id` of a static member (DescribeGroups v4+).
    pub instance_id: Option<String>,
    /// The consumer's `client.id`; empty where the source does not tell.
    pub client_id: String,
    /// Where it connects from (`/127.0.0.1`, `in-process`); empty where not told.
    pub host: String,
    /// (topic, partition) pairs assigned to the member.
    pub assignment: Vec<(String, i32)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupOffsetRow {
    pub topic: String,
    pub partition: i32,
    pub committed: i64,
    pub end: Option<i64>,
    pub lag: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupRow {
    pub group_id: String,
    pub state: String,
    pub protocol: String,
    pub generation: i32,
    pub coordinator: BrokerId,
    pub members: Vec<MemberRow>,
    pub offsets: Vec<GroupOffsetRow>,
    /// Total lag now, and its history (oldest first, one sample per refresh).
    pub total_lag: i64,
    pub lag_history: Vec<u64>,
}

impl GroupRow {
    /// The member consuming a partition, if any.
    pub fn owner(&self, topic: &str, partition: i32) -> Option<&MemberRow> {
        self.members
            .iter()
            .find(|m| m.assignment.iter().any(|(t, p)| t == topic && *p == partition))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Info,
    Warn,
    Error,
}

/// One line of the timeline: what changed and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewEvent {
    /// When it happened on the wall clock: what the Events pane prints.
    pub at: DateTime<Utc>,
    /// The same moment on the cluster's clock, which stands still while frozen and runs
    /// slower in slow motion; how long one consequence took after another (an incident's
    /// "fenced after 4.0 s") is measured on it. An external cluster's is `at`.
    pub cluster_at: DateTime<Utc>,
    pub severity: Severity,
    /// What it says in English: what the scenario checks, recordings and traces read.
    pub text: String,
    /// The same as a message of the catalogue, for a console in another language; `None`
    /// for words the console has only in English (its own notes).
    pub msg: Option<lang::Msg>,
    /// What part it plays in an incident (see [`timeline::incidents`]).
    pub class: EventClass,
}

/// The part an event plays in the story of a fault: the fault opens an incident, its
/// consequences join it, the broker's return closes it. A consequence names the partition and
/// the brokers it is about, so it joins the incident of the broker it concerns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EventClass {
    /// A broker went away: crashed, stopped, paused or cut off.
    Fault(BrokerId),
    /// The controller fenced a broker.
    Fenced(BrokerId),
    /// A broker's process started again (it is back in service once unfenced).
    Restarted(BrokerId),
    /// A broker is back in service.
    Recovered(BrokerId),
    /// A partition (`orders-0`) has a new leader; `from` is `None` when it had none.
    LeaderMoved {
        partition: String,
        from: Option<BrokerId>,
        to: BrokerId,
    },
    IsrShrunk {
        partition: String,
        removed: Vec<BrokerId>,
    },
    IsrExpanded {
        partition: String,
        added: Vec<BrokerId>,
    },
    /// No live in-sync replica is left; `isr` is the last ISR.
    Offline {
        partition: String,
        isr: Vec<BrokerId>,
    },
    ProduceRejected(Refusals),
    #[default]
    Other,
}

/// Produces a partition's leader refused with one error: one refusal as the source tells it,
/// or a run of them as the Events pane folds them into one line
/// ([`timeline::fold_refusals`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusals {
    /// `orders-0`.
    pub partition: String,
    /// Kafka's name of the error: `NOT_ENOUGH_REPLICAS`.
    pub error: String,
    /// How many refusals (1 for one event).
    pub count: u64,
    /// The first one's time on the cluster's clock.
    pub since: DateTime<Utc>,
}

/// Everything the console shows, at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterView {
    pub cluster_name: String,
    pub source: SourceKind,
    pub taken_at: DateTime<Utc>,
    pub controller: Option<BrokerId>,
    pub brokers: Vec<BrokerRow>,
    /// User topics first, then internal ones, each by name.
    pub topics: Vec<TopicRow>,
    /// By topic, then partition.
    pub partitions: Vec<PartitionRow>,
    pub groups: Vec<GroupRow>,
    /// The most recent events, oldest first (bounded).
    pub events: Vec<ViewEvent>,
    /// `Some(running)` when the source has a demo workload.
    pub demo: Option<bool>,
    /// What keeps the source from seeing the whole cluster now, worst first ("broker 2
    /// 127.0.0.1:9094: connection refused"); the header shows the first and a count.
    pub problems: Vec<String>,
    /// The embedded cluster's clock and the rules a trainer explains and toggles; `None`
    /// for an external cluster.
    pub controls: Option<Controls>,
    /// What a scenario's workload counted; `None` without one.
    pub workload: Option<WorkloadStats>,
    /// The links between brokers that are not up (cut or delayed), each direction apart;
    /// empty for an external cluster, whose network kdeck does not steer.
    pub links: Vec<BrokerLink>,
}

/// A fault on the way from one broker to another: a follower's fetches cross the link from
/// it to the leader, their answers the way back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerLink {
    pub from: BrokerId,
    pub to: BrokerId,
    pub state: LinkState,
}

impl ClusterView {
    /// The worse state of the link between `a` and `b` in either direction (a cut before a
    /// delay, the longer delay first); `Up` when neither direction has a fault.
    pub fn link_between(&self, a: BrokerId, b: BrokerId) -> LinkState {
        let rank = |s: &LinkState| match s {
            LinkState::Up => 0,
            LinkState::Delay(ms) => 1 + *ms,
            LinkState::Cut => u64::MAX,
        };
        self.links
            .iter()
            .filter(|l| (l.from, l.to) == (a, b) || (l.from, l.to) == (b, a))
            .map(|l| l.state)
            .max_by_key(rank)
            .unwrap_or(LinkState::Up)
    }
}

/// What a scenario's producers and consumers counted, for the room to see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkloadStats {
    pub acked: u64,
    /// Failures by Kafka's error name (`NOT_ENOUGH_REPLICAS`, `REQUEST_TIMED_OUT`...).
    pub errors: std::collections::BTreeMap<String, u64>,
    /// Acknowledged records whose offset now holds another record.
    pub lost_acked: u64,
    /// Keys whose records landed in more than one partition.
    pub keys_in_many_partitions: u64,
    /// Records a consumer saw out of its key's order, by group.
    pub out_of_order: std::collections::BTreeMap<String, u64>,
    /// Keyed records whose order a group's consumers checked, by group: a group that read
    /// nothing has shown no order at all.
    pub order_checked: std::collections::BTreeMap<String, u64>,
    /// The producers' `acks` now (0, 1, -1), when there are producers.
    pub acks: Option<i16>,
}

impl WorkloadStats {
    /// Failures of one error (by Kafka's name), or of any.
    pub fn errors_of(&self, error: Option<&str>) -> u64 {
        match error {
            Some(name) => self.errors.get(name).copied().unwrap_or(0),
            None => self.errors.values().sum(),
        }
    }
}

/// The embedded cluster's clock, its live settings and the timing rules behind its
/// decisions (what "explain" quotes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Controls {
    /// The cluster's clock is stopped.
    pub frozen: bool,
    /// Frozen by a scenario between its steps (the header says HELD, not FROZEN).
    pub held: bool,
    /// Every engine timeout and interval runs this many times slower (1: real time).
    pub slow_motion: u32,
    /// `auto.leader.rebalance.enable`.
    pub auto_rebalance: bool,
    /// `unclean.leader.election.enable`, the cluster's default.
    pub unclean_election: bool,
    /// The balanced election rule instead of Kafka's (first live ISR member in assignment
    /// order).
    pub balanced_election: bool,
    /// `replica.lag.time.max.ms`.
    pub replica_lag_time_max_ms: u64,
    /// `broker.session.timeout.ms`.
    pub broker_session_timeout_ms: u64,
    /// `acks` of the workload's producers, when a workload runs.
    pub producer_acks: Option<i16>,
    /// The cluster's clock when the view was taken (`taken_at`), in milliseconds: it stands
    /// still while frozen and runs slower in slow motion, so what is drawn on it (the flow
    /// picture's batches) does too.
    pub clock_ms: i64,
}

impl Controls {
    /// The cluster's clock at `now`, from where it stood at `taken_at` and how it runs.
    pub fn clock_at(&self, taken_at: DateTime<Utc>, now: DateTime<Utc>) -> i64 {
        if self.frozen {
            return self.clock_ms;
        }
        let real = now.signed_duration_since(taken_at).num_milliseconds().max(0);
        self.clock_ms + real / i64::from(self.slow_motion.max(1))
    }
}

impl ClusterView {
    /// An empty view, shown until the first snapshot arrives.
    pub fn empty(cluster_name: &str, source: SourceKind) -> ClusterView {
        ClusterView {
            cluster_name: cluster_name.to_string(),
            source,
            taken_at: DateTime::<Utc>::UNIX_EPOCH,
            controller: None,
            brokers: Vec::new(),
            topics: Vec::new(),
            partitions: Vec::new(),
            groups: Vec::new(),
            events: Vec::new(),
            demo: None,
            problems: Vec::new(),
            controls: None,
            workload: None,
            links: Vec::new(),
        }
    }

    pub fn partitions_of<'a>(&'a self, topic: &'a str) -> impl Iterator<Item = &'a PartitionRow> + 'a {
        self.partitions.iter().filter(move |p| p.topic == topic)
    }

    pub fn topic(&self, name: &str) -> Option<&TopicRow> {
        self.topics.iter().find(|t| t.name == name)
    }

    pub fn brokers_up(&self) -> usize {
        self.brokers.iter().filter(|b| b.status.is_up()).count()
    }

    pub fn partitions_online(&self) -> usize {
        self.partitions.iter().filter(|p| !p.offline()).count()
    }

    pub fn under_replicated(&self) -> usize {
        self.partitions.iter().filter(|p| p.under_replicated).count()
    }
}

/// The one order of a view's rows, whichever source built it: user topics before internal
/// ones, each by name; partitions by topic, then number; groups by id, and each group's
/// offsets by topic, then partition.
pub fn sort_rows(view: &mut ClusterView) {
    view.topics
        .sort_by(|a, b| (a.internal, &a.name).cmp(&(b.internal, &b.name)));
    view.partitions
        .sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    view.groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    for g in &mut view.groups {
        g.offsets
            .sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    }
}

/// Sends `view` to the console unless it equals the current one but for the time it was taken,
/// so an unchanged cluster costs an idle console no redraw. False once the console is gone.
pub fn publish_if_changed(tx: &watch::Sender<Arc<ClusterView>>, view: ClusterView) -> bool {
    let changed = {
        let current = tx.borrow();
        // The clock moves at every snapshot; a view republished for it alone would redraw
        // an idle console. Drawn from `taken_at`, an older view tells the same clock.
        let controls = match (view.controls, current.controls) {
            (Some(new), Some(old)) => Some(Controls {
                clock_ms: old.clock_ms,
                ..new
            }),
            (new, _) => new,
        };
        ClusterView {
            taken_at: current.taken_at,
            controls,
            ..view.clone()
        } != **current
    };
    !changed || tx.send(Arc::new(view)).is_ok()
}
