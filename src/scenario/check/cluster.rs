//! Checks on the brokers and on leadership across the cluster: a broker's status, who is
//! controller, and how many partitions a broker, their preferred replicas or an incomplete
//! ISR account for. They are one family because they look at the cluster as a whole, so a
//! story can say "the load moved back" without naming each partition.

use std::collections::BTreeMap;

use super::{Verdict, counted, leader_text};
use crate::scenario::format::Compare;
use crate::scenario::target;
use crate::view::lang::Lang;
use crate::view::{BrokerId, ClusterView, PartitionRow};

/// The partitions of `topic`, or of every user topic.
fn user_partitions<'a>(view: &'a ClusterView, topic: Option<&'a str>) -> impl Iterator<Item = &'a PartitionRow> + 'a {
    view.partitions.iter().filter(move |p| match topic {
        Some(t) => p.topic == t,
        None => view.topic(&p.topic).is_some_and(|t| !t.internal),
    })
}

pub(super) fn broker(
    lang: &Lang,
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
        lang.fmt(
            "broker {id} {status}",
            &[("id", &id), ("status", &lang.tr(row.status.label()))],
        ),
    ))
}

pub(super) fn controller_changed(lang: &Lang, view: &ClusterView, was: &ClusterView) -> Verdict {
    Verdict::new(
        view.controller.is_some() && view.controller != was.controller,
        lang.fmt(
            "controller {now} (was {before})",
            &[
                ("now", &leader_text(lang, view.controller)),
                ("before", &leader_text(lang, was.controller)),
            ],
        ),
    )
}

pub(super) fn leads(
    lang: &Lang,
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
    Ok(counted(
        lang,
        n as i64,
        cmp,
        &lang.fmt("broker {id} leads {n}", &[("id", &id)]),
    ))
}

pub(super) fn preferred_leaders(lang: &Lang, view: &ClusterView, topic: Option<&str>, cmp: Compare) -> Verdict {
    let n = user_partitions(view, topic)
        .filter(|p| p.preferred_leads() && !p.offline())
        .count();
    counted(lang, n as i64, cmp, "preferred leaders {n}")
}

pub(super) fn under_replicated(lang: &Lang, view: &ClusterView, topic: Option<&str>, cmp: Compare) -> Verdict {
    let n = user_partitions(view, topic).filter(|p| p.under_replicated).count();
    counted(lang, n as i64, cmp, "under-replicated {n}")
}
