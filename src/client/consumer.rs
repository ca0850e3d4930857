//! Kafka's consumer, in process: manual assignment or group subscription (classic protocol:
//! JoinGroup, SyncGroup with the leader running the assignor, heartbeats in the background),
//! long-poll fetches from partition leaders, positions, seeks, auto and explicit commits,
//! `auto.offset.reset`, `isolation.level` (read_committed drops the records of aborted
//! transactions with the fetch answer's aborted list, as Kafka's Java consumer does).
//!
//! Rebalances are eager for `range` and `roundrobin` (everything is revoked, committed if
//! auto-commit is on, and reassigned). With `cooperative-sticky` a member keeps what it still
//! owns and rejoins at once when the assignment took partitions from it, so the partitions in
//! transit are handed over in the follow-up rebalance, as Kafka's cooperative protocol does.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use super::assignor::{self, Subscription};
use crate::engine::group::{IN_PROCESS_HOST, JoinGroupRequest};
use crate::engine::{
    AbortedTxn, Clock, Cluster, ErrorCode, FetchedRecords, GroupRequest, GroupResponse, IsolationLevel, OffsetSpec,
    TopicPartition,
};

/// How long a poll that could not fetch anything waits before trying again (Kafka's
/// `retry.backoff.ms` default).
const RETRY_BACKOFF: Duration = Duration::from_millis(100);
use crate::storage::records;

/// Kafka's consumer-side filter of aborted transactions (read_committed): a producer's
/// transactional records are dropped from the first offset of one of its aborted transactions
/// in the fetch answer's list until its ABORT marker.
struct AbortedFilter {
    /// Ordered by first offset; `None` for read_uncommitted (nothing is dropped).
    pending: Option<VecDeque<AbortedTxn>>,
    aborting: HashSet<i64>,
}

impl AbortedFilter {
    fn new(list: Option<Vec<AbortedTxn>>) -> Self {
        let pending = list.map(|mut l| {
            l.sort_by_key(|t| t.first_offset);
            VecDeque::from(l)
        });
        AbortedFilter {
            pending,
            aborting: HashSet::new(),
        }
    }

    /// Whether `record` belongs to an aborted transaction (markers pass: the caller skips them).
    fn drops(&mut self, record: &records::Record) -> bool {
        let Some(pending) = &mut self.pending else {
            return false;
        };
        while pending.front().is_some_and(|t| t.first_offset <= record.offset) {
            if let Some(t) = pending.pop_front() {
                self.aborting.insert(t.producer_id);
            }
        }
        if record.control {
            // An ABORT marker's key: version 0, type 0.
            if record.key.as_deref().is_some_and(|k| k.len() >= 4 && k[2..4] == [0, 0]) {
                self.aborting.remove(&record.producer_id);
            }
            return false;
        }
        record.transactional && self.aborting.contains(&record.producer_id)
    }
}

/// What to do when a partition has no committed offset or its position fell out of range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    Earliest,
    Latest,
    /// Report an error instead.
    None,
}

#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    pub group_id: Option<String>,
    pub auto_offset_reset: OffsetReset,
    pub enable_auto_commit: bool,
    pub auto_commit_interval_ms: u64,
    pub session_timeout_ms: u64,
    pub heartbeat_interval_ms: u64,
    /// `max.poll.interval.ms`, used as the rebalance timeout.
    pub rebalance_timeout_ms: u64,
    pub fetch_max_wait_ms: u64,
    pub max_partition_fetch_bytes: usize,
    pub max_poll_records: usize,
    /// Assignor protocol names in order of preference.
    pub assignors: Vec<String>,
    /// `client.id`: how the group's coordinator names this consumer (DescribeGroups).
    pub client_id: String,
    /// `group.instance.id` (KIP-345): a static member. Restarted within its session timeout
    /// it gets its partitions back without a rebalance; it does not leave the group on
    /// close, so its partitions wait for it until the session times out.
    pub group_instance_id: Option<String>,
    /// `isolation.level`: read_uncommitted (Kafka's default) or read_committed.
    pub isolation_level: IsolationLevel,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            group_id: None,
            auto_offset_reset: OffsetReset::Latest,
            enable_auto_commit: true,
            auto_commit_interval_ms: 5_000,
            session_timeout_ms: 10_000,
            heartbeat_interval_ms: 1_000,
            rebalance_timeout_ms: 30_000,
            fetch_max_wait_ms: 500,
            max_partition_fetch_bytes: 1 << 20,
            max_poll_records: 500,
            assignors: vec!["range".into(), "cooperative-sticky".into()],
            client_id: "kdeck".into(),
            group_instance_id: None,
            isolation_level: IsolationLevel::ReadUncommitted,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerRecord {
    /// Shared by the records of a partition, as the hot path hands out hundreds of thousands a
    /// second.
    pub topic: Arc<str>,
    pub partition: i32,
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
    /// The leader epoch its batch was written in (Kafka's `ConsumerRecord.leaderEpoch`).
    pub leader_epoch: Option<i32>,
    /// The producer that wrote its batch (-1: none).
    pub producer_id: i64,
    /// Written in a transaction.
    pub transactional: bool,
    /// A transaction marker (COMMIT `Some(true)`, ABORT `Some(false)`) instead of a record:
    /// handed out only by a consumer asked to with [`Consumer::deliver_markers`].
    pub marker: Option<bool>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConsumeError {
    #[error("no committed offset for {0} and auto.offset.reset is none")]
    NoOffset(TopicPartition),
    #[error("{0} is not assigned to this consumer")]
    NotAssigned(TopicPartition),
    #[error("group operation failed: {0:?}")]
    Group(ErrorCode),
    #[error("this consumer has no group.id")]
    NoGroup,
    #[error("another consumer joined with this consumer's group.instance.id {0}: this one is fenced")]
    Fenced(String),
}

/// Group membership: who we are in the current generation.
#[derive(Debug, Clone)]
struct Membership {
    member_id: String,
    generation: i32,
}

pub struct Consumer {
    cluster: Cluster,
    /// The cluster's clock: a frozen cluster's consumers wait.
    clock: Clock,
    config: ConsumerConfig,
    subscription: Option<Vec<String>>,
    assigned: Vec<TopicPartition>,
    /// The fetch position of each partition: where its next fetch starts, past the records
    /// still buffered. What the application has consumed is [`Consumer::position`].
    positions: HashMap<TopicPartition, i64>,
    /// Positions to resolve on the next poll.
    pending_resets: HashMap<TopicPartition, OffsetSpec>,
    membership: Option<Membership>,
    member_id: String,
    rejoin: Arc<AtomicBool>,
    /// The generation this member holds a stable assignment of (-1 while it joins): a
    /// heartbeat answer asks for a rejoin only for the generation it was sent for, as the
    /// Java consumer checks `generationUnchanged()`. A late answer for the generation just
    /// left would otherwise send the member straight back, and the others after it.
    heartbeat_generation: Arc<AtomicI32>,
    heartbeat: Option<JoinHandle<()>>,
    /// A newer member took over this static member's `group.instance.id`: fatal, as in
    /// Kafka's consumer (FencedInstanceIdException).
    fenced: Arc<AtomicBool>,
    last_commit: Instant,
    buffered: VecDeque<ConsumerRecord>,
    /// Long polls still out, kept across polls (as the Java consumer keeps its fetch sessions):
    /// a partition whose data arrives later is not asked again, so no broker holds abandoned
    /// long polls, and a record arriving between two polls is already on its way.
    fetches: JoinSet<FetchOutcome>,
    /// The offset each partition's outstanding fetch asked for, and its task.
    in_flight: HashMap<TopicPartition, (i64, tokio::task::Id)>,
    /// Told of every commit's outcome, automatic ones too (Java's `OffsetCommitCallback`,
    /// librdkafka's `offset_commit_cb`).
    on_commit: Option<CommitCallback>,
    /// Hand out transaction markers among the records (a console shows how transactions end).
    markers: bool,
}

/// What a commit asked for and how it ended: `Err` with the error the coordinator gave or
/// the one the request met on the way (a timeout leaves the commit's fate unknown).
#[derive(Debug, Clone, PartialEq)]
pub struct CommitOutcome {
    pub group: String,
    pub generation: i32,
    pub offsets: Vec<(TopicPartition, i64)>,
    pub result: Result<(), ErrorCode>,
}

pub type CommitCallback = Arc<dyn Fn(&CommitOutcome) + Send + Sync>;

type FetchOutcome = (TopicPartition, i64, Result<FetchedRecords, ErrorCode>);

impl Consumer {
    pub fn new(cluster: Cluster, config: ConsumerConfig) -> Self {
        let clock = cluster.clock().clone();
        Consumer {
            last_commit: clock.now(),
            clock,
            cluster,
            config,
            subscription: None,
            assigned: Vec::new(),
            positions: HashMap::new(),
            pending_resets: HashMap::new(),
            membership: None,
            member_id: String::new(),
            rejoin: Arc::new(AtomicBool::new(false)),
            heartbeat_generation: Arc::new(AtomicI32::new(assignor::DEFAULT_GENERATION)),
            heartbeat: None,
            fenced: Arc::new(AtomicBool::new(false)),
            buffered: VecDeque::new(),
            fetches: JoinSet::new(),
            in_flight: HashMap::new(),
            on_commit: None,
            markers: false,
        }
    }

    /// Hands out the transaction markers too, in their place among the records (with
    /// [`ConsumerRecord::marker`] set); other control records stay hidden.
    pub fn deliver_markers(&mut self) {
        self.markers = true;
    }

    /// Calls `callback` with the outcome of every commit from now on, automatic ones and
    /// the one [`Consumer::close`] makes included.
    pub fn on_commit(&mut self, callback: CommitCallback) {
        self.on_commit = Some(callback);
    }

    /// Manual assignment, outside group management.
    pub fn assign(&mut self, partitions: Vec<TopicPartition>) {
        self.subscription = None;
        self.set_assignment(partitions);
    }

    /// Group management: the group's members share the partitions of `topics`.
    pub fn subscribe(&mut self, mut topics: Vec<String>) {
        // No topic can have a longer name; the consumer protocol could not even carry one.
        topics.retain(|t| !t.is_empty() && t.len() <= 249);
        self.subscription = Some(topics);
        self.rejoin.store(true, Ordering::SeqCst);
    }

    pub fn assignment(&self) -> &[TopicPartition] {
        &self.assigned
    }

    /// The offset of the next record poll will hand out for `tp`, as Kafka's `position()`:
    /// the first buffered record's, else the fetch position. Commits store this, so records
    /// fetched but not yet returned are never committed (at least once).
    pub fn position(&self, tp: &TopicPartition) -> Option<i64> {
        self.buffered
            .iter()
            .find(|r| r.partition == tp.partition && *r.topic == *tp.topic)
            .map(|r| r.offset)
            .or_else(|| self.positions.get(tp).copied())
    }

    pub fn generation(&self) -> Option<i32> {
        self.membership.as_ref().map(|m| m.generation)
    }

    pub fn seek(&mut self, tp: &TopicPartition, offset: i64) -> Result<(), ConsumeError> {
        if !self.assigned.contains(tp) {
            return Err(ConsumeError::NotAssigned(tp.clone()));
        }
        self.positions.insert(tp.clone(), offset);
        self.pending_resets.remove(tp);
        self.buffered
            .retain(|r| !(*r.topic == *tp.topic && r.partition == tp.partition));
        Ok(())
    }

    pub fn seek_to_beginning(&mut self, tp: &TopicPartition) -> Result<(), ConsumeError> {
        self.seek_lazily(tp, OffsetSpec::Earliest)
    }

    pub fn seek_to_end(&mut self, tp: &TopicPartition) -> Result<(), ConsumeError> {
        self.seek_lazily(tp, OffsetSpec::Latest)
    }

    fn seek_lazily(&mut self, tp: &TopicPartition, which: OffsetSpec) -> Result<(), ConsumeError> {
        if !self.assigned.contains(tp) {
            return Err(ConsumeError::NotAssigned(tp.clone()));
        }
        self.positions.remove(tp);
        self.pending_resets.insert(tp.clone(), which);
        self.buffered
            .retain(|r| !(*r.topic == *tp.topic && r.partition == tp.partition));
        Ok(())
    }

    /// Moves to the first record at or after `timestamp` (or the end when none).
    pub async fn seek_to_timestamp(&mut self, tp: &TopicPartition, timestamp: i64) -> Result<(), ConsumeError> {
        if !self.assigned.contains(tp) {
            return Err(ConsumeError::NotAssigned(tp.clone()));
        }
        match self.cluster.list_offset(tp, OffsetSpec::Timestamp(timestamp)).await {
            Ok(offset) if offset >= 0 => self.seek(tp, offset),
            Ok(_) => self.seek_to_end(tp),
            Err(e) => Err(ConsumeError::Group(e)),
        }
    }

    fn set_assignment(&mut self, partitions: Vec<TopicPartition>) {
        self.positions.retain(|tp, _| partitions.contains(tp));
        self.pending_resets.retain(|tp, _| partitions.contains(tp));
        self.buffered.retain(|r| {
            partitions
                .iter()
                .any(|tp| *tp.topic == *r.topic && tp.partition == r.partition)
        });
        self.assigned = partitions;
    }

    /// Records from the assigned partitions, waiting up to `timeout` for some.
    pub async fn poll(&mut self, timeout: Duration) -> Result<Vec<ConsumerRecord>, ConsumeError> {
        let deadline = self.clock.now() + timeout;
        loop {
            self.check_fenced()?;
            if self.subscription.is_some() && (self.membership.is_none() || self.rejoin.load(Ordering::SeqCst)) {
                self.join_group(deadline).await?;
            }
            self.maybe_auto_commit().await;
            self.resolve_positions().await?;
            if !self.buffered.is_empty() {
                let n = self.buffered.len().min(self.config.max_poll_records);
                let records = self.buffered.drain(..n).collect();
                // A backlog's fetches fill the buffer with tens of thousands of records; once
                // it drains, give the memory back rather than keep the largest buffer ever.
                let keep = self.config.max_poll_records.max(1024);
                if self.buffered.capacity() > 4 * keep.max(self.buffered.len()) {
                    self.buffered.shrink_to(keep.max(self.buffered.len()));
                }
                return Ok(records);
            }
            let now = self.clock.now();
            if now >= deadline {
                return Ok(Vec::new());
            }
            let wait = (deadline - now).min(Duration::from_millis(self.config.fetch_max_wait_ms));
            self.fetch_once(wait).await?;
            // Nothing came and no long poll is out: no partition is assigned, none has a
            // position yet (the coordinator is moving) or every fetch failed at once (no
            // leader). Like Kafka's consumer (`retry.backoff.ms`), wait before asking again
            // rather than spinning until the poll's timeout.
            if self.buffered.is_empty() && self.fetches.is_empty() {
                self.clock.sleep(wait.min(RETRY_BACKOFF)).await;
            }
        }
    }

    fn check_fenced(&self) -> Result<(), ConsumeError> {
        if self.fenced.load(Ordering::SeqCst) {
            return Err(ConsumeError::Fenced(
                self.config.group_instance_id.clone().unwrap_or_default(),
            ));
        }
        Ok(())
    }

    /// Waits up to `wait` for records: every assigned partition with a position has one long
    /// poll out (started now unless one is already out for its position); returns once any
    /// brings records, or when `wait` passes.
    async fn fetch_once(&mut self, wait: Duration) -> Result<(), ConsumeError> {
        for tp in &self.assigned {
            let Some(&offset) = self.positions.get(tp) else {
                continue;
            };
            if self.in_flight.get(tp).is_some_and(|(asked, _)| *asked == offset) {
                continue;
            }
            let (cluster, tp, max) = (self.cluster.clone(), tp.clone(), self.config.max_partition_fetch_bytes);
            let isolation = self.config.isolation_level;
            let task = self.fetches.spawn({
                let tp = tp.clone();
                async move {
                    let result = cluster.fetch_isolated(&tp, offset, max, wait, isolation).await;
                    (tp, offset, result)
                }
            });
            self.in_flight.insert(tp, (offset, task.id()));
        }
        let deadline = self.clock.now() + wait;
        while let Ok(Some(joined)) = self.clock.timeout_at(deadline, self.fetches.join_next_with_id()).await {
            let (tp, offset, result) = match joined {
                Ok((_, outcome)) => outcome,
                Err(e) => {
                    // The task is gone without its partition: forget it so the partition is
                    // asked again.
                    self.in_flight.retain(|_, (_, id)| *id != e.id());
                    continue;
                }
            };
            if self.in_flight.get(&tp).is_some_and(|(asked, _)| *asked == offset) {
                self.in_flight.remove(&tp);
            }
            // A rebalance or seek may have moved on while the fetch was out.
            if self.positions.get(&tp) != Some(&offset) {
                continue;
            }
            match result {
                Ok(data) => {
                    let topic: Arc<str> = Arc::from(tp.topic.as_str());
                    let mut next = offset;
                    let buffered = &mut self.buffered;
                    // The records before a batch that does not decode are handed out and the
                    // position stops at that batch, as in Kafka's consumer.
                    let batch_end = records::next_offset_after(&data.records);
                    let mut aborted = AbortedFilter::new(data.aborted_transactions);
                    let markers = self.markers;
                    let decoded = records::for_each_shared(data.records, |r| {
                        let dropped = aborted.drops(&r);
                        if r.offset < offset {
                            return;
                        }
                        if r.control {
                            // A marker's key: version, then type (0 ABORT, 1 COMMIT).
                            let kind = r.key.as_deref().and_then(|k| k.get(2..4)).map(|t| [t[0], t[1]]);
                            if let (true, Some([0, kind @ (0 | 1)])) = (markers, kind) {
                                buffered.push_back(ConsumerRecord {
                                    topic: Arc::clone(&topic),
                                    partition: tp.partition,
                                    offset: r.offset,
                                    timestamp: r.timestamp,
                                    key: None,
                                    value: None,
                                    headers: Vec::new(),
                                    leader_epoch: (r.partition_leader_epoch >= 0).then_some(r.partition_leader_epoch),
                                    producer_id: r.producer_id,
                                    transactional: true,
                                    marker: Some(kind == 1),
                                });
                            }
                            return;
                        }
                        if dropped {
                            return;
                        }
                        next = r.offset + 1;
                        buffered.push_back(ConsumerRecord {
                            topic: Arc::clone(&topic),
                            partition: tp.partition,
                            offset: r.offset,
                            timestamp: r.timestamp,
                            key: r.key,
                            value: r.value,
                            headers: r
                                .headers
                                .into_iter()
                                .map(|(k, v)| (String::from_utf8_lossy(k.as_bytes()).into_owned(), v))
                                .collect(),
                            leader_epoch: (r.partition_leader_epoch >= 0).then_some(r.partition_leader_epoch),
                            producer_id: r.producer_id,
                            transactional: r.transactional,
                            marker: None,
                        });
                    });
                    match decoded {
                        // Past the whole last batch, also when compaction left no record
                        // at its end (a fetch of it would otherwise come back for ever).
                        Ok(()) => next = next.max(batch_end.unwrap_or(next)),
                        Err(e) => tracing::warn!(%tp, offset = next, error = %e, "undecodable batch"),
                    }
                    self.positions.insert(tp, next);
                    if !self.buffered.is_empty() {
                        // Hand out what arrived; the other long polls stay out for the next poll.
                        break;
                    }
                }
                Err(ErrorCode::OffsetOutOfRange) => {
                    let reset = match self.config.auto_offset_reset {
                        OffsetReset::Earliest => OffsetSpec::Earliest,
                        OffsetReset::Latest => OffsetSpec::Latest,
                        OffsetReset::None => return Err(ConsumeError::NoOffset(tp)),
                    };
                    self.positions.remove(&tp);
                    self.pending_resets.insert(tp, reset);
                }
                // Leadership moving, a broker down: the next poll retries.
                Err(_) => {}
            }
        }
        Ok(())
    }

    /// Positions for partitions that have none: the committed offset, else the reset policy.
    async fn resolve_positions(&mut self) -> Result<(), ConsumeError> {
        let missing: Vec<TopicPartition> = self
            .assigned
            .iter()
            .filter(|tp| !self.positions.contains_key(*tp))
            .cloned()
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut committed = HashMap::new();
        if let Some(group) = &self.config.group_id {
            let unresolved: Vec<TopicPartition> = missing
                .iter()
                .filter(|tp| !self.pending_resets.contains_key(*tp))
                .cloned()
                .collect();
            if !unresolved.is_empty() {
                // A read_committed consumer asks for stable offsets, as Kafka's does: while a
                // transaction has offsets pending for a partition, starting from the offset
                // committed before it would read that transaction's input again.
                let request = GroupRequest::OffsetFetch {
                    group_id: group.clone(),
                    partitions: Some(unresolved),
                    require_stable: self.config.isolation_level == IsolationLevel::ReadCommitted,
                };
                let answer = self.cluster.group_request(group, request, Duration::from_secs(5)).await;
                let Ok(GroupResponse::OffsetFetch(Ok(offsets))) = answer else {
                    // The coordinator is moving; try again on the next poll.
                    return Ok(());
                };
                for (tp, offset) in offsets {
                    match offset {
                        Ok(offset) if offset >= 0 => {
                            committed.insert(tp, offset);
                        }
                        Ok(_) => {}
                        // UNSTABLE_OFFSET_COMMIT: the transaction ends soon; ask again on the
                        // next poll.
                        Err(_) => return Ok(()),
                    }
                }
            }
        }
        for tp in missing {
            if let Some(offset) = committed.get(&tp) {
                self.positions.insert(tp, *offset);
                continue;
            }
            let which = match self.pending_resets.get(&tp) {
                Some(w) => *w,
                None => match self.config.auto_offset_reset {
                    OffsetReset::Earliest => OffsetSpec::Earliest,
                    OffsetReset::Latest => OffsetSpec::Latest,
                    OffsetReset::None => return Err(ConsumeError::NoOffset(tp)),
                },
            };
            if let Ok(offset) = self
                .cluster
                .list_offset_isolated(&tp, which, self.config.isolation_level)
                .await
            {
                self.pending_resets.remove(&tp);
                self.positions.insert(tp, offset);
            }
        }
        Ok(())
    }

    async fn maybe_auto_commit(&mut self) {
        if !self.config.enable_auto_commit || self.config.group_id.is_none() {
            return;
        }
        if self.clock.elapsed(self.last_commit) >= Duration::from_millis(self.config.auto_commit_interval_ms) {
            if let Err(e) = self.commit().await {
                tracing::debug!(error = %e, "auto-commit failed; will retry");
            }
            self.last_commit = self.clock.now();
        }
    }

    /// Commits, for every assigned partition, the next offset poll hands out ([`Consumer::position`]).
    pub async fn commit(&mut self) -> Result<(), ConsumeError> {
        let offsets: Vec<(TopicPartition, i64)> = self
            .assigned
            .iter()
            .filter_map(|tp| self.position(tp).map(|o| (tp.clone(), o)))
            .collect();
        self.commit_offsets(offsets).await
    }

    /// Commits the given offsets (the next offset to read, as Kafka stores it).
    pub async fn commit_offsets(&mut self, offsets: Vec<(TopicPartition, i64)>) -> Result<(), ConsumeError> {
        let group = self.config.group_id.clone().ok_or(ConsumeError::NoGroup)?;
        if offsets.is_empty() {
            return Ok(());
        }
        let (generation, member_id) = match &self.membership {
            Some(m) => (m.generation, m.member_id.clone()),
            None => (-1, String::new()),
        };
        let request = GroupRequest::OffsetCommit {
            group_id: group.clone(),
            generation,
            member_id,
            group_instance_id: self.config.group_instance_id.clone(),
            offsets: offsets.clone(),
        };
        let answer = self
            .cluster
            .group_request(&group, request, Duration::from_secs(10))
            .await;
        let result = match answer {
            Ok(GroupResponse::OffsetCommit(ErrorCode::None)) => Ok(()),
            Ok(GroupResponse::OffsetCommit(e)) => {
                if e == ErrorCode::FencedInstanceId {
                    self.fenced.store(true, Ordering::SeqCst);
                }
                if matches!(
                    e,
                    ErrorCode::RebalanceInProgress | ErrorCode::IllegalGeneration | ErrorCode::UnknownMemberId
                ) {
                    self.rejoin.store(true, Ordering::SeqCst);
                }
                Err(e)
            }
            Ok(_) => Err(ErrorCode::UnknownServerError),
            Err(e) => Err(e),
        };
        if let Some(callback) = &self.on_commit {
            callback(&CommitOutcome {
                group,
                generation,
                offsets,
                result,
            });
        }
        result.map_err(ConsumeError::Group)
    }

    /// Committed offsets of the group for `partitions` (-1 where none), as committed now:
    /// offsets an open transaction has pending are not among them.
    pub async fn committed(&self, partitions: Vec<TopicPartition>) -> Result<Vec<(TopicPartition, i64)>, ConsumeError> {
        let group = self.config.group_id.clone().ok_or(ConsumeError::NoGroup)?;
        let request = GroupRequest::OffsetFetch {
            group_id: group.clone(),
            partitions: Some(partitions),
            require_stable: false,
        };
        match self
            .cluster
            .group_request(&group, request, Duration::from_secs(5))
            .await
        {
            Ok(GroupResponse::OffsetFetch(Ok(offsets))) => {
                Ok(offsets.into_iter().map(|(tp, o)| (tp, o.unwrap_or(-1))).collect())
            }
            Ok(GroupResponse::OffsetFetch(Err(e))) | Err(e) => Err(ConsumeError::Group(e)),
            Ok(_) => Err(ConsumeError::Group(ErrorCode::UnknownServerError)),
        }
    }

    /// JoinGroup and SyncGroup until this member holds an assignment of a stable generation.
    async fn join_group(&mut self, deadline: Instant) -> Result<(), ConsumeError> {
        let group = self.config.group_id.clone().ok_or(ConsumeError::NoGroup)?;
        let topics = self.subscription.clone().unwrap_or_default();
        let cooperative = self.config.assignors.first().is_some_and(|a| a == "cooperative-sticky");
        if !cooperative && !self.assigned.is_empty() {
            // Eager protocol: give everything back, committing what was consumed.
            if self.config.enable_auto_commit {
                let _ = self.commit().await;
            }
            self.set_assignment(Vec::new());
        }
        let backoff = Duration::from_millis(100);
        loop {
            if self.clock.now() >= deadline + Duration::from_millis(self.config.rebalance_timeout_ms) {
                // The next poll carries on joining.
                self.rejoin.store(true, Ordering::SeqCst);
                return Err(ConsumeError::Group(ErrorCode::RebalanceInProgress));
            }
            self.rejoin.store(false, Ordering::SeqCst);
            self.heartbeat_generation
                .store(assignor::DEFAULT_GENERATION, Ordering::SeqCst);
            let generation = self
                .membership
                .as_ref()
                .map_or(assignor::DEFAULT_GENERATION, |m| m.generation);
            let subscription = Subscription {
                topics: topics.clone(),
                owned_partitions: self.assigned.clone(),
                generation,
            };
            let protocols: Vec<(String, Bytes)> = self
                .config
                .assignors
                .iter()
                .map(|name| (name.clone(), assignor::encode_subscription(&subscription, None)))
                .collect();
            let join = GroupRequest::Join(JoinGroupRequest {
                group_id: group.clone(),
                member_id: self.member_id.clone(),
                session_timeout_ms: self.config.session_timeout_ms,
                rebalance_timeout_ms: self.config.rebalance_timeout_ms,
                protocol_type: "consumer".into(),
                protocols,
                client_id: self.config.client_id.clone(),
                client_host: IN_PROCESS_HOST.into(),
                group_instance_id: self.config.group_instance_id.clone(),
            });
            let timeout = Duration::from_millis(self.config.rebalance_timeout_ms + 5_000);
            let joined = match self.cluster.group_request(&group, join, timeout).await {
                Ok(GroupResponse::Join(r)) => r,
                _ => {
                    self.clock.sleep(backoff).await;
                    continue;
                }
            };
            match joined.error {
                None => {}
                Some(ErrorCode::MemberIdRequired) => {
                    self.member_id = joined.member_id;
                    continue;
                }
                Some(ErrorCode::UnknownMemberId) => {
                    self.lose_membership();
                    continue;
                }
                Some(ErrorCode::InconsistentGroupProtocol) => {
                    return Err(ConsumeError::Group(ErrorCode::InconsistentGroupProtocol));
                }
                Some(ErrorCode::FencedInstanceId) => {
                    self.fenced.store(true, Ordering::SeqCst);
                    self.check_fenced()?;
                }
                Some(_) => {
                    self.clock.sleep(backoff).await;
                    continue;
                }
            }
            let protocol = joined.protocol_name.unwrap_or_default();
            let assignments = if joined.leader == joined.member_id {
                self.lead_assignment(&protocol, &joined.members)
            } else {
                Vec::new()
            };
            let sync = GroupRequest::Sync {
                group_id: group.clone(),
                generation: joined.generation_id,
                member_id: joined.member_id.clone(),
                group_instance_id: self.config.group_instance_id.clone(),
                assignments,
            };
            let synced = match self.cluster.group_request(&group, sync, timeout).await {
                Ok(GroupResponse::Sync(r)) => r,
                _ => {
                    self.clock.sleep(backoff).await;
                    continue;
                }
            };
            match synced.error {
                None => {}
                Some(ErrorCode::UnknownMemberId) => {
                    self.lose_membership();
                    continue;
                }
                Some(ErrorCode::FencedInstanceId) => {
                    self.fenced.store(true, Ordering::SeqCst);
                    self.check_fenced()?;
                }
                Some(_) => continue,
            }
            let assigned = assignor::decode_assignment(&synced.assignment).unwrap_or_default();
            let revoked = self.assigned.iter().any(|tp| !assigned.contains(tp));
            self.member_id = joined.member_id.clone();
            self.membership = Some(Membership {
                member_id: joined.member_id,
                generation: joined.generation_id,
            });
            self.set_assignment(assigned);
            self.heartbeat_generation.store(joined.generation_id, Ordering::SeqCst);
            self.start_heartbeats(&group);
            if cooperative && revoked {
                // Partitions given up now are handed to their new owner in a follow-up round.
                self.rejoin.store(true, Ordering::SeqCst);
            }
            return Ok(());
        }
    }

    /// The coordinator no longer knows this member: its partitions may already be someone
    /// else's, so it gives them up without committing and rejoins as a new member (the Java
    /// consumer's `onPartitionsLost`). Keeping them, it would claim them again and commit
    /// positions of an assignment it lost.
    fn lose_membership(&mut self) {
        self.member_id.clear();
        self.membership = None;
        self.set_assignment(Vec::new());
    }

    /// The leader's part: run the chosen assignor over every member's subscription.
    fn lead_assignment(&self, protocol: &str, members: &[(String, Bytes)]) -> Vec<(String, Bytes)> {
        let Some(assignor) = assignor::by_name(protocol) else {
            return Vec::new();
        };
        let subscriptions: BTreeMap<String, Subscription> = members
            .iter()
            .filter_map(|(id, meta)| assignor::decode_subscription(meta).ok().map(|s| (id.clone(), s)))
            .collect();
        let image = self.cluster.metadata();
        let partitions_per_topic: BTreeMap<String, i32> = image
            .topics
            .iter()
            .map(|(name, t)| (name.clone(), t.partitions.len() as i32))
            .collect();
        assignor
            .assign(&partitions_per_topic, &subscriptions)
            .into_iter()
            .map(|(member, tps)| (member, assignor::encode_assignment(&tps)))
            .collect()
    }

    fn start_heartbeats(&mut self, group: &str) {
        if let Some(h) = self.heartbeat.take() {
            h.abort();
        }
        let Some(m) = self.membership.clone() else { return };
        let (cluster, group, rejoin) = (self.cluster.clone(), group.to_string(), Arc::clone(&self.rejoin));
        let (instance, fenced) = (self.config.group_instance_id.clone(), Arc::clone(&self.fenced));
        let current = Arc::clone(&self.heartbeat_generation);
        let interval = Duration::from_millis(self.config.heartbeat_interval_ms);
        self.heartbeat = Some(tokio::spawn(async move {
            loop {
                cluster.clock().sleep(interval).await;
                let request = GroupRequest::Heartbeat {
                    group_id: group.clone(),
                    generation: m.generation,
                    member_id: m.member_id.clone(),
                    group_instance_id: instance.clone(),
                };
                match cluster.group_request(&group, request, interval * 3).await {
                    Ok(GroupResponse::Heartbeat(ErrorCode::None)) => {}
                    Ok(GroupResponse::Heartbeat(ErrorCode::FencedInstanceId)) => {
                        fenced.store(true, Ordering::SeqCst);
                        return;
                    }
                    Ok(GroupResponse::Heartbeat(
                        ErrorCode::RebalanceInProgress | ErrorCode::IllegalGeneration | ErrorCode::UnknownMemberId,
                    )) => {
                        if current.load(Ordering::SeqCst) == m.generation {
                            rejoin.store(true, Ordering::SeqCst);
                        }
                        return;
                    }
                    // Coordinator moving or unreachable: keep trying within the session.
                    _ => {}
                }
            }
        }));
    }

    /// Commits (with auto-commit on) and leaves the group, so its partitions move at once; a
    /// static member does not leave (Kafka's consumer), so its partitions wait for it to come
    /// back within its session timeout.
    pub async fn close(mut self) {
        if let Some(h) = self.heartbeat.take() {
            h.abort();
        }
        if self.config.enable_auto_commit && self.config.group_id.is_some() {
            let _ = self.commit().await;
        }
        if self.config.group_instance_id.is_some() {
            return;
        }
        if let (Some(group), Some(m)) = (self.config.group_id.clone(), self.membership.take()) {
            let request = GroupRequest::Leave {
                group_id: group.clone(),
                member_id: m.member_id,
                group_instance_id: None,
            };
            let _ = self
                .cluster
                .group_request(&group, request, Duration::from_secs(5))
                .await;
        }
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        if let Some(h) = self.heartbeat.take() {
            h.abort();
        }
    }
}
