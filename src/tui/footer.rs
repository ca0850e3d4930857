//! The footer: the filter being typed, the last command's outcome, or key hints.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::app::{App, Screen};
use super::keymap::Binding;
use super::overlay::Overlay;
use super::pane::view_of;
use super::text::fit_sentence;

/// The keys of the replica-log screen.
const REPLICA_LOG_HINTS: &[(Binding, &str)] = &[
    (Binding::Back, "back"),
    (Binding::Explain, "explain"),
    (Binding::Help, "help"),
    (Binding::Quit, "quit"),
];

pub fn draw(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>) {
    let t = &app.theme;
    let width = area.width as usize;
    let line = if app.overlay() == Some(&Overlay::Filter) {
        Line::from(vec![
            Span::styled(format!(" filter {}: ", app.focus.title()), t.title),
            Span::raw(app.filter(app.focus).to_string()),
            Span::styled("▏  Enter keep · Esc clear", t.dim),
        ])
    } else {
        let mut spans = Vec::new();
        let mut used = 0;
        // The active filter, in full: what the pane shows depends on it.
        let filter = app.filter(app.focus);
        if !filter.is_empty() {
            let searching =
                app.focus == super::Pane::Messages && app.tail.as_ref().is_some_and(|t| t.search_progress().is_some());
            let what = if searching { "search" } else { "filter" };
            let text = format!(" {what} \"{filter}\" (Esc clears) ");
            used += text.chars().count();
            spans.push(Span::styled(text, t.warn));
        }
        if let Some(status) = app.status.as_ref().filter(|s| s.current(now)) {
            let text = fit_sentence(&status.text, width.saturating_sub(2) * 2 / 3);
            used += text.chars().count() + 4;
            spans.push(Span::styled(format!(" {text}  "), t.severity(status.severity)));
            spans.push(Span::styled("│", t.dim));
        }
        let hints = match app.screen() {
            Screen::Dashboard => view_of(app.focus).hints(),
            Screen::ReplicaLog { .. } => REPLICA_LOG_HINTS,
        };
        // Keys the source does not offer get no hint; pressing them explains why.
        for (binding, label) in hints.iter().filter(|(b, _)| app.unavailable(*b).is_none()) {
            let item = format!(" {} {label} ", app.keymap.hint(*binding));
            let w = item.chars().count();
            if used + w > width {
                break;
            }
            used += w;
            spans.push(Span::styled(item, t.dim));
        }
        Line::from(spans)
    };
    frame.render_widget(Paragraph::new(line), area);
}
