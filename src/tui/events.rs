//! The timeline: what changed and why, newest at the bottom. Long lines wrap so that the
//! reason of an election or an ISR change is never cut off.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::Pane;
use super::app::{App, EventRow};
use super::keymap::Binding;
use super::pane::{PaneLayout, PaneView};
use super::text::wrap;
use crate::view::ViewEvent;
use crate::view::lang::Lang;

/// The time prefix of each line, `HH:MM:SS `.
const TIME_WIDTH: usize = 9;

pub struct EventsPane;

impl PaneView for EventsPane {
    fn title(&self) -> &'static str {
        "Events"
    }

    fn hints(&self) -> &'static [(Binding, &'static str)] {
        &[
            (Binding::Drill, "open/fold incident"),
            (Binding::Filter, "filter"),
            (Binding::NextPane, "pane"),
            (Binding::Help, "help"),
            (Binding::Quit, "quit"),
        ]
    }

    fn rows(&self, app: &App) -> usize {
        app.event_rows().len()
    }

    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, _now: chrono::DateTime<chrono::Utc>) -> PaneLayout {
        draw(frame, area, app)
    }
}

fn draw(frame: &mut Frame, area: Rect, app: &App) -> PaneLayout {
    let t = &app.theme;
    let events = app.event_rows();
    let block = super::layout::block(app, Pane::Events, String::new());
    let inner = block.inner(area);
    let height = inner.height as usize;
    let text_width = (inner.width as usize).saturating_sub(TIME_WIDTH).max(1);
    if events.is_empty() && app.projector() && app.filter(Pane::Events).is_empty() {
        let quiet = Paragraph::new(Line::styled(app.lang.tr("no incidents in the timeline"), t.dim));
        frame.render_widget(quiet.block(block), area);
        return PaneLayout::plain(Pane::Events, area);
    }
    // A blank line between rows in the projector layout.
    let gap = usize::from(app.projector());
    let wrap = |text: &str, width: usize| {
        let mut rows = wrap(text, width);
        rows.extend(std::iter::repeat_n(String::new(), gap));
        rows
    };
    // Focused, the cursor's row is shown (scrolling back from the newest); otherwise the
    // newest are. Rows before it fill the pane first, then rows after it.
    let last = if app.focus == Pane::Events {
        app.cursor(Pane::Events) + 1
    } else {
        events.len()
    }
    .min(events.len());
    let mut start = last;
    let mut end = last;
    let mut wrapped: Vec<Vec<String>> = Vec::new();
    let mut used = 0;
    while start > 0 {
        let rows = wrap(&row_text(app.lang, &events[start - 1]), text_width);
        if used + rows.len() > height && used > 0 {
            break;
        }
        used += rows.len();
        wrapped.insert(0, rows);
        start -= 1;
    }
    while end < events.len() {
        let rows = wrap(&row_text(app.lang, &events[end]), text_width);
        if used + rows.len() > height {
            break;
        }
        used += rows.len();
        wrapped.push(rows);
        end += 1;
    }
    let mut lines: Vec<Line> = Vec::new();
    let cursor = (app.focus == Pane::Events).then(|| app.cursor(Pane::Events));
    for (n, (e, rows)) in events[start..end].iter().zip(wrapped).enumerate() {
        let (at, severity) = match e {
            EventRow::Event(e) | EventRow::Member(e, _) => (e.at, e.severity),
            EventRow::Incident { at, severity, .. } => (*at, *severity),
        };
        let mut style = t.severity(severity);
        if cursor == Some(start + n) {
            style = style.patch(t.selected);
        }
        for (i, row) in rows.into_iter().enumerate() {
            // Continuation lines start under the text, not under the time.
            let prefix = if i == 0 {
                Span::styled(at.with_timezone(&app.tz).format("%H:%M:%S ").to_string(), t.dim)
            } else {
                Span::raw(" ".repeat(TIME_WIDTH))
            };
            lines.push(Line::from(vec![prefix, Span::styled(row, style)]));
        }
    }
    // An event taller than the pane shows its start.
    let skip = if start + 1 == end {
        0
    } else {
        lines.len().saturating_sub(height)
    };
    frame.render_widget(Paragraph::new(lines).scroll((skip as u16, 0)).block(block), area);
    PaneLayout::text(Pane::Events, area, start, end - start, events.len())
}

/// What a row says in `lang`: an incident its summary behind ▸ (folded) or ▾ (open), an
/// event of an open incident indented under it.
fn row_text(lang: &Lang, row: &EventRow) -> String {
    match row {
        EventRow::Event(e) => said(lang, e),
        EventRow::Member(e, _) => format!("  {}", said(lang, e)),
        EventRow::Incident {
            summary,
            events,
            expanded,
            ..
        } => {
            let mark = if *expanded { "▾" } else { "▸" };
            let summary = lang.fmt(
                "{summary} ({events})",
                &[("summary", summary), ("events", &lang.count(*events, "event"))],
            );
            format!("{mark} {summary}")
        }
    }
}

/// What an event says in `lang`: its message, or its English text when the console has it
/// only in English (or speaks English).
pub fn said(lang: &Lang, event: &ViewEvent) -> String {
    match &event.msg {
        Some(msg) if !lang.is_english() => lang.say(msg),
        _ => event.text.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_wraps_with_its_unit() {
        assert_eq!(
            wrap("broker 1 fenced after 4.7 s", 25),
            vec!["broker 1 fenced after", "4.7 s"]
        );
    }

    #[test]
    fn long_events_wrap_between_words_and_long_words_are_cut() {
        assert_eq!(
            wrap("ISR page-views-0 shrank: -[1] -> [0,2] (broker 1 fenced)", 24),
            vec!["ISR page-views-0 shrank:", "-[1] -> [0,2] (broker 1", "fenced)"]
        );
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 10), vec![""]);
        assert_eq!(wrap("副本 同步 列表", 5), vec!["副本", "同步", "列表"]);
        assert_eq!(
            wrap("分区离线，没有存活的同步副本", 10),
            vec!["分区离线，", "没有存活的", "同步副本"]
        );
        assert_eq!(
            wrap("  leader orders-0: 1 -> 2", 12),
            vec!["  leader", "  orders-0:", "  1 -> 2"]
        );
    }
}
