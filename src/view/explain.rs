//! Why the cluster is as it is: a partition's high watermark, its in-sync replicas and its
//! leader; a broker's fencing; a group's last rebalance; a rejected produce. Pure functions
//! of a [`ClusterView`], in Kafka's own terms (each sentence names the setting behind the
//! rule), so a trainer's console and a scenario file say the same thing: the key sentences
//! are `pub fn`s of plain numbers that a scenario can quote.
//!
//! What a source cannot tell (an external cluster's followers' log ends, the timing rules
//! of [`Controls`]) is left out of the sentence or said to be unknown, never guessed.

use super::lang::Msg;
use super::timeline::{ids, partition_name};
use super::{
    BrokerId, BrokerStatus, ClusterView, Controls, EpochStart, EventClass, GroupRow, PartitionRow, ReplicaRole,
    ReplicaRow, ViewEvent,
};

/// What "explain" shows: a title and its lines. A line that does not start with a space is
/// a heading; the others are sentences under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    pub title: String,
    pub lines: Vec<String>,
}

impl Explanation {
    fn new(title: String) -> Explanation {
        Explanation {
            title,
            lines: Vec::new(),
        }
    }

    fn heading(&mut self, text: &str) {
        self.lines.push(text.to_string());
    }

    fn say(&mut self, text: String) {
        self.lines.push(format!("  {text}"));
    }

    /// Whether a sentence (without its indent) is among the lines.
    pub fn says(&self, sentence: &str) -> bool {
        self.lines.iter().any(|l| l.trim_start() == sentence)
    }
}

/// Milliseconds as seconds with one decimal: `8.1 s`.
pub fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

// ---- The sentences: plain numbers in, one sentence out. ----

/// Kafka's high-watermark rule: `isr_leos` are the log end offsets of the ISR's members.
pub fn hw_rule(isr_leos: &[(BrokerId, i64)], hw: i64) -> String {
    let leos: Vec<String> = isr_leos.iter().map(|(b, leo)| format!("{b}: {leo}")).collect();
    format!(
        "HW = the smallest LEO in the ISR = {hw} (LEOs {})",
        if leos.is_empty() {
            "unknown".to_string()
        } else {
            leos.join(", ")
        }
    )
}

/// Why the HW stands still while the ISR is smaller than min.insync.replicas.
pub fn hw_held(hw: i64, isr: usize, min_insync_replicas: i32) -> String {
    format!(
        "HW stays at {hw}: the ISR has {isr} < min.insync.replicas {min_insync_replicas}, and the HW moves only while the ISR has at least min.insync.replicas members (KIP-966), so nothing is committed that fewer replicas hold"
    )
}

/// What acks=all needs of the ISR, and whether it has it now.
pub fn min_isr_rule(min_insync_replicas: i32, isr: usize) -> String {
    let have = isr as i64;
    let need = i64::from(min_insync_replicas);
    if have >= need {
        format!(
            "acks=all waits for every ISR member and needs min.insync.replicas {need}: the ISR has {have} ({have} >= {need}), so produces are accepted"
        )
    } else {
        format!(
            "acks=all needs min.insync.replicas {need} in-sync replicas: the ISR has {have} ({have} < {need}), so acks=all produces fail with NOT_ENOUGH_REPLICAS (acks=1 still works)"
        )
    }
}

/// Why a follower on a live broker left the ISR: the leader last saw it caught up
/// `caught_up_ms_ago` ago (unknown: `None`), against `replica.lag.time.max.ms`.
pub fn out_of_sync(broker: BrokerId, caught_up_ms_ago: Option<u64>, lag_time_max_ms: Option<u64>) -> String {
    match (caught_up_ms_ago, lag_time_max_ms) {
        (Some(ago), Some(max)) if ago > max => format!(
            "broker {broker} last caught up {} ago > replica.lag.time.max.ms {max}",
            seconds(ago)
        ),
        (Some(ago), Some(max)) => format!(
            "broker {broker} last caught up {} ago <= replica.lag.time.max.ms {max}: it rejoins the ISR once it reaches the HW",
            seconds(ago)
        ),
        (Some(ago), None) => format!(
            "broker {broker} last caught up {} ago, longer than replica.lag.time.max.ms",
            seconds(ago)
        ),
        (None, Some(max)) => format!(
            "broker {broker} has not caught up to the leader's LEO in this leader epoch, for more than replica.lag.time.max.ms {max}"
        ),
        (None, None) => format!("broker {broker} has not caught up to the leader's LEO within replica.lag.time.max.ms"),
    }
}

/// A replica out of the ISR because its broker is down (`how`: killed, stopped...).
pub fn replica_down(broker: BrokerId, how: &str) -> String {
    format!("broker {broker} is down ({how}): it fetches nothing, so it left the ISR")
}

/// NOT_ENOUGH_REPLICAS: the ISR of `topic`-`partition` is smaller than min.insync.replicas.
pub fn not_enough_replicas(topic: &str, partition: i32, min_insync_replicas: i32, isr: &[BrokerId]) -> String {
    format!(
        "acks=all needs min.insync.replicas {min_insync_replicas} in-sync replicas; the ISR of {} is {} ({} < {min_insync_replicas})",
        partition_name(topic, partition),
        ids(isr),
        isr.len()
    )
}

/// The election rule in force, and who it may choose among.
pub fn election_rule(balanced: bool, candidates: &[BrokerId]) -> String {
    let rule = if balanced {
        "the balanced rule: the live ISR member leading the fewest partitions (ties: assignment order)"
    } else {
        "Kafka's rule: the first live ISR member in assignment order"
    };
    format!("the controller elects by {rule}; candidates now {}", ids(candidates))
}

/// unclean.leader.election.enable, said as what it means for this partition.
pub fn unclean_rule(enabled: bool) -> String {
    if enabled {
        "unclean.leader.election.enable is on: with no live ISR member, an out-of-sync replica may lead (what it lacks is lost)".into()
    } else {
        "unclean.leader.election.enable is off: an out-of-sync replica never leads; with no live ISR member the partition stays offline".into()
    }
}

/// Whether the preferred leader leads, and what brings it back.
pub fn preferred_rule(leader: Option<BrokerId>, preferred: BrokerId, auto_rebalance: Option<bool>) -> String {
    if leader == Some(preferred) {
        return format!("broker {preferred} is the preferred leader (first in the assignment)");
    }
    let back = match auto_rebalance {
        Some(true) => "auto.leader.rebalance.enable is on: the controller moves leadership back once it is in the ISR",
        Some(false) => "auto.leader.rebalance.enable is off: a preferred-leader election moves leadership back",
        None => "a preferred-leader election (or auto.leader.rebalance.enable) moves leadership back",
    };
    format!("the preferred leader is broker {preferred} (first in the assignment), not leading: {back}")
}

/// Why a broker is fenced: it missed heartbeats for broker.session.timeout.ms.
pub fn fenced(broker: BrokerId, session_timeout_ms: Option<u64>) -> String {
    match session_timeout_ms {
        Some(ms) => format!(
            "broker {broker} is fenced: the controller heard no heartbeat from it for broker.session.timeout.ms {ms}"
        ),
        None => format!(
            "broker {broker} is fenced: the controller heard no heartbeat from it for broker.session.timeout.ms"
        ),
    }
}

/// Where a follower truncates, if its log diverged from the leader's (KIP-101/279): it asks
/// the leader where its own latest epoch ends and cuts its log there, again while the
/// leader answers with an older epoch than it asked for. `None`: no divergence.
pub fn truncation_point(
    leader_epochs: &[EpochStart],
    leader_leo: i64,
    follower_epochs: &[EpochStart],
    follower_leo: i64,
) -> Option<i64> {
    let mut epochs = follower_epochs.to_vec();
    let mut leo = follower_leo;
    let mut cut = None;
    while let Some(latest) = epochs.last().copied() {
        let Some((epoch, end)) = epoch_end(leader_epochs, leader_leo, latest.epoch) else {
            break;
        };
        let mut to = end.min(leo);
        if epoch != latest.epoch {
            // The leader does not know our epoch: cut where ours of its answer ends too.
            if let Some((_, own)) = epoch_end(&epochs, leo, epoch) {
                to = to.min(own);
            }
        }
        if to >= leo {
            break;
        }
        leo = to;
        cut = Some(to);
        epochs.retain(|e| e.start_offset < to);
    }
    cut
}

/// Kafka's OffsetsForLeaderEpoch: the largest epoch <= `requested` and where it ends.
fn epoch_end(epochs: &[EpochStart], leo: i64, requested: i32) -> Option<(i32, i64)> {
    let i = epochs.iter().rposition(|e| e.epoch <= requested)?;
    let end = epochs.get(i + 1).map_or(leo, |next| next.start_offset);
    Some((epochs[i].epoch, end))
}

/// A diverged follower's suffix: `from`..`to` was written in an epoch the leader did not.
pub fn diverged(broker: BrokerId, truncate_to: i64, leo: i64) -> String {
    diverged_said(broker, truncate_to, leo).english()
}

/// [`diverged`] as a message of the catalogue, for a console in another language.
pub fn diverged_said(broker: BrokerId, truncate_to: i64, leo: i64) -> Msg {
    Msg::new("broker {broker} diverged: offsets {to}-{last} are not in the leader's log; will truncate to {to}")
        .with("broker", broker)
        .with("to", truncate_to)
        .with("last", leo - 1)
}

// ---- Whole explanations. ----

/// Why a partition's HW, ISR and leader are what they are.
pub fn partition(view: &ClusterView, topic: &str, partition: i32) -> Explanation {
    let tp = partition_name(topic, partition);
    let Some(p) = view
        .partitions
        .iter()
        .find(|p| p.topic == topic && p.partition == partition)
    else {
        let mut e = Explanation::new(tp.clone());
        e.say(format!(
            "{tp} is not in the cluster's metadata (deleted, or not created yet)"
        ));
        return e;
    };
    let controls = view.controls;
    let leader = p.leader.map_or("none".to_string(), |l| l.to_string());
    let mut e = Explanation::new(format!(
        "{tp}: leader {leader}, epoch {}, ISR {}",
        p.leader_epoch,
        ids(&p.isr)
    ));

    e.heading("High watermark");
    for r in &p.replicas {
        e.say(replica_line(view, p, r));
    }
    match p.high_watermark {
        Some(hw) => {
            let leos: Vec<(BrokerId, i64)> = p
                .isr
                .iter()
                .filter_map(|b| Some((*b, p.replica(*b)?.log_end_offset?)))
                .collect();
            let below_min = p.min_insync_replicas.filter(|m| p.isr.len() < *m as usize);
            if let Some(min) = below_min {
                e.say(hw_held(hw, p.isr.len(), min));
            } else if leos.len() == p.isr.len() {
                e.say(hw_rule(&leos, hw));
            } else {
                e.say(format!(
                    "HW = the smallest LEO in the ISR = {hw} (the followers' LEOs are not known here)"
                ));
            }
        }
        None => e.say("no HW: the partition has no live leader to keep one".into()),
    }
    if let Some(min) = p.min_insync_replicas {
        e.say(min_isr_rule(min, p.isr.len()));
    }
    if let Some(acks) = controls.and_then(|c| c.producer_acks) {
        e.say(format!("the workload produces with acks={}", acks_name(acks)));
    }

    e.heading("In-sync replicas");
    let out: Vec<&ReplicaRow> = p.replicas.iter().filter(|r| !p.isr.contains(&r.broker)).collect();
    if out.is_empty() {
        e.say(format!("every replica is in the ISR {}", ids(&p.isr)));
    }
    for r in out {
        e.say(why_out(view, controls, r));
    }
    for b in &p.isr {
        if p.replica(*b).is_some_and(|r| r.role == ReplicaRole::Offline) {
            e.say(format!(
                "broker {b} is down but still in the ISR: the last ISR member is never removed, so no data is lost by electing it"
            ));
        }
    }

    e.heading("Leader");
    let candidates: Vec<BrokerId> = p
        .replicas
        .iter()
        .filter(|r| p.isr.contains(&r.broker) && r.role != ReplicaRole::Offline)
        .map(|r| r.broker)
        .collect();
    if let Some(c) = controls {
        e.say(election_rule(c.balanced_election, &candidates));
    } else {
        e.say(format!("live ISR members, the candidates: {}", ids(&candidates)));
    }
    if p.offline() {
        let down: Vec<BrokerId> = p
            .replicas
            .iter()
            .filter(|r| r.role == ReplicaRole::Offline)
            .map(|r| r.broker)
            .collect();
        e.say(format!(
            "{tp} is offline: no live ISR member (ISR {}; down: {})",
            ids(&p.isr),
            ids(&down)
        ));
    }
    e.say(preferred_rule(
        p.leader,
        p.preferred_leader,
        controls.map(|c| c.auto_rebalance),
    ));
    if let Some(c) = controls {
        e.say(unclean_rule(c.unclean_election));
    }
    let prefix = format!("leader {tp}:");
    if let Some(last) = view.events.iter().rev().find(|ev| ev.text.starts_with(&prefix)) {
        e.say(format!("last election: {}", last.text));
    }
    e
}

/// One replica in a line: role, LEO, how far behind, ISR, and why it is out.
pub fn replica_line(view: &ClusterView, p: &PartitionRow, r: &ReplicaRow) -> String {
    replica_said(view, p, r).english()
}

/// [`replica_line`] as a message of the catalogue: `broker 2 ○ out-of-sync` then its parts
/// (`LEO 1150`, `HW 1150`, `51 behind`, `out of ISR: ...`), each a message, joined by
/// `{head}: {rest}` and `{a}, {b}`.
pub fn replica_said(view: &ClusterView, p: &PartitionRow, r: &ReplicaRow) -> Msg {
    let head = Msg::new("broker {broker} {glyph} {role}")
        .with("broker", r.broker)
        .with("glyph", r.role.glyph())
        .with_msg("role", Msg::words(r.role.label()));
    let mut parts = Vec::new();
    match r.log_end_offset {
        Some(leo) => {
            parts.push(Msg::new("LEO {leo}").with("leo", leo));
            if let Some(hw) = r.high_watermark.filter(|_| r.role != ReplicaRole::Leader) {
                parts.push(Msg::new("HW {hw}").with("hw", hw));
            }
            if let Some(behind) = p.leader_log_end().map(|l| l - leo).filter(|b| *b > 0) {
                parts.push(Msg::new("{n} behind").with("n", behind));
            }
        }
        None => parts.push(Msg::new("LEO unknown")),
    }
    let out = |why: Msg| Msg::new("out of ISR: {why}").with_msg("why", why);
    if p.isr.contains(&r.broker) {
        parts.push(Msg::new("in ISR"));
    } else if r.role == ReplicaRole::Offline {
        parts.push(out(Msg::words(broker_state(view, r.broker))));
    } else {
        parts.push(out(match (r.caught_up_ms_ago, view.controls) {
            (Some(ago), _) => Msg::new("last caught up {ago} ago").with("ago", seconds(ago)),
            (None, Some(c)) => {
                Msg::new("not caught up for replica.lag.time.max.ms {ms}").with("ms", c.replica_lag_time_max_ms)
            }
            (None, None) => Msg::new("not caught up"),
        }));
    }
    if let (Some(leader), Some(leo)) = (p.leader.and_then(|l| p.replica(l)), r.log_end_offset)
        && leader.broker != r.broker
        && let Some(to) = leader
            .log_end_offset
            .and_then(|lleo| truncation_point(&leader.epochs, lleo, &r.epochs, leo))
    {
        parts.push(Msg::new("diverged: will truncate to {to}").with("to", to));
    }
    let rest = parts
        .into_iter()
        .reduce(|a, b| Msg::new("{a}, {b}").with_msg("a", a).with_msg("b", b));
    match rest {
        Some(rest) => Msg::new("{head}: {rest}").with_msg("head", head).with_msg("rest", rest),
        None => head,
    }
}

fn why_out(view: &ClusterView, controls: Option<Controls>, r: &ReplicaRow) -> String {
    if r.role == ReplicaRole::Offline {
        return replica_down(r.broker, &broker_state(view, r.broker));
    }
    out_of_sync(
        r.broker,
        r.caught_up_ms_ago,
        controls.map(|c| c.replica_lag_time_max_ms),
    )
}

/// How the view says a broker is (`killed`, `fenced`...), `not in the cluster` if unknown.
fn broker_state(view: &ClusterView, broker: BrokerId) -> String {
    view.brokers
        .iter()
        .find(|b| b.id == broker)
        .map_or("not in the cluster".into(), |b| b.status.label().to_string())
}

fn acks_name(acks: i16) -> String {
    if acks == -1 { "all".into() } else { acks.to_string() }
}

/// Why a broker is in its state, what it leads and whether it is the controller.
pub fn broker(view: &ClusterView, id: BrokerId) -> Explanation {
    let Some(b) = view.brokers.iter().find(|b| b.id == id) else {
        let mut e = Explanation::new(format!("broker {id}"));
        e.say(format!("broker {id} is not in the cluster"));
        return e;
    };
    let controls = view.controls;
    let session = controls.map(|c| c.broker_session_timeout_ms);
    let lag = controls.map(|c| c.replica_lag_time_max_ms);
    let mut e = Explanation::new(format!("broker {id}: {}", b.status.label()));
    e.heading("State");
    let timeout = |name: &str, ms: Option<u64>| match ms {
        Some(ms) => format!("{name} {ms}"),
        None => name.to_string(),
    };
    e.say(match b.status {
        BrokerStatus::Online => format!(
            "broker {id} is online: it heartbeats the controller within {}",
            timeout("broker.session.timeout.ms", session)
        ),
        BrokerStatus::Fenced => fenced(id, session),
        BrokerStatus::Killed => format!(
            "broker {id} was killed (a crash, no controlled shutdown): the controller notices only when no heartbeat comes for {}, then fences it and moves its leaderships",
            timeout("broker.session.timeout.ms", session)
        ),
        BrokerStatus::Paused => format!(
            "broker {id} is paused (like a long GC pause): no heartbeats, no fetches; fenced after {}, its replicas leave the ISRs after {}",
            timeout("broker.session.timeout.ms", session),
            timeout("replica.lag.time.max.ms", lag)
        ),
        BrokerStatus::Stopped => format!(
            "broker {id} stopped cleanly: a controlled shutdown moved its leaderships before it went"
        ),
        BrokerStatus::Down => format!("broker {id} is gone from the cluster's metadata: Kafka has fenced it"),
        BrokerStatus::Unreachable => {
            format!("broker {id} is in the metadata, but kdeck cannot connect to it")
        }
    });
    let mine: Vec<&ViewEvent> = view
        .events
        .iter()
        .filter(|ev| {
            matches!(ev.class, EventClass::Fault(b) | EventClass::Fenced(b) | EventClass::Restarted(b) | EventClass::Recovered(b) if b == id)
        })
        .collect();
    for ev in mine.iter().rev().take(3).rev() {
        e.say(format!("event: {}", ev.text));
    }
    e.heading("Role");
    e.say(match view.controller {
        Some(c) if c == id => format!("broker {id} is the controller"),
        Some(c) => format!("the controller is broker {c}"),
        None => "no controller now".to_string(),
    });
    let leads: Vec<String> = view
        .partitions
        .iter()
        .filter(|p| p.leader == Some(id))
        .map(|p| partition_name(&p.topic, p.partition))
        .collect();
    e.say(format!("it leads {}", listed(&leads, "partition", "partitions")));
    let out: Vec<String> = view
        .partitions
        .iter()
        .filter(|p| p.replica(id).is_some() && !p.isr.contains(&id))
        .map(|p| partition_name(&p.topic, p.partition))
        .collect();
    if !out.is_empty() {
        e.say(format!("out of the ISR of {}", listed(&out, "partition", "partitions")));
    }
    let preferred_elsewhere = view
        .partitions
        .iter()
        .filter(|p| p.preferred_leader == id && p.leader != Some(id))
        .count();
    if preferred_elsewhere > 0 {
        e.say(preferred_rule(None, id, controls.map(|c| c.auto_rebalance)));
    }
    e
}

/// `3 partitions: a-0, a-1, b-0` (at most 8 named).
fn listed(names: &[String], one: &str, many: &str) -> String {
    const SHOWN: usize = 8;
    match names.len() {
        0 => format!("no {many}"),
        n => {
            let mut text = format!(
                "{n} {}: {}",
                if n == 1 { one } else { many },
                names[..n.min(SHOWN)].join(", ")
            );
            if n > SHOWN {
                text.push_str(&format!(" and {} more", n - SHOWN));
            }
            text
        }
    }
}

/// A group's state, members and why it last rebalanced.
pub fn group(view: &ClusterView, id: &str) -> Explanation {
    let Some(g) = view.groups.iter().find(|g| g.group_id == id) else {
        let mut e = Explanation::new(format!("group {id}"));
        e.say(format!(
            "group {id} is not known to the cluster (gone, or never joined)"
        ));
        return e;
    };
    let mut e = Explanation::new(format!("group {id}: {}, generation {}", g.state, g.generation));
    e.heading("State");
    e.say(group_state(g));
    e.say(format!(
        "coordinator: broker {}; protocol {}",
        g.coordinator,
        or_none(&g.protocol)
    ));
    e.heading("Members");
    if g.members.is_empty() {
        e.say("no members".into());
    }
    for m in &g.members {
        let parts: Vec<String> = m.assignment.iter().map(|(t, p)| partition_name(t, *p)).collect();
        e.say(format!(
            "{}: {}",
            m.member_id,
            if parts.is_empty() {
                "nothing assigned".into()
            } else {
                parts.join(", ")
            }
        ));
    }
    e.heading("Last rebalance");
    let mine: Vec<&ViewEvent> = view.events.iter().filter(|ev| is_about_group(&ev.text, id)).collect();
    if mine.is_empty() {
        e.say("no rebalance seen since the console started".into());
    }
    for ev in mine.iter().rev().take(5).rev() {
        e.say(ev.text.clone());
    }
    e.say(
        "a group rebalances when a member joins, leaves or misses heartbeats for session.timeout.ms, or when its coordinator moves"
            .into(),
    );
    e
}

fn or_none(text: &str) -> &str {
    if text.is_empty() { "none" } else { text }
}

fn group_state(g: &GroupRow) -> String {
    match g.state.as_str() {
        "Stable" => "Stable: every member has its assignment and consumes".into(),
        "PreparingRebalance" => {
            "PreparingRebalance: the coordinator waits for every member to rejoin (up to the rebalance timeout); nobody consumes".into()
        }
        "CompletingRebalance" => "CompletingRebalance: the members joined; the coordinator waits for the leader's assignment".into(),
        "Empty" => "Empty: no members; the committed offsets are kept".into(),
        "Dead" => "Dead: the group is being removed".into(),
        other => other.to_string(),
    }
}

/// Whether a timeline line is about group `id` (`group billing rebalanced...`, `group billing: ...`).
fn is_about_group(text: &str, id: &str) -> bool {
    text.strip_prefix("group ")
        .and_then(|rest| rest.strip_prefix(id))
        .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with(':'))
}

/// Why a produce failed, from its timeline line or the console's note of it.
pub fn produce_failure(view: &ClusterView, text: &str) -> Explanation {
    let p = partition_in(view, text);
    let tp = p.map(|p| partition_name(&p.topic, p.partition));
    let mut e = Explanation::new(match &tp {
        Some(tp) => format!("produce to {tp} failed"),
        None => "a produce failed".to_string(),
    });
    e.heading("What happened");
    e.say(text.to_string());
    e.heading("Why");
    let upper = text.to_ascii_uppercase().replace('_', "");
    let Some(p) = p else {
        e.say("the partition is not in the cluster's metadata now".into());
        return e;
    };
    if upper.contains("NOTENOUGHREPLICAS") {
        match p.min_insync_replicas {
            Some(min) => e.say(not_enough_replicas(&p.topic, p.partition, min, &p.isr)),
            None => e.say(format!(
                "acks=all needs min.insync.replicas in-sync replicas; the ISR of {} is {}",
                partition_name(&p.topic, p.partition),
                ids(&p.isr)
            )),
        }
        if upper.contains("AFTERAPPEND") {
            e.say("the ISR shrank after the leader appended: the record is in the leader's log but not acknowledged; a retry may duplicate it".into());
        }
        for r in p.replicas.iter().filter(|r| !p.isr.contains(&r.broker)) {
            e.say(why_out(view, view.controls, r));
        }
    } else if p.offline()
        || upper.contains("LEADERNOTAVAILABLE")
        || upper.contains("NOTLEADER")
        || upper.contains("OFFLINE")
    {
        let down: Vec<String> = p
            .replicas
            .iter()
            .filter(|r| r.role == ReplicaRole::Offline)
            .map(|r| format!("broker {} {}", r.broker, broker_state(view, r.broker)))
            .collect();
        e.say(format!(
            "{} has no live leader: no live ISR member (ISR {}); down: {}",
            partition_name(&p.topic, p.partition),
            ids(&p.isr),
            if down.is_empty() {
                "none".into()
            } else {
                down.join(", ")
            }
        ));
        if let Some(c) = view.controls {
            e.say(unclean_rule(c.unclean_election));
        }
    } else {
        e.say(format!(
            "{} now: leader {}, ISR {}",
            partition_name(&p.topic, p.partition),
            p.leader.map_or("none".into(), |l| l.to_string()),
            ids(&p.isr)
        ));
    }
    e
}

/// The partition a sentence names (`orders-0` in `produce to orders-0 rejected: ...`).
fn partition_in<'a>(view: &'a ClusterView, text: &str) -> Option<&'a PartitionRow> {
    view.partitions
        .iter()
        .filter(|p| {
            let name = partition_name(&p.topic, p.partition);
            text.match_indices(&name).any(|(i, _)| {
                let before = text[..i].chars().next_back();
                let after = text[i + name.len()..].chars().next();
                before.is_none_or(|c| !is_name_char(c)) && after.is_none_or(|c| !c.is_ascii_digit())
            })
        })
        .max_by_key(|p| p.topic.len())
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// An event of the timeline explained: a rejected produce, a broker's fault or fencing, a
/// partition's election or ISR change, a group's rebalance.
pub fn event(view: &ClusterView, event: &ViewEvent) -> Explanation {
    let mut e = match event.class {
        EventClass::ProduceRejected(_) => return produce_failure(view, &event.text),
        EventClass::Fault(b) | EventClass::Fenced(b) | EventClass::Restarted(b) | EventClass::Recovered(b) => {
            broker(view, b)
        }
        _ if event.text.starts_with("produce to") || event.text.contains("NOT_ENOUGH_REPLICAS") => {
            return produce_failure(view, &event.text);
        }
        _ => match (
            group_in(&event.text),
            partition_in(view, &event.text),
            broker_in(&event.text),
        ) {
            (Some(g), _, _) => group(view, g),
            (None, Some(p), _) => partition(view, &p.topic, p.partition),
            (None, None, Some(b)) => broker(view, b),
            (None, None, None) => Explanation::new("event".into()),
        },
    };
    e.lines.insert(0, format!("  {}", event.text));
    e.lines.insert(0, "The event".to_string());
    e
}

fn group_in(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("group ")?;
    rest.split([' ', ':']).next().filter(|g| !g.is_empty())
}

fn broker_in(text: &str) -> Option<BrokerId> {
    let rest = text.strip_prefix("broker ")?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{BrokerRow, MemberRow, Severity, SourceKind, Throughput};
    use chrono::{DateTime, Utc};

    fn replica(broker: BrokerId, role: ReplicaRole, leo: i64, caught_up: Option<u64>) -> ReplicaRow {
        ReplicaRow {
            broker,
            role,
            log_end_offset: (role != ReplicaRole::Offline).then_some(leo),
            log_start_offset: Some(0),
            high_watermark: Some(leo),
            epochs: vec![EpochStart {
                epoch: 4,
                start_offset: 0,
            }],
            caught_up_ms_ago: caught_up,
        }
    }

    fn broker_row(id: BrokerId, status: BrokerStatus) -> BrokerRow {
        BrokerRow {
            id,
            status,
            is_controller: id == 0,
            leaders: 0,
            replicas: 1,
            throughput: Throughput::Messages { in_per_sec: 0.0 },
            address: None,
            produce_history: Vec::new(),
            changed_at: None,
        }
    }

    fn ev(class: EventClass, text: &str) -> ViewEvent {
        ViewEvent {
            at: DateTime::<Utc>::UNIX_EPOCH,
            cluster_at: DateTime::<Utc>::UNIX_EPOCH,
            severity: Severity::Warn,
            text: text.into(),
            msg: None,
            class,
        }
    }

    /// orders-0 on brokers 1, 2, 3: 1 leads, 2 is slow (out of the ISR), 3 is killed.
    fn view() -> ClusterView {
        let mut v = ClusterView::empty("t", SourceKind::Embedded);
        v.controller = Some(1);
        v.brokers = vec![
            broker_row(1, BrokerStatus::Online),
            broker_row(2, BrokerStatus::Online),
            broker_row(3, BrokerStatus::Fenced),
        ];
        v.partitions = vec![PartitionRow {
            topic: "orders".into(),
            partition: 0,
            leader: Some(1),
            leader_epoch: 4,
            replicas: vec![
                replica(3, ReplicaRole::Offline, 0, None),
                replica(1, ReplicaRole::Leader, 1500, None),
                replica(2, ReplicaRole::OutOfSync, 1200, Some(8100)),
            ],
            isr: vec![1],
            preferred_leader: 3,
            high_watermark: Some(1500),
            log_start_offset: Some(0),
            under_replicated: true,
            changed_at: None,
            min_insync_replicas: Some(2),
        }];
        v.groups = vec![GroupRow {
            group_id: "billing".into(),
            state: "Stable".into(),
            protocol: "range".into(),
            generation: 8,
            coordinator: 1,
            members: vec![MemberRow {
                member_id: "billing-1".into(),
                assignment: vec![("orders".into(), 0)],
            }],
            offsets: Vec::new(),
            total_lag: 0,
            lag_history: Vec::new(),
        }];
        v.events = vec![
            ev(EventClass::Fault(3), "broker 3 down: killed"),
            ev(
                EventClass::Fenced(3),
                "broker 3 fenced: missed heartbeats for the session timeout",
            ),
            ev(
                EventClass::LeaderMoved {
                    partition: "orders-0".into(),
                    from: Some(3),
                    to: 1,
                },
                "leader orders-0: 3 -> 1, epoch 4 (leader unavailable)",
            ),
            ev(
                EventClass::Other,
                "group billing: member billing-2 removed (session timed out: no heartbeat)",
            ),
            ev(
                EventClass::Other,
                "group billing rebalanced: generation 8, 1 members (range)",
            ),
            ev(
                EventClass::ProduceRejected(crate::view::Refusals {
                    partition: "orders-0".into(),
                    error: "NOT_ENOUGH_REPLICAS".into(),
                    count: 1,
                    since: DateTime::<Utc>::UNIX_EPOCH,
                }),
                "produce to orders-0 rejected: NotEnoughReplicas: ISR [1] smaller than min.insync.replicas 2",
            ),
        ];
        v.controls = Some(Controls {
            frozen: false,
            held: false,
            slow_motion: 1,
            auto_rebalance: false,
            unclean_election: false,
            balanced_election: false,
            replica_lag_time_max_ms: 6000,
            broker_session_timeout_ms: 3000,
            producer_acks: Some(-1),
            clock_ms: 0,
        });
        v
    }

    #[test]
    fn an_isr_below_min_insync_holds_the_hw() {
        assert_eq!(
            hw_held(142, 1, 2),
            "HW stays at 142: the ISR has 1 < min.insync.replicas 2, and the HW moves only while the ISR has at least min.insync.replicas members (KIP-966), so nothing is committed that fewer replicas hold"
        );
    }

    #[test]
    fn the_hw_is_the_smallest_leo_in_the_isr() {
        let e = partition(&view(), "orders", 0);
        assert_eq!(e.title, "orders-0: leader 1, epoch 4, ISR [1]");
        // ISR 1 < min.insync.replicas 2: the HW is held where it is.
        assert!(e.says(&hw_held(1500, 1, 2)), "{e:#?}");
        let mut v = view();
        v.partitions[0].min_insync_replicas = Some(1);
        let moving = partition(&v, "orders", 0);
        assert!(
            moving.says("HW = the smallest LEO in the ISR = 1500 (LEOs 1: 1500)"),
            "{moving:#?}"
        );
        assert!(e.says(
            "acks=all needs min.insync.replicas 2 in-sync replicas: the ISR has 1 (1 < 2), so acks=all produces fail with NOT_ENOUGH_REPLICAS (acks=1 still works)"
        ));
        assert!(e.says("broker 2 ○ out-of-sync: LEO 1200, HW 1200, 300 behind, out of ISR: last caught up 8.1 s ago"));
    }

    #[test]
    fn an_out_of_sync_replica_says_why_it_is_out() {
        let e = partition(&view(), "orders", 0);
        assert!(
            e.says("broker 2 last caught up 8.1 s ago > replica.lag.time.max.ms 6000"),
            "{e:#?}"
        );
        assert!(e.says("broker 3 is down (fenced): it fetches nothing, so it left the ISR"));
    }

    #[test]
    fn the_leader_is_explained_by_the_election_rule() {
        let e = partition(&view(), "orders", 0);
        assert!(e.says(
            "the controller elects by Kafka's rule: the first live ISR member in assignment order; candidates now [1]"
        ), "{e:#?}");
        assert!(e.says("the preferred leader is broker 3 (first in the assignment), not leading: auto.leader.rebalance.enable is off: a preferred-leader election moves leadership back"));
        assert!(e.says("unclean.leader.election.enable is off: an out-of-sync replica never leads; with no live ISR member the partition stays offline"));
        assert!(e.says("last election: leader orders-0: 3 -> 1, epoch 4 (leader unavailable)"));
    }

    #[test]
    fn a_fenced_broker_says_it_missed_heartbeats() {
        let e = broker(&view(), 3);
        assert_eq!(e.title, "broker 3: fenced");
        assert!(
            e.says("broker 3 is fenced: the controller heard no heartbeat from it for broker.session.timeout.ms 3000"),
            "{e:#?}"
        );
        assert!(e.says("event: broker 3 fenced: missed heartbeats for the session timeout"));
        assert!(e.says("the controller is broker 1"));
        assert!(e.says("it leads no partitions"));
        assert!(broker(&view(), 1).says("broker 1 is the controller"));
        assert!(broker(&view(), 1).says("it leads 1 partition: orders-0"));
    }

    #[test]
    fn a_group_says_why_it_last_rebalanced() {
        let e = group(&view(), "billing");
        assert_eq!(e.title, "group billing: Stable, generation 8");
        assert!(
            e.says("group billing: member billing-2 removed (session timed out: no heartbeat)"),
            "{e:#?}"
        );
        assert!(e.says("group billing rebalanced: generation 8, 1 members (range)"));
        assert!(e.says("billing-1: orders-0"));
    }

    #[test]
    fn not_enough_replicas_names_the_isr_and_min_insync() {
        let v = view();
        let e = event(&v, &v.events[5]);
        assert!(
            e.says("acks=all needs min.insync.replicas 2 in-sync replicas; the ISR of orders-0 is [1] (1 < 2)"),
            "{e:#?}"
        );
        assert_eq!(
            not_enough_replicas("orders", 0, 2, &[1]),
            "acks=all needs min.insync.replicas 2 in-sync replicas; the ISR of orders-0 is [1] (1 < 2)"
        );
    }

    #[test]
    fn a_produce_to_an_offline_partition_names_the_replicas_down() {
        let mut v = view();
        v.partitions[0].leader = None;
        v.partitions[0].replicas[1].role = ReplicaRole::Offline;
        v.brokers[0].status = BrokerStatus::Killed;
        let e = produce_failure(&v, "produce to orders-0 rejected: LeaderNotAvailable: no leader");
        assert!(
            e.says("orders-0 has no live leader: no live ISR member (ISR [1]); down: broker 3 fenced, broker 1 killed"),
            "{e:#?}"
        );
    }

    #[test]
    fn an_event_row_is_explained_by_what_it_is_about() {
        let v = view();
        assert_eq!(event(&v, &v.events[1]).title, "broker 3: fenced");
        assert_eq!(event(&v, &v.events[2]).title, "orders-0: leader 1, epoch 4, ISR [1]");
        assert_eq!(event(&v, &v.events[4]).title, "group billing: Stable, generation 8");
        assert!(event(&v, &v.events[4]).says("group billing rebalanced: generation 8, 1 members (range)"));
    }

    #[test]
    fn a_follower_that_wrote_past_the_new_leaders_epoch_start_truncates_there() {
        let e = |epoch, start_offset| EpochStart { epoch, start_offset };
        // The new leader began epoch 4 at 1180; the old one wrote epoch 3 up to 1200.
        let leader = [e(3, 0), e(4, 1180)];
        assert_eq!(truncation_point(&leader, 1250, &[e(3, 0)], 1200), Some(1180));
        assert_eq!(truncation_point(&leader, 1250, &[e(3, 0)], 1180), None, "a prefix");
        assert_eq!(truncation_point(&leader, 1250, &[e(3, 0), e(4, 1180)], 1250), None);
        // An epoch the leader never had: cut where the leader's previous epoch ends.
        assert_eq!(
            truncation_point(&leader, 1250, &[e(3, 0), e(5, 1190)], 1210),
            Some(1180)
        );
        assert_eq!(
            diverged(2, 1180, 1200),
            "broker 2 diverged: offsets 1180-1199 are not in the leader's log; will truncate to 1180"
        );
    }
}
