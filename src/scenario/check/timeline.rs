//! The check on the timeline's words rather than the cluster's state: some moments of a
//! story pass and leave nothing in the view to compare (a log truncated, a broker fenced
//! for a while), only the event saying they happened.

use super::Verdict;
use crate::view::lang::Lang;

pub(super) fn event(lang: &Lang, events: &[String], text: &str) -> Verdict {
    let found = events.iter().find(|e| e.contains(text));
    Verdict::new(
        found.is_some(),
        found.map_or_else(
            || lang.fmt("none of the step's {n} events says so", &[("n", &events.len())]),
            |e| e.clone(),
        ),
    )
}
