//! The reassignments screen (`V`, `:reassign` alone): one row per partition moving, and the
//! moves that finished or were cancelled while the console watched. A row says the replicas
//! before -> target (+ joining, - leaving), how far each joining replica is behind its leader
//! in records and bytes, the ISR, where the move stands in words, how much is copied, the
//! copy rate and an ETA from the lag's change between views (`view::reassignments`); a
//! header totals them. Its own keys plan a move through the `:reassign` command line (`d`,
//! `b`, `r`, `m`) and cancel one (`x`, Delete) or all (`c`): `App::reassign_key`.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};

use super::app::App;
use super::keymap::Binding;
use super::text::{bytes, fit};
use crate::view::BrokerId;
use crate::view::reassignments::{Move, Phase, Unit};

const REPLICAS: usize = 19;
const LAG: usize = 22;
const ISR: usize = 8;
const PROGRESS: usize = 14;
const RATE: usize = 11;
const ETA: usize = 7;

/// `text` cut or padded to `width` columns, and a space.
fn column(text: &str, width: usize) -> String {
    let cut = fit(text, width.saturating_sub(1));
    let pad = width.saturating_sub(unicode_width::UnicodeWidthStr::width(cut.as_str()));
    format!("{cut}{}", " ".repeat(pad))
}

fn ids(list: &[BrokerId]) -> String {
    list.iter().map(BrokerId::to_string).collect::<Vec<_>>().join(",")
}

/// A time span as an operator reads an ETA: `45s`, `3m 05s`, `1h 02m`.
pub fn span(secs: i64) -> String {
    let secs = secs.max(0);
    if secs < 60 {
        format!("{secs}s")
    } else if secs < 3600 {
        format!("{}m {:02}s", secs / 60, secs % 60)
    } else {
        format!("{}h {:02}m", secs / 3600, (secs % 3600) / 60)
    }
}

/// A record count in a few columns: `950`, `12345`, `123k`, `1.2M`.
fn records(n: f64) -> String {
    let n = if n.is_finite() { n.max(0.0) } else { 0.0 };
    if n < 100_000.0 {
        format!("{n:.0}")
    } else if n < 10_000_000.0 {
        format!("{:.0}k", n / 1000.0)
    } else {
        format!("{:.1}M", n / 1_000_000.0)
    }
}

/// An amount in its unit.
fn amount(unit: Unit, n: f64) -> String {
    match unit {
        Unit::Bytes => bytes(n),
        Unit::Records => format!("{} rec", records(n)),
    }
}

/// A rate in its unit.
fn per_second(unit: Unit, n: f64) -> String {
    format!("{}/s", amount(unit, n))
}

/// The replicas before -> target: leaving ones marked -, joining ones +.
fn replicas(m: &Move) -> String {
    let mark = |list: &[BrokerId], marked: &[BrokerId], sign: &str| {
        list.iter()
            .map(|b| {
                if marked.contains(b) {
                    format!("{sign}{b}")
                } else {
                    b.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    if m.moving() {
        format!(
            "{} -> {}",
            mark(&m.before, &m.removing, "-"),
            mark(&m.target, &m.adding, "+")
        )
    } else {
        format!("{} -> {}", ids(&m.before), ids(&m.target))
    }
}

/// Each joining replica's lag: `+3 800 / 78.1 KiB`; `-` for what is unknown.
fn lags(m: &Move) -> String {
    if !m.moving() {
        return String::new();
    }
    m.lags
        .iter()
        .map(|l| {
            let records = l.records.map_or("-".to_string(), |r| records(r as f64));
            let size = l.bytes.map_or("-".to_string(), |b| bytes(b as f64));
            format!("+{} {records} / {size}", l.broker)
        })
        .collect::<Vec<_>>()
        .join("  ")
}

/// `████░░░░  52%`, or `-` when nothing measures it.
fn progress(m: &Move) -> String {
    const CELLS: usize = 8;
    match m.progress() {
        Some(p) => {
            let p = p.clamp(0.0, 1.0);
            // Full only when done: 99.6% copied still shows a cell to go.
            let full = ((p * CELLS as f64).floor() as usize).min(CELLS);
            let percent = (p * 100.0).floor() as u32;
            format!("{}{} {percent:>3}%", "█".repeat(full), "░".repeat(CELLS - full))
        }
        None => "-".to_string(),
    }
}

/// The state in words.
fn state(app: &App, m: &Move, now: DateTime<Utc>) -> (String, Style) {
    let lang = app.lang;
    let t = &app.theme;
    let took = || {
        let s = span(m.took(now).num_seconds());
        if m.seen_start { s } else { format!("≥ {s}") }
    };
    match m.phase(now) {
        Phase::Copying => {
            let out: Vec<String> = m
                .lags
                .iter()
                .filter(|l| !l.in_isr)
                .map(|l| format!("+{}", l.broker))
                .collect();
            (
                lang.fmt(
                    "copying: {replicas} not in the ISR yet",
                    &[("replicas", &out.join(","))],
                ),
                t.text,
            )
        }
        Phase::BrokerDown(b) => (lang.fmt("stalled: broker {broker} is down", &[("broker", &b)]), t.error),
        Phase::NoProgress(secs) => (
            lang.fmt("stalled: no progress for {time}", &[("time", &span(secs))]),
            t.warn,
        ),
        Phase::WaitingForLeader => (lang.tr("in ISR, waiting for the leader to move").to_string(), t.text),
        Phase::RemovingOld => (lang.tr("in ISR, removing the old replicas").to_string(), t.text),
        Phase::Done => (lang.fmt("done in {time}", &[("time", &took())]), t.ok),
        Phase::Cancelled => (lang.fmt("cancelled after {time}", &[("time", &took())]), t.dim),
    }
}

/// The header's totals: partitions moving, what is left, the pace, the ETA.
fn totals(app: &App) -> Vec<Line<'static>> {
    let lang = app.lang;
    let t = &app.theme;
    let totals = app.reassignments.totals();
    let mut parts = Vec::new();
    if totals.moving == 0 {
        parts.push(lang.tr("no partition is moving").to_string());
    } else {
        parts.push(lang.fmt("{n} moving", &[("n", &totals.moving)]));
        let unknown = || lang.tr("unknown").to_string();
        let left = match (totals.unit, totals.left) {
            (Some(u), Some(l)) => amount(u, l),
            _ => unknown(),
        };
        parts.push(lang.fmt("{amount} left", &[("amount", &left)]));
        let rate = match (totals.unit, totals.rate) {
            (Some(u), Some(r)) => per_second(u, r),
            _ => "-".to_string(),
        };
        parts.push(lang.fmt("copying {rate}", &[("rate", &rate)]));
        let eta = totals.eta_secs.map_or("-".to_string(), |s| span(s.round() as i64));
        parts.push(lang.fmt("ETA {eta}", &[("eta", &eta)]));
    }
    if totals.done > 0 {
        parts.push(lang.fmt("{n} done", &[("n", &totals.done)]));
    }
    if totals.cancelled > 0 {
        parts.push(lang.fmt("{n} cancelled", &[("n", &totals.cancelled)]));
    }
    let mut lines = vec![Line::styled(format!(" {}", parts.join(" · ")), t.title)];
    if totals.moving > 0 && totals.sizes_unknown {
        let note = if totals.unit == Some(Unit::Records) {
            lang.tr("replica sizes unknown (the cluster does not describe its log dirs): lag, progress and rate count records")
        } else {
            lang.tr("replica sizes or log ends unknown: what is left cannot be measured; the ISR tells when a replica caught up")
        };
        lines.push(Line::styled(format!(" {note}"), t.warn));
    }
    lines
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>) {
    let t = &app.theme;
    let lang = app.lang;
    let back = app.keymap.hint(Binding::Back);
    let title = format!(" {} · {back} {} ", lang.tr("Partition reassignments"), lang.tr("back"));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.focused_border)
        .title(Line::styled(title, t.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let head = totals(app);
    let [top, list, bottom] = Layout::vertical([
        Constraint::Length(head.len() as u16 + 1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(inner);
    frame.render_widget(Paragraph::new(head), top);
    let width = list.width as usize;
    let rows = app.reassignments.rows();
    // As wide as the longest name (`__consumer_offsets-49`), within bounds.
    let partition = rows
        .iter()
        .map(|m| unicode_width::UnicodeWidthStr::width(m.name().as_str()))
        .max()
        .unwrap_or(0)
        .clamp(12, 40)
        + 2;
    let mut lines = vec![Line::styled(
        fit(
            &format!(
                " {}{}{}{}{}{}{}{}",
                column(lang.tr("PARTITION"), partition),
                column(lang.tr("REPLICAS"), REPLICAS),
                column(lang.tr("LAG (records / bytes)"), LAG),
                column(lang.tr("ISR"), ISR),
                column(lang.tr("PROGRESS"), PROGRESS),
                column(lang.tr("RATE"), RATE),
                column(lang.tr("ETA"), ETA),
                lang.tr("STATE"),
            ),
            width,
        ),
        t.header,
    )];
    if rows.is_empty() {
        lines.push(Line::styled(
            format!(" {}", lang.tr("No move seen since the console started.")),
            t.dim,
        ));
    }
    let room = (list.height as usize).saturating_sub(1).max(1);
    let cursor = app.moves_cursor.min(rows.len().saturating_sub(1));
    let first = cursor.saturating_sub(room - 1);
    for (i, m) in rows.iter().enumerate().skip(first).take(room) {
        let unit = m.unit();
        let rate = unit
            .and_then(|u| Some(per_second(u, m.copy_rate(u)?)))
            .unwrap_or_else(|| "-".into());
        let eta = match unit.and_then(|u| m.eta_secs(u)) {
            Some(s) => span(s.round() as i64),
            None if m.moving() => "-".into(),
            None => String::new(),
        };
        let (said, style) = state(app, m, now);
        let text = format!(
            " {}{}{}{}{}{}{}{said}",
            column(&m.name(), partition),
            column(&replicas(m), REPLICAS),
            column(&lags(m), LAG),
            column(&ids(&m.isr), ISR),
            column(&progress(m), PROGRESS),
            column(if m.moving() { &rate } else { "" }, RATE),
            column(&eta, ETA),
        );
        let style = if i == cursor { t.selected } else { style };
        lines.push(Line::styled(fit(&text, width), style));
    }
    frame.render_widget(Paragraph::new(lines), list);
    let keys = if app.capabilities.read_only {
        lang.tr("read-only: moves are shown, not planned or cancelled")
    } else {
        lang.tr("d drain a broker · b balance · r change a topic's RF · m move a replica · x cancel the selected · c cancel all")
    };
    frame.render_widget(Paragraph::new(Line::styled(format!(" {keys}"), t.dim)), bottom);
}
