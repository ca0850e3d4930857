//! The invariants, apart from the scenario that drives them (TigerBeetle's state checker,
//! Jepsen's Kafka checker). The checker never touches the cluster: it is fed samples
//! ([`Observation`]: the controller's metadata, the snapshot, every replica's own state and a
//! way to read replica logs), the cluster's events and what the clients saw (acknowledged
//! and consumed records), and reports every rule it sees broken, once, with the facts.
//!
//! Safety, checked on every sample:
//! - a leader's HW never moves back within its leader epoch;
//! - leader epochs never decrease, in the metadata or on a replica;
//! - at most one leader per partition and epoch;
//! - the ISR is a non-empty subset of the replicas and holds the leader;
//! - every replica has log start <= HW <= log end;
//! - the batches below the HW (the committed log) are identical, batch for batch, on every
//!   ISR member and every later leader, and never change once committed;
//! - every acks=all acknowledged record is in the committed log at its offset with its value;
//! - a record of an idempotent producer appears at most once per producer id and epoch;
//! - every record a consumer read is in the committed log at the offset it was read from;
//! - a leader is elected from the ISR, unless unclean election is enabled for its topic;
//! - a group's committed offsets and generation never go back.
//!
//! Transactions, judged at the end against a read_committed read-back of every partition a
//! transactional writer wrote (taken once no transaction is open; see [`TxnOutcome`] for
//! what each writer saw):
//! - `TxnCommittedOnce`: every record of a committed transaction is read once, and each
//!   writer's records in the order it sent them (by transaction, then within one);
//! - `TxnAtomic`: an aborted transaction's records are never read, nor those of one its
//!   writer never asked to commit (it died, or was fenced, first); a transaction whose commit
//!   went unanswered is read whole or not at all; no record is read that no transaction sent.
//!   This is also the zombie rule: after a writer's process is replaced, whatever the old
//!   instance sent outside a transaction it saw committed (its open transaction, and what it
//!   goes on sending as a zombie until it is fenced) is never read.
//!
//! Only a loss Kafka's rules allow on a partition excuses a committed record missing there.
//!
//! The verdicts on loss, duplication, order and commits stand on what the clients observed
//! (the acknowledgements with their offsets, the records read, each commit's answer) held
//! against a final read-back by fresh clients: an engine that corrupts its log and its own
//! view of it alike still fails them. See [`Checker::finish`].
//!
//! The only losses allowed are those Kafka's rules allow, each decided by the checker from
//! the metadata it saw, never from the engine's labels, and each counted
//! ([`Checker::excused`]): an unclean election (unclean election enabled for the topic at
//! that moment, the new leader outside the last ISR); a broker elected after a power loss cut
//! its log back to what it had fsynced, when every member of the last ISR had lost power so
//! (Kafka does not fsync by default and, before KIP-966, elects such a replica); and, with
//! `min.insync.replicas` = 1 only, what a deposed leader that has not yet learned of a lossy
//! election acknowledges meanwhile (with only itself in sync it needs nobody's copy).
//!
//! Liveness, checked once every fault is healed ([`Checker::unsettled`]), and the work an
//! idle cluster does ([`Checker::idle_work`]) complete the picture.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::time::Duration;

use bytes::Bytes;

use crate::engine::group::{GroupState, OFFSETS_TOPIC, partition_for_group};
use crate::engine::{
    BrokerId, BrokerState, ClusterEvent, ClusterSnapshot, ErrorCode, EventKind, LiveSetting, MetadataImage, NO_LEADER,
    NodeId, ReplicaProbe, TopicPartition,
};
use crate::storage::batch::Batches;
use crate::storage::records;

/// Values of records from idempotent producers start with this byte (see [`record_value`]).
const IDEMPOTENT_TAG: u8 = b'i';

/// The value of the `n`-th record the simulation produces, by instance `instance` of
/// producer `producer`: unique, and readable back (see [`parse_value`]), so duplicates and
/// order can be judged from the log itself.
pub fn record_value(idempotent: bool, producer: usize, instance: u32, n: u64) -> Bytes {
    let tag = if idempotent { 'i' } else { 'n' };
    Bytes::from(format!("{tag}{producer}.{instance}-{n}"))
}

/// The key of the `n`-th record, when it is keyed.
pub fn record_key(n: u64) -> Bytes {
    Bytes::from(format!("k{}", n % super::schedule::KEY_SPACE))
}

/// What a value of [`record_value`] says: idempotent, producer, instance, record number.
pub fn parse_value(value: &[u8]) -> Option<(bool, usize, u32, u64)> {
    let text = std::str::from_utf8(value).ok()?;
    let idempotent = match text.as_bytes().first()? {
        b'i' => true,
        b'n' => false,
        _ => return None,
    };
    let (who, n) = text.get(1..)?.split_once('-')?;
    let (producer, instance) = who.split_once('.')?;
    Some((
        idempotent,
        producer.parse().ok()?,
        instance.parse().ok()?,
        n.parse().ok()?,
    ))
}

/// The value of the `n`-th record of transaction `txn` of transactional writer `writer`
/// (instance `instance`): unique, and told apart from [`record_value`]'s by its first byte
/// (`t`, which [`parse_value`] does not read).
pub fn txn_value(writer: usize, instance: u32, txn: u64, n: u32) -> Bytes {
    Bytes::from(format!("t{writer}.{instance}-{txn}-{n}"))
}

/// What a value of [`txn_value`] says: writer, instance, transaction, record number.
pub fn parse_txn_value(value: &[u8]) -> Option<(usize, u32, u64, u32)> {
    let text = std::str::from_utf8(value).ok()?.strip_prefix('t')?;
    let (who, rest) = text.split_once('-')?;
    let (writer, instance) = who.split_once('.')?;
    let (txn, n) = rest.split_once('-')?;
    Some((
        writer.parse().ok()?,
        instance.parse().ok()?,
        txn.parse().ok()?,
        n.parse().ok()?,
    ))
}

/// How a transaction ended, as its writer learned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TxnFate {
    /// The coordinator acknowledged the commit: every record is read once, in order.
    Committed,
    /// The coordinator acknowledged the abort: no record is ever read.
    Aborted,
    /// The writer never asked to commit (it died, was fenced or failed first, and its abort
    /// was not acknowledged): only an abort can end it, so no record is ever read.
    Abandoned,
    /// The commit was asked for and no answer came: all records are read, or none.
    Unknown,
}

/// One transaction as its writer saw it: what it sent where, and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TxnOutcome {
    pub writer: usize,
    pub instance: u32,
    /// The writer's transaction number (unique across instances, in the order begun).
    pub txn: u64,
    /// The values handed to each partition, in the order sent (a send whose answer never
    /// came included).
    pub sent: Vec<(TopicPartition, Vec<Bytes>)>,
    pub fate: TxnFate,
    /// The writer learned it was fenced by a newer instance.
    pub fenced: bool,
}

/// The rules the checker enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    HighWatermarkMonotonic,
    LeaderEpochMonotonic,
    OneLeaderPerEpoch,
    IsrWithinReplicas,
    ReplicaOffsetsOrdered,
    CommittedLogsAgree,
    AckedRecordsDurable,
    NoIdempotentDuplicates,
    ConsistentReads,
    /// A leader comes from the ISR unless unclean election is enabled.
    ElectedFromIsr,
    /// An idempotent (or one-request-in-flight) producer's records land in the order sent.
    ProducerOrder,
    /// A group's committed offset is the last one a commit was acknowledged for.
    CommitsDurable,
    CommittedOffsetsMonotonic,
    GroupGenerationMonotonic,
    /// After healing, every partition online with its full ISR and every live group stable.
    Liveness,
    /// An idle cluster does a bounded amount of work per simulated second.
    IdleWork,
    /// Simulated time keeps moving: it stops when tasks spin without ever waiting.
    Progress,
    /// A whole-cluster restart comes back.
    Restart,
    /// A transaction's records are all visible to read_committed consumers or none are;
    /// an aborted transaction's (or one never asked to commit) none.
    TxnAtomic,
    /// A committed transaction's records are read once by read_committed consumers, in the
    /// order its writer sent them.
    TxnCommittedOnce,
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Invariant::HighWatermarkMonotonic => "a leader's HW never moves back within its epoch",
            Invariant::LeaderEpochMonotonic => "leader epochs never decrease",
            Invariant::OneLeaderPerEpoch => "at most one leader per partition and epoch",
            Invariant::IsrWithinReplicas => "the ISR is a non-empty subset of the replicas holding the leader",
            Invariant::ReplicaOffsetsOrdered => "log start <= HW <= log end on every replica",
            Invariant::CommittedLogsAgree => "ISR members and later leaders hold identical batches below the HW",
            Invariant::AckedRecordsDurable => "an acks=all acknowledged record stays readable at its offset",
            Invariant::NoIdempotentDuplicates => "an idempotent producer's record appears once",
            Invariant::ConsistentReads => "a consumed record is in the committed log where it was read",
            Invariant::ElectedFromIsr => "a leader comes from the ISR unless unclean election is enabled",
            Invariant::ProducerOrder => "an idempotent producer's records land in the order sent",
            Invariant::CommitsDurable => "a group's committed offset is the last acknowledged commit",
            Invariant::CommittedOffsetsMonotonic => "a group's committed offsets never go back",
            Invariant::GroupGenerationMonotonic => "a group's generation never goes back",
            Invariant::Liveness => "after healing, partitions are online with full ISR and live groups stable",
            Invariant::IdleWork => "an idle cluster does bounded work",
            Invariant::Progress => "simulated time keeps moving (no livelock)",
            Invariant::Restart => "a whole-cluster restart comes back",
            Invariant::TxnAtomic => "a transaction is read_committed visible whole or not at all, an aborted one never",
            Invariant::TxnCommittedOnce => "a committed transaction's records are read once, in order",
        };
        f.write_str(text)
    }
}

/// A broken rule: where, when and the facts.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub step: usize,
    /// Simulated time since the run started.
    pub at: Duration,
    pub invariant: Invariant,
    pub facts: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "step {} (t={:.1} s): {}: {}",
            self.step,
            self.at.as_secs_f64(),
            self.invariant,
            self.facts
        )
    }
}

/// A record a producer learned was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Ack {
    pub tp: TopicPartition,
    pub offset: i64,
    pub value: Bytes,
    /// When the producer was handed the record (the simulation's time): an answer can
    /// arrive long after the write (retries of earlier batches hold it back), so a record
    /// sent before a loss is at risk whenever its acknowledgement comes.
    pub sent_at: Duration,
}

/// A record a consumer received.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    pub tp: TopicPartition,
    pub offset: i64,
    pub value: Bytes,
    /// The leader epoch of the record's batch: a consumer may hand out records fetched
    /// before a loss long after it, from its buffer.
    pub leader_epoch: i32,
}

/// A commit a consumer made, with what its answer said.
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    pub group: String,
    pub offsets: Vec<(TopicPartition, i64)>,
    pub fate: CommitFate,
    /// When the answer came (the simulation's time).
    pub answered_at: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitFate {
    /// The coordinator stored it.
    Acknowledged,
    /// The coordinator refused it before writing anything.
    Refused,
    /// No answer, or one that leaves open whether it was written.
    Unknown,
}

/// What the fresh clients read back at the end: every partition's records by offset, and
/// every group's committed offsets.
#[derive(Debug, Default)]
pub struct FinalState {
    pub logs: BTreeMap<TopicPartition, BTreeMap<i64, Bytes>>,
    /// The partitions transactional writers wrote, as a read_committed consumer reads them
    /// once no transaction is open: (offset, value).
    pub committed_logs: BTreeMap<TopicPartition, Vec<(i64, Bytes)>>,
    /// The leader epoch of each record's batch as the fresh consumer saw it: a record an
    /// earlier read saw differently was rewritten only if a later epoch holds its offset.
    pub epochs: BTreeMap<TopicPartition, BTreeMap<i64, i32>>,
    pub commits: BTreeMap<String, BTreeMap<TopicPartition, i64>>,
}

impl FinalState {
    /// `tp`'s records as read back: (offset, value, leader epoch of its batch).
    pub fn insert_log(&mut self, tp: &TopicPartition, records: impl IntoIterator<Item = (i64, Bytes, i32)>) {
        let log = self.logs.entry(tp.clone()).or_default();
        let epochs = self.epochs.entry(tp.clone()).or_default();
        for (offset, value, epoch) in records {
            log.insert(offset, value);
            epochs.insert(offset, epoch);
        }
    }
}

/// The losses Kafka's rules allow, as the checker counts what each excused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Allowance {
    /// A leader elected outside the ISR with unclean election enabled.
    UncleanElection,
    /// A leader elected when every in-sync replica had lost unflushed data in a power loss.
    PowerLoss,
    /// Acknowledged by a deposed leader (min.insync.replicas 1) before it learned of a
    /// lossy election.
    DeposedLeader,
    /// An idempotent record written again under a bumped epoch after its first copy's fate
    /// was unknown to its producer (KIP-360).
    RetryAfterUnknownFate,
}

impl Allowance {
    pub const ALL: [Allowance; 4] = [
        Allowance::UncleanElection,
        Allowance::PowerLoss,
        Allowance::DeposedLeader,
        Allowance::RetryAfterUnknownFate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Allowance::UncleanElection => "unclean election",
            Allowance::PowerLoss => "power loss of every in-sync replica",
            Allowance::DeposedLeader => "deposed leader (min.insync 1)",
            Allowance::RetryAfterUnknownFate => "retry after an unknown fate",
        }
    }
}

/// Reads a replica's own log: whole batches from the one holding `from`, none at or past
/// `upper` (as [`crate::engine::Inspector::read_replica`]).
pub trait ReplicaLogs {
    fn read(&self, broker: BrokerId, tp: &TopicPartition, from: i64, upper: i64) -> Result<Bytes, ErrorCode>;
}

/// One sample of the cluster, taken at once (nothing runs in between).
pub struct Observation<'a> {
    pub step: usize,
    pub at: Duration,
    pub image: &'a MetadataImage,
    pub snapshot: &'a ClusterSnapshot,
    pub replicas: &'a [ReplicaProbe],
    pub logs: &'a dyn ReplicaLogs,
}

/// What the checker must know of the cluster's configuration.
#[derive(Debug, Clone)]
pub struct CheckerConfig {
    pub offsets_topic_partitions: i32,
    /// The static `unclean.leader.election.enable` (changes at run time arrive as events).
    pub unclean_leader_election: bool,
    /// Producers whose records must land in the order sent: idempotent ones, and those with
    /// one request in flight.
    pub ordered_producers: BTreeSet<usize>,
    /// Whether a power loss can cut a log back at all (not with `flush = always`).
    pub power_loss_loses_data: bool,
}

/// One batch as the committed log knows it: what must be equal on every replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BatchSummary {
    base_offset: i64,
    last_offset: i64,
    leader_epoch: i32,
    crc: u32,
    /// Producer id and epoch: an idempotent producer's guarantee holds within one.
    producer: (i64, i16),
}

impl fmt::Display for BatchSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}..={} epoch {} crc {:08x}]",
            self.base_offset, self.last_offset, self.leader_epoch, self.crc
        )
    }
}

/// The committed log of a partition as observed so far: contiguous batches from `start` to
/// `end` and the value of every record in them.
#[derive(Debug, Default)]
struct Committed {
    start: Option<i64>,
    end: i64,
    batches: BTreeMap<i64, BatchSummary>,
    values: BTreeMap<i64, Bytes>,
    /// Idempotent values seen, per producer id and epoch, at their offset.
    idempotent: HashMap<(Bytes, (i64, i16)), i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckState {
    Pending,
    Verified,
    /// Acknowledged before a loss the rules allow (or by a deposed leader after it).
    AtRisk(Allowance),
}

#[derive(Debug)]
struct AckedRecord {
    offset: i64,
    value: Bytes,
    state: AckState,
}

/// Everything remembered of one partition (one incarnation of its topic).
#[derive(Debug, Default)]
struct PartitionHistory {
    topic_id: String,
    seen: bool,
    leader_epoch: i32,
    isr: Vec<BrokerId>,
    /// The leader the metadata gave each epoch.
    leaders: BTreeMap<i32, BrokerId>,
    /// Leaders replicas claimed to be, per epoch.
    claimed: BTreeMap<i32, BrokerId>,
    committed: Committed,
    /// The leader (broker, incarnation, epoch) whose whole log was checked.
    verified_leader: Option<(BrokerId, i64, i32)>,
    /// Per ISR follower: its incarnation and how far its log was checked.
    followers: BTreeMap<BrokerId, (i64, i64)>,
    acked: Vec<AckedRecord>,
    /// Reads still to compare with the committed log as it grows.
    reads: Vec<Read>,
    /// Every read, for the final read-back.
    all_reads: Vec<Read>,
    /// Epochs whose election was an allowed loss, and which.
    losses: BTreeMap<i32, Allowance>,
    /// The topic's `min.insync.replicas` as last seen.
    min_insync: i32,
    /// The topic's own `unclean.leader.election.enable` as last seen.
    unclean: bool,
    /// Open after a loss at this epoch while a replica may still lead an earlier epoch (a
    /// paused leader with only itself in sync acknowledges what it appends when it wakes,
    /// as Kafka's does, and the new line overwrites it): with `min.insync.replicas` 1,
    /// acknowledgements received now are at risk too. The time is when no such leader was
    /// first seen again.
    zombie_window: Option<(i32, Option<Duration>)>,
    /// When the last allowed loss was seen.
    last_loss_at: Option<Duration>,
    /// A compacted topic of the simulation's (keyed records): each replica's cleaner may
    /// remove a record once a later record of its key is in the log, so replicas agree
    /// record by record, not batch by batch.
    compacted: bool,
}

impl PartitionHistory {
    /// Whether a record of leader epoch `epoch` was written before the last allowed loss. In
    /// a compacted log such a record may be on one replica and not another for good: the
    /// cleaner of one removed it for a later record of its key that the loss then took, the
    /// other had not cleaned yet.
    fn before_loss(&self, epoch: i32) -> bool {
        self.compacted && self.losses.keys().next_back().is_some_and(|loss| epoch < *loss)
    }
}

impl Committed {
    /// The leader epoch of the committed batch holding `offset` (-1 when none does).
    fn epoch_at(&self, offset: i64) -> i32 {
        self.batches
            .range(..=offset)
            .next_back()
            .filter(|(_, b)| b.last_offset >= offset)
            .map_or(-1, |(_, b)| b.leader_epoch)
    }
}

/// How long a loss's zombie window stays open after its last old-epoch leader was seen:
/// the answers it sent may still be on their way.
const ZOMBIE_ANSWERS_IN_FLIGHT: Duration = Duration::from_secs(2);

/// A replica whose log a power loss cut back: `left_isr` once it was seen outside the ISR,
/// so that seeing it inside again means it caught up.
#[derive(Debug, Clone, Copy)]
struct Taint {
    left_isr: bool,
}

/// What was seen of one group. Values carry the leader epochs (of the group's offsets
/// partition, and of the partition an offset is for) under which they were first seen, so a
/// regression can be matched with a loss the rules allow between then and now.
#[derive(Debug, Default)]
struct GroupHistory {
    /// The highest generation seen Stable (Kafka persists a group when its assignment is
    /// stored, so only that generation survives a coordinator move) and the offsets
    /// partition's epoch then.
    generation: Option<(i32, i32)>,
    coordinator: Option<BrokerId>,
    offsets: BTreeMap<TopicPartition, SeenOffset>,
    /// The offsets partition's epoch when the group was last seen: a new one means the
    /// coordinator loaded the group from its log.
    offsets_epoch_seen: Option<i32>,
}

#[derive(Debug, Clone, Copy)]
struct SeenOffset {
    committed: i64,
    offsets_epoch: i32,
    partition_epoch: i32,
    /// A value a coordinator loaded from its log may come from a commit record above the
    /// HW, which no client was told is committed and a failover may drop: it counts once the
    /// coordinator's HW reaches this (its log end when the value appeared).
    unconfirmed_until: Option<i64>,
}

/// A group value that went back: a violation unless a loss the rules allow happened on one
/// of `excuses` (partition, from epoch, to epoch) in between. Decided at the end of the run,
/// because a loss can be recognised a sample after the coordinator acted on it.
#[derive(Debug)]
struct GroupSuspect {
    step: usize,
    at: Duration,
    invariant: Invariant,
    key: String,
    facts: String,
    excuses: Vec<(TopicPartition, i32, i32)>,
}

type ReplicaKey = (TopicPartition, BrokerId, i64);

/// One commit answer a member saw: (answered at, offset, fate).
type CommitAnswer = (Duration, i64, CommitFate);

pub struct Checker {
    config: CheckerConfig,
    step: usize,
    at: Duration,
    violations: Vec<Violation>,
    reported: BTreeSet<(Invariant, String)>,
    allowed: Vec<String>,
    partitions: BTreeMap<TopicPartition, PartitionHistory>,
    /// Per replica incarnation: the leader epoch it applied last.
    replica_epochs: BTreeMap<ReplicaKey, i32>,
    /// Per replica incarnation leading an epoch: that epoch and its highest HW.
    leader_hw: BTreeMap<ReplicaKey, (i32, i64)>,
    tainted: BTreeMap<TopicPartition, BTreeMap<BrokerId, Taint>>,
    groups: BTreeMap<String, GroupHistory>,
    group_suspects: Vec<GroupSuspect>,
    /// Every commit answer, per group and partition.
    commits: BTreeMap<(String, TopicPartition), Vec<CommitAnswer>>,
    /// The cluster-wide `unclean.leader.election.enable` as last seen.
    unclean_default: bool,
    /// Events were lost since the last sample: elections are judged from the samples.
    events_lagged: bool,
    excused: BTreeMap<Allowance, u64>,
    acked: u64,
    consumed: u64,
    commits_acknowledged: u64,
    /// Committed records of compacted topics the read-back no longer holds, with a later
    /// record of their key there: the cleaner's work, seen from outside.
    cleaned_records: u64,
    /// Every transaction the writers ended (or died in).
    txns: Vec<TxnOutcome>,
}

/// At most this many violations are kept per run; the first ones matter.
const MAX_VIOLATIONS: usize = 50;

impl Checker {
    pub fn new(config: CheckerConfig) -> Self {
        Checker {
            step: 0,
            at: Duration::ZERO,
            violations: Vec::new(),
            reported: BTreeSet::new(),
            allowed: Vec::new(),
            partitions: BTreeMap::new(),
            replica_epochs: BTreeMap::new(),
            leader_hw: BTreeMap::new(),
            tainted: BTreeMap::new(),
            groups: BTreeMap::new(),
            group_suspects: Vec::new(),
            commits: BTreeMap::new(),
            unclean_default: config.unclean_leader_election,
            events_lagged: false,
            excused: BTreeMap::new(),
            acked: 0,
            consumed: 0,
            commits_acknowledged: 0,
            cleaned_records: 0,
            txns: Vec::new(),
            config,
        }
    }

    /// A transaction a writer ended (or died in), judged at [`Checker::finish`].
    pub fn transaction(&mut self, txn: TxnOutcome) {
        self.txns.push(txn);
    }

    /// The transactions seen, by fate (`committed`, `aborted`, `abandoned`, `unknown`), and
    /// how many ended with their writer learning it was fenced (`fenced`).
    pub fn transactions(&self) -> BTreeMap<&'static str, u64> {
        let mut out = BTreeMap::new();
        for t in &self.txns {
            let fate = match t.fate {
                TxnFate::Committed => "committed",
                TxnFate::Aborted => "aborted",
                TxnFate::Abandoned => "abandoned",
                TxnFate::Unknown => "unknown",
            };
            *out.entry(fate).or_insert(0) += 1;
            if t.fenced {
                *out.entry("fenced").or_insert(0) += 1;
            }
        }
        out
    }

    /// Whether a loss Kafka's rules allow happened on `tp`.
    pub fn had_allowed_loss(&self, tp: &TopicPartition) -> bool {
        self.partitions.get(tp).is_some_and(|h| !h.losses.is_empty())
    }

    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    pub fn allowed_losses(&self) -> &[String] {
        &self.allowed
    }

    pub fn acked_records(&self) -> u64 {
        self.acked
    }

    pub fn consumed_records(&self) -> u64 {
        self.consumed
    }

    pub fn acknowledged_commits(&self) -> u64 {
        self.commits_acknowledged
    }

    pub fn cleaned_records(&self) -> u64 {
        self.cleaned_records
    }

    /// How many records (acknowledged, read, committed or duplicated) each allowance
    /// excused.
    pub fn excused(&self) -> &BTreeMap<Allowance, u64> {
        &self.excused
    }

    fn excuse(&mut self, allowance: Allowance) {
        *self.excused.entry(allowance).or_insert(0) += 1;
    }

    /// Events were lost: the next sample judges elections from the metadata alone.
    pub fn events_lost(&mut self) {
        self.events_lagged = true;
    }

    /// A commit's answer.
    pub fn committed(&mut self, commit: Commit) {
        if commit.fate == CommitFate::Acknowledged {
            self.commits_acknowledged += 1;
        }
        for (tp, offset) in commit.offsets {
            self.commits
                .entry((commit.group.clone(), tp))
                .or_default()
                .push((commit.answered_at, offset, commit.fate));
        }
    }

    /// Records a violation once per `key` (a persistent fault is not reported every sample).
    pub fn violate(&mut self, invariant: Invariant, key: impl Into<String>, facts: impl Into<String>) {
        if self.violations.len() >= MAX_VIOLATIONS || !self.reported.insert((invariant, key.into())) {
            return;
        }
        self.violations.push(Violation {
            step: self.step,
            at: self.at,
            invariant,
            facts: facts.into(),
        });
    }

    /// Moves the clock of the reports (for violations found outside a sample).
    pub fn at_step(&mut self, step: usize, at: Duration) {
        self.step = step;
        self.at = at;
    }

    /// An acks=all acknowledgement.
    pub fn acked(&mut self, ack: Ack) {
        if ack.offset < 0 {
            return;
        }
        self.acked += 1;
        let history = self.partitions.entry(ack.tp).or_default();
        let sent_before_loss = history.last_loss_at.is_some_and(|t| ack.sent_at <= t);
        let last_loss = history.losses.values().next_back().copied();
        let state = match last_loss {
            Some(allowance) if sent_before_loss => AckState::AtRisk(allowance),
            // A deposed leader acknowledges alone only when one in-sync copy is enough.
            Some(_) if history.zombie_window.is_some() && history.min_insync <= 1 => {
                AckState::AtRisk(Allowance::DeposedLeader)
            }
            _ => AckState::Pending,
        };
        history.acked.push(AckedRecord {
            offset: ack.offset,
            value: ack.value,
            state,
        });
    }

    pub fn consumed(&mut self, read: Read) {
        self.consumed += 1;
        let history = self.partitions.entry(read.tp.clone()).or_default();
        history.all_reads.push(read.clone());
        // A leader of an epoch before a loss serves its own committed view until it learns
        // of the new epoch (a paused one when it wakes), and a record of an epoch before an
        // allowed loss is not in the new line's committed log: such reads are held to the
        // surviving log at the end instead (see `finish`).
        if history.zombie_window.is_some() || history.losses.range(read.leader_epoch + 1..).next().is_some() {
            return;
        }
        history.reads.push(read);
    }

    /// A broker lost what it had not fsynced: until it is seen back in an ISR after leaving
    /// it, electing it may lose committed records. Where every member of a partition's ISR
    /// has now lost power so, no replica holds what they lost: Kafka's guarantee needs one
    /// in-sync replica to survive, so the loss is allowed at once (after a whole-cluster
    /// power loss the leaders come back without an election to judge).
    pub fn power_loss(&mut self, broker: BrokerId, image: &MetadataImage) {
        if !self.config.power_loss_loses_data {
            return;
        }
        for (tp, p) in image.partitions().filter(|(_, p)| p.replicas.contains(&broker)) {
            self.tainted.entry(tp.clone()).or_default().insert(
                broker,
                Taint {
                    left_isr: !p.isr.contains(&broker),
                },
            );
            let next_epoch = p.leader_epoch + 1;
            let isr = self.partitions.get(&tp).map(|h| h.isr.clone()).unwrap_or_default();
            if !isr.is_empty()
                && isr.iter().all(|b| self.is_tainted(&tp, *b))
                && self
                    .partitions
                    .get(&tp)
                    .is_some_and(|h| !h.losses.contains_key(&next_epoch))
            {
                self.allow_loss(
                    &tp,
                    next_epoch,
                    Allowance::PowerLoss,
                    format!("every member of the ISR {isr:?} lost unflushed data in a power loss"),
                );
            }
        }
    }

    /// A cluster event: the metadata changes as they happen, in order (the ISR, elections,
    /// settings). Elections are judged here against the ISR and settings seen before them.
    pub fn event(&mut self, event: &ClusterEvent) {
        match &event.kind {
            EventKind::LeaderElected {
                tp,
                new,
                leader_epoch,
                isr,
                ..
            } => {
                self.judge_election(tp, *new, *leader_epoch);
                if let Some(h) = self.partitions.get_mut(tp) {
                    h.isr = isr.clone();
                }
                self.untaint_rejoined(tp, isr);
            }
            EventKind::PartitionOffline { tp, isr } => {
                if let Some(h) = self.partitions.get_mut(tp) {
                    h.isr = isr.clone();
                }
            }
            EventKind::IsrShrunk { tp, isr, .. } => {
                if let Some(h) = self.partitions.get_mut(tp) {
                    h.isr = isr.clone();
                }
                self.untaint_rejoined(tp, isr);
            }
            EventKind::IsrExpanded { tp, added, isr } => {
                if let Some(h) = self.partitions.get_mut(tp) {
                    h.isr = isr.clone();
                }
                if let Some(t) = self.tainted.get_mut(tp) {
                    for b in added {
                        t.remove(b);
                    }
                }
            }
            EventKind::SettingChanged(LiveSetting::UncleanElection { topic: None, enabled }) => {
                self.unclean_default = *enabled;
            }
            EventKind::SettingChanged(LiveSetting::UncleanElection {
                topic: Some(topic),
                enabled,
            }) => {
                for (_, h) in self.partitions.iter_mut().filter(|(tp, _)| &tp.topic == topic) {
                    h.unclean = *enabled;
                }
            }
            EventKind::SettingChanged(LiveSetting::MinInsync { topic, value }) => {
                for (_, h) in self.partitions.iter_mut().filter(|(tp, _)| &tp.topic == topic) {
                    h.min_insync = *value;
                }
            }
            EventKind::TopicDeleted { topic } => self.forget_topic(topic),
            _ => {}
        }
    }

    /// `new` leads `tp` from `epoch`: from the ISR seen before (a clean election), from
    /// outside it with unclean election enabled (an allowed loss), or as the last in-sync
    /// replicas all lost unflushed data (an allowed loss). Anything else breaks a rule.
    fn judge_election(&mut self, tp: &TopicPartition, new: BrokerId, epoch: i32) {
        let unclean_enabled = self.unclean_default || self.partitions.get(tp).is_some_and(|h| h.unclean);
        let Some(history) = self.partitions.get(tp) else { return };
        let prior_isr = history.isr.clone();
        if prior_isr.is_empty() || history.losses.contains_key(&epoch) {
            return;
        }
        let all_tainted = prior_isr.iter().all(|b| self.is_tainted(tp, *b));
        if !prior_isr.contains(&new) {
            if unclean_enabled {
                self.allow_loss(
                    tp,
                    epoch,
                    Allowance::UncleanElection,
                    format!("unclean election of broker {new}, outside the last ISR seen {prior_isr:?}"),
                );
            } else {
                self.violate(
                    Invariant::ElectedFromIsr,
                    format!("{tp} epoch {epoch}"),
                    format!(
                        "{tp}: broker {new} was elected leader of epoch {epoch} from outside the ISR {prior_isr:?}, with unclean election disabled"
                    ),
                );
            }
        } else if self.is_tainted(tp, new) && all_tainted {
            self.allow_loss(tp, epoch, Allowance::PowerLoss, power_loss_reason(new, &prior_isr));
        }
        if let Some(h) = self.partitions.get_mut(tp)
            && !prior_isr.contains(&new)
        {
            h.isr = vec![new];
        }
    }

    /// A tainted replica seen outside the ISR and then inside again caught up since.
    fn untaint_rejoined(&mut self, tp: &TopicPartition, isr: &[BrokerId]) {
        if let Some(taints) = self.tainted.get_mut(tp) {
            taints.retain(|b, t| {
                if !isr.contains(b) {
                    t.left_isr = true;
                }
                !(t.left_isr && isr.contains(b))
            });
        }
    }

    fn is_tainted(&self, tp: &TopicPartition, broker: BrokerId) -> bool {
        self.tainted.get(tp).is_some_and(|t| t.contains_key(&broker))
    }

    fn forget_topic(&mut self, topic: &str) {
        // Its losses go with its history: decide now what they excuse.
        let (mine, others): (Vec<GroupSuspect>, Vec<GroupSuspect>) = std::mem::take(&mut self.group_suspects)
            .into_iter()
            .partition(|s| s.excuses.iter().any(|(tp, _, _)| tp.topic == topic));
        self.group_suspects = mine;
        self.settle_group_suspects();
        self.group_suspects = others;
        self.partitions.retain(|tp, _| tp.topic != topic);
        self.tainted.retain(|tp, _| tp.topic != topic);
        self.replica_epochs.retain(|(tp, _, _), _| tp.topic != topic);
        self.leader_hw.retain(|(tp, _, _), _| tp.topic != topic);
        for g in self.groups.values_mut() {
            g.offsets.retain(|tp, _| tp.topic != topic);
        }
    }

    /// A loss the rules allow happened at `epoch`: what was committed before may be gone, so
    /// the committed log is learned afresh from the new leader.
    fn allow_loss(&mut self, tp: &TopicPartition, epoch: i32, allowance: Allowance, reason: String) {
        let history = self.partitions.entry(tp.clone()).or_default();
        if history.losses.insert(epoch, allowance).is_some() {
            return;
        }
        let mut at_risk = 0;
        for a in history
            .acked
            .iter_mut()
            .filter(|a| !matches!(a.state, AckState::AtRisk(_)))
        {
            a.state = AckState::AtRisk(allowance);
            at_risk += 1;
        }
        history.reads.clear();
        history.committed = Committed::default();
        history.verified_leader = None;
        history.followers.clear();
        history.last_loss_at = Some(self.at);
        history.zombie_window = Some((epoch.max(history.zombie_window.map_or(epoch, |(e, _)| e)), None));
        // Group offsets of `tp` keep the epoch they were seen under: a consumer whose
        // position the loss cut off resets (auto.offset.reset) and commits a lower offset,
        // perhaps much later, which the loss excuses (see `settle_group_suspects`).
        self.allowed.push(format!(
            "step {}: {tp} epoch {epoch}: {reason}; {at_risk} acknowledged records at risk",
            self.step
        ));
    }

    /// Checks one sample against every safety rule.
    pub fn observe(&mut self, o: &Observation) {
        self.step = o.step;
        self.at = o.at;
        self.forget_deleted(o.image);
        self.check_metadata(o.image);
        self.check_replicas(o);
        self.check_logs(o);
        self.check_acks_and_reads();
        self.check_groups(o);
        self.close_zombie_windows(o);
    }

    fn forget_deleted(&mut self, image: &MetadataImage) {
        let gone: BTreeSet<String> = self
            .partitions
            .keys()
            .filter(|tp| image.partition(tp).is_none())
            .map(|tp| tp.topic.clone())
            .collect();
        for topic in gone {
            self.forget_topic(&topic);
        }
        for (name, t) in &image.topics {
            let renewed = self
                .partitions
                .iter()
                .any(|(tp, h)| &tp.topic == name && h.seen && h.topic_id != t.id);
            if renewed {
                self.forget_topic(name);
            }
        }
    }

    fn check_metadata(&mut self, image: &MetadataImage) {
        self.unclean_default = image
            .unclean_leader_election
            .unwrap_or(self.config.unclean_leader_election);
        let judge_from_samples = std::mem::take(&mut self.events_lagged);
        for (tp, reg) in image.partitions() {
            let topic_id = image.topics.get(&tp.topic).map(|t| t.id.clone()).unwrap_or_default();
            let leader = (reg.leader != NO_LEADER).then_some(reg.leader);
            if reg.isr.is_empty() || reg.isr.iter().any(|r| !reg.replicas.contains(r)) {
                self.violate(
                    Invariant::IsrWithinReplicas,
                    format!("{tp} isr {:?}", reg.isr),
                    format!(
                        "{tp}: ISR {:?} is empty or not within the replicas {:?}",
                        reg.isr, reg.replicas
                    ),
                );
            }
            if let Some(l) = leader.filter(|l| !reg.isr.contains(l)) {
                self.violate(
                    Invariant::IsrWithinReplicas,
                    format!("{tp} leader {l} epoch {}", reg.leader_epoch),
                    format!(
                        "{tp}: leader {l} (epoch {}) is not in the ISR {:?}",
                        reg.leader_epoch, reg.isr
                    ),
                );
            }
            let config = image.topics.get(&tp.topic).map(|t| &t.config);
            let history = self.partitions.entry(tp.clone()).or_default();
            let first = !history.seen;
            history.seen = true;
            history.topic_id = topic_id;
            if let Some(config) = config {
                history.min_insync = config.min_insync_replicas;
                history.compacted = tp.topic != OFFSETS_TOPIC && config.cleanup_policy.is_some_and(|p| p.compacts());
                history.unclean = config.unclean_leader_election;
            }
            let (previous_epoch, previous_isr) = (history.leader_epoch, history.isr.clone());
            if !first && reg.leader_epoch < previous_epoch {
                self.violate(
                    Invariant::LeaderEpochMonotonic,
                    format!("{tp} metadata {}", reg.leader_epoch),
                    format!(
                        "{tp}: the metadata's leader epoch went from {previous_epoch} back to {}",
                        reg.leader_epoch
                    ),
                );
            }
            let history = self.partitions.entry(tp.clone()).or_default();
            if let Some(l) = leader {
                match history.leaders.get(&reg.leader_epoch) {
                    Some(&other) if other != l => self.violate(
                        Invariant::OneLeaderPerEpoch,
                        format!("{tp} metadata epoch {}", reg.leader_epoch),
                        format!(
                            "{tp}: the metadata named broker {other} and later broker {l} leader of epoch {}",
                            reg.leader_epoch
                        ),
                    ),
                    Some(_) => {}
                    None => {
                        history.leaders.insert(reg.leader_epoch, l);
                    }
                }
            }
            let history = self.partitions.entry(tp.clone()).or_default();
            history.leader_epoch = reg.leader_epoch;
            history.isr = reg.isr.clone();
            // Elections are judged as their events arrive; only when events were lost is the
            // ISR of the previous sample all there is to judge them by.
            if let Some(l) = leader
                && !first
                && judge_from_samples
                && reg.leader_epoch != previous_epoch
            {
                if let Some(h) = self.partitions.get_mut(&tp) {
                    h.isr = previous_isr;
                }
                self.judge_election(&tp, l, reg.leader_epoch);
                if let Some(h) = self.partitions.get_mut(&tp) {
                    h.isr = reg.isr.clone();
                }
            }
            self.untaint_rejoined(&tp, &reg.isr);
        }
    }

    /// Closes the zombie windows no earlier-epoch leader keeps open any more.
    fn close_zombie_windows(&mut self, o: &Observation) {
        for (tp, history) in &mut self.partitions {
            let Some((epoch, clear_since)) = history.zombie_window else {
                continue;
            };
            let zombie = o
                .replicas
                .iter()
                .any(|r| &r.tp == tp && r.is_leader && r.leader_epoch < epoch);
            history.zombie_window = match (zombie, clear_since) {
                (true, _) => Some((epoch, None)),
                (false, None) => Some((epoch, Some(o.at))),
                (false, Some(t)) if o.at.saturating_sub(t) < ZOMBIE_ANSWERS_IN_FLIGHT => Some((epoch, Some(t))),
                (false, Some(_)) => None,
            };
        }
    }

    fn check_replicas(&mut self, o: &Observation) {
        for r in o.replicas {
            let Some(reg) = o.image.partition(&r.tp) else { continue };
            let who = format!("{} on broker {} (incarnation {})", r.tp, r.broker, r.broker_epoch);
            if !(r.log_start_offset <= r.high_watermark && r.high_watermark <= r.log_end_offset) {
                self.violate(
                    Invariant::ReplicaOffsetsOrdered,
                    format!("{who} {} {} {}", r.log_start_offset, r.high_watermark, r.log_end_offset),
                    format!(
                        "{who}: log start {}, HW {}, log end {}",
                        r.log_start_offset, r.high_watermark, r.log_end_offset
                    ),
                );
            }
            let key: ReplicaKey = (r.tp.clone(), r.broker, r.broker_epoch);
            if let Some(&before) = self.replica_epochs.get(&key)
                && r.leader_epoch < before
            {
                self.violate(
                    Invariant::LeaderEpochMonotonic,
                    format!("{who} {before} {}", r.leader_epoch),
                    format!(
                        "{who}: the replica's leader epoch went from {before} back to {}",
                        r.leader_epoch
                    ),
                );
            }
            self.replica_epochs.insert(key.clone(), r.leader_epoch);
            if !r.is_leader {
                continue;
            }
            if let Some(&(epoch, hw)) = self.leader_hw.get(&key)
                && epoch == r.leader_epoch
                && r.high_watermark < hw
            {
                self.violate(
                    Invariant::HighWatermarkMonotonic,
                    format!("{who} epoch {epoch}"),
                    format!(
                        "{who}: as leader of epoch {epoch} its HW went from {hw} back to {}",
                        r.high_watermark
                    ),
                );
            }
            let best = match self.leader_hw.get(&key) {
                Some(&(epoch, hw)) if epoch == r.leader_epoch => hw.max(r.high_watermark),
                _ => r.high_watermark,
            };
            self.leader_hw.insert(key, (r.leader_epoch, best));
            let history = self.partitions.entry(r.tp.clone()).or_default();
            let granted = history.leaders.get(&r.leader_epoch).copied();
            let claimed = *history.claimed.entry(r.leader_epoch).or_insert(r.broker);
            let other = granted
                .filter(|g| *g != r.broker)
                .or((claimed != r.broker).then_some(claimed));
            if let Some(other) = other {
                self.violate(
                    Invariant::OneLeaderPerEpoch,
                    format!("{} epoch {} {} {other}", r.tp, r.leader_epoch, r.broker),
                    format!(
                        "{who} acts as leader of epoch {}, which broker {other} leads (the metadata is at epoch {} with leader {})",
                        r.leader_epoch, reg.leader_epoch, reg.leader
                    ),
                );
            }
        }
    }

    fn check_logs(&mut self, o: &Observation) {
        let tps: Vec<TopicPartition> = o.image.partitions().map(|(tp, _)| tp).collect();
        for tp in tps {
            let Some(reg) = o.image.partition(&tp) else { continue };
            let Some(leader) = o
                .replicas
                .iter()
                .find(|r| r.tp == tp && r.broker == reg.leader && r.is_leader && r.leader_epoch == reg.leader_epoch)
            else {
                continue;
            };
            let isr = reg.isr.clone();
            self.check_leader_log(o, &tp, leader);
            self.extend_committed(o, &tp, leader);
            for follower in o
                .replicas
                .iter()
                .filter(|r| r.tp == tp && r.broker != leader.broker && isr.contains(&r.broker))
            {
                self.check_follower_log(o, &tp, follower);
            }
            if let Some(h) = self.partitions.get_mut(&tp) {
                h.followers.retain(|b, _| isr.contains(b));
            }
        }
    }

    /// A new leader (or a leader's new incarnation) must hold the whole committed log.
    fn check_leader_log(&mut self, o: &Observation, tp: &TopicPartition, leader: &ReplicaProbe) {
        let id = (leader.broker, leader.broker_epoch, leader.leader_epoch);
        let Some(history) = self.partitions.get(tp) else { return };
        if history.verified_leader == Some(id) {
            return;
        }
        let Some(start) = history.committed.start else {
            if let Some(h) = self.partitions.get_mut(tp) {
                h.verified_leader = Some(id);
            }
            return;
        };
        let end = history.committed.end;
        let who = format!(
            "{tp}: leader {} (incarnation {}, epoch {}{})",
            leader.broker,
            leader.broker_epoch,
            leader.leader_epoch,
            if self.is_tainted(tp, leader.broker) {
                ", lost unflushed data in a power loss"
            } else {
                ""
            }
        );
        if leader.log_end_offset < end {
            self.violate(
                Invariant::CommittedLogsAgree,
                format!("{tp} leader {id:?} short"),
                format!(
                    "{who} ends its log at {}, but offsets up to {end} were committed (below an earlier HW)",
                    leader.log_end_offset
                ),
            );
        }
        let upper = end.min(leader.log_end_offset);
        self.compare(o, tp, leader.broker, start.max(leader.log_start_offset), upper, &who);
        if let Some(h) = self.partitions.get_mut(tp) {
            h.verified_leader = Some(id);
        }
    }

    /// Adds the leader's batches below its HW to the committed log.
    fn extend_committed(&mut self, o: &Observation, tp: &TopicPartition, leader: &ReplicaProbe) {
        let decode = tp.topic != OFFSETS_TOPIC;
        let Some(history) = self.partitions.get_mut(tp) else {
            return;
        };
        let committed = &mut history.committed;
        let from = match committed.start {
            Some(_) => committed.end,
            None => {
                committed.start = Some(leader.log_start_offset);
                committed.end = leader.log_start_offset;
                leader.log_start_offset
            }
        };
        if from >= leader.high_watermark || from > leader.log_end_offset {
            return;
        }
        let batches = match read_batches(o.logs, leader.broker, tp, from, leader.high_watermark, decode) {
            Ok(b) => b,
            Err(e) => {
                self.violate(
                    Invariant::CommittedLogsAgree,
                    format!("{tp} read {} {from}", leader.broker),
                    format!(
                        "{tp}: the leader {} cannot read its committed log from {from} (HW {}): {e}",
                        leader.broker, leader.high_watermark
                    ),
                );
                return;
            }
        };
        let mut duplicates = Vec::new();
        let mut gap = None;
        for (summary, values) in batches {
            // The cleaner drops a batch whose records were all superseded: a compacted log
            // may skip offsets, never go back.
            let skipped = history.compacted && summary.base_offset > committed.end;
            if summary.base_offset != committed.end && !skipped {
                gap = Some((committed.end, summary));
                break;
            }
            committed.batches.insert(summary.base_offset, summary);
            committed.end = summary.last_offset + 1;
            for (offset, value) in values {
                if value.first() == Some(&IDEMPOTENT_TAG)
                    && let Some(first) = committed.idempotent.insert((value.clone(), summary.producer), offset)
                    && first != offset
                {
                    duplicates.push((value.clone(), first, offset));
                }
                committed.values.insert(offset, value);
            }
        }
        if let Some((expected, summary)) = gap {
            self.violate(
                Invariant::CommittedLogsAgree,
                format!("{tp} gap {expected}"),
                format!(
                    "{tp}: the leader {}'s log continues at {expected} with the batch {summary}",
                    leader.broker
                ),
            );
        }
        for (value, first, again) in duplicates {
            self.violate(
                Invariant::NoIdempotentDuplicates,
                format!("{tp} {value:?}"),
                format!(
                    "{tp}: idempotent record {:?} is in the committed log twice, at {first} and {again}",
                    String::from_utf8_lossy(&value)
                ),
            );
        }
    }

    fn check_follower_log(&mut self, o: &Observation, tp: &TopicPartition, follower: &ReplicaProbe) {
        let Some(history) = self.partitions.get(tp) else { return };
        let Some(start) = history.committed.start else { return };
        let end = history.committed.end;
        let from = match history.followers.get(&follower.broker) {
            Some(&(incarnation, checked)) if incarnation == follower.broker_epoch => checked,
            _ => start,
        };
        let tainted = self.is_tainted(tp, follower.broker);
        let who = format!(
            "{tp}: ISR member {} (incarnation {}{})",
            follower.broker,
            follower.broker_epoch,
            if tainted {
                ", lost unflushed data in a power loss"
            } else {
                ""
            }
        );
        if !tainted && follower.log_end_offset < end {
            self.violate(
                Invariant::CommittedLogsAgree,
                format!("{tp} follower {} {} short", follower.broker, follower.broker_epoch),
                format!(
                    "{who} ends its log at {}, below the committed offset {end}",
                    follower.log_end_offset
                ),
            );
        }
        let upper = end.min(follower.log_end_offset);
        self.compare(o, tp, follower.broker, from.max(follower.log_start_offset), upper, &who);
        if let Some(h) = self.partitions.get_mut(tp) {
            h.followers.insert(follower.broker, (follower.broker_epoch, upper));
        }
    }

    /// Compares a replica's batches in `from..upper` with the committed log.
    fn compare(&mut self, o: &Observation, tp: &TopicPartition, broker: BrokerId, from: i64, upper: i64, who: &str) {
        if from >= upper {
            return;
        }
        let compacted = self.partitions.get(tp).is_some_and(|h| h.compacted);
        let batches = match read_batches(o.logs, broker, tp, from, upper, compacted) {
            Ok(b) => b,
            Err(e) => {
                self.violate(
                    Invariant::CommittedLogsAgree,
                    format!("{tp} read {broker} {from}"),
                    format!("{who} cannot read its log from {from} to {upper}: {e}"),
                );
                return;
            }
        };
        if compacted {
            self.compare_records(tp, broker, from, upper, who, batches);
            return;
        }
        let Some(history) = self.partitions.get(tp) else { return };
        let mismatch = batches.iter().find_map(|(mine, _)| {
            let theirs = history.committed.batches.get(&mine.base_offset);
            (theirs != Some(mine)).then(|| (*mine, theirs.copied()))
        });
        let covered = batches.last().map_or(from, |(b, _)| b.last_offset + 1);
        if let Some((mine, theirs)) = mismatch {
            let committed = theirs.map_or_else(
                || {
                    history
                        .committed
                        .batches
                        .range(..=mine.base_offset)
                        .next_back()
                        .map_or("nothing".to_string(), |(_, b)| format!("the batch {b}"))
                },
                |b| format!("the batch {b}"),
            );
            self.violate(
                Invariant::CommittedLogsAgree,
                format!("{tp} {broker} {}", mine.base_offset),
                format!("{who} holds the batch {mine} where the committed log has {committed}"),
            );
        } else if covered < upper {
            self.violate(
                Invariant::CommittedLogsAgree,
                format!("{tp} {broker} hole {covered}"),
                format!("{who} has no batch at {covered}, below the committed offset {upper}"),
            );
        }
    }

    /// A compacted log's replica in `from..upper` against the committed log, record by
    /// record: each record it holds is the committed one at its offset, and each committed
    /// record it lacks has a later record of its key (its cleaner removed it).
    fn compare_records(
        &mut self,
        tp: &TopicPartition,
        broker: BrokerId,
        from: i64,
        upper: i64,
        who: &str,
        batches: Vec<ReadBatch>,
    ) {
        let Some(history) = self.partitions.get(tp) else { return };
        let committed = &history.committed.values;
        let mine: BTreeMap<i64, (Bytes, i32)> = batches
            .into_iter()
            .flat_map(|(summary, values)| values.into_iter().map(move |(o, v)| (o, (v, summary.leader_epoch))))
            .filter(|(offset, _)| (from..upper).contains(offset))
            .collect();
        let mut found = Vec::new();
        for (offset, (value, epoch)) in &mine {
            match committed.get(offset) {
                Some(theirs) if theirs == value => {}
                None if superseded(committed, *offset, value) || history.before_loss(*epoch) => {}
                theirs => found.push((
                    format!("{tp} {broker} {offset}"),
                    format!(
                        "{who} holds {:?} at {offset} where the committed log has {} (compacted topic)",
                        String::from_utf8_lossy(value),
                        describe(theirs)
                    ),
                )),
            }
        }
        for (offset, value) in committed.range(from..upper) {
            if !mine.contains_key(offset)
                && !superseded(committed, *offset, value)
                && !history.before_loss(history.committed.epoch_at(*offset))
            {
                found.push((
                    format!("{tp} {broker} {offset} missing"),
                    format!(
                        "{who} lacks {:?} at {offset}, and no later record of its key is committed (compacted topic)",
                        String::from_utf8_lossy(value)
                    ),
                ));
            }
        }
        for (key, facts) in found {
            self.violate(Invariant::CommittedLogsAgree, key, facts);
        }
    }

    fn check_acks_and_reads(&mut self) {
        let mut found = Vec::new();
        for (tp, history) in &mut self.partitions {
            let committed = &history.committed;
            let Some(start) = committed.start else { continue };
            // An ack at risk that the new line committed as acknowledged is safe from now on:
            // a later loss needs an allowance of its own.
            for a in history
                .acked
                .iter_mut()
                .filter(|a| matches!(a.state, AckState::AtRisk(_)) && a.offset >= start && a.offset < committed.end)
            {
                if committed.values.get(&a.offset) == Some(&a.value) {
                    a.state = AckState::Verified;
                }
            }
            for a in history
                .acked
                .iter_mut()
                .filter(|a| a.state == AckState::Pending && a.offset < committed.end)
            {
                a.state = AckState::Verified;
                let held = committed.values.get(&a.offset);
                let cleaned = history.compacted && held.is_none() && superseded(&committed.values, a.offset, &a.value);
                if a.offset >= start && held != Some(&a.value) && !cleaned {
                    found.push((
                        Invariant::AckedRecordsDurable,
                        format!("{tp} {}", a.offset),
                        format!(
                            "{tp}: record {:?} was acknowledged (acks=all) at offset {}, but the committed log holds {} there",
                            String::from_utf8_lossy(&a.value),
                            a.offset,
                            describe(held)
                        ),
                    ));
                }
            }
            history.reads.retain(|r| {
                if r.offset >= committed.end {
                    return true;
                }
                let held = committed.values.get(&r.offset);
                let cleaned = history.compacted && held.is_none() && superseded(&committed.values, r.offset, &r.value);
                if r.offset >= start && held != Some(&r.value) && !cleaned {
                    found.push((
                        Invariant::ConsistentReads,
                        format!("{tp} {}", r.offset),
                        format!(
                            "{tp}: a consumer read {:?} at offset {}, but the committed log holds {} there",
                            String::from_utf8_lossy(&r.value),
                            r.offset,
                            describe(held)
                        ),
                    ));
                }
                false
            });
        }
        for (invariant, key, facts) in found {
            self.violate(invariant, key, facts);
        }
    }

    fn check_groups(&mut self, o: &Observation) {
        let epoch_of = |tp: &TopicPartition| o.image.partition(tp).map_or(-1, |p| p.leader_epoch);
        for g in &o.snapshot.groups {
            let index = partition_for_group(&g.group_id, self.config.offsets_topic_partitions);
            let offsets_tp = TopicPartition::new(OFFSETS_TOPIC, index);
            let Some(reg) = o.image.partition(&offsets_tp) else {
                continue;
            };
            // Only the coordinator the metadata names, once it has taken up that leadership:
            // until it applies the new epoch it may still serve the groups of an epoch it led
            // before (clients asking it get that stale view, in Kafka too).
            let current = o.replicas.iter().find(|r| {
                r.tp == offsets_tp && r.broker == reg.leader && r.is_leader && r.leader_epoch == reg.leader_epoch
            });
            let Some(coordinator_replica) = current.filter(|_| g.coordinator == reg.leader) else {
                continue;
            };
            let (coordinator, offsets_epoch) = (reg.leader, reg.leader_epoch);
            let mut found = Vec::new();
            let history = self.groups.entry(g.group_id.clone()).or_default();
            let reloaded = history.offsets_epoch_seen != Some(offsets_epoch);
            history.offsets_epoch_seen = Some(offsets_epoch);
            let moved = match history.coordinator {
                Some(before) if before != coordinator => {
                    format!(" (its coordinator moved from broker {before} to {coordinator})")
                }
                _ => String::new(),
            };
            if let Some((generation, since)) = history.generation
                && g.generation < generation
            {
                found.push(GroupSuspect {
                    step: o.step,
                    at: o.at,
                    invariant: Invariant::GroupGenerationMonotonic,
                    key: format!("{} {generation} {}", g.group_id, g.generation),
                    facts: format!(
                        "group {}: generation {generation} was stored (seen Stable), now it is {} ({:?}){moved}",
                        g.group_id, g.generation, g.state
                    ),
                    excuses: vec![(offsets_tp.clone(), since, offsets_epoch)],
                });
            }
            // After a report the new value is the baseline: a later drop is a new fault.
            if g.state == GroupState::Stable || g.generation < history.generation.map_or(0, |(g, _)| g) {
                history.generation = Some((g.generation, offsets_epoch));
            }
            for offset in &g.offsets {
                if o.image.partition(&offset.tp).is_none() {
                    continue;
                }
                let now = SeenOffset {
                    committed: offset.committed,
                    offsets_epoch,
                    partition_epoch: epoch_of(&offset.tp),
                    unconfirmed_until: reloaded.then_some(coordinator_replica.log_end_offset),
                };
                let before = history.offsets.entry(offset.tp.clone()).or_insert(now);
                if before
                    .unconfirmed_until
                    .is_some_and(|end| coordinator_replica.high_watermark >= end)
                {
                    before.unconfirmed_until = None;
                }
                if offset.committed < before.committed && before.unconfirmed_until.is_none() {
                    found.push(GroupSuspect {
                        step: o.step,
                        at: o.at,
                        invariant: Invariant::CommittedOffsetsMonotonic,
                        key: format!("{} {} {} {}", g.group_id, offset.tp, before.committed, offset.committed),
                        facts: format!(
                            "group {}: the committed offset of {} went from {} back to {}{moved}",
                            g.group_id, offset.tp, before.committed, offset.committed
                        ),
                        excuses: vec![
                            (offsets_tp.clone(), before.offsets_epoch, offsets_epoch),
                            (offset.tp.clone(), before.partition_epoch, now.partition_epoch),
                        ],
                    });
                }
                if offset.committed != before.committed {
                    *before = now;
                }
            }
            let gone: Vec<TopicPartition> = history
                .offsets
                .keys()
                .filter(|tp| o.image.partition(tp).is_some() && !g.offsets.iter().any(|x| &x.tp == *tp))
                .cloned()
                .collect();
            for tp in gone {
                if let Some(seen) = history.offsets.remove(&tp).filter(|s| s.unconfirmed_until.is_none()) {
                    found.push(GroupSuspect {
                        step: o.step,
                        at: o.at,
                        invariant: Invariant::CommittedOffsetsMonotonic,
                        key: format!("{} {tp} {} gone", g.group_id, seen.committed),
                        facts: format!(
                            "group {}: the committed offset {} of {tp} is gone{moved}",
                            g.group_id, seen.committed
                        ),
                        excuses: vec![
                            (offsets_tp.clone(), seen.offsets_epoch, offsets_epoch),
                            (tp.clone(), seen.partition_epoch, epoch_of(&tp)),
                        ],
                    });
                }
            }
            history.coordinator = Some(coordinator);
            self.group_suspects.extend(found);
        }
    }

    /// Reports the group regressions no allowed loss explains: a loss at an epoch between
    /// the one the value was seen under and the one the regression was (an unclean or
    /// power-lost leader can lead the very epoch it led before).
    fn settle_group_suspects(&mut self) {
        let (step, at) = (self.step, self.at);
        for s in std::mem::take(&mut self.group_suspects) {
            let excused = s.excuses.iter().any(|(tp, from, to)| {
                self.partitions
                    .get(tp)
                    .is_some_and(|h| h.losses.range(*from..=*to).next().is_some())
            });
            if !excused {
                self.at_step(s.step, s.at);
                self.violate(s.invariant, s.key, s.facts);
            }
        }
        self.at_step(step, at);
    }

    /// Why the cluster has not settled yet (`None` once it has): every partition needs a
    /// leader, its whole replica set in the ISR on running unfenced brokers and caught up to
    /// the leader's end; every group with live members needs them all, in a stable group.
    pub fn unsettled(&self, o: &Observation, live_members: &BTreeMap<String, usize>) -> Option<String> {
        for (tp, reg) in o.image.partitions() {
            if reg.leader == NO_LEADER {
                return Some(format!("{tp} has no leader (ISR {:?})", reg.isr));
            }
            let mut isr = reg.isr.clone();
            isr.sort_unstable();
            let mut replicas = reg.replicas.clone();
            replicas.sort_unstable();
            if isr != replicas {
                return Some(format!("{tp}: ISR {:?} of replicas {:?}", reg.isr, reg.replicas));
            }
            for r in &reg.replicas {
                let up = o
                    .snapshot
                    .broker(*r)
                    .is_some_and(|b| b.state == BrokerState::Running && !b.fenced);
                if !up {
                    return Some(format!("{tp}: replica {r} is not on a running, unfenced broker"));
                }
            }
            let Some(leader) = o
                .replicas
                .iter()
                .find(|p| p.tp == tp && p.broker == reg.leader && p.is_leader && p.leader_epoch == reg.leader_epoch)
            else {
                return Some(format!(
                    "{tp}: broker {} does not lead epoch {} yet",
                    reg.leader, reg.leader_epoch
                ));
            };
            if leader.high_watermark != leader.log_end_offset {
                return Some(format!(
                    "{tp}: the leader's HW {} is below its log end {}",
                    leader.high_watermark, leader.log_end_offset
                ));
            }
            for r in &reg.replicas {
                let leo = o
                    .replicas
                    .iter()
                    .find(|p| p.tp == tp && p.broker == *r)
                    .map(|p| p.log_end_offset);
                if leo != Some(leader.log_end_offset) {
                    return Some(format!(
                        "{tp}: replica {r} ends at {leo:?}, the leader at {}",
                        leader.log_end_offset
                    ));
                }
            }
        }
        for (group, live) in live_members.iter().filter(|(_, n)| **n > 0) {
            let index = partition_for_group(group, self.config.offsets_topic_partitions);
            let coordinator = o
                .image
                .partition(&TopicPartition::new(OFFSETS_TOPIC, index))
                .map_or(NO_LEADER, |p| p.leader);
            let view = o
                .snapshot
                .groups
                .iter()
                .find(|g| &g.group_id == group && g.coordinator == coordinator);
            match view {
                None => return Some(format!("group {group}: its coordinator {coordinator} does not know it")),
                Some(g) if g.state != GroupState::Stable || g.members.len() != *live => {
                    return Some(format!(
                        "group {group}: {:?} with {} members, {live} consumers alive",
                        g.state,
                        g.members.len()
                    ));
                }
                Some(_) => {}
            }
        }
        None
    }

    /// The idle cluster handled `requests` over `window` of simulated time; more than
    /// `per_second_bound` a second means something spins.
    pub fn idle_work(&mut self, window: Duration, requests: &BTreeMap<(NodeId, BrokerId), u64>, per_second_bound: f64) {
        let total: u64 = requests.values().sum();
        let rate = total as f64 / window.as_secs_f64().max(0.001);
        if rate > per_second_bound {
            let mut busiest: Vec<_> = requests.iter().collect();
            busiest.sort_by(|a, b| b.1.cmp(a.1));
            let top: Vec<String> = busiest
                .iter()
                .take(4)
                .map(|((from, to), n)| format!("{from:?} -> broker {to}: {n}"))
                .collect();
            self.violate(
                Invariant::IdleWork,
                "idle",
                format!(
                    "the idle cluster handled {rate:.0} requests per simulated second (bound {per_second_bound:.0}) over {:.0} s; busiest links: {}",
                    window.as_secs_f64(),
                    top.join(", ")
                ),
            );
        }
    }

    /// The end of the run, judged on what the clients observed against what fresh clients
    /// read back once the cluster settled (`final_state`):
    /// - every acks=all acknowledged record is there at its offset, unless an allowed loss
    ///   excuses it (counted per allowance);
    /// - every record a consumer read is there where it was read, unless an allowed loss at a
    ///   later epoch than the record's excuses it;
    /// - an idempotent record appears twice only when its producer had not learned the first
    ///   copy's fate: the acknowledged copy, if any, is the last;
    /// - an ordered producer's records appear in the order it sent them;
    /// - a group's committed offset is the last acknowledged commit or one whose fate is
    ///   unknown, unless an allowed loss on its offsets partition excuses it;
    /// - the committed log the samples saw is what consumers are served.
    pub fn finish(&mut self, final_state: &FinalState) {
        self.settle_group_suspects();
        let final_logs = &final_state.logs;
        let mut found = Vec::new();
        let mut excused = Vec::new();
        let mut cleaned_records = 0;
        for (tp, history) in &self.partitions {
            let Some(final_log) = final_logs.get(tp) else { continue };
            let log_start = final_log.keys().next().copied();
            let served = |offset: i64| final_log.get(&offset);
            let below_start = |offset: i64| log_start.is_some_and(|start| offset < start);
            // A compacted log's record gone from the read-back with a later record of its
            // key there was cleaned, not lost.
            let cleaned = |offset: i64, value: &Bytes| {
                history.compacted
                    && served(offset).is_none()
                    && (superseded(final_log, offset, value) || history.before_loss(history.committed.epoch_at(offset)))
            };
            for (offset, value) in &history.committed.values {
                if history.compacted && served(*offset).is_none() && superseded(final_log, *offset, value) {
                    cleaned_records += 1;
                }
                if served(*offset) != Some(value) && !below_start(*offset) && !cleaned(*offset, value) {
                    found.push((
                        Invariant::CommittedLogsAgree,
                        format!("{tp} final {offset}"),
                        format!(
                            "{tp}: the committed log held {:?} at {offset}, consumers are served {}",
                            String::from_utf8_lossy(value),
                            describe(served(*offset))
                        ),
                    ));
                }
            }
            for a in &history.acked {
                if served(a.offset) == Some(&a.value) || below_start(a.offset) || cleaned(a.offset, &a.value) {
                    continue;
                }
                match a.state {
                    AckState::AtRisk(allowance) => excused.push(allowance),
                    AckState::Pending | AckState::Verified => found.push((
                        Invariant::AckedRecordsDurable,
                        format!("{tp} {} final", a.offset),
                        format!(
                            "{tp}: record {:?} was acknowledged (acks=all) at offset {}, but a fresh consumer reads {} there",
                            String::from_utf8_lossy(&a.value),
                            a.offset,
                            describe(served(a.offset))
                        ),
                    )),
                }
            }
            // A read that differs from the final log is excused only where an allowed loss
            // came after its epoch and another epoch's record (or none) now holds its offset:
            // the line it was read from was cut back there. One leader epoch writes each
            // offset once, so two values at an offset under the same epoch are never allowed
            // (the surviving line may hold an older epoch there: a power loss can elect a
            // replica that never had the newer line).
            let final_epoch = |offset: i64| final_state.epochs.get(tp).and_then(|e| e.get(&offset)).copied();
            for r in &history.all_reads {
                if served(r.offset) == Some(&r.value) || below_start(r.offset) || cleaned(r.offset, &r.value) {
                    continue;
                }
                let rewritten = match served(r.offset) {
                    None => true,
                    Some(_) => final_epoch(r.offset).is_some_and(|e| e != r.leader_epoch),
                };
                match history.losses.range(r.leader_epoch + 1..).next().filter(|_| rewritten) {
                    Some((_, allowance)) => excused.push(*allowance),
                    None => found.push((
                        Invariant::ConsistentReads,
                        format!("{tp} {} final", r.offset),
                        format!(
                            "{tp}: a consumer read {:?} at offset {} (leader epoch {}), but a fresh consumer reads {} there (leader epoch {}) and no allowed loss rewrote it",
                            String::from_utf8_lossy(&r.value),
                            r.offset,
                            r.leader_epoch,
                            describe(served(r.offset)),
                            final_epoch(r.offset).map_or_else(|| "none".to_string(), |e| e.to_string())
                        ),
                    )),
                }
            }
            let (order, duplicates) = judge_producers(tp, final_log, &history.acked, &self.config.ordered_producers);
            found.extend(order);
            for d in duplicates {
                match d {
                    Ok(()) => excused.push(Allowance::RetryAfterUnknownFate),
                    Err(v) => found.push(v),
                }
            }
        }
        let (txn_found, txn_excused) = self.judge_transactions(final_state);
        found.extend(txn_found);
        excused.extend(txn_excused);
        for (group, tp, facts, allowance) in self.judge_commits(final_state) {
            match allowance {
                Some(a) => excused.push(a),
                None => found.push((Invariant::CommitsDurable, format!("{group} {tp}"), facts)),
            }
        }
        self.cleaned_records += cleaned_records;
        for (invariant, key, facts) in found {
            self.violate(invariant, key, facts);
        }
        for allowance in excused {
            self.excuse(allowance);
        }
        for (allowance, n) in self.excused.clone() {
            self.allowed
                .push(format!("{n} records excused by: {}", allowance.name()));
        }
    }

    /// Every transaction's records against the read_committed read-back (see the module
    /// doc): the findings, and the allowances that excused committed records gone missing.
    fn judge_transactions(&self, final_state: &FinalState) -> (Vec<Finding>, Vec<Allowance>) {
        let mut found = Vec::new();
        let mut excused = Vec::new();
        // Where each transactional value was read, per partition.
        let mut read: BTreeMap<&TopicPartition, HashMap<&Bytes, Vec<i64>>> = BTreeMap::new();
        for (tp, log) in &final_state.committed_logs {
            let index = read.entry(tp).or_default();
            for (offset, value) in log {
                if parse_txn_value(value).is_some() {
                    index.entry(value).or_default().push(*offset);
                }
            }
        }
        let loss = |tp: &TopicPartition| {
            self.partitions
                .get(tp)
                .and_then(|h| h.losses.values().next_back().copied())
        };
        let mut named: BTreeMap<&TopicPartition, BTreeSet<&Bytes>> = BTreeMap::new();
        for t in &self.txns {
            let who = format!("transaction {} of writer {} (instance {})", t.txn, t.writer, t.instance);
            let (mut present, mut missing, mut lost, mut lost_to) = (Vec::new(), Vec::new(), 0usize, None);
            // The allowed loss of each partition where the transaction's records are read.
            let mut present_losses: Vec<Option<Allowance>> = Vec::new();
            for (tp, values) in &t.sent {
                named.entry(tp).or_default().extend(values.iter());
                // A partition not read back (its topic deleted) tells nothing.
                let Some(index) = read.get(tp) else { continue };
                for value in values {
                    match index.get(value).map(Vec::as_slice) {
                        Some([_]) => {
                            present.push(value);
                            present_losses.push(loss(tp));
                        }
                        Some(offsets) => {
                            present.push(value);
                            present_losses.push(loss(tp));
                            found.push((
                                Invariant::TxnCommittedOnce,
                                format!("{tp} {value:?} twice"),
                                format!(
                                    "{tp}: record {:?} of {who} ({:?}) is read {} times at read_committed, at {offsets:?}",
                                    String::from_utf8_lossy(value),
                                    t.fate,
                                    offsets.len()
                                ),
                            ));
                        }
                        None => match loss(tp) {
                            Some(allowance) => {
                                lost += 1;
                                lost_to = Some(allowance);
                            }
                            None => missing.push((tp, value)),
                        },
                    }
                }
            }
            let show = |values: &[&Bytes]| {
                let shown: Vec<String> = values
                    .iter()
                    .take(3)
                    .map(|v| format!("{:?}", String::from_utf8_lossy(v)))
                    .collect();
                shown.join(", ")
            };
            if t.fate == TxnFate::Committed
                && let Some(allowance) = lost_to
            {
                excused.extend(std::iter::repeat_n(allowance, lost));
            }
            match t.fate {
                TxnFate::Committed => {
                    if let Some((tp, value)) = missing.first() {
                        found.push((
                            Invariant::TxnCommittedOnce,
                            format!("{} {} missing", t.writer, t.txn),
                            format!(
                                "{who} was committed, but a read_committed consumer does not read {} of its records (first {:?} on {tp}; {} read)",
                                missing.len(),
                                String::from_utf8_lossy(value),
                                present.len()
                            ),
                        ));
                    }
                }
                // An end marker is acknowledged by the ISR like any record and, as in Kafka,
                // not fsynced: a power loss of every replica may cut the log back to the
                // transaction's records and drop its ABORT marker, and the producer's next
                // COMMIT at that partition then ends the still-open transaction. The same
                // allowance that excuses an acknowledged record lost that way excuses it.
                TxnFate::Aborted | TxnFate::Abandoned
                    if !present.is_empty() && present_losses.iter().all(Option::is_some) =>
                {
                    excused.extend(present_losses.iter().flatten().copied());
                }
                TxnFate::Aborted | TxnFate::Abandoned if !present.is_empty() => {
                    let how = if t.fate == TxnFate::Aborted {
                        "was aborted (acknowledged)"
                    } else if t.fenced {
                        "was fenced before it asked to commit"
                    } else {
                        "never asked to commit (its writer died or failed first)"
                    };
                    found.push((
                        Invariant::TxnAtomic,
                        format!("{} {} visible", t.writer, t.txn),
                        format!(
                            "{who} {how}, but a read_committed consumer reads {} of its records: {}",
                            present.len(),
                            show(&present)
                        ),
                    ));
                }
                TxnFate::Unknown if !present.is_empty() && !missing.is_empty() => {
                    let absent: Vec<String> = missing
                        .iter()
                        .take(3)
                        .map(|(tp, v)| format!("{:?} on {tp}", String::from_utf8_lossy(v)))
                        .collect();
                    found.push((
                        Invariant::TxnAtomic,
                        format!("{} {} partial", t.writer, t.txn),
                        format!(
                            "{who} asked to commit without learning the outcome; a read_committed consumer reads {} of its records ({}) but not {} ({}){}",
                            present.len(),
                            show(&present),
                            missing.len(),
                            absent.join(", "),
                            if lost > 0 {
                                format!("; {lost} more lost to an allowed loss")
                            } else {
                                String::new()
                            }
                        ),
                    ));
                }
                _ => {}
            }
        }
        for (tp, log) in &final_state.committed_logs {
            let sent = named.get(tp);
            // Each writer's records in the order sent: (transaction, record number) grows.
            let mut last: BTreeMap<usize, (u64, u32, i64)> = BTreeMap::new();
            let mut first_copy: BTreeSet<&Bytes> = BTreeSet::new();
            for (offset, value) in log {
                let Some((writer, _, txn, n)) = parse_txn_value(value) else {
                    continue;
                };
                if !sent.is_some_and(|s| s.contains(value)) {
                    found.push((
                        Invariant::TxnAtomic,
                        format!("{tp} {value:?} unknown"),
                        format!(
                            "{tp}: a read_committed consumer reads {:?} at {offset}, which no transaction the writers ended sent",
                            String::from_utf8_lossy(value)
                        ),
                    ));
                }
                if !first_copy.insert(value) {
                    continue;
                }
                if let Some(&(before_txn, before_n, at)) = last.get(&writer)
                    && (before_txn, before_n) > (txn, n)
                {
                    found.push((
                        Invariant::TxnCommittedOnce,
                        format!("{tp} {writer} order {txn}"),
                        format!(
                            "{tp}: writer {writer} sent record {n} of transaction {txn} before record {before_n} of transaction {before_txn}, but a read_committed consumer reads the latter at {at} before the former at {offset}"
                        ),
                    ));
                }
                last.insert(writer, (txn, n, *offset));
            }
        }
        (found, excused)
    }

    /// Each group's final committed offsets against the commits its members saw answered.
    /// Returns the offsets that break the rule: (group, partition, facts, the allowance that
    /// excuses it if any).
    fn judge_commits(&self, final_state: &FinalState) -> Vec<(String, TopicPartition, String, Option<Allowance>)> {
        let mut out = Vec::new();
        for ((group, tp), commits) in &self.commits {
            // Partitions of deleted topics lose their offsets, as in Kafka.
            if !final_state.logs.contains_key(tp) {
                continue;
            }
            let Some(stored) = final_state.commits.get(group) else {
                continue;
            };
            let now = stored.get(tp).copied();
            let acknowledged: Vec<&(Duration, i64, CommitFate)> =
                commits.iter().filter(|c| c.2 == CommitFate::Acknowledged).collect();
            let Some(last) = acknowledged.last() else { continue };
            // The coordinator applies commits in the order they reach it. An acknowledged
            // commit sent after another was answered supersedes it; one answered within the
            // request timeout of the last may have reached the coordinator after it.
            let candidates: BTreeSet<i64> = commits
                .iter()
                .filter(|c| match c.2 {
                    CommitFate::Acknowledged => c.0 + COMMIT_REQUEST_TIMEOUT >= last.0,
                    CommitFate::Unknown => true,
                    CommitFate::Refused => false,
                })
                .map(|c| c.1)
                .collect();
            if now.is_some_and(|o| candidates.contains(&o)) {
                continue;
            }
            let index = partition_for_group(group, self.config.offsets_topic_partitions);
            let offsets_tp = TopicPartition::new(OFFSETS_TOPIC, index);
            let allowance = self
                .partitions
                .get(&offsets_tp)
                .and_then(|h| h.losses.values().next_back().copied());
            out.push((
                group.clone(),
                tp.clone(),
                format!(
                    "group {group}: the last acknowledged commit of {tp} was {} (answered at t={:.1} s), but a fresh client reads {}",
                    last.1,
                    last.0.as_secs_f64(),
                    now.map_or_else(|| "no committed offset".to_string(), |o| o.to_string())
                ),
                allowance,
            ));
        }
        out
    }
}

/// How long a consumer waits for a commit's answer (`Consumer::commit_offsets`).
const COMMIT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

type Finding = (Invariant, String, String);

/// A partition's final log, producer by producer: the order of each ordered producer
/// instance's records (by first copy), and every idempotent record written more than once,
/// `Ok` when its producer never learned the fate of the earlier copies (the acknowledged copy,
/// if any, is the last), else the violation.
fn judge_producers(
    tp: &TopicPartition,
    final_log: &BTreeMap<i64, Bytes>,
    acked: &[AckedRecord],
    ordered: &BTreeSet<usize>,
) -> (Vec<Finding>, Vec<Result<(), Finding>>) {
    let mut order = Vec::new();
    let mut last_n: BTreeMap<(usize, u32), (u64, i64)> = BTreeMap::new();
    let mut copies: BTreeMap<&Bytes, Vec<i64>> = BTreeMap::new();
    for (offset, value) in final_log {
        let Some((_, producer, instance, n)) = parse_value(value) else {
            continue;
        };
        let seen = copies.entry(value).or_default();
        seen.push(*offset);
        if seen.len() > 1 || !ordered.contains(&producer) {
            continue;
        }
        if let Some(&(before, at)) = last_n.get(&(producer, instance))
            && before > n
        {
            order.push((
                Invariant::ProducerOrder,
                format!("{tp} {producer}.{instance} {n}"),
                format!(
                    "{tp}: producer {producer} (instance {instance}) sent record {before} after record {n}, but the log holds {before} at {at} before {n} at {offset}"
                ),
            ));
        }
        last_n.insert((producer, instance), (n, *offset));
    }
    let acked_at: BTreeMap<&Bytes, i64> = acked.iter().map(|a| (&a.value, a.offset)).collect();
    let mut duplicates = Vec::new();
    for (value, offsets) in copies
        .iter()
        .filter(|(v, o)| o.len() > 1 && v.first() == Some(&IDEMPOTENT_TAG))
    {
        let last = offsets.last().copied().unwrap_or(-1);
        match acked_at.get(value) {
            Some(&at) if at != last => duplicates.push(Err((
                Invariant::NoIdempotentDuplicates,
                format!("{tp} {value:?} final"),
                format!(
                    "{tp}: idempotent record {:?} was acknowledged at {at}, and written again at {last} after its producer knew it was written (copies at {offsets:?})",
                    String::from_utf8_lossy(value)
                ),
            ))),
            _ => duplicates.push(Ok(())),
        }
    }
    (order, duplicates)
}

/// The key of a simulated record in a compacted topic (each is keyed by its number).
fn key_of(value: &[u8]) -> Option<u64> {
    parse_value(value).map(|(_, _, _, n)| n % super::schedule::KEY_SPACE)
}

/// Whether `log` holds a record of `value`'s key after `offset`: a compacted log's cleaner
/// may then have removed the one at `offset`.
fn superseded(log: &BTreeMap<i64, Bytes>, offset: i64, value: &Bytes) -> bool {
    let Some(key) = key_of(value) else { return false };
    log.range(offset + 1..).any(|(_, v)| key_of(v) == Some(key))
}

fn power_loss_reason(broker: BrokerId, isr: &[BrokerId]) -> String {
    format!(
        "broker {broker} was elected from the ISR {isr:?}, every member of which had lost unflushed data in a power loss (Kafka does not fsync by default and elects it all the same)"
    )
}

fn describe(value: Option<&Bytes>) -> String {
    value.map_or_else(
        || "nothing".to_string(),
        |v| format!("{:?}", String::from_utf8_lossy(v)),
    )
}

type ReadBatch = (BatchSummary, Vec<(i64, Bytes)>);

/// A replica's batches in `from..upper` (whole batches ending at or below `upper`), with
/// their records' values when `decode` is set.
fn read_batches(
    logs: &dyn ReplicaLogs,
    broker: BrokerId,
    tp: &TopicPartition,
    from: i64,
    upper: i64,
    decode: bool,
) -> Result<Vec<ReadBatch>, String> {
    let mut out = Vec::new();
    let mut at = from;
    while at < upper {
        let bytes = logs.read(broker, tp, at, upper).map_err(|e| format!("{e:?}"))?;
        let mut progressed = false;
        for item in Batches::new(&bytes) {
            let (_, header, slice) = item.map_err(|(position, e)| format!("batch at byte {position}: {e}"))?;
            if header.next_offset() > upper {
                break;
            }
            if header.last_offset() < at {
                continue;
            }
            let values = if decode {
                records::decode(slice)
                    .map_err(|e| format!("batch at {}: {e}", header.base_offset))?
                    .into_iter()
                    .filter(|r| !r.control)
                    .map(|r| (r.offset, r.value.unwrap_or_default()))
                    .collect()
            } else {
                Vec::new()
            };
            out.push((
                BatchSummary {
                    base_offset: header.base_offset,
                    last_offset: header.last_offset(),
                    leader_epoch: header.partition_leader_epoch,
                    crc: header.crc,
                    producer: (header.producer_id, header.producer_epoch),
                },
                values,
            ));
            at = header.next_offset();
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
