//! `[keys]`: the key table, as plain data. A binding names what the user means ("kill the
//! selected broker") and a key is a chord with its modifiers; the defaults live only in
//! `assets/kdeck.toml`, and a user's file overrides them binding by binding. What a binding
//! does, and which key press is which binding, the console decides (`tui::keymap`).

use std::collections::BTreeMap;
use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::{Deserialize, Deserializer};

/// What a key can mean. The names are the keys of `[keys]` (snake_case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Binding {
    Quit,
    Help,
    NextPane,
    PrevPane,
    Up,
    Down,
    PageUp,
    PageDown,
    Drill,
    Back,
    Filter,
    Command,
    Explain,
    ReplicaLog,
    Flow,
    Configs,
    Reassignments,
    Acls,
    Transactions,
    Clusters,
    Produce,
    KillBroker,
    StopBroker,
    RestartBroker,
    PauseBroker,
    AddBroker,
    DecommissionBroker,
    Rebalance,
    CreateTopic,
    DeleteTopic,
    AddPartitions,
    DeleteRecords,
    PauseDemo,
    Follow,
    PauseTail,
    SeekBeginning,
    SeekEnd,
    SeekOffset,
    SeekTime,
    NextPartition,
    PrevPartition,
    Isolation,
    Maximize,
    Projector,
    Freeze,
    Slower,
    Faster,
    AutoRebalance,
    Unclean,
    MinInsyncUp,
    MinInsyncDown,
    Acks,
    AddMember,
    RemoveMember,
    NextStep,
    PrevStep,
    PlayScenario,
    /// Not in `[keys]`: the digits 1-6 focus the dashboard's panes in order (0 is the first).
    #[serde(skip)]
    FocusPane(usize),
}

impl Binding {
    /// Every configurable binding, in help order.
    pub const ALL: [Binding; 57] = [
        Binding::Quit,
        Binding::Help,
        Binding::NextPane,
        Binding::PrevPane,
        Binding::Up,
        Binding::Down,
        Binding::PageUp,
        Binding::PageDown,
        Binding::Drill,
        Binding::Back,
        Binding::Filter,
        Binding::Command,
        Binding::Explain,
        Binding::ReplicaLog,
        Binding::Flow,
        Binding::Configs,
        Binding::Reassignments,
        Binding::Acls,
        Binding::Transactions,
        Binding::Clusters,
        Binding::Produce,
        Binding::KillBroker,
        Binding::StopBroker,
        Binding::RestartBroker,
        Binding::PauseBroker,
        Binding::AddBroker,
        Binding::DecommissionBroker,
        Binding::Rebalance,
        Binding::CreateTopic,
        Binding::DeleteTopic,
        Binding::AddPartitions,
        Binding::DeleteRecords,
        Binding::PauseDemo,
        Binding::Follow,
        Binding::PauseTail,
        Binding::SeekBeginning,
        Binding::SeekEnd,
        Binding::SeekOffset,
        Binding::SeekTime,
        Binding::NextPartition,
        Binding::PrevPartition,
        Binding::Isolation,
        Binding::Maximize,
        Binding::Projector,
        Binding::Freeze,
        Binding::Slower,
        Binding::Faster,
        Binding::AutoRebalance,
        Binding::Unclean,
        Binding::MinInsyncUp,
        Binding::MinInsyncDown,
        Binding::Acks,
        Binding::AddMember,
        Binding::RemoveMember,
        Binding::NextStep,
        Binding::PrevStep,
        Binding::PlayScenario,
    ];

    /// The name in `[keys]`.
    pub fn name(self) -> &'static str {
        match self {
            Binding::Quit => "quit",
            Binding::Help => "help",
            Binding::NextPane => "next_pane",
            Binding::PrevPane => "prev_pane",
            Binding::Up => "up",
            Binding::Down => "down",
            Binding::PageUp => "page_up",
            Binding::PageDown => "page_down",
            Binding::Drill => "drill",
            Binding::Back => "back",
            Binding::Filter => "filter",
            Binding::Command => "command",
            Binding::Explain => "explain",
            Binding::ReplicaLog => "replica_log",
            Binding::Flow => "flow",
            Binding::Configs => "configs",
            Binding::Reassignments => "reassignments",
            Binding::Acls => "acls",
            Binding::Transactions => "transactions",
            Binding::Clusters => "clusters",
            Binding::Produce => "produce",
            Binding::KillBroker => "kill_broker",
            Binding::StopBroker => "stop_broker",
            Binding::RestartBroker => "restart_broker",
            Binding::PauseBroker => "pause_broker",
            Binding::AddBroker => "add_broker",
            Binding::DecommissionBroker => "decommission_broker",
            Binding::Rebalance => "rebalance",
            Binding::CreateTopic => "create_topic",
            Binding::DeleteTopic => "delete_topic",
            Binding::AddPartitions => "add_partitions",
            Binding::DeleteRecords => "delete_records",
            Binding::PauseDemo => "pause_demo",
            Binding::Follow => "follow",
            Binding::PauseTail => "pause_tail",
            Binding::SeekBeginning => "seek_beginning",
            Binding::SeekEnd => "seek_end",
            Binding::SeekOffset => "seek_offset",
            Binding::SeekTime => "seek_time",
            Binding::NextPartition => "next_partition",
            Binding::PrevPartition => "prev_partition",
            Binding::Isolation => "isolation",
            Binding::Maximize => "maximize",
            Binding::Projector => "projector",
            Binding::Freeze => "freeze",
            Binding::Slower => "slower",
            Binding::Faster => "faster",
            Binding::AutoRebalance => "auto_rebalance",
            Binding::Unclean => "unclean",
            Binding::MinInsyncUp => "min_insync_up",
            Binding::MinInsyncDown => "min_insync_down",
            Binding::Acks => "acks",
            Binding::AddMember => "add_member",
            Binding::RemoveMember => "remove_member",
            Binding::NextStep => "next_step",
            Binding::PrevStep => "prev_step",
            Binding::PlayScenario => "play_scenario",
            Binding::FocusPane(_) => "focus_pane",
        }
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `[keys]`: every binding's keys. Empty here; the defaults come from `assets/kdeck.toml`
/// and a user's file overrides them binding by binding.
pub type KeysConfig = BTreeMap<Binding, Vec<Key>>;

/// One key with its modifiers. In the configuration: a character (`x`, `G`, `?`), a name
/// (`enter`, `esc`, `tab`, `backtab`, `space`, `up`, `down`, `left`, `right`, `home`, `end`,
/// `pageup`, `pagedown`, `backspace`, `delete`, `f1`..`f12`), optionally prefixed by `ctrl-`
/// or `alt-`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_key(&text).map_err(serde::de::Error::custom)
    }
}

impl Key {
    pub fn matches(&self, event: &KeyEvent) -> bool {
        let ctrl = event.modifiers.contains(KeyModifiers::CONTROL);
        let alt = event.modifiers.contains(KeyModifiers::ALT);
        let code = match event.code {
            // Terminals report Shift-Tab as BackTab, some with SHIFT set as well.
            KeyCode::Tab if event.modifiers.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
            c => c,
        };
        code == self.code && ctrl == self.ctrl && alt == self.alt
    }

    pub fn label(&self) -> String {
        let name = match self.code {
            KeyCode::Char(' ') => "Space".to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Enter => "Enter".into(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::BackTab => "Shift-Tab".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::F(n) => format!("F{n}"),
            other => format!("{other:?}"),
        };
        match (self.ctrl, self.alt) {
            (true, _) => format!("Ctrl-{name}"),
            (_, true) => format!("Alt-{name}"),
            _ => name,
        }
    }
}

/// Parses `x`, `G`, `ctrl-c`, `alt-x`, `enter`, `f5`...
pub fn parse_key(text: &str) -> Result<Key, String> {
    let mut rest = text;
    let (mut ctrl, mut alt) = (false, false);
    loop {
        let lower = rest.to_ascii_lowercase();
        if rest.chars().count() > 1 && lower.starts_with("ctrl-") {
            ctrl = true;
            rest = &rest[5..];
        } else if rest.chars().count() > 1 && lower.starts_with("alt-") {
            alt = true;
            rest = &rest[4..];
        } else {
            break;
        }
    }
    let mut chars = rest.chars();
    let code = match (chars.next(), chars.next()) {
        (Some(c), None) => KeyCode::Char(if ctrl { c.to_ascii_lowercase() } else { c }),
        (None, _) => return Err(format!("{text:?} is not a key: the key is empty")),
        _ => match rest.to_ascii_lowercase().as_str() {
            "enter" | "return" => KeyCode::Enter,
            "esc" | "escape" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "backtab" | "shift-tab" => KeyCode::BackTab,
            "space" => KeyCode::Char(' '),
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" => KeyCode::PageUp,
            "pagedown" => KeyCode::PageDown,
            "backspace" => KeyCode::Backspace,
            "delete" => KeyCode::Delete,
            f if f.starts_with('f') => match f[1..].parse::<u8>() {
                Ok(n) if (1..=12).contains(&n) => KeyCode::F(n),
                _ => return Err(format!("{text:?} is not a key: unknown key {rest:?}")),
            },
            _ => return Err(format!("{text:?} is not a key: unknown key {rest:?}")),
        },
    };
    Ok(Key { code, ctrl, alt })
}
