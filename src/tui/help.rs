//! The `?` overlay: every binding from the keymap, the focused pane's first, and where the
//! log file is, in the console's language. It fits the terminal and scrolls (↑/↓, PgUp/PgDn);
//! any other key closes it. A description longer than the line wraps under itself, so every
//! one shows whole. Bindings the source does not offer are greyed out with the reason; a
//! read-only console hides every binding that changes the cluster.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::app::App;
use super::keymap::{Binding, Meaning};
use super::pane::view_of;
use super::text::wrap;

/// The column of the keys, before each description.
const KEYS: usize = 16;

/// The overlay's lines, before scrolling, for a popup `width` columns wide inside.
pub fn lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let lang = app.lang;
    let room = width.saturating_sub(KEYS).max(8);
    // Keys, then the description wrapped under itself.
    let entry_lines = |keys: &str, describe: &str, key_style: Style, style: Style| -> Vec<Line<'static>> {
        wrap(describe, room)
            .into_iter()
            .enumerate()
            .map(|(i, part)| {
                let keys = if i == 0 { keys } else { "" };
                Line::from(vec![
                    Span::styled(format!("{keys:<KEYS$}"), key_style),
                    Span::styled(part, style),
                ])
            })
            .collect()
    };
    let mut reasons: Vec<&'static str> = Vec::new();
    let mut entry = |lines: &mut Vec<Line<'static>>, binding: Binding| {
        let keys = app.keymap.keys_of(binding);
        let describe = lang.tr(binding.describe());
        match app.unavailable(binding) {
            Some(_) if app.capabilities.read_only && binding.mutates() => {}
            Some(reason) => {
                if !reasons.contains(&reason) {
                    reasons.push(reason);
                }
                let what = lang.fmt("{what} (unavailable)", &[("what", &describe)]);
                lines.extend(entry_lines(&keys, &what, t.dim, t.dim));
            }
            None => lines.extend(entry_lines(&keys, describe, t.title, Style::default())),
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
        lines.push(Line::styled(
            lang.fmt("In {pane}", &[("pane", &lang.tr(pane.title()))]),
            t.column_header,
        ));
        lines.extend(own);
        lines.push(Line::styled(lang.tr("Everywhere").to_string(), t.column_header));
    }
    lines.extend(entry_lines(
        "1-6",
        lang.tr(Binding::FocusPane(0).describe()),
        t.title,
        Style::default(),
    ));
    for (binding, _) in &app.keymap.bindings {
        if !first.contains(binding) {
            entry(&mut lines, *binding);
        }
    }
    // The command line's commands, with their arguments; a read-only console lists only
    // those that change nothing.
    lines.push(Line::styled(
        lang.fmt(
            "Commands ({key} opens the command line)",
            &[("key", &app.keymap.hint(Binding::Command))],
        ),
        t.column_header,
    ));
    for spec in super::command::COMMANDS {
        if app.capabilities.read_only && spec.changes {
            continue;
        }
        let describe = if spec.args.is_empty() {
            lang.tr(spec.about).to_string()
        } else {
            format!("{} · {}", spec.args, lang.tr(spec.about))
        };
        lines.extend(entry_lines(
            &format!(":{}", spec.name),
            &describe,
            t.title,
            Style::default(),
        ));
    }
    lines.push(Line::raw(""));
    let mut notes: Vec<String> = reasons
        .into_iter()
        .map(|reason| lang.fmt("Unavailable: {reason}.", &[("reason", &lang.tr(reason))]))
        .collect();
    if app.capabilities.read_only {
        notes.push(
            lang.tr("Read-only (--read-only): produce, topic changes, elections and broker control are hidden.")
                .to_string(),
        );
    }
    notes.push(
        lang.tr("Dialogs: Tab/↑/↓ fields, Enter submit, Esc cancel. Confirm: y yes; n, Esc or Enter no.")
            .to_string(),
    );
    let moves = app.keymap.hint(Binding::Reassignments);
    notes.push(if app.capabilities.read_only {
        lang.fmt(
            "Reassignments ({key}): each move's lag, progress, rate and ETA; read-only, nothing is planned or cancelled there.",
            &[("key", &moves)],
        )
    } else {
        lang.fmt(
            "Reassignments ({key}): d drain a broker, b balance, r change a topic's RF, m move a replica (each opens :reassign to complete, then confirm the plan); x or Delete cancels the selected move, c all.",
            &[("key", &moves)],
        )
    });
    notes.push(
        lang.tr("Replicas: ★ leader  ● in-sync follower  ○ out-of-sync  ✗ offline.  Controller: ◆")
            .to_string(),
    );
    let log = app
        .log_path
        .as_ref()
        .map_or(lang.tr("not written").to_string(), |p| p.display().to_string());
    notes.push(lang.fmt("Log file: {log}", &[("log", &log)]));
    for note in notes {
        lines.extend(wrap(&note, width).into_iter().map(|l| Line::styled(l, t.dim)));
    }
    lines
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, scroll: u16) {
    let t = &app.theme;
    let width = area.width.min(100);
    let lines = lines(app, usize::from(width.saturating_sub(2)));
    let total = u16::try_from(lines.len()).unwrap_or(u16::MAX);
    let height = total.saturating_add(2).min(area.height);
    let shown = height.saturating_sub(2);
    let scroll = scroll.min(total.saturating_sub(shown));
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let title = if shown < total {
        app.lang.fmt(
            " Keys · {first}-{last} of {total} · ↑↓ PgUp PgDn scroll · other keys close ",
            &[
                ("first", &(scroll + 1)),
                ("last", &(scroll + shown).min(total)),
                ("total", &total),
            ],
        )
    } else {
        app.lang.tr(" Keys · any key closes ").to_string()
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
