//! `kdeck consume -g`: a member of a consumer group under the classic protocol, as the Java
//! consumer with the range assignor: JoinGroup, the leader assigns, SyncGroup, heartbeats,
//! offset commits, LeaveGroup.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, GroupId, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, OffsetCommitRequest, SyncGroupRequest,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::assignor::{
    Assignor, DEFAULT_GENERATION, RangeAssignor, Subscription, decode_assignment, decode_subscription,
    encode_assignment, encode_subscription,
};
use crate::remote::{KafkaClient, RemoteError, Target, error_name};

/// How long the coordinator waits for every member to rejoin (max.poll.interval.ms's role).
const REBALANCE_TIMEOUT_MS: i32 = 60_000;
const PROTOCOL_TYPE: &str = "consumer";
/// Attempts at joining before giving up (each one may wait for a rebalance to finish).
const JOIN_ATTEMPTS: usize = 10;
/// The wait before retrying a failed join, doubled up to the max (retry.backoff.ms and
/// retry.backoff.max.ms of the Java client).
const JOIN_BACKOFF: Duration = Duration::from_millis(100);
const JOIN_BACKOFF_MAX: Duration = Duration::from_secs(1);

const UNKNOWN_MEMBER_ID: i16 = 25;
const ILLEGAL_GENERATION: i16 = 22;
const REBALANCE_IN_PROGRESS: i16 = 27;
const MEMBER_ID_REQUIRED: i16 = 79;
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;
const FENCED_INSTANCE_ID: i16 = 82;

/// What a heartbeat or commit learned about the membership.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Membership {
    Stable,
    /// The group rebalances or forgot this member: join again.
    Rejoin,
}

pub(crate) struct Member<'a> {
    client: &'a KafkaClient,
    group: String,
    /// The topics of the last join's subscription.
    topics: Vec<String>,
    session_timeout_ms: i32,
    member_id: String,
    generation: i32,
}

impl<'a> Member<'a> {
    pub(crate) fn new(client: &'a KafkaClient, group: &str, session_timeout_ms: i32) -> Member<'a> {
        Member {
            client,
            group: group.to_string(),
            topics: Vec::new(),
            session_timeout_ms,
            member_id: String::new(),
            generation: DEFAULT_GENERATION,
        }
    }

    pub(crate) fn group(&self) -> &str {
        &self.group
    }

    fn group_id(&self) -> GroupId {
        GroupId(StrBytes::from_string(self.group.clone()))
    }

    async fn coordinator(&self, api: ApiKey) -> Result<(Target, i16), RemoteError> {
        let target = Target::Broker(self.client.coordinator(&self.group).await?);
        let version = self
            .client
            .version_for(target, api)
            .await?
            .ok_or_else(|| RemoteError::Unsupported {
                api: format!("{api:?}"),
                broker: format!("coordinator of {}", self.group),
            })?;
        Ok((target, version))
    }

    /// Forgets the coordinator after an answer saying it moved or is unavailable.
    fn check_coordinator(&self, code: i16) {
        if matches!(
            code,
            NOT_COORDINATOR | COORDINATOR_NOT_AVAILABLE | COORDINATOR_LOAD_IN_PROGRESS
        ) {
            self.client.forget_coordinator(&self.group);
        }
    }

    /// Joins (or rejoins) the group subscribed to `topics` and returns this member's
    /// partitions of them, sorted.
    pub(crate) async fn join(&mut self, topics: &[String]) -> Result<Vec<(String, i32)>> {
        self.topics = topics.to_vec();
        let mut last_error = String::new();
        let mut backoff = JOIN_BACKOFF;
        for _ in 0..JOIN_ATTEMPTS {
            match self.join_once().await {
                Ok(Some(partitions)) => return Ok(partitions),
                Ok(None) => continue,
                Err(JoinError::Retry(reason)) => {
                    self.client.forget_coordinator(&self.group);
                    last_error = reason;
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(JOIN_BACKOFF_MAX);
                }
                Err(JoinError::Fatal(error)) => return Err(error),
            }
        }
        bail!("cannot join group {}: {last_error}", self.group)
    }

    /// One JoinGroup and SyncGroup; None when the coordinator asks to try again at once
    /// (MEMBER_ID_REQUIRED, a rebalance starting over).
    async fn join_once(&mut self) -> Result<Option<Vec<(String, i32)>>, JoinError> {
        let (target, version) = self.coordinator(ApiKey::JoinGroup).await.map_err(JoinError::from)?;
        let subscription = Subscription {
            topics: self.topics.clone(),
            owned_partitions: Vec::new(),
            generation: DEFAULT_GENERATION,
        };
        let mut request = JoinGroupRequest::default()
            .with_group_id(self.group_id())
            .with_session_timeout_ms(self.session_timeout_ms)
            .with_member_id(StrBytes::from_string(self.member_id.clone()))
            .with_protocol_type(StrBytes::from_static_str(PROTOCOL_TYPE))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default()
                    .with_name(StrBytes::from_static_str(RangeAssignor.name()))
                    .with_metadata(encode_subscription(&subscription, None)),
            ]);
        if version >= 1 {
            request = request.with_rebalance_timeout_ms(REBALANCE_TIMEOUT_MS);
        }
        let joined = self.client.send(target, request).await.map_err(JoinError::from)?;
        match joined.error_code {
            0 => {}
            MEMBER_ID_REQUIRED => {
                // KIP-394: the coordinator hands out the id and wants it back in a second join.
                self.member_id = joined.member_id.as_str().to_string();
                return Ok(None);
            }
            UNKNOWN_MEMBER_ID => {
                self.member_id.clear();
                return Ok(None);
            }
            REBALANCE_IN_PROGRESS => return Ok(None),
            code => {
                self.check_coordinator(code);
                let error = RemoteError::kafka(format!("joining group {}", self.group), code, None);
                return Err(if self.client_retriable(code) {
                    JoinError::Retry(error.to_string())
                } else {
                    JoinError::Fatal(error.into())
                });
            }
        }
        self.member_id = joined.member_id.as_str().to_string();
        self.generation = joined.generation_id;
        let protocol = joined
            .protocol_name
            .as_ref()
            .map(|p| p.as_str().to_string())
            .unwrap_or_default();
        let assignments = if joined.leader.as_str() == self.member_id {
            self.assign(&joined.members).await.map_err(JoinError::Fatal)?
        } else {
            Vec::new()
        };

        let (target, version) = self.coordinator(ApiKey::SyncGroup).await.map_err(JoinError::from)?;
        let mut request = SyncGroupRequest::default()
            .with_group_id(self.group_id())
            .with_generation_id(self.generation)
            .with_member_id(StrBytes::from_string(self.member_id.clone()))
            .with_assignments(assignments);
        if version >= 5 {
            request = request
                .with_protocol_type(Some(StrBytes::from_static_str(PROTOCOL_TYPE)))
                .with_protocol_name(Some(StrBytes::from_string(protocol)));
        }
        let synced = self.client.send(target, request).await.map_err(JoinError::from)?;
        match synced.error_code {
            0 => {}
            REBALANCE_IN_PROGRESS | ILLEGAL_GENERATION => return Ok(None),
            UNKNOWN_MEMBER_ID => {
                self.member_id.clear();
                return Ok(None);
            }
            code => {
                self.check_coordinator(code);
                let error = RemoteError::kafka(format!("syncing group {}", self.group), code, None);
                return Err(if self.client_retriable(code) {
                    JoinError::Retry(error.to_string())
                } else {
                    JoinError::Fatal(error.into())
                });
            }
        }
        if synced.assignment.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let mut partitions: Vec<(String, i32)> = decode_assignment(&synced.assignment)
            .map_err(|e| JoinError::Fatal(anyhow!("group {}: the leader's assignment: {e:#}", self.group)))?
            .into_iter()
            .filter(|tp| self.topics.contains(&tp.topic))
            .map(|tp| (tp.topic, tp.partition))
            .collect();
        partitions.sort_unstable();
        Ok(Some(partitions))
    }

    fn client_retriable(&self, code: i16) -> bool {
        matches!(
            code,
            NOT_COORDINATOR | COORDINATOR_NOT_AVAILABLE | COORDINATOR_LOAD_IN_PROGRESS
        )
    }

    /// The leader's range assignment over every member's subscription; a member whose
    /// subscription cannot be read subscribes to nothing (and gets nothing).
    async fn assign(
        &self,
        members: &[kafka_protocol::messages::join_group_response::JoinGroupResponseMember],
    ) -> Result<Vec<SyncGroupRequestAssignment>> {
        let subscriptions: BTreeMap<String, Subscription> = members
            .iter()
            .map(|m| {
                let subscription = decode_subscription(&m.metadata).unwrap_or(Subscription {
                    topics: Vec::new(),
                    owned_partitions: Vec::new(),
                    generation: DEFAULT_GENERATION,
                });
                (m.member_id.as_str().to_string(), subscription)
            })
            .collect();
        let metadata = self.client.refresh_metadata().await?;
        let partitions_per_topic: BTreeMap<String, i32> = subscriptions
            .values()
            .flat_map(|s| s.topics.iter())
            .filter_map(|topic| {
                let count = metadata.topic(topic)?.partitions.len();
                Some((topic.clone(), i32::try_from(count).ok()?))
            })
            .collect();
        let assignment = RangeAssignor.assign(&partitions_per_topic, &subscriptions);
        Ok(subscriptions
            .keys()
            .map(|member| {
                let partitions = assignment.get(member).map(Vec::as_slice).unwrap_or_default();
                SyncGroupRequestAssignment::default()
                    .with_member_id(StrBytes::from_string(member.clone()))
                    .with_assignment(encode_assignment(partitions))
            })
            .collect())
    }

    pub(crate) async fn heartbeat(&self) -> Result<Membership> {
        let (target, _) = self.coordinator(ApiKey::Heartbeat).await?;
        let request = HeartbeatRequest::default()
            .with_group_id(self.group_id())
            .with_generation_id(self.generation)
            .with_member_id(StrBytes::from_string(self.member_id.clone()));
        let answer = match self.client.send(target, request).await {
            Ok(answer) => answer,
            Err(_) => {
                // The coordinator went away: find it again and rejoin through it.
                self.client.forget_coordinator(&self.group);
                return Ok(Membership::Rejoin);
            }
        };
        self.membership(answer.error_code, "heartbeat")
    }

    fn membership(&self, code: i16, what: &str) -> Result<Membership> {
        match code {
            0 => Ok(Membership::Stable),
            REBALANCE_IN_PROGRESS | ILLEGAL_GENERATION | UNKNOWN_MEMBER_ID | FENCED_INSTANCE_ID => {
                Ok(Membership::Rejoin)
            }
            code if self.client_retriable(code) => {
                self.check_coordinator(code);
                Ok(Membership::Rejoin)
            }
            code => bail!("group {} {what}: {}", self.group, error_name(code)),
        }
    }

    /// Commits `offsets` (topic, partition, next offset to read).
    pub(crate) async fn commit(&self, offsets: &[(String, i32, i64)]) -> Result<Membership> {
        if offsets.is_empty() {
            return Ok(Membership::Stable);
        }
        let mut by_topic: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for (topic, partition, offset) in offsets {
            by_topic.entry(topic.as_str()).or_default().push(
                OffsetCommitRequestPartition::default()
                    .with_partition_index(*partition)
                    .with_committed_offset(*offset),
            );
        }
        let (target, _) = self.coordinator(ApiKey::OffsetCommit).await?;
        let request = OffsetCommitRequest::default()
            .with_group_id(self.group_id())
            .with_generation_id_or_member_epoch(self.generation)
            .with_member_id(StrBytes::from_string(self.member_id.clone()))
            .with_topics(
                by_topic
                    .into_iter()
                    .map(|(topic, partitions)| {
                        OffsetCommitRequestTopic::default()
                            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                            .with_partitions(partitions)
                    })
                    .collect(),
            );
        let answer = self.client.send(target, request).await?;
        let mut membership = Membership::Stable;
        for partition in answer.topics.iter().flat_map(|t| t.partitions.iter()) {
            if self.membership(partition.error_code, "offset commit")? == Membership::Rejoin {
                membership = Membership::Rejoin;
            }
        }
        Ok(membership)
    }

    /// Leaves the group so that the others get its partitions at once, not after the session
    /// timeout.
    pub(crate) async fn leave(&self) -> Result<()> {
        if self.member_id.is_empty() {
            return Ok(());
        }
        let (target, version) = self.coordinator(ApiKey::LeaveGroup).await?;
        let member_id = StrBytes::from_string(self.member_id.clone());
        let request = if version >= 3 {
            LeaveGroupRequest::default()
                .with_group_id(self.group_id())
                .with_members(vec![MemberIdentity::default().with_member_id(member_id)])
        } else {
            LeaveGroupRequest::default()
                .with_group_id(self.group_id())
                .with_member_id(member_id)
        };
        let answer = self.client.send(target, request).await?;
        let code = answer
            .members
            .iter()
            .map(|m| m.error_code)
            .find(|&c| c != 0)
            .unwrap_or(answer.error_code);
        if code != 0 {
            return Err(RemoteError::kafka(format!("leaving group {}", self.group), code, None).into());
        }
        Ok(())
    }
}

enum JoinError {
    /// Worth another attempt: the coordinator moved, timed out or is loading.
    Retry(String),
    Fatal(anyhow::Error),
}

impl From<RemoteError> for JoinError {
    fn from(error: RemoteError) -> JoinError {
        match error {
            RemoteError::Timeout { .. } | RemoteError::Disconnected { .. } | RemoteError::Connect { .. } => {
                JoinError::Retry(error.to_string())
            }
            // FindCoordinator's answer while the offsets topic is still being set up.
            RemoteError::Kafka {
                code: NOT_COORDINATOR | COORDINATOR_NOT_AVAILABLE | COORDINATOR_LOAD_IN_PROGRESS,
                ..
            } => JoinError::Retry(error.to_string()),
            other => JoinError::Fatal(other.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::TopicPartition;

    #[test]
    fn assignments_the_leader_sends_read_back_through_ops() {
        let bytes = encode_assignment(&[TopicPartition::new("rt", 0), TopicPartition::new("rt", 2)]);
        assert_eq!(
            crate::remote::ops::decode_assignment(bytes),
            vec![("rt".to_string(), 0), ("rt".to_string(), 2)]
        );
    }
}
