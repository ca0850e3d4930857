//! Every command and flag of the `kdeck` binary.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{ArgGroup, Args, Parser, Subcommand};

use crate::config::KdeckConfig;
use crate::engine::Acks;
use crate::kafka::reset::{self, ResetSpec};
use crate::remote::RemoteConfig;
use crate::storage::records::Compression;

#[derive(Debug, Parser)]
#[command(
    name = "kdeck",
    version,
    about = "A terminal console with an embedded, replicated Kafka-style cluster"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Without a command, kdeck opens the console on an embedded cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// ...or, with `--bootstrap`, on an external Kafka cluster.
    #[command(flatten, next_help_heading = "External cluster")]
    pub remote: ConsoleRemoteArgs,
}

/// The console on an external cluster.
#[derive(Debug, Clone, Default, Args)]
pub struct ConsoleRemoteArgs {
    /// Open the console on the external Kafka cluster at HOST:PORT[,HOST:PORT...] instead of
    /// the embedded one (default: [remote] bootstrap of the configuration, when set).
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["data_dir", "ephemeral", "brokers", "no_demo"])]
    pub bootstrap: Option<String>,
    /// Open the console on the cluster of profile NAME ([clusters.NAME] in the configuration:
    /// its bootstrap, TLS and SASL; the flags below still override them).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["bootstrap", "data_dir", "ephemeral", "brokers", "no_demo"])]
    pub cluster: Option<String>,
    /// Offer no action that changes the cluster (produce, create and delete topics, elections).
    #[arg(long)]
    pub read_only: bool,
    #[command(flatten)]
    pub security: SecurityArgs,
}

/// The external cluster the console opens on: its client settings, whether it is read-only,
/// and the profile's name when it is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleTarget {
    pub remote: RemoteConfig,
    pub read_only: bool,
    pub profile: Option<String>,
}

impl ConsoleRemoteArgs {
    /// Where the console goes: profile `--cluster` or `--bootstrap` (else `[remote]
    /// bootstrap`), with the security flags laid over; `None` for the embedded cluster.
    pub fn target(&self, config: &KdeckConfig) -> Result<Option<ConsoleTarget>, String> {
        let (mut remote, read_only) = match &self.cluster {
            Some(name) => {
                let read_only = config.clusters.get(name).is_some_and(|p| p.read_only);
                (config.profile(name)?, read_only)
            }
            None => {
                let mut remote = config.remote.clone();
                if let Some(bootstrap) = &self.bootstrap {
                    remote.bootstrap = bootstrap.clone();
                }
                (remote, false)
            }
        };
        if remote.bootstrap.trim().is_empty() {
            return match &self.cluster {
                Some(name) => Err(format!("cluster profile {name:?} has no bootstrap servers")),
                None => Ok(None),
            };
        }
        self.security.apply(&mut remote);
        Ok(Some(ConsoleTarget {
            remote,
            read_only: read_only || self.read_only,
            profile: self.cluster.clone(),
        }))
    }
}

/// TLS and SASL for external clusters; each flag overrides [remote.tls] / [remote.sasl].
#[derive(Debug, Clone, Default, Args)]
pub struct SecurityArgs {
    /// Connect with TLS (implied by any other --tls-* flag).
    #[arg(long)]
    pub tls: bool,
    /// PEM file of the CA certificates to trust (default: the Mozilla roots).
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// PEM client certificate, for mutual TLS.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of the client certificate.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Verify the brokers' certificates against this name instead of their host names.
    #[arg(long, value_name = "NAME")]
    pub tls_server_name: Option<String>,
    /// Do not verify the brokers' certificates (for test clusters only).
    #[arg(long)]
    pub tls_no_verify: bool,
    /// SASL mechanism.
    #[arg(long, value_name = "MECHANISM", value_parser = PossibleValuesParser::new(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]))]
    pub sasl_mechanism: Option<String>,
    /// SASL user name.
    #[arg(long, value_name = "USER")]
    pub sasl_username: Option<String>,
    /// SASL password; prefer the environment variable, which other users cannot see in `ps`.
    #[arg(long, env = "KDECK_SASL_PASSWORD", hide_env_values = true, value_name = "PASSWORD")]
    pub sasl_password: Option<String>,
    /// Send SASL credentials without TLS to a host that is not loopback.
    #[arg(long)]
    pub allow_plaintext_credentials: bool,
}

impl SecurityArgs {
    /// Lays the flags over the configuration's `[remote]` section.
    pub fn apply(&self, config: &mut RemoteConfig) {
        let tls_flag = self.tls
            || self.tls_ca.is_some()
            || self.tls_cert.is_some()
            || self.tls_server_name.is_some()
            || self.tls_no_verify;
        if tls_flag {
            config.tls.enabled = true;
        }
        if let Some(ca) = &self.tls_ca {
            config.tls.ca_file = ca.display().to_string();
        }
        if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
            config.tls.cert_file = cert.display().to_string();
            config.tls.key_file = key.display().to_string();
        }
        if let Some(name) = &self.tls_server_name {
            config.tls.server_name = name.clone();
        }
        if self.tls_no_verify {
            config.tls.verify = false;
        }
        if let Some(mechanism) = &self.sasl_mechanism {
            config.sasl.mechanism = mechanism.clone();
        }
        if let Some(user) = &self.sasl_username {
            config.sasl.username = user.clone();
        }
        if let Some(password) = &self.sasl_password {
            config.sasl.password = password.clone();
        }
        if self.allow_plaintext_credentials {
            config.sasl.allow_plaintext = true;
        }
    }
}

/// Where the CLI commands find the cluster.
#[derive(Debug, Clone, Default, Args)]
pub struct ConnectArgs {
    /// Bootstrap servers HOST:PORT[,HOST:PORT...] (default: [remote] bootstrap, else 127.0.0.1:9092).
    // Global, so `kdeck topics describe T -b HOST:PORT` works as well as `kdeck topics -b ... describe T`.
    #[arg(short = 'b', long, value_name = "HOST:PORT", global = true)]
    pub bootstrap: Option<String>,
    /// The cluster of profile NAME ([clusters.NAME] in the configuration: its bootstrap, TLS
    /// and SASL; -X properties and the flags still override them).
    #[arg(long, value_name = "NAME", global = true, conflicts_with = "bootstrap")]
    pub cluster: Option<String>,
    /// Configuration file (default: kdeck/kdeck.toml in the platform config directory, when present).
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// A librdkafka client property, NAME=VALUE (kcat -X; repeatable): laid over the
    /// configuration file, under the flags. `-X list` prints the ones kdeck takes; any other
    /// name is an error.
    #[arg(short = 'X', long = "property", value_name = "NAME=VALUE", global = true, value_parser = parse_property)]
    pub properties: Vec<(String, String)>,
    #[command(flatten)]
    pub security: SecurityArgs,
}

/// `-X NAME=VALUE`, or `-X list` (the name `list` with no value).
fn parse_property(text: &str) -> Result<(String, String), String> {
    if text == "list" {
        return Ok((text.to_string(), String::new()));
    }
    parse_key_value(text).map_err(|_| format!("{text:?}: expected NAME=VALUE (a librdkafka property) or list"))
}

impl ConnectArgs {
    /// What the flags and properties are laid over: profile `--cluster`, else `[remote]`.
    pub fn base_remote(&self, config: &KdeckConfig) -> Result<RemoteConfig, String> {
        match &self.cluster {
            Some(name) => config.profile(name),
            None => Ok(config.remote.clone()),
        }
    }

    /// The configuration's `[remote]` section with these flags laid over it.
    pub fn remote_config(&self, config: &RemoteConfig) -> RemoteConfig {
        let mut remote = config.clone();
        if let Some(bootstrap) = &self.bootstrap {
            remote.bootstrap = bootstrap.clone();
        }
        self.security.apply(&mut remote);
        remote
    }
}

/// Where and how the embedded cluster runs; shared by every command that starts one.
#[derive(Debug, Clone, Default, Args)]
pub struct ClusterArgs {
    /// Data directory of the cluster, kept across runs (default: kdeck/ in the platform data directory).
    #[arg(long, value_name = "DIR", conflicts_with = "ephemeral")]
    pub data_dir: Option<PathBuf>,
    /// Use a temporary data directory, removed on exit.
    #[arg(long)]
    pub ephemeral: bool,
    /// Brokers to start (default: [cluster] brokers of the configuration).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(1..=32))]
    pub brokers: Option<i32>,
    /// Do not run the built-in demo traffic.
    #[arg(long)]
    pub no_demo: bool,
    /// Configuration file (default: kdeck/kdeck.toml in the platform config directory, when present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the embedded cluster headless and serve the Kafka protocol to real clients
    /// (kcat, librdkafka, kafka-python...). Line commands on stdin when it is not a terminal:
    /// kill N, start N, stop N, pause N, resume N, elect, status, add, decommission N.
    Serve(ClusterArgs),
    /// List, describe, create or delete topics of a Kafka cluster.
    Topics(TopicsArgs),
    /// The cluster's brokers, then its topics with each partition's leader, replicas and ISR
    /// (kcat -L).
    List(ListArgs),
    /// Produce records read from stdin (one per line, or split at -D), from files, or given
    /// with --value (kcat -P).
    Produce(ProduceArgs),
    /// Print the records of topics, alone or as a member of a consumer group (kcat -C, -G).
    Consume(ConsumeArgs),
    /// List consumer groups, describe their members, offsets and lag, reset or delete their
    /// offsets, delete groups (kafka-consumer-groups.sh).
    Groups(GroupsArgs),
    /// List transactional ids, or describe one's open transaction (kafka-transactions.sh
    /// list, describe).
    Transactions(TransactionsArgs),
    /// Move partition leadership back to the preferred replicas.
    Elect(ElectArgs),
    /// Move partitions' replicas between brokers (kafka-reassign-partitions.sh): propose a
    /// plan, execute it, follow it, cancel it.
    Reassign(ReassignArgs),
    /// Delete a partition's records before an offset (kafka-delete-records).
    Records(RecordsArgs),
    /// Describe or change topic configs and the cluster-wide broker defaults
    /// (kafka-configs.sh).
    Configs(ConfigsArgs),
    /// List the cluster profiles of the configuration ([clusters.NAME]), for `--cluster NAME`.
    Clusters(ClustersArgs),
    /// Trainer mode: list the teaching scenarios, or run one (in the console, or headless).
    Scenario {
        #[command(subcommand)]
        what: ScenarioCommand,
    },
    /// Open the console on an ephemeral embedded cluster and record every action and the
    /// cluster's timeline, with their times, to FILE (TOML) when it quits.
    Record(RecordArgs),
    /// Perform a recording's cluster actions at their times on a fresh cluster and print
    /// where the new timeline differs; exits 1 when it does.
    Replay(ReplayArgs),
    /// Measure kdeck's speed (prints Kafka-perf-test-style lines).
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

/// `kdeck clusters`.
#[derive(Debug, Clone, Args)]
pub struct ClustersArgs {
    /// Configuration file (default: kdeck/kdeck.toml in the platform config directory, when present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// `kdeck record FILE`: the console's cluster flags, always on an ephemeral cluster.
#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// Where to write the recording (overwritten).
    pub file: PathBuf,
    /// Brokers to start (default: [cluster] brokers of the configuration).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(1..=32))]
    pub brokers: Option<i32>,
    /// Do not run the built-in demo traffic (a replay then tells the same story more surely).
    #[arg(long)]
    pub no_demo: bool,
    /// Configuration file (default: kdeck/kdeck.toml in the platform config directory, when present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl RecordArgs {
    /// The cluster the recording runs on: ephemeral, so that a replay can start as it did.
    pub fn cluster(&self) -> ClusterArgs {
        ClusterArgs {
            data_dir: None,
            ephemeral: true,
            brokers: self.brokers,
            no_demo: self.no_demo,
            config: self.config.clone(),
        }
    }
}

/// `kdeck replay FILE`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// A recording written by `kdeck record`.
    pub file: PathBuf,
    /// Replay on a simulated clock without a screen and compare the new timeline with the
    /// recorded one (exit 1 when they differ). Without it the recording plays in the
    /// console, one step per recorded action (n next, . play, F freeze).
    #[arg(long)]
    pub headless: bool,
    /// Configuration file (default: the one the recording names, else the platform's).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Also write the console's frames to FILE as an asciicast v2 recording (asciinema).
    #[arg(long, value_name = "FILE", conflicts_with = "headless")]
    pub cast: Option<PathBuf>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ScenarioCommand {
    /// The shipped scenarios and yours (kdeck/scenarios/*.toml in the config directory).
    List {
        /// Another directory of scenario files.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Check scenario files without running them: prints `FILE: ok`, or each problem at its
    /// line and column; exits 1 when a file has a problem.
    Check {
        /// Scenario files (.toml).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Run a scenario: in the console (n: next step), or headless with --headless.
    Run {
        /// A scenario's name (see `kdeck scenario list`) or a path to a .toml file.
        name: String,
        /// Show the captions in this language (`zh`) where the scenario has them.
        #[arg(long, value_name = "LANG")]
        lang: Option<String>,
        /// Print captions, commands and checks instead of opening the console; exits
        /// non-zero when a check fails.
        #[arg(long)]
        headless: bool,
        /// Another directory of scenario files.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Configuration file (default: kdeck/kdeck.toml in the platform config directory).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Also write the console's frames to FILE as an asciicast v2 recording (asciinema),
        /// for slides or a web page.
        #[arg(long, value_name = "FILE", conflicts_with = "headless")]
        cast: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Args)]
pub struct TopicsArgs {
    #[command(subcommand)]
    pub action: Option<TopicsAction>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `kdeck list`: kcat -L.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Only these topics (default: every topic).
    pub topics: Vec<String>,
    /// Only this topic (kcat -L -t; repeatable, with the positional ones).
    #[arg(short = 't', long = "topic", value_name = "TOPIC")]
    pub topic: Vec<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Clone, Subcommand)]
pub enum TopicsAction {
    /// One line per topic: name, partitions, replication factor (the default).
    List,
    /// Each partition's leader, replicas, ISR and offsets.
    Describe {
        /// Topics to describe (default: every topic).
        topics: Vec<String>,
    },
    /// Create a topic (CreateTopics; Kafka's topic-name rule is checked first).
    Create {
        /// The new topic's name: up to 249 of a-z A-Z 0-9 . _ -, not "." or "..".
        name: String,
        /// Partitions (default: the broker's num.partitions).
        #[arg(short, long, value_parser = clap::value_parser!(i32).range(1..=100_000))]
        partitions: Option<i32>,
        /// Replication factor (default: the broker's default.replication.factor).
        #[arg(short, long, value_parser = clap::value_parser!(i16).range(1..=1000))]
        replication_factor: Option<i16>,
        /// A topic config, KEY=VALUE (repeatable).
        #[arg(long = "topic-config", value_name = "KEY=VALUE", value_parser = parse_key_value)]
        configs: Vec<(String, String)>,
    },
    /// Delete a topic and its records (DeleteTopics).
    Delete {
        /// The topic to delete.
        name: String,
    },
    /// Grow a topic to N partitions (CreatePartitions; a topic never shrinks).
    AddPartitions {
        /// The topic to grow.
        name: String,
        /// The topic's new partition count, more than it has.
        #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(i32).range(1..=100_000))]
        partitions: i32,
    },
}

#[derive(Debug, Clone, Args)]
pub struct RecordsArgs {
    #[command(subcommand)]
    pub action: RecordsAction,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Clone, Subcommand)]
pub enum RecordsAction {
    /// Move a partition's log start offset up to OFFSET (DeleteRecords): the records before
    /// it are gone for every reader.
    Delete {
        /// The partition's topic.
        #[arg(short, long)]
        topic: String,
        /// The partition.
        #[arg(short, long, value_parser = clap::value_parser!(i32).range(0..))]
        partition: i32,
        /// The new log start offset; -1: the high watermark (every record so far).
        #[arg(short, long, allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(-1..))]
        offset: i64,
    },
}

#[derive(Debug, Clone, Args)]
pub struct ConfigsArgs {
    #[command(subcommand)]
    pub action: ConfigsAction,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Whose configs (exactly one).
#[derive(Debug, Clone, Args)]
#[group(required = true, multiple = false)]
pub struct ConfigsEntity {
    /// A topic's configs (kafka-configs.sh --entity-type topics --entity-name T).
    #[arg(long, value_name = "TOPIC")]
    pub topic: Option<String>,
    /// One broker's configs (--entity-type brokers --entity-name N).
    #[arg(long, value_name = "ID")]
    pub broker: Option<i32>,
    /// The cluster-wide broker defaults (--entity-type brokers --entity-default).
    #[arg(long)]
    pub broker_defaults: bool,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ConfigsAction {
    /// Every config with its value and source (DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG...), as
    /// kafka-configs.sh --describe --all.
    Describe {
        #[command(flatten)]
        entity: ConfigsEntity,
        /// Only the configs set at run time (kafka-configs.sh --describe without --all).
        #[arg(long)]
        overrides: bool,
    },
    /// Set and remove configs (IncrementalAlterConfigs), all or nothing.
    Alter {
        #[command(flatten)]
        entity: ConfigsEntity,
        /// Configs to set, `k=v[,k2=v2]`; a value holding commas goes in square brackets
        /// (`cleanup.policy=[compact,delete]`), as kafka-configs.sh takes it.
        #[arg(long, value_name = "K=V[,K=V...]")]
        add_config: Vec<String>,
        /// Configs to remove, back to their defaults; repeatable or comma-separated.
        #[arg(long, value_name = "K[,K...]", value_delimiter = ',')]
        delete_config: Vec<String>,
        /// Ask the cluster to check the change and make none.
        #[arg(long)]
        validate_only: bool,
    },
}

#[derive(Debug, Clone, Args)]
pub struct ProduceArgs {
    /// The topic to produce to (kcat -t).
    #[arg(short, long)]
    pub topic: String,
    /// The key of every record (kcat -k); with --key-delimiter, of the records whose input
    /// has no delimiter.
    #[arg(short, long)]
    pub key: Option<String>,
    /// Split each input record at the first DELIM into key and value (kcat -K; escapes
    /// \n \r \t \0 \\ \xHH).
    #[arg(short = 'K', long, value_name = "DELIM")]
    pub key_delimiter: Option<String>,
    /// Split the input into records at DELIM, any bytes (kcat -D; default \n; escapes \n \r
    /// \t \0 \\ \xHH). A last record without one counts; empty records are skipped.
    #[arg(short = 'D', long, value_name = "DELIM")]
    pub delimiter: Option<String>,
    /// Partition (default: by key with murmur2, like Kafka's producer; sticky without a key).
    #[arg(short, long, value_parser = clap::value_parser!(i32).range(0..))]
    pub partition: Option<i32>,
    /// Produce this one value instead of reading stdin.
    #[arg(long, conflicts_with_all = ["files", "line_mode"])]
    pub value: Option<String>,
    /// A header KEY=VALUE on every record (repeatable).
    #[arg(short = 'H', long = "header", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub headers: Vec<(String, String)>,
    /// Acknowledgements: 0, 1 or all (default: all, or -X acks).
    #[arg(long, value_parser = PossibleValuesParser::new(["0", "1", "all", "-1"]))]
    pub acks: Option<String>,
    /// Compress each batch (kcat -z; default: none, or -X compression.codec).
    #[arg(short = 'z', long, value_name = "CODEC", value_parser = PossibleValuesParser::new(["none", "gzip", "snappy", "lz4", "zstd"]).map(|c| parse_compression(&c)))]
    pub compression: Option<Compression>,
    /// With --key-delimiter, an empty key or value is sent as null (kcat -Z).
    #[arg(short = 'Z', long)]
    pub null_empty: bool,
    /// Read the FILEs as stdin, split into records at the delimiter (kcat -l).
    #[arg(short = 'l', long, requires = "files")]
    pub line_mode: bool,
    /// Files to produce instead of stdin: each whole file is one record (kcat's
    /// `kcat -P -t T FILE...`), unless --line-mode.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ConsumeArgs {
    /// A topic to read (kcat -t; repeatable). A name starting with ^ is a regular expression
    /// matching topics (internal ones left out), as librdkafka's subscriptions.
    #[arg(short = 't', long = "topic", value_name = "TOPIC")]
    pub topic: Vec<String>,
    /// More topics or ^patterns, as kcat -G GROUP TOPIC... takes them.
    #[arg(value_name = "TOPIC")]
    pub topics: Vec<String>,
    /// Consume as a member of this group: partitions are shared with its other members and
    /// offsets are committed (kcat -G; or -X group.id).
    #[arg(short, long, visible_short_alias = 'G')]
    pub group: Option<String>,
    /// Read only this partition of the one topic (not with --group).
    #[arg(short, long, conflicts_with = "group", value_parser = clap::value_parser!(i32).range(0..))]
    pub partition: Option<i32>,
    /// Where to start (kcat -o): beginning, end, an offset, -N (N before the end), or a time
    /// (RFC 3339, ms since the epoch with a trailing "ms", or kcat's s@MS). Default: beginning.
    /// With --group, only where the group has no committed offset (default: -X
    /// auto.offset.reset, else beginning).
    #[arg(short = 'o', long, allow_negative_numbers = true)]
    pub from: Option<String>,
    /// Stop after N records (kcat -c).
    #[arg(short = 'n', long, value_name = "N", visible_short_alias = 'c')]
    pub count: Option<u64>,
    /// Stop at the end of every partition instead of waiting for more (kcat -e).
    #[arg(short = 'e', long)]
    pub exit: bool,
    /// Output: `value` (default), `kv`, `json`, or a kcat-style template such as
    /// '%t [%p] @%o: %k=%s\n' (kcat -f): %t topic, %p partition, %o offset, %k key, %s value,
    /// %K/%S key/value length (-1 for null), %R value length as 4 bytes big-endian, %T
    /// timestamp (ms), %h headers (n=v,...), %%; escapes \n \r \t \0 \\ \xHH. Keys and values
    /// are written as their bytes; json writes a key, value or header that is not UTF-8 in
    /// base64 and lists it under "base64".
    #[arg(short, long, default_value = "value")]
    pub format: String,
    /// JSON output, one object per record (kcat -J; as --format json).
    #[arg(short = 'J', long, conflicts_with = "format")]
    pub json: bool,
    /// Written after each record in the value, kv and json formats (kcat -D; default \n;
    /// escapes as --format's).
    #[arg(short = 'D', long, value_name = "DELIM")]
    pub delimiter: Option<String>,
    /// Print each record's key and DELIM before its value (kcat -K; the kv format's
    /// separator, a tab by default).
    #[arg(short = 'K', long, value_name = "DELIM")]
    pub key_delimiter: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Clone, Args)]
pub struct GroupsArgs {
    #[command(subcommand)]
    pub action: Option<GroupsAction>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Clone, Subcommand)]
pub enum GroupsAction {
    /// One line per group: id, state, protocol type (the default).
    List,
    /// State, members and their partitions, and per partition committed offset, end and lag.
    Describe {
        /// Groups to describe (default: every group).
        groups: Vec<String>,
    },
    /// Move a group's committed offsets (kafka-consumer-groups.sh --reset-offsets), only
    /// while it has no active members. Prints GROUP TOPIC PARTITION OLD-OFFSET NEW-OFFSET
    /// LAG-AFTER; commits nothing without --execute.
    ResetOffsets(ResetOffsetsArgs),
    /// Delete groups that have no active members, with their committed offsets (DeleteGroups).
    Delete {
        /// The groups to delete.
        #[arg(required = true)]
        groups: Vec<String>,
    },
    /// Delete a group's committed offsets of some partitions (OffsetDelete); refused for
    /// topics its active members consume.
    DeleteOffsets {
        /// The group whose offsets go.
        group: String,
        /// A topic's partitions: TOPIC (all of them) or TOPIC:P,P... (repeatable).
        #[arg(long, required = true, value_name = "TOPIC[:P,P...]", value_parser = parse_topic_partitions)]
        topic: Vec<TopicPartitions>,
    },
}

#[derive(Debug, Clone, Args)]
pub struct TransactionsArgs {
    #[command(subcommand)]
    pub action: Option<TransactionsAction>,
    /// One JSON object per transactional id instead of the table.
    #[arg(short = 'J', long, global = true)]
    pub json: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Clone, Subcommand)]
pub enum TransactionsAction {
    /// One line per transactional id: state, producer id and epoch, timeout, partitions, how
    /// long its open transaction has run (ms), coordinator (the default).
    List,
    /// One transactional id: its coordinator, state, producer, timeout, when its open
    /// transaction started and its partitions.
    Describe {
        /// The transactional id.
        transactional_id: String,
    },
}

/// `--topic TOPIC[:P,P...]`: a topic, and some of its partitions or (None) all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPartitions {
    pub topic: String,
    pub partitions: Option<Vec<i32>>,
}

/// Parses kafka-consumer-groups.sh's `TOPIC` or `TOPIC:0,1,2`.
pub fn parse_topic_partitions(text: &str) -> Result<TopicPartitions, String> {
    let (topic, partitions) = match text.split_once(':') {
        None => (text, None),
        Some((topic, list)) => {
            let partitions = list
                .split(',')
                .map(|p| match p.trim().parse::<i32>() {
                    Ok(n) if n >= 0 => Ok(n),
                    _ => Err(format!("{text:?}: {p:?} is not a partition number (TOPIC:P,P...)")),
                })
                .collect::<Result<Vec<i32>, String>>()?;
            (topic, Some(partitions))
        }
    };
    if topic.is_empty() {
        return Err(format!("{text:?}: the topic name is missing (TOPIC or TOPIC:P,P...)"));
    }
    Ok(TopicPartitions {
        topic: topic.to_string(),
        partitions,
    })
}

/// `kdeck groups reset-offsets`: which partitions, where to, and whether to commit.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("scope").required(true).args(["topic", "all_topics"])))]
#[command(group(
    ArgGroup::new("to")
        .required(true)
        .args(["to_earliest", "to_latest", "to_offset", "to_datetime", "shift_by", "by_duration"])
))]
pub struct ResetOffsetsArgs {
    /// The group whose offsets move.
    pub group: String,
    /// A topic's partitions: TOPIC (all of them) or TOPIC:P,P... (repeatable).
    #[arg(long, value_name = "TOPIC[:P,P...]", value_parser = parse_topic_partitions)]
    pub topic: Vec<TopicPartitions>,
    /// Every partition the group has a committed offset for.
    #[arg(long)]
    pub all_topics: bool,
    /// To each partition's log start offset.
    #[arg(long)]
    pub to_earliest: bool,
    /// To each partition's end (its high watermark): skip everything not yet read.
    #[arg(long)]
    pub to_latest: bool,
    /// To this offset (clamped to the log's start and end).
    #[arg(long, value_name = "OFFSET", allow_negative_numbers = true)]
    pub to_offset: Option<i64>,
    /// To the first record at or after this time: YYYY-MM-DDTHH:mm:SS[.sss] with an optional
    /// zone (Z, +01:00; local time without one).
    #[arg(long, value_name = "DATETIME", value_parser = reset::parse_datetime)]
    pub to_datetime: Option<i64>,
    /// Move the committed offsets by N (negative: back), clamped to the log.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub shift_by: Option<i64>,
    /// To the first record at or after now minus this ISO-8601 duration (PT10M, P1DT2H).
    #[arg(long, value_name = "DURATION", value_parser = reset::parse_duration)]
    pub by_duration: Option<i64>,
    /// Only print the plan (the default, as kafka-consumer-groups.sh's).
    #[arg(long, conflicts_with = "execute")]
    pub dry_run: bool,
    /// Commit the new offsets.
    #[arg(long)]
    pub execute: bool,
}

impl ResetOffsetsArgs {
    /// Where the offsets go; clap's group `to` guarantees exactly one was given.
    pub fn spec(&self) -> ResetSpec {
        if self.to_latest {
            ResetSpec::Latest
        } else if let Some(offset) = self.to_offset {
            ResetSpec::Offset(offset)
        } else if let Some(at) = self.to_datetime {
            ResetSpec::Datetime(at)
        } else if let Some(by) = self.shift_by {
            ResetSpec::ShiftBy(by)
        } else if let Some(ms) = self.by_duration {
            ResetSpec::ByDuration(ms)
        } else {
            ResetSpec::Earliest
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct ElectArgs {
    /// Only this topic's partitions (default: every partition).
    #[arg(long)]
    pub topic: Option<String>,
    /// Only this partition of --topic.
    #[arg(long, requires = "topic", value_parser = clap::value_parser!(i32).range(0..))]
    pub partition: Option<i32>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ReassignArgs {
    #[command(subcommand)]
    pub action: ReassignAction,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ReassignAction {
    /// Propose a plan: prints its JSON (kafka-reassign-partitions.sh's format) on stdout and
    /// each partition's replicas now -> after on stderr. Moves as few replicas as it can.
    Plan(PlanArgs),
    /// Start the moves of a plan file; prints the current assignment to undo it.
    Execute {
        /// The plan (`-` for stdin).
        #[arg(value_name = "FILE", required_unless_present = "reassignment_json_file")]
        file: Option<PathBuf>,
        /// The plan, as kafka-reassign-partitions.sh names it.
        #[arg(long, value_name = "FILE", conflicts_with = "file")]
        reassignment_json_file: Option<PathBuf>,
        /// Start even though other moves are in progress (they go on).
        #[arg(long)]
        additional: bool,
        /// Throttle the copying to this many bytes per second (`50MiB` works too) on every
        /// broker taking part, as kafka-reassign-partitions.sh --throttle; `reassign status
        /// FILE` removes the throttle once every move is complete.
        #[arg(long, value_name = "BYTES_PER_SEC", value_parser = parse_size)]
        throttle: Option<u64>,
    },
    /// Each partition of a plan file: completed, still in progress, or not where the plan
    /// puts it (kafka-reassign-partitions.sh --verify); without a file, every move in
    /// progress with its replicas, the adding and removing ones, and the ISR.
    Status {
        /// The plan (`-` for stdin).
        #[arg(value_name = "FILE")]
        file: Option<PathBuf>,
        /// The plan, as kafka-reassign-partitions.sh names it.
        #[arg(long, value_name = "FILE", conflicts_with = "file")]
        reassignment_json_file: Option<PathBuf>,
        /// Keep the replication throttle even when every move of the plan is complete.
        #[arg(long)]
        preserve_throttles: bool,
    },
    /// Cancel the moves of a plan file's partitions (or with --all, every move): each goes
    /// back to its replicas from before the move.
    Cancel {
        /// The plan (`-` for stdin).
        #[arg(value_name = "FILE", required_unless_present_any = ["reassignment_json_file", "all"])]
        file: Option<PathBuf>,
        /// The plan, as kafka-reassign-partitions.sh names it.
        #[arg(long, value_name = "FILE", conflicts_with = "file")]
        reassignment_json_file: Option<PathBuf>,
        /// Every move in progress.
        #[arg(long, conflicts_with_all = ["file", "reassignment_json_file"])]
        all: bool,
    },
}

/// `kdeck reassign plan`: one goal, and the topics it concerns.
#[derive(Debug, Clone, Args)]
#[command(group(
    ArgGroup::new("goal")
        .required(true)
        .args(["drain", "balance", "replication_factor", "broker_list", "move_replica"])
))]
pub struct PlanArgs {
    /// Move every replica off this broker (of the --topic topics, or of all), onto the least
    /// loaded others.
    #[arg(long, value_name = "BROKER")]
    pub drain: Option<i32>,
    /// Even out replicas, then preferred leaders (of the --topic topics, or of all), over all
    /// live brokers.
    #[arg(long)]
    pub balance: bool,
    /// Give every partition of the --topic topics this many replicas.
    #[arg(long, value_name = "N", requires = "topics_given", value_parser = clap::value_parser!(u16).range(1..))]
    pub replication_factor: Option<u16>,
    /// Keep the --topic topics on these brokers only, evened out among them (as
    /// kafka-reassign-partitions.sh --generate --broker-list).
    #[arg(long, value_name = "ID,ID...", value_delimiter = ',', requires = "topics_given")]
    pub broker_list: Option<Vec<i32>>,
    /// Move one replica: TOPIC-PARTITION:FROM:TO (orders-0:1:3 moves orders-0's replica on
    /// broker 1 to broker 3).
    #[arg(long = "move", value_name = "TOPIC-P:FROM:TO", value_parser = parse_replica_move)]
    pub move_replica: Option<ReplicaMove>,
    /// A topic to plan for (repeatable).
    #[arg(long = "topic", value_name = "TOPIC", group = "topics_given")]
    pub topics: Vec<String>,
    /// The topics, as kafka-reassign-partitions.sh's {"topics":[{"topic":"t"}],"version":1}.
    #[arg(long, value_name = "FILE", group = "topics_given")]
    pub topics_to_move_json_file: Option<PathBuf>,
}

/// `--move TOPIC-P:FROM:TO`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaMove {
    pub topic: String,
    pub partition: i32,
    pub from: i32,
    pub to: i32,
}

pub fn parse_replica_move(text: &str) -> Result<ReplicaMove, String> {
    let usage = || format!("{text:?}: expected TOPIC-PARTITION:FROM:TO, as orders-0:1:3");
    let mut parts = text.split(':');
    let (Some(name), Some(from), Some(to), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(usage());
    };
    let (topic, partition) = name.rsplit_once('-').ok_or_else(usage)?;
    let number = |s: &str| s.trim().parse::<i32>().ok().filter(|n| *n >= 0).ok_or_else(usage);
    if topic.is_empty() {
        return Err(usage());
    }
    Ok(ReplicaMove {
        topic: topic.to_string(),
        partition: number(partition)?,
        from: number(from)?,
        to: number(to)?,
    })
}

/// `KEY=VALUE`.
pub fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{text:?}: expected KEY=VALUE")),
    }
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Append to, read and recover one partition log, against raw sequential writes.
    Storage(StorageBenchArgs),
    /// Read a filled topic with a group consumer (kafka-consumer-perf-test).
    Consume(ConsumeBenchArgs),
    /// End-to-end latency: scheduled producer sends to a group consumer's receipt.
    E2e(EndToEndBenchArgs),
    /// Produce with acks=all to an embedded 3-broker cluster, no client batching.
    Engine(EngineBenchArgs),
    /// Produce through the client producer to an embedded cluster (kafka-producer-perf-test).
    Produce(ProduceBenchArgs),
    /// Drain a broker of a filled topic (4 brokers, 6 partitions, RF 3) while producing with
    /// acks=all: the move's time and rate, the producer's throughput and latency during it.
    Reassign(ReassignBenchArgs),
    /// Console rendering: one frame of a large cluster view, and the idle console's CPU use.
    Render(RenderBenchArgs),
    /// Deterministic simulation: seeded schedules of faults and clients, invariants checked
    /// after every step.
    Sim(SimBenchArgs),
    /// Running for days, sped up: the demo at a multiple of its rate plus clients that come
    /// and go; prints RSS and disk use each minute and the RSS growth per hour.
    Soak(SoakBenchArgs),
}

#[derive(Debug, Clone, Args)]
pub struct SoakBenchArgs {
    /// How long to run, in minutes.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub minutes: u64,
    /// Minutes left out of the growth figure (caches, pools and buffers filling up).
    #[arg(long, default_value_t = 5)]
    pub warmup_minutes: u64,
    /// The demo's rates are multiplied by this.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub rate_multiplier: u32,
    /// producer.id.expiration.ms for the run (Kafka's is a day): short, so that the bound on
    /// producer state is reached within the run.
    #[arg(long, default_value_t = 300_000)]
    pub producer_id_expiration_ms: u64,
    /// Directory for the cluster's data (default: the system's temporary directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Configuration file (default: kdeck/kdeck.toml in the platform config directory, when present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct SimBenchArgs {
    /// Seeds to run, from --seed on (default 100, or 1 when --seed is given).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub seeds: Option<u64>,
    /// The first (or only) seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Steps of each schedule before the heal phase; fewer cut a schedule short.
    #[arg(long, default_value_t = crate::sim::DEFAULT_STEPS)]
    pub steps: usize,
    /// Steps to leave out, by index (comma-separated), to minimise a failing schedule.
    #[arg(long, value_delimiter = ',')]
    pub skip: Vec<usize>,
    /// Prints each schedule, each step's outcome and every cluster event.
    #[arg(long)]
    pub trace: bool,
    /// Searches for a shorter schedule that breaks the same invariant, for each failing seed.
    #[arg(long)]
    pub shrink: bool,
    /// Runs every seed twice and compares verdicts and final states.
    #[arg(long)]
    pub check_determinism: bool,
    /// Seeds run at once (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=256).map(|n| n as usize))]
    pub jobs: Option<usize>,
    /// Directory for the clusters' data (default: /dev/shm when there is one).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct RenderBenchArgs {
    /// Partitions in the rendered cluster view.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub partitions: u32,
    /// Frames to render.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub frames: u32,
    /// Terminal width of the frame.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u16).range(20..=1000))]
    pub width: u16,
    /// Terminal height of the frame.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u16).range(5..=1000))]
    pub height: u16,
    /// Seconds to measure the idle console (embedded cluster without demo); 0 skips it.
    #[arg(long, default_value_t = 10.0, value_parser = parse_idle_seconds)]
    pub idle_secs: f64,
}

#[derive(Debug, Clone, Args)]
pub struct EndToEndBenchArgs {
    /// Records per second, sent on a fixed schedule.
    #[arg(long, default_value_t = 500_000, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub rate: u32,
    /// How long to send, in seconds.
    #[arg(long, default_value_t = 10.0, value_parser = parse_seconds)]
    pub secs: f64,
    /// Size of each record's value (at least 8: it carries the due time).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(8..=1_000_000))]
    pub record_size: u32,
    /// Partitions of the benchmark topic.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(i32).range(1..=1000))]
    pub partitions: i32,
    /// The producer's `linger.ms` (0, as Kafka's EndToEndLatency tool sets it, "to ensure
    /// writes are synchronous"; a linger adds up to itself plus the timer's millisecond).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub linger_ms: u64,
    /// The producer's `batch.size` in bytes (Kafka's default, 16384, unless given).
    #[arg(long, default_value_t = 16_384, value_parser = clap::value_parser!(u64).range(1..=(64 << 20)))]
    pub batch_size: u64,
    /// Directory for the cluster's data (default: the system temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ConsumeBenchArgs {
    /// Records to write first and then consume.
    #[arg(long, default_value_t = 5_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub records: u64,
    /// Size of each record's value.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub record_size: u32,
    /// Partitions of the benchmark topic.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(i32).range(1..=1000))]
    pub partitions: i32,
    /// Replication factor of the benchmark topic (at most 3, the embedded brokers).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=3))]
    pub replication_factor: i32,
    /// Directory for the cluster's data (default: the system temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct EngineBenchArgs {
    /// How long to produce, in seconds.
    #[arg(long, default_value_t = 20.0, value_parser = parse_seconds)]
    pub secs: f64,
    /// Partitions of the benchmark topic.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(i32).range(1..=1000))]
    pub partitions: i32,
    /// Produce requests in flight per partition.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub in_flight: u32,
    /// Size of each record batch.
    #[arg(long, default_value = "16KiB", value_parser = parse_size)]
    pub batch_bytes: u64,
    /// Size of each record's value.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub record_bytes: u32,
    /// Directory for the cluster's data (default: the system temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ReassignBenchArgs {
    /// Bytes to fill the topic with before the move (suffixes KiB, MiB, GiB).
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub bytes: u64,
    /// Throttle the move's replication to this many bytes/sec per broker (KIP-73).
    #[arg(long, value_name = "BYTES_PER_SEC", value_parser = parse_size)]
    pub throttle: Option<u64>,
    /// Records per second the steady producer sends during the run, over all partitions.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub rate: u32,
    /// Size of each of the steady producer's records.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub record_size: u32,
    /// How long the steady producer runs before the move starts (the phase compared with the
    /// move is at most this long).
    #[arg(long, default_value_t = 60.0, value_parser = parse_seconds)]
    pub before_secs: f64,
    /// Directory for the cluster's data (default: the system temp directory); removed at the end.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ProduceBenchArgs {
    /// Records to produce.
    #[arg(long, default_value_t = 5_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub records: u64,
    /// Size of each record's value, in bytes.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub record_size: u32,
    /// Acknowledgements: 0, 1 or all (-1).
    #[arg(long, default_value = "all", value_parser = PossibleValuesParser::new(["0", "1", "all", "-1"]).map(|a| parse_acks(&a)))]
    pub acks: Acks,
    /// Partitions of the benchmark topic.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(i32).range(1..=1000))]
    pub partitions: i32,
    /// Replication factor of the benchmark topic (min.insync.replicas is 2 from RF 2 up).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=32))]
    pub replication_factor: i32,
    /// Producers sharing the records, each with its own task.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub producers: u32,
    /// Compression codec of the batches.
    #[arg(long, default_value = "none", value_parser = PossibleValuesParser::new(["none", "gzip", "snappy", "lz4", "zstd"]).map(|c| parse_compression(&c)))]
    pub compression: Compression,
    /// Brokers in the embedded cluster.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=32))]
    pub brokers: i32,
    /// Directory for the cluster's data (default: the system temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// Maps a value `PossibleValuesParser` already checked.
fn parse_acks(text: &str) -> Acks {
    match text {
        "0" => Acks::None,
        "1" => Acks::Leader,
        _ => Acks::All,
    }
}

/// Maps a value `PossibleValuesParser` already checked.
fn parse_compression(text: &str) -> Compression {
    match text {
        "gzip" => Compression::Gzip,
        "snappy" => Compression::Snappy,
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd,
        _ => Compression::None,
    }
}

#[derive(Debug, Clone, Args)]
pub struct StorageBenchArgs {
    /// Bytes to append (suffixes KiB, MiB, GiB).
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub bytes: u64,
    /// Size of each record batch.
    #[arg(long, default_value = "16KiB", value_parser = parse_size)]
    pub batch_bytes: u64,
    /// Size of each record's value.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub record_bytes: u32,
    /// segment.bytes of the benchmarked log.
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub segment_bytes: u64,
    /// Rounds of raw write and log append (medians are compared).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Seconds for each group-commit (flush = always) run.
    #[arg(long, default_value_t = 3.0, value_parser = parse_seconds)]
    pub group_commit_secs: f64,
    /// Concurrent appenders in the group-commit run.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub writers: u32,
    /// Directory for the temporary files (default: the system temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

pub use crate::kafka::parse_size;

fn parse_idle_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(0.0) => Ok(0.0),
        _ => parse_seconds(text),
    }
}

fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => Ok(s),
        _ => Err(format!("{text:?} is not a duration in seconds between 0 and 3600")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand and every flag or argument the user can give, with where it is.
    fn undocumented(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if arg.is_hide_set() || matches!(id, "help" | "version") {
                continue;
            }
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                missing.push(format!("{path} {id}"));
            }
        }
        for sub in cmd.get_subcommands() {
            let here = format!("{path} {}", sub.get_name());
            if sub.get_name() != "help" && sub.get_about().is_none() && sub.get_long_about().is_none() {
                missing.push(format!("{here} (the subcommand)"));
            }
            undocumented(sub, &here, missing);
        }
    }

    #[test]
    fn every_subcommand_flag_and_argument_has_its_help_text() {
        use clap::CommandFactory;
        let mut missing = Vec::new();
        undocumented(&Cli::command(), "kdeck", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:#?}");
    }

    #[test]
    fn reset_offsets_takes_one_scope_and_one_target() {
        use clap::CommandFactory;
        let parse = |args: &[&str]| Cli::command().try_get_matches_from(args).map(|_| ());
        let base = ["kdeck", "groups", "reset-offsets", "g"];
        let with = |extra: &[&'static str]| [&base[..], extra].concat();
        assert!(parse(&with(&["--topic", "t:0,2", "--to-earliest"])).is_ok());
        assert!(parse(&with(&["--all-topics", "--shift-by", "-5", "--execute"])).is_ok());
        assert!(parse(&with(&["--to-earliest"])).is_err(), "no scope");
        assert!(parse(&with(&["--all-topics"])).is_err(), "no target");
        assert!(parse(&with(&["--all-topics", "--to-earliest", "--to-latest"])).is_err());
        assert!(parse(&with(&["--all-topics", "--topic", "t", "--to-latest"])).is_err());
        assert!(parse(&with(&["--all-topics", "--to-latest", "--dry-run", "--execute"])).is_err());
        assert!(parse(&with(&["--all-topics", "--by-duration", "10 minutes"])).is_err());
        assert!(parse(&with(&["--topic", "t:x", "--to-latest"])).is_err());
    }

    #[test]
    fn topic_partitions_parse_as_kafka_consumer_groups_writes_them() {
        assert_eq!(
            parse_topic_partitions("orders:0,2"),
            Ok(TopicPartitions {
                topic: "orders".into(),
                partitions: Some(vec![0, 2])
            })
        );
        assert_eq!(parse_topic_partitions("orders").map(|t| t.partitions), Ok(None));
        assert!(parse_topic_partitions(":1").is_err());
        assert!(parse_topic_partitions("orders:").is_err());
        assert!(parse_topic_partitions("orders:-1").is_err());
    }

    fn profiles() -> KdeckConfig {
        let text = "[clusters.prod]\nbootstrap = \"kafka-1:9093\"\nread_only = true\n\
                    [clusters.prod.tls]\nenabled = true\nca_file = \"ca.pem\"\n\
                    [clusters.prod.sasl]\nmechanism = \"PLAIN\"\nusername = \"alice\"\n";
        KdeckConfig::from_layers(Some(("my.toml", text))).expect("valid")
    }

    #[test]
    fn cluster_picks_the_profiles_bootstrap_tls_and_sasl_and_flags_still_override() {
        let config = profiles();
        let cli = Cli::try_parse_from(["kdeck", "--cluster", "prod"]).expect("parses");
        let target = cli.remote.target(&config).expect("resolves").expect("external");
        assert_eq!(target.remote.bootstrap, "kafka-1:9093");
        assert!(target.remote.tls.enabled && target.remote.tls.verify);
        assert_eq!(target.remote.tls.ca_file, "ca.pem");
        assert_eq!(target.remote.sasl.username, "alice");
        assert!(target.read_only, "the profile's read_only");
        assert_eq!(target.profile.as_deref(), Some("prod"));

        let cli = Cli::try_parse_from([
            "kdeck",
            "--cluster",
            "prod",
            "--tls-ca",
            "other.pem",
            "--tls-no-verify",
            "--sasl-username",
            "bob",
        ])
        .expect("parses");
        let target = cli.remote.target(&config).expect("resolves").expect("external");
        assert_eq!(target.remote.tls.ca_file, "other.pem");
        assert!(!target.remote.tls.verify);
        assert_eq!(target.remote.sasl.username, "bob");
        assert_eq!(
            target.remote.sasl.mechanism, "PLAIN",
            "what the flags leave is the profile's"
        );

        let cli = Cli::try_parse_from(["kdeck", "--cluster", "staging"]).expect("parses");
        let error = cli.remote.target(&config).expect_err("unknown profile");
        assert!(error.contains("\"staging\"") && error.contains("prod"), "{error}");

        let cli = Cli::try_parse_from(["kdeck"]).expect("parses");
        assert_eq!(cli.remote.target(&config), Ok(None), "no flag: the embedded cluster");
    }

    #[test]
    fn every_command_that_takes_bootstrap_takes_a_profile() {
        let config = profiles();
        let commands: [&[&str]; 6] = [
            &["topics"],
            &["list"],
            &["groups"],
            &["transactions", "list"],
            &["consume", "-t", "orders"],
            &["produce", "-t", "orders"],
        ];
        for command in commands {
            let args = [&["kdeck"][..], command, &["--cluster", "prod"]].concat();
            let connect = match Cli::try_parse_from(args).map(|c| c.command) {
                Ok(Some(Command::Topics(a))) => a.connect,
                Ok(Some(Command::List(a))) => a.connect,
                Ok(Some(Command::Groups(a))) => a.connect,
                Ok(Some(Command::Transactions(a))) => a.connect,
                Ok(Some(Command::Consume(a))) => a.connect,
                Ok(Some(Command::Produce(a))) => a.connect,
                other => panic!("{command:?}: {other:?}"),
            };
            let remote = connect.base_remote(&config).expect("a profile");
            assert_eq!(connect.remote_config(&remote).bootstrap, "kafka-1:9093", "{command:?}");
        }
        let cli = Cli::try_parse_from(["kdeck", "topics", "--cluster", "prod", "--tls-ca", "x.pem"]).expect("parses");
        let Some(Command::Topics(args)) = cli.command else {
            panic!("topics");
        };
        let remote = args
            .connect
            .remote_config(&args.connect.base_remote(&config).expect("a profile"));
        assert_eq!(remote.tls.ca_file, "x.pem", "a flag overrides the profile");
    }

    #[test]
    fn cluster_and_bootstrap_together_are_refused() {
        use clap::CommandFactory;
        let parse = |args: &[&str]| Cli::command().try_get_matches_from(args).map(|_| ());
        assert!(parse(&["kdeck", "--cluster", "a", "--bootstrap", "h:9092"]).is_err());
        assert!(parse(&["kdeck", "--cluster", "a", "--ephemeral"]).is_err());
        assert!(parse(&["kdeck", "topics", "--cluster", "a", "-b", "h:9092"]).is_err());
        assert!(parse(&["kdeck", "topics", "--cluster", "a"]).is_ok());
        assert!(parse(&["kdeck", "clusters"]).is_ok());
    }

    #[test]
    fn sizes_parse_with_binary_units_and_reject_garbage() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("16KiB"), Ok(16 << 10));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("99999999999GiB").is_err());
    }
}
