//! What changed in the cluster, when, and why: the timeline the console shows.

use chrono::{DateTime, Utc};
use tokio::sync::broadcast;

use super::clock::ClockChange;
use super::network::{LinkFault, NodeId};
use super::protocol::ErrorCode;
use super::{BrokerId, TopicPartition};

/// Why a leader was elected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionReason {
    /// The partition was created.
    Created,
    /// The leader was fenced (a crash, missed heartbeats); an in-sync replica took over.
    LeaderUnavailable,
    /// The leader's broker is in a controlled shutdown: an in-sync replica takes over before
    /// it stops, so nothing is unavailable.
    ControlledShutdown,
    /// The partition had no leader and an in-sync replica came back.
    ReplicaReturned,
    /// Preferred-leader election (on demand or by the automatic rebalance).
    Preferred,
    /// No in-sync replica was alive; an out-of-sync one was elected. Data may be lost.
    Unclean,
    /// A reassignment (KIP-455) finished or was cancelled, and the leader was not among the
    /// replicas it kept.
    Reassignment,
}

#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    BrokerStarted {
        broker: BrokerId,
        broker_epoch: i64,
    },
    BrokerFenced {
        broker: BrokerId,
        reason: String,
    },
    BrokerUnfenced {
        broker: BrokerId,
    },
    BrokerStopped {
        broker: BrokerId,
        how: String,
    },
    BrokerPaused {
        broker: BrokerId,
    },
    BrokerResumed {
        broker: BrokerId,
    },
    /// A broker was added to the running cluster (new id, empty log directory).
    BrokerJoined {
        broker: BrokerId,
    },
    /// A broker's decommission began: its `replicas` move to the other brokers first.
    BrokerDraining {
        broker: BrokerId,
        replicas: usize,
    },
    /// A drained broker shut down and left the cluster's metadata (UnregisterBroker).
    BrokerDecommissioned {
        broker: BrokerId,
    },
    ControllerMoved {
        from: Option<BrokerId>,
        to: BrokerId,
    },
    TopicCreated {
        topic: String,
        partitions: i32,
        replication_factor: i32,
    },
    TopicDeleted {
        topic: String,
    },
    LeaderElected {
        tp: TopicPartition,
        old: Option<BrokerId>,
        new: BrokerId,
        leader_epoch: i32,
        reason: ElectionReason,
        /// The ISR the election left (a fenced leader leaves it in the same change).
        isr: Vec<BrokerId>,
    },
    PartitionOffline {
        tp: TopicPartition,
        isr: Vec<BrokerId>,
    },
    IsrShrunk {
        tp: TopicPartition,
        removed: Vec<BrokerId>,
        isr: Vec<BrokerId>,
        reason: String,
    },
    IsrExpanded {
        tp: TopicPartition,
        added: Vec<BrokerId>,
        isr: Vec<BrokerId>,
    },
    FollowerTruncated {
        tp: TopicPartition,
        broker: BrokerId,
        from: i64,
        to: i64,
    },
    ProduceRejected {
        tp: TopicPartition,
        error: ErrorCode,
        reason: String,
    },
    /// One link set or healed (`fault: None`).
    LinkChanged {
        a: NodeId,
        b: NodeId,
        fault: Option<LinkFault>,
    },
    /// Every link between the broker and the other brokers and the controller cut; clients
    /// still reach it.
    BrokerIsolated {
        broker: BrokerId,
    },
    /// Every link fault cleared.
    LinksHealed,
    /// The cluster's clock frozen, running again, or in slow motion.
    ClockChanged(ClockChange),
    /// A setting changed at run time.
    SettingChanged(LiveSetting),
    GroupRebalanced {
        group: String,
        generation: i32,
        members: usize,
        protocol: String,
    },
    GroupMemberRemoved {
        group: String,
        member: String,
        reason: String,
    },
    /// KIP-345: a static member joined again under a new member id and took the place of its
    /// old one (a restart, or a second consumer with the same `group.instance.id`). With
    /// `rebalance` false it kept its assignment and the group stayed at its generation.
    StaticMemberReplaced {
        group: String,
        instance: String,
        old_member: String,
        new_member: String,
        rebalance: bool,
    },
    /// A request from a member whose `group.instance.id` another member took over was
    /// refused with FENCED_INSTANCE_ID (said once per fenced member).
    StaticMemberFenced {
        group: String,
        instance: String,
        member: String,
        by: String,
    },
    /// A transaction's COMMIT markers are in every one of its partitions.
    TxnCommitted {
        transactional_id: String,
        producer_id: i64,
        partitions: usize,
    },
    /// A transaction was aborted (by its producer, or because a new instance fenced it).
    TxnAborted {
        transactional_id: String,
        producer_id: i64,
        partitions: usize,
    },
    /// The coordinator aborted a transaction open longer than its timeout, fencing its
    /// producer's epoch.
    TxnTimedOut {
        transactional_id: String,
        producer_id: i64,
        partitions: usize,
    },
    /// InitProducerId of a new instance bumped the epoch of a transactional id whose
    /// transaction was open: the old instance is fenced and its transaction aborted.
    ProducerFenced {
        transactional_id: String,
        producer_id: i64,
        epoch: i16,
    },
    /// KIP-455: a partition's replicas start moving from `from` to `to`; the adding ones
    /// join as followers.
    ReassignmentStarted {
        tp: TopicPartition,
        from: Vec<BrokerId>,
        to: Vec<BrokerId>,
    },
    /// Every adding replica joined the ISR: the removed ones are dropped (their logs deleted).
    ReassignmentCompleted {
        tp: TopicPartition,
        replicas: Vec<BrokerId>,
        removed: Vec<BrokerId>,
    },
    /// A reassignment was cancelled: the partition is back on `replicas`.
    ReassignmentCancelled {
        tp: TopicPartition,
        replicas: Vec<BrokerId>,
    },
}

impl EventKind {
    /// Routine traffic rather than a change of the cluster's state: each transaction that
    /// ends normally (committed, or aborted by its producer). A transactional producer ends
    /// several a second, so they go to the log at debug level and the console's timeline
    /// leaves them out; a timeout or a fencing is news and stays.
    pub fn is_routine(&self) -> bool {
        matches!(self, EventKind::TxnCommitted { .. } | EventKind::TxnAborted { .. })
    }
}

/// A setting a trainer changes while the cluster runs, with its Kafka config name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveSetting {
    /// `auto.leader.rebalance.enable`.
    AutoRebalance(bool),
    /// `unclean.leader.election.enable` of a topic, or of the cluster (`None`).
    UncleanElection { topic: Option<String>, enabled: bool },
    /// `min.insync.replicas` of a topic.
    MinInsync { topic: String, value: i32 },
    /// Another config of a topic, or a cluster-wide default (`None`), with its value in force
    /// afterwards (the default's when an override was removed).
    Config {
        topic: Option<String>,
        name: String,
        value: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClusterEvent {
    /// When it happened on the wall clock (what the Events pane prints).
    pub at: DateTime<Utc>,
    /// The same moment on the cluster's clock ([`super::Clock::now_ms`]), which stands still
    /// while frozen and runs slower in slow motion: every timeout is measured on it, so how
    /// long one consequence took after another is measured on it too.
    pub cluster_at: DateTime<Utc>,
    pub kind: EventKind,
}

/// How the log says an event: in the words the layer above gives (the timeline's sentences,
/// set once by [`log_events_in_words`]), else as data (the engine's own tests, the
/// simulation).
static IN_WORDS: std::sync::OnceLock<fn(&EventKind) -> String> = std::sync::OnceLock::new();

/// Logs every event from now on as `say` words it (the first call wins: one wording per
/// process).
pub fn log_events_in_words(say: fn(&EventKind) -> String) {
    let _ = IN_WORDS.set(say);
}

/// Publishes events to every subscriber; slow subscribers lose the oldest ones.
#[derive(Clone)]
pub(crate) struct EventBus {
    tx: broadcast::Sender<ClusterEvent>,
    wall: super::WallClock,
    clock: super::Clock,
}

impl EventBus {
    /// A bus stamping each event with both clocks: `wall` and the cluster's `clock`.
    pub fn new(wall: super::WallClock, clock: super::Clock) -> Self {
        EventBus {
            tx: broadcast::channel(4096).0,
            wall,
            clock,
        }
    }

    pub fn publish(&self, kind: EventKind) {
        match (IN_WORDS.get(), kind.is_routine()) {
            (Some(say), false) => tracing::info!("{}", say(&kind)),
            (Some(say), true) => tracing::debug!("{}", say(&kind)),
            (None, false) => tracing::info!(event = ?kind),
            (None, true) => tracing::debug!(event = ?kind),
        }
        let at = DateTime::from_timestamp_millis(self.wall.now_ms()).unwrap_or_default();
        let cluster_at = DateTime::from_timestamp_millis(self.clock.now_ms()).unwrap_or_default();
        let _ = self.tx.send(ClusterEvent { at, cluster_at, kind });
    }

    pub fn subscribe(&self) -> broadcast::Receiver<ClusterEvent> {
        self.tx.subscribe()
    }
}
