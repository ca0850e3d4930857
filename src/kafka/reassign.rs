//! Partition reassignment plans (KIP-455) as Kafka's tools write them: the JSON of
//! kafka-reassign-partitions.sh (`{"version":1,"partitions":[{"topic","partition","replicas"}]}`)
//! and the planners that propose one from a cluster's current assignment: move one replica,
//! drain a broker, change a topic's replication factor, spread topics over some brokers,
//! even out replicas and preferred leaders. The console and `kdeck reassign` both plan here,
//! for the embedded cluster and an external one alike.
//!
//! Where Kafka's `--generate` draws a fresh random assignment for every partition, these
//! planners move as few replicas as they can: every move copies a whole log.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::BrokerId;

/// One partition's replicas, in order: the first is its preferred leader.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Assignment {
    pub topic: String,
    pub partition: i32,
    pub replicas: Vec<BrokerId>,
}

impl Assignment {
    pub fn new(topic: impl Into<String>, partition: i32, replicas: Vec<BrokerId>) -> Assignment {
        Assignment {
            topic: topic.into(),
            partition,
            replicas,
        }
    }

    pub fn name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }
}

/// A reassignment in progress, as ListPartitionReassignments reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ongoing {
    pub topic: String,
    pub partition: i32,
    /// Every replica: the target's, then those leaving.
    pub replicas: Vec<BrokerId>,
    pub adding: Vec<BrokerId>,
    pub removing: Vec<BrokerId>,
}

impl Ongoing {
    /// The replicas the move ends with.
    pub fn target(&self) -> Vec<BrokerId> {
        self.replicas
            .iter()
            .copied()
            .filter(|r| !self.removing.contains(r))
            .collect()
    }

    /// The replicas before the move began.
    pub fn original(&self) -> Vec<BrokerId> {
        self.replicas
            .iter()
            .copied()
            .filter(|r| !self.adding.contains(r))
            .collect()
    }
}

/// What a plan should achieve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Goal {
    /// Move one replica of a partition from a broker to another (its place in the list kept).
    Move {
        topic: String,
        partition: i32,
        from: BrokerId,
        to: BrokerId,
    },
    /// Move every replica off a broker, onto the least loaded others: of the `topics`, or of
    /// every topic when none is named.
    Drain { broker: BrokerId, topics: Vec<String> },
    /// Give every partition of a topic this many replicas.
    ReplicationFactor { topic: String, replication_factor: usize },
    /// Keep these topics' replicas on these brokers only, evened out among them
    /// (kafka-reassign-partitions.sh --generate, with the fewest moves).
    Spread {
        topics: Vec<String>,
        brokers: Vec<BrokerId>,
    },
    /// Even out the replicas, then the preferred leaders, over all the brokers: of the
    /// `topics`, or of every topic when none is named.
    Balance { topics: Vec<String> },
}

/// The proposed assignments of the partitions that change, in topic and partition order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    pub partitions: Vec<Assignment>,
}

/// kafka-reassign-partitions.sh's reassignment file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    version: i64,
    partitions: Vec<PlanPartition>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanPartition {
    topic: String,
    partition: i32,
    replicas: Vec<BrokerId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log_dirs: Option<Vec<String>>,
}

/// kafka-reassign-partitions.sh's `--topics-to-move-json-file`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TopicsFile {
    #[serde(default = "one")]
    version: i64,
    topics: Vec<TopicEntry>,
}

fn one() -> i64 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TopicEntry {
    topic: String,
}

impl Plan {
    /// Reads a reassignment file, with Kafka's checks (`parsePartitionReassignmentData`):
    /// version 1, at least one partition, none twice, no empty or duplicated replica list,
    /// log dirs (if given) one per replica. kdeck brokers have one log dir each, so only
    /// `"any"` is taken.
    pub fn from_json(text: &str) -> Result<Plan, String> {
        let file: PlanFile = serde_json::from_str(text).map_err(|e| json_error(&e))?;
        if file.version != 1 {
            return Err(format!(
                "unsupported reassignment file version {} (1 is known)",
                file.version
            ));
        }
        if file.partitions.is_empty() {
            return Err("the reassignment file lists no partitions".into());
        }
        let mut seen = BTreeSet::new();
        let mut partitions = Vec::with_capacity(file.partitions.len());
        for p in file.partitions {
            let name = format!("{}-{}", p.topic, p.partition);
            if p.topic.is_empty() || p.partition < 0 {
                return Err(format!("{name:?} is not a partition"));
            }
            if !seen.insert((p.topic.clone(), p.partition)) {
                return Err(format!("partition {name} is listed twice"));
            }
            if p.replicas.is_empty() {
                return Err(format!("partition {name} has an empty replica list"));
            }
            let distinct: BTreeSet<&BrokerId> = p.replicas.iter().collect();
            if distinct.len() != p.replicas.len() {
                return Err(format!("partition {name} lists a replica twice: {:?}", p.replicas));
            }
            if let Some(dirs) = &p.log_dirs {
                if dirs.len() != p.replicas.len() {
                    return Err(format!(
                        "partition {name}: {} log dirs for {} replicas",
                        dirs.len(),
                        p.replicas.len()
                    ));
                }
                if let Some(dir) = dirs.iter().find(|d| d.as_str() != "any") {
                    return Err(format!(
                        "partition {name}: log dir {dir:?}: moving replicas between a broker's log dirs is not supported (use \"any\")"
                    ));
                }
            }
            partitions.push(Assignment::new(p.topic, p.partition, p.replicas));
        }
        partitions.sort();
        Ok(Plan { partitions })
    }

    /// The file kafka-reassign-partitions.sh --execute reads, one partition per line.
    pub fn to_json(&self) -> String {
        let lines: Vec<String> = self
            .partitions
            .iter()
            .map(|a| {
                let entry = PlanPartition {
                    topic: a.topic.clone(),
                    partition: a.partition,
                    replicas: a.replicas.clone(),
                    log_dirs: Some(vec!["any".to_string(); a.replicas.len()]),
                };
                serde_json::to_string(&entry).unwrap_or_default()
            })
            .collect();
        format!("{{\"version\":1,\"partitions\":[\n  {}\n]}}", lines.join(",\n  "))
    }

    /// The current assignments of this plan's partitions: the file that undoes it.
    pub fn rollback(&self, current: &[Assignment]) -> Plan {
        let partitions = self
            .partitions
            .iter()
            .filter_map(|p| {
                current
                    .iter()
                    .find(|c| c.topic == p.topic && c.partition == p.partition)
                    .cloned()
            })
            .collect();
        Plan { partitions }
    }

    /// Each partition of the plan with its replicas now and after: (now, after); `now` is
    /// empty for a partition the cluster does not have.
    pub fn diff(&self, current: &[Assignment]) -> Vec<(Assignment, Vec<BrokerId>)> {
        self.partitions
            .iter()
            .map(|p| {
                let now = current
                    .iter()
                    .find(|c| c.topic == p.topic && c.partition == p.partition)
                    .map_or_else(Vec::new, |c| c.replicas.clone());
                (Assignment::new(p.topic.clone(), p.partition, now), p.replicas.clone())
            })
            .collect()
    }

    /// How many replicas the plan copies (a replica a partition gains).
    pub fn replicas_moved(&self, current: &[Assignment]) -> usize {
        self.diff(current)
            .iter()
            .map(|(now, after)| after.iter().filter(|b| !now.replicas.contains(b)).count())
            .sum()
    }
}

/// A broker's bound on what it serves as leader to throttled replicas, bytes/s (KIP-73).
pub const LEADER_THROTTLED_RATE: &str = "leader.replication.throttled.rate";
/// A broker's bound on what it fetches as follower for throttled replicas, bytes/s.
pub const FOLLOWER_THROTTLED_RATE: &str = "follower.replication.throttled.rate";
/// A topic's replicas (`partition:broker,...` or `*`) whose leaders are throttled.
pub const LEADER_THROTTLED_REPLICAS: &str = "leader.replication.throttled.replicas";
/// A topic's replicas whose fetching (as followers) is throttled.
pub const FOLLOWER_THROTTLED_REPLICAS: &str = "follower.replication.throttled.replicas";

/// `partition:broker` pairs of a throttled replicas list.
type Pairs = BTreeSet<(i32, BrokerId)>;

/// Whose config a throttle sets.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ThrottleTarget {
    Broker(BrokerId),
    Topic(String),
}

/// The replication throttle of a plan, as kafka-reassign-partitions.sh `--throttle` sets
/// it (Kafka's `modifyInterBrokerThrottle` over `calculateReassigningBrokers`): both rates on
/// every broker taking part, holding a moving partition's current replica or receiving one;
/// each moving topic's leader throttled replicas are its moving partitions' current replicas,
/// its follower throttled replicas the ones they gain. A rate acts only on the replicas
/// those lists name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Throttle {
    /// Bytes per second.
    pub rate: u64,
    /// The brokers taking part: both rates are set on each.
    pub brokers: BTreeSet<BrokerId>,
    /// By topic: its leader and its follower throttled replicas lists.
    pub topics: BTreeMap<String, (String, String)>,
}

impl Throttle {
    /// The plan's throttle at `rate` bytes/s, for the partitions that change.
    pub fn of(plan: &Plan, current: &[Assignment], rate: u64) -> Throttle {
        let mut throttle = Throttle {
            rate,
            brokers: BTreeSet::new(),
            topics: BTreeMap::new(),
        };
        let mut lists: BTreeMap<String, (Pairs, Pairs)> = BTreeMap::new();
        for (now, after) in plan.diff(current) {
            if now.replicas == after {
                continue;
            }
            let (leaders, followers) = lists.entry(now.topic.clone()).or_default();
            for b in &now.replicas {
                throttle.brokers.insert(*b);
                leaders.insert((now.partition, *b));
            }
            for b in after.iter().filter(|b| !now.replicas.contains(b)) {
                throttle.brokers.insert(*b);
                followers.insert((now.partition, *b));
            }
        }
        let text = |pairs: &Pairs| {
            pairs
                .iter()
                .map(|(p, b)| format!("{p}:{b}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        throttle.topics = lists
            .iter()
            .map(|(topic, (l, f))| (topic.clone(), (text(l), text(f))))
            .collect();
        throttle
    }

    /// Each config to set, by whose it is, in broker then topic order.
    pub fn configs(&self) -> Vec<(ThrottleTarget, Vec<(String, String)>)> {
        let rate = self.rate.to_string();
        let mut out: Vec<(ThrottleTarget, Vec<(String, String)>)> = self
            .brokers
            .iter()
            .map(|b| {
                let set = vec![
                    (LEADER_THROTTLED_RATE.to_string(), rate.clone()),
                    (FOLLOWER_THROTTLED_RATE.to_string(), rate.clone()),
                ];
                (ThrottleTarget::Broker(*b), set)
            })
            .collect();
        out.extend(self.topics.iter().map(|(topic, (l, f))| {
            (
                ThrottleTarget::Topic(topic.clone()),
                vec![
                    (LEADER_THROTTLED_REPLICAS.to_string(), l.clone()),
                    (FOLLOWER_THROTTLED_REPLICAS.to_string(), f.clone()),
                ],
            )
        }));
        out
    }
}

/// Reads `--topics-to-move-json-file`'s `{"topics":[{"topic":"foo"}],"version":1}`.
pub fn topics_from_json(text: &str) -> Result<Vec<String>, String> {
    let file: TopicsFile = serde_json::from_str(text).map_err(|e| json_error(&e))?;
    if file.version != 1 {
        return Err(format!("unsupported topics file version {} (1 is known)", file.version));
    }
    if file.topics.is_empty() {
        return Err("the topics file lists no topics".into());
    }
    Ok(file.topics.into_iter().map(|t| t.topic).collect())
}

fn json_error(error: &serde_json::Error) -> String {
    format!("line {}, column {}: {error}", error.line(), error.column())
}

/// Proposes a plan reaching `goal` from the `current` assignment of every partition of the
/// cluster (the load of each broker counts them all), over the live `brokers`.
pub fn propose(current: &[Assignment], brokers: &[BrokerId], goal: &Goal) -> Result<Plan, String> {
    let brokers: BTreeSet<BrokerId> = brokers.iter().copied().collect();
    if brokers.is_empty() {
        return Err("no live broker to place replicas on".into());
    }
    let mut next: Vec<Assignment> = current.to_vec();
    next.sort();
    match goal {
        Goal::Move {
            topic,
            partition,
            from,
            to,
        } => {
            let a = next
                .iter_mut()
                .find(|a| &a.topic == topic && a.partition == *partition)
                .ok_or_else(|| format!("no partition {topic}-{partition}"))?;
            let at = a.replicas.iter().position(|r| r == from).ok_or_else(|| {
                format!(
                    "broker {from} holds no replica of {topic}-{partition} ({:?})",
                    a.replicas
                )
            })?;
            if a.replicas.contains(to) {
                return Err(format!("broker {to} already holds a replica of {topic}-{partition}"));
            }
            if !brokers.contains(to) {
                return Err(format!("broker {to} is not a live broker of the cluster"));
            }
            a.replicas[at] = *to;
        }
        Goal::Drain { broker, topics } => {
            if !current.iter().any(|a| a.replicas.contains(broker)) && !brokers.contains(broker) {
                return Err(format!("broker {broker} is not in the cluster"));
            }
            known_topics(&next, topics)?;
            let others: BTreeSet<BrokerId> = brokers.iter().copied().filter(|b| b != broker).collect();
            let chosen = |a: &Assignment| topics.is_empty() || topics.contains(&a.topic);
            // Only the drained broker's replicas move (a replica on a dead broker stays put).
            let keep: BTreeSet<BrokerId> = next
                .iter()
                .flat_map(|a| a.replicas.iter().copied())
                .chain(others.iter().copied())
                .filter(|b| b != broker)
                .collect();
            replace_outside(&mut next, &keep, &others, chosen)?;
        }
        Goal::ReplicationFactor {
            topic,
            replication_factor,
        } => {
            let rf = *replication_factor;
            if rf == 0 || rf > brokers.len() {
                return Err(format!(
                    "a replication factor of {rf} needs between 1 and {} live brokers",
                    brokers.len()
                ));
            }
            if !next.iter().any(|a| &a.topic == topic) {
                return Err(format!("no topic {topic}"));
            }
            for i in 0..next.len() {
                if &next[i].topic != topic {
                    continue;
                }
                while next[i].replicas.len() < rf {
                    let load = replica_load(&next, &brokers);
                    let pick = least_loaded(&load, |b| !next[i].replicas.contains(&b))
                        .ok_or_else(|| format!("no broker left to add to {}", next[i].name()))?;
                    next[i].replicas.push(pick);
                }
                while next[i].replicas.len() > rf {
                    // The preferred leader stays; of the others the most loaded goes.
                    let load = replica_load(&next, &brokers);
                    let drop = next[i].replicas[1..]
                        .iter()
                        .enumerate()
                        .max_by_key(|(at, b)| (load.get(b).copied().unwrap_or(0), *at))
                        .map(|(at, _)| at + 1)
                        .unwrap_or(next[i].replicas.len() - 1);
                    next[i].replicas.remove(drop);
                }
            }
        }
        Goal::Spread { topics, brokers: onto } => {
            let onto: BTreeSet<BrokerId> = onto.iter().copied().collect();
            if let Some(b) = onto.iter().find(|b| !brokers.contains(b)) {
                return Err(format!("broker {b} is not a live broker of the cluster"));
            }
            known_topics(&next, topics)?;
            let chosen = |a: &Assignment| topics.contains(&a.topic);
            replace_outside(&mut next, &onto, &onto, chosen)?;
            even_out(&mut next, &onto, chosen);
        }
        Goal::Balance { topics } => {
            known_topics(&next, topics)?;
            let chosen = |a: &Assignment| topics.is_empty() || topics.contains(&a.topic);
            replace_outside(&mut next, &brokers, &brokers, chosen)?;
            even_out(&mut next, &brokers, chosen);
        }
    }
    let mut before: Vec<Assignment> = current.to_vec();
    before.sort();
    let partitions = next
        .into_iter()
        .filter(|a| {
            before
                .iter()
                .find(|b| b.topic == a.topic && b.partition == a.partition)
                .is_none_or(|b| b.replicas != a.replicas)
        })
        .collect();
    Ok(Plan { partitions })
}

fn known_topics(all: &[Assignment], topics: &[String]) -> Result<(), String> {
    match topics.iter().find(|t| !all.iter().any(|a| &a.topic == *t)) {
        Some(t) => Err(format!("no topic {t}")),
        None => Ok(()),
    }
}

/// Replicas per broker of `brokers` (every broker listed, at 0 when it holds none).
fn replica_load(all: &[Assignment], brokers: &BTreeSet<BrokerId>) -> BTreeMap<BrokerId, usize> {
    let mut load: BTreeMap<BrokerId, usize> = brokers.iter().map(|b| (*b, 0)).collect();
    for a in all {
        for r in &a.replicas {
            if let Some(n) = load.get_mut(r) {
                *n += 1;
            }
        }
    }
    load
}

/// Preferred leaderships (first replicas) per broker of `brokers`.
fn leader_load(all: &[Assignment], brokers: &BTreeSet<BrokerId>) -> BTreeMap<BrokerId, usize> {
    let mut load: BTreeMap<BrokerId, usize> = brokers.iter().map(|b| (*b, 0)).collect();
    for a in all {
        if let Some(n) = a.replicas.first().and_then(|r| load.get_mut(r)) {
            *n += 1;
        }
    }
    load
}

/// The broker with the fewest replicas among those `allowed` (the lowest id on a tie).
fn least_loaded(load: &BTreeMap<BrokerId, usize>, allowed: impl Fn(BrokerId) -> bool) -> Option<BrokerId> {
    load.iter()
        .filter(|(b, _)| allowed(**b))
        .min_by_key(|(b, n)| (**n, **b))
        .map(|(b, _)| *b)
}

/// Moves the replicas of the `chosen` partitions that sit outside `keep` to the least
/// loaded brokers of `onto`. A replica leaving the head of the list hands the preferred
/// leadership to the next one (it holds the data already); the newcomer joins at the end.
fn replace_outside(
    all: &mut [Assignment],
    keep: &BTreeSet<BrokerId>,
    onto: &BTreeSet<BrokerId>,
    chosen: impl Fn(&Assignment) -> bool,
) -> Result<(), String> {
    for i in 0..all.len() {
        if !chosen(&all[i]) {
            continue;
        }
        while let Some(at) = all[i].replicas.iter().position(|r| !keep.contains(r)) {
            let load = replica_load(all, onto);
            let Some(pick) = least_loaded(&load, |b| !all[i].replicas.contains(&b)) else {
                return Err(format!(
                    "{} has {} replicas but only {} brokers can take them (name the topics to move with --topic)",
                    all[i].name(),
                    all[i].replicas.len(),
                    onto.len()
                ));
            };
            all[i].replicas.remove(at);
            all[i].replicas.push(pick);
        }
    }
    Ok(())
}

/// Evens out the replicas of the `chosen` partitions over `onto`, then their preferred
/// leaders, one move at a time from the busiest broker to the idlest.
fn even_out(all: &mut [Assignment], onto: &BTreeSet<BrokerId>, chosen: impl Fn(&Assignment) -> bool) {
    // Each move lowers the spread between the busiest and the idlest: a bound, not a guess.
    let limit = all.iter().map(|a| a.replicas.len()).sum::<usize>() + 1;
    for _ in 0..limit {
        let load = replica_load(all, onto);
        let (Some((&busy, &most)), Some((&idle, &least))) = (
            load.iter().max_by_key(|(b, n)| (**n, -**b)),
            load.iter().min_by_key(|(b, n)| (**n, **b)),
        ) else {
            return;
        };
        if most <= least + 1 {
            break;
        }
        let Some(a) = all
            .iter_mut()
            .find(|a| chosen(a) && a.replicas.contains(&busy) && !a.replicas.contains(&idle))
        else {
            break;
        };
        if let Some(r) = a.replicas.iter_mut().find(|r| **r == busy) {
            *r = idle;
        }
    }
    for _ in 0..limit {
        let load = leader_load(all, onto);
        let (Some((&busy, &most)), Some((&idle, &least))) = (
            load.iter().max_by_key(|(b, n)| (**n, -**b)),
            load.iter().min_by_key(|(b, n)| (**n, **b)),
        ) else {
            return;
        };
        if most <= least + 1 {
            break;
        }
        let Some(a) = all
            .iter_mut()
            .find(|a| chosen(a) && a.replicas.first() == Some(&busy) && a.replicas.contains(&idle))
        else {
            break;
        };
        a.replicas.retain(|r| *r != idle);
        a.replicas.insert(0, idle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(parts: &[(&str, i32, &[BrokerId])]) -> Vec<Assignment> {
        parts
            .iter()
            .map(|(t, p, r)| Assignment::new(*t, *p, r.to_vec()))
            .collect()
    }

    fn apply(current: &[Assignment], plan: &Plan) -> Vec<Assignment> {
        current
            .iter()
            .map(|c| {
                plan.partitions
                    .iter()
                    .find(|p| p.topic == c.topic && p.partition == c.partition)
                    .cloned()
                    .unwrap_or_else(|| c.clone())
            })
            .collect()
    }

    #[test]
    fn the_json_round_trips_in_kafkas_format_and_bad_files_say_where() {
        let text = r#"{"version":1,"partitions":[{"topic":"orders","partition":1,"replicas":[2,0],"log_dirs":["any","any"]},{"topic":"orders","partition":0,"replicas":[1]}]}"#;
        let plan = Plan::from_json(text).expect("parses");
        assert_eq!(plan.partitions, cluster(&[("orders", 0, &[1]), ("orders", 1, &[2, 0])]));
        assert_eq!(Plan::from_json(&plan.to_json()), Ok(plan));

        for (bad, says) in [
            (r#"{"version":2,"partitions":[]}"#, "version 2"),
            (r#"{"version":1,"partitions":[]}"#, "no partitions"),
            (
                r#"{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[]}]}"#,
                "empty replica",
            ),
            (
                r#"{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,1]}]}"#,
                "twice",
            ),
            (
                r#"{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1]},{"topic":"a","partition":0,"replicas":[2]}]}"#,
                "listed twice",
            ),
            (
                r#"{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":["/d"]}]}"#,
                "not supported",
            ),
            ("{\"version\":1,\n \"partitions\": [oops]}", "line 2, column"),
        ] {
            let error = Plan::from_json(bad).expect_err(bad);
            assert!(error.contains(says), "{bad}: {error}");
        }
        assert_eq!(
            topics_from_json(r#"{"topics":[{"topic":"a"},{"topic":"b"}],"version":1}"#),
            Ok(vec!["a".to_string(), "b".to_string()])
        );
    }

    #[test]
    fn draining_a_broker_moves_only_its_replicas_to_the_least_loaded_others() {
        let now = cluster(&[
            ("t", 0, &[0, 1, 2]),
            ("t", 1, &[1, 2, 3]),
            ("t", 2, &[2, 3, 0]),
            ("u", 0, &[3]),
        ]);
        let drain = |topics: &[&str]| Goal::Drain {
            broker: 0,
            topics: topics.iter().map(|t| t.to_string()).collect(),
        };
        let plan = propose(&now, &[0, 1, 2, 3], &drain(&[])).expect("a plan");
        let after = apply(&now, &plan);
        assert!(after.iter().all(|a| !a.replicas.contains(&0)), "{after:?}");
        assert_eq!(
            plan.partitions.len(),
            2,
            "only the partitions on broker 0 move: {plan:?}"
        );
        // t-0 led by 0: its next replica becomes the preferred leader; the newcomer goes last.
        assert_eq!(after[0].replicas, vec![1, 2, 3]);
        assert_eq!(plan.replicas_moved(&now), 2);
        assert!(propose(&now, &[0, 1, 2], &drain(&[])).is_err(), "RF 3 on 2 brokers");
        let only_u = propose(&now, &[0, 1, 2, 3], &drain(&["u"])).expect("a plan");
        assert!(only_u.partitions.is_empty(), "u has no replica on 0: {only_u:?}");
        // A replica on a broker that is down (not live) is not the drain's to move.
        let with_dead = cluster(&[("t", 0, &[0, 5])]);
        let plan = propose(&with_dead, &[0, 1], &drain(&[])).expect("a plan");
        assert_eq!(plan.partitions, cluster(&[("t", 0, &[5, 1])]));
    }

    #[test]
    fn a_replication_factor_grows_onto_idle_brokers_and_shrinks_keeping_the_preferred_leader() {
        let now = cluster(&[("t", 0, &[0]), ("t", 1, &[1]), ("u", 0, &[2, 1])]);
        let goal = |rf| Goal::ReplicationFactor {
            topic: "t".into(),
            replication_factor: rf,
        };
        let up = apply(&now, &propose(&now, &[0, 1, 2, 3], &goal(2)).expect("grow"));
        assert_eq!(up[0].replicas, vec![0, 3]);
        assert_eq!(up[1].replicas[0], 1);
        assert_eq!(up[1].replicas.len(), 2);
        let down = apply(&up, &propose(&up, &[0, 1, 2, 3], &goal(1)).expect("shrink"));
        assert_eq!(down[0].replicas, vec![0]);
        assert_eq!(down[1].replicas, vec![1]);
        assert!(propose(&now, &[0, 1], &goal(3)).is_err());
    }

    #[test]
    fn balancing_evens_out_replicas_and_preferred_leaders() {
        // Everything piled on brokers 0 and 1; broker 2 just joined.
        let now: Vec<Assignment> = (0..6).map(|p| Assignment::new("t", p, vec![0, 1])).collect();
        let balance = Goal::Balance { topics: vec![] };
        let plan = propose(&now, &[0, 1, 2], &balance).expect("a plan");
        let after = apply(&now, &plan);
        let brokers: BTreeSet<BrokerId> = [0, 1, 2].into();
        let replicas = replica_load(&after, &brokers);
        let leaders = leader_load(&after, &brokers);
        assert!(replicas.values().all(|n| *n == 4), "{replicas:?}");
        assert!(leaders.values().all(|n| *n == 2), "{leaders:?}");
        assert!(after.iter().all(|a| a.replicas.len() == 2));
        let again = propose(&after, &[0, 1, 2], &balance).expect("a plan");
        assert!(
            again.partitions.is_empty(),
            "a balanced cluster needs no move: {again:?}"
        );
    }

    #[test]
    fn spreading_topics_keeps_them_on_the_chosen_brokers_only() {
        let now = cluster(&[("t", 0, &[0, 1]), ("t", 1, &[1, 0]), ("other", 0, &[0, 1])]);
        let goal = Goal::Spread {
            topics: vec!["t".into()],
            brokers: vec![2, 3],
        };
        let plan = propose(&now, &[0, 1, 2, 3], &goal).expect("a plan");
        let after = apply(&now, &plan);
        assert!(
            after[..2].iter().all(|a| a.replicas.iter().all(|r| *r >= 2)),
            "{after:?}"
        );
        assert_eq!(after[2].replicas, vec![0, 1], "other topics stay");
        assert_ne!(after[0].replicas[0], after[1].replicas[0], "leaders spread");
    }

    #[test]
    fn moving_one_replica_keeps_its_place_and_refuses_nonsense() {
        let now = cluster(&[("t", 0, &[0, 1])]);
        let go = |from, to| Goal::Move {
            topic: "t".into(),
            partition: 0,
            from,
            to,
        };
        let plan = propose(&now, &[0, 1, 2], &go(0, 2)).expect("a plan");
        assert_eq!(plan.partitions, cluster(&[("t", 0, &[2, 1])]));
        assert_eq!(plan.rollback(&now).partitions, now);
        assert!(propose(&now, &[0, 1, 2], &go(2, 0)).is_err(), "2 holds none");
        assert!(propose(&now, &[0, 1, 2], &go(0, 1)).is_err(), "1 holds one already");
        assert!(propose(&now, &[0, 1, 2], &go(0, 9)).is_err(), "9 is no broker");
    }

    #[test]
    fn a_throttle_limits_the_current_replicas_as_leaders_and_the_new_ones_as_followers() {
        let current = vec![
            Assignment::new("a", 0, vec![0, 1, 2]),
            Assignment::new("a", 1, vec![1, 2, 3]),
            Assignment::new("b", 0, vec![2, 3, 0]),
        ];
        let plan = Plan {
            partitions: vec![
                Assignment::new("a", 0, vec![0, 1, 3]),
                Assignment::new("a", 1, vec![1, 2, 3]),
                Assignment::new("b", 0, vec![4, 3, 0]),
            ],
        };
        let t = Throttle::of(&plan, &current, 1000);
        // Kafka's reassigning brokers: current replicas and receivers alike.
        assert_eq!(t.brokers, [0, 1, 2, 3, 4].into());
        assert_eq!(t.topics["a"], ("0:0,0:1,0:2".to_string(), "0:3".to_string()));
        assert_eq!(t.topics["b"], ("0:0,0:2,0:3".to_string(), "0:4".to_string()));
        let configs = t.configs();
        assert_eq!(
            configs[0],
            (
                ThrottleTarget::Broker(0),
                vec![
                    (LEADER_THROTTLED_RATE.to_string(), "1000".to_string()),
                    (FOLLOWER_THROTTLED_RATE.to_string(), "1000".to_string())
                ]
            ),
            "a broker that only gives still gets both rates, as Kafka sets them"
        );
        assert_eq!(
            configs[3],
            (
                ThrottleTarget::Broker(3),
                vec![
                    (LEADER_THROTTLED_RATE.to_string(), "1000".to_string()),
                    (FOLLOWER_THROTTLED_RATE.to_string(), "1000".to_string())
                ]
            )
        );
        assert_eq!(configs.len(), 5 + 2, "five brokers, two topics");
    }
}
