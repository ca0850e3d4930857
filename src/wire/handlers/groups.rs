//! The classic consumer-group APIs, answered by this broker's group coordinator (a broker
//! that does not coordinate the group says NOT_COORDINATOR, and the client looks again);
//! with the admin ones that delete groups and their offsets.

use std::time::Duration;

use kafka_protocol::messages::delete_groups_response::{DeletableGroupResult, DeleteGroupsResponse};
use kafka_protocol::messages::describe_groups_response::{
    DescribeGroupsResponse, DescribedGroup, DescribedGroupMember,
};
use kafka_protocol::messages::join_group_response::{JoinGroupResponse, JoinGroupResponseMember};
use kafka_protocol::messages::leave_group_response::{LeaveGroupResponse, MemberResponse};
use kafka_protocol::messages::list_groups_response::{ListGroupsResponse, ListedGroup};
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponse, OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponse, OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    DeleteGroupsRequest, DescribeGroupsRequest, GroupId, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
    LeaveGroupRequest, ListGroupsRequest, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest,
    SyncGroupRequest, SyncGroupResponse,
};

use super::{BrokerDown, Context, OPERATIONS_NOT_REQUESTED, codes, reached, str_bytes, topic_name};
use crate::engine::group::{GroupState, JoinGroupRequest as EngineJoin};
use crate::engine::{ErrorCode, GroupRequest, GroupResponse, TopicPartition};

/// How long a group request may take besides a join's rebalance timeout.
const GROUP_CALL: Duration = Duration::from_secs(30);

async fn call(
    ctx: &Context,
    request: GroupRequest,
    timeout: Duration,
) -> Result<Result<GroupResponse, ErrorCode>, BrokerDown> {
    reached(ctx.cluster.group_request_on(ctx.broker, request, timeout).await)
}

fn state_name(state: GroupState) -> &'static str {
    match state {
        GroupState::Empty => "Empty",
        GroupState::PreparingRebalance => "PreparingRebalance",
        GroupState::CompletingRebalance => "CompletingRebalance",
        GroupState::Stable => "Stable",
    }
}

/// A request's `group.instance.id` (JoinGroup v5+, SyncGroup v3+, Heartbeat v3+, LeaveGroup
/// v3+, OffsetCommit v7+): null or absent for a dynamic member.
fn instance_id(id: Option<&kafka_protocol::protocol::StrBytes>) -> Option<String> {
    id.map(|i| i.to_string())
}

fn join_error(code: i16) -> JoinGroupResponse {
    JoinGroupResponse::default()
        .with_error_code(code)
        .with_generation_id(-1)
}

/// Who sent a JoinGroup: its `client.id` and host, which DescribeGroups shows.
pub struct Client {
    pub id: String,
    pub host: String,
}

pub async fn join(
    ctx: &Context,
    request: &JoinGroupRequest,
    version: i16,
    client: Client,
) -> Result<JoinGroupResponse, BrokerDown> {
    if request.group_id.0.is_empty() {
        return Ok(join_error(codes::INVALID_GROUP_ID));
    }
    let rebalance_timeout_ms = if version >= 1 {
        request.rebalance_timeout_ms
    } else {
        request.session_timeout_ms
    };
    let mut engine_request = EngineJoin {
        group_id: request.group_id.0.to_string(),
        member_id: request.member_id.to_string(),
        session_timeout_ms: request.session_timeout_ms.max(0) as u64,
        rebalance_timeout_ms: rebalance_timeout_ms.max(0) as u64,
        protocol_type: request.protocol_type.to_string(),
        protocols: request
            .protocols
            .iter()
            .map(|p| (p.name.to_string(), p.metadata.clone()))
            .collect(),
        client_id: client.id,
        client_host: client.host,
        group_instance_id: instance_id(request.group_instance_id.as_ref()),
    };
    let timeout = Duration::from_millis(engine_request.rebalance_timeout_ms) + GROUP_CALL;
    let mut answer = match call(ctx, GroupRequest::Join(engine_request.clone()), timeout).await? {
        Ok(GroupResponse::Join(r)) => r,
        Ok(_) => return Ok(join_error(ErrorCode::UnknownServerError.code())),
        Err(e) => return Ok(join_error(e.code())),
    };
    // Before v4 a client cannot be told MEMBER_ID_REQUIRED: it joins with the id at once.
    if version < 4 && answer.error == Some(ErrorCode::MemberIdRequired) {
        engine_request.member_id = answer.member_id.clone();
        answer = match call(ctx, GroupRequest::Join(engine_request), timeout).await? {
            Ok(GroupResponse::Join(r)) => r,
            Ok(_) => return Ok(join_error(ErrorCode::UnknownServerError.code())),
            Err(e) => return Ok(join_error(e.code())),
        };
    }
    let instances = answer.member_instances;
    Ok(JoinGroupResponse::default()
        .with_error_code(answer.error.map_or(0, |e| e.code()))
        .with_generation_id(answer.generation_id)
        .with_protocol_type(Some(request.protocol_type.clone()))
        .with_protocol_name(answer.protocol_name.map(str_bytes))
        .with_leader(str_bytes(answer.leader))
        .with_member_id(str_bytes(answer.member_id))
        .with_members(
            answer
                .members
                .into_iter()
                .map(|(id, metadata)| {
                    let instance = instances
                        .iter()
                        .find(|(m, _)| *m == id)
                        .map(|(_, i)| str_bytes(i.clone()));
                    JoinGroupResponseMember::default()
                        .with_member_id(str_bytes(id))
                        .with_group_instance_id(instance)
                        .with_metadata(metadata)
                })
                .collect(),
        ))
}

pub async fn sync(ctx: &Context, request: &SyncGroupRequest) -> Result<SyncGroupResponse, BrokerDown> {
    let engine_request = GroupRequest::Sync {
        group_id: request.group_id.0.to_string(),
        generation: request.generation_id,
        member_id: request.member_id.to_string(),
        group_instance_id: instance_id(request.group_instance_id.as_ref()),
        assignments: request
            .assignments
            .iter()
            .map(|a| (a.member_id.to_string(), a.assignment.clone()))
            .collect(),
    };
    let answer = match call(ctx, engine_request, GROUP_CALL).await? {
        Ok(GroupResponse::Sync(r)) => r,
        Ok(_) => return Ok(SyncGroupResponse::default().with_error_code(ErrorCode::UnknownServerError.code())),
        Err(e) => return Ok(SyncGroupResponse::default().with_error_code(e.code())),
    };
    Ok(SyncGroupResponse::default()
        .with_error_code(answer.error.map_or(0, |e| e.code()))
        .with_protocol_type(request.protocol_type.clone())
        .with_protocol_name(request.protocol_name.clone())
        .with_assignment(answer.assignment))
}

pub async fn heartbeat(ctx: &Context, request: &HeartbeatRequest) -> Result<HeartbeatResponse, BrokerDown> {
    let engine_request = GroupRequest::Heartbeat {
        group_id: request.group_id.0.to_string(),
        generation: request.generation_id,
        member_id: request.member_id.to_string(),
        group_instance_id: instance_id(request.group_instance_id.as_ref()),
    };
    let code = match call(ctx, engine_request, GROUP_CALL).await? {
        Ok(GroupResponse::Heartbeat(e)) => e.code(),
        Ok(_) => ErrorCode::UnknownServerError.code(),
        Err(e) => e.code(),
    };
    Ok(HeartbeatResponse::default().with_error_code(code))
}

async fn leave_one(
    ctx: &Context,
    group_id: &str,
    member_id: &str,
    group_instance_id: Option<String>,
) -> Result<i16, BrokerDown> {
    let engine_request = GroupRequest::Leave {
        group_id: group_id.to_string(),
        member_id: member_id.to_string(),
        group_instance_id,
    };
    Ok(match call(ctx, engine_request, GROUP_CALL).await? {
        Ok(GroupResponse::Leave(e)) => e.code(),
        Ok(_) => ErrorCode::UnknownServerError.code(),
        Err(e) => e.code(),
    })
}

pub async fn leave(ctx: &Context, request: &LeaveGroupRequest, version: i16) -> Result<LeaveGroupResponse, BrokerDown> {
    let group_id = request.group_id.0.as_str();
    if version < 3 {
        let code = leave_one(ctx, group_id, &request.member_id, None).await?;
        return Ok(LeaveGroupResponse::default().with_error_code(code));
    }
    let mut members = Vec::with_capacity(request.members.len());
    let mut group_error = 0;
    for m in &request.members {
        let code = leave_one(ctx, group_id, &m.member_id, instance_id(m.group_instance_id.as_ref())).await?;
        // Errors about the group itself are the response's, as in Kafka.
        if code == ErrorCode::NotCoordinator.code() || code == ErrorCode::CoordinatorLoadInProgress.code() {
            group_error = code;
        }
        members.push(
            MemberResponse::default()
                .with_member_id(m.member_id.clone())
                .with_group_instance_id(m.group_instance_id.clone())
                .with_error_code(code),
        );
    }
    if group_error != 0 {
        members.clear();
    }
    Ok(LeaveGroupResponse::default()
        .with_error_code(group_error)
        .with_members(members))
}

pub async fn offset_commit(ctx: &Context, request: &OffsetCommitRequest) -> Result<OffsetCommitResponse, BrokerDown> {
    let offsets: Vec<(TopicPartition, i64)> = request
        .topics
        .iter()
        .flat_map(|t| {
            let name = t.name.0.to_string();
            t.partitions
                .iter()
                .map(move |p| (TopicPartition::new(name.clone(), p.partition_index), p.committed_offset))
        })
        .collect();
    let code = if request.group_id.0.is_empty() {
        codes::INVALID_GROUP_ID
    } else {
        let engine_request = GroupRequest::OffsetCommit {
            group_id: request.group_id.0.to_string(),
            generation: request.generation_id_or_member_epoch,
            member_id: request.member_id.to_string(),
            group_instance_id: instance_id(request.group_instance_id.as_ref()),
            offsets,
        };
        match call(ctx, engine_request, GROUP_CALL).await? {
            Ok(GroupResponse::OffsetCommit(e)) => e.code(),
            Ok(_) => ErrorCode::UnknownServerError.code(),
            Err(e) => e.code(),
        }
    };
    let topics = request
        .topics
        .iter()
        .map(|t| {
            OffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            OffsetCommitResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(code)
                        })
                        .collect(),
                )
        })
        .collect();
    Ok(OffsetCommitResponse::default().with_topics(topics))
}

/// Committed offsets of one topic: `(partition, offset, error)`.
type TopicOffsets = (String, Vec<(i32, i64, i16)>);

/// Committed offsets of one group, or the group's error.
type GroupOffsets = Result<Vec<TopicOffsets>, i16>;

async fn fetch_group_offsets(
    ctx: &Context,
    group_id: &str,
    topics: Option<Vec<(String, Vec<i32>)>>,
    require_stable: bool,
) -> Result<GroupOffsets, BrokerDown> {
    let partitions = topics.as_ref().map(|ts| {
        ts.iter()
            .flat_map(|(name, ps)| ps.iter().map(|p| TopicPartition::new(name.clone(), *p)))
            .collect()
    });
    let engine_request = GroupRequest::OffsetFetch {
        group_id: group_id.to_string(),
        partitions,
        require_stable,
    };
    let found = match call(ctx, engine_request, GROUP_CALL).await? {
        Ok(GroupResponse::OffsetFetch(Ok(found))) => found,
        Ok(GroupResponse::OffsetFetch(Err(e))) => return Ok(Err(e.code())),
        Ok(_) => return Ok(Err(ErrorCode::UnknownServerError.code())),
        Err(e) => return Ok(Err(e.code())),
    };
    let mut out: Vec<TopicOffsets> = Vec::new();
    for (tp, answer) in found {
        let (offset, error) = match answer {
            Ok(offset) => (offset, 0),
            Err(e) => (-1, e.code()),
        };
        match out.iter_mut().find(|(n, _)| *n == tp.topic) {
            Some((_, ps)) => ps.push((tp.partition, offset, error)),
            None => out.push((tp.topic, vec![(tp.partition, offset, error)])),
        }
    }
    Ok(Ok(out))
}

pub async fn offset_fetch(
    ctx: &Context,
    request: &OffsetFetchRequest,
    version: i16,
) -> Result<OffsetFetchResponse, BrokerDown> {
    if version >= 8 {
        let mut groups = Vec::with_capacity(request.groups.len());
        for g in &request.groups {
            let topics = g.topics.as_ref().map(|ts| {
                ts.iter()
                    .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
                    .collect()
            });
            let group = match fetch_group_offsets(ctx, &g.group_id.0, topics, request.require_stable).await? {
                Ok(found) => OffsetFetchResponseGroup::default()
                    .with_group_id(g.group_id.clone())
                    .with_topics(
                        found
                            .into_iter()
                            .map(|(name, ps)| {
                                OffsetFetchResponseTopics::default()
                                    .with_name(topic_name(name))
                                    .with_partitions(
                                        ps.into_iter()
                                            .map(|(p, offset, error)| {
                                                OffsetFetchResponsePartitions::default()
                                                    .with_partition_index(p)
                                                    .with_committed_offset(offset)
                                                    .with_metadata(Some(str_bytes("")))
                                                    .with_error_code(error)
                                            })
                                            .collect(),
                                    )
                            })
                            .collect(),
                    ),
                Err(code) => OffsetFetchResponseGroup::default()
                    .with_group_id(g.group_id.clone())
                    .with_error_code(code),
            };
            groups.push(group);
        }
        return Ok(OffsetFetchResponse::default().with_groups(groups));
    }
    let topics = request.topics.as_ref().map(|ts| {
        ts.iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
            .collect::<Vec<_>>()
    });
    // `require_stable` is v7+; the codec leaves it false below.
    let found = match fetch_group_offsets(ctx, &request.group_id.0, topics.clone(), request.require_stable).await? {
        Ok(found) => found,
        // v1 has no response-wide error: every partition asked carries it.
        Err(code) if version < 2 => topics
            .unwrap_or_default()
            .into_iter()
            .map(|(name, ps)| (name, ps.into_iter().map(|p| (p, -1, code)).collect()))
            .collect(),
        Err(code) => return Ok(OffsetFetchResponse::default().with_error_code(code)),
    };
    Ok(OffsetFetchResponse::default().with_topics(
        found
            .into_iter()
            .map(|(name, ps)| {
                OffsetFetchResponseTopic::default()
                    .with_name(topic_name(name))
                    .with_partitions(
                        ps.into_iter()
                            .map(|(p, offset, error)| {
                                OffsetFetchResponsePartition::default()
                                    .with_partition_index(p)
                                    .with_committed_offset(offset)
                                    .with_metadata(Some(str_bytes("")))
                                    .with_error_code(error)
                            })
                            .collect(),
                    )
            })
            .collect(),
    ))
}

pub async fn list_groups(ctx: &Context, request: &ListGroupsRequest) -> Result<ListGroupsResponse, BrokerDown> {
    let groups = match call(ctx, GroupRequest::ListGroups, GROUP_CALL).await? {
        Ok(GroupResponse::ListGroups(groups)) => groups,
        Ok(_) => return Ok(ListGroupsResponse::default().with_error_code(ErrorCode::UnknownServerError.code())),
        Err(e) => return Ok(ListGroupsResponse::default().with_error_code(e.code())),
    };
    let wanted = |state: GroupState| {
        request.states_filter.is_empty()
            || request
                .states_filter
                .iter()
                .any(|s| s.eq_ignore_ascii_case(state_name(state)))
    };
    Ok(ListGroupsResponse::default().with_groups(
        groups
            .into_iter()
            .filter(|(_, state)| wanted(*state))
            .map(|(id, state)| {
                ListedGroup::default()
                    .with_group_id(GroupId(str_bytes(id)))
                    .with_protocol_type(str_bytes("consumer"))
                    .with_group_state(str_bytes(state_name(state)))
                    .with_group_type(str_bytes("classic"))
            })
            .collect(),
    ))
}

pub async fn describe_groups(
    ctx: &Context,
    request: &DescribeGroupsRequest,
) -> Result<DescribeGroupsResponse, BrokerDown> {
    let mut groups = Vec::with_capacity(request.groups.len());
    for group_id in &request.groups {
        let engine_request = GroupRequest::Describe {
            group_id: group_id.0.to_string(),
        };
        let described = match call(ctx, engine_request, GROUP_CALL).await? {
            Ok(GroupResponse::Describe(d)) => d.map_err(|e| e.code()),
            Ok(_) => Err(ErrorCode::UnknownServerError.code()),
            Err(e) => Err(e.code()),
        };
        let group = match described {
            Ok(Some(d)) => DescribedGroup::default()
                .with_group_id(group_id.clone())
                .with_group_state(str_bytes(state_name(d.state)))
                .with_protocol_type(str_bytes(d.protocol_type))
                .with_protocol_data(str_bytes(d.protocol))
                .with_members(
                    d.members
                        .into_iter()
                        .map(|m| {
                            DescribedGroupMember::default()
                                .with_member_id(str_bytes(m.member_id))
                                .with_group_instance_id(m.group_instance_id.map(str_bytes))
                                .with_client_id(str_bytes(m.client_id))
                                .with_client_host(str_bytes(m.client_host))
                                .with_member_metadata(m.metadata)
                                .with_member_assignment(m.assignment)
                        })
                        .collect(),
                ),
            // Kafka describes an unknown group as Dead, without an error.
            Ok(None) => DescribedGroup::default()
                .with_group_id(group_id.clone())
                .with_group_state(str_bytes("Dead")),
            Err(code) => DescribedGroup::default()
                .with_group_id(group_id.clone())
                .with_error_code(code),
        };
        groups.push(group.with_authorized_operations(OPERATIONS_NOT_REQUESTED));
    }
    Ok(DescribeGroupsResponse::default().with_groups(groups))
}

/// DeleteGroups: each group (once, however often it is named) deleted by its coordinator,
/// which must be this broker (NOT_COORDINATOR otherwise: the admin client asks the right one).
pub async fn delete_groups(ctx: &Context, request: &DeleteGroupsRequest) -> Result<DeleteGroupsResponse, BrokerDown> {
    let mut results: Vec<DeletableGroupResult> = Vec::with_capacity(request.groups_names.len());
    for group_id in &request.groups_names {
        if results.iter().any(|r| r.group_id == *group_id) {
            continue;
        }
        let code = if group_id.0.is_empty() {
            codes::INVALID_GROUP_ID
        } else {
            let engine_request = GroupRequest::DeleteGroup {
                group_id: group_id.0.to_string(),
            };
            match call(ctx, engine_request, GROUP_CALL).await? {
                Ok(GroupResponse::DeleteGroup(e)) => e.code(),
                Ok(_) => ErrorCode::UnknownServerError.code(),
                Err(e) => e.code(),
            }
        };
        results.push(
            DeletableGroupResult::default()
                .with_group_id(group_id.clone())
                .with_error_code(code),
        );
    }
    Ok(DeleteGroupsResponse::default().with_results(results))
}

/// OffsetDelete: the partitions of topics the cluster does not know are
/// UNKNOWN_TOPIC_OR_PARTITION (Kafka checks the metadata before the coordinator); the
/// coordinator answers for the others. An error about the group is the response's, without
/// topics.
pub async fn offset_delete(ctx: &Context, request: &OffsetDeleteRequest) -> Result<OffsetDeleteResponse, BrokerDown> {
    if request.group_id.0.is_empty() {
        return Ok(OffsetDeleteResponse::default().with_error_code(codes::INVALID_GROUP_ID));
    }
    let image = ctx.cluster.metadata();
    let known = |topic: &str| image.topics.contains_key(topic);
    let partitions: Vec<TopicPartition> = request
        .topics
        .iter()
        .filter(|t| known(t.name.0.as_str()))
        .flat_map(|t| {
            let name = t.name.0.to_string();
            t.partitions
                .iter()
                .map(move |p| TopicPartition::new(name.clone(), p.partition_index))
        })
        .collect();
    let engine_request = GroupRequest::OffsetDelete {
        group_id: request.group_id.0.to_string(),
        partitions,
    };
    let outcome = match call(ctx, engine_request, GROUP_CALL).await? {
        Ok(GroupResponse::OffsetDelete(Ok(outcome))) => outcome,
        Ok(GroupResponse::OffsetDelete(Err(e))) | Err(e) => {
            return Ok(OffsetDeleteResponse::default().with_error_code(e.code()));
        }
        Ok(_) => return Ok(OffsetDeleteResponse::default().with_error_code(ErrorCode::UnknownServerError.code())),
    };
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let name = t.name.0.as_str();
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let code = if !known(name) {
                        codes::UNKNOWN_TOPIC_OR_PARTITION
                    } else {
                        outcome
                            .iter()
                            .find(|(tp, _)| tp.topic == name && tp.partition == p.partition_index)
                            .map_or(ErrorCode::UnknownServerError.code(), |(_, e)| e.code())
                    };
                    OffsetDeleteResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(code)
                })
                .collect();
            OffsetDeleteResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    Ok(OffsetDeleteResponse::default().with_topics(topics))
}
