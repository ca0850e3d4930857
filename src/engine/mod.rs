//! THE CLUSTER: several brokers in one process, each with its own log directory, talking
//! only through an in-process network; a controller that tracks broker liveness, elects
//! leaders and owns partition metadata; replication exactly as Kafka does it (followers pull,
//! the leader tracks their LEO, HW = min LEO over the ISR, ISR shrink and expand through the
//! controller, leader epochs and divergence truncation).
//!
//! No UI, no TCP. Time flows through one [`Clock`] over tokio's clock, so tests pause and
//! advance it and a trainer freezes it or runs it in slow motion.
//!
//! Observability: [`Cluster::snapshot`] returns a [`ClusterSnapshot`] (brokers with their
//! state, controller, leader and replica counts and bytes; per partition its leader, epochs,
//! replicas, ISR, offline replicas, preferred leader, LEO per replica, HW, log start and
//! under-replicated flag); [`Cluster::events`] streams [`ClusterEvent`]s, each with a time and
//! its cause (broker fenced, leader elected old -> new with epoch and reason, ISR shrink or
//! expand naming the replica, controller moved, produce rejected and why).

mod broker;
pub mod clock;
mod cluster;
mod config;
pub mod configs;
mod controller;
mod events;
pub mod group;
mod inspect;
mod network;
mod partition;
pub mod planted;
mod producer_state;
mod protocol;
pub mod quota;
mod signal;
pub mod txn;

use serde::{Deserialize, Serialize};

pub use clock::{Clock, ClockChange, ClockError, Elapsed};
pub use cluster::{
    BrokerState, BrokerView, Cluster, ClusterSnapshot, ConsumerRead, GroupOffsetView, GroupView, LogDirDescription,
    LogDirReplica, Membership, PartitionView, ProduceOutcome, ReplicaView, TopicView,
};
pub use config::{ClusterConfig, LeaderElection, TopicConfig};
pub use configs::{AlterOp, ConfigAlteration, ConfigEntry, ConfigResource, ConfigSource, ConfigType};
pub use controller::{
    BrokerRegistration, CONTROLLED_SHUTDOWN, MetadataImage, NO_LEADER, PartitionRegistration, TopicMetadata,
};
pub use events::{ClusterEvent, ElectionReason, EventKind, LiveSetting, log_events_in_words};
pub use inspect::{Inspector, ReplicaProbe};
pub use network::{LinkFault, NodeId};
pub use partition::{DELETE_TO_HIGH_WATERMARK, has_keyless_record};
pub use protocol::{Acks, ErrorCode, FetchedOffsets, FetchedRecords, GroupRequest, GroupResponse};
pub use txn::{TXN_STATE_TOPIC, TransactionDescription, TransactionListing, TxnRequest, TxnResponse, TxnState};

/// Kafka's shared vocabulary, in the engine's own API (its requests take offset specs and
/// broker ids; its controller applies the topic-name rule).
pub use crate::kafka::{BrokerId, IsolationLevel, OffsetSpec, is_internal_topic, topic_name_error};
pub use crate::storage::AbortedTxn;

/// One partition of one topic.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }

    /// Kafka's directory name for a replica of this partition.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }
}

impl std::fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// Milliseconds since the Unix epoch, advancing with tokio's clock so that a paused test
/// clock also pauses record timestamps, segment ages and retention. A frozen or slowed
/// [`Clock`] does not stop it: records and events keep wall-clock times.
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    wall_at_start_ms: i64,
    start: tokio::time::Instant,
}

impl WallClock {
    pub fn new() -> Self {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        WallClock {
            wall_at_start_ms: wall,
            start: tokio::time::Instant::now(),
        }
    }

    pub fn now_ms(&self) -> i64 {
        self.wall_at_start_ms + self.start.elapsed().as_millis() as i64
    }
}

impl Default for WallClock {
    fn default() -> Self {
        WallClock::new()
    }
}
