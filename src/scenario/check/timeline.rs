//! The check on the timeline's words rather than the cluster's state: some moments of a
//! story pass and leave nothing in the view to compare (a log truncated, a broker fenced
//! for a while), only the event saying they happened.

use super::Verdict;

pub(super) fn event(events: &[String], text: &str) -> Verdict {
    let found = events.iter().find(|e| e.contains(text));
    Verdict::new(
        found.is_some(),
        found.map_or_else(|| format!("no such event in {}", events.len()), |e| e.clone()),
    )
}
