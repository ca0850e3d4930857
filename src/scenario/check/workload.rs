//! Checks on the workload's counts: records its producers had acknowledged or had fail,
//! acknowledged records lost, and what its consumers saw of key order and key placement.
//! They are one family because they read the counters the workload keeps rather than the
//! cluster's state; a view without a workload counts zero. Acknowledgements and errors
//! count since the step started (now less the baseline); losses, records out of order and
//! keys in many partitions count since the scenario started.

use super::{Verdict, counted};
use crate::scenario::format::Compare;
use crate::view::{ClusterView, WorkloadStats};

fn stats(view: &ClusterView) -> WorkloadStats {
    view.workload.clone().unwrap_or_default()
}

pub(super) fn acked(view: &ClusterView, was: &ClusterView, cmp: Compare) -> Verdict {
    let n = stats(view).acked as i64 - stats(was).acked as i64;
    counted(n, cmp, "acknowledged")
}

pub(super) fn produce_errors(view: &ClusterView, was: &ClusterView, error: Option<&str>, cmp: Compare) -> Verdict {
    let n = stats(view).errors_of(error) as i64 - stats(was).errors_of(error) as i64;
    counted(n, cmp, error.unwrap_or("errors"))
}

pub(super) fn lost_acked(view: &ClusterView, cmp: Compare) -> Verdict {
    counted(stats(view).lost_acked as i64, cmp, "lost")
}

/// Holds when the group read keyed records and none came out of order: a group that read
/// nothing has not shown that order held.
pub(super) fn key_order_held(view: &ClusterView, g: &str) -> Verdict {
    let stats = stats(view);
    let n = stats.out_of_order.get(g).copied().unwrap_or(0);
    let read = stats.order_checked.get(g).copied().unwrap_or(0);
    Verdict::new(n == 0 && read > 0, format!("{n} of {read} keyed records out of order"))
}

pub(super) fn keys_in_many_partitions(view: &ClusterView, cmp: Compare) -> Verdict {
    counted(stats(view).keys_in_many_partitions as i64, cmp, "keys")
}
