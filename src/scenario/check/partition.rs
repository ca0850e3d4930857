//! Checks on one partition, named "topic-N": its leader, leader epoch, ISR, high watermark
//! and replicas' log ends, now and against the step's start. They are one family because
//! they share the lookup: a partition the view lacks is an error naming it, not a failed
//! condition, so a misspelt or not yet created partition reads as such.

use std::collections::BTreeMap;

use super::{Baseline, Verdict, counted, leader_text};
use crate::scenario::format::Compare;
use crate::scenario::target::{self, partition as find};
use crate::view::lang::Lang;
use crate::view::{BrokerId, ClusterView};

fn broker_list(ids: &[BrokerId]) -> String {
    let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
    format!("[{}]", ids.join(", "))
}

pub(super) fn leader_changed(lang: &Lang, view: &ClusterView, was: &ClusterView, p: &str) -> Result<Verdict, String> {
    let now = find(view, p)?;
    let before = find(was, p).ok().and_then(|r| r.leader);
    let leader = if now.offline() { None } else { now.leader };
    Ok(Verdict::new(
        leader.is_some() && leader != before,
        lang.fmt(
            "leader {now} (was {before})",
            &[
                ("now", &leader_text(lang, leader)),
                ("before", &leader_text(lang, before)),
            ],
        ),
    ))
}

pub(super) fn leader(
    lang: &Lang,
    view: &ClusterView,
    p: &str,
    broker: &toml::Value,
    bound: &BTreeMap<String, BrokerId>,
) -> Result<Verdict, String> {
    let now = find(view, p)?;
    let want = target::resolve(broker, view, bound)?;
    Ok(Verdict::new(
        now.leader == Some(want) && !now.offline(),
        lang.fmt("leader {now}", &[("now", &leader_text(lang, now.leader))]),
    ))
}

pub(super) fn offline(lang: &Lang, view: &ClusterView, p: &str) -> Result<Verdict, String> {
    let now = find(view, p)?;
    Ok(Verdict::new(
        now.offline(),
        lang.fmt("leader {now}", &[("now", &leader_text(lang, now.leader))]),
    ))
}

pub(super) fn epoch_grew(
    lang: &Lang,
    view: &ClusterView,
    was: &ClusterView,
    p: &str,
    by: i32,
) -> Result<Verdict, String> {
    let now = find(view, p)?.leader_epoch;
    let before = find(was, p).map_or(now, |r| r.leader_epoch);
    Ok(Verdict::new(
        now - before >= by,
        lang.fmt("epoch {now} (was {before})", &[("now", &now), ("before", &before)]),
    ))
}

pub(super) fn isr_size(lang: &Lang, view: &ClusterView, p: &str, cmp: Compare) -> Result<Verdict, String> {
    let row = find(view, p)?;
    let size = row.isr.len() as i64;
    Ok(Verdict::new(
        cmp.holds(size),
        lang.fmt(
            "ISR {isr} (size {size})",
            &[("isr", &broker_list(&row.isr)), ("size", &size)],
        ),
    ))
}

pub(super) fn in_isr(
    lang: &Lang,
    view: &ClusterView,
    p: &str,
    broker: &toml::Value,
    is: bool,
    bound: &BTreeMap<String, BrokerId>,
) -> Result<Verdict, String> {
    let row = find(view, p)?;
    let id = target::resolve(broker, view, bound)?;
    Ok(Verdict::new(
        row.isr.contains(&id) == is,
        lang.fmt("ISR {isr}", &[("isr", &broker_list(&row.isr))]),
    ))
}

pub(super) fn hw(lang: &Lang, view: &ClusterView, p: &str, cmp: Compare) -> Result<Verdict, String> {
    let hw = find(view, p)?.high_watermark.unwrap_or(-1);
    Ok(counted(lang, hw, cmp, "HW {n}"))
}

pub(super) fn hw_grew(lang: &Lang, view: &ClusterView, base: &Baseline, p: &str, by: i64) -> Result<Verdict, String> {
    let row = find(view, p)?;
    let hw = if row.offline() { None } else { row.high_watermark };
    let before = base.hw_of(p);
    let grew = hw.map_or(0, |h| h - before);
    Ok(Verdict::new(
        grew >= by,
        lang.fmt(
            "HW {now} (was {before})",
            &[
                (
                    "now",
                    &hw.map_or_else(|| lang.tr("unknown").to_string(), |h| h.to_string()),
                ),
                ("before", &before),
            ],
        ),
    ))
}

pub(super) fn hw_still(lang: &Lang, view: &ClusterView, base: &Baseline, p: &str) -> Result<Verdict, String> {
    let hw = find(view, p)?.high_watermark.unwrap_or(0);
    let before = base.hw_of(p);
    Ok(Verdict::new(
        hw == before,
        lang.fmt("HW {now} (was {before})", &[("now", &hw), ("before", &before)]),
    ))
}

pub(super) fn replicas_equal(lang: &Lang, view: &ClusterView, p: &str) -> Result<Verdict, String> {
    let row = find(view, p)?;
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
    Ok(Verdict::new(
        equal,
        lang.fmt("log ends {ends}", &[("ends", &ends.join(" "))]),
    ))
}
