//! The timeline: what changed and why, newest at the bottom. Long lines wrap so that the
//! reason of an election or an ISR change is never cut off.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use unicode_width::UnicodeWidthStr;

use super::Pane;
use super::app::App;
use super::keymap::Binding;
use super::pane::{GENERAL_HINTS, PaneLayout, PaneView};

/// The time prefix of each line, `HH:MM:SS `.
const TIME_WIDTH: usize = 9;

pub struct EventsPane;

impl PaneView for EventsPane {
    fn title(&self) -> &'static str {
        "Events"
    }

    fn hints(&self) -> &'static [(Binding, &'static str)] {
        GENERAL_HINTS
    }

    fn rows(&self, app: &App) -> usize {
        app.visible_events().len()
    }

    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, _now: chrono::DateTime<chrono::Utc>) -> PaneLayout {
        draw(frame, area, app)
    }
}

fn draw(frame: &mut Frame, area: Rect, app: &App) -> PaneLayout {
    let t = &app.theme;
    let events = app.visible_events();
    let block = super::layout::block(app, Pane::Events, String::new());
    let inner = block.inner(area);
    let height = inner.height as usize;
    let width = (inner.width as usize).max(1);
    // Focused, the cursor scrolls back from the newest; otherwise the newest are shown.
    let end = if app.focus == Pane::Events {
        app.cursor(Pane::Events) + 1
    } else {
        events.len()
    };
    let mut start = end.min(events.len());
    let mut used = 0;
    while start > 0 {
        let e = events[start - 1];
        let rows = (TIME_WIDTH + e.text.width()).div_ceil(width).max(1);
        if used + rows > height {
            break;
        }
        used += rows;
        start -= 1;
    }
    let lines: Vec<Line> = events[start..end.min(events.len())]
        .iter()
        .map(|e| {
            Line::from(vec![
                Span::styled(e.at.with_timezone(&app.tz).format("%H:%M:%S ").to_string(), t.dim),
                Span::styled(e.text.clone(), t.severity(e.severity)),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(block), area);
    PaneLayout::plain(Pane::Events, area)
}
