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
use crate::view::lang::Lang;
use crate::view::{BrokerId, ClusterView};

/// Where a step started from.
#[derive(Debug, Clone)]
pub struct Baseline {
    pub view: std::sync::Arc<ClusterView>,
    /// Each partition's last known high watermark (the view has none while a partition is
    /// offline), by "topic-N".
    pub hw: BTreeMap<String, i64>,
    /// The language checks say what they saw in.
    pub lang: &'static Lang,
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
fn counted(lang: &Lang, value: i64, cmp: Compare, template: &str) -> Verdict {
    Verdict::new(cmp.holds(value), lang.fmt(template, &[("n", &value)]))
}

fn leader_text(lang: &Lang, leader: Option<BrokerId>) -> String {
    leader.map_or_else(
        || lang.tr("none").to_string(),
        |l| lang.fmt("broker {id}", &[("id", &l)]),
    )
}

/// The check's name and target, as shown beside its verdict ("ISR of orders-0 >= 2").
pub fn describe(check: &Check, bound: &BTreeMap<String, BrokerId>, lang: &Lang) -> String {
    let bounds = check.bounds().unwrap_or_default();
    let broker = |v: &toml::Value| value_text(v, bound);
    let of_topic = |topic: &Option<String>, template: &str| {
        topic
            .as_ref()
            .map(|t| lang.fmt(template, &[("topic", t)]))
            .unwrap_or_default()
    };
    let f = |template: &str, args: &[(&str, &dyn std::fmt::Display)]| lang.fmt(template, args);
    match check {
        Check::LeaderChanged { partition } => f("{partition} has a new leader", &[("partition", partition)]),
        Check::Leader { partition, broker: b } => f(
            "leader of {partition} is {broker}",
            &[("partition", partition), ("broker", &broker(b))],
        ),
        Check::Offline { partition } => f("{partition} is offline", &[("partition", partition)]),
        Check::EpochGrew { partition, by } => f(
            "leader epoch of {partition} grew by {by}",
            &[("partition", partition), ("by", by)],
        ),
        Check::IsrSize { partition, .. } => f(
            "ISR size of {partition} {bounds}",
            &[("partition", partition), ("bounds", &bounds)],
        ),
        Check::InIsr {
            partition,
            broker: b,
            is,
        } => f(
            if *is {
                "broker {broker} in the ISR of {partition}"
            } else {
                "broker {broker} not in the ISR of {partition}"
            },
            &[("broker", &broker(b)), ("partition", partition)],
        ),
        Check::Hw { partition, .. } => f(
            "HW of {partition} {bounds}",
            &[("partition", partition), ("bounds", &bounds)],
        ),
        Check::HwGrew { partition, by } => f(
            "HW of {partition} moves on by {by}",
            &[("partition", partition), ("by", by)],
        ),
        Check::HwStill { partition } => f("HW of {partition} stands still", &[("partition", partition)]),
        Check::ReplicasEqual { partition } => f(
            "every replica of {partition} has the leader's log end",
            &[("partition", partition)],
        ),
        Check::Broker { broker: b, status } => f(
            "broker {broker} is {status}",
            &[("broker", &broker(b)), ("status", &lang.tr(status))],
        ),
        Check::ControllerChanged => lang.tr("another broker is the controller").to_string(),
        Check::CoordinatorChanged { group } => f("{group} has a new coordinator", &[("group", group)]),
        Check::Leads { broker: b, topic, .. } => f(
            "broker {broker} leads {bounds} partitions{of_topic}",
            &[
                ("broker", &broker(b)),
                ("bounds", &bounds),
                ("of_topic", &of_topic(topic, " of {topic}")),
            ],
        ),
        Check::PreferredLeaders { topic, .. } => f(
            "partitions led by their preferred replica{of_topic} {bounds}",
            &[("of_topic", &of_topic(topic, " ({topic})")), ("bounds", &bounds)],
        ),
        Check::UnderReplicated { topic, .. } => f(
            "under-replicated partitions{of_topic} {bounds}",
            &[("of_topic", &of_topic(topic, " of {topic}")), ("bounds", &bounds)],
        ),
        Check::Event { text } => f(
            "the timeline says \"{text}\"",
            &[("text", &super::target::fill(text, bound))],
        ),
        Check::Acked { .. } => f("records acknowledged {bounds}", &[("bounds", &bounds)]),
        Check::ProduceErrors { error, .. } => match error {
            Some(e) => f("{error} errors {bounds}", &[("error", e), ("bounds", &bounds)]),
            None => f("produce errors {bounds}", &[("bounds", &bounds)]),
        },
        Check::LostAcked { .. } => f("acknowledged records lost {bounds}", &[("bounds", &bounds)]),
        Check::KeyOrderHeld { group } => f("{group} saw each key's records in order", &[("group", group)]),
        Check::KeysInManyPartitions { .. } => f("keys in more than one partition {bounds}", &[("bounds", &bounds)]),
        Check::GroupState { group, state } => f("{group} is {state}", &[("group", group), ("state", state)]),
        Check::GroupMembers { group, .. } => f("{group} members {bounds}", &[("group", group), ("bounds", &bounds)]),
        Check::GenerationGrew { group, by } => f("{group}'s generation grew by {by}", &[("group", group), ("by", by)]),
        Check::FullyAssigned { group } => f("every partition is assigned in {group}", &[("group", group)]),
        Check::Lag { group, .. } => f("lag of {group} {bounds}", &[("group", group), ("bounds", &bounds)]),
        Check::OffsetsKept { group } => f("{group}'s committed offsets did not go back", &[("group", group)]),
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
    let lang = base.lang;
    let bounds = check.bounds().unwrap_or_default();
    let verdict = match check {
        Check::LeaderChanged { partition: p } => partition::leader_changed(lang, view, was, p),
        Check::Leader { partition: p, broker } => partition::leader(lang, view, p, broker, bound),
        Check::Offline { partition: p } => partition::offline(lang, view, p),
        Check::EpochGrew { partition: p, by } => partition::epoch_grew(lang, view, was, p, *by),
        Check::IsrSize { partition: p, .. } => partition::isr_size(lang, view, p, bounds),
        Check::InIsr {
            partition: p,
            broker,
            is,
        } => partition::in_isr(lang, view, p, broker, *is, bound),
        Check::Hw { partition: p, .. } => partition::hw(lang, view, p, bounds),
        Check::HwGrew { partition: p, by } => partition::hw_grew(lang, view, base, p, *by),
        Check::HwStill { partition: p } => partition::hw_still(lang, view, base, p),
        Check::ReplicasEqual { partition: p } => partition::replicas_equal(lang, view, p),
        Check::Broker { broker, status } => cluster::broker(lang, view, broker, status, bound),
        Check::ControllerChanged => Ok(cluster::controller_changed(lang, view, was)),
        Check::Leads { broker, topic, .. } => cluster::leads(lang, view, broker, topic.as_deref(), bounds, bound),
        Check::PreferredLeaders { topic, .. } => Ok(cluster::preferred_leaders(lang, view, topic.as_deref(), bounds)),
        Check::UnderReplicated { topic, .. } => Ok(cluster::under_replicated(lang, view, topic.as_deref(), bounds)),
        Check::CoordinatorChanged { group: g } => group::coordinator_changed(lang, view, was, g),
        Check::GroupState { group: g, state } => group::state(lang, view, g, state),
        Check::GroupMembers { group: g, .. } => group::members(lang, view, g, bounds),
        Check::GenerationGrew { group: g, by } => group::generation_grew(lang, view, was, g, *by),
        Check::FullyAssigned { group: g } => group::fully_assigned(lang, view, g),
        Check::Lag { group: g, .. } => group::lag(lang, view, g, bounds),
        Check::OffsetsKept { group: g } => group::offsets_kept(lang, view, was, g),
        Check::Acked { .. } => Ok(workload::acked(lang, view, was, bounds)),
        Check::ProduceErrors { error, .. } => Ok(workload::produce_errors(lang, view, was, error.as_deref(), bounds)),
        Check::LostAcked { .. } => Ok(workload::lost_acked(lang, view, bounds)),
        Check::KeyOrderHeld { group: g } => Ok(workload::key_order_held(lang, view, g)),
        Check::KeysInManyPartitions { .. } => Ok(workload::keys_in_many_partitions(lang, view, bounds)),
        Check::Event { text } => Ok(timeline::event(lang, events, &super::target::fill(text, bound))),
    };
    verdict.unwrap_or_else(Verdict::failed)
}
