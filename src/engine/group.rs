//! The consumer-group coordinator, classic protocol (Kafka's `GroupCoordinator` /
//! `ClassicGroup`): JoinGroup, SyncGroup, Heartbeat, LeaveGroup, generations, member ids,
//! session and rebalance timeouts, the initial rebalance delay; and committed offsets.
//!
//! The coordinator of a group is the leader of partition `abs(javaHash(group)) % N` of
//! `__consumer_offsets`. Offsets are records in that partition (Kafka's OffsetCommit key and
//! value formats), replicated like any topic; a broker that becomes its leader replays the
//! partition to rebuild the committed offsets. Group membership is not persisted: after a
//! coordinator moves, members get UNKNOWN_MEMBER_ID on their next heartbeat and rejoin.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::events::{EventBus, EventKind};
use super::protocol::ErrorCode;
use super::{BrokerId, TopicPartition};
use crate::storage::records;

pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

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
}

#[derive(Debug, Clone, Default)]
pub struct SyncGroupResponse {
    pub error: Option<ErrorCode>,
    pub assignment: Bytes,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MemberDescription {
    pub member_id: String,
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

#[derive(Debug)]
struct Member {
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

#[derive(Debug)]
struct Group {
    state: GroupState,
    generation: i32,
    protocol_type: String,
    protocol: Option<String>,
    leader: Option<String>,
    members: BTreeMap<String, Member>,
    offsets: BTreeMap<TopicPartition, CommittedOffset>,
    rebalance_deadline: Option<Instant>,
    /// While the first members of an empty group arrive (group.initial.rebalance.delay.ms).
    initial_delay_until: Option<Instant>,
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
        }
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Load {
    Loading,
    Loaded,
}

pub struct GroupCoordinator {
    events: EventBus,
    offsets_partitions: i32,
    initial_rebalance_delay: Duration,
    state: Mutex<CoordinatorState>,
}

#[derive(Default)]
struct CoordinatorState {
    partitions: HashMap<i32, Load>,
    groups: HashMap<String, Group>,
    next_member: u64,
}

impl GroupCoordinator {
    pub(crate) fn new(
        broker: BrokerId,
        offsets_partitions: i32,
        initial_rebalance_delay_ms: u64,
        events: EventBus,
    ) -> Self {
        GroupCoordinator {
            events,
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
            Some(Load::Loaded) => None,
            Some(Load::Loading) => Some(ErrorCode::CoordinatorLoadInProgress),
            None => Some(ErrorCode::NotCoordinator),
        }
    }

    /// This broker leads an offsets partition now: its groups are being loaded.
    pub fn begin_loading(&self, partition: i32) {
        self.lock().partitions.insert(partition, Load::Loading);
    }

    /// Replayed offsets of a newly led partition; the groups are served from now on.
    pub fn finish_loading(&self, partition: i32, offsets: Vec<(String, TopicPartition, Option<CommittedOffset>)>) {
        let mut state = self.lock();
        if state.partitions.get(&partition) != Some(&Load::Loading) {
            return;
        }
        for (group, tp, value) in offsets {
            let g = state.groups.entry(group).or_insert_with(Group::new);
            match value {
                Some(v) => g.offsets.insert(tp, v),
                None => g.offsets.remove(&tp),
            };
        }
        state.partitions.insert(partition, Load::Loaded);
    }

    /// This broker no longer leads an offsets partition: drop its groups; waiting members
    /// learn NOT_COORDINATOR and look for the new one.
    pub fn unload(&self, partition: i32) {
        let mut state = self.lock();
        state.partitions.remove(&partition);
        let gone: Vec<String> = state
            .groups
            .keys()
            .filter(|g| self.offsets_partition(g) == partition)
            .cloned()
            .collect();
        for id in gone {
            if let Some(group) = state.groups.remove(&id) {
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
    }

    /// JoinGroup. The answer arrives when the join phase completes.
    pub fn join(&self, req: JoinGroupRequest) -> oneshot::Receiver<JoinGroupResponse> {
        let (tx, rx) = oneshot::channel();
        let mut state = self.lock();
        if let Some(error) = self.check(&state, &req.group_id) {
            let _ = tx.send(JoinGroupResponse {
                error: Some(error),
                ..JoinGroupResponse::default()
            });
            return rx;
        }
        let now = Instant::now();
        if req.protocols.is_empty() || req.protocol_type.is_empty() {
            let _ = tx.send(JoinGroupResponse {
                error: Some(ErrorCode::InconsistentGroupProtocol),
                ..JoinGroupResponse::default()
            });
            return rx;
        }
        if req.member_id.is_empty() {
            // KIP-394: a new member first gets its id, then joins with it.
            state.next_member += 1;
            let member_id = format!("{}-{:x}", req.group_id, state.next_member);
            let _ = tx.send(JoinGroupResponse {
                error: Some(ErrorCode::MemberIdRequired),
                member_id,
                ..JoinGroupResponse::default()
            });
            return rx;
        }
        let seq = state.next_member;
        state.next_member += 1;
        let group = state.groups.entry(req.group_id.clone()).or_insert_with(Group::new);
        if group.state != GroupState::Empty
            && !group.protocol_type.is_empty()
            && group.protocol_type != req.protocol_type
        {
            let _ = tx.send(JoinGroupResponse {
                error: Some(ErrorCode::InconsistentGroupProtocol),
                ..JoinGroupResponse::default()
            });
            return rx;
        }
        group.protocol_type = req.protocol_type.clone();
        let session_timeout = Duration::from_millis(req.session_timeout_ms);
        let rebalance_timeout = Duration::from_millis(req.rebalance_timeout_ms.max(req.session_timeout_ms));
        match group.members.get_mut(&req.member_id) {
            Some(m) => {
                let changed = m.protocols != req.protocols;
                m.protocols = req.protocols;
                m.session_timeout = session_timeout;
                m.rebalance_timeout = rebalance_timeout;
                m.last_heartbeat = now;
                let is_leader = group.leader.as_deref() == Some(req.member_id.as_str());
                if group.state == GroupState::Stable && !changed && !is_leader {
                    // Nothing to do: tell it the current generation again.
                    let _ = tx.send(JoinGroupResponse {
                        error: None,
                        generation_id: group.generation,
                        protocol_name: group.protocol.clone(),
                        leader: group.leader.clone().unwrap_or_default(),
                        member_id: req.member_id,
                        members: Vec::new(),
                    });
                    return rx;
                }
                m.join_waiter = Some(tx);
                if group.state != GroupState::PreparingRebalance {
                    group.prepare_rebalance(now);
                }
            }
            None => {
                let was_empty = group.state == GroupState::Empty;
                group.members.insert(
                    req.member_id.clone(),
                    Member {
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
                group.prepare_rebalance(now);
            }
        }
        drop(state);
        self.tick();
        rx
    }

    /// SyncGroup. The leader's call carries every member's assignment.
    pub fn sync(
        &self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        assignments: Vec<(String, Bytes)>,
    ) -> oneshot::Receiver<SyncGroupResponse> {
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
            return rx;
        }
        let Some(group) = state.groups.get_mut(group_id) else {
            fail(tx, ErrorCode::UnknownMemberId);
            return rx;
        };
        if !group.members.contains_key(member_id) {
            fail(tx, ErrorCode::UnknownMemberId);
            return rx;
        }
        if generation != group.generation {
            fail(tx, ErrorCode::IllegalGeneration);
            return rx;
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
                if group.leader.as_deref() == Some(member_id) {
                    let mut given: HashMap<String, Bytes> = assignments.into_iter().collect();
                    for (id, m) in group.members.iter_mut() {
                        m.assignment = given.remove(id).unwrap_or_default();
                        if let Some(w) = m.sync_waiter.take() {
                            let _ = w.send(SyncGroupResponse {
                                error: None,
                                assignment: m.assignment.clone(),
                            });
                        }
                    }
                    group.state = GroupState::Stable;
                }
            }
        }
        rx
    }

    pub fn heartbeat(&self, group_id: &str, generation: i32, member_id: &str) -> ErrorCode {
        let mut state = self.lock();
        if let Some(error) = self.check(&state, group_id) {
            return error;
        }
        let Some(group) = state.groups.get_mut(group_id) else {
            return ErrorCode::UnknownMemberId;
        };
        let group_generation = group.generation;
        let group_state = group.state;
        let Some(m) = group.members.get_mut(member_id) else {
            return ErrorCode::UnknownMemberId;
        };
        m.last_heartbeat = Instant::now();
        if group_state == GroupState::PreparingRebalance {
            return ErrorCode::RebalanceInProgress;
        }
        if generation != group_generation {
            return ErrorCode::IllegalGeneration;
        }
        ErrorCode::None
    }

    pub fn leave(&self, group_id: &str, member_id: &str) -> ErrorCode {
        let mut state = self.lock();
        if let Some(error) = self.check(&state, group_id) {
            return error;
        }
        let Some(group) = state.groups.get_mut(group_id) else {
            return ErrorCode::UnknownMemberId;
        };
        if remove_member(group, member_id, Instant::now()) {
            self.events.publish(EventKind::GroupMemberRemoved {
                group: group_id.to_string(),
                member: member_id.to_string(),
                reason: "left the group".into(),
            });
            ErrorCode::None
        } else {
            ErrorCode::UnknownMemberId
        }
    }

    /// Validates an OffsetCommit; the broker then writes the records and calls
    /// [`GroupCoordinator::committed`].
    pub fn validate_commit(&self, group_id: &str, generation: i32, member_id: &str) -> ErrorCode {
        let state = self.lock();
        if let Some(error) = self.check(&state, group_id) {
            return error;
        }
        let group = state.groups.get(group_id);
        if generation < 0 && member_id.is_empty() {
            // A commit outside group management is fine while nobody is a member.
            return match group {
                Some(g) if !g.members.is_empty() => ErrorCode::UnknownMemberId,
                _ => ErrorCode::None,
            };
        }
        let Some(group) = group else {
            return ErrorCode::UnknownMemberId;
        };
        if !group.members.contains_key(member_id) {
            return ErrorCode::UnknownMemberId;
        }
        if generation != group.generation {
            return ErrorCode::IllegalGeneration;
        }
        if group.state == GroupState::CompletingRebalance {
            return ErrorCode::RebalanceInProgress;
        }
        ErrorCode::None
    }

    /// The commit records are in the log (committed): expose the offsets.
    pub fn committed(&self, group_id: &str, offsets: &[(TopicPartition, CommittedOffset)]) {
        let mut state = self.lock();
        let group = state.groups.entry(group_id.to_string()).or_insert_with(Group::new);
        for (tp, o) in offsets {
            group.offsets.insert(tp.clone(), *o);
        }
    }

    /// Committed offsets (-1 where none), for the partitions asked or all.
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        partitions: Option<&[TopicPartition]>,
    ) -> Result<Vec<(TopicPartition, i64)>, ErrorCode> {
        let state = self.lock();
        if let Some(error) = self.check(&state, group_id) {
            return Err(error);
        }
        let offsets = state.groups.get(group_id).map(|g| &g.offsets);
        Ok(match partitions {
            Some(tps) => tps
                .iter()
                .map(|tp| (tp.clone(), offsets.and_then(|o| o.get(tp)).map_or(-1, |c| c.offset)))
                .collect(),
            None => offsets
                .map(|o| o.iter().map(|(tp, c)| (tp.clone(), c.offset)).collect())
                .unwrap_or_default(),
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
                            assignment: m.assignment.clone(),
                            metadata: Bytes::new(),
                        })
                        .collect(),
                };
                let offsets = g.offsets.iter().map(|(tp, c)| (tp.clone(), c.offset)).collect();
                Some((description, offsets))
            })
            .collect()
    }

    /// Timers: completes join phases and expires silent members. Called periodically and
    /// after every join.
    pub fn tick(&self) {
        let now = Instant::now();
        let mut state = self.lock();
        let mut events = Vec::new();
        for (id, group) in state.groups.iter_mut() {
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
                if (all_joined && delay_over) || timed_out {
                    complete_join(group);
                    events.push(EventKind::GroupRebalanced {
                        group: id.clone(),
                        generation: group.generation,
                        members: group.members.len(),
                        protocol: group.protocol.clone().unwrap_or_default(),
                    });
                }
            }
        }
        drop(state);
        for e in events {
            self.events.publish(e);
        }
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

/// The join phase is over: members that did not rejoin are dropped, the generation moves
/// on, a protocol is chosen by vote, and every joined member gets its answer.
fn complete_join(group: &mut Group) {
    let missing: Vec<String> = group
        .members
        .iter()
        .filter(|(_, m)| m.join_waiter.is_none())
        .map(|(id, _)| id.clone())
        .collect();
    for id in missing {
        group.members.remove(&id);
    }
    group.rebalance_deadline = None;
    group.initial_delay_until = None;
    group.generation += 1;
    if group.members.is_empty() {
        group.state = GroupState::Empty;
        group.protocol = None;
        group.leader = None;
        return;
    }
    // Candidates every member supports; each member votes for its first candidate.
    let first = group
        .members
        .values()
        .next()
        .map(|m| m.protocols.clone())
        .unwrap_or_default();
    let candidates: Vec<String> = first
        .iter()
        .map(|(n, _)| n.clone())
        .filter(|n| group.members.values().all(|m| m.protocols.iter().any(|(p, _)| p == n)))
        .collect();
    let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
    for m in group.members.values() {
        if let Some((name, _)) = m.protocols.iter().find(|(n, _)| candidates.contains(n)) {
            *votes.entry(name.as_str()).or_default() += 1;
        }
    }
    let protocol = candidates
        .iter()
        .max_by_key(|c| {
            (
                votes.get(c.as_str()).copied().unwrap_or(0),
                std::cmp::Reverse(candidates.iter().position(|x| x == *c)),
            )
        })
        .cloned();
    let Some(protocol) = protocol else {
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
        return;
    };
    let leader = group
        .leader
        .clone()
        .filter(|l| group.members.contains_key(l))
        .or_else(|| {
            group
                .members
                .iter()
                .min_by_key(|(_, m)| m.joined_seq)
                .map(|(id, _)| id.clone())
        })
        .unwrap_or_default();
    let members: Vec<(String, Bytes)> = group
        .members
        .iter()
        .map(|(id, m)| {
            let meta = m.protocols.iter().find(|(n, _)| *n == protocol).map(|(_, b)| b.clone());
            (id.clone(), meta.unwrap_or_default())
        })
        .collect();
    group.protocol = Some(protocol.clone());
    group.leader = Some(leader.clone());
    group.state = GroupState::CompletingRebalance;
    let generation = group.generation;
    for (id, m) in group.members.iter_mut() {
        m.last_heartbeat = Instant::now();
        if let Some(w) = m.join_waiter.take() {
            let _ = w.send(JoinGroupResponse {
                error: None,
                generation_id: generation,
                protocol_name: Some(protocol.clone()),
                leader: leader.clone(),
                member_id: id.clone(),
                members: if *id == leader { members.clone() } else { Vec::new() },
            });
        }
    }
}

/// Kafka's OffsetCommit record key (version 1): group, topic, partition.
pub fn offset_key(group: &str, tp: &TopicPartition) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(1);
    put_string(&mut b, group);
    put_string(&mut b, &tp.topic);
    b.put_i32(tp.partition);
    b.freeze()
}

/// Kafka's OffsetCommit record value (version 3): offset, leader epoch, metadata, time.
pub fn offset_value(offset: i64, commit_timestamp: i64) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(3);
    b.put_i64(offset);
    b.put_i32(-1);
    put_string(&mut b, "");
    b.put_i64(commit_timestamp);
    b.freeze()
}

fn put_string(b: &mut BytesMut, s: &str) {
    b.put_i16(s.len().min(i16::MAX as usize) as i16);
    b.put_slice(&s.as_bytes()[..s.len().min(i16::MAX as usize)]);
}

fn get_string(b: &mut &[u8]) -> Option<String> {
    if b.remaining() < 2 {
        return None;
    }
    let len = b.get_i16();
    let len = usize::try_from(len).ok()?;
    if b.remaining() < len {
        return None;
    }
    let s = String::from_utf8(b[..len].to_vec()).ok()?;
    b.advance(len);
    Some(s)
}

/// Reads an offsets-topic record; `None` for other record kinds (group metadata) or
/// garbage. A null value is a tombstone.
pub fn parse_offset_record(
    key: &[u8],
    value: Option<&[u8]>,
) -> Option<(String, TopicPartition, Option<CommittedOffset>)> {
    let mut k = key;
    if k.remaining() < 2 {
        return None;
    }
    let version = k.get_i16();
    if !(0..=1).contains(&version) {
        return None;
    }
    let group = get_string(&mut k)?;
    let topic = get_string(&mut k)?;
    if k.remaining() < 4 {
        return None;
    }
    let partition = k.get_i32();
    let tp = TopicPartition::new(topic, partition);
    let Some(mut v) = value else {
        return Some((group, tp, None));
    };
    if v.remaining() < 10 {
        return None;
    }
    let value_version = v.get_i16();
    let offset = v.get_i64();
    if value_version >= 3 {
        if v.remaining() < 4 {
            return None;
        }
        v.get_i32();
    }
    get_string(&mut v)?;
    let commit_timestamp = if v.remaining() >= 8 { v.get_i64() } else { -1 };
    Some((
        group,
        tp,
        Some(CommittedOffset {
            offset,
            commit_timestamp,
        }),
    ))
}

/// A batch of OffsetCommit records, as the coordinator appends it.
pub fn offset_commit_batch(group: &str, offsets: &[(TopicPartition, CommittedOffset)]) -> Vec<u8> {
    let recs: Vec<records::Record> = offsets
        .iter()
        .enumerate()
        .map(|(i, (tp, o))| {
            records::record(
                i as i64,
                o.commit_timestamp,
                Some(offset_key(group, tp)),
                Some(offset_value(o.offset, o.commit_timestamp)),
            )
        })
        .collect();
    records::encode_batch(&recs, records::Compression::None)
        .map(|b| b.to_vec())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinator_partition_uses_javas_string_hash() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(
            java_string_hash("analytics"),
            "analytics"
                .chars()
                .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
        );
        // "polygenelubricants" hashes to i32::MIN in Java; Kafka's abs maps it to 0.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(partition_for_group("polygenelubricants", 50), 0);
    }

    #[test]
    fn offset_records_round_trip_and_garbage_is_ignored() {
        let tp = TopicPartition::new("page-views", 3);
        let key = offset_key("analytics", &tp);
        let value = offset_value(42, 1000);
        let parsed = parse_offset_record(&key, Some(&value));
        assert_eq!(
            parsed,
            Some((
                "analytics".to_string(),
                tp.clone(),
                Some(CommittedOffset {
                    offset: 42,
                    commit_timestamp: 1000
                })
            ))
        );
        assert_eq!(
            parse_offset_record(&key, None),
            Some(("analytics".to_string(), tp, None))
        );
        assert_eq!(parse_offset_record(&[0, 1, 0], Some(&value)), None);
        assert_eq!(
            parse_offset_record(&[0, 2, 0, 0], None),
            None,
            "group metadata records are skipped"
        );
    }
}
