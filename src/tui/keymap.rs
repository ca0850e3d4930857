//! Keys to bindings, from `[keys]` in the configuration: a map from a binding's name to its
//! keys, whose defaults live only in `assets/kdeck.toml`. A binding names what the user
//! means ("kill the selected broker"); the app resolves it against the selection into an
//! [`Action`](super::action::Action) with an explicit target. The help overlay and the
//! footer hints are generated from the keymap.

use std::collections::BTreeMap;
use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::{Deserialize, Deserializer};

use super::Pane;

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
    Explain,
    ReplicaLog,
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
    NextStep,
    PrevStep,
    PlayScenario,
    /// Not in `[keys]`: the digits 1-6.
    #[serde(skip)]
    FocusPane(Pane),
}

impl Binding {
    /// Every configurable binding, in help order.
    pub const ALL: [Binding; 43] = [
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
        Binding::Explain,
        Binding::ReplicaLog,
        Binding::Produce,
        Binding::KillBroker,
        Binding::StopBroker,
        Binding::RestartBroker,
        Binding::PauseBroker,
        Binding::Rebalance,
        Binding::CreateTopic,
        Binding::DeleteTopic,
        Binding::PauseDemo,
        Binding::Follow,
        Binding::PauseTail,
        Binding::SeekBeginning,
        Binding::SeekEnd,
        Binding::SeekOffset,
        Binding::SeekTime,
        Binding::NextPartition,
        Binding::PrevPartition,
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
            Binding::Explain => "explain",
            Binding::ReplicaLog => "replica_log",
            Binding::Produce => "produce",
            Binding::KillBroker => "kill_broker",
            Binding::StopBroker => "stop_broker",
            Binding::RestartBroker => "restart_broker",
            Binding::PauseBroker => "pause_broker",
            Binding::Rebalance => "rebalance",
            Binding::CreateTopic => "create_topic",
            Binding::DeleteTopic => "delete_topic",
            Binding::PauseDemo => "pause_demo",
            Binding::Follow => "follow",
            Binding::PauseTail => "pause_tail",
            Binding::SeekBeginning => "seek_beginning",
            Binding::SeekEnd => "seek_end",
            Binding::SeekOffset => "seek_offset",
            Binding::SeekTime => "seek_time",
            Binding::NextPartition => "next_partition",
            Binding::PrevPartition => "prev_partition",
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
            Binding::NextStep => "next_step",
            Binding::PrevStep => "prev_step",
            Binding::PlayScenario => "play_scenario",
            Binding::FocusPane(_) => "focus_pane",
        }
    }

    /// Whether it changes the cluster: a read-only console hides it.
    pub fn mutates(self) -> bool {
        matches!(
            self,
            Binding::Produce
                | Binding::KillBroker
                | Binding::StopBroker
                | Binding::RestartBroker
                | Binding::PauseBroker
                | Binding::Rebalance
                | Binding::CreateTopic
                | Binding::DeleteTopic
                | Binding::AutoRebalance
                | Binding::Unclean
                | Binding::MinInsyncUp
                | Binding::MinInsyncDown
        )
    }

    /// Whether it is a trainer's live control of the embedded cluster (its clock, settings
    /// and workload): the view's controls tell what it does, and a cluster without them (an
    /// external one) does not offer it.
    pub fn trainer(self) -> bool {
        matches!(
            self,
            Binding::Freeze
                | Binding::Slower
                | Binding::Faster
                | Binding::AutoRebalance
                | Binding::Unclean
                | Binding::MinInsyncUp
                | Binding::MinInsyncDown
                | Binding::Acks
        )
    }

    /// Whether it controls a broker's process (kill, stop, restart, pause).
    pub fn controls_broker(self) -> bool {
        matches!(
            self,
            Binding::KillBroker | Binding::StopBroker | Binding::RestartBroker | Binding::PauseBroker
        )
    }

    /// Whether it works on the message tail (outside the Messages pane, beginning and end
    /// are the top and bottom of the list; the others explain where they work).
    pub fn tail_only(self) -> bool {
        matches!(
            self,
            Binding::Follow
                | Binding::PauseTail
                | Binding::SeekBeginning
                | Binding::SeekEnd
                | Binding::SeekOffset
                | Binding::SeekTime
                | Binding::NextPartition
                | Binding::PrevPartition
        )
    }

    /// What the help overlay says.
    pub fn describe(self) -> &'static str {
        match self {
            Binding::Quit => "quit (an embedded cluster shuts down cleanly)",
            Binding::Help => "this help",
            Binding::NextPane => "next pane",
            Binding::PrevPane => "previous pane",
            Binding::FocusPane(_) => "focus a pane: brokers, topics, partitions, groups, messages, events",
            Binding::Up => "move up",
            Binding::Down => "move down",
            Binding::PageUp => "page up",
            Binding::PageDown => "page down",
            Binding::Drill => "drill in: topic -> partitions -> messages -> message detail",
            Binding::Back => "back / close / clear the filter",
            Binding::Filter => "filter the focused pane by substring",
            Binding::Explain => "explain the selection: why this HW, ISR, leader, fencing, rebalance, failure",
            Binding::ReplicaLog => "the selected partition's replicated log: one strip per replica",
            Binding::Produce => "produce to the selected topic",
            Binding::KillBroker => "kill the selected broker (hard crash)",
            Binding::StopBroker => "stop the selected broker (controlled shutdown)",
            Binding::RestartBroker => "restart the selected broker",
            Binding::PauseBroker => "pause / resume the selected broker",
            Binding::Rebalance => "preferred-leader election (selected topic in topics/partitions, else all)",
            Binding::CreateTopic => "create a topic",
            Binding::DeleteTopic => "delete the selected topic",
            Binding::PauseDemo => "pause / resume the demo workload",
            Binding::Follow => "messages: follow the newest record on / off",
            Binding::PauseTail => "messages: freeze / unfreeze the tail",
            Binding::SeekBeginning => "messages: seek to the beginning",
            Binding::SeekEnd => "messages: seek to the end",
            Binding::SeekOffset => "messages: seek to an offset",
            Binding::SeekTime => "messages: seek to a time",
            Binding::NextPartition => "messages: next partition (all -> 0 -> 1 ...)",
            Binding::PrevPartition => "messages: previous partition",
            Binding::Maximize => "maximise the focused pane / restore the dashboard",
            Binding::Projector => "projector layout on / off (large, few columns, for a room)",
            Binding::Freeze => "freeze / thaw the cluster's clock",
            Binding::Slower => "slow motion: slower, the factor up (x1 -> x2 -> x3 -> x5 -> x10)",
            Binding::Faster => "slow motion: faster, the factor down (back to real time, x1)",
            Binding::AutoRebalance => "auto leader rebalance on / off",
            Binding::Unclean => "unclean leader election on / off (the cluster's default)",
            Binding::MinInsyncUp => "min.insync.replicas +1 for the selected topic",
            Binding::MinInsyncDown => "min.insync.replicas -1 for the selected topic",
            Binding::Acks => "producers' acks: all -> 1 -> 0 -> all",
            Binding::NextStep => "scenario: run the next step",
            Binding::PrevStep => "scenario: back one step (replays from the start to it)",
            Binding::PlayScenario => "scenario: play / pause (steps follow one another)",
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

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    #[error("[keys]: {key} is bound to both {first} and {second}; give one of them another key")]
    Conflict {
        key: String,
        first: Binding,
        second: Binding,
    },
    #[error("[keys] {binding} = {key}: the digits 1-6 always focus a pane")]
    Reserved { binding: Binding, key: String },
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

/// Every binding with its keys, in help order.
#[derive(Debug, Clone)]
pub struct Keymap {
    pub bindings: Vec<(Binding, Vec<Key>)>,
}

impl Keymap {
    /// The keymap of `[keys]`. Every binding is active everywhere the dashboard takes keys
    /// (the tail keys too: outside Messages they explain where they work), so one key bound
    /// to two bindings is an error naming both.
    pub fn from_config(keys: &KeysConfig) -> Result<Keymap, KeyError> {
        let mut bindings: Vec<(Binding, Vec<Key>)> = Vec::new();
        for binding in Binding::ALL {
            let list = keys.get(&binding).cloned().unwrap_or_default();
            for key in &list {
                if let KeyCode::Char('1'..='6') = key.code
                    && !key.ctrl
                    && !key.alt
                {
                    return Err(KeyError::Reserved {
                        binding,
                        key: key.label(),
                    });
                }
                if let Some((other, _)) = bindings.iter().find(|(_, keys)| keys.contains(key)) {
                    return Err(KeyError::Conflict {
                        key: key.label(),
                        first: *other,
                        second: binding,
                    });
                }
            }
            bindings.push((binding, list));
        }
        Ok(Keymap { bindings })
    }

    /// The binding of a key; the digits 1-6 always focus a pane.
    pub fn binding(&self, event: &KeyEvent) -> Option<Binding> {
        if let KeyCode::Char(c @ '1'..='6') = event.code
            && event.modifiers.difference(KeyModifiers::SHIFT).is_empty()
        {
            return Pane::ALL.get(c as usize - '1' as usize).map(|p| Binding::FocusPane(*p));
        }
        self.bindings
            .iter()
            .find(|(_, keys)| keys.iter().any(|k| k.matches(event)))
            .map(|(b, _)| *b)
    }

    /// The first key of a binding, for hints.
    pub fn hint(&self, binding: Binding) -> String {
        if let Binding::FocusPane(_) = binding {
            return "1-6".into();
        }
        self.bindings
            .iter()
            .find(|(b, _)| *b == binding)
            .and_then(|(_, keys)| keys.first())
            .map_or_else(|| "-".into(), Key::label)
    }

    /// Every key of a binding, for the help overlay.
    pub fn keys_of(&self, binding: Binding) -> String {
        if let Binding::FocusPane(_) = binding {
            return "1-6".into();
        }
        self.bindings
            .iter()
            .find(|(b, _)| *b == binding)
            .map(|(_, keys)| keys.iter().map(Key::label).collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pairs: &[(Binding, &str)]) -> KeysConfig {
        let mut map = KeysConfig::new();
        for (b, k) in pairs {
            map.entry(*b)
                .or_default()
                .push(parse_key(k).unwrap_or_else(|e| panic!("{e}")));
        }
        map
    }

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
    fn a_key_bound_twice_is_an_error_naming_both_bindings() {
        let err = Keymap::from_config(&keys(&[(Binding::KillBroker, "x"), (Binding::Follow, "x")]))
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            err,
            KeyError::Conflict {
                key: "x".into(),
                first: Binding::KillBroker,
                second: Binding::Follow
            }
        );
        let text = err.to_string();
        assert!(text.contains("kill_broker") && text.contains("follow"), "{text}");
    }

    #[test]
    fn the_pane_digits_cannot_be_rebound() {
        let err = Keymap::from_config(&keys(&[(Binding::KillBroker, "1")])).map(|_| ());
        assert!(matches!(err, Err(KeyError::Reserved { .. })), "{err:?}");
        assert!(Keymap::from_config(&keys(&[(Binding::KillBroker, "ctrl-1")])).is_ok());
    }

    #[test]
    fn a_binding_without_keys_is_unbound() {
        let map = Keymap::from_config(&keys(&[(Binding::Quit, "q")])).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(map.hint(Binding::KillBroker), "-");
        let q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(map.binding(&q), Some(Binding::Quit));
    }
}
