//! Checks on one partition, named "topic-N": its leader, leader epoch, ISR, high watermark
//! and replicas' log ends, now and against the step's start. They are one family because
//! they share the lookup: a partition the view lacks is an error naming it, not a failed
//! condition, so a misspelt or not yet created partition reads as such.

use std::collections::BTreeMap;

use super::{Baseline, Verdict, counted, leader_text};
use crate::scenario::format::Compare;
use crate::scenario::target::{self, partition as find};
use crate::view::{BrokerId, ClusterView};

fn broker_list(ids: &[BrokerId]) -> String {
    let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
    format!("[{}]", ids.join(", "))
}

pub(super) fn leader_changed(view: &ClusterView, was: &ClusterView, p: &str) -> Result<Verdict, String> {
    let now = find(view, p)?;
    let before = find(was, p).ok().and_then(|r| r.leader);
    let leader = if now.offline() { None } else { now.leader };
    Ok(Verdict::new(
        leader.is_some() && leader != before,
        format!("leader {} (was {})", leader_text(leader), leader_text(before)),
    ))
}

pub(super) fn leader(
    view: &ClusterView,
    p: &str,
    broker: &toml::Value,
    bound: &BTreeMap<String, BrokerId>,
) -> Result<Verdict, String> {
    let now = find(view, p)?;
    let want = target::resolve(broker, view, bound)?;
    Ok(Verdict::new(
        now.leader == Some(want) && !now.offline(),
        format!("leader {}", leader_text(now.leader)),
    ))
}

pub(super) fn offline(view: &ClusterView, p: &str) -> Result<Verdict, String> {
    let now = find(view, p)?;
    Ok(Verdict::new(
        now.offline(),
        format!("leader {}", leader_text(now.leader)),
    ))
}

pub(super) fn epoch_grew(view: &ClusterView, was: &ClusterView, p: &str, by: i32) -> Result<Verdict, String> {
    let now = find(view, p)?.leader_epoch;
    let before = find(was, p).map_or(now, |r| r.leader_epoch);
    Ok(Verdict::new(now - before >= by, format!("epoch {now} (was {before})")))
}

pub(super) fn isr_size(view: &ClusterView, p: &str, cmp: Compare) -> Result<Verdict, String> {
    let row = find(view, p)?;
    let size = row.isr.len() as i64;
    Ok(Verdict::new(
        cmp.holds(size),
        format!("ISR {} (size {size})", broker_list(&row.isr)),
    ))
}

pub(super) fn in_isr(
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
        format!("ISR {}", broker_list(&row.isr)),
    ))
}

pub(super) fn hw(view: &ClusterView, p: &str, cmp: Compare) -> Result<Verdict, String> {
    let hw = find(view, p)?.high_watermark.unwrap_or(-1);
    Ok(counted(hw, cmp, "HW"))
}

pub(super) fn hw_grew(view: &ClusterView, base: &Baseline, p: &str, by: i64) -> Result<Verdict, String> {
    let row = find(view, p)?;
    let hw = if row.offline() { None } else { row.high_watermark };
    let before = base.hw_of(p);
    let grew = hw.map_or(0, |h| h - before);
    Ok(Verdict::new(
        grew >= by,
        format!("HW {} (was {before})", hw.map_or("unknown".into(), |h| h.to_string())),
    ))
}

pub(super) fn hw_still(view: &ClusterView, base: &Baseline, p: &str) -> Result<Verdict, String> {
    let hw = find(view, p)?.high_watermark.unwrap_or(0);
    let before = base.hw_of(p);
    Ok(Verdict::new(hw == before, format!("HW {hw} (was {before})")))
}

pub(super) fn replicas_equal(view: &ClusterView, p: &str) -> Result<Verdict, String> {
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
    Ok(Verdict::new(equal, format!("log ends {}", ends.join(" "))))
}
