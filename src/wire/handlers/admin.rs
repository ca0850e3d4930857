//! Topic administration: CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders.

use kafka_protocol::messages::create_partitions_response::{CreatePartitionsResponse, CreatePartitionsTopicResult};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{CreatableTopicResult, CreateTopicsResponse};
use kafka_protocol::messages::delete_topics_response::{DeletableTopicResult, DeleteTopicsResponse};
use kafka_protocol::messages::elect_leaders_response::{ElectLeadersResponse, PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, ElectLeadersRequest,
};

use super::{Context, codes, str_bytes, topic_name};
use crate::engine::{ErrorCode, TopicConfig, TopicPartition, topic_name_error};

/// A topic config for `partitions` and `replication_factor`, with the cluster's defaults.
fn topic_config(ctx: &Context, partitions: i32, replication_factor: i32) -> TopicConfig {
    let cluster = ctx.cluster.config();
    TopicConfig::new(partitions, replication_factor).with_default_min_insync_replicas(cluster.min_insync_replicas)
}

fn default_replication_factor(ctx: &Context) -> i32 {
    ctx.config
        .default_replication_factor
        .clamp(1, ctx.cluster.config().brokers.max(1))
}

/// Auto-creation on Metadata (`auto.create.topics.enable`): the broker's defaults.
pub async fn create_with_defaults(ctx: &Context, name: &str) -> Result<(), (ErrorCode, String)> {
    let config = topic_config(ctx, ctx.config.default_partitions, default_replication_factor(ctx));
    ctx.cluster.create_topic_checked(name, config).await
}

async fn create_one(ctx: &Context, topic: &CreatableTopic, validate_only: bool) -> CreatableTopicResult {
    let name = topic.name.0.to_string();
    let partitions = if topic.num_partitions == -1 {
        ctx.config.default_partitions
    } else {
        topic.num_partitions
    };
    let replication_factor = if topic.replication_factor == -1 {
        default_replication_factor(ctx)
    } else {
        i32::from(topic.replication_factor)
    };
    let fail = |code: i16, message: String| {
        CreatableTopicResult::default()
            .with_name(topic.name.clone())
            .with_error_code(code)
            .with_error_message(Some(str_bytes(message)))
            .with_num_partitions(-1)
            .with_replication_factor(-1)
    };
    if let Some(message) = topic_name_error(&name) {
        return fail(codes::INVALID_TOPIC, message);
    }
    if !topic.assignments.is_empty() {
        return fail(
            codes::INVALID_REQUEST,
            "manual replica assignments are not supported".into(),
        );
    }
    let mut config = topic_config(ctx, partitions, replication_factor);
    for c in &topic.configs {
        let Some(value) = c.value.as_deref() else { continue };
        if let Err(message) = config.set(&c.name, value) {
            return fail(codes::INVALID_CONFIG, message);
        }
    }
    let image = ctx.cluster.metadata();
    if let Err(e) = crate::engine::configs::topic_log_config(&image, &ctx.cluster.config().log, &config).validate() {
        return fail(codes::INVALID_CONFIG, e.to_string());
    }
    if validate_only {
        if ctx.cluster.metadata().topics.contains_key(&name) {
            return fail(
                ErrorCode::TopicAlreadyExists.code(),
                format!("topic {name} already exists"),
            );
        }
    } else if let Err((code, message)) = ctx.cluster.create_topic_checked(&name, config).await {
        return fail(code.code(), message);
    }
    CreatableTopicResult::default()
        .with_name(topic.name.clone())
        .with_num_partitions(partitions)
        .with_replication_factor(replication_factor as i16)
        .with_configs(Some(Vec::new()))
}

pub async fn create_topics(ctx: &Context, request: &CreateTopicsRequest) -> CreateTopicsResponse {
    let mut topics = Vec::with_capacity(request.topics.len());
    for t in &request.topics {
        topics.push(create_one(ctx, t, request.validate_only).await);
    }
    CreateTopicsResponse::default().with_topics(topics)
}

pub async fn delete_topics(ctx: &Context, request: &DeleteTopicsRequest, version: i16) -> DeleteTopicsResponse {
    let image = ctx.cluster.metadata();
    let names: Vec<Option<String>> = if version >= 6 {
        request
            .topics
            .iter()
            .map(|t| match &t.name {
                Some(n) if t.topic_id.is_nil() => Some(n.0.to_string()),
                _ => image.topic_by_uuid(t.topic_id.as_u128()).map(str::to_string),
            })
            .collect()
    } else {
        request.topic_names.iter().map(|n| Some(n.0.to_string())).collect()
    };
    let mut responses = Vec::with_capacity(names.len());
    for name in names {
        let Some(name) = name else {
            // An id no topic has (or neither a name nor an id).
            responses.push(DeletableTopicResult::default().with_error_code(codes::UNKNOWN_TOPIC_ID));
            continue;
        };
        let result = DeletableTopicResult::default().with_name(Some(topic_name(name.clone())));
        responses.push(match ctx.cluster.delete_topic_checked(&name).await {
            Ok(()) => result,
            Err((code, message)) => result
                .with_error_code(code.code())
                .with_error_message(Some(str_bytes(message))),
        });
    }
    DeleteTopicsResponse::default().with_responses(responses)
}

pub async fn create_partitions(ctx: &Context, request: &CreatePartitionsRequest) -> CreatePartitionsResponse {
    let mut results = Vec::with_capacity(request.topics.len());
    for t in &request.topics {
        let name = t.name.0.to_string();
        let result = CreatePartitionsTopicResult::default().with_name(t.name.clone());
        let outcome = if t.assignments.is_some() {
            Err((
                codes::INVALID_REQUEST,
                "manual replica assignments are not supported".to_string(),
            ))
        } else if request.validate_only {
            match ctx.cluster.metadata().topics.get(&name) {
                None => Err((
                    codes::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("topic {name} does not exist"),
                )),
                Some(topic) if topic.partitions.len() as i32 >= t.count => Err((
                    ErrorCode::InvalidPartitions.code(),
                    format!("topic {name} already has {} partitions", topic.partitions.len()),
                )),
                Some(_) => Ok(()),
            }
        } else {
            ctx.cluster
                .create_partitions_checked(&name, t.count)
                .await
                .map_err(|(code, message)| (code.code(), message))
        };
        results.push(match outcome {
            Ok(()) => result,
            Err((code, message)) => result
                .with_error_code(code)
                .with_error_message(Some(str_bytes(message))),
        });
    }
    CreatePartitionsResponse::default().with_results(results)
}

pub async fn elect_leaders(ctx: &Context, request: &ElectLeadersRequest, version: i16) -> ElectLeadersResponse {
    let wanted: Option<Vec<TopicPartition>> = request.topic_partitions.as_ref().map(|ts| {
        ts.iter()
            .flat_map(|t| {
                let name = t.topic.0.to_string();
                t.partitions.iter().map(move |p| TopicPartition::new(name.clone(), *p))
            })
            .collect()
    });
    // election_type 1 (unclean) is not offered: only preferred elections.
    if request.election_type != 0 {
        return ElectLeadersResponse::default().with_error_code(codes::INVALID_REQUEST);
    }
    let scope = |tp: &TopicPartition| wanted.as_ref().is_none_or(|w| w.contains(tp));
    let mut results: Vec<(TopicPartition, i16)> = match ctx.cluster.elect_preferred_leaders(scope).await {
        Ok(results) => results.into_iter().map(|(tp, e)| (tp, e.code())).collect(),
        Err(e) => {
            tracing::warn!(broker = ctx.broker, "ElectLeaders: {e:#}");
            // v0 has no response-wide error: every partition asked carries it.
            if version == 0 {
                let code = ErrorCode::NotController.code();
                let results = wanted.iter().flatten().map(|tp| (tp.clone(), code)).collect();
                return ElectLeadersResponse::default().with_replica_election_results(by_topic(results));
            }
            return ElectLeadersResponse::default().with_error_code(ErrorCode::NotController.code());
        }
    };
    for tp in wanted.iter().flatten() {
        if !results.iter().any(|(t, _)| t == tp) {
            results.push((tp.clone(), codes::UNKNOWN_TOPIC_OR_PARTITION));
        }
    }
    ElectLeadersResponse::default().with_replica_election_results(by_topic(results))
}

fn by_topic(results: Vec<(TopicPartition, i16)>) -> Vec<ReplicaElectionResult> {
    let mut by_topic: Vec<ReplicaElectionResult> = Vec::new();
    for (tp, code) in results {
        let partition = PartitionResult::default()
            .with_partition_id(tp.partition)
            .with_error_code(code);
        match by_topic.iter_mut().find(|r| r.topic.0.as_str() == tp.topic) {
            Some(r) => r.partition_result.push(partition),
            None => by_topic.push(
                ReplicaElectionResult::default()
                    .with_topic(topic_name(tp.topic))
                    .with_partition_result(vec![partition]),
            ),
        }
    }
    by_topic
}
