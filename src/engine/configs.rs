//! Topic and cluster configs as Kafka's DescribeConfigs and IncrementalAlterConfigs see them:
//! each config's value in force, where it comes from (the topic's own, a cluster-wide default
//! set at run time, the broker's configuration file), and the rules an alteration must pass
//! before the controller writes it into the metadata. The wire layer, the console and the CLI
//! all read and change configs through these, so they agree on names, sources and refusals.

use std::collections::{BTreeMap, BTreeSet};

use super::BrokerId;
use super::config::{ClusterConfig, TopicConfig};
use super::controller::MetadataImage;
use super::protocol::ErrorCode;
use crate::storage::{CleanupPolicy, LogConfig};

/// Where a config's value comes from (Kafka's `ConfigSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    /// The topic's own value (`DYNAMIC_TOPIC_CONFIG`).
    TopicOverride,
    /// One broker's own value set at run time (`DYNAMIC_BROKER_CONFIG`).
    DynamicBroker,
    /// A cluster-wide default set at run time (`DYNAMIC_DEFAULT_BROKER_CONFIG`).
    DynamicClusterDefault,
    /// The broker's configuration file (`STATIC_BROKER_CONFIG`).
    StaticBroker,
    /// kdeck's built-in default (`DEFAULT_CONFIG`).
    Default,
}

/// A config's type as DescribeConfigs v3+ names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean,
    String,
    Int,
    Long,
    Double,
    List,
}

/// One config of a topic or of the cluster, as it is in force now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub name: String,
    pub value: String,
    pub source: ConfigSource,
    pub kind: ConfigType,
    /// Whether kdeck can change it while the cluster runs.
    pub read_only: bool,
}

/// What an alteration does to one config (IncrementalAlterConfigs' operations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterOp {
    Set(String),
    /// Back to the default.
    Delete,
    /// Adds items to a list config (`cleanup.policy`).
    Append(String),
    /// Removes items from a list config.
    Subtract(String),
}

/// One config to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigAlteration {
    pub name: String,
    pub op: AlterOp,
}

impl ConfigAlteration {
    pub fn set(name: impl Into<String>, value: impl Into<String>) -> Self {
        ConfigAlteration {
            name: name.into(),
            op: AlterOp::Set(value.into()),
        }
    }

    pub fn delete(name: impl Into<String>) -> Self {
        ConfigAlteration {
            name: name.into(),
            op: AlterOp::Delete,
        }
    }
}

/// Whose configs: a topic's, one broker's, or the cluster-wide broker defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigResource {
    Topic(String),
    Broker(i32),
    ClusterDefault,
}

/// A refused describe or alteration: the Kafka error code and the reason in words.
pub type ConfigError = (ErrorCode, String);

/// The topic configs kdeck honours, with their types and the broker config that gives their
/// default (Kafka's names for both).
const TOPIC_CONFIGS: &[(&str, ConfigType, &str)] = &[
    ("cleanup.policy", ConfigType::List, "log.cleanup.policy"),
    (
        "delete.retention.ms",
        ConfigType::Long,
        "log.cleaner.delete.retention.ms",
    ),
    (FOLLOWER_THROTTLED_REPLICAS, ConfigType::List, ""),
    (LEADER_THROTTLED_REPLICAS, ConfigType::List, ""),
    (
        "max.compaction.lag.ms",
        ConfigType::Long,
        "log.cleaner.max.compaction.lag.ms",
    ),
    ("max.message.bytes", ConfigType::Int, "message.max.bytes"),
    (
        "min.cleanable.dirty.ratio",
        ConfigType::Double,
        "log.cleaner.min.cleanable.ratio",
    ),
    (
        "min.compaction.lag.ms",
        ConfigType::Long,
        "log.cleaner.min.compaction.lag.ms",
    ),
    ("min.insync.replicas", ConfigType::Int, "min.insync.replicas"),
    ("retention.bytes", ConfigType::Long, "log.retention.bytes"),
    ("retention.ms", ConfigType::Long, "log.retention.ms"),
    ("segment.bytes", ConfigType::Int, "log.segment.bytes"),
    ("segment.ms", ConfigType::Long, "log.roll.ms"),
    (
        "unclean.leader.election.enable",
        ConfigType::Boolean,
        "unclean.leader.election.enable",
    ),
];

/// The cluster-wide broker defaults kdeck changes while it runs (Kafka's dynamic
/// cluster-wide configs). The log ones are the defaults of every topic without its own.
const DYNAMIC_CLUSTER_CONFIGS: &[(&str, ConfigType)] = &[
    ("auto.leader.rebalance.enable", ConfigType::Boolean),
    (FOLLOWER_THROTTLED_RATE, ConfigType::Long),
    (LEADER_THROTTLED_RATE, ConfigType::Long),
    ("log.retention.bytes", ConfigType::Long),
    ("log.retention.ms", ConfigType::Long),
    ("log.segment.bytes", ConfigType::Int),
    ("message.max.bytes", ConfigType::Int),
    ("unclean.leader.election.enable", ConfigType::Boolean),
];

pub use crate::kafka::reassign::{
    FOLLOWER_THROTTLED_RATE, FOLLOWER_THROTTLED_REPLICAS, LEADER_THROTTLED_RATE, LEADER_THROTTLED_REPLICAS,
};
/// Kafka's default of the throttled rates (`Long.MAX_VALUE`: unbounded).
const UNBOUNDED_RATE: &str = "9223372036854775807";

/// The configs one broker can be given of its own at run time (Kafka's per-broker dynamic
/// configs that kdeck honours): the replication throttles.
const PER_BROKER_CONFIGS: &[&str] = &[FOLLOWER_THROTTLED_RATE, LEADER_THROTTLED_RATE];

fn is_rate(name: &str) -> bool {
    PER_BROKER_CONFIGS.contains(&name)
}

/// A throttled rate's value: bytes per second, a whole number from 0 (Kafka's `atLeast(0)`).
fn parse_rate(name: &str, value: &str) -> Result<u64, String> {
    value
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|v| *v <= i64::MAX as u64)
        .ok_or_else(|| format!("invalid value {value:?} for {name}: bytes per second, a whole number from 0"))
}

/// A broker's replication throttle rate `name` in force, in bytes/s: its own, else the
/// cluster-wide default, else none (unbounded).
pub fn replication_rate(image: &MetadataImage, broker: BrokerId, name: &str) -> Option<u64> {
    let value = image
        .broker_configs
        .get(&broker)
        .and_then(|c| c.get(name))
        .or_else(|| image.cluster_configs.get(name))?;
    parse_rate(name, value).ok().filter(|v| *v < i64::MAX as u64)
}

/// The names of the topic configs kdeck honours, sorted.
pub fn topic_config_names() -> impl Iterator<Item = &'static str> {
    TOPIC_CONFIGS.iter().map(|(name, ..)| *name)
}

/// The names of the cluster-wide defaults kdeck changes live, sorted.
pub fn cluster_config_names() -> impl Iterator<Item = &'static str> {
    DYNAMIC_CLUSTER_CONFIGS.iter().map(|(name, _)| *name)
}

/// Sets the run-time log default `name` on `log`, or says why it cannot.
fn set_log_default(log: &mut LogConfig, name: &str, value: &str) -> Result<(), String> {
    fn parse<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, String> {
        value
            .trim()
            .parse()
            .map_err(|_| format!("invalid value {value:?} for {name}"))
    }
    match name {
        "log.retention.ms" => log.retention_ms = parse(name, value)?,
        "log.retention.bytes" => log.retention_bytes = parse(name, value)?,
        "log.segment.bytes" => log.segment_bytes = parse(name, value)?,
        "message.max.bytes" => log.max_message_bytes = parse(name, value)?,
        other => return Err(format!("{other} is not a log default")),
    }
    Ok(())
}

/// The log settings of a topic without its own: the configuration file's, with the
/// cluster-wide defaults set at run time.
pub fn cluster_log_defaults(image: &MetadataImage, configured: &LogConfig) -> LogConfig {
    let mut log = configured.clone();
    for (name, value) in &image.cluster_configs {
        // Every stored value passed `alter_cluster`'s checks; one that would not (a
        // hand-edited file) leaves the configured value.
        let _ = set_log_default(&mut log, name, value);
    }
    log
}

/// A topic's log settings in force: its own, else the cluster's defaults.
pub fn topic_log_config(image: &MetadataImage, configured: &LogConfig, topic: &TopicConfig) -> LogConfig {
    topic.log_config(&cluster_log_defaults(image, configured))
}

/// The cluster's `unclean.leader.election.enable`: set at run time, or configured.
pub fn unclean_default(image: &MetadataImage, config: &ClusterConfig) -> bool {
    image.unclean_leader_election.unwrap_or(config.unclean_leader_election)
}

/// Every config of a topic, as DescribeConfigs shows it.
pub fn describe_topic(image: &MetadataImage, config: &ClusterConfig, topic: &TopicConfig) -> Vec<ConfigEntry> {
    let log = topic_log_config(image, &config.log, topic);
    TOPIC_CONFIGS
        .iter()
        .map(|(name, kind, broker_name)| {
            let value = match *name {
                "cleanup.policy" => log.cleanup_policy.as_str().to_string(),
                "delete.retention.ms" => log.delete_retention_ms.to_string(),
                "max.compaction.lag.ms" => log.max_compaction_lag_ms.to_string(),
                "max.message.bytes" => log.max_message_bytes.to_string(),
                "min.cleanable.dirty.ratio" => log.min_cleanable_dirty_ratio.to_string(),
                "min.compaction.lag.ms" => log.min_compaction_lag_ms.to_string(),
                "min.insync.replicas" => topic.min_insync_replicas.to_string(),
                "retention.bytes" => log.retention_bytes.to_string(),
                "retention.ms" => log.retention_ms.to_string(),
                "segment.bytes" => log.segment_bytes.to_string(),
                "segment.ms" => log.segment_ms.to_string(),
                LEADER_THROTTLED_REPLICAS | FOLLOWER_THROTTLED_REPLICAS => topic.get(name).unwrap_or_default(),
                _ => topic.unclean_election(unclean_default(image, config)).to_string(),
            };
            let dynamic_default = image.cluster_configs.contains_key(*broker_name)
                || (*broker_name == "unclean.leader.election.enable" && image.unclean_leader_election.is_some());
            let source = if topic.get(name).is_some() {
                ConfigSource::TopicOverride
            } else if dynamic_default {
                ConfigSource::DynamicClusterDefault
            } else {
                ConfigSource::Default
            };
            ConfigEntry {
                name: name.to_string(),
                value,
                source,
                kind: *kind,
                read_only: false,
            }
        })
        .collect()
}

/// The cluster-wide broker configs: first those kdeck changes live (with their source), then
/// the configuration file's that only a restart changes.
pub fn describe_cluster(image: &MetadataImage, config: &ClusterConfig, auto_rebalance: bool) -> Vec<ConfigEntry> {
    let log = cluster_log_defaults(image, &config.log);
    let mut entries: Vec<ConfigEntry> = DYNAMIC_CLUSTER_CONFIGS
        .iter()
        .map(|(name, kind)| {
            let (value, dynamic) = match *name {
                "auto.leader.rebalance.enable" => (
                    auto_rebalance.to_string(),
                    auto_rebalance != config.auto_leader_rebalance,
                ),
                "unclean.leader.election.enable" => (
                    unclean_default(image, config).to_string(),
                    image.unclean_leader_election.is_some(),
                ),
                "log.retention.bytes" => (
                    log.retention_bytes.to_string(),
                    image.cluster_configs.contains_key(*name),
                ),
                "log.retention.ms" => (log.retention_ms.to_string(), image.cluster_configs.contains_key(*name)),
                "log.segment.bytes" => (log.segment_bytes.to_string(), image.cluster_configs.contains_key(*name)),
                LEADER_THROTTLED_RATE | FOLLOWER_THROTTLED_RATE => match image.cluster_configs.get(*name) {
                    Some(v) => (v.clone(), true),
                    None => (UNBOUNDED_RATE.to_string(), false),
                },
                _ => (
                    log.max_message_bytes.to_string(),
                    image.cluster_configs.contains_key(*name),
                ),
            };
            ConfigEntry {
                name: name.to_string(),
                value,
                source: if dynamic {
                    ConfigSource::DynamicClusterDefault
                } else if is_rate(name) {
                    ConfigSource::Default
                } else {
                    ConfigSource::StaticBroker
                },
                kind: *kind,
                read_only: false,
            }
        })
        .collect();
    let fixed = |name: &str, value: String, kind: ConfigType| ConfigEntry {
        name: name.to_string(),
        value,
        source: ConfigSource::StaticBroker,
        kind,
        read_only: true,
    };
    entries.extend([
        fixed(
            "log.cleanup.policy",
            log.cleanup_policy.as_str().into(),
            ConfigType::List,
        ),
        fixed("log.roll.ms", log.segment_ms.to_string(), ConfigType::Long),
        fixed(
            "min.insync.replicas",
            config.min_insync_replicas.to_string(),
            ConfigType::Int,
        ),
        fixed(
            "offsets.topic.num.partitions",
            config.offsets_topic_partitions.to_string(),
            ConfigType::Int,
        ),
        fixed(
            "replica.lag.time.max.ms",
            config.replica_lag_time_max_ms.to_string(),
            ConfigType::Long,
        ),
    ]);
    entries
}

/// One broker's configs: the cluster's, with the broker's own throttle rates where it has
/// them (Kafka's DYNAMIC_BROKER_CONFIG wins over the cluster-wide default).
pub fn describe_broker(
    image: &MetadataImage,
    config: &ClusterConfig,
    auto_rebalance: bool,
    broker: BrokerId,
) -> Vec<ConfigEntry> {
    let mut entries = describe_cluster(image, config, auto_rebalance);
    if let Some(own) = image.broker_configs.get(&broker) {
        for e in entries.iter_mut() {
            if let Some(v) = own.get(&e.name) {
                e.value = v.clone();
                e.source = ConfigSource::DynamicBroker;
            }
        }
    }
    entries
}

/// One broker's own configs after `alterations`, checked: only the replication throttle
/// rates are a broker's own in kdeck. Returns them as they will be stored.
pub fn alter_broker(
    image: &MetadataImage,
    config: &ClusterConfig,
    broker: BrokerId,
    alterations: &[ConfigAlteration],
) -> Result<BTreeMap<String, String>, ConfigError> {
    check_duplicates(alterations)?;
    let mut own = image.broker_configs.get(&broker).cloned().unwrap_or_default();
    for a in alterations {
        if !is_rate(&a.name) {
            let known = describe_cluster(image, config, config.auto_leader_rebalance)
                .iter()
                .any(|e| e.name == a.name);
            return Err(if known {
                (
                    ErrorCode::InvalidRequest,
                    format!(
                        "{} is not a per-broker config in kdeck: alter the cluster-wide default (an empty broker name) instead of broker {broker}'s",
                        a.name
                    ),
                )
            } else {
                (
                    ErrorCode::InvalidConfig,
                    format!("Unknown broker config name: {}", a.name),
                )
            });
        }
        match &a.op {
            AlterOp::Set(v) => {
                parse_rate(&a.name, v).map_err(|e| (ErrorCode::InvalidConfig, e))?;
                own.insert(a.name.clone(), v.trim().to_string());
            }
            AlterOp::Delete => {
                own.remove(&a.name);
            }
            AlterOp::Append(_) | AlterOp::Subtract(_) => {
                return Err((
                    ErrorCode::InvalidConfig,
                    format!(
                        "Config value append or subtract is not allowed for config key: {}",
                        a.name
                    ),
                ));
            }
        }
    }
    Ok(own)
}

/// Refuses a resource's alterations naming one config twice (Kafka: INVALID_REQUEST).
fn check_duplicates(alterations: &[ConfigAlteration]) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    for a in alterations {
        if !seen.insert(a.name.as_str()) {
            return Err((
                ErrorCode::InvalidRequest,
                format!("Error due to duplicate config keys: {}", a.name),
            ));
        }
    }
    Ok(())
}

/// `cleanup.policy` after APPEND or SUBTRACT of `items` (Kafka's list semantics: an append
/// adds what is missing, a subtract removes what is there).
fn alter_list(current: CleanupPolicy, items: &str, append: bool) -> Result<CleanupPolicy, String> {
    let mut words: Vec<&str> = current.as_str().split(',').collect();
    for item in items.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if append {
            if !words.contains(&item) {
                words.push(item);
            }
        } else {
            words.retain(|w| *w != item);
        }
    }
    if words.is_empty() {
        return Err("cleanup.policy cannot be empty".into());
    }
    words.join(",").parse()
}

/// A plain list config after APPEND or SUBTRACT of `items` (a throttled replicas list).
fn alter_items(current: &str, items: &str, append: bool) -> String {
    let mut words: Vec<&str> = current.split(',').map(str::trim).filter(|w| !w.is_empty()).collect();
    for item in items.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if append {
            if !words.contains(&item) {
                words.push(item);
            }
        } else {
            words.retain(|w| *w != item);
        }
    }
    words.join(",")
}

/// A topic's config after `alterations`, checked as the controller checks it: the names,
/// the operations, the values' types and ranges. Returns the new config and each changed
/// config's name with its value in force afterwards.
pub fn alter_topic(
    image: &MetadataImage,
    config: &ClusterConfig,
    topic: &str,
    alterations: &[ConfigAlteration],
) -> Result<(TopicConfig, Vec<(String, String)>), ConfigError> {
    let Some(meta) = image.topics.get(topic) else {
        return Err((
            ErrorCode::UnknownTopicOrPartition,
            format!("topic {topic} does not exist"),
        ));
    };
    check_duplicates(alterations)?;
    let invalid = |message: String| (ErrorCode::InvalidConfig, message);
    let mut next = meta.config.clone();
    for a in alterations {
        let Some((_, kind, _)) = TOPIC_CONFIGS.iter().find(|(n, ..)| *n == a.name) else {
            return Err(invalid(format!("Unknown topic config name: {}", a.name)));
        };
        match &a.op {
            AlterOp::Set(value) => next.set(&a.name, value).map_err(invalid)?,
            AlterOp::Delete => next.unset(&a.name, config.min_insync_replicas).map_err(invalid)?,
            AlterOp::Append(items) | AlterOp::Subtract(items) => {
                if *kind != ConfigType::List {
                    let op = if matches!(a.op, AlterOp::Append(_)) {
                        "append"
                    } else {
                        "subtract"
                    };
                    return Err(invalid(format!(
                        "Config value {op} is not allowed for config key: {}",
                        a.name
                    )));
                }
                let append = matches!(a.op, AlterOp::Append(_));
                if a.name == "cleanup.policy" {
                    let current = topic_log_config(image, &config.log, &next).cleanup_policy;
                    let policy = alter_list(current, items, append).map_err(invalid)?;
                    next.set(&a.name, policy.as_str()).map_err(invalid)?;
                } else {
                    let current = next.get(&a.name).unwrap_or_default();
                    next.set(&a.name, &alter_items(&current, items, append))
                        .map_err(invalid)?;
                }
            }
        }
    }
    topic_log_config(image, &config.log, &next)
        .validate()
        .map_err(|e| invalid(e.to_string()))?;
    let rf = next.replication_factor;
    if !(1..=rf).contains(&next.min_insync_replicas) {
        return Err(invalid(format!(
            "min.insync.replicas of {topic} must be between 1 and its replication factor {rf}, not {}",
            next.min_insync_replicas
        )));
    }
    let after = describe_topic(image, config, &next);
    let before = describe_topic(image, config, &meta.config);
    let changed = after
        .into_iter()
        .zip(before)
        .filter(|(a, b)| a != b)
        .map(|(a, _)| (a.name, a.value))
        .collect();
    Ok((next, changed))
}

/// The cluster-wide defaults after `alterations`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterAlteration {
    /// The run-time log defaults (`log.retention.ms`...) as they will be stored.
    pub cluster_configs: BTreeMap<String, String>,
    /// The run-time `unclean.leader.election.enable` (`None`: the configuration file's).
    pub unclean_leader_election: Option<bool>,
    /// `auto.leader.rebalance.enable` when the alterations name it (`None` inside: back to
    /// the configuration file's).
    pub auto_rebalance: Option<Option<bool>>,
}

/// The cluster-wide defaults after `alterations`, checked: only the configs kdeck changes
/// live, values of the right type, log defaults every topic without its own could use.
pub fn alter_cluster(
    image: &MetadataImage,
    config: &ClusterConfig,
    alterations: &[ConfigAlteration],
) -> Result<ClusterAlteration, ConfigError> {
    check_duplicates(alterations)?;
    let mut next = ClusterAlteration {
        cluster_configs: image.cluster_configs.clone(),
        unclean_leader_election: image.unclean_leader_election,
        auto_rebalance: None,
    };
    for a in alterations {
        let known = DYNAMIC_CLUSTER_CONFIGS.iter().find(|(n, _)| *n == a.name);
        let Some((name, kind)) = known else {
            let fixed = describe_cluster(image, config, config.auto_leader_rebalance)
                .iter()
                .any(|e| e.name == a.name);
            return Err(if fixed {
                (
                    ErrorCode::InvalidRequest,
                    format!(
                        "Cannot update these configs dynamically: {} (kdeck reads it from its configuration file at start)",
                        a.name
                    ),
                )
            } else {
                (
                    ErrorCode::InvalidConfig,
                    format!("Unknown broker config name: {}", a.name),
                )
            });
        };
        let value = match &a.op {
            AlterOp::Set(value) => Some(value.trim().to_string()),
            AlterOp::Delete => None,
            AlterOp::Append(_) | AlterOp::Subtract(_) => {
                return Err((
                    ErrorCode::InvalidConfig,
                    format!("Config value append or subtract is not allowed for config key: {name}"),
                ));
            }
        };
        let bad = |v: &str| (ErrorCode::InvalidConfig, format!("invalid value {v:?} for {name}"));
        match (*kind, value) {
            (ConfigType::Boolean, Some(v)) => {
                let on: bool = v.parse().map_err(|_| bad(&v))?;
                if *name == "auto.leader.rebalance.enable" {
                    next.auto_rebalance = Some(Some(on));
                } else {
                    next.unclean_leader_election = Some(on);
                }
            }
            (ConfigType::Boolean, None) => {
                if *name == "auto.leader.rebalance.enable" {
                    next.auto_rebalance = Some(None);
                } else {
                    next.unclean_leader_election = None;
                }
            }
            (_, Some(v)) if is_rate(name) => {
                parse_rate(name, &v).map_err(|e| (ErrorCode::InvalidConfig, e))?;
                next.cluster_configs.insert(name.to_string(), v);
            }
            (_, Some(v)) => {
                set_log_default(&mut config.log.clone(), name, &v).map_err(|_| bad(&v))?;
                next.cluster_configs.insert(name.to_string(), v);
            }
            (_, None) => {
                next.cluster_configs.remove(*name);
            }
        }
    }
    let probe = MetadataImage {
        cluster_configs: next.cluster_configs.clone(),
        ..MetadataImage::default()
    };
    cluster_log_defaults(&probe, &config.log)
        .validate()
        .map_err(|e| (ErrorCode::InvalidConfig, e.to_string()))?;
    // Every topic without its own value takes the new default: each must still be valid.
    for (name, t) in &image.topics {
        if let Err(e) = topic_log_config(&probe, &config.log, &t.config).validate() {
            return Err((ErrorCode::InvalidConfig, format!("topic {name}: {e}")));
        }
    }
    Ok(next)
}
