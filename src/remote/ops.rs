//! The Kafka operations the console and the CLI perform on an external cluster, each routed
//! to the right broker through [`KafkaClient`]: offsets, produce, fetch, groups, topics,
//! preferred-leader elections. Errors carry Kafka's error names.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::ConsumerProtocolAssignment;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_records_request::{DeleteRecordsPartition, DeleteRecordsTopic};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use kafka_protocol::messages::offset_delete_request::{OffsetDeleteRequestPartition, OffsetDeleteRequestTopic};
use kafka_protocol::messages::offset_fetch_request::{OffsetFetchRequestGroup, OffsetFetchRequestTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, BrokerId as WireBrokerId, CreatePartitionsRequest, CreateTopicsRequest,
    DeleteGroupsRequest, DeleteRecordsRequest, DeleteTopicsRequest, DescribeGroupsRequest, DescribeLogDirsRequest,
    ElectLeadersRequest, FetchRequest, GroupId, ListGroupsRequest, ListOffsetsRequest, OffsetCommitRequest,
    OffsetDeleteRequest, OffsetFetchRequest, ProduceRequest, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kafka_protocol::records::{
    Compression, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, Record, RecordBatchDecoder,
    RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

mod acls;
mod configs;
mod reassign;
mod transactions;

pub use acls::{acls_from, describe_acls};
pub use configs::{describe_configs, incremental_alter_configs};
pub use reassign::{alter_reassignments, assignments, list_reassignments};
pub use transactions::{describe_transaction, describe_transactions};

use super::{KafkaClient, RemoteError, Target, error_name};
use crate::kafka::BrokerId;
pub use crate::kafka::OffsetSpec;
use crate::kafka::reset::{self, ResetSpec};
use crate::view::source::settle_read;
use crate::view::{TailRecord, TxnMark, TxnMarker};

/// A record to produce.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutRecord {
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    /// A record batch v2 keeps one value per header key here: a repeated key keeps its last value.
    pub headers: Vec<(String, Option<Bytes>)>,
    /// ms since the epoch; None: now.
    pub timestamp: Option<i64>,
}

/// One partition's answer to a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedPartition {
    pub high_watermark: i64,
    /// The last stable offset (the high watermark when the broker does not tell).
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    /// Records at or after the fetch offset (whole batches may start earlier; those are cut),
    /// each transactional one marked as its marker among them says (open without one).
    pub records: Vec<TailRecord>,
    /// The transaction markers read at or after the fetch offset.
    pub markers: Vec<TxnMarker>,
    /// Where the next fetch starts.
    pub next_offset: i64,
    /// `(base offset, partition leader epoch)` of each whole batch read, in offset order: a
    /// record's epoch is that of the last entry at or before its offset.
    pub leader_epochs: Vec<(i64, i32)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group_id: String,
    pub protocol_type: String,
    /// Empty when the broker is older than ListGroups v4, which added states.
    pub state: String,
    pub coordinator: BrokerId,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    pub member_id: String,
    /// A static member's `group.instance.id` (DescribeGroups v4+).
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub host: String,
    /// (topic, partition) from the member's consumer-protocol assignment.
    pub assignment: Vec<(String, i32)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    pub group_id: String,
    /// Kafka's state name; `Dead` for a group the coordinator does not know.
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
    /// The preferred leader already led (ELECTION_NOT_NEEDED): nothing moved.
    pub not_needed: bool,
}

/// How long the brokers may take over a produce, topic creation, deletion or election before
/// answering REQUEST_TIMED_OUT (Kafka's request.timeout.ms default).
const BROKER_TIMEOUT_MS: i32 = 30_000;

const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const LEADER_NOT_AVAILABLE: i16 = 5;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;
const NOT_CONTROLLER: i16 = 41;
const GROUP_ID_NOT_FOUND: i16 = 69;
const FENCED_LEADER_EPOCH: i16 = 74;
const UNKNOWN_LEADER_EPOCH: i16 = 75;
const ELECTION_NOT_NEEDED: i16 = 84;

/// The error for a non-zero Kafka error code in an answer, with the broker's message if any.
fn kafka_error(context: impl Into<String>, code: i16, message: Option<&StrBytes>) -> RemoteError {
    RemoteError::kafka(context, code, message.map(|m| m.as_str()))
}

/// Errors after which the partition's leader is worth looking up again: it moved, the
/// metadata was stale, or its broker went away.
fn is_leader_error(error: &RemoteError) -> bool {
    match error {
        RemoteError::Kafka { code, .. } => matches!(
            *code,
            UNKNOWN_TOPIC_OR_PARTITION
                | LEADER_NOT_AVAILABLE
                | NOT_LEADER_OR_FOLLOWER
                | FENCED_LEADER_EPOCH
                | UNKNOWN_LEADER_EPOCH
        ),
        RemoteError::Connect { .. } | RemoteError::Disconnected { .. } | RemoteError::UnknownBroker(_) => true,
        _ => false,
    }
}

fn is_coordinator_error(error: &RemoteError) -> bool {
    matches!(
        error,
        RemoteError::Kafka { code, .. }
            if matches!(*code, NOT_COORDINATOR | COORDINATOR_NOT_AVAILABLE | COORDINATOR_LOAD_IN_PROGRESS)
    )
}

fn is_not_controller(error: &RemoteError) -> bool {
    matches!(
        error,
        RemoteError::Kafka {
            code: NOT_CONTROLLER,
            ..
        }
    )
}

/// Runs `futures` concurrently on the current task and returns their outputs in order: the
/// requests to different brokers overlap without needing `Send` or `'static` futures.
pub(crate) async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending { Poll::Pending } else { Poll::Ready(()) }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

/// The version `send` will use for `api` at `target`, or the error saying the broker lacks
/// it (naming the API and both version ranges).
async fn version(client: &KafkaClient, target: Target, api: ApiKey) -> Result<i16, RemoteError> {
    client.negotiated_version(target, api).await
}

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

fn group_id(name: &str) -> GroupId {
    GroupId(StrBytes::from_string(name.to_string()))
}

/// Offsets of many partitions, asked of each leader once, concurrently. One result per
/// requested partition, in request order.
pub async fn list_offsets(
    client: &KafkaClient,
    partitions: &[(String, i32)],
    spec: OffsetSpec,
) -> Vec<Result<i64, RemoteError>> {
    list_offsets_isolated(client, partitions, spec, Isolation::ReadUncommitted).await
}

/// Which records a ListOffsets counts: at the latest offset, read_uncommitted answers the
/// high watermark and read_committed the last stable offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    ReadUncommitted,
    ReadCommitted,
}

impl Isolation {
    fn level(self) -> i8 {
        match self {
            Isolation::ReadUncommitted => 0,
            Isolation::ReadCommitted => 1,
        }
    }
}

/// [`list_offsets`] with an isolation level.
pub async fn list_offsets_isolated(
    client: &KafkaClient,
    partitions: &[(String, i32)],
    spec: OffsetSpec,
    isolation: Isolation,
) -> Vec<Result<i64, RemoteError>> {
    let all: Vec<usize> = (0..partitions.len()).collect();
    let mut results = list_offsets_once(client, partitions, &all, spec, isolation).await;
    let retry: Vec<usize> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| r.as_ref().err().is_some_and(is_leader_error))
        .map(|(i, _)| i)
        .collect();
    if !retry.is_empty() && client.refresh_metadata().await.is_ok() {
        let again = list_offsets_once(client, partitions, &retry, spec, isolation).await;
        for (i, result) in retry.into_iter().zip(again) {
            results[i] = result;
        }
    }
    results
}

/// A partition to ask a leader about: (its place in the results, topic, partition).
type Slot<'a> = (usize, &'a str, i32);

/// One ListOffsets per leader for the partitions at `which`; one result per entry of `which`.
async fn list_offsets_once(
    client: &KafkaClient,
    partitions: &[(String, i32)],
    which: &[usize],
    spec: OffsetSpec,
    isolation: Isolation,
) -> Vec<Result<i64, RemoteError>> {
    let mut results: Vec<Option<Result<i64, RemoteError>>> = which.iter().map(|_| None).collect();
    let mut by_leader: Vec<(BrokerId, Vec<Slot<'_>>)> = Vec::new();
    for (slot, &index) in which.iter().enumerate() {
        let Some((topic, partition)) = partitions.get(index) else {
            continue;
        };
        match client.leader_of(topic, *partition).await {
            Ok(leader) => match by_leader.iter_mut().find(|(id, _)| *id == leader) {
                Some((_, list)) => list.push((slot, topic, *partition)),
                None => by_leader.push((leader, vec![(slot, topic, *partition)])),
            },
            Err(error) => results[slot] = Some(Err(error)),
        }
    }
    let answers = join_all(
        by_leader
            .iter()
            .map(|(leader, list)| list_offsets_at(client, *leader, list, spec, isolation))
            .collect(),
    )
    .await;
    for ((_, list), answer) in by_leader.iter().zip(answers) {
        match answer {
            Ok(offsets) => {
                for ((slot, _, _), offset) in list.iter().zip(offsets) {
                    results[*slot] = Some(offset);
                }
            }
            Err(error) => {
                for (slot, _, _) in list {
                    results[*slot] = Some(Err(error.clone()));
                }
            }
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(RemoteError::Other("no answer for the partition".into()))))
        .collect()
}

/// One ListOffsets to `leader`; one result per entry of `list`, in its order.
async fn list_offsets_at(
    client: &KafkaClient,
    leader: BrokerId,
    list: &[Slot<'_>],
    spec: OffsetSpec,
    isolation: Isolation,
) -> Result<Vec<Result<i64, RemoteError>>, RemoteError> {
    let target = Target::Broker(leader);
    version(client, target, ApiKey::ListOffsets).await?;
    let mut topics: Vec<ListOffsetsTopic> = Vec::new();
    for (_, topic, partition) in list {
        let entry = ListOffsetsPartition::default()
            .with_partition_index(*partition)
            .with_timestamp(spec.timestamp());
        match topics.iter_mut().find(|t| t.name.0.as_str() == *topic) {
            Some(t) => t.partitions.push(entry),
            None => topics.push(
                ListOffsetsTopic::default()
                    .with_name(topic_name(topic))
                    .with_partitions(vec![entry]),
            ),
        }
    }
    let request = ListOffsetsRequest::default()
        .with_replica_id(WireBrokerId(-1))
        .with_isolation_level(isolation.level())
        .with_topics(topics);
    let response = client.send(target, request).await?;
    Ok(list
        .iter()
        .map(|(_, topic, partition)| {
            let context = format!("offsets of {topic}/{partition}");
            let answer = response
                .topics
                .iter()
                .filter(|t| t.name.0.as_str() == *topic)
                .flat_map(|t| t.partitions.iter())
                .find(|p| p.partition_index == *partition);
            match answer {
                None => Err(RemoteError::Protocol {
                    broker: leader.to_string(),
                    reason: format!("ListOffsets answer without {topic}/{partition}"),
                }),
                Some(p) if p.error_code != 0 => Err(kafka_error(context, p.error_code, None)),
                Some(p) => Ok(p.offset),
            }
        })
        .collect())
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
    produce_with(client, topic, partition, records, acks, Compression::None).await
}

/// [`produce`] with the batch compressed by `compression`.
pub async fn produce_with(
    client: &KafkaClient,
    topic: &str,
    partition: i32,
    records: Vec<OutRecord>,
    acks: i16,
    compression: Compression,
) -> Result<i64, RemoteError> {
    if records.is_empty() {
        return Err(RemoteError::Other(format!(
            "no records to produce to {topic}/{partition}"
        )));
    }
    if !matches!(acks, -1..=1) {
        return Err(RemoteError::Other(format!("acks must be 0, 1 or -1 (all), not {acks}")));
    }
    let batch = encode_batch_with(&records, compression)?;
    match produce_once(client, topic, partition, &batch, acks).await {
        Err(error) if is_leader_error(&error) => {
            client.refresh_metadata().await?;
            produce_once(client, topic, partition, &batch, acks).await
        }
        other => other,
    }
}

/// `records` as one uncompressed record batch v2 without a producer id. Records without a
/// timestamp get the wall clock's.
pub fn encode_batch(records: &[OutRecord]) -> Result<Bytes, RemoteError> {
    encode_batch_with(records, Compression::None)
}

/// [`encode_batch`] with the records compressed by `compression`.
pub fn encode_batch_with(records: &[OutRecord], compression: Compression) -> Result<Bytes, RemoteError> {
    let now = chrono::Utc::now().timestamp_millis();
    let records: Vec<Record> = records
        .iter()
        .zip(0i64..)
        .map(|(out, offset)| {
            let mut record = Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
                producer_id: NO_PRODUCER_ID,
                producer_epoch: NO_PRODUCER_EPOCH,
                timestamp_type: TimestampType::Creation,
                offset,
                // The encoder starts a new batch whenever offset - sequence changes; advancing
                // both keeps every record in one batch whose base sequence is -1 (none).
                sequence: (offset as i32).wrapping_sub(1),
                timestamp: out.timestamp.unwrap_or(now),
                key: out.key.clone(),
                value: out.value.clone(),
                headers: Default::default(),
            };
            for (key, value) in &out.headers {
                record.headers.insert(StrBytes::from_string(key.clone()), value.clone());
            }
            record
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .map_err(|e| RemoteError::Other(format!("cannot encode the record batch: {e}")))?;
    Ok(buf.freeze())
}

/// One attempt at sending `batch` ([`encode_batch`]) to the partition's leader as the cached
/// metadata names it, without [`produce`]'s retry: a caller that must know whether a batch
/// may have been appended twice retries itself.
pub async fn produce_once(
    client: &KafkaClient,
    topic: &str,
    partition: i32,
    batch: &Bytes,
    acks: i16,
) -> Result<i64, RemoteError> {
    let leader = client.leader_of(topic, partition).await?;
    let target = Target::Broker(leader);
    version(client, target, ApiKey::Produce).await?;
    let request = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(BROKER_TIMEOUT_MS)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(topic_name(topic))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(batch.clone())),
                ]),
        ]);
    if acks == 0 {
        // A broker never answers an acks=0 produce: done once the request is on its way.
        client.send_without_response(target, request).await?;
        return Ok(-1);
    }
    let response = client.send(target, request).await?;
    let answer = response
        .responses
        .iter()
        .filter(|t| t.name.0.as_str() == topic)
        .flat_map(|t| t.partition_responses.iter())
        .find(|p| p.index == partition)
        .ok_or_else(|| RemoteError::Protocol {
            broker: leader.to_string(),
            reason: format!("Produce answer without {topic}/{partition}"),
        })?;
    if answer.error_code != 0 {
        let message = answer.error_message.clone().or_else(|| {
            answer
                .record_errors
                .first()
                .and_then(|e| e.batch_index_error_message.clone())
        });
        return Err(kafka_error(
            format!("producing to {topic}/{partition}"),
            answer.error_code,
            message.as_ref(),
        ));
    }
    Ok(answer.base_offset)
}

/// Returns once `broker` has read every request sent to it so far: a broker handles one
/// connection's requests in order, so the answer to a later one proves it. acks=0 produces get
/// no answer of their own; this keeps them from being lost when the program exits right after.
pub async fn barrier(client: &KafkaClient, broker: BrokerId) -> Result<(), RemoteError> {
    client
        .send(Target::Broker(broker), ApiVersionsRequest::default())
        .await
        .map(|_| ())
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
    fetch_isolated(
        client,
        topic,
        partition,
        offset,
        (max_wait, max_bytes),
        Isolation::ReadUncommitted,
    )
    .await
}

/// [`fetch`] at an isolation level: read_committed reads up to the last stable offset and
/// leaves out the records of aborted transactions. `limits` are the longest wait and the
/// most bytes.
pub async fn fetch_isolated(
    client: &KafkaClient,
    topic: &str,
    partition: i32,
    offset: i64,
    limits: (Duration, i32),
    isolation: Isolation,
) -> Result<FetchedPartition, RemoteError> {
    let result = match fetch_once(client, topic, partition, offset, limits, isolation).await {
        Err(error) if is_leader_error(&error) => {
            client.refresh_metadata().await?;
            fetch_once(client, topic, partition, offset, limits, isolation).await
        }
        other => other,
    };
    match result {
        Err(RemoteError::Kafka {
            code: OFFSET_OUT_OF_RANGE,
            context,
            name,
            ..
        }) => {
            // The fetch answer carries no offsets with this error: say what the valid range is.
            let wanted = [(topic.to_string(), partition)];
            let start = list_offsets(client, &wanted, OffsetSpec::Earliest).await.pop();
            let end = list_offsets(client, &wanted, OffsetSpec::Latest).await.pop();
            let message = match (start, end) {
                (Some(Ok(start)), Some(Ok(end))) => {
                    format!("offset {offset} is not in the log (log start {start}, end {end})")
                }
                _ => format!("offset {offset} is not in the log"),
            };
            Err(RemoteError::Kafka {
                context,
                code: OFFSET_OUT_OF_RANGE,
                name,
                message: Some(message),
            })
        }
        other => other,
    }
}

async fn fetch_once(
    client: &KafkaClient,
    topic: &str,
    partition: i32,
    offset: i64,
    (max_wait, max_bytes): (Duration, i32),
    isolation: Isolation,
) -> Result<FetchedPartition, RemoteError> {
    let leader = client.leader_of(topic, partition).await?;
    let target = Target::Broker(leader);
    version(client, target, ApiKey::Fetch).await?;
    let max_bytes = max_bytes.max(1);
    let request = FetchRequest::default()
        .with_replica_id(WireBrokerId(-1))
        .with_max_wait_ms(i32::try_from(max_wait.as_millis()).unwrap_or(i32::MAX))
        .with_min_bytes(1)
        .with_max_bytes(max_bytes)
        .with_isolation_level(isolation.level())
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(max_bytes),
                ]),
        ]);
    let response = client.send(target, request).await?;
    let context = format!("fetching {topic}/{partition} at offset {offset}");
    if response.error_code != 0 {
        return Err(kafka_error(context, response.error_code, None));
    }
    let answer = response
        .responses
        .into_iter()
        .filter(|t| t.topic.0.as_str() == topic)
        .flat_map(|t| t.partitions)
        .find(|p| p.partition_index == partition)
        .ok_or_else(|| RemoteError::Protocol {
            broker: leader.to_string(),
            reason: format!("Fetch answer without {topic}/{partition}"),
        })?;
    if answer.error_code != 0 {
        return Err(kafka_error(context, answer.error_code, None));
    }
    // read_committed: the aborted transactions among the records, (producer, first offset).
    let aborted: Option<Vec<(i64, i64)>> = (isolation == Isolation::ReadCommitted).then(|| {
        answer
            .aborted_transactions
            .iter()
            .flatten()
            .map(|t| (t.producer_id.0, t.first_offset))
            .collect()
    });
    let decoded = decode_records(partition, offset, answer.records.unwrap_or_default(), aborted).map_err(|reason| {
        RemoteError::Protocol {
            broker: leader.to_string(),
            reason: format!("{topic}/{partition}: {reason}"),
        }
    })?;
    Ok(FetchedPartition {
        high_watermark: answer.high_watermark,
        last_stable_offset: if answer.last_stable_offset >= 0 {
            answer.last_stable_offset
        } else {
            answer.high_watermark
        },
        log_start_offset: answer.log_start_offset,
        records: decoded.records,
        markers: decoded.markers,
        next_offset: decoded.next_offset,
        leader_epochs: decoded.leader_epochs,
    })
}

/// Byte offsets inside a record batch v2 header.
const BATCH_LENGTH_AT: usize = 8;
const LEADER_EPOCH_AT: usize = 12;
const MAGIC_AT: usize = 16;
const ATTRIBUTES_AT: usize = 21;
const LAST_OFFSET_DELTA_AT: usize = 23;
const BATCH_HEADER_LEN: usize = 61;
const CONTROL_BATCH: i16 = 1 << 5;

/// What [`decode_records`] read.
struct Decoded {
    records: Vec<TailRecord>,
    markers: Vec<TxnMarker>,
    /// Where the next fetch starts.
    next_offset: i64,
    /// Each whole batch's `(base offset, leader epoch)`.
    leader_epochs: Vec<(i64, i32)>,
}

/// The records and transaction markers at or after `offset` in fetched batches, the offset
/// after the last whole batch (`offset` when there is none), and the leader epoch of each
/// whole batch. A batch cut at the end of the answer (the fetch size ran out) is left for the
/// next fetch, as every Kafka client does. With `aborted` (read_committed: the answer's
/// aborted transactions as (producer, first offset)), a producer's transactional records
/// from the first offset of one of its aborted transactions to its ABORT marker are left
/// out, as Kafka's consumer does, and the others are committed.
fn decode_records(
    partition: i32,
    offset: i64,
    mut data: Bytes,
    aborted: Option<Vec<(i64, i64)>>,
) -> Result<Decoded, String> {
    let read_committed = aborted.is_some();
    let mut pending = aborted.unwrap_or_default();
    pending.sort_by_key(|(_, first)| std::cmp::Reverse(*first));
    let mut aborting: std::collections::HashSet<i64> = std::collections::HashSet::new();
    let mut records = Vec::new();
    let mut markers = Vec::new();
    let mut leader_epochs = Vec::new();
    let mut next_offset = offset;
    while data.len() >= BATCH_HEADER_LEN {
        let read = |at: usize, len: usize| data.get(at..at + len).unwrap_or_default();
        let base_offset = i64::from_be_bytes(read(0, 8).try_into().unwrap_or_default());
        let length = i32::from_be_bytes(read(BATCH_LENGTH_AT, 4).try_into().unwrap_or_default());
        let Ok(length) = usize::try_from(length) else {
            return Err(format!("a record batch at offset {base_offset} has a negative length"));
        };
        let total = BATCH_LENGTH_AT + 4 + length;
        if data.len() < total {
            break;
        }
        let magic = read(MAGIC_AT, 1).first().copied().unwrap_or_default();
        if magic != 2 {
            return Err(format!(
                "the batch at offset {base_offset} is in message format v{magic}; kdeck reads v2 only"
            ));
        }
        let attributes = i16::from_be_bytes(read(ATTRIBUTES_AT, 2).try_into().unwrap_or_default());
        let last_delta = i32::from_be_bytes(read(LAST_OFFSET_DELTA_AT, 4).try_into().unwrap_or_default());
        let leader_epoch = i32::from_be_bytes(read(LEADER_EPOCH_AT, 4).try_into().unwrap_or_default());
        let mut batch = data.split_to(total);
        // The broker's batch is decompressed streaming and refused past
        // MAX_DECOMPRESSED_BATCH_BYTES (the vendored decoder), so a hostile or broken broker
        // cannot make the console unpack a bomb.
        let set = RecordBatchDecoder::decode(&mut batch).map_err(|e| {
            let what = if attributes & CONTROL_BATCH == 0 {
                "record batch"
            } else {
                "control batch"
            };
            format!("a {what} at offset {base_offset} cannot be read: {e:#}")
        })?;
        for r in set.records {
            while pending.last().is_some_and(|(_, first)| *first <= r.offset) {
                if let Some((producer, _)) = pending.pop() {
                    aborting.insert(producer);
                }
            }
            if r.control {
                let marker = r
                    .key
                    .as_deref()
                    .and_then(|key| TxnMarker::from_control_key(partition, r.producer_id, r.offset, key));
                if let Some(marker) = marker {
                    if !marker.committed {
                        aborting.remove(&r.producer_id);
                    }
                    if r.offset >= offset {
                        markers.push(marker);
                    }
                }
                continue;
            }
            let dropped = r.transactional && aborting.contains(&r.producer_id);
            if r.offset < offset || dropped {
                continue;
            }
            records.push(TailRecord {
                partition,
                offset: r.offset,
                timestamp: r.timestamp,
                key: r.key,
                value: r.value,
                headers: r
                    .headers
                    .into_iter()
                    .map(|(k, v)| (k.as_str().to_string(), v))
                    .collect(),
                producer_id: r.producer_id,
                txn: r.transactional.then_some(if read_committed {
                    TxnMark::Committed
                } else {
                    TxnMark::Open
                }),
            });
        }
        leader_epochs.push((base_offset, leader_epoch));
        next_offset = next_offset.max(base_offset.saturating_add(i64::from(last_delta)).saturating_add(1));
    }
    settle_read(&mut records, &markers);
    Ok(Decoded {
        records,
        markers,
        next_offset,
        leader_epochs,
    })
}

/// Every group of every broker.
pub async fn list_groups(client: &KafkaClient) -> Result<Vec<GroupListing>, RemoteError> {
    let metadata = client.metadata().await?;
    let answers = join_all(
        metadata
            .brokers
            .iter()
            .map(|broker| list_groups_at(client, broker.id))
            .collect(),
    )
    .await;
    let mut groups = Vec::new();
    for answer in answers {
        groups.extend(answer?);
    }
    groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    Ok(groups)
}

async fn list_groups_at(client: &KafkaClient, broker: BrokerId) -> Result<Vec<GroupListing>, RemoteError> {
    let target = Target::Broker(broker);
    version(client, target, ApiKey::ListGroups).await?;
    // No states filter: every group, in every state (v4+ then reports each one's state).
    let response = client.send(target, ListGroupsRequest::default()).await?;
    if response.error_code != 0 {
        return Err(kafka_error(
            format!("listing groups of broker {broker}"),
            response.error_code,
            None,
        ));
    }
    Ok(response
        .groups
        .into_iter()
        .map(|g| GroupListing {
            group_id: g.group_id.0.as_str().to_string(),
            protocol_type: g.protocol_type.as_str().to_string(),
            state: g.group_state.as_str().to_string(),
            coordinator: broker,
        })
        .collect())
}

/// Asks each group's coordinator.
pub async fn describe_groups(client: &KafkaClient, groups: &[String]) -> Result<Vec<GroupDescription>, RemoteError> {
    let mut by_coordinator: Vec<(BrokerId, Vec<&str>)> = Vec::new();
    for group in groups {
        let coordinator = client.coordinator(group).await?;
        match by_coordinator.iter_mut().find(|(id, _)| *id == coordinator) {
            Some((_, list)) => list.push(group),
            None => by_coordinator.push((coordinator, vec![group])),
        }
    }
    let answers = join_all(
        by_coordinator
            .iter()
            .map(|(coordinator, list)| describe_groups_at(client, *coordinator, list))
            .collect(),
    )
    .await;
    let mut described = Vec::new();
    for ((_, list), answer) in by_coordinator.iter().zip(answers) {
        match answer {
            Err(error) if is_coordinator_error(&error) => {
                // The group moved: find each one's coordinator again, once.
                for group in list {
                    client.forget_coordinator(group);
                    let coordinator = client.coordinator(group).await?;
                    described.extend(describe_groups_at(client, coordinator, &[group]).await?);
                }
            }
            other => described.extend(other?),
        }
    }
    // In the order asked.
    described.sort_by_key(|d| groups.iter().position(|g| *g == d.group_id));
    Ok(described)
}

async fn describe_groups_at(
    client: &KafkaClient,
    coordinator: BrokerId,
    groups: &[&str],
) -> Result<Vec<GroupDescription>, RemoteError> {
    let target = Target::Broker(coordinator);
    version(client, target, ApiKey::DescribeGroups).await?;
    let request = DescribeGroupsRequest::default().with_groups(groups.iter().map(|g| group_id(g)).collect());
    let response = client.send(target, request).await?;
    let mut described = Vec::new();
    for group in response.groups {
        let id = group.group_id.0.as_str().to_string();
        if group.error_code == GROUP_ID_NOT_FOUND {
            // Older versions answer an unknown group with state Dead; v6 says GROUP_ID_NOT_FOUND.
            described.push(GroupDescription {
                group_id: id,
                state: "Dead".into(),
                protocol_type: String::new(),
                protocol: String::new(),
                coordinator,
                members: Vec::new(),
            });
            continue;
        }
        if group.error_code != 0 {
            return Err(kafka_error(
                format!("describing group {id}"),
                group.error_code,
                group.error_message.as_ref(),
            ));
        }
        let consumer = group.protocol_type.as_str() == "consumer";
        described.push(GroupDescription {
            group_id: id,
            state: group.group_state.as_str().to_string(),
            protocol_type: group.protocol_type.as_str().to_string(),
            protocol: group.protocol_data.as_str().to_string(),
            coordinator,
            members: group
                .members
                .into_iter()
                .map(|m| GroupMember {
                    member_id: m.member_id.as_str().to_string(),
                    group_instance_id: m.group_instance_id.as_ref().map(|i| i.to_string()),
                    client_id: m.client_id.as_str().to_string(),
                    host: m.client_host.as_str().to_string(),
                    assignment: if consumer {
                        decode_assignment(m.member_assignment)
                    } else {
                        Vec::new()
                    },
                })
                .collect(),
        });
    }
    Ok(described)
}

/// A consumer-protocol assignment (version-prefixed); unreadable bytes, which another client
/// may well send, give no partitions rather than an error about the whole group.
pub fn decode_assignment(mut bytes: Bytes) -> Vec<(String, i32)> {
    if bytes.len() < 2 {
        return Vec::new();
    }
    let version_bytes = bytes.split_to(2);
    let version = i16::from_be_bytes([version_bytes[0], version_bytes[1]]);
    // Later versions only add fields at the end: read them as the newest one the crate knows.
    let version = version.clamp(0, 3);
    match ConsumerProtocolAssignment::decode(&mut bytes, version) {
        Ok(assignment) => assignment
            .assigned_partitions
            .into_iter()
            .flat_map(|t| {
                let topic = t.topic.0.as_str().to_string();
                t.partitions.into_iter().map(move |p| (topic.clone(), p))
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Commits `offsets` (topic, partition, offset) for `group` as a consumer outside the group's
/// membership would (generation -1, no member id: Kafka's `assign()` consumers), at the
/// group's coordinator; once more at a new coordinator when the first one moved.
pub async fn commit_offsets(
    client: &KafkaClient,
    group: &str,
    offsets: &[(String, i32, i64)],
) -> Result<(), RemoteError> {
    match commit_offsets_once(client, group, offsets).await {
        Err(error) if is_coordinator_error(&error) => {
            client.forget_coordinator(group);
            commit_offsets_once(client, group, offsets).await
        }
        other => other,
    }
}

async fn commit_offsets_once(
    client: &KafkaClient,
    group: &str,
    offsets: &[(String, i32, i64)],
) -> Result<(), RemoteError> {
    let coordinator = client.coordinator(group).await?;
    let target = Target::Broker(coordinator);
    version(client, target, ApiKey::OffsetCommit).await?;
    let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
    for (topic, partition, offset) in offsets {
        let entry = OffsetCommitRequestPartition::default()
            .with_partition_index(*partition)
            .with_committed_offset(*offset);
        match topics.iter_mut().find(|t| t.name.0.as_str() == topic) {
            Some(t) => t.partitions.push(entry),
            None => topics.push(
                OffsetCommitRequestTopic::default()
                    .with_name(topic_name(topic))
                    .with_partitions(vec![entry]),
            ),
        }
    }
    let request = OffsetCommitRequest::default()
        .with_group_id(group_id(group))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(StrBytes::from_static_str(""))
        .with_topics(topics);
    let response = client.send(target, request).await?;
    for (topic, partition, _) in offsets {
        let answer = response
            .topics
            .iter()
            .filter(|t| t.name.0.as_str() == topic)
            .flat_map(|t| t.partitions.iter())
            .find(|p| p.partition_index == *partition)
            .ok_or_else(|| RemoteError::Protocol {
                broker: coordinator.to_string(),
                reason: format!("OffsetCommit answer without {topic}/{partition}"),
            })?;
        if answer.error_code != 0 {
            return Err(kafka_error(
                format!("committing group {group}'s offset of {topic}/{partition}"),
                answer.error_code,
                None,
            ));
        }
    }
    Ok(())
}

/// Every committed offset of `group`.
pub async fn committed_offsets(client: &KafkaClient, group: &str) -> Result<Vec<CommittedOffset>, RemoteError> {
    match committed_offsets_once(client, group).await {
        Err(error) if is_coordinator_error(&error) => {
            client.forget_coordinator(group);
            committed_offsets_once(client, group).await
        }
        other => other,
    }
}

async fn committed_offsets_once(client: &KafkaClient, group: &str) -> Result<Vec<CommittedOffset>, RemoteError> {
    let coordinator = client.coordinator(group).await?;
    let target = Target::Broker(coordinator);
    let version = version(client, target, ApiKey::OffsetFetch).await?;
    let context = format!("committed offsets of group {group}");
    let request = if version >= 8 {
        OffsetFetchRequest::default().with_groups(vec![
            OffsetFetchRequestGroup::default()
                .with_group_id(group_id(group))
                .with_topics(None),
        ])
    } else if version >= 2 {
        // Null topics: every partition the group committed (v2+).
        OffsetFetchRequest::default()
            .with_group_id(group_id(group))
            .with_topics(None)
    } else {
        // v1 cannot ask for "all": ask for every partition the cluster has.
        let metadata = client.metadata().await?;
        OffsetFetchRequest::default()
            .with_group_id(group_id(group))
            .with_topics(Some(
                metadata
                    .topics
                    .iter()
                    .map(|t| {
                        OffsetFetchRequestTopic::default()
                            .with_name(topic_name(&t.name))
                            .with_partition_indexes(t.partitions.iter().map(|p| p.partition).collect())
                    })
                    .collect(),
            ))
    };
    let response = client.send(target, request).await?;
    let mut offsets = Vec::new();
    let mut push = |topic: &str, partition: i32, offset: i64, error: i16| {
        if error != 0 {
            return Err(kafka_error(format!("{context}, {topic}/{partition}"), error, None));
        }
        // -1: nothing committed for this partition.
        if offset >= 0 {
            offsets.push(CommittedOffset {
                topic: topic.to_string(),
                partition,
                offset,
            });
        }
        Ok(())
    };
    if version >= 8 {
        let answer = response
            .groups
            .iter()
            .find(|g| g.group_id.0.as_str() == group)
            .ok_or_else(|| RemoteError::Protocol {
                broker: coordinator.to_string(),
                reason: format!("OffsetFetch answer without group {group}"),
            })?;
        if answer.error_code != 0 {
            return Err(kafka_error(context, answer.error_code, None));
        }
        for topic in &answer.topics {
            for p in &topic.partitions {
                push(
                    topic.name.0.as_str(),
                    p.partition_index,
                    p.committed_offset,
                    p.error_code,
                )?;
            }
        }
    } else {
        if response.error_code != 0 {
            return Err(kafka_error(context, response.error_code, None));
        }
        for topic in &response.topics {
            for p in &topic.partitions {
                push(
                    topic.name.0.as_str(),
                    p.partition_index,
                    p.committed_offset,
                    p.error_code,
                )?;
            }
        }
    }
    offsets.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    Ok(offsets)
}

/// One partition of an offset reset: where the group was, where it goes, and where the log
/// ends (the lag after the reset is `log_end - new`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetPlan {
    pub topic: String,
    pub partition: i32,
    /// The committed offset before the reset, if any.
    pub old: Option<i64>,
    pub new: i64,
    pub log_end: i64,
}

/// Plans a reset of `group`'s offsets of `partitions` as kafka-consumer-groups.sh does
/// ([`reset::new_offset`]): looks up each partition's log start and end, the group's committed
/// offsets, and for a time the first offset at or after it (`now_ms` is the time a duration
/// counts back from). Nothing is changed: commit the plan with [`commit_offsets`].
pub async fn plan_offset_reset(
    client: &KafkaClient,
    group: &str,
    partitions: &[(String, i32)],
    spec: ResetSpec,
    now_ms: i64,
) -> Result<Vec<ResetPlan>, RemoteError> {
    let starts = list_offsets(client, partitions, OffsetSpec::Earliest).await;
    let ends = list_offsets(client, partitions, OffsetSpec::Latest).await;
    let at_time = match spec.timestamp(now_ms) {
        Some(ms) => list_offsets(client, partitions, OffsetSpec::Timestamp(ms))
            .await
            .into_iter()
            .map(|r| r.map(|offset| (offset >= 0).then_some(offset)))
            .collect(),
        None => partitions.iter().map(|_| Ok(None)).collect::<Vec<_>>(),
    };
    let committed = committed_offsets(client, group).await?;
    let mut plan = Vec::with_capacity(partitions.len());
    for ((((topic, partition), start), end), at_time) in partitions.iter().zip(starts).zip(ends).zip(at_time) {
        let offsets = reset::PartitionOffsets {
            log_start: start?,
            log_end: end?,
            committed: committed
                .iter()
                .find(|c| c.topic == *topic && c.partition == *partition)
                .map(|c| c.offset),
            at_time: at_time?,
        };
        let new = reset::new_offset(spec, &offsets)
            .map_err(|reason| RemoteError::Other(format!("{topic}/{partition}: {reason}")))?;
        plan.push(ResetPlan {
            topic: topic.clone(),
            partition: *partition,
            old: offsets.committed,
            new,
            log_end: offsets.log_end,
        });
    }
    Ok(plan)
}

/// DeleteGroups for one group at its coordinator (once more at a new coordinator when the
/// first one moved): GROUP_ID_NOT_FOUND when it does not exist, NON_EMPTY_GROUP while it has
/// members.
pub async fn delete_group(client: &KafkaClient, group: &str) -> Result<(), RemoteError> {
    match delete_group_once(client, group).await {
        Err(error) if is_coordinator_error(&error) => {
            client.forget_coordinator(group);
            delete_group_once(client, group).await
        }
        other => other,
    }
}

async fn delete_group_once(client: &KafkaClient, group: &str) -> Result<(), RemoteError> {
    let coordinator = client.coordinator(group).await?;
    let target = Target::Broker(coordinator);
    version(client, target, ApiKey::DeleteGroups).await?;
    let request = DeleteGroupsRequest::default().with_groups_names(vec![group_id(group)]);
    let response = client.send(target, request).await?;
    let result = response
        .results
        .iter()
        .find(|r| r.group_id.0.as_str() == group)
        .ok_or_else(|| RemoteError::Protocol {
            broker: coordinator.to_string(),
            reason: format!("DeleteGroups answer without group {group}"),
        })?;
    if result.error_code != 0 {
        return Err(kafka_error(format!("deleting group {group}"), result.error_code, None));
    }
    Ok(())
}

/// One partition's outcome of an OffsetDelete: `None` when its offset was deleted.
pub type OffsetDeletion = (String, i32, Option<RemoteError>);

/// OffsetDelete at the group's coordinator: each partition's outcome, in the order asked
/// (GROUP_SUBSCRIBED_TO_TOPIC for topics the group's members consume), or the error about the
/// whole group (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP...).
pub async fn delete_offsets(
    client: &KafkaClient,
    group: &str,
    partitions: &[(String, i32)],
) -> Result<Vec<OffsetDeletion>, RemoteError> {
    match delete_offsets_once(client, group, partitions).await {
        Err(error) if is_coordinator_error(&error) => {
            client.forget_coordinator(group);
            delete_offsets_once(client, group, partitions).await
        }
        other => other,
    }
}

async fn delete_offsets_once(
    client: &KafkaClient,
    group: &str,
    partitions: &[(String, i32)],
) -> Result<Vec<OffsetDeletion>, RemoteError> {
    let coordinator = client.coordinator(group).await?;
    let target = Target::Broker(coordinator);
    version(client, target, ApiKey::OffsetDelete).await?;
    let mut topics: Vec<OffsetDeleteRequestTopic> = Vec::new();
    for (topic, partition) in partitions {
        let entry = OffsetDeleteRequestPartition::default().with_partition_index(*partition);
        match topics.iter_mut().find(|t| t.name.0.as_str() == topic) {
            Some(t) => t.partitions.push(entry),
            None => topics.push(
                OffsetDeleteRequestTopic::default()
                    .with_name(topic_name(topic))
                    .with_partitions(vec![entry]),
            ),
        }
    }
    let request = OffsetDeleteRequest::default()
        .with_group_id(group_id(group))
        .with_topics(topics);
    let response = client.send(target, request).await?;
    if response.error_code != 0 {
        return Err(kafka_error(
            format!("deleting offsets of group {group}"),
            response.error_code,
            None,
        ));
    }
    partitions
        .iter()
        .map(|(topic, partition)| {
            let answer = response
                .topics
                .iter()
                .filter(|t| t.name.0.as_str() == topic)
                .flat_map(|t| t.partitions.iter())
                .find(|p| p.partition_index == *partition)
                .ok_or_else(|| RemoteError::Protocol {
                    broker: coordinator.to_string(),
                    reason: format!("OffsetDelete answer without {topic}/{partition}"),
                })?;
            let error = (answer.error_code != 0).then(|| {
                kafka_error(
                    format!("deleting group {group}'s offset of {topic}/{partition}"),
                    answer.error_code,
                    None,
                )
            });
            Ok((topic.clone(), *partition, error))
        })
        .collect()
}

/// Creates a topic at the controller; `partitions` / `replication_factor` -1 take the brokers'
/// defaults (num.partitions, default.replication.factor).
pub async fn create_topic(
    client: &KafkaClient,
    name: &str,
    partitions: i32,
    replication_factor: i16,
    configs: &[(String, String)],
) -> Result<(), RemoteError> {
    let attempt = || async {
        version(client, Target::Controller, ApiKey::CreateTopics).await?;
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(BROKER_TIMEOUT_MS)
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(topic_name(name))
                    .with_num_partitions(partitions)
                    .with_replication_factor(replication_factor)
                    .with_configs(
                        configs
                            .iter()
                            .map(|(k, v)| {
                                CreatableTopicConfig::default()
                                    .with_name(StrBytes::from_string(k.clone()))
                                    .with_value(Some(StrBytes::from_string(v.clone())))
                            })
                            .collect(),
                    ),
            ]);
        let response = client.send(Target::Controller, request).await?;
        let result = response
            .topics
            .iter()
            .find(|t| t.name.0.as_str() == name)
            .ok_or_else(|| RemoteError::Protocol {
                broker: "controller".into(),
                reason: format!("CreateTopics answer without {name}"),
            })?;
        if result.error_code != 0 {
            return Err(kafka_error(
                format!("creating topic {name}"),
                result.error_code,
                result.error_message.as_ref(),
            ));
        }
        Ok(())
    };
    retry_at_new_controller(client, attempt).await
}

/// Runs `attempt`, and once more after reading the metadata again when the broker it reached
/// is no longer the controller.
async fn retry_at_new_controller<T, F, Fut>(client: &KafkaClient, attempt: F) -> Result<T, RemoteError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, RemoteError>>,
{
    match attempt().await {
        Err(error) if is_not_controller(&error) || (is_leader_error(&error) && !is_kafka(&error)) => {
            client.refresh_metadata().await?;
            attempt().await
        }
        other => other,
    }
}

fn is_kafka(error: &RemoteError) -> bool {
    matches!(error, RemoteError::Kafka { .. })
}

pub async fn delete_topic(client: &KafkaClient, name: &str) -> Result<(), RemoteError> {
    let attempt = || async {
        let version = version(client, Target::Controller, ApiKey::DeleteTopics).await?;
        let request = if version >= 6 {
            DeleteTopicsRequest::default()
                .with_topics(vec![DeleteTopicState::default().with_name(Some(topic_name(name)))])
        } else {
            DeleteTopicsRequest::default().with_topic_names(vec![topic_name(name)])
        }
        .with_timeout_ms(BROKER_TIMEOUT_MS);
        let response = client.send(Target::Controller, request).await?;
        let result = response
            .responses
            .iter()
            .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == name))
            .ok_or_else(|| RemoteError::Protocol {
                broker: "controller".into(),
                reason: format!("DeleteTopics answer without {name}"),
            })?;
        if result.error_code != 0 {
            return Err(kafka_error(
                format!("deleting topic {name}"),
                result.error_code,
                result.error_message.as_ref(),
            ));
        }
        Ok(())
    };
    retry_at_new_controller(client, attempt).await
}

/// Preferred-leader election (ElectLeaders, type 0) for one partition, one topic's
/// partitions, or every partition.
pub async fn elect_preferred(
    client: &KafkaClient,
    topic: Option<&str>,
    partition: Option<i32>,
) -> Result<Vec<ElectionResult>, RemoteError> {
    let topic_partitions = match topic {
        None => None,
        Some(topic) => {
            let partitions = match partition {
                Some(p) => vec![p],
                None => {
                    let metadata = client.metadata().await?;
                    let known = metadata.topic(topic).filter(|t| t.error == 0).ok_or_else(|| {
                        kafka_error(format!("electing leaders of {topic}"), UNKNOWN_TOPIC_OR_PARTITION, None)
                    })?;
                    known.partitions.iter().map(|p| p.partition).collect()
                }
            };
            Some(vec![
                TopicPartitions::default()
                    .with_topic(topic_name(topic))
                    .with_partitions(partitions),
            ])
        }
    };
    let attempt = || async {
        version(client, Target::Controller, ApiKey::ElectLeaders).await?;
        // election_type 0 is PREFERRED, the only kind v0 knows (and its default).
        let request = ElectLeadersRequest::default()
            .with_election_type(0)
            .with_topic_partitions(topic_partitions.clone())
            .with_timeout_ms(BROKER_TIMEOUT_MS);
        let response = client.send(Target::Controller, request).await?;
        if response.error_code != 0 {
            return Err(kafka_error("electing preferred leaders", response.error_code, None));
        }
        let mut results: Vec<ElectionResult> = response
            .replica_election_results
            .iter()
            .flat_map(|t| {
                let topic = t.topic.0.as_str().to_string();
                t.partition_result.iter().map(move |p| ElectionResult {
                    topic: topic.clone(),
                    partition: p.partition_id,
                    not_needed: p.error_code == ELECTION_NOT_NEEDED,
                    error: match p.error_code {
                        0 | ELECTION_NOT_NEEDED => None,
                        code => Some(
                            p.error_message
                                .as_ref()
                                .map(|m| m.as_str())
                                .filter(|m| !m.is_empty())
                                .map(|m| format!("{}: {m}", error_name(code)))
                                .unwrap_or_else(|| error_name(code)),
                        ),
                    },
                })
            })
            .collect();
        results.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        Ok(results)
    };
    retry_at_new_controller(client, attempt).await
}

/// One replica in a broker's log directories, as DescribeLogDirs tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaSize {
    pub topic: String,
    pub partition: i32,
    /// Bytes of the replica's segment files.
    pub size_bytes: u64,
    /// A future replica (being moved between a broker's log dirs) is not counted twice.
    pub future: bool,
}

/// DescribeLogDirs at `broker` for every replica it hosts: each replica once per log dir
/// that holds it (a future replica marked). A log dir answering an error (KAFKA_STORAGE_ERROR)
/// is left out; the whole answer's error is an error.
pub async fn describe_log_dirs(client: &KafkaClient, broker: BrokerId) -> Result<Vec<ReplicaSize>, RemoteError> {
    let target = Target::Broker(broker);
    version(client, target, ApiKey::DescribeLogDirs).await?;
    // topics null: every replica on the broker.
    let response = client
        .send(target, DescribeLogDirsRequest::default().with_topics(None))
        .await?;
    if response.error_code != 0 {
        return Err(kafka_error(
            format!("log dirs of broker {broker}"),
            response.error_code,
            None,
        ));
    }
    Ok(response
        .results
        .iter()
        .filter(|dir| dir.error_code == 0)
        .flat_map(|dir| {
            dir.topics.iter().flat_map(|t| {
                t.partitions.iter().map(|p| ReplicaSize {
                    topic: t.name.0.as_str().to_string(),
                    partition: p.partition_index,
                    size_bytes: u64::try_from(p.partition_size).unwrap_or(0),
                    future: p.is_future_key,
                })
            })
        })
        .collect())
}

/// DeleteRecords at the partition's leader: moves its log start offset up to `offset` (-1:
/// the high watermark). The new low watermark.
pub async fn delete_records(
    client: &KafkaClient,
    topic: &str,
    partition: i32,
    offset: i64,
) -> Result<i64, RemoteError> {
    let attempt = || async {
        let leader = client.leader_of(topic, partition).await?;
        let target = Target::Broker(leader);
        version(client, target, ApiKey::DeleteRecords).await?;
        let request = DeleteRecordsRequest::default()
            .with_timeout_ms(BROKER_TIMEOUT_MS)
            .with_topics(vec![
                DeleteRecordsTopic::default()
                    .with_name(topic_name(topic))
                    .with_partitions(vec![
                        DeleteRecordsPartition::default()
                            .with_partition_index(partition)
                            .with_offset(offset),
                    ]),
            ]);
        let response = client.send(target, request).await?;
        let answer = response
            .topics
            .iter()
            .filter(|t| t.name.0.as_str() == topic)
            .flat_map(|t| t.partitions.iter())
            .find(|p| p.partition_index == partition)
            .ok_or_else(|| RemoteError::Protocol {
                broker: leader.to_string(),
                reason: format!("DeleteRecords answer without {topic}/{partition}"),
            })?;
        if answer.error_code != 0 {
            return Err(kafka_error(
                format!("deleting records of {topic}/{partition}"),
                answer.error_code,
                None,
            ));
        }
        Ok(answer.low_watermark)
    };
    match attempt().await {
        Err(error) if is_leader_error(&error) => {
            client.refresh_metadata().await?;
            attempt().await
        }
        other => other,
    }
}

/// CreatePartitions at the controller: `topic` grows to `total` partitions, the new ones
/// placed by the controller (no assignment given).
pub async fn create_partitions(client: &KafkaClient, topic: &str, total: i32) -> Result<(), RemoteError> {
    let attempt = || async {
        version(client, Target::Controller, ApiKey::CreatePartitions).await?;
        let request = CreatePartitionsRequest::default()
            .with_timeout_ms(BROKER_TIMEOUT_MS)
            .with_validate_only(false)
            .with_topics(vec![
                CreatePartitionsTopic::default()
                    .with_name(topic_name(topic))
                    .with_count(total)
                    .with_assignments(None),
            ]);
        let response = client.send(Target::Controller, request).await?;
        let result = response
            .results
            .iter()
            .find(|t| t.name.0.as_str() == topic)
            .ok_or_else(|| RemoteError::Protocol {
                broker: "controller".into(),
                reason: format!("CreatePartitions answer without {topic}"),
            })?;
        if result.error_code != 0 {
            return Err(kafka_error(
                format!("adding partitions to {topic}"),
                result.error_code,
                result.error_message.as_ref(),
            ));
        }
        Ok(())
    };
    retry_at_new_controller(client, attempt).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(records: &[OutRecord], base_offset: i64) -> Bytes {
        let mut bytes = BytesMut::from(&encode_batch(records).expect("encodes")[..]);
        bytes[..8].copy_from_slice(&base_offset.to_be_bytes());
        // The CRC covers attributes onwards only, so patching the base offset keeps it valid.
        bytes.freeze()
    }

    fn value(text: &str) -> OutRecord {
        OutRecord {
            value: Some(Bytes::from(text.to_string())),
            ..OutRecord::default()
        }
    }

    /// What [`decode`] gives: records, next offset, leader epochs.
    type Read = (Vec<TailRecord>, i64, Vec<(i64, i32)>);

    /// [`decode_records`] as read_uncommitted.
    fn decode(partition: i32, offset: i64, data: Bytes) -> Result<Read, String> {
        decode_records(partition, offset, data, None).map(|d| (d.records, d.next_offset, d.leader_epochs))
    }

    #[test]
    fn produced_batches_hold_every_record_with_keys_and_headers() {
        let records = vec![
            OutRecord {
                key: Some(Bytes::from_static(b"k")),
                value: Some(Bytes::from("你好 🌍")),
                headers: vec![("h".into(), Some(Bytes::from_static(b"v")))],
                timestamp: Some(1_700_000_000_000),
            },
            value(""),
            value("third"),
        ];
        let bytes = encode_batch(&records).expect("encodes");
        let infos = RecordBatchDecoder::decode_batch_info(&mut bytes.clone()).expect("batch header");
        assert_eq!(infos.len(), 1, "one batch, not one per record");
        assert_eq!(infos[0].producer_id, -1);
        assert_eq!(infos[0].base_sequence, -1);
        let (decoded, next, _) = decode(4, 0, bytes).expect("decodes");
        assert_eq!(next, 3);
        assert_eq!(decoded.len(), 3);
        assert_eq!(decoded[0].partition, 4);
        assert_eq!(decoded[0].key.as_deref(), Some(&b"k"[..]));
        assert_eq!(decoded[0].value.as_deref(), Some("你好 🌍".as_bytes()));
        assert_eq!(
            decoded[0].headers,
            vec![("h".to_string(), Some(Bytes::from_static(b"v")))]
        );
        assert_eq!(decoded[0].timestamp, 1_700_000_000_000);
        assert_eq!(decoded[1].value.as_deref(), Some(&b""[..]));
        assert_eq!(decoded.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![0, 1, 2]);
    }

    #[test]
    fn compressed_batches_say_their_codec_and_decode_to_the_same_records() {
        let records: Vec<OutRecord> = (0..50)
            .map(|i| value(&format!("record {i} {}", "x".repeat(i))))
            .collect();
        for (compression, id) in [
            (Compression::Gzip, 1),
            (Compression::Snappy, 2),
            (Compression::Lz4, 3),
            (Compression::Zstd, 4),
        ] {
            let bytes = encode_batch_with(&records, compression).expect("encodes");
            let attributes = i16::from_be_bytes([bytes[ATTRIBUTES_AT], bytes[ATTRIBUTES_AT + 1]]);
            assert_eq!(attributes & 0x07, id, "{compression:?} in the batch header");
            let (decoded, next, _) = decode(0, 0, bytes).expect("decodes");
            assert_eq!(next, 50);
            let values: Vec<_> = decoded.iter().map(|r| r.value.clone()).collect();
            let sent: Vec<_> = records.iter().map(|r| r.value.clone()).collect();
            assert_eq!(values, sent, "{compression:?}");
        }
    }

    #[test]
    fn fetched_records_before_the_offset_are_cut_and_a_partial_batch_waits() {
        // The CRC does not cover the leader epoch either: a broker stamps it on append.
        let with_epoch = |bytes: Bytes, epoch: i32| {
            let mut bytes = BytesMut::from(&bytes[..]);
            bytes[LEADER_EPOCH_AT..LEADER_EPOCH_AT + 4].copy_from_slice(&epoch.to_be_bytes());
            bytes.freeze()
        };
        let mut data = BytesMut::new();
        data.extend_from_slice(&with_epoch(batch(&[value("a"), value("b"), value("c")], 10), 3));
        data.extend_from_slice(&with_epoch(batch(&[value("d")], 13), 4));
        let partial = with_epoch(batch(&[value("e"), value("f")], 14), 5);
        data.extend_from_slice(&partial[..partial.len() - 5]);
        let (records, next, epochs) = decode(0, 11, data.freeze()).expect("decodes");
        assert_eq!(records.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![11, 12, 13]);
        assert_eq!(next, 14, "the cut batch is fetched again");
        assert_eq!(epochs, vec![(10, 3), (13, 4)], "whole batches only");
        let (records, next, _) = decode(0, 14, Bytes::new()).expect("nothing to decode");
        assert!(records.is_empty());
        assert_eq!(next, 14, "an empty answer leaves the offset where it was");
    }

    #[test]
    fn control_batches_are_skipped_but_moved_past() {
        let mut control = BytesMut::from(&batch(&[value("marker")], 5)[..]);
        let attributes = i16::from_be_bytes([control[ATTRIBUTES_AT], control[ATTRIBUTES_AT + 1]]) | CONTROL_BATCH;
        control[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
        let crc = crc32c::crc32c(&control[ATTRIBUTES_AT..]);
        control[17..21].copy_from_slice(&crc.to_be_bytes());
        let (records, next, _) = decode(0, 5, control.freeze()).expect("decodes");
        assert!(records.is_empty());
        assert_eq!(next, 6);
    }

    #[test]
    fn garbage_and_old_formats_are_errors_not_panics() {
        let mut old = BytesMut::from(&batch(&[value("x")], 0)[..]);
        old[MAGIC_AT] = 1;
        assert!(decode(0, 0, old.freeze()).unwrap_err().contains("format v1"));
        let mut negative = BytesMut::from(&batch(&[value("x")], 0)[..]);
        negative[BATCH_LENGTH_AT..BATCH_LENGTH_AT + 4].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(decode(0, 0, negative.freeze()).unwrap_err().contains("negative"));
        let mut corrupt = BytesMut::from(&batch(&[value("x")], 0)[..]);
        let last = corrupt.len() - 1;
        corrupt[last] ^= 0xff;
        assert!(decode(0, 0, corrupt.freeze()).is_err());
    }

    #[test]
    fn assignments_decode_and_bad_bytes_give_none() {
        use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
        use kafka_protocol::protocol::Encodable;
        let assignment = ConsumerProtocolAssignment::default().with_assigned_partitions(vec![
            TopicPartition::default()
                .with_topic(topic_name("t"))
                .with_partitions(vec![0, 2]),
        ]);
        let mut bytes = BytesMut::new();
        bytes.extend_from_slice(&3i16.to_be_bytes());
        assignment.encode(&mut bytes, 3).expect("encodes");
        assert_eq!(
            decode_assignment(bytes.freeze()),
            vec![("t".to_string(), 0), ("t".to_string(), 2)]
        );
        assert!(decode_assignment(Bytes::from_static(&[0, 3, 0xff, 0xff, 0xff])).is_empty());
        assert!(decode_assignment(Bytes::new()).is_empty());
    }
}
