//! DescribeLogDirs (what the answering broker keeps on disk: its one log directory, the size
//! and offset lag of every replica in it, the filesystem's size and free space) and
//! DeleteRecords (the leader moves a partition's log start).

use std::collections::BTreeMap;

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsResponse, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResponse, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DescribeLogDirsRequest};

use super::{BrokerDown, Context, reached, str_bytes, topic_name};
use crate::engine::{ErrorCode, TopicPartition};

/// Kafka's "unknown" for a filesystem's total and usable bytes.
const UNKNOWN_SPACE: i64 = -1;

/// The answering broker's log directory. `topics` null means every replica; otherwise only
/// the partitions listed (Kafka's `DescribeLogDirsRequest.topics`).
pub fn describe_log_dirs(ctx: &Context, r: &DescribeLogDirsRequest) -> Result<DescribeLogDirsResponse, BrokerDown> {
    let wanted: Option<Vec<TopicPartition>> = r.topics.as_ref().map(|topics| {
        topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(|p| TopicPartition::new(t.topic.to_string(), *p))
            })
            .collect()
    });
    let names: Option<Vec<String>> = wanted.as_ref().map(|w| w.iter().map(|tp| tp.topic.clone()).collect());
    let dir = reached(ctx.cluster.describe_log_dir(ctx.broker, names.as_deref()))?;
    let dir = match dir {
        Ok(dir) => dir,
        Err(e) => return Ok(DescribeLogDirsResponse::default().with_error_code(e.code())),
    };
    let mut by_topic: BTreeMap<String, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
    for replica in &dir.replicas {
        if wanted.as_ref().is_some_and(|w| !w.contains(&replica.tp)) {
            continue;
        }
        by_topic.entry(replica.tp.topic.clone()).or_default().push(
            DescribeLogDirsPartition::default()
                .with_partition_index(replica.tp.partition)
                .with_partition_size(i64::try_from(replica.size_bytes).unwrap_or(i64::MAX))
                .with_offset_lag(replica.offset_lag)
                .with_is_future_key(false),
        );
    }
    let space = |bytes: Option<u64>| bytes.map_or(UNKNOWN_SPACE, |b| i64::try_from(b).unwrap_or(i64::MAX));
    let result = DescribeLogDirsResult::default()
        .with_error_code(0)
        .with_log_dir(str_bytes(dir.path.to_string_lossy()))
        .with_topics(
            by_topic
                .into_iter()
                .map(|(name, partitions)| {
                    DescribeLogDirsTopic::default()
                        .with_name(topic_name(name))
                        .with_partitions(partitions)
                })
                .collect(),
        )
        .with_total_bytes(space(dir.total_bytes))
        .with_usable_bytes(space(dir.usable_bytes));
    Ok(DescribeLogDirsResponse::default().with_results(vec![result]))
}

/// Moves each partition's log start on this broker, which must lead it. Answered at once:
/// the leader's new log start is the low watermark (see the README on what Kafka waits for).
pub async fn delete_records(ctx: &Context, r: &DeleteRecordsRequest) -> Result<DeleteRecordsResponse, BrokerDown> {
    let mut topics = Vec::with_capacity(r.topics.len());
    for t in &r.topics {
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in &t.partitions {
            let tp = TopicPartition::new(t.name.to_string(), p.partition_index);
            let outcome = reached(ctx.cluster.delete_records_on(ctx.broker, &tp, p.offset).await)?;
            let (low_watermark, error) = match outcome {
                Ok(low) => (low, ErrorCode::None),
                Err(e) => (-1, e),
            };
            partitions.push(
                DeleteRecordsPartitionResult::default()
                    .with_partition_index(p.partition_index)
                    .with_low_watermark(low_watermark)
                    .with_error_code(error.code()),
            );
        }
        topics.push(
            DeleteRecordsTopicResult::default()
                .with_name(t.name.clone())
                .with_partitions(partitions),
        );
    }
    Ok(DeleteRecordsResponse::default().with_topics(topics))
}
