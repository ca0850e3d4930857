//! The cluster switcher (`K`, `:cluster NAME`): the clusters the console may show, the
//! embedded one (when the console may run it) and the configuration's `[clusters.NAME]`
//! profiles, in a list; choosing one asks whoever started the console to switch (through
//! [`Effect::SwitchCluster`](super::action::Effect::SwitchCluster)); the console knows only
//! names, never how a cluster is reached. Until the answer comes the console stays where it
//! is, and on failure it stays there with the reason in the footer.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::app::App;
use super::dialog::{draw_popup, popup};

/// The name of the embedded cluster in the list and in `:cluster`.
pub const EMBEDDED: &str = "embedded";

/// The clusters the console may switch to, and where it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterChoices {
    /// In list order: [`EMBEDDED`] first when the console may run it, then the profiles.
    pub names: Vec<String>,
    /// The cluster shown, when it is one of them (a `--bootstrap` cluster is none).
    pub current: Option<String>,
    /// The one being connected, until its answer arrives.
    pub connecting: Option<String>,
    /// The ones opened read-only (marked in the list).
    pub read_only: Vec<String>,
}

impl ClusterChoices {
    /// Why the console cannot switch to `name`, if it cannot.
    pub fn refuse(&self, name: &str) -> Option<String> {
        if !self.names.iter().any(|n| n == name) {
            return Some(if self.names.is_empty() {
                format!("no cluster {name}: the configuration has no [clusters.NAME] profiles")
            } else {
                format!("no cluster {name} (clusters: {})", self.names.join(", "))
            });
        }
        if self.current.as_deref() == Some(name) {
            return Some(format!("the console already shows {name}"));
        }
        if let Some(other) = &self.connecting {
            return Some(format!("still connecting to {other}"));
        }
        None
    }
}

/// The list over the dashboard, the cursor on `cursor`.
pub fn draw(frame: &mut Frame, area: Rect, app: &App, cursor: usize) {
    let t = &app.theme;
    let lang = app.lang;
    let Some(choices) = &app.clusters else {
        return;
    };
    let mut lines: Vec<Line> = Vec::new();
    for (i, name) in choices.names.iter().enumerate() {
        let mark = if choices.current.as_deref() == Some(name.as_str()) {
            "● "
        } else {
            "  "
        };
        let mut text = format!("{mark}{name}");
        if choices.connecting.as_deref() == Some(name.as_str()) {
            text = format!("{text}  {}", lang.tr("connecting…"));
        } else if choices.read_only.contains(name) {
            text = format!("{text}  ({})", lang.tr("read-only"));
        }
        let style = if i == cursor { t.selected } else { t.text };
        lines.push(Line::styled(text, style));
    }
    if choices.names.is_empty() {
        lines.push(Line::styled(
            lang.tr("no clusters: add [clusters.NAME] profiles to the configuration"),
            t.dim,
        ));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(lang.tr("Enter switches · Esc closes"), t.dim));
    let width = lines
        .iter()
        .map(|l| unicode_width::UnicodeWidthStr::width(l.to_string().as_str()))
        .max()
        .unwrap_or(0);
    let width = u16::try_from(width).unwrap_or(u16::MAX).saturating_add(4).max(36);
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    draw_popup(
        frame,
        popup(area, width, height),
        app,
        lines,
        format!(" {} ", lang.tr("Clusters")),
    );
}
