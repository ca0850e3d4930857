//! Checks on one consumer group: its coordinator, state, members, generation, assignment,
//! lag and committed offsets, now and against the step's start. They are one family because
//! they share the lookup: a group the view lacks has not been formed yet, and says so
//! rather than failing a condition.

use super::{Verdict, counted, leader_text};
use crate::scenario::format::Compare;
use crate::view::lang::Lang;
use crate::view::{ClusterView, GroupRow, PartitionRow};

fn find<'a>(view: &'a ClusterView, id: &str) -> Result<&'a GroupRow, String> {
    view.groups
        .iter()
        .find(|g| g.group_id == id)
        .ok_or_else(|| format!("no group {id} yet"))
}

pub(super) fn coordinator_changed(
    lang: &Lang,
    view: &ClusterView,
    was: &ClusterView,
    g: &str,
) -> Result<Verdict, String> {
    let now = find(view, g)?.coordinator;
    let before = find(was, g).map(|r| r.coordinator).ok();
    Ok(Verdict::new(
        before != Some(now),
        lang.fmt(
            "coordinator broker {now} (was {before})",
            &[("now", &now), ("before", &leader_text(lang, before))],
        ),
    ))
}

pub(super) fn state(lang: &Lang, view: &ClusterView, g: &str, state: &str) -> Result<Verdict, String> {
    let row = find(view, g)?;
    Ok(Verdict::new(
        row.state.eq_ignore_ascii_case(state),
        lang.fmt("{group} {state}", &[("group", &g), ("state", &row.state)]),
    ))
}

pub(super) fn members(lang: &Lang, view: &ClusterView, g: &str, cmp: Compare) -> Result<Verdict, String> {
    let n = find(view, g)?.members.len() as i64;
    Ok(counted(lang, n, cmp, "members {n}"))
}

pub(super) fn generation_grew(
    lang: &Lang,
    view: &ClusterView,
    was: &ClusterView,
    g: &str,
    by: i32,
) -> Result<Verdict, String> {
    let now = find(view, g)?.generation;
    let before = find(was, g).map_or(0, |r| r.generation);
    Ok(Verdict::new(
        now - before >= by,
        lang.fmt("generation {now} (was {before})", &[("now", &now), ("before", &before)]),
    ))
}

pub(super) fn fully_assigned(lang: &Lang, view: &ClusterView, g: &str) -> Result<Verdict, String> {
    let row = find(view, g)?;
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
    Ok(Verdict::new(
        !wanted.is_empty() && missing == 0 && row.state == "Stable",
        lang.fmt(
            "{state} {missing} of {total} partitions unassigned",
            &[("state", &row.state), ("missing", &missing), ("total", &wanted.len())],
        ),
    ))
}

pub(super) fn lag(lang: &Lang, view: &ClusterView, g: &str, cmp: Compare) -> Result<Verdict, String> {
    Ok(counted(lang, find(view, g)?.total_lag, cmp, "lag {n}"))
}

pub(super) fn offsets_kept(lang: &Lang, view: &ClusterView, was: &ClusterView, g: &str) -> Result<Verdict, String> {
    let now = find(view, g)?;
    let before = find(was, g)?;
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
    Ok(Verdict::new(
        back.is_empty() && missing == 0 && !now.offsets.is_empty(),
        if back.is_empty() {
            lang.fmt("{n} committed offsets kept", &[("n", &now.offsets.len())])
        } else {
            lang.fmt("went back: {offsets}", &[("offsets", &back.join(", "))])
        },
    ))
}
