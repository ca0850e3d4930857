//! Semantic styles. With `NO_COLOR` set (non-empty) no colour is used: states stay readable
//! through modifiers and the role glyphs (★ leader, ● in sync, ○ out of sync, ✗ offline).

use ratatui::style::{Color, Modifier, Style};

use crate::view::{BrokerStatus, ReplicaRole, Severity};

#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub color: bool,
    pub text: Style,
    pub dim: Style,
    pub title: Style,
    pub header: Style,
    pub column_header: Style,
    pub selected: Style,
    pub border: Style,
    pub focused_border: Style,
    pub flash: Style,
    pub ok: Style,
    pub warn: Style,
    pub error: Style,
    pub leader: Style,
    pub in_sync: Style,
    pub out_of_sync: Style,
    pub offline: Style,
}

impl Theme {
    /// Colour unless `NO_COLOR` is set to something.
    pub fn from_env() -> Theme {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        if no_color {
            Theme::monochrome()
        } else {
            Theme::colored()
        }
    }

    pub fn colored() -> Theme {
        Theme {
            color: true,
            text: Style::default(),
            dim: Style::default().fg(Color::DarkGray),
            title: Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            header: Style::default().fg(Color::White).bg(Color::Blue),
            column_header: Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            selected: Style::default().bg(Color::DarkGray).add_modifier(Modifier::BOLD),
            border: Style::default().fg(Color::DarkGray),
            focused_border: Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            flash: Style::default().fg(Color::Black).bg(Color::Yellow),
            ok: Style::default().fg(Color::Green),
            warn: Style::default().fg(Color::Yellow),
            error: Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            leader: Style::default().fg(Color::Green).add_modifier(Modifier::BOLD),
            in_sync: Style::default().fg(Color::Cyan),
            out_of_sync: Style::default().fg(Color::Yellow),
            offline: Style::default().fg(Color::Red).add_modifier(Modifier::CROSSED_OUT),
        }
    }

    pub fn monochrome() -> Theme {
        let plain = Style::default();
        Theme {
            color: false,
            text: plain,
            dim: plain.add_modifier(Modifier::DIM),
            title: plain.add_modifier(Modifier::BOLD),
            header: plain.add_modifier(Modifier::REVERSED),
            column_header: plain.add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            selected: plain.add_modifier(Modifier::REVERSED),
            border: plain,
            focused_border: plain.add_modifier(Modifier::BOLD),
            flash: plain.add_modifier(Modifier::UNDERLINED),
            ok: plain,
            warn: plain.add_modifier(Modifier::BOLD),
            error: plain.add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            leader: plain.add_modifier(Modifier::BOLD),
            in_sync: plain,
            out_of_sync: plain.add_modifier(Modifier::DIM),
            offline: plain.add_modifier(Modifier::CROSSED_OUT),
        }
    }

    pub fn role(&self, role: ReplicaRole) -> Style {
        match role {
            ReplicaRole::Leader => self.leader,
            ReplicaRole::InSync => self.in_sync,
            ReplicaRole::OutOfSync => self.out_of_sync,
            ReplicaRole::Offline => self.offline,
        }
    }

    pub fn broker(&self, status: BrokerStatus) -> Style {
        match status {
            BrokerStatus::Online => self.ok,
            BrokerStatus::Fenced | BrokerStatus::Paused => self.warn,
            BrokerStatus::Stopped | BrokerStatus::Killed | BrokerStatus::Down | BrokerStatus::Unreachable => self.error,
        }
    }

    pub fn severity(&self, severity: Severity) -> Style {
        match severity {
            Severity::Info => self.text,
            Severity::Warn => self.warn,
            Severity::Error => self.error,
        }
    }
}
