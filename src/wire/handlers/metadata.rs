//! Metadata, DescribeCluster and FindCoordinator: where things are, with the brokers' real
//! listener addresses.

use kafka_protocol::messages::describe_cluster_response::{DescribeClusterBroker, DescribeClusterResponse};
use kafka_protocol::messages::find_coordinator_response::{Coordinator, FindCoordinatorResponse};
use kafka_protocol::messages::metadata_response::{
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{FindCoordinatorRequest, MetadataRequest};
use uuid::Uuid;

use super::{CLUSTER_ID, Context, OPERATIONS_NOT_REQUESTED, admin, codes, str_bytes, topic_name};
use crate::engine::{ErrorCode, NO_LEADER, topic_name_error};

pub async fn metadata(ctx: &Context, request: &MetadataRequest, version: i16) -> MetadataResponse {
    let image = ctx.cluster.metadata();
    // v0: an empty list means every topic; v1+: null means every topic. v12 may name a
    // topic by its id alone; an id no topic has is UNKNOWN_TOPIC_ID, as Kafka answers.
    let mut unknown_ids = Vec::new();
    let requested: Option<Vec<String>> = match &request.topics {
        None => None,
        Some(topics) if topics.is_empty() && version == 0 => None,
        Some(topics) => Some(
            topics
                .iter()
                .filter_map(|t| {
                    if t.topic_id.is_nil() {
                        return t.name.as_ref().map(|n| n.0.to_string());
                    }
                    // Kafka looks a topic with an id up by its id, whatever the name says.
                    let name = image.topic_by_uuid(t.topic_id.as_u128());
                    if name.is_none() {
                        unknown_ids.push(t.topic_id);
                    }
                    name.map(str::to_string)
                })
                .collect(),
        ),
    };
    let auto_create = ctx.config.auto_create_topics && (version < 4 || request.allow_auto_topic_creation);
    let names: Vec<String> = requested.unwrap_or_else(|| image.topics.keys().cloned().collect());
    let mut topics = Vec::with_capacity(names.len());
    let mut created = false;
    for name in names {
        let Some(topic) = image.topics.get(&name) else {
            let error = if auto_create && topic_name_error(&name).is_none() {
                match admin::create_with_defaults(ctx, &name).await {
                    Ok(()) => {
                        created = true;
                        codes::LEADER_NOT_AVAILABLE
                    }
                    Err((ErrorCode::TopicAlreadyExists, _)) => codes::LEADER_NOT_AVAILABLE,
                    Err((code, _)) => code.code(),
                }
            } else if topic_name_error(&name).is_some() {
                codes::INVALID_TOPIC
            } else {
                codes::UNKNOWN_TOPIC_OR_PARTITION
            };
            topics.push(
                MetadataResponseTopic::default()
                    .with_name(Some(topic_name(name)))
                    .with_error_code(error)
                    .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED),
            );
            continue;
        };
        let partitions = topic
            .partitions
            .iter()
            .enumerate()
            .map(|(index, p)| {
                let error = if p.leader == NO_LEADER {
                    codes::LEADER_NOT_AVAILABLE
                } else {
                    0
                };
                MetadataResponsePartition::default()
                    .with_error_code(error)
                    .with_partition_index(index as i32)
                    .with_leader_id(p.leader.into())
                    .with_leader_epoch(p.leader_epoch)
                    .with_replica_nodes(p.replicas.iter().map(|r| (*r).into()).collect())
                    .with_isr_nodes(p.isr.iter().map(|r| (*r).into()).collect())
                    .with_offline_replicas(
                        p.replicas
                            .iter()
                            .filter(|r| !image.is_live(**r))
                            .map(|r| (*r).into())
                            .collect(),
                    )
            })
            .collect();
        topics.push(
            MetadataResponseTopic::default()
                .with_name(Some(topic_name(name.clone())))
                .with_topic_id(Uuid::from_u128(topic.topic_uuid()))
                .with_is_internal(crate::engine::is_internal_topic(&name))
                .with_partitions(partitions)
                .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED),
        );
    }
    topics.extend(unknown_ids.into_iter().map(|id| {
        MetadataResponseTopic::default()
            .with_topic_id(id)
            .with_error_code(codes::UNKNOWN_TOPIC_ID)
            .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED)
    }));
    if created {
        tracing::info!(broker = ctx.broker, "auto-created topics on a Metadata request");
    }
    MetadataResponse::default()
        .with_brokers(
            ctx.live_brokers()
                .into_iter()
                .map(|(id, addr)| {
                    MetadataResponseBroker::default()
                        .with_node_id(id.into())
                        .with_host(str_bytes(addr.ip().to_string()))
                        .with_port(i32::from(addr.port()))
                })
                .collect(),
        )
        .with_cluster_id(Some(str_bytes(CLUSTER_ID)))
        .with_controller_id(ctx.cluster.controller().unwrap_or(-1).into())
        .with_topics(topics)
        .with_cluster_authorized_operations(OPERATIONS_NOT_REQUESTED)
}

pub fn describe_cluster(ctx: &Context) -> DescribeClusterResponse {
    DescribeClusterResponse::default()
        .with_cluster_id(str_bytes(CLUSTER_ID))
        .with_controller_id(ctx.cluster.controller().unwrap_or(-1).into())
        .with_brokers(
            ctx.live_brokers()
                .into_iter()
                .map(|(id, addr)| {
                    DescribeClusterBroker::default()
                        .with_broker_id(id.into())
                        .with_host(str_bytes(addr.ip().to_string()))
                        .with_port(i32::from(addr.port()))
                })
                .collect(),
        )
        .with_cluster_authorized_operations(OPERATIONS_NOT_REQUESTED)
}

/// The coordinator of one key: `(error, node, host, port)`.
/// Key type 0 is a group, 1 a transactional id (whose first lookup makes
/// `__transaction_state`, as Kafka's does).
async fn coordinator_of(ctx: &Context, key_type: i8, key: &str) -> (i16, i32, String, i32) {
    const NONE: (i32, &str, i32) = (-1, "", -1);
    let unavailable = |code: i16| (code, NONE.0, NONE.1.to_string(), NONE.2);
    let found = match key_type {
        0 if key.is_empty() => return unavailable(codes::INVALID_GROUP_ID),
        0 => ctx.cluster.find_coordinator(key),
        1 if key.is_empty() => return unavailable(codes::INVALID_REQUEST),
        1 => ctx.cluster.find_txn_coordinator(key).await,
        _ => return unavailable(codes::INVALID_REQUEST),
    };
    match found {
        Ok(broker) => match ctx.address(broker).filter(|_| ctx.cluster.metadata().is_live(broker)) {
            Some(addr) => (0, broker, addr.ip().to_string(), i32::from(addr.port())),
            None => unavailable(codes::COORDINATOR_NOT_AVAILABLE),
        },
        Err(_) => unavailable(codes::COORDINATOR_NOT_AVAILABLE),
    }
}

pub async fn find_coordinator(
    ctx: &Context,
    request: &FindCoordinatorRequest,
    version: i16,
) -> FindCoordinatorResponse {
    if version >= 4 {
        let mut coordinators = Vec::with_capacity(request.coordinator_keys.len());
        for key in &request.coordinator_keys {
            let (error, node, host, port) = coordinator_of(ctx, request.key_type, key).await;
            coordinators.push(
                Coordinator::default()
                    .with_key(key.clone())
                    .with_error_code(error)
                    .with_node_id(node.into())
                    .with_host(str_bytes(host))
                    .with_port(port),
            );
        }
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let (error, node, host, port) = coordinator_of(ctx, request.key_type, &request.key).await;
    FindCoordinatorResponse::default()
        .with_error_code(error)
        .with_node_id(node.into())
        .with_host(str_bytes(host))
        .with_port(port)
}
