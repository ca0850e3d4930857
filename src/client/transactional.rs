//! A transactional producer, in process (KIP-98, Kafka's `TransactionManager` reduced to one
//! batch in flight): `init` registers the `transactional.id` with its coordinator (which
//! fences any older instance and aborts what it left open), then each transaction is
//! `begin`, `send` batches (the partition is added to the transaction before its first
//! batch), optionally `send_offsets` for a consume-transform-produce loop, and `commit` or
//! `abort`.
//!
//! Each call waits for its answer, so a partition never has more than one batch in flight and
//! a retried batch is resent byte for byte (the leader recognises it by its sequence). Errors
//! follow the Java client's three kinds: retriable ones are retried on the cluster's clock
//! until `max_block`; after an abortable one the transaction must be aborted; a fatal one
//! (fenced by a newer instance, or a broken state) ends the producer.
//!
//! Used by the demo workload, the simulation and the tests; `kdeck serve`'s clients bring
//! their own.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::engine::{Acks, Cluster, ErrorCode, GroupRequest, GroupResponse, TopicPartition, TxnRequest, TxnResponse};
use crate::storage::records::{self, Compression};

/// Wait between retries of a coordinator call (Kafka's `retry.backoff.ms`).
const RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// One request's limit (`request.timeout.ms`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxnError {
    /// A newer producer with the same transactional id took over (PRODUCER_FENCED,
    /// INVALID_PRODUCER_EPOCH): this one can do nothing more.
    #[error("fenced by a newer producer with the same transactional id ({0})")]
    Fenced(ErrorCode),
    /// The transaction cannot commit; `abort` it and start again.
    #[error("the transaction must be aborted: {0}")]
    Abortable(ErrorCode),
    /// An error no retry or abort can mend.
    #[error("the transactional producer failed: {0}")]
    Fatal(ErrorCode),
    /// Retriable errors went on for longer than `max_block`.
    #[error("gave up after {0:?} of retriable errors (last: {1})")]
    Timeout(Duration, ErrorCode),
    /// Called in the wrong state (begin twice, send outside a transaction).
    #[error("{0}")]
    Usage(&'static str),
}

/// Settings, named after Kafka's producer settings.
#[derive(Debug, Clone)]
pub struct TxnConfig {
    pub transactional_id: String,
    /// `transaction.timeout.ms` (Kafka's default 60000).
    pub transaction_timeout_ms: i32,
    /// `max.block.ms`: how long retriable errors are retried.
    pub max_block: Duration,
    pub compression: Compression,
}

impl TxnConfig {
    pub fn new(transactional_id: impl Into<String>) -> TxnConfig {
        TxnConfig {
            transactional_id: transactional_id.into(),
            transaction_timeout_ms: 60_000,
            max_block: Duration::from_secs(60),
            compression: Compression::None,
        }
    }
}

/// What a retried call learned: done, try again, or stop with this error.
enum Step<T> {
    Done(T),
    Retry(ErrorCode),
    Fail(TxnError),
}

pub struct TransactionalProducer {
    cluster: Cluster,
    config: TxnConfig,
    producer_id: i64,
    epoch: i16,
    /// The next sequence per partition under the current producer id and epoch.
    sequences: BTreeMap<TopicPartition, i32>,
    in_transaction: bool,
    /// Partitions added to the open transaction.
    added: BTreeSet<TopicPartition>,
    /// Groups whose offsets partition is in the open transaction.
    groups: BTreeSet<String>,
    /// Set by an abortable error: only `abort` may follow.
    must_abort: Option<ErrorCode>,
    /// Set by a fatal error: nothing may follow.
    failed: Option<TxnError>,
    /// A batch failed with its fate unknown (it may still land): the abort is followed by an
    /// epoch bump, so that a late copy is refused (KIP-360, as the Java client does).
    bump_epoch: bool,
}

/// Errors a coordinator call is retried on (the coordinator moved, is loading, or is still
/// completing the previous transaction).
fn coordinator_retriable(error: ErrorCode) -> bool {
    matches!(
        error,
        ErrorCode::CoordinatorNotAvailable
            | ErrorCode::NotCoordinator
            | ErrorCode::CoordinatorLoadInProgress
            | ErrorCode::ConcurrentTransactions
            | ErrorCode::RequestTimedOut
            | ErrorCode::NetworkException
    )
}

fn fenced(error: ErrorCode) -> bool {
    matches!(error, ErrorCode::ProducerFenced | ErrorCode::InvalidProducerEpoch)
}

impl TransactionalProducer {
    /// InitProducerId with the transactional id: fences older instances and completes (aborts)
    /// what they left open.
    pub async fn init(cluster: Cluster, config: TxnConfig) -> Result<TransactionalProducer, TxnError> {
        let mut producer = TransactionalProducer {
            cluster,
            config,
            producer_id: -1,
            epoch: -1,
            sequences: BTreeMap::new(),
            in_transaction: false,
            added: BTreeSet::new(),
            groups: BTreeSet::new(),
            must_abort: None,
            failed: None,
            bump_epoch: false,
        };
        let (id, epoch) = producer.init_producer_id(-1, -1).await?;
        producer.producer_id = id;
        producer.epoch = epoch;
        Ok(producer)
    }

    /// InitProducerId: a first one (-1, -1), or a bump of the current id and epoch (KIP-360).
    async fn init_producer_id(&self, producer_id: i64, producer_epoch: i16) -> Result<(i64, i16), TxnError> {
        self.retrying(|p| async move {
            let request = TxnRequest::InitProducerId {
                transactional_id: p.config.transactional_id.clone(),
                transaction_timeout_ms: p.config.transaction_timeout_ms,
                producer_id,
                producer_epoch,
            };
            match p.coordinator(request).await {
                Ok(TxnResponse::InitProducerId(Ok(identity))) => Step::Done(identity),
                Ok(TxnResponse::InitProducerId(Err(e))) | Err(e) => classify(e, false),
                Ok(_) => Step::Fail(TxnError::Fatal(ErrorCode::UnknownServerError)),
            }
        })
        .await
    }

    pub fn producer_id(&self) -> i64 {
        self.producer_id
    }

    pub fn epoch(&self) -> i16 {
        self.epoch
    }

    pub fn transactional_id(&self) -> &str {
        &self.config.transactional_id
    }

    pub fn begin(&mut self) -> Result<(), TxnError> {
        self.usable()?;
        if self.in_transaction {
            return Err(TxnError::Usage("a transaction is already open"));
        }
        self.in_transaction = true;
        Ok(())
    }

    /// Writes `records` (key, value) to `tp` as one transactional batch; the base offset.
    pub async fn send(
        &mut self,
        tp: &TopicPartition,
        records: &[(Option<Bytes>, Option<Bytes>)],
    ) -> Result<i64, TxnError> {
        self.in_open_transaction()?;
        if records.is_empty() {
            return Err(TxnError::Usage("a batch needs at least one record"));
        }
        if !self.added.contains(tp) {
            self.add_partition(tp).await?;
        }
        let sequence = self.sequences.get(tp).copied().unwrap_or(0);
        let now = self.cluster.wall_now_ms();
        let batch: Vec<records::Record> = records
            .iter()
            .enumerate()
            .map(|(i, (key, value))| {
                let mut r = records::record(i as i64, now, key.clone(), value.clone());
                r.transactional = true;
                r.producer_id = self.producer_id;
                r.producer_epoch = self.epoch;
                r.sequence = sequence.wrapping_add(i as i32);
                r
            })
            .collect();
        let bytes = match records::encode_batch(&batch, self.config.compression) {
            Ok(b) => b.to_vec(),
            Err(_) => return Err(self.abortable(ErrorCode::CorruptMessage)),
        };
        let tp_owned = tp.clone();
        let outcome = self
            .retrying(|p| {
                let bytes = bytes.clone();
                let tp = tp_owned.clone();
                async move {
                    let id = &p.config.transactional_id;
                    match p
                        .cluster
                        .produce_transactional(&tp, bytes, id, Acks::All, REQUEST_TIMEOUT)
                        .await
                    {
                        Ok(offset) => Step::Done(offset),
                        Err(e) if fenced(e) => Step::Fail(TxnError::Fenced(e)),
                        Err(e) if e.is_retriable() => Step::Retry(e),
                        Err(e) => Step::Fail(TxnError::Abortable(e)),
                    }
                }
            })
            .await;
        match outcome {
            Ok(offset) => {
                let next = sequence.wrapping_add(records.len() as i32);
                self.sequences.insert(tp.clone(), if next < 0 { 0 } else { next });
                Ok(offset)
            }
            Err(e) => {
                // The batch may have been appended, or may still be: the transaction cannot
                // commit, and the next one starts under a new epoch.
                self.bump_epoch = true;
                if let TxnError::Timeout(..) = e {
                    self.must_abort = Some(ErrorCode::RequestTimedOut);
                }
                Err(self.failure(e))
            }
        }
    }

    /// Adds the group's offsets to the transaction (AddOffsetsToTxn, then TxnOffsetCommit):
    /// they become the group's committed offsets if and when the transaction commits.
    pub async fn send_offsets(&mut self, group: &str, offsets: &[(TopicPartition, i64)]) -> Result<(), TxnError> {
        self.in_open_transaction()?;
        if !self.groups.contains(group) {
            let group_owned = group.to_string();
            let added = self
                .retrying(|p| {
                    let group = group_owned.clone();
                    async move {
                        let request = TxnRequest::AddOffsets {
                            transactional_id: p.config.transactional_id.clone(),
                            producer_id: p.producer_id,
                            producer_epoch: p.epoch,
                            group_id: group,
                        };
                        match p.coordinator(request).await {
                            Ok(TxnResponse::AddOffsets(ErrorCode::None)) => Step::Done(()),
                            Ok(TxnResponse::AddOffsets(e)) | Err(e) => classify(e, true),
                            Ok(_) => Step::Fail(TxnError::Fatal(ErrorCode::UnknownServerError)),
                        }
                    }
                })
                .await;
            added.map_err(|e| self.failure(e))?;
            self.groups.insert(group.to_string());
        }
        let group_owned = group.to_string();
        let offsets = offsets.to_vec();
        let committed = self
            .retrying(|p| {
                let group = group_owned.clone();
                let offsets = offsets.clone();
                async move {
                    let request = GroupRequest::TxnOffsetCommit {
                        group_id: group.clone(),
                        transactional_id: p.config.transactional_id.clone(),
                        producer_id: p.producer_id,
                        producer_epoch: p.epoch,
                        generation: -1,
                        member_id: String::new(),
                        group_instance_id: None,
                        offsets,
                    };
                    match p.cluster.group_request(&group, request, REQUEST_TIMEOUT).await {
                        Ok(GroupResponse::TxnOffsetCommit(ErrorCode::None)) => Step::Done(()),
                        Ok(GroupResponse::TxnOffsetCommit(e)) | Err(e) => classify(e, true),
                        Ok(_) => Step::Fail(TxnError::Fatal(ErrorCode::UnknownServerError)),
                    }
                }
            })
            .await;
        committed.map_err(|e| self.failure(e))
    }

    pub async fn commit(&mut self) -> Result<(), TxnError> {
        self.in_open_transaction()?;
        self.end(true).await
    }

    /// Aborts the open transaction (also after an abortable error).
    pub async fn abort(&mut self) -> Result<(), TxnError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if !self.in_transaction {
            return Err(TxnError::Usage("no transaction is open"));
        }
        self.end(false).await
    }

    async fn end(&mut self, commit: bool) -> Result<(), TxnError> {
        // Nothing was added: the coordinator knows of no transaction (Kafka's client sends
        // no EndTxn then either).
        if self.added.is_empty() && self.groups.is_empty() {
            self.finish();
            return Ok(());
        }
        let ended = self
            .retrying(|p| async move {
                let request = TxnRequest::EndTxn {
                    transactional_id: p.config.transactional_id.clone(),
                    producer_id: p.producer_id,
                    producer_epoch: p.epoch,
                    commit,
                };
                match p.coordinator(request).await {
                    Ok(TxnResponse::EndTxn(ErrorCode::None)) => Step::Done(()),
                    Ok(TxnResponse::EndTxn(e)) | Err(e) => classify(e, false),
                    Ok(_) => Step::Fail(TxnError::Fatal(ErrorCode::UnknownServerError)),
                }
            })
            .await;
        if let Err(e) = ended {
            return Err(self.failure(e));
        }
        self.finish();
        if !commit && self.bump_epoch {
            let bumped = self.init_producer_id(self.producer_id, self.epoch).await;
            let (id, epoch) = bumped.map_err(|e| self.failure(e))?;
            self.producer_id = id;
            self.epoch = epoch;
            self.sequences.clear();
            self.bump_epoch = false;
        }
        Ok(())
    }

    fn finish(&mut self) {
        self.in_transaction = false;
        self.added.clear();
        self.groups.clear();
        self.must_abort = None;
    }

    async fn add_partition(&mut self, tp: &TopicPartition) -> Result<(), TxnError> {
        let tp_owned = tp.clone();
        let added = self
            .retrying(|p| {
                let tp = tp_owned.clone();
                async move {
                    let request = TxnRequest::AddPartitions {
                        transactional_id: p.config.transactional_id.clone(),
                        producer_id: p.producer_id,
                        producer_epoch: p.epoch,
                        partitions: vec![tp.clone()],
                    };
                    match p.coordinator(request).await {
                        Ok(TxnResponse::AddPartitions(Ok(results))) => {
                            match results.iter().find(|(t, _)| *t == tp).map(|(_, e)| *e) {
                                None | Some(ErrorCode::None) => Step::Done(()),
                                Some(e) => classify(e, true),
                            }
                        }
                        Ok(TxnResponse::AddPartitions(Err(e))) | Err(e) => classify(e, true),
                        Ok(_) => Step::Fail(TxnError::Fatal(ErrorCode::UnknownServerError)),
                    }
                }
            })
            .await;
        added.map_err(|e| self.failure(e))?;
        self.added.insert(tp.clone());
        Ok(())
    }

    async fn coordinator(&self, request: TxnRequest) -> Result<TxnResponse, ErrorCode> {
        self.cluster
            .txn_request(&self.config.transactional_id, request, REQUEST_TIMEOUT)
            .await
    }

    /// Runs `call` until it is done or fails, retrying on the cluster's clock for up to
    /// `max_block`.
    async fn retrying<'a, T, F, Fut>(&'a self, call: F) -> Result<T, TxnError>
    where
        F: Fn(&'a Self) -> Fut,
        Fut: std::future::Future<Output = Step<T>> + 'a,
    {
        let clock = self.cluster.clock().clone();
        let deadline: Instant = clock.now() + self.config.max_block;
        loop {
            match call(self).await {
                Step::Done(value) => return Ok(value),
                Step::Fail(e) => return Err(e),
                Step::Retry(last) => {
                    if clock.now() >= deadline {
                        return Err(TxnError::Timeout(self.config.max_block, last));
                    }
                    clock.sleep(RETRY_BACKOFF).await;
                }
            }
        }
    }

    fn usable(&self) -> Result<(), TxnError> {
        match &self.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn in_open_transaction(&self) -> Result<(), TxnError> {
        self.usable()?;
        if !self.in_transaction {
            return Err(TxnError::Usage("no transaction is open: begin one first"));
        }
        if let Some(e) = self.must_abort {
            return Err(TxnError::Abortable(e));
        }
        Ok(())
    }

    fn abortable(&mut self, error: ErrorCode) -> TxnError {
        self.must_abort = Some(error);
        TxnError::Abortable(error)
    }

    /// Records what an error means for the producer's state, and returns it.
    fn failure(&mut self, error: TxnError) -> TxnError {
        match &error {
            TxnError::Abortable(e) => self.must_abort = Some(*e),
            TxnError::Fenced(_) | TxnError::Fatal(_) => self.failed = Some(error.clone()),
            TxnError::Timeout(..) | TxnError::Usage(_) => {}
        }
        error
    }
}

/// A coordinator's error: retried, fenced, abortable (in a transaction) or fatal.
fn classify<T>(error: ErrorCode, in_transaction: bool) -> Step<T> {
    if coordinator_retriable(error) {
        Step::Retry(error)
    } else if fenced(error) {
        Step::Fail(TxnError::Fenced(error))
    } else if in_transaction && !matches!(error, ErrorCode::InvalidTxnState | ErrorCode::InvalidProducerIdMapping) {
        Step::Fail(TxnError::Abortable(error))
    } else {
        Step::Fail(TxnError::Fatal(error))
    }
}
