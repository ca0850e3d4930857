//! The timeline: a bounded ring of the newest events, and the one sentence of each kind of
//! event. The embedded source learns events from the engine with their causes; an external
//! cluster's are inferred by comparing two refreshes, so they know less (no broker epoch, no
//! reason for an ISR shrink). Where both see the same happening they call the same function
//! here and say it the same way; what only one of them can know is an optional part.
//!
//! Each sentence is a [`Msg`] (a template of the catalogue and its values): its English text
//! is what the timeline keeps and recordings compare; a console in another language says
//! the same message in its own words.

use std::collections::{BTreeSet, VecDeque};

use chrono::{DateTime, Utc};

use super::lang::{Lang, Msg};
use super::{BrokerId, BrokerStatus, EventClass, Refusals, Severity, ViewEvent};

/// One timeline line before it is given a time: how much it matters and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub severity: Severity,
    pub msg: Msg,
}

impl Line {
    fn new(severity: Severity, msg: Msg) -> Line {
        Line { severity, msg }
    }

    /// What it says in English: the timeline's text.
    pub fn text(&self) -> String {
        self.msg.english()
    }
}

/// The newest events, oldest first; the oldest fall out.
#[derive(Debug, Clone)]
pub struct Timeline {
    capacity: usize,
    events: VecDeque<ViewEvent>,
}

impl Timeline {
    /// A timeline keeping `capacity` events (at least one).
    pub fn new(capacity: usize) -> Timeline {
        Timeline {
            capacity: capacity.max(1),
            events: VecDeque::new(),
        }
    }

    pub fn push(&mut self, event: ViewEvent) {
        if self.events.len() == self.capacity {
            self.events.pop_front();
        }
        self.events.push_back(event);
    }

    /// Adds `line` as what happened at `at`.
    pub fn say(&mut self, at: DateTime<Utc>, line: Line) {
        self.say_as(at, line, EventClass::Other);
    }

    /// Adds `line` as what happened at `at`, with the part it plays in an incident. For a
    /// source without a cluster clock of its own: both clocks read `at`.
    pub fn say_as(&mut self, at: DateTime<Utc>, line: Line, class: EventClass) {
        self.push(ViewEvent {
            at,
            cluster_at: at,
            severity: line.severity,
            text: line.text(),
            msg: Some(line.msg),
            class,
        });
    }

    /// The events, oldest first.
    pub fn events(&self) -> Vec<ViewEvent> {
        self.events.iter().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// Broker ids as the timeline lists them: `[0,2]`.
pub fn ids(list: &[BrokerId]) -> String {
    let items: Vec<String> = list.iter().map(|i| i.to_string()).collect();
    format!("[{}]", items.join(","))
}

/// A partition as the timeline names it: `orders-0`.
pub fn partition_name(topic: &str, partition: i32) -> String {
    format!("{topic}-{partition}")
}

/// `id` about `broker`: most sentences of brokers are this.
fn of_broker(id: &'static str, broker: BrokerId) -> Msg {
    Msg::new(id).with("broker", broker)
}

// Brokers.

pub fn broker_started(broker: BrokerId, broker_epoch: i64) -> Line {
    Line::new(
        Severity::Info,
        of_broker("broker {broker} started (broker epoch {epoch})", broker).with("epoch", broker_epoch),
    )
}

/// A broker in a controlled shutdown is fenced after its leaderships moved.
pub fn broker_controlled_shutdown(broker: BrokerId) -> Line {
    Line::new(
        Severity::Info,
        of_broker(
            "broker {broker} controlled shutdown: its leaderships move before it stops",
            broker,
        ),
    )
}

/// `reason` is the controller's words ("missed heartbeats for the session timeout").
pub fn broker_fenced(broker: BrokerId, reason: &str) -> Line {
    Line::new(Severity::Warn, fenced_because(broker, reason))
}

/// `broker 1 fenced: {reason}`: the fencing, or why an ISR lost the broker.
pub fn fenced_because(broker: BrokerId, reason: &str) -> Msg {
    of_broker("broker {broker} fenced: {reason}", broker).with_msg("reason", Msg::words(reason))
}

/// `broker 1 controlled shutdown`: why an ISR lost the broker.
pub fn shut_down_in_control(broker: BrokerId) -> Msg {
    of_broker("broker {broker} controlled shutdown", broker)
}

/// Back in service: the embedded controller unfenced it, or an external cluster lists it in
/// its metadata again (Kafka lists only brokers it has not fenced).
pub fn broker_unfenced(broker: BrokerId) -> Line {
    Line::new(
        Severity::Info,
        of_broker("broker {broker} unfenced: back in service", broker),
    )
}

/// What an external cluster tells of a broker that went down: it left the metadata.
pub const GONE_FROM_METADATA: &str = "gone from the cluster's metadata";

/// A broker stopped, crashed or (external) left the metadata; `how` says which.
pub fn broker_down(broker: BrokerId, how: &str) -> Line {
    Line::new(
        Severity::Warn,
        of_broker("broker {broker} down: {how}", broker).with_msg("how", Msg::words(how)),
    )
}

pub fn broker_paused(broker: BrokerId) -> Line {
    Line::new(Severity::Warn, of_broker("broker {broker} paused", broker))
}

pub fn broker_resumed(broker: BrokerId) -> Line {
    Line::new(Severity::Info, of_broker("broker {broker} resumed", broker))
}

/// External cluster: a broker id not seen before appeared in the metadata.
pub fn broker_joined(broker: BrokerId) -> Line {
    Line::new(Severity::Info, of_broker("broker {broker} joined the cluster", broker))
}

/// A decommission began: the broker's replicas move to the others before it leaves.
pub fn broker_draining(broker: BrokerId, replicas: usize) -> Line {
    Line::new(
        Severity::Info,
        of_broker(
            "broker {broker} draining: {replicas} replicas move to the other brokers, then it leaves",
            broker,
        )
        .with("replicas", replicas),
    )
}

/// A drained broker shut down and the controller forgot it (UnregisterBroker).
pub fn broker_decommissioned(broker: BrokerId) -> Line {
    Line::new(
        Severity::Info,
        of_broker("broker {broker} decommissioned: it left the cluster's metadata", broker),
    )
}

/// External cluster: in the metadata, but kdeck cannot connect to it.
pub fn broker_unreachable(broker: BrokerId) -> Line {
    Line::new(
        Severity::Warn,
        of_broker("broker {broker} unreachable: kdeck cannot connect to it", broker),
    )
}

pub fn broker_reachable_again(broker: BrokerId) -> Line {
    Line::new(Severity::Info, of_broker("broker {broker} reachable again", broker))
}

/// Any other change of a broker's status.
pub fn broker_status(broker: BrokerId, status: BrokerStatus) -> Line {
    Line::new(
        Severity::Info,
        of_broker("broker {broker} {status}", broker).with_msg("status", Msg::words(status.label())),
    )
}

// The controller.

pub fn controller_moved(from: Option<BrokerId>, to: BrokerId) -> Line {
    Line::new(
        Severity::Warn,
        match from {
            // The role stayed with a broker that came back before another took it over.
            Some(f) if f == to => of_broker("controller back on broker {broker} (its broker returned)", to),
            Some(f) => Msg::new("controller moved: broker {from} -> {to}")
                .with("from", f)
                .with("to", to),
            None => of_broker("controller is broker {broker}", to),
        },
    )
}

/// External cluster: the metadata names no controller.
pub fn no_controller(was: BrokerId) -> Line {
    Line::new(Severity::Error, of_broker("no controller (was broker {broker})", was))
}

// Topics.

pub fn topic_created(topic: &str, partitions: i32, replication_factor: i32) -> Line {
    Line::new(
        Severity::Info,
        Msg::new("topic {topic} created: {partitions} partitions, RF {rf}")
            .with("topic", topic)
            .with("partitions", partitions)
            .with("rf", replication_factor),
    )
}

pub fn topic_deleted(topic: &str) -> Line {
    Line::new(Severity::Info, Msg::new("topic {topic} deleted").with("topic", topic))
}

// Partitions.

/// Why a leader was elected (the engine's `ElectionReason`, as the timeline tells it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionCause {
    Created,
    LeaderUnavailable,
    ControlledShutdown,
    ReplicaReturned,
    Preferred,
    Unclean,
    Reassignment,
}

impl ElectionCause {
    fn says(self) -> (Severity, &'static str) {
        match self {
            ElectionCause::Created => (Severity::Info, "created"),
            ElectionCause::LeaderUnavailable => (Severity::Warn, "leader unavailable"),
            ElectionCause::ControlledShutdown => (Severity::Info, "controlled shutdown"),
            ElectionCause::ReplicaReturned => (Severity::Info, "an in-sync replica returned"),
            ElectionCause::Preferred => (Severity::Info, "preferred leader"),
            ElectionCause::Unclean => (Severity::Error, "UNCLEAN: out-of-sync replica, data may be lost"),
            ElectionCause::Reassignment => (Severity::Info, "reassignment: the old leader's replica moved away"),
        }
    }
}

/// A partition's leader changed from `old` (none: it had no leader) to `new`. Without a
/// known cause, a partition that gains a leader is good news and one that changes it a
/// warning.
pub fn leader_elected(
    topic: &str,
    partition: i32,
    old: Option<BrokerId>,
    new: BrokerId,
    leader_epoch: i32,
    cause: Option<ElectionCause>,
) -> Line {
    let said = |id: &'static str| {
        let msg = Msg::new(id).with("partition", partition_name(topic, partition));
        let msg = match old {
            Some(o) => msg.with("old", o),
            None => msg.with_msg("old", Msg::new("none")),
        };
        msg.with("new", new).with("epoch", leader_epoch)
    };
    match cause {
        Some(cause) => {
            let (severity, why) = cause.says();
            Line::new(
                severity,
                said("leader {partition}: {old} -> {new}, epoch {epoch} ({why})").with_msg("why", Msg::new(why)),
            )
        }
        None => Line::new(
            if old.is_none() { Severity::Info } else { Severity::Warn },
            said("leader {partition}: {old} -> {new}, epoch {epoch}"),
        ),
    }
}

pub fn partition_offline(topic: &str, partition: i32, isr: &[BrokerId]) -> Line {
    Line::new(
        Severity::Error,
        Msg::new("{partition} OFFLINE: no live in-sync replica (ISR {isr})")
            .with("partition", partition_name(topic, partition))
            .with("isr", ids(isr)),
    )
}

/// `removed` left the ISR, now `isr`; the reason when the source knows it
/// ([`fenced_because`], [`shut_down_in_control`], or the controller's words).
pub fn isr_shrunk(topic: &str, partition: i32, removed: &[BrokerId], isr: &[BrokerId], reason: Option<Msg>) -> Line {
    let said = |id: &'static str| {
        Msg::new(id)
            .with("partition", partition_name(topic, partition))
            .with("removed", ids(removed))
            .with("isr", ids(isr))
    };
    Line::new(
        Severity::Warn,
        match reason {
            Some(reason) => said("ISR {partition} shrank: -{removed} -> {isr} ({reason})").with_msg("reason", reason),
            None => said("ISR {partition} shrank: -{removed} -> {isr}"),
        },
    )
}

/// A partition's replicas start moving (KIP-455).
pub fn reassignment_started(topic: &str, partition: i32, from: &[BrokerId], to: &[BrokerId]) -> Line {
    Line::new(
        Severity::Info,
        Msg::new("reassigning {partition}: {from} -> {to} (new replicas catch up, then old ones leave)")
            .with("partition", partition_name(topic, partition))
            .with("from", ids(from))
            .with("to", ids(to)),
    )
}

pub fn reassignment_completed(topic: &str, partition: i32, replicas: &[BrokerId], removed: &[BrokerId]) -> Line {
    let msg = if removed.is_empty() {
        Msg::new("reassignment of {partition} done: replicas {replicas}")
    } else {
        Msg::new("reassignment of {partition} done: replicas {replicas}, {removed} dropped and their logs deleted")
            .with("removed", ids(removed))
    };
    Line::new(
        Severity::Info,
        msg.with("partition", partition_name(topic, partition))
            .with("replicas", ids(replicas)),
    )
}

pub fn reassignment_cancelled(topic: &str, partition: i32, replicas: &[BrokerId]) -> Line {
    Line::new(
        Severity::Warn,
        Msg::new("reassignment of {partition} cancelled: back on {replicas}")
            .with("partition", partition_name(topic, partition))
            .with("replicas", ids(replicas)),
    )
}

pub fn isr_expanded(topic: &str, partition: i32, added: &[BrokerId], isr: &[BrokerId]) -> Line {
    Line::new(
        Severity::Info,
        Msg::new("ISR {partition} expanded: +{added} -> {isr} (caught up)")
            .with("partition", partition_name(topic, partition))
            .with("added", ids(added))
            .with("isr", ids(isr)),
    )
}

pub fn follower_truncated(topic: &str, partition: i32, broker: BrokerId, from: i64, to: i64) -> Line {
    Line::new(
        Severity::Warn,
        of_broker(
            "broker {broker} truncated {partition} from {from} to {to} (diverged from the leader's epoch)",
            broker,
        )
        .with("partition", partition_name(topic, partition))
        .with("from", from)
        .with("to", to),
    )
}

/// `error` is Kafka's name of the error code.
pub fn produce_rejected(topic: &str, partition: i32, error: &str, reason: &str) -> Line {
    Line::new(
        Severity::Error,
        Msg::new("produce to {partition} rejected: {error}: {reason}")
            .with("partition", partition_name(topic, partition))
            .with("error", error)
            .with_msg("reason", Msg::words(reason)),
    )
}

/// A run of refused produces folded into one line: `produce to orders-0 refused x88 over
/// 4.2 s: NOT_ENOUGH_REPLICAS` (the span on the cluster's clock).
pub fn produce_refused_run(partition: &str, count: u64, span_secs: f64, error: &str) -> Msg {
    Msg::new("produce to {partition} refused x{count} over {secs} s: {error}")
        .with("partition", partition)
        .with("count", count)
        .with("secs", format!("{span_secs:.1}"))
        .with("error", error)
}

/// One link between `a` and `b` set to `state` ("cut", "delayed 200 ms"...), `None` when
/// it is healed.
pub fn link_changed(a: &str, b: &str, state: Option<Msg>) -> Line {
    let link = |id: &'static str| Msg::new(id).with("a", a).with("b", b);
    match state {
        Some(state) => Line::new(Severity::Warn, link("link {a}-{b} {state}").with_msg("state", state)),
        None => Line::new(Severity::Info, link("link {a}-{b} up again")),
    }
}

pub fn broker_isolated(broker: BrokerId) -> Line {
    Line::new(
        Severity::Warn,
        of_broker(
            "broker {broker} cut off from the cluster (clients still reach it)",
            broker,
        ),
    )
}

pub fn links_healed() -> Line {
    Line::new(Severity::Info, Msg::new("every link healed"))
}

// The trainer's clock and settings.

pub fn clock_frozen() -> Line {
    Line::new(
        Severity::Warn,
        Msg::new("clock frozen: no timer runs, nothing times out"),
    )
}

pub fn clock_thawed(frozen_secs: f64) -> Line {
    Line::new(
        Severity::Info,
        Msg::new("clock running again after {secs} s frozen").with("secs", format!("{frozen_secs:.1}")),
    )
}

pub fn slow_motion(factor: u32) -> Line {
    if factor <= 1 {
        Line::new(Severity::Info, Msg::new("clock back to real time"))
    } else {
        Line::new(Severity::Info, Msg::new("slow motion x{factor}").with("factor", factor))
    }
}

/// A setting changed at run time: its Kafka config name, the topic it applies to (`None`:
/// the cluster's), the new value.
pub fn setting_changed(config: &str, topic: Option<&str>, value: &str) -> Line {
    let msg = match topic {
        Some(topic) => Msg::new("{config} of {topic} set to {value}").with("topic", topic),
        None => Msg::new("{config} set to {value}"),
    };
    Line::new(Severity::Info, msg.with("config", config).with("value", value))
}

// Consumer groups.

/// `id` about `group`.
fn of_group(id: &'static str, group: &str) -> Msg {
    Msg::new(id).with("group", group)
}

/// A group's members changed; the generation when the source knows it, and `detail` in
/// parentheses (the assignment protocol, or who joined and left).
pub fn group_rebalanced(group: &str, generation: Option<i32>, members: usize, detail: &str) -> Line {
    let msg = match generation {
        Some(generation) => of_group(
            "group {group} rebalanced: generation {generation}, {members} ({detail})",
            group,
        )
        .with("generation", generation),
        None => of_group("group {group} rebalanced: {members} ({detail})", group),
    };
    Line::new(
        Severity::Info,
        msg.with_msg("members", Msg::count(members, "member"))
            .with("detail", detail),
    )
}

pub fn group_member_removed(group: &str, member: &str, reason: &str) -> Line {
    Line::new(
        Severity::Warn,
        of_group("group {group}: member {member} removed ({reason})", group)
            .with("member", member)
            .with_msg("reason", Msg::words(reason)),
    )
}

/// KIP-345: a static member came back under a new member id in place of its old one; either
/// it kept its assignment with no rebalance, or the group rebalances.
pub fn static_member_rejoined(group: &str, member: &str, instance: &str, old_member: &str, rebalance: bool) -> Line {
    let id = if rebalance {
        "group {group}: static member {member} rejoined (instance {instance}) in place of {old}; the group rebalances"
    } else {
        "group {group}: static member {member} rejoined (instance {instance}), kept its assignment, no rebalance"
    };
    let msg = of_group(id, group).with("member", member).with("instance", instance);
    Line::new(
        Severity::Info,
        if rebalance { msg.with("old", old_member) } else { msg },
    )
}

/// A member's `group.instance.id` belongs to a newer member: its requests are refused.
pub fn static_member_fenced(group: &str, member: &str, instance: &str, by: &str) -> Line {
    Line::new(
        Severity::Warn,
        of_group(
            "group {group}: member {member} fenced: instance {instance} taken over by {by}",
            group,
        )
        .with("member", member)
        .with("instance", instance)
        .with("by", by),
    )
}

pub fn group_state_changed(group: &str, from: &str, to: &str) -> Line {
    let severity = if to == "Dead" { Severity::Warn } else { Severity::Info };
    Line::new(
        severity,
        of_group("group {group}: {from} -> {to}", group)
            .with("from", from)
            .with("to", to),
    )
}

pub fn group_appeared(group: &str, state: &str, members: usize) -> Line {
    Line::new(
        Severity::Info,
        of_group("group {group} appeared: {state}, {members}", group)
            .with("state", state)
            .with_msg("members", Msg::count(members, "member")),
    )
}

pub fn group_gone(group: &str) -> Line {
    Line::new(Severity::Info, of_group("group {group} is gone", group))
}

// The console itself.

/// The first line of an external cluster's timeline.
pub fn attached(cluster: &str, bootstrap: &str, brokers: usize, topics: usize, groups: usize) -> Line {
    Line::new(
        Severity::Info,
        Msg::new("attached to {cluster} via {bootstrap}: {brokers}, {topics}, {groups}")
            .with("cluster", cluster)
            .with("bootstrap", bootstrap)
            .with_msg("brokers", Msg::count(brokers, "broker"))
            .with_msg("topics", Msg::count(topics, "topic"))
            .with_msg("groups", Msg::count(groups, "group")),
    )
}

/// The console read the engine's events too slowly and `n` were lost.
pub fn events_dropped(n: u64) -> Line {
    Line::new(
        Severity::Warn,
        Msg::new("{events} dropped: the console fell behind").with_msg("events", Msg::count(n, "event")),
    )
}

// Refused produces.

/// The timeline with each run of refused produces (nothing else in between) folded into one
/// line per partition and error, with the count and the time they span: a producer retrying
/// against a partition that cannot take its writes refuses dozens a second, and a room needs
/// the one fact, not 88 copies of it. A single refusal keeps its own line. A folded line
/// takes its last refusal's time, so it moves down as more come.
pub fn fold_refusals(events: Vec<ViewEvent>) -> Vec<ViewEvent> {
    let mut out: Vec<ViewEvent> = Vec::with_capacity(events.len());
    // The current run: folded lines by (partition, error), in the order they were last added.
    let mut run: Vec<ViewEvent> = Vec::new();
    for e in events {
        let EventClass::ProduceRejected(r) = &e.class else {
            out.append(&mut run);
            out.push(e);
            continue;
        };
        let same = run.iter().position(
            |f| matches!(&f.class, EventClass::ProduceRejected(g) if g.partition == r.partition && g.error == r.error),
        );
        let Some(n) = same else {
            run.push(e);
            continue;
        };
        let folded = run.remove(n);
        run.push(fold(folded, e));
    }
    out.append(&mut run);
    out
}

/// `earlier` and `later` (both refusals of one partition with one error) as one line.
fn fold(earlier: ViewEvent, later: ViewEvent) -> ViewEvent {
    let (EventClass::ProduceRejected(a), EventClass::ProduceRejected(b)) = (&earlier.class, &later.class) else {
        return later;
    };
    let refusals = Refusals {
        partition: b.partition.clone(),
        error: b.error.clone(),
        count: a.count + b.count,
        since: a.since.min(b.since),
    };
    let span = (later.cluster_at - refusals.since).num_milliseconds().max(0) as f64 / 1000.0;
    let msg = produce_refused_run(&refusals.partition, refusals.count, span, &refusals.error);
    ViewEvent {
        at: later.at,
        cluster_at: later.cluster_at,
        severity: earlier.severity.max(later.severity),
        text: msg.english(),
        msg: Some(msg),
        class: EventClass::ProduceRejected(refusals),
    }
}

// Incidents.

/// How long after its last consequence an incident stays open for more, on the cluster's
/// clock: slow motion stretches the window as it stretches the timeouts behind the
/// consequences, and a frozen clock holds it open.
const INCIDENT_QUIET_SECS: i64 = 30;

/// One fault and what followed from it: the broker that went away, when, and the events that
/// belong to it (indices into the events it was built from, oldest first).
#[derive(Debug, Clone, PartialEq)]
pub struct Incident {
    pub broker: BrokerId,
    pub at: DateTime<Utc>,
    pub members: Vec<usize>,
    /// `broker 1 down: killed -> fenced after 3.0 s -> 7 leaders moved, 19 ISRs shrank`.
    pub summary: String,
    /// What followed the first event, step by step (`fenced after 3.0 s`; `7 leaders
    /// moved`, `19 ISRs shrank`): the summary in other words is [`Incident::summary_in`].
    pub steps: Vec<Vec<Msg>>,
    pub severity: Severity,
}

impl Incident {
    /// The summary in `lang`, its first event said as `first`: the steps after it, each
    /// step's parts joined by a comma.
    pub fn summary_in(&self, lang: &Lang, first: &str) -> String {
        let mut out = first.to_string();
        for step in &self.steps {
            let parts: Vec<String> = step.iter().map(|m| lang.say(m)).collect();
            out.push_str(lang.tr(" -> "));
            out.push_str(&parts.join(lang.tr(", ")));
        }
        out
    }
}

#[derive(Default)]
struct Tally {
    fenced_after: Option<f64>,
    leaders: u64,
    shrunk: u64,
    expanded: u64,
    offline: u64,
    rejected: u64,
    recovered_after: Option<f64>,
    moved_back: u64,
}

/// An incident still taking events.
struct Open {
    incident: Incident,
    tally: Tally,
    /// When it began and when its last event came, on the cluster's clock.
    began: DateTime<Utc>,
    last: DateTime<Utc>,
    /// The partitions the broker's absence touched (a leadership lost, an ISR shrunk, gone
    /// offline): a refused produce or a new leader there is part of its story.
    touched: BTreeSet<String>,
}

impl Open {
    fn new(broker: BrokerId, i: usize, e: &ViewEvent) -> Open {
        Open {
            incident: Incident {
                broker,
                at: e.at,
                members: vec![i],
                summary: String::new(),
                steps: Vec::new(),
                severity: e.severity,
            },
            tally: Tally::default(),
            began: e.cluster_at,
            last: e.cluster_at,
            touched: BTreeSet::new(),
        }
    }

    fn recovered(&self) -> bool {
        self.tally.recovered_after.is_some()
    }

    /// Whether `class` is about this incident's broker: its own fencing and return, a
    /// leadership it lost (or got back), its replica leaving or rejoining an ISR, a partition
    /// it was the last in-sync replica of, a refused produce on a partition its absence
    /// touched.
    fn concerns(&self, class: &EventClass) -> bool {
        let b = self.incident.broker;
        match class {
            EventClass::Fault(x) | EventClass::Fenced(x) | EventClass::Restarted(x) | EventClass::Recovered(x) => {
                *x == b
            }
            EventClass::LeaderMoved { partition, from, to } => {
                *from == Some(b) || *to == b || (from.is_none() && self.touched.contains(partition))
            }
            EventClass::IsrShrunk { removed, .. } => removed.contains(&b),
            EventClass::IsrExpanded { added, .. } => added.contains(&b),
            EventClass::Offline { isr, .. } => isr.contains(&b),
            EventClass::ProduceRejected(r) => self.touched.contains(&r.partition),
            EventClass::Other => false,
        }
    }

    /// Once the broker is back, only its return, its replicas rejoining ISRs and its
    /// leaderships coming back belong to the story.
    fn epilogue(&self, class: &EventClass) -> bool {
        let b = self.incident.broker;
        match class {
            EventClass::Restarted(_) | EventClass::Recovered(_) | EventClass::IsrExpanded { .. } => true,
            EventClass::LeaderMoved { to, .. } => *to == b,
            _ => false,
        }
    }

    /// Takes event `i`.
    fn join(&mut self, i: usize, e: &ViewEvent) {
        let secs = (e.cluster_at - self.began).num_milliseconds() as f64 / 1000.0;
        let recovered = self.recovered();
        let t = &mut self.tally;
        match &e.class {
            EventClass::Fenced(_) => {
                t.fenced_after.get_or_insert(secs);
            }
            EventClass::Recovered(_) => {
                t.recovered_after.get_or_insert(secs);
            }
            EventClass::LeaderMoved { .. } if recovered => t.moved_back += 1,
            EventClass::LeaderMoved { partition, .. } => {
                t.leaders += 1;
                self.touched.insert(partition.clone());
            }
            EventClass::IsrShrunk { partition, .. } => {
                t.shrunk += 1;
                self.touched.insert(partition.clone());
            }
            EventClass::IsrExpanded { .. } => t.expanded += 1,
            EventClass::Offline { partition, .. } => {
                t.offline += 1;
                self.touched.insert(partition.clone());
            }
            EventClass::ProduceRejected(r) => t.rejected += r.count,
            EventClass::Fault(_) | EventClass::Restarted(_) | EventClass::Other => {}
        }
        self.incident.members.push(i);
        self.incident.severity = self.incident.severity.max(e.severity);
        self.last = e.cluster_at;
    }

    fn close(mut self, events: &[ViewEvent]) -> Incident {
        self.incident.steps = steps(&self.tally);
        let first = self
            .incident
            .members
            .first()
            .and_then(|i| events.get(*i))
            .map_or(String::new(), |e| e.text.clone());
        self.incident.summary = self.incident.summary_in(Lang::english(), &first);
        self.incident
    }
}

/// Groups the events of each fault into one incident per broker: a broker going away opens
/// one; an event joins the incident of the broker it concerns (its fencing, the leaderships
/// it lost, its replicas leaving ISRs, partitions it was the last in-sync replica of, refused
/// produces on partitions its absence touched) while they keep coming, within 30 s of the
/// incident's last event on the cluster's clock; its return, its replicas rejoining ISRs and
/// its leaderships coming back end it. Two brokers down at once are two incidents, each with
/// its own events; an event that concerns both joins the newer one. Events of no fault stay
/// on their own. Incidents come in the order they began.
pub fn incidents(events: &[ViewEvent]) -> Vec<Incident> {
    let mut done = Vec::new();
    let mut open: Vec<Open> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let (quiet, still): (Vec<Open>, Vec<Open>) = open
            .into_iter()
            .partition(|o| (e.cluster_at - o.last).num_seconds() > INCIDENT_QUIET_SECS);
        done.extend(quiet.into_iter().map(|o| o.close(events)));
        open = still;
        if let EventClass::Fault(broker) = e.class {
            match open.iter().rposition(|o| o.incident.broker == broker) {
                // A second word on the same fault (paused, then cut off...).
                Some(n) if !open[n].recovered() => open[n].join(i, e),
                Some(n) => {
                    done.push(open.remove(n).close(events));
                    open.push(Open::new(broker, i, e));
                }
                None => open.push(Open::new(broker, i, e)),
            }
            continue;
        }
        // The newest incident still under way that the event concerns, else the newest one
        // whose broker is back.
        let concerned = |recovered: bool| {
            open.iter()
                .rposition(|o| o.recovered() == recovered && o.concerns(&e.class))
        };
        let Some(n) = concerned(false).or_else(|| concerned(true)) else {
            continue;
        };
        if open[n].recovered() && !open[n].epilogue(&e.class) {
            done.push(open.remove(n).close(events));
            continue;
        }
        open[n].join(i, e);
    }
    done.extend(open.into_iter().map(|o| o.close(events)));
    done.sort_by_key(|incident| incident.members.first().copied());
    done
}

/// The steps of an incident after its first event: when the broker was fenced, what its
/// absence did, when it came back and what that undid.
fn steps(tally: &Tally) -> Vec<Vec<Msg>> {
    let plural = |n: u64, one: &'static str, many: &'static str| Msg::new(if n == 1 { one } else { many }).with("n", n);
    let secs = |id: &'static str, s: f64| Msg::new(id).with("secs", format!("{s:.1}"));
    let mut steps = Vec::new();
    if let Some(s) = tally.fenced_after {
        steps.push(vec![secs("fenced after {secs} s", s)]);
    }
    let mut effects = Vec::new();
    if tally.leaders > 0 {
        effects.push(plural(tally.leaders, "{n} leader moved", "{n} leaders moved"));
    }
    if tally.shrunk > 0 {
        effects.push(plural(tally.shrunk, "{n} ISR shrank", "{n} ISRs shrank"));
    }
    if tally.offline > 0 {
        effects.push(plural(tally.offline, "{n} partition offline", "{n} partitions offline"));
    }
    if tally.rejected > 0 {
        effects.push(plural(tally.rejected, "{n} produce rejected", "{n} produces rejected"));
    }
    if !effects.is_empty() {
        steps.push(effects);
    }
    if let Some(s) = tally.recovered_after {
        let mut back = vec![secs("back after {secs} s", s)];
        if tally.expanded > 0 {
            back.push(plural(tally.expanded, "{n} ISR rejoined", "{n} ISRs rejoined"));
        }
        if tally.moved_back > 0 {
            back.push(plural(
                tally.moved_back,
                "{n} leader moved back",
                "{n} leaders moved back",
            ));
        }
        steps.push(back);
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `secs` after a fixed moment (milliseconds kept).
    fn time(secs: f64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp_millis(1_700_000_000_000 + (secs * 1000.0).round() as i64).unwrap_or_default()
    }

    /// An event at `secs` on both clocks (real speed, never frozen).
    fn event(secs: f64, class: EventClass, text: &str) -> ViewEvent {
        on_clocks(secs, secs, class, text)
    }

    /// An event at `wall` seconds on the wall clock and `cluster` on the cluster's.
    fn on_clocks(wall: f64, cluster: f64, class: EventClass, text: &str) -> ViewEvent {
        ViewEvent {
            at: time(wall),
            cluster_at: time(cluster),
            severity: Severity::Warn,
            text: text.into(),
            msg: None,
            class,
        }
    }

    fn led(partition: &str, from: Option<BrokerId>, to: BrokerId) -> EventClass {
        EventClass::LeaderMoved {
            partition: partition.into(),
            from,
            to,
        }
    }

    fn shrunk(partition: &str, removed: BrokerId) -> EventClass {
        EventClass::IsrShrunk {
            partition: partition.into(),
            removed: vec![removed],
        }
    }

    fn expanded(partition: &str, added: BrokerId) -> EventClass {
        EventClass::IsrExpanded {
            partition: partition.into(),
            added: vec![added],
        }
    }

    fn refused(partition: &str, error: &str, secs: f64) -> ViewEvent {
        let class = EventClass::ProduceRejected(Refusals {
            partition: partition.into(),
            error: error.into(),
            count: 1,
            since: time(secs),
        });
        let text = format!("produce to {partition} rejected: {error}: the ISR is smaller than min.insync.replicas");
        ViewEvent {
            severity: Severity::Error,
            ..event(secs, class, &text)
        }
    }

    fn texts(events: &[ViewEvent], members: &[usize]) -> Vec<String> {
        members.iter().map(|&i| events[i].text.clone()).collect()
    }

    #[test]
    fn a_crash_and_its_consequences_are_one_incident() {
        let events = vec![
            event(0.0, EventClass::Other, "topic orders created"),
            event(10.0, EventClass::Fault(1), "broker 1 down: killed"),
            event(13.0, EventClass::Fenced(1), "broker 1 fenced"),
            event(13.0, led("orders-0", Some(1), 2), "leader orders-0: 1 -> 2"),
            event(13.0, led("orders-1", Some(1), 0), "leader orders-1: 1 -> 0"),
            event(14.0, EventClass::Other, "group billing rebalanced"),
            event(14.0, shrunk("orders-0", 1), "ISR orders-0 shrank"),
            event(39.0, EventClass::Restarted(1), "broker 1 started"),
            event(40.0, EventClass::Recovered(1), "broker 1 unfenced"),
            event(41.0, expanded("orders-0", 1), "ISR orders-0 expanded"),
            event(
                45.0,
                led("orders-0", Some(2), 1),
                "leader orders-0: 2 -> 1 (preferred leader)",
            ),
            event(46.0, EventClass::Other, "group billing rebalanced"),
            event(200.0, shrunk("orders-2", 1), "ISR orders-2 shrank (slow follower)"),
            event(201.0, EventClass::Restarted(2), "broker 2 started"),
        ];
        let found = incidents(&events);
        assert_eq!(found.len(), 1, "{found:?}");
        let crash = &found[0];
        assert_eq!(crash.broker, 1);
        assert_eq!(crash.members, vec![1, 2, 3, 4, 6, 7, 8, 9, 10]);
        assert_eq!(
            crash.summary,
            "broker 1 down: killed -> fenced after 3.0 s -> 2 leaders moved, 1 ISR shrank -> back after 30.0 s, 1 ISR rejoined, 1 leader moved back"
        );
    }

    #[test]
    fn an_incident_ends_when_its_consequences_stop_and_a_new_fault_opens_another() {
        let events = vec![
            event(0.0, EventClass::Fault(1), "broker 1 down: killed"),
            event(3.0, EventClass::Fenced(1), "broker 1 fenced"),
            event(100.0, led("orders-0", Some(1), 0), "leader orders-0: 1 -> 0"),
            event(110.0, EventClass::Fault(2), "broker 2 controlled shutdown"),
            event(111.0, led("orders-1", Some(2), 0), "leader orders-1: 2 -> 0"),
        ];
        let found = incidents(&events);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].members, vec![0, 1], "the late election is not the crash's");
        assert_eq!(found[1].members, vec![3, 4]);
        assert_eq!(found[1].summary, "broker 2 controlled shutdown -> 1 leader moved");
    }

    /// second-crash as presented: broker 0 crashes, then broker 1; both come back. Broker 1
    /// holds 4 replicas (one a leadership), so its incident cannot count 8 rejoined ISRs, and
    /// broker 0's ISR expansions, which come while broker 1 is back too, are broker 0's.
    #[test]
    fn two_brokers_down_at_once_keep_their_own_events() {
        let mut events = vec![
            event(0.0, EventClass::Fault(0), "broker 0 down: killed"),
            event(4.0, EventClass::Fenced(0), "broker 0 fenced"),
            event(4.0, EventClass::Other, "controller moved: broker 0 -> 1"),
            event(
                4.0,
                shrunk("__consumer_offsets-0", 0),
                "ISR __consumer_offsets-0 shrank: -[0]",
            ),
            event(
                4.0,
                shrunk("__consumer_offsets-2", 0),
                "ISR __consumer_offsets-2 shrank: -[0]",
            ),
            event(4.0, shrunk("payments-0", 0), "ISR payments-0 shrank: -[0]"),
            event(
                4.0,
                led("__consumer_offsets-1", Some(0), 2),
                "leader __consumer_offsets-1: 0 -> 2",
            ),
            event(10.0, EventClass::Fault(1), "broker 1 down: killed"),
            event(14.0, EventClass::Fenced(1), "broker 1 fenced"),
            event(
                14.0,
                shrunk("__consumer_offsets-0", 1),
                "ISR __consumer_offsets-0 shrank: -[1]",
            ),
            event(
                14.0,
                shrunk("__consumer_offsets-1", 1),
                "ISR __consumer_offsets-1 shrank: -[1]",
            ),
            event(14.0, shrunk("payments-0", 1), "ISR payments-0 shrank: -[1]"),
            event(
                14.0,
                led("__consumer_offsets-2", Some(1), 2),
                "leader __consumer_offsets-2: 1 -> 2",
            ),
        ];
        events.extend((0..55).map(|n| refused("payments-0", "NOT_ENOUGH_REPLICAS", 14.5 + n as f64 * 0.2)));
        events.push(event(26.0, EventClass::Restarted(0), "broker 0 started"));
        events.push(event(27.0, EventClass::Recovered(0), "broker 0 unfenced"));
        events.extend((0..5).map(|n| refused("payments-0", "NOT_ENOUGH_REPLICAS", 27.2 + n as f64 * 0.2)));
        events.push(event(29.0, expanded("payments-0", 0), "ISR payments-0 expanded: +[0]"));
        events.push(event(31.0, EventClass::Restarted(1), "broker 1 started"));
        events.push(event(32.0, EventClass::Recovered(1), "broker 1 unfenced"));
        // Broker 0's replicas catch up while broker 1's do.
        for (n, p) in ["__consumer_offsets-0", "__consumer_offsets-1", "__consumer_offsets-2"]
            .iter()
            .enumerate()
        {
            events.push(event(
                33.0 + n as f64,
                expanded(p, 0),
                &format!("ISR {p} expanded: +[0]"),
            ));
            events.push(event(
                33.5 + n as f64,
                expanded(p, 1),
                &format!("ISR {p} expanded: +[1]"),
            ));
        }
        events.push(event(36.0, expanded("payments-0", 1), "ISR payments-0 expanded: +[1]"));
        events.push(event(
            40.0,
            led("__consumer_offsets-2", Some(2), 1),
            "leader __consumer_offsets-2: 2 -> 1 (preferred leader)",
        ));
        let found = incidents(&events);
        assert_eq!(found.len(), 2, "{found:?}");
        let (first, second) = (&found[0], &found[1]);
        assert_eq!((first.broker, second.broker), (0, 1));
        assert_eq!(
            first.summary,
            "broker 0 down: killed -> fenced after 4.0 s -> 1 leader moved, 3 ISRs shrank -> back after 27.0 s, 4 ISRs rejoined"
        );
        assert_eq!(
            second.summary,
            "broker 1 down: killed -> fenced after 4.0 s -> 1 leader moved, 3 ISRs shrank, 60 produces rejected -> back after 22.0 s, 4 ISRs rejoined, 1 leader moved back"
        );
        for (incident, mine, other) in [(first, "[0]", "[1]"), (second, "[1]", "[0]")] {
            let texts = texts(&events, &incident.members);
            assert!(
                texts.iter().all(|t| !t.contains(other)),
                "broker {}'s incident took another broker's event: {texts:#?}",
                incident.broker
            );
            assert!(texts.iter().any(|t| t.contains(mine)), "{texts:#?}");
        }
        assert!(
            first.members.iter().all(|m| !second.members.contains(m)),
            "an event is in one incident"
        );
    }

    /// Under SLOW x10 the session timeout of 4 s takes 40 s of the room's time: the fence and
    /// the elections it causes still belong to the crash, and the incident says how long the
    /// cluster took (what `broker.session.timeout.ms` promises), not how long the room waited.
    #[test]
    fn slow_motion_stretches_the_window_the_fence_joins_the_crash() {
        let slowed = vec![
            on_clocks(0.0, 0.0, EventClass::Other, "slow motion x10"),
            on_clocks(1.0, 0.1, EventClass::Fault(1), "broker 1 down: killed"),
            on_clocks(41.0, 4.1, EventClass::Fenced(1), "broker 1 fenced"),
            on_clocks(41.0, 4.1, led("orders-0", Some(1), 2), "leader orders-0: 1 -> 2"),
            on_clocks(42.0, 4.2, shrunk("orders-0", 1), "ISR orders-0 shrank: -[1]"),
        ];
        let found = incidents(&slowed);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].members, vec![1, 2, 3, 4]);
        assert_eq!(
            found[0].summary,
            "broker 1 down: killed -> fenced after 4.0 s -> 1 leader moved, 1 ISR shrank"
        );
        // At real speed the same 40 s of quiet ends the incident: the window is the cluster's.
        let real: Vec<ViewEvent> = slowed
            .iter()
            .map(|e| ViewEvent {
                cluster_at: e.at,
                ..e.clone()
            })
            .collect();
        assert_eq!(incidents(&real)[0].members, vec![1]);
    }

    #[test]
    fn a_run_of_refused_produces_is_one_line_with_its_count_and_span() {
        let mut events: Vec<ViewEvent> = (0..88)
            .map(|n| refused("orders-0", "NOT_ENOUGH_REPLICAS", 10.0 + n as f64 * 4.2 / 87.0))
            .collect();
        let folded = fold_refusals(events.clone());
        assert_eq!(folded.len(), 1);
        assert_eq!(
            folded[0].text,
            "produce to orders-0 refused x88 over 4.2 s: NOT_ENOUGH_REPLICAS"
        );
        assert_eq!(folded[0].at, events[87].at, "the line moves with its newest refusal");
        // One more updates the line.
        events.push(refused("orders-0", "NOT_ENOUGH_REPLICAS", 15.0));
        assert_eq!(
            fold_refusals(events.clone())[0].text,
            "produce to orders-0 refused x89 over 5.0 s: NOT_ENOUGH_REPLICAS"
        );
        // Something else in between: the next refusals are a new line; one alone reads as
        // it came.
        events.push(event(16.0, EventClass::Other, "group billing rebalanced"));
        events.push(refused("orders-0", "NOT_ENOUGH_REPLICAS", 17.0));
        let texts: Vec<String> = fold_refusals(events.clone()).into_iter().map(|e| e.text).collect();
        assert_eq!(
            texts,
            vec![
                "produce to orders-0 refused x89 over 5.0 s: NOT_ENOUGH_REPLICAS".to_string(),
                "group billing rebalanced".into(),
                events[90].text.clone(),
            ]
        );
        // Two partitions (or two errors) refusing in turn are a line each.
        let mixed: Vec<ViewEvent> = (0..6)
            .map(|n| {
                refused(
                    if n % 2 == 0 { "orders-0" } else { "orders-1" },
                    "NOT_ENOUGH_REPLICAS",
                    n as f64,
                )
            })
            .collect();
        let texts: Vec<String> = fold_refusals(mixed).into_iter().map(|e| e.text).collect();
        assert_eq!(
            texts,
            vec![
                "produce to orders-0 refused x3 over 4.0 s: NOT_ENOUGH_REPLICAS",
                "produce to orders-1 refused x3 over 4.0 s: NOT_ENOUGH_REPLICAS",
            ]
        );
    }

    #[test]
    fn an_incident_counts_every_refusal_a_folded_line_stands_for() {
        let mut events = vec![
            event(0.0, EventClass::Fault(1), "broker 1 down: killed"),
            event(4.0, shrunk("orders-0", 1), "ISR orders-0 shrank: -[1]"),
        ];
        events.extend((0..20).map(|n| refused("orders-0", "NOT_ENOUGH_REPLICAS", 5.0 + n as f64 * 0.1)));
        let folded = fold_refusals(events);
        assert_eq!(folded.len(), 3);
        let found = incidents(&folded);
        assert_eq!(found[0].members, vec![0, 1, 2]);
        assert_eq!(
            found[0].summary,
            "broker 1 down: killed -> 1 ISR shrank, 20 produces rejected"
        );
    }

    #[test]
    fn the_event_ring_keeps_only_the_newest() {
        let mut timeline = Timeline::new(5);
        for n in 0..100 {
            timeline.say(DateTime::<Utc>::UNIX_EPOCH, topic_deleted(&format!("t{n}")));
        }
        let texts: Vec<String> = timeline.events().into_iter().map(|e| e.text).collect();
        assert_eq!(
            texts,
            vec![
                "topic t95 deleted",
                "topic t96 deleted",
                "topic t97 deleted",
                "topic t98 deleted",
                "topic t99 deleted"
            ]
        );
        assert_eq!(Timeline::new(0).capacity, 1, "a timeline keeps at least one event");
    }

    #[test]
    fn a_leader_change_says_its_cause_when_known() {
        let said = |l: Line| (l.severity, l.text());
        assert_eq!(
            said(leader_elected(
                "orders",
                0,
                Some(1),
                0,
                6,
                Some(ElectionCause::Preferred)
            )),
            (
                Severity::Info,
                "leader orders-0: 1 -> 0, epoch 6 (preferred leader)".to_string()
            )
        );
        assert_eq!(
            said(leader_elected("orders", 0, Some(1), 2, 5, None)),
            (Severity::Warn, "leader orders-0: 1 -> 2, epoch 5".to_string())
        );
        assert_eq!(
            said(leader_elected("orders", 0, None, 2, 5, Some(ElectionCause::Unclean))),
            (
                Severity::Error,
                "leader orders-0: none -> 2, epoch 5 (UNCLEAN: out-of-sync replica, data may be lost)".to_string()
            )
        );
        assert_eq!(leader_elected("orders", 0, None, 2, 5, None).severity, Severity::Info);
    }

    #[test]
    fn an_isr_change_lists_the_replicas() {
        assert_eq!(
            isr_shrunk("orders", 0, &[1], &[0, 2], Some(shut_down_in_control(1))).text(),
            "ISR orders-0 shrank: -[1] -> [0,2] (broker 1 controlled shutdown)"
        );
        assert_eq!(
            isr_shrunk(
                "orders",
                0,
                &[1],
                &[0, 2],
                Some(fenced_because(1, "missed heartbeats for the session timeout"))
            )
            .text(),
            "ISR orders-0 shrank: -[1] -> [0,2] (broker 1 fenced: missed heartbeats for the session timeout)"
        );
        assert_eq!(
            isr_shrunk("orders", 0, &[1], &[0, 2], None).text(),
            "ISR orders-0 shrank: -[1] -> [0,2]"
        );
        assert_eq!(
            isr_expanded("orders", 0, &[0], &[1, 2, 0]).text(),
            "ISR orders-0 expanded: +[0] -> [1,2,0] (caught up)"
        );
    }

    /// Each sentence's English, byte for byte as recordings and golden traces keep it.
    #[test]
    fn every_sentence_says_in_english_what_the_traces_keep() {
        let said = |l: Line| l.text();
        let cases = [
            (said(broker_started(1, 7)), "broker 1 started (broker epoch 7)"),
            (
                said(broker_controlled_shutdown(2)),
                "broker 2 controlled shutdown: its leaderships move before it stops",
            ),
            (
                said(broker_fenced(0, "missed heartbeats for the session timeout")),
                "broker 0 fenced: missed heartbeats for the session timeout",
            ),
            (said(broker_unfenced(0)), "broker 0 unfenced: back in service"),
            (
                said(broker_down(1, GONE_FROM_METADATA)),
                "broker 1 down: gone from the cluster's metadata",
            ),
            (said(broker_paused(1)), "broker 1 paused"),
            (said(broker_resumed(1)), "broker 1 resumed"),
            (said(broker_joined(3)), "broker 3 joined the cluster"),
            (
                said(broker_unreachable(2)),
                "broker 2 unreachable: kdeck cannot connect to it",
            ),
            (said(broker_reachable_again(2)), "broker 2 reachable again"),
            (said(broker_status(2, BrokerStatus::Stopped)), "broker 2 stopped"),
            (
                said(controller_moved(Some(1), 1)),
                "controller back on broker 1 (its broker returned)",
            ),
            (said(controller_moved(Some(0), 2)), "controller moved: broker 0 -> 2"),
            (said(controller_moved(None, 2)), "controller is broker 2"),
            (said(no_controller(1)), "no controller (was broker 1)"),
            (
                said(topic_created("orders", 3, 2)),
                "topic orders created: 3 partitions, RF 2",
            ),
            (said(topic_deleted("orders")), "topic orders deleted"),
            (
                said(partition_offline("orders", 1, &[2])),
                "orders-1 OFFLINE: no live in-sync replica (ISR [2])",
            ),
            (
                said(follower_truncated("orders", 0, 2, 120, 100)),
                "broker 2 truncated orders-0 from 120 to 100 (diverged from the leader's epoch)",
            ),
            (
                said(produce_rejected("orders", 0, "NotEnoughReplicas", "no")),
                "produce to orders-0 rejected: NotEnoughReplicas: no",
            ),
            (
                produce_refused_run("orders-0", 88, 4.24, "NOT_ENOUGH_REPLICAS").english(),
                "produce to orders-0 refused x88 over 4.2 s: NOT_ENOUGH_REPLICAS",
            ),
            (
                said(link_changed("0", "controller", Some(Msg::new("cut")))),
                "link 0-controller cut",
            ),
            (said(link_changed("0", "1", None)), "link 0-1 up again"),
            (
                said(broker_isolated(1)),
                "broker 1 cut off from the cluster (clients still reach it)",
            ),
            (said(links_healed()), "every link healed"),
            (said(clock_frozen()), "clock frozen: no timer runs, nothing times out"),
            (said(clock_thawed(12.345)), "clock running again after 12.3 s frozen"),
            (said(slow_motion(1)), "clock back to real time"),
            (said(slow_motion(5)), "slow motion x5"),
            (
                said(setting_changed("min.insync.replicas", Some("orders"), "1")),
                "min.insync.replicas of orders set to 1",
            ),
            (
                said(setting_changed("auto.leader.rebalance.enable", None, "false")),
                "auto.leader.rebalance.enable set to false",
            ),
            (
                said(group_member_removed("billing", "m-1", "left the group")),
                "group billing: member m-1 removed (left the group)",
            ),
            (
                said(group_state_changed("billing", "Stable", "Dead")),
                "group billing: Stable -> Dead",
            ),
            (
                said(group_appeared("billing", "Stable", 1)),
                "group billing appeared: Stable, 1 member",
            ),
            (said(group_gone("billing")), "group billing is gone"),
            (
                said(attached("prod", "10.0.0.1:9092", 1, 2, 0)),
                "attached to prod via 10.0.0.1:9092: 1 broker, 2 topics, 0 groups",
            ),
            (said(events_dropped(1)), "1 event dropped: the console fell behind"),
        ];
        for (text, expected) in cases {
            assert_eq!(text, expected);
        }
    }

    /// An incident says its steps in Chinese from the same tally as its English summary.
    #[test]
    fn an_incident_says_its_steps_in_another_language() {
        let events = vec![
            event(0.0, EventClass::Fault(1), "broker 1 down: killed"),
            event(3.0, EventClass::Fenced(1), "broker 1 fenced"),
            event(3.0, led("orders-0", Some(1), 2), "leader orders-0: 1 -> 2"),
            event(3.0, shrunk("orders-1", 1), "ISR orders-1 shrank"),
            event(20.0, EventClass::Recovered(1), "broker 1 unfenced"),
            event(21.0, expanded("orders-1", 1), "ISR orders-1 expanded"),
        ];
        let incident = &incidents(&events)[0];
        assert_eq!(
            incident.summary,
            "broker 1 down: killed -> fenced after 3.0 s -> 1 leader moved, 1 ISR shrank -> back after 20.0 s, 1 ISR rejoined"
        );
        let zh = Lang::get(Some("zh"));
        let first = zh.say(&broker_down(1, "killed").msg);
        assert_eq!(
            incident.summary_in(zh, &first),
            "broker 1 下线：已杀死 → 3.0 秒后被隔离 → 1 个领导者转移，1 个 ISR 收缩 → 20.0 秒后恢复，重新加入 1 个 ISR"
        );
    }

    #[test]
    fn a_rebalance_names_the_generation_when_known() {
        assert_eq!(
            group_rebalanced("billing", Some(3), 2, "range").text(),
            "group billing rebalanced: generation 3, 2 members (range)"
        );
        assert_eq!(
            group_rebalanced("billing", None, 1, "+1 -0").text(),
            "group billing rebalanced: 1 member (+1 -0)"
        );
    }
}
