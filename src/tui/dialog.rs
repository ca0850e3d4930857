//! Dialogs (produce, create topic, seek), confirmations and captions.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::action::SeekBy;
use super::app::App;
use super::overlay::{Dialog, DialogKind};

/// The dialog's width, frame included.
const DIALOG_WIDTH: u16 = 72;
/// The label column: 19 right-aligned characters and ": ".
const LABEL_WIDTH: usize = 21;

/// The end of a field's value that fits `width` columns with the cursor: a long value scrolls
/// inside its field (its start gives way to `…`) rather than wrapping over the dialog.
pub fn field_window(value: &str, width: usize) -> String {
    let width = width.saturating_sub(1);
    let total: usize = value.chars().map(|c| c.width().unwrap_or(0)).sum();
    if total <= width {
        return value.to_string();
    }
    let mut kept = Vec::new();
    let mut used = 1;
    for c in value.chars().rev() {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            break;
        }
        used += w;
        kept.push(c);
    }
    std::iter::once('…').chain(kept.into_iter().rev()).collect()
}

pub(super) fn popup(area: Rect, width: u16, height: u16) -> Rect {
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
    let lang = app.lang;
    let value_width = usize::from(DIALOG_WIDTH.min(area.width)).saturating_sub(2 + LABEL_WIDTH);
    let mut lines = Vec::new();
    for (i, f) in dialog.fields.iter().enumerate() {
        let focused = i == dialog.focus;
        let cursor = if focused { "▏" } else { "" };
        let label = lang.tr(f.label);
        let pad = " ".repeat((LABEL_WIDTH - 2).saturating_sub(UnicodeWidthStr::width(label)));
        lines.push(Line::from(vec![
            Span::styled(format!("{pad}{label}: "), if focused { t.title } else { t.dim }),
            Span::styled(
                format!("{}{cursor}", field_window(&f.value, value_width)),
                if focused { t.selected } else { t.text },
            ),
        ]));
        if !f.hint.is_empty() {
            lines.push(Line::styled(format!("{:>21}{}", "", lang.tr(f.hint)), t.dim));
        }
    }
    lines.push(Line::raw(""));
    if let Some(e) = &dialog.error {
        lines.push(Line::styled(e.clone(), t.error));
    }
    lines.push(Line::styled(
        lang.tr("Enter submit · Tab next field · Esc cancel").to_string(),
        t.dim,
    ));
    // Every line is shown: a long error wraps and the dialog grows to hold it.
    let inner = usize::from(DIALOG_WIDTH.min(area.width).saturating_sub(2)).max(1);
    let rows: usize = lines.iter().map(|l| l.width().max(1).div_ceil(inner)).sum();
    let area = popup(area, DIALOG_WIDTH, rows as u16 + 2);
    draw_popup(frame, area, app, lines, format!(" {} ", dialog_title(app, dialog)));
}

/// A dialog's title in the console's language (English: the dialog's own).
fn dialog_title(app: &App, dialog: &Dialog) -> String {
    let lang = app.lang;
    match &dialog.kind {
        _ if lang.is_english() => dialog.title.clone(),
        DialogKind::Produce { topic } => lang.fmt("Produce to {topic}", &[("topic", topic)]),
        DialogKind::CreateTopic => lang.tr("Create topic").to_string(),
        DialogKind::Seek { by: SeekBy::Offset, .. } => lang.tr("Seek to offset").to_string(),
        DialogKind::Seek { by: SeekBy::Time, .. } => lang.tr("Seek to time").to_string(),
    }
}

pub fn draw_confirm(frame: &mut Frame, area: Rect, app: &App, question: &str) {
    let t = &app.theme;
    // A question may hold several lines (a reassignment's plan, one partition a line).
    let mut lines: Vec<Line> = question.lines().map(|l| Line::styled(l.to_string(), t.warn)).collect();
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        app.lang.tr("y: yes    n / Esc / Enter: no").to_string(),
        t.dim,
    ));
    let width = question.lines().map(|l| l.width()).max().unwrap_or(0);
    let width = u16::try_from(width).unwrap_or(u16::MAX);
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    let area = popup(area, width.saturating_add(4).max(40), height);
    draw_popup(frame, area, app, lines, format!(" {} ", app.lang.tr("Confirm")));
}

/// The rows a caption's text takes at `width` columns (its frame included), wrapped as
/// [`draw_caption`] wraps it.
pub fn caption_height(width: u16, text: &str) -> u16 {
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let rows: usize = text.lines().map(|l| wrapped_rows(l, inner)).sum();
    u16::try_from(rows + 2).unwrap_or(u16::MAX)
}

fn wrapped_rows(line: &str, inner: usize) -> usize {
    super::text::wrap(line, inner).len().max(1)
}

/// A trainer's caption in the band below the dashboard (see `layout`): the step's words,
/// why, commands, checks and keys. When they do not fit, the keys (the last line) and the
/// checks stay and the longest words give way, with a line saying how many were left out,
/// so nothing vanishes without a sign.
pub fn draw_caption(frame: &mut Frame, area: Rect, app: &App, title: &str, text: &str) {
    let inner = usize::from(area.width.saturating_sub(2)).max(1);
    let room = usize::from(area.height.saturating_sub(2));
    let lines: Vec<&str> = text.lines().collect();
    let rows = |l: &&str| wrapped_rows(l, inner);
    let total: usize = lines.iter().map(rows).sum();
    let mut kept: Vec<String> = Vec::new();
    if total <= room {
        kept = lines.iter().flat_map(|l| super::text::wrap(l, inner)).collect();
    } else if let Some((keys, body)) = lines.split_last() {
        // The checks and the keys first; then the words from the top, as many as fit.
        let is_check = |l: &&str| l.starts_with(['✓', '✗', '…']);
        let checks: Vec<&str> = body.iter().copied().filter(is_check).collect();
        let words: Vec<&str> = body.iter().copied().filter(|l| !is_check(l)).collect();
        let fixed = checks.iter().map(rows).sum::<usize>() + rows(keys) + 1;
        // The words' rows from the top fill what is left, to the last row: a band never
        // shows empty rows while it says lines were left out.
        let budget = room.saturating_sub(fixed);
        let word_rows: Vec<String> = words.iter().flat_map(|w| super::text::wrap(w, inner)).collect();
        let left_out = word_rows.len().saturating_sub(budget);
        kept.extend(word_rows.into_iter().take(budget));
        if left_out > 0 {
            kept.push(app.lang.fmt(
                "… {lines} not shown: a taller terminal shows the whole caption",
                &[("lines", &app.lang.count(left_out, "line"))],
            ));
        }
        kept.extend(checks.iter().flat_map(|l| super::text::wrap(l, inner)));
        kept.extend(super::text::wrap(keys, inner));
    }
    let lines: Vec<Line> = kept.into_iter().map(|l| Line::styled(l, app.theme.text)).collect();
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(app.theme.focused_border)
                .title(format!(" {title} ")),
        ),
        area,
    );
}

/// A framed, wrapped popup drawn over whatever is below it.
pub(super) fn draw_popup(frame: &mut Frame, area: Rect, app: &App, lines: Vec<Line<'_>>, title: String) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_value_shows_its_end_within_the_field() {
        assert_eq!(field_window("short", 10), "short");
        let long = "a".repeat(40) + "xyz";
        let shown = field_window(&long, 10);
        assert_eq!(shown, format!("…{}xyz", "a".repeat(5)));
        assert_eq!(unicode_width::UnicodeWidthStr::width(shown.as_str()), 9);
        // Wide characters count two columns.
        assert_eq!(field_window("主题主题主题", 8), "…题主题");
    }
}
