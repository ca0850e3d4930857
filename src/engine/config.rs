//! Cluster settings. Timeouts default shorter than Kafka's so a live demo reacts within
//! seconds; each says what Kafka's default is.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::quota::ThrottledReplicas;
use crate::storage::{CleanupPolicy, LogConfig};

/// How the controller picks a new leader among the eligible replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LeaderElection {
    /// Kafka's rule: the first eligible replica in assignment order.
    #[default]
    Kafka,
    /// The eligible replica that leads the fewest partitions (ties: assignment order).
    Balanced,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// Where each broker keeps its logs (`broker-<id>/`) and the controller its metadata.
    pub data_dir: PathBuf,
    /// Brokers started with the cluster (ids 0..brokers).
    pub brokers: i32,
    /// `replica.lag.time.max.ms` (Kafka 30000): a follower not caught up for this long
    /// leaves the ISR.
    pub replica_lag_time_max_ms: u64,
    /// `broker.heartbeat.interval.ms` (Kafka 2000).
    pub broker_heartbeat_interval_ms: u64,
    /// `broker.session.timeout.ms` (Kafka 9000): a broker silent this long is fenced.
    pub broker_session_timeout_ms: u64,
    /// `replica.fetch.wait.max.ms` (Kafka 500): how long a follower fetch waits for data.
    pub replica_fetch_wait_max_ms: u64,
    /// `replica.fetch.backoff.ms` (Kafka 1000): pause after a failed follower fetch.
    pub replica_fetch_backoff_ms: u64,
    /// `unclean.leader.election.enable` (Kafka false).
    pub unclean_leader_election: bool,
    /// Kafka's rule or the balanced rule, see [`LeaderElection`].
    pub leader_election: LeaderElection,
    /// `auto.leader.rebalance.enable` (Kafka true).
    pub auto_leader_rebalance: bool,
    /// `leader.imbalance.check.interval.seconds` in ms (Kafka 300000).
    pub leader_imbalance_check_interval_ms: u64,
    /// How long the controller's broker may be gone before another takes the role.
    pub controller_failover_ms: u64,
    /// `min.insync.replicas` default for new topics (Kafka 1).
    pub min_insync_replicas: i32,
    /// `log.retention.check.interval.ms` (Kafka 300000): how often retention runs.
    pub retention_check_interval_ms: u64,
    /// `offsets.topic.num.partitions` (Kafka 50; fewer suits one machine).
    pub offsets_topic_partitions: i32,
    /// `offsets.topic.replication.factor` (Kafka 3), capped at the number of brokers.
    pub offsets_topic_replication_factor: i32,
    /// `group.initial.rebalance.delay.ms` (Kafka 3000).
    pub group_initial_rebalance_delay_ms: u64,
    /// `offsets.retention.minutes` (Kafka 10080, 7 days): an empty group's committed
    /// offsets (and a standalone consumer's, counted from each commit) are deleted after it.
    pub offsets_retention_minutes: u64,
    /// `producer.id.expiration.ms` (Kafka 86400000, 1 day): a partition forgets an
    /// idempotent producer that wrote nothing to it for this long.
    pub producer_id_expiration_ms: u64,
    /// `transaction.state.log.num.partitions` (Kafka 50; fewer suits one machine).
    pub transaction_state_partitions: i32,
    /// `transaction.state.log.replication.factor` (Kafka 3), capped at the number of brokers.
    pub transaction_state_replication_factor: i32,
    /// `transaction.max.timeout.ms` (Kafka 900000): the longest `transaction.timeout.ms` a
    /// producer may ask for (INVALID_TRANSACTION_TIMEOUT above it).
    pub transaction_max_timeout_ms: u64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms` (Kafka 10000): how often
    /// a coordinator looks for transactions open longer than their timeout, and aborts them.
    pub transaction_abort_timed_out_interval_ms: u64,
    /// `transactional.id.expiration.ms` (Kafka 604800000, 7 days): a transactional id with no
    /// transaction for this long is forgotten.
    pub transactional_id_expiration_ms: u64,
    /// Default log settings for every replica.
    pub log: LogConfig,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            data_dir: PathBuf::from("kdeck-data"),
            brokers: 3,
            replica_lag_time_max_ms: 6_000,
            broker_heartbeat_interval_ms: 500,
            broker_session_timeout_ms: 3_000,
            replica_fetch_wait_max_ms: 500,
            replica_fetch_backoff_ms: 200,
            unclean_leader_election: false,
            leader_election: LeaderElection::Kafka,
            auto_leader_rebalance: true,
            leader_imbalance_check_interval_ms: 30_000,
            controller_failover_ms: 1_500,
            min_insync_replicas: 1,
            retention_check_interval_ms: 60_000,
            offsets_topic_partitions: 10,
            offsets_topic_replication_factor: 3,
            group_initial_rebalance_delay_ms: 1_000,
            offsets_retention_minutes: 10_080,
            producer_id_expiration_ms: 86_400_000,
            transaction_state_partitions: 10,
            transaction_state_replication_factor: 3,
            transaction_max_timeout_ms: 900_000,
            transaction_abort_timed_out_interval_ms: 10_000,
            transactional_id_expiration_ms: 604_800_000,
            log: LogConfig::default(),
        }
    }
}

/// Per-topic settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopicConfig {
    pub partitions: i32,
    pub replication_factor: i32,
    pub min_insync_replicas: i32,
    pub unclean_leader_election: bool,
    /// `segment.bytes` for this topic (the cluster's log default when unset).
    #[serde(default)]
    pub segment_bytes: Option<u64>,
    /// `retention.ms` for this topic.
    #[serde(default)]
    pub retention_ms: Option<i64>,
    /// `retention.bytes` for this topic.
    #[serde(default)]
    pub retention_bytes: Option<i64>,
    /// `cleanup.policy` for this topic.
    #[serde(default)]
    pub cleanup_policy: Option<CleanupPolicy>,
    /// `delete.retention.ms` for this topic.
    #[serde(default)]
    pub delete_retention_ms: Option<i64>,
    /// `min.cleanable.dirty.ratio` for this topic.
    #[serde(default)]
    pub min_cleanable_dirty_ratio: Option<f64>,
    /// `min.compaction.lag.ms` for this topic.
    #[serde(default)]
    pub min_compaction_lag_ms: Option<i64>,
    /// `max.compaction.lag.ms` for this topic.
    #[serde(default)]
    pub max_compaction_lag_ms: Option<i64>,
    /// `segment.ms` for this topic.
    #[serde(default)]
    pub segment_ms: Option<i64>,
    /// `max.message.bytes` for this topic.
    #[serde(default)]
    pub max_message_bytes: Option<u64>,
    /// `leader.replication.throttled.replicas`: the replicas (`partition:broker` pairs or `*`)
    /// whose leaders' serving counts against their brokers' leader throttle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_throttled_replicas: Option<String>,
    /// `follower.replication.throttled.replicas`: the replicas whose fetching counts against
    /// their brokers' follower throttle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follower_throttled_replicas: Option<String>,
    /// Which of the settings that always hold a value (`min.insync.replicas`,
    /// `unclean.leader.election.enable`) this topic was given itself; the others follow the
    /// cluster's (DescribeConfigs tells a topic override from a default by this).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub explicit: BTreeSet<String>,
}

// `min_cleanable_dirty_ratio` is validated (through `LogConfig::validate`) to be a number in
// [0, 1], never NaN.
impl Eq for TopicConfig {}

impl TopicConfig {
    /// Sets the topic config Kafka calls `name` (`retention.ms`, `cleanup.policy`...) from its
    /// text, or says why it cannot. Only the type is checked here; the ranges are
    /// [`LogConfig::validate`]'s, on the topic's effective log settings.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        fn parse<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, String> {
            value
                .trim()
                .parse()
                .map_err(|_| format!("invalid value {value:?} for {name}"))
        }
        match name {
            "min.insync.replicas" => {
                self.min_insync_replicas = parse(name, value)?;
                self.explicit.insert(name.to_string());
            }
            "unclean.leader.election.enable" => {
                self.unclean_leader_election = parse(name, value)?;
                self.explicit.insert(name.to_string());
            }
            "retention.ms" => self.retention_ms = Some(parse(name, value)?),
            "retention.bytes" => self.retention_bytes = Some(parse(name, value)?),
            "segment.bytes" => self.segment_bytes = Some(parse(name, value)?),
            "cleanup.policy" => self.cleanup_policy = Some(value.parse()?),
            "delete.retention.ms" => self.delete_retention_ms = Some(parse(name, value)?),
            "min.cleanable.dirty.ratio" => {
                let ratio: f64 = parse(name, value)?;
                if ratio.is_nan() {
                    return Err(format!("invalid value {value:?} for {name}"));
                }
                self.min_cleanable_dirty_ratio = Some(ratio);
            }
            "min.compaction.lag.ms" => self.min_compaction_lag_ms = Some(parse(name, value)?),
            "max.compaction.lag.ms" => self.max_compaction_lag_ms = Some(parse(name, value)?),
            "segment.ms" => self.segment_ms = Some(parse(name, value)?),
            "max.message.bytes" => self.max_message_bytes = Some(parse(name, value)?),
            "leader.replication.throttled.replicas" | "follower.replication.throttled.replicas" => {
                ThrottledReplicas::parse(value)?;
                let list = Some(value.split(',').map(str::trim).collect::<Vec<_>>().join(","));
                if name.starts_with("leader") {
                    self.leader_throttled_replicas = list;
                } else {
                    self.follower_throttled_replicas = list;
                }
            }
            other => return Err(format!("topic config {other} is not supported by kdeck")),
        }
        Ok(())
    }

    /// Removes the topic's own value of `name`: it follows the cluster's again
    /// (`cluster_min_insync` is the cluster's `min.insync.replicas`).
    pub fn unset(&mut self, name: &str, cluster_min_insync: i32) -> Result<(), String> {
        match name {
            "min.insync.replicas" => self.min_insync_replicas = cluster_min_insync,
            "unclean.leader.election.enable" => self.unclean_leader_election = false,
            "retention.ms" => self.retention_ms = None,
            "retention.bytes" => self.retention_bytes = None,
            "segment.bytes" => self.segment_bytes = None,
            "segment.ms" => self.segment_ms = None,
            "max.message.bytes" => self.max_message_bytes = None,
            "cleanup.policy" => self.cleanup_policy = None,
            "delete.retention.ms" => self.delete_retention_ms = None,
            "min.cleanable.dirty.ratio" => self.min_cleanable_dirty_ratio = None,
            "min.compaction.lag.ms" => self.min_compaction_lag_ms = None,
            "max.compaction.lag.ms" => self.max_compaction_lag_ms = None,
            "leader.replication.throttled.replicas" => self.leader_throttled_replicas = None,
            "follower.replication.throttled.replicas" => self.follower_throttled_replicas = None,
            other => return Err(format!("topic config {other} is not supported by kdeck")),
        }
        self.explicit.remove(name);
        Ok(())
    }

    /// The topic's own value of `name` as Kafka writes it, or `None` where it follows the
    /// cluster's (or kdeck does not know the name).
    pub fn get(&self, name: &str) -> Option<String> {
        fn text<T: ToString>(v: Option<T>) -> Option<String> {
            v.map(|v| v.to_string())
        }
        match name {
            "min.insync.replicas" | "unclean.leader.election.enable" if !self.explicit.contains(name) => None,
            "min.insync.replicas" => Some(self.min_insync_replicas.to_string()),
            "unclean.leader.election.enable" => Some(self.unclean_leader_election.to_string()),
            "retention.ms" => text(self.retention_ms),
            "retention.bytes" => text(self.retention_bytes),
            "segment.bytes" => text(self.segment_bytes),
            "segment.ms" => text(self.segment_ms),
            "max.message.bytes" => text(self.max_message_bytes),
            "cleanup.policy" => self.cleanup_policy.map(|p| p.as_str().to_string()),
            "delete.retention.ms" => text(self.delete_retention_ms),
            "min.cleanable.dirty.ratio" => text(self.min_cleanable_dirty_ratio),
            "min.compaction.lag.ms" => text(self.min_compaction_lag_ms),
            "max.compaction.lag.ms" => text(self.max_compaction_lag_ms),
            "leader.replication.throttled.replicas" => self.leader_throttled_replicas.clone(),
            "follower.replication.throttled.replicas" => self.follower_throttled_replicas.clone(),
            _ => None,
        }
    }

    /// This topic's `unclean.leader.election.enable`: its own when it has one (Kafka's rule:
    /// a topic's `false` wins over the cluster's `true`), else the cluster's.
    pub fn unclean_election(&self, cluster_default: bool) -> bool {
        if self.explicit.contains("unclean.leader.election.enable") {
            self.unclean_leader_election
        } else {
            cluster_default
        }
    }

    pub fn new(partitions: i32, replication_factor: i32) -> Self {
        TopicConfig {
            partitions,
            replication_factor,
            min_insync_replicas: 1,
            unclean_leader_election: false,
            segment_bytes: None,
            retention_ms: None,
            retention_bytes: None,
            cleanup_policy: None,
            delete_retention_ms: None,
            min_cleanable_dirty_ratio: None,
            min_compaction_lag_ms: None,
            max_compaction_lag_ms: None,
            segment_ms: None,
            max_message_bytes: None,
            leader_throttled_replicas: None,
            follower_throttled_replicas: None,
            explicit: BTreeSet::new(),
        }
    }

    pub fn with_segment_bytes(mut self, bytes: u64) -> Self {
        self.segment_bytes = Some(bytes);
        self
    }

    pub fn with_cleanup_policy(mut self, policy: CleanupPolicy) -> Self {
        self.cleanup_policy = Some(policy);
        self
    }

    pub fn with_retention(mut self, ms: Option<i64>, bytes: Option<i64>) -> Self {
        self.retention_ms = ms;
        self.retention_bytes = bytes;
        self
    }

    /// The cluster's log defaults with this topic's overrides.
    pub fn log_config(&self, defaults: &LogConfig) -> LogConfig {
        LogConfig {
            segment_bytes: self.segment_bytes.unwrap_or(defaults.segment_bytes),
            retention_ms: self.retention_ms.unwrap_or(defaults.retention_ms),
            retention_bytes: self.retention_bytes.unwrap_or(defaults.retention_bytes),
            cleanup_policy: self.cleanup_policy.unwrap_or(defaults.cleanup_policy),
            delete_retention_ms: self.delete_retention_ms.unwrap_or(defaults.delete_retention_ms),
            min_cleanable_dirty_ratio: self
                .min_cleanable_dirty_ratio
                .unwrap_or(defaults.min_cleanable_dirty_ratio),
            min_compaction_lag_ms: self.min_compaction_lag_ms.unwrap_or(defaults.min_compaction_lag_ms),
            max_compaction_lag_ms: self.max_compaction_lag_ms.unwrap_or(defaults.max_compaction_lag_ms),
            segment_ms: self.segment_ms.unwrap_or(defaults.segment_ms),
            max_message_bytes: self.max_message_bytes.unwrap_or(defaults.max_message_bytes),
            ..defaults.clone()
        }
    }

    /// The topic's own `min.insync.replicas`.
    pub fn with_min_insync_replicas(mut self, n: i32) -> Self {
        self.min_insync_replicas = n;
        self.explicit.insert("min.insync.replicas".into());
        self
    }

    /// The topic's own `unclean.leader.election.enable`.
    pub fn with_unclean_leader_election(mut self, on: bool) -> Self {
        self.unclean_leader_election = on;
        self.explicit.insert("unclean.leader.election.enable".into());
        self
    }

    /// The cluster's `min.insync.replicas`, which this topic follows until it is given its own.
    pub fn with_default_min_insync_replicas(mut self, n: i32) -> Self {
        self.min_insync_replicas = n;
        self
    }
}
