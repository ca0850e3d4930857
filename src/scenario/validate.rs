//! A scenario file checked when it loads, not when it runs: a typo in a bound name
//! (`victm`), a partition the setup does not create (`order-0`, which would only wait to
//! its timeout), a `{leadr}` that would be shown as is, or an action no scenario may use
//! is refused before the room sees anything. Every problem is reported at once, each with
//! its file, line and column, found from the spans the TOML parser keeps.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::format::{self, Check, Scenario};
use super::target::{self, Role};
use crate::config::{ConfigError, line_column};
use crate::tui::Action;
use crate::tui::action::ExplainTarget;

/// The actions a scenario may use: the cluster commands, and the console's own actions
/// that show the room something. Keys the trainer presses (quit, help, moving the cursor,
/// opening dialogs, the scenario controls) are not among them.
pub const SCENARIO_ACTIONS: &[&str] = &[
    "kill_broker",
    "stop_broker",
    "start_broker",
    "pause_broker",
    "resume_broker",
    "elect_preferred_leaders",
    "create_topic",
    "delete_topic",
    "produce",
    "set_link",
    "isolate",
    "heal_links",
    "freeze",
    "thaw",
    "slow_motion",
    "set_auto_rebalance",
    "set_unclean_election",
    "set_min_insync",
    "set_producer_acks",
    "add_member",
    "remove_member",
    "pause_group",
    "resume_group",
    "explain",
    "replica_log",
    "focus",
    "select",
    "filter",
    "seek",
    "tail_partition",
    "toggle_maximize",
    "toggle_projector",
    "caption",
    "hide_caption",
];

use super::target::SETUP_PLACEHOLDERS;

/// One problem, placed in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Everything wrong with a scenario file, one `file:line:column: message` line each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problems {
    pub path: String,
    pub list: Vec<Problem>,
}

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.list.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}:{}:{}: {}", self.path, p.line, p.column, p.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for Problems {}

/// Reads and checks a scenario file; `name` is what its `name` must be (its file name
/// without `.toml`).
pub fn load(path: &str, name: &str, text: &str) -> Result<Scenario, Problems> {
    let scenario = format::parse(path, text).map_err(|e| Problems {
        path: path.to_string(),
        list: vec![from_config_error(e)],
    })?;
    let file = File::new(text);
    let mut problems = Vec::new();
    if scenario.name != name {
        problems.push(file.problem(
            &[K("name")],
            format!("its name is \"{}\" but the file is named {name}.toml", scenario.name),
        ));
    }
    Checker::new(&scenario, &file, &mut problems).run();
    if problems.is_empty() {
        Ok(scenario)
    } else {
        problems.sort_by_key(|p| (p.line, p.column));
        Err(Problems {
            path: path.to_string(),
            list: problems,
        })
    }
}

fn from_config_error(e: ConfigError) -> Problem {
    match e {
        ConfigError::Invalid {
            line, column, message, ..
        } => Problem { line, column, message },
        other => Problem {
            line: 1,
            column: 1,
            message: other.to_string(),
        },
    }
}

/// A step of a path into the file: a key of a table or an index into an array.
#[derive(Clone, Copy)]
enum Seg<'a> {
    K(&'a str),
    I(usize),
}
use Seg::{I, K};

/// The file's text with the parser's spans, to place a problem.
struct File<'a> {
    text: &'a str,
    root: Option<Spanned<DeValue<'a>>>,
}

impl<'a> File<'a> {
    fn new(text: &'a str) -> File<'a> {
        let root = DeTable::parse(text).ok().map(|t| {
            let span = t.span();
            Spanned::new(span, DeValue::Table(t.into_inner()))
        });
        File { text, root }
    }

    /// The span of the deepest value `path` reaches (the whole value when all of it does).
    fn span(&self, path: &[Seg]) -> std::ops::Range<usize> {
        let Some(mut at) = self.root.as_ref() else {
            return 0..0;
        };
        for seg in path {
            let next = match seg {
                K(k) => at.get_ref().get(*k),
                I(i) => at.get_ref().get(*i),
            };
            match next {
                Some(v) => at = v,
                None => break,
            }
        }
        at.span()
    }

    /// Where the key `key` of the table at `path` is written.
    fn key_span(&self, path: &[Seg], key: &str) -> std::ops::Range<usize> {
        let Some(mut at) = self.root.as_ref() else {
            return 0..0;
        };
        for seg in path {
            let next = match seg {
                K(k) => at.get_ref().get(*k),
                I(i) => at.get_ref().get(*i),
            };
            match next {
                Some(v) => at = v,
                None => return at.span(),
            }
        }
        at.get_ref()
            .as_table()
            .and_then(|t| t.iter().find(|(k, _)| k.get_ref() == key).map(|(k, _)| k.span()))
            .unwrap_or_else(|| at.span())
    }

    fn place(&self, offset: usize, message: String) -> Problem {
        let (line, column) = line_column(self.text, offset);
        Problem { line, column, message }
    }

    fn problem(&self, path: &[Seg], message: String) -> Problem {
        self.place(self.span(path).start, message)
    }

    /// A problem at `needle` inside the value at `path` (a placeholder in a caption).
    fn problem_within(&self, path: &[Seg], needle: &str, message: String) -> Problem {
        let span = self.span(path);
        let offset = self
            .text
            .get(span.clone())
            .and_then(|s| s.find(needle))
            .map_or(span.start, |i| span.start + i);
        self.place(offset, message)
    }
}

/// Walks a parsed scenario, step by step, with what the file has named so far.
struct Checker<'s, 'f> {
    scenario: &'s Scenario,
    file: &'f File<'f>,
    problems: &'f mut Vec<Problem>,
    /// Topics by name with their partition counts: the setup's, then those a step creates.
    topics: BTreeMap<String, i32>,
    groups: BTreeSet<String>,
    /// Names bound by the steps so far.
    bound: BTreeSet<String>,
}

impl<'s, 'f> Checker<'s, 'f> {
    fn new(scenario: &'s Scenario, file: &'f File<'f>, problems: &'f mut Vec<Problem>) -> Checker<'s, 'f> {
        let mut topics: BTreeMap<String, i32> = scenario
            .setup
            .topics
            .iter()
            .map(|t| (t.name.clone(), t.partitions))
            .collect();
        topics.insert("__consumer_offsets".into(), format::OFFSETS_TOPIC_PARTITIONS);
        Checker {
            scenario,
            file,
            problems,
            topics,
            groups: scenario.setup.groups.iter().map(|g| g.name.clone()).collect(),
            bound: BTreeSet::new(),
        }
    }

    fn report(&mut self, path: &[Seg], message: String) {
        let p = self.file.problem(path, message);
        self.problems.push(p);
    }

    fn run(&mut self) {
        self.setup();
        if self.scenario.steps.is_empty() {
            self.report(&[], "it has no [[step]]".into());
        }
        let mut bound_by_step = Vec::new();
        for (i, step) in self.scenario.steps.iter().enumerate() {
            self.step(i, step);
            bound_by_step.push(self.bound.clone());
        }
        self.translations(&bound_by_step);
    }

    fn setup(&mut self) {
        let setup = &self.scenario.setup;
        for (k, p) in setup.producers.iter().enumerate() {
            if !self.topics.contains_key(&p.topic) {
                self.report(
                    &[K("setup"), K("producer"), I(k), K("topic")],
                    format!("producer on topic {} that [[setup.topic]] does not create", p.topic),
                );
            }
            if let Some(n) = p.partition
                && self.topics.get(&p.topic).is_some_and(|&count| n < 0 || n >= count)
            {
                self.report(
                    &[K("setup"), K("producer"), I(k), K("partition")],
                    format!(
                        "producer on partition {n}, but topic {} {}",
                        p.topic,
                        self.partitions_of(&p.topic)
                    ),
                );
            }
        }
        for (k, g) in setup.groups.iter().enumerate() {
            if !self.topics.contains_key(&g.topic) {
                self.report(
                    &[K("setup"), K("group"), I(k), K("topic")],
                    format!(
                        "group {} on topic {} that [[setup.topic]] does not create",
                        g.name, g.topic
                    ),
                );
            }
        }
        for (k, t) in setup.topics.iter().enumerate() {
            if t.replication_factor > setup.brokers || t.min_insync_replicas > t.replication_factor {
                self.report(
                    &[K("setup"), K("topic"), I(k)],
                    format!(
                        "topic {}: replication factor {} with {} brokers and min.insync.replicas {}",
                        t.name, t.replication_factor, setup.brokers, t.min_insync_replicas
                    ),
                );
            }
        }
    }

    fn partitions_of(&self, topic: &str) -> String {
        match self.topics.get(topic) {
            Some(1) => format!("has one partition ({topic}-0)"),
            Some(n) => format!("has {n} partitions ({topic}-0 to {topic}-{})", n - 1),
            None => String::new(),
        }
    }

    fn known_topics(&self) -> String {
        self.topics
            .keys()
            .filter(|t| !t.starts_with("__"))
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What is wrong with a partition's name ("topic-N"), if anything.
    fn partition_problem(&self, text: &str) -> Option<String> {
        let Some((topic, n)) = target::parse_partition(text) else {
            return Some(format!("\"{text}\" is not a partition (topic-N)"));
        };
        match self.topics.get(&topic) {
            None => Some(format!(
                "partition \"{text}\": the setup creates no topic {topic} (it creates {})",
                self.known_topics()
            )),
            Some(&count) if n < 0 || n >= count => Some(format!(
                "partition \"{text}\": topic {topic} {}",
                self.partitions_of(&topic)
            )),
            Some(_) => None,
        }
    }

    fn topic_problem(&self, topic: &str) -> Option<String> {
        (!self.topics.contains_key(topic)).then(|| {
            format!(
                "the setup creates no topic {topic} (it creates {})",
                self.known_topics()
            )
        })
    }

    fn group_problem(&self, group: &str) -> Option<String> {
        (!self.groups.contains(group)).then(|| {
            let known: Vec<&str> = self.groups.iter().map(String::as_str).collect();
            if known.is_empty() {
                format!("the setup has no group {group} (it has none)")
            } else {
                format!("the setup has no group {group} (it has {})", known.join(", "))
            }
        })
    }

    /// What is wrong with a broker named by a role, a bound name or a number.
    fn role_problem(&self, text: &str) -> Option<String> {
        if self.bound.contains(text.trim()) {
            return None;
        }
        match target::parse_role(text) {
            Role::Id(id) => self.broker_id_problem(i64::from(id)),
            Role::Controller => None,
            Role::CoordinatorOf(group) => self.group_problem(group),
            Role::Name(name) => Some(format!(
                "\"{name}\" is neither a name bound so far ({}) nor a role: use {}",
                self.bound_list(),
                target::ROLES
            )),
            role => role.partition().and_then(|p| self.partition_problem(p)),
        }
    }

    fn broker_id_problem(&self, id: i64) -> Option<String> {
        let brokers = i64::from(self.scenario.setup.brokers);
        (id < 0 || id >= brokers).then(|| {
            format!(
                "there is no broker {id}: the setup starts {brokers} (0 to {})",
                brokers - 1
            )
        })
    }

    fn bound_list(&self) -> String {
        if self.bound.is_empty() {
            "there is none".into()
        } else {
            let names: Vec<&str> = self.bound.iter().map(String::as_str).collect();
            format!("bound: {}", names.join(", "))
        }
    }

    fn broker_value_problem(&self, value: &toml::Value) -> Option<String> {
        match value {
            toml::Value::Integer(n) => self.broker_id_problem(*n),
            toml::Value::String(s) => self.role_problem(s),
            other => Some(format!("{other} names no broker: use {}", target::ROLES)),
        }
    }

    fn step(&mut self, i: usize, step: &format::Step) {
        let n = i + 1;
        let at = [K("step"), I(i)];
        // Roles resolve against the cluster as the step starts, so they may name only
        // what earlier steps bound.
        for (name, role) in &step.bind {
            if let Some(p) = self.role_problem(role) {
                self.report(
                    &[K("step"), I(i), K("bind"), K(name)],
                    format!("step {n}: bind {name}: {p}"),
                );
            }
        }
        self.bound.extend(step.bind.keys().cloned());
        let whose = format!("step {n}");
        self.placeholders(&whose, &[K("step"), I(i), K("caption")], &step.caption);
        if let Some(why) = &step.why {
            self.placeholders(&whose, &[K("step"), I(i), K("why")], why);
        }
        for (j, table) in step.actions.iter().enumerate() {
            self.action(n, &[at[0], at[1], K("actions"), I(j)], table);
        }
        for (field, checks) in [("wait_until", &step.wait_until), ("expect", &step.expect)] {
            for (j, c) in checks.iter().enumerate() {
                self.check(n, &[at[0], at[1], K(field), I(j)], c);
            }
        }
    }

    /// Each `{name}` in a text must be a bound broker or a setup placeholder.
    fn placeholders(&mut self, whose: &str, path: &[Seg], text: &str) {
        for name in placeholders_in(text) {
            if self.bound.contains(name) || SETUP_PLACEHOLDERS.iter().any(|(p, _)| *p == name) {
                continue;
            }
            let mut known: Vec<&str> = self.bound.iter().map(String::as_str).collect();
            known.extend(SETUP_PLACEHOLDERS.iter().map(|(p, _)| *p));
            let known = if known.is_empty() {
                "no broker is bound so far".to_string()
            } else {
                format!(
                    "it may use {}",
                    known.iter().map(|k| format!("{{{k}}}")).collect::<Vec<_>>().join(", ")
                )
            };
            let needle = format!("{{{name}}}");
            let p = self.file.problem_within(
                path,
                &needle,
                format!("{whose}: {needle} names no bound broker; {known}"),
            );
            self.problems.push(p);
        }
    }

    fn action(&mut self, n: usize, path: &[Seg], table: &toml::Table) {
        let with = |key: &'static str| -> Vec<Seg> { path.iter().copied().chain([K(key)]).collect() };
        let Some(name) = table.get("action").and_then(toml::Value::as_str) else {
            self.report(
                path,
                format!(
                    "step {n}: an action needs action = \"...\"; a scenario may use: {}",
                    SCENARIO_ACTIONS.join(", ")
                ),
            );
            return;
        };
        if !SCENARIO_ACTIONS.contains(&name) {
            self.report(
                &with("action"),
                format!(
                    "step {n}: unknown action \"{name}\"; a scenario may use: {}",
                    SCENARIO_ACTIONS.join(", ")
                ),
            );
            return;
        }
        for field in target::BROKER_FIELDS {
            if let Some(v) = table.get(field)
                && let Some(p) = self.broker_value_problem(v)
            {
                self.report(&with(field), format!("step {n}: {name} {field}: {p}"));
            }
        }
        // The broker fields hold roles until the step runs; a number stands in for them.
        let mut probe = table.clone();
        for field in target::BROKER_FIELDS {
            if let Some(v) = probe.get_mut(field)
                && v.is_str()
            {
                *v = toml::Value::Integer(0);
            }
        }
        match Action::deserialize(toml::Value::Table(probe)) {
            Ok(action) => self.action_names(n, path, name, &action),
            Err(e) => {
                let message = e.message().trim().to_string();
                let offset = unknown_field(&message)
                    .map_or_else(|| self.file.span(path).start, |f| self.file.key_span(path, f).start);
                let p = self.file.place(offset, format!("step {n}: {name}: {message}"));
                self.problems.push(p);
            }
        }
    }

    /// The topics, partitions and groups an action names.
    fn action_names(&mut self, n: usize, path: &[Seg], name: &str, action: &Action) {
        let with = |key: &'static str| -> Vec<Seg> { path.iter().copied().chain([K(key)]).collect() };
        let mut problems: Vec<(&'static str, String)> = Vec::new();
        match action {
            Action::CreateTopic {
                name: topic,
                partitions,
                ..
            } => {
                self.topics.insert(topic.clone(), *partitions);
            }
            Action::ReplicaLog { topic, partition }
            | Action::Explain {
                target: ExplainTarget::Partition { topic, partition },
            } => {
                let field = if matches!(action, Action::Explain { .. }) {
                    "target"
                } else {
                    "topic"
                };
                problems.extend(
                    self.partition_problem(&format!("{topic}-{partition}"))
                        .map(|p| (field, p)),
                );
            }
            Action::Explain {
                target: ExplainTarget::Group { group },
            } => problems.extend(self.group_problem(group).map(|p| ("target", p))),
            Action::Explain {
                target: ExplainTarget::Broker { broker },
            } => problems.extend(self.broker_id_problem(i64::from(*broker)).map(|p| ("target", p))),
            Action::Seek { topic, partition, .. } => match partition {
                Some(p) => problems.extend(self.partition_problem(&format!("{topic}-{p}")).map(|p| ("topic", p))),
                None => problems.extend(self.topic_problem(topic).map(|p| ("topic", p))),
            },
            Action::DeleteTopic { topic } | Action::SetMinInsync { topic, .. } => {
                problems.extend(self.topic_problem(topic).map(|p| ("topic", p)));
            }
            Action::ElectPreferredLeaders { topic: Some(topic) }
            | Action::SetUncleanElection { topic: Some(topic), .. } => {
                problems.extend(self.topic_problem(topic).map(|p| ("topic", p)))
            }
            Action::AddMember { group }
            | Action::RemoveMember { group }
            | Action::PauseGroup { group }
            | Action::ResumeGroup { group } => problems.extend(self.group_problem(group).map(|p| ("group", p))),
            _ => {}
        }
        for (field, p) in problems {
            self.report(&with(field), format!("step {n}: {name}: {p}"));
        }
    }

    fn check(&mut self, n: usize, path: &[Seg], c: &Check) {
        let with = |key: &'static str| -> Vec<Seg> { path.iter().copied().chain([K(key)]).collect() };
        // A number compared with nothing always holds: a check that cannot fail.
        if c.bounds().is_some_and(|b| b.is_empty()) {
            self.report(
                path,
                format!(
                    "step {n}: {} compares with nothing: give is, at_least or at_most",
                    super::check::describe(c, &BTreeMap::new(), crate::view::lang::Lang::english())
                ),
            );
        }
        if let Some(p) = check_partition(c)
            && let Some(problem) = self.partition_problem(p)
        {
            self.report(&with("partition"), format!("step {n}: {problem}"));
        }
        if let Some(b) = check_broker(c)
            && let Some(problem) = self.broker_value_problem(b)
        {
            self.report(&with("broker"), format!("step {n}: {problem}"));
        }
        if let Some(topic) = check_topic(c)
            && let Some(problem) = self.topic_problem(topic)
        {
            self.report(&with("topic"), format!("step {n}: {problem}"));
        }
        if let Some(group) = check_group(c)
            && let Some(problem) = self.group_problem(group)
        {
            self.report(&with("group"), format!("step {n}: {problem}"));
        }
    }

    /// Translations: no more steps than the scenario, and the same placeholders rule as
    /// the English (by the step they translate).
    fn translations(&mut self, bound_by_step: &[BTreeSet<String>]) {
        let steps = self.scenario.steps.len();
        for (lang, t) in &self.scenario.lang {
            if t.steps.len() > steps {
                self.report(
                    &[K("lang"), K(lang), K("step"), I(steps)],
                    format!("[lang.{lang}] has {} steps, the scenario {steps}", t.steps.len()),
                );
            }
            for (i, words) in t.steps.iter().enumerate().take(steps) {
                self.bound = bound_by_step.get(i).cloned().unwrap_or_default();
                for (field, text) in [("caption", &words.caption), ("why", &words.why)] {
                    if let Some(text) = text {
                        let whose = format!("[lang.{lang}] step {}", i + 1);
                        self.placeholders(&whose, &[K("lang"), K(lang), K("step"), I(i), K(field)], text);
                    }
                }
            }
        }
    }
}

/// The `{name}`s in a text (a name: letters, digits, `_` and `-`).
fn placeholders_in(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        if let Some(close) = rest.find('}') {
            let name = &rest[..close];
            if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-') {
                out.push(name);
                rest = &rest[close + 1..];
            }
        }
    }
    out
}

/// `unknown field `brokr`, expected ...` -> `brokr`.
fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split('`').next()
}

fn check_partition(c: &Check) -> Option<&str> {
    match c {
        Check::LeaderChanged { partition }
        | Check::Leader { partition, .. }
        | Check::Offline { partition }
        | Check::EpochGrew { partition, .. }
        | Check::IsrSize { partition, .. }
        | Check::InIsr { partition, .. }
        | Check::Hw { partition, .. }
        | Check::HwGrew { partition, .. }
        | Check::HwStill { partition }
        | Check::ReplicasEqual { partition } => Some(partition),
        _ => None,
    }
}

fn check_broker(c: &Check) -> Option<&toml::Value> {
    match c {
        Check::Leader { broker, .. }
        | Check::InIsr { broker, .. }
        | Check::Broker { broker, .. }
        | Check::Leads { broker, .. } => Some(broker),
        _ => None,
    }
}

fn check_topic(c: &Check) -> Option<&str> {
    match c {
        Check::Leads { topic, .. } | Check::PreferredLeaders { topic, .. } | Check::UnderReplicated { topic, .. } => {
            topic.as_deref()
        }
        _ => None,
    }
}

fn check_group(c: &Check) -> Option<&str> {
    match c {
        Check::CoordinatorChanged { group }
        | Check::KeyOrderHeld { group }
        | Check::GroupState { group, .. }
        | Check::GroupMembers { group, .. }
        | Check::GenerationGrew { group, .. }
        | Check::FullyAssigned { group }
        | Check::Lag { group, .. }
        | Check::OffsetsKept { group } => Some(group),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario with one topic (orders, 2 partitions) and one group (billing), and
    /// `steps` after it; the setup takes lines 1 to 11.
    fn file(steps: &str) -> String {
        format!(
            "name = \"my\"\ntitle = \"t\"\nconcept = \"c\"\n[setup]\n[[setup.topic]]\nname = \"orders\"\npartitions = 2\n\
             [[setup.group]]\nname = \"billing\"\ntopic = \"orders\"\n\n{steps}"
        )
    }

    /// The problems of a scenario file, one `file:line:column: message` line each.
    fn problems(text: &str) -> Vec<String> {
        match load("my.toml", "my", text) {
            Ok(_) => Vec::new(),
            Err(p) => p.to_string().lines().map(str::to_string).collect(),
        }
    }

    #[test]
    fn a_well_formed_scenario_has_no_problem() {
        let text = file(
            "[[step]]\ncaption = \"Broker {victim} leads orders-1.\"\nbind = { victim = \"leader of orders-1\" }\n\
             actions = [{ action = \"kill_broker\", broker = \"victim\" }]\n\
             wait_until = [{ check = \"leader_changed\", partition = \"orders-1\" }]\n",
        );
        assert_eq!(problems(&text), Vec::<String>::new());
    }

    #[test]
    fn an_unknown_action_lists_only_what_a_scenario_may_use() {
        let text = file("[[step]]\ncaption = \"c\"\nactions = [{ action = \"kil_broker\", broker = 1 }]\n");
        let p = problems(&text);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with("my.toml:14:23: step 1: unknown action \"kil_broker\"; a scenario may use: kill_broker, "),
            "{p:?}"
        );
        assert!(
            !p[0].contains("quit") && !p[0].contains("help") && p[0].contains("explain"),
            "{p:?}"
        );
    }

    #[test]
    fn every_action_a_scenario_may_use_is_one_the_console_knows() {
        for name in SCENARIO_ACTIONS {
            let table: toml::Table = toml::from_str(&format!("action = \"{name}\"")).unwrap_or_else(|e| panic!("{e}"));
            if let Err(e) = Action::deserialize(toml::Value::Table(table)) {
                assert!(!e.message().contains("unknown variant"), "{name}: {e}");
            }
        }
    }

    #[test]
    fn an_unknown_field_of_an_action_is_placed_at_its_key() {
        let text = file("[[step]]\ncaption = \"c\"\nactions = [{ action = \"kill_broker\", brokr = 1 }]\n");
        assert_eq!(
            problems(&text),
            vec!["my.toml:14:38: step 1: kill_broker: unknown field `brokr`, expected `broker`"]
        );
    }

    #[test]
    fn an_unknown_field_of_a_step_is_refused_at_its_line_and_column() {
        let text = file("[[step]]\ncaption = \"c\"\nwait = 3\n");
        let p = problems(&text);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("my.toml:14:1: unknown field `wait`"), "{p:?}");
    }

    #[test]
    fn a_name_never_bound_is_refused_where_it_is_used() {
        let text = file(
            "[[step]]\ncaption = \"c\"\nbind = { victim = \"leader of orders-0\" }\n\
             actions = [{ action = \"kill_broker\", broker = \"victm\" }]\n",
        );
        assert_eq!(
            problems(&text),
            vec![format!(
                "my.toml:15:47: step 1: kill_broker broker: \"victm\" is neither a name bound so far (bound: victim) \
                 nor a role: use {}",
                target::ROLES
            )]
        );
    }

    #[test]
    fn a_bind_may_name_only_what_earlier_steps_bound() {
        let text = file("[[step]]\ncaption = \"c\"\nbind = { a = \"leader of orders-0\", b = \"a\" }\n");
        let p = problems(&text);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with("my.toml:14:40: step 1: bind b: \"a\" is neither a name bound so far (there is none)"),
            "{p:?}"
        );
    }

    #[test]
    fn a_role_on_a_partition_the_setup_does_not_create_is_refused() {
        let text = file("[[step]]\ncaption = \"c\"\nbind = { victim = \"leader of order-0\" }\n");
        assert_eq!(
            problems(&text),
            vec![
                "my.toml:14:19: step 1: bind victim: partition \"order-0\": the setup creates no topic order \
                 (it creates orders)"
            ]
        );
    }

    #[test]
    fn a_partition_past_the_topics_partitions_is_refused() {
        let text =
            file("[[step]]\ncaption = \"c\"\nwait_until = [{ check = \"hw_still\", partition = \"orders-2\" }]\n");
        assert_eq!(
            problems(&text),
            vec![
                "my.toml:14:49: step 1: partition \"orders-2\": topic orders has 2 partitions \
                 (orders-0 to orders-1)"
            ]
        );
    }

    #[test]
    fn a_partition_that_is_not_topic_n_is_refused() {
        let text = file("[[step]]\ncaption = \"c\"\nexpect = [{ check = \"offline\", partition = \"orders\" }]\n");
        assert_eq!(
            problems(&text),
            vec!["my.toml:14:44: step 1: \"orders\" is not a partition (topic-N)"]
        );
    }

    #[test]
    fn an_action_on_a_partition_the_setup_does_not_create_is_refused() {
        let text = file(
            "[[step]]\ncaption = \"c\"\nactions = [{ action = \"replica_log\", topic = \"orders\", partition = 5 }]\n",
        );
        assert_eq!(
            problems(&text),
            vec![
                "my.toml:14:46: step 1: replica_log: partition \"orders-5\": topic orders has 2 partitions \
                 (orders-0 to orders-1)"
            ]
        );
    }

    #[test]
    fn a_topic_created_by_a_step_may_be_named_after_it() {
        let text = file(
            "[[step]]\ncaption = \"c\"\nactions = [{ action = \"create_topic\", name = \"audit\", partitions = 1, \
             replication_factor = 3, cleanup_policy = \"delete\" }, { action = \"replica_log\", topic = \"audit\", \
             partition = 0 }]\n",
        );
        assert_eq!(problems(&text), Vec::<String>::new());
    }

    #[test]
    fn a_placeholder_that_names_no_bound_broker_is_placed_at_its_brace() {
        let text = file(
            "[[step]]\ncaption = \"Broker {leader} leads; {leadr} follows.\"\nbind = { leader = \"leader of orders-0\" }\n\
             [lang.zh]\n[[lang.zh.step]]\ncaption = \"中文 {leadr}\"\n",
        );
        assert_eq!(
            problems(&text),
            vec![
                "my.toml:13:35: step 1: {leadr} names no bound broker; it may use {leader}, {session_timeout}, \
                 {replica_lag_max}, {controller}",
                "my.toml:17:15: [lang.zh] step 1: {leadr} names no bound broker; it may use {leader}, \
                 {session_timeout}, {replica_lag_max}, {controller}",
            ]
        );
    }

    #[test]
    fn a_broker_past_the_setups_brokers_and_an_unknown_group_are_refused() {
        let text = file(
            "[[step]]\ncaption = \"c\"\nexpect = [{ check = \"broker\", broker = 7, status = \"online\" }, \
             { check = \"lag\", group = \"bill\", is = 0 }]\n",
        );
        assert_eq!(
            problems(&text),
            vec![
                "my.toml:14:40: step 1: there is no broker 7: the setup starts 3 (0 to 2)",
                "my.toml:14:89: step 1: the setup has no group bill (it has billing)",
            ]
        );
    }

    #[test]
    fn a_name_that_is_not_the_files_is_refused_at_the_name() {
        let text = file("[[step]]\ncaption = \"c\"\n");
        let e = load("other.toml", "other", &text).expect_err("the name is my");
        assert_eq!(
            e.to_string(),
            "other.toml:1:8: its name is \"my\" but the file is named other.toml"
        );
    }

    #[test]
    fn every_problem_is_reported_at_once_in_file_order() {
        let text = file(
            "[[step]]\ncaption = \"{x}\"\nactions = [{ action = \"quit\" }]\n\
             wait_until = [{ check = \"hw_still\", partition = \"order-0\" }]\n",
        );
        let p = problems(&text);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].starts_with("my.toml:13:") && p[1].starts_with("my.toml:14:") && p[2].starts_with("my.toml:15:"));
    }
}
