//! The timeline: a bounded ring of the newest events, and the one sentence of each kind of
//! event. The embedded source learns events from the engine with their causes; an external
//! cluster's are inferred by comparing two refreshes, so they know less (no broker epoch, no
//! reason for an ISR shrink). Where both see the same happening they call the same function
//! here and say it the same way; what only one of them can know is an optional part.

use std::collections::VecDeque;

use chrono::{DateTime, Utc};

use super::words::count;
use super::{BrokerId, BrokerStatus, EventClass, Severity, ViewEvent};

/// One timeline line before it is given a time.
pub type Line = (Severity, String);

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

    /// Adds `line` as what happened at `at`, with the part it plays in an incident.
    pub fn say_as(&mut self, at: DateTime<Utc>, (severity, text): Line, class: EventClass) {
        self.push(ViewEvent {
            at,
            severity,
            text,
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

// Brokers.

pub fn broker_started(broker: BrokerId, broker_epoch: i64) -> Line {
    (
        Severity::Info,
        format!("broker {broker} started (broker epoch {broker_epoch})"),
    )
}

/// A broker in a controlled shutdown is fenced after its leaderships moved.
pub fn broker_controlled_shutdown(broker: BrokerId) -> Line {
    (
        Severity::Info,
        format!("broker {broker} controlled shutdown: its leaderships move before it stops"),
    )
}

pub fn broker_fenced(broker: BrokerId, reason: &str) -> Line {
    (Severity::Warn, format!("broker {broker} fenced: {reason}"))
}

/// Back in service: the embedded controller unfenced it, or an external cluster lists it in
/// its metadata again (Kafka lists only brokers it has not fenced).
pub fn broker_unfenced(broker: BrokerId) -> Line {
    (Severity::Info, format!("broker {broker} unfenced: back in service"))
}

/// What an external cluster tells of a broker that went down: it left the metadata.
pub const GONE_FROM_METADATA: &str = "gone from the cluster's metadata";

/// A broker stopped, crashed or (external) left the metadata; `how` says which.
pub fn broker_down(broker: BrokerId, how: &str) -> Line {
    (Severity::Warn, format!("broker {broker} down: {how}"))
}

pub fn broker_paused(broker: BrokerId) -> Line {
    (Severity::Warn, format!("broker {broker} paused"))
}

pub fn broker_resumed(broker: BrokerId) -> Line {
    (Severity::Info, format!("broker {broker} resumed"))
}

/// External cluster: a broker id not seen before appeared in the metadata.
pub fn broker_joined(broker: BrokerId) -> Line {
    (Severity::Info, format!("broker {broker} joined the cluster"))
}

/// External cluster: in the metadata, but kdeck cannot connect to it.
pub fn broker_unreachable(broker: BrokerId) -> Line {
    (
        Severity::Warn,
        format!("broker {broker} unreachable: kdeck cannot connect to it"),
    )
}

pub fn broker_reachable_again(broker: BrokerId) -> Line {
    (Severity::Info, format!("broker {broker} reachable again"))
}

/// Any other change of a broker's status.
pub fn broker_status(broker: BrokerId, status: BrokerStatus) -> Line {
    (Severity::Info, format!("broker {broker} {}", status.label()))
}

// The controller.

pub fn controller_moved(from: Option<BrokerId>, to: BrokerId) -> Line {
    (
        Severity::Warn,
        match from {
            Some(f) => format!("controller moved: broker {f} -> {to}"),
            None => format!("controller is broker {to}"),
        },
    )
}

/// External cluster: the metadata names no controller.
pub fn no_controller(was: BrokerId) -> Line {
    (Severity::Error, format!("no controller (was broker {was})"))
}

// Topics.

pub fn topic_created(topic: &str, partitions: i32, replication_factor: i32) -> Line {
    (
        Severity::Info,
        format!("topic {topic} created: {partitions} partitions, RF {replication_factor}"),
    )
}

pub fn topic_deleted(topic: &str) -> Line {
    (Severity::Info, format!("topic {topic} deleted"))
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
    let tp = partition_name(topic, partition);
    let old_name = old.map_or("none".to_string(), |o| o.to_string());
    let text = format!("leader {tp}: {old_name} -> {new}, epoch {leader_epoch}");
    match cause {
        Some(cause) => {
            let (severity, why) = cause.says();
            (severity, format!("{text} ({why})"))
        }
        None if old.is_none() => (Severity::Info, text),
        None => (Severity::Warn, text),
    }
}

pub fn partition_offline(topic: &str, partition: i32, isr: &[BrokerId]) -> Line {
    (
        Severity::Error,
        format!(
            "{} OFFLINE: no live in-sync replica (ISR {})",
            partition_name(topic, partition),
            ids(isr)
        ),
    )
}

/// `removed` left the ISR, now `isr`; the reason when the source knows it.
pub fn isr_shrunk(topic: &str, partition: i32, removed: &[BrokerId], isr: &[BrokerId], reason: Option<&str>) -> Line {
    let text = format!(
        "ISR {} shrank: -{} -> {}",
        partition_name(topic, partition),
        ids(removed),
        ids(isr)
    );
    (
        Severity::Warn,
        match reason {
            Some(reason) => format!("{text} ({reason})"),
            None => text,
        },
    )
}

pub fn isr_expanded(topic: &str, partition: i32, added: &[BrokerId], isr: &[BrokerId]) -> Line {
    (
        Severity::Info,
        format!(
            "ISR {} expanded: +{} -> {} (caught up)",
            partition_name(topic, partition),
            ids(added),
            ids(isr)
        ),
    )
}

pub fn follower_truncated(topic: &str, partition: i32, broker: BrokerId, from: i64, to: i64) -> Line {
    (
        Severity::Warn,
        format!(
            "broker {broker} truncated {} from {from} to {to} (diverged from the leader's epoch)",
            partition_name(topic, partition)
        ),
    )
}

/// `error` is Kafka's name of the error code.
pub fn produce_rejected(topic: &str, partition: i32, error: &str, reason: &str) -> Line {
    (
        Severity::Error,
        format!(
            "produce to {} rejected: {error}: {reason}",
            partition_name(topic, partition)
        ),
    )
}

/// One link set: `state` as "cut", "delayed 200 ms"..., `None` when it is healed.
pub fn link_changed(a: &str, b: &str, state: Option<&str>) -> Line {
    match state {
        Some(state) => (Severity::Warn, format!("link {a}-{b} {state}")),
        None => (Severity::Info, format!("link {a}-{b} up again")),
    }
}

pub fn broker_isolated(broker: BrokerId) -> Line {
    (
        Severity::Warn,
        format!("broker {broker} cut off from the cluster (clients still reach it)"),
    )
}

pub fn links_healed() -> Line {
    (Severity::Info, "every link healed".into())
}

// The trainer's clock and settings.

pub fn clock_frozen() -> Line {
    (Severity::Warn, "clock frozen: no timer runs, nothing times out".into())
}

pub fn clock_thawed(frozen_secs: f64) -> Line {
    (
        Severity::Info,
        format!("clock running again after {frozen_secs:.1} s frozen"),
    )
}

pub fn slow_motion(factor: u32) -> Line {
    if factor <= 1 {
        (Severity::Info, "clock back to real time".into())
    } else {
        (Severity::Info, format!("slow motion x{factor}"))
    }
}

/// A setting changed at run time: its Kafka config name, the topic it applies to (`None`:
/// the cluster's), the new value.
pub fn setting_changed(config: &str, topic: Option<&str>, value: &str) -> Line {
    match topic {
        Some(topic) => (Severity::Info, format!("{config} of {topic} set to {value}")),
        None => (Severity::Info, format!("{config} set to {value}")),
    }
}

// Consumer groups.

/// A group's members changed; the generation when the source knows it, and `detail` in
/// parentheses (the assignment protocol, or who joined and left).
pub fn group_rebalanced(group: &str, generation: Option<i32>, members: usize, detail: &str) -> Line {
    (
        Severity::Info,
        match generation {
            Some(generation) => {
                format!(
                    "group {group} rebalanced: generation {generation}, {} ({detail})",
                    count(members, "member")
                )
            }
            None => format!("group {group} rebalanced: {} ({detail})", count(members, "member")),
        },
    )
}

pub fn group_member_removed(group: &str, member: &str, reason: &str) -> Line {
    (
        Severity::Warn,
        format!("group {group}: member {member} removed ({reason})"),
    )
}

pub fn group_state_changed(group: &str, from: &str, to: &str) -> Line {
    let severity = if to == "Dead" { Severity::Warn } else { Severity::Info };
    (severity, format!("group {group}: {from} -> {to}"))
}

pub fn group_appeared(group: &str, state: &str, members: usize) -> Line {
    (
        Severity::Info,
        format!("group {group} appeared: {state}, {}", count(members, "member")),
    )
}

pub fn group_gone(group: &str) -> Line {
    (Severity::Info, format!("group {group} is gone"))
}

// The console itself.

/// The first line of an external cluster's timeline.
pub fn attached(cluster: &str, bootstrap: &str, brokers: usize, topics: usize, groups: usize) -> Line {
    (
        Severity::Info,
        format!(
            "attached to {cluster} via {bootstrap}: {}, {}, {}",
            count(brokers, "broker"),
            count(topics, "topic"),
            count(groups, "group")
        ),
    )
}

/// The console read the engine's events too slowly and `n` were lost.
pub fn events_dropped(n: u64) -> Line {
    (
        Severity::Warn,
        format!("{} dropped: the console fell behind", count(n, "event")),
    )
}

// Incidents.

/// How long after its last consequence an incident stays open for more.
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
    pub severity: Severity,
}

#[derive(Default)]
struct Tally {
    fenced_after: Option<f64>,
    leaders: usize,
    shrunk: usize,
    expanded: usize,
    offline: usize,
    rejected: usize,
    recovered_after: Option<f64>,
    moved_back: usize,
}

/// Groups the events of each fault into one incident: a broker going away opens it; its
/// fencing, the leaders that moved, the ISRs that shrank, partitions gone offline and rejected
/// produces join it while they keep coming (within 30 s of the last); the broker's return,
/// its ISRs filling again and its leaderships coming back end it. Events of no fault stay on their own.
pub fn incidents(events: &[ViewEvent]) -> Vec<Incident> {
    let mut done = Vec::new();
    let mut open: Option<(Incident, Tally, DateTime<Utc>)> = None;
    let close = |open: &mut Option<(Incident, Tally, DateTime<Utc>)>, done: &mut Vec<Incident>| {
        if let Some((mut incident, tally, _)) = open.take() {
            incident.summary = summary(&incident, &tally, events);
            done.push(incident);
        }
    };
    for (i, e) in events.iter().enumerate() {
        if let Some((_, _, last)) = &open
            && (e.at - *last).num_seconds() > INCIDENT_QUIET_SECS
        {
            close(&mut open, &mut done);
        }
        match e.class {
            EventClass::Fault(broker) => {
                if open.as_ref().is_some_and(|(o, _, _)| o.broker == broker) {
                    // A second word on the same fault (paused, then cut off...).
                    if let Some((incident, _, last)) = &mut open {
                        incident.members.push(i);
                        *last = e.at;
                    }
                    continue;
                }
                close(&mut open, &mut done);
                let incident = Incident {
                    broker,
                    at: e.at,
                    members: vec![i],
                    summary: String::new(),
                    severity: e.severity,
                };
                open = Some((incident, Tally::default(), e.at));
            }
            class => {
                // Once the broker is back, only its ISRs filling again and leaders moving back
                // (the preferred-leader election) belong to the story.
                if open.as_ref().is_some_and(|(_, t, _)| t.recovered_after.is_some())
                    && !matches!(class, EventClass::IsrExpanded | EventClass::LeaderMoved)
                {
                    close(&mut open, &mut done);
                }
                let Some((incident, tally, last)) = &mut open else {
                    continue;
                };
                let secs = (e.at - incident.at).num_milliseconds() as f64 / 1000.0;
                match class {
                    EventClass::Fenced(b) if b == incident.broker => tally.fenced_after = Some(secs),
                    EventClass::Recovered(b) if b == incident.broker => tally.recovered_after = Some(secs),
                    EventClass::Restarted(b) if b == incident.broker => {}
                    EventClass::LeaderMoved if tally.recovered_after.is_some() => tally.moved_back += 1,
                    EventClass::LeaderMoved => tally.leaders += 1,
                    EventClass::IsrShrunk => tally.shrunk += 1,
                    EventClass::IsrExpanded => tally.expanded += 1,
                    EventClass::Offline => tally.offline += 1,
                    EventClass::ProduceRejected => tally.rejected += 1,
                    _ => continue,
                }
                incident.members.push(i);
                incident.severity = incident.severity.max(e.severity);
                *last = e.at;
            }
        }
    }
    close(&mut open, &mut done);
    done
}

fn summary(incident: &Incident, tally: &Tally, events: &[ViewEvent]) -> String {
    let first = incident
        .members
        .first()
        .and_then(|i| events.get(*i))
        .map_or(String::new(), |e| e.text.clone());
    let mut steps = vec![first];
    if let Some(s) = tally.fenced_after {
        steps.push(format!("fenced after {s:.1} s"));
    }
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut effects = Vec::new();
    if tally.leaders > 0 {
        effects.push(plural(tally.leaders, "leader moved", "leaders moved"));
    }
    if tally.shrunk > 0 {
        effects.push(plural(tally.shrunk, "ISR shrank", "ISRs shrank"));
    }
    if tally.offline > 0 {
        effects.push(plural(tally.offline, "partition offline", "partitions offline"));
    }
    if tally.rejected > 0 {
        effects.push(plural(tally.rejected, "produce rejected", "produces rejected"));
    }
    if !effects.is_empty() {
        steps.push(effects.join(", "));
    }
    if let Some(s) = tally.recovered_after {
        let mut back = format!("back after {s:.1} s");
        if tally.expanded > 0 {
            back.push_str(&format!(", {} rejoined", plural(tally.expanded, "ISR", "ISRs")));
        }
        if tally.moved_back > 0 {
            back.push_str(&format!(
                ", {} back",
                plural(tally.moved_back, "leader moved", "leaders moved")
            ));
        }
        steps.push(back);
    }
    steps.join(" -> ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(secs: i64, class: EventClass, text: &str) -> ViewEvent {
        ViewEvent {
            at: DateTime::<Utc>::from_timestamp(1_700_000_000 + secs, 0).unwrap_or_default(),
            severity: Severity::Warn,
            text: text.into(),
            class,
        }
    }

    #[test]
    fn a_crash_and_its_consequences_are_one_incident() {
        let events = vec![
            event(0, EventClass::Other, "topic orders created"),
            event(10, EventClass::Fault(1), "broker 1 down: killed"),
            event(13, EventClass::Fenced(1), "broker 1 fenced"),
            event(13, EventClass::LeaderMoved, "leader orders-0: 1 -> 2"),
            event(13, EventClass::LeaderMoved, "leader orders-1: 1 -> 0"),
            event(14, EventClass::Other, "group billing rebalanced"),
            event(14, EventClass::IsrShrunk, "ISR orders-0 shrank"),
            event(39, EventClass::Restarted(1), "broker 1 started"),
            event(40, EventClass::Recovered(1), "broker 1 unfenced"),
            event(41, EventClass::IsrExpanded, "ISR orders-0 expanded"),
            event(
                45,
                EventClass::LeaderMoved,
                "leader orders-0: 2 -> 1 (preferred leader)",
            ),
            event(46, EventClass::Other, "group billing rebalanced"),
            event(200, EventClass::IsrShrunk, "ISR orders-2 shrank (slow follower)"),
            event(201, EventClass::Restarted(2), "broker 2 started"),
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
            event(0, EventClass::Fault(1), "broker 1 down: killed"),
            event(3, EventClass::Fenced(1), "broker 1 fenced"),
            event(100, EventClass::LeaderMoved, "leader orders-0: 2 -> 0 (preferred)"),
            event(110, EventClass::Fault(2), "broker 2 controlled shutdown"),
            event(111, EventClass::LeaderMoved, "leader orders-1: 2 -> 0"),
        ];
        let found = incidents(&events);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].members, vec![0, 1], "the late election is not the crash's");
        assert_eq!(found[1].members, vec![3, 4]);
        assert_eq!(found[1].summary, "broker 2 controlled shutdown -> 1 leader moved");
    }

    #[test]
    fn the_event_ring_keeps_only_the_newest() {
        let mut timeline = Timeline::new(5);
        for n in 0..100 {
            timeline.say(DateTime::<Utc>::UNIX_EPOCH, (Severity::Info, format!("event {n}")));
        }
        let texts: Vec<String> = timeline.events().into_iter().map(|e| e.text).collect();
        assert_eq!(texts, vec!["event 95", "event 96", "event 97", "event 98", "event 99"]);
        assert_eq!(Timeline::new(0).capacity, 1, "a timeline keeps at least one event");
    }

    #[test]
    fn a_leader_change_says_its_cause_when_known() {
        assert_eq!(
            leader_elected("orders", 0, Some(1), 0, 6, Some(ElectionCause::Preferred)),
            (
                Severity::Info,
                "leader orders-0: 1 -> 0, epoch 6 (preferred leader)".to_string()
            )
        );
        assert_eq!(
            leader_elected("orders", 0, Some(1), 2, 5, None),
            (Severity::Warn, "leader orders-0: 1 -> 2, epoch 5".to_string())
        );
        assert_eq!(
            leader_elected("orders", 0, None, 2, 5, Some(ElectionCause::Unclean)).0,
            Severity::Error
        );
        assert_eq!(leader_elected("orders", 0, None, 2, 5, None).0, Severity::Info);
    }

    #[test]
    fn an_isr_change_lists_the_replicas() {
        assert_eq!(
            isr_shrunk("orders", 0, &[1], &[0, 2], Some("broker 1 controlled shutdown")).1,
            "ISR orders-0 shrank: -[1] -> [0,2] (broker 1 controlled shutdown)"
        );
        assert_eq!(
            isr_shrunk("orders", 0, &[1], &[0, 2], None).1,
            "ISR orders-0 shrank: -[1] -> [0,2]"
        );
        assert_eq!(
            isr_expanded("orders", 0, &[0], &[1, 2, 0]).1,
            "ISR orders-0 expanded: +[0] -> [1,2,0] (caught up)"
        );
    }

    #[test]
    fn a_rebalance_names_the_generation_when_known() {
        assert_eq!(
            group_rebalanced("billing", Some(3), 2, "range").1,
            "group billing rebalanced: generation 3, 2 members (range)"
        );
        assert_eq!(
            group_rebalanced("billing", None, 3, "+2 -1").1,
            "group billing rebalanced: 3 members (+2 -1)"
        );
    }
}
