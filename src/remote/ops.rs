//! The Kafka operations the console and the CLI perform on an external cluster, each routed
//! to the right broker through [`KafkaClient`]: offsets, produce, fetch, groups, topics,
//! preferred-leader elections. Errors carry Kafka's error names.

use std::time::Duration;

use bytes::Bytes;

use super::{KafkaClient, RemoteError};
use crate::view::{BrokerId, TailRecord};

/// Which offset ListOffsets asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    Earliest,
    /// The log end offset (the high watermark for read-committed-less reads).
    Latest,
    /// The first offset whose timestamp is at or after this many ms since the epoch.
    Timestamp(i64),
}

/// A record to produce.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutRecord {
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
    /// ms since the epoch; None: now.
    pub timestamp: Option<i64>,
}

/// One partition's answer to a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedPartition {
    pub high_watermark: i64,
    pub log_start_offset: i64,
    /// Records at or after the fetch offset (whole batches may start earlier; those are cut).
    pub records: Vec<TailRecord>,
    /// Where the next fetch starts.
    pub next_offset: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group_id: String,
    pub protocol_type: String,
    pub state: String,
    pub coordinator: BrokerId,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    pub member_id: String,
    pub client_id: String,
    pub host: String,
    /// (topic, partition) from the member's consumer-protocol assignment.
    pub assignment: Vec<(String, i32)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    pub group_id: String,
    pub state: String,
    pub protocol_type: String,
    pub protocol: String,
    pub coordinator: BrokerId,
    pub members: Vec<GroupMember>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionResult {
    pub topic: String,
    pub partition: i32,
    /// None: elected (or the preferred leader already led: ELECTION_NOT_NEEDED counts as done).
    pub error: Option<String>,
}

/// Offsets of many partitions, asked of each leader once, concurrently. One result per
/// requested partition, in request order.
pub async fn list_offsets(
    client: &KafkaClient,
    partitions: &[(String, i32)],
    spec: OffsetSpec,
) -> Vec<Result<i64, RemoteError>> {
    let _ = (client, partitions, spec);
    todo!("ops")
}

/// Produces `records` in one batch to `topic`/`partition` with `acks` (0, 1 or -1); the
/// offset of the first record (-1 with acks=0).
pub async fn produce(
    client: &KafkaClient,
    topic: &str,
    partition: i32,
    records: Vec<OutRecord>,
    acks: i16,
) -> Result<i64, RemoteError> {
    let _ = (client, topic, partition, records, acks);
    todo!("ops")
}

/// Reads from `offset` at the partition's leader, waiting up to `max_wait` for records.
pub async fn fetch(
    client: &KafkaClient,
    topic: &str,
    partition: i32,
    offset: i64,
    max_wait: Duration,
    max_bytes: i32,
) -> Result<FetchedPartition, RemoteError> {
    let _ = (client, topic, partition, offset, max_wait, max_bytes);
    todo!("ops")
}

/// Every group of every broker.
pub async fn list_groups(client: &KafkaClient) -> Result<Vec<GroupListing>, RemoteError> {
    let _ = client;
    todo!("ops")
}

/// Asks each group's coordinator.
pub async fn describe_groups(client: &KafkaClient, groups: &[String]) -> Result<Vec<GroupDescription>, RemoteError> {
    let _ = (client, groups);
    todo!("ops")
}

/// Every committed offset of `group`.
pub async fn committed_offsets(client: &KafkaClient, group: &str) -> Result<Vec<CommittedOffset>, RemoteError> {
    let _ = (client, group);
    todo!("ops")
}

pub async fn create_topic(
    client: &KafkaClient,
    name: &str,
    partitions: i32,
    replication_factor: i16,
    configs: &[(String, String)],
) -> Result<(), RemoteError> {
    let _ = (client, name, partitions, replication_factor, configs);
    todo!("ops")
}

pub async fn delete_topic(client: &KafkaClient, name: &str) -> Result<(), RemoteError> {
    let _ = (client, name);
    todo!("ops")
}

/// Preferred-leader election (ElectLeaders, type 0) for one partition, one topic's
/// partitions, or every partition.
pub async fn elect_preferred(
    client: &KafkaClient,
    topic: Option<&str>,
    partition: Option<i32>,
) -> Result<Vec<ElectionResult>, RemoteError> {
    let _ = (client, topic, partition);
    todo!("ops")
}
