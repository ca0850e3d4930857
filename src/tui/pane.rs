//! What every pane is: a title, the keys that matter in it, how many rows it lists, and a
//! `draw` that reads the app and returns where its rows landed (for mouse clicks). A new
//! pane implements [`PaneView`] and joins [`view_of`].

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;

use super::Pane;
use super::app::App;
use super::keymap::Binding;
use super::{brokers, events, groups, messages, partitions, topics};
use crate::view::lang::Lang;

/// Where a pane's rows are on screen after a draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaneLayout {
    pub pane: Pane,
    /// The whole pane, frame included.
    pub area: Rect,
    /// The rows of its list (below the column header), `stride` screen lines each; `None`
    /// when rows do not map to lines (wrapped text).
    pub rows: Option<Rect>,
    /// Screen lines per row: 2 when a blank line separates rows (the projector layout).
    pub stride: u16,
    /// The index of the first row shown.
    pub first: usize,
    /// How many rows are shown.
    pub shown: usize,
    /// How many rows the list has in all (more than fit: a scroll indicator shows).
    pub total: usize,
}

impl PaneLayout {
    /// A pane whose rows are not clickable.
    pub fn plain(pane: Pane, area: Rect) -> PaneLayout {
        PaneLayout {
            pane,
            area,
            rows: None,
            stride: 1,
            first: 0,
            shown: 0,
            total: 0,
        }
    }

    /// A list whose rows are not one line each (wrapped text): `first..first + shown` of
    /// `total` are on screen.
    pub fn text(pane: Pane, area: Rect, first: usize, shown: usize, total: usize) -> PaneLayout {
        PaneLayout {
            pane,
            area,
            rows: None,
            stride: 1,
            first,
            shown,
            total,
        }
    }

    /// `12-20 of 40` in `lang`, when some rows are out of sight.
    pub fn scroll_note(&self, lang: &Lang) -> Option<String> {
        if self.shown >= self.total {
            return None;
        }
        let up = if self.first > 0 { "▲" } else { " " };
        let down = if self.first + self.shown < self.total {
            "▼"
        } else {
            " "
        };
        let which = lang.fmt(
            "{first}-{last} of {total}",
            &[
                ("first", &(self.first + 1)),
                ("last", &(self.first + self.shown)),
                ("total", &self.total),
            ],
        );
        Some(format!(" {up}{down} {which} "))
    }

    /// A table in a frame: one column-header line, then one line per row from `first`.
    pub fn table(pane: Pane, area: Rect, inner: Rect, first: usize, total: usize) -> PaneLayout {
        PaneLayout::spaced(pane, area, inner, first, total, 1)
    }

    /// A table whose rows take `stride` lines each (a blank line between rows when 2).
    pub fn spaced(pane: Pane, area: Rect, inner: Rect, first: usize, total: usize, stride: u16) -> PaneLayout {
        let body = Rect {
            y: inner.y.saturating_add(1),
            height: inner.height.saturating_sub(1),
            ..inner
        };
        PaneLayout {
            pane,
            area,
            rows: Some(body),
            stride: stride.max(1),
            first,
            shown: super::layout::rows_in(body.height, stride).min(total.saturating_sub(first)),
            total,
        }
    }

    /// The row under a screen cell, if the cell is on one (the blank line below a spaced
    /// row counts as the row).
    pub fn row_at(&self, column: u16, line: u16) -> Option<usize> {
        let rows = self.rows?;
        let inside = column >= rows.x && column < rows.x + rows.width && line >= rows.y && line < rows.y + rows.height;
        let row = self.first + usize::from(line.checked_sub(rows.y)? / self.stride.max(1));
        (inside && row < self.total).then_some(row)
    }
}

pub trait PaneView: Sync {
    fn title(&self) -> &'static str;
    /// The keys that matter here, most useful first: the footer shows them, the help lists
    /// them first.
    fn hints(&self) -> &'static [(Binding, &'static str)];
    /// How many rows the pane lists after its filter.
    fn rows(&self, app: &App) -> usize;
    /// The height that shows every row: the frame, the column header and the rows.
    fn wanted_height(&self, app: &App) -> u16 {
        u16::try_from(self.rows(app)).unwrap_or(u16::MAX).saturating_add(3)
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, now: DateTime<Utc>) -> PaneLayout;
}

/// The implementation of a pane.
pub fn view_of(pane: Pane) -> &'static dyn PaneView {
    match pane {
        Pane::Brokers => &brokers::BrokersPane,
        Pane::Topics => &topics::TopicsPane,
        Pane::Partitions => &partitions::PartitionsPane,
        Pane::Groups => &groups::GroupsPane,
        Pane::Messages => &messages::MessagesPane,
        Pane::Events => &events::EventsPane,
    }
}

/// Keys shared by the panes with few of their own.
pub const GENERAL_HINTS: &[(Binding, &str)] = &[
    (Binding::NextPane, "pane"),
    (Binding::Filter, "filter"),
    (Binding::PauseDemo, "demo on/off"),
    (Binding::Help, "help"),
    (Binding::Quit, "quit"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_click_maps_to_the_row_under_it_and_nothing_outside() {
        let layout = PaneLayout {
            pane: Pane::Topics,
            area: Rect::new(0, 0, 40, 10),
            rows: Some(Rect::new(1, 2, 38, 7)),
            stride: 1,
            first: 5,
            shown: 4,
            total: 9,
        };
        assert_eq!(layout.row_at(3, 2), Some(5));
        assert_eq!(layout.row_at(3, 5), Some(8));
        assert_eq!(layout.row_at(3, 6), None, "past the last row");
        assert_eq!(layout.row_at(3, 1), None, "the column header");
        assert_eq!(layout.row_at(0, 3), None, "the frame");
        assert_eq!(layout.scroll_note(Lang::english()).as_deref(), Some(" ▲  6-9 of 9 "));
        let all = PaneLayout::table(Pane::Topics, Rect::new(0, 0, 40, 10), Rect::new(1, 1, 38, 8), 0, 7);
        assert_eq!(all.scroll_note(Lang::english()), None, "every row fits");
        let more = PaneLayout::table(Pane::Topics, Rect::new(0, 0, 40, 10), Rect::new(1, 1, 38, 8), 0, 30);
        assert_eq!(more.scroll_note(Lang::english()).as_deref(), Some("  ▼ 1-7 of 30 "));
    }

    #[test]
    fn a_spaced_row_is_hit_on_its_line_and_the_blank_line_below() {
        let spaced = PaneLayout::spaced(Pane::Brokers, Rect::new(0, 0, 40, 9), Rect::new(1, 1, 38, 7), 0, 5, 2);
        // Six lines below the column header: rows on lines 2, 4 and 6.
        assert_eq!(spaced.shown, 3);
        assert_eq!(spaced.row_at(3, 2), Some(0));
        assert_eq!(spaced.row_at(3, 3), Some(0));
        assert_eq!(spaced.row_at(3, 4), Some(1));
        assert_eq!(spaced.row_at(3, 7), Some(2));
        assert_eq!(spaced.scroll_note(Lang::english()).as_deref(), Some("  ▼ 1-3 of 5 "));
    }
}
