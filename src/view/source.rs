//! The `ClusterSource` trait the console drives a cluster through, with what crosses it:
//! commands and their outcomes, and message tails.
//!
//! Rendering never waits on the cluster: the latest view is an `Arc<ClusterView>` in a watch
//! channel, commands are submitted and their outcome arrives later as a message, and message
//! tails travel in bounded buffers the renderer only peeks into: a ring of the newest records
//! that follows the end, or a window that reads from a position and pauses when full (the
//! message browser, and searches that stop at the end the partitions had).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use tokio::sync::{Notify, mpsc, oneshot, watch};

use super::acls::{AclsAnswer, NO_ACLS};
use super::configs::{ConfigTarget, ConfigsAnswer, NO_CONFIGS};
use super::transactions::{NO_TRANSACTIONS, TransactionsAnswer};
use super::{BrokerId, ClusterView, OffsetSpec};

/// A record to produce from the console.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProduceRequest {
    pub topic: String,
    /// `None`: the partitioner chooses (by key, or sticky without one).
    pub partition: Option<i32>,
    pub key: Option<String>,
    pub value: String,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
}

/// What the console asks a cluster to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Produce(ProduceRequest),
    /// Hard crash.
    KillBroker(BrokerId),
    /// Controlled shutdown.
    StopBroker(BrokerId),
    StartBroker(BrokerId),
    PauseBroker(BrokerId),
    ResumeBroker(BrokerId),
    /// A new broker: the next id, an empty log directory (embedded cluster only).
    AddBroker,
    /// Move a broker's replicas to the others, then shut it down and forget it.
    DecommissionBroker(BrokerId),
    /// Preferred-leader election for one topic, or every topic.
    ElectPreferredLeaders {
        topic: Option<String>,
    },
    CreateTopic {
        name: String,
        partitions: i32,
        replication_factor: i32,
        /// `cleanup.policy` in Kafka's spelling: `delete`, `compact` or `compact,delete`.
        cleanup_policy: String,
    },
    DeleteTopic {
        name: String,
    },
    /// Start moves (a partition's new replicas) or cancel them (KIP-455).
    Reassign(Vec<ReplicaMove>),
    /// Start moves with the replication throttle (KIP-73) at `throttle` bytes/s set first on
    /// the brokers and topics taking part, as kafka-reassign-partitions.sh --throttle does.
    ReassignThrottled {
        moves: Vec<ReplicaMove>,
        throttle: u64,
    },
    PauseDemo,
    ResumeDemo,
    /// Stop the cluster's clock: no timer, heartbeat, session or lag advances, so nothing
    /// is fenced or shrunk because of the freeze; in-process clients block.
    Freeze,
    /// Let the clock run again.
    Thaw,
    /// Hold the cluster still between a scenario's steps (`true`: the clock stops, as with
    /// `Freeze` but without a timeline event) or end the hold (`false`).
    Hold(bool),
    /// Run every engine timeout and interval `factor` times slower (1: real time).
    SlowMotion {
        factor: u32,
    },
    /// Set the link between two brokers, both ways.
    SetLink {
        a: BrokerId,
        b: BrokerId,
        state: LinkState,
    },
    /// Cut a broker off from every other broker and from the controller; clients still
    /// reach it.
    Isolate(BrokerId),
    /// Every link back to normal.
    HealLinks,
    /// `auto.leader.rebalance.enable`, live.
    SetAutoRebalance(bool),
    /// `unclean.leader.election.enable` of one topic, or of the cluster (every topic
    /// without its own setting).
    SetUncleanElection {
        topic: Option<String>,
        enabled: bool,
    },
    /// `min.insync.replicas` of a topic.
    SetMinInsync {
        topic: String,
        value: i32,
    },
    /// IncrementalAlterConfigs of a topic (`None`: the cluster-wide broker defaults): set
    /// these configs and remove those (back to their defaults), all or nothing.
    AlterConfigs {
        topic: Option<String>,
        set: Vec<(String, String)>,
        delete: Vec<String>,
    },
    /// `acks` of the workload's producers: 0, 1 or -1 (all).
    SetProducerAcks(i16),
    /// One more consumer in a workload's group.
    AddMember {
        group: String,
    },
    /// The group's newest workload consumer leaves (LeaveGroup).
    RemoveMember {
        group: String,
    },
    /// The group's workload consumers stop polling (lag builds), or go on.
    PauseGroup {
        group: String,
    },
    ResumeGroup {
        group: String,
    },
    /// Commit these offsets for a group without active members (an offset reset whose
    /// preview the operator confirmed): (topic, partition, offset).
    ResetOffsets {
        group: String,
        offsets: Vec<(String, i32, i64)>,
    },
    /// Delete a group without active members, with its committed offsets.
    DeleteGroup {
        group: String,
    },
    /// Move a partition's log start offset up to `offset` (DeleteRecords; -1: the high
    /// watermark): the records before it are gone for every reader.
    DeleteRecords {
        topic: String,
        partition: i32,
        offset: i64,
    },
    /// Grow a topic to `count` partitions (CreatePartitions).
    CreatePartitions {
        topic: String,
        count: i32,
    },
}

/// One partition's part in a reassignment: its target replicas, or `None` to cancel its
/// move in progress.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaMove {
    pub topic: String,
    pub partition: i32,
    #[serde(default)]
    pub replicas: Option<Vec<BrokerId>>,
}

/// What a link between two brokers does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    Up,
    /// Requests are lost (the caller times out).
    Cut,
    /// Requests arrive this many milliseconds late.
    Delay(u64),
}

impl std::fmt::Display for LinkState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkState::Up => write!(f, "up"),
            LinkState::Cut => write!(f, "cut"),
            LinkState::Delay(ms) => write!(f, "delayed {ms} ms"),
        }
    }
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Produce(r) => match r.partition {
                Some(p) => write!(f, "produce to {}-{p}", r.topic),
                None => write!(f, "produce to {}", r.topic),
            },
            Command::KillBroker(id) => write!(f, "kill broker {id}"),
            Command::StopBroker(id) => write!(f, "stop broker {id}"),
            Command::StartBroker(id) => write!(f, "start broker {id}"),
            Command::PauseBroker(id) => write!(f, "pause broker {id}"),
            Command::ResumeBroker(id) => write!(f, "resume broker {id}"),
            Command::AddBroker => write!(f, "add a broker"),
            Command::DecommissionBroker(id) => write!(f, "decommission broker {id}"),
            Command::ElectPreferredLeaders { topic: Some(t) } => write!(f, "preferred-leader election for {t}"),
            Command::ElectPreferredLeaders { topic: None } => write!(f, "preferred-leader election for all topics"),
            Command::CreateTopic {
                name,
                partitions,
                replication_factor,
                cleanup_policy,
            } => write!(
                f,
                "create topic {name} ({partitions} partitions, RF {replication_factor}, cleanup.policy {cleanup_policy})"
            ),
            Command::DeleteTopic { name } => write!(f, "delete topic {name}"),
            Command::Reassign(moves) => match moves.as_slice() {
                [one] => match &one.replicas {
                    Some(r) => write!(f, "move {}-{} to brokers {r:?}", one.topic, one.partition),
                    None => write!(f, "cancel the move of {}-{}", one.topic, one.partition),
                },
                _ if moves.iter().all(|m| m.replicas.is_none()) => write!(f, "cancel {} moves", moves.len()),
                _ => write!(f, "reassign {} partitions", moves.len()),
            },
            Command::ReassignThrottled { moves, throttle } => {
                write!(f, "reassign {} partitions throttled to {throttle} B/s", moves.len())
            }
            Command::PauseDemo => write!(f, "pause the demo workload"),
            Command::ResumeDemo => write!(f, "resume the demo workload"),
            Command::Freeze => write!(f, "freeze the cluster's clock"),
            Command::Thaw => write!(f, "let the cluster's clock run"),
            Command::Hold(true) => write!(f, "hold the cluster until the next step"),
            Command::Hold(false) => write!(f, "end the hold"),
            Command::SlowMotion { factor } => write!(f, "slow motion x{factor}"),
            Command::SetLink { a, b, state } => write!(f, "link {a}-{b} {state}"),
            Command::Isolate(id) => write!(f, "cut broker {id} off from the cluster"),
            Command::HealLinks => write!(f, "heal every link"),
            Command::SetAutoRebalance(on) => {
                write!(f, "auto.leader.rebalance.enable={on}")
            }
            Command::SetUncleanElection {
                topic: Some(t),
                enabled,
            } => {
                write!(f, "unclean.leader.election.enable={enabled} for {t}")
            }
            Command::SetUncleanElection { topic: None, enabled } => {
                write!(f, "unclean.leader.election.enable={enabled}")
            }
            Command::SetMinInsync { topic, value } => write!(f, "min.insync.replicas={value} for {topic}"),
            Command::AlterConfigs { topic, set, delete } => {
                let mut parts: Vec<String> = set.iter().map(|(k, v)| format!("{k}={v}")).collect();
                parts.extend(delete.iter().map(|k| format!("remove {k}")));
                match topic {
                    Some(t) => write!(f, "{} for {t}", parts.join(", ")),
                    None => write!(f, "{} for the cluster", parts.join(", ")),
                }
            }
            Command::SetProducerAcks(acks) => write!(f, "producers' acks={}", acks_label(*acks)),
            Command::AddMember { group } => write!(f, "add a consumer to {group}"),
            Command::RemoveMember { group } => write!(f, "remove a consumer from {group}"),
            Command::PauseGroup { group } => write!(f, "pause the consumers of {group}"),
            Command::ResumeGroup { group } => write!(f, "resume the consumers of {group}"),
            Command::ResetOffsets { group, .. } => write!(f, "reset the offsets of group {group}"),
            Command::DeleteGroup { group } => write!(f, "delete group {group}"),
            Command::DeleteRecords {
                topic,
                partition,
                offset: -1,
            } => write!(f, "delete the records of {topic}-{partition} up to its high watermark"),
            Command::DeleteRecords {
                topic,
                partition,
                offset,
            } => write!(f, "delete the records of {topic}-{partition} before offset {offset}"),
            Command::CreatePartitions { topic, count } => write!(f, "grow topic {topic} to {count} partitions"),
        }
    }
}

/// `acks` as Kafka's configs spell it: `0`, `1`, `all`.
pub fn acks_label(acks: i16) -> String {
    if acks == -1 { "all".into() } else { acks.to_string() }
}

/// How a command ended: a short human sentence either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutcome {
    pub command: Command,
    pub result: Result<String, String>,
}

pub type OutcomeSender = mpsc::UnboundedSender<CommandOutcome>;

/// Where a message tail starts reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeekPosition {
    Beginning,
    End,
    /// The last `n` records of each partition.
    Last(i64),
    Offset(i64),
    /// The first record at or after this time.
    Timestamp(DateTime<Utc>),
}

impl SeekPosition {
    /// The ListOffsets lookup that finds this position by itself; `None` for the positions
    /// that depend on the log's bounds ([`SeekPosition::within`]).
    pub fn lookup(self) -> Option<OffsetSpec> {
        match self {
            SeekPosition::Beginning => Some(OffsetSpec::Earliest),
            SeekPosition::End => Some(OffsetSpec::Latest),
            SeekPosition::Timestamp(t) => Some(OffsetSpec::Timestamp(t.timestamp_millis())),
            SeekPosition::Last(_) | SeekPosition::Offset(_) => None,
        }
    }

    /// Where this position starts in a log whose records span `first..end`: the last `n`
    /// records, or an offset kept within the log; `None` for the positions a lookup finds.
    pub fn within(self, first: i64, end: i64) -> Option<i64> {
        match self {
            SeekPosition::Last(n) => Some(end.saturating_sub(n.max(0)).max(first)),
            SeekPosition::Offset(o) => Some(o.clamp(first, end.max(first))),
            SeekPosition::Beginning | SeekPosition::End | SeekPosition::Timestamp(_) => None,
        }
    }
}

impl std::fmt::Display for SeekPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SeekPosition::Beginning => write!(f, "beginning"),
            SeekPosition::End => write!(f, "end"),
            SeekPosition::Last(n) => write!(f, "last {n}"),
            SeekPosition::Offset(o) => write!(f, "offset {o}"),
            SeekPosition::Timestamp(t) => write!(f, "{}", t.format("%Y-%m-%d %H:%M:%S UTC")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailSpec {
    pub topic: String,
    /// `None`: every partition.
    pub partition: Option<i32>,
    pub start: SeekPosition,
    /// How the buffer fills.
    pub mode: TailMode,
    /// Only records whose key, value, a header name or a header value contains this text
    /// (bytes compared as lossy UTF-8, case-sensitive substring) are put in the buffer; every
    /// record read counts as scanned. `None`: every record.
    pub filter: Option<String>,
    /// A search: stop at the end offsets the partitions had when the tail started, instead
    /// of waiting for new records; the buffer then reports done.
    pub until_end: bool,
    /// Read as a read_committed consumer: up to the last stable offset, without the records
    /// of aborted transactions. `false` (read_uncommitted) shows every record with its mark.
    pub read_committed: bool,
}

impl TailSpec {
    /// A ring tail: the newest records, no filter, following the end.
    pub fn ring(topic: impl Into<String>, partition: Option<i32>, start: SeekPosition) -> TailSpec {
        TailSpec {
            topic: topic.into(),
            partition,
            start,
            mode: TailMode::Ring,
            filter: None,
            until_end: false,
            read_committed: false,
        }
    }

    /// Whether `record` passes the filter.
    pub fn matches(&self, record: &TailRecord) -> bool {
        let Some(text) = self.filter.as_deref() else {
            return true;
        };
        let contains = |bytes: &[u8]| String::from_utf8_lossy(bytes).contains(text);
        record.key.as_deref().is_some_and(contains)
            || record.value.as_deref().is_some_and(contains)
            || record
                .headers
                .iter()
                .any(|(name, value)| name.contains(text) || value.as_deref().is_some_and(contains))
    }
}

/// How a tail's buffer fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TailMode {
    /// The newest `capacity` records; the oldest fall out (following the end).
    #[default]
    Ring,
    /// From the start on, until `capacity` records are buffered; then reading pauses until
    /// [`TailBuffer::advance`] makes room. Nothing is ever dropped by the reader.
    Window,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailRecord {
    pub partition: i32,
    pub offset: i64,
    /// Milliseconds since the epoch.
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
    /// The producer that wrote the record's batch (-1: none, Kafka's `NO_PRODUCER_ID`).
    pub producer_id: i64,
    /// How the record's transaction ended, for a record written in a transaction; `None`
    /// for a record written outside one.
    pub txn: Option<TxnMark>,
}

/// How the transaction a record was written in stands, as far as the reader has seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnMark {
    /// No marker yet: the transaction is open (read_committed consumers stop before it).
    Open,
    Committed,
    Aborted,
}

impl TxnMark {
    /// A short word for the pane and the CLI.
    pub fn word(self) -> &'static str {
        match self {
            TxnMark::Open => "open",
            TxnMark::Committed => "committed",
            TxnMark::Aborted => "aborted",
        }
    }
}

/// A transaction marker read from a partition: a COMMIT or ABORT written for a producer at
/// `offset`, which ends its records before it that are still open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMarker {
    pub partition: i32,
    pub producer_id: i64,
    pub offset: i64,
    pub committed: bool,
}

impl TxnMarker {
    /// Marks the open records this marker ends (its producer's, in its partition, before it).
    pub fn settle<'a>(&self, records: impl IntoIterator<Item = &'a mut TailRecord>) -> bool {
        let mark = if self.committed {
            TxnMark::Committed
        } else {
            TxnMark::Aborted
        };
        let mut changed = false;
        for r in records {
            if r.txn == Some(TxnMark::Open)
                && r.partition == self.partition
                && r.producer_id == self.producer_id
                && r.offset < self.offset
            {
                r.txn = Some(mark);
                changed = true;
            }
        }
        changed
    }

    /// Reads a control record's key (version, type: 0 ABORT, 1 COMMIT); `None` for another
    /// kind of control record.
    pub fn from_control_key(partition: i32, producer_id: i64, offset: i64, key: &[u8]) -> Option<TxnMarker> {
        let kind = i16::from_be_bytes([*key.get(2)?, *key.get(3)?]);
        let committed = match kind {
            0 => false,
            1 => true,
            _ => return None,
        };
        Some(TxnMarker {
            partition,
            producer_id,
            offset,
            committed,
        })
    }
}

/// Marks `records` (in offset order, of one read) with the `markers` read with them.
pub fn settle_read(records: &mut [TailRecord], markers: &[TxnMarker]) {
    for m in markers {
        m.settle(records.iter_mut());
    }
}

/// The records of a tail, filled by the source and read by the renderer: a ring of the
/// newest records, or a window the console moves on with [`TailBuffer::advance`].
#[derive(Debug)]
pub struct TailBuffer {
    records: Mutex<VecDeque<TailRecord>>,
    capacity: usize,
    mode: TailMode,
    /// Bumped on every change so the renderer knows when to redraw.
    version: AtomicU64,
    error: Mutex<Option<String>>,
    closed: AtomicBool,
    scanned: AtomicU64,
    matched: AtomicU64,
    done: AtomicBool,
    log_starts: Mutex<Vec<(i32, i64)>>,
    /// Wakes a window's reader when `advance` makes room or the handle is dropped.
    room_made: Notify,
}

impl TailBuffer {
    /// A ring of `capacity` records.
    pub fn new(capacity: usize) -> TailBuffer {
        TailBuffer::with_mode(capacity, TailMode::Ring)
    }

    pub fn with_mode(capacity: usize, mode: TailMode) -> TailBuffer {
        TailBuffer {
            records: Mutex::new(VecDeque::with_capacity(capacity.min(4096))),
            capacity: capacity.max(1),
            mode,
            version: AtomicU64::new(0),
            error: Mutex::new(None),
            closed: AtomicBool::new(false),
            scanned: AtomicU64::new(0),
            matched: AtomicU64::new(0),
            done: AtomicBool::new(false),
            log_starts: Mutex::new(Vec::new()),
            room_made: Notify::new(),
        }
    }

    pub fn mode(&self) -> TailMode {
        self.mode
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many records can still be pushed: a window's free places; a ring takes any
    /// number (the oldest fall out), so its whole capacity.
    pub fn room(&self) -> usize {
        match self.mode {
            TailMode::Ring => self.capacity,
            TailMode::Window => self.capacity.saturating_sub(lock(&self.records).len()),
        }
    }

    /// Appends records: a ring drops its oldest to make place, a window takes no more than
    /// its room and drops the rest (readers push from [`TailBuffer::push_from`] instead,
    /// which leaves what does not fit with them).
    pub fn push(&self, batch: impl IntoIterator<Item = TailRecord>) {
        let mut batch: VecDeque<TailRecord> = batch.into_iter().collect();
        self.push_from(&mut batch);
    }

    /// Moves records from the front of `pending` into the buffer: all of them into a ring
    /// (its oldest fall out), as many as there is room for into a window.
    pub fn push_from(&self, pending: &mut VecDeque<TailRecord>) {
        if pending.is_empty() {
            return;
        }
        let mut records = lock(&self.records);
        let mut pushed = false;
        while let Some(r) = pending.pop_front() {
            if records.len() >= self.capacity {
                if self.mode == TailMode::Window {
                    pending.push_front(r);
                    break;
                }
                records.pop_front();
            }
            records.push_back(r);
            pushed = true;
        }
        drop(records);
        if pushed {
            self.bump();
        }
    }

    /// Drops the `n` oldest records, making room in a window for its reader.
    pub fn advance(&self, n: usize) {
        let mut records = lock(&self.records);
        let n = n.min(records.len());
        records.drain(..n);
        drop(records);
        self.bump();
        self.room_made.notify_waiters();
    }

    /// Waits until a window has room or the tail is closed (at once for a ring).
    pub async fn room_or_closed(&self) {
        loop {
            let notified = self.room_made.notified();
            tokio::pin!(notified);
            // Registered before the check, so an `advance` right after it is not missed.
            notified.as_mut().enable();
            if self.room() > 0 || self.is_closed() {
                return;
            }
            notified.await;
        }
    }

    /// Counts records read by the source (`scanned`) and those that passed the filter.
    pub fn count(&self, scanned: u64, matched: u64) {
        if scanned == 0 && matched == 0 {
            return;
        }
        self.scanned.fetch_add(scanned, Ordering::AcqRel);
        self.matched.fetch_add(matched, Ordering::AcqRel);
        self.bump();
    }

    /// Records read by the source, before the filter.
    pub fn scanned(&self) -> u64 {
        self.scanned.load(Ordering::Acquire)
    }

    /// Records that passed the filter: all of them, also those a full window could not take
    /// yet.
    pub fn matched(&self) -> u64 {
        self.matched.load(Ordering::Acquire)
    }

    /// A search reached the end offsets its partitions had when it started, and every
    /// match it read is in the buffer or was moved past by `advance`.
    pub fn set_done(&self) {
        if !self.done.swap(true, Ordering::AcqRel) {
            self.bump();
        }
    }

    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// The log start offset of each partition read, as seen when the tail started.
    pub fn set_log_starts(&self, mut starts: Vec<(i32, i64)>) {
        starts.sort_unstable();
        *lock(&self.log_starts) = starts;
        self.bump();
    }

    /// The log start offset of each partition read (by partition), as seen when the tail
    /// started: whether records exist before the window. Empty until the source learned them.
    pub fn log_starts(&self) -> Vec<(i32, i64)> {
        lock(&self.log_starts).clone()
    }

    /// The last problem reading the tail (cleared by the next successful read).
    pub fn set_error(&self, error: Option<String>) {
        let mut slot = lock(&self.error);
        if *slot != error {
            *slot = error;
            self.bump();
        }
    }

    pub fn error(&self) -> Option<String> {
        lock(&self.error).clone()
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Marks the buffered records `markers` end (read after those records were pushed).
    pub fn settle(&self, markers: &[TxnMarker]) {
        if markers.is_empty() {
            return;
        }
        let mut records = lock(&self.records);
        let mut changed = false;
        for m in markers {
            changed |= m.settle(records.iter_mut());
        }
        drop(records);
        if changed {
            self.bump();
        }
    }

    /// A copy of the records, oldest first.
    pub fn records(&self) -> Vec<TailRecord> {
        lock(&self.records).iter().cloned().collect()
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn bump(&self) {
        self.version.fetch_add(1, Ordering::Release);
    }
}

/// A source's reading side of one tail (one per reading task): applies the filter, counts
/// what it reads, and keeps what a full window cannot take yet, so nothing read is dropped.
#[derive(Debug)]
pub struct TailFeed {
    buffer: Arc<TailBuffer>,
    spec: TailSpec,
    pending: VecDeque<TailRecord>,
}

impl TailFeed {
    pub fn new(buffer: Arc<TailBuffer>, spec: &TailSpec) -> TailFeed {
        TailFeed {
            buffer,
            spec: spec.clone(),
            pending: VecDeque::new(),
        }
    }

    /// Takes records read from the source: counts them, keeps those that pass the filter
    /// and pushes what fits.
    pub fn offer(&mut self, records: impl IntoIterator<Item = TailRecord>) {
        let before = self.pending.len();
        let mut scanned = 0;
        for r in records {
            scanned += 1;
            if self.spec.matches(&r) {
                self.pending.push_back(r);
            }
        }
        self.buffer.count(scanned, (self.pending.len() - before) as u64);
        if !self.buffer.is_closed() {
            self.buffer.push_from(&mut self.pending);
        }
    }

    /// Marks what `markers` end among the records waiting for room and those buffered.
    pub fn settle(&mut self, markers: &[TxnMarker]) {
        for m in markers {
            m.settle(self.pending.iter_mut());
        }
        self.buffer.settle(markers);
    }

    /// Whether records wait for room in the window (the reader should not read more).
    pub fn is_waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Waits for room in the window, then pushes what fits; returns at once when the tail
    /// is closed.
    pub async fn wait_for_room(&mut self) {
        self.buffer.room_or_closed().await;
        if !self.buffer.is_closed() {
            self.buffer.push_from(&mut self.pending);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running tail; dropping it tells the source to stop filling the buffer.
#[derive(Debug)]
pub struct TailHandle {
    pub spec: TailSpec,
    pub buffer: Arc<TailBuffer>,
}

impl Drop for TailHandle {
    fn drop(&mut self) {
        self.buffer.closed.store(true, Ordering::Release);
        self.buffer.room_made.notify_waiters();
    }
}

/// What a source lets the console do; the help overlay greys out or hides the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Kill, stop, start, pause and resume brokers; `Err` says why not.
    pub broker_control: Result<(), &'static str>,
    /// A demo workload that can be paused and resumed.
    pub demo: bool,
    /// Nothing that changes the cluster: no produce, topic changes, elections or broker
    /// control.
    pub read_only: bool,
}

impl Default for Capabilities {
    fn default() -> Self {
        Capabilities {
            broker_control: Ok(()),
            demo: true,
            read_only: false,
        }
    }
}

impl Command {
    /// Whether the command changes the cluster (refused by a read-only source).
    pub fn mutates(&self) -> bool {
        !matches!(
            self,
            Command::PauseDemo
                | Command::ResumeDemo
                | Command::Freeze
                | Command::Thaw
                | Command::Hold(_)
                | Command::SlowMotion { .. }
                | Command::AddMember { .. }
                | Command::RemoveMember { .. }
                | Command::PauseGroup { .. }
                | Command::ResumeGroup { .. }
                | Command::SetProducerAcks(_)
        )
    }

    /// Whether only an embedded cluster can do it (the engine's clock, its network, its
    /// workload, its settings).
    pub fn embedded_only(&self) -> bool {
        matches!(
            self,
            Command::KillBroker(_)
                | Command::StopBroker(_)
                | Command::StartBroker(_)
                | Command::PauseBroker(_)
                | Command::ResumeBroker(_)
                | Command::AddBroker
                | Command::DecommissionBroker(_)
                | Command::PauseDemo
                | Command::ResumeDemo
                | Command::Freeze
                | Command::Thaw
                | Command::Hold(_)
                | Command::SlowMotion { .. }
                | Command::SetLink { .. }
                | Command::Isolate(_)
                | Command::HealLinks
                | Command::SetAutoRebalance(_)
                | Command::SetUncleanElection { .. }
                | Command::SetMinInsync { .. }
                | Command::SetProducerAcks(_)
                | Command::AddMember { .. }
                | Command::RemoveMember { .. }
                | Command::PauseGroup { .. }
                | Command::ResumeGroup { .. }
        )
    }
}

/// What the console needs from a cluster. Every method returns at once.
pub trait ClusterSource: Send + Sync {
    /// What the console may offer; by default everything.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    /// The latest view; a new one is sent a few times a second while something changes.
    fn views(&self) -> watch::Receiver<Arc<ClusterView>>;
    /// Runs a command in the background; its outcome is sent to `outcomes`.
    fn submit(&self, command: Command, outcomes: OutcomeSender);
    /// Starts reading records into a buffer of `capacity` records filled as `spec.mode`
    /// says.
    fn tail(&self, spec: TailSpec, capacity: usize) -> TailHandle;
    /// Describes the configs of `target` in the background (DescribeConfigs); the answer
    /// arrives on the receiver. By default: not supported here.
    fn describe_configs(&self, target: ConfigTarget) -> oneshot::Receiver<ConfigsAnswer> {
        let _ = target;
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(Err(NO_CONFIGS.to_string()));
        rx
    }
    /// Describes every ACL binding in the background (DescribeAcls); the answer arrives on
    /// the receiver. By default: not supported here.
    fn describe_acls(&self) -> oneshot::Receiver<AclsAnswer> {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(Err(NO_ACLS.to_string()));
        rx
    }

    /// Lists every transactional id with its description in the background
    /// (ListTransactions, DescribeTransactions); the answer arrives on the receiver. By
    /// default: not supported here.
    fn describe_transactions(&self) -> oneshot::Receiver<TransactionsAnswer> {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(Err(NO_TRANSACTIONS.to_string()));
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_ring_keeps_only_the_newest_records() {
        let buffer = TailBuffer::new(3);
        let before = buffer.version();
        buffer.push((0..5).map(record));
        let offsets: Vec<i64> = buffer.records().iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![2, 3, 4]);
        assert!(buffer.version() > before);
    }

    fn record(offset: i64) -> TailRecord {
        TailRecord {
            partition: 0,
            offset,
            timestamp: 0,
            key: None,
            value: None,
            headers: Vec::new(),
            producer_id: -1,
            txn: None,
        }
    }

    #[test]
    fn a_marker_settles_only_its_producers_open_records_before_it() {
        let open = |offset, producer_id| TailRecord {
            producer_id,
            txn: Some(TxnMark::Open),
            ..record(offset)
        };
        let buffer = TailBuffer::new(10);
        buffer.push([open(0, 7), open(1, 8), record(2), open(4, 7)]);
        let before = buffer.version();
        let abort = TxnMarker::from_control_key(0, 7, 3, &[0, 0, 0, 0]).expect("an ABORT marker");
        buffer.settle(&[abort]);
        let marks: Vec<_> = buffer.records().iter().map(|r| r.txn).collect();
        assert_eq!(
            marks,
            vec![Some(TxnMark::Aborted), Some(TxnMark::Open), None, Some(TxnMark::Open)],
            "producer 8's record and the one after the marker stay open"
        );
        assert!(buffer.version() > before, "the pane redraws");
        let commit = TxnMarker::from_control_key(0, 7, 5, &[0, 0, 0, 1]).expect("a COMMIT marker");
        assert!(commit.committed);
        buffer.settle(&[commit]);
        assert_eq!(buffer.records()[3].txn, Some(TxnMark::Committed));
        assert_eq!(
            buffer.records()[0].txn,
            Some(TxnMark::Aborted),
            "a settled record keeps its mark"
        );
        assert_eq!(
            TxnMarker::from_control_key(0, 7, 5, &[0, 0, 0, 9]),
            None,
            "not a transaction marker"
        );
        assert_eq!(
            TxnMarker::from_control_key(0, 7, 5, &[0]),
            None,
            "a short key is no marker"
        );
    }

    fn offsets(buffer: &TailBuffer) -> Vec<i64> {
        buffer.records().iter().map(|r| r.offset).collect()
    }

    #[test]
    fn a_window_fills_to_its_capacity_and_advance_drops_the_oldest_to_make_room() {
        let buffer = TailBuffer::with_mode(5, TailMode::Window);
        assert_eq!(
            (buffer.mode(), buffer.capacity(), buffer.room()),
            (TailMode::Window, 5, 5)
        );
        let mut pending: VecDeque<TailRecord> = (0..8).map(record).collect();
        let before = buffer.version();
        buffer.push_from(&mut pending);
        assert_eq!(offsets(&buffer), vec![0, 1, 2, 3, 4]);
        assert_eq!(buffer.room(), 0);
        let left: Vec<i64> = pending.iter().map(|r| r.offset).collect();
        assert_eq!(left, vec![5, 6, 7], "what does not fit stays with the reader");
        assert!(buffer.version() > before);

        let before = buffer.version();
        buffer.push_from(&mut pending);
        assert_eq!(offsets(&buffer), vec![0, 1, 2, 3, 4], "a full window takes nothing");
        assert_eq!(buffer.version(), before, "nothing changed, nothing to redraw");

        buffer.advance(2);
        assert_eq!(offsets(&buffer), vec![2, 3, 4]);
        assert_eq!(buffer.room(), 2);
        assert!(buffer.version() > before);
        buffer.push_from(&mut pending);
        assert_eq!(offsets(&buffer), vec![2, 3, 4, 5, 6]);
        assert_eq!(pending.len(), 1);
        buffer.advance(99);
        assert!(buffer.records().is_empty(), "advancing past the end empties the window");
        assert_eq!(buffer.room(), 5);
    }

    #[test]
    fn a_ring_always_has_room() {
        let buffer = TailBuffer::new(3);
        buffer.push((0..10).map(record));
        assert_eq!(buffer.mode(), TailMode::Ring);
        assert_eq!(buffer.room(), 3);
        assert_eq!(offsets(&buffer), vec![7, 8, 9]);
    }

    #[test]
    fn the_filter_looks_in_keys_values_and_header_names_and_values() {
        let spec = TailSpec {
            filter: Some("needle".into()),
            ..TailSpec::ring("t", None, SeekPosition::Beginning)
        };
        let with = |key: Option<&[u8]>, value: Option<&[u8]>, headers: Vec<(&str, Option<&[u8]>)>| TailRecord {
            key: key.map(Bytes::copy_from_slice),
            value: value.map(Bytes::copy_from_slice),
            headers: headers
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.map(Bytes::copy_from_slice)))
                .collect(),
            ..record(0)
        };
        assert!(spec.matches(&with(Some(b"a needle"), None, vec![])));
        assert!(
            spec.matches(&with(None, Some(b"\xffneedle\xfe"), vec![])),
            "bytes as lossy UTF-8"
        );
        assert!(spec.matches(&with(None, None, vec![("needle-id", None)])));
        assert!(spec.matches(&with(None, None, vec![("h", Some(b"needles"))])));
        assert!(
            !spec.matches(&with(Some(b"Needle"), Some(b"hay"), vec![("h", Some(b"nee dle"))])),
            "case-sensitive"
        );
        assert!(
            TailSpec::ring("t", None, SeekPosition::End).matches(&record(0)),
            "no filter: every record"
        );
    }

    #[tokio::test]
    async fn the_feed_counts_what_it_reads_and_keeps_the_matches_a_full_window_cannot_take() {
        let buffer = Arc::new(TailBuffer::with_mode(2, TailMode::Window));
        let spec = TailSpec {
            mode: TailMode::Window,
            filter: Some("needle".into()),
            ..TailSpec::ring("t", None, SeekPosition::Beginning)
        };
        let mut feed = TailFeed::new(Arc::clone(&buffer), &spec);
        let read = (0..10).map(|o| TailRecord {
            value: Some(Bytes::from(if o % 3 == 0 { "needle" } else { "hay" })),
            ..record(o)
        });
        let before = buffer.version();
        feed.offer(read);
        assert_eq!((buffer.scanned(), buffer.matched()), (10, 4));
        assert_eq!(offsets(&buffer), vec![0, 3]);
        assert!(feed.is_waiting(), "6 and 9 wait for room");
        assert!(buffer.version() > before);

        buffer.advance(1);
        feed.wait_for_room().await;
        assert_eq!(offsets(&buffer), vec![3, 6]);
        buffer.advance(2);
        feed.wait_for_room().await;
        assert_eq!(offsets(&buffer), vec![9]);
        assert!(!feed.is_waiting());
        assert_eq!(buffer.matched(), 4, "counted once, when read");
    }

    #[tokio::test]
    async fn a_reader_waiting_for_room_wakes_when_the_handle_is_dropped() {
        let buffer = Arc::new(TailBuffer::with_mode(1, TailMode::Window));
        buffer.push([record(0)]);
        let handle = TailHandle {
            spec: TailSpec::ring("t", None, SeekPosition::End),
            buffer: Arc::clone(&buffer),
        };
        let waiter = tokio::spawn({
            let buffer = Arc::clone(&buffer);
            async move { buffer.room_or_closed().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "no room yet");
        drop(handle);
        waiter.await.expect("the reader wakes");
    }

    #[test]
    fn done_log_starts_and_counters_are_changes_to_redraw() {
        let buffer = TailBuffer::new(3);
        let v0 = buffer.version();
        buffer.count(5, 2);
        let v1 = buffer.version();
        assert!(v1 > v0);
        buffer.set_log_starts(vec![(1, 40), (0, 7)]);
        assert_eq!(buffer.log_starts(), vec![(0, 7), (1, 40)]);
        let v2 = buffer.version();
        assert!(v2 > v1);
        assert!(!buffer.is_done());
        buffer.set_done();
        assert!(buffer.is_done());
        assert!(buffer.version() > v2);
    }

    #[test]
    fn a_seek_position_is_a_lookup_or_a_place_within_the_log() {
        assert_eq!(SeekPosition::Beginning.lookup(), Some(OffsetSpec::Earliest));
        assert_eq!(SeekPosition::End.lookup(), Some(OffsetSpec::Latest));
        let at = DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::milliseconds(1_700_000_000_000);
        assert_eq!(
            SeekPosition::Timestamp(at).lookup(),
            Some(OffsetSpec::Timestamp(1_700_000_000_000))
        );
        assert_eq!(SeekPosition::Last(5).within(10, 100), Some(95));
        assert_eq!(
            SeekPosition::Last(500).within(10, 100),
            Some(10),
            "not before the log start"
        );
        assert_eq!(SeekPosition::Offset(3).within(10, 100), Some(10));
        assert_eq!(SeekPosition::Offset(300).within(10, 100), Some(100));
        assert_eq!(SeekPosition::End.within(10, 100), None);
    }

    #[test]
    fn dropping_the_handle_closes_the_tail() {
        let buffer = Arc::new(TailBuffer::new(3));
        let handle = TailHandle {
            spec: TailSpec::ring("t", None, SeekPosition::End),
            buffer: Arc::clone(&buffer),
        };
        assert!(!buffer.is_closed());
        drop(handle);
        assert!(buffer.is_closed());
    }
}
