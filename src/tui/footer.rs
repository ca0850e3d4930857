//! The footer: the filter being typed, the last command's outcome, or key hints.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::Pane;
use super::app::{App, Mode};
use super::keymap::Action;
use super::text::fit;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>) {
    let t = &app.theme;
    let width = area.width as usize;
    let line = if app.mode == Mode::Filter {
        Line::from(vec![
            Span::styled(format!(" filter {}: ", app.focus.title()), t.title),
            Span::raw(app.filters[app.focus.index()].clone()),
            Span::styled("▏  Enter keep · Esc clear", t.dim),
        ])
    } else {
        let mut spans = Vec::new();
        let mut used = 0;
        if let Some(status) = app.status.as_ref().filter(|s| s.current(now)) {
            let text = fit(&status.text, width.saturating_sub(2) * 2 / 3);
            used += text.chars().count() + 4;
            spans.push(Span::styled(format!(" {text}  "), t.severity(status.severity)));
            spans.push(Span::styled("│", t.dim));
        }
        // Keys the source does not offer get no hint; pressing them explains why.
        for (action, label) in hints(app.focus).iter().filter(|(a, _)| app.unavailable(*a).is_none()) {
            let item = format!(" {} {label} ", app.keymap.hint(*action));
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

/// The keys that matter in a pane, most useful first.
fn hints(pane: Pane) -> &'static [(Action, &'static str)] {
    const BROKERS: &[(Action, &str)] = &[
        (Action::KillBroker, "kill"),
        (Action::StopBroker, "stop"),
        (Action::RestartBroker, "restart"),
        (Action::PauseBroker, "pause"),
        (Action::Rebalance, "rebalance"),
        (Action::NextPane, "pane"),
        (Action::Help, "help"),
        (Action::Quit, "quit"),
    ];
    const TOPICS: &[(Action, &str)] = &[
        (Action::Drill, "partitions"),
        (Action::Produce, "produce"),
        (Action::CreateTopic, "create"),
        (Action::DeleteTopic, "delete"),
        (Action::Rebalance, "rebalance"),
        (Action::Filter, "filter"),
        (Action::Help, "help"),
        (Action::Quit, "quit"),
    ];
    const PARTITIONS: &[(Action, &str)] = &[
        (Action::Drill, "tail partition"),
        (Action::Back, "topics"),
        (Action::Rebalance, "rebalance topic"),
        (Action::Produce, "produce"),
        (Action::Help, "help"),
        (Action::Quit, "quit"),
    ];
    const MESSAGES: &[(Action, &str)] = &[
        (Action::Drill, "detail"),
        (Action::Follow, "follow"),
        (Action::PauseTail, "freeze"),
        (Action::SeekBeginning, "beginning"),
        (Action::SeekEnd, "end"),
        (Action::SeekOffset, "offset"),
        (Action::SeekTime, "time"),
        (Action::NextPartition, "partition"),
        (Action::Filter, "filter"),
        (Action::Produce, "produce"),
        (Action::Help, "help"),
    ];
    const OTHER: &[(Action, &str)] = &[
        (Action::NextPane, "pane"),
        (Action::Filter, "filter"),
        (Action::PauseDemo, "demo on/off"),
        (Action::Help, "help"),
        (Action::Quit, "quit"),
    ];
    match pane {
        Pane::Brokers => BROKERS,
        Pane::Topics => TOPICS,
        Pane::Partitions => PARTITIONS,
        Pane::Messages => MESSAGES,
        Pane::Groups | Pane::Events => OTHER,
    }
}
