//! The `?` overlay: every binding from the keymap, the focused pane's first, and where the
//! log file is. It fits the terminal and scrolls (↑/↓, PgUp/PgDn); any other key closes it.
//! Bindings the source does not offer are greyed out with the reason; a read-only console
//! hides every binding that changes the cluster.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::app::App;
use super::keymap::{Binding, Meaning};
use super::pane::view_of;

/// The overlay's lines, before scrolling.
pub fn lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut reasons: Vec<&'static str> = Vec::new();
    let mut entry = |lines: &mut Vec<Line<'static>>, binding: Binding| {
        let keys = format!("{:<16}", app.keymap.keys_of(binding));
        match app.unavailable(binding) {
            Some(_) if app.capabilities.read_only && binding.mutates() => {}
            Some(reason) => {
                if !reasons.contains(&reason) {
                    reasons.push(reason);
                }
                lines.push(Line::from(vec![
                    Span::styled(keys, t.dim),
                    Span::styled(format!("{} (unavailable)", binding.describe()), t.dim),
                ]));
            }
            None => lines.push(Line::from(vec![
                Span::styled(keys, t.title),
                Span::raw(binding.describe()),
            ])),
        }
    };
    let pane = view_of(app.focus);
    let mut first: Vec<Binding> = Vec::new();
    for (b, _) in pane.hints() {
        if !first.contains(b) && !matches!(b, Binding::Help | Binding::Quit | Binding::NextPane) {
            first.push(*b);
        }
    }
    let mut own = Vec::new();
    for b in &first {
        entry(&mut own, *b);
    }
    let mut lines = Vec::new();
    if !own.is_empty() {
        lines.push(Line::styled(format!("In {}", pane.title()), t.column_header));
        lines.extend(own);
        lines.push(Line::styled("Everywhere", t.column_header));
    }
    lines.push(Line::from(vec![
        Span::styled(format!("{:<16}", "1-6"), t.title),
        Span::raw(Binding::FocusPane(0).describe()),
    ]));
    for (binding, _) in &app.keymap.bindings {
        if !first.contains(binding) {
            entry(&mut lines, *binding);
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
        "Dialogs: Tab/↑/↓ fields, Enter submit, Esc cancel. Confirm: y yes; n, Esc or Enter no.",
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
    lines
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, scroll: u16) {
    let t = &app.theme;
    let lines = lines(app);
    let total = lines.len() as u16;
    let height = (total + 2).min(area.height);
    let shown = height.saturating_sub(2);
    let scroll = scroll.min(total.saturating_sub(shown));
    let width = area.width.min(100);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let title = if shown < total {
        format!(
            " Keys · {}-{} of {total} · ↑↓ PgUp PgDn scroll · other keys close ",
            scroll + 1,
            (scroll + shown).min(total)
        )
    } else {
        " Keys · any key closes ".to_string()
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).scroll((scroll, 0)).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(t.focused_border)
                .title(title),
        ),
        popup,
    );
}
