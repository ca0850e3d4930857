//! One replica of one partition on one broker: leader or follower state on top of its log.
//!
//! Leader side (Kafka's `Partition`): tracks every follower's LEO and last-caught-up time
//! from their fetches; HW = the smallest LEO among the ISR (and caught-up replicas about to
//! join), never moving back, frozen while the ISR is below min.insync.replicas; proposes ISR
//! shrinks (a follower not caught up for `replica.lag.time.max.ms`) and expansions (a
//! follower that reached the HW within the current leader epoch) to the controller.
//!
//! Follower side: appends what it fetched as it is, learns the HW from the leader, and
//! truncates where its log diverged from the leader's (by leader epoch, never to its HW).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::controller::{NO_LEADER, PartitionRegistration};
use super::planted::{self, Bug};
use super::producer_state::{ProducerState, SequenceCheck};
use super::protocol::{ErrorCode, FetchRequest, FetchedRecords};
use super::signal::{Signal, Watcher};
use super::{BrokerId, Clock, IsolationLevel, TopicPartition};
use crate::storage::batch::Batches;
use crate::storage::txn;
use crate::storage::{EpochEndOffset, EpochEntry, Log, LogError};

/// DeleteRecords' offset for "up to the high watermark" (Kafka's
/// `DeleteRecordsRequest.HIGH_WATERMARK`).
pub const DELETE_TO_HIGH_WATERMARK: i64 = -1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Leader,
    Follower {
        leader: BrokerId,
    },
    /// The partition has no leader; this replica waits.
    Leaderless,
}

#[derive(Debug, Clone, Copy, Default)]
struct RemoteReplica {
    /// -1 until the first fetch in this leader epoch.
    leo: i64,
    last_fetch_ms: i64,
    last_fetch_leader_leo: i64,
    last_caught_up_ms: i64,
    broker_epoch: i64,
}

struct ReplicaState {
    role: Role,
    leader_epoch: i32,
    partition_epoch: i32,
    replicas: Vec<BrokerId>,
    isr: Vec<BrokerId>,
    /// An AlterPartition in flight; while it is, the HW uses the larger of both sets.
    pending_isr: Option<Vec<BrokerId>>,
    high_watermark: i64,
    /// Log end offset when this replica became leader in the current epoch.
    epoch_start_offset: i64,
    min_isr: usize,
    /// By broker id, so the ISR is checked in one order on every run.
    remotes: BTreeMap<BrokerId, RemoteReplica>,
    /// Replicas on brokers that are neither fenced nor shutting down (Kafka's
    /// `isReplicaIsrEligible`): only these may join the ISR or hold the HW back from outside it.
    eligible: Vec<BrokerId>,
}

impl ReplicaState {
    /// Kafka's `effectiveMinIsr`: min.insync.replicas, capped at the replication factor.
    fn effective_min_isr(&self) -> usize {
        self.min_isr.min(self.replicas.len().max(1))
    }

    fn maximal_isr(&self) -> Vec<BrokerId> {
        let mut all = self.isr.clone();
        if let Some(p) = &self.pending_isr {
            for r in p {
                if !all.contains(r) {
                    all.push(*r);
                }
            }
        }
        all
    }
}

/// Where a produced batch landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub first_offset: i64,
    pub last_offset: i64,
    /// Bytes written (0 for a retried batch that was already in the log).
    pub bytes: usize,
    pub leader_epoch: i32,
}

/// What a leader read for a fetch, or where the follower's log diverged.
pub type LeaderRead = (FetchedRecords, Option<EpochEndOffset>);

/// Something a broker must do after a state change (it owns the network).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrProposal {
    pub tp: TopicPartition,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub new_isr: Vec<BrokerId>,
}

/// A snapshot of this replica for the cluster view.
#[derive(Debug, Clone)]
pub struct ReplicaStatus {
    pub role: Role,
    pub log_end_offset: i64,
    pub log_start_offset: i64,
    pub high_watermark: i64,
    /// The last stable offset: the HW, or the first offset of the earliest transaction still
    /// open (or completed with its marker not yet below the HW) when that is lower.
    pub last_stable_offset: i64,
    pub size_bytes: u64,
    /// The log's leader-epoch cache: which offsets each leader epoch wrote.
    pub epochs: Vec<EpochEntry>,
    /// A leader's record of when each follower last caught up to its log end (Kafka's
    /// `lastCaughtUpTimeMs`, what an ISR shrink is decided on); empty on a follower, and
    /// without the followers that have not caught up once since this leader's epoch began.
    pub last_caught_up_ms: Vec<(BrokerId, i64)>,
}

pub struct Partition {
    pub tp: TopicPartition,
    pub broker: BrokerId,
    pub log: Arc<Log>,
    /// `replica.lag.time.max.ms`.
    lag_time_ms: i64,
    /// Lag is measured on the cluster's clock: a frozen cluster has no follower fall behind.
    clock: Clock,
    /// Kafka's `leaderIsrUpdateLock`: written while the role, leader epoch or committed ISR
    /// change; read across every log change that depends on them (a leader's check and append,
    /// a follower's append or truncation), so none of those can straddle a change. Lock order:
    /// this, then `state` or `producers`, then the log's own locks; `state` and `producers`
    /// are never held together.
    leader_isr_update: RwLock<()>,
    state: Mutex<ReplicaState>,
    /// Held across check, append and record, so a retried batch can never slip in twice.
    producers: Mutex<ProducerState>,
    /// Bumped whenever the LEO, HW or role changes: wakes long polls and acks=all waiters.
    progress: Signal<u64>,
    /// The next [`AppendTicket`] number, handed out in the order produce requests arrive.
    tickets: AtomicU64,
    append_order: Signal<AppendOrder>,
}

/// Whose turn it is to append. A broker handles requests concurrently, in tasks that may run
/// in any order, but an idempotent producer with several batches in flight sends them in
/// sequence order and the leader must append them in that order (Kafka's broker handles one
/// connection's requests one at a time); otherwise a batch that overtook its predecessor would
/// be refused as out of order and go round again.
#[derive(Debug, Default)]
struct AppendOrder {
    /// The ticket whose turn it is.
    turn: u64,
    /// Tickets given up before their turn (their request never appended).
    finished_early: BTreeSet<u64>,
}

/// A produce request's place in its partition's append order, taken when the request arrives.
/// Dropping it passes the turn on, so a request that fails before appending holds no one up.
pub struct AppendTicket {
    partition: Arc<Partition>,
    number: u64,
}

impl AppendTicket {
    pub fn partition(&self) -> &Arc<Partition> {
        &self.partition
    }

    /// Waits until every request that arrived before this one has appended (or given up).
    pub async fn turn(&self) {
        let mut order = self.partition.append_order.subscribe();
        // The sender lives in the partition this ticket holds, so waiting cannot fail.
        let _ = order.wait_for(|o| o.turn >= self.number).await;
    }
}

impl Drop for AppendTicket {
    fn drop(&mut self) {
        let number = self.number;
        self.partition.append_order.send_if_modified(|o| {
            if o.turn != number {
                o.finished_early.insert(number);
                return false;
            }
            o.turn += 1;
            while o.finished_early.remove(&o.turn) {
                o.turn += 1;
            }
            true
        });
    }
}

impl Partition {
    pub fn new(tp: TopicPartition, broker: BrokerId, log: Log, lag_time_ms: i64, clock: Clock) -> Self {
        let log = Arc::new(log);
        let hw = log.log_start_offset();
        let mut producers = ProducerState::default();
        match log.recent_batch_headers(2) {
            Ok(headers) => headers.iter().for_each(|h| producers.record(h)),
            Err(e) => tracing::warn!(%tp, error = %e, "cannot rebuild producer state; retries may be written twice"),
        }
        Partition {
            tp,
            broker,
            log,
            lag_time_ms,
            clock,
            leader_isr_update: RwLock::new(()),
            state: Mutex::new(ReplicaState {
                role: Role::Leaderless,
                leader_epoch: -1,
                partition_epoch: -1,
                replicas: Vec::new(),
                isr: Vec::new(),
                pending_isr: None,
                high_watermark: hw,
                epoch_start_offset: 0,
                min_isr: 1,
                remotes: BTreeMap::new(),
                eligible: Vec::new(),
            }),
            producers: Mutex::new(producers),
            progress: Signal::new(0),
            tickets: AtomicU64::new(0),
            append_order: Signal::new(AppendOrder::default()),
        }
    }

    /// The next place in this partition's append order; taken as a produce request arrives.
    pub fn append_ticket(self: &Arc<Self>) -> AppendTicket {
        AppendTicket {
            partition: Arc::clone(self),
            number: self.tickets.fetch_add(1, Ordering::Relaxed),
        }
    }

    fn lock(&self) -> MutexGuard<'_, ReplicaState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stable_leadership(&self) -> RwLockReadGuard<'_, ()> {
        self.leader_isr_update.read().unwrap_or_else(|p| p.into_inner())
    }

    fn change_leadership(&self) -> RwLockWriteGuard<'_, ()> {
        self.leader_isr_update.write().unwrap_or_else(|p| p.into_inner())
    }

    fn notify(&self) {
        self.progress.send_modify(|v| *v = v.wrapping_add(1));
    }

    pub fn subscribe(&self) -> Watcher<u64> {
        self.progress.subscribe()
    }

    pub fn role(&self) -> (Role, i32) {
        let s = self.lock();
        (s.role, s.leader_epoch)
    }

    pub fn high_watermark(&self) -> i64 {
        self.lock().high_watermark
    }

    /// Kafka's `lastStableOffset`: min(HW, first unstable offset).
    fn last_stable_offset_at(&self, high_watermark: i64) -> i64 {
        self.log
            .first_unstable_offset(high_watermark)
            .map_or(high_watermark, |first| first.min(high_watermark))
    }

    /// The last stable offset (see [`ReplicaStatus::last_stable_offset`]).
    pub fn last_stable_offset(&self) -> i64 {
        let hw = self.high_watermark();
        self.last_stable_offset_at(hw)
    }

    /// A new leader whose HW has not yet reached the start of its epoch does not know the
    /// committed end yet (Kafka answers ListOffsets with OFFSET_NOT_AVAILABLE then).
    pub fn high_watermark_known(&self) -> bool {
        let s = self.lock();
        s.role != Role::Leader || s.high_watermark >= s.epoch_start_offset
    }

    pub fn status(&self) -> ReplicaStatus {
        let s = self.lock();
        ReplicaStatus {
            role: s.role,
            log_end_offset: self.log.log_end_offset(),
            log_start_offset: self.log.log_start_offset(),
            high_watermark: s.high_watermark,
            last_stable_offset: self.last_stable_offset_at(s.high_watermark),
            size_bytes: self.log.size_bytes(),
            epochs: self.log.epoch_entries(),
            last_caught_up_ms: s
                .remotes
                .iter()
                .filter(|(_, r)| r.last_caught_up_ms > 0)
                .map(|(b, r)| (*b, r.last_caught_up_ms))
                .collect(),
        }
    }

    /// Applies the controller's state for this partition; `is_live` says which brokers are
    /// neither fenced nor shutting down. Returns whether the role or leader epoch changed (the
    /// broker then restarts its fetcher).
    pub fn apply(
        &self,
        reg: &PartitionRegistration,
        min_isr: i32,
        is_live: impl Fn(BrokerId) -> bool,
    ) -> Result<bool, LogError> {
        let now_ms = self.clock.now_ms();
        let _changing = self.change_leadership();
        let mut s = self.lock();
        s.eligible = reg.replicas.iter().copied().filter(|r| is_live(*r)).collect();
        if reg.leader_epoch < s.leader_epoch
            || (reg.leader_epoch == s.leader_epoch && reg.partition_epoch < s.partition_epoch)
        {
            return Ok(false);
        }
        let new_role = if reg.leader == self.broker {
            Role::Leader
        } else if reg.leader == NO_LEADER {
            Role::Leaderless
        } else {
            Role::Follower { leader: reg.leader }
        };
        let changed = new_role != s.role || reg.leader_epoch != s.leader_epoch;
        s.replicas = reg.replicas.clone();
        s.isr = reg.isr.clone();
        s.partition_epoch = reg.partition_epoch;
        s.min_isr = min_isr.max(1) as usize;
        if s.pending_isr.as_ref().is_some_and(|p| *p == reg.isr) || changed {
            s.pending_isr = None;
        }
        if changed {
            s.role = new_role;
            s.leader_epoch = reg.leader_epoch;
            if new_role == Role::Leader {
                let leo = self.log.log_end_offset();
                // A new leader records where its epoch starts before appending anything
                // (KIP-279: back-to-back elections).
                self.log.assign_epoch(reg.leader_epoch, leo)?;
                s.epoch_start_offset = leo;
                let isr = s.isr.clone();
                s.remotes = s
                    .replicas
                    .iter()
                    .filter(|r| **r != self.broker)
                    .map(|r| {
                        let caught_up = if isr.contains(r) { now_ms } else { 0 };
                        (
                            *r,
                            RemoteReplica {
                                leo: -1,
                                last_fetch_ms: 0,
                                last_fetch_leader_leo: -1,
                                last_caught_up_ms: caught_up,
                                broker_epoch: -1,
                            },
                        )
                    })
                    .collect();
            } else {
                s.remotes.clear();
            }
        } else if s.role == Role::Leader {
            // A reassignment adds replicas within the leader's epoch: they start out of sync
            // and join the ISR as any follower that catches up.
            let me = self.broker;
            let ReplicaState { replicas, remotes, .. } = &mut *s;
            remotes.retain(|r, _| replicas.contains(r));
            for r in replicas.iter().filter(|r| **r != me) {
                remotes.entry(*r).or_insert(RemoteReplica {
                    leo: -1,
                    last_fetch_ms: 0,
                    last_fetch_leader_leo: -1,
                    last_caught_up_ms: 0,
                    broker_epoch: -1,
                });
            }
        }
        if s.role == Role::Leader {
            self.maybe_increment_hw(&mut s, now_ms);
        }
        // Planted (issue 24): a new follower cuts its log to below its HW.
        let becomes_follower = changed && matches!(s.role, Role::Follower { .. });
        let below_hw = (becomes_follower && planted::active(Bug::TruncationBelowHw))
            .then(|| (s.high_watermark - 1).max(self.log.log_start_offset()));
        drop(s);
        if let Some(offset) = below_hw {
            self.cut_to(offset)?;
        }
        self.notify();
        Ok(changed)
    }

    /// Leader append for a producer. Checks min.insync.replicas first for acks=all, then the
    /// producer's sequence numbers: a batch already written is not written again. The role,
    /// epoch and ISR checked stay as they were until the batch is in the log (Kafka appends
    /// under `leaderIsrUpdateLock`'s read lock), so a batch checked under one leader epoch can
    /// never land after the next epoch's start.
    pub fn append_as_leader(&self, records: &mut [u8], acks_all: bool, now_ms: i64) -> Result<Appended, ErrorCode> {
        let _stable = self.stable_leadership();
        let leader_epoch = {
            let s = self.lock();
            if s.role != Role::Leader {
                return Err(ErrorCode::NotLeaderOrFollower);
            }
            if acks_all && s.isr.len() < s.effective_min_isr() {
                return Err(ErrorCode::NotEnoughReplicas);
            }
            s.leader_epoch
        };
        // Kafka's LogValidator.validateKey: the cleaner keeps the last record of each key, so
        // a compacted topic refuses a record without one (a log can still hold such records
        // from before its policy changed; the cleaner keeps them).
        if self.log.config().cleanup_policy.compacts() && has_keyless_record(records) {
            return Err(ErrorCode::InvalidRecord);
        }
        let producers = self.producers.lock().unwrap_or_else(|p| p.into_inner());
        // The log checks every CRC as it appends; here the framing is enough to read the
        // producers' sequences. An answer other than "append" is only given for bytes that pass
        // the full check, as Kafka validates a batch before it looks at its sequence.
        for item in Batches::checked_before(records) {
            let (_, header, _) = item.map_err(|_| ErrorCode::CorruptMessage)?;
            // Kafka's LogValidator: only a transaction coordinator writes control batches.
            if header.is_control() {
                return Err(ErrorCode::InvalidRecord);
            }
            // Kafka's ProducerAppendInfo: a producer with an open transaction sends only
            // transactional batches until it ends.
            if header.attributes & 0x10 == 0
                && header.producer_id >= 0
                && self.log.ongoing_transaction_of(header.producer_id).is_some()
            {
                return Err(ErrorCode::InvalidTxnState);
            }
            let check = producers.check(&header);
            if !matches!(check, Ok(SequenceCheck::Append)) && Batches::new(records).any(|b| b.is_err()) {
                return Err(ErrorCode::CorruptMessage);
            }
            if let SequenceCheck::Duplicate {
                first_offset,
                last_offset,
            } = check?
            {
                return Ok(Appended {
                    first_offset,
                    last_offset,
                    bytes: 0,
                    leader_epoch,
                });
            }
        }
        self.append_checked(producers, records, leader_epoch, now_ms)
    }

    /// Leader append of a group coordinator's transactional batch (TxnOffsetCommit), acks=all,
    /// as Kafka's `AppendOrigin.Coordinator`: the producer's epoch is checked (an older one
    /// is INVALID_PRODUCER_EPOCH) but not its sequences, which the coordinator does not keep.
    pub fn append_as_coordinator(
        &self,
        records: &mut [u8],
        producer_id: i64,
        producer_epoch: i16,
        now_ms: i64,
    ) -> Result<Appended, ErrorCode> {
        let _stable = self.stable_leadership();
        let leader_epoch = {
            let s = self.lock();
            if s.role != Role::Leader {
                return Err(ErrorCode::NotLeaderOrFollower);
            }
            if s.isr.len() < s.effective_min_isr() {
                return Err(ErrorCode::NotEnoughReplicas);
            }
            s.leader_epoch
        };
        let producers = self.producers.lock().unwrap_or_else(|p| p.into_inner());
        producers.check_epoch(producer_id, producer_epoch)?;
        self.append_checked(producers, records, leader_epoch, now_ms)
    }

    /// Leader append of an end-transaction marker for `producer_id` (Kafka's WriteTxnMarkers
    /// for one partition, appended with acks=all: the caller waits for the HW to pass it).
    /// A marker of an older producer epoch is INVALID_PRODUCER_EPOCH; one for a producer
    /// without an open transaction is written all the same, as Kafka does.
    pub fn append_txn_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
        now_ms: i64,
    ) -> Result<Appended, ErrorCode> {
        let _stable = self.stable_leadership();
        let leader_epoch = {
            let s = self.lock();
            if s.role != Role::Leader {
                return Err(ErrorCode::NotLeaderOrFollower);
            }
            if s.isr.len() < s.effective_min_isr() {
                return Err(ErrorCode::NotEnoughReplicas);
            }
            s.leader_epoch
        };
        if producer_id < 0 {
            return Err(ErrorCode::InvalidRequest);
        }
        let producers = self.producers.lock().unwrap_or_else(|p| p.into_inner());
        producers.check_marker(producer_id, producer_epoch, coordinator_epoch)?;
        let mut marker = txn::end_txn_marker_batch(producer_id, producer_epoch, coordinator_epoch, commit, now_ms);
        self.append_checked(producers, &mut marker, leader_epoch, now_ms)
    }

    /// The leader's append once its checks passed: into the log, into the producers' state
    /// (still locked, so a retry cannot slip between), then the high watermark.
    fn append_checked(
        &self,
        mut producers: MutexGuard<'_, ProducerState>,
        batches: &mut [u8],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<Appended, ErrorCode> {
        let info = self
            .log
            .append_as_leader(batches, leader_epoch, now_ms)
            .map_err(|e| ErrorCode::from_storage(e.kafka_error_code()))?;
        record_batches(&mut producers, batches);
        drop(producers);
        let mut s = self.lock();
        self.maybe_increment_hw(&mut s, self.clock.now_ms());
        drop(s);
        self.notify();
        Ok(Appended {
            first_offset: info.first_offset,
            last_offset: info.last_offset,
            bytes: info.bytes,
            leader_epoch,
        })
    }

    /// Where an acks=all produce stands: `Ok(true)` done, `Ok(false)` keep waiting.
    ///
    /// Kafka's `checkEnoughReplicasReachOffset` answers NOT_ENOUGH_REPLICAS_AFTER_APPEND only
    /// once the HW passed the batch, but the HW is frozen while the ISR is below
    /// min.insync.replicas, so that answer would never come: the producer would wait for its
    /// timeout. The waiter is answered as soon as the smaller ISR takes effect instead; while
    /// an ISR change is in flight the larger (maximal) ISR counts, as for the HW.
    pub fn check_acks_all(&self, required_offset: i64, leader_epoch: i32) -> Result<bool, ErrorCode> {
        let s = self.lock();
        if s.role != Role::Leader || s.leader_epoch != leader_epoch {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        if s.maximal_isr().len() < s.effective_min_isr() {
            return Err(ErrorCode::NotEnoughReplicasAfterAppend);
        }
        // Planted (issue 24): answered as soon as the batch is in the leader's log.
        if s.high_watermark < required_offset && planted::active(Bug::AcksAllOnAppend) {
            return Ok(true);
        }
        Ok(s.high_watermark >= required_offset)
    }

    /// Kafka's `maybeIncrementLeaderHW`.
    fn maybe_increment_hw(&self, s: &mut ReplicaState, now_ms: i64) -> bool {
        if s.isr.len() < s.effective_min_isr() {
            return false;
        }
        let leo = self.log.log_end_offset();
        let maximal = s.maximal_isr();
        let mut new_hw = leo;
        let mut lagging_skipped = false;
        for (id, r) in &s.remotes {
            // A caught-up replica outside the ISR counts (it is about to join), unless its broker
            // is fenced: a dead follower must not hold the HW back after it left the ISR.
            let counts =
                maximal.contains(id) || (self.is_caught_up(r, leo, now_ms) && r.leo >= 0 && s.eligible.contains(id));
            // Planted (issue 24): one lagging ISR follower does not hold the HW back.
            if counts && r.leo < leo && !lagging_skipped && planted::active(Bug::HwPastLaggingIsr) {
                lagging_skipped = true;
                continue;
            }
            if counts && r.leo < new_hw {
                new_hw = r.leo;
            }
        }
        if new_hw > s.high_watermark && new_hw <= leo {
            s.high_watermark = new_hw;
            return true;
        }
        false
    }

    fn is_caught_up(&self, r: &RemoteReplica, leader_leo: i64, now_ms: i64) -> bool {
        r.leo == leader_leo || now_ms - r.last_caught_up_ms <= self.lag_time_ms
    }

    /// Serves a fetch on the leader (follower or consumer). Returns the records or an error,
    /// plus an ISR expansion to propose when a follower caught up. A follower's fetch position
    /// counts once, when its request arrives (`arrival`); the re-reads of a long poll waiting
    /// for records do not, as in Kafka, so a fetch held open does not keep renewing its
    /// follower's caught-up time.
    ///
    /// A `throttled` read (KIP-73: the leader's replication quota holds this follower back)
    /// answers the partition's state without records.
    pub fn read_for_fetch(
        &self,
        req: &FetchRequest,
        arrival: bool,
        throttled: bool,
    ) -> (Result<LeaderRead, ErrorCode>, Option<IsrProposal>) {
        let now_ms = self.clock.now_ms();
        let mut s = self.lock();
        if s.role != Role::Leader {
            return (Err(ErrorCode::NotLeaderOrFollower), None);
        }
        if req.current_leader_epoch >= 0 {
            if req.current_leader_epoch < s.leader_epoch {
                return (Err(ErrorCode::FencedLeaderEpoch), None);
            }
            if req.current_leader_epoch > s.leader_epoch {
                return (Err(ErrorCode::UnknownLeaderEpoch), None);
            }
        }
        let leo = self.log.log_end_offset();
        let log_start = self.log.log_start_offset();
        if req.replica.is_some()
            && let Some(last_epoch) = req.last_fetched_epoch
        {
            let end = self.log.end_offset_for_epoch(last_epoch);
            if end == EpochEndOffset::UNDEFINED {
                // Nothing here says where the follower's last epoch ends; Kafka answers so.
                return (Err(ErrorCode::OffsetOutOfRange), None);
            }
            if req.fetch_offset >= log_start && (end.epoch < last_epoch || end.end_offset < req.fetch_offset) {
                let data = FetchedRecords {
                    high_watermark: s.high_watermark,
                    last_stable_offset: self.last_stable_offset_at(s.high_watermark),
                    log_start_offset: log_start,
                    log_end_offset: leo,
                    records: Default::default(),
                    aborted_transactions: None,
                };
                return (Ok((data, Some(end))), None);
            }
        }
        let last_stable_offset = self.last_stable_offset_at(s.high_watermark);
        let read_committed = req.replica.is_none() && req.isolation == IsolationLevel::ReadCommitted;
        let upper = if throttled {
            Some(req.fetch_offset)
        } else if req.replica.is_some() {
            None
        } else if leo > s.high_watermark && planted::active(Bug::ConsumerReadsAboveHw) {
            // Planted (issue 24): a consumer is served records not yet committed.
            None
        } else if read_committed {
            // Kafka's FetchIsolation.TXN_COMMITTED: up to the last stable offset.
            Some(last_stable_offset)
        } else {
            Some(s.high_watermark)
        };
        let data = match self.log.read(req.fetch_offset, req.max_bytes, upper) {
            Ok(d) => d,
            Err(e) => return (Err(ErrorCode::from_storage(e.kafka_error_code())), None),
        };
        let mut proposal = None;
        if let Some((follower, broker_epoch)) = req.replica.filter(|_| arrival) {
            proposal = self.update_follower(&mut s, follower, broker_epoch, req.fetch_offset, leo, now_ms);
        }
        // Kafka's `addAbortedTransactions`: those overlapping the fetch offset up to the end
        // of the last batch returned.
        let aborted_transactions = read_committed.then(|| {
            crate::storage::records::next_offset_after(&data.records)
                .map_or_else(Vec::new, |upper| self.log.collect_aborted_txns(req.fetch_offset, upper))
        });
        let out = FetchedRecords {
            high_watermark: s.high_watermark,
            last_stable_offset,
            log_start_offset: data.log_start_offset,
            log_end_offset: data.log_end_offset,
            records: data.records,
            aborted_transactions,
        };
        (Ok((out, None)), proposal)
    }

    /// Whether `replica` is in this partition's committed ISR (what a leader's replication
    /// throttle spares).
    pub fn in_sync(&self, replica: BrokerId) -> bool {
        self.lock().isr.contains(&replica)
    }

    /// Kafka's `updateFollowerFetchState`, then ISR expansion and HW increment.
    fn update_follower(
        &self,
        s: &mut ReplicaState,
        follower: BrokerId,
        broker_epoch: i64,
        fetch_offset: i64,
        leader_leo: i64,
        now_ms: i64,
    ) -> Option<IsrProposal> {
        let r = s.remotes.get_mut(&follower)?;
        if fetch_offset >= leader_leo {
            r.last_caught_up_ms = r.last_caught_up_ms.max(now_ms);
        } else if fetch_offset >= r.last_fetch_leader_leo && r.last_fetch_leader_leo >= 0 {
            r.last_caught_up_ms = r.last_caught_up_ms.max(r.last_fetch_ms);
        }
        r.leo = fetch_offset;
        r.last_fetch_leader_leo = leader_leo;
        r.last_fetch_ms = now_ms;
        r.broker_epoch = broker_epoch;
        if self.maybe_increment_hw(s, now_ms) {
            self.notify();
        }
        // Expand: not in ISR, caught up to the HW and into the current leader epoch.
        let r = s.remotes.get(&follower).copied()?;
        let in_isr = s.maximal_isr().contains(&follower);
        if !in_isr
            && s.pending_isr.is_none()
            && s.eligible.contains(&follower)
            && r.leo >= s.high_watermark
            && r.leo >= s.epoch_start_offset
        {
            let mut new_isr = s.isr.clone();
            new_isr.push(follower);
            s.pending_isr = Some(new_isr.clone());
            return Some(IsrProposal {
                tp: self.tp.clone(),
                leader_epoch: s.leader_epoch,
                partition_epoch: s.partition_epoch,
                new_isr,
            });
        }
        None
    }

    /// Followers that have not caught up within the lag time leave the ISR (Kafka's
    /// `maybeShrinkIsr`). Only one ISR change is in flight at a time.
    pub fn shrink_proposal(&self) -> Option<IsrProposal> {
        let now_ms = self.clock.now_ms();
        let mut s = self.lock();
        if s.role != Role::Leader || s.pending_isr.is_some() {
            return None;
        }
        let leo = self.log.log_end_offset();
        let lagging: Vec<BrokerId> = s
            .isr
            .iter()
            .copied()
            .filter(|r| *r != self.broker)
            .filter(|r| {
                s.remotes
                    .get(r)
                    .is_some_and(|rr| !(rr.leo == leo || now_ms - rr.last_caught_up_ms <= self.lag_time_ms))
            })
            .collect();
        if lagging.is_empty() {
            return None;
        }
        let new_isr: Vec<BrokerId> = s.isr.iter().copied().filter(|r| !lagging.contains(r)).collect();
        if planted::active(Bug::IsrShrunkWithoutController) {
            // Planted (issue 24): the leader acts on its own ISR; the controller's still holds
            // the laggards.
            s.isr = new_isr;
            self.maybe_increment_hw(&mut s, now_ms);
            drop(s);
            self.notify();
            return None;
        }
        s.pending_isr = Some(new_isr.clone());
        Some(IsrProposal {
            tp: self.tp.clone(),
            leader_epoch: s.leader_epoch,
            partition_epoch: s.partition_epoch,
            new_isr,
        })
    }

    /// The controller answered an ISR proposal.
    pub fn isr_change_done(&self, committed: Option<&PartitionRegistration>) {
        let now_ms = self.clock.now_ms();
        let _changing = self.change_leadership();
        let mut s = self.lock();
        s.pending_isr = None;
        if let Some(reg) = committed
            && reg.leader_epoch == s.leader_epoch
            && reg.partition_epoch >= s.partition_epoch
        {
            s.isr = reg.isr.clone();
            s.partition_epoch = reg.partition_epoch;
        }
        if s.role == Role::Leader {
            self.maybe_increment_hw(&mut s, now_ms);
        }
        drop(s);
        self.notify();
    }

    /// What a follower sends: its LEO and the epoch of its last batch.
    pub fn fetch_position(&self) -> (i64, Option<i32>) {
        // Planted (issue 24): without its last epoch the leader never says where it diverged.
        if planted::active(Bug::DivergenceIgnored) {
            return (self.log.log_end_offset(), None);
        }
        (self.log.log_end_offset(), self.log.latest_epoch())
    }

    /// Runs a follower's change to its log only while this replica still follows in
    /// `leader_epoch`; `Ok(None)` when it does not, and nothing changed. A fetcher learns that
    /// its epoch is over only at its next await, so without this an answer from the old
    /// leader could land in the log of a replica that has just become leader.
    fn while_following<T>(
        &self,
        leader_epoch: i32,
        change: impl FnOnce() -> Result<T, LogError>,
    ) -> Result<Option<T>, LogError> {
        let _stable = self.stable_leadership();
        let following = {
            let s = self.lock();
            matches!(s.role, Role::Follower { .. }) && s.leader_epoch == leader_epoch
        };
        if !following {
            return Ok(None);
        }
        change().map(Some)
    }

    /// Follower: appends fetched batches and learns the leader's HW.
    pub fn append_as_follower(
        &self,
        leader_epoch: i32,
        data: &FetchedRecords,
        now_ms: i64,
    ) -> Result<Option<()>, LogError> {
        self.while_following(leader_epoch, || {
            if !data.records.is_empty() {
                let mut producers = self.producers.lock().unwrap_or_else(|p| p.into_inner());
                self.log.append_as_follower(&data.records, now_ms)?;
                record_batches(&mut producers, &data.records);
            }
            let mut s = self.lock();
            let leo = self.log.log_end_offset();
            let hw = data.high_watermark.min(leo);
            if hw > s.high_watermark {
                s.high_watermark = hw;
            }
            let hw = s.high_watermark;
            drop(s);
            // Kafka's `maybeIncrementLogStartOffset(leaderLogStartOffset)`: the leader's log
            // start moved by DeleteRecords or retention; ours follows (never past our HW).
            let log_start = data.log_start_offset.min(hw);
            if log_start > self.log.log_start_offset() {
                self.log.delete_records(log_start, hw, now_ms)?;
            }
            self.notify();
            Ok(())
        })
    }

    /// Leader (Kafka's `deleteRecordsOnLeader`): moves the log start up to `offset`, -1
    /// meaning the high watermark, and deletes the segments wholly below it. Returns the new
    /// log start. POLICY_VIOLATION when the topic's cleanup policy does not delete;
    /// OFFSET_OUT_OF_RANGE for an offset below -1 or above the high watermark. An offset at
    /// or below the log start changes nothing.
    pub fn delete_records(&self, offset: i64, now_ms: i64) -> Result<i64, ErrorCode> {
        let _stable = self.stable_leadership();
        let high_watermark = {
            let s = self.lock();
            if s.role != Role::Leader {
                return Err(ErrorCode::NotLeaderOrFollower);
            }
            s.high_watermark
        };
        if !self.log.config().cleanup_policy.deletes() {
            return Err(ErrorCode::PolicyViolation);
        }
        let offset = if offset == DELETE_TO_HIGH_WATERMARK {
            high_watermark
        } else {
            offset
        };
        let start = self
            .log
            .delete_records(offset, high_watermark, now_ms)
            .map_err(|e| ErrorCode::from_storage(e.kafka_error_code()))?;
        self.notify();
        Ok(start)
    }

    /// Follower: the leader says our log diverged from its own, and where its epoch `E_l` that
    /// we share ends (`O_l`). As Kafka's `getOffsetTruncationState`: we look up where `E_l`
    /// ends in our own log (`E_f`, `O_f`, for the largest epoch of ours not above `E_l`). If
    /// we never had `E_l`, we cut to `O_f` and the next fetch, with our now older last epoch,
    /// asks again; otherwise the logs agree up to `min(O_l, O_f)` and we cut there. A cut at
    /// our log end still drops epochs we assigned there as a leader and never wrote under.
    /// Returns the log end offsets before and after, or `None` when this replica no longer
    /// follows in `leader_epoch`.
    pub fn truncate_diverging(
        &self,
        leader_epoch: i32,
        diverging: EpochEndOffset,
    ) -> Result<Option<(i64, i64)>, LogError> {
        self.while_following(leader_epoch, || {
            let before = self.log.log_end_offset();
            let target = if diverging.end_offset < 0 {
                before
            } else if diverging.epoch < 0 {
                diverging.end_offset.min(before)
            } else {
                match self.log.end_offset_for_epoch(diverging.epoch) {
                    EpochEndOffset::UNDEFINED => diverging.end_offset.min(before),
                    own if own.epoch != diverging.epoch => own.end_offset.min(before),
                    own => own.end_offset.min(diverging.end_offset).min(before),
                }
            };
            self.cut_to(target)?;
            Ok((before, self.log.log_end_offset()))
        })
    }

    /// Follower: our log is ahead of the leader's end (cut it back there).
    pub fn truncate_to(&self, leader_epoch: i32, offset: i64) -> Result<Option<()>, LogError> {
        self.while_following(leader_epoch, || self.cut_to(offset))
    }

    /// Forgets the idempotent producers that wrote nothing to this replica for
    /// `expiration_ms`; returns how many.
    pub fn expire_producers(&self, now_ms: i64, expiration_ms: i64) -> usize {
        self.producers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .expire(now_ms, expiration_ms)
    }

    fn cut_to(&self, offset: i64) -> Result<(), LogError> {
        let stale_epochs = planted::active(Bug::StaleEpochCache).then(|| self.log.epoch_entries());
        self.log.truncate_to(offset)?;
        let after = self.log.log_end_offset();
        // Planted (issue 24): the epochs that started in the cut suffix stay in the cache.
        for e in stale_epochs.iter().flatten().filter(|e| e.start_offset >= after) {
            self.log.assign_epoch(e.epoch, e.start_offset)?;
        }
        self.producers.lock().unwrap_or_else(|p| p.into_inner()).truncate(after);
        let mut s = self.lock();
        s.high_watermark = s.high_watermark.min(after);
        drop(s);
        self.notify();
        Ok(())
    }

    /// Follower: our fetch offset is below the leader's log start; restart the log there.
    pub fn reset_to(&self, leader_epoch: i32, offset: i64) -> Result<Option<()>, LogError> {
        self.while_following(leader_epoch, || {
            self.log.truncate_fully_and_start_at(offset)?;
            self.producers.lock().unwrap_or_else(|p| p.into_inner()).clear();
            let mut s = self.lock();
            s.high_watermark = offset;
            drop(s);
            self.notify();
            Ok(())
        })
    }
}

/// Records each batch now in the log in the producer state, with the coordinator epoch of
/// the end-transaction markers among them.
fn record_batches(producers: &mut ProducerState, records: &[u8]) {
    for (_, header, bytes) in Batches::checked_before(records).flatten() {
        let marker = header
            .is_control()
            .then(|| txn::read_end_txn_marker(bytes, &header))
            .flatten();
        producers.record_with(&header, marker.map(|m| m.coordinator_epoch));
    }
}

/// Whether a data batch in `records` holds a record without a key (undecodable bytes are
/// left to the log's own checks).
pub fn has_keyless_record(records: &[u8]) -> bool {
    Batches::checked_before(records)
        .flatten()
        .filter(|(_, header, _)| !header.is_control())
        .any(|(_, _, bytes)| crate::storage::records::decode(bytes).is_ok_and(|rs| rs.iter().any(|r| r.key.is_none())))
}
