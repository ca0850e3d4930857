//! The header: cluster, source (and read-only), the first connection problem with a count,
//! health counters and the clock; for the embedded cluster, the trainer's state of it: the
//! clock FROZEN or in slow motion (next to the clock), and the settings that differ from a
//! healthy default (auto-rebalance off, unclean election on) with the producers' acks.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::app::App;
use super::text::fit_sentence;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>) {
    let v = &app.view;
    let t = &app.theme;
    let clock = now.with_timezone(&app.tz).format("%Y-%m-%d %H:%M:%S").to_string();
    let mode = if app.capabilities.read_only {
        format!("{}, read-only", v.source.label())
    } else {
        v.source.label().to_string()
    };
    let title = format!(" kdeck · cluster {} ({mode}) ", v.cluster_name);
    // The clock's state goes beside it, before any problem: a frozen cluster explains
    // everything else on screen.
    let mut clock_state = Vec::new();
    if let Some(c) = &v.controls {
        if c.frozen {
            let unmissable = t.error.add_modifier(Modifier::REVERSED | Modifier::BOLD);
            clock_state.push(Span::styled(" FROZEN ", unmissable));
            clock_state.push(Span::styled(" ", t.header));
        }
        if c.slow_motion > 1 {
            let slow = t.warn.add_modifier(Modifier::REVERSED | Modifier::BOLD);
            clock_state.push(Span::styled(format!(" SLOW x{} ", c.slow_motion), slow));
            clock_state.push(Span::styled(" ", t.header));
        }
    }
    let state_width: usize = clock_state.iter().map(|s| s.content.chars().count()).sum();
    let free = (area.width as usize).saturating_sub(title.chars().count() + state_width + clock.chars().count() + 1);
    let problem = match v.problems.as_slice() {
        [] => String::new(),
        [one] => format!("⚠ {one} "),
        // The count goes first: a long first problem is cut, the count must stay visible.
        [first, rest @ ..] => format!("⚠ {} problems · {first} ", rest.len() + 1),
    };
    let problem = fit_sentence(&problem, free);
    let pad = free.saturating_sub(unicode_width::UnicodeWidthStr::width(problem.as_str()));
    let mut first = vec![
        Span::styled(title, t.header),
        Span::styled(problem, t.header.patch(t.error)),
        Span::styled(" ".repeat(pad), t.header),
    ];
    first.extend(clock_state);
    first.push(Span::styled(format!("{clock} "), t.header));
    let first = Line::from(first);
    // Narrow terminals, or many settings to show, get short labels so every counter stays
    // visible.
    let mut spans = counters(app, area.width >= 110);
    if spans.iter().map(|s| s.width()).sum::<usize>() > usize::from(area.width) {
        spans = counters(app, false);
    }
    let second = Line::from(spans).style(Style::default());
    frame.render_widget(Paragraph::new(vec![first, second]), area);
}

/// The health counters, then the demo and the trainer's settings, with long labels when
/// `wide`.
fn counters(app: &App, wide: bool) -> Vec<Span<'static>> {
    let v = &app.view;
    let t = &app.theme;
    let label = |long: &'static str, short: &'static str| if wide { long } else { short };
    let counter = |label: &str, value: String, bad: bool| {
        vec![
            Span::styled(format!("{label} "), t.dim),
            Span::styled(value, if bad { t.error } else { t.ok }),
            Span::raw(if wide { "   " } else { "  " }),
        ]
    };
    let up = v.brokers_up();
    let online = v.partitions_online();
    let urp = v.under_replicated();
    let offline = v.partitions.len() - online;
    let mut spans = Vec::new();
    spans.extend(counter(
        label("brokers up", "brokers"),
        format!("{up}/{}", v.brokers.len()),
        up < v.brokers.len(),
    ));
    spans.extend(counter(
        label("controller", "ctrl"),
        v.controller.map_or("none".into(), |c| c.to_string()),
        v.controller.is_none(),
    ));
    spans.extend(counter(
        label("partitions online", "online"),
        format!("{online}/{}", v.partitions.len()),
        offline > 0,
    ));
    spans.extend(counter(label("under-replicated", "URP"), urp.to_string(), urp > 0));
    spans.extend(counter("offline", offline.to_string(), offline > 0));
    if let Some(running) = v.demo {
        spans.push(Span::styled("demo ", t.dim));
        spans.push(Span::styled(
            if running { "running" } else { "paused" },
            if running { t.ok } else { t.warn },
        ));
        spans.push(Span::raw(if wide { "   " } else { "  " }));
    }
    if let Some(c) = &v.controls {
        if !c.auto_rebalance {
            spans.push(Span::styled(label("auto-rebalance off", "rebalance off"), t.warn));
            spans.push(Span::raw(if wide { "   " } else { "  " }));
        }
        if c.unclean_election {
            spans.push(Span::styled("unclean on", t.error));
            spans.push(Span::raw(if wide { "   " } else { "  " }));
        }
        if let Some(acks) = c.producer_acks {
            spans.push(Span::styled("acks=", t.dim));
            spans.push(Span::styled(
                crate::view::source::acks_label(acks),
                if acks == -1 { t.ok } else { t.warn },
            ));
        }
    }
    spans
}
