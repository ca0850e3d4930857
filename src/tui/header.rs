//! The header: cluster, source (and read-only), the first connection problem with a count,
//! health counters and the clock.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::app::App;
use super::text::fit;

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
    let free = (area.width as usize).saturating_sub(title.chars().count() + clock.chars().count() + 1);
    let problem = match v.problems.as_slice() {
        [] => String::new(),
        [one] => format!("⚠ {one} "),
        // The count goes first: a long first problem is cut, the count must stay visible.
        [first, rest @ ..] => format!("⚠ {} problems · {first} ", rest.len() + 1),
    };
    let problem = fit(&problem, free);
    let pad = free.saturating_sub(unicode_width::UnicodeWidthStr::width(problem.as_str()));
    let first = Line::from(vec![
        Span::styled(title, t.header),
        Span::styled(problem, t.header.patch(t.error)),
        Span::styled(" ".repeat(pad), t.header),
        Span::styled(format!("{clock} "), t.header),
    ]);
    // Narrow terminals get short labels so every counter stays visible.
    let wide = area.width >= 110;
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
    }
    let second = Line::from(spans).style(Style::default());
    frame.render_widget(Paragraph::new(vec![first, second]), area);
}
