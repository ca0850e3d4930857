//! The "explain" overlay: why the selection is as it is ([`crate::view::explain`]), made
//! again from the current view every frame, so it changes while the cluster does. Headings
//! stand out, a long sentence wraps under itself; ↑/↓ and PgUp/PgDn scroll, Esc closes.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::action::ExplainTarget;
use super::app::App;
use super::messages::centered;
use crate::view::explain::Line as Said;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, target: &ExplainTarget, scroll: u16) {
    let t = &app.theme;
    let explanation = app.explanation(target);
    let popup = centered(area, 90, 80);
    let width = popup.width.saturating_sub(2).max(20) as usize;
    let lang = app.lang;
    let lines: Vec<Line> = explanation
        .lines
        .iter()
        .flat_map(|l| {
            let (text, style) = match l {
                Said::Heading(m) => (lang.say(m), t.column_header),
                Said::Sentence(m) => (format!("  {}", lang.say(m)), t.text),
            };
            wrap(&text, width).into_iter().map(move |w| Line::styled(w, style))
        })
        .collect();
    let total = lines.len();
    let shown = popup.height.saturating_sub(2) as usize;
    let scroll = scroll.min(total.saturating_sub(shown) as u16);
    let more = if total > shown {
        format!(" · {}", lang.tr("↑↓ PgUp PgDn scroll"))
    } else {
        String::new()
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).scroll((scroll, 0)).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(t.focused_border)
                .title(Line::styled(
                    format!(
                        " {} · {}{more} · {} ",
                        lang.tr("Why"),
                        lang.say(&explanation.title),
                        lang.tr("Esc close")
                    ),
                    t.title,
                )),
        ),
        popup,
    );
}

/// A line cut into pieces of at most `width` columns; the pieces after the first are
/// indented two more than the line, so a sentence reads as one. A number stays on the line
/// of its unit.
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    super::text::wrap_hanging(line, width, 2)
}
