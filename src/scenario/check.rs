//! What a step waits for and expects, evaluated against the cluster view as it is now and
//! as it was when the step started, the timeline events since then and the workload's
//! counts. Each evaluation says what it saw, so a failed check on screen tells the room
//! what the cluster did instead.
//!
//! Each kind of check is decided by its own function, in a file per family of what it
//! reads (a partition, the brokers, a group, the workload's counts, the timeline), so a
//! check's rule can be read and changed without the others around it; `evaluate` only
//! says which function decides which kind.

mod cluster;
mod group;
mod partition;
mod timeline;
mod workload;

use std::collections::BTreeMap;

use super::format::{Check, Compare};
use crate::view::{BrokerId, ClusterView};

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

/// A number against its bounds, saying the number: the one shape every counting check
/// shares, so their verdicts read alike ("lag 12").
fn counted(value: i64, cmp: Compare, what: &str) -> Verdict {
    Verdict::new(cmp.holds(value), format!("{what} {value}"))
}

fn leader_text(leader: Option<BrokerId>) -> String {
    leader.map_or_else(|| "none".into(), |l| format!("broker {l}"))
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

/// Evaluates `check` now. A check that cannot be evaluated (no such partition, group or
/// broker) fails, its verdict saying why.
pub fn evaluate(
    check: &Check,
    view: &ClusterView,
    base: &Baseline,
    events: &[String],
    bound: &BTreeMap<String, BrokerId>,
) -> Verdict {
    let was: &ClusterView = &base.view;
    let verdict = match check {
        Check::LeaderChanged { partition: p } => partition::leader_changed(view, was, p),
        Check::Leader { partition: p, broker } => partition::leader(view, p, broker, bound),
        Check::Offline { partition: p } => partition::offline(view, p),
        Check::EpochGrew { partition: p, by } => partition::epoch_grew(view, was, p, *by),
        Check::IsrSize {
            partition: p,
            is,
            at_least,
            at_most,
        } => partition::isr_size(view, p, compare(*is, *at_least, *at_most)),
        Check::InIsr {
            partition: p,
            broker,
            is,
        } => partition::in_isr(view, p, broker, *is, bound),
        Check::Hw {
            partition: p,
            is,
            at_least,
            at_most,
        } => partition::hw(view, p, compare(*is, *at_least, *at_most)),
        Check::HwGrew { partition: p, by } => partition::hw_grew(view, base, p, *by),
        Check::HwStill { partition: p } => partition::hw_still(view, base, p),
        Check::ReplicasEqual { partition: p } => partition::replicas_equal(view, p),
        Check::Broker { broker, status } => cluster::broker(view, broker, status, bound),
        Check::ControllerChanged => Ok(cluster::controller_changed(view, was)),
        Check::Leads {
            broker,
            topic,
            is,
            at_least,
            at_most,
        } => cluster::leads(view, broker, topic.as_deref(), compare(*is, *at_least, *at_most), bound),
        Check::PreferredLeaders {
            topic,
            is,
            at_least,
            at_most,
        } => Ok(cluster::preferred_leaders(
            view,
            topic.as_deref(),
            compare(*is, *at_least, *at_most),
        )),
        Check::UnderReplicated {
            topic,
            is,
            at_least,
            at_most,
        } => Ok(cluster::under_replicated(
            view,
            topic.as_deref(),
            compare(*is, *at_least, *at_most),
        )),
        Check::CoordinatorChanged { group: g } => group::coordinator_changed(view, was, g),
        Check::GroupState { group: g, state } => group::state(view, g, state),
        Check::GroupMembers {
            group: g,
            is,
            at_least,
            at_most,
        } => group::members(view, g, compare(*is, *at_least, *at_most)),
        Check::GenerationGrew { group: g, by } => group::generation_grew(view, was, g, *by),
        Check::FullyAssigned { group: g } => group::fully_assigned(view, g),
        Check::Lag {
            group: g,
            is,
            at_least,
            at_most,
        } => group::lag(view, g, compare(*is, *at_least, *at_most)),
        Check::OffsetsKept { group: g } => group::offsets_kept(view, was, g),
        Check::Acked { is, at_least, at_most } => Ok(workload::acked(view, was, compare(*is, *at_least, *at_most))),
        Check::ProduceErrors {
            error,
            is,
            at_least,
            at_most,
        } => Ok(workload::produce_errors(
            view,
            was,
            error.as_deref(),
            compare(*is, *at_least, *at_most),
        )),
        Check::LostAcked { is, at_least, at_most } => Ok(workload::lost_acked(view, compare(*is, *at_least, *at_most))),
        Check::KeyOrderHeld { group: g } => Ok(workload::key_order_held(view, g)),
        Check::KeysInManyPartitions { is, at_least, at_most } => Ok(workload::keys_in_many_partitions(
            view,
            compare(*is, *at_least, *at_most),
        )),
        Check::Event { text } => Ok(timeline::event(events, text)),
    };
    verdict.unwrap_or_else(Verdict::failed)
}
