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
use super::text::{Item, by_priority, fit_sentence};

pub fn draw(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>) {
    let v = &app.view;
    let t = &app.theme;
    let clock = now.with_timezone(&app.tz).format("%Y-%m-%d %H:%M:%S").to_string();
    let mode = if app.capabilities.read_only {
        format!("{}, read-only", v.source.label())
    } else {
        v.source.label().to_string()
    };
    let title = app.lang.fmt(
        " kdeck · cluster {name} ({mode}) ",
        &[("name", &v.cluster_name), ("mode", &app.lang.tr(&mode))],
    );
    // The clock's state goes beside it, before any problem: a frozen cluster explains
    // everything else on screen.
    let mut clock_state = Vec::new();
    if let Some(c) = &v.controls {
        if c.frozen && c.held {
            // A scenario's step holds the cluster still until the trainer goes on.
            let held = t.ok.add_modifier(Modifier::REVERSED | Modifier::BOLD);
            clock_state.push(Span::styled(format!(" {} ", app.lang.tr("HELD")), held));
            clock_state.push(Span::styled(" ", t.header));
        } else if c.frozen {
            let unmissable = t.error.add_modifier(Modifier::REVERSED | Modifier::BOLD);
            clock_state.push(Span::styled(format!(" {} ", app.lang.tr("FROZEN")), unmissable));
            clock_state.push(Span::styled(" ", t.header));
        }
        if c.slow_motion > 1 {
            let slow = t.warn.add_modifier(Modifier::REVERSED | Modifier::BOLD);
            clock_state.push(Span::styled(
                format!(" {} ", app.lang.fmt("SLOW x{factor}", &[("factor", &c.slow_motion)])),
                slow,
            ));
            clock_state.push(Span::styled(" ", t.header));
        }
    }
    let state_width: usize = clock_state.iter().map(|s| s.width()).sum();
    let title_width = unicode_width::UnicodeWidthStr::width(title.as_str());
    let free = (area.width as usize).saturating_sub(title_width + state_width + clock.chars().count() + 1);
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
    // Narrow terminals, or many settings to show, get short labels; narrower still, the
    // least important items go whole (the demo and acks before a counter).
    let wide = area.width >= 110;
    // One pass over the partitions for both labels' lengths: a large cluster has thousands.
    let health = Health::of(&app.view);
    let items = counters(app, &health, wide)
        .into_iter()
        .zip(counters(app, &health, false))
        .map(|((long, rank), (short, _))| Item::new(long, rank).or_short(short))
        .collect();
    let second = Line::from(by_priority(items, usize::from(area.width))).style(Style::default());
    frame.render_widget(Paragraph::new(vec![first, second]), area);
}

/// The health counters, then the demo and the trainer's settings, with long labels when
/// `wide`: each item with how much it matters on a narrow screen.
/// The cluster's health in counts: brokers up, partitions online, under-replicated, offline.
struct Health {
    up: usize,
    online: usize,
    urp: usize,
    offline: usize,
}

impl Health {
    fn of(v: &crate::view::ClusterView) -> Health {
        let online = v.partitions_online();
        Health {
            up: v.brokers_up(),
            online,
            urp: v.under_replicated(),
            offline: v.partitions.len() - online,
        }
    }
}

fn counters(app: &App, health: &Health, wide: bool) -> Vec<(Vec<Span<'static>>, u8)> {
    let v = &app.view;
    let t = &app.theme;
    let lang = app.lang;
    let label = |long: &'static str, short: &'static str| lang.tr(if wide { long } else { short }).to_string();
    let gap = || Span::raw(if wide { "   " } else { "  " });
    let counter = |label: &str, value: String, bad: bool| {
        vec![
            Span::styled(format!("{label} "), t.dim),
            Span::styled(value, if bad { t.error } else { t.ok }),
            gap(),
        ]
    };
    let &Health {
        up,
        online,
        urp,
        offline,
    } = health;
    let mut items = vec![
        (
            counter(
                &label("brokers up", "brokers"),
                format!("{up}/{}", v.brokers.len()),
                up < v.brokers.len(),
            ),
            9,
        ),
        (
            counter(
                &label("controller", "ctrl"),
                v.controller
                    .map_or_else(|| lang.tr("none").to_string(), |c| c.to_string()),
                v.controller.is_none(),
            ),
            7,
        ),
        (
            counter(
                &label("partitions online", "online"),
                format!("{online}/{}", v.partitions.len()),
                offline > 0,
            ),
            8,
        ),
        (counter(&label("under-replicated", "URP"), urp.to_string(), urp > 0), 6),
        (counter(lang.tr("offline"), offline.to_string(), offline > 0), 8),
    ];
    if let Some(running) = v.demo {
        items.push((
            vec![
                Span::styled(format!("{} ", lang.tr("demo")), t.dim),
                Span::styled(
                    lang.tr(if running { "running" } else { "paused" }).to_string(),
                    if running { t.ok } else { t.warn },
                ),
                gap(),
            ],
            2,
        ));
    }
    if let Some(c) = &v.controls {
        if !c.auto_rebalance {
            items.push((
                vec![
                    Span::styled(label("auto-rebalance off", "rebalance off"), t.warn),
                    gap(),
                ],
                4,
            ));
        }
        if c.unclean_election {
            items.push((vec![Span::styled(lang.tr("unclean on").to_string(), t.error), gap()], 5));
        }
        if let Some(acks) = c.producer_acks {
            items.push((
                vec![
                    Span::styled("acks=", t.dim),
                    Span::styled(
                        crate::view::source::acks_label(acks),
                        if acks == -1 { t.ok } else { t.warn },
                    ),
                ],
                3,
            ));
        }
    }
    items
}
