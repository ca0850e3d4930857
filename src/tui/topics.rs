//! Topics: partitions, replication factor, under-replicated and offline partitions, rate,
//! size, retention and the total lag of the groups reading it.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table};

use super::Pane;
use super::app::App;
use super::keymap::Binding;
use super::layout::Width::Length;
use super::layout::{Column, block, headers, rows_in, scroll, spaced_row};
use super::pane::{PaneLayout, PaneView};
use super::text::{bytes, fit, rate, retention};

/// Where RETAIN sits among the columns.
const RETENTION_COLUMN: usize = 6;

pub struct TopicsPane;

impl PaneView for TopicsPane {
    fn title(&self) -> &'static str {
        "Topics"
    }

    fn hints(&self) -> &'static [(Binding, &'static str)] {
        &[
            (Binding::Drill, "partitions"),
            (Binding::Produce, "produce"),
            (Binding::CreateTopic, "create"),
            (Binding::DeleteTopic, "delete"),
            (Binding::Rebalance, "rebalance"),
            (Binding::Filter, "filter"),
            (Binding::AddPartitions, "add partitions"),
            (Binding::Help, "help"),
            (Binding::Quit, "quit"),
        ]
    }

    fn rows(&self, app: &App) -> usize {
        app.visible_topics().len()
    }

    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, _now: chrono::DateTime<chrono::Utc>) -> PaneLayout {
        draw(frame, area, app)
    }
}

fn draw(frame: &mut Frame, area: Rect, app: &App) -> PaneLayout {
    if app.projector() {
        return draw_projector(frame, area, app);
    }
    let t = &app.theme;
    let topics = app.visible_topics();
    let block = block(app, Pane::Topics, app.lang.count(app.view.topics.len(), "topic"));
    let inner = block.inner(area);
    let height = inner.height.saturating_sub(1) as usize;
    let cursor = app.cursor(Pane::Topics);
    // RETAIN only where the names keep room (it goes first in a narrow pane).
    let show_retention = inner.width as usize >= 51 + 14;
    let fixed = if show_retention { 51 } else { 42 };
    let name_width = (inner.width as usize).saturating_sub(fixed).clamp(8, 40);
    let layout = PaneLayout::table(Pane::Topics, area, inner, scroll(cursor, height), topics.len());
    let rows = topics
        .iter()
        .enumerate()
        .skip(scroll(cursor, height))
        .take(height)
        .map(|(i, tp)| {
            let urp_style = if tp.under_replicated > 0 { t.warn } else { t.text };
            let name_style = if tp.offline > 0 {
                t.error
            } else if tp.internal {
                t.dim
            } else {
                t.text
            };
            let urp = if tp.offline > 0 {
                format!("{} ✗{}", tp.under_replicated, tp.offline)
            } else {
                tp.under_replicated.to_string()
            };
            let mut cells = vec![
                Cell::from(Span::styled(fit(&tp.name, name_width), name_style)),
                Cell::from(Line::from(tp.partitions.to_string()).right_aligned()),
                Cell::from(Line::from(tp.replication_factor.to_string()).right_aligned()),
                Cell::from(Line::from(Span::styled(urp, urp_style)).right_aligned()),
                Cell::from(Line::from(rate(tp.messages_per_sec)).right_aligned()),
                Cell::from(Line::from(tp.size_bytes.map_or("–".into(), |b| bytes(b as f64))).right_aligned()),
                Cell::from(Line::from(tp.retention.as_ref().map_or("–".into(), retention)).right_aligned()),
                Cell::from(Line::from(tp.total_lag.map_or("-".into(), |l| l.to_string())).right_aligned()),
            ];
            if !show_retention {
                cells.remove(RETENTION_COLUMN);
            }
            let row = Row::new(cells);
            if i == cursor { row.style(t.selected) } else { row }
        });
    let mut columns = vec![
        Column::left("TOPIC", Length(name_width as u16)),
        Column::right("PARTS", Length(5)),
        Column::right("RF", Length(2)).kept(),
        Column::right("URP", Length(5)),
        Column::right("MSG/S", Length(8)),
        Column::right("SIZE", Length(9)),
        Column::right("RETAIN", Length(8)),
        Column::right("LAG", Length(7)),
    ];
    if !show_retention {
        columns.remove(RETENTION_COLUMN);
    }
    let columns = headers(app, &columns);
    let header = Row::new(columns.cells).style(t.column_header);
    frame.render_widget(Table::new(rows, columns.widths).header(header).block(block), area);
    layout
}

/// For a room: name, partitions, replication factor and under-replicated partitions
/// (✗ offline ones), spaced.
fn draw_projector(frame: &mut Frame, area: Rect, app: &App) -> PaneLayout {
    let t = &app.theme;
    let topics = app.visible_topics();
    let block = block(app, Pane::Topics, app.lang.count(app.view.topics.len(), "topic"));
    let inner = block.inner(area);
    let height = rows_in(inner.height.saturating_sub(1), 2);
    let cursor = app.cursor(Pane::Topics);
    let first = scroll(cursor, height);
    // What the three number columns and their gaps leave to the names.
    let name_width = (inner.width as usize).saturating_sub(5 + 2 + 6 + 3 * 3).clamp(8, 40);
    let layout = PaneLayout::spaced(Pane::Topics, area, inner, first, topics.len(), 2);
    let rows = topics.iter().enumerate().skip(first).take(height).map(|(i, tp)| {
        let name_style = if tp.offline > 0 {
            t.error
        } else if tp.internal {
            t.dim
        } else {
            t.text
        };
        let urp = if tp.offline > 0 {
            format!("{} ✗{}", tp.under_replicated, tp.offline)
        } else {
            tp.under_replicated.to_string()
        };
        let urp_style = if tp.offline > 0 {
            t.error
        } else if tp.under_replicated > 0 {
            t.warn
        } else {
            t.text
        };
        let row = spaced_row(Row::new(vec![
            Cell::from(Span::styled(fit(&tp.name, name_width), name_style)),
            Cell::from(Line::from(tp.partitions.to_string()).right_aligned()),
            Cell::from(Line::from(tp.replication_factor.to_string()).right_aligned()),
            Cell::from(Line::from(Span::styled(urp, urp_style)).right_aligned()),
        ]));
        if i == cursor { row.style(t.selected) } else { row }
    });
    let columns = headers(
        app,
        &[
            Column::left("TOPIC", Length(name_width as u16)),
            Column::right("PARTS", Length(5)),
            Column::right("RF", Length(2)).kept(),
            Column::right("URP", Length(6)),
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
