//! `ClusterView`: the immutable snapshot every console pane renders from, and the
//! `ClusterSource` trait the console drives a cluster through. Both the embedded engine
//! (`embedded.rs`) and an external Kafka cluster implement the trait, so nothing here may
//! import `engine/`.
//!
//! Rendering never waits on the cluster: the latest view is an `Arc<ClusterView>` in a watch
//! channel, commands are submitted and their outcome arrives later as a message, and message
//! tails travel in bounded ring buffers the renderer only peeks into.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, watch};

pub type BrokerId = i32;

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
    /// The inbound rate ([`Throughput::in_per_sec`]), oldest first, one sample per refresh.
    pub produce_history: Vec<u64>,
    /// When the broker last changed state (for the brief flash of changed cells).
    pub changed_at: Option<DateTime<Utc>>,
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
    pub log_start_offset: Option<i64>,
    pub under_replicated: bool,
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
    /// `None` when the source cannot tell (an external cluster without DescribeLogDirs).
    pub size_bytes: Option<u64>,
    pub messages_per_sec: f64,
    /// Sum of every group's lag on this topic; `None` when no group reads it.
    pub total_lag: Option<i64>,
    /// What the topic keeps; `None` when the source cannot tell.
    pub retention: Option<Retention>,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Info,
    Warn,
    Error,
}

/// One line of the timeline: what changed and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewEvent {
    pub at: DateTime<Utc>,
    pub severity: Severity,
    pub text: String,
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

/// Sends `view` to the console unless it equals the current one but for the time it was taken,
/// so an unchanged cluster costs an idle console no redraw. False once the console is gone.
pub fn publish_if_changed(tx: &watch::Sender<Arc<ClusterView>>, view: ClusterView) -> bool {
    let changed = {
        let current = tx.borrow();
        ClusterView {
            taken_at: current.taken_at,
            ..view.clone()
        } != **current
    };
    !changed || tx.send(Arc::new(view)).is_ok()
}

/// A record to produce from the console.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProduceRequest {
    pub topic: String,
    /// `None`: the partitioner chooses (by key, or sticky without one).
    pub partition: Option<i32>,
    pub key: Option<String>,
    pub value: String,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
}

/// What the console asks a cluster to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Produce(ProduceRequest),
    /// Hard crash.
    KillBroker(BrokerId),
    /// Controlled shutdown.
    StopBroker(BrokerId),
    StartBroker(BrokerId),
    PauseBroker(BrokerId),
    ResumeBroker(BrokerId),
    /// Preferred-leader election for one topic, or every topic.
    ElectPreferredLeaders {
        topic: Option<String>,
    },
    CreateTopic {
        name: String,
        partitions: i32,
        replication_factor: i32,
        /// `cleanup.policy` in Kafka's spelling: `delete`, `compact` or `compact,delete`.
        cleanup_policy: String,
    },
    DeleteTopic {
        name: String,
    },
    PauseDemo,
    ResumeDemo,
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Produce(r) => match r.partition {
                Some(p) => write!(f, "produce to {}-{p}", r.topic),
                None => write!(f, "produce to {}", r.topic),
            },
            Command::KillBroker(id) => write!(f, "kill broker {id}"),
            Command::StopBroker(id) => write!(f, "stop broker {id}"),
            Command::StartBroker(id) => write!(f, "start broker {id}"),
            Command::PauseBroker(id) => write!(f, "pause broker {id}"),
            Command::ResumeBroker(id) => write!(f, "resume broker {id}"),
            Command::ElectPreferredLeaders { topic: Some(t) } => write!(f, "preferred-leader election for {t}"),
            Command::ElectPreferredLeaders { topic: None } => write!(f, "preferred-leader election for all topics"),
            Command::CreateTopic {
                name,
                partitions,
                replication_factor,
                cleanup_policy,
            } => write!(
                f,
                "create topic {name} ({partitions} partitions, RF {replication_factor}, cleanup.policy {cleanup_policy})"
            ),
            Command::DeleteTopic { name } => write!(f, "delete topic {name}"),
            Command::PauseDemo => write!(f, "pause the demo workload"),
            Command::ResumeDemo => write!(f, "resume the demo workload"),
        }
    }
}

/// How a command ended: a short human sentence either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutcome {
    pub command: Command,
    pub result: Result<String, String>,
}

pub type OutcomeSender = mpsc::UnboundedSender<CommandOutcome>;

/// Where a message tail starts reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeekPosition {
    Beginning,
    End,
    /// The last `n` records of each partition.
    Last(i64),
    Offset(i64),
    /// The first record at or after this time.
    Timestamp(DateTime<Utc>),
}

impl std::fmt::Display for SeekPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SeekPosition::Beginning => write!(f, "beginning"),
            SeekPosition::End => write!(f, "end"),
            SeekPosition::Last(n) => write!(f, "last {n}"),
            SeekPosition::Offset(o) => write!(f, "offset {o}"),
            SeekPosition::Timestamp(t) => write!(f, "{}", t.format("%Y-%m-%d %H:%M:%S UTC")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailSpec {
    pub topic: String,
    /// `None`: every partition.
    pub partition: Option<i32>,
    pub start: SeekPosition,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailRecord {
    pub partition: i32,
    pub offset: i64,
    /// Milliseconds since the epoch.
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// A bounded ring of the newest records of a tail, filled by the source and read by the
/// renderer; the oldest records fall out.
#[derive(Debug)]
pub struct TailBuffer {
    records: Mutex<VecDeque<TailRecord>>,
    capacity: usize,
    /// Bumped on every change so the renderer knows when to redraw.
    version: AtomicU64,
    error: Mutex<Option<String>>,
    closed: AtomicBool,
}

impl TailBuffer {
    pub fn new(capacity: usize) -> TailBuffer {
        TailBuffer {
            records: Mutex::new(VecDeque::with_capacity(capacity.min(4096))),
            capacity: capacity.max(1),
            version: AtomicU64::new(0),
            error: Mutex::new(None),
            closed: AtomicBool::new(false),
        }
    }

    pub fn push(&self, batch: impl IntoIterator<Item = TailRecord>) {
        let mut records = lock(&self.records);
        for r in batch {
            if records.len() == self.capacity {
                records.pop_front();
            }
            records.push_back(r);
        }
        drop(records);
        self.version.fetch_add(1, Ordering::Release);
    }

    /// The last problem reading the tail (cleared by the next successful read).
    pub fn set_error(&self, error: Option<String>) {
        let mut slot = lock(&self.error);
        if *slot != error {
            *slot = error;
            self.version.fetch_add(1, Ordering::Release);
        }
    }

    pub fn error(&self) -> Option<String> {
        lock(&self.error).clone()
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// A copy of the records, oldest first.
    pub fn records(&self) -> Vec<TailRecord> {
        lock(&self.records).iter().cloned().collect()
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running tail; dropping it tells the source to stop filling the buffer.
#[derive(Debug)]
pub struct TailHandle {
    pub spec: TailSpec,
    pub buffer: Arc<TailBuffer>,
}

impl Drop for TailHandle {
    fn drop(&mut self) {
        self.buffer.closed.store(true, Ordering::Release);
    }
}

/// What a source lets the console do; the help overlay greys out or hides the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Kill, stop, start, pause and resume brokers; `Err` says why not.
    pub broker_control: Result<(), &'static str>,
    /// A demo workload that can be paused and resumed.
    pub demo: bool,
    /// Nothing that changes the cluster: no produce, topic changes, elections or broker
    /// control.
    pub read_only: bool,
}

impl Default for Capabilities {
    fn default() -> Self {
        Capabilities {
            broker_control: Ok(()),
            demo: true,
            read_only: false,
        }
    }
}

impl Command {
    /// Whether the command changes the cluster (refused by a read-only source).
    pub fn mutates(&self) -> bool {
        !matches!(self, Command::PauseDemo | Command::ResumeDemo)
    }
}

/// What the console needs from a cluster. Every method returns at once.
pub trait ClusterSource: Send + Sync {
    /// What the console may offer; by default everything.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    /// The latest view; a new one is sent a few times a second while something changes.
    fn views(&self) -> watch::Receiver<Arc<ClusterView>>;
    /// Runs a command in the background; its outcome is sent to `outcomes`.
    fn submit(&self, command: Command, outcomes: OutcomeSender);
    /// Starts reading records into a ring buffer of `capacity` records.
    fn tail(&self, spec: TailSpec, capacity: usize) -> TailHandle;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_ring_keeps_only_the_newest_records() {
        let buffer = TailBuffer::new(3);
        let record = |offset| TailRecord {
            partition: 0,
            offset,
            timestamp: 0,
            key: None,
            value: None,
            headers: Vec::new(),
        };
        let before = buffer.version();
        buffer.push((0..5).map(record));
        let offsets: Vec<i64> = buffer.records().iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![2, 3, 4]);
        assert!(buffer.version() > before);
    }

    #[test]
    fn dropping_the_handle_closes_the_tail() {
        let buffer = Arc::new(TailBuffer::new(3));
        let handle = TailHandle {
            spec: TailSpec {
                topic: "t".into(),
                partition: None,
                start: SeekPosition::End,
            },
            buffer: Arc::clone(&buffer),
        };
        assert!(!buffer.is_closed());
        drop(handle);
        assert!(buffer.is_closed());
    }
}
