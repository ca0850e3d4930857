//! The timeline: what changed and why, newest at the bottom. Long lines wrap so that the
//! reason of an election or an ISR change is never cut off.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
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
    let text_width = (inner.width as usize).saturating_sub(TIME_WIDTH).max(1);
    // Focused, the cursor scrolls back from the newest; otherwise the newest are shown.
    let end = if app.focus == Pane::Events {
        app.cursor(Pane::Events) + 1
    } else {
        events.len()
    }
    .min(events.len());
    let mut start = end;
    let mut wrapped: Vec<Vec<String>> = Vec::new();
    let mut used = 0;
    while start > 0 {
        let rows = wrap(&events[start - 1].text, text_width);
        if used + rows.len() > height && used > 0 {
            break;
        }
        used += rows.len();
        wrapped.push(rows);
        start -= 1;
    }
    wrapped.reverse();
    let mut lines: Vec<Line> = Vec::new();
    for (e, rows) in events[start..end].iter().zip(wrapped) {
        let style = t.severity(e.severity);
        for (i, row) in rows.into_iter().enumerate() {
            // Continuation lines start under the text, not under the time.
            let prefix = if i == 0 {
                Span::styled(e.at.with_timezone(&app.tz).format("%H:%M:%S ").to_string(), t.dim)
            } else {
                Span::raw(" ".repeat(TIME_WIDTH))
            };
            lines.push(Line::from(vec![prefix, Span::styled(row, style)]));
        }
    }
    // The newest line sits at the bottom; an event taller than the pane shows its start.
    let skip = lines.len().saturating_sub(height);
    let skip = if start + 1 == end { 0 } else { skip };
    frame.render_widget(Paragraph::new(lines).scroll((skip as u16, 0)).block(block), area);
    PaneLayout::text(Pane::Events, area, start, end - start, events.len())
}

/// `text` in lines of at most `width` columns, broken between words where it can be.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut used = 0;
    for word in text.split(' ') {
        let w = word.width();
        let gap = usize::from(!line.is_empty());
        if used + gap + w <= width {
            if gap == 1 {
                line.push(' ');
            }
            line.push_str(word);
            used += gap + w;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
            used = 0;
        }
        // A word longer than the line is cut where the line ends.
        for c in word.chars() {
            let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used + cw > width {
                lines.push(std::mem::take(&mut line));
                used = 0;
            }
            line.push(c);
            used += cw;
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_events_wrap_between_words_and_long_words_are_cut() {
        assert_eq!(
            wrap("ISR page-views-0 shrank: -[1] -> [0,2] (broker 1 fenced)", 24),
            vec!["ISR page-views-0 shrank:", "-[1] -> [0,2] (broker 1", "fenced)"]
        );
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 10), vec![""]);
        assert_eq!(wrap("副本 同步 列表", 5), vec!["副本", "同步", "列表"]);
    }
}
