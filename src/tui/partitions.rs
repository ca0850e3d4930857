//! Partitions of the selected topic: leader and epoch, each replica with its role (colour and
//! glyph: ★ leader, ● in-sync follower, ○ out-of-sync, ✗ offline), ISR, preferred leader and
//! whether it leads, high watermark, last stable offset (highlighted while an open
//! transaction holds read_committed consumers below the HW), leader LEO, each follower's lag
//! and the log start.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use unicode_width::UnicodeWidthStr;

use super::Pane;
use super::app::App;
use super::keymap::Binding;
use super::layout::Width::{Length, Min};
use super::layout::{Column, block, flashing, headers, rows_in, scroll, spaced_row};
use super::pane::{PaneLayout, PaneView};
use super::theme::Theme;
use crate::view::{PartitionRow, ReplicaRole};

/// The replicas of a partition as styled `★1 ●2 ○0` spans.
pub fn replica_spans<'a>(theme: &Theme, p: &PartitionRow) -> Vec<Span<'a>> {
    replica_spans_spaced(theme, p, false)
}

/// The replicas as spans, `wide` for a room: `★ 1  ● 2  ○ 0`.
fn replica_spans_spaced<'a>(theme: &Theme, p: &PartitionRow, wide: bool) -> Vec<Span<'a>> {
    let (inside, between) = if wide { (" ", "  ") } else { ("", " ") };
    let mut spans = Vec::new();
    for (i, r) in p.replicas.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(between));
        }
        // A reassignment in progress: + marks a replica joining, - one leaving.
        let moving = if p.adding.contains(&r.broker) {
            "+"
        } else if p.removing.contains(&r.broker) {
            "-"
        } else {
            ""
        };
        spans.push(Span::styled(
            format!("{moving}{}{inside}{}", r.role.glyph(), r.broker),
            theme.role(r.role),
        ));
    }
    spans
}

fn follower_lag(p: &PartitionRow) -> String {
    let leader = p.leader_log_end();
    p.replicas
        .iter()
        .filter(|r| r.role != ReplicaRole::Leader)
        .map(|r| match (r.role, leader, r.log_end_offset) {
            (ReplicaRole::Offline, ..) => format!("{}:✗", r.broker),
            (_, Some(l), Some(f)) => format!("{}:{}", r.broker, (l - f).max(0)),
            _ => format!("{}:?", r.broker),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn ids(list: &[i32]) -> String {
    list.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

fn opt(v: Option<i64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

pub struct PartitionsPane;

impl PaneView for PartitionsPane {
    fn title(&self) -> &'static str {
        "Partitions"
    }

    fn hints(&self) -> &'static [(Binding, &'static str)] {
        &[
            (Binding::Drill, "tail partition"),
            (Binding::Explain, "why"),
            (Binding::ReplicaLog, "log picture"),
            (Binding::Back, "topics"),
            (Binding::Rebalance, "rebalance topic"),
            (Binding::Produce, "produce"),
            (Binding::DeleteRecords, "delete records"),
            (Binding::Help, "help"),
            (Binding::Quit, "quit"),
        ]
    }

    fn rows(&self, app: &App) -> usize {
        app.visible_partitions().len()
    }

    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>) -> PaneLayout {
        draw(frame, area, app, now)
    }
}

fn draw(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>) -> PaneLayout {
    let t = &app.theme;
    let Some(topic) = app.selected_topic() else {
        let block = block(app, Pane::Partitions, String::new());
        frame.render_widget(
            Paragraph::new(app.lang.tr("no topic selected"))
                .style(t.dim)
                .block(block),
            area,
        );
        return PaneLayout::plain(Pane::Partitions, area);
    };
    if app.projector() {
        return draw_projector(frame, area, app, now, &topic.name);
    }
    let partitions = app.visible_partitions();
    let legend = format!(" · {}", app.lang.tr("★ leader ● in sync ○ out of sync ✗ offline"));
    let room = (area.width as usize).saturating_sub(20 + topic.name.width());
    let info = if legend.width() <= room {
        format!("{}{legend}", topic.name)
    } else {
        topic.name.clone()
    };
    let block = block(app, Pane::Partitions, info);
    let inner = block.inner(area);
    let height = inner.height.saturating_sub(1) as usize;
    let cursor = app.cursor(Pane::Partitions);
    let layout = PaneLayout::table(Pane::Partitions, area, inner, scroll(cursor, height), partitions.len());
    let rf = partitions.first().map_or(3, |p| p.replicas.len());
    let replica_width = partitions
        .iter()
        .skip(scroll(cursor, height))
        .take(height)
        .map(|p| Line::from(replica_spans(t, p)).width())
        .max()
        .unwrap_or(0)
        .max(8) as u16;
    // Offsets take the room their digits need: with the LSO next to the HW and the LEO, fixed
    // widths would squeeze the replicas out of a dashboard's pane.
    let offset_width = partitions
        .iter()
        .skip(scroll(cursor, height))
        .take(height)
        .flat_map(|p| [p.high_watermark, p.last_stable_offset, p.leader_log_end()])
        .map(|o| opt(o).len())
        .max()
        .unwrap_or(0)
        .max(4) as u16;
    let rows = partitions
        .iter()
        .enumerate()
        .skip(scroll(cursor, height))
        .take(height)
        .map(|(i, p)| {
            let flash = flashing(app, p.changed_at, now);
            let leader = match p.leader {
                Some(l) => Span::styled(l.to_string(), if flash { t.flash } else { t.leader }),
                None => Span::styled(app.lang.tr("none").to_string(), t.error),
            };
            let isr_style = if flash {
                t.flash
            } else if p.under_replicated {
                t.warn
            } else {
                t.text
            };
            let pref = if p.preferred_leads() {
                Span::styled(format!("{} ✓", p.preferred_leader), t.text)
            } else {
                Span::styled(format!("{} ✗", p.preferred_leader), t.warn)
            };
            let lso_style = if p.held_back_by_transaction() { t.warn } else { t.text };
            let row = Row::new(vec![
                Cell::from(Line::from(p.partition.to_string()).right_aligned()),
                Cell::from(Line::from(leader).right_aligned()),
                Cell::from(Line::from(p.leader_epoch.to_string()).right_aligned()),
                Cell::from(Line::from(replica_spans(t, p))),
                Cell::from(Span::styled(ids(&p.isr), isr_style)),
                Cell::from(Line::from(pref)),
                Cell::from(Line::from(opt(p.high_watermark)).right_aligned()),
                Cell::from(Line::from(Span::styled(opt(p.last_stable_offset), lso_style)).right_aligned()),
                Cell::from(Line::from(opt(p.leader_log_end())).right_aligned()),
                Cell::from(Line::from(opt(p.log_start_offset)).right_aligned()),
                Cell::from(follower_lag(p)),
            ]);
            if i == cursor && app.focus == Pane::Partitions {
                row.style(t.selected)
            } else {
                row
            }
        });
    let columns = headers(
        app,
        &[
            Column::right("P", Length(3)).kept(),
            Column::right("LEADER", Length(6)),
            Column::right("EPOCH", Length(5)),
            Column::left("REPLICAS", Length(replica_width)),
            Column::left("ISR", Length((rf * 2).saturating_sub(1).max(3) as u16)).kept(),
            Column::left("PREF", Length(4)),
            Column::right("HW", Length(offset_width)).kept(),
            Column::right("LSO", Length(offset_width)).kept(),
            Column::right("LEO", Length(offset_width)).kept(),
            Column::right("START", Length(5)),
            Column::left("BEHIND", Min(8)),
        ],
    );
    let header = Row::new(columns.cells).style(t.column_header);
    frame.render_widget(
        Table::new(rows, columns.widths)
            .header(header)
            .column_spacing(1)
            .block(block),
        area,
    );
    layout
}

/// For a room: partition, leader, the replicas as wide role glyphs (★ and ● are the ISR) and
/// the high watermark, spaced.
fn draw_projector(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>, topic: &str) -> PaneLayout {
    let t = &app.theme;
    let partitions = app.visible_partitions();
    let legend = format!(" · {}", app.lang.tr("★ leader ● in sync ○ behind ✗ offline"));
    let room = (area.width as usize).saturating_sub(16 + topic.width());
    let info = if legend.width() <= room {
        format!("{topic}{legend}")
    } else {
        topic.to_string()
    };
    let block = block(app, Pane::Partitions, info);
    let inner = block.inner(area);
    let height = rows_in(inner.height.saturating_sub(1), 2);
    let cursor = app.cursor(Pane::Partitions);
    let first = scroll(cursor, height);
    let layout = PaneLayout::spaced(Pane::Partitions, area, inner, first, partitions.len(), 2);
    let replica_width = partitions
        .iter()
        .skip(first)
        .take(height)
        .map(|p| Line::from(replica_spans_spaced(t, p, true)).width())
        .max()
        .unwrap_or(0)
        .max(8) as u16;
    let rows = partitions.iter().enumerate().skip(first).take(height).map(|(i, p)| {
        let flash = flashing(app, p.changed_at, now);
        let leader = match p.leader {
            Some(l) => Span::styled(l.to_string(), if flash { t.flash } else { t.leader }),
            None => Span::styled(app.lang.tr("none").to_uppercase(), t.error),
        };
        let row = spaced_row(Row::new(vec![
            Cell::from(Line::from(p.partition.to_string()).right_aligned()),
            Cell::from(Line::from(leader).right_aligned()),
            Cell::from(Line::from(replica_spans_spaced(t, p, true))),
            Cell::from(Line::from(opt(p.high_watermark)).right_aligned()),
        ]));
        if i == cursor && app.focus == Pane::Partitions {
            row.style(t.selected)
        } else {
            row
        }
    });
    let columns = headers(
        app,
        &[
            Column::right("P", Length(3)).kept(),
            Column::right("LEADER", Length(6)),
            Column::left("REPLICAS", Length(replica_width)),
            Column::right("HW", Length(7)).kept(),
        ],
    );
    let header = Row::new(columns.cells).style(t.column_header);
    frame.render_widget(
        Table::new(rows, columns.widths)
            .header(header)
            .column_spacing(3)
            .block(block),
        area,
    );
    layout
}
