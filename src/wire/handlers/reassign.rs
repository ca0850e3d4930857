//! Partition reassignment (KIP-455): AlterPartitionReassignments and
//! ListPartitionReassignments, answered from the controller's metadata.

use kafka_protocol::messages::alter_partition_reassignments_response::{
    AlterPartitionReassignmentsResponse, ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::list_partition_reassignments_response::{
    ListPartitionReassignmentsResponse, OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, BrokerId as WireBrokerId, ListPartitionReassignmentsRequest,
};

use super::{Context, str_bytes, topic_name};
use crate::engine::{BrokerId, ErrorCode, TopicPartition};

fn broker_ids(ids: &[BrokerId]) -> Vec<WireBrokerId> {
    ids.iter().map(|b| WireBrokerId(*b)).collect()
}

pub async fn alter(
    ctx: &Context,
    request: &AlterPartitionReassignmentsRequest,
    version: i16,
) -> AlterPartitionReassignmentsResponse {
    // v1 (KIP-860) lets a client forbid replication factor changes; v0 always allows them.
    let allow_rf_change = version < 1 || request.allow_replication_factor_change;
    let image = ctx.cluster.metadata();
    let mut asked = Vec::new();
    let mut refused: Vec<(TopicPartition, i16, String)> = Vec::new();
    for t in &request.topics {
        for p in &t.partitions {
            let tp = TopicPartition::new(t.name.0.to_string(), p.partition_index);
            let target: Option<Vec<BrokerId>> = p.replicas.as_ref().map(|r| r.iter().map(|b| b.0).collect());
            if let (Some(target), Some(current)) = (&target, image.partition(&tp))
                && !allow_rf_change
                && target.len() != current.original_replicas().len()
            {
                let message = format!(
                    "The replication factor is changed from {} to {} but allowReplicationFactorChange is false",
                    current.original_replicas().len(),
                    target.len()
                );
                refused.push((tp, ErrorCode::InvalidReplicationFactor.code(), message));
                continue;
            }
            asked.push((tp, target));
        }
    }
    let results = match ctx.cluster.alter_reassignments(&asked).await {
        Ok(results) => results,
        Err((code, message)) => {
            return AlterPartitionReassignmentsResponse::default()
                .with_allow_replication_factor_change(allow_rf_change)
                .with_error_code(code.code())
                .with_error_message(Some(str_bytes(message)));
        }
    };
    let mut outcomes: Vec<(TopicPartition, i16, Option<String>)> = results
        .into_iter()
        .map(|(tp, e)| match e {
            None => (tp, 0, None),
            Some((code, message)) => (tp, code.code(), Some(message)),
        })
        .collect();
    outcomes.extend(refused.into_iter().map(|(tp, code, m)| (tp, code, Some(m))));
    let mut topics: Vec<ReassignableTopicResponse> = Vec::new();
    for t in &request.topics {
        let partitions = t
            .partitions
            .iter()
            .filter_map(|p| {
                let (_, code, message) = outcomes
                    .iter()
                    .find(|(tp, _, _)| tp.topic == t.name.0.as_str() && tp.partition == p.partition_index)?;
                Some(
                    ReassignablePartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(*code)
                        .with_error_message(message.clone().map(str_bytes)),
                )
            })
            .collect();
        topics.push(
            ReassignableTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(partitions),
        );
    }
    AlterPartitionReassignmentsResponse::default()
        .with_allow_replication_factor_change(allow_rf_change)
        .with_responses(topics)
}

pub fn list(ctx: &Context, request: &ListPartitionReassignmentsRequest) -> ListPartitionReassignmentsResponse {
    let wanted: Option<Vec<TopicPartition>> = request.topics.as_ref().map(|ts| {
        ts.iter()
            .flat_map(|t| {
                let name = t.name.0.to_string();
                t.partition_indexes
                    .iter()
                    .map(move |p| TopicPartition::new(name.clone(), *p))
            })
            .collect()
    });
    let moving = ctx
        .cluster
        .reassignments(|tp| wanted.as_ref().is_none_or(|w| w.contains(tp)));
    let mut topics: Vec<OngoingTopicReassignment> = Vec::new();
    for (tp, p) in moving {
        let partition = OngoingPartitionReassignment::default()
            .with_partition_index(tp.partition)
            .with_replicas(broker_ids(&p.replicas))
            .with_adding_replicas(broker_ids(&p.adding))
            .with_removing_replicas(broker_ids(&p.removing));
        match topics.last_mut() {
            Some(t) if t.name.0.as_str() == tp.topic => t.partitions.push(partition),
            _ => topics.push(
                OngoingTopicReassignment::default()
                    .with_name(topic_name(tp.topic.clone()))
                    .with_partitions(vec![partition]),
            ),
        }
    }
    ListPartitionReassignmentsResponse::default().with_topics(topics)
}
