//! Checks on one consumer group: its coordinator, state, members, generation, assignment,
//! lag and committed offsets, now and against the step's start. They are one family because
//! they share the lookup: a group the view lacks has not been formed yet, and says so
//! rather than failing a condition.

use super::{Verdict, counted, leader_text};
use crate::scenario::format::Compare;
use crate::view::{ClusterView, GroupRow, PartitionRow};

fn find<'a>(view: &'a ClusterView, id: &str) -> Result<&'a GroupRow, String> {
    view.groups
        .iter()
        .find(|g| g.group_id == id)
        .ok_or_else(|| format!("no group {id} yet"))
}

pub(super) fn coordinator_changed(view: &ClusterView, was: &ClusterView, g: &str) -> Result<Verdict, String> {
    let now = find(view, g)?.coordinator;
    let before = find(was, g).map(|r| r.coordinator).ok();
    Ok(Verdict::new(
        before != Some(now),
        format!("coordinator broker {now} (was {})", leader_text(before)),
    ))
}

pub(super) fn state(view: &ClusterView, g: &str, state: &str) -> Result<Verdict, String> {
    let row = find(view, g)?;
    Ok(Verdict::new(
        row.state.eq_ignore_ascii_case(state),
        format!("{g} {}", row.state),
    ))
}

pub(super) fn members(view: &ClusterView, g: &str, cmp: Compare) -> Result<Verdict, String> {
    let n = find(view, g)?.members.len() as i64;
    Ok(counted(n, cmp, "members"))
}

pub(super) fn generation_grew(view: &ClusterView, was: &ClusterView, g: &str, by: i32) -> Result<Verdict, String> {
    let now = find(view, g)?.generation;
    let before = find(was, g).map_or(0, |r| r.generation);
    Ok(Verdict::new(
        now - before >= by,
        format!("generation {now} (was {before})"),
    ))
}

pub(super) fn fully_assigned(view: &ClusterView, g: &str) -> Result<Verdict, String> {
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
        format!("{} {missing} of {} partitions unassigned", row.state, wanted.len()),
    ))
}

pub(super) fn lag(view: &ClusterView, g: &str, cmp: Compare) -> Result<Verdict, String> {
    Ok(counted(find(view, g)?.total_lag, cmp, "lag"))
}

pub(super) fn offsets_kept(view: &ClusterView, was: &ClusterView, g: &str) -> Result<Verdict, String> {
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
            format!("{} committed offsets kept", now.offsets.len())
        } else {
            format!("went back: {}", back.join(", "))
        },
    ))
}
