//! The transactions screen (`Y`, `:transactions`): one row per transactional id as its
//! coordinator describes it (ListTransactions, DescribeTransactions), read only: id, state,
//! producer id and epoch, timeout, partitions, how long the open transaction has run, and the
//! coordinator. An open transaction older than its timeout stands out: the coordinator is
//! about to abort it, and it holds read_committed consumers back meanwhile.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use tokio::sync::oneshot;

use super::app::App;
use super::awaited::Awaited;
use super::keymap::Binding;
use super::text::fit;
use crate::view::transactions::{TransactionRow, TransactionsAnswer, age};

/// The open transactions screen: the source's answer and the cursor.
#[derive(Debug, Default)]
pub struct TransactionsScreen {
    pub answer: Awaited<Vec<TransactionRow>>,
    /// When the question on its way was asked.
    asked_at: Option<DateTime<Utc>>,
    /// When the answer shown was asked for: its ages are as of then, not growing with each
    /// redraw (the transaction may have ended since; `Y` asks again).
    pub as_of: Option<DateTime<Utc>>,
    pub cursor: usize,
}

impl TransactionsScreen {
    /// The question goes out at `now`.
    pub fn asked(&mut self, now: DateTime<Utc>) {
        self.asked_at = Some(now);
    }

    /// Waits for this answer (the rows shown stay until it arrives).
    pub fn attach(&mut self, answer: oneshot::Receiver<TransactionsAnswer>) {
        if self.answer.attach(answer) {
            self.arrived();
        }
    }

    /// Takes the answer if it arrived; true when the screen changed.
    pub fn poll(&mut self) -> bool {
        let arrived = self.answer.poll();
        if arrived {
            self.arrived();
        }
        arrived
    }

    fn arrived(&mut self) {
        self.as_of = self.asked_at.take();
        self.clamp();
    }

    fn clamp(&mut self) {
        self.cursor = self.cursor.min(self.rows().len().saturating_sub(1));
    }

    pub fn rows(&self) -> &[TransactionRow] {
        self.answer.ok().map_or(&[], Vec::as_slice)
    }

    pub fn move_by(&mut self, by: i64) {
        let last = self.rows().len().saturating_sub(1) as i64;
        self.cursor = (self.cursor as i64 + by).clamp(0, last.max(0)) as usize;
    }
}

/// The columns: a title and a width (the last takes the rest).
const COLUMNS: [(&str, usize); 8] = [
    ("TRANSACTIONAL ID", 24),
    ("STATE", 15),
    ("PRODUCER", 10),
    ("EPOCH", 6),
    ("TIMEOUT", 9),
    ("PARTS", 6),
    ("OPEN FOR", 9),
    ("COORD", 6),
];

/// `text` cut or padded to `width` columns, and a space.
fn column(text: &str, width: usize) -> String {
    let cut = fit(text, width.saturating_sub(1));
    let pad = width.saturating_sub(unicode_width::UnicodeWidthStr::width(cut.as_str()));
    format!("{cut}{}", " ".repeat(pad))
}

fn known(value: i64) -> String {
    if value < 0 { "-".into() } else { value.to_string() }
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>) {
    let t = &app.theme;
    let lang = app.lang;
    let Some(screen) = &app.transactions else {
        return;
    };
    let back = app.keymap.hint(Binding::Back);
    let title = format!(" {} · {back} {} ", lang.tr("Transactions"), lang.tr("back"));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.focused_border)
        .title(Line::styled(title, t.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [list, bottom] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(inner);
    let say = |frame: &mut Frame, text: String, style| {
        frame.render_widget(
            Paragraph::new(Line::styled(text, style)).wrap(Wrap { trim: true }),
            list,
        );
    };
    let as_of = screen.as_of.unwrap_or(now);
    let rows = match screen.answer.get() {
        None => return say(frame, lang.tr("loading...").to_string(), t.dim),
        Some(Err(e)) => {
            return say(
                frame,
                lang.fmt("cannot list the transactions: {reason}", &[("reason", e)]),
                t.error,
            );
        }
        Some(Ok(rows)) if rows.is_empty() => {
            return say(
                frame,
                lang.tr(
                    "no transactional ids: no producer has used transactions here (or no coordinator answered yet)",
                )
                .to_string(),
                t.dim,
            );
        }
        Some(Ok(rows)) => rows,
    };
    let width = list.width as usize;
    let header: String = COLUMNS.iter().map(|(name, w)| column(lang.tr(name), *w)).collect();
    let mut lines = vec![Line::styled(fit(&format!("  {header}"), width), t.header)];
    let room = (list.height as usize).saturating_sub(1).max(1);
    let first = screen.cursor.saturating_sub(room - 1);
    let now_ms = as_of.timestamp_millis();
    for (i, row) in rows.iter().enumerate().skip(first).take(room) {
        let open_for = row.open_for_ms(now_ms);
        let cells = [
            row.transactional_id.clone(),
            row.state.clone(),
            row.producer_id.to_string(),
            known(i64::from(row.producer_epoch)),
            if row.timeout_ms < 0 {
                "-".into()
            } else {
                age(i64::from(row.timeout_ms))
            },
            row.partitions.len().to_string(),
            open_for.map_or("-".into(), age),
            row.coordinator.map_or("-".into(), |c| c.to_string()),
        ];
        let text: String = cells
            .iter()
            .zip(COLUMNS)
            .map(|(cell, (_, w))| column(cell, w))
            .collect();
        let overdue = open_for.is_some_and(|ms| row.timeout_ms >= 0 && ms > i64::from(row.timeout_ms));
        let style = if i == screen.cursor {
            t.selected
        } else if overdue {
            t.error
        } else if open_for.is_some() {
            t.warn
        } else {
            t.text
        };
        lines.push(Line::styled(fit(&format!("  {text}"), width), style));
    }
    frame.render_widget(Paragraph::new(lines), list);
    let open = rows.iter().filter(|r| r.is_open()).count();
    let footer = lang.fmt(
        "transactional ids: {n} · open: {open} · as of {time} · {key} asks again · read only",
        &[
            ("n", &rows.len()),
            ("open", &open),
            ("time", &as_of.with_timezone(&app.tz).format("%H:%M:%S")),
            ("key", &app.keymap.hint(Binding::Transactions)),
        ],
    );
    frame.render_widget(Paragraph::new(Line::styled(fit(&footer, width), t.dim)), bottom);
}
