//! The console's state and what each key does. Keys become [`Action`]s through the keymap;
//! an action changes the state or becomes one [`ClusterSource`] call.

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, FixedOffset, NaiveDateTime, TimeZone, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};

use super::Pane;
use super::keymap::{Action, Keymap};
use super::theme::Theme;
use crate::config::ConsoleConfig;
use crate::view::{
    BrokerRow, BrokerStatus, Capabilities, ClusterSource, ClusterView, Command, CommandOutcome, GroupRow,
    OutcomeSender, PartitionRow, ProduceRequest, SeekPosition, Severity, TailHandle, TailRecord, TailSpec, TopicRow,
};

/// A one-line message in the footer: the last command's outcome or a hint.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub text: String,
    pub severity: Severity,
    /// When it was said (the view's time then): the footer lets it go after a while.
    pub at: DateTime<Utc>,
}

impl Status {
    /// How long the footer shows a note: errors twice as long.
    pub fn shown_for(&self) -> chrono::Duration {
        match self.severity {
            Severity::Error => chrono::Duration::seconds(12),
            _ => chrono::Duration::seconds(6),
        }
    }

    /// Whether the footer still shows it at `now`.
    pub fn current(&self, now: DateTime<Utc>) -> bool {
        now.signed_duration_since(self.at) < self.shown_for()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialogKind {
    Produce,
    CreateTopic,
    SeekOffset,
    SeekTime,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub label: &'static str,
    pub value: String,
    pub hint: &'static str,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Dialog {
    pub kind: DialogKind,
    pub title: String,
    pub fields: Vec<Field>,
    pub focus: usize,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Normal,
    Help,
    Filter,
    Dialog(Dialog),
    Confirm { question: String, command: Command },
    Detail(Box<TailRecord>),
}

/// The message tail of the selected topic.
#[derive(Debug)]
pub struct Tail {
    pub handle: TailHandle,
    /// Keep the newest record selected.
    pub follow: bool,
    /// A frozen copy while paused.
    pub frozen: Option<Vec<TailRecord>>,
    pub seen_version: u64,
}

impl Tail {
    pub fn records(&self) -> Vec<TailRecord> {
        match &self.frozen {
            Some(r) => r.clone(),
            None => self.handle.buffer.records(),
        }
    }
}

pub struct App {
    pub source: Arc<dyn ClusterSource>,
    /// What the source lets the console do (asked once: it does not change).
    pub capabilities: Capabilities,
    pub outcomes: OutcomeSender,
    pub view: Arc<ClusterView>,
    pub keymap: Keymap,
    pub theme: Theme,
    pub console: ConsoleConfig,
    pub tz: FixedOffset,
    pub log_path: Option<PathBuf>,
    pub focus: Pane,
    pub cursor: [usize; 6],
    pub filters: [String; 6],
    pub mode: Mode,
    pub status: Option<Status>,
    pub tail: Option<Tail>,
    /// The partition the message tail reads; `None` for all.
    pub tail_partition: Option<i32>,
    /// The pane areas of the last frame, for mouse clicks.
    pub pane_areas: Vec<(Pane, ratatui::layout::Rect)>,
    /// The last frame was too small to show the console: keys other than quit do nothing,
    /// rather than act behind a "terminal too small" line (a kill confirmed unseen).
    pub too_small: bool,
    pub quit: bool,
}

impl App {
    pub fn new(
        source: Arc<dyn ClusterSource>,
        outcomes: OutcomeSender,
        keymap: Keymap,
        theme: Theme,
        console: ConsoleConfig,
        tz: FixedOffset,
        log_path: Option<PathBuf>,
    ) -> App {
        let view = source.views().borrow().clone();
        let capabilities = source.capabilities();
        let mut app = App {
            source,
            capabilities,
            outcomes,
            view,
            keymap,
            theme,
            console,
            tz,
            log_path,
            focus: Pane::Brokers,
            cursor: [0; 6],
            filters: Default::default(),
            mode: Mode::Normal,
            status: None,
            tail: None,
            tail_partition: None,
            pane_areas: Vec::new(),
            too_small: false,
            quit: false,
        };
        app.ensure_tail();
        app
    }

    pub fn set_view(&mut self, view: Arc<ClusterView>) {
        // The selection follows the topic, not its row, when topics come and go.
        let selected = self.selected_topic().map(|t| t.name.clone());
        self.view = view;
        if let Some(name) = selected
            && let Some(i) = self.visible_topics().iter().position(|t| t.name == name)
        {
            self.cursor[Pane::Topics.index()] = i;
        }
        self.ensure_tail();
    }

    pub fn on_outcome(&mut self, outcome: CommandOutcome) {
        match outcome.result {
            Ok(text) => self.say(text, Severity::Info),
            Err(e) => self.say(format!("{} failed: {e}", outcome.command), Severity::Error),
        }
    }

    /// Why the console does not offer `action`, if it does not: hidden by read-only, or not
    /// available from this source.
    pub fn unavailable(&self, action: Action) -> Option<&'static str> {
        if self.capabilities.read_only && action.mutates() {
            return Some("read-only: this console changes nothing in the cluster (--read-only)");
        }
        if action.controls_broker() {
            return self.capabilities.broker_control.err();
        }
        if action == Action::PauseDemo && !self.capabilities.demo {
            return Some("this cluster has no demo workload");
        }
        None
    }

    /// Periodic check; true when the screen must be redrawn (new tail records).
    pub fn on_tick(&mut self) -> bool {
        let Some(tail) = &mut self.tail else {
            return false;
        };
        if tail.frozen.is_some() {
            return false;
        }
        let version = tail.handle.buffer.version();
        let changed = version != tail.seen_version;
        tail.seen_version = version;
        changed
    }

    fn filter(&self, pane: Pane) -> &str {
        &self.filters[pane.index()]
    }

    // ---- what each pane lists (after its filter) ----

    pub fn visible_brokers(&self) -> Vec<&BrokerRow> {
        let f = self.filter(Pane::Brokers);
        self.view
            .brokers
            .iter()
            .filter(|b| f.is_empty() || b.id.to_string().contains(f) || b.status.label().contains(f))
            .collect()
    }

    pub fn visible_topics(&self) -> Vec<&TopicRow> {
        let f = self.filter(Pane::Topics);
        self.view
            .topics
            .iter()
            .filter(|t| f.is_empty() || t.name.contains(f))
            .collect()
    }

    pub fn visible_partitions(&self) -> Vec<&PartitionRow> {
        let Some(topic) = self.selected_topic() else {
            return Vec::new();
        };
        let f = self.filter(Pane::Partitions);
        self.view
            .partitions_of(&topic.name)
            .filter(|p| {
                f.is_empty()
                    || p.partition.to_string() == *f
                    || p.replicas.iter().any(|r| r.role.label().contains(f))
                    || (f == "urp" && p.under_replicated)
            })
            .collect()
    }

    pub fn visible_groups(&self) -> Vec<&GroupRow> {
        let f = self.filter(Pane::Groups);
        self.view
            .groups
            .iter()
            .filter(|g| f.is_empty() || g.group_id.contains(f))
            .collect()
    }

    /// The tail's records after the filter (substring of key, value or headers).
    pub fn visible_messages(&self) -> Vec<TailRecord> {
        let Some(tail) = &self.tail else {
            return Vec::new();
        };
        let f = self.filter(Pane::Messages);
        let contains = |b: &Option<bytes::Bytes>| b.as_ref().is_some_and(|b| String::from_utf8_lossy(b).contains(f));
        tail.records()
            .into_iter()
            .filter(|r| {
                f.is_empty()
                    || contains(&r.key)
                    || contains(&r.value)
                    || r.headers.iter().any(|(k, v)| k.contains(f) || contains(v))
            })
            .collect()
    }

    pub fn visible_events(&self) -> Vec<&crate::view::ViewEvent> {
        let f = self.filter(Pane::Events);
        self.view
            .events
            .iter()
            .filter(|e| f.is_empty() || e.text.contains(f))
            .collect()
    }

    fn len(&self, pane: Pane) -> usize {
        match pane {
            Pane::Brokers => self.visible_brokers().len(),
            Pane::Topics => self.visible_topics().len(),
            Pane::Partitions => self.visible_partitions().len(),
            Pane::Groups => self.visible_groups().len(),
            Pane::Messages => self.visible_messages().len(),
            Pane::Events => self.visible_events().len(),
        }
    }

    /// The cursor of a pane, clamped to its list.
    pub fn cursor(&self, pane: Pane) -> usize {
        let len = self.len(pane);
        if pane == Pane::Messages && self.tail.as_ref().is_some_and(|t| t.follow) {
            return len.saturating_sub(1);
        }
        self.cursor[pane.index()].min(len.saturating_sub(1))
    }

    pub fn selected_broker(&self) -> Option<&BrokerRow> {
        self.visible_brokers().get(self.cursor(Pane::Brokers)).copied()
    }

    pub fn selected_topic(&self) -> Option<&TopicRow> {
        self.visible_topics().get(self.cursor(Pane::Topics)).copied()
    }

    pub fn selected_group(&self) -> Option<&GroupRow> {
        self.visible_groups().get(self.cursor(Pane::Groups)).copied()
    }

    pub fn selected_partition(&self) -> Option<&PartitionRow> {
        self.visible_partitions().get(self.cursor(Pane::Partitions)).copied()
    }

    /// Starts (or restarts) the tail when the selected topic or partition changed.
    fn ensure_tail(&mut self) {
        let Some(topic) = self.selected_topic().map(|t| t.name.clone()) else {
            self.tail = None;
            return;
        };
        let current = self.tail.as_ref().map(|t| &t.handle.spec);
        if current.is_some_and(|s| s.topic == topic && s.partition == self.tail_partition) {
            return;
        }
        self.start_tail(TailSpec {
            topic,
            partition: self.tail_partition,
            start: SeekPosition::Last(self.console.tail_start_last),
        });
    }

    fn start_tail(&mut self, spec: TailSpec) {
        let handle = self.source.tail(spec, self.console.tail_capacity);
        self.tail = Some(Tail {
            handle,
            follow: true,
            frozen: None,
            seen_version: 0,
        });
    }

    fn seek(&mut self, start: SeekPosition) {
        let Some(tail) = &self.tail else {
            return self.hint("select a topic first");
        };
        let spec = TailSpec {
            start,
            ..tail.handle.spec.clone()
        };
        self.start_tail(spec);
        if matches!(
            start,
            SeekPosition::Beginning | SeekPosition::Offset(_) | SeekPosition::Timestamp(_)
        ) && let Some(t) = &mut self.tail
        {
            t.follow = false;
            self.cursor[Pane::Messages.index()] = 0;
        }
        self.hint(&format!("messages from {start}"));
    }

    fn hint(&mut self, text: &str) {
        self.say(text.to_string(), Severity::Warn);
    }

    /// A note in the footer, stamped with the view's time.
    fn say(&mut self, text: String, severity: Severity) {
        self.status = Some(Status {
            text,
            severity,
            at: self.view.taken_at,
        });
    }

    fn submit(&mut self, command: Command) {
        self.say(format!("{command}..."), Severity::Info);
        self.source.submit(command, self.outcomes.clone());
    }

    /// Submits at once, or asks first when confirmations are on.
    fn submit_destructive(&mut self, command: Command, question: String) {
        if self.console.confirm_destructive {
            self.mode = Mode::Confirm { question, command };
        } else {
            self.submit(command);
        }
    }

    // ---- input ----

    pub fn on_mouse(&mut self, event: MouseEvent) {
        let inside = |r: &ratatui::layout::Rect| {
            event.column >= r.x && event.column < r.x + r.width && event.row >= r.y && event.row < r.y + r.height
        };
        let pane = self.pane_areas.iter().find(|(_, r)| inside(r)).map(|(p, _)| *p);
        match event.kind {
            MouseEventKind::ScrollDown => self.move_cursor(1),
            MouseEventKind::ScrollUp => self.move_cursor(-1),
            MouseEventKind::Down(_) => {
                if let Some(p) = pane {
                    self.set_focus(p);
                }
            }
            _ => {}
        }
    }

    pub fn on_key(&mut self, key: KeyEvent) {
        if self.too_small && self.mode != Mode::Normal {
            // A dialog or confirmation opened before the terminal shrank: nothing is answered
            // unseen; Esc closes it.
            if key.code == KeyCode::Esc {
                self.mode = Mode::Normal;
            }
            return;
        }
        match std::mem::replace(&mut self.mode, Mode::Normal) {
            Mode::Normal => self.on_normal_key(key),
            Mode::Help => {}
            Mode::Detail(record) => {
                if !matches!(key.code, KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q')) {
                    self.mode = Mode::Detail(record);
                }
            }
            Mode::Filter => self.on_filter_key(key),
            Mode::Confirm { question, command } => match key.code {
                // Only an explicit yes: Enter alone, the key that opened many a dialog, says no.
                KeyCode::Char('y') | KeyCode::Char('Y') => self.submit(command),
                KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc | KeyCode::Enter => self.hint("cancelled"),
                _ => self.mode = Mode::Confirm { question, command },
            },
            Mode::Dialog(dialog) => self.on_dialog_key(dialog, key),
        }
        self.ensure_tail();
    }

    fn on_filter_key(&mut self, key: KeyEvent) {
        let filter = &mut self.filters[self.focus.index()];
        match key.code {
            KeyCode::Esc => filter.clear(),
            KeyCode::Enter => {}
            KeyCode::Backspace => {
                filter.pop();
                self.mode = Mode::Filter;
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                filter.push(c);
                self.cursor[self.focus.index()] = 0;
                self.mode = Mode::Filter;
            }
            _ => self.mode = Mode::Filter,
        }
    }

    fn move_cursor(&mut self, delta: isize) {
        let pane = self.focus;
        let len = self.len(pane);
        let current = self.cursor(pane);
        if pane == Pane::Messages
            && let Some(t) = &mut self.tail
        {
            t.follow = false;
        }
        let next = current.saturating_add_signed(delta).min(len.saturating_sub(1));
        self.cursor[pane.index()] = next;
        if pane == Pane::Messages
            && next + 1 == len
            && delta > 0
            && let Some(t) = &mut self.tail
        {
            t.follow = true;
        }
        if pane == Pane::Topics {
            self.cursor[Pane::Partitions.index()] = 0;
            self.tail_partition = None;
        }
    }

    fn on_normal_key(&mut self, key: KeyEvent) {
        let Some(action) = self.keymap.action(&key) else {
            return;
        };
        if self.too_small && action != Action::Quit {
            return;
        }
        let tail_action = matches!(
            action,
            Action::Follow
                | Action::PauseTail
                | Action::SeekBeginning
                | Action::SeekEnd
                | Action::SeekOffset
                | Action::SeekTime
                | Action::NextPartition
                | Action::PrevPartition
        );
        if let Some(reason) = self.unavailable(action) {
            return self.hint(reason);
        }
        if tail_action && self.focus != Pane::Messages {
            // Outside the tail, beginning and end are the top and bottom of the list.
            match action {
                Action::SeekBeginning => self.cursor[self.focus.index()] = 0,
                Action::SeekEnd => self.cursor[self.focus.index()] = usize::MAX,
                _ => self.hint("that key works in the Messages pane (5)"),
            }
            return;
        }
        match action {
            Action::Quit => self.quit = true,
            Action::Help => self.mode = Mode::Help,
            Action::NextPane => self.set_focus(self.focus.next()),
            Action::PrevPane => self.set_focus(self.focus.prev()),
            Action::FocusPane(p) => self.set_focus(p),
            Action::Up => self.move_cursor(-1),
            Action::Down => self.move_cursor(1),
            Action::PageUp => self.move_cursor(-10),
            Action::PageDown => self.move_cursor(10),
            Action::Drill => self.drill(),
            Action::Back => self.back(),
            Action::Filter => self.mode = Mode::Filter,
            Action::Produce => self.open_produce(),
            Action::KillBroker => self.broker_command(action),
            Action::StopBroker => self.broker_command(action),
            Action::RestartBroker => self.broker_command(action),
            Action::PauseBroker => self.broker_command(action),
            Action::Rebalance => {
                let topic = matches!(self.focus, Pane::Topics | Pane::Partitions)
                    .then(|| self.selected_topic().map(|t| t.name.clone()))
                    .flatten();
                self.submit(Command::ElectPreferredLeaders { topic });
            }
            Action::CreateTopic => {
                self.mode = Mode::Dialog(Dialog {
                    kind: DialogKind::CreateTopic,
                    title: "Create topic".into(),
                    fields: vec![
                        field("name", "", "letters, digits, . _ -"),
                        field("partitions", "3", ""),
                        field(
                            "replication factor",
                            &self.view.brokers.len().clamp(1, 3).to_string(),
                            "",
                        ),
                        field("cleanup policy", "delete", "delete · compact · compact,delete"),
                    ],
                    focus: 0,
                    error: None,
                });
            }
            Action::DeleteTopic => match self.selected_topic().map(|t| (t.name.clone(), t.internal)) {
                Some((name, true)) => self.hint(&format!(
                    "{name} is an internal topic (the cluster's own state): it cannot be deleted"
                )),
                Some((name, false)) => self.submit_destructive(
                    Command::DeleteTopic { name: name.clone() },
                    format!("Delete topic {name} and all its data?"),
                ),
                None => self.hint("no topic selected"),
            },
            Action::PauseDemo => match self.view.demo {
                Some(true) => self.submit(Command::PauseDemo),
                Some(false) => self.submit(Command::ResumeDemo),
                None => self.hint("this cluster has no demo workload"),
            },
            Action::Follow => {
                if let Some(t) = &mut self.tail {
                    t.follow = !t.follow;
                }
            }
            Action::PauseTail => {
                if let Some(t) = &mut self.tail {
                    t.frozen = match t.frozen.take() {
                        Some(_) => None,
                        None => Some(t.handle.buffer.records()),
                    };
                }
            }
            Action::SeekBeginning => self.seek(SeekPosition::Beginning),
            Action::SeekEnd => self.seek(SeekPosition::End),
            Action::SeekOffset => {
                self.mode = Mode::Dialog(Dialog {
                    kind: DialogKind::SeekOffset,
                    title: "Seek to offset".into(),
                    fields: vec![field("offset", "", "in each partition read")],
                    focus: 0,
                    error: None,
                })
            }
            Action::SeekTime => {
                self.mode = Mode::Dialog(Dialog {
                    kind: DialogKind::SeekTime,
                    title: "Seek to time".into(),
                    fields: vec![field(
                        "time",
                        "",
                        "YYYY-MM-DD HH:MM:SS (local), RFC 3339, or -30s -5m -2h",
                    )],
                    focus: 0,
                    error: None,
                })
            }
            Action::NextPartition | Action::PrevPartition => {
                let count = self.selected_topic().map_or(0, |t| t.partitions);
                let order: Vec<Option<i32>> = std::iter::once(None).chain((0..count).map(Some)).collect();
                let at = order.iter().position(|p| *p == self.tail_partition).unwrap_or(0);
                let step = if action == Action::NextPartition {
                    1
                } else {
                    order.len() - 1
                };
                self.tail_partition = order.get((at + step) % order.len()).copied().flatten();
            }
        }
    }

    fn set_focus(&mut self, pane: Pane) {
        // The timeline opens on its newest event.
        if pane == Pane::Events && self.focus != Pane::Events {
            self.cursor[Pane::Events.index()] = usize::MAX;
        }
        self.focus = pane;
    }

    fn drill(&mut self) {
        match self.focus {
            Pane::Brokers | Pane::Topics => self.focus = Pane::Partitions,
            Pane::Partitions => {
                self.tail_partition = self.selected_partition().map(|p| p.partition);
                self.focus = Pane::Messages;
            }
            Pane::Messages => {
                let messages = self.visible_messages();
                if let Some(r) = messages.get(self.cursor(Pane::Messages)) {
                    self.mode = Mode::Detail(Box::new(r.clone()));
                }
            }
            Pane::Groups | Pane::Events => {}
        }
    }

    fn back(&mut self) {
        let filter = &mut self.filters[self.focus.index()];
        if !filter.is_empty() {
            filter.clear();
            return;
        }
        match self.focus {
            Pane::Partitions => self.focus = Pane::Topics,
            Pane::Messages => {
                if self.tail_partition.is_some() {
                    self.tail_partition = None;
                }
                self.focus = Pane::Partitions;
            }
            _ => {}
        }
    }

    fn broker_command(&mut self, action: Action) {
        let Some(broker) = self.selected_broker().cloned() else {
            return self.hint("no broker selected");
        };
        let id = broker.id;
        let down = matches!(broker.status, BrokerStatus::Stopped | BrokerStatus::Killed);
        match action {
            Action::KillBroker if down => self.hint(&format!("broker {id} is already down")),
            Action::KillBroker => self.submit_destructive(
                Command::KillBroker(id),
                format!("Kill broker {id} (hard crash, no controlled shutdown)?"),
            ),
            Action::StopBroker if down => self.hint(&format!("broker {id} is already down")),
            Action::StopBroker => self.submit_destructive(
                Command::StopBroker(id),
                format!("Stop broker {id} (controlled shutdown: leaders move first)?"),
            ),
            Action::RestartBroker if broker.status == BrokerStatus::Paused => self.submit(Command::ResumeBroker(id)),
            Action::RestartBroker if down => self.submit(Command::StartBroker(id)),
            Action::RestartBroker => self.hint(&format!("broker {id} is running; kill (x) or stop (s) it first")),
            Action::PauseBroker if broker.status == BrokerStatus::Paused => self.submit(Command::ResumeBroker(id)),
            Action::PauseBroker if down => self.hint(&format!("broker {id} is down; restart it with r")),
            Action::PauseBroker => self.submit(Command::PauseBroker(id)),
            _ => {}
        }
    }

    fn open_produce(&mut self) {
        let Some(topic) = self.selected_topic().map(|t| t.name.clone()) else {
            return self.hint("no topic selected");
        };
        let partition = self.tail_partition.map(|p| p.to_string()).unwrap_or_default();
        self.mode = Mode::Dialog(Dialog {
            kind: DialogKind::Produce,
            title: format!("Produce to {topic}"),
            fields: vec![
                field("partition", &partition, "empty: chosen by the key's hash"),
                field("key", "", "empty: no key"),
                field("value", "", ""),
                field("headers", "", "k=v, k2=v2"),
            ],
            focus: 2,
            error: None,
        });
    }

    fn on_dialog_key(&mut self, mut dialog: Dialog, key: KeyEvent) {
        let last = dialog.fields.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc => return,
            KeyCode::Tab | KeyCode::Down => dialog.focus = if dialog.focus >= last { 0 } else { dialog.focus + 1 },
            KeyCode::BackTab | KeyCode::Up => dialog.focus = if dialog.focus == 0 { last } else { dialog.focus - 1 },
            KeyCode::Backspace => {
                if let Some(f) = dialog.fields.get_mut(dialog.focus) {
                    f.value.pop();
                }
            }
            KeyCode::Enter => match self.dialog_command(&dialog) {
                Ok(()) => return,
                Err(e) => dialog.error = Some(e),
            },
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                if let Some(f) = dialog.fields.get_mut(dialog.focus) {
                    f.value.push(c);
                }
            }
            _ => {}
        }
        self.mode = Mode::Dialog(dialog);
    }

    /// Acts on a submitted dialog, or says what is wrong with it.
    fn dialog_command(&mut self, dialog: &Dialog) -> Result<(), String> {
        let value = |i: usize| dialog.fields.get(i).map_or("", |f| f.value.trim());
        match dialog.kind {
            DialogKind::Produce => {
                let topic = self
                    .selected_topic()
                    .map(|t| t.name.clone())
                    .ok_or("no topic selected")?;
                let partition = match value(0) {
                    "" => None,
                    p => Some(
                        p.parse::<i32>()
                            .map_err(|_| format!("partition {p:?} is not a number"))?,
                    ),
                };
                let key = Some(value(1).to_string()).filter(|k| !k.is_empty());
                let headers = parse_headers(value(3))?;
                let value = dialog.fields.get(2).map_or(String::new(), |f| f.value.clone());
                self.submit(Command::Produce(ProduceRequest {
                    topic,
                    partition,
                    key,
                    value,
                    headers,
                }));
            }
            DialogKind::CreateTopic => {
                let name = value(0);
                let valid = !name.is_empty()
                    && name.len() <= 249
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                    && name != "."
                    && name != "..";
                if !valid {
                    return Err("a topic name is 1-249 of letters, digits, '.', '_' and '-'".into());
                }
                let partitions = value(1)
                    .parse::<i32>()
                    .ok()
                    .filter(|p| *p >= 1)
                    .ok_or("partitions must be a number of at least 1")?;
                let replication_factor = value(2)
                    .parse::<i32>()
                    .ok()
                    .filter(|r| *r >= 1)
                    .ok_or("the replication factor must be a number of at least 1")?;
                let cleanup_policy = match value(3).replace(' ', "").to_ascii_lowercase().as_str() {
                    "" | "delete" => "delete",
                    "compact" => "compact",
                    "compact,delete" | "delete,compact" => "compact,delete",
                    _ => return Err("the cleanup policy is delete, compact or compact,delete".into()),
                };
                self.submit(Command::CreateTopic {
                    name: name.to_string(),
                    partitions,
                    replication_factor,
                    cleanup_policy: cleanup_policy.into(),
                });
            }
            DialogKind::SeekOffset => {
                let offset = value(0)
                    .parse::<i64>()
                    .ok()
                    .filter(|o| *o >= 0)
                    .ok_or("an offset is a number of at least 0")?;
                self.seek(SeekPosition::Offset(offset));
            }
            DialogKind::SeekTime => {
                let at = parse_time(value(0), self.view.taken_at.max(Utc::now()), self.tz)?;
                self.seek(SeekPosition::Timestamp(at));
            }
        }
        Ok(())
    }
}

fn field(label: &'static str, value: &str, hint: &'static str) -> Field {
    Field {
        label,
        value: value.to_string(),
        hint,
    }
}

/// `k=v, k2=v2` into header pairs.
pub fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut headers: Vec<(String, String)> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("header {part:?} is not key=value"))?;
        let k = k.trim();
        if k.is_empty() {
            return Err(format!("header {part:?} has no key"));
        }
        if headers.iter().any(|(h, _)| h == k) {
            return Err(format!("header {k:?} is given twice"));
        }
        headers.push((k.to_string(), v.trim().to_string()));
    }
    Ok(headers)
}

/// A local date-time, an RFC 3339 time, or a relative `-30s`, `-5m`, `-2h`, `-1d`.
pub fn parse_time(text: &str, now: DateTime<Utc>, tz: FixedOffset) -> Result<DateTime<Utc>, String> {
    if let Some(rel) = text.strip_prefix('-') {
        let (n, unit) = rel.split_at(rel.find(|c: char| !c.is_ascii_digit()).unwrap_or(rel.len()));
        let n: i64 = n
            .parse()
            .map_err(|_| format!("{text:?}: expected -<number><s|m|h|d>"))?;
        let secs = match unit {
            "s" | "" => n,
            "m" => n.saturating_mul(60),
            "h" => n.saturating_mul(3600),
            "d" => n.saturating_mul(86_400),
            _ => return Err(format!("{text:?}: the unit is s, m, h or d")),
        };
        return chrono::Duration::try_seconds(secs)
            .and_then(|d| now.checked_sub_signed(d))
            .ok_or_else(|| format!("{text:?} is too far back"));
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"] {
        if let Ok(local) = NaiveDateTime::parse_from_str(text, format)
            && let Some(t) = tz.from_local_datetime(&local).single()
        {
            return Ok(t.with_timezone(&Utc));
        }
    }
    Err(format!(
        "{text:?} is not a time: use YYYY-MM-DD HH:MM:SS, RFC 3339 or -30s / -5m / -2h"
    ))
}
