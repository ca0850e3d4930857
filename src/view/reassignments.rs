//! Partition reassignments followed across successive views: each move's replicas before and
//! after, how far its joining replicas are behind their leader, how fast they copy, when it
//! will end at that pace, and the moves that finished or were cancelled while the console
//! watched. One view tells where a copy stands; its pace and whether it stalled take the
//! views before it, so this keeps a few samples per moving partition, taken at each view's
//! `taken_at` (both sources fill the same rows, so it works alike on an external cluster,
//! whose sizes may be unknown: then it says so rather than count zeros).

use std::collections::{BTreeMap, VecDeque};

use chrono::{DateTime, Utc};

use super::{BrokerId, BrokerStatus, ClusterView, PartitionRow, ReplicaRole};

/// Samples kept per move, at least [`SAMPLE_SPACING_MS`] apart: about half a minute.
const SAMPLES: usize = 32;
/// The least time between two kept samples: a newer view within it replaces the newest one,
/// so the newest sample is always the latest view and the oldest ones reach back far enough
/// for a steady rate.
const SAMPLE_SPACING_MS: i64 = 1000;
/// A rate is taken from the newest sample back to the oldest one at most this old.
pub const RATE_WINDOW_SECS: i64 = 20;
/// A copy whose joining replicas gained nothing for this long is stalled.
pub const STALL_SECS: i64 = 30;

/// What a move's amounts count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Records,
}

/// How far one joining replica is behind its leader.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaLag {
    pub broker: BrokerId,
    /// The leader's log end offset minus the replica's (`None`: one of them is unknown).
    pub records: Option<i64>,
    /// The leader's size minus the replica's (`None`: a size is unknown).
    pub bytes: Option<u64>,
    pub in_isr: bool,
    /// Its broker is up.
    pub online: bool,
}

/// What the joining replicas of a move held and lacked at one moment, summed; `None` where a
/// replica's size (or log end) is unknown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub at: DateTime<Utc>,
    pub copied_bytes: Option<u64>,
    pub left_bytes: Option<u64>,
    pub copied_records: Option<i64>,
    pub left_records: Option<i64>,
}

impl Sample {
    fn copied(&self, unit: Unit) -> Option<f64> {
        match unit {
            Unit::Bytes => self.copied_bytes.map(|b| b as f64),
            Unit::Records => self.copied_records.map(|r| r as f64),
        }
    }

    fn left(&self, unit: Unit) -> Option<f64> {
        match unit {
            Unit::Bytes => self.left_bytes.map(|b| b as f64),
            Unit::Records => self.left_records.map(|r| r as f64),
        }
    }
}

/// How a move ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The target replicas hold the partition; the old ones left.
    Done,
    /// Back on the replicas from before.
    Cancelled,
}

/// Where a move stands, in words an operator reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// A joining replica copies the log, not in the ISR yet.
    Copying,
    /// A joining replica's broker is down: nothing copies until it is back.
    BrokerDown(BrokerId),
    /// The joining replicas gained nothing for this many seconds.
    NoProgress(i64),
    /// Every joining replica is in the ISR; the leader is one of those leaving.
    WaitingForLeader,
    /// Every joining replica is in the ISR; the old replicas are being removed.
    RemovingOld,
    Done,
    Cancelled,
}

/// One partition's move, from the first view that showed it moving.
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    pub topic: String,
    pub partition: i32,
    /// The replicas before the move (assignment order).
    pub before: Vec<BrokerId>,
    /// The replicas it moves to.
    pub target: Vec<BrokerId>,
    pub adding: Vec<BrokerId>,
    pub removing: Vec<BrokerId>,
    /// As the latest view showed them.
    pub isr: Vec<BrokerId>,
    pub leader: Option<BrokerId>,
    /// Each joining replica's lag in the latest view that showed the move.
    pub lags: Vec<ReplicaLag>,
    /// The first view that showed it moving.
    pub started: DateTime<Utc>,
    /// Whether the console saw it start (false: it was moving in the first view seen, so it
    /// began earlier and took at least what is shown).
    pub seen_start: bool,
    pub ended: Option<(DateTime<Utc>, Ending)>,
    samples: VecDeque<Sample>,
    /// The last sample in which the joining replicas gained something.
    progressed_at: DateTime<Utc>,
}

impl Move {
    fn new(row: &PartitionRow, at: DateTime<Utc>, seen_start: bool) -> Move {
        let mut m = Move {
            topic: row.topic.clone(),
            partition: row.partition,
            before: Vec::new(),
            target: Vec::new(),
            adding: Vec::new(),
            removing: Vec::new(),
            isr: Vec::new(),
            leader: None,
            lags: Vec::new(),
            started: at,
            seen_start,
            ended: None,
            samples: VecDeque::new(),
            progressed_at: at,
        };
        m.update(row, at);
        m
    }

    /// `topic-partition`.
    pub fn name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }

    pub fn moving(&self) -> bool {
        self.ended.is_none()
    }

    /// The latest sample.
    pub fn latest(&self) -> Option<&Sample> {
        self.samples.back()
    }

    /// Takes the row of a view in which the partition is moving.
    fn update(&mut self, row: &PartitionRow, at: DateTime<Utc>) {
        let replicas: Vec<BrokerId> = row.replicas.iter().map(|r| r.broker).collect();
        self.before = replicas.iter().copied().filter(|b| !row.adding.contains(b)).collect();
        self.target = replicas.iter().copied().filter(|b| !row.removing.contains(b)).collect();
        self.adding = row.adding.clone();
        self.removing = row.removing.clone();
        self.isr = row.isr.clone();
        self.leader = row.leader;
        let leader = row.leader.and_then(|l| row.replica(l));
        let leader_end = leader.and_then(|l| l.log_end_offset);
        let leader_start = leader.and_then(|l| l.log_start_offset).or(row.log_start_offset);
        let leader_size = leader.and_then(|l| l.size_bytes);
        let mut sample = Sample {
            at,
            copied_bytes: Some(0),
            left_bytes: Some(0),
            copied_records: Some(0),
            left_records: Some(0),
        };
        self.lags = row
            .adding
            .iter()
            .map(|&broker| {
                let replica = row.replica(broker);
                let end = replica.and_then(|r| r.log_end_offset);
                let size = replica.and_then(|r| r.size_bytes);
                let records = leader_end.zip(end).map(|(l, r)| (l - r).max(0));
                let bytes = leader_size.zip(size).map(|(l, r)| l.saturating_sub(r));
                // A new replica fetches from the leader's log start: what it holds of the log
                // is its end minus that.
                let copied = end.zip(leader_start).map(|(e, s)| (e - s).max(0));
                sample.copied_records = sample.copied_records.zip(copied).map(|(a, b)| a + b);
                sample.left_records = sample.left_records.zip(records).map(|(a, b)| a + b);
                sample.copied_bytes = sample.copied_bytes.zip(size).map(|(a, b)| a + b);
                sample.left_bytes = sample.left_bytes.zip(bytes).map(|(a, b)| a + b);
                ReplicaLag {
                    broker,
                    records,
                    bytes,
                    in_isr: row.isr.contains(&broker),
                    online: replica.is_some_and(|r| r.role != ReplicaRole::Offline),
                }
            })
            .collect();
        if let Some(last) = self.samples.back() {
            let gained = |unit| match (last.copied(unit), sample.copied(unit)) {
                (Some(a), Some(b)) => b > a,
                _ => false,
            };
            let shrank = |unit| match (last.left(unit), sample.left(unit)) {
                (Some(a), Some(b)) => b < a,
                _ => false,
            };
            if gained(Unit::Bytes) || gained(Unit::Records) || shrank(Unit::Bytes) || shrank(Unit::Records) {
                self.progressed_at = at;
            }
        }
        let len = self.samples.len();
        let close = len >= 2
            && self
                .samples
                .get(len - 2)
                .is_some_and(|s| (at - s.at).num_milliseconds() < SAMPLE_SPACING_MS);
        if close {
            self.samples.pop_back();
        } else if len >= SAMPLES {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
    }

    /// What its amounts count: bytes when the sizes are known, else records when the log
    /// ends are, else nothing can be measured.
    pub fn unit(&self) -> Option<Unit> {
        let s = self.latest()?;
        if s.left_bytes.is_some() && s.copied_bytes.is_some() {
            Some(Unit::Bytes)
        } else if s.left_records.is_some() && s.copied_records.is_some() {
            Some(Unit::Records)
        } else {
            None
        }
    }

    /// What the joining replicas still lack, in `unit` (none once it ended).
    pub fn left(&self, unit: Unit) -> Option<f64> {
        if !self.moving() {
            return None;
        }
        self.latest()?.left(unit)
    }

    /// How much of what the joining replicas need they hold, 0 to 1 (1 once done).
    pub fn progress(&self) -> Option<f64> {
        match self.ended {
            Some((_, Ending::Done)) => return Some(1.0),
            Some((_, Ending::Cancelled)) => return None,
            None => {}
        }
        let unit = self.unit()?;
        let s = self.latest()?;
        let (copied, left) = (s.copied(unit)?, s.left(unit)?);
        let needed = copied + left;
        Some(if needed <= 0.0 { 1.0 } else { copied / needed })
    }

    /// The newest sample and the oldest within [`RATE_WINDOW_SECS`] of it, a second apart at
    /// least.
    fn window(&self) -> Option<(&Sample, &Sample, f64)> {
        let newest = self.samples.back()?;
        let oldest = self
            .samples
            .iter()
            .find(|s| (newest.at - s.at).num_seconds() <= RATE_WINDOW_SECS)?;
        let seconds = (newest.at - oldest.at).num_milliseconds() as f64 / 1000.0;
        (seconds >= 1.0).then_some((oldest, newest, seconds))
    }

    /// How fast the joining replicas copy, per second in `unit`.
    pub fn copy_rate(&self, unit: Unit) -> Option<f64> {
        if !self.moving() {
            return None;
        }
        let (old, new, seconds) = self.window()?;
        Some(((new.copied(unit)? - old.copied(unit)?) / seconds).max(0.0))
    }

    /// How fast what they lack shrinks, per second in `unit`: the copy rate less what the
    /// leader gained meanwhile (negative when the leader outruns them).
    pub fn shrink_rate(&self, unit: Unit) -> Option<f64> {
        if !self.moving() {
            return None;
        }
        let (old, new, seconds) = self.window()?;
        Some((old.left(unit)? - new.left(unit)?) / seconds)
    }

    /// Seconds until nothing is left at the pace of the window; `None` when the lag does not
    /// shrink (or cannot be measured).
    pub fn eta_secs(&self, unit: Unit) -> Option<f64> {
        let left = self.left(unit)?;
        if left <= 0.0 {
            return Some(0.0);
        }
        let shrink = self.shrink_rate(unit)?;
        (shrink > 0.0).then(|| left / shrink)
    }

    /// How long it took (or takes so far, at `now`).
    pub fn took(&self, now: DateTime<Utc>) -> chrono::Duration {
        let end = self.ended.map_or(now, |(at, _)| at);
        (end - self.started).max(chrono::Duration::zero())
    }

    /// Where it stands at `now`.
    pub fn phase(&self, now: DateTime<Utc>) -> Phase {
        match self.ended {
            Some((_, Ending::Done)) => return Phase::Done,
            Some((_, Ending::Cancelled)) => return Phase::Cancelled,
            None => {}
        }
        if let Some(down) = self.lags.iter().find(|l| !l.in_isr && !l.online) {
            return Phase::BrokerDown(down.broker);
        }
        if self.lags.iter().any(|l| !l.in_isr) {
            let still = (now - self.progressed_at).num_seconds();
            let lacks = self
                .unit()
                .and_then(|u| self.latest()?.left(u))
                .is_none_or(|left| left > 0.0);
            return if still >= STALL_SECS && lacks {
                Phase::NoProgress(still)
            } else {
                Phase::Copying
            };
        }
        if self.leader.is_some_and(|l| self.removing.contains(&l)) {
            Phase::WaitingForLeader
        } else {
            Phase::RemovingOld
        }
    }
}

/// Every move the console saw, keyed by partition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reassignments {
    moves: BTreeMap<(String, i32), Move>,
    /// A view with partitions was seen: a move in a later one started while watched.
    seen_partitions: bool,
}

/// The moving partitions together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Totals {
    pub moving: usize,
    pub done: usize,
    pub cancelled: usize,
    /// The unit every moving partition is measured in (bytes if all know their sizes, else
    /// records if all know their log ends).
    pub unit: Option<Unit>,
    pub left: Option<f64>,
    /// The sum of the copy rates.
    pub rate: Option<f64>,
    pub eta_secs: Option<f64>,
    /// Some moving partition's sizes are unknown.
    pub sizes_unknown: bool,
}

impl Reassignments {
    /// Takes a new view: moves that began, progressed, ended.
    pub fn observe(&mut self, view: &ClusterView) {
        let at = view.taken_at;
        let up = |b: BrokerId| view.brokers.iter().find(|r| r.id == b).map(|r| r.status);
        for row in view.partitions.iter().filter(|p| p.reassigning()) {
            let key = (row.topic.clone(), row.partition);
            let mut row = row.clone();
            // A replica on a broker the view knows to be down is offline, whatever its row
            // says (an external cluster keeps a vanished broker's replicas in the metadata).
            for r in &mut row.replicas {
                if up(r.broker).is_some_and(|s| !matches!(s, BrokerStatus::Online)) {
                    r.role = ReplicaRole::Offline;
                }
            }
            let target: Vec<BrokerId> = row
                .replicas
                .iter()
                .map(|r| r.broker)
                .filter(|b| !row.removing.contains(b))
                .collect();
            match self.moves.get_mut(&key) {
                Some(m) if m.moving() && m.target == target => m.update(&row, at),
                _ => {
                    self.moves.insert(key, Move::new(&row, at, self.seen_partitions));
                }
            }
        }
        let rows: BTreeMap<(&str, i32), &PartitionRow> = view
            .partitions
            .iter()
            .map(|p| ((p.topic.as_str(), p.partition), p))
            .collect();
        self.moves.retain(|(topic, partition), m| {
            if !m.moving() {
                return true;
            }
            let Some(row) = rows.get(&(topic.as_str(), *partition)) else {
                // The topic is gone: nothing is moving, nothing finished.
                return false;
            };
            if !row.reassigning() {
                let mut now: Vec<BrokerId> = row.replicas.iter().map(|r| r.broker).collect();
                let mut before = m.before.clone();
                now.sort_unstable();
                before.sort_unstable();
                let ending = if now == before { Ending::Cancelled } else { Ending::Done };
                m.ended = Some((at, ending));
                m.isr = row.isr.clone();
                m.leader = row.leader;
            }
            true
        });
        self.seen_partitions |= !view.partitions.is_empty();
    }

    /// The moves to list: those moving by partition, then those that ended, the latest first.
    pub fn rows(&self) -> Vec<&Move> {
        let mut moving: Vec<&Move> = self.moves.values().filter(|m| m.moving()).collect();
        let mut ended: Vec<&Move> = self.moves.values().filter(|m| !m.moving()).collect();
        ended.sort_by_key(|m| std::cmp::Reverse(m.ended.map(|(at, _)| at)));
        moving.append(&mut ended);
        moving
    }

    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }

    /// The moving partitions together.
    pub fn totals(&self) -> Totals {
        let moving: Vec<&Move> = self.moves.values().filter(|m| m.moving()).collect();
        let count = |e: Ending| {
            self.moves
                .values()
                .filter(|m| m.ended.is_some_and(|(_, x)| x == e))
                .count()
        };
        let units: Vec<Option<Unit>> = moving.iter().map(|m| m.unit()).collect();
        let unit = if units.iter().all(|u| *u == Some(Unit::Bytes)) {
            Some(Unit::Bytes)
        } else if moving
            .iter()
            .all(|m| m.latest().is_some_and(|s| s.left_records.is_some()))
        {
            Some(Unit::Records)
        } else {
            None
        };
        let unit = unit.filter(|_| !moving.is_empty());
        let sum = |f: &dyn Fn(&Move, Unit) -> Option<f64>| {
            let unit = unit?;
            moving.iter().map(|m| f(m, unit)).sum::<Option<f64>>()
        };
        let left = sum(&|m, u| m.left(u));
        let rate = sum(&|m, u| m.copy_rate(u));
        let shrink = sum(&|m, u| m.shrink_rate(u));
        let eta_secs = match (left, shrink) {
            (Some(l), _) if l <= 0.0 => Some(0.0),
            (Some(l), Some(s)) if s > 0.0 => Some(l / s),
            _ => None,
        };
        Totals {
            moving: moving.len(),
            done: count(Ending::Done),
            cancelled: count(Ending::Cancelled),
            unit,
            left,
            rate,
            eta_secs,
            sizes_unknown: units.iter().any(|u| *u != Some(Unit::Bytes)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{ReplicaRow, SourceKind};

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::seconds(1_700_000_000 + secs)
    }

    fn replica(broker: BrokerId, role: ReplicaRole, leo: i64, size: Option<u64>) -> ReplicaRow {
        ReplicaRow {
            broker,
            role,
            log_end_offset: Some(leo),
            log_start_offset: Some(0),
            high_watermark: Some(leo),
            size_bytes: size,
            epochs: Default::default(),
            caught_up_ms_ago: None,
        }
    }

    /// orders-0 moving from [1, 2] to [2, 3]: broker 3 holds `copied` of the leader's 1000
    /// records (100 bytes each).
    fn view(secs: i64, copied: Option<i64>, sizes: bool) -> ClusterView {
        let mut v = ClusterView::empty("t", SourceKind::Embedded);
        v.taken_at = at(secs);
        let size = |n: i64| sizes.then_some(n as u64 * 100);
        let mut replicas = vec![
            replica(2, ReplicaRole::Leader, 1000, size(1000)),
            replica(1, ReplicaRole::InSync, 1000, size(1000)),
        ];
        let (adding, removing, isr) = match copied {
            Some(n) => {
                replicas.insert(1, replica(3, ReplicaRole::OutOfSync, n, size(n)));
                (vec![3], vec![1], vec![2, 1])
            }
            None => {
                replicas = vec![
                    replica(2, ReplicaRole::Leader, 1000, size(1000)),
                    replica(3, ReplicaRole::InSync, 1000, size(1000)),
                ];
                (vec![], vec![], vec![2, 3])
            }
        };
        v.partitions.push(PartitionRow {
            topic: "orders".into(),
            partition: 0,
            leader: Some(2),
            leader_epoch: 1,
            replicas,
            isr,
            preferred_leader: 2,
            high_watermark: Some(1000),
            last_stable_offset: Some(1000),
            log_start_offset: Some(0),
            under_replicated: false,
            min_insync_replicas: None,
            adding,
            removing,
            changed_at: None,
        });
        v
    }

    #[test]
    fn a_copy_has_a_rate_and_an_eta_from_the_lags_change_between_views() {
        let mut r = Reassignments::default();
        r.observe(&view(0, Some(200), true));
        let m = r.rows()[0].clone();
        assert_eq!((m.before.clone(), m.target.clone()), (vec![2, 1], vec![2, 3]));
        assert_eq!(m.lags[0].records, Some(800));
        assert_eq!(m.lags[0].bytes, Some(80_000));
        assert_eq!(m.copy_rate(Unit::Bytes), None, "one view tells no pace");
        r.observe(&view(10, Some(600), true));
        let m = r.rows()[0];
        assert_eq!(m.copy_rate(Unit::Bytes), Some(4000.0));
        assert_eq!(m.eta_secs(Unit::Bytes), Some(10.0));
        assert_eq!(m.progress(), Some(0.6));
        assert_eq!(m.phase(at(10)), Phase::Copying);
        assert_eq!(m.phase(at(10 + STALL_SECS)), Phase::NoProgress(STALL_SECS));
        let t = r.totals();
        assert_eq!((t.moving, t.left, t.eta_secs), (1, Some(40_000.0), Some(10.0)));
    }

    #[test]
    fn a_finished_move_stays_marked_done_with_how_long_it_took() {
        let mut r = Reassignments::default();
        r.observe(&view(0, None, true));
        r.observe(&view(5, Some(0), true));
        r.observe(&view(35, None, true));
        let m = r.rows()[0];
        assert_eq!(m.phase(at(100)), Phase::Done);
        assert!(m.seen_start);
        assert_eq!(m.took(at(100)).num_seconds(), 30);
        assert_eq!(m.progress(), Some(1.0));
        assert_eq!(r.totals().done, 1);
    }

    #[test]
    fn unknown_sizes_measure_in_records_and_say_so() {
        let mut r = Reassignments::default();
        r.observe(&view(0, Some(200), false));
        r.observe(&view(4, Some(600), false));
        let m = r.rows()[0];
        assert_eq!(m.unit(), Some(Unit::Records));
        assert_eq!(m.lags[0].bytes, None);
        assert_eq!(m.copy_rate(Unit::Records), Some(100.0));
        let t = r.totals();
        assert!(t.sizes_unknown);
        assert_eq!(t.unit, Some(Unit::Records));
    }
}
