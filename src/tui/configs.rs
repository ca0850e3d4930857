//! The configs screen (`C`, `:config topic T`, `:config broker`): every config of a topic, or
//! the cluster-wide defaults, as the source describes them: name, value and where the value
//! comes from, overrides standing out. Enter edits the selected value on a line under the
//! list, `d` removes the selected override; both become the same `AlterConfigs` command as
//! `:config`, and the list is asked for again once its outcome arrives.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use tokio::sync::oneshot;

use super::app::App;
use super::awaited::Awaited;
use super::keymap::Binding;
use super::text::fit;
use crate::view::configs::ConfigsAnswer;
use crate::view::{ConfigOrigin, ConfigRow, ConfigTarget};

/// The open configs screen: whose configs, the source's answer, the cursor and the value
/// being typed.
#[derive(Debug)]
pub struct ConfigsScreen {
    pub target: ConfigTarget,
    /// The latest answer; the old list stays shown while a newer one is on its way.
    pub answer: Awaited<Vec<ConfigRow>>,
    pub cursor: usize,
    /// The value being edited for the selected config, while the edit line is open.
    pub editing: Option<String>,
}

impl ConfigsScreen {
    pub fn new(target: ConfigTarget) -> ConfigsScreen {
        ConfigsScreen {
            target,
            answer: Awaited::default(),
            cursor: 0,
            editing: None,
        }
    }

    /// Waits for this answer (replacing one asked for before).
    pub fn attach(&mut self, answer: oneshot::Receiver<ConfigsAnswer>) {
        self.answer.attach(answer);
        self.clamp();
    }

    /// Takes the answer if it arrived; true when the screen changed.
    pub fn poll(&mut self) -> bool {
        let arrived = self.answer.poll();
        self.clamp();
        arrived
    }

    fn clamp(&mut self) {
        self.cursor = self.cursor.min(self.rows().len().saturating_sub(1));
    }

    pub fn rows(&self) -> &[ConfigRow] {
        self.answer.ok().map_or(&[], Vec::as_slice)
    }

    pub fn selected(&self) -> Option<&ConfigRow> {
        self.rows().get(self.cursor)
    }

    pub fn move_by(&mut self, by: i64) {
        let last = self.rows().len().saturating_sub(1) as i64;
        self.cursor = (self.cursor as i64 + by).clamp(0, last) as usize;
    }

    /// The topic an alteration names (`None`: the cluster-wide defaults).
    pub fn topic(&self) -> Option<String> {
        match &self.target {
            ConfigTarget::Topic(t) => Some(t.clone()),
            ConfigTarget::Broker(_) | ConfigTarget::ClusterDefault => None,
        }
    }

    /// Whether `row` is an override of this target that removing brings back to a default
    /// (a topic's own value; for the cluster, a default set at run time).
    pub fn removable(&self, row: &ConfigRow) -> bool {
        match &self.target {
            ConfigTarget::Topic(_) => row.origin == ConfigOrigin::Topic,
            ConfigTarget::Broker(_) => row.origin == ConfigOrigin::Broker,
            ConfigTarget::ClusterDefault => row.origin == ConfigOrigin::Cluster,
        }
    }

    /// Whether this target's alterations go through `AlterConfigs` from the console.
    pub fn is_answered_for(&self, topic: Option<&str>) -> bool {
        match (&self.target, topic) {
            (ConfigTarget::Topic(t), Some(other)) => t == other,
            (ConfigTarget::ClusterDefault | ConfigTarget::Broker(_), None) => true,
            _ => false,
        }
    }
}

/// `text` cut or padded to `width` columns, and a space.
fn column(text: &str, width: usize) -> String {
    let cut = fit(text, width.saturating_sub(1));
    let pad = width.saturating_sub(unicode_width::UnicodeWidthStr::width(cut.as_str()));
    format!("{cut}{}", " ".repeat(pad))
}

const NAME: usize = 34;
const VALUE: usize = 26;

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let lang = app.lang;
    let Some(screen) = &app.configs else {
        return;
    };
    let what = match &screen.target {
        ConfigTarget::Topic(topic) => lang.fmt("Configs of topic {topic}", &[("topic", topic)]),
        ConfigTarget::Broker(id) => lang.fmt("Configs of broker {broker}", &[("broker", id)]),
        ConfigTarget::ClusterDefault => lang.tr("The cluster's default configs").to_string(),
    };
    let back = app.keymap.hint(Binding::Back);
    let title = format!(" {what} · {back} {} ", lang.tr("back"));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.focused_border)
        .title(Line::styled(title, t.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [list, bottom] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(inner);
    let rows = match screen.answer.get() {
        None => {
            frame.render_widget(Paragraph::new(Line::styled(lang.tr("loading..."), t.dim)), list);
            return;
        }
        Some(Err(e)) => {
            let text = lang.fmt("cannot show the configs: {reason}", &[("reason", e)]);
            frame.render_widget(
                Paragraph::new(Line::styled(text, t.error)).wrap(ratatui::widgets::Wrap { trim: true }),
                list,
            );
            return;
        }
        Some(Ok(rows)) => rows,
    };
    let width = list.width as usize;
    let mut lines = vec![Line::styled(
        format!(
            "  {}{}{}",
            column(lang.tr("NAME"), NAME),
            column(lang.tr("VALUE"), VALUE),
            lang.tr("SOURCE")
        ),
        t.header,
    )];
    let room = (list.height as usize).saturating_sub(1).max(1);
    let first = screen.cursor.saturating_sub(room - 1);
    for (i, row) in rows.iter().enumerate().skip(first).take(room) {
        let selected = i == screen.cursor;
        let value = row.value.as_deref().unwrap_or("(sensitive)");
        let mut source = lang.tr(row.origin.word()).to_string();
        if row.read_only {
            source = format!("{source}, {}", lang.tr("read-only"));
        }
        let style = if selected {
            t.selected
        } else if screen.removable(row) {
            t.warn
        } else {
            t.text
        };
        let mark = if screen.removable(row) { "* " } else { "  " };
        let text = format!("{mark}{}{}{source}", column(&row.name, NAME), column(value, VALUE));
        lines.push(Line::styled(fit(&text, width), style));
    }
    frame.render_widget(Paragraph::new(lines), list);
    let line = match (&screen.editing, screen.selected()) {
        (Some(text), Some(row)) => Line::from(vec![
            Span::styled(format!(" {} = {text}", row.name), t.title),
            Span::styled("▏  ", t.dim),
            Span::styled(lang.tr("Enter sets · Esc cancels"), t.dim),
        ]),
        _ if app.capabilities.read_only => Line::styled(lang.tr("read-only: configs are shown, not changed"), t.dim),
        _ => Line::styled(
            lang.tr("Enter edits the value · d removes the override (*) · Esc back"),
            t.dim,
        ),
    };
    frame.render_widget(Paragraph::new(line), bottom);
}
