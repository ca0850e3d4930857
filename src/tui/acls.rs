//! The ACL screen (`W`, `:acls`): every ACL binding the cluster keeps (DescribeAcls), read
//! only: principal, host, operation, permission, resource type, name and pattern type,
//! filtered with `/` by substring. A cluster without an authorizer has none to list, and the
//! screen says so plainly: every client may do everything there.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use tokio::sync::oneshot;

use super::app::App;
use super::awaited::Awaited;
use super::keymap::Binding;
use super::text::fit;
use crate::view::acls::{AclRow, Acls, AclsAnswer};

/// The open ACL screen: the source's answer, the filter and the cursor.
#[derive(Debug, Default)]
pub struct AclsScreen {
    pub answer: Awaited<Acls>,
    pub filter: String,
    pub cursor: usize,
}

impl AclsScreen {
    /// Waits for this answer.
    pub fn attach(&mut self, answer: oneshot::Receiver<AclsAnswer>) {
        self.answer.attach(answer);
        self.clamp();
    }

    /// Takes the answer if it arrived; true when the screen changed.
    pub fn poll(&mut self) -> bool {
        let arrived = self.answer.poll();
        self.clamp();
        arrived
    }

    /// The bindings the filter lets through.
    pub fn rows(&self) -> Vec<&AclRow> {
        match self.answer.ok() {
            Some(Acls::Listed(rows)) => rows.iter().filter(|r| r.matches(&self.filter)).collect(),
            _ => Vec::new(),
        }
    }

    pub fn move_by(&mut self, by: i64) {
        let last = self.rows().len().saturating_sub(1) as i64;
        self.cursor = (self.cursor as i64 + by).clamp(0, last.max(0)) as usize;
    }

    pub fn set_filter(&mut self, text: String) {
        if self.filter != text {
            self.filter = text;
            self.cursor = 0;
        }
    }

    fn clamp(&mut self) {
        self.cursor = self.cursor.min(self.rows().len().saturating_sub(1));
    }
}

/// The columns: a title and a width (the last takes the rest).
const COLUMNS: [(&str, usize); 7] = [
    ("PRINCIPAL", 22),
    ("HOST", 14),
    ("OPERATION", 17),
    ("PERMISSION", 11),
    ("RESOURCE", 11),
    ("NAME", 24),
    ("PATTERN", 9),
];

/// `text` cut or padded to `width` columns, and a space.
fn column(text: &str, width: usize) -> String {
    let cut = fit(text, width.saturating_sub(1));
    let pad = width.saturating_sub(unicode_width::UnicodeWidthStr::width(cut.as_str()));
    format!("{cut}{}", " ".repeat(pad))
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let lang = app.lang;
    let Some(screen) = &app.acls else {
        return;
    };
    let back = app.keymap.hint(Binding::Back);
    let title = format!(" {} · {back} {} ", lang.tr("ACLs"), lang.tr("back"));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.focused_border)
        .title(Line::styled(title, t.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [list, bottom] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(inner);
    let say = |frame: &mut Frame, text: String, style| {
        frame.render_widget(
            Paragraph::new(Line::styled(text, style)).wrap(Wrap { trim: true }),
            list,
        );
    };
    match screen.answer.get() {
        None => return say(frame, lang.tr("loading...").to_string(), t.dim),
        Some(Err(e)) => {
            return say(
                frame,
                lang.fmt("cannot show the ACLs: {reason}", &[("reason", e)]),
                t.error,
            );
        }
        Some(Ok(Acls::NoAuthorizer { embedded: true })) => {
            return say(
                frame,
                lang.tr("the embedded cluster has no authorizer: every client may do everything")
                    .to_string(),
                t.warn,
            );
        }
        Some(Ok(Acls::NoAuthorizer { embedded: false })) => {
            return say(
                frame,
                lang.tr("this cluster has no authorizer (SECURITY_DISABLED): every client may do everything")
                    .to_string(),
                t.warn,
            );
        }
        Some(Ok(Acls::Listed(all))) if all.is_empty() => {
            return say(
                frame,
                lang.tr("no ACLs: the authorizer has no bindings").to_string(),
                t.dim,
            );
        }
        Some(Ok(Acls::Listed(_))) => {}
    }
    let rows = screen.rows();
    let width = list.width as usize;
    let header: String = COLUMNS.iter().map(|(name, w)| column(lang.tr(name), *w)).collect();
    let mut lines = vec![Line::styled(fit(&format!("  {header}"), width), t.header)];
    let room = (list.height as usize).saturating_sub(1).max(1);
    let first = screen.cursor.saturating_sub(room - 1);
    for (i, row) in rows.iter().enumerate().skip(first).take(room) {
        let cells = [
            &row.principal,
            &row.host,
            &row.operation,
            &row.permission,
            &row.resource_type,
            &row.resource_name,
            &row.pattern_type,
        ];
        let text: String = cells
            .iter()
            .zip(COLUMNS)
            .map(|(cell, (_, w))| column(cell, w))
            .collect();
        let style = if i == screen.cursor {
            t.selected
        } else if row.permission == "DENY" {
            t.warn
        } else {
            t.text
        };
        lines.push(Line::styled(fit(&format!("  {text}"), width), style));
    }
    if rows.is_empty() {
        lines.push(Line::styled(
            lang.fmt("no ACL matches \"{filter}\"", &[("filter", &screen.filter)]),
            t.dim,
        ));
    }
    frame.render_widget(Paragraph::new(lines), list);
    let footer = if screen.filter.is_empty() {
        lang.fmt(
            "ACL bindings: {n} · {filter} filters · read only",
            &[("n", &rows.len()), ("filter", &app.keymap.hint(Binding::Filter))],
        )
    } else {
        lang.fmt(
            "ACL bindings matching \"{text}\": {n} · read only",
            &[("n", &rows.len()), ("text", &screen.filter)],
        )
    };
    frame.render_widget(Paragraph::new(Line::styled(fit(&footer, width), t.dim)), bottom);
}
