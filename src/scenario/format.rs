//! The scenario file format: a teaching story as data. A scenario names the concept it
//! teaches, sets up a cluster (brokers, topics, producers, consumer groups, the rules that
//! matter), then runs steps. A step shows a caption (and the rule behind it, `why`), runs
//! actions (the console's own [`Action`](crate::tui::Action) tables, whose broker fields may
//! name a broker by its role: `"leader of orders-0"`), waits until the cluster reaches a
//! state, and checks what must hold then. Captions are English; `[lang.zh]` (any language
//! code) carries translations of the title, concept and each step's caption and why.
//!
//! ```toml
//! name = "leader-crash"
//! title = "A leader crashes"
//! concept = "Replication: a new leader from the ISR"
//! [setup]
//! brokers = 3
//! [[setup.topic]]
//! name = "orders"
//! replication_factor = 3
//! min_insync_replicas = 2
//! [[setup.producer]]
//! topic = "orders"
//! acks = "all"
//! [[step]]
//! caption = "Broker {victim} leads orders-0. We crash it."
//! bind = { victim = "leader of orders-0" }
//! actions = [{ action = "kill_broker", broker = "victim" }]
//! wait_until = [{ check = "leader_changed", partition = "orders-0" }]
//! expect = [{ check = "epoch_grew", partition = "orders-0", by = 1 }]
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, placed};

/// One scenario, as read from its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// What `kdeck scenario run NAME` calls it (the file name without `.toml`).
    pub name: String,
    pub title: String,
    /// The Kafka concept it teaches, in a line.
    pub concept: String,
    pub setup: Setup,
    #[serde(rename = "step")]
    pub steps: Vec<Step>,
    /// Translations by language code.
    #[serde(default)]
    pub lang: BTreeMap<String, Translation>,
    /// The language it was translated to (`translated`), for the words around its
    /// captions: check sentences, the console's chrome. `None`: English.
    #[serde(skip)]
    pub language: Option<String>,
}

/// The cluster a scenario starts from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    #[serde(default = "three")]
    pub brokers: i32,
    /// `unclean.leader.election.enable`, the cluster's default.
    #[serde(default)]
    pub unclean_election: bool,
    /// `"kafka"` (first live ISR member in assignment order) or `"balanced"`.
    #[serde(default)]
    pub leader_election: ElectionRule,
    /// `auto.leader.rebalance.enable`.
    #[serde(default = "yes")]
    pub auto_rebalance: bool,
    /// `leader.imbalance.check.interval.seconds`, in ms.
    #[serde(default)]
    pub leader_imbalance_check_interval_ms: Option<u64>,
    /// `replica.lag.time.max.ms`.
    #[serde(default)]
    pub replica_lag_time_max_ms: Option<u64>,
    /// `broker.session.timeout.ms`.
    #[serde(default)]
    pub broker_session_timeout_ms: Option<u64>,
    #[serde(default, rename = "topic")]
    pub topics: Vec<TopicSetup>,
    #[serde(default, rename = "producer")]
    pub producers: Vec<ProducerSetup>,
    #[serde(default, rename = "group")]
    pub groups: Vec<GroupSetup>,
}

fn three() -> i32 {
    3
}

fn yes() -> bool {
    true
}

fn one() -> i32 {
    1
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElectionRule {
    #[default]
    Kafka,
    Balanced,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicSetup {
    pub name: String,
    #[serde(default = "one")]
    pub partitions: i32,
    #[serde(default = "three")]
    pub replication_factor: i32,
    #[serde(default = "one")]
    pub min_insync_replicas: i32,
    /// `unclean.leader.election.enable` of this topic (the cluster's default when unset).
    #[serde(default)]
    pub unclean_election: Option<bool>,
}

/// `acks` as Kafka's configs spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AcksSetting {
    #[serde(rename = "all", alias = "-1")]
    All,
    #[serde(rename = "1")]
    Leader,
    #[serde(rename = "0")]
    None,
}

impl AcksSetting {
    pub fn code(self) -> i16 {
        match self {
            AcksSetting::All => -1,
            AcksSetting::Leader => 1,
            AcksSetting::None => 0,
        }
    }
}

/// A producer the scenario runs from the start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProducerSetup {
    pub topic: String,
    #[serde(default = "acks_all")]
    pub acks: AcksSetting,
    /// `enable.idempotence` (only with acks all, as in Kafka).
    #[serde(default)]
    pub idempotence: bool,
    /// Records per second.
    #[serde(default = "ten")]
    pub rate: u32,
    /// Distinct keys (`key-0`...); 0: no keys (the sticky partitioner spreads them).
    #[serde(default)]
    pub keys: u32,
    /// Every record to this partition.
    #[serde(default)]
    pub partition: Option<i32>,
}

fn acks_all() -> AcksSetting {
    AcksSetting::All
}

fn ten() -> u32 {
    10
}

/// A consumer group the scenario runs from the start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSetup {
    pub name: String,
    pub topic: String,
    #[serde(default = "one")]
    pub members: i32,
    /// `partition.assignment.strategy`: `range`, `roundrobin` or `cooperative-sticky`.
    #[serde(default = "range")]
    pub assignor: String,
    /// Time each member spends per record (a slow consumer).
    #[serde(default)]
    pub ms_per_record: u64,
}

fn range() -> String {
    "range".into()
}

/// One step of the story.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// A few lines shown in the caption overlay; `{name}` is replaced by a bound broker.
    pub caption: String,
    /// The rule behind what happens, naming the Kafka config.
    #[serde(default)]
    pub why: Option<String>,
    /// Names for brokers by role, resolved when the step starts and kept for the later
    /// steps: `{ victim = "leader of orders-0" }`.
    #[serde(default)]
    pub bind: BTreeMap<String, String>,
    /// Console actions (`{ action = "kill_broker", broker = "victim" }`).
    #[serde(default)]
    pub actions: Vec<toml::Table>,
    /// The step ends once all of these hold (or after `timeout_s`, a failure).
    #[serde(default)]
    pub wait_until: Vec<Check>,
    /// Simulated seconds the step lasts at least, after its actions (traffic flows, lag
    /// builds, a follower falls behind).
    #[serde(default)]
    pub hold_s: f64,
    /// How long `wait_until` may take, in simulated seconds.
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// Checked when the step ends, shown passed or failed.
    #[serde(default)]
    pub expect: Vec<Check>,
    /// Once the step's checks are done the cluster is held still (its clock stops, the
    /// header says HELD) until the trainer goes on, so the story on screen stays true
    /// however long the trainer talks. `true` lets the cluster's clock run on after this
    /// step: only for a step whose next one needs time to have passed (lag building).
    #[serde(default)]
    pub keep_running: bool,
}

fn default_timeout() -> f64 {
    60.0
}

/// A scenario's words in another language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Translation {
    pub title: Option<String>,
    pub concept: Option<String>,
    /// By step, in order; a missing step keeps its English.
    #[serde(default, rename = "step")]
    pub steps: Vec<StepTranslation>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepTranslation {
    pub caption: Option<String>,
    pub why: Option<String>,
}

/// A number compared: `is`, `at_least`, `at_most` (any of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compare {
    pub is: Option<i64>,
    pub at_least: Option<i64>,
    pub at_most: Option<i64>,
}

/// Something true or false of the cluster, its workload and what happened since the step
/// started: what `wait_until` waits for and `expect` checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "check", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// The partition (`"orders-0"`) has another leader than when the step started (or
    /// none).
    LeaderChanged {
        partition: String,
    },
    /// The partition's leader is this broker (a number, a bound name or a role).
    Leader {
        partition: String,
        broker: toml::Value,
    },
    /// The partition has no leader able to serve.
    Offline {
        partition: String,
    },
    /// The leader epoch grew by at least `by` since the step started.
    EpochGrew {
        partition: String,
        by: i32,
    },
    IsrSize {
        partition: String,
        is: Option<i64>,
        at_least: Option<i64>,
        at_most: Option<i64>,
    },
    /// The broker is (or, with `is = false`, is not) in the partition's ISR.
    InIsr {
        partition: String,
        broker: toml::Value,
        #[serde(default = "yes")]
        is: bool,
    },
    /// The high watermark reached `at_least`.
    Hw {
        partition: String,
        is: Option<i64>,
        at_least: Option<i64>,
        at_most: Option<i64>,
    },
    /// The high watermark moved on by at least `by` since the step started (writes go on).
    HwGrew {
        partition: String,
        by: i64,
    },
    /// The high watermark has not moved since the step started.
    HwStill {
        partition: String,
    },
    /// Every replica of the partition has the same log end offset as the leader.
    ReplicasEqual {
        partition: String,
    },
    /// A broker's state: online, fenced, killed, stopped, paused.
    Broker {
        broker: toml::Value,
        status: String,
    },
    /// The controller is another broker than when the step started.
    ControllerChanged,
    /// The group's coordinator is another broker than when the step started.
    CoordinatorChanged {
        group: String,
    },
    /// Partitions of `topic` (every topic when unset) whose leader is `broker`.
    Leads {
        broker: toml::Value,
        topic: Option<String>,
        is: Option<i64>,
        at_least: Option<i64>,
        at_most: Option<i64>,
    },
    /// Partitions (of `topic`, else every user topic) led by their preferred replica.
    PreferredLeaders {
        topic: Option<String>,
        is: Option<i64>,
        at_least: Option<i64>,
        at_most: Option<i64>,
    },
    /// Partitions (of `topic`, else every user topic) whose ISR lacks a replica.
    UnderReplicated {
        topic: Option<String>,
        is: Option<i64>,
        at_least: Option<i64>,
        at_most: Option<i64>,
    },
    /// A timeline event since the step started contains this text.
    Event {
        text: String,
    },
    /// Records the workload's producers had acknowledged since the step started.
    Acked {
        is: Option<i64>,
        at_least: Option<i64>,
        at_most: Option<i64>,
    },
    /// Produce failures since the step started, of one error (its Kafka name,
    /// `NOT_ENOUGH_REPLICAS`) or of any.
    ProduceErrors {
        error: Option<String>,
        is: Option<i64>,
        at_least: Option<i64>,
        at_most: Option<i64>,
    },
    /// Acknowledged records that are gone from the log (since the scenario started).
    LostAcked {
        is: Option<i64>,
        at_least: Option<i64>,
        at_most: Option<i64>,
    },
    /// Records consumed by the group's members came in order of each key's sequence.
    KeyOrderHeld {
        group: String,
    },
    /// Distinct keys seen in more than one partition (0: keyed partitioning held).
    KeysInManyPartitions {
        is: Option<i64>,
        at_least: Option<i64>,
        at_most: Option<i64>,
    },
    GroupState {
        group: String,
        state: String,
    },
    GroupMembers {
        group: String,
        is: Option<i64>,
        at_least: Option<i64>,
        at_most: Option<i64>,
    },
    /// The group's generation grew by at least `by` since the step started.
    GenerationGrew {
        group: String,
        by: i32,
    },
    /// Every partition of the group's topic is assigned to a member.
    FullyAssigned {
        group: String,
    },
    Lag {
        group: String,
        is: Option<i64>,
        at_least: Option<i64>,
        at_most: Option<i64>,
    },
    /// The group's committed offsets did not go back since the step started.
    OffsetsKept {
        group: String,
    },
}

impl Check {
    /// The bounds of a check that compares a number (an ISR size, a count, a lag), `None`
    /// for the others.
    pub fn bounds(&self) -> Option<Compare> {
        match self {
            Check::IsrSize {
                is, at_least, at_most, ..
            }
            | Check::Hw {
                is, at_least, at_most, ..
            }
            | Check::Leads {
                is, at_least, at_most, ..
            }
            | Check::PreferredLeaders {
                is, at_least, at_most, ..
            }
            | Check::UnderReplicated {
                is, at_least, at_most, ..
            }
            | Check::Acked { is, at_least, at_most }
            | Check::ProduceErrors {
                is, at_least, at_most, ..
            }
            | Check::LostAcked { is, at_least, at_most }
            | Check::KeysInManyPartitions { is, at_least, at_most }
            | Check::GroupMembers {
                is, at_least, at_most, ..
            }
            | Check::Lag {
                is, at_least, at_most, ..
            } => Some(Compare {
                is: *is,
                at_least: *at_least,
                at_most: *at_most,
            }),
            _ => None,
        }
    }
}

impl Compare {
    pub fn holds(&self, value: i64) -> bool {
        self.is.is_none_or(|v| value == v)
            && self.at_least.is_none_or(|v| value >= v)
            && self.at_most.is_none_or(|v| value <= v)
    }

    pub fn is_empty(&self) -> bool {
        self.is.is_none() && self.at_least.is_none() && self.at_most.is_none()
    }
}

impl std::fmt::Display for Compare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(v) = self.is {
            parts.push(format!("= {v}"));
        }
        if let Some(v) = self.at_least {
            parts.push(format!(">= {v}"));
        }
        if let Some(v) = self.at_most {
            parts.push(format!("<= {v}"));
        }
        write!(f, "{}", parts.join(" and "))
    }
}

/// Reads a scenario file's text; errors say `name:line:column`.
pub fn parse(name: &str, text: &str) -> Result<Scenario, ConfigError> {
    toml::from_str::<Scenario>(text).map_err(|e| placed(name, text, &e))
}

impl Scenario {
    /// The scenario in `lang` where it has words for it (English otherwise).
    pub fn translated(&self, lang: Option<&str>) -> Scenario {
        let mut out = self.clone();
        out.language = lang.filter(|l| *l != "en").map(str::to_string);
        let Some(t) = lang.and_then(|l| self.lang.get(l)) else {
            return out;
        };
        if let Some(title) = &t.title {
            out.title = title.clone();
        }
        if let Some(concept) = &t.concept {
            out.concept = concept.clone();
        }
        for (step, words) in out.steps.iter_mut().zip(&t.steps) {
            if let Some(c) = &words.caption {
                step.caption = c.clone();
            }
            if let Some(w) = &words.why {
                step.why = Some(w.clone());
            }
        }
        out
    }
}

/// `__consumer_offsets` partitions in a scenario's cluster: few, so that its timeline is
/// about the scenario's own topics.
pub const OFFSETS_TOPIC_PARTITIONS: i32 = 3;

impl Setup {
    /// `base` (the configuration's cluster settings) with the scenario's rules.
    pub fn cluster_config(&self, base: crate::engine::ClusterConfig) -> crate::engine::ClusterConfig {
        let mut c = base;
        c.brokers = self.brokers;
        c.unclean_leader_election = self.unclean_election;
        c.leader_election = match self.leader_election {
            ElectionRule::Kafka => crate::engine::LeaderElection::Kafka,
            ElectionRule::Balanced => crate::engine::LeaderElection::Balanced,
        };
        c.auto_leader_rebalance = self.auto_rebalance;
        if let Some(ms) = self.leader_imbalance_check_interval_ms {
            c.leader_imbalance_check_interval_ms = ms;
        }
        if let Some(ms) = self.replica_lag_time_max_ms {
            c.replica_lag_time_max_ms = ms;
        }
        if let Some(ms) = self.broker_session_timeout_ms {
            c.broker_session_timeout_ms = ms;
        }
        // Few offsets partitions keep a scenario's timeline about its own topics.
        c.offsets_topic_partitions = OFFSETS_TOPIC_PARTITIONS;
        c.offsets_topic_replication_factor = self.brokers.min(3);
        c.group_initial_rebalance_delay_ms = 0;
        c
    }

    pub fn topic_config(&self, t: &TopicSetup) -> crate::engine::TopicConfig {
        crate::engine::TopicConfig::new(t.partitions, t.replication_factor)
            .with_min_insync_replicas(t.min_insync_replicas)
            .with_unclean_leader_election(t.unclean_election.unwrap_or(self.unclean_election))
    }
}
