//! The "explain" overlay: why the selection is as it is ([`crate::view::explain`]), made
//! again from the current view every frame, so it changes while the cluster does. Headings
//! stand out, a long sentence wraps under itself; ↑/↓ and PgUp/PgDn scroll, Esc closes.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use unicode_width::UnicodeWidthChar;

use super::action::ExplainTarget;
use super::app::App;
use super::messages::centered;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, target: &ExplainTarget, scroll: u16) {
    let t = &app.theme;
    let explanation = app.explanation(target);
    let popup = centered(area, 90, 80);
    let width = popup.width.saturating_sub(2).max(20) as usize;
    let lines: Vec<Line> = explanation
        .lines
        .iter()
        .flat_map(|l| {
            let style = if l.starts_with(' ') { t.text } else { t.column_header };
            wrap(l, width).into_iter().map(move |w| Line::styled(w, style))
        })
        .collect();
    let total = lines.len();
    let shown = popup.height.saturating_sub(2) as usize;
    let scroll = scroll.min(total.saturating_sub(shown) as u16);
    let lang = app.lang;
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
                        explanation.title,
                        lang.tr("Esc close")
                    ),
                    t.title,
                )),
        ),
        popup,
    );
}

/// A line cut at spaces into pieces of at most `width` characters; the pieces after the
/// first are indented two more than the line, so a sentence reads as one. A number stays
/// on the line of its unit. CJK text breaks between characters, by display width.
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    let line = &crate::view::words::keep_units(line);
    let indent = line.chars().take_while(|c| *c == ' ').count();
    let hang = " ".repeat(indent + 2);
    if line.chars().any(|c| c.width() == Some(2)) {
        // CJK text: broken between characters, by display width.
        let pieces = super::text::wrap(line.trim_start_matches(' '), width.saturating_sub(indent + 2).max(1));
        return pieces
            .into_iter()
            .enumerate()
            .map(|(i, piece)| {
                let pad = if i == 0 { " ".repeat(indent) } else { hang.clone() };
                format!("{pad}{piece}").replace(crate::view::words::NBSP, " ")
            })
            .collect();
    }
    let mut out = Vec::new();
    let mut current = " ".repeat(indent);
    for word in line.split(' ').filter(|w| !w.is_empty()) {
        let fresh = current.trim().is_empty();
        if !fresh && current.chars().count() + 1 + word.chars().count() > width {
            out.push(std::mem::replace(&mut current, hang.clone()));
        } else if !fresh {
            current.push(' ');
        }
        current.push_str(word);
    }
    out.push(current);
    // Kept together while wrapping; shown as the plain space it was.
    out.into_iter()
        .map(|l| l.replace(crate::view::words::NBSP, " "))
        .collect()
}
