//! Partition reassignment on a Kafka cluster (KIP-455): the current assignment from the
//! metadata, AlterPartitionReassignments to start or cancel moves and
//! ListPartitionReassignments to follow them, all at the controller.

use kafka_protocol::messages::alter_partition_reassignments_request::{ReassignablePartition, ReassignableTopic};
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsTopics;
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, ApiKey, BrokerId as WireBrokerId, ListPartitionReassignmentsRequest,
};

use super::{BROKER_TIMEOUT_MS, kafka_error, retry_at_new_controller, topic_name, version};
use crate::kafka::BrokerId;
use crate::kafka::reassign::{Assignment, Ongoing};
use crate::remote::{KafkaClient, RemoteError, Target, error_name};

/// Every partition's replicas (a moving partition's target and leaving replicas alike), with
/// the ids of the live brokers.
pub async fn assignments(client: &KafkaClient) -> Result<(Vec<Assignment>, Vec<BrokerId>), RemoteError> {
    let metadata = client.refresh_metadata().await?;
    let mut all: Vec<Assignment> = metadata
        .topics
        .iter()
        .filter(|t| t.error == 0)
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| Assignment::new(t.name.clone(), p.partition, p.replicas.clone()))
        })
        .collect();
    all.sort();
    let mut brokers: Vec<BrokerId> = metadata.brokers.iter().map(|b| b.id).collect();
    brokers.sort_unstable();
    Ok((all, brokers))
}

/// Starts moves (`Some(replicas)`) or cancels them (`None`): one answer per partition, in
/// the order asked, `None` when the controller took it.
pub async fn alter_reassignments(
    client: &KafkaClient,
    moves: &[(String, i32, Option<Vec<BrokerId>>)],
) -> Result<Vec<(String, i32, Option<String>)>, RemoteError> {
    let mut topics: Vec<ReassignableTopic> = Vec::new();
    for (topic, partition, replicas) in moves {
        let entry = ReassignablePartition::default()
            .with_partition_index(*partition)
            .with_replicas(replicas.as_ref().map(|r| r.iter().map(|b| WireBrokerId(*b)).collect()));
        match topics.iter_mut().find(|t| t.name.0.as_str() == topic) {
            Some(t) => t.partitions.push(entry),
            None => topics.push(
                ReassignableTopic::default()
                    .with_name(topic_name(topic))
                    .with_partitions(vec![entry]),
            ),
        }
    }
    let attempt = || async {
        version(client, Target::Controller, ApiKey::AlterPartitionReassignments).await?;
        let request = AlterPartitionReassignmentsRequest::default()
            .with_timeout_ms(BROKER_TIMEOUT_MS)
            .with_allow_replication_factor_change(true)
            .with_topics(topics.clone());
        let response = client.send(Target::Controller, request).await?;
        if response.error_code != 0 {
            return Err(kafka_error(
                "reassigning partitions",
                response.error_code,
                response.error_message.as_ref(),
            ));
        }
        let answers = moves
            .iter()
            .map(|(topic, partition, _)| {
                let answer = response
                    .responses
                    .iter()
                    .filter(|t| t.name.0.as_str() == topic)
                    .flat_map(|t| t.partitions.iter())
                    .find(|p| p.partition_index == *partition);
                let error = match answer {
                    None => Some("no answer for this partition".to_string()),
                    Some(p) if p.error_code == 0 => None,
                    Some(p) => Some(match p.error_message.as_ref().filter(|m| !m.is_empty()) {
                        Some(m) => format!("{}: {m}", error_name(p.error_code)),
                        None => error_name(p.error_code),
                    }),
                };
                (topic.clone(), *partition, error)
            })
            .collect();
        Ok(answers)
    };
    retry_at_new_controller(client, attempt).await
}

/// The moves in progress, of some partitions or (None) all, in topic and partition order.
pub async fn list_reassignments(
    client: &KafkaClient,
    partitions: Option<&[(String, i32)]>,
) -> Result<Vec<Ongoing>, RemoteError> {
    let topics = partitions.map(|ps| {
        let mut topics: Vec<ListPartitionReassignmentsTopics> = Vec::new();
        for (topic, partition) in ps {
            match topics.iter_mut().find(|t| t.name.0.as_str() == topic) {
                Some(t) => t.partition_indexes.push(*partition),
                None => topics.push(
                    ListPartitionReassignmentsTopics::default()
                        .with_name(topic_name(topic))
                        .with_partition_indexes(vec![*partition]),
                ),
            }
        }
        topics
    });
    let attempt = || async {
        version(client, Target::Controller, ApiKey::ListPartitionReassignments).await?;
        let request = ListPartitionReassignmentsRequest::default()
            .with_timeout_ms(BROKER_TIMEOUT_MS)
            .with_topics(topics.clone());
        let response = client.send(Target::Controller, request).await?;
        if response.error_code != 0 {
            return Err(kafka_error(
                "listing reassignments",
                response.error_code,
                response.error_message.as_ref(),
            ));
        }
        let ids = |v: &[WireBrokerId]| v.iter().map(|b| b.0).collect::<Vec<BrokerId>>();
        let mut ongoing: Vec<Ongoing> = response
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| Ongoing {
                    topic: t.name.0.to_string(),
                    partition: p.partition_index,
                    replicas: ids(&p.replicas),
                    adding: ids(&p.adding_replicas),
                    removing: ids(&p.removing_replicas),
                })
            })
            .collect();
        ongoing.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        Ok(ongoing)
    };
    retry_at_new_controller(client, attempt).await
}
