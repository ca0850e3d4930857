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
    let bounds = check.bounds().unwrap_or_default();
    let value_text = |v: &toml::Value| value_text(v, bound);
    match check {
        Check::LeaderChanged { partition } => format!("{partition} has a new leader"),
        Check::Leader { partition, broker } => format!("leader of {partition} is {}", value_text(broker)),
        Check::Offline { partition } => format!("{partition} is offline"),
        Check::EpochGrew { partition, by } => format!("leader epoch of {partition} grew by {by}"),
        Check::IsrSize { partition, .. } => format!("ISR size of {partition} {}", bounds),
        Check::InIsr { partition, broker, is } => {
            let not = if *is { "" } else { "not " };
            format!("broker {} {not}in the ISR of {partition}", value_text(broker))
        }
        Check::Hw { partition, .. } => format!("HW of {partition} {}", bounds),
        Check::HwGrew { partition, by } => format!("HW of {partition} moves on by {by}"),
        Check::HwStill { partition } => format!("HW of {partition} stands still"),
        Check::ReplicasEqual { partition } => format!("every replica of {partition} has the leader's log end"),
        Check::Broker { broker, status } => format!("broker {} is {status}", value_text(broker)),
        Check::ControllerChanged => "another broker is the controller".into(),
        Check::CoordinatorChanged { group } => format!("{group} has a new coordinator"),
        Check::Leads { broker, topic, .. } => format!(
            "broker {} leads {} partitions{}",
            value_text(broker),
            bounds,
            topic.as_ref().map(|t| format!(" of {t}")).unwrap_or_default()
        ),
        Check::PreferredLeaders { topic, .. } => format!(
            "partitions led by their preferred replica{} {}",
            topic.as_ref().map(|t| format!(" ({t})")).unwrap_or_default(),
            bounds
        ),
        Check::UnderReplicated { topic, .. } => format!(
            "under-replicated partitions{} {}",
            topic.as_ref().map(|t| format!(" of {t}")).unwrap_or_default(),
            bounds
        ),
        Check::Event { text } => format!("the timeline says \"{}\"", super::target::fill(text, bound)),
        Check::Acked { .. } => {
            format!("records acknowledged {}", bounds)
        }
        Check::ProduceErrors { error, .. } => format!("{} errors {}", error.as_deref().unwrap_or("produce"), bounds),
        Check::LostAcked { .. } => {
            format!("acknowledged records lost {}", bounds)
        }
        Check::KeyOrderHeld { group } => format!("{group} saw each key's records in order"),
        Check::KeysInManyPartitions { .. } => {
            format!("keys in more than one partition {}", bounds)
        }
        Check::GroupState { group, state } => format!("{group} is {state}"),
        Check::GroupMembers { group, .. } => format!("{group} members {}", bounds),
        Check::GenerationGrew { group, by } => format!("{group}'s generation grew by {by}"),
        Check::FullyAssigned { group } => format!("every partition is assigned in {group}"),
        Check::Lag { group, .. } => format!("lag of {group} {}", bounds),
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
    let bounds = check.bounds().unwrap_or_default();
    let verdict = match check {
        Check::LeaderChanged { partition: p } => partition::leader_changed(view, was, p),
        Check::Leader { partition: p, broker } => partition::leader(view, p, broker, bound),
        Check::Offline { partition: p } => partition::offline(view, p),
        Check::EpochGrew { partition: p, by } => partition::epoch_grew(view, was, p, *by),
        Check::IsrSize { partition: p, .. } => partition::isr_size(view, p, bounds),
        Check::InIsr {
            partition: p,
            broker,
            is,
        } => partition::in_isr(view, p, broker, *is, bound),
        Check::Hw { partition: p, .. } => partition::hw(view, p, bounds),
        Check::HwGrew { partition: p, by } => partition::hw_grew(view, base, p, *by),
        Check::HwStill { partition: p } => partition::hw_still(view, base, p),
        Check::ReplicasEqual { partition: p } => partition::replicas_equal(view, p),
        Check::Broker { broker, status } => cluster::broker(view, broker, status, bound),
        Check::ControllerChanged => Ok(cluster::controller_changed(view, was)),
        Check::Leads { broker, topic, .. } => cluster::leads(view, broker, topic.as_deref(), bounds, bound),
        Check::PreferredLeaders { topic, .. } => Ok(cluster::preferred_leaders(view, topic.as_deref(), bounds)),
        Check::UnderReplicated { topic, .. } => Ok(cluster::under_replicated(view, topic.as_deref(), bounds)),
        Check::CoordinatorChanged { group: g } => group::coordinator_changed(view, was, g),
        Check::GroupState { group: g, state } => group::state(view, g, state),
        Check::GroupMembers { group: g, .. } => group::members(view, g, bounds),
        Check::GenerationGrew { group: g, by } => group::generation_grew(view, was, g, *by),
        Check::FullyAssigned { group: g } => group::fully_assigned(view, g),
        Check::Lag { group: g, .. } => group::lag(view, g, bounds),
        Check::OffsetsKept { group: g } => group::offsets_kept(view, was, g),
        Check::Acked { .. } => Ok(workload::acked(view, was, bounds)),
        Check::ProduceErrors { error, .. } => Ok(workload::produce_errors(view, was, error.as_deref(), bounds)),
        Check::LostAcked { .. } => Ok(workload::lost_acked(view, bounds)),
        Check::KeyOrderHeld { group: g } => Ok(workload::key_order_held(view, g)),
        Check::KeysInManyPartitions { .. } => Ok(workload::keys_in_many_partitions(view, bounds)),
        Check::Event { text } => Ok(timeline::event(events, &super::target::fill(text, bound))),
    };
    verdict.unwrap_or_else(Verdict::failed)
}
