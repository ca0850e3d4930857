//! Keys to bindings: the console's reading of `[keys]` (the table itself is plain data in
//! `config::keys`). The app resolves a binding against the selection into an
//! [`Action`](super::action::Action) with an explicit target. The help overlay and the
//! footer hints are generated from the keymap.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::Pane;
pub use crate::config::keys::{Binding, Key, KeysConfig, parse_key};

/// What a binding means to the console: what it touches, where it works, what help says.
pub trait Meaning: Copy {
    fn mutates(self) -> bool;
    fn trainer(self) -> bool;
    fn controls_broker(self) -> bool;
    fn tail_only(self) -> bool;
    fn describe(self) -> &'static str;
}

impl Meaning for Binding {
    /// Whether it changes the cluster: a read-only console hides it.
    fn mutates(self) -> bool {
        matches!(
            self,
            Binding::Produce
                | Binding::KillBroker
                | Binding::StopBroker
                | Binding::RestartBroker
                | Binding::PauseBroker
                | Binding::AddBroker
                | Binding::DecommissionBroker
                | Binding::Rebalance
                | Binding::CreateTopic
                | Binding::DeleteTopic
                | Binding::AddPartitions
                | Binding::DeleteRecords
                | Binding::AutoRebalance
                | Binding::Unclean
                | Binding::MinInsyncUp
                | Binding::MinInsyncDown
        )
    }

    /// Whether it is a trainer's live control of the embedded cluster (its clock, settings
    /// and workload): the view's controls tell what it does, and a cluster without them (an
    /// external one) does not offer it.
    fn trainer(self) -> bool {
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
                | Binding::AddMember
                | Binding::RemoveMember
        )
    }

    /// Whether it controls a broker's process (kill, stop, restart, pause).
    fn controls_broker(self) -> bool {
        matches!(
            self,
            Binding::KillBroker
                | Binding::StopBroker
                | Binding::RestartBroker
                | Binding::PauseBroker
                | Binding::AddBroker
                | Binding::DecommissionBroker
        )
    }

    /// Whether it works on the message tail (outside the Messages pane, beginning and end
    /// are the top and bottom of the list; the others explain where they work).
    fn tail_only(self) -> bool {
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
                | Binding::Isolation
        )
    }

    /// What the help overlay says (in English: the id of its translation in the catalogue).
    fn describe(self) -> &'static str {
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
            Binding::Command => "command line: every action by name (:kill 1, :seek orders-0 100); Tab completes",
            Binding::Explain => "explain the selection: why this HW, ISR, leader, fencing, rebalance, failure",
            Binding::ReplicaLog => "the selected partition's replicated log: one strip per replica",
            Binding::Flow => "records through the selected partition: producers, leader, followers, groups",
            Binding::Configs => "the selected topic's configs and their sources: edit one, remove an override",
            Binding::Reassignments => "partition reassignments: live progress, plan, cancel",
            Binding::Acls => "the cluster's ACLs: principal, host, operation, permission, resource (read only)",
            Binding::Transactions => {
                "transactions: each transactional id's state, producer, partitions and how long it has been open (read only)"
            }
            Binding::Clusters => "switch to another cluster: the embedded one or a [clusters.NAME] profile",
            Binding::Produce => "produce to the selected topic",
            Binding::KillBroker => "kill the selected broker (hard crash)",
            Binding::StopBroker => "stop the selected broker (controlled shutdown)",
            Binding::RestartBroker => "restart the selected broker",
            Binding::PauseBroker => "pause / resume the selected broker",
            Binding::AddBroker => "add a broker to the embedded cluster (the next id, empty logs)",
            Binding::DecommissionBroker => "decommission the selected broker (its replicas move away first)",
            Binding::Rebalance => "preferred-leader election (selected topic in topics/partitions, else all)",
            Binding::CreateTopic => "create a topic",
            Binding::DeleteTopic => "delete the selected topic",
            Binding::AddPartitions => "grow the selected topic to more partitions",
            Binding::DeleteRecords => "delete the selected partition's records before an offset",
            Binding::PauseDemo => "pause / resume the demo workload",
            Binding::Follow => "messages: follow the newest record on / off",
            Binding::PauseTail => "messages: freeze / unfreeze the tail",
            Binding::SeekBeginning => "messages: seek to the beginning",
            Binding::SeekEnd => "messages: seek to the end",
            Binding::SeekOffset => "messages: seek to an offset",
            Binding::SeekTime => "messages: seek to a time",
            Binding::NextPartition => "messages: next partition (all -> 0 -> 1 ...)",
            Binding::PrevPartition => "messages: previous partition",
            Binding::Isolation => "messages: read_committed (hide aborted and open transactions) or read_uncommitted",
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
            Binding::AddMember => "one consumer more in the selected group (it rebalances)",
            Binding::RemoveMember => "the selected group's newest consumer leaves",
            Binding::NextStep => "scenario: run the next step",
            Binding::PrevStep => "scenario: back one step (replays from the start to it)",
            Binding::PlayScenario => "scenario: play / pause (steps follow one another)",
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
            let place = c as usize - '1' as usize;
            return (place < Pane::ALL.len()).then_some(Binding::FocusPane(place));
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
