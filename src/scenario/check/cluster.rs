//! Checks on the brokers and on leadership across the cluster: a broker's status, who is
//! controller, and how many partitions a broker, their preferred replicas or an incomplete
//! ISR account for. They are one family because they look at the cluster as a whole, so a
//! story can say "the load moved back" without naming each partition.

use std::collections::BTreeMap;

use super::{Verdict, counted, leader_text};
use crate::scenario::format::Compare;
use crate::scenario::target;
use crate::view::{BrokerId, ClusterView, PartitionRow};

/// The partitions of `topic`, or of every user topic.
fn user_partitions<'a>(view: &'a ClusterView, topic: Option<&'a str>) -> impl Iterator<Item = &'a PartitionRow> + 'a {
    view.partitions.iter().filter(move |p| match topic {
        Some(t) => p.topic == t,
        None => view.topic(&p.topic).is_some_and(|t| !t.internal),
    })
}

pub(super) fn broker(
    view: &ClusterView,
    broker: &toml::Value,
    status: &str,
    bound: &BTreeMap<String, BrokerId>,
) -> Result<Verdict, String> {
    let id = target::resolve(broker, view, bound)?;
    let row = view
        .brokers
        .iter()
        .find(|b| b.id == id)
        .ok_or_else(|| format!("no broker {id}"))?;
    Ok(Verdict::new(
        row.status.label() == status,
        format!("broker {id} {}", row.status.label()),
    ))
}

pub(super) fn controller_changed(view: &ClusterView, was: &ClusterView) -> Verdict {
    Verdict::new(
        view.controller.is_some() && view.controller != was.controller,
        format!(
            "controller {} (was {})",
            leader_text(view.controller),
            leader_text(was.controller)
        ),
    )
}

pub(super) fn leads(
    view: &ClusterView,
    broker: &toml::Value,
    topic: Option<&str>,
    cmp: Compare,
    bound: &BTreeMap<String, BrokerId>,
) -> Result<Verdict, String> {
    let id = target::resolve(broker, view, bound)?;
    let n = view
        .partitions
        .iter()
        .filter(|p| topic.is_none_or(|t| p.topic == t))
        .filter(|p| p.leader == Some(id) && !p.offline())
        .count();
    Ok(counted(n as i64, cmp, &format!("broker {id} leads")))
}

pub(super) fn preferred_leaders(view: &ClusterView, topic: Option<&str>, cmp: Compare) -> Verdict {
    let n = user_partitions(view, topic)
        .filter(|p| p.preferred_leads() && !p.offline())
        .count();
    counted(n as i64, cmp, "preferred leaders")
}

pub(super) fn under_replicated(view: &ClusterView, topic: Option<&str>, cmp: Compare) -> Verdict {
    let n = user_partitions(view, topic).filter(|p| p.under_replicated).count();
    counted(n as i64, cmp, "under-replicated")
}
