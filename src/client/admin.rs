//! Admin calls the console and the CLI need beyond the cluster's own API: consumer-group
//! descriptions with lag; deleting groups and their offsets, and committing offsets as an
//! admin client does for a reset (Kafka's `Admin.deleteConsumerGroups`,
//! `deleteConsumerGroupOffsets`, `alterConsumerGroupOffsets`).

use std::time::Duration;

use crate::client::assignor;
use crate::engine::group::{GroupDescription, GroupState};
use crate::engine::{Cluster, ErrorCode, GroupRequest, GroupResponse, OffsetSpec, TopicPartition};

/// One partition of a group: where the group is, where the log ends, and the difference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionLag {
    pub tp: TopicPartition,
    /// Committed offset, -1 when the group committed nothing for it.
    pub committed: i64,
    /// The partition's high watermark (what a consumer can read up to).
    pub end: i64,
    /// `end - committed`, or the whole partition from its log start when nothing is committed.
    pub lag: i64,
    /// The member consuming it now, if any.
    pub owner: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupLag {
    pub group_id: String,
    pub state: GroupState,
    pub members: Vec<(String, Vec<TopicPartition>)>,
    pub partitions: Vec<PartitionLag>,
}

pub async fn describe_group(cluster: &Cluster, group: &str) -> Result<Option<GroupDescription>, ErrorCode> {
    let request = GroupRequest::Describe {
        group_id: group.to_string(),
    };
    match cluster.group_request(group, request, Duration::from_secs(5)).await? {
        GroupResponse::Describe(result) => result,
        _ => Err(ErrorCode::UnknownServerError),
    }
}

/// DeleteGroups: the group must be Empty (NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND when
/// its coordinator does not know it); its offsets and record get tombstones.
pub async fn delete_group(cluster: &Cluster, group: &str) -> Result<(), ErrorCode> {
    let request = GroupRequest::DeleteGroup {
        group_id: group.to_string(),
    };
    match cluster.group_request(group, request, Duration::from_secs(10)).await? {
        GroupResponse::DeleteGroup(ErrorCode::None) => Ok(()),
        GroupResponse::DeleteGroup(error) => Err(error),
        _ => Err(ErrorCode::UnknownServerError),
    }
}

/// OffsetDelete: each partition's outcome (GROUP_SUBSCRIBED_TO_TOPIC for topics the group's
/// members subscribe to), or the group's error.
pub async fn delete_offsets(
    cluster: &Cluster,
    group: &str,
    partitions: &[TopicPartition],
) -> Result<Vec<(TopicPartition, ErrorCode)>, ErrorCode> {
    let request = GroupRequest::OffsetDelete {
        group_id: group.to_string(),
        partitions: partitions.to_vec(),
    };
    match cluster.group_request(group, request, Duration::from_secs(10)).await? {
        GroupResponse::OffsetDelete(result) => result,
        _ => Err(ErrorCode::UnknownServerError),
    }
}

/// Commits `offsets` for `group` as an admin client (generation -1, no member): how offsets
/// are reset. The coordinator takes it only while the group is Empty (UNKNOWN_MEMBER_ID
/// otherwise).
pub async fn commit_offsets(
    cluster: &Cluster,
    group: &str,
    offsets: &[(TopicPartition, i64)],
) -> Result<(), ErrorCode> {
    let request = GroupRequest::OffsetCommit {
        group_id: group.to_string(),
        generation: -1,
        member_id: String::new(),
        group_instance_id: None,
        offsets: offsets.to_vec(),
    };
    match cluster.group_request(group, request, Duration::from_secs(10)).await? {
        GroupResponse::OffsetCommit(ErrorCode::None) => Ok(()),
        GroupResponse::OffsetCommit(error) => Err(error),
        _ => Err(ErrorCode::UnknownServerError),
    }
}

/// The group's members with their assignments, and per committed or assigned partition the
/// committed offset, end offset and lag.
pub async fn group_lag(cluster: &Cluster, group: &str) -> Result<GroupLag, ErrorCode> {
    let description = describe_group(cluster, group).await?;
    let request = GroupRequest::OffsetFetch {
        group_id: group.to_string(),
        partitions: None,
        require_stable: false,
    };
    // Without require_stable no partition carries an error of its own.
    let committed: Vec<(TopicPartition, i64)> =
        match cluster.group_request(group, request, Duration::from_secs(5)).await? {
            GroupResponse::OffsetFetch(result) => result?.into_iter().map(|(tp, o)| (tp, o.unwrap_or(-1))).collect(),
            _ => return Err(ErrorCode::UnknownServerError),
        };
    let members: Vec<(String, Vec<TopicPartition>)> = description
        .as_ref()
        .map(|d| {
            d.members
                .iter()
                .map(|m| {
                    (
                        m.member_id.clone(),
                        assignor::decode_assignment(&m.assignment).unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let mut tps: Vec<TopicPartition> = committed.iter().map(|(tp, _)| tp.clone()).collect();
    tps.extend(members.iter().flat_map(|(_, a)| a.iter().cloned()));
    tps.sort();
    tps.dedup();
    let mut partitions = Vec::new();
    for tp in tps {
        let end = cluster.list_offset(&tp, OffsetSpec::Latest).await.unwrap_or(-1);
        let committed_offset = committed.iter().find(|(t, _)| *t == tp).map_or(-1, |(_, o)| *o);
        let from = if committed_offset >= 0 {
            committed_offset
        } else {
            cluster.list_offset(&tp, OffsetSpec::Earliest).await.unwrap_or(0)
        };
        let owner = members.iter().find(|(_, a)| a.contains(&tp)).map(|(m, _)| m.clone());
        partitions.push(PartitionLag {
            lag: (end - from).max(0),
            committed: committed_offset,
            end,
            owner,
            tp,
        });
    }
    Ok(GroupLag {
        group_id: group.to_string(),
        state: description.map_or(GroupState::Empty, |d| d.state),
        members,
        partitions,
    })
}
