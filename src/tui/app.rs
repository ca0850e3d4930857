//! The console's state and how it changes. Input (a key, a mouse click, a command's outcome,
//! a new view) becomes an [`Action`] with an explicit target; [`App::update`] applies it and
//! returns the [`Effect`]s the event loop is to perform. Nothing here does I/O, and time is a
//! parameter.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, FixedOffset, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use super::Pane;
use super::acls::AclsScreen;
use super::action::{Action, Effect, ExplainTarget, ScenarioControl, SeekBy, TrainerUpdate};
use super::clusters::ClusterChoices;
use super::command;
use super::configs::ConfigsScreen;
use super::keymap::{Binding, Keymap, Meaning};
use super::layout::{FrameLayout, Presentation};
use super::overlay::{Context, Dialog, Overlay};
use super::pane;
use super::theme::{Theme, Themes};
use super::transactions::TransactionsScreen;
use crate::config::ConsoleConfig;
use crate::kafka::reset::{self, ResetSpec};
use crate::view::configs::ConfigsAnswer;
use crate::view::explain::Explanation;
use crate::view::lang::Msg;
use crate::view::reassignments::Reassignments;
use crate::view::{
    BrokerId, BrokerLifecycle, BrokerRow, BrokerStatus, Capabilities, ClusterView, Command, CommandOutcome,
    ConfigTarget, Controls, EventClass, GroupRow, PartitionRow, ReplicaMove, SeekPosition, Severity, TailHandle,
    TailMode, TailRecord, TailSpec, TopicRow, ViewEvent, timeline,
};

/// A row of the Events pane.
#[derive(Debug, Clone, PartialEq)]
pub enum EventRow {
    Event(ViewEvent),
    /// One fault and what followed, as one line.
    Incident {
        at: DateTime<Utc>,
        severity: Severity,
        summary: String,
        events: usize,
        expanded: bool,
    },
    /// An event of the expanded incident that began at the second field.
    Member(ViewEvent, DateTime<Utc>),
}

/// A one-line message in the footer: the last command's outcome or a hint.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub text: String,
    pub severity: Severity,
    /// When it was said: the footer lets it go after a while.
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

/// A whole screen. The dashboard at the bottom; others stack on it and Esc goes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    Dashboard,
    /// One partition's replicated log: a strip per replica (see `replica_log`).
    ReplicaLog {
        topic: String,
        partition: i32,
    },
    /// Records flowing through one partition, on the cluster's clock (see `flow`).
    Flow {
        topic: String,
        partition: i32,
    },
    /// A topic's configs, or the cluster's defaults (see `configs`).
    Configs {
        target: ConfigTarget,
    },
    /// Partition reassignments: each move's progress, and what finished (see `reassign`).
    Reassignments,
    /// The cluster's ACLs (see `acls`).
    Acls,
    /// The transactional ids and their transactions (see `transactions`).
    Transactions,
}

/// A pane's own state: where its cursor is and what it filters by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PaneState {
    pub cursor: usize,
    pub filter: String,
}

/// The message tail of the selected topic.
#[derive(Debug)]
pub struct Tail {
    pub spec: TailSpec,
    /// The running tail, once the event loop has started it.
    pub handle: Option<TailHandle>,
    /// Keep the newest record selected.
    pub follow: bool,
    /// A frozen copy while paused.
    pub frozen: Option<Vec<TailRecord>>,
    pub seen_version: u64,
    /// The selected record (partition, offset): the cursor stays on it while records arrive,
    /// fall out of a ring, or a window moves.
    pub selected: Option<(i32, i64)>,
    /// While a search runs (or shows its matches): the tail to go back to.
    pub before_search: Option<TailSpec>,
}

impl Tail {
    pub fn records(&self) -> Vec<TailRecord> {
        match (&self.frozen, &self.handle) {
            (Some(r), _) => r.clone(),
            (None, Some(h)) => h.buffer.records(),
            (None, None) => Vec::new(),
        }
    }

    /// Why the tail cannot read, if it cannot.
    pub fn error(&self) -> Option<String> {
        self.handle.as_ref().and_then(|h| h.buffer.error())
    }

    /// A search's progress: records scanned, matched, and whether it reached the end.
    pub fn search_progress(&self) -> Option<(u64, u64, bool)> {
        let h = self.handle.as_ref()?;
        self.before_search
            .is_some()
            .then(|| (h.buffer.scanned(), h.buffer.matched(), h.buffer.is_done()))
    }

    /// Whether the window is full: the reader waits for room.
    fn window_full(&self) -> bool {
        self.spec.mode == TailMode::Window && self.handle.as_ref().is_some_and(|h| h.buffer.room() == 0)
    }

    /// Where the log of `partition` started when the tail began.
    fn log_start(&self, partition: i32) -> Option<i64> {
        let h = self.handle.as_ref()?;
        h.buffer
            .log_starts()
            .into_iter()
            .find(|(p, _)| *p == partition)
            .map(|(_, s)| s)
    }
}

/// Watches the console from outside, unknown to it: every action [`App::update`] applied,
/// with the effects it asked for, and every view the console was given. Recording a session
/// (`kdeck record`) is one such observer.
pub trait Observer: Send {
    fn action(&mut self, now: DateTime<Utc>, action: &Action, effects: &[Effect]);
    fn view(&mut self, now: DateTime<Utc>, view: &ClusterView);
}

pub struct App {
    /// What the source lets the console do (asked once: it does not change).
    pub capabilities: Capabilities,
    pub view: Arc<ClusterView>,
    pub keymap: Keymap,
    /// The theme of the layout shown (one of `themes`).
    pub theme: Theme,
    pub themes: Themes,
    pub console: ConsoleConfig,
    pub tz: FixedOffset,
    pub log_path: Option<PathBuf>,
    pub screens: Vec<Screen>,
    /// Bottom first; the topmost one that takes keys gets them.
    pub overlays: Vec<Overlay>,
    pub focus: Pane,
    /// The focused pane takes the whole body.
    pub maximized: bool,
    pub presentation: Presentation,
    pub panes: BTreeMap<Pane, PaneState>,
    pub status: Option<Status>,
    pub tail: Option<Tail>,
    /// The partition the message tail reads; `None` for all.
    pub tail_partition: Option<i32>,
    /// The message tail reads as a read_committed consumer (toggled with the isolation key).
    pub read_committed: bool,
    /// The console's own timeline entries: actions that failed.
    pub notes: VecDeque<ViewEvent>,
    /// The incidents (by when they began) shown with their events.
    pub expanded: BTreeSet<DateTime<Utc>>,
    /// Where the last frame put each pane (kept by the event loop, for mouse clicks), and
    /// whether it was too small to show the console.
    pub layout: FrameLayout,
    pub quit: bool,
    /// Who watches the console from outside (`kdeck record`), if anyone.
    pub observer: Option<Box<dyn Observer>>,
    /// The scenario being presented (trainer mode), if any.
    pub trainer: Option<Trainer>,
    /// The language of the console's words: a scenario's (`--lang`), else English.
    pub lang: &'static crate::view::lang::Lang,
    /// The clock and settings the toggles asked for, in order, after the view's controls
    /// when the first was asked: quick presses build on what was asked, not on a view that
    /// has not caught up yet. Empty once the view shows the last of them (or something else).
    asked: Vec<Controls>,
    /// The `:` lines run so far, for ↑/↓ on the command line.
    pub history: super::command::History,
    /// The configs screen's state while it is open.
    pub configs: Option<ConfigsScreen>,
    /// Every partition move seen since the console started, followed view by view (the
    /// reassignments screen lists them).
    pub reassignments: Reassignments,
    /// The selected row of the reassignments screen.
    pub moves_cursor: usize,
    /// The ACL screen's state while it is open.
    pub acls: Option<AclsScreen>,
    /// The transactions screen's state while it is open.
    pub transactions: Option<TransactionsScreen>,
    /// The clusters this console may switch to; `None`: it cannot switch (a scenario, a
    /// recording, a test).
    pub clusters: Option<ClusterChoices>,
}

/// What trainer mode shows of the running scenario: the step's caption, the rule behind it,
/// its commands and its checks, in the caption overlay.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trainer {
    pub title: String,
    pub steps: usize,
    /// The step shown (0-based); `None` before the first.
    pub step: Option<usize>,
    pub caption: String,
    pub why: Option<String>,
    pub commands: Vec<String>,
    pub checks: Vec<(String, Option<bool>)>,
    /// A step is running (its actions, its wait).
    pub running: bool,
    pub playing: bool,
    /// Going back: replaying from the start to this step (1-based; 0: the start, before
    /// any step).
    pub replaying: Option<usize>,
    pub passed: Option<bool>,
}

impl Trainer {
    /// The caption overlay's title and text, in `lang`.
    pub fn caption_text(&self, keymap: &Keymap, lang: &crate::view::lang::Lang) -> (String, String) {
        let finished = self.step.is_some_and(|i| i + 1 >= self.steps) && !self.running;
        let state = if let Some(to) = self.replaying {
            if to == 0 {
                lang.tr("going back to the start…").to_string()
            } else {
                lang.fmt("going back: replaying to step {step}…", &[("step", &to)])
            }
        } else if self.running {
            lang.tr("running…").to_string()
        } else if self.playing && !finished {
            lang.tr("▶ playing").to_string()
        } else {
            match self.passed {
                Some(false) => lang.tr("✗ a check failed").to_string(),
                _ => String::new(),
            }
        };
        let step = self
            .step
            .map_or_else(|| format!("0/{}", self.steps), |i| format!("{}/{}", i + 1, self.steps));
        let title = format!("[{step}] {}  {state}", self.title);
        let key = |b: Binding| keymap.hint(b);
        let mut lines: Vec<String> = Vec::new();
        if self.step.is_none() {
            lines.push(lang.fmt("Press {key} to begin.", &[("key", &key(Binding::NextStep))]));
        } else {
            lines.extend(self.caption.lines().map(str::to_string));
            if let Some(why) = &self.why {
                lines.push(lang.fmt("why: {why}", &[("why", why)]));
            }
            lines.extend(self.commands.iter().cloned());
            for (what, holds) in &self.checks {
                let mark = match holds {
                    Some(true) => "✓",
                    Some(false) => "✗",
                    None => "…",
                };
                lines.push(format!("{mark} {what}"));
            }
        }
        lines.push(if finished {
            lang.fmt(
                "the end · {back} back · {explain} explain · {quit} quit",
                &[
                    ("back", &key(Binding::PrevStep)),
                    ("explain", &key(Binding::Explain)),
                    ("quit", &key(Binding::Quit)),
                ],
            )
        } else {
            lang.fmt(
                "{next} next · {back} back · {play} play/pause · {explain} explain",
                &[
                    ("next", &key(Binding::NextStep)),
                    ("back", &key(Binding::PrevStep)),
                    ("play", &key(Binding::PlayScenario)),
                    ("explain", &key(Binding::Explain)),
                ],
            )
        });
        (title, lines.join("\n"))
    }
}

impl App {
    /// The app on its first view. Call [`App::set_view`] (or [`App::start`]) for the effects
    /// of the first selection.
    pub fn new(
        capabilities: Capabilities,
        view: Arc<ClusterView>,
        keymap: Keymap,
        theme: Theme,
        console: ConsoleConfig,
        tz: FixedOffset,
        log_path: Option<PathBuf>,
    ) -> App {
        let presentation = console.layout;
        let mut reassignments = Reassignments::default();
        reassignments.observe(&view);
        App {
            capabilities,
            view,
            keymap,
            themes: Themes::same(theme.clone()),
            theme,
            console,
            tz,
            log_path,
            screens: vec![Screen::Dashboard],
            overlays: Vec::new(),
            focus: Pane::Brokers,
            maximized: false,
            presentation,
            panes: BTreeMap::new(),
            status: None,
            tail: None,
            tail_partition: None,
            read_committed: false,
            notes: VecDeque::new(),
            expanded: BTreeSet::new(),
            layout: FrameLayout::default(),
            quit: false,
            observer: None,
            trainer: None,
            lang: crate::view::lang::Lang::english(),
            asked: Vec::new(),
            history: Default::default(),
            configs: None,
            reassignments,
            moves_cursor: 0,
            acls: None,
            transactions: None,
            clusters: None,
        }
    }

    /// The app with a theme for each layout (see [`Themes`]).
    pub fn with_themes(mut self, themes: Themes) -> App {
        self.theme = themes.of(self.presentation).clone();
        self.themes = themes;
        self
    }

    /// Whether the projector layout is on.
    pub fn projector(&self) -> bool {
        self.presentation == Presentation::Projector
    }

    /// The effects of the initial state (the tail of the first topic).
    pub fn start(&mut self) -> Vec<Effect> {
        let mut effects = Vec::new();
        self.ensure_tail(&mut effects);
        effects
    }

    /// The screen on top.
    pub fn screen(&self) -> &Screen {
        self.screens.last().unwrap_or(&Screen::Dashboard)
    }

    /// The topmost overlay that takes keys.
    pub fn overlay(&self) -> Option<&Overlay> {
        self.overlays.iter().rev().find(|o| o.takes_keys())
    }

    fn overlay_mut(&mut self) -> Option<&mut Overlay> {
        self.overlays.iter_mut().rev().find(|o| o.takes_keys())
    }

    /// Removes the topmost overlay that takes keys.
    fn close_overlay(&mut self) -> Option<Overlay> {
        let i = self.overlays.iter().rposition(|o| o.takes_keys())?;
        Some(self.overlays.remove(i))
    }

    pub fn pane(&self, pane: Pane) -> PaneState {
        self.panes.get(&pane).cloned().unwrap_or_default()
    }

    fn pane_mut(&mut self, pane: Pane) -> &mut PaneState {
        self.panes.entry(pane).or_default()
    }

    pub fn filter(&self, pane: Pane) -> &str {
        self.panes.get(&pane).map_or("", |s| s.filter.as_str())
    }

    pub fn set_view(&mut self, view: Arc<ClusterView>) -> Vec<Effect> {
        // The selection follows the topic, not its row, when topics come and go.
        let selected = self.selected_topic().map(|t| t.name.clone());
        self.reassignments.observe(&view);
        self.view = view;
        self.forget_asked_controls();
        if let Some(name) = selected
            && let Some(i) = self.visible_topics().iter().position(|t| t.name == name)
        {
            self.pane_mut(Pane::Topics).cursor = i;
        }
        let mut effects = Vec::new();
        self.ensure_tail(&mut effects);
        effects
    }

    /// A command's outcome, said in the footer; a config change also refreshes the configs
    /// screen it was made for.
    pub fn on_outcome(&mut self, outcome: CommandOutcome, now: DateTime<Utc>) -> Vec<Effect> {
        let mut effects = Vec::new();
        if let (Command::AlterConfigs { topic, .. }, Some(screen)) = (&outcome.command, &self.configs)
            && screen.is_answered_for(topic.as_deref())
        {
            effects.push(Effect::DescribeConfigs(screen.target.clone()));
        }
        self.tell_outcome(outcome, now);
        effects
    }

    fn tell_outcome(&mut self, outcome: CommandOutcome, now: DateTime<Utc>) {
        if outcome.result.is_err() {
            // What was asked will not come: the next toggle builds on the view again.
            self.asked.clear();
        }
        // The sources answer in English; the footer and Events say it in the console's
        // language.
        match outcome.result {
            Ok(text) => {
                let said = self.lang.sentence(&text);
                self.say(said, Severity::Info, now)
            }
            Err(e) => {
                // In full in the timeline too: the footer cuts long reasons and lets them go.
                let msg = Msg::new("{command} failed: {reason}")
                    .with_sentence("command", outcome.command.to_string())
                    .with_sentence("reason", e);
                let said = self.lang.say(&msg);
                if self.notes.len() >= self.console.event_history.max(1) {
                    self.notes.pop_front();
                }
                self.notes.push_back(ViewEvent {
                    at: now,
                    cluster_at: now,
                    severity: Severity::Error,
                    text: msg.english(),
                    msg: Some(msg),
                    class: EventClass::Other,
                });
                self.say(said, Severity::Error, now);
            }
        }
    }

    /// The answer the event loop asked for with [`Effect::DescribeConfigs`].
    pub fn attach_configs(&mut self, target: &ConfigTarget, answer: tokio::sync::oneshot::Receiver<ConfigsAnswer>) {
        if let Some(screen) = &mut self.configs
            && &screen.target == target
        {
            screen.attach(answer);
        }
    }

    /// The answer the event loop asked for with [`Effect::DescribeTransactions`].
    pub fn attach_transactions(
        &mut self,
        answer: tokio::sync::oneshot::Receiver<crate::view::transactions::TransactionsAnswer>,
    ) {
        if let Some(screen) = &mut self.transactions {
            screen.attach(answer);
        }
    }

    /// The answer the event loop asked for with [`Effect::DescribeAcls`].
    pub fn attach_acls(&mut self, answer: tokio::sync::oneshot::Receiver<crate::view::acls::AclsAnswer>) {
        if let Some(screen) = &mut self.acls {
            screen.attach(answer);
        }
    }

    /// The answer to [`Effect::SwitchCluster`]: on success the console starts again on the
    /// new cluster (its capabilities and first view; the dashboard, no filters, a new tail),
    /// on failure it stays where it is and says why.
    pub fn switched(
        &mut self,
        name: &str,
        result: Result<(Capabilities, Arc<ClusterView>), String>,
        now: DateTime<Utc>,
    ) -> Vec<Effect> {
        if let Some(choices) = &mut self.clusters {
            choices.connecting = None;
        }
        match result {
            Ok((capabilities, view)) => {
                self.capabilities = capabilities;
                self.view = view;
                self.screens = vec![Screen::Dashboard];
                self.overlays.retain(|o| matches!(o, Overlay::Caption { .. }));
                self.configs = None;
                self.acls = None;
                self.transactions = None;
                self.tail = None;
                self.tail_partition = None;
                self.panes.clear();
                self.asked.clear();
                self.expanded.clear();
                if let Some(choices) = &mut self.clusters {
                    choices.current = Some(name.to_string());
                }
                let text = self.lang.fmt("switched to {name}", &[("name", &name)]);
                self.say(text, Severity::Info, now);
                self.start()
            }
            Err(reason) => {
                let text = self.lang.fmt(
                    "cannot switch to {name}: {reason}; staying here",
                    &[("name", &name), ("reason", &reason)],
                );
                self.say(text, Severity::Error, now);
                Vec::new()
            }
        }
    }

    /// What the filter line filters: the ACL screen's list when it is open, else the
    /// focused pane; its name and text.
    pub fn filtering(&self) -> (String, &str) {
        match (self.screen(), &self.acls) {
            (Screen::Acls, Some(screen)) => (self.lang.tr("ACLs").to_string(), screen.filter.as_str()),
            _ => (self.lang.tr(self.focus.title()).to_string(), self.filter(self.focus)),
        }
    }

    /// A tail the event loop started for [`Effect::Tail`].
    pub fn attach_tail(&mut self, handle: TailHandle) {
        if let Some(tail) = &mut self.tail
            && tail.spec == handle.spec
        {
            tail.handle = Some(handle);
            tail.seen_version = 0;
        }
    }

    /// Why the console does not offer `binding`, if it does not: hidden by read-only, or not
    /// available from this source.
    pub fn unavailable(&self, binding: Binding) -> Option<&'static str> {
        let membership = matches!(binding, Binding::AddBroker | Binding::DecommissionBroker);
        self.why_not(
            binding.mutates(),
            binding.controls_broker(),
            binding == Binding::PauseDemo,
        )
        .map(|why| self.membership_refusal(membership, why))
        .or_else(|| (binding.trainer() && self.view.controls.is_none()).then_some(NO_CONTROLS))
        .or_else(|| (binding == Binding::Clusters && self.clusters.is_none()).then_some(NO_SWITCH))
    }

    /// Why the console refuses `action`, whoever asked for it.
    fn refused(&self, action: &Action) -> Option<&'static str> {
        let demo = matches!(action, Action::PauseDemo | Action::ResumeDemo);
        self.why_not(action.mutates(), action.controls_broker(), demo)
            .map(|why| self.membership_refusal(action.changes_membership(), why))
    }

    /// A source that cannot control brokers cannot add or remove one either: that refusal
    /// says what can be done instead (`:reassign drain`).
    fn membership_refusal(&self, membership: bool, why: &'static str) -> &'static str {
        if membership && self.capabilities.broker_control.is_err() && why != READ_ONLY {
            NO_BROKER_MEMBERSHIP
        } else {
            why
        }
    }

    /// The one rule behind both: read-only hides what changes the cluster, the source may
    /// not control brokers, and only a cluster with a demo can pause it.
    fn why_not(&self, mutates: bool, controls_broker: bool, demo: bool) -> Option<&'static str> {
        if self.capabilities.read_only && mutates {
            return Some(READ_ONLY);
        }
        if controls_broker {
            return self.capabilities.broker_control.err();
        }
        if demo && !self.capabilities.demo {
            return Some(NO_DEMO);
        }
        None
    }

    /// Periodic check; true when the screen must be redrawn (new tail records).
    pub fn on_tick(&mut self) -> bool {
        let configs = self.configs.as_mut().is_some_and(ConfigsScreen::poll);
        let acls = self.acls.as_mut().is_some_and(AclsScreen::poll);
        let transactions = self.transactions.as_mut().is_some_and(TransactionsScreen::poll);
        configs | acls | transactions | self.tail_changed()
    }

    fn tail_changed(&mut self) -> bool {
        let Some(tail) = &mut self.tail else {
            return false;
        };
        let Some(handle) = &tail.handle else {
            return false;
        };
        if tail.frozen.is_some() {
            return false;
        }
        let version = handle.buffer.version();
        let changed = version != tail.seen_version;
        tail.seen_version = version;
        changed
    }

    // ---- what each pane lists (after its filter) ----

    pub fn visible_brokers(&self) -> Vec<&BrokerRow> {
        let f = self.filter(Pane::Brokers);
        self.view
            .brokers
            .iter()
            .filter(|b| {
                f.is_empty()
                    || b.id.to_string().contains(f)
                    || b.status.label().contains(f)
                    || self.lang.tr(b.status.label()).contains(f)
            })
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

    /// The cluster's timeline with the console's own notes (failed actions) among it, by time,
    /// each run of refused produces one line (the view keeps every refusal, for the scenario
    /// player and recordings; the room needs the count).
    pub fn timeline(&self) -> Vec<ViewEvent> {
        let mut events: Vec<ViewEvent> = self.view.events.iter().chain(self.notes.iter()).cloned().collect();
        events.sort_by_key(|e| e.at);
        timeline::fold_refusals(events)
    }

    /// The rows of the Events pane: each fault's incident as one row (its events below it
    /// when expanded), other events as they are (in the projector layout only elections and
    /// partitions gone offline: a room follows the incidents and who leads). A filter lists
    /// matching events flat.
    pub fn event_rows(&self) -> Vec<EventRow> {
        let events = self.timeline();
        let f = self.filter(Pane::Events);
        if !f.is_empty() {
            // What the pane shows matches, and the English words too.
            return events
                .into_iter()
                .filter(|e| e.text.contains(f) || super::events::said(self.lang, e).contains(f))
                .map(EventRow::Event)
                .collect();
        }
        let incidents = timeline::incidents(&events);
        let mut owner: Vec<Option<usize>> = vec![None; events.len()];
        for (n, incident) in incidents.iter().enumerate() {
            for &i in &incident.members {
                if let Some(slot) = owner.get_mut(i) {
                    *slot = Some(n);
                }
            }
        }
        let mut rows = Vec::new();
        for (i, event) in events.iter().enumerate() {
            match owner[i].and_then(|n| incidents.get(n).map(|inc| (n, inc))) {
                None if self.projector()
                    && !matches!(event.class, EventClass::LeaderMoved { .. } | EventClass::Offline { .. }) => {}
                None => rows.push(EventRow::Event(event.clone())),
                Some((_, incident)) if incident.members.first() == Some(&i) => {
                    let expanded = self.expanded.contains(&incident.at);
                    let summary = if self.lang.is_english() {
                        incident.summary.clone()
                    } else {
                        incident.summary_in(self.lang, &super::events::said(self.lang, event))
                    };
                    rows.push(EventRow::Incident {
                        at: incident.at,
                        severity: incident.severity,
                        summary,
                        events: incident.members.len(),
                        expanded,
                    });
                    if expanded {
                        rows.extend(
                            incident
                                .members
                                .iter()
                                .filter_map(|m| events.get(*m))
                                .map(|e| EventRow::Member(e.clone(), incident.at)),
                        );
                    }
                }
                Some(_) => {}
            }
        }
        rows
    }

    /// The cursor of a pane, clamped to its list.
    pub fn cursor(&self, pane: Pane) -> usize {
        if pane == Pane::Messages {
            return self.message_cursor(&self.visible_messages());
        }
        let len = pane::view_of(pane).rows(self);
        self.pane(pane).cursor.min(len.saturating_sub(1))
    }

    /// The cursor among `messages` (the visible ones): the newest while following, else the
    /// selected record's row (or the first after it, if it was filtered or compacted away).
    pub fn message_cursor(&self, messages: &[TailRecord]) -> usize {
        let last = messages.len().saturating_sub(1);
        let Some(tail) = &self.tail else {
            return 0;
        };
        if tail.follow {
            return last;
        }
        match tail.selected {
            Some((p, o)) => messages
                .iter()
                .position(|r| r.partition == p && r.offset >= o)
                .unwrap_or(self.pane(Pane::Messages).cursor.min(last)),
            None => self.pane(Pane::Messages).cursor.min(last),
        }
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
    fn ensure_tail(&mut self, effects: &mut Vec<Effect>) {
        let Some(topic) = self.selected_topic().map(|t| t.name.clone()) else {
            self.tail = None;
            return;
        };
        let current = self.tail.as_ref().map(|t| &t.spec);
        if current.is_some_and(|s| s.topic == topic && s.partition == self.tail_partition) {
            return;
        }
        self.start_tail(
            TailSpec::ring(
                topic,
                self.tail_partition,
                SeekPosition::Last(self.console.tail_start_last),
            ),
            effects,
        );
    }

    fn start_tail(&mut self, mut spec: TailSpec, effects: &mut Vec<Effect>) {
        spec.read_committed = self.read_committed;
        self.tail = Some(Tail {
            spec: spec.clone(),
            handle: None,
            follow: spec.mode == TailMode::Ring,
            frozen: None,
            seen_version: 0,
            selected: None,
            before_search: None,
        });
        effects.push(Effect::Tail {
            spec,
            capacity: self.console.tail_capacity,
        });
    }

    fn hint(&mut self, text: &str, now: DateTime<Utc>) {
        self.say(text.to_string(), Severity::Warn, now);
    }

    /// A note in the footer.
    fn say(&mut self, text: String, severity: Severity, now: DateTime<Utc>) {
        self.status = Some(Status {
            text,
            severity,
            at: now,
        });
    }

    // ---- input: keys and the mouse become actions ----

    pub fn on_mouse(&mut self, event: MouseEvent, now: DateTime<Utc>) -> Vec<Effect> {
        let action = match event.kind {
            MouseEventKind::ScrollDown => Some(Action::Move { by: 1 }),
            MouseEventKind::ScrollUp => Some(Action::Move { by: -1 }),
            MouseEventKind::Down(MouseButton::Left) if self.overlay().is_none() => {
                self.layout.hit(event.column, event.row).map(|(pane, row)| match row {
                    Some(row) => Action::Select { pane, row },
                    None => Action::Focus { pane },
                })
            }
            _ => None,
        };
        match action {
            Some(a) => self.update(a, now),
            None => Vec::new(),
        }
    }

    /// What the running scenario said: the trainer state, and the caption that shows it.
    pub fn on_trainer(&mut self, update: TrainerUpdate, now: DateTime<Utc>) -> Vec<Effect> {
        let mut effects = Vec::new();
        let t = self.trainer.get_or_insert_with(Trainer::default);
        match update {
            TrainerUpdate::Loaded { title, steps, lang } => {
                self.lang = crate::view::lang::Lang::get(lang.as_deref());
                *t = Trainer {
                    title,
                    steps,
                    playing: t.playing,
                    replaying: t.replaying,
                    ..Trainer::default()
                };
            }
            TrainerUpdate::Step { index, caption, why } => {
                t.step = Some(index);
                t.caption = caption;
                t.why = why;
                t.commands.clear();
                t.checks.clear();
                t.running = true;
                t.passed = None;
            }
            // The sources answer in English; the caption says it in the scenario's language.
            TrainerUpdate::Command { text, outcome } => t.commands.push(match outcome {
                Ok(said) => format!("> {}", self.lang.sentence(&said)),
                Err(e) => format!("> {}: {}", self.lang.sentence(&text), self.lang.sentence(&e)),
            }),
            TrainerUpdate::Checks(checks) => t.checks = checks,
            TrainerUpdate::Ended { passed } => {
                t.running = false;
                t.passed = Some(passed);
            }
            TrainerUpdate::Playing(p) => t.playing = p,
            TrainerUpdate::Replaying { to } => {
                t.replaying = Some(to.map_or(0, |i| i + 1));
                t.running = true;
            }
            TrainerUpdate::Ready => {
                t.replaying = None;
                t.running = false;
            }
            TrainerUpdate::Source(_) => {}
            TrainerUpdate::Console(action) => effects.extend(self.update(action, now)),
        }
        if let Some(t) = &self.trainer {
            let (title, text) = t.caption_text(&self.keymap, self.lang);
            effects.extend(self.update(Action::Caption { title, text }, now));
        }
        effects
    }

    pub fn on_key(&mut self, key: KeyEvent, now: DateTime<Utc>) -> Vec<Effect> {
        if self.layout.too_small {
            // Nothing is answered unseen: an overlay opened before the terminal shrank closes
            // only with Esc, and of the other keys only quit works.
            if self.overlay().is_some() {
                if key.code == KeyCode::Esc {
                    self.close_overlay();
                }
                return Vec::new();
            }
            return match self.keymap.binding(&key) {
                Some(Binding::Quit) => self.update(Action::Quit, now),
                _ => Vec::new(),
            };
        }
        if let Some(effects) = self.scenario_key(&key, now) {
            return effects;
        }
        if let Some(Overlay::Filter) = self.overlay() {
            return self.filter_key(key, now);
        }
        if self.overlay().is_none()
            && matches!(self.screen(), Screen::Configs { .. })
            && let Some(effects) = self.configs_key(&key, now)
        {
            return effects;
        }
        if self.overlay().is_none()
            && self.screen() == &Screen::Reassignments
            && let Some(effects) = self.reassign_key(&key, now)
        {
            return effects;
        }
        if let Some(Overlay::Command(_)) = self.overlay() {
            return self.command_key(key, now);
        }
        let action = match self.overlay_mut() {
            Some(overlay) => match overlay_key(overlay, key) {
                OverlayKey::Act(action) => Some(action),
                OverlayKey::Submit => self.submit_dialog(now),
                OverlayKey::Kept => None,
            },
            None => match self.keymap.binding(&key).map(|b| self.resolve(b)) {
                Some(Ok(action)) => Some(action),
                Some(Err(hint)) => {
                    self.hint(&hint, now);
                    None
                }
                None => None,
            },
        };
        match action {
            Some(a) => self.update(a, now),
            None => Vec::new(),
        }
    }

    /// A scenario's keys (next, back, play) work on every screen and over every popup that
    /// only shows something (help, an explanation, a record's detail); not in a dialog, a
    /// confirmation or the filter line, where keys are typed. Going on or back closes those
    /// popups: they belong to the step that was shown.
    fn scenario_key(&mut self, key: &KeyEvent, now: DateTime<Utc>) -> Option<Vec<Effect>> {
        self.trainer.as_ref()?;
        let control = match self.keymap.binding(key)? {
            Binding::NextStep => ScenarioControl::Next,
            Binding::PrevStep => ScenarioControl::Previous,
            Binding::PlayScenario => ScenarioControl::TogglePlay,
            _ => return None,
        };
        let shows_only = |o: &Overlay| matches!(o, Overlay::Help { .. } | Overlay::Explain { .. } | Overlay::Detail(_));
        if self.overlay().is_some_and(|o| !shows_only(o)) {
            return None;
        }
        if control != ScenarioControl::TogglePlay {
            self.overlays.retain(|o| !shows_only(o));
        }
        Some(self.update(Action::Scenario { control }, now))
    }

    /// The filter line: typing filters the focused pane as it goes; Enter keeps the filter,
    /// Esc clears it.
    fn filter_key(&mut self, key: KeyEvent, now: DateTime<Utc>) -> Vec<Effect> {
        if matches!(self.screen(), Screen::Acls)
            && let Some(screen) = &mut self.acls
        {
            let mut text = screen.filter.clone();
            match key.code {
                KeyCode::Esc => text.clear(),
                KeyCode::Enter => {}
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
                _ => return Vec::new(),
            }
            screen.set_filter(text);
            if matches!(key.code, KeyCode::Esc | KeyCode::Enter) {
                return self.update(Action::Close, now);
            }
            return Vec::new();
        }
        let pane = self.focus;
        let mut text = self.filter(pane).to_string();
        match key.code {
            KeyCode::Esc => {
                let mut effects = self.update(
                    Action::Filter {
                        pane,
                        text: String::new(),
                    },
                    now,
                );
                effects.extend(self.update(Action::Close, now));
                if pane == Pane::Messages {
                    effects.extend(self.update(Action::StopSearch, now));
                }
                effects
            }
            // In Messages, Enter searches the whole partition (or all) from the cursor on.
            KeyCode::Enter if pane == Pane::Messages && !text.is_empty() => {
                let mut effects = self.update(Action::Close, now);
                effects.extend(self.update(Action::Search { text }, now));
                effects
            }
            KeyCode::Enter => self.update(Action::Close, now),
            KeyCode::Backspace => {
                text.pop();
                self.update(Action::Filter { pane, text }, now)
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                text.push(c);
                self.update(Action::Filter { pane, text }, now)
            }
            _ => Vec::new(),
        }
    }

    /// The `:` command line: typing edits it, Tab completes, ↑/↓ go through the lines run
    /// before, Enter runs it (or says in place what is wrong and keeps it), Esc closes it.
    fn command_key(&mut self, key: KeyEvent, now: DateTime<Utc>) -> Vec<Effect> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let Some(Overlay::Command(line)) = self.overlays.last().cloned() else {
            return Vec::new();
        };
        let mut line = line;
        match key.code {
            KeyCode::Esc => return self.update(Action::Close, now),
            KeyCode::Enter => {
                let cx = command::Context {
                    view: &self.view,
                    focus: self.focus,
                    now: self.view.taken_at.max(now),
                    tz: self.tz,
                };
                let parsed = command::parse(&line.text, &cx).and_then(|action| match self.refused(&action) {
                    Some(reason) => Err(reason.to_string()),
                    None if needs_controls(&action) && self.view.controls.is_none() => Err(NO_CONTROLS.to_string()),
                    None => Ok(action),
                });
                match parsed {
                    Ok(action) => {
                        self.history.push(&line.text);
                        let mut effects = self.update(Action::Close, now);
                        effects.extend(self.update(action, now));
                        return effects;
                    }
                    Err(e) => {
                        line.error = Some(e);
                        line.offered.clear();
                    }
                }
            }
            KeyCode::Tab => {
                let clusters = self.clusters.as_ref().map_or(&[][..], |c| c.names.as_slice());
                line.offered = command::completions(&line.text, &self.view, clusters);
                line.text = command::complete(&line.text, &line.offered);
                line.error = None;
            }
            KeyCode::Up => {
                let back = line.history_at.map_or(0, |b| b + 1);
                if let Some(text) = self.history.get(back) {
                    line.text = text.to_string();
                    line.history_at = Some(back);
                }
            }
            KeyCode::Down => match line.history_at {
                Some(0) | None => {
                    line.history_at = None;
                    line.text.clear();
                }
                Some(back) => {
                    line.history_at = Some(back - 1);
                    line.text = self.history.get(back - 1).unwrap_or_default().to_string();
                }
            },
            KeyCode::Backspace => {
                line.text.pop();
            }
            KeyCode::Char('u') if ctrl => line.text.clear(),
            KeyCode::Char('w') if ctrl => {
                let kept = line.text.trim_end().rfind(char::is_whitespace).map_or(0, |i| i + 1);
                line.text.truncate(kept);
            }
            KeyCode::Char(c) if !ctrl => {
                line.text.push(c);
                line.error = None;
                line.offered.clear();
            }
            _ => {}
        }
        if let Some(Overlay::Command(open)) = self.overlays.last_mut() {
            *open = line;
        }
        Vec::new()
    }

    /// The configs screen's own keys: the edit line while it is open, Enter to open it, `d`
    /// to remove the selected override. `None`: the keymap decides (moving, back, help).
    fn configs_key(&mut self, key: &KeyEvent, now: DateTime<Utc>) -> Option<Vec<Effect>> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let screen = self.configs.as_mut()?;
        if let Some(text) = &mut screen.editing {
            match key.code {
                KeyCode::Esc => screen.editing = None,
                KeyCode::Enter => {
                    let value = text.trim().to_string();
                    screen.editing = None;
                    let name = screen.selected()?.name.clone();
                    let action = Action::AlterConfigs {
                        topic: screen.topic(),
                        set: vec![(name, value)],
                        delete: Vec::new(),
                    };
                    return Some(self.update(action, now));
                }
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char('u') if ctrl => text.clear(),
                KeyCode::Char(c) if !ctrl => text.push(c),
                _ => {}
            }
            return Some(Vec::new());
        }
        let edit = match key.code {
            KeyCode::Enter => true,
            KeyCode::Char('d') if key.modifiers.is_empty() => false,
            _ => return None,
        };
        let lang = self.lang;
        let why_not = match screen.selected() {
            _ if self.capabilities.read_only => Some(READ_ONLY.to_string()),
            None => Some(lang.tr("no config selected").to_string()),
            Some(row) if row.read_only => Some(lang.fmt(
                "{name} is read-only: only a restart of the brokers changes it",
                &[("name", &row.name)],
            )),
            Some(row) if !edit && !screen.removable(row) => Some(lang.fmt(
                "{name} is not overridden here ({source}): there is nothing to remove",
                &[("name", &row.name), ("source", &lang.tr(row.origin.word()))],
            )),
            Some(_) => None,
        };
        if let Some(why) = why_not {
            self.hint(&why, now);
            return Some(Vec::new());
        }
        let row = screen.selected()?.clone();
        if edit {
            screen.editing = Some(row.value.unwrap_or_default());
            return Some(Vec::new());
        }
        let action = Action::AlterConfigs {
            topic: screen.topic(),
            set: Vec::new(),
            delete: vec![row.name],
        };
        Some(self.update(action, now))
    }

    /// The reassignments screen's own keys: plan a move (the command line opens with
    /// `:reassign drain `, `balance`, `rf TOPIC `, `move `: the plan is confirmed as a diff as
    /// always), cancel the selected move (x, Delete) or all (c). `None`: the keymap decides;
    /// the keys it binds to what the screen needs (moving, back, help, the command line)
    /// keep their meaning whatever letters they are.
    fn reassign_key(&mut self, key: &KeyEvent, now: DateTime<Utc>) -> Option<Vec<Effect>> {
        if !key.modifiers.difference(KeyModifiers::SHIFT).is_empty() {
            return None;
        }
        if let Some(
            Binding::Quit
            | Binding::Back
            | Binding::Help
            | Binding::Up
            | Binding::Down
            | Binding::PageUp
            | Binding::PageDown
            | Binding::Command
            | Binding::Explain
            | Binding::Reassignments,
        ) = self.keymap.binding(key)
        {
            return None;
        }
        let lang = self.lang;
        let text = match key.code {
            KeyCode::Char('d') => "reassign drain ".to_string(),
            KeyCode::Char('b') => "reassign balance".to_string(),
            KeyCode::Char('m') => "reassign move ".to_string(),
            KeyCode::Char('c') => "reassign cancel all".to_string(),
            KeyCode::Char('r') => {
                let topic = self
                    .selected_move()
                    .map(|m| m.topic.clone())
                    .or_else(|| self.selected_topic().filter(|t| !t.internal).map(|t| t.name.clone()))
                    .or_else(|| self.view.topics.iter().find(|t| !t.internal).map(|t| t.name.clone()));
                match topic {
                    Some(topic) => format!("reassign rf {topic} "),
                    None => "reassign rf ".to_string(),
                }
            }
            KeyCode::Char('x') | KeyCode::Delete => {
                if self.capabilities.read_only {
                    self.hint(READ_ONLY, now);
                    return Some(Vec::new());
                }
                let Some(m) = self.selected_move() else {
                    self.hint(lang.tr("no move selected"), now);
                    return Some(Vec::new());
                };
                if !m.moving() {
                    let said = lang.fmt(
                        "{partition} is not moving: nothing to cancel",
                        &[("partition", &m.name())],
                    );
                    self.hint(&said, now);
                    return Some(Vec::new());
                }
                let action = Action::Reassign {
                    moves: vec![ReplicaMove {
                        topic: m.topic.clone(),
                        partition: m.partition,
                        replicas: None,
                    }],
                };
                return Some(self.update(action, now));
            }
            _ => return None,
        };
        if self.capabilities.read_only {
            self.hint(READ_ONLY, now);
            return Some(Vec::new());
        }
        Some(self.update(Action::CommandLineWith { text }, now))
    }

    /// The move selected on the reassignments screen.
    pub fn selected_move(&self) -> Option<&crate::view::reassignments::Move> {
        let rows = self.reassignments.rows();
        let at = self.moves_cursor.min(rows.len().saturating_sub(1));
        rows.get(at).copied()
    }

    fn submit_dialog(&mut self, now: DateTime<Utc>) -> Option<Action> {
        let cx = Context {
            view: &self.view,
            now: self.view.taken_at.max(now),
            tz: self.tz,
        };
        let result = match self.overlay() {
            Some(Overlay::Dialog(d)) => d.submit(&cx),
            _ => return None,
        };
        match result {
            Ok(action) => {
                self.close_overlay();
                Some(action)
            }
            Err(e) => {
                if let Some(Overlay::Dialog(d)) = self.overlay_mut() {
                    d.error = Some(e);
                }
                None
            }
        }
    }

    /// What a binding means here: "the selected broker" becomes broker 2.
    pub fn resolve(&self, binding: Binding) -> Result<Action, String> {
        if let Some(reason) = self.unavailable(binding) {
            return Err(reason.into());
        }
        if let Screen::ReplicaLog { topic, partition } = self.screen() {
            return match binding {
                Binding::Quit => Ok(Action::Quit),
                Binding::Help => Ok(Action::Help),
                Binding::Back => Ok(Action::Back),
                // The trainer's clock keys work while the picture shows.
                Binding::Freeze | Binding::Slower | Binding::Faster => self.trainer_action(binding),
                Binding::Explain => Ok(Action::Explain {
                    target: ExplainTarget::Partition {
                        topic: topic.clone(),
                        partition: *partition,
                    },
                }),
                _ => Err(format!(
                    "{} goes back to the dashboard",
                    self.keymap.hint(Binding::Back)
                )),
            };
        }
        if let Screen::Flow { topic, partition } = self.screen() {
            return match binding {
                // The picture is a place a class watches: quit closes it, it does not end
                // the session.
                Binding::Quit | Binding::Back => Ok(Action::Back),
                Binding::Help => Ok(Action::Help),
                Binding::Explain => Ok(Action::Explain {
                    target: ExplainTarget::Partition {
                        topic: topic.clone(),
                        partition: *partition,
                    },
                }),
                Binding::ReplicaLog => Ok(Action::ReplicaLog {
                    topic: topic.clone(),
                    partition: *partition,
                }),
                // What a trainer does while the room watches records move: the clock, the
                // steps of a scenario, the room's layout.
                Binding::Freeze | Binding::Slower | Binding::Faster | Binding::Acks => self.trainer_action(binding),
                Binding::Projector => Ok(Action::ToggleProjector),
                Binding::NextStep | Binding::PrevStep | Binding::PlayScenario => self.scenario_control(binding),
                _ => Err(format!(
                    "{} goes back to the dashboard",
                    self.keymap.hint(Binding::Back)
                )),
            };
        }
        if let Screen::Acls = self.screen() {
            return match binding {
                Binding::Quit | Binding::Back => Ok(Action::Back),
                Binding::Help => Ok(Action::Help),
                Binding::Up => Ok(Action::Move { by: -1 }),
                Binding::Down => Ok(Action::Move { by: 1 }),
                Binding::PageUp => Ok(Action::Move { by: -10 }),
                Binding::PageDown => Ok(Action::Move { by: 10 }),
                Binding::Filter => Ok(Action::EditFilter),
                Binding::Command => Ok(Action::CommandLine),
                Binding::Clusters => Ok(Action::Clusters),
                _ => Err(format!(
                    "{} goes back to the dashboard",
                    self.keymap.hint(Binding::Back)
                )),
            };
        }
        if let Screen::Transactions = self.screen() {
            return match binding {
                Binding::Quit | Binding::Back => Ok(Action::Back),
                Binding::Help => Ok(Action::Help),
                Binding::Up => Ok(Action::Move { by: -1 }),
                Binding::Down => Ok(Action::Move { by: 1 }),
                Binding::PageUp => Ok(Action::Move { by: -10 }),
                Binding::PageDown => Ok(Action::Move { by: 10 }),
                Binding::Transactions => Ok(Action::Transactions),
                Binding::Command => Ok(Action::CommandLine),
                Binding::Clusters => Ok(Action::Clusters),
                _ => Err(format!(
                    "{} goes back to the dashboard",
                    self.keymap.hint(Binding::Back)
                )),
            };
        }
        if let Screen::Configs { .. } = self.screen() {
            return match binding {
                Binding::Quit | Binding::Back => Ok(Action::Back),
                Binding::Help => Ok(Action::Help),
                Binding::Up => Ok(Action::Move { by: -1 }),
                Binding::Down => Ok(Action::Move { by: 1 }),
                Binding::PageUp => Ok(Action::Move { by: -10 }),
                Binding::PageDown => Ok(Action::Move { by: 10 }),
                _ => Err(format!(
                    "{} goes back to the dashboard",
                    self.keymap.hint(Binding::Back)
                )),
            };
        }
        if self.screen() == &Screen::Reassignments {
            return match binding {
                Binding::Quit => Ok(Action::Quit),
                Binding::Back | Binding::Reassignments => Ok(Action::Back),
                Binding::Help => Ok(Action::Help),
                Binding::Up => Ok(Action::Move { by: -1 }),
                Binding::Down => Ok(Action::Move { by: 1 }),
                Binding::PageUp => Ok(Action::Move { by: -10 }),
                Binding::PageDown => Ok(Action::Move { by: 10 }),
                Binding::Command => Ok(Action::CommandLine),
                Binding::Explain => {
                    let m = self.selected_move().ok_or("no move selected")?;
                    Ok(Action::Explain {
                        target: ExplainTarget::Partition {
                            topic: m.topic.clone(),
                            partition: m.partition,
                        },
                    })
                }
                // A trainer slows the cluster down to let a room watch a copy.
                Binding::Freeze | Binding::Slower | Binding::Faster => self.trainer_action(binding),
                _ => Err(format!(
                    "{} goes back to the dashboard",
                    self.keymap.hint(Binding::Back)
                )),
            };
        }
        if binding.tail_only() && self.focus != Pane::Messages {
            // Outside the tail, beginning and end are the top and bottom of the list.
            return match binding {
                Binding::SeekBeginning => Ok(Action::Top),
                Binding::SeekEnd => Ok(Action::Bottom),
                _ => Err("that key works in the Messages pane (5)".into()),
            };
        }
        let tail_topic = || {
            self.tail
                .as_ref()
                .map(|t| (t.spec.topic.clone(), t.spec.partition))
                .ok_or_else(|| "select a topic first".to_string())
        };
        Ok(match binding {
            Binding::Quit => Action::Quit,
            Binding::Help => Action::Help,
            Binding::NextPane => Action::NextPane,
            Binding::PrevPane => Action::PrevPane,
            Binding::FocusPane(place) => Action::Focus {
                pane: *Pane::ALL
                    .get(place)
                    .ok_or_else(|| format!("there is no pane {}", place + 1))?,
            },
            Binding::Up => Action::Move { by: -1 },
            Binding::Down => Action::Move { by: 1 },
            Binding::PageUp => Action::Move { by: -10 },
            Binding::PageDown => Action::Move { by: 10 },
            Binding::Drill => Action::Drill,
            Binding::Back => Action::Back,
            Binding::Filter => Action::EditFilter,
            Binding::Command => Action::CommandLine,
            Binding::Explain => Action::Explain {
                target: self.explain_target()?,
            },
            Binding::ReplicaLog => {
                let (topic, partition) = self
                    .selected_partition_of_pane()
                    .ok_or("select a partition (3) or a message (5) first")?;
                Action::ReplicaLog { topic, partition }
            }
            Binding::Flow => {
                let (topic, partition) = self
                    .selected_partition_of_pane()
                    .or_else(|| self.first_partition_of_selected_topic())
                    .ok_or("select a topic (2), a partition (3) or a message (5) first")?;
                Action::Flow { topic, partition }
            }
            Binding::Configs => Action::Configs {
                topic: Some(self.selected_topic().ok_or("no topic selected")?.name.clone()),
            },
            Binding::Reassignments => Action::Reassignments,
            Binding::Acls => Action::Acls,
            Binding::Transactions => Action::Transactions,
            Binding::Clusters => Action::Clusters,
            Binding::Produce => {
                let topic = self.selected_topic().ok_or("no topic selected")?;
                Action::OpenProduce {
                    topic: topic.name.clone(),
                    partition: self.tail_partition,
                }
            }
            Binding::KillBroker | Binding::StopBroker | Binding::RestartBroker | Binding::PauseBroker => {
                // Kill and stop name the broker in their confirmation; restart and pause act
                // at once, so only where the selected broker is in sight.
                if matches!(binding, Binding::RestartBroker | Binding::PauseBroker) && self.focus != Pane::Brokers {
                    return Err(format!(
                        "{} acts on the broker selected in Brokers: focus it with 1 first",
                        self.keymap.hint(binding)
                    ));
                }
                let broker = self.selected_broker().ok_or("no broker selected")?;
                let (id, status) = (broker.id, broker.status);
                match (binding, status) {
                    (Binding::KillBroker, _) => Action::KillBroker { broker: id },
                    (Binding::StopBroker, _) => Action::StopBroker { broker: id },
                    (Binding::RestartBroker | Binding::PauseBroker, BrokerStatus::Paused) => {
                        Action::ResumeBroker { broker: id }
                    }
                    (Binding::RestartBroker, _) => Action::StartBroker { broker: id },
                    _ => Action::PauseBroker { broker: id },
                }
            }
            Binding::AddBroker => Action::AddBroker,
            // Always asked, naming the broker: the selection is enough.
            Binding::DecommissionBroker => Action::DecommissionBroker {
                broker: self.selected_broker().ok_or("no broker selected")?.id,
            },
            Binding::Rebalance => Action::ElectPreferredLeaders {
                topic: matches!(self.focus, Pane::Topics | Pane::Partitions)
                    .then(|| self.selected_topic().map(|t| t.name.clone()))
                    .flatten(),
            },
            Binding::CreateTopic => Action::OpenCreateTopic,
            Binding::DeleteTopic => Action::DeleteTopic {
                topic: self.selected_topic().ok_or("no topic selected")?.name.clone(),
            },
            Binding::AddPartitions => {
                let topic = self.selected_topic().ok_or("no topic selected")?;
                Action::CommandLineWith {
                    text: format!("topic add-partitions {} ", topic.name),
                }
            }
            Binding::DeleteRecords => {
                let (topic, partition) = self
                    .selected_partition_of_pane()
                    .ok_or("select a partition (3) or a message (5) first")?;
                Action::CommandLineWith {
                    text: format!("delete-records {topic}-{partition} "),
                }
            }
            Binding::PauseDemo => match self.view.demo {
                Some(true) => Action::PauseDemo,
                Some(false) => Action::ResumeDemo,
                None => return Err(NO_DEMO.into()),
            },
            Binding::Follow => Action::ToggleFollow,
            Binding::Isolation => Action::ToggleIsolation,
            Binding::PauseTail => Action::ToggleFreeze,
            Binding::SeekBeginning | Binding::SeekEnd => {
                let (topic, partition) = tail_topic()?;
                let to = if binding == Binding::SeekBeginning {
                    SeekPosition::Beginning
                } else {
                    SeekPosition::End
                };
                Action::Seek { topic, partition, to }
            }
            Binding::SeekOffset => {
                tail_topic()?;
                Action::OpenSeek { by: SeekBy::Offset }
            }
            Binding::SeekTime => {
                tail_topic()?;
                Action::OpenSeek { by: SeekBy::Time }
            }
            Binding::NextPartition | Binding::PrevPartition => {
                let count = self.selected_topic().map_or(0, |t| t.partitions);
                let order: Vec<Option<i32>> = std::iter::once(None).chain((0..count).map(Some)).collect();
                let at = order.iter().position(|p| *p == self.tail_partition).unwrap_or(0);
                let step = if binding == Binding::NextPartition {
                    1
                } else {
                    order.len() - 1
                };
                Action::TailPartition {
                    partition: order.get((at + step) % order.len()).copied().flatten(),
                }
            }
            Binding::Maximize => Action::ToggleMaximize,
            Binding::Projector => Action::ToggleProjector,
            Binding::Freeze
            | Binding::Slower
            | Binding::Faster
            | Binding::AutoRebalance
            | Binding::Unclean
            | Binding::MinInsyncUp
            | Binding::MinInsyncDown
            | Binding::Acks => self.trainer_action(binding)?,
            Binding::AddMember | Binding::RemoveMember => {
                if self.focus != Pane::Groups {
                    return Err(format!(
                        "{} / {} add a consumer to the group selected in Groups or take one away: focus it with 4 first",
                        self.keymap.hint(Binding::AddMember),
                        self.keymap.hint(Binding::RemoveMember)
                    ));
                }
                let group = self.selected_group().ok_or("no group selected")?.group_id.clone();
                if binding == Binding::AddMember {
                    Action::AddMember { group }
                } else {
                    Action::RemoveMember { group }
                }
            }
            Binding::NextStep | Binding::PrevStep | Binding::PlayScenario => self.scenario_control(binding)?,
        })
    }

    /// A scenario's next step, step back, or play / pause, when a scenario runs.
    fn scenario_control(&self, binding: Binding) -> Result<Action, String> {
        if self.trainer.is_none() {
            return Err(NO_SCENARIO.into());
        }
        Ok(Action::Scenario {
            control: match binding {
                Binding::NextStep => ScenarioControl::Next,
                Binding::PrevStep => ScenarioControl::Previous,
                _ => ScenarioControl::TogglePlay,
            },
        })
    }

    /// The first partition of the topic selected in Topics (what `D` pictures from there).
    fn first_partition_of_selected_topic(&self) -> Option<(String, i32)> {
        let topic = self.selected_topic()?;
        let first = self.view.partitions_of(&topic.name).map(|p| p.partition).min()?;
        Some((topic.name.clone(), first))
    }

    /// A trainer's toggle, from the controls as last asked (else as the view says now):
    /// freeze when running, thaw when frozen; one slow-motion step; the other value of a
    /// setting.
    fn trainer_action(&self, binding: Binding) -> Result<Action, String> {
        let shown = self.view.controls.ok_or(NO_CONTROLS)?;
        let controls = self.asked.last().copied().unwrap_or(shown);
        let key = |b: Binding| self.keymap.hint(b);
        Ok(match binding {
            Binding::Freeze if controls.frozen => Action::Thaw,
            Binding::Freeze => Action::Freeze,
            Binding::Slower => {
                let factor = SLOW_MOTION.iter().find(|f| **f > controls.slow_motion).ok_or_else(|| {
                    format!(
                        "slow motion is at its slowest (x{}); {} goes back towards real time",
                        controls.slow_motion,
                        key(Binding::Faster)
                    )
                })?;
                Action::SlowMotion { factor: *factor }
            }
            Binding::Faster => {
                let factor = SLOW_MOTION
                    .iter()
                    .rev()
                    .find(|f| **f < controls.slow_motion)
                    .ok_or_else(|| {
                        format!(
                            "the cluster runs in real time already; {} slows it down",
                            key(Binding::Slower)
                        )
                    })?;
                Action::SlowMotion { factor: *factor }
            }
            Binding::AutoRebalance => Action::SetAutoRebalance {
                enabled: !controls.auto_rebalance,
            },
            // The view tells no topic's own setting: the cluster's default is what toggles.
            Binding::Unclean => Action::SetUncleanElection {
                topic: None,
                enabled: !controls.unclean_election,
            },
            Binding::MinInsyncUp | Binding::MinInsyncDown => self.min_insync_step(binding == Binding::MinInsyncUp)?,
            Binding::Acks => {
                let acks = controls
                    .producer_acks
                    .ok_or("no workload producer runs: acks is the demo workload's producers' setting")?;
                // all -> 1 -> 0 -> all: from the safest to the fastest, and round again.
                Action::SetProducerAcks {
                    acks: match acks {
                        -1 => 1,
                        1 => 0,
                        _ => -1,
                    },
                }
            }
            _ => return Err(format!("{binding} is not a trainer's control")),
        })
    }

    /// The selected topic's `min.insync.replicas` one up or down, within 1..=RF.
    fn min_insync_step(&self, up: bool) -> Result<Action, String> {
        if !matches!(self.focus, Pane::Topics | Pane::Partitions) {
            return Err(format!(
                "{} / {} change the selected topic's min.insync.replicas: focus Topics (2) or Partitions (3) first",
                self.keymap.hint(Binding::MinInsyncUp),
                self.keymap.hint(Binding::MinInsyncDown)
            ));
        }
        let topic = self.selected_topic().ok_or("no topic selected")?;
        let current = self
            .view
            .partitions_of(&topic.name)
            .find_map(|p| p.min_insync_replicas)
            .ok_or_else(|| format!("the min.insync.replicas of {} is not known here", topic.name))?;
        let rf = topic.replication_factor;
        let value = if up { current + 1 } else { current - 1 };
        if value > rf {
            return Err(format!(
                "{} already needs all its {rf} replicas in sync (min.insync.replicas {current} = RF): more could never be met",
                topic.name
            ));
        }
        if value < 1 {
            return Err(format!(
                "min.insync.replicas of {} is 1 already, the least Kafka allows",
                topic.name
            ));
        }
        Ok(Action::SetMinInsync {
            topic: topic.name.clone(),
            value,
        })
    }

    /// The partition selected where the focus is: a row of Partitions, or the partition of
    /// the selected message.
    fn selected_partition_of_pane(&self) -> Option<(String, i32)> {
        match self.focus {
            Pane::Partitions => self.selected_partition().map(|p| (p.topic.clone(), p.partition)),
            Pane::Messages => {
                let topic = self.tail.as_ref()?.spec.topic.clone();
                let messages = self.visible_messages();
                let record = messages.get(self.message_cursor(&messages))?;
                Some((topic, record.partition))
            }
            _ => None,
        }
    }

    /// What `e` explains in the focused pane: its selected broker, partition (a topic's worst
    /// one: offline, else under-replicated, else the first), group, or event (an incident
    /// row: its broker).
    fn explain_target(&self) -> Result<ExplainTarget, String> {
        let partition = |p: &PartitionRow| ExplainTarget::Partition {
            topic: p.topic.clone(),
            partition: p.partition,
        };
        let target = match self.focus {
            Pane::Brokers => self.selected_broker().map(|b| ExplainTarget::Broker { broker: b.id }),
            Pane::Topics => self.selected_topic().and_then(|t| {
                let mut all: Vec<&PartitionRow> = self.view.partitions_of(&t.name).collect();
                all.sort_by_key(|p| (!p.offline(), !p.under_replicated, p.partition));
                all.first().map(|p| partition(p))
            }),
            Pane::Partitions | Pane::Messages => self
                .selected_partition_of_pane()
                .map(|(topic, partition)| ExplainTarget::Partition { topic, partition }),
            Pane::Groups => self.selected_group().map(|g| ExplainTarget::Group {
                group: g.group_id.clone(),
            }),
            Pane::Events => match self.event_rows().get(self.cursor(Pane::Events)) {
                Some(EventRow::Event(e) | EventRow::Member(e, _)) => {
                    Some(ExplainTarget::Event { text: e.text.clone() })
                }
                Some(EventRow::Incident { at, .. }) => timeline::incidents(&self.timeline())
                    .into_iter()
                    .find(|i| i.at == *at)
                    .map(|i| ExplainTarget::Broker { broker: i.broker }),
                None => None,
            },
        };
        target.ok_or_else(|| format!("nothing selected in {} to explain", self.focus.title()))
    }

    /// Why `target` is as it is, in the current view. An event is found again by its text
    /// (the newest such line), so the explanation follows the cluster while it is open.
    pub fn explanation(&self, target: &ExplainTarget) -> Explanation {
        target.explain(&self.view, &self.timeline())
    }

    // ---- update: an action changes the state and asks for effects ----

    /// Applies an action. No I/O: what must reach the world is returned.
    pub fn update(&mut self, action: Action, now: DateTime<Utc>) -> Vec<Effect> {
        let observed = self.observer.is_some().then(|| action.clone());
        let effects = self.apply(action, now);
        if let (Some(observer), Some(action)) = (self.observer.as_mut(), observed) {
            observer.action(now, &action, &effects);
        }
        effects
    }

    fn apply(&mut self, action: Action, now: DateTime<Utc>) -> Vec<Effect> {
        let mut effects = Vec::new();
        if let Some(reason) = self.refused(&action) {
            self.hint(reason, now);
            return effects;
        }
        match action {
            Action::Quit => {
                self.quit = true;
                effects.push(Effect::Quit);
            }
            Action::Help => self.overlays.push(Overlay::Help { scroll: 0 }),
            Action::Close => {
                self.close_overlay();
            }
            Action::Focus { pane } => self.set_focus(pane),
            Action::NextPane => self.set_focus(self.focus.next()),
            Action::PrevPane => self.set_focus(self.focus.prev()),
            Action::Move { by } if self.screen() == &Screen::Reassignments => {
                let last = self.reassignments.rows().len().saturating_sub(1) as i64;
                self.moves_cursor = (self.moves_cursor.min(last as usize) as i64 + by).clamp(0, last) as usize;
            }
            Action::Move { by } if matches!(self.screen(), Screen::Transactions) => {
                if let Some(screen) = &mut self.transactions {
                    screen.move_by(by);
                }
            }
            Action::Move { by } if matches!(self.screen(), Screen::Acls) => {
                if let Some(screen) = &mut self.acls {
                    screen.move_by(by);
                }
            }
            Action::Move { by } if matches!(self.screen(), Screen::Configs { .. }) => {
                if let Some(screen) = &mut self.configs {
                    screen.move_by(by);
                }
            }
            Action::Move { by } if self.focus == Pane::Messages => self.move_in_messages(by, &mut effects, now),
            Action::Move { by } => self.move_cursor(by),
            // In Messages the cursor is a record: top and bottom are moves to the first and
            // last loaded one (no window moves or reloads).
            Action::Top if self.focus == Pane::Messages => {
                let by = -(self.cursor(Pane::Messages) as i64);
                self.move_in_messages(by, &mut effects, now);
            }
            Action::Bottom if self.focus == Pane::Messages => {
                let messages = self.visible_messages();
                let by = messages.len().saturating_sub(1 + self.message_cursor(&messages)) as i64;
                self.move_in_messages(by, &mut effects, now);
            }
            Action::Top => self.pane_mut(self.focus).cursor = 0,
            Action::Bottom => self.pane_mut(self.focus).cursor = usize::MAX,
            Action::Select { pane, row } => {
                self.set_focus(pane);
                let by = row as i64 - self.cursor(pane) as i64;
                if pane == Pane::Messages {
                    self.move_in_messages(by, &mut effects, now);
                } else {
                    self.move_cursor(by);
                }
            }
            Action::Search { text } => self.search(text, now, &mut effects),
            Action::StopSearch => self.stop_search(&mut effects),
            Action::Drill => self.drill(),
            Action::Back => self.back(&mut effects),
            Action::EditFilter => self.overlays.push(Overlay::Filter),
            Action::CommandLine => self.overlays.push(Overlay::Command(Default::default())),
            Action::CommandLineWith { text } => self.overlays.push(Overlay::Command(command::CommandLine {
                text,
                ..Default::default()
            })),
            Action::Explain { target } => self.overlays.push(Overlay::Explain { target, scroll: 0 }),
            Action::ReplicaLog { topic, partition } => {
                if self.view.partitions_of(&topic).any(|p| p.partition == partition) {
                    self.screens.push(Screen::ReplicaLog { topic, partition });
                } else {
                    self.hint(&format!("no partition {topic}-{partition}"), now);
                }
            }
            Action::Flow { topic, partition } => {
                if self.view.partitions_of(&topic).any(|p| p.partition == partition) {
                    // Another partition's picture replaces the open one rather than stacking.
                    if matches!(self.screen(), Screen::Flow { .. }) {
                        self.screens.pop();
                    }
                    self.screens.push(Screen::Flow { topic, partition });
                } else {
                    self.hint(&format!("no partition {topic}-{partition}"), now);
                }
            }
            Action::Configs { topic } => {
                let target = match topic {
                    Some(t) => ConfigTarget::Topic(t),
                    None => ConfigTarget::ClusterDefault,
                };
                // Another resource's configs replace the open ones rather than stacking.
                if matches!(self.screen(), Screen::Configs { .. }) {
                    self.screens.pop();
                }
                self.screens.push(Screen::Configs { target: target.clone() });
                self.configs = Some(ConfigsScreen::new(target.clone()));
                effects.push(Effect::DescribeConfigs(target));
            }
            Action::Reassignments => {
                if self.screen() != &Screen::Reassignments {
                    self.screens.push(Screen::Reassignments);
                }
            }
            Action::Acls => {
                if matches!(self.screen(), Screen::Acls) {
                    self.screens.pop();
                }
                self.screens.push(Screen::Acls);
                self.acls = Some(AclsScreen::default());
                effects.push(Effect::DescribeAcls);
            }
            Action::Transactions => {
                // Open: ask again, keeping the rows shown until the answer comes.
                if !matches!(self.screen(), Screen::Transactions) {
                    self.screens.push(Screen::Transactions);
                    self.transactions = None;
                }
                self.transactions
                    .get_or_insert_with(TransactionsScreen::default)
                    .asked(now);
                effects.push(Effect::DescribeTransactions);
            }
            Action::Clusters => match &self.clusters {
                None => self.say(self.lang.sentence(NO_SWITCH), Severity::Warn, now),
                Some(choices) => {
                    let cursor = choices
                        .current
                        .as_ref()
                        .and_then(|c| choices.names.iter().position(|n| n == c))
                        .unwrap_or(0);
                    let names = choices.names.clone();
                    self.overlays.push(Overlay::Clusters { names, cursor });
                }
            },
            Action::SwitchCluster { name } => {
                self.overlays.retain(|o| !matches!(o, Overlay::Clusters { .. }));
                match self.clusters.as_mut() {
                    None => self.say(self.lang.sentence(NO_SWITCH), Severity::Warn, now),
                    Some(choices) => match choices.refuse(&name) {
                        Some(reason) => {
                            let said = self.lang.sentence(&reason);
                            self.say(said, Severity::Warn, now);
                        }
                        None => {
                            choices.connecting = Some(name.clone());
                            let text = self.lang.fmt("connecting to {name}…", &[("name", &name)]);
                            self.say(text, Severity::Info, now);
                            effects.push(Effect::SwitchCluster(name));
                        }
                    },
                }
            }
            Action::Filter { pane, text } => {
                let state = self.pane_mut(pane);
                if state.filter != text {
                    state.filter = text;
                    state.cursor = 0;
                }
            }
            Action::OpenProduce { topic, partition } => {
                self.overlays.push(Overlay::Dialog(Dialog::produce(&topic, partition)));
            }
            Action::OpenCreateTopic => {
                let live = self.view.brokers.iter().filter(|b| b.status.is_up()).count();
                self.overlays.push(Overlay::Dialog(Dialog::create_topic(live)));
            }
            Action::OpenSeek { by } => match &self.tail {
                Some(t) => {
                    let dialog = Dialog::seek(by, &t.spec.topic, t.spec.partition);
                    self.overlays.push(Overlay::Dialog(dialog));
                }
                None => self.hint("select a topic first", now),
            },
            Action::ToggleFollow => {
                if let Some(t) = &mut self.tail {
                    t.follow = !t.follow;
                }
            }
            Action::ToggleIsolation => {
                self.read_committed = !self.read_committed;
                // The tail reads again from where it started, at the new isolation level.
                if let Some(t) = &self.tail {
                    let spec = t.before_search.clone().unwrap_or_else(|| t.spec.clone());
                    self.pane_mut(Pane::Messages).filter.clear();
                    self.start_tail(spec, &mut effects);
                }
                self.hint(
                    if self.read_committed {
                        "messages: read_committed (aborted and open transactions hidden)"
                    } else {
                        "messages: read_uncommitted (every record, transactions marked)"
                    },
                    now,
                );
            }
            Action::ToggleFreeze => {
                if let Some(t) = &mut self.tail {
                    t.frozen = match t.frozen.take() {
                        Some(_) => None,
                        None => Some(t.records()),
                    };
                }
            }
            Action::ToggleMaximize => self.maximized = !self.maximized,
            Action::Scenario { control } => {
                if self.trainer.is_some() {
                    effects.push(Effect::Scenario(control));
                } else {
                    self.hint(NO_SCENARIO, now);
                }
            }
            Action::ToggleProjector => {
                self.presentation = match self.presentation {
                    Presentation::Normal => Presentation::Projector,
                    Presentation::Projector => Presentation::Normal,
                };
                self.theme = self.themes.of(self.presentation).clone();
            }
            Action::Seek { topic, partition, to } => self.seek(topic, partition, to, now, &mut effects),
            Action::TailPartition { partition } => self.tail_partition = partition,
            Action::Answer { yes } => {
                if let Some(i) = self.overlays.iter().rposition(|o| matches!(o, Overlay::Confirm { .. }))
                    && let Overlay::Confirm { command, .. } = self.overlays.remove(i)
                {
                    if yes {
                        self.submit(command, now, &mut effects);
                    } else {
                        self.hint("cancelled", now);
                    }
                }
            }
            Action::Caption { title, text } => {
                self.overlays.retain(|o| !matches!(o, Overlay::Caption { .. }));
                self.overlays.insert(0, Overlay::Caption { title, text });
            }
            Action::HideCaption => self.overlays.retain(|o| !matches!(o, Overlay::Caption { .. })),
            Action::ResetOffsets { group, topic, to } => self.preview_reset(&group, topic.as_deref(), to, now),
            other => self.cluster_action(other, now, &mut effects),
        }
        self.ensure_tail(&mut effects);
        effects
    }

    /// Actions that become a cluster command: checked against what the view shows, and
    /// confirmed first when they destroy.
    fn cluster_action(&mut self, action: Action, now: DateTime<Utc>, effects: &mut Vec<Effect>) {
        let Some(command) = action.command() else {
            return;
        };
        let broker = |id| self.view.brokers.iter().find(|b| b.id == id).map(|b| b.status);
        let down = |s: Option<BrokerStatus>| matches!(s, Some(BrokerStatus::Stopped | BrokerStatus::Killed));
        let lang = self.lang;
        let of_broker = |english: &str, id: &i32| lang.fmt(english, &[("broker", id)]);
        match &action {
            Action::KillBroker { broker: id } | Action::StopBroker { broker: id } if down(broker(*id)) => {
                self.hint(&of_broker("broker {broker} is already down", id), now)
            }
            Action::KillBroker { broker: id } => self.submit_destructive(
                command,
                of_broker("Kill broker {broker} (hard crash, no controlled shutdown)?", id),
                now,
                effects,
            ),
            Action::StopBroker { broker: id } => self.submit_destructive(
                command,
                of_broker("Stop broker {broker} (controlled shutdown: leaders move first)?", id),
                now,
                effects,
            ),
            Action::StartBroker { broker: id } if !down(broker(*id)) => self.hint(
                &of_broker("broker {broker} is running; kill (x) or stop (s) it first", id),
                now,
            ),
            Action::PauseBroker { broker: id } if down(broker(*id)) => {
                self.hint(&of_broker("broker {broker} is down; restart it with r", id), now)
            }
            // A decommission moves whole logs and takes a broker away for good: always asked,
            // with how many replicas move.
            Action::DecommissionBroker { broker: id } => match self.view.brokers.iter().find(|b| b.id == *id) {
                None => self.hint(&of_broker("there is no broker {broker}", id), now),
                Some(b) if matches!(b.lifecycle, Some(BrokerLifecycle::Draining { .. })) => {
                    self.hint(&of_broker("broker {broker} is already being decommissioned", id), now)
                }
                Some(b) => {
                    let question = lang.fmt(
                        "Decommission broker {broker}? Its {n} replicas move to the other brokers, then it shuts down and leaves the cluster",
                        &[("broker", id), ("n", &b.replicas)],
                    );
                    self.overlays.push(Overlay::Confirm { question, command });
                }
            },
            Action::DeleteTopic { topic } if self.is_internal(topic) => self.hint(
                &lang.fmt(
                    "{topic} is an internal topic (the cluster's own state): it cannot be deleted",
                    &[("topic", topic)],
                ),
                now,
            ),
            Action::DeleteTopic { topic } => {
                let question = lang.fmt("Delete topic {topic} and all its data?", &[("topic", topic)]);
                self.submit_destructive(command, question, now, effects)
            }
            // A move copies whole logs: the plan is shown as a diff before anything happens.
            Action::Reassign { moves } => {
                let question = self.reassign_question(moves);
                self.overlays.push(Overlay::Confirm { question, command });
            }
            Action::ReassignThrottled { moves, throttle } => {
                let question = format!(
                    "{}\n{}",
                    self.reassign_question(moves),
                    lang.fmt(
                        "Replication throttled to {rate} bytes/s on the brokers taking part; the throttle stays until removed (kdeck reassign status with the plan, or kdeck configs alter).",
                        &[("rate", &throttle.to_string())],
                    )
                );
                self.overlays.push(Overlay::Confirm { question, command });
            }
            Action::DeleteGroup { group } if self.group_active(group) => self.hint(
                &lang.fmt(
                    "group {group} has active members: stop its consumers before deleting it",
                    &[("group", &group)],
                ),
                now,
            ),
            Action::DeleteGroup { group } => {
                let question = lang.fmt("Delete group {group} and its committed offsets?", &[("group", &group)]);
                self.submit_destructive(command, question, now, effects)
            }
            // Records deleted are gone for every reader: always asked, with how many go.
            Action::DeleteRecords {
                topic,
                partition,
                offset,
            } => match self.delete_records_question(topic, *partition, *offset) {
                Ok(question) => self.overlays.push(Overlay::Confirm { question, command }),
                Err(why) => self.hint(&why, now),
            },
            Action::AddPartitions { topic, count } => {
                let from = self.view.topics.iter().find(|t| &t.name == topic).map(|t| t.partitions);
                match from {
                    None => self.hint(&lang.fmt("no topic {topic}", &[("topic", topic)]), now),
                    Some(from) if *count <= from => self.hint(
                        &lang.fmt(
                            "topic {topic} has {from} partitions: a topic only grows (INVALID_PARTITIONS)",
                            &[("topic", topic), ("from", &from)],
                        ),
                        now,
                    ),
                    Some(from) => {
                        let question = lang.fmt(
                            "Grow topic {topic} from {from} to {to} partitions? A keyed record goes to the partition of its key's hash modulo the count: from now on a key's records may go to another partition than its earlier ones (order holds per partition)",
                            &[("topic", topic), ("from", &from), ("to", count)],
                        );
                        self.overlays.push(Overlay::Confirm { question, command });
                    }
                }
            }
            Action::SetMinInsync { .. }
            | Action::SetUncleanElection { .. }
            | Action::SetAutoRebalance { .. }
            | Action::SetProducerAcks { .. }
                if self.toggles_confirm() =>
            {
                let question = self.toggle_question(&action);
                self.submit_destructive(command, question, now, effects)
            }
            _ => self.submit(command, now, effects),
        }
    }

    /// A reassignment's confirmation: each partition's replicas now -> after (the first
    /// dozen), or the moves a cancel takes back.
    fn reassign_question(&self, moves: &[ReplicaMove]) -> String {
        const SHOWN: usize = 12;
        let lang = &self.lang;
        let ids = |l: &[BrokerId]| l.iter().map(BrokerId::to_string).collect::<Vec<_>>().join(",");
        let now = |m: &ReplicaMove| {
            self.view
                .partitions
                .iter()
                .find(|p| p.topic == m.topic && p.partition == m.partition)
        };
        let mut lines = Vec::new();
        if moves.iter().all(|m| m.replicas.is_none()) {
            lines.push(if moves.len() == 1 {
                lang.tr("Cancel 1 move? The partition goes back to its replicas from before:")
                    .to_string()
            } else {
                lang.fmt(
                    "Cancel {n} moves? Each partition goes back to its replicas from before:",
                    &[("n", &moves.len().to_string())],
                )
            });
            for m in moves.iter().take(SHOWN) {
                let (replicas, back) = now(m).map_or((String::new(), String::new()), |p| {
                    let all: Vec<BrokerId> = p.replicas.iter().map(|r| r.broker).collect();
                    let original: Vec<BrokerId> = all.iter().copied().filter(|b| !p.adding.contains(b)).collect();
                    (ids(&all), ids(&original))
                });
                lines.push(format!("  {}-{}  {replicas} -> {back}", m.topic, m.partition));
            }
        } else {
            let copies: usize = moves
                .iter()
                .map(|m| {
                    let had: Vec<BrokerId> =
                        now(m).map_or_else(Vec::new, |p| p.replicas.iter().map(|r| r.broker).collect());
                    m.replicas.iter().flatten().filter(|b| !had.contains(b)).count()
                })
                .sum();
            lines.push(lang.fmt(
                "Reassign {n} partitions? {copies} replicas copy the whole log from their leader:",
                &[("n", &moves.len().to_string()), ("copies", &copies.to_string())],
            ));
            for m in moves.iter().take(SHOWN) {
                let before = now(m).map_or(String::new(), |p| {
                    ids(&p.replicas.iter().map(|r| r.broker).collect::<Vec<_>>())
                });
                let after = m.replicas.as_deref().map_or(String::new(), ids);
                lines.push(format!("  {}-{}  {before} -> {after}", m.topic, m.partition));
            }
        }
        if moves.len() > SHOWN {
            lines.push(lang.fmt("  and {n} more", &[("n", &(moves.len() - SHOWN).to_string())]));
        }
        lines.join("\n")
    }

    /// Whether a group has active members as the view shows it (a group the view does not
    /// list has none).
    fn group_active(&self, group: &str) -> bool {
        self.view
            .groups
            .iter()
            .any(|g| g.group_id == group && !matches!(g.state.as_str(), "Empty" | "Dead"))
    }

    /// `:reset-offsets`: the plan, as kafka-consumer-groups.sh --dry-run prints it, from what
    /// the view shows (the group's committed offsets, each partition's log start and high
    /// watermark), in a confirmation; yes commits exactly the offsets shown. Refused, as Kafka
    /// refuses it, while the group has active members.
    fn preview_reset(&mut self, group: &str, topic: Option<&str>, to: ResetSpec, now: DateTime<Utc>) {
        let lang = self.lang;
        let Some(row) = self.view.groups.iter().find(|g| g.group_id == group) else {
            return self.hint(&lang.fmt("group {group} does not exist", &[("group", &group)]), now);
        };
        if reset::reset_refused(group, &row.state).is_some() {
            let state = row.state.clone();
            return self.hint(
                &lang.fmt(
                    "Assignments can only be reset if the group '{group}' is inactive, but the current state is {state}.",
                    &[("group", &group), ("state", &state)],
                ),
                now,
            );
        }
        // --topic T: every partition of T; else every partition with a committed offset.
        let partitions: Vec<(String, i32)> = match topic {
            Some(t) => self
                .view
                .partitions_of(t)
                .map(|p| (p.topic.clone(), p.partition))
                .collect(),
            None => row.offsets.iter().map(|o| (o.topic.clone(), o.partition)).collect(),
        };
        if partitions.is_empty() {
            return self.hint(
                &lang.fmt("group {group} has no committed offsets to reset", &[("group", &group)]),
                now,
            );
        }
        let mut offsets = Vec::with_capacity(partitions.len());
        let mut lines = vec![lang.fmt(
            "Reset the offsets of group {group}? (old -> new, lag after)",
            &[("group", &group)],
        )];
        for (t, p) in partitions {
            let committed = row
                .offsets
                .iter()
                .find(|o| o.topic == t && o.partition == p)
                .map(|o| o.committed);
            let bounds = self
                .view
                .partitions_of(&t)
                .find(|r| r.partition == p)
                .and_then(|r| Some((r.log_start_offset.unwrap_or(0), r.high_watermark?)));
            let Some((log_start, log_end)) = bounds else {
                return self.hint(
                    &lang.fmt(
                        "{partition}: its end offset is not known yet",
                        &[("partition", &format!("{t}-{p}"))],
                    ),
                    now,
                );
            };
            let known = reset::PartitionOffsets {
                log_start,
                log_end,
                committed,
                at_time: None,
            };
            let new = match reset::new_offset(to, &known) {
                Ok(new) => new,
                Err(_) => {
                    return self.hint(
                        &lang.fmt(
                            "{partition}: no committed offset to shift",
                            &[("partition", &format!("{t}-{p}"))],
                        ),
                        now,
                    );
                }
            };
            let old = committed.map_or("-".to_string(), |c| c.to_string());
            let lag = (log_end - new).max(0);
            lines.push(lang.fmt(
                "  {partition}  {old} -> {new}  lag {lag}",
                &[
                    ("partition", &format!("{t}-{p}")),
                    ("old", &old),
                    ("new", &new),
                    ("lag", &lag),
                ],
            ));
            offsets.push((t, p, new));
        }
        let command = Command::ResetOffsets {
            group: group.to_string(),
            offsets,
        };
        // Always asked, whatever confirm_destructive says: the preview is the point.
        self.overlays.push(Overlay::Confirm {
            question: lines.join("\n"),
            command,
        });
    }

    /// What deleting the records of a partition before `offset` (-1: its high watermark)
    /// would do, as a question; or why it cannot.
    fn delete_records_question(&self, topic: &str, partition: i32, offset: i64) -> Result<String, String> {
        let lang = &self.lang;
        let name = format!("{topic}-{partition}");
        let row = self
            .view
            .partitions_of(topic)
            .find(|p| p.partition == partition)
            .ok_or_else(|| lang.fmt("no partition {partition}", &[("partition", &name)]))?;
        let (Some(start), Some(hw)) = (row.log_start_offset, row.high_watermark) else {
            return Err(lang.fmt(
                "the offsets of {partition} are not known here (no live leader)",
                &[("partition", &name)],
            ));
        };
        let to = if offset == -1 { hw } else { offset };
        if to > hw {
            return Err(lang.fmt(
                "{partition}: offset {offset} is past the high watermark {hw} (OFFSET_OUT_OF_RANGE)",
                &[("partition", &name), ("offset", &to), ("hw", &hw)],
            ));
        }
        if to <= start {
            return Err(lang.fmt(
                "{partition} starts at offset {start} already: nothing before {offset} to delete",
                &[("partition", &name), ("start", &start), ("offset", &to)],
            ));
        }
        Ok(lang.fmt(
            "Delete the records of {partition} before offset {offset}? Its log start moves {start} -> {offset}: {count} records are gone for every reader, and a consumer behind it goes on from {offset}",
            &[
                ("partition", &name),
                ("offset", &to),
                ("start", &start),
                ("count", &(to - start)),
            ],
        ))
    }

    /// The question a live toggle asks in the operator's console.
    fn toggle_question(&self, action: &Action) -> String {
        let on_off = |on: bool| if on { "on" } else { "off" };
        match action {
            Action::SetMinInsync { topic, value } => {
                let now = self
                    .view
                    .partitions_of(topic)
                    .find_map(|p| p.min_insync_replicas)
                    .map_or(String::new(), |v| format!(" (now {v})"));
                format!("Set min.insync.replicas of {topic} to {value}{now}?")
            }
            Action::SetUncleanElection { topic, enabled } => {
                let whose = topic
                    .as_ref()
                    .map_or("the cluster".to_string(), |t| format!("topic {t}"));
                let risk = if *enabled {
                    ": an out-of-sync replica may lead and acknowledged records can be lost"
                } else {
                    ""
                };
                format!("Turn unclean leader election {} for {whose}{risk}?", on_off(*enabled))
            }
            Action::SetAutoRebalance { enabled } => {
                format!("Turn automatic preferred-leader rebalance {}?", on_off(*enabled))
            }
            Action::SetProducerAcks { acks } => {
                let acks = if *acks == -1 {
                    "all".to_string()
                } else {
                    acks.to_string()
                };
                format!("Set the workload producers' acks to {acks}?")
            }
            _ => String::new(),
        }
    }

    /// Whether a topic is the cluster's own (`__consumer_offsets`, anything named `__*`).
    fn is_internal(&self, topic: &str) -> bool {
        topic.starts_with("__") || self.view.topics.iter().any(|t| t.name == topic && t.internal)
    }

    fn submit(&mut self, command: Command, now: DateTime<Utc>, effects: &mut Vec<Effect>) {
        self.remember_asked_controls(&command);
        self.say(format!("{command}..."), Severity::Info, now);
        effects.push(Effect::Submit(command));
    }

    /// Keeps what a toggle's command asks of the clock or the settings, so that the next
    /// press builds on it.
    fn remember_asked_controls(&mut self, command: &Command) {
        let Some(shown) = self.view.controls else {
            return;
        };
        let mut c = self.asked.last().copied().unwrap_or(shown);
        match command {
            Command::Freeze => c.frozen = true,
            Command::Thaw => c.frozen = false,
            Command::SlowMotion { factor } => c.slow_motion = *factor,
            Command::SetAutoRebalance(on) => c.auto_rebalance = *on,
            Command::SetUncleanElection { topic: None, enabled } => c.unclean_election = *enabled,
            Command::SetProducerAcks(acks) => c.producer_acks = Some(*acks),
            _ => return,
        }
        if self.asked.is_empty() {
            self.asked.push(shown);
        }
        self.asked.push(c);
    }

    /// What was asked is forgotten once the view shows the last of it, or shows controls
    /// nobody here asked for (a scenario step, or a command that failed).
    fn forget_asked_controls(&mut self) {
        let caught_up = match self.view.controls {
            Some(c) => self.asked.last() == Some(&c) || !self.asked.contains(&c),
            None => true,
        };
        if caught_up {
            self.asked.clear();
        }
    }

    /// Whether the live toggles ask first: in the operator's console, where a stray key must
    /// not change a cluster's settings; a trainer (a scenario, the projector layout) wants
    /// them at once.
    fn toggles_confirm(&self) -> bool {
        self.trainer.is_none() && !self.projector()
    }

    /// Submits at once, or asks first when confirmations are on.
    fn submit_destructive(
        &mut self,
        command: Command,
        question: String,
        now: DateTime<Utc>,
        effects: &mut Vec<Effect>,
    ) {
        if self.console.confirm_destructive {
            self.overlays.push(Overlay::Confirm { question, command });
        } else {
            self.submit(command, now, effects);
        }
    }

    fn seek(
        &mut self,
        topic: String,
        partition: Option<i32>,
        to: SeekPosition,
        now: DateTime<Utc>,
        effects: &mut Vec<Effect>,
    ) {
        if self.selected_topic().is_none_or(|t| t.name != topic) {
            // A script or command may seek another topic: select it first.
            let Some(i) = self.view.topics.iter().position(|t| t.name == topic) else {
                return self.hint(&format!("no topic {topic}"), now);
            };
            self.pane_mut(Pane::Topics).filter.clear();
            self.pane_mut(Pane::Topics).cursor = i;
        }
        self.tail_partition = partition;
        // From a position the tail is a window that waits to be scrolled; from the end it
        // follows.
        let spec = match to {
            SeekPosition::Beginning | SeekPosition::Offset(_) | SeekPosition::Timestamp(_) => TailSpec {
                mode: TailMode::Window,
                ..TailSpec::ring(topic, partition, to)
            },
            SeekPosition::End | SeekPosition::Last(_) => TailSpec::ring(topic, partition, to),
        };
        self.start_tail(spec, effects);
        self.pane_mut(Pane::Messages).cursor = 0;
        self.hint(&format!("messages from {to}"), now);
    }

    /// Moves in the message browser: the cursor follows records, not rows. At the bottom of a
    /// full window the window moves on; above its top, older records are loaded.
    fn move_in_messages(&mut self, delta: i64, effects: &mut Vec<Effect>, now: DateTime<Utc>) {
        let messages = self.visible_messages();
        let len = messages.len();
        let current = self.message_cursor(&messages);
        let step = isize::try_from(delta).unwrap_or(if delta < 0 { isize::MIN } else { isize::MAX });
        let next = current.saturating_add_signed(step).min(len.saturating_sub(1));
        let Some(tail) = &mut self.tail else {
            return;
        };
        tail.follow = false;
        tail.selected = messages.get(next).map(|r| (r.partition, r.offset));
        self.pane_mut(Pane::Messages).cursor = next;
        let Some(tail) = &mut self.tail else {
            return;
        };
        if tail.spec.mode == TailMode::Ring {
            if next + 1 == len && delta > 0 {
                tail.follow = true;
            }
            return;
        }
        // Down from the last record of a full window: it moves on by half a window.
        if delta > 0 && current + 1 >= len && tail.window_full() {
            let n = tail.handle.as_ref().map_or(0, |h| h.buffer.capacity() / 2).max(1);
            effects.push(Effect::Advance { n });
            return;
        }
        if delta < 0 && current == 0 {
            let Some(first) = messages.first() else {
                return;
            };
            if tail.log_start(first.partition).is_some_and(|s| first.offset <= s) && tail.spec.partition.is_some() {
                return self.hint("this is the start of the log", now);
            }
            // Load what came before the window, and keep the cursor on this record.
            let capacity = tail.handle.as_ref().map_or(1000, |h| h.buffer.capacity()) as i64;
            let to = match tail.spec.partition {
                Some(_) => SeekPosition::Offset((first.offset - capacity / 2).max(0)),
                None => {
                    let last = messages.last().map_or(first.timestamp, |r| r.timestamp);
                    let span = (last - first.timestamp).max(1000);
                    match DateTime::<Utc>::from_timestamp_millis(first.timestamp - span) {
                        Some(t) => SeekPosition::Timestamp(t),
                        None => return,
                    }
                }
            };
            let spec = TailSpec {
                start: to,
                ..tail.spec.clone()
            };
            let keep = (first.partition, first.offset);
            let search = tail.before_search.clone();
            self.start_tail(spec, effects);
            if let Some(t) = &mut self.tail {
                t.follow = false;
                t.selected = Some(keep);
                t.before_search = search;
            }
            self.hint("loading older records", now);
        }
    }

    /// Searches the tail's topic (its partition, or all) from the selected record on (the
    /// start when none) to the end it has now, in the background; the pane shows the matches
    /// as they come, and the search's progress.
    fn search(&mut self, text: String, now: DateTime<Utc>, effects: &mut Vec<Effect>) {
        let Some(tail) = &self.tail else {
            return self.hint("select a topic first", now);
        };
        // From the selected record among all the tail holds (the filter being typed has
        // already narrowed what the pane shows).
        let records = tail.records();
        let from = records.get(self.message_cursor(&records));
        let start = match (from, tail.spec.partition) {
            (Some(r), Some(_)) if !tail.follow => SeekPosition::Offset(r.offset),
            (Some(r), None) if !tail.follow => DateTime::<Utc>::from_timestamp_millis(r.timestamp)
                .map_or(SeekPosition::Beginning, SeekPosition::Timestamp),
            _ => SeekPosition::Beginning,
        };
        let back = tail.before_search.clone().unwrap_or_else(|| tail.spec.clone());
        let spec = TailSpec {
            topic: tail.spec.topic.clone(),
            partition: tail.spec.partition,
            start,
            mode: TailMode::Window,
            filter: Some(text.clone()),
            until_end: true,
            read_committed: self.read_committed,
        };
        self.start_tail(spec, effects);
        if let Some(t) = &mut self.tail {
            t.before_search = Some(back);
        }
        self.pane_mut(Pane::Messages).filter = text;
        self.hint(&format!("searching from {start} to the end"), now);
    }

    /// Ends a search and goes back to the tail it started from.
    fn stop_search(&mut self, effects: &mut Vec<Effect>) {
        let Some(back) = self.tail.as_mut().and_then(|t| t.before_search.take()) else {
            return;
        };
        self.pane_mut(Pane::Messages).filter.clear();
        self.start_tail(back, effects);
    }

    fn move_cursor(&mut self, delta: i64) {
        let pane = self.focus;
        let len = pane::view_of(pane).rows(self);
        let current = self.cursor(pane);
        let delta = isize::try_from(delta).unwrap_or(if delta < 0 { isize::MIN } else { isize::MAX });
        let next = current.saturating_add_signed(delta).min(len.saturating_sub(1));
        self.pane_mut(pane).cursor = next;
        if pane == Pane::Topics {
            self.pane_mut(Pane::Partitions).cursor = 0;
            self.tail_partition = None;
        }
    }

    fn set_focus(&mut self, pane: Pane) {
        // The timeline opens on its newest event.
        if pane == Pane::Events && self.focus != Pane::Events {
            self.pane_mut(Pane::Events).cursor = usize::MAX;
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
                    self.overlays.push(Overlay::Detail(Box::new(r.clone())));
                }
            }
            Pane::Events => {
                // Enter opens an incident to its events, or folds it again.
                let rows = self.event_rows();
                let at = match rows.get(self.cursor(Pane::Events)) {
                    Some(EventRow::Incident { at, .. } | EventRow::Member(_, at)) => *at,
                    _ => return,
                };
                let opened = self.expanded.insert(at);
                if !opened {
                    self.expanded.remove(&at);
                }
                // Opened, the cursor goes to its last event so the whole story is on screen
                // above it; folded, back to the incident's row.
                let rows = self.event_rows();
                let row = if opened {
                    rows.iter()
                        .rposition(|r| matches!(r, EventRow::Member(_, a) if *a == at))
                } else {
                    rows.iter()
                        .position(|r| matches!(r, EventRow::Incident { at: a, .. } if *a == at))
                };
                if let Some(i) = row {
                    self.pane_mut(Pane::Events).cursor = i;
                }
            }
            Pane::Groups => {}
        }
    }

    fn back(&mut self, effects: &mut Vec<Effect>) {
        let on_acls = matches!(self.screen(), Screen::Acls);
        if on_acls
            && let Some(screen) = &mut self.acls
            && !screen.filter.is_empty()
        {
            screen.set_filter(String::new());
            return;
        }
        if self.screens.len() > 1 {
            match self.screens.pop() {
                Some(Screen::Configs { .. }) => self.configs = None,
                Some(Screen::Acls) => self.acls = None,
                Some(Screen::Transactions) => self.transactions = None,
                _ => {}
            }
            return;
        }
        if self.focus == Pane::Messages && self.tail.as_ref().is_some_and(|t| t.before_search.is_some()) {
            return self.stop_search(effects);
        }
        let state = self.pane_mut(self.focus);
        if !state.filter.is_empty() {
            state.filter.clear();
            return;
        }
        match self.focus {
            Pane::Partitions => self.focus = Pane::Topics,
            Pane::Messages => {
                self.tail_partition = None;
                self.focus = Pane::Partitions;
            }
            _ => {}
        }
    }
}

use crate::view::outcome::{NO_BROKER_MEMBERSHIP, NO_CONTROLS, NO_DEMO_WORKLOAD as NO_DEMO, NO_SCENARIO, READ_ONLY};

/// What `K` and `:cluster` say in a console that runs on one cluster of its own.
const NO_SWITCH: &str = "this console cannot switch clusters (a scenario or a recording has its own cluster)";

/// The slow-motion factors `slower` and `faster` step through.
const SLOW_MOTION: [u32; 5] = [1, 2, 3, 5, 10];

/// What a key did to an overlay.
enum OverlayKey {
    /// It asks for an action.
    Act(Action),
    /// A dialog's Enter: check its input.
    Submit,
    /// It changed the overlay (or nothing).
    Kept,
}

/// Keys inside an overlay: typing, moving between fields, answering.
fn overlay_key(overlay: &mut Overlay, key: KeyEvent) -> OverlayKey {
    let typed = |key: &KeyEvent| match key.code {
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => Some(c),
        _ => None,
    };
    match overlay {
        Overlay::Help { scroll } => match key.code {
            KeyCode::Down | KeyCode::Char('j') => *scroll = scroll.saturating_add(1),
            KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => *scroll = scroll.saturating_add(10),
            KeyCode::PageUp => *scroll = scroll.saturating_sub(10),
            _ => return OverlayKey::Act(Action::Close),
        },
        Overlay::Detail(_) => {
            if matches!(key.code, KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q')) {
                return OverlayKey::Act(Action::Close);
            }
        }
        Overlay::Explain { scroll, .. } => match key.code {
            KeyCode::Down | KeyCode::Char('j') => *scroll = scroll.saturating_add(1),
            KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => *scroll = scroll.saturating_add(10),
            KeyCode::PageUp => *scroll = scroll.saturating_sub(10),
            KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') | KeyCode::Char('e') => {
                return OverlayKey::Act(Action::Close);
            }
            _ => {}
        },
        Overlay::Confirm { .. } => match key.code {
            // Only an explicit yes: Enter alone, the key that opened many a dialog, says no.
            KeyCode::Char('y') | KeyCode::Char('Y') => return OverlayKey::Act(Action::Answer { yes: true }),
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc | KeyCode::Enter => {
                return OverlayKey::Act(Action::Answer { yes: false });
            }
            _ => {}
        },
        // The filter and command lines are typed in `filter_key` and `command_key`.
        Overlay::Filter | Overlay::Command(_) => {}
        Overlay::Dialog(dialog) => match key.code {
            KeyCode::Esc => return OverlayKey::Act(Action::Close),
            KeyCode::Tab | KeyCode::Down => dialog.next_field(),
            KeyCode::BackTab | KeyCode::Up => dialog.prev_field(),
            KeyCode::Backspace => dialog.pop(),
            KeyCode::Enter => return OverlayKey::Submit,
            _ => {
                if let Some(c) = typed(&key) {
                    dialog.push(c);
                }
            }
        },
        Overlay::Clusters { names, cursor } => match key.code {
            KeyCode::Down | KeyCode::Char('j') => *cursor = (*cursor + 1).min(names.len().saturating_sub(1)),
            KeyCode::Up | KeyCode::Char('k') => *cursor = cursor.saturating_sub(1),
            KeyCode::Enter => {
                return match names.get(*cursor) {
                    Some(name) => OverlayKey::Act(Action::SwitchCluster { name: name.clone() }),
                    None => OverlayKey::Act(Action::Close),
                };
            }
            KeyCode::Esc | KeyCode::Char('q') => return OverlayKey::Act(Action::Close),
            _ => {}
        },
        Overlay::Caption { .. } => {}
    }
    OverlayKey::Kept
}

/// Whether an action works only on a cluster whose clock and settings the console controls
/// (the embedded one), as the keys that ask for it.
fn needs_controls(action: &Action) -> bool {
    matches!(
        action,
        Action::Freeze
            | Action::Thaw
            | Action::SlowMotion { .. }
            | Action::SetAutoRebalance { .. }
            | Action::SetUncleanElection { .. }
            | Action::SetMinInsync { .. }
            | Action::SetProducerAcks { .. }
    )
}
