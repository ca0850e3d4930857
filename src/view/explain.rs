//! Why the cluster is as it is: a partition's high watermark, its in-sync replicas and its
//! leader; a broker's fencing; a group's last rebalance; a rejected produce. Pure functions
//! of a [`ClusterView`], in Kafka's own terms (each sentence names the setting behind the
//! rule), so a trainer's console and a scenario file say the same thing: the key sentences
//! are `pub fn`s of plain numbers that a scenario can quote.
//!
//! Each line is a [`Msg`] of the catalogue, so a console in another language says it in its
//! own words; [`Explanation::english_lines`] and each sentence's `pub fn ... -> String` are
//! the English, the same bytes whatever the console speaks.
//!
//! What a source cannot tell (an external cluster's followers' log ends, the timing rules
//! of [`Controls`]) is left out of the sentence or said to be unknown, never guessed.

use std::fmt::Display;

use super::lang::Msg;
use super::timeline::{ids, partition_name};
use super::{
    BrokerId, BrokerStatus, ClusterView, Controls, EpochStart, EventClass, GroupRow, PartitionRow, ReplicaRole,
    ReplicaRow, ViewEvent,
};

/// What "explain" shows: a title and its lines, headings and the sentences under them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    pub title: Msg,
    pub lines: Vec<Line>,
}

/// A line of an explanation: a heading ("High watermark") or a sentence under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Heading(Msg),
    Sentence(Msg),
}

impl Line {
    /// What the line says, in no language yet.
    pub fn msg(&self) -> &Msg {
        match self {
            Line::Heading(m) | Line::Sentence(m) => m,
        }
    }

    pub fn is_heading(&self) -> bool {
        matches!(self, Line::Heading(_))
    }

    /// The line in English, a sentence indented by two spaces under its heading.
    pub fn english(&self) -> String {
        match self {
            Line::Heading(m) => m.english(),
            Line::Sentence(m) => format!("  {}", m.english()),
        }
    }
}

impl Explanation {
    fn new(title: Msg) -> Explanation {
        Explanation {
            title,
            lines: Vec::new(),
        }
    }

    fn heading(&mut self, id: &'static str) {
        self.lines.push(Line::Heading(Msg::new(id)));
    }

    fn say(&mut self, msg: Msg) {
        self.lines.push(Line::Sentence(msg));
    }

    /// Whether a sentence (or a heading), in English, is among the lines.
    pub fn says(&self, sentence: &str) -> bool {
        self.lines.iter().any(|l| l.msg().english() == sentence)
    }

    /// The lines in English: a heading as it is, a sentence indented by two spaces.
    pub fn english_lines(&self) -> Vec<String> {
        self.lines.iter().map(Line::english).collect()
    }
}

/// Milliseconds as seconds with one decimal: `8.1 s`.
pub fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// `msg` with `{name}` shown as `value`, or as the words `none` (translated) without one.
fn with_or(msg: Msg, name: &'static str, value: Option<impl Display>, none: &'static str) -> Msg {
    match value {
        Some(v) => msg.with(name, v),
        None => msg.with_msg(name, Msg::new(none)),
    }
}

/// What a timeline event says: its message, or its English text as words of their own.
fn event_said(event: &ViewEvent) -> Msg {
    event.msg.clone().unwrap_or_else(|| Msg::words(event.text.clone()))
}

// ---- The sentences: plain numbers in, one sentence out. ----

/// Kafka's high-watermark rule: `isr_leos` are the log end offsets of the ISR's members.
pub fn hw_rule(isr_leos: &[(BrokerId, i64)], hw: i64) -> String {
    hw_rule_said(isr_leos, hw).english()
}

/// [`hw_rule`] as a message of the catalogue.
pub fn hw_rule_said(isr_leos: &[(BrokerId, i64)], hw: i64) -> Msg {
    let leos: Vec<String> = isr_leos.iter().map(|(b, leo)| format!("{b}: {leo}")).collect();
    let msg = Msg::new("HW = the smallest LEO in the ISR = {hw} (LEOs {leos})").with("hw", hw);
    with_or(msg, "leos", (!leos.is_empty()).then(|| leos.join(", ")), "unknown")
}

/// Why the HW stands still while the ISR is smaller than min.insync.replicas.
pub fn hw_held(hw: i64, isr: usize, min_insync_replicas: i32) -> String {
    hw_held_said(hw, isr, min_insync_replicas).english()
}

/// [`hw_held`] as a message of the catalogue.
pub fn hw_held_said(hw: i64, isr: usize, min_insync_replicas: i32) -> Msg {
    Msg::new(
        "HW stays at {hw}: the ISR has {isr} < min.insync.replicas {min}, and the HW moves only while the ISR has at least min.insync.replicas members (KIP-966), so nothing is committed that fewer replicas hold",
    )
    .with("hw", hw)
    .with("isr", isr)
    .with("min", min_insync_replicas)
}

/// What acks=all needs of the ISR, and whether it has it now.
pub fn min_isr_rule(min_insync_replicas: i32, isr: usize) -> String {
    min_isr_rule_said(min_insync_replicas, isr).english()
}

/// [`min_isr_rule`] as a message of the catalogue.
pub fn min_isr_rule_said(min_insync_replicas: i32, isr: usize) -> Msg {
    let have = isr as i64;
    let need = i64::from(min_insync_replicas);
    let id = if have >= need {
        "acks=all waits for every ISR member and needs min.insync.replicas {need}: the ISR has {have} ({have} >= {need}), so produces are accepted"
    } else {
        "acks=all needs min.insync.replicas {need} in-sync replicas: the ISR has {have} ({have} < {need}), so acks=all produces fail with NOT_ENOUGH_REPLICAS (acks=1 still works)"
    };
    Msg::new(id).with("need", need).with("have", have)
}

/// Why a follower on a live broker left the ISR: the leader last saw it caught up
/// `caught_up_ms_ago` ago (unknown: `None`), against `replica.lag.time.max.ms`.
pub fn out_of_sync(broker: BrokerId, caught_up_ms_ago: Option<u64>, lag_time_max_ms: Option<u64>) -> String {
    out_of_sync_said(broker, caught_up_ms_ago, lag_time_max_ms).english()
}

/// [`out_of_sync`] as a message of the catalogue.
pub fn out_of_sync_said(broker: BrokerId, caught_up_ms_ago: Option<u64>, lag_time_max_ms: Option<u64>) -> Msg {
    let msg = match (caught_up_ms_ago, lag_time_max_ms) {
        (Some(ago), Some(max)) if ago > max => {
            Msg::new("broker {broker} last caught up {ago} ago > replica.lag.time.max.ms {max}")
                .with("ago", seconds(ago))
                .with("max", max)
        }
        (Some(ago), Some(max)) => Msg::new(
            "broker {broker} last caught up {ago} ago <= replica.lag.time.max.ms {max}: it rejoins the ISR once it reaches the HW",
        )
        .with("ago", seconds(ago))
        .with("max", max),
        (Some(ago), None) => {
            Msg::new("broker {broker} last caught up {ago} ago, longer than replica.lag.time.max.ms")
                .with("ago", seconds(ago))
        }
        (None, Some(max)) => Msg::new(
            "broker {broker} has not caught up to the leader's LEO in this leader epoch, for more than replica.lag.time.max.ms {max}",
        )
        .with("max", max),
        (None, None) => Msg::new("broker {broker} has not caught up to the leader's LEO within replica.lag.time.max.ms"),
    };
    msg.with("broker", broker)
}

/// A replica out of the ISR because its broker is down (`how`: killed, stopped...).
pub fn replica_down(broker: BrokerId, how: &str) -> String {
    replica_down_said(broker, how).english()
}

/// [`replica_down`] as a message of the catalogue (`how` translated too).
pub fn replica_down_said(broker: BrokerId, how: &str) -> Msg {
    Msg::new("broker {broker} is down ({how}): it fetches nothing, so it left the ISR")
        .with("broker", broker)
        .with_msg("how", Msg::words(how))
}

/// NOT_ENOUGH_REPLICAS: the ISR of `topic`-`partition` is smaller than min.insync.replicas.
pub fn not_enough_replicas(topic: &str, partition: i32, min_insync_replicas: i32, isr: &[BrokerId]) -> String {
    not_enough_replicas_said(topic, partition, min_insync_replicas, isr).english()
}

/// [`not_enough_replicas`] as a message of the catalogue.
pub fn not_enough_replicas_said(topic: &str, partition: i32, min_insync_replicas: i32, isr: &[BrokerId]) -> Msg {
    Msg::new(
        "acks=all needs min.insync.replicas {min} in-sync replicas; the ISR of {partition} is {isr} ({size} < {min})",
    )
    .with("min", min_insync_replicas)
    .with("partition", partition_name(topic, partition))
    .with("isr", ids(isr))
    .with("size", isr.len())
}

/// The election rule in force, and who it may choose among.
pub fn election_rule(balanced: bool, candidates: &[BrokerId]) -> String {
    election_rule_said(balanced, candidates).english()
}

/// [`election_rule`] as a message of the catalogue.
pub fn election_rule_said(balanced: bool, candidates: &[BrokerId]) -> Msg {
    let rule = if balanced {
        "the balanced rule: the live ISR member leading the fewest partitions (ties: assignment order)"
    } else {
        "Kafka's rule: the first live ISR member in assignment order"
    };
    Msg::new("the controller elects by {rule}; candidates now {candidates}")
        .with_msg("rule", Msg::new(rule))
        .with("candidates", ids(candidates))
}

/// unclean.leader.election.enable, said as what it means for this partition.
pub fn unclean_rule(enabled: bool) -> String {
    unclean_rule_said(enabled).english()
}

/// [`unclean_rule`] as a message of the catalogue.
pub fn unclean_rule_said(enabled: bool) -> Msg {
    Msg::new(if enabled {
        "unclean.leader.election.enable is on: with no live ISR member, an out-of-sync replica may lead (what it lacks is lost)"
    } else {
        "unclean.leader.election.enable is off: an out-of-sync replica never leads; with no live ISR member the partition stays offline"
    })
}

/// Whether the preferred leader leads, and what brings it back.
pub fn preferred_rule(leader: Option<BrokerId>, preferred: BrokerId, auto_rebalance: Option<bool>) -> String {
    preferred_rule_said(leader, preferred, auto_rebalance).english()
}

/// [`preferred_rule`] as a message of the catalogue.
pub fn preferred_rule_said(leader: Option<BrokerId>, preferred: BrokerId, auto_rebalance: Option<bool>) -> Msg {
    if leader == Some(preferred) {
        return Msg::new("broker {broker} is the preferred leader (first in the assignment)").with("broker", preferred);
    }
    let back = match auto_rebalance {
        Some(true) => "auto.leader.rebalance.enable is on: the controller moves leadership back once it is in the ISR",
        Some(false) => "auto.leader.rebalance.enable is off: a preferred-leader election moves leadership back",
        None => "a preferred-leader election (or auto.leader.rebalance.enable) moves leadership back",
    };
    Msg::new("the preferred leader is broker {broker} (first in the assignment), not leading: {back}")
        .with("broker", preferred)
        .with_msg("back", Msg::new(back))
}

/// Why a broker is fenced: it missed heartbeats for broker.session.timeout.ms.
pub fn fenced(broker: BrokerId, session_timeout_ms: Option<u64>) -> String {
    fenced_said(broker, session_timeout_ms).english()
}

/// [`fenced`] as a message of the catalogue.
pub fn fenced_said(broker: BrokerId, session_timeout_ms: Option<u64>) -> Msg {
    match session_timeout_ms {
        Some(ms) => Msg::new(
            "broker {broker} is fenced: the controller heard no heartbeat from it for broker.session.timeout.ms {ms}",
        )
        .with("ms", ms),
        None => Msg::new(
            "broker {broker} is fenced: the controller heard no heartbeat from it for broker.session.timeout.ms",
        ),
    }
    .with("broker", broker)
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
        let mut e = Explanation::new(Msg::new("{partition}").with("partition", &tp));
        e.say(
            Msg::new("{partition} is not in the cluster's metadata (deleted, or not created yet)")
                .with("partition", &tp),
        );
        return e;
    };
    let controls = view.controls;
    let title = Msg::new("{partition}: leader {leader}, epoch {epoch}, ISR {isr}")
        .with("partition", &tp)
        .with("epoch", p.leader_epoch)
        .with("isr", ids(&p.isr));
    let mut e = Explanation::new(with_or(title, "leader", p.leader, "none"));

    e.heading("High watermark");
    for r in &p.replicas {
        e.say(replica_said(view, p, r));
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
                e.say(hw_held_said(hw, p.isr.len(), min));
            } else if leos.len() == p.isr.len() {
                e.say(hw_rule_said(&leos, hw));
            } else {
                e.say(
                    Msg::new("HW = the smallest LEO in the ISR = {hw} (the followers' LEOs are not known here)")
                        .with("hw", hw),
                );
            }
        }
        None => e.say(Msg::new("no HW: the partition has no live leader to keep one")),
    }
    if let Some(min) = p.min_insync_replicas {
        e.say(min_isr_rule_said(min, p.isr.len()));
    }
    if let Some(acks) = controls.and_then(|c| c.producer_acks) {
        e.say(Msg::new("the workload produces with acks={acks}").with("acks", acks_name(acks)));
    }

    e.heading("In-sync replicas");
    let out: Vec<&ReplicaRow> = p.replicas.iter().filter(|r| !p.isr.contains(&r.broker)).collect();
    if out.is_empty() {
        e.say(Msg::new("every replica is in the ISR {isr}").with("isr", ids(&p.isr)));
    }
    for r in out {
        e.say(why_out(view, controls, r));
    }
    for b in &p.isr {
        if p.replica(*b).is_some_and(|r| r.role == ReplicaRole::Offline) {
            e.say(
                Msg::new(
                    "broker {broker} is down but still in the ISR: the last ISR member is never removed, so no data is lost by electing it",
                )
                .with("broker", b),
            );
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
        e.say(election_rule_said(c.balanced_election, &candidates));
    } else {
        e.say(Msg::new("live ISR members, the candidates: {candidates}").with("candidates", ids(&candidates)));
    }
    if p.offline() {
        let down: Vec<BrokerId> = p
            .replicas
            .iter()
            .filter(|r| r.role == ReplicaRole::Offline)
            .map(|r| r.broker)
            .collect();
        e.say(
            Msg::new("{partition} is offline: no live ISR member (ISR {isr}; down: {down})")
                .with("partition", &tp)
                .with("isr", ids(&p.isr))
                .with("down", ids(&down)),
        );
    }
    e.say(preferred_rule_said(
        p.leader,
        p.preferred_leader,
        controls.map(|c| c.auto_rebalance),
    ));
    if let Some(c) = controls {
        e.say(unclean_rule_said(c.unclean_election));
    }
    let prefix = format!("leader {tp}:");
    if let Some(last) = view.events.iter().rev().find(|ev| ev.text.starts_with(&prefix)) {
        e.say(Msg::new("last election: {event}").with_msg("event", event_said(last)));
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

fn why_out(view: &ClusterView, controls: Option<Controls>, r: &ReplicaRow) -> Msg {
    if r.role == ReplicaRole::Offline {
        return replica_down_said(r.broker, &broker_state(view, r.broker));
    }
    out_of_sync_said(
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
        let mut e = Explanation::new(Msg::new("broker {id}").with("id", id));
        e.say(Msg::new("broker {broker} is not in the cluster").with("broker", id));
        return e;
    };
    let controls = view.controls;
    let session = controls.map(|c| c.broker_session_timeout_ms);
    let lag = controls.map(|c| c.replica_lag_time_max_ms);
    let mut e = Explanation::new(
        Msg::new("broker {broker}: {status}")
            .with("broker", id)
            .with_msg("status", Msg::words(b.status.label())),
    );
    e.heading("State");
    // A setting and its value, both shown as they are: `broker.session.timeout.ms 3000`.
    let timeout = |name: &str, ms: Option<u64>| match ms {
        Some(ms) => format!("{name} {ms}"),
        None => name.to_string(),
    };
    let said = match b.status {
        BrokerStatus::Online => Msg::new("broker {broker} is online: it heartbeats the controller within {session}")
            .with("session", timeout("broker.session.timeout.ms", session)),
        BrokerStatus::Fenced => fenced_said(id, session),
        BrokerStatus::Killed => Msg::new(
            "broker {broker} was killed (a crash, no controlled shutdown): the controller notices only when no heartbeat comes for {session}, then fences it and moves its leaderships",
        )
        .with("session", timeout("broker.session.timeout.ms", session)),
        BrokerStatus::Paused => Msg::new(
            "broker {broker} is paused (like a long GC pause): no heartbeats, no fetches; fenced after {session}, its replicas leave the ISRs after {lag}",
        )
        .with("session", timeout("broker.session.timeout.ms", session))
        .with("lag", timeout("replica.lag.time.max.ms", lag)),
        BrokerStatus::Stopped => Msg::new(
            "broker {broker} stopped cleanly: a controlled shutdown moved its leaderships before it went",
        ),
        BrokerStatus::Down => Msg::new("broker {broker} is gone from the cluster's metadata: Kafka has fenced it"),
        BrokerStatus::Unreachable => Msg::new("broker {broker} is in the metadata, but kdeck cannot connect to it"),
    };
    e.say(said.with("broker", id));
    let mine: Vec<&ViewEvent> = view
        .events
        .iter()
        .filter(|ev| {
            matches!(ev.class, EventClass::Fault(b) | EventClass::Fenced(b) | EventClass::Restarted(b) | EventClass::Recovered(b) if b == id)
        })
        .collect();
    for ev in mine.iter().rev().take(3).rev() {
        e.say(Msg::new("event: {event}").with_msg("event", event_said(ev)));
    }
    e.heading("Role");
    e.say(match view.controller {
        Some(c) if c == id => Msg::new("broker {broker} is the controller").with("broker", id),
        Some(c) => Msg::new("the controller is broker {broker}").with("broker", c),
        None => Msg::new("no controller now"),
    });
    let leads: Vec<String> = view
        .partitions
        .iter()
        .filter(|p| p.leader == Some(id))
        .map(|p| partition_name(&p.topic, p.partition))
        .collect();
    e.say(Msg::new("it leads {partitions}").with_msg("partitions", listed(&leads, "partition")));
    let out: Vec<String> = view
        .partitions
        .iter()
        .filter(|p| p.replica(id).is_some() && !p.isr.contains(&id))
        .map(|p| partition_name(&p.topic, p.partition))
        .collect();
    if !out.is_empty() {
        e.say(Msg::new("out of the ISR of {partitions}").with_msg("partitions", listed(&out, "partition")));
    }
    let preferred_elsewhere = view
        .partitions
        .iter()
        .filter(|p| p.preferred_leader == id && p.leader != Some(id))
        .count();
    if preferred_elsewhere > 0 {
        e.say(preferred_rule_said(None, id, controls.map(|c| c.auto_rebalance)));
    }
    e
}

/// `3 partitions: a-0, a-1, b-0` (at most 8 named), `no partitions` for none.
fn listed(names: &[String], noun: &'static str) -> Msg {
    const SHOWN: usize = 8;
    match names.len() {
        0 => Msg::words(format!("no {}", super::words::plural(noun))),
        n => {
            let shown = names[..n.min(SHOWN)].join(", ");
            let msg = if n > SHOWN {
                Msg::new("{count}: {names} and {more} more").with("more", n - SHOWN)
            } else {
                Msg::new("{count}: {names}")
            };
            msg.with_msg("count", Msg::count(n, noun)).with("names", shown)
        }
    }
}

/// A group's state, members and why it last rebalanced.
pub fn group(view: &ClusterView, id: &str) -> Explanation {
    let Some(g) = view.groups.iter().find(|g| g.group_id == id) else {
        let mut e = Explanation::new(Msg::new("group {group}").with("group", id));
        e.say(Msg::new("group {group} is not known to the cluster (gone, or never joined)").with("group", id));
        return e;
    };
    let mut e = Explanation::new(
        Msg::new("group {group}: {state}, generation {generation}")
            .with("group", id)
            .with("state", &g.state)
            .with("generation", g.generation),
    );
    e.heading("State");
    e.say(group_state(g));
    let coordinator = Msg::new("coordinator: broker {broker}; protocol {protocol}").with("broker", g.coordinator);
    e.say(with_or(
        coordinator,
        "protocol",
        (!g.protocol.is_empty()).then_some(&g.protocol),
        "none",
    ));
    e.heading("Members");
    if g.members.is_empty() {
        e.say(Msg::new("no members"));
    }
    for m in &g.members {
        let parts: Vec<String> = m.assignment.iter().map(|(t, p)| partition_name(t, *p)).collect();
        // Who it is as kafka-consumer-groups.sh --members shows it: client id and host.
        let head = if m.client_id.is_empty() && m.host.is_empty() {
            Msg::words(m.member_id.clone())
        } else {
            Msg::new("{member} (client.id {client}, host {host})")
                .with("member", &m.member_id)
                .with("client", &m.client_id)
                .with("host", &m.host)
        };
        let member = Msg::new("{head}: {rest}").with_msg("head", head);
        e.say(with_or(
            member,
            "rest",
            (!parts.is_empty()).then(|| parts.join(", ")),
            "nothing assigned",
        ));
    }
    e.heading("Last rebalance");
    let mine: Vec<&ViewEvent> = view.events.iter().filter(|ev| is_about_group(&ev.text, id)).collect();
    if mine.is_empty() {
        e.say(Msg::new("no rebalance seen since the console started"));
    }
    for ev in mine.iter().rev().take(5).rev() {
        e.say(event_said(ev));
    }
    e.say(Msg::new(
        "a group rebalances when a member joins, leaves or misses heartbeats for session.timeout.ms, or when its coordinator moves",
    ));
    e
}

/// What a group's state means; a state kdeck does not know is shown as it is.
fn group_state(g: &GroupRow) -> Msg {
    match g.state.as_str() {
        "Stable" => Msg::new("Stable: every member has its assignment and consumes"),
        "PreparingRebalance" => Msg::new(
            "PreparingRebalance: the coordinator waits for every member to rejoin (up to the rebalance timeout); nobody consumes",
        ),
        "CompletingRebalance" => {
            Msg::new("CompletingRebalance: the members joined; the coordinator waits for the leader's assignment")
        }
        "Empty" => Msg::new("Empty: no members; the committed offsets are kept"),
        "Dead" => Msg::new("Dead: the group is being removed"),
        other => Msg::words(other),
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
    produce_failure_said(view, text, Msg::words(text))
}

/// [`produce_failure`] of a line whose message is `said` (what happened, in the console's
/// language).
fn produce_failure_said(view: &ClusterView, text: &str, said: Msg) -> Explanation {
    let p = partition_in(view, text);
    let tp = p.map(|p| partition_name(&p.topic, p.partition));
    let mut e = Explanation::new(match &tp {
        Some(tp) => Msg::new("produce to {partition} failed").with("partition", tp),
        None => Msg::new("a produce failed"),
    });
    e.heading("What happened");
    e.say(said);
    e.heading("Why");
    let upper = text.to_ascii_uppercase().replace('_', "");
    let Some(p) = p else {
        e.say(Msg::new("the partition is not in the cluster's metadata now"));
        return e;
    };
    let name = partition_name(&p.topic, p.partition);
    if upper.contains("NOTENOUGHREPLICAS") {
        match p.min_insync_replicas {
            Some(min) => e.say(not_enough_replicas_said(&p.topic, p.partition, min, &p.isr)),
            None => e.say(
                Msg::new("acks=all needs min.insync.replicas in-sync replicas; the ISR of {partition} is {isr}")
                    .with("partition", &name)
                    .with("isr", ids(&p.isr)),
            ),
        }
        if upper.contains("AFTERAPPEND") {
            e.say(Msg::new(
                "the ISR shrank after the leader appended: the record is in the leader's log but not acknowledged; a retry may duplicate it",
            ));
        }
        for r in p.replicas.iter().filter(|r| !p.isr.contains(&r.broker)) {
            e.say(why_out(view, view.controls, r));
        }
    } else if p.offline()
        || upper.contains("LEADERNOTAVAILABLE")
        || upper.contains("NOTLEADER")
        || upper.contains("OFFLINE")
    {
        let down = p
            .replicas
            .iter()
            .filter(|r| r.role == ReplicaRole::Offline)
            .map(|r| {
                Msg::new("broker {broker} {status}")
                    .with("broker", r.broker)
                    .with_msg("status", Msg::words(broker_state(view, r.broker)))
            })
            .reduce(|a, b| Msg::new("{a}, {b}").with_msg("a", a).with_msg("b", b));
        e.say(
            Msg::new("{partition} has no live leader: no live ISR member (ISR {isr}); down: {down}")
                .with("partition", &name)
                .with("isr", ids(&p.isr))
                .with_msg("down", down.unwrap_or_else(|| Msg::new("none"))),
        );
        if let Some(c) = view.controls {
            e.say(unclean_rule_said(c.unclean_election));
        }
    } else {
        let now = Msg::new("{partition} now: leader {leader}, ISR {isr}")
            .with("partition", &name)
            .with("isr", ids(&p.isr));
        e.say(with_or(now, "leader", p.leader, "none"));
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
        EventClass::ProduceRejected(_) => return produce_failure_said(view, &event.text, event_said(event)),
        EventClass::Fault(b) | EventClass::Fenced(b) | EventClass::Restarted(b) | EventClass::Recovered(b) => {
            broker(view, b)
        }
        _ if event.text.starts_with("produce to") || event.text.contains("NOT_ENOUGH_REPLICAS") => {
            return produce_failure_said(view, &event.text, event_said(event));
        }
        _ => match (
            group_in(&event.text),
            partition_in(view, &event.text),
            broker_in(&event.text),
        ) {
            (Some(g), _, _) => group(view, g),
            (None, Some(p), _) => partition(view, &p.topic, p.partition),
            (None, None, Some(b)) => broker(view, b),
            (None, None, None) => Explanation::new(Msg::new("event")),
        },
    };
    e.lines.insert(0, Line::Sentence(event_said(event)));
    e.lines.insert(0, Line::Heading(Msg::new("The event")));
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
            epochs: [EpochStart {
                epoch: 4,
                start_offset: 0,
            }]
            .into(),
            size_bytes: None,
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
            disk_bytes: None,
            produce_history: Vec::new(),
            changed_at: None,
            lifecycle: None,
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
            last_stable_offset: Some(1500),
            log_start_offset: Some(0),
            under_replicated: true,
            adding: Vec::new(),
            removing: Vec::new(),
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
                instance_id: None,
                client_id: "billing-app".into(),
                host: "/10.0.0.7".into(),
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
        assert_eq!(e.title.english(), "orders-0: leader 1, epoch 4, ISR [1]");
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
        assert_eq!(e.title.english(), "broker 3: fenced");
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
        assert_eq!(e.title.english(), "group billing: Stable, generation 8");
        assert!(
            e.says("group billing: member billing-2 removed (session timed out: no heartbeat)"),
            "{e:#?}"
        );
        assert!(e.says("group billing rebalanced: generation 8, 1 members (range)"));
        assert!(e.says("billing-1 (client.id billing-app, host /10.0.0.7): orders-0"));
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
        assert_eq!(event(&v, &v.events[1]).title.english(), "broker 3: fenced");
        assert_eq!(
            event(&v, &v.events[2]).title.english(),
            "orders-0: leader 1, epoch 4, ISR [1]"
        );
        assert_eq!(
            event(&v, &v.events[4]).title.english(),
            "group billing: Stable, generation 8"
        );
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
