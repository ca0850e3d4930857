//! Brokers: state, leaders, replicas, leader skew, disk use (the bytes of the replicas it
//! hosts, where the pane is wide enough), bytes in/out and a produce-rate sparkline. The
//! controller is marked ◆. An external cluster tells no byte rates without JMX: there the
//! columns show the records per second appended to the partitions each broker leads, and the
//! outbound column "–".

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table};

use super::Pane;
use super::app::App;
use super::keymap::Binding;
use super::layout::Width::{Length, Min};
use super::layout::{Column, block, flashing, headers, rows_in, scroll, spaced_row};
use super::pane::{PaneLayout, PaneView};
use super::text::{bytes, rate, sparkline};
use crate::view::{BrokerLifecycle, BrokerRow, BrokerStatus, Throughput};

/// kafbat's thresholds for leader skew.
const SKEW_WARN: f64 = 10.0;
const SKEW_ALERT: f64 = 20.0;

pub struct BrokersPane;

impl PaneView for BrokersPane {
    fn title(&self) -> &'static str {
        "Brokers"
    }

    fn hints(&self) -> &'static [(Binding, &'static str)] {
        &[
            (Binding::KillBroker, "kill"),
            (Binding::StopBroker, "stop"),
            (Binding::RestartBroker, "restart"),
            (Binding::PauseBroker, "pause"),
            (Binding::Rebalance, "rebalance"),
            (Binding::NextPane, "pane"),
            (Binding::Help, "help"),
            (Binding::Quit, "quit"),
        ]
    }

    fn rows(&self, app: &App) -> usize {
        app.visible_brokers().len()
    }

    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>) -> PaneLayout {
        draw(frame, area, app, now)
    }
}

fn draw(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>) -> PaneLayout {
    if app.projector() {
        return draw_projector(frame, area, app, now);
    }
    let t = &app.theme;
    let brokers = app.visible_brokers();
    let online: Vec<_> = app.view.brokers.iter().filter(|b| b.status.is_up()).collect();
    let total_leaders: usize = online.iter().map(|b| b.leaders).sum();
    let mean = if online.is_empty() {
        0.0
    } else {
        total_leaders as f64 / online.len() as f64
    };
    let messages = app
        .view
        .brokers
        .iter()
        .any(|b| matches!(b.throughput, Throughput::Messages { .. }));
    let block = block(app, Pane::Brokers, kafka_addresses(&app.view.brokers));
    let inner = block.inner(area);
    let height = inner.height.saturating_sub(1) as usize;
    let cursor = app.cursor(Pane::Brokers);
    // DISK only where it fits beside the rest (the dashboard's brokers pane at 120 columns
    // has no room for it; a maximised pane or a wide screen has).
    let disk = inner.width >= DISK_FROM_WIDTH;
    let spark_width = (inner.width as usize)
        .saturating_sub(if disk { 60 } else { 51 })
        .clamp(4, 30);
    let layout = PaneLayout::table(Pane::Brokers, area, inner, scroll(cursor, height), brokers.len());
    let rows = brokers
        .iter()
        .enumerate()
        .skip(scroll(cursor, height))
        .take(height)
        .map(|(i, b)| {
            let skew = if b.status.is_up() && mean > 0.0 {
                (b.leaders as f64 - mean) / mean * 100.0
            } else {
                0.0
            };
            let skew_style = match skew.abs() {
                s if s >= SKEW_ALERT => t.error,
                s if s >= SKEW_WARN => t.warn,
                _ => t.text,
            };
            let state_style = if flashing(app, b.changed_at, now) {
                t.flash
            } else {
                t.broker(b.status)
            };
            let id = if b.is_controller {
                format!("{} ◆", b.id)
            } else {
                b.id.to_string()
            };
            let mut cells = vec![
                Cell::from(id),
                Cell::from(Span::styled(state_label(app, b), state_style)),
                Cell::from(Line::from(b.leaders.to_string()).right_aligned()),
                Cell::from(Line::from(b.replicas.to_string()).right_aligned()),
                Cell::from(Line::from(Span::styled(format!("{skew:+.0}%"), skew_style)).right_aligned()),
                Cell::from(Line::from(throughput_in(b.throughput)).right_aligned()),
                Cell::from(Line::from(throughput_out(b.throughput)).right_aligned()),
                Cell::from(Span::styled(sparkline(&b.produce_history, spark_width), t.ok)),
            ];
            if disk {
                let used = b.disk_bytes.map_or("–".into(), |d| bytes(d as f64));
                cells.insert(5, Cell::from(Line::from(used).right_aligned()));
            }
            let row = Row::new(cells);
            if i == cursor && app.focus == Pane::Brokers {
                row.style(t.selected)
            } else {
                row
            }
        });
    // A joining or draining broker's state is longer ("draining 5/12"): the column widens.
    let state_width = brokers
        .iter()
        .map(|b| unicode_width::UnicodeWidthStr::width(state_label(app, b).as_str()))
        .max()
        .unwrap_or(0)
        .clamp(7, 16) as u16;
    let mut columns = vec![
        Column::left("ID", Length(4)).kept(),
        Column::left("STATE", Length(state_width)),
        Column::right("LEAD", Length(4)),
        Column::right("REPL", Length(4)),
        Column::right("SKEW", Length(5)),
        Column::right(if messages { "IN MSG/S" } else { "IN" }, Length(10)),
        Column::right("OUT", Length(10)),
        Column::left("RATE", Min(4)),
    ];
    if disk {
        columns.insert(5, Column::right("DISK", Length(8)));
    }
    let columns = headers(app, &columns);
    let header = Row::new(columns.cells).style(t.column_header);
    frame.render_widget(Table::new(rows, columns.widths).header(header).block(block), area);
    layout
}

/// A broker's state: its status, or while it joins or drains, that with its progress
/// (`draining 5/12`: 5 of the 12 replicas it held have moved away).
fn state_label(app: &App, b: &BrokerRow) -> String {
    match b.lifecycle {
        Some(BrokerLifecycle::Joining) if b.status == BrokerStatus::Fenced => app.lang.tr("joining").to_string(),
        Some(BrokerLifecycle::Draining { moved, total }) => format!("{} {moved}/{total}", app.lang.tr("draining")),
        _ => app.lang.tr(b.status.label()).to_string(),
    }
}

/// The pane's inner width from which the DISK column is shown: the other columns, their
/// gaps and the shortest sparkline take 56.
const DISK_FROM_WIDTH: u16 = 65;

/// For a room: id (◆ controller), state and leaders, spaced.
fn draw_projector(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>) -> PaneLayout {
    let t = &app.theme;
    let brokers = app.visible_brokers();
    let block = block(app, Pane::Brokers, format!("◆ {}", app.lang.tr("controller")));
    let inner = block.inner(area);
    let height = rows_in(inner.height.saturating_sub(1), 2);
    let cursor = app.cursor(Pane::Brokers);
    let first = scroll(cursor, height);
    let layout = PaneLayout::spaced(Pane::Brokers, area, inner, first, brokers.len(), 2);
    let rows = brokers.iter().enumerate().skip(first).take(height).map(|(i, b)| {
        let state_style = if flashing(app, b.changed_at, now) {
            t.flash
        } else {
            t.broker(b.status)
        };
        let id = if b.is_controller {
            format!("{} ◆", b.id)
        } else {
            b.id.to_string()
        };
        let row = spaced_row(Row::new(vec![
            Cell::from(id),
            Cell::from(Span::styled(state_label(app, b).to_uppercase(), state_style)),
            Cell::from(Line::from(b.leaders.to_string()).right_aligned()),
        ]));
        if i == cursor && app.focus == Pane::Brokers {
            row.style(t.selected)
        } else {
            row
        }
    });
    let columns = headers(
        app,
        &[
            Column::left("BROKER", Length(6)),
            Column::left("STATE", Length(7)),
            Column::right("LEADERS", Length(7)),
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

fn throughput_in(throughput: Throughput) -> String {
    match throughput {
        Throughput::Bytes { in_per_sec, .. } => format!("{}/s", bytes(in_per_sec)),
        Throughput::Messages { in_per_sec } => rate(in_per_sec),
    }
}

fn throughput_out(throughput: Throughput) -> String {
    match throughput {
        Throughput::Bytes { out_per_sec, .. } => format!("{}/s", bytes(out_per_sec)),
        Throughput::Messages { .. } => "–".into(),
    }
}

/// Where Kafka clients connect, for the pane's title: `Kafka 127.0.0.1:9092-9094` when the
/// ports follow the broker ids, else every port (`:40123,:40125`); empty without listeners.
fn kafka_addresses(brokers: &[BrokerRow]) -> String {
    let listeners: Vec<(&str, u32)> = brokers
        .iter()
        .filter_map(|b| b.address.as_deref()?.rsplit_once(':'))
        .filter_map(|(host, port)| Some((host, port.parse().ok()?)))
        .collect();
    let Some(&(host, first)) = listeners.first() else {
        return String::new();
    };
    let consecutive = listeners.windows(2).all(|w| w[1].1 == w[0].1 + 1);
    match listeners.last() {
        Some(&(_, last)) if consecutive && last != first => format!("Kafka {host}:{first}-{last}"),
        _ if listeners.len() == 1 => format!("Kafka {host}:{first}"),
        _ => {
            let ports: Vec<String> = listeners.iter().map(|(_, p)| format!(":{p}")).collect();
            format!("Kafka {host}{}", ports.join(","))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::BrokerStatus;

    fn broker(id: i32, address: Option<&str>) -> BrokerRow {
        BrokerRow {
            id,
            status: BrokerStatus::Online,
            is_controller: false,
            leaders: 0,
            replicas: 0,
            throughput: Throughput::Bytes {
                in_per_sec: 0.0,
                out_per_sec: 0.0,
            },
            address: address.map(str::to_string),
            disk_bytes: None,
            produce_history: Vec::new(),
            changed_at: None,
            lifecycle: None,
        }
    }

    #[test]
    fn the_title_names_where_kafka_clients_connect() {
        let free_ports = [broker(0, Some("127.0.0.1:40123")), broker(1, Some("127.0.0.1:40125"))];
        assert_eq!(kafka_addresses(&free_ports), "Kafka 127.0.0.1:40123,:40125");
        assert_eq!(
            kafka_addresses(&[broker(0, Some("127.0.0.1:9092"))]),
            "Kafka 127.0.0.1:9092"
        );
        assert_eq!(kafka_addresses(&[broker(0, None), broker(1, None)]), "");
    }
}
