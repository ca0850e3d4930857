//! Deleting groups and committed offsets, as Kafka's group coordinator answers DeleteGroups
//! and OffsetDelete: what may be deleted (an empty group; offsets of topics no active member
//! subscribes to), and the tombstones in `__consumer_offsets` that keep the deletion after
//! the coordinator moves or restarts.

use std::collections::BTreeSet;

use super::record::{self, Reader};
use super::{CoordinatorState, GroupCoordinator, GroupState, PendingWrite, encode};
use crate::engine::TopicPartition;
use crate::engine::protocol::ErrorCode;
use crate::storage::records;

/// Kafka's `ConsumerProtocol.PROTOCOL_TYPE`.
const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// What OffsetDelete did: each partition's outcome, and the tombstones to wait for (none when
/// no asked partition had an offset to delete).
pub(crate) type OffsetDeletion = (Vec<(TopicPartition, ErrorCode)>, Option<PendingWrite>);

impl GroupCoordinator {
    /// DeleteGroups for one group (Kafka's `validateDeleteGroup`, then its tombstones): a
    /// group this coordinator does not know is GROUP_ID_NOT_FOUND, one that is not Empty
    /// NON_EMPTY_GROUP. Tombstones for each committed offset and for the group record are
    /// appended in one batch, and the group is gone from memory at once, as Kafka's
    /// coordinator removes it; the broker answers once the ISR has the tombstones.
    pub(crate) fn delete_group(&self, group_id: &str) -> Result<PendingWrite, ErrorCode> {
        let mut state = self.lock();
        if let Some(error) = self.check(&state, group_id) {
            return Err(error);
        }
        let CoordinatorState { partitions, groups, .. } = &mut *state;
        let Some(group) = groups.get(group_id) else {
            return Err(ErrorCode::GroupIdNotFound);
        };
        if group.state != GroupState::Empty {
            return Err(ErrorCode::NonEmptyGroup);
        }
        let now_ms = self.wall.now_ms();
        let mut recs: Vec<records::Record> = group
            .offsets
            .keys()
            .enumerate()
            .map(|(i, tp)| records::record(i as i64, now_ms, Some(record::offset_commit_key(group_id, tp)), None))
            .collect();
        recs.push(records::record(
            recs.len() as i64,
            now_ms,
            Some(record::group_metadata_key(group_id)),
            None,
        ));
        let write = self.append(partitions, group_id, encode(&recs))?;
        groups.remove(group_id);
        state
            .deleted_at
            .insert(self.offsets_partition(group_id), write.appended.first_offset);
        drop(state);
        tracing::info!(group = group_id, "group deleted");
        Ok(write)
    }

    /// OffsetDelete (Kafka's `OffsetMetadataManager.deleteOffsets`): a group this coordinator
    /// does not know is GROUP_ID_NOT_FOUND; a group with members that does not use the
    /// consumer protocol NON_EMPTY_GROUP. Each partition of a topic the group's members
    /// subscribe to is GROUP_SUBSCRIBED_TO_TOPIC; every other partition is deleted (NONE,
    /// also when it had no offset), with a tombstone where there was one.
    pub(crate) fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[TopicPartition],
    ) -> Result<OffsetDeletion, ErrorCode> {
        let mut state = self.lock();
        if let Some(error) = self.check(&state, group_id) {
            return Err(error);
        }
        let CoordinatorState {
            partitions: logs,
            groups,
            ..
        } = &mut *state;
        let Some(group) = groups.get_mut(group_id) else {
            return Err(ErrorCode::GroupIdNotFound);
        };
        if group.state != GroupState::Empty && group.protocol_type != CONSUMER_PROTOCOL_TYPE {
            return Err(ErrorCode::NonEmptyGroup);
        }
        let subscribed = subscribed_topics(group);
        let mut outcome = Vec::with_capacity(partitions.len());
        let mut deleted: Vec<TopicPartition> = Vec::new();
        for tp in partitions {
            if subscribed.as_ref().is_some_and(|topics| topics.contains(&tp.topic)) {
                outcome.push((tp.clone(), ErrorCode::GroupSubscribedToTopic));
                continue;
            }
            if group.offsets.contains_key(tp) && !deleted.contains(tp) {
                deleted.push(tp.clone());
            }
            outcome.push((tp.clone(), ErrorCode::None));
        }
        if deleted.is_empty() {
            return Ok((outcome, None));
        }
        let now_ms = self.wall.now_ms();
        let recs: Vec<records::Record> = deleted
            .iter()
            .enumerate()
            .map(|(i, tp)| records::record(i as i64, now_ms, Some(record::offset_commit_key(group_id, tp)), None))
            .collect();
        let write = self.append(logs, group_id, encode(&recs))?;
        let pending = now_ms < group.commit_pending_until;
        for (tp, at) in deleted.into_iter().zip(write.appended.first_offset..) {
            group.offsets.remove(&tp);
            if pending {
                group.tombstoned.insert(tp, at);
            }
        }
        Ok((outcome, Some(write)))
    }
}

/// The topics a group's members subscribe to (Kafka's `ClassicGroup.subscribedTopics`):
/// known only for a consumer-protocol group whose protocol is chosen and whose members'
/// subscriptions all decode; an Empty group subscribes to nothing. `None` when unknown, which
/// Kafka takes as subscribed to nothing too.
fn subscribed_topics(group: &super::Group) -> Option<BTreeSet<String>> {
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE {
        return None;
    }
    if group.members.is_empty() {
        return Some(BTreeSet::new());
    }
    let protocol = group.protocol.as_deref()?;
    let mut topics = BTreeSet::new();
    for member in group.members.values() {
        topics.extend(subscription_topics(&member.subscription(Some(protocol)))?);
    }
    Some(topics)
}

/// The topics of a ConsumerProtocolSubscription (any version: each starts with its version
/// and the topic array), `None` when the bytes do not decode.
pub(super) fn subscription_topics(subscription: &[u8]) -> Option<Vec<String>> {
    let mut r = Reader::new(subscription, false);
    r.i16("subscription version").ok()?;
    let count = r.array_len("subscription topics").ok()?;
    let mut topics = Vec::with_capacity(count.min(subscription.len()));
    for _ in 0..count {
        topics.push(r.string("subscription topic").ok()?);
    }
    Some(topics)
}
