//! Where each pane goes. At 120x36 and more: the whole dashboard. From 80x24: header,
//! brokers, the focused main pane and the latest events (secondary panes collapse). Below
//! that, one "terminal too small" line. Maximised, the focused pane takes the whole body. The
//! projector layout shows at most two panes side by side, spaced, for a room.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Borders, Paragraph};

use super::Pane;
use super::app::{App, Screen};
use super::overlay::Overlay;
use super::pane::{PaneLayout, view_of};
use super::{dialog, explain, flow, footer, header, help, messages, replica_log};

pub use crate::config::Presentation;

pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;
pub const FULL_WIDTH: u16 = 120;
pub const FULL_HEIGHT: u16 = 36;

/// Where the last frame put things: the event loop keeps it for mouse clicks, and for keys
/// (a frame too small to show the console takes only quit).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameLayout {
    pub too_small: bool,
    pub panes: Vec<PaneLayout>,
}

impl FrameLayout {
    /// The pane under a screen cell, and the row of its list there if any.
    pub fn hit(&self, column: u16, line: u16) -> Option<(Pane, Option<usize>)> {
        let inside = |r: &Rect| column >= r.x && column < r.x + r.width && line >= r.y && line < r.y + r.height;
        let pane = self.panes.iter().find(|p| inside(&p.area))?;
        Some((pane.pane, pane.row_at(column, line)))
    }
}

/// Draws one frame of the console and says where everything went.
pub fn draw(frame: &mut Frame, app: &App, now: DateTime<Utc>) -> FrameLayout {
    let area = frame.area();
    let mut layout = FrameLayout {
        too_small: area.width < MIN_WIDTH || area.height < MIN_HEIGHT,
        panes: Vec::new(),
    };
    if layout.too_small {
        let text = app.lang.fmt(
            "terminal too small: {width}x{height}, kdeck needs at least {min_width}x{min_height} (q quits)",
            &[
                ("width", &area.width),
                ("height", &area.height),
                ("min_width", &MIN_WIDTH),
                ("min_height", &MIN_HEIGHT),
            ],
        );
        frame.render_widget(Paragraph::new(Line::styled(text, app.theme.warn)), area);
        return layout;
    }
    let rows = Layout::vertical([Constraint::Length(2), Constraint::Min(0), Constraint::Length(1)]).split(area);
    header::draw(frame, rows[0], app, now);
    // A trainer's caption gets a band of its own below the dashboard: it covers no pane
    // (the newest events stay in sight) and popups open above it, so a step's words,
    // checks and keys are always on screen.
    let caption = app.overlays.iter().find_map(|o| match o {
        Overlay::Caption { title, text } => Some((title, text)),
        _ => None,
    });
    let (body, band) = match caption {
        Some((_, text)) => {
            let want = dialog::caption_height(rows[1].width, text);
            let height = want.min(rows[1].height / 2).max(3.min(rows[1].height));
            let split = Layout::vertical([Constraint::Min(0), Constraint::Length(height)]).split(rows[1]);
            (split[0], Some(split[1]))
        }
        None => (rows[1], None),
    };
    // Popups open over the header and the dashboard, not over the caption.
    let above = Rect {
        height: body.y + body.height - area.y,
        ..area
    };
    let rows = [rows[0], body, rows[2]];
    match app.screen() {
        Screen::Dashboard => {
            if app.maximized {
                place(frame, app, app.focus, rows[1], now, &mut layout);
            } else if app.projector() {
                projector(frame, rows[1], app, now, &mut layout);
            } else if area.width >= FULL_WIDTH && area.height >= FULL_HEIGHT {
                full(frame, rows[1], app, now, &mut layout);
            } else {
                compact(frame, rows[1], app, now, &mut layout);
            }
        }
        Screen::ReplicaLog { topic, partition } => replica_log::draw(frame, rows[1], app, topic, *partition),
        Screen::Flow { topic, partition } => flow::draw(frame, rows[1], app, topic, *partition, now),
        Screen::Configs { .. } => super::configs::draw(frame, rows[1], app),
        Screen::Reassignments => super::reassign::draw(frame, rows[1], app, now),
        Screen::Acls => super::acls::draw(frame, rows[1], app),
        Screen::Transactions => super::transactions::draw(frame, rows[1], app, now),
    }
    footer::draw(frame, rows[2], app, now);
    if let (Some((title, text)), Some(band)) = (caption, band) {
        dialog::draw_caption(frame, band, app, title, text);
    }
    for overlay in &app.overlays {
        match overlay {
            Overlay::Help { scroll } => help::draw(frame, above, app, *scroll),
            Overlay::Dialog(d) => dialog::draw_dialog(frame, above, app, d),
            Overlay::Confirm { question, .. } => dialog::draw_confirm(frame, above, app, question),
            Overlay::Detail(record) => messages::draw_detail(frame, above, app, record),
            Overlay::Explain { target, scroll } => explain::draw(frame, above, app, target, *scroll),
            Overlay::Clusters { cursor, .. } => super::clusters::draw(frame, above, app, *cursor),
            Overlay::Caption { .. } | Overlay::Filter | Overlay::Command(_) => {}
        }
    }
    layout
}

/// The rows of the full dashboard: the top (brokers, topics) and middle (partitions, groups)
/// take what their rows need, within bounds; Messages and Events get the rest.
fn full_heights(app: &App, height: u16) -> (u16, u16) {
    let want = |p: Pane| view_of(p).wanted_height(app);
    let top = want(Pane::Brokers)
        .max(want(Pane::Topics))
        .clamp(6, (height / 4).max(6));
    let middle = want(Pane::Partitions).max(want(Pane::Groups)).max(6);
    let middle = middle.min(height.saturating_sub(top + 10)).max(6);
    (top, middle)
}

fn full(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>, layout: &mut FrameLayout) {
    let (top, middle) = full_heights(app, area.height);
    let rows = Layout::vertical([Constraint::Length(top), Constraint::Length(middle), Constraint::Min(8)]).split(area);
    let split = |r: Rect, left: u16| {
        Layout::horizontal([Constraint::Percentage(left), Constraint::Percentage(100 - left)]).split(r)
    };
    let a = split(rows[0], 48);
    let b = split(rows[1], 60);
    let c = split(rows[2], 55);
    place(frame, app, Pane::Brokers, a[0], now, layout);
    place(frame, app, Pane::Topics, a[1], now, layout);
    place(frame, app, Pane::Partitions, b[0], now, layout);
    place(frame, app, Pane::Groups, b[1], now, layout);
    place(frame, app, Pane::Messages, c[0], now, layout);
    place(frame, app, Pane::Events, c[1], now, layout);
}

fn compact(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>, layout: &mut FrameLayout) {
    let top = (app.view.brokers.len().max(1) as u16 + 3).min(7);
    let main = match app.focus {
        Pane::Brokers | Pane::Events => Pane::Partitions,
        other => other,
    };
    // The focused pane takes its rows (at least 5 lines), the timeline the rest (at least 6).
    let room = area.height.saturating_sub(top + 6);
    let middle = view_of(main).wanted_height(app).clamp(5.min(room), room.max(5));
    let rows = Layout::new(
        Direction::Vertical,
        [Constraint::Length(top), Constraint::Length(middle), Constraint::Min(6)],
    )
    .split(area);
    place(frame, app, Pane::Brokers, rows[0], now, layout);
    place(frame, app, main, rows[1], now, layout);
    place(frame, app, Pane::Events, rows[2], now, layout);
}

/// Two rows of two panes: brokers beside the topics (or the focused groups or messages), the
/// selected topic's partitions beside the incidents. The top takes what its rows need, up
/// to half the body.
fn projector(frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>, layout: &mut FrameLayout) {
    let beside = match app.focus {
        Pane::Topics | Pane::Groups | Pane::Messages => app.focus,
        _ => Pane::Topics,
    };
    let want = |p: Pane| spaced_height(view_of(p).rows(app));
    let top = want(Pane::Brokers)
        .max(want(beside))
        .clamp(6.min(area.height / 2), (area.height / 2).max(6));
    let rows = Layout::vertical([Constraint::Length(top), Constraint::Min(0)]).split(area);
    let halves = |r: Rect| Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).split(r);
    let (a, b) = (halves(rows[0]), halves(rows[1]));
    place(frame, app, Pane::Brokers, a[0], now, layout);
    place(frame, app, beside, a[1], now, layout);
    place(frame, app, Pane::Partitions, b[0], now, layout);
    place(frame, app, Pane::Events, b[1], now, layout);
}

/// The height of a spaced table of `rows` rows: the frame, the column header and the rows
/// with a blank line between them.
fn spaced_height(rows: usize) -> u16 {
    u16::try_from(rows.max(1) * 2).unwrap_or(u16::MAX).saturating_add(2)
}

/// Screen lines per table row: 2 in the projector layout (a blank line between rows).
pub fn row_stride(app: &App) -> u16 {
    if app.projector() { 2 } else { 1 }
}

/// How many table rows fit in `lines` screen lines (the last needs no blank line after it).
pub fn rows_in(lines: u16, stride: u16) -> usize {
    usize::from(lines.div_ceil(stride.max(1)))
}

/// A row of a projector table: bold, with a blank line below it.
pub fn spaced_row(row: ratatui::widgets::Row<'_>) -> ratatui::widgets::Row<'_> {
    row.bottom_margin(1)
        .style(ratatui::style::Style::default().add_modifier(ratatui::style::Modifier::BOLD))
}

/// Draws a pane and, when it has more rows than it shows, which ones it shows on its bottom
/// border (`▲▼ 12-20 of 40`).
fn place(frame: &mut Frame, app: &App, pane: Pane, area: Rect, now: DateTime<Utc>, layout: &mut FrameLayout) {
    let drawn = view_of(pane).draw(frame, area, app, now);
    if let Some(note) = drawn.scroll_note(app.lang) {
        let width = (unicode_width::UnicodeWidthStr::width(note.as_str()) as u16).min(area.width.saturating_sub(2));
        if area.height >= 2 && width > 0 {
            let at = Rect {
                x: area.x + area.width.saturating_sub(width + 1),
                y: area.y + area.height - 1,
                width,
                height: 1,
            };
            frame.render_widget(Paragraph::new(Line::styled(note, app.theme.dim)), at);
        }
    }
    layout.panes.push(drawn);
}

/// The frame of a pane, with its number, title, extra info and the focus highlight.
pub fn block<'a>(app: &App, pane: Pane, info: String) -> Block<'a> {
    let focused = app.focus == pane;
    let filter = app.filter(pane);
    let mut title = format!(" {} {} ", pane.index() + 1, app.lang.tr(view_of(pane).title()));
    if !info.is_empty() {
        title.push_str(&format!("· {info} "));
    }
    if !filter.is_empty() {
        title.push_str(&format!(
            "· {} ",
            app.lang.fmt("filter \"{filter}\"", &[("filter", &filter)])
        ));
    }
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused { BorderType::Thick } else { BorderType::Plain })
        .border_style(if focused {
            app.theme.focused_border
        } else {
            app.theme.border
        })
        .title(Line::styled(
            title,
            if focused { app.theme.title } else { app.theme.text },
        ))
}

/// A table's column headers in the console's language, each with its column's width: the
/// width asked for, or the header's display width when a translation is wider (a header is
/// never cut, least of all inside a wide character). A header marked `keep` is a name kept
/// in every language (HW, LEO, ISR).
pub struct Headers<'a> {
    pub cells: Vec<ratatui::widgets::Cell<'a>>,
    pub widths: Vec<Constraint>,
}

/// One column: its header, how wide it is at least, and how its header is aligned.
#[derive(Clone, Copy)]
pub struct Column {
    pub header: &'static str,
    pub width: Width,
    pub right: bool,
    /// A name shown as it is in every language.
    pub keep: bool,
}

/// How wide a column is: exactly (unless its header needs more), or at least.
#[derive(Clone, Copy)]
pub enum Width {
    Length(u16),
    Min(u16),
}

impl Column {
    pub fn left(header: &'static str, width: Width) -> Column {
        Column {
            header,
            width,
            right: false,
            keep: false,
        }
    }

    pub fn right(header: &'static str, width: Width) -> Column {
        Column {
            right: true,
            ..Column::left(header, width)
        }
    }

    /// The column with its header kept as it is in every language.
    pub fn kept(self) -> Column {
        Column { keep: true, ..self }
    }
}

/// The headers and widths of `columns` in `app`'s language.
pub fn headers<'a>(app: &App, columns: &[Column]) -> Headers<'a> {
    let mut out = Headers {
        cells: Vec::new(),
        widths: Vec::new(),
    };
    for c in columns {
        let text = if c.keep { c.header } else { app.lang.tr(c.header) }.to_string();
        let need = u16::try_from(unicode_width::UnicodeWidthStr::width(text.as_str())).unwrap_or(u16::MAX);
        out.widths.push(match c.width {
            Width::Length(n) => Constraint::Length(n.max(need)),
            Width::Min(n) => Constraint::Min(n.max(need)),
        });
        let line = Line::from(text);
        out.cells.push(ratatui::widgets::Cell::from(if c.right {
            line.right_aligned()
        } else {
            line
        }));
    }
    out
}

/// The first row to show so that `cursor` is visible in `height` rows.
pub fn scroll(cursor: usize, height: usize) -> usize {
    if height == 0 {
        0
    } else {
        cursor.saturating_sub(height - 1)
    }
}

/// Whether `changed_at` is recent enough to flash.
pub fn flashing(app: &App, changed_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    changed_at.is_some_and(|t| {
        let age = (now - t).num_milliseconds();
        age >= 0 && (age as u64) < app.console.flash_ms
    })
}

/// True while some cell flashes (so ticks redraw until the flash ends).
pub fn flash_active(app: &App, now: DateTime<Utc>) -> bool {
    let until = chrono::Duration::milliseconds(app.console.flash_ms as i64 + 300);
    app.view
        .brokers
        .iter()
        .filter_map(|b| b.changed_at)
        .chain(app.view.partitions.iter().filter_map(|p| p.changed_at))
        .any(|t| now - t < until && now >= t)
}
