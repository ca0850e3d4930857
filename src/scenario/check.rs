//! What a step waits for and expects, evaluated against the cluster view as it is now and
//! as it was when the step started, the timeline events since then and the workload's
//! counts. Each evaluation says what it saw, so a failed check on screen tells the room
//! what the cluster did instead.

use std::collections::BTreeMap;

use super::format::{Check, Compare};
use super::target::{self, parse_partition};
use crate::view::{BrokerId, ClusterView, GroupRow, PartitionRow, WorkloadStats};

/// Where a step started from.
#[derive(Debug, Clone)]
pub struct Baseline {
    pub view: std::sync::Arc<ClusterView>,
    /// Each partition's last known high watermark (the view has none while a partition is
    /// offline), by "topic-N".
    pub hw: BTreeMap<String, i64>,
}

impl Baseline {
    fn hw_of(&self, partition: &str) -> i64 {
        self.hw.get(partition).copied().unwrap_or(0)
    }
}

/// What a check saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub holds: bool,
    /// What was seen, in a short sentence.
    pub saw: String,
}

impl Verdict {
    fn new(holds: bool, saw: impl Into<String>) -> Verdict {
        Verdict { holds, saw: saw.into() }
    }

    fn failed(saw: impl Into<String>) -> Verdict {
        Verdict::new(false, saw)
    }
}

fn compare(is: Option<i64>, at_least: Option<i64>, at_most: Option<i64>) -> Compare {
    Compare { is, at_least, at_most }
}

fn partition<'a>(view: &'a ClusterView, text: &str) -> Result<&'a PartitionRow, String> {
    let (topic, number) = parse_partition(text).ok_or_else(|| format!("\"{text}\" is not a partition (topic-N)"))?;
    view.partitions
        .iter()
        .find(|p| p.topic == topic && p.partition == number)
        .ok_or_else(|| format!("no partition {text}"))
}

fn group<'a>(view: &'a ClusterView, id: &str) -> Result<&'a GroupRow, String> {
    view.groups
        .iter()
        .find(|g| g.group_id == id)
        .ok_or_else(|| format!("no group {id} yet"))
}

fn broker_list(ids: &[BrokerId]) -> String {
    let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
    format!("[{}]", ids.join(", "))
}

fn leader_text(leader: Option<BrokerId>) -> String {
    leader.map_or_else(|| "none".into(), |l| format!("broker {l}"))
}

/// The partitions of `topic`, or of every user topic.
fn user_partitions<'a>(view: &'a ClusterView, topic: Option<&'a str>) -> impl Iterator<Item = &'a PartitionRow> + 'a {
    view.partitions.iter().filter(move |p| match topic {
        Some(t) => p.topic == t,
        None => view.topic(&p.topic).is_some_and(|t| !t.internal),
    })
}

fn stats(view: &ClusterView) -> WorkloadStats {
    view.workload.clone().unwrap_or_default()
}

/// The check's name and target, as shown beside its verdict ("ISR of orders-0 >= 2").
pub fn describe(check: &Check, bound: &BTreeMap<String, BrokerId>) -> String {
    let value_text = |v: &toml::Value| value_text(v, bound);
    match check {
        Check::LeaderChanged { partition } => format!("{partition} has a new leader"),
        Check::Leader { partition, broker } => format!("leader of {partition} is {}", value_text(broker)),
        Check::Offline { partition } => format!("{partition} is offline"),
        Check::EpochGrew { partition, by } => format!("leader epoch of {partition} grew by {by}"),
        Check::IsrSize {
            partition,
            is,
            at_least,
            at_most,
        } => format!("ISR size of {partition} {}", compare(*is, *at_least, *at_most)),
        Check::InIsr { partition, broker, is } => {
            let not = if *is { "" } else { "not " };
            format!("broker {} {not}in the ISR of {partition}", value_text(broker))
        }
        Check::Hw {
            partition,
            is,
            at_least,
            at_most,
        } => format!("HW of {partition} {}", compare(*is, *at_least, *at_most)),
        Check::HwGrew { partition, by } => format!("HW of {partition} moves on by {by}"),
        Check::HwStill { partition } => format!("HW of {partition} stands still"),
        Check::ReplicasEqual { partition } => format!("every replica of {partition} has the leader's log end"),
        Check::Broker { broker, status } => format!("broker {} is {status}", value_text(broker)),
        Check::ControllerChanged => "another broker is the controller".into(),
        Check::CoordinatorChanged { group } => format!("{group} has a new coordinator"),
        Check::Leads {
            broker,
            topic,
            is,
            at_least,
            at_most,
        } => format!(
            "broker {} leads {} partitions{}",
            value_text(broker),
            compare(*is, *at_least, *at_most),
            topic.as_ref().map(|t| format!(" of {t}")).unwrap_or_default()
        ),
        Check::PreferredLeaders {
            topic,
            is,
            at_least,
            at_most,
        } => format!(
            "partitions led by their preferred replica{} {}",
            topic.as_ref().map(|t| format!(" ({t})")).unwrap_or_default(),
            compare(*is, *at_least, *at_most)
        ),
        Check::UnderReplicated {
            topic,
            is,
            at_least,
            at_most,
        } => format!(
            "under-replicated partitions{} {}",
            topic.as_ref().map(|t| format!(" of {t}")).unwrap_or_default(),
            compare(*is, *at_least, *at_most)
        ),
        Check::Event { text } => format!("the timeline says \"{text}\""),
        Check::Acked { is, at_least, at_most } => {
            format!("records acknowledged {}", compare(*is, *at_least, *at_most))
        }
        Check::ProduceErrors {
            error,
            is,
            at_least,
            at_most,
        } => format!(
            "{} errors {}",
            error.as_deref().unwrap_or("produce"),
            compare(*is, *at_least, *at_most)
        ),
        Check::LostAcked { is, at_least, at_most } => {
            format!("acknowledged records lost {}", compare(*is, *at_least, *at_most))
        }
        Check::KeyOrderHeld { group } => format!("{group} saw each key's records in order"),
        Check::KeysInManyPartitions { is, at_least, at_most } => {
            format!("keys in more than one partition {}", compare(*is, *at_least, *at_most))
        }
        Check::GroupState { group, state } => format!("{group} is {state}"),
        Check::GroupMembers {
            group,
            is,
            at_least,
            at_most,
        } => format!("{group} members {}", compare(*is, *at_least, *at_most)),
        Check::GenerationGrew { group, by } => format!("{group}'s generation grew by {by}"),
        Check::FullyAssigned { group } => format!("every partition is assigned in {group}"),
        Check::Lag {
            group,
            is,
            at_least,
            at_most,
        } => format!("lag of {group} {}", compare(*is, *at_least, *at_most)),
        Check::OffsetsKept { group } => format!("{group}'s committed offsets did not go back"),
    }
}

/// A broker as a check names it: its id, with the name it was bound to.
fn value_text(v: &toml::Value, bound: &BTreeMap<String, BrokerId>) -> String {
    match v {
        toml::Value::String(s) => match bound.get(s) {
            Some(id) => format!("{id} ({s})"),
            None => s.clone(),
        },
        other => other.to_string(),
    }
}

/// Evaluates `check` now.
pub fn evaluate(
    check: &Check,
    view: &ClusterView,
    base: &Baseline,
    events: &[String],
    bound: &BTreeMap<String, BrokerId>,
) -> Verdict {
    match evaluate_inner(check, view, base, events, bound) {
        Ok(v) => v,
        Err(e) => Verdict::failed(e),
    }
}

fn counted(value: i64, cmp: Compare, what: &str) -> Verdict {
    Verdict::new(cmp.holds(value), format!("{what} {value}"))
}

fn evaluate_inner(
    check: &Check,
    view: &ClusterView,
    base: &Baseline,
    events: &[String],
    bound: &BTreeMap<String, BrokerId>,
) -> Result<Verdict, String> {
    let was = &base.view;
    Ok(match check {
        Check::LeaderChanged { partition: p } => {
            let now = partition(view, p)?;
            let before = partition(was, p).ok().and_then(|r| r.leader);
            let leader = if now.offline() { None } else { now.leader };
            Verdict::new(
                leader.is_some() && leader != before,
                format!("leader {} (was {})", leader_text(leader), leader_text(before)),
            )
        }
        Check::Leader { partition: p, broker } => {
            let now = partition(view, p)?;
            let want = target::resolve(broker, view, bound)?;
            Verdict::new(
                now.leader == Some(want) && !now.offline(),
                format!("leader {}", leader_text(now.leader)),
            )
        }
        Check::Offline { partition: p } => {
            let now = partition(view, p)?;
            Verdict::new(now.offline(), format!("leader {}", leader_text(now.leader)))
        }
        Check::EpochGrew { partition: p, by } => {
            let now = partition(view, p)?.leader_epoch;
            let before = partition(was, p).map_or(now, |r| r.leader_epoch);
            Verdict::new(now - before >= *by, format!("epoch {now} (was {before})"))
        }
        Check::IsrSize {
            partition: p,
            is,
            at_least,
            at_most,
        } => {
            let row = partition(view, p)?;
            let size = row.isr.len() as i64;
            Verdict::new(
                compare(*is, *at_least, *at_most).holds(size),
                format!("ISR {} (size {size})", broker_list(&row.isr)),
            )
        }
        Check::InIsr {
            partition: p,
            broker,
            is,
        } => {
            let row = partition(view, p)?;
            let id = target::resolve(broker, view, bound)?;
            Verdict::new(row.isr.contains(&id) == *is, format!("ISR {}", broker_list(&row.isr)))
        }
        Check::Hw {
            partition: p,
            is,
            at_least,
            at_most,
        } => {
            let hw = partition(view, p)?.high_watermark.unwrap_or(-1);
            counted(hw, compare(*is, *at_least, *at_most), "HW")
        }
        Check::HwGrew { partition: p, by } => {
            let row = partition(view, p)?;
            let hw = if row.offline() { None } else { row.high_watermark };
            let before = base.hw_of(p);
            let grew = hw.map_or(0, |h| h - before);
            Verdict::new(
                grew >= *by,
                format!("HW {} (was {before})", hw.map_or("unknown".into(), |h| h.to_string())),
            )
        }
        Check::HwStill { partition: p } => {
            let hw = partition(view, p)?.high_watermark.unwrap_or(0);
            let before = base.hw_of(p);
            Verdict::new(hw == before, format!("HW {hw} (was {before})"))
        }
        Check::ReplicasEqual { partition: p } => {
            let row = partition(view, p)?;
            let ends: Vec<String> = row
                .replicas
                .iter()
                .map(|r| {
                    format!(
                        "{}:{}",
                        r.broker,
                        r.log_end_offset.map_or("?".into(), |o| o.to_string())
                    )
                })
                .collect();
            let leader = row.leader_log_end();
            let equal = leader.is_some() && row.replicas.iter().all(|r| r.log_end_offset == leader);
            Verdict::new(equal, format!("log ends {}", ends.join(" ")))
        }
        Check::Broker { broker, status } => {
            let id = target::resolve(broker, view, bound)?;
            let row = view
                .brokers
                .iter()
                .find(|b| b.id == id)
                .ok_or_else(|| format!("no broker {id}"))?;
            Verdict::new(
                row.status.label() == status,
                format!("broker {id} {}", row.status.label()),
            )
        }
        Check::ControllerChanged => Verdict::new(
            view.controller.is_some() && view.controller != was.controller,
            format!(
                "controller {} (was {})",
                leader_text(view.controller),
                leader_text(was.controller)
            ),
        ),
        Check::CoordinatorChanged { group: g } => {
            let now = group(view, g)?.coordinator;
            let before = group(was, g).map(|r| r.coordinator).ok();
            Verdict::new(
                before != Some(now),
                format!("coordinator broker {now} (was {})", leader_text(before)),
            )
        }
        Check::Leads {
            broker,
            topic,
            is,
            at_least,
            at_most,
        } => {
            let id = target::resolve(broker, view, bound)?;
            let n = view
                .partitions
                .iter()
                .filter(|p| topic.as_ref().is_none_or(|t| &p.topic == t))
                .filter(|p| p.leader == Some(id) && !p.offline())
                .count();
            counted(
                n as i64,
                compare(*is, *at_least, *at_most),
                &format!("broker {id} leads"),
            )
        }
        Check::PreferredLeaders {
            topic,
            is,
            at_least,
            at_most,
        } => {
            let n = user_partitions(view, topic.as_deref())
                .filter(|p| p.preferred_leads() && !p.offline())
                .count();
            counted(n as i64, compare(*is, *at_least, *at_most), "preferred leaders")
        }
        Check::UnderReplicated {
            topic,
            is,
            at_least,
            at_most,
        } => {
            let n = user_partitions(view, topic.as_deref())
                .filter(|p| p.under_replicated)
                .count();
            counted(n as i64, compare(*is, *at_least, *at_most), "under-replicated")
        }
        Check::Event { text } => {
            let found = events.iter().find(|e| e.contains(text.as_str()));
            Verdict::new(
                found.is_some(),
                found.map_or_else(|| format!("no such event in {}", events.len()), |e| e.clone()),
            )
        }
        Check::Acked { is, at_least, at_most } => {
            let n = stats(view).acked as i64 - stats(was).acked as i64;
            counted(n, compare(*is, *at_least, *at_most), "acknowledged")
        }
        Check::ProduceErrors {
            error,
            is,
            at_least,
            at_most,
        } => {
            let e = error.as_deref();
            let n = stats(view).errors_of(e) as i64 - stats(was).errors_of(e) as i64;
            counted(n, compare(*is, *at_least, *at_most), e.unwrap_or("errors"))
        }
        Check::LostAcked { is, at_least, at_most } => {
            counted(stats(view).lost_acked as i64, compare(*is, *at_least, *at_most), "lost")
        }
        Check::KeyOrderHeld { group: g } => {
            let n = stats(view).out_of_order.get(g).copied().unwrap_or(0);
            Verdict::new(n == 0, format!("{n} records out of order"))
        }
        Check::KeysInManyPartitions { is, at_least, at_most } => counted(
            stats(view).keys_in_many_partitions as i64,
            compare(*is, *at_least, *at_most),
            "keys",
        ),
        Check::GroupState { group: g, state } => {
            let row = group(view, g)?;
            Verdict::new(row.state.eq_ignore_ascii_case(state), format!("{g} {}", row.state))
        }
        Check::GroupMembers {
            group: g,
            is,
            at_least,
            at_most,
        } => {
            let n = group(view, g)?.members.len() as i64;
            counted(n, compare(*is, *at_least, *at_most), "members")
        }
        Check::GenerationGrew { group: g, by } => {
            let now = group(view, g)?.generation;
            let before = group(was, g).map_or(0, |r| r.generation);
            Verdict::new(now - before >= *by, format!("generation {now} (was {before})"))
        }
        Check::FullyAssigned { group: g } => {
            let row = group(view, g)?;
            let topics: Vec<&str> = row.offsets.iter().map(|o| o.topic.as_str()).collect();
            let wanted: Vec<&PartitionRow> = view
                .partitions
                .iter()
                .filter(|p| topics.contains(&p.topic.as_str()))
                .collect();
            let missing = wanted
                .iter()
                .filter(|p| row.owner(&p.topic, p.partition).is_none())
                .count();
            Verdict::new(
                !wanted.is_empty() && missing == 0 && row.state == "Stable",
                format!("{} {missing} of {} partitions unassigned", row.state, wanted.len()),
            )
        }
        Check::Lag {
            group: g,
            is,
            at_least,
            at_most,
        } => counted(group(view, g)?.total_lag, compare(*is, *at_least, *at_most), "lag"),
        Check::OffsetsKept { group: g } => {
            let now = group(view, g)?;
            let before = group(was, g)?;
            let back: Vec<String> = before
                .offsets
                .iter()
                .filter_map(|b| {
                    let n = now
                        .offsets
                        .iter()
                        .find(|o| o.topic == b.topic && o.partition == b.partition)?;
                    (n.committed < b.committed)
                        .then(|| format!("{}-{}: {} -> {}", b.topic, b.partition, b.committed, n.committed))
                })
                .collect();
            let missing = before.offsets.len().saturating_sub(now.offsets.len());
            Verdict::new(
                back.is_empty() && missing == 0 && !now.offsets.is_empty(),
                if back.is_empty() {
                    format!("{} committed offsets kept", now.offsets.len())
                } else {
                    format!("went back: {}", back.join(", "))
                },
            )
        }
    })
}
