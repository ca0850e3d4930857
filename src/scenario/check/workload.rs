//! Checks on the workload's counts: records its producers had acknowledged or had fail,
//! acknowledged records lost, and what its consumers saw of key order and key placement.
//! They are one family because they read the counters the workload keeps rather than the
//! cluster's state; a view without a workload counts zero. Acknowledgements and errors
//! count since the step started (now less the baseline); losses, records out of order and
//! keys in many partitions count since the scenario started.

use super::{Verdict, counted};
use crate::scenario::format::Compare;
use crate::view::lang::Lang;
use crate::view::{ClusterView, WorkloadStats};

fn stats(view: &ClusterView) -> WorkloadStats {
    view.workload.clone().unwrap_or_default()
}

pub(super) fn acked(lang: &Lang, view: &ClusterView, was: &ClusterView, cmp: Compare) -> Verdict {
    let n = stats(view).acked as i64 - stats(was).acked as i64;
    counted(lang, n, cmp, "acknowledged {n}")
}

pub(super) fn produce_errors(
    lang: &Lang,
    view: &ClusterView,
    was: &ClusterView,
    error: Option<&str>,
    cmp: Compare,
) -> Verdict {
    let n = stats(view).errors_of(error) as i64 - stats(was).errors_of(error) as i64;
    match error {
        Some(e) => counted(lang, n, cmp, &format!("{e} {{n}}")),
        None => counted(lang, n, cmp, "errors {n}"),
    }
}

pub(super) fn lost_acked(lang: &Lang, view: &ClusterView, cmp: Compare) -> Verdict {
    counted(lang, stats(view).lost_acked as i64, cmp, "lost {n}")
}

/// Holds when the group read keyed records and none came out of order: a group that read
/// nothing has not shown that order held.
pub(super) fn key_order_held(lang: &Lang, view: &ClusterView, g: &str) -> Verdict {
    let stats = stats(view);
    let n = stats.out_of_order.get(g).copied().unwrap_or(0);
    let read = stats.order_checked.get(g).copied().unwrap_or(0);
    Verdict::new(
        n == 0 && read > 0,
        lang.fmt(
            "{n} of {read} keyed records out of order",
            &[("n", &n), ("read", &read)],
        ),
    )
}

pub(super) fn keys_in_many_partitions(lang: &Lang, view: &ClusterView, cmp: Compare) -> Verdict {
    counted(lang, stats(view).keys_in_many_partitions as i64, cmp, "keys {n}")
}
