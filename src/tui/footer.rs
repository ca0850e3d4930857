//! The footer: the filter or `:` command line being typed, the last command's outcome, or
//! key hints.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::app::{App, Screen};
use super::keymap::Binding;
use super::overlay::Overlay;
use super::pane::view_of;
use super::text::{Item, by_priority, fit_sentence};

/// The keys of the replica-log screen.
const REPLICA_LOG_HINTS: &[(Binding, &str)] = &[
    (Binding::Back, "back"),
    (Binding::Explain, "explain"),
    (Binding::Help, "help"),
    (Binding::Quit, "quit"),
];

const ACLS_HINTS: &[(Binding, &str)] = &[
    (Binding::Back, "back"),
    (Binding::Filter, "filter"),
    (Binding::Help, "help"),
    (Binding::Quit, "quit"),
];

const TRANSACTIONS_HINTS: &[(Binding, &str)] = &[
    (Binding::Back, "back"),
    (Binding::Transactions, "refresh"),
    (Binding::Help, "help"),
    (Binding::Quit, "quit"),
];

const CONFIGS_HINTS: &[(Binding, &str)] = &[
    (Binding::Back, "back"),
    (Binding::Help, "help"),
    (Binding::Quit, "quit"),
];

/// The reassignments screen's keymap keys (its own letters are on its last line).
const REASSIGN_HINTS: &[(Binding, &str)] = &[
    (Binding::Back, "back"),
    (Binding::Explain, "explain"),
    (Binding::Command, "command"),
    (Binding::Help, "help"),
    (Binding::Quit, "quit"),
];

/// A scenario's keys.
const TRAINER_HINTS: &[(Binding, &str)] = &[
    (Binding::NextStep, "next"),
    (Binding::PrevStep, "back"),
    (Binding::PlayScenario, "play"),
];

/// The keys of the flow picture (a scenario's come first, see `draw`).
const FLOW_HINTS: &[(Binding, &str)] = &[
    (Binding::Back, "back"),
    (Binding::Freeze, "freeze"),
    (Binding::Slower, "slower"),
    (Binding::Faster, "faster"),
    (Binding::ReplicaLog, "log picture"),
    (Binding::Explain, "explain"),
    (Binding::Help, "help"),
];

pub fn draw(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>) {
    let t = &app.theme;
    let width = area.width as usize;
    let line = if let Some(Overlay::Command(command)) = app.overlay() {
        command_line(app, command, width)
    } else if app.overlay() == Some(&Overlay::Filter) {
        let lang = app.lang;
        let (what, text) = app.filtering();
        Line::from(vec![
            Span::styled(format!(" {}: ", lang.fmt("filter {pane}", &[("pane", &what)])), t.title),
            Span::raw(text.to_string()),
            Span::styled(format!("▏  {}", lang.tr("Enter keep · Esc clear")), t.dim),
        ])
    } else {
        let mut spans = Vec::new();
        let mut used = 0;
        // The active filter, in full: what the pane shows depends on it.
        let (_, filter) = app.filtering();
        if !filter.is_empty() {
            let searching =
                app.focus == super::Pane::Messages && app.tail.as_ref().is_some_and(|t| t.search_progress().is_some());
            let text = app.lang.fmt(
                if searching {
                    "search \"{filter}\" (Esc clears)"
                } else {
                    "filter \"{filter}\" (Esc clears)"
                },
                &[("filter", &filter)],
            );
            let text = format!(" {text} ");
            used += unicode_width::UnicodeWidthStr::width(text.as_str());
            spans.push(Span::styled(text, t.warn));
        }
        if let Some(status) = app.status.as_ref().filter(|s| s.current(now)) {
            let text = fit_sentence(&status.text, width.saturating_sub(2) * 2 / 3);
            used += unicode_width::UnicodeWidthStr::width(text.as_str()) + 4;
            spans.push(Span::styled(format!(" {text}  "), t.severity(status.severity)));
            spans.push(Span::styled("│", t.dim));
        }
        let hints = match app.screen() {
            Screen::Dashboard => view_of(app.focus).hints(),
            Screen::ReplicaLog { .. } => REPLICA_LOG_HINTS,
            Screen::Flow { .. } => FLOW_HINTS,
            Screen::Configs { .. } => CONFIGS_HINTS,
            Screen::Reassignments => REASSIGN_HINTS,
            Screen::Acls => ACLS_HINTS,
            Screen::Transactions => TRANSACTIONS_HINTS,
        };
        // A scenario's own keys first: they work over every pane and overlay.
        let scenario = if app.trainer.is_some() { TRAINER_HINTS } else { &[] };
        // Keys the source does not offer get no hint; pressing them explains why. On a narrow
        // screen the pane's later hints go first; the scenario's keys, help and quit stay.
        let items = scenario
            .iter()
            .map(|hint| (hint, 9))
            .chain(hints.iter().enumerate().map(|(i, hint)| {
                let rank = match hint.0 {
                    Binding::Quit | Binding::Help => 10,
                    _ => 8u8.saturating_sub(u8::try_from(i).unwrap_or(u8::MAX)),
                };
                (hint, rank)
            }))
            .filter(|((binding, _), _)| app.unavailable(*binding).is_none())
            .map(|((binding, label), rank)| {
                Item::new(
                    vec![Span::styled(
                        format!(" {} {} ", app.keymap.hint(*binding), app.lang.tr(label)),
                        t.dim,
                    )],
                    rank,
                )
            })
            .collect();
        spans.extend(by_priority(items, width.saturating_sub(used)));
        Line::from(spans)
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// The `:` line being typed, then what is wrong with it, what Tab offered, or how it works.
fn command_line(app: &App, command: &super::command::CommandLine, width: usize) -> Line<'static> {
    let t = &app.theme;
    let lang = app.lang;
    let typed = format!(" :{}", command.text);
    let room = width.saturating_sub(unicode_width::UnicodeWidthStr::width(typed.as_str()) + 4);
    let after = match (&command.error, command.offered.as_slice()) {
        (Some(error), _) => Span::styled(fit_sentence(error, room), t.error),
        (None, [_, _, ..]) => Span::styled(fit_sentence(&command.offered.join("  "), room), t.dim),
        _ => Span::styled(
            fit_sentence(lang.tr("Tab completes · ↑↓ history · Enter runs · Esc closes"), room),
            t.dim,
        ),
    };
    Line::from(vec![Span::styled(typed, t.title), Span::styled("▏  ", t.dim), after])
}
