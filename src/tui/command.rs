//! The `:` command line (k9s style): every console action by name with its targets, typed
//! in the footer. A line becomes the same [`Action`] a key or a script step makes, so it is
//! refused, confirmed and recorded the same way; what is wrong with a line is said in place,
//! with the text kept. Tab completes the word being typed (commands, brokers, topics,
//! partitions, groups, panes); ↑/↓ go through the lines run before.
//!
//! Targets are named, never "the selected one": `kill 1`, `seek orders-0 100`, `explain
//! group billing`. A topic's partition is `TOPIC-N`, as Kafka's tools print it; a topic whose
//! own name ends in `-N` is found by its whole name first.

use chrono::{DateTime, FixedOffset, Utc};

use super::Pane;
use super::action::{Action, ExplainTarget};
use super::overlay::parse_time;
use crate::kafka::reassign::{self, Assignment, Goal};
use crate::kafka::reset::ResetSpec;
use crate::view::configs::{CLUSTER_CONFIGS, TOPIC_CONFIGS};
use crate::view::{
    BrokerId, BrokerLifecycle, BrokerStatus, ClusterView, LinkState, ProduceRequest, ReplicaMove, SeekPosition,
};

/// One command: its name, its arguments as help shows them, what it does, and whether it
/// changes the cluster (a read-only console does not list it).
pub struct Spec {
    pub name: &'static str,
    pub args: &'static str,
    pub about: &'static str,
    pub changes: bool,
}

/// A command that changes the cluster.
const fn spec(name: &'static str, args: &'static str, about: &'static str) -> Spec {
    Spec {
        name,
        args,
        about,
        changes: true,
    }
}

/// A command that changes nothing a read-only console protects: it looks, moves about the
/// console, or drives the embedded cluster's clock and demo (as [`Action::mutates`] says).
const fn look(name: &'static str, args: &'static str, about: &'static str) -> Spec {
    Spec {
        name,
        args,
        about,
        changes: false,
    }
}

/// Every command, in help order.
pub const COMMANDS: &[Spec] = &[
    spec(
        "kill",
        "BROKER",
        "crash a broker (its sessions expire; no controlled shutdown)",
    ),
    spec("stop", "BROKER", "controlled shutdown: leadership moves away first"),
    spec("start", "BROKER", "start a stopped or killed broker"),
    spec("pause", "BROKER", "freeze a broker's process, like a long GC pause"),
    spec("resume", "BROKER", "let a paused broker run again"),
    spec(
        "broker",
        "add | decommission BROKER",
        "embedded cluster: add a broker (the next id, empty logs), or move a broker's replicas away and let it leave",
    ),
    spec("elect", "[TOPIC]", "preferred-leader election, for one topic or all"),
    spec(
        "topic",
        "create NAME [--partitions N] [--rf N] [--cleanup POLICY] | delete NAME | add-partitions NAME N",
        "create or delete a topic, or grow it to N partitions",
    ),
    spec(
        "delete-records",
        "TOPIC-PARTITION OFFSET|hw",
        "move a partition's log start offset up to OFFSET (hw: every record so far): the records before it are gone for every reader",
    ),
    spec(
        "reassign",
        "(drain BROKER [TOPIC...] | balance [TOPIC...] | rf TOPIC N | move TOPIC-PARTITION FROM TO) [--throttle BYTES_PER_SEC] | cancel TOPIC-PARTITION...|all",
        "move replicas between brokers, optionally throttled (KIP-73): the plan is shown as a diff to confirm; its progress in the Partitions pane (+ joining, - leaving)",
    ),
    look(
        "reassignments",
        "",
        "the reassignments screen (also :reassign alone): each move's lag, progress, rate and ETA; plan or cancel there",
    ),
    spec(
        "config",
        "topic TOPIC [KEY=VALUE... --delete KEY] | broker [KEY=VALUE... --delete KEY]",
        "show (no setting), set or remove a topic's configs (retention.ms, segment.bytes, cleanup.policy...) or the cluster-wide defaults, live (IncrementalAlterConfigs)",
    ),
    look(
        "seek",
        "TOPIC[-PARTITION] OFFSET|earliest|latest|last:N|TIME",
        "read a topic (or one partition) from a position; TIME is YYYY-MM-DD HH:MM:SS, RFC 3339 or -5m",
    ),
    spec(
        "produce",
        "TOPIC[-PARTITION] VALUE [--key KEY]",
        "send one record (\"quotes\" keep spaces)",
    ),
    look(
        "explain",
        "partition TOPIC-PARTITION | broker BROKER | group GROUP",
        "why something is as it is",
    ),
    look(
        "log",
        "TOPIC-PARTITION",
        "a partition's replicated log, one strip per replica",
    ),
    look("flow", "TOPIC-PARTITION", "records flowing through a partition"),
    spec(
        "link",
        "cut|heal A B | delay A B MS",
        "cut, slow down or heal the link between two brokers",
    ),
    spec(
        "isolate",
        "BROKER",
        "cut a broker off from the others and the controller",
    ),
    spec("heal", "", "every link between brokers up again"),
    look(
        "member",
        "add|remove GROUP",
        "add a consumer to a demo group, or take one away",
    ),
    look(
        "group",
        "pause|resume GROUP",
        "stop a demo group's consumers polling, or let them go on",
    ),
    spec(
        "reset-offsets",
        "GROUP --to-earliest|--to-latest|--to-offset N|--shift-by N [--topic TOPIC]",
        "move an empty group's committed offsets, after a preview of old -> new offsets and lag",
    ),
    spec(
        "delete-group",
        "GROUP",
        "delete a group without active members, with its committed offsets",
    ),
    look(
        "acls",
        "",
        "the cluster's ACLs, read only (DescribeAcls); the embedded cluster has no authorizer",
    ),
    look(
        "transactions",
        "",
        "every transactional id: state, producer, partitions, how long it has been open (read only)",
    ),
    look(
        "cluster",
        "[NAME]",
        "switch the console to another cluster: embedded or a [clusters.NAME] profile (no NAME: the list)",
    ),
    look("freeze", "", "stop the cluster's clock"),
    look("thaw", "", "let the cluster's clock run again"),
    look(
        "slow",
        "FACTOR",
        "every engine timeout and interval FACTOR times slower (1: real time)",
    ),
    look("demo", "pause|resume", "pause or resume the demo traffic"),
    look("acks", "0|1|all", "acks of the demo's producers"),
    look(
        "focus",
        "PANE",
        "focus a pane: brokers, topics, partitions, groups, messages, events",
    ),
    look("filter", "TEXT", "filter the focused pane (no TEXT: clear it)"),
    look("help", "", "every key and command"),
    look("quit", "", "leave the console"),
];

/// What a line is checked against: the cluster as the console sees it, the focused pane
/// (what `filter` filters), the clock and the console's time zone (for times).
pub struct Context<'a> {
    pub view: &'a ClusterView,
    pub focus: Pane,
    pub now: DateTime<Utc>,
    pub tz: FixedOffset,
}

/// The action a line asks for, or what is wrong with it.
pub fn parse(line: &str, cx: &Context) -> Result<Action, String> {
    let words = split(line)?;
    let Some((name, args)) = words.split_first() else {
        return Err("type a command; Tab lists them".into());
    };
    let name = name.as_str();
    let spec = COMMANDS
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| unknown_command(name))?;
    let usage = || format!("usage: {} {}", spec.name, spec.args);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let view = cx.view;
    let action = match (name, args.as_slice()) {
        ("quit", []) => Action::Quit,
        ("help", []) => Action::Help,
        ("kill", [b]) => Action::KillBroker {
            broker: broker(view, b)?,
        },
        ("stop", [b]) => Action::StopBroker {
            broker: broker(view, b)?,
        },
        ("start", [b]) => Action::StartBroker {
            broker: broker(view, b)?,
        },
        ("pause", [b]) => Action::PauseBroker {
            broker: broker(view, b)?,
        },
        ("resume", [b]) => Action::ResumeBroker {
            broker: broker(view, b)?,
        },
        ("broker", ["add"]) => Action::AddBroker,
        ("broker", ["decommission", b]) => Action::DecommissionBroker {
            broker: broker(view, b)?,
        },
        ("elect", []) => Action::ElectPreferredLeaders { topic: None },
        ("elect", [t]) => Action::ElectPreferredLeaders {
            topic: Some(topic(view, t)?),
        },
        ("topic", ["create", name, options @ ..]) => create_topic(name, options)?,
        ("topic", ["delete", t]) => Action::DeleteTopic { topic: topic(view, t)? },
        ("topic", ["add-partitions", t, n]) => Action::AddPartitions {
            topic: topic(view, t)?,
            count: number::<i32>(n, "a partition count")?,
        },
        ("delete-records", [tp, offset]) => {
            let (topic, partition) = one_partition(view, tp)?;
            let offset = match *offset {
                "hw" | "-1" => -1,
                text => number::<i64>(text, "an offset or hw")?,
            };
            if offset < -1 {
                return Err(format!("{offset} is not an offset (hw or -1: the high watermark)"));
            }
            Action::DeleteRecords {
                topic,
                partition,
                offset,
            }
        }
        ("reassign" | "reassignments", []) => Action::Reassignments,
        ("reassign", ["cancel", "all"]) => {
            let moves: Vec<ReplicaMove> = view
                .partitions
                .iter()
                .filter(|p| p.reassigning())
                .map(|p| cancel(&p.topic, p.partition))
                .collect();
            if moves.is_empty() {
                return Err("no reassignment in progress".into());
            }
            Action::Reassign { moves }
        }
        ("reassign", ["cancel", partitions @ ..]) if !partitions.is_empty() => {
            let moves = partitions
                .iter()
                .map(|tp| one_partition(view, tp).map(|(t, p)| cancel(&t, p)))
                .collect::<Result<Vec<_>, String>>()?;
            Action::Reassign { moves }
        }
        ("reassign", [goal, rest @ ..]) => {
            let (rest, throttle) = throttle_flag(rest)?;
            match reassign(view, goal, &rest).ok_or_else(usage)?? {
                Action::Reassign { moves } if let Some(throttle) = throttle => {
                    Action::ReassignThrottled { moves, throttle }
                }
                action => action,
            }
        }
        ("config", ["topic", t]) => Action::Configs {
            topic: Some(topic(view, t)?),
        },
        ("config", ["broker"]) => Action::Configs { topic: None },
        ("config", ["topic", t, setting]) if !setting.starts_with("--") => topic_config(view, t, setting)?,
        ("config", ["topic", t, rest @ ..]) if !rest.is_empty() => {
            let topic = topic(view, t)?;
            let (set, delete) = alterations(rest, TOPIC_CONFIGS)?;
            Action::AlterConfigs {
                topic: Some(topic),
                set,
                delete,
            }
        }
        ("config", ["broker", setting]) if !setting.starts_with("--") => cluster_config(setting)?,
        ("config", ["broker", rest @ ..]) if !rest.is_empty() => {
            let (set, delete) = alterations(rest, CLUSTER_CONFIGS)?;
            Action::AlterConfigs {
                topic: None,
                set,
                delete,
            }
        }
        ("seek", [tp, position @ ..]) if !position.is_empty() => {
            let (topic, partition) = topic_partition(view, tp)?;
            Action::Seek {
                topic,
                partition,
                to: seek_position(&position.join(" "), cx)?,
            }
        }
        ("produce", [tp, rest @ ..]) => {
            let (topic, partition) = topic_partition(view, tp)?;
            let (value, key) = match rest {
                [value] => (value, None),
                [value, "--key", key] | ["--key", key, value] => (value, Some(key.to_string())),
                _ => return Err(usage()),
            };
            Action::Produce(ProduceRequest {
                topic,
                partition,
                key,
                value: value.to_string(),
                headers: Vec::new(),
            })
        }
        ("explain", ["partition", tp]) => {
            let (topic, partition) = one_partition(view, tp)?;
            Action::Explain {
                target: ExplainTarget::Partition { topic, partition },
            }
        }
        ("explain", ["broker", b]) => Action::Explain {
            target: ExplainTarget::Broker {
                broker: broker(view, b)?,
            },
        },
        ("explain", ["group", g]) => Action::Explain {
            target: ExplainTarget::Group { group: group(view, g)? },
        },
        ("log", [tp]) => {
            let (topic, partition) = one_partition(view, tp)?;
            Action::ReplicaLog { topic, partition }
        }
        ("flow", [tp]) => {
            let (topic, partition) = one_partition(view, tp)?;
            Action::Flow { topic, partition }
        }
        ("link", [how @ ("cut" | "heal"), a, b]) => {
            let (a, b) = two_brokers(view, a, b)?;
            let state = if *how == "cut" { LinkState::Cut } else { LinkState::Up };
            Action::SetLink { a, b, state }
        }
        ("link", ["delay", a, b, ms]) => {
            let (a, b) = two_brokers(view, a, b)?;
            let ms = number::<u64>(ms, "a delay in milliseconds")?;
            Action::SetLink {
                a,
                b,
                state: LinkState::Delay(ms),
            }
        }
        ("isolate", [b]) => Action::Isolate {
            broker: broker(view, b)?,
        },
        ("heal", []) => Action::HealLinks,
        ("member", ["add", g]) => Action::AddMember { group: group(view, g)? },
        ("member", ["remove", g]) => Action::RemoveMember { group: group(view, g)? },
        ("group", ["pause", g]) => Action::PauseGroup { group: group(view, g)? },
        ("group", ["resume", g]) => Action::ResumeGroup { group: group(view, g)? },
        ("reset-offsets", [g, options @ ..]) => reset_offsets(view, g, options).map_err(|e| e.unwrap_or_else(usage))?,
        ("delete-group", [g]) => Action::DeleteGroup { group: group(view, g)? },
        ("acls", []) => Action::Acls,
        ("transactions", []) => Action::Transactions,
        ("cluster", []) => Action::Clusters,
        ("cluster", [name]) => Action::SwitchCluster { name: name.to_string() },
        ("freeze", []) => Action::Freeze,
        ("thaw", []) => Action::Thaw,
        ("slow", [factor]) => {
            let factor = number::<u32>(factor, "a factor from 1 to 100")?;
            if !(1..=100).contains(&factor) {
                return Err(format!("slow: {factor} is not a factor from 1 to 100"));
            }
            Action::SlowMotion { factor }
        }
        ("demo", ["pause"]) => Action::PauseDemo,
        ("demo", ["resume"]) => Action::ResumeDemo,
        ("acks", [acks]) => Action::SetProducerAcks {
            acks: match *acks {
                "0" => 0,
                "1" => 1,
                "all" | "-1" => -1,
                other => return Err(format!("acks: {other:?} is not 0, 1 or all")),
            },
        },
        ("focus", [p]) => Action::Focus { pane: pane(p)? },
        ("filter", text) => Action::Filter {
            pane: cx.focus,
            text: text.join(" "),
        },
        _ => return Err(usage()),
    };
    Ok(action)
}

/// The line's words: split on spaces, `"..."` keeping spaces (a `\"` inside is a quote).
fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else {
            return Ok(words);
        };
        let mut word = String::new();
        if first == '"' {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err("a quote is not closed".into()),
                    Some('"') => break,
                    Some('\\') if chars.peek() == Some(&'"') => word.push('"'),
                    Some(c) => word.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                word.push(c);
            }
        }
        words.push(word);
    }
}

fn unknown_command(name: &str) -> String {
    let close: Vec<&str> = COMMANDS
        .iter()
        .map(|s| s.name)
        .filter(|n| n.starts_with(name) || name.starts_with(n) || distance(n, name) <= 2)
        .collect();
    match close.as_slice() {
        [] => format!("no command {name:?}; Tab lists them"),
        [one] => format!("no command {name:?}: did you mean {one}?"),
        many => format!("no command {name:?}: did you mean {}?", many.join(", ")),
    }
}

/// Edit distance, for "did you mean".
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn number<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{text:?} is not {what}"))
}

fn broker(view: &ClusterView, text: &str) -> Result<BrokerId, String> {
    let id = number::<BrokerId>(text, "a broker id")?;
    if view.brokers.iter().any(|b| b.id == id) {
        return Ok(id);
    }
    let ids: Vec<String> = view.brokers.iter().map(|b| b.id.to_string()).collect();
    Err(format!("no broker {id} (brokers: {})", ids.join(", ")))
}

fn two_brokers(view: &ClusterView, a: &str, b: &str) -> Result<(BrokerId, BrokerId), String> {
    let (a, b) = (broker(view, a)?, broker(view, b)?);
    if a == b {
        return Err(format!("a link joins two brokers: {a} and {a} are one"));
    }
    Ok((a, b))
}

fn topic(view: &ClusterView, name: &str) -> Result<String, String> {
    match view.topic(name) {
        Some(t) => Ok(t.name.clone()),
        None => Err(format!("no topic {name:?}")),
    }
}

fn group(view: &ClusterView, id: &str) -> Result<String, String> {
    match view.groups.iter().find(|g| g.group_id == id) {
        Some(g) => Ok(g.group_id.clone()),
        None => Err(format!("no group {id:?}")),
    }
}

/// `TOPIC` (every partition) or `TOPIC-N`.
fn topic_partition(view: &ClusterView, text: &str) -> Result<(String, Option<i32>), String> {
    if let Some(t) = view.topic(text) {
        return Ok((t.name.clone(), None));
    }
    let Some((name, partition)) = text
        .rsplit_once('-')
        .and_then(|(name, n)| Some((name, n.parse::<i32>().ok()?)))
    else {
        return Err(format!("no topic {text:?}"));
    };
    let t = view.topic(name).ok_or_else(|| format!("no topic {name:?}"))?;
    if !(0..t.partitions).contains(&partition) {
        return Err(format!(
            "{name} has partitions 0-{}; there is no {partition}",
            t.partitions - 1
        ));
    }
    Ok((t.name.clone(), Some(partition)))
}

fn cancel(topic: &str, partition: i32) -> ReplicaMove {
    ReplicaMove {
        topic: topic.to_string(),
        partition,
        replicas: None,
    }
}

/// A reassignment's words without `--throttle BYTES_PER_SEC` (`--throttle=...` too), and the
/// throttle when given.
fn throttle_flag<'a>(words: &[&'a str]) -> Result<(Vec<&'a str>, Option<u64>), String> {
    let mut rest = Vec::new();
    let mut throttle = None;
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let value = match word.strip_prefix("--throttle") {
            Some("") => words
                .next()
                .ok_or_else(|| "--throttle needs a rate in bytes per second (such as 10MiB)".to_string())?,
            Some(v) if v.starts_with('=') => &v[1..],
            _ => {
                rest.push(*word);
                continue;
            }
        };
        throttle = Some(crate::kafka::parse_size(value).map_err(|e| format!("--throttle: {e}"))?);
    }
    Ok((rest, throttle))
}

/// `reassign drain|balance|rf|move ...`: the plan the cluster as the console sees it needs,
/// from the same planner as `kdeck reassign plan`. `None` when the words are not a goal.
fn reassign(view: &ClusterView, goal: &str, args: &[&str]) -> Option<Result<Action, String>> {
    let topics = |names: &[&str]| names.iter().map(|t| topic(view, t)).collect::<Result<Vec<_>, String>>();
    let goal = match (goal, args) {
        ("drain", [b, names @ ..]) => broker(view, b).and_then(|broker| {
            Ok(Goal::Drain {
                broker,
                topics: topics(names)?,
            })
        }),
        ("balance", names) => topics(names).map(|topics| Goal::Balance { topics }),
        ("rf", [t, n]) => topic(view, t).and_then(|topic| {
            Ok(Goal::ReplicationFactor {
                topic,
                replication_factor: number(n, "a replication factor")?,
            })
        }),
        ("move", [tp, from, to]) => one_partition(view, tp).and_then(|(topic, partition)| {
            Ok(Goal::Move {
                topic,
                partition,
                from: broker(view, from)?,
                to: broker(view, to)?,
            })
        }),
        _ => return None,
    };
    Some(goal.and_then(|goal| {
        let (current, live) = assignments(view);
        let plan = reassign::propose(&current, &live, &goal)?;
        if plan.partitions.is_empty() {
            return Err("nothing to move: the cluster already meets this".into());
        }
        let moves = plan
            .partitions
            .into_iter()
            .map(|a| ReplicaMove {
                topic: a.topic,
                partition: a.partition,
                replicas: Some(a.replicas),
            })
            .collect();
        Ok(Action::Reassign { moves })
    }))
}

/// Every partition's replicas (a moving one's target) and the brokers online, for a planner.
pub fn assignments(view: &ClusterView) -> (Vec<Assignment>, Vec<BrokerId>) {
    let current = view
        .partitions
        .iter()
        .map(|p| {
            let target = p
                .replicas
                .iter()
                .map(|r| r.broker)
                .filter(|b| !p.removing.contains(b))
                .collect();
            Assignment::new(p.topic.clone(), p.partition, target)
        })
        .collect();
    let live = view
        .brokers
        .iter()
        // A broker being decommissioned takes no new replicas.
        .filter(|b| b.status == BrokerStatus::Online && !matches!(b.lifecycle, Some(BrokerLifecycle::Draining { .. })))
        .map(|b| b.id)
        .collect();
    (current, live)
}

fn one_partition(view: &ClusterView, text: &str) -> Result<(String, i32), String> {
    match topic_partition(view, text)? {
        (topic, Some(p)) => Ok((topic, p)),
        (topic, None) => Err(format!("which partition of {topic}? ({topic}-0, {topic}-1, ...)")),
    }
}

fn seek_position(text: &str, cx: &Context) -> Result<SeekPosition, String> {
    Ok(match text {
        "earliest" | "beginning" => SeekPosition::Beginning,
        "latest" | "end" => SeekPosition::End,
        _ => {
            if let Some(n) = text.strip_prefix("last:") {
                let n = number::<i64>(n, "a count of records")?;
                if n < 1 {
                    return Err("last: needs a count of at least 1".into());
                }
                SeekPosition::Last(n)
            } else if let Ok(offset) = text.parse::<i64>() {
                if offset < 0 {
                    return Err(format!("offset {offset} is negative (for a time back, say -5m)"));
                }
                SeekPosition::Offset(offset)
            } else {
                SeekPosition::Timestamp(parse_time(text, cx.now, cx.tz)?)
            }
        }
    })
}

/// `reset-offsets GROUP --to-... [--topic TOPIC]`, options in any order; `Err(None)` when
/// the line is not the command's shape (the usage says it).
fn reset_offsets(view: &ClusterView, g: &str, options: &[&str]) -> Result<Action, Option<String>> {
    let group = group(view, g)?;
    let (mut to, mut topic_name) = (None, None);
    let mut rest = options.iter();
    while let Some(option) = rest.next() {
        let spec = match *option {
            "--to-earliest" => ResetSpec::Earliest,
            "--to-latest" => ResetSpec::Latest,
            "--to-offset" | "--shift-by" => {
                let value = rest.next().ok_or(None)?;
                let n = number::<i64>(value, "a number")?;
                if *option == "--to-offset" {
                    if n < 0 {
                        return Err(Some(format!("offset {n} is negative")));
                    }
                    ResetSpec::Offset(n)
                } else {
                    ResetSpec::ShiftBy(n)
                }
            }
            "--topic" => {
                let name = rest.next().ok_or(None)?;
                if topic_name.replace(topic(view, name)?).is_some() {
                    return Err(None);
                }
                continue;
            }
            _ => return Err(None),
        };
        if to.replace(spec).is_some() {
            return Err(Some(
                "one of --to-earliest, --to-latest, --to-offset, --shift-by".into(),
            ));
        }
    }
    Ok(Action::ResetOffsets {
        group,
        topic: topic_name,
        to: to.ok_or(None)?,
    })
}

fn create_topic(name: &str, options: &[&str]) -> Result<Action, String> {
    if let Some(problem) = crate::view::topic_name_error(name) {
        return Err(format!("topic name {name:?}: {problem}"));
    }
    let (mut partitions, mut replication_factor, mut cleanup_policy) = (1, 1, "delete".to_string());
    let mut rest = options;
    while let [flag, value, tail @ ..] = rest {
        match *flag {
            "--partitions" | "-p" => partitions = number(value, "a partition count")?,
            "--rf" | "--replication-factor" | "-r" => replication_factor = number(value, "a replication factor")?,
            "--cleanup" | "--cleanup-policy" => {
                if !matches!(*value, "delete" | "compact" | "compact,delete" | "delete,compact") {
                    return Err(format!("--cleanup {value:?}: delete, compact or compact,delete"));
                }
                cleanup_policy = value.to_string();
            }
            other => return Err(format!("topic create: no option {other:?}")),
        }
        rest = tail;
    }
    if let [flag] = rest {
        return Err(format!("topic create: {flag} needs a value"));
    }
    if partitions < 1 || replication_factor < 1 {
        return Err("topic create: partitions and replication factor are at least 1".into());
    }
    Ok(Action::CreateTopic {
        name: name.to_string(),
        partitions,
        replication_factor,
        cleanup_policy,
    })
}

fn on_off(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "true" | "on" => Ok(true),
        "false" | "off" => Ok(false),
        _ => Err(format!("{key}: {value:?} is not true or false")),
    }
}

fn setting(text: &str) -> Result<(&str, &str), String> {
    text.split_once('=')
        .ok_or_else(|| format!("{text:?}: write KEY=VALUE, as min.insync.replicas=2"))
}

/// One setting of a topic: the trainer's live toggles keep their own actions (their
/// confirmations, their timeline words); every other config is an AlterConfigs.
fn topic_config(view: &ClusterView, t: &str, text: &str) -> Result<Action, String> {
    let topic = topic(view, t)?;
    let (key, value) = setting(text)?;
    match key {
        "min.insync.replicas" => Ok(Action::SetMinInsync {
            topic,
            value: number(value, "a replica count")?,
        }),
        "unclean.leader.election.enable" => Ok(Action::SetUncleanElection {
            topic: Some(topic),
            enabled: on_off(key, value)?,
        }),
        _ => {
            let (set, delete) = alterations(&[text], TOPIC_CONFIGS)?;
            Ok(Action::AlterConfigs {
                topic: Some(topic),
                set,
                delete,
            })
        }
    }
}

fn cluster_config(text: &str) -> Result<Action, String> {
    let (key, value) = setting(text)?;
    match key {
        "unclean.leader.election.enable" => Ok(Action::SetUncleanElection {
            topic: None,
            enabled: on_off(key, value)?,
        }),
        "auto.leader.rebalance.enable" => Ok(Action::SetAutoRebalance {
            enabled: on_off(key, value)?,
        }),
        _ => {
            let (set, delete) = alterations(&[text], CLUSTER_CONFIGS)?;
            Ok(Action::AlterConfigs {
                topic: None,
                set,
                delete,
            })
        }
    }
}

/// `KEY=VALUE...` and `--delete KEY` words: what to set and what to remove. Names outside
/// `known` are refused here, before anything is sent.
type Alterations = (Vec<(String, String)>, Vec<String>);

fn alterations(words: &[&str], known: &[&str]) -> Result<Alterations, String> {
    let check = |key: &str| {
        if known.contains(&key) {
            Ok(())
        } else {
            Err(format!("{key} is not a config kdeck changes; Tab lists them"))
        }
    };
    let (mut set, mut delete) = (Vec::new(), Vec::new());
    let mut rest = words;
    while let [word, tail @ ..] = rest {
        if *word == "--delete" {
            let [key, tail @ ..] = tail else {
                return Err("--delete needs a config name".into());
            };
            check(key)?;
            delete.push(key.to_string());
            rest = tail;
            continue;
        }
        let (key, value) = setting(word)?;
        check(key)?;
        set.push((key.to_string(), value.to_string()));
        rest = tail;
    }
    Ok((set, delete))
}

fn pane(text: &str) -> Result<Pane, String> {
    let by_number = text
        .parse::<usize>()
        .ok()
        .and_then(|n| Pane::ALL.get(n.checked_sub(1)?));
    by_number
        .or_else(|| Pane::ALL.iter().find(|p| p.name() == text))
        .copied()
        .ok_or_else(|| {
            let names: Vec<&str> = Pane::ALL.iter().map(|p| p.name()).collect();
            format!("no pane {text:?} ({} or 1-6)", names.join(", "))
        })
}

/// What the word being typed (the line's last, possibly empty) can become.
pub fn completions(line: &str, view: &ClusterView, clusters: &[String]) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let typing = if line.ends_with(char::is_whitespace) || line.is_empty() {
        ""
    } else {
        words.last().copied().unwrap_or("")
    };
    let before: &[&str] = if typing.is_empty() {
        &words
    } else {
        &words[..words.len() - 1]
    };
    let brokers = || view.brokers.iter().map(|b| b.id.to_string()).collect::<Vec<_>>();
    let topics = || view.topics.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    let partitions = || {
        view.topics
            .iter()
            .flat_map(|t| (0..t.partitions).map(move |p| format!("{}-{p}", t.name)))
            .collect::<Vec<_>>()
    };
    let groups = || view.groups.iter().map(|g| g.group_id.clone()).collect::<Vec<_>>();
    let words_of = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    let setting_words = |list: &[&str]| {
        let mut words: Vec<String> = list.iter().map(|w| format!("{w}=")).collect();
        words.push("--delete".into());
        words
    };
    let candidates: Vec<String> = match before {
        [] => COMMANDS.iter().map(|s| s.name.to_string()).collect(),
        ["kill" | "stop" | "start" | "pause" | "resume" | "isolate"] => brokers(),
        ["elect"] => topics(),
        ["broker"] => words_of(&["add", "decommission"]),
        ["broker", "decommission"] => brokers(),
        ["topic"] => words_of(&["create", "delete", "add-partitions"]),
        ["topic", "delete" | "add-partitions"] => topics(),
        ["delete-records"] => partitions(),
        ["delete-records", _] => words_of(&["hw"]),
        ["topic", "create", _, ..] => words_of(&["--partitions", "--rf", "--cleanup"]),
        ["config"] => words_of(&["topic", "broker"]),
        ["config", "topic"] => topics(),
        ["config", "topic", _, .., "--delete"] => words_of(TOPIC_CONFIGS),
        ["config", "broker", .., "--delete"] => words_of(CLUSTER_CONFIGS),
        ["config", "topic", _, ..] => setting_words(TOPIC_CONFIGS),
        ["config", "broker", ..] => setting_words(CLUSTER_CONFIGS),
        ["seek" | "produce"] => {
            let mut all = topics();
            all.extend(partitions());
            all
        }
        ["seek", _] => words_of(&["earliest", "latest", "last:"]),
        ["explain"] => words_of(&["partition", "broker", "group"]),
        ["explain", "partition"] | ["log" | "flow"] => partitions(),
        ["explain", "broker"] => brokers(),
        ["explain", "group"] | ["member" | "group", _] | ["reset-offsets" | "delete-group"] => groups(),
        ["reset-offsets", .., "--topic"] => topics(),
        ["reset-offsets", _, ..] => words_of(&["--to-earliest", "--to-latest", "--to-offset", "--shift-by", "--topic"]),
        ["link"] => words_of(&["cut", "heal", "delay"]),
        ["link", _] | ["link", _, _] => brokers(),
        ["member"] => words_of(&["add", "remove"]),
        ["group"] | ["demo"] => words_of(&["pause", "resume"]),
        ["acks"] => words_of(&["0", "1", "all"]),
        ["focus"] => Pane::ALL.iter().map(|p| p.name().to_string()).collect(),
        ["cluster"] => clusters.to_vec(),
        _ => Vec::new(),
    };
    candidates.into_iter().filter(|c| c.starts_with(typing)).collect()
}

/// The line with its last word completed as far as `candidates` agree: the whole candidate
/// and a space when there is one (none after a `=` or `:` that wants a value), their
/// common prefix when there are several.
pub fn complete(line: &str, candidates: &[String]) -> String {
    let start = if line.ends_with(char::is_whitespace) {
        line.len()
    } else {
        line.rfind(char::is_whitespace).map_or(0, |i| i + 1)
    };
    let head = &line[..start];
    match candidates {
        [] => line.to_string(),
        [one] if one.ends_with(['=', ':']) => format!("{head}{one}"),
        [one] => format!("{head}{one} "),
        [first, rest @ ..] => {
            let mut common = first.len();
            for c in rest {
                common = common.min(
                    first
                        .char_indices()
                        .zip(c.chars())
                        .find(|((_, a), b)| a != b)
                        .map_or(first.len().min(c.len()), |((i, _), _)| i),
                );
            }
            let common = &first[..common];
            if common.len() > line.len() - start {
                format!("{head}{common}")
            } else {
                line.to_string()
            }
        }
    }
}

/// The lines run before, oldest first, and where ↑/↓ stand in them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    lines: Vec<String>,
}

/// How many lines the history keeps.
const HISTORY: usize = 100;

impl History {
    /// Keeps a line that ran (not again when it is the last one).
    pub fn push(&mut self, line: &str) {
        let line = line.trim();
        if line.is_empty() || self.lines.last().is_some_and(|l| l == line) {
            return;
        }
        if self.lines.len() == HISTORY {
            self.lines.remove(0);
        }
        self.lines.push(line.to_string());
    }

    /// The line `back` steps before the newest (0: the newest).
    pub fn get(&self, back: usize) -> Option<&str> {
        self.lines.iter().rev().nth(back).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// The command line being typed: its text, where ↑/↓ stand in the history (`None`: a new
/// line), what Tab offered and what is wrong with the line run last.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommandLine {
    pub text: String,
    pub history_at: Option<usize>,
    pub offered: Vec<String>,
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{BrokerRow, BrokerStatus, GroupRow, SourceKind, Throughput, TopicRow};

    /// Brokers 0-2; topics `orders` (6 partitions) and `run-2024` (a name ending in `-N`,
    /// 1 partition); group `billing`.
    fn view() -> ClusterView {
        let mut v = ClusterView::empty("test", SourceKind::Embedded);
        v.brokers = (0..3)
            .map(|id| BrokerRow {
                id,
                status: BrokerStatus::Online,
                is_controller: id == 0,
                leaders: 2,
                replicas: 6,
                throughput: Throughput::Bytes {
                    in_per_sec: 0.0,
                    out_per_sec: 0.0,
                },
                address: None,
                disk_bytes: None,
                produce_history: Vec::new(),
                changed_at: None,
                lifecycle: None,
            })
            .collect();
        let topic = |name: &str, partitions| TopicRow {
            name: name.into(),
            internal: false,
            partitions,
            replication_factor: 3,
            under_replicated: 0,
            offline: 0,
            messages: 0,
            size_bytes: None,
            messages_per_sec: 0.0,
            total_lag: None,
            retention: None,
            unclean_election: None,
        };
        v.topics = vec![topic("orders", 6), topic("run-2024", 1)];
        v.groups = vec![GroupRow {
            group_id: "billing".into(),
            state: "Stable".into(),
            protocol: "range".into(),
            generation: 1,
            coordinator: 0,
            members: Vec::new(),
            offsets: Vec::new(),
            total_lag: 0,
            lag_history: Vec::new(),
        }];
        v
    }

    fn run(line: &str) -> Result<Action, String> {
        let view = view();
        let cx = Context {
            view: &view,
            focus: Pane::Topics,
            now: DateTime::parse_from_rfc3339("2026-12-04T10:00:00Z")
                .map(|t| t.with_timezone(&Utc))
                .unwrap_or_default(),
            tz: FixedOffset::east_opt(0).unwrap_or_else(|| unreachable!()),
        };
        parse(line, &cx)
    }

    #[test]
    fn each_command_becomes_the_action_its_key_would_make_with_the_target_named() {
        let cases: Vec<(&str, Action)> = vec![
            ("kill 1", Action::KillBroker { broker: 1 }),
            ("  stop   2 ", Action::StopBroker { broker: 2 }),
            ("start 0", Action::StartBroker { broker: 0 }),
            ("pause 1", Action::PauseBroker { broker: 1 }),
            ("resume 1", Action::ResumeBroker { broker: 1 }),
            ("elect", Action::ElectPreferredLeaders { topic: None }),
            (
                "elect orders",
                Action::ElectPreferredLeaders {
                    topic: Some("orders".into()),
                },
            ),
            (
                "topic create audit --partitions 6 --rf 3",
                Action::CreateTopic {
                    name: "audit".into(),
                    partitions: 6,
                    replication_factor: 3,
                    cleanup_policy: "delete".into(),
                },
            ),
            (
                "topic create state --cleanup compact",
                Action::CreateTopic {
                    name: "state".into(),
                    partitions: 1,
                    replication_factor: 1,
                    cleanup_policy: "compact".into(),
                },
            ),
            ("topic delete orders", Action::DeleteTopic { topic: "orders".into() }),
            (
                "seek orders-0 100",
                Action::Seek {
                    topic: "orders".into(),
                    partition: Some(0),
                    to: SeekPosition::Offset(100),
                },
            ),
            (
                "seek orders earliest",
                Action::Seek {
                    topic: "orders".into(),
                    partition: None,
                    to: SeekPosition::Beginning,
                },
            ),
            (
                "seek run-2024 last:5",
                Action::Seek {
                    topic: "run-2024".into(),
                    partition: None,
                    to: SeekPosition::Last(5),
                },
            ),
            (
                "seek run-2024-0 2026-12-04 09:00:00",
                Action::Seek {
                    topic: "run-2024".into(),
                    partition: Some(0),
                    to: SeekPosition::Timestamp(
                        DateTime::parse_from_rfc3339("2026-12-04T09:00:00Z")
                            .map(|t| t.with_timezone(&Utc))
                            .unwrap_or_default(),
                    ),
                },
            ),
            (
                "seek orders -5m",
                Action::Seek {
                    topic: "orders".into(),
                    partition: None,
                    to: SeekPosition::Timestamp(
                        DateTime::parse_from_rfc3339("2026-12-04T09:55:00Z")
                            .map(|t| t.with_timezone(&Utc))
                            .unwrap_or_default(),
                    ),
                },
            ),
            (
                r#"produce orders-2 "hello world" --key k1"#,
                Action::Produce(ProduceRequest {
                    topic: "orders".into(),
                    partition: Some(2),
                    key: Some("k1".into()),
                    value: "hello world".into(),
                    headers: Vec::new(),
                }),
            ),
            (
                "explain partition orders-3",
                Action::Explain {
                    target: ExplainTarget::Partition {
                        topic: "orders".into(),
                        partition: 3,
                    },
                },
            ),
            (
                "explain broker 2",
                Action::Explain {
                    target: ExplainTarget::Broker { broker: 2 },
                },
            ),
            (
                "explain group billing",
                Action::Explain {
                    target: ExplainTarget::Group {
                        group: "billing".into(),
                    },
                },
            ),
            (
                "log orders-1",
                Action::ReplicaLog {
                    topic: "orders".into(),
                    partition: 1,
                },
            ),
            (
                "flow orders-1",
                Action::Flow {
                    topic: "orders".into(),
                    partition: 1,
                },
            ),
            (
                "link cut 0 1",
                Action::SetLink {
                    a: 0,
                    b: 1,
                    state: LinkState::Cut,
                },
            ),
            (
                "link delay 1 2 250",
                Action::SetLink {
                    a: 1,
                    b: 2,
                    state: LinkState::Delay(250),
                },
            ),
            (
                "link heal 0 1",
                Action::SetLink {
                    a: 0,
                    b: 1,
                    state: LinkState::Up,
                },
            ),
            ("isolate 2", Action::Isolate { broker: 2 }),
            ("heal", Action::HealLinks),
            (
                "member add billing",
                Action::AddMember {
                    group: "billing".into(),
                },
            ),
            (
                "member remove billing",
                Action::RemoveMember {
                    group: "billing".into(),
                },
            ),
            (
                "group pause billing",
                Action::PauseGroup {
                    group: "billing".into(),
                },
            ),
            (
                "group resume billing",
                Action::ResumeGroup {
                    group: "billing".into(),
                },
            ),
            ("freeze", Action::Freeze),
            ("thaw", Action::Thaw),
            ("slow 5", Action::SlowMotion { factor: 5 }),
            ("demo pause", Action::PauseDemo),
            ("demo resume", Action::ResumeDemo),
            ("acks all", Action::SetProducerAcks { acks: -1 }),
            ("acks 0", Action::SetProducerAcks { acks: 0 }),
            (
                "config topic orders min.insync.replicas=2",
                Action::SetMinInsync {
                    topic: "orders".into(),
                    value: 2,
                },
            ),
            (
                "config topic orders unclean.leader.election.enable=true",
                Action::SetUncleanElection {
                    topic: Some("orders".into()),
                    enabled: true,
                },
            ),
            (
                "config broker auto.leader.rebalance.enable=false",
                Action::SetAutoRebalance { enabled: false },
            ),
            (
                "config topic orders retention.ms=3600000 cleanup.policy=compact,delete --delete segment.bytes",
                Action::AlterConfigs {
                    topic: Some("orders".into()),
                    set: vec![
                        ("retention.ms".into(), "3600000".into()),
                        ("cleanup.policy".into(), "compact,delete".into()),
                    ],
                    delete: vec!["segment.bytes".into()],
                },
            ),
            (
                "config topic orders --delete retention.ms",
                Action::AlterConfigs {
                    topic: Some("orders".into()),
                    set: Vec::new(),
                    delete: vec!["retention.ms".into()],
                },
            ),
            (
                "config broker log.retention.ms=86400000",
                Action::AlterConfigs {
                    topic: None,
                    set: vec![("log.retention.ms".into(), "86400000".into())],
                    delete: Vec::new(),
                },
            ),
            ("focus partitions", Action::Focus { pane: Pane::Partitions }),
            ("focus 5", Action::Focus { pane: Pane::Messages }),
            (
                "filter urp",
                Action::Filter {
                    pane: Pane::Topics,
                    text: "urp".into(),
                },
            ),
            ("help", Action::Help),
            ("quit", Action::Quit),
        ];
        for (line, want) in cases {
            let spec = COMMANDS.iter().find(|s| line.split_whitespace().next() == Some(s.name));
            assert_eq!(
                spec.map(|s| s.changes),
                Some(want.mutates()),
                "{line}: listed in read-only help?"
            );
            assert_eq!(run(line), Ok(want), "{line}");
        }
    }

    #[test]
    fn every_command_in_the_table_parses_from_a_line() {
        // Each name answers with its action or its usage, never "no command".
        for spec in COMMANDS {
            if let Err(e) = run(spec.name) {
                assert!(!e.starts_with("no command"), "{}: {e}", spec.name);
            }
        }
    }

    #[test]
    fn a_wrong_line_says_what_is_wrong() {
        let cases = [
            ("", "type a command"),
            ("kil 1", "did you mean kill?"),
            ("frobnicate", "no command \"frobnicate\"; Tab lists them"),
            ("kill", "usage: kill BROKER"),
            ("kill 7", "no broker 7 (brokers: 0, 1, 2)"),
            ("kill one", "\"one\" is not a broker id"),
            ("seek orders-9 0", "orders has partitions 0-5; there is no 9"),
            ("seek nope-0 0", "no topic \"nope\""),
            ("seek orders -3", "offset -3 is negative (for a time back, say -5m)"),
            ("seek orders yesterday", "is not a time"),
            ("log orders", "which partition of orders?"),
            ("link cut 1 1", "a link joins two brokers"),
            ("slow 0", "not a factor from 1 to 100"),
            ("acks 2", "\"2\" is not 0, 1 or all"),
            ("topic create bad/name", "topic name \"bad/name\""),
            ("topic create t --partitions", "--partitions needs a value"),
            ("topic create t --replicas 3", "no option \"--replicas\""),
            (
                "config topic orders retention.minutes=1000",
                "retention.minutes is not a config kdeck changes",
            ),
            ("config topic orders --delete", "--delete needs a config name"),
            ("config topic orders min.insync.replicas", "write KEY=VALUE"),
            ("produce orders \"open", "a quote is not closed"),
            ("explain group nobody", "no group \"nobody\""),
            ("focus sideways", "no pane \"sideways\""),
        ];
        for (line, want) in cases {
            match run(line) {
                Ok(a) => panic!("{line:?} ran as {a:?}"),
                Err(e) => assert!(e.contains(want), "{line:?}: {e:?} does not say {want:?}"),
            }
        }
    }

    #[test]
    fn tab_offers_what_the_word_being_typed_can_become() {
        let v = view();
        let offer = |line: &str| completions(line, &v, &[]);
        assert_eq!(offer("ki"), vec!["kill"]);
        assert!(offer("").len() == COMMANDS.len());
        assert_eq!(offer("kill "), vec!["0", "1", "2"]);
        assert_eq!(
            offer("seek or"),
            vec![
                "orders", "orders-0", "orders-1", "orders-2", "orders-3", "orders-4", "orders-5"
            ]
        );
        assert_eq!(offer("log run"), vec!["run-2024-0"]);
        assert_eq!(offer("explain g"), vec!["group"]);
        assert_eq!(offer("member add "), vec!["billing"]);
        assert_eq!(offer("config topic orders min.i"), vec!["min.insync.replicas="]);
        assert_eq!(
            offer("config topic orders retention"),
            vec!["retention.bytes=", "retention.ms="]
        );
        assert_eq!(offer("config topic orders --delete segment.b"), vec!["segment.bytes"]);
        assert_eq!(offer("config broker log.retention.m"), vec!["log.retention.ms="]);
        assert_eq!(offer("focus par"), vec!["partitions"]);
        assert!(offer("quit ").is_empty());
    }

    #[test]
    fn completing_takes_one_candidate_whole_and_several_as_far_as_they_agree() {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(complete("ki", &list(&["kill"])), "kill ");
        assert_eq!(complete("seek or", &list(&["orders", "orders-0"])), "seek orders");
        assert_eq!(complete("seek orders", &list(&["orders", "orders-0"])), "seek orders");
        assert_eq!(complete("s", &list(&["seek", "slow", "start", "stop"])), "s");
        assert_eq!(complete("st", &list(&["start", "stop"])), "st");
        assert_eq!(complete("sta", &list(&["start"])), "start ");
        assert_eq!(complete("kill ", &list(&["0"])), "kill 0 ");
        assert_eq!(
            complete("config topic orders min", &list(&["min.insync.replicas="])),
            "config topic orders min.insync.replicas="
        );
        assert_eq!(complete("zz", &[]), "zz");
    }

    #[test]
    fn history_keeps_lines_newest_first_without_repeats_and_at_most_its_size() {
        let mut h = History::default();
        h.push("kill 1");
        h.push("kill 1");
        h.push("  ");
        h.push("start 1");
        assert_eq!(h.len(), 2);
        assert_eq!(h.get(0), Some("start 1"));
        assert_eq!(h.get(1), Some("kill 1"));
        assert_eq!(h.get(2), None);
        for i in 0..HISTORY + 10 {
            h.push(&format!("slow {i}"));
        }
        assert_eq!(h.len(), HISTORY);
        assert_eq!(h.get(0), Some(format!("slow {}", HISTORY + 9).as_str()));
    }
}
