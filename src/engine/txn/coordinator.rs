//! The transaction coordinator (Kafka's `TransactionCoordinator`, `TransactionStateManager`,
//! `TransactionMetadata` and `TransactionMarkerChannelManager` in one): the state of every
//! transactional id of the `__transaction_state` partitions this broker leads, its
//! transitions, and the end-transaction markers it sends to the partitions of a transaction.
//!
//! A transition is prepared under the lock (the id then has a pending transition, so a
//! concurrent request gets CONCURRENT_TRANSACTIONS), its record appended to the log, and only
//! once the ISR has the record is it applied in memory and the client answered. A failed write
//! leaves the state as before. Work that outlives a request (markers, then the Complete*
//! record) is a [`MarkerJob`] the broker runs as one of its tasks.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::load::TxnReplay;
use super::record::{self, TxnLogValue};
use super::{TransactionDescription, TransactionListing, TxnRequest, TxnResponse, TxnState, partition_for_txn};
use crate::engine::broker::await_replication;
use crate::engine::controller::{Controller, NO_LEADER};
use crate::engine::events::{EventBus, EventKind};
use crate::engine::group::{OFFSETS_COMMIT_TIMEOUT, OFFSETS_TOPIC, PendingWrite, partition_for_group};
use crate::engine::network::{Network, NodeId};
use crate::engine::partition::Partition;
use crate::engine::protocol::{ErrorCode, Request, Response};
use crate::engine::{BrokerId, Clock, TopicPartition, WallClock};
use crate::storage::records;

/// How long a marker request may wait for the partition's ISR.
const MARKER_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause before a marker or a Complete* record is tried again.
const RETRY_BACKOFF: Duration = Duration::from_millis(100);

/// Kafka's `TransactionMetadata.isEpochExhausted`.
fn epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

/// One transactional id in memory.
#[derive(Debug, Clone)]
struct TxnMeta {
    producer_id: i64,
    /// The producer id before a rotation, -1 when none (KIP-360 retries).
    last_producer_id: i64,
    producer_epoch: i16,
    /// The epoch before the last bump, -1 when none (KIP-360 retries).
    last_producer_epoch: i16,
    timeout_ms: i32,
    state: TxnState,
    partitions: BTreeSet<TopicPartition>,
    start_ms: i64,
    last_update_ms: i64,
}

impl TxnMeta {
    fn value(&self) -> TxnLogValue {
        TxnLogValue {
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            timeout_ms: self.timeout_ms,
            state: self.state,
            partitions: self.partitions.iter().cloned().collect(),
            last_update_ms: self.last_update_ms,
            start_ms: self.start_ms,
        }
    }

    fn loaded(v: TxnLogValue) -> TxnMeta {
        TxnMeta {
            producer_id: v.producer_id,
            last_producer_id: -1,
            producer_epoch: v.producer_epoch,
            last_producer_epoch: -1,
            timeout_ms: v.timeout_ms,
            state: v.state,
            partitions: v.partitions.into_iter().collect(),
            start_ms: v.start_ms,
            last_update_ms: v.last_update_ms,
        }
    }
}

struct Entry {
    meta: TxnMeta,
    /// The transition whose record is being written (Kafka's `pendingState`).
    pending: Option<TxnMeta>,
}

enum Load {
    Loading { log: Arc<Partition>, epoch: i32 },
    Loaded { log: Arc<Partition>, epoch: i32 },
}

impl Load {
    fn parts(&self) -> (&Arc<Partition>, i32) {
        match self {
            Load::Loading { log, epoch } | Load::Loaded { log, epoch } => (log, *epoch),
        }
    }
}

#[derive(Default)]
struct State {
    partitions: HashMap<i32, Load>,
    txns: BTreeMap<String, Entry>,
}

/// Why markers are being written: the events say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Completion {
    /// The producer's EndTxn.
    Client,
    /// The transaction outlived its timeout.
    TimedOut,
    /// A new producer instance (InitProducerId) fenced the open transaction.
    Fenced,
    /// A new coordinator found the transaction prepared in the log.
    Failover,
}

/// A prepared transaction whose markers are to be written, then its Complete* record.
pub(crate) struct MarkerJob {
    transactional_id: String,
    producer_id: i64,
    producer_epoch: i16,
    txn_partition: i32,
    coordinator_epoch: i32,
    commit: bool,
    partitions: Vec<TopicPartition>,
    why: Completion,
}

/// How a marker for one partition ended.
enum MarkerOutcome {
    Written,
    /// The coordinator lost the partition, or a newer coordinator / producer epoch exists.
    Abandoned,
}

pub(crate) struct TxnCoordinator {
    broker: BrokerId,
    state_partitions: i32,
    offsets_partitions: i32,
    max_timeout_ms: u64,
    expiration_ms: u64,
    network: Network,
    controller: Arc<Controller>,
    events: EventBus,
    wall: WallClock,
    clock: Clock,
    state: Mutex<State>,
}

/// Kafka's `appendTransactionToLog` mapping of a failed write.
fn write_error(error: ErrorCode) -> ErrorCode {
    match error {
        ErrorCode::UnknownTopicOrPartition
        | ErrorCode::NotEnoughReplicas
        | ErrorCode::NotEnoughReplicasAfterAppend
        | ErrorCode::RequestTimedOut => ErrorCode::CoordinatorNotAvailable,
        ErrorCode::NotLeaderOrFollower | ErrorCode::KafkaStorageError => ErrorCode::NotCoordinator,
        ErrorCode::MessageTooLarge => ErrorCode::UnknownServerError,
        other => other,
    }
}

pub(crate) struct CoordinatorSetup {
    pub broker: BrokerId,
    pub state_partitions: i32,
    pub offsets_partitions: i32,
    pub max_timeout_ms: u64,
    pub expiration_ms: u64,
    pub network: Network,
    pub controller: Arc<Controller>,
    pub events: EventBus,
    pub wall: WallClock,
    pub clock: Clock,
}

impl TxnCoordinator {
    pub(crate) fn new(s: CoordinatorSetup) -> Self {
        TxnCoordinator {
            broker: s.broker,
            state_partitions: s.state_partitions,
            offsets_partitions: s.offsets_partitions,
            max_timeout_ms: s.max_timeout_ms,
            expiration_ms: s.expiration_ms,
            network: s.network,
            controller: s.controller,
            events: s.events,
            wall: s.wall,
            clock: s.clock,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn partition_of(&self, id: &str) -> i32 {
        partition_for_txn(id, self.state_partitions)
    }

    /// The coordinator epoch serving `id`, or why this broker cannot serve it.
    fn check(&self, state: &State, id: &str) -> Result<i32, ErrorCode> {
        match state.partitions.get(&self.partition_of(id)) {
            Some(Load::Loaded { epoch, .. }) => Ok(*epoch),
            Some(Load::Loading { .. }) => Err(ErrorCode::CoordinatorLoadInProgress),
            None => Err(ErrorCode::NotCoordinator),
        }
    }

    // ---- loading ---------------------------------------------------------------------

    /// This broker leads a `__transaction_state` partition in `epoch`: whether it must be
    /// loaded now (not when it already is, in that epoch, from that replica).
    pub(crate) fn begin_loading(&self, log: &Arc<Partition>, epoch: i32) -> bool {
        let mut state = self.lock();
        let index = log.tp.partition;
        if state
            .partitions
            .get(&index)
            .is_some_and(|l| Arc::ptr_eq(l.parts().0, log) && l.parts().1 == epoch)
        {
            return false;
        }
        self.unload_locked(&mut state, index);
        state.partitions.insert(
            index,
            Load::Loading {
                log: Arc::clone(log),
                epoch,
            },
        );
        true
    }

    /// The replayed ids are served from now on; the transactions found prepared are returned
    /// to be completed (markers again, with this coordinator's epoch).
    pub(crate) fn finish_loading(&self, index: i32, epoch: i32, replay: TxnReplay) -> Vec<MarkerJob> {
        let mut state = self.lock();
        let log = match state.partitions.get(&index) {
            Some(Load::Loading { log, epoch: e }) if *e == epoch => Arc::clone(log),
            _ => return Vec::new(),
        };
        let mut jobs = Vec::new();
        for (id, value) in replay.txns {
            let meta = TxnMeta::loaded(value);
            if let Some(commit) = match meta.state {
                TxnState::PrepareCommit => Some(true),
                TxnState::PrepareAbort => Some(false),
                _ => None,
            } {
                jobs.push(MarkerJob {
                    transactional_id: id.clone(),
                    producer_id: meta.producer_id,
                    producer_epoch: meta.producer_epoch,
                    txn_partition: index,
                    coordinator_epoch: epoch,
                    commit,
                    partitions: meta.partitions.iter().cloned().collect(),
                    why: Completion::Failover,
                });
            }
            state.txns.insert(id, Entry { meta, pending: None });
        }
        state.partitions.insert(index, Load::Loaded { log, epoch });
        tracing::info!(
            broker = self.broker,
            partition = index,
            epoch,
            prepared = jobs.len(),
            "transaction coordinator loaded"
        );
        jobs
    }

    /// This broker no longer leads the partition: its ids are forgotten here.
    pub(crate) fn unload(&self, index: i32) {
        let mut state = self.lock();
        self.unload_locked(&mut state, index);
    }

    fn unload_locked(&self, state: &mut State, index: i32) {
        state.partitions.remove(&index);
        state
            .txns
            .retain(|id, _| partition_for_txn(id, self.state_partitions) != index);
    }

    fn serving(&self, index: i32, epoch: i32) -> bool {
        matches!(self.lock().partitions.get(&index), Some(Load::Loaded { epoch: e, .. }) if *e == epoch)
    }

    // ---- writes ----------------------------------------------------------------------

    /// Appends the record of `transit` (a tombstone for Dead) and marks it pending.
    fn begin_write(&self, state: &mut State, id: &str, transit: TxnMeta) -> Result<PendingWrite, ErrorCode> {
        let Some(Load::Loaded { log, .. }) = state.partitions.get(&self.partition_of(id)) else {
            return Err(ErrorCode::NotCoordinator);
        };
        let value = (transit.state != TxnState::Dead).then(|| record::txn_value(&transit.value()));
        let rec = records::record(0, self.wall.now_ms(), Some(record::txn_key(id)), value);
        let mut batch = records::encode_batch(&[rec], records::Compression::None)
            .map(|b| b.to_vec())
            .map_err(|_| ErrorCode::UnknownServerError)?;
        let appended = log
            .append_as_leader(&mut batch, true, self.wall.now_ms())
            .map_err(write_error)?;
        let log = Arc::clone(log);
        if let Some(entry) = state.txns.get_mut(id) {
            entry.pending = Some(transit);
        }
        Ok(PendingWrite {
            partition: log,
            appended,
        })
    }

    /// Waits for the record, then applies the pending transition (or drops it on failure).
    async fn finish_write(&self, id: &str, epoch: i32, write: PendingWrite) -> ErrorCode {
        let mut progress = write.partition.subscribe();
        let error = await_replication(
            &self.clock,
            &write.partition,
            &write.appended,
            &mut progress,
            OFFSETS_COMMIT_TIMEOUT,
        )
        .await;
        let mut state = self.lock();
        let still = matches!(self.check(&state, id), Ok(e) if e == epoch);
        let Some(entry) = state.txns.get_mut(id) else {
            return if still {
                write_error(error)
            } else {
                ErrorCode::NotCoordinator
            };
        };
        let pending = entry.pending.take();
        if !still {
            return ErrorCode::NotCoordinator;
        }
        if error != ErrorCode::None {
            return write_error(error);
        }
        match pending {
            Some(meta) if meta.state == TxnState::Dead => {
                state.txns.remove(id);
            }
            Some(meta) => entry.meta = meta,
            None => {}
        }
        ErrorCode::None
    }

    /// Prepares `transit` for `id` and writes it: the outcome of the write.
    async fn transition(&self, id: &str, transit: TxnMeta) -> ErrorCode {
        let (epoch, write) = {
            let mut state = self.lock();
            let epoch = match self.check(&state, id) {
                Ok(e) => e,
                Err(e) => return e,
            };
            match self.begin_write(&mut state, id, transit) {
                Ok(w) => (epoch, w),
                Err(e) => return e,
            }
        };
        self.finish_write(id, epoch, write).await
    }

    // ---- requests --------------------------------------------------------------------

    /// Serves one request; work to run afterwards (markers) comes back as a job.
    pub(crate) async fn handle(&self, req: TxnRequest) -> (TxnResponse, Option<MarkerJob>) {
        match req {
            TxnRequest::InitProducerId {
                transactional_id,
                transaction_timeout_ms,
                producer_id,
                producer_epoch,
            } => {
                let expected = (producer_id >= 0 || producer_epoch >= 0).then_some((producer_id, producer_epoch));
                let (r, job) = self
                    .init_producer_id(&transactional_id, transaction_timeout_ms, expected)
                    .await;
                (TxnResponse::InitProducerId(r), job)
            }
            TxnRequest::AddPartitions {
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
            } => (
                TxnResponse::AddPartitions(
                    self.add_partitions(&transactional_id, producer_id, producer_epoch, partitions, true)
                        .await,
                ),
                None,
            ),
            TxnRequest::AddOffsets {
                transactional_id,
                producer_id,
                producer_epoch,
                group_id,
            } => {
                let tp = TopicPartition::new(OFFSETS_TOPIC, partition_for_group(&group_id, self.offsets_partitions));
                let r = self
                    .add_partitions(&transactional_id, producer_id, producer_epoch, vec![tp], false)
                    .await;
                let error = match r {
                    Ok(outcome) => outcome.first().map_or(ErrorCode::None, |(_, e)| *e),
                    Err(e) => e,
                };
                (TxnResponse::AddOffsets(error), None)
            }
            TxnRequest::EndTxn {
                transactional_id,
                producer_id,
                producer_epoch,
                commit,
            } => {
                let (error, job) = self
                    .end_txn(&transactional_id, producer_id, producer_epoch, commit)
                    .await;
                (TxnResponse::EndTxn(error), job)
            }
            TxnRequest::Describe { transactional_id } => {
                (TxnResponse::Describe(self.describe(&transactional_id)), None)
            }
            TxnRequest::List { states, producer_ids } => (TxnResponse::List(self.list(&states, &producer_ids)), None),
        }
    }

    async fn init_producer_id(
        &self,
        id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
    ) -> (Result<(i64, i16), ErrorCode>, Option<MarkerJob>) {
        if id.is_empty() {
            return (Err(ErrorCode::InvalidRequest), None);
        }
        if timeout_ms <= 0 || timeout_ms as u64 > self.max_timeout_ms {
            return (Err(ErrorCode::InvalidTransactionTimeout), None);
        }
        let now = self.wall.now_ms();
        let (epoch, write, transit) = {
            let mut state = self.lock();
            let epoch = match self.check(&state, id) {
                Ok(e) => e,
                Err(e) => return (Err(e), None),
            };
            if !state.txns.contains_key(id) {
                let producer_id = match self.controller.init_producer_id() {
                    Ok((pid, _)) => pid,
                    Err(e) => return (Err(e.code()), None),
                };
                let meta = TxnMeta {
                    producer_id,
                    last_producer_id: -1,
                    producer_epoch: -1,
                    last_producer_epoch: -1,
                    timeout_ms,
                    state: TxnState::Empty,
                    partitions: BTreeSet::new(),
                    start_ms: -1,
                    last_update_ms: now,
                };
                state.txns.insert(id.to_string(), Entry { meta, pending: None });
            }
            let Some(entry) = state.txns.get(id) else {
                return (Err(ErrorCode::UnknownServerError), None);
            };
            if entry.pending.is_some() {
                return (Err(ErrorCode::ConcurrentTransactions), None);
            }
            let m = &entry.meta;
            let valid = |(pid, e): (i64, i16)| {
                m.producer_epoch == -1 || pid == m.producer_id || (pid == m.last_producer_id && epoch_exhausted(e))
            };
            if expected.is_some_and(|x| !valid(x)) {
                return (Err(ErrorCode::ProducerFenced), None);
            }
            let transit = match m.state {
                TxnState::PrepareAbort | TxnState::PrepareCommit | TxnState::Dead | TxnState::PrepareEpochFence => {
                    return (Err(ErrorCode::ConcurrentTransactions), None);
                }
                TxnState::Ongoing => fenced(m, now),
                TxnState::Empty | TxnState::CompleteAbort | TxnState::CompleteCommit => {
                    let base = TxnMeta {
                        timeout_ms,
                        state: TxnState::Empty,
                        partitions: BTreeSet::new(),
                        start_ms: -1,
                        last_update_ms: now,
                        ..m.clone()
                    };
                    if epoch_exhausted(m.producer_epoch) && expected.is_none_or(|(_, e)| e == m.producer_epoch) {
                        let producer_id = match self.controller.init_producer_id() {
                            Ok((pid, _)) => pid,
                            Err(e) => return (Err(e.code()), None),
                        };
                        TxnMeta {
                            producer_id,
                            last_producer_id: m.producer_id,
                            producer_epoch: 0,
                            last_producer_epoch: if expected.is_some() { m.producer_epoch } else { -1 },
                            ..base
                        }
                    } else {
                        let bumped = m.producer_epoch + 1;
                        let (next, last) = match expected {
                            None => (bumped, -1),
                            Some((_, e)) if m.producer_epoch == -1 || e == m.producer_epoch => {
                                (bumped, m.producer_epoch)
                            }
                            Some((_, e)) if e == m.last_producer_epoch => (m.producer_epoch, m.last_producer_epoch),
                            Some(_) => return (Err(ErrorCode::ProducerFenced), None),
                        };
                        TxnMeta {
                            producer_epoch: next,
                            last_producer_epoch: last,
                            ..base
                        }
                    }
                }
            };
            match self.begin_write(&mut state, id, transit.clone()) {
                Ok(w) => (epoch, w, transit),
                Err(e) => return (Err(e), None),
            }
        };
        let error = self.finish_write(id, epoch, write).await;
        if error != ErrorCode::None {
            return (Err(error), None);
        }
        if transit.state == TxnState::PrepareAbort {
            // The open transaction of the fenced instance is aborted first; the new instance
            // retries and then gets its epoch (Kafka answers CONCURRENT_TRANSACTIONS).
            self.events.publish(EventKind::ProducerFenced {
                transactional_id: id.to_string(),
                producer_id: transit.producer_id,
                epoch: transit.producer_epoch,
            });
            let job = self.job(id, &transit, epoch, Completion::Fenced);
            return (Err(ErrorCode::ConcurrentTransactions), Some(job));
        }
        tracing::info!(
            broker = self.broker,
            transactional_id = id,
            producer_id = transit.producer_id,
            epoch = transit.producer_epoch,
            "initialized transactional id"
        );
        (Ok((transit.producer_id, transit.producer_epoch)), None)
    }

    fn job(&self, id: &str, m: &TxnMeta, coordinator_epoch: i32, why: Completion) -> MarkerJob {
        MarkerJob {
            transactional_id: id.to_string(),
            producer_id: m.producer_id,
            producer_epoch: m.producer_epoch,
            txn_partition: self.partition_of(id),
            coordinator_epoch,
            commit: m.state == TxnState::PrepareCommit,
            partitions: m.partitions.iter().cloned().collect(),
            why,
        }
    }

    async fn add_partitions(
        &self,
        id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: Vec<TopicPartition>,
        check_topics: bool,
    ) -> Result<Vec<(TopicPartition, ErrorCode)>, ErrorCode> {
        if id.is_empty() {
            return Err(ErrorCode::InvalidRequest);
        }
        if check_topics {
            let image = self.controller.image();
            if partitions.iter().any(|tp| image.partition(tp).is_none()) {
                return Ok(partitions
                    .into_iter()
                    .map(|tp| {
                        let error = if image.partition(&tp).is_none() {
                            ErrorCode::UnknownTopicOrPartition
                        } else {
                            ErrorCode::OperationNotAttempted
                        };
                        (tp, error)
                    })
                    .collect());
            }
        }
        let ok = |partitions: Vec<TopicPartition>| partitions.into_iter().map(|tp| (tp, ErrorCode::None)).collect();
        let now = self.wall.now_ms();
        let transit = {
            let state = self.lock();
            self.check(&state, id)?;
            let Some(entry) = state.txns.get(id) else {
                return Err(ErrorCode::InvalidProducerIdMapping);
            };
            let m = &entry.meta;
            if m.producer_id != producer_id {
                return Err(ErrorCode::InvalidProducerIdMapping);
            }
            if m.producer_epoch != producer_epoch {
                return Err(ErrorCode::ProducerFenced);
            }
            if entry.pending.is_some() {
                return Err(ErrorCode::ConcurrentTransactions);
            }
            match m.state {
                TxnState::PrepareCommit | TxnState::PrepareAbort => return Err(ErrorCode::ConcurrentTransactions),
                TxnState::Dead | TxnState::PrepareEpochFence => return Err(ErrorCode::InvalidTxnState),
                TxnState::Ongoing if partitions.iter().all(|tp| m.partitions.contains(tp)) => {
                    return Ok(ok(partitions));
                }
                _ => {}
            }
            let start_ms = if m.state == TxnState::Ongoing { m.start_ms } else { now };
            let mut all = m.partitions.clone();
            all.extend(partitions.iter().cloned());
            TxnMeta {
                state: TxnState::Ongoing,
                partitions: all,
                start_ms,
                last_update_ms: now,
                ..m.clone()
            }
        };
        match self.transition(id, transit).await {
            ErrorCode::None => Ok(ok(partitions)),
            error => Err(error),
        }
    }

    async fn end_txn(
        &self,
        id: &str,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
    ) -> (ErrorCode, Option<MarkerJob>) {
        if id.is_empty() {
            return (ErrorCode::InvalidRequest, None);
        }
        let now = self.wall.now_ms();
        let (epoch, write, transit) = {
            let mut state = self.lock();
            let epoch = match self.check(&state, id) {
                Ok(e) => e,
                Err(e) => return (e, None),
            };
            let Some(entry) = state.txns.get(id) else {
                return (ErrorCode::InvalidProducerIdMapping, None);
            };
            let m = &entry.meta;
            if m.producer_id != producer_id {
                return (ErrorCode::InvalidProducerIdMapping, None);
            }
            if producer_epoch != m.producer_epoch {
                return (ErrorCode::ProducerFenced, None);
            }
            if entry.pending.is_some() {
                return (ErrorCode::ConcurrentTransactions, None);
            }
            let error = match (m.state, commit) {
                (TxnState::Ongoing, _) => ErrorCode::None,
                (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => return (ErrorCode::None, None),
                (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => ErrorCode::ConcurrentTransactions,
                _ => ErrorCode::InvalidTxnState,
            };
            if error != ErrorCode::None {
                return (error, None);
            }
            let transit = TxnMeta {
                state: if commit {
                    TxnState::PrepareCommit
                } else {
                    TxnState::PrepareAbort
                },
                last_update_ms: now,
                ..m.clone()
            };
            match self.begin_write(&mut state, id, transit.clone()) {
                Ok(w) => (epoch, w, transit),
                Err(e) => return (e, None),
            }
        };
        match self.finish_write(id, epoch, write).await {
            ErrorCode::None => (ErrorCode::None, Some(self.job(id, &transit, epoch, Completion::Client))),
            error => (error, None),
        }
    }

    fn describe(&self, id: &str) -> Result<TransactionDescription, ErrorCode> {
        if id.is_empty() {
            return Err(ErrorCode::InvalidRequest);
        }
        let state = self.lock();
        self.check(&state, id)?;
        let Some(entry) = state.txns.get(id) else {
            return Err(ErrorCode::TransactionalIdNotFound);
        };
        let m = &entry.meta;
        if m.state == TxnState::Dead {
            return Err(ErrorCode::TransactionalIdNotFound);
        }
        Ok(TransactionDescription {
            transactional_id: id.to_string(),
            coordinator: self.broker,
            state: m.state,
            producer_id: m.producer_id,
            producer_epoch: m.producer_epoch,
            timeout_ms: m.timeout_ms,
            start_time_ms: m.start_ms,
            partitions: m.partitions.iter().cloned().collect(),
        })
    }

    fn list(&self, states: &[TxnState], producer_ids: &[i64]) -> Vec<TransactionListing> {
        let state = self.lock();
        state
            .txns
            .iter()
            .filter(|(id, _)| self.check(&state, id).is_ok())
            .filter(|(_, e)| e.meta.state != TxnState::Dead)
            .filter(|(_, e)| states.is_empty() || states.contains(&e.meta.state))
            .filter(|(_, e)| producer_ids.is_empty() || producer_ids.contains(&e.meta.producer_id))
            .map(|(id, e)| TransactionListing {
                transactional_id: id.clone(),
                producer_id: e.meta.producer_id,
                state: e.meta.state,
                start_time_ms: e.meta.start_ms,
            })
            .collect()
    }

    // ---- timers ----------------------------------------------------------------------

    /// Kafka's `abortTimedOutTransactions`: the Ongoing transactions older than their timeout,
    /// fenced (epoch bump) and aborted. Returns the marker jobs to run.
    pub(crate) async fn abort_timed_out(&self) -> Vec<MarkerJob> {
        let now = self.wall.now_ms();
        let timed_out = |e: &Entry| {
            e.pending.is_none()
                && e.meta.state == TxnState::Ongoing
                && e.meta.start_ms.saturating_add(i64::from(e.meta.timeout_ms)) <= now
        };
        let candidates: Vec<String> = {
            let state = self.lock();
            state
                .txns
                .iter()
                .filter(|(id, e)| self.check(&state, id).is_ok() && timed_out(e))
                .map(|(id, _)| id.clone())
                .collect()
        };
        let mut jobs = Vec::new();
        for id in candidates {
            // Checked again: the producer may have ended it meanwhile.
            let (epoch, write, transit) = {
                let mut state = self.lock();
                let Ok(epoch) = self.check(&state, &id) else { continue };
                let Some(transit) = state
                    .txns
                    .get(&id)
                    .filter(|e| timed_out(e))
                    .map(|e| fenced(&e.meta, now))
                else {
                    continue;
                };
                match self.begin_write(&mut state, &id, transit.clone()) {
                    Ok(w) => (epoch, w, transit),
                    Err(error) => {
                        tracing::warn!(broker = self.broker, transactional_id = %id, %error, "could not abort a timed-out transaction");
                        continue;
                    }
                }
            };
            match self.finish_write(&id, epoch, write).await {
                ErrorCode::None => {
                    tracing::info!(broker = self.broker, transactional_id = %id, "aborting a transaction that timed out");
                    jobs.push(self.job(&id, &transit, epoch, Completion::TimedOut));
                }
                error => {
                    tracing::warn!(broker = self.broker, transactional_id = %id, %error, "could not abort a timed-out transaction")
                }
            }
        }
        jobs
    }

    /// Kafka's transactional id expiration: ids with no transaction that have not been
    /// touched for `transactional.id.expiration.ms` are removed (a tombstone is written).
    pub(crate) async fn expire_ids(&self) {
        let now = self.wall.now_ms();
        let horizon = i64::try_from(self.expiration_ms).unwrap_or(i64::MAX);
        let expired: Vec<(String, TxnMeta)> = {
            let state = self.lock();
            state
                .txns
                .iter()
                .filter(|(id, _)| self.check(&state, id).is_ok())
                .filter(|(_, e)| {
                    e.pending.is_none()
                        && matches!(
                            e.meta.state,
                            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
                        )
                        && now.saturating_sub(e.meta.last_update_ms) >= horizon
                })
                .map(|(id, e)| {
                    (
                        id.clone(),
                        TxnMeta {
                            state: TxnState::Dead,
                            ..e.meta.clone()
                        },
                    )
                })
                .collect()
        };
        for (id, transit) in expired {
            match self.transition(&id, transit).await {
                ErrorCode::None => {
                    tracing::info!(broker = self.broker, transactional_id = %id, "transactional id expired")
                }
                error => {
                    tracing::warn!(broker = self.broker, transactional_id = %id, %error, "could not expire a transactional id")
                }
            }
        }
    }

    // ---- markers ---------------------------------------------------------------------

    /// Writes the markers of a prepared transaction to each of its partitions (retrying
    /// until each is written or this coordinator lost the partition), then the Complete*
    /// record. Kafka's `TransactionMarkerChannelManager` and `completeSendMarkersForTxnId`.
    pub(crate) async fn complete(self: Arc<Self>, job: MarkerJob) {
        let job = Arc::new(job);
        let mut sends = tokio::task::JoinSet::new();
        for tp in job.partitions.clone() {
            let me = Arc::clone(&self);
            let job = Arc::clone(&job);
            sends.spawn(async move { me.send_marker(&job, &tp).await });
        }
        let mut abandoned = false;
        while let Some(outcome) = sends.join_next().await {
            if !matches!(outcome, Ok(MarkerOutcome::Written)) {
                abandoned = true;
            }
        }
        if abandoned {
            tracing::info!(broker = self.broker, transactional_id = %job.transactional_id, "markers abandoned: no longer this coordinator's, or fenced");
            return;
        }
        loop {
            if !self.serving(job.txn_partition, job.coordinator_epoch) {
                return;
            }
            let transit = {
                let state = self.lock();
                let Some(entry) = state.txns.get(&job.transactional_id) else {
                    return;
                };
                let m = &entry.meta;
                let prepared = if job.commit {
                    TxnState::PrepareCommit
                } else {
                    TxnState::PrepareAbort
                };
                if m.state != prepared || m.producer_id != job.producer_id || m.producer_epoch != job.producer_epoch {
                    return;
                }
                if entry.pending.is_some() {
                    None
                } else {
                    Some(TxnMeta {
                        state: if job.commit {
                            TxnState::CompleteCommit
                        } else {
                            TxnState::CompleteAbort
                        },
                        partitions: BTreeSet::new(),
                        last_update_ms: self.wall.now_ms(),
                        ..m.clone()
                    })
                }
            };
            let error = match transit {
                Some(transit) => self.transition(&job.transactional_id, transit).await,
                None => ErrorCode::ConcurrentTransactions,
            };
            match error {
                ErrorCode::None => break,
                ErrorCode::NotCoordinator => return,
                error => {
                    tracing::debug!(broker = self.broker, transactional_id = %job.transactional_id, %error, "completing the transaction; retrying");
                    self.clock.sleep(RETRY_BACKOFF).await;
                }
            }
        }
        let (transactional_id, producer_id) = (job.transactional_id.clone(), job.producer_id);
        let partitions = job.partitions.len();
        self.events.publish(match (job.commit, job.why) {
            (true, _) => EventKind::TxnCommitted {
                transactional_id,
                producer_id,
                partitions,
            },
            (false, Completion::TimedOut) => EventKind::TxnTimedOut {
                transactional_id,
                producer_id,
                partitions,
            },
            (false, _) => EventKind::TxnAborted {
                transactional_id,
                producer_id,
                partitions,
            },
        });
    }

    async fn send_marker(&self, job: &MarkerJob, tp: &TopicPartition) -> MarkerOutcome {
        loop {
            if !self.serving(job.txn_partition, job.coordinator_epoch) {
                return MarkerOutcome::Abandoned;
            }
            let leader = match self.controller.image().partition(tp) {
                // The topic is gone: nothing to mark (Kafka drops such markers).
                None => return MarkerOutcome::Written,
                Some(p) => p.leader,
            };
            if leader != NO_LEADER {
                let request = Request::WriteTxnMarker {
                    tp: tp.clone(),
                    producer_id: job.producer_id,
                    producer_epoch: job.producer_epoch,
                    coordinator_epoch: job.coordinator_epoch,
                    commit: job.commit,
                    timeout_ms: MARKER_TIMEOUT.as_millis() as u64,
                };
                let response = self
                    .network
                    .call(
                        NodeId::Broker(self.broker),
                        NodeId::Broker(leader),
                        request,
                        MARKER_TIMEOUT + Duration::from_secs(1),
                    )
                    .await;
                if let Ok(Response::WriteTxnMarker { error, .. }) = response {
                    match error {
                        ErrorCode::None | ErrorCode::UnknownProducerId | ErrorCode::InvalidProducerIdMapping => {
                            return MarkerOutcome::Written;
                        }
                        ErrorCode::InvalidProducerEpoch | ErrorCode::TransactionCoordinatorFenced => {
                            tracing::warn!(broker = self.broker, %tp, %error, transactional_id = %job.transactional_id, "marker refused");
                            return MarkerOutcome::Abandoned;
                        }
                        error => {
                            tracing::debug!(broker = self.broker, %tp, %error, "marker not written; retrying");
                        }
                    }
                }
            }
            self.clock.sleep(RETRY_BACKOFF).await;
        }
    }
}

/// Kafka's `prepareFenceProducerEpoch` followed by the abort it leads to: PrepareAbort with
/// the epoch bumped, so the fenced instance's requests and batches are refused.
fn fenced(m: &TxnMeta, now: i64) -> TxnMeta {
    TxnMeta {
        producer_epoch: if m.producer_epoch < i16::MAX {
            m.producer_epoch + 1
        } else {
            m.producer_epoch
        },
        last_producer_epoch: -1,
        state: TxnState::PrepareAbort,
        last_update_ms: now,
        ..m.clone()
    }
}
