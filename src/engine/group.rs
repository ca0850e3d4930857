//! The consumer-group coordinator, classic protocol (Kafka's `GroupCoordinator` /
//! `ClassicGroup`): JoinGroup, SyncGroup, Heartbeat, LeaveGroup, generations, member ids,
//! session and rebalance timeouts, the initial rebalance delay; and committed offsets.
//!
//! The coordinator of a group is the leader of partition `abs(javaHash(group)) % N` of
//! `__consumer_offsets`. Everything it must not forget is a record there, replicated like
//! any topic (Kafka's `GroupMetadataManager`): each offset commit, and the group itself
//! (generation, leader, members and assignments) whenever a SyncGroup completes or the group
//! empties. A broker that becomes the partition's leader replays it, so its groups come back
//! as they were: members keep their ids and generation and carry on without a rebalance.

mod admin;
mod load;
mod record;

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::events::{EventBus, EventKind};
use super::partition::{Appended, Partition};
use super::planted::{self, Bug};
use super::protocol::{ErrorCode, FetchedOffsets};
use super::{BrokerId, Clock, TopicPartition, WallClock};
use crate::storage::records;

use load::ReplayedGroup;
pub(crate) use load::{Replay, replay};
pub use record::{CoordinatorKey, GroupMetadataValue, MemberMetadata, RecordError};

pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// `offsets.commit.timeout.ms`: how long a coordinator write may wait for the ISR.
pub const OFFSETS_COMMIT_TIMEOUT: Duration = Duration::from_secs(5);

/// Java's `String.hashCode` over UTF-16 code units.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The `__consumer_offsets` partition that holds a group (Kafka's `Utils.abs` maps
/// `i32::MIN` to 0).
pub fn partition_for_group(group: &str, partitions: i32) -> i32 {
    let h = java_string_hash(group);
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions.max(1)
}
/// How many replaced static member ids a group remembers to report their fencing.
const MAX_REPLACED_REMEMBERED: usize = 64;

/// The host a group's coordinator shows for a member in kdeck's own process (a Kafka client
/// over TCP shows as its address, `/127.0.0.1`).
pub const IN_PROCESS_HOST: &str = "in-process";

#[derive(Debug, Clone)]
pub struct JoinGroupRequest {
    pub group_id: String,
    /// Empty on the first join: the coordinator answers MEMBER_ID_REQUIRED with one.
    pub member_id: String,
    pub session_timeout_ms: u64,
    pub rebalance_timeout_ms: u64,
    pub protocol_type: String,
    /// `(assignor name, subscription bytes)` in the member's order of preference.
    pub protocols: Vec<(String, Bytes)>,
    /// The client's `client.id` (the request header's), kept for DescribeGroups.
    pub client_id: String,
    /// Where the member connects from, as Kafka shows it (`/127.0.0.1`).
    pub client_host: String,
    /// KIP-345 `group.instance.id`: a static member keeps its place in the group across
    /// restarts, within its session timeout.
    pub group_instance_id: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct JoinGroupResponse {
    pub error: Option<ErrorCode>,
    pub generation_id: i32,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// Only the leader receives the members and their subscriptions.
    pub members: Vec<(String, Bytes)>,
    /// The static members among `members`: `(member id, group.instance.id)`.
    pub member_instances: Vec<(String, String)>,
}

#[derive(Debug, Clone, Default)]
pub struct SyncGroupResponse {
    pub error: Option<ErrorCode>,
    pub assignment: Bytes,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MemberDescription {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub assignment: Bytes,
    pub metadata: Bytes,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupDescription {
    pub group_id: String,
    pub state: GroupState,
    pub protocol_type: String,
    pub protocol: String,
    pub generation_id: i32,
    pub members: Vec<MemberDescription>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommittedOffset {
    pub offset: i64,
    pub commit_timestamp: i64,
}

/// A committed offset and the position of the record that carried it: of two commits the
/// later record wins, whichever finished replicating first (Kafka's
/// `CommitRecordMetadataAndOffset`).
#[derive(Debug, Clone, Copy)]
struct CommitRecordMetadataAndOffset {
    appended_offset: i64,
    offset: CommittedOffset,
}

/// A coordinator record appended to the group's offsets partition as leader, not yet
/// replicated: the broker waits for the ISR, then tells the coordinator how it went.
pub(crate) struct PendingWrite {
    pub partition: Arc<Partition>,
    pub appended: Appended,
}

/// A static member's JoinGroup with an unknown member id, for an instance id the group knows.
struct StaticJoin {
    instance: String,
    old_id: String,
    new_id: String,
    protocols: Vec<(String, Bytes)>,
    session_timeout: Duration,
    rebalance_timeout: Duration,
}

/// What a replaced static member had before its rejoin, to put back if the group record
/// naming its new id cannot be written.
struct StaticMemberBefore {
    protocols: Vec<(String, Bytes)>,
    session_timeout: Duration,
    rebalance_timeout: Duration,
}

/// A static member took its place back in a Stable group: the group record with its new
/// member id is in the log, and the member is answered once it is replicated
/// ([`GroupCoordinator::static_member_stored`]).
pub struct StaticRejoin {
    group_id: String,
    generation: i32,
    instance: String,
    old_id: String,
    new_id: String,
    /// The leader before the rejoin: the answer names it (Kafka's JoinGroup before v9).
    leader_before: String,
    before: StaticMemberBefore,
    pub(crate) write: PendingWrite,
}

#[derive(Debug)]
struct Member {
    group_instance_id: Option<String>,
    client_id: String,
    client_host: String,
    session_timeout: Duration,
    rebalance_timeout: Duration,
    protocols: Vec<(String, Bytes)>,
    assignment: Bytes,
    last_heartbeat: Instant,
    /// Join order: the first member to join leads.
    joined_seq: u64,
    join_waiter: Option<oneshot::Sender<JoinGroupResponse>>,
    sync_waiter: Option<oneshot::Sender<SyncGroupResponse>>,
}

impl Member {
    /// What the member subscribed with under the group's protocol.
    fn subscription(&self, protocol: Option<&str>) -> Bytes {
        protocol
            .and_then(|p| self.protocols.iter().find(|(n, _)| n == p))
            .map(|(_, b)| b.clone())
            .unwrap_or_default()
    }
}

#[derive(Debug)]
struct Group {
    state: GroupState,
    generation: i32,
    protocol_type: String,
    protocol: Option<String>,
    leader: Option<String>,
    members: BTreeMap<String, Member>,
    offsets: BTreeMap<TopicPartition, CommitRecordMetadataAndOffset>,
    rebalance_deadline: Option<Instant>,
    /// While the first members of an empty group arrive (group.initial.rebalance.delay.ms).
    initial_delay_until: Option<Instant>,
    /// The leader's assignment, in the log but not yet replicated: members learn it only
    /// once the group record is safe.
    pending_assignment: Option<BTreeMap<String, Bytes>>,
    /// Ids given out with MEMBER_ID_REQUIRED and not joined with yet, until their session
    /// would have expired (Kafka's `pendingMembers`): a join with any other id it does not
    /// know, such as that of a member removed meanwhile, gets UNKNOWN_MEMBER_ID.
    pending_members: BTreeMap<String, Instant>,
    /// Member ids whose `group.instance.id` a newer member took over, with that instance id,
    /// until the first request that finds them fenced (the timeline says it once).
    replaced: BTreeMap<String, String>,
    /// When the group last became Empty, in ms (Kafka's `currentStateTimestamp` while
    /// empty): offsets retention counts from it.
    empty_since: Option<i64>,
    /// Until when (ms) a commit appended to the log may still be replicating: retention
    /// leaves the group alone meanwhile, or the commit could land in memory after the
    /// tombstone that expired its partition (Kafka checks its pending commits).
    commit_pending_until: i64,
    /// The first offset of the offsets partition that can belong to this group: a commit
    /// appended before it was for a group since deleted, and is not exposed when it
    /// completes late (in the log, the deletion's tombstones come after it).
    born_at: i64,
    /// Offsets deleted (OffsetDelete) while a commit may still be replicating, with their
    /// tombstone's offset: a commit appended before the tombstone must not bring the offset
    /// back when it completes.
    tombstoned: BTreeMap<TopicPartition, i64>,
    /// TxnOffsetCommit offsets by producer id, in the log inside the producer's open
    /// transaction: exposed once its COMMIT marker is written, dropped on ABORT (Kafka's
    /// `pendingTransactionalOffsetCommits`).
    pending_txn: BTreeMap<i64, BTreeMap<TopicPartition, CommitRecordMetadataAndOffset>>,
}

impl Group {
    fn new() -> Self {
        Group {
            state: GroupState::Empty,
            generation: 0,
            protocol_type: String::new(),
            protocol: None,
            leader: None,
            members: BTreeMap::new(),
            offsets: BTreeMap::new(),
            rebalance_deadline: None,
            initial_delay_until: None,
            pending_assignment: None,
            pending_members: BTreeMap::new(),
            replaced: BTreeMap::new(),
            empty_since: None,
            commit_pending_until: i64::MIN,
            born_at: i64::MIN,
            tombstoned: BTreeMap::new(),
            pending_txn: BTreeMap::new(),
        }
    }

    /// A group that starts existing now, when the offsets partition ends at `log_end`.
    fn born(log_end: i64) -> Self {
        Group {
            born_at: log_end,
            ..Group::new()
        }
    }

    /// The member that holds `group.instance.id` `instance` now.
    fn static_member(&self, instance: &str) -> Option<&String> {
        self.members
            .iter()
            .find(|(_, m)| m.group_instance_id.as_deref() == Some(instance))
            .map(|(id, _)| id)
    }

    /// Kafka's `validateCurrentMember`: with an instance id, it must belong to `member_id`
    /// (another member holds it: FENCED_INSTANCE_ID; nobody: UNKNOWN_MEMBER_ID); without,
    /// the member must be known.
    fn validate_member(&self, member_id: &str, instance: Option<&str>) -> Result<(), ErrorCode> {
        if let Some(instance) = instance {
            return match self.static_member(instance) {
                Some(current) if current != member_id => Err(ErrorCode::FencedInstanceId),
                Some(_) => Ok(()),
                None => Err(ErrorCode::UnknownMemberId),
            };
        }
        if self.members.contains_key(member_id) {
            Ok(())
        } else {
            Err(ErrorCode::UnknownMemberId)
        }
    }

    /// The protocol the members would choose now (Kafka's `selectProtocol`): among those
    /// every member supports, the one most members list first of them, ties to the
    /// earliest in the first member's order.
    fn select_protocol(&self) -> Option<String> {
        let first = self
            .members
            .values()
            .next()
            .map(|m| m.protocols.clone())
            .unwrap_or_default();
        let candidates: Vec<String> = first
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| self.members.values().all(|m| m.protocols.iter().any(|(p, _)| p == n)))
            .collect();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some((name, _)) = m.protocols.iter().find(|(n, _)| candidates.contains(n)) {
                *votes.entry(name.as_str()).or_default() += 1;
            }
        }
        candidates
            .iter()
            .max_by_key(|c| {
                (
                    votes.get(c.as_str()).copied().unwrap_or(0),
                    std::cmp::Reverse(candidates.iter().position(|x| x == *c)),
                )
            })
            .cloned()
    }

    /// Kafka's `replaceStaticMember`: the member holding `instance` as `old_id` goes on as
    /// `new_id`, with its assignment and leadership; a join or sync of the old id still
    /// waiting is answered FENCED_INSTANCE_ID.
    fn replace_static_member(&mut self, instance: &str, old_id: &str, new_id: &str) {
        let Some(mut member) = self.members.remove(old_id) else {
            return;
        };
        if let Some(w) = member.join_waiter.take() {
            let _ = w.send(JoinGroupResponse {
                error: Some(ErrorCode::FencedInstanceId),
                member_id: old_id.to_string(),
                ..JoinGroupResponse::default()
            });
        }
        if let Some(w) = member.sync_waiter.take() {
            let _ = w.send(SyncGroupResponse {
                error: Some(ErrorCode::FencedInstanceId),
                assignment: Bytes::new(),
            });
        }
        member.group_instance_id = Some(instance.to_string());
        self.members.insert(new_id.to_string(), member);
        if self.leader.as_deref() == Some(old_id) {
            self.leader = Some(new_id.to_string());
        }
        if let Some(pending) = self.pending_assignment.as_mut()
            && let Some(a) = pending.remove(old_id)
        {
            pending.insert(new_id.to_string(), a);
        }
        self.replaced.remove(new_id);
        self.replaced.insert(old_id.to_string(), instance.to_string());
        // A member replaced over and over (a crash loop) must not grow this without bound.
        while self.replaced.len() > MAX_REPLACED_REMEMBERED {
            let Some(oldest) = self.replaced.keys().next().cloned() else {
                break;
            };
            self.replaced.remove(&oldest);
        }
    }

    /// The static members, `(member id, instance id)`, as a JoinGroup answer lists them.
    fn member_instances(&self) -> Vec<(String, String)> {
        self.members
            .iter()
            .filter_map(|(id, m)| m.group_instance_id.clone().map(|i| (id.clone(), i)))
            .collect()
    }

    fn prepare_rebalance(&mut self, now: Instant) {
        // Members waiting for their assignment must rejoin instead.
        for m in self.members.values_mut() {
            if let Some(w) = m.sync_waiter.take() {
                let _ = w.send(SyncGroupResponse {
                    error: Some(ErrorCode::RebalanceInProgress),
                    assignment: Bytes::new(),
                });
            }
        }
        self.pending_assignment = None;
        let timeout = self
            .members
            .values()
            .map(|m| m.rebalance_timeout)
            .max()
            .unwrap_or(Duration::from_secs(60));
        if self.state != GroupState::PreparingRebalance {
            self.rebalance_deadline = Some(now + timeout);
        }
        self.state = GroupState::PreparingRebalance;
    }

    /// The group as Kafka stores it: members with their subscription under the chosen
    /// protocol and `assignment` (the one being stored, or none for an empty group).
    fn metadata(&self, assignment: &BTreeMap<String, Bytes>, now_ms: i64) -> GroupMetadataValue {
        GroupMetadataValue {
            protocol_type: self.protocol_type.clone(),
            generation: self.generation,
            protocol: self.protocol.clone(),
            leader: self.leader.clone(),
            current_state_timestamp: now_ms,
            members: self
                .members
                .iter()
                .map(|(id, m)| MemberMetadata {
                    member_id: id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: millis_i32(m.rebalance_timeout),
                    session_timeout_ms: millis_i32(m.session_timeout),
                    subscription: m.subscription(self.protocol.as_deref()),
                    assignment: assignment.get(id).cloned().unwrap_or_default(),
                })
                .collect(),
        }
    }

    /// A group rebuilt from its records: Stable with its members when the last record had
    /// any, each with a fresh session from `now`; Empty otherwise.
    fn loaded(replayed: ReplayedGroup, now: Instant, next_member: &mut u64) -> Group {
        let mut group = Group::new();
        group.offsets = replayed.offsets;
        group.pending_txn = replayed.pending_txn;
        let Some(metadata) = replayed.metadata else {
            return group;
        };
        group.protocol_type = metadata.protocol_type;
        group.generation = metadata.generation;
        group.protocol = metadata.protocol;
        group.leader = metadata.leader;
        let stored_at = metadata.current_state_timestamp;
        for m in metadata.members {
            *next_member += 1;
            let protocols = group
                .protocol
                .clone()
                .map(|p| vec![(p, m.subscription)])
                .unwrap_or_default();
            group.members.insert(
                m.member_id,
                Member {
                    group_instance_id: m.group_instance_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    session_timeout: millis(m.session_timeout_ms),
                    rebalance_timeout: millis(m.rebalance_timeout_ms),
                    protocols,
                    assignment: m.assignment,
                    last_heartbeat: now,
                    joined_seq: *next_member,
                    join_waiter: None,
                    sync_waiter: None,
                },
            );
        }
        if group.leader.as_ref().is_some_and(|l| !group.members.contains_key(l)) {
            group.leader = None;
        }
        group.state = if group.members.is_empty() {
            group.empty_since = Some(stored_at);
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        group
    }

    /// The committed offsets retention deletes at `now_ms` (Kafka's
    /// `GroupMetadata.removeExpiredOffsets`): all of a consumer group's once it has been
    /// empty for `retention_ms`; a standalone consumer's (commits without a group
    /// protocol) each `retention_ms` after its commit. A group with members keeps them.
    fn expired_offsets(&self, now_ms: i64, retention_ms: i64) -> Vec<TopicPartition> {
        if self.state != GroupState::Empty || now_ms < self.commit_pending_until {
            return Vec::new();
        }
        let counted_from = |c: &CommitRecordMetadataAndOffset| match self.empty_since {
            Some(since) if !self.protocol_type.is_empty() => since,
            _ => c.offset.commit_timestamp,
        };
        self.offsets
            .iter()
            .filter(|(_, c)| now_ms.saturating_sub(counted_from(c)) >= retention_ms)
            .map(|(tp, _)| tp.clone())
            .collect()
    }
}

fn millis(ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

fn millis_i64(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn millis_i32(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

/// How Kafka answers a SyncGroup whose group record could not be written (`storeGroup`).
fn store_group_error(error: ErrorCode) -> ErrorCode {
    match error {
        ErrorCode::UnknownTopicOrPartition | ErrorCode::NotEnoughReplicas | ErrorCode::NotEnoughReplicasAfterAppend => {
            ErrorCode::CoordinatorNotAvailable
        }
        ErrorCode::NotLeaderOrFollower | ErrorCode::KafkaStorageError => ErrorCode::NotCoordinator,
        ErrorCode::RequestTimedOut => ErrorCode::RebalanceInProgress,
        ErrorCode::MessageTooLarge => ErrorCode::UnknownServerError,
        other => other,
    }
}

/// How Kafka answers an OffsetCommit whose records could not be written (`storeOffsets`).
pub fn commit_error(error: ErrorCode) -> ErrorCode {
    match error {
        ErrorCode::UnknownTopicOrPartition | ErrorCode::NotEnoughReplicas | ErrorCode::NotEnoughReplicasAfterAppend => {
            ErrorCode::CoordinatorNotAvailable
        }
        ErrorCode::NotLeaderOrFollower | ErrorCode::KafkaStorageError => ErrorCode::NotCoordinator,
        ErrorCode::MessageTooLarge => ErrorCode::InvalidCommitOffsetSize,
        other => other,
    }
}

/// How Kafka answers a DeleteGroups or OffsetDelete whose tombstones could not be written
/// (the group coordinator service's `normalizeException`).
pub fn tombstone_error(error: ErrorCode) -> ErrorCode {
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

enum Load {
    /// Replaying the partition as its leader in `leader_epoch`; nothing is served meanwhile.
    Loading { log: Arc<Partition>, leader_epoch: i32 },
    /// Served; the coordinator's records go to `log`.
    Loaded { log: Arc<Partition>, leader_epoch: i32 },
}

impl Load {
    fn log(&self) -> &Arc<Partition> {
        match self {
            Load::Loading { log, .. } | Load::Loaded { log, .. } => log,
        }
    }
}

pub struct GroupCoordinator {
    events: EventBus,
    wall: WallClock,
    /// Session, rebalance and join timers.
    clock: Clock,
    offsets_partitions: i32,
    initial_rebalance_delay: Duration,
    state: Mutex<CoordinatorState>,
}

#[derive(Default)]
struct CoordinatorState {
    partitions: HashMap<i32, Load>,
    /// By id: groups expire in one order on every run (and so write their tombstones).
    groups: BTreeMap<String, Group>,
    next_member: u64,
    /// Per offsets partition, where the last group deletion's tombstones begin: a commit
    /// appended before them and completing after finds its group gone and must not bring
    /// it back.
    deleted_at: HashMap<i32, i64>,
}

impl GroupCoordinator {
    pub(crate) fn new(
        broker: BrokerId,
        offsets_partitions: i32,
        initial_rebalance_delay_ms: u64,
        events: EventBus,
        wall: WallClock,
        clock: Clock,
    ) -> Self {
        GroupCoordinator {
            events,
            wall,
            clock,
            offsets_partitions,
            initial_rebalance_delay: Duration::from_millis(initial_rebalance_delay_ms),
            state: Mutex::new(CoordinatorState {
                next_member: (broker as u64) << 48,
                ..CoordinatorState::default()
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, CoordinatorState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn offsets_partition(&self, group: &str) -> i32 {
        partition_for_group(group, self.offsets_partitions)
    }

    /// Why this broker cannot serve `group` now, if it cannot.
    fn check(&self, state: &CoordinatorState, group: &str) -> Option<ErrorCode> {
        match state.partitions.get(&self.offsets_partition(group)) {
            Some(Load::Loaded { .. }) => None,
            Some(Load::Loading { .. }) => Some(ErrorCode::CoordinatorLoadInProgress),
            None => Some(ErrorCode::NotCoordinator),
        }
    }

    /// This broker leads an offsets partition in `leader_epoch`. Returns whether its groups
    /// must be loaded now: not when this replica already leads it in that epoch. A new epoch
    /// of the same leader reloads: the leader may have missed the epochs between (another
    /// leader, whose load exposed records this one's failed writes had left in the log,
    /// which the new epoch now commits), and its memory must match its log again.
    pub(crate) fn begin_loading(&self, log: &Arc<Partition>, leader_epoch: i32) -> bool {
        let mut state = self.lock();
        let index = log.tp.partition;
        let same = |l: &Load| {
            Arc::ptr_eq(l.log(), log)
                && match l {
                    Load::Loading { leader_epoch: e, .. } | Load::Loaded { leader_epoch: e, .. } => *e == leader_epoch,
                }
        };
        if state.partitions.get(&index).is_some_and(same) {
            return false;
        }
        unload_locked(&mut state, index, |g| self.offsets_partition(g));
        state.partitions.insert(
            index,
            Load::Loading {
                log: Arc::clone(log),
                leader_epoch,
            },
        );
        true
    }

    /// The replayed groups of a newly led partition; they are served from now on. A replay
    /// for a leadership this broker lost or renewed since is dropped.
    pub(crate) fn finish_loading(&self, partition: i32, leader_epoch: i32, replay: Replay) {
        let mut state = self.lock();
        let log = match state.partitions.get(&partition) {
            Some(Load::Loading { log, leader_epoch: e }) if *e == leader_epoch => Arc::clone(log),
            _ => return,
        };
        if !replay.unreadable.is_empty() {
            tracing::error!(
                tp = %replay.tp,
                ranges = %super::protocol::ranges_in_words(&replay.unreadable),
                "offsets partition loaded without records it could not read: groups with records there may have older offsets or membership than they committed"
            );
        }
        let now = self.clock.now();
        let CoordinatorState {
            groups, next_member, ..
        } = &mut *state;
        for (id, replayed) in replay.groups {
            if !replayed.unreadable.is_empty() {
                tracing::error!(
                    tp = %replay.tp,
                    group = %id,
                    offsets = %super::protocol::offsets_in_words(&replayed.unreadable),
                    "group loaded without records that did not decode: its offsets or membership may be older than committed"
                );
            }
            if replayed.metadata.is_none() && replayed.offsets.is_empty() && replayed.pending_txn.is_empty() {
                continue;
            }
            groups.insert(id, Group::loaded(replayed, now, next_member));
        }
        state.partitions.insert(partition, Load::Loaded { log, leader_epoch });
    }

    /// This broker no longer leads an offsets partition: drop its groups; waiting members
    /// learn NOT_COORDINATOR and look for the new one.
    pub fn unload(&self, partition: i32) {
        let mut state = self.lock();
        unload_locked(&mut state, partition, |g| self.offsets_partition(g));
    }

    /// Appends `batch` to the offsets partition of `group_id` (acks=all, as Kafka's
    /// coordinator writes).
    fn append(
        &self,
        partitions: &HashMap<i32, Load>,
        group_id: &str,
        mut batch: Vec<u8>,
    ) -> Result<PendingWrite, ErrorCode> {
        let Some(Load::Loaded { log, .. }) = partitions.get(&self.offsets_partition(group_id)) else {
            return Err(ErrorCode::NotCoordinator);
        };
        let appended = log.append_as_leader(&mut batch, true, self.wall.now_ms())?;
        Ok(PendingWrite {
            partition: Arc::clone(log),
            appended,
        })
    }

    /// Writes the group record of a group that just emptied, so a new coordinator loads it
    /// empty at its generation. Nobody waits for it; a failure is only logged, as in Kafka.
    fn store_empty_group(&self, partitions: &HashMap<i32, Load>, group_id: &str, group: &mut Group) {
        let now_ms = self.wall.now_ms();
        group.empty_since = Some(now_ms);
        let batch = group_metadata_batch(group_id, &group.metadata(&BTreeMap::new(), now_ms));
        if let Err(error) = self.append(partitions, group_id, batch) {
            tracing::warn!(group = group_id, %error, "could not write the empty group's record");
        }
    }

    /// JoinGroup. The answer arrives when the join phase completes, or, for a static member
    /// taking its place back in a Stable group, once the group record naming its new member
    /// id is replicated: the broker waits for the write it is given and then calls
    /// [`GroupCoordinator::static_member_stored`].
    pub fn join(&self, req: JoinGroupRequest) -> (oneshot::Receiver<JoinGroupResponse>, Option<StaticRejoin>) {
        let (tx, rx) = oneshot::channel();
        let fail = |tx: oneshot::Sender<JoinGroupResponse>, error, member_id: &str| {
            let _ = tx.send(JoinGroupResponse {
                error: Some(error),
                member_id: member_id.to_string(),
                ..JoinGroupResponse::default()
            });
        };
        let mut state = self.lock();
        if let Some(error) = self.check(&state, &req.group_id) {
            fail(tx, error, &req.member_id);
            return (rx, None);
        }
        let now = self.clock.now();
        if req.protocols.is_empty() || req.protocol_type.is_empty() {
            fail(tx, ErrorCode::InconsistentGroupProtocol, &req.member_id);
            return (rx, None);
        }
        let instance = req.group_instance_id.clone();
        let mut member_id = req.member_id.clone();
        let mut rejoining_static = None;
        if member_id.is_empty() {
            // Unique across coordinators, as Kafka's `clientId-UUID`: the offsets partition's
            // leader epoch tells this coordinator from earlier ones (a restarted broker counts
            // from the start again) whose members a loaded group may still hold. A static
            // member's id starts with its instance id, as in Kafka.
            state.next_member += 1;
            let epoch = state
                .partitions
                .get(&self.offsets_partition(&req.group_id))
                .map_or(-1, |load| load.log().role().1);
            let prefix = instance.as_deref().unwrap_or(&req.group_id);
            let new_id = format!("{prefix}-{epoch}-{:x}", state.next_member);
            let log_end = log_end(&state.partitions, self.offsets_partition(&req.group_id));
            let group = state
                .groups
                .entry(req.group_id.clone())
                .or_insert_with(|| Group::born(log_end));
            let Some(instance) = instance.as_deref() else {
                // KIP-394: a new dynamic member first gets its id, then joins with it.
                let session_timeout = Duration::from_millis(req.session_timeout_ms);
                group.pending_members.insert(new_id.clone(), now + session_timeout);
                fail(tx, ErrorCode::MemberIdRequired, &new_id);
                return (rx, None);
            };
            // A static member joins at once; if its instance id is known it takes the place
            // of the member that held it.
            rejoining_static = group.static_member(instance).cloned();
            member_id = new_id;
        } else {
            let Some(group) = state.groups.get_mut(&req.group_id) else {
                fail(tx, ErrorCode::UnknownMemberId, &member_id);
                return (rx, None);
            };
            let pending = group.pending_members.remove(&member_id).is_some() && !group.members.contains_key(&member_id);
            if !pending {
                // Removed meanwhile (its session expired, it left), given out by another
                // coordinator, or its instance id taken over by a newer member.
                if let Err(error) = group.validate_member(&member_id, instance.as_deref()) {
                    self.note_fenced(&req.group_id, group, &member_id, error);
                    fail(tx, error, &member_id);
                    return (rx, None);
                }
            } else if let Some(instance) = instance.as_deref()
                && group.static_member(instance).is_some()
            {
                fail(tx, ErrorCode::FencedInstanceId, &member_id);
                return (rx, None);
            }
        }
        let seq = state.next_member;
        state.next_member += 1;
        let CoordinatorState { partitions, groups, .. } = &mut *state;
        let Some(group) = groups.get_mut(&req.group_id) else {
            fail(tx, ErrorCode::UnknownMemberId, &member_id);
            return (rx, None);
        };
        if group.state != GroupState::Empty
            && !group.protocol_type.is_empty()
            && group.protocol_type != req.protocol_type
        {
            fail(tx, ErrorCode::InconsistentGroupProtocol, &member_id);
            return (rx, None);
        }
        group.protocol_type = req.protocol_type.clone();
        let session_timeout = Duration::from_millis(req.session_timeout_ms);
        let rebalance_timeout = Duration::from_millis(req.rebalance_timeout_ms.max(req.session_timeout_ms));
        if let (Some(old_id), Some(instance)) = (rejoining_static, instance.clone()) {
            let outcome = self.rejoin_static(
                partitions,
                group,
                &req.group_id,
                StaticJoin {
                    instance,
                    old_id,
                    new_id: member_id,
                    protocols: req.protocols,
                    session_timeout,
                    rebalance_timeout,
                },
                tx,
                now,
            );
            drop(state);
            self.tick();
            return (rx, outcome);
        }
        match group.members.get_mut(&member_id) {
            Some(m) => {
                let changed = m.protocols != req.protocols;
                m.protocols = req.protocols;
                m.client_id = req.client_id;
                m.client_host = req.client_host;
                m.session_timeout = session_timeout;
                m.rebalance_timeout = rebalance_timeout;
                m.last_heartbeat = now;
                let is_leader = group.leader.as_deref() == Some(member_id.as_str());
                // Kafka's CompletingRebalance case: the member probably missed its JoinGroup
                // answer (a retry, a slow link); it gets the current generation again, the
                // leader with the members to assign. Rebalancing here instead would fail every
                // SyncGroup in flight, and members that rejoin at once would keep the group
                // from ever settling. A Stable group's follower with unchanged metadata has
                // nothing to do either.
                let completing = group.state == GroupState::CompletingRebalance;
                if !changed && (completing || (group.state == GroupState::Stable && !is_leader)) {
                    let lead = completing && is_leader;
                    let _ = tx.send(JoinGroupResponse {
                        error: None,
                        generation_id: group.generation,
                        protocol_name: group.protocol.clone(),
                        leader: group.leader.clone().unwrap_or_default(),
                        member_id,
                        members: if lead {
                            group_protocol_members(group)
                        } else {
                            Vec::new()
                        },
                        member_instances: if lead { group.member_instances() } else { Vec::new() },
                    });
                    return (rx, None);
                }
                m.join_waiter = Some(tx);
                if group.state != GroupState::PreparingRebalance {
                    group.prepare_rebalance(now);
                }
            }
            None => {
                let was_empty = group.state == GroupState::Empty;
                group.members.insert(
                    member_id.clone(),
                    Member {
                        group_instance_id: instance,
                        client_id: req.client_id,
                        client_host: req.client_host,
                        session_timeout,
                        rebalance_timeout,
                        protocols: req.protocols,
                        assignment: Bytes::new(),
                        last_heartbeat: now,
                        joined_seq: seq,
                        join_waiter: Some(tx),
                        sync_waiter: None,
                    },
                );
                if was_empty {
                    let cap = now + rebalance_timeout;
                    group.initial_delay_until = Some((now + self.initial_rebalance_delay).min(cap));
                } else if let Some(until) = group.initial_delay_until {
                    // Each new member of a forming group extends the wait, within the
                    // rebalance timeout.
                    let cap = group.rebalance_deadline.unwrap_or(now + rebalance_timeout);
                    group.initial_delay_until = Some((now + self.initial_rebalance_delay).min(cap).max(until));
                }
                // A Stable group (a loaded one too) waits for its known members to rejoin,
                // up to the rebalance timeout.
                group.prepare_rebalance(now);
            }
        }
        drop(state);
        self.tick();
        (rx, None)
    }

    /// Kafka's `updateStaticMemberAndRebalance`: a static member rejoining with an unknown
    /// member id takes the place of the member that held its instance id. In a Stable group
    /// whose protocol it does not change, it keeps that member's assignment without a
    /// rebalance: the group record is stored with the new id and the member is answered once
    /// it is replicated, with the group's generation and the leader as it was (a rejoining
    /// leader is told the old leader id, so it does not assign again: the group stays
    /// Stable). Otherwise the group rebalances, or goes on with the rebalance under way.
    fn rejoin_static(
        &self,
        partitions: &HashMap<i32, Load>,
        group: &mut Group,
        group_id: &str,
        join: StaticJoin,
        tx: oneshot::Sender<JoinGroupResponse>,
        now: Instant,
    ) -> Option<StaticRejoin> {
        let leader_before = group.leader.clone().unwrap_or_default();
        group.replace_static_member(&join.instance, &join.old_id, &join.new_id);
        let Some(member) = group.members.get_mut(&join.new_id) else {
            let _ = tx.send(JoinGroupResponse {
                error: Some(ErrorCode::UnknownMemberId),
                ..JoinGroupResponse::default()
            });
            return None;
        };
        let before = StaticMemberBefore {
            protocols: std::mem::replace(&mut member.protocols, join.protocols),
            session_timeout: std::mem::replace(&mut member.session_timeout, join.session_timeout),
            rebalance_timeout: std::mem::replace(&mut member.rebalance_timeout, join.rebalance_timeout),
        };
        member.last_heartbeat = now;
        member.join_waiter = Some(tx);
        let replaced = |rebalance| EventKind::StaticMemberReplaced {
            group: group_id.to_string(),
            instance: join.instance.clone(),
            old_member: join.old_id.clone(),
            new_member: join.new_id.clone(),
            rebalance,
        };
        match group.state {
            GroupState::Stable if group.select_protocol() == group.protocol => {
                let assignment: BTreeMap<String, Bytes> = group
                    .members
                    .iter()
                    .map(|(id, m)| (id.clone(), m.assignment.clone()))
                    .collect();
                let batch = group_metadata_batch(group_id, &group.metadata(&assignment, self.wall.now_ms()));
                match self.append(partitions, group_id, batch) {
                    Ok(write) => Some(StaticRejoin {
                        group_id: group_id.to_string(),
                        generation: group.generation,
                        instance: join.instance,
                        old_id: join.old_id,
                        new_id: join.new_id,
                        leader_before,
                        before,
                        write,
                    }),
                    Err(error) => {
                        revert_static_member(
                            group,
                            &join.instance,
                            &join.new_id,
                            &join.old_id,
                            before,
                            error,
                            &leader_before,
                        );
                        None
                    }
                }
            }
            GroupState::Stable | GroupState::CompletingRebalance => {
                group.prepare_rebalance(now);
                self.events.publish(replaced(true));
                None
            }
            GroupState::PreparingRebalance | GroupState::Empty => {
                self.events.publish(replaced(true));
                None
            }
        }
    }

    /// SyncGroup. The leader's call carries every member's assignment; it is written to the
    /// log as the group's record, and nobody learns it before the broker has seen that
    /// record replicated ([`PendingWrite`], then [`GroupCoordinator::group_stored`]).
    pub(crate) fn sync(
        &self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance: Option<&str>,
        assignments: Vec<(String, Bytes)>,
    ) -> (oneshot::Receiver<SyncGroupResponse>, Option<PendingWrite>) {
        let (tx, rx) = oneshot::channel();
        let mut state = self.lock();
        let fail = |tx: oneshot::Sender<SyncGroupResponse>, e| {
            let _ = tx.send(SyncGroupResponse {
                error: Some(e),
                assignment: Bytes::new(),
            });
        };
        if let Some(error) = self.check(&state, group_id) {
            fail(tx, error);
            return (rx, None);
        }
        let CoordinatorState { partitions, groups, .. } = &mut *state;
        let Some(group) = groups.get_mut(group_id) else {
            fail(tx, ErrorCode::UnknownMemberId);
            return (rx, None);
        };
        if let Err(error) = group.validate_member(member_id, instance) {
            self.note_fenced(group_id, group, member_id, error);
            fail(tx, error);
            return (rx, None);
        }
        if generation != group.generation {
            fail(tx, ErrorCode::IllegalGeneration);
            return (rx, None);
        }
        match group.state {
            GroupState::Empty => fail(tx, ErrorCode::UnknownMemberId),
            GroupState::PreparingRebalance => fail(tx, ErrorCode::RebalanceInProgress),
            GroupState::Stable => {
                let assignment = group
                    .members
                    .get(member_id)
                    .map(|m| m.assignment.clone())
                    .unwrap_or_default();
                let _ = tx.send(SyncGroupResponse {
                    error: None,
                    assignment,
                });
            }
            GroupState::CompletingRebalance => {
                if let Some(m) = group.members.get_mut(member_id) {
                    m.sync_waiter = Some(tx);
                }
                if group.leader.as_deref() == Some(member_id) && group.pending_assignment.is_none() {
                    let mut given: HashMap<String, Bytes> = assignments.into_iter().collect();
                    let assignment: BTreeMap<String, Bytes> = group
                        .members
                        .keys()
                        .map(|id| (id.clone(), given.remove(id).unwrap_or_default()))
                        .collect();
                    let batch = group_metadata_batch(group_id, &group.metadata(&assignment, self.wall.now_ms()));
                    match self.append(partitions, group_id, batch) {
                        Ok(write) => {
                            group.pending_assignment = Some(assignment);
                            return (rx, Some(write));
                        }
                        Err(error) => fail_assignment(group, store_group_error(error), self.clock.now()),
                    }
                }
            }
        }
        (rx, None)
    }

    /// The group record a SyncGroup wrote is replicated (`error` None) or failed: members
    /// get their assignment and the group is Stable, or they get the error and the group
    /// rebalances. Nothing happens when the group moved on meanwhile.
    pub(crate) fn group_stored(&self, group_id: &str, generation: i32, error: ErrorCode) {
        let mut state = self.lock();
        let Some(group) = state.groups.get_mut(group_id) else {
            return;
        };
        if group.state != GroupState::CompletingRebalance || group.generation != generation {
            return;
        }
        let Some(mut assignment) = group.pending_assignment.take() else {
            return;
        };
        if error != ErrorCode::None {
            fail_assignment(group, store_group_error(error), self.clock.now());
            return;
        }
        for (id, m) in group.members.iter_mut() {
            m.assignment = assignment.remove(id).unwrap_or_default();
            if let Some(w) = m.sync_waiter.take() {
                let _ = w.send(SyncGroupResponse {
                    error: None,
                    assignment: m.assignment.clone(),
                });
            }
        }
        group.state = GroupState::Stable;
    }

    /// The group record of a static member's rejoin is replicated (`error` None) or failed:
    /// the member gets the group's current generation and keeps its assignment, or the old
    /// member id is put back and the member gets the error. Nothing happens when the group
    /// moved on meanwhile (a rebalance answers the member instead).
    pub(crate) fn static_member_stored(&self, rejoin: StaticRejoin, error: ErrorCode) {
        let mut state = self.lock();
        let Some(group) = state.groups.get_mut(&rejoin.group_id) else {
            return;
        };
        let waiting = group
            .members
            .get(&rejoin.new_id)
            .is_some_and(|m| m.join_waiter.is_some());
        if group.state != GroupState::Stable || group.generation != rejoin.generation || !waiting {
            return;
        }
        if error != ErrorCode::None {
            tracing::warn!(group = %rejoin.group_id, instance = %rejoin.instance, %error, "could not store the static member's new id; it keeps its old one");
            revert_static_member(
                group,
                &rejoin.instance,
                &rejoin.new_id,
                &rejoin.old_id,
                rejoin.before,
                error,
                &rejoin.leader_before,
            );
            return;
        }
        let protocol = group.protocol.clone();
        let generation = group.generation;
        if let Some(w) = group.members.get_mut(&rejoin.new_id).and_then(|m| m.join_waiter.take()) {
            let _ = w.send(JoinGroupResponse {
                error: None,
                generation_id: generation,
                protocol_name: protocol,
                leader: rejoin.leader_before,
                member_id: rejoin.new_id.clone(),
                members: Vec::new(),
                member_instances: Vec::new(),
            });
        }
        drop(state);
        self.events.publish(EventKind::StaticMemberReplaced {
            group: rejoin.group_id,
            instance: rejoin.instance,
            old_member: rejoin.old_id,
            new_member: rejoin.new_id,
            rebalance: false,
        });
    }

    /// A request of `member_id` was refused with `error`: when that is FENCED_INSTANCE_ID
    /// for a member replaced by a newer one, the timeline says so, once.
    fn note_fenced(&self, group_id: &str, group: &mut Group, member_id: &str, error: ErrorCode) {
        if error != ErrorCode::FencedInstanceId {
            return;
        }
        let Some(instance) = group.replaced.remove(member_id) else {
            return;
        };
        let by = group.static_member(&instance).cloned().unwrap_or_default();
        tracing::info!(group = group_id, member = member_id, %instance, %by, "member fenced: its group.instance.id was taken over");
        self.events.publish(EventKind::StaticMemberFenced {
            group: group_id.to_string(),
            instance,
            member: member_id.to_string(),
            by,
        });
    }

    pub fn heartbeat(&self, group_id: &str, generation: i32, member_id: &str, instance: Option<&str>) -> ErrorCode {
        let mut state = self.lock();
        if let Some(error) = self.check(&state, group_id) {
            return error;
        }
        let Some(group) = state.groups.get_mut(group_id) else {
            return ErrorCode::UnknownMemberId;
        };
        if let Err(error) = group.validate_member(member_id, instance) {
            self.note_fenced(group_id, group, member_id, error);
            return error;
        }
        let group_generation = group.generation;
        let group_state = group.state;
        let Some(m) = group.members.get_mut(member_id) else {
            return ErrorCode::UnknownMemberId;
        };
        m.last_heartbeat = self.clock.now();
        if group_state == GroupState::PreparingRebalance {
            return ErrorCode::RebalanceInProgress;
        }
        if generation != group_generation {
            return ErrorCode::IllegalGeneration;
        }
        ErrorCode::None
    }

    /// LeaveGroup for one member (Kafka's `handleLeaveGroup`): by member id, checked against
    /// the instance id when one is given; or, with an empty member id, the static member
    /// holding `instance` (how an operator removes a static member at once). A pending
    /// member that never joined just stops being pending.
    pub fn leave(&self, group_id: &str, member_id: &str, instance: Option<&str>) -> ErrorCode {
        let mut state = self.lock();
        if let Some(error) = self.check(&state, group_id) {
            return error;
        }
        let CoordinatorState { partitions, groups, .. } = &mut *state;
        let Some(group) = groups.get_mut(group_id) else {
            return ErrorCode::UnknownMemberId;
        };
        let member_id = if member_id.is_empty() {
            match instance.and_then(|i| group.static_member(i)) {
                Some(current) => current.clone(),
                None => return ErrorCode::UnknownMemberId,
            }
        } else if group.pending_members.remove(member_id).is_some() && !group.members.contains_key(member_id) {
            return ErrorCode::None;
        } else {
            if let Err(error) = group.validate_member(member_id, instance) {
                self.note_fenced(group_id, group, member_id, error);
                return error;
            }
            member_id.to_string()
        };
        let member_id = member_id.as_str();
        let before = group.state;
        if !remove_member(group, member_id, self.clock.now()) {
            return ErrorCode::UnknownMemberId;
        }
        if before != GroupState::Empty && group.state == GroupState::Empty {
            self.store_empty_group(partitions, group_id, group);
        }
        self.events.publish(EventKind::GroupMemberRemoved {
            group: group_id.to_string(),
            member: member_id.to_string(),
            reason: "left the group".into(),
        });
        ErrorCode::None
    }

    /// Kafka's `ClassicGroup.validateOffsetCommit`. A commit with a negative generation comes
    /// from an admin client (an offset reset) or a consumer outside group management: it is
    /// taken only while the group is Empty (or does not exist yet: it is created), else it is
    /// UNKNOWN_MEMBER_ID, as for a member the group does not know.
    fn validate_commit(
        &self,
        state: &mut CoordinatorState,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance: Option<&str>,
        transactional: bool,
    ) -> ErrorCode {
        if let Some(error) = self.check(state, group_id) {
            return error;
        }
        let Some(group) = state.groups.get_mut(group_id) else {
            // Kafka creates a "simple" group for a commit without a generation; with one,
            // OffsetCommit before v9 says ILLEGAL_GENERATION.
            return if generation < 0 {
                ErrorCode::None
            } else {
                ErrorCode::IllegalGeneration
            };
        };
        if generation < 0 && group.state == GroupState::Empty {
            return ErrorCode::None;
        }
        if generation >= 0 || !member_id.is_empty() || instance.is_some() {
            if let Err(error) = group.validate_member(member_id, instance) {
                self.note_fenced(group_id, group, member_id, error);
                return error;
            }
            if generation != group.generation {
                return ErrorCode::IllegalGeneration;
            }
        } else if !transactional {
            return ErrorCode::UnknownMemberId;
        }
        // A transactional commit is checked at its marker, not against the rebalance.
        if !transactional && group.state == GroupState::CompletingRebalance {
            return ErrorCode::RebalanceInProgress;
        }
        ErrorCode::None
    }

    /// OffsetCommit: validates it and appends its records; `None` when there is nothing to
    /// write. Once the broker saw them replicated it calls [`GroupCoordinator::committed`].
    pub(crate) fn commit_offsets(
        &self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance: Option<&str>,
        offsets: &[(TopicPartition, CommittedOffset)],
    ) -> Result<Option<PendingWrite>, ErrorCode> {
        let mut state = self.lock();
        let error = self.validate_commit(&mut state, group_id, generation, member_id, instance, false);
        if error != ErrorCode::None {
            return Err(error);
        }
        if offsets.is_empty() {
            return Ok(None);
        }
        if planted::active(Bug::OffsetCommitNotWritten) {
            // Planted (issue 24): served from memory only; the next coordinator loads the log
            // without these offsets.
            let end = log_end(&state.partitions, self.offsets_partition(group_id)).max(0);
            state
                .groups
                .entry(group_id.to_string())
                .or_insert_with(|| Group::born(end));
            drop(state);
            self.committed(group_id, offsets, end);
            return Ok(None);
        }
        let write = self.append(&state.partitions, group_id, offset_commit_batch(group_id, offsets))?;
        let pending_until = self.wall.now_ms().saturating_add(millis_i64(OFFSETS_COMMIT_TIMEOUT));
        let group = state
            .groups
            .entry(group_id.to_string())
            .or_insert_with(|| Group::born(write.appended.first_offset));
        group.commit_pending_until = pending_until;
        Ok(Some(write))
    }

    /// The commit records from `first_offset` on are replicated: expose the offsets, unless
    /// a later record of the same partition got there first (another commit, or the
    /// tombstone of a deletion).
    pub(crate) fn committed(&self, group_id: &str, offsets: &[(TopicPartition, CommittedOffset)], first_offset: i64) {
        let mut state = self.lock();
        if self.check(&state, group_id).is_some() {
            // Not served here any more; whoever loads the partition replays the records.
            return;
        }
        let deleted_since = state
            .deleted_at
            .get(&self.offsets_partition(group_id))
            .is_some_and(|&at| at > first_offset);
        let group = match state.groups.entry(group_id.to_string()) {
            Entry::Occupied(group) => group.into_mut(),
            Entry::Vacant(_) if deleted_since => return,
            Entry::Vacant(vacant) => vacant.insert(Group::new()),
        };
        if first_offset < group.born_at {
            return;
        }
        for ((tp, offset), appended_offset) in offsets.iter().zip(first_offset..) {
            let later = |at: i64| at > appended_offset;
            if group.offsets.get(tp).is_some_and(|c| later(c.appended_offset))
                || group.tombstoned.get(tp).copied().is_some_and(later)
            {
                continue;
            }
            group.offsets.insert(
                tp.clone(),
                CommitRecordMetadataAndOffset {
                    appended_offset,
                    offset: *offset,
                },
            );
        }
    }

    /// TxnOffsetCommit: validated as OffsetCommit (KIP-447 member checks when a generation
    /// or member id is given), appended as a transactional batch of the producer. Once it is
    /// replicated the broker calls [`GroupCoordinator::txn_offsets_appended`]; the offsets
    /// stay pending until the transaction's marker.
    pub(crate) fn txn_commit_offsets(
        &self,
        group_id: &str,
        (producer_id, producer_epoch): (i64, i16),
        generation: i32,
        member_id: &str,
        instance: Option<&str>,
        offsets: &[(TopicPartition, CommittedOffset)],
    ) -> Result<Option<PendingWrite>, ErrorCode> {
        let mut state = self.lock();
        let error = self.validate_commit(&mut state, group_id, generation, member_id, instance, true);
        if error != ErrorCode::None {
            return Err(error);
        }
        if offsets.is_empty() {
            return Ok(None);
        }
        let Some(Load::Loaded { log, .. }) = state.partitions.get(&self.offsets_partition(group_id)) else {
            return Err(ErrorCode::NotCoordinator);
        };
        let mut batch = txn_offset_commit_batch(group_id, offsets, producer_id, producer_epoch);
        let appended = log.append_as_coordinator(&mut batch, producer_id, producer_epoch, self.wall.now_ms())?;
        let write = PendingWrite {
            partition: Arc::clone(log),
            appended,
        };
        let pending_until = self.wall.now_ms().saturating_add(millis_i64(OFFSETS_COMMIT_TIMEOUT));
        let group = state
            .groups
            .entry(group_id.to_string())
            .or_insert_with(|| Group::born(write.appended.first_offset));
        group.commit_pending_until = pending_until;
        Ok(Some(write))
    }

    /// A TxnOffsetCommit's records from `first_offset` on are replicated: they wait for the
    /// producer's transaction to end.
    pub(crate) fn txn_offsets_appended(
        &self,
        group_id: &str,
        producer_id: i64,
        offsets: &[(TopicPartition, CommittedOffset)],
        first_offset: i64,
    ) {
        let mut state = self.lock();
        if self.check(&state, group_id).is_some() {
            return;
        }
        let group = state.groups.entry(group_id.to_string()).or_insert_with(Group::new);
        let pending = group.pending_txn.entry(producer_id).or_default();
        for ((tp, offset), appended_offset) in offsets.iter().zip(first_offset..) {
            pending.insert(
                tp.clone(),
                CommitRecordMetadataAndOffset {
                    appended_offset,
                    offset: *offset,
                },
            );
        }
    }

    /// The marker of `producer_id`'s transaction is in offsets partition `partition`: its
    /// pending offsets there become committed (unless a later commit of the same partition
    /// got there first) or are dropped (Kafka's `handleTxnCompletion`).
    pub(crate) fn complete_txn(&self, partition: i32, producer_id: i64, commit: bool) {
        let mut state = self.lock();
        if !matches!(state.partitions.get(&partition), Some(Load::Loaded { .. })) {
            return;
        }
        let offsets_partitions = self.offsets_partitions;
        for (id, group) in state.groups.iter_mut() {
            if partition_for_group(id, offsets_partitions) != partition {
                continue;
            }
            if let Some(pending) = group.pending_txn.remove(&producer_id)
                && commit
            {
                merge_txn_offsets(&mut group.offsets, pending);
            }
        }
    }

    /// Committed offsets (-1 where none), for the partitions asked or all the group has
    /// committed. With `require_stable` (Kafka's `GroupMetadataManager.getOffsets`), a
    /// partition that a still-open transaction has offsets pending for answers
    /// UNSTABLE_OFFSET_COMMIT: the offset committed before it may be about to be replaced,
    /// and a read_committed consumer that started there would process that transaction's
    /// input a second time.
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        partitions: Option<&[TopicPartition]>,
        require_stable: bool,
    ) -> Result<FetchedOffsets, ErrorCode> {
        let state = self.lock();
        if let Some(error) = self.check(&state, group_id) {
            return Err(error);
        }
        let Some(group) = state.groups.get(group_id) else {
            let none = partitions.unwrap_or_default();
            return Ok(none.iter().map(|tp| (tp.clone(), Ok(-1))).collect());
        };
        let answer = |tp: &TopicPartition| {
            if require_stable && group.pending_txn.values().any(|p| p.contains_key(tp)) {
                return Err(ErrorCode::UnstableOffsetCommit);
            }
            Ok(group.offsets.get(tp).map_or(-1, |c| c.offset.offset))
        };
        Ok(match partitions {
            Some(tps) => tps.iter().map(|tp| (tp.clone(), answer(tp))).collect(),
            None => group.offsets.keys().map(|tp| (tp.clone(), answer(tp))).collect(),
        })
    }
    /// Groups this broker coordinates, with their state.
    pub fn list_groups(&self) -> Vec<(String, GroupState)> {
        let state = self.lock();
        let mut out: Vec<(String, GroupState)> = state
            .groups
            .iter()
            .filter(|(id, _)| self.check(&state, id).is_none())
            .map(|(id, g)| (id.clone(), g.state))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    pub fn describe(&self, group_id: &str) -> Result<Option<GroupDescription>, ErrorCode> {
        let state = self.lock();
        if let Some(error) = self.check(&state, group_id) {
            return Err(error);
        }
        Ok(state.groups.get(group_id).map(|g| GroupDescription {
            group_id: group_id.to_string(),
            state: g.state,
            protocol_type: g.protocol_type.clone(),
            protocol: g.protocol.clone().unwrap_or_default(),
            generation_id: g.generation,
            members: g
                .members
                .iter()
                .map(|(id, m)| MemberDescription {
                    member_id: id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    assignment: m.assignment.clone(),
                    metadata: g
                        .protocol
                        .as_ref()
                        .and_then(|p| m.protocols.iter().find(|(n, _)| n == p))
                        .map(|(_, b)| b.clone())
                        .unwrap_or_default(),
                })
                .collect(),
        }))
    }

    /// Every group this broker coordinates, with members and committed offsets.
    pub fn snapshot(&self) -> Vec<(GroupDescription, Vec<(TopicPartition, i64)>)> {
        let state = self.lock();
        let mut ids: Vec<&String> = state
            .groups
            .keys()
            .filter(|id| self.check(&state, id).is_none())
            .collect();
        ids.sort();
        ids.into_iter()
            .filter_map(|id| {
                let g = state.groups.get(id)?;
                let description = GroupDescription {
                    group_id: id.clone(),
                    state: g.state,
                    protocol_type: g.protocol_type.clone(),
                    protocol: g.protocol.clone().unwrap_or_default(),
                    generation_id: g.generation,
                    members: g
                        .members
                        .iter()
                        .map(|(mid, m)| MemberDescription {
                            member_id: mid.clone(),
                            group_instance_id: m.group_instance_id.clone(),
                            client_id: m.client_id.clone(),
                            client_host: m.client_host.clone(),
                            assignment: m.assignment.clone(),
                            metadata: Bytes::new(),
                        })
                        .collect(),
                };
                let offsets = g.offsets.iter().map(|(tp, c)| (tp.clone(), c.offset.offset)).collect();
                Some((description, offsets))
            })
            .collect()
    }

    /// Offsets retention (Kafka's `cleanupGroupMetadata`, every
    /// `offsets.retention.check.interval.ms`): deletes the expired offsets of the groups
    /// served here (see [`Group::expired_offsets`]) by writing tombstones, and an empty
    /// group left with no offsets is removed with a tombstone of its own. Compaction then
    /// drops their records, so `__consumer_offsets` holds only live groups. Returns the
    /// number of groups and offsets removed.
    pub fn expire_offsets(&self, retention_ms: i64) -> (usize, usize) {
        let now_ms = self.wall.now_ms();
        let mut state = self.lock();
        let CoordinatorState { partitions, groups, .. } = &mut *state;
        let (mut groups_removed, mut offsets_removed) = (Vec::new(), 0);
        for (id, group) in groups.iter_mut() {
            let expired = group.expired_offsets(now_ms, retention_ms);
            // Kafka's `group.is(Empty) && !group.hasOffsets`: offsets an open transaction has
            // pending keep the group, or its COMMIT marker would land on a deleted group.
            let dead = group.state == GroupState::Empty
                && now_ms >= group.commit_pending_until
                && group.pending_txn.is_empty()
                && group.offsets.len() == expired.len();
            if expired.is_empty() && !dead {
                continue;
            }
            let mut recs: Vec<records::Record> = expired
                .iter()
                .enumerate()
                .map(|(i, tp)| records::record(i as i64, now_ms, Some(record::offset_commit_key(id, tp)), None))
                .collect();
            if dead {
                let delta = recs.len() as i64;
                recs.push(records::record(
                    delta,
                    now_ms,
                    Some(record::group_metadata_key(id)),
                    None,
                ));
            }
            // Nobody waits for the tombstones, as in Kafka; a failure only keeps the records
            // for the next pass or the next coordinator.
            if let Err(error) = self.append(partitions, id, encode(&recs)) {
                tracing::warn!(group = %id, %error, "could not write the expired offsets' tombstones");
                continue;
            }
            offsets_removed += expired.len();
            for tp in &expired {
                group.offsets.remove(tp);
            }
            if dead {
                groups_removed.push(id.clone());
            }
        }
        for id in &groups_removed {
            groups.remove(id);
        }
        drop(state);
        if offsets_removed > 0 || !groups_removed.is_empty() {
            tracing::info!(
                groups = groups_removed.len(),
                offsets = offsets_removed,
                "offsets retention removed expired offsets and empty groups"
            );
        }
        (groups_removed.len(), offsets_removed)
    }

    /// Timers: completes join phases and expires silent members. Called periodically and
    /// after every join.
    pub fn tick(&self) {
        let now = self.clock.now();
        let now_ms = self.wall.now_ms();
        let mut state = self.lock();
        let mut events = Vec::new();
        let CoordinatorState { partitions, groups, .. } = &mut *state;
        for (id, group) in groups.iter_mut() {
            group.pending_members.retain(|_, until| now < *until);
            let before = group.state;
            let expired: Vec<String> = group
                .members
                .iter()
                .filter(|(_, m)| m.join_waiter.is_none() && now.duration_since(m.last_heartbeat) > m.session_timeout)
                .map(|(id, _)| id.clone())
                .collect();
            for member in expired {
                remove_member(group, &member, now);
                events.push(EventKind::GroupMemberRemoved {
                    group: id.clone(),
                    member,
                    reason: "session timed out: no heartbeat".into(),
                });
            }
            if group.state == GroupState::PreparingRebalance {
                let all_joined = group.members.values().all(|m| m.join_waiter.is_some());
                let delay_over = group.initial_delay_until.is_none_or(|t| now >= t);
                let timed_out = group.rebalance_deadline.is_some_and(|t| now >= t);
                if ((all_joined && delay_over) || timed_out) && complete_join(group, now) {
                    events.push(EventKind::GroupRebalanced {
                        group: id.clone(),
                        generation: group.generation,
                        members: group.members.len(),
                        protocol: group.protocol.clone().unwrap_or_default(),
                    });
                }
            }
            if before != GroupState::Empty && group.state == GroupState::Empty {
                self.store_empty_group(partitions, id, group);
            }
            if group.state == GroupState::Empty {
                group.empty_since.get_or_insert(now_ms);
            } else {
                group.empty_since = None;
            }
            if now_ms >= group.commit_pending_until {
                group.tombstoned.clear();
            }
        }
        drop(state);
        for e in events {
            self.events.publish(e);
        }
    }
}

/// Drops the groups of an offsets partition; members waiting for an answer learn
/// NOT_COORDINATOR and look for the new coordinator.
fn unload_locked(state: &mut CoordinatorState, partition: i32, partition_of: impl Fn(&str) -> i32) {
    state.partitions.remove(&partition);
    state.deleted_at.remove(&partition);
    let gone: Vec<String> = state
        .groups
        .keys()
        .filter(|g| partition_of(g.as_str()) == partition)
        .cloned()
        .collect();
    for id in gone {
        let Some(group) = state.groups.remove(&id) else {
            continue;
        };
        for (_, m) in group.members {
            if let Some(w) = m.join_waiter {
                let _ = w.send(JoinGroupResponse {
                    error: Some(ErrorCode::NotCoordinator),
                    ..JoinGroupResponse::default()
                });
            }
            if let Some(w) = m.sync_waiter {
                let _ = w.send(SyncGroupResponse {
                    error: Some(ErrorCode::NotCoordinator),
                    assignment: Bytes::new(),
                });
            }
        }
    }
}

/// The leader's assignment could not be stored: every member waiting for it gets `error`
/// and the group rebalances (Kafka's `resetAndPropagateAssignmentError`).
fn fail_assignment(group: &mut Group, error: ErrorCode, now: Instant) {
    for m in group.members.values_mut() {
        m.assignment = Bytes::new();
        if let Some(w) = m.sync_waiter.take() {
            let _ = w.send(SyncGroupResponse {
                error: Some(error),
                assignment: Bytes::new(),
            });
        }
    }
    group.prepare_rebalance(now);
}

/// The group record naming a rejoined static member's new id could not be written (Kafka's
/// `updateStaticMemberAndRebalance` failure path): the old member comes back as it was, and
/// the new one is told the error, with an unknown member id.
fn revert_static_member(
    group: &mut Group,
    instance: &str,
    new_id: &str,
    old_id: &str,
    before: StaticMemberBefore,
    error: ErrorCode,
    leader_before: &str,
) {
    let waiter = group.members.get_mut(new_id).and_then(|m| {
        m.protocols = before.protocols;
        m.session_timeout = before.session_timeout;
        m.rebalance_timeout = before.rebalance_timeout;
        m.join_waiter.take()
    });
    group.replace_static_member(instance, new_id, old_id);
    group.replaced.remove(new_id);
    if let Some(w) = waiter {
        let _ = w.send(JoinGroupResponse {
            error: Some(store_group_error(error)),
            generation_id: group.generation,
            protocol_name: group.protocol.clone(),
            leader: leader_before.to_string(),
            ..JoinGroupResponse::default()
        });
    }
}

/// Removes a member; the group rebalances (or empties).
fn remove_member(group: &mut Group, member_id: &str, now: Instant) -> bool {
    let Some(m) = group.members.remove(member_id) else {
        return false;
    };
    if let Some(w) = m.join_waiter {
        let _ = w.send(JoinGroupResponse {
            error: Some(ErrorCode::UnknownMemberId),
            ..JoinGroupResponse::default()
        });
    }
    if group.leader.as_deref() == Some(member_id) {
        group.leader = None;
    }
    if group.members.is_empty() && group.state != GroupState::PreparingRebalance {
        group.state = GroupState::Empty;
        group.generation += 1;
        group.protocol = None;
    } else if group.state != GroupState::Empty {
        group.prepare_rebalance(now);
    }
    true
}

/// Every member with its metadata for the group's chosen protocol: what the leader assigns.
fn group_protocol_members(group: &Group) -> Vec<(String, Bytes)> {
    let protocol = group.protocol.as_deref().unwrap_or_default();
    group
        .members
        .iter()
        .map(|(id, m)| {
            let meta = m.protocols.iter().find(|(n, _)| n == protocol).map(|(_, b)| b.clone());
            (id.clone(), meta.unwrap_or_default())
        })
        .collect()
}

/// The join phase is over (Kafka's `onCompleteJoin`): dynamic members that did not rejoin
/// are dropped, static ones stay (until their session expires); the generation moves on, a
/// protocol is chosen by vote, and every joined member gets its answer, the leader with
/// every member to assign. With only static members that did not rejoin, the phase waits
/// another rebalance timeout. Returns whether a new generation began.
fn complete_join(group: &mut Group, now: Instant) -> bool {
    let missing: Vec<String> = group
        .members
        .iter()
        .filter(|(_, m)| m.join_waiter.is_none() && m.group_instance_id.is_none())
        .map(|(id, _)| id.clone())
        .collect();
    for id in missing {
        group.members.remove(&id);
    }
    let joined = |group: &Group, id: &str| group.members.get(id).is_some_and(|m| m.join_waiter.is_some());
    let leader = group.leader.clone().filter(|l| joined(group, l)).or_else(|| {
        group
            .members
            .iter()
            .filter(|(_, m)| m.join_waiter.is_some())
            .min_by_key(|(_, m)| m.joined_seq)
            .map(|(id, _)| id.clone())
    });
    let Some(leader) = leader.or_else(|| group.members.is_empty().then(String::new)) else {
        // Only static members that have not rejoined: wait for them (or for their sessions
        // to expire) one more rebalance timeout.
        let timeout = group
            .members
            .values()
            .map(|m| m.rebalance_timeout)
            .max()
            .unwrap_or(Duration::from_secs(60));
        group.rebalance_deadline = Some(now + timeout);
        return false;
    };
    group.rebalance_deadline = None;
    group.initial_delay_until = None;
    group.generation += 1;
    if group.members.is_empty() {
        group.state = GroupState::Empty;
        group.protocol = None;
        group.leader = None;
        return true;
    }
    let Some(protocol) = group.select_protocol() else {
        for (_, m) in group.members.iter_mut() {
            if let Some(w) = m.join_waiter.take() {
                let _ = w.send(JoinGroupResponse {
                    error: Some(ErrorCode::InconsistentGroupProtocol),
                    ..JoinGroupResponse::default()
                });
            }
        }
        group.members.clear();
        group.state = GroupState::Empty;
        return true;
    };
    group.protocol = Some(protocol.clone());
    group.leader = Some(leader.clone());
    let members = group_protocol_members(group);
    let member_instances = group.member_instances();
    group.state = GroupState::CompletingRebalance;
    let generation = group.generation;
    for (id, m) in group.members.iter_mut() {
        m.last_heartbeat = now;
        if let Some(w) = m.join_waiter.take() {
            let is_leader = *id == leader;
            let _ = w.send(JoinGroupResponse {
                error: None,
                generation_id: generation,
                protocol_name: Some(protocol.clone()),
                leader: leader.clone(),
                member_id: id.clone(),
                members: if is_leader { members.clone() } else { Vec::new() },
                member_instances: if is_leader {
                    member_instances.clone()
                } else {
                    Vec::new()
                },
            });
        }
    }
    true
}

/// A batch of OffsetCommit records, one per partition in the order given.
fn offset_commit_batch(group: &str, offsets: &[(TopicPartition, CommittedOffset)]) -> Vec<u8> {
    let recs: Vec<records::Record> = offsets
        .iter()
        .enumerate()
        .map(|(i, (tp, o))| {
            records::record(
                i as i64,
                o.commit_timestamp,
                Some(record::offset_commit_key(group, tp)),
                Some(record::offset_commit_value(o)),
            )
        })
        .collect();
    encode(&recs)
}

/// A TxnOffsetCommit's records: a transactional batch of the producer (sequence 0: the
/// partition does not check a coordinator's sequences, as Kafka's coordinator appends).
fn txn_offset_commit_batch(
    group: &str,
    offsets: &[(TopicPartition, CommittedOffset)],
    producer_id: i64,
    producer_epoch: i16,
) -> Vec<u8> {
    let recs: Vec<records::Record> = offsets
        .iter()
        .enumerate()
        .map(|(i, (tp, o))| {
            let mut r = records::record(
                i as i64,
                o.commit_timestamp,
                Some(record::offset_commit_key(group, tp)),
                Some(record::offset_commit_value(o)),
            );
            r.transactional = true;
            r.producer_id = producer_id;
            r.producer_epoch = producer_epoch;
            r.sequence = i as i32;
            r
        })
        .collect();
    encode(&recs)
}

/// Committed transactional offsets join the group's, each unless the group has a later
/// record for its partition.
fn merge_txn_offsets(
    offsets: &mut BTreeMap<TopicPartition, CommitRecordMetadataAndOffset>,
    pending: BTreeMap<TopicPartition, CommitRecordMetadataAndOffset>,
) {
    for (tp, c) in pending {
        if offsets
            .get(&tp)
            .is_none_or(|old| old.appended_offset < c.appended_offset)
        {
            offsets.insert(tp, c);
        }
    }
}

/// A batch of one GroupMetadata record.
fn group_metadata_batch(group: &str, value: &GroupMetadataValue) -> Vec<u8> {
    let rec = records::record(
        0,
        value.current_state_timestamp,
        Some(record::group_metadata_key(group)),
        Some(record::group_metadata_value(value)),
    );
    encode(&[rec])
}

/// Where the offsets partition `partition` ends, as this coordinator writes it (-1 when not
/// served here).
fn log_end(partitions: &HashMap<i32, Load>, partition: i32) -> i64 {
    partitions.get(&partition).map_or(-1, |l| l.log().log.log_end_offset())
}

fn encode(recs: &[records::Record]) -> Vec<u8> {
    records::encode_batch(recs, records::Compression::None)
        .map(|b| b.to_vec())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
