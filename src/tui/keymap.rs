//! Keys to actions, from `[keys]` in the configuration; the help overlay is generated from it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::Pane;
use crate::config::KeysConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Help,
    NextPane,
    PrevPane,
    FocusPane(Pane),
    Up,
    Down,
    PageUp,
    PageDown,
    Drill,
    Back,
    Filter,
    Produce,
    KillBroker,
    StopBroker,
    RestartBroker,
    PauseBroker,
    Rebalance,
    CreateTopic,
    DeleteTopic,
    PauseDemo,
    Follow,
    PauseTail,
    SeekBeginning,
    SeekEnd,
    SeekOffset,
    SeekTime,
    NextPartition,
    PrevPartition,
}

impl Action {
    /// Whether the action changes the cluster: a read-only console hides it.
    pub fn mutates(self) -> bool {
        matches!(
            self,
            Action::Produce
                | Action::KillBroker
                | Action::StopBroker
                | Action::RestartBroker
                | Action::PauseBroker
                | Action::Rebalance
                | Action::CreateTopic
                | Action::DeleteTopic
        )
    }

    /// Whether the action controls a broker's process (kill, stop, restart, pause).
    pub fn controls_broker(self) -> bool {
        matches!(
            self,
            Action::KillBroker | Action::StopBroker | Action::RestartBroker | Action::PauseBroker
        )
    }

    /// What the help overlay says.
    pub fn describe(self) -> &'static str {
        match self {
            Action::Quit => "quit (an embedded cluster shuts down cleanly)",
            Action::Help => "this help",
            Action::NextPane => "next pane",
            Action::PrevPane => "previous pane",
            Action::FocusPane(_) => "focus a pane: brokers, topics, partitions, groups, messages, events",
            Action::Up => "move up",
            Action::Down => "move down",
            Action::PageUp => "page up",
            Action::PageDown => "page down",
            Action::Drill => "drill in: topic -> partitions -> messages -> message detail",
            Action::Back => "back / close / clear the filter",
            Action::Filter => "filter the focused pane by substring",
            Action::Produce => "produce to the selected topic",
            Action::KillBroker => "kill the selected broker (hard crash)",
            Action::StopBroker => "stop the selected broker (controlled shutdown)",
            Action::RestartBroker => "restart the selected broker",
            Action::PauseBroker => "pause / resume the selected broker",
            Action::Rebalance => "preferred-leader election (selected topic in topics/partitions, else all)",
            Action::CreateTopic => "create a topic",
            Action::DeleteTopic => "delete the selected topic",
            Action::PauseDemo => "pause / resume the demo workload",
            Action::Follow => "messages: follow the newest record on / off",
            Action::PauseTail => "messages: freeze / unfreeze the tail",
            Action::SeekBeginning => "messages: seek to the beginning",
            Action::SeekEnd => "messages: seek to the end",
            Action::SeekOffset => "messages: seek to an offset",
            Action::SeekTime => "messages: seek to a time",
            Action::NextPartition => "messages: next partition (all -> 0 -> 1 ...)",
            Action::PrevPartition => "messages: previous partition",
        }
    }
}

/// One key with its modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
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

#[derive(Debug, thiserror::Error)]
#[error("[keys] {action} = {key:?}: {reason}")]
pub struct KeyError {
    pub action: &'static str,
    pub key: String,
    pub reason: String,
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
        (None, _) => return Err("empty key".into()),
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
                _ => return Err(format!("unknown key {rest:?}")),
            },
            _ => return Err(format!("unknown key {rest:?}")),
        },
    };
    Ok(Key { code, ctrl, alt })
}

/// Every binding, in help order.
#[derive(Debug, Clone)]
pub struct Keymap {
    pub bindings: Vec<(Action, Vec<Key>)>,
}

impl Keymap {
    pub fn from_config(keys: &KeysConfig) -> Result<Keymap, KeyError> {
        let table: [(&'static str, &Vec<String>, Action); 28] = [
            ("quit", &keys.quit, Action::Quit),
            ("help", &keys.help, Action::Help),
            ("next_pane", &keys.next_pane, Action::NextPane),
            ("prev_pane", &keys.prev_pane, Action::PrevPane),
            ("up", &keys.up, Action::Up),
            ("down", &keys.down, Action::Down),
            ("page_up", &keys.page_up, Action::PageUp),
            ("page_down", &keys.page_down, Action::PageDown),
            ("drill", &keys.drill, Action::Drill),
            ("back", &keys.back, Action::Back),
            ("filter", &keys.filter, Action::Filter),
            ("produce", &keys.produce, Action::Produce),
            ("kill_broker", &keys.kill_broker, Action::KillBroker),
            ("stop_broker", &keys.stop_broker, Action::StopBroker),
            ("restart_broker", &keys.restart_broker, Action::RestartBroker),
            ("pause_broker", &keys.pause_broker, Action::PauseBroker),
            ("rebalance", &keys.rebalance, Action::Rebalance),
            ("create_topic", &keys.create_topic, Action::CreateTopic),
            ("delete_topic", &keys.delete_topic, Action::DeleteTopic),
            ("pause_demo", &keys.pause_demo, Action::PauseDemo),
            ("follow", &keys.follow, Action::Follow),
            ("pause_tail", &keys.pause_tail, Action::PauseTail),
            ("seek_beginning", &keys.seek_beginning, Action::SeekBeginning),
            ("seek_end", &keys.seek_end, Action::SeekEnd),
            ("seek_offset", &keys.seek_offset, Action::SeekOffset),
            ("seek_time", &keys.seek_time, Action::SeekTime),
            ("next_partition", &keys.next_partition, Action::NextPartition),
            ("prev_partition", &keys.prev_partition, Action::PrevPartition),
        ];
        let mut bindings = Vec::new();
        for (name, texts, action) in table {
            let mut parsed = Vec::new();
            for text in texts {
                let key = parse_key(text).map_err(|reason| KeyError {
                    action: name,
                    key: text.clone(),
                    reason,
                })?;
                parsed.push(key);
            }
            bindings.push((action, parsed));
        }
        Ok(Keymap { bindings })
    }

    /// The action of a key; the digits 1-6 always focus a pane.
    pub fn action(&self, event: &KeyEvent) -> Option<Action> {
        if let KeyCode::Char(c @ '1'..='6') = event.code
            && event.modifiers.difference(KeyModifiers::SHIFT).is_empty()
        {
            return Pane::ALL.get(c as usize - '1' as usize).map(|p| Action::FocusPane(*p));
        }
        self.bindings
            .iter()
            .find(|(_, keys)| keys.iter().any(|k| k.matches(event)))
            .map(|(a, _)| *a)
    }

    /// The first key of an action, for hints.
    pub fn hint(&self, action: Action) -> String {
        if let Action::FocusPane(_) = action {
            return "1-6".into();
        }
        self.bindings
            .iter()
            .find(|(a, _)| *a == action)
            .and_then(|(_, keys)| keys.first())
            .map_or_else(|| "-".into(), Key::label)
    }

    /// Every key of an action, for the help overlay.
    pub fn keys_of(&self, action: Action) -> String {
        if let Action::FocusPane(_) = action {
            return "1-6".into();
        }
        self.bindings
            .iter()
            .find(|(a, _)| *a == action)
            .map(|(_, keys)| keys.iter().map(Key::label).collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_parse_and_garbage_is_refused() {
        assert_eq!(parse_key("x").map(|k| k.code), Ok(KeyCode::Char('x')));
        let ctrl_c = parse_key("ctrl-c").unwrap_or_else(|e| panic!("{e}"));
        assert!(ctrl_c.ctrl && ctrl_c.code == KeyCode::Char('c'));
        assert_eq!(parse_key("pagedown").map(|k| k.code), Ok(KeyCode::PageDown));
        assert_eq!(parse_key("-").map(|k| k.code), Ok(KeyCode::Char('-')));
        assert!(parse_key("hyper-x").is_err());
        assert!(parse_key("").is_err());
    }

    #[test]
    fn a_bad_key_in_the_config_names_the_action() {
        let keys = KeysConfig {
            kill_broker: vec!["nope".into()],
            ..KeysConfig::default()
        };
        let err = Keymap::from_config(&keys).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("kill_broker") && err.contains("nope"), "{err}");
    }
}
