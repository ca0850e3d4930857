//! The `?` overlay: every binding from the keymap, and where the log file is. Actions the
//! source does not offer are greyed out with the reason; a read-only console hides every
//! action that changes the cluster.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::app::App;
use super::keymap::Action;

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("{:<16}", "1-6"), t.title),
        Span::raw(Action::FocusPane(super::Pane::Brokers).describe()),
    ])];
    let mut reasons: Vec<&'static str> = Vec::new();
    for (action, _) in &app.keymap.bindings {
        let keys = format!("{:<16}", app.keymap.keys_of(*action));
        match app.unavailable(*action) {
            Some(_) if app.capabilities.read_only && action.mutates() => {}
            Some(reason) => {
                if !reasons.contains(&reason) {
                    reasons.push(reason);
                }
                lines.push(Line::from(vec![
                    Span::styled(keys, t.dim),
                    Span::styled(format!("{} (unavailable)", action.describe()), t.dim),
                ]));
            }
            None => lines.push(Line::from(vec![
                Span::styled(keys, t.title),
                Span::raw(action.describe()),
            ])),
        }
    }
    lines.push(Line::raw(""));
    for reason in reasons {
        lines.push(Line::styled(format!("Unavailable: {reason}."), t.dim));
    }
    if app.capabilities.read_only {
        lines.push(Line::styled(
            "Read-only (--read-only): produce, topic changes, elections and broker control are hidden.",
            t.dim,
        ));
    }
    lines.push(Line::styled(
        "Dialogs: Tab/↑/↓ move between fields, Enter submit, Esc cancel. Confirm with y or Enter.",
        t.dim,
    ));
    lines.push(Line::styled(
        "Replicas: ★ leader  ● in-sync follower  ○ out-of-sync  ✗ offline.  Controller: ◆",
        t.dim,
    ));
    let log = app
        .log_path
        .as_ref()
        .map_or("not written".to_string(), |p| p.display().to_string());
    lines.push(Line::styled(format!("Log file: {log}"), t.dim));
    let height = (lines.len() as u16 + 2).min(area.height);
    let width = area.width.min(100);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(t.focused_border)
                .title(" Keys · any key closes "),
        ),
        popup,
    );
}
