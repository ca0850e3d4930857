//! Configs as the console and the CLI show them, whichever source filled them: each config's
//! name, value and where the value comes from (Kafka's config sources, in three words).

use super::BrokerId;

/// Where a config's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigOrigin {
    /// The topic's own value (Kafka's DYNAMIC_TOPIC_CONFIG).
    Topic,
    /// A cluster-wide default set at run time (DYNAMIC_DEFAULT_BROKER_CONFIG).
    Cluster,
    /// One broker's own value set at run time (DYNAMIC_BROKER_CONFIG).
    Broker,
    /// The broker's configuration file (STATIC_BROKER_CONFIG).
    Static,
    /// The built-in default (DEFAULT_CONFIG).
    Default,
    /// Any other source a broker names.
    Other,
}

impl ConfigOrigin {
    /// Kafka's `ConfigSource` code, as DescribeConfigs answers it.
    pub fn from_kafka(source: i8) -> ConfigOrigin {
        match source {
            1 => ConfigOrigin::Topic,
            2 => ConfigOrigin::Broker,
            3 => ConfigOrigin::Cluster,
            4 => ConfigOrigin::Static,
            5 => ConfigOrigin::Default,
            _ => ConfigOrigin::Other,
        }
    }

    /// Kafka's name of the source (what `kafka-configs.sh --describe --all` prints).
    pub fn kafka_name(self) -> &'static str {
        match self {
            ConfigOrigin::Topic => "DYNAMIC_TOPIC_CONFIG",
            ConfigOrigin::Broker => "DYNAMIC_BROKER_CONFIG",
            ConfigOrigin::Cluster => "DYNAMIC_DEFAULT_BROKER_CONFIG",
            ConfigOrigin::Static => "STATIC_BROKER_CONFIG",
            ConfigOrigin::Default => "DEFAULT_CONFIG",
            ConfigOrigin::Other => "UNKNOWN",
        }
    }

    /// The console's short word for it.
    pub fn word(self) -> &'static str {
        match self {
            ConfigOrigin::Topic => "topic override",
            ConfigOrigin::Broker => "broker override",
            ConfigOrigin::Cluster => "cluster default",
            ConfigOrigin::Static => "static",
            ConfigOrigin::Default => "default",
            ConfigOrigin::Other => "other",
        }
    }

    /// Whether removing it (DELETE) changes anything: it is an override set at run time.
    pub fn is_override(self) -> bool {
        matches!(self, ConfigOrigin::Topic | ConfigOrigin::Broker | ConfigOrigin::Cluster)
    }
}

/// One config as it is in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigRow {
    pub name: String,
    /// `None`: a sensitive value the broker does not show.
    pub value: Option<String>,
    pub origin: ConfigOrigin,
    pub read_only: bool,
}

/// Whose configs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ConfigTarget {
    Topic(String),
    Broker(BrokerId),
    /// The cluster-wide broker defaults (Kafka's `--entity-default`).
    ClusterDefault,
}

impl std::fmt::Display for ConfigTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigTarget::Topic(t) => write!(f, "topic {t}"),
            ConfigTarget::Broker(id) => write!(f, "broker {id}"),
            ConfigTarget::ClusterDefault => write!(f, "the cluster's defaults"),
        }
    }
}

/// The topic configs kdeck's embedded cluster honours (the names `:config` completes).
pub const TOPIC_CONFIGS: &[&str] = &[
    "cleanup.policy",
    "delete.retention.ms",
    "max.compaction.lag.ms",
    "max.message.bytes",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "min.insync.replicas",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.ms",
    "unclean.leader.election.enable",
];

/// The cluster-wide defaults the embedded cluster changes live.
pub const CLUSTER_CONFIGS: &[&str] = &[
    "auto.leader.rebalance.enable",
    "log.retention.bytes",
    "log.retention.ms",
    "log.segment.bytes",
    "message.max.bytes",
    "unclean.leader.election.enable",
];

/// A source's answer to "show me these configs": every config in force, or why not.
pub type ConfigsAnswer = Result<Vec<ConfigRow>, String>;

/// What a source that cannot describe configs answers.
pub const NO_CONFIGS: &str = "this source cannot show configs";
