//! The message tail of the selected topic (all partitions or one) and the detail view of one
//! record: JSON pretty-printed, binary as hex. A record written in a transaction says how it
//! ended (committed, aborted, open); the tail reads as read_uncommitted or read_committed.

use chrono::{DateTime, FixedOffset, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, Wrap};
use unicode_width::UnicodeWidthStr;

use super::Pane;
use super::app::App;
use super::keymap::Binding;
use super::layout::Width::Length;
use super::layout::{Column, block, headers, scroll};
use super::pane::{PaneLayout, PaneView};
use super::text::fit;
use super::theme::Theme;
use crate::view::lang::Lang;
use crate::view::{SeekPosition, TailMode, TailRecord, TxnMark};

/// A record field as one line of text: UTF-8 as is, binary as hex.
pub fn preview(bytes: &Option<bytes::Bytes>) -> String {
    match bytes {
        None => "∅".into(),
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => s.to_string(),
            Err(_) => format!("0x{}", hex(b)),
        },
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn local_time(ms: i64, tz: FixedOffset, format: &str) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map_or_else(|| ms.to_string(), |t| t.with_timezone(&tz).format(format).to_string())
}

pub struct MessagesPane;

impl PaneView for MessagesPane {
    fn title(&self) -> &'static str {
        "Messages"
    }

    fn hints(&self) -> &'static [(Binding, &'static str)] {
        &[
            (Binding::Drill, "detail"),
            (Binding::Follow, "follow"),
            (Binding::PauseTail, "freeze"),
            (Binding::SeekBeginning, "beginning"),
            (Binding::SeekEnd, "end"),
            (Binding::SeekOffset, "offset"),
            (Binding::SeekTime, "time"),
            (Binding::NextPartition, "partition"),
            (Binding::Filter, "filter"),
            (Binding::Produce, "produce"),
            (Binding::Isolation, "isolation"),
            (Binding::Help, "help"),
        ]
    }

    fn rows(&self, app: &App) -> usize {
        app.visible_messages().len()
    }

    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, _now: DateTime<Utc>) -> PaneLayout {
        draw(frame, area, app)
    }
}

fn draw(frame: &mut Frame, area: Rect, app: &App) -> PaneLayout {
    let t = &app.theme;
    let Some(tail) = &app.tail else {
        let block = block(app, Pane::Messages, String::new());
        frame.render_widget(
            Paragraph::new(app.lang.tr("no topic selected"))
                .style(t.dim)
                .block(block),
            area,
        );
        return PaneLayout::plain(Pane::Messages, area);
    };
    let lang = app.lang;
    let messages = app.visible_messages();
    let spec = &tail.spec;
    let partition = spec
        .partition
        .map_or(lang.tr("all partitions").to_string(), |p| format!("p{p}"));
    let mode = lang.tr(match (&tail.frozen, tail.follow, spec.mode) {
        (Some(_), ..) => "FROZEN",
        (None, true, _) => "following",
        (None, false, TailMode::Ring) => "scrolling",
        (None, false, TailMode::Window) => "browsing",
    });
    let start = start_label(lang, &spec.start);
    // A search's progress comes first: it is what the user waits for.
    let mut info = match tail.search_progress() {
        Some((scanned, matched, done)) => format!(
            "{} · {} · {partition} · {}",
            lang.fmt(
                if done {
                    "search: scanned {scanned}, matched {matched}, done"
                } else {
                    "search: scanned {scanned}, matched {matched}…"
                },
                &[("scanned", &scanned), ("matched", &matched)]
            ),
            spec.topic,
            lang.fmt("from {start}", &[("start", &start)]),
        ),
        None => format!("{} · {partition} · {start} · {mode}", spec.topic),
    };
    if spec.read_committed {
        info.push_str(&format!(" · {}", lang.tr("read_committed")));
    }
    if let Some(e) = tail.error() {
        info.push_str(&format!(" · {e}"));
    }
    let block = block(app, Pane::Messages, info);
    let inner = block.inner(area);
    let height = inner.height.saturating_sub(1) as usize;
    let cursor = app.cursor(Pane::Messages);
    let key_width = 10usize;
    let layout = PaneLayout::table(Pane::Messages, area, inner, scroll(cursor, height), messages.len());
    // The transaction column shows only when some record was written in a transaction.
    let txn_width = if messages.iter().any(|r| r.txn.is_some()) { 9 } else { 0 };
    let value_width = (inner.width as usize).saturating_sub(3 + 8 + 12 + key_width + 4 + 6 + txn_width);
    let rows = messages
        .iter()
        .enumerate()
        .skip(scroll(cursor, height))
        .take(height)
        .map(|(i, r)| {
            let headers = if r.headers.is_empty() {
                String::new()
            } else {
                format!("h{}", r.headers.len())
            };
            let mut cells = vec![
                Cell::from(Line::from(r.partition.to_string()).right_aligned()),
                Cell::from(Line::from(r.offset.to_string()).right_aligned()),
                Cell::from(Span::styled(local_time(r.timestamp, app.tz, "%H:%M:%S%.3f"), t.dim)),
            ];
            if txn_width > 0 {
                cells.push(Cell::from(match r.txn {
                    Some(mark) => Span::styled(lang.tr(mark.word()).to_string(), txn_style(t, mark)),
                    None => Span::raw(""),
                }));
            }
            cells.extend([
                Cell::from(fit(&preview(&r.key), key_width)),
                Cell::from(fit(&preview(&r.value), value_width)),
                Cell::from(Span::styled(headers, t.dim)),
            ]);
            let row = Row::new(cells);
            if i == cursor && app.focus == Pane::Messages {
                row.style(t.selected)
            } else {
                row
            }
        });
    let mut columns = vec![
        Column::right("P", Length(3)).kept(),
        Column::right("OFFSET", Length(8)),
        Column::left("TIME", Length(12)),
    ];
    if txn_width > 0 {
        columns.push(Column::left("TXN", Length(txn_width as u16)));
    }
    columns.extend([
        Column::left("KEY", Length(key_width as u16)),
        Column::left("VALUE", Length(value_width as u16)),
        Column::left("HDRS", Length(4)),
    ]);
    let columns = headers(app, &columns);
    let header = Row::new(columns.cells).style(t.column_header);
    frame.render_widget(Table::new(rows, columns.widths).header(header).block(block), area);
    layout
}

/// How a transaction's mark looks: committed plain, aborted as an error, open as a warning.
fn txn_style(t: &Theme, mark: TxnMark) -> ratatui::style::Style {
    match mark {
        TxnMark::Committed => t.text,
        TxnMark::Aborted => t.error,
        TxnMark::Open => t.warn,
    }
}

/// Where a tail starts, in `lang` (English: as [`SeekPosition`] displays it).
fn start_label(lang: &Lang, start: &SeekPosition) -> String {
    match start {
        SeekPosition::Beginning => lang.tr("beginning").to_string(),
        SeekPosition::End => lang.tr("end").to_string(),
        SeekPosition::Last(n) => lang.fmt("last {n}", &[("n", n)]),
        SeekPosition::Offset(o) => lang.fmt("offset {offset}", &[("offset", o)]),
        SeekPosition::Timestamp(_) => start.to_string(),
    }
}

/// The body of a record for the detail view: pretty JSON when it parses, the text when it
/// is UTF-8, otherwise a hex dump.
pub fn pretty(bytes: &Option<bytes::Bytes>) -> Vec<String> {
    let Some(b) = bytes else {
        return vec!["∅ (null)".into()];
    };
    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(b)
        && (json.is_object() || json.is_array())
        && let Ok(text) = std::str::from_utf8(b)
    {
        return indent_json(text);
    }
    if let Ok(s) = std::str::from_utf8(b) {
        return s.lines().map(str::to_string).collect();
    }
    b.chunks(16)
        .enumerate()
        .map(|(i, chunk)| {
            let hexes: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
            let ascii: String = chunk
                .iter()
                .map(|&b| {
                    if b.is_ascii_graphic() || b == b' ' {
                        b as char
                    } else {
                        '.'
                    }
                })
                .collect();
            format!("{:08x}  {:<48}  {ascii}", i * 16, hexes.join(" "))
        })
        .collect()
}

/// Re-indents valid JSON text, keeping its key order (a parsed map would sort the keys).
fn indent_json(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = text.chars().peekable();
    let pad = |depth: usize| "  ".repeat(depth);
    while let Some(c) = chars.next() {
        if in_string {
            line.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                line.push(c);
            }
            '{' | '[' => {
                while chars.peek().is_some_and(|n| n.is_whitespace()) {
                    chars.next();
                }
                if chars.peek().is_some_and(|n| matches!(n, '}' | ']')) {
                    line.push(c);
                    line.extend(chars.next());
                } else {
                    line.push(c);
                    lines.push(std::mem::take(&mut line));
                    depth += 1;
                    line = pad(depth);
                }
            }
            '}' | ']' => {
                if !line.trim().is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                depth = depth.saturating_sub(1);
                line = format!("{}{c}", pad(depth));
            }
            ',' => {
                line.push(c);
                lines.push(std::mem::take(&mut line));
                line = pad(depth);
            }
            ':' => line.push_str(": "),
            c if c.is_whitespace() => {}
            c => line.push(c),
        }
    }
    if !line.trim().is_empty() {
        lines.push(line);
    }
    lines
}

pub fn draw_detail(frame: &mut Frame, area: Rect, app: &App, record: &TailRecord) {
    let t = &app.theme;
    let lang = app.lang;
    let popup = centered(area, 90, 80);
    let topic = app.tail.as_ref().map_or("", |t| t.spec.topic.as_str());
    // Labels in a column of 17 display columns (wider when a translation needs it).
    let labels = ["topic-partition", "offset", "timestamp", "key", "transaction"].map(|l| lang.tr(l));
    let column = labels.iter().map(|l| l.width() + 2).max().unwrap_or(0).max(17);
    let label = |l: &str| Span::styled(format!("{l}{}", " ".repeat(column.saturating_sub(l.width()))), t.dim);
    let mut lines = vec![
        Line::from(vec![
            label(labels[0]),
            Span::raw(format!("{topic}-{}", record.partition)),
        ]),
        Line::from(vec![label(labels[1]), Span::raw(record.offset.to_string())]),
        Line::from(vec![
            label(labels[2]),
            Span::raw(format!(
                "{} ({} ms)",
                local_time(record.timestamp, app.tz, "%Y-%m-%d %H:%M:%S%.3f %:z"),
                record.timestamp
            )),
        ]),
        Line::from(vec![label(labels[3]), Span::raw(preview(&record.key))]),
    ];
    if let Some(mark) = record.txn {
        lines.push(Line::from(vec![
            label(labels[4]),
            Span::styled(
                lang.fmt(
                    "{mark} (producer {producer})",
                    &[("mark", &lang.tr(mark.word())), ("producer", &record.producer_id)],
                ),
                txn_style(t, mark),
            ),
        ]));
    }
    lines.push(Line::styled(lang.tr("headers").to_string(), t.dim));
    if record.headers.is_empty() {
        lines.push(Line::raw(format!("  {}", lang.tr("(none)"))));
    }
    for (k, v) in &record.headers {
        lines.push(Line::raw(format!("  {k} = {}", preview(v))));
    }
    let size = record.value.as_ref().map_or(0, |v| v.len());
    lines.push(Line::styled(
        lang.fmt("value ({size} bytes)", &[("size", &size)]),
        t.dim,
    ));
    let body_width = popup.width.saturating_sub(4) as usize;
    lines.extend(pretty(&record.value).into_iter().map(|l| {
        let l = if l.width() > body_width { fit(&l, body_width) } else { l };
        Line::raw(format!("  {l}"))
    }));
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(t.focused_border)
                .title(format!(" {} · {} ", lang.tr("Message"), lang.tr("Esc close"))),
        ),
        popup,
    );
}

/// A rectangle of `percent_x` by `percent_y` of `area`, centred.
pub fn centered(area: Rect, percent_x: u16, percent_y: u16) -> Rect {
    let w = area.width * percent_x / 100;
    let h = area.height * percent_y / 100;
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_indented_in_its_own_key_order() {
        let text = r#"{"user":"u1","url":"/a, b","tags":[],"nested":{"k":[1, 2]},"q":"say \"hi\""}"#;
        assert_eq!(
            indent_json(text),
            vec![
                "{",
                r#"  "user": "u1","#,
                r#"  "url": "/a, b","#,
                r#"  "tags": [],"#,
                r#"  "nested": {"#,
                r#"    "k": ["#,
                "      1,",
                "      2",
                "    ]",
                "  },",
                r#"  "q": "say \"hi\"""#,
                "}",
            ]
        );
    }

    #[test]
    fn binary_values_are_shown_as_a_hex_dump() {
        let dump = pretty(&Some(bytes::Bytes::from_static(&[0x00, 0xff, 0x41])));
        assert_eq!(dump, vec![format!("00000000  {:<48}  ..A", "00 ff 41")]);
    }
}
