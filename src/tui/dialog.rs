//! Dialogs (produce, create topic, seek) and confirmations.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::app::{App, Dialog};

fn popup(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

pub fn draw_dialog(frame: &mut Frame, area: Rect, app: &App, dialog: &Dialog) {
    let t = &app.theme;
    let mut lines = Vec::new();
    for (i, f) in dialog.fields.iter().enumerate() {
        let focused = i == dialog.focus;
        let cursor = if focused { "▏" } else { "" };
        lines.push(Line::from(vec![
            Span::styled(format!("{:>19}: ", f.label), if focused { t.title } else { t.dim }),
            Span::styled(
                format!("{}{cursor}", f.value),
                if focused { t.selected } else { t.text },
            ),
        ]));
        if !f.hint.is_empty() {
            lines.push(Line::styled(format!("{:>21}{}", "", f.hint), t.dim));
        }
    }
    lines.push(Line::raw(""));
    if let Some(e) = &dialog.error {
        lines.push(Line::styled(e.clone(), t.error));
    }
    lines.push(Line::styled("Enter submit · Tab next field · Esc cancel", t.dim));
    let area = popup(area, 72, lines.len() as u16 + 2);
    draw_popup(frame, area, app, lines, format!(" {} ", dialog.title));
}

pub fn draw_confirm(frame: &mut Frame, area: Rect, app: &App, question: &str) {
    let t = &app.theme;
    let lines = vec![
        Line::styled(question.to_string(), t.warn),
        Line::raw(""),
        Line::styled("y: yes    n / Esc / Enter: no", t.dim),
    ];
    let area = popup(area, (question.chars().count() as u16 + 4).max(40), 5);
    draw_popup(frame, area, app, lines, " Confirm ".to_string());
}

/// A framed, wrapped popup drawn over whatever is below it.
fn draw_popup(frame: &mut Frame, area: Rect, app: &App, lines: Vec<Line<'_>>, title: String) {
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(app.theme.focused_border)
                .title(title),
        ),
        area,
    );
}
