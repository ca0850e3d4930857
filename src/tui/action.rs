//! What the console can be asked to do, as data. A key, a mouse click, a script step and
//! a `:` command all become the same [`Action`], with its target made explicit
//! ("broker 2", not "the selected broker"). [`App::update`](super::app::App::update) turns
//! an action into state changes and [`Effect`]s; only the event loop performs effects.

use serde::{Deserialize, Serialize};

use super::Pane;
use crate::kafka::reset::ResetSpec;
use crate::view::{BrokerId, Command, ConfigTarget, LinkState, ProduceRequest, ReplicaMove, SeekPosition, TailSpec};

/// One thing the console does. Serialized as a table tagged by `action` in snake_case:
/// `{ action = "kill_broker", broker = 1 }`, `{ action = "seek", topic = "clicks",
/// partition = 0, to = { offset = 100 } }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action", deny_unknown_fields)]
pub enum Action {
    /// Leave the console (an embedded cluster shuts down cleanly).
    Quit,
    /// Open the keys overlay.
    Help,
    /// Close the topmost overlay that takes keys.
    Close,
    Focus {
        pane: Pane,
    },
    NextPane,
    PrevPane,
    /// Move the focused list's cursor by `by` rows (negative: up).
    Move {
        by: i64,
    },
    /// The focused list's first row.
    Top,
    /// The focused list's last row.
    Bottom,
    /// Select a row of a pane and focus it (a mouse click).
    Select {
        pane: Pane,
        row: usize,
    },
    /// Go one level in: topic -> partitions -> messages -> one message.
    Drill,
    /// Clear the filter, or go one level out.
    Back,
    /// Open the filter line of the focused pane.
    EditFilter,
    /// Open the `:` command line.
    CommandLine,
    /// Say why something is as it is, in an overlay drawn from the current view.
    Explain {
        target: ExplainTarget,
    },
    /// Open the picture of a partition's replicated log (one strip per replica).
    ReplicaLog {
        topic: String,
        partition: i32,
    },
    /// Open the picture of records flowing through a partition: producers -> leader ->
    /// followers -> consumer groups.
    Flow {
        topic: String,
        partition: i32,
    },
    /// Open the configs screen of a topic (`None`: the cluster-wide defaults).
    Configs {
        #[serde(default)]
        topic: Option<String>,
    },
    /// Open the reassignments screen: every partition move, its progress, and those that
    /// finished.
    Reassignments,
    /// Open the ACL screen (read only).
    Acls,
    /// Open the transactions screen (read only), or ask again when it is open.
    Transactions,
    /// Open the list of clusters the console may switch to.
    Clusters,
    /// Switch the console to another cluster: `embedded` or a profile's name.
    SwitchCluster {
        name: String,
    },
    /// Set a pane's filter.
    Filter {
        pane: Pane,
        text: String,
    },
    /// Open the produce dialog for a topic (and a partition, else the key's hash decides).
    OpenProduce {
        topic: String,
        partition: Option<i32>,
    },
    Produce(ProduceRequest),
    KillBroker {
        broker: BrokerId,
    },
    StopBroker {
        broker: BrokerId,
    },
    StartBroker {
        broker: BrokerId,
    },
    PauseBroker {
        broker: BrokerId,
    },
    ResumeBroker {
        broker: BrokerId,
    },
    /// Add a broker to the embedded cluster.
    AddBroker,
    /// Move every replica off a broker, then let it shut down and leave the cluster.
    DecommissionBroker {
        broker: BrokerId,
    },
    /// Preferred-leader election for one topic, or all.
    ElectPreferredLeaders {
        topic: Option<String>,
    },
    OpenCreateTopic,
    CreateTopic {
        name: String,
        partitions: i32,
        replication_factor: i32,
        /// `delete`, `compact` or `compact,delete`.
        cleanup_policy: String,
    },
    DeleteTopic {
        topic: String,
    },
    /// Move partitions' replicas (KIP-455): each to its target replicas, or (none) back to
    /// where its move began.
    Reassign {
        moves: Vec<ReplicaMove>,
    },
    /// Move partitions' replicas with the replication throttle at `throttle` bytes/s.
    ReassignThrottled {
        moves: Vec<ReplicaMove>,
        throttle: u64,
    },
    PauseDemo,
    ResumeDemo,
    /// Keep the newest record selected, or stop.
    ToggleFollow,
    /// Read the tail as read_committed, or as read_uncommitted again.
    ToggleIsolation,
    /// Freeze the tail's records on screen, or let them move again.
    ToggleFreeze,
    /// The focused pane takes the whole body (header and footer stay), or the dashboard
    /// comes back.
    ToggleMaximize,
    /// The projector layout (few big, spaced columns for a room), or the normal one.
    ToggleProjector,
    /// Read a topic (one partition, or all) from a position.
    Seek {
        topic: String,
        partition: Option<i32>,
        to: SeekPosition,
    },
    /// Open the dialog that asks where to seek.
    OpenSeek {
        by: SeekBy,
    },
    /// Tail one partition of the selected topic, or all.
    TailPartition {
        partition: Option<i32>,
    },
    /// Search the tail's topic from the selected record to the end for records whose key,
    /// value or headers contain `text`.
    Search {
        text: String,
    },
    /// End the search and go back to the tail it started from.
    StopSearch,
    /// Answer the confirmation on top.
    Answer {
        yes: bool,
    },
    /// Show a caption over the dashboard (a trainer's words); it stays while other overlays
    /// come and go, until hidden.
    Caption {
        title: String,
        text: String,
    },
    HideCaption,
    /// Trainer mode: run the scenario's next step, go back one, play or pause.
    Scenario {
        control: ScenarioControl,
    },
    /// Stop the cluster's clock (see [`Command::Freeze`]).
    Freeze,
    Thaw,
    /// Every engine timeout and interval `factor` times slower (1: real time).
    SlowMotion {
        factor: u32,
    },
    SetLink {
        a: BrokerId,
        b: BrokerId,
        state: LinkState,
    },
    /// Cut a broker off from the other brokers and the controller.
    Isolate {
        broker: BrokerId,
    },
    HealLinks,
    SetAutoRebalance {
        enabled: bool,
    },
    SetUncleanElection {
        topic: Option<String>,
        enabled: bool,
    },
    SetMinInsync {
        topic: String,
        value: i32,
    },
    /// Set a topic's configs (`None`: the cluster-wide defaults) and remove others.
    AlterConfigs {
        topic: Option<String>,
        #[serde(default)]
        set: Vec<(String, String)>,
        #[serde(default)]
        delete: Vec<String>,
    },
    /// `acks` of the workload's producers: 0, 1 or -1 (all).
    SetProducerAcks {
        acks: i16,
    },
    AddMember {
        group: String,
    },
    RemoveMember {
        group: String,
    },
    PauseGroup {
        group: String,
    },
    ResumeGroup {
        group: String,
    },
    /// Move an empty group's committed offsets (of one topic, or all it has): a preview of
    /// old -> new offsets and the lag after is confirmed first.
    ResetOffsets {
        group: String,
        #[serde(default)]
        topic: Option<String>,
        to: ResetSpec,
    },
    /// Delete a group without active members, with its offsets (asks first).
    DeleteGroup {
        group: String,
    },
    /// Move a partition's log start offset up to `offset` (-1: the high watermark), after a
    /// confirmation that says how many records go.
    DeleteRecords {
        topic: String,
        partition: i32,
        offset: i64,
    },
    /// Grow a topic to `count` partitions (asks first: keys map to other partitions).
    AddPartitions {
        topic: String,
        count: i32,
    },
    /// Open the `:` command line with `text` typed (a key that needs one more argument).
    CommandLineWith {
        text: String,
    },
}

/// What "explain" explains: `{ kind = "partition", topic = "orders", partition = 0 }`,
/// `{ kind = "broker", broker = 2 }`, `{ kind = "group", group = "billing" }`, or a timeline
/// event by its text, `{ kind = "event", text = "produce to orders-0 rejected: ..." }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum ExplainTarget {
    Partition { topic: String, partition: i32 },
    Broker { broker: BrokerId },
    Group { group: String },
    Event { text: String },
}

impl ExplainTarget {
    /// Its explanation from `view`; an event is looked up in `timeline` (newest first) to
    /// know what it is about.
    pub fn explain(
        &self,
        view: &crate::view::ClusterView,
        timeline: &[crate::view::ViewEvent],
    ) -> crate::view::explain::Explanation {
        use crate::view::explain;
        match self {
            ExplainTarget::Partition { topic, partition } => explain::partition(view, topic, *partition),
            ExplainTarget::Broker { broker } => explain::broker(view, *broker),
            ExplainTarget::Group { group } => explain::group(view, group),
            ExplainTarget::Event { text } => {
                let event = timeline
                    .iter()
                    .rev()
                    .find(|e| &e.text == text)
                    .cloned()
                    .unwrap_or_else(|| crate::view::ViewEvent {
                        at: view.taken_at,
                        cluster_at: view.taken_at,
                        severity: crate::view::Severity::Info,
                        text: text.clone(),
                        msg: None,
                        class: crate::view::EventClass::Other,
                    });
                explain::event(view, &event)
            }
        }
    }
}

/// What the trainer asks of a running scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScenarioControl {
    Next,
    Previous,
    TogglePlay,
}

/// What a running scenario tells the console.
#[derive(Clone)]
pub enum TrainerUpdate {
    /// The scenario's title and step count, when it starts (or starts again).
    Loaded {
        title: String,
        steps: usize,
        /// The scenario's language (`--lang`): the console's words follow it.
        lang: Option<String>,
    },
    /// A step began: its number (0-based), caption and rule.
    Step {
        index: usize,
        caption: String,
        why: Option<String>,
    },
    /// A command of the step ran.
    Command {
        text: String,
        outcome: Result<String, String>,
    },
    /// The step's checks as they stand (`None`: not decided yet).
    Checks(Vec<(String, Option<bool>)>),
    /// The step ended.
    Ended {
        passed: bool,
    },
    Playing(bool),
    /// Going back: the scenario replays from its start to this step (0-based; `None`: to
    /// the start, before any step).
    Replaying {
        to: Option<usize>,
    },
    /// Going back is done: the next step is the one to present again.
    Ready,
    /// A new cluster replaces the old one (going back starts the scenario again).
    Source(std::sync::Arc<dyn crate::view::ClusterSource>),
    /// An action for the console itself (a step that focuses a pane or seeks).
    Console(Action),
}

impl std::fmt::Debug for TrainerUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrainerUpdate::Source(_) => write!(f, "Source"),
            TrainerUpdate::Loaded { title, steps, .. } => write!(f, "Loaded({title}, {steps})"),
            TrainerUpdate::Step { index, .. } => write!(f, "Step({index})"),
            TrainerUpdate::Command { text, .. } => write!(f, "Command({text})"),
            TrainerUpdate::Checks(c) => write!(f, "Checks({})", c.len()),
            TrainerUpdate::Ended { passed } => write!(f, "Ended({passed})"),
            TrainerUpdate::Playing(p) => write!(f, "Playing({p})"),
            TrainerUpdate::Replaying { to } => write!(f, "Replaying({to:?})"),
            TrainerUpdate::Ready => write!(f, "Ready"),
            TrainerUpdate::Console(a) => write!(f, "Console({a:?})"),
        }
    }
}

/// What the seek dialog asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeekBy {
    Offset,
    Time,
}

impl Action {
    /// The cluster command this action is, if it is one.
    pub fn command(&self) -> Option<Command> {
        Some(match self {
            Action::Produce(r) => Command::Produce(r.clone()),
            Action::KillBroker { broker } => Command::KillBroker(*broker),
            Action::StopBroker { broker } => Command::StopBroker(*broker),
            Action::StartBroker { broker } => Command::StartBroker(*broker),
            Action::PauseBroker { broker } => Command::PauseBroker(*broker),
            Action::ResumeBroker { broker } => Command::ResumeBroker(*broker),
            Action::ElectPreferredLeaders { topic } => Command::ElectPreferredLeaders { topic: topic.clone() },
            Action::CreateTopic {
                name,
                partitions,
                replication_factor,
                cleanup_policy,
            } => Command::CreateTopic {
                name: name.clone(),
                partitions: *partitions,
                replication_factor: *replication_factor,
                cleanup_policy: cleanup_policy.clone(),
            },
            Action::DeleteTopic { topic } => Command::DeleteTopic { name: topic.clone() },
            Action::Reassign { moves } => Command::Reassign(moves.clone()),
            Action::ReassignThrottled { moves, throttle } => Command::ReassignThrottled {
                moves: moves.clone(),
                throttle: *throttle,
            },
            Action::AddBroker => Command::AddBroker,
            Action::DecommissionBroker { broker } => Command::DecommissionBroker(*broker),
            Action::PauseDemo => Command::PauseDemo,
            Action::ResumeDemo => Command::ResumeDemo,
            Action::Freeze => Command::Freeze,
            Action::Thaw => Command::Thaw,
            Action::SlowMotion { factor } => Command::SlowMotion { factor: *factor },
            Action::SetLink { a, b, state } => Command::SetLink {
                a: *a,
                b: *b,
                state: *state,
            },
            Action::Isolate { broker } => Command::Isolate(*broker),
            Action::HealLinks => Command::HealLinks,
            Action::SetAutoRebalance { enabled } => Command::SetAutoRebalance(*enabled),
            Action::AlterConfigs { topic, set, delete } => Command::AlterConfigs {
                topic: topic.clone(),
                set: set.clone(),
                delete: delete.clone(),
            },
            Action::SetUncleanElection { topic, enabled } => Command::SetUncleanElection {
                topic: topic.clone(),
                enabled: *enabled,
            },
            Action::SetMinInsync { topic, value } => Command::SetMinInsync {
                topic: topic.clone(),
                value: *value,
            },
            Action::SetProducerAcks { acks } => Command::SetProducerAcks(*acks),
            Action::AddMember { group } => Command::AddMember { group: group.clone() },
            Action::RemoveMember { group } => Command::RemoveMember { group: group.clone() },
            Action::PauseGroup { group } => Command::PauseGroup { group: group.clone() },
            Action::ResumeGroup { group } => Command::ResumeGroup { group: group.clone() },
            Action::DeleteGroup { group } => Command::DeleteGroup { group: group.clone() },
            Action::DeleteRecords {
                topic,
                partition,
                offset,
            } => Command::DeleteRecords {
                topic: topic.clone(),
                partition: *partition,
                offset: *offset,
            },
            Action::AddPartitions { topic, count } => Command::CreatePartitions {
                topic: topic.clone(),
                count: *count,
            },
            _ => return None,
        })
    }

    /// Whether it controls a broker's process.
    pub fn controls_broker(&self) -> bool {
        matches!(
            self,
            Action::KillBroker { .. }
                | Action::StopBroker { .. }
                | Action::StartBroker { .. }
                | Action::PauseBroker { .. }
                | Action::ResumeBroker { .. }
                | Action::AddBroker
                | Action::DecommissionBroker { .. }
        )
    }

    /// Whether it adds or removes a broker (an external cluster has no API for either).
    pub fn changes_membership(&self) -> bool {
        matches!(self, Action::AddBroker | Action::DecommissionBroker { .. })
    }

    /// Whether it changes the cluster (a read-only console refuses it); opening the
    /// produce or create dialog counts, so that a read-only console offers no form.
    pub fn mutates(&self) -> bool {
        self.command().is_some_and(|c| c.mutates())
            || matches!(
                self,
                Action::OpenProduce { .. } | Action::OpenCreateTopic | Action::ResetOffsets { .. }
            )
    }
}

/// What the app asks the event loop to do: the only way the console touches the world.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send a command to the cluster; its outcome comes back as a note.
    Submit(Command),
    /// Start a message tail of at most `capacity` records (the app drops the old one).
    Tail {
        spec: TailSpec,
        capacity: usize,
    },
    /// Move the message window on by `n` records (the oldest go, reading goes on).
    Advance {
        n: usize,
    },
    /// Ask the source for these configs; the answer goes to the configs screen.
    DescribeConfigs(ConfigTarget),
    /// Ask the source for its ACLs; the answer goes to the ACL screen.
    DescribeAcls,
    /// Ask the source for its transactions; the answer goes to the transactions screen.
    DescribeTransactions,
    /// Ask whoever started the console to switch it to this cluster; the answer comes back
    /// through [`crate::tui::Switched`].
    SwitchCluster(String),
    /// Tell the running scenario what the trainer asked.
    Scenario(ScenarioControl),
    Quit,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_from_toml_with_their_targets() {
        #[derive(Deserialize)]
        struct Script {
            step: Vec<Action>,
        }
        let text = r#"
            [[step]]
            action = "kill_broker"
            broker = 1
            [[step]]
            action = "seek"
            topic = "clicks"
            partition = 0
            to = { offset = 100 }
            [[step]]
            action = "focus"
            pane = "partitions"
            [[step]]
            action = "produce"
            topic = "orders"
            key = "k"
            value = "v"
            headers = [["h", "1"]]
            [[step]]
            action = "explain"
            target = { kind = "partition", topic = "orders", partition = 0 }
        "#;
        let script: Script = toml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            script.step,
            vec![
                Action::KillBroker { broker: 1 },
                Action::Seek {
                    topic: "clicks".into(),
                    partition: Some(0),
                    to: SeekPosition::Offset(100),
                },
                Action::Focus { pane: Pane::Partitions },
                Action::Produce(ProduceRequest {
                    topic: "orders".into(),
                    partition: None,
                    key: Some("k".into()),
                    value: "v".into(),
                    headers: vec![("h".into(), "1".into())],
                }),
                Action::Explain {
                    target: ExplainTarget::Partition {
                        topic: "orders".into(),
                        partition: 0
                    }
                },
            ]
        );
        assert_eq!(
            script.step.first().and_then(Action::command),
            Some(Command::KillBroker(1))
        );
    }

    #[test]
    fn an_unknown_action_or_field_is_refused() {
        assert!(toml::from_str::<Action>(r#"action = "kill_everything""#).is_err());
        assert!(toml::from_str::<Action>("action = \"kill_broker\"\nbrokr = 1").is_err());
    }
}
