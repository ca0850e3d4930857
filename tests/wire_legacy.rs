//! Older clients, as Kafka 3.9 still serves them: Produce v0-2 with message sets (formats
//! v0/v1, plain and gzip-compressed), Fetch v0-3 down-converted from the log, ListOffsets v0,
//! CreateTopics v0-1, DeleteTopics v0, OffsetCommit/OffsetFetch v0-1, DescribeConfigs v0,
//! spoken by the vendored `kafka-protocol` crate as a client.

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::compression::{Compressor, Gzip};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kdeck::engine::{TopicConfig, TopicPartition};
use kdeck::storage::legacy::{self, LegacyMessage, MAGIC_V0, MAGIC_V1, NO_TIMESTAMP};
use kdeck::storage::records::{self, Compression};
use tokio::net::TcpStream;

mod common;
use common::wire::{call, connect, setup, topic_name as name};

/// Uncompressed messages of format `magic`, offsets 0.., with `timestamp`.
fn message_set(magic: i8, timestamp: i64, values: &[&str]) -> BytesMut {
    let mut out = BytesMut::new();
    for (i, v) in values.iter().enumerate() {
        legacy::write_message(
            &mut out,
            magic,
            i as i64,
            timestamp,
            false,
            Some(b"k"),
            Some(v.as_bytes()),
        );
    }
    out
}

/// `values` gzip-compressed in one wrapper, as an old producer sends them: inner offsets
/// relative (0..) and the wrapper's the last one's in magic 1.
fn gzip_set(magic: i8, timestamp: i64, values: &[&str]) -> BytesMut {
    let inner = message_set(magic, timestamp, values);
    let mut compressed = BytesMut::new();
    Gzip::compress(&mut compressed, |b: &mut BytesMut| {
        b.put_slice(&inner);
        Ok(())
    })
    .expect("gzip compresses");
    let mut out = BytesMut::new();
    legacy::write_wrapper(&mut out, magic, 1, values.len() as i64 - 1, timestamp, &compressed);
    out
}

fn produce(topic: &str, records: Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(name(topic))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(records)),
                ]),
        ])
}

/// `(error code, base offset)` of a one-partition produce.
async fn produce_at(stream: &mut TcpStream, version: i16, topic: &str, records: Bytes) -> (i16, i64) {
    let response: ProduceResponse = call(stream, ApiKey::Produce, version, &produce(topic, records)).await;
    let p = &response.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

fn fetch(topic: &str, offset: i64, partition_max_bytes: i32) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default().with_topic(name(topic)).with_partitions(
            vec![
                FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(partition_max_bytes),
            ],
        )])
}

/// The messages a Fetch of `version` answers, with the partition's error and high watermark.
async fn fetch_messages(
    stream: &mut TcpStream,
    version: i16,
    topic: &str,
    offset: i64,
    max: i32,
) -> (i16, i64, Vec<LegacyMessage>) {
    let response: FetchResponse = call(stream, ApiKey::Fetch, version, &fetch(topic, offset, max)).await;
    let p = &response.responses[0].partitions[0];
    let bytes = p.records.clone().unwrap_or_default();
    let (messages, compression) = legacy::read_message_set(&bytes).expect("a valid message set");
    assert_eq!(compression, Compression::None);
    (p.error_code, p.high_watermark, messages)
}

fn summary(messages: &[LegacyMessage]) -> Vec<(i64, i8, i64, String)> {
    messages
        .iter()
        .map(|m| {
            let value = m
                .value
                .as_ref()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default();
            (m.offset, m.magic, m.timestamp, value)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_producers_message_sets_are_stored_as_batches_and_old_consumers_read_them_down_converted() {
    let s = setup().await;
    let leader = s.topic("legacy", 1).await;
    let mut stream = connect(s.addr(leader)).await;

    // Produce v0 and v1 carry magic 0 (kafka-python api_version 0.9), v2 magic 1 (0.10).
    assert_eq!(
        produce_at(&mut stream, 0, "legacy", message_set(MAGIC_V0, 0, &["a", "b"]).freeze()).await,
        (0, 0)
    );
    assert_eq!(
        produce_at(&mut stream, 1, "legacy", gzip_set(MAGIC_V0, 0, &["c", "d"]).freeze()).await,
        (0, 2)
    );
    assert_eq!(
        produce_at(
            &mut stream,
            2,
            "legacy",
            message_set(MAGIC_V1, 1_000, &["e", "f"]).freeze()
        )
        .await,
        (0, 4)
    );
    assert_eq!(
        produce_at(
            &mut stream,
            2,
            "legacy",
            gzip_set(MAGIC_V1, 2_000, &["g", "h"]).freeze()
        )
        .await,
        (0, 6)
    );
    // A v2 batch (Produce v3) read by an old consumer.
    let batch = records::encode_batch(
        &[records::record(0, 3_000, None, Some(Bytes::from("i")))],
        Compression::None,
    )
    .expect("batch encodes");
    assert_eq!(produce_at(&mut stream, 3, "legacy", batch.freeze()).await, (0, 8));

    // The log holds v2 batches, the gzip ones still compressed.
    let stored = s
        .cluster
        .fetch_on(
            leader,
            &TopicPartition::new("legacy", 0),
            0,
            -1,
            1 << 20,
            Duration::ZERO,
        )
        .await
        .expect("reads");
    let values: Vec<_> = records::decode(&stored.records)
        .expect("v2 batches")
        .iter()
        .map(|r| (r.offset, r.timestamp))
        .collect();
    assert_eq!(
        values,
        vec![
            (0, -1),
            (1, -1),
            (2, -1),
            (3, -1),
            (4, 1_000),
            (5, 1_000),
            (6, 2_000),
            (7, 2_000),
            (8, 3_000)
        ]
    );

    let letters = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for version in [0, 1] {
        let (error, hw, messages) = fetch_messages(&mut stream, version, "legacy", 0, 1 << 20).await;
        assert_eq!((error, hw), (0, 9));
        let expected: Vec<_> = letters
            .iter()
            .enumerate()
            .map(|(i, l)| (i as i64, MAGIC_V0, NO_TIMESTAMP, l.to_string()))
            .collect();
        assert_eq!(summary(&messages), expected, "Fetch v{version} reads magic 0");
        assert!(
            messages
                .iter()
                .all(|m| m.key.as_deref() == Some(&b"k"[..]) || m.offset == 8)
        );
    }
    let timestamps = [-1, -1, -1, -1, 1_000, 1_000, 2_000, 2_000, 3_000];
    for version in [2, 3] {
        let (error, _, messages) = fetch_messages(&mut stream, version, "legacy", 0, 1 << 20).await;
        assert_eq!(error, 0);
        let expected: Vec<_> = letters
            .iter()
            .zip(timestamps)
            .enumerate()
            .map(|(i, (l, ts))| (i as i64, MAGIC_V1, ts, l.to_string()))
            .collect();
        assert_eq!(
            summary(&messages),
            expected,
            "Fetch v{version} reads magic 1 with timestamps"
        );
    }

    // From the middle of a batch, and within a small partition limit: whole messages from the
    // fetch offset on, the first always.
    let (_, _, from_seven) = fetch_messages(&mut stream, 3, "legacy", 7, 1 << 20).await;
    assert_eq!(summary(&from_seven).iter().map(|m| m.0).collect::<Vec<_>>(), vec![7, 8]);
    // A magic 0 message of a one-byte key and value takes 28 bytes.
    let (_, _, small) = fetch_messages(&mut stream, 1, "legacy", 0, 60).await;
    assert_eq!(summary(&small).iter().map(|m| m.0).collect::<Vec<_>>(), vec![0, 1]);
    let (_, _, tiny) = fetch_messages(&mut stream, 1, "legacy", 0, 5).await;
    assert_eq!(
        summary(&tiny).iter().map(|m| m.0).collect::<Vec<_>>(),
        vec![0],
        "the first message always"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_message_set_is_refused_with_corrupt_message_and_the_connection_stays() {
    let s = setup().await;
    let leader = s.topic("legacy", 1).await;
    let mut stream = connect(s.addr(leader)).await;
    let mut flipped = message_set(MAGIC_V1, 1_000, &["hello"]);
    let last = flipped.len() - 1;
    flipped[last] ^= 0x20;
    assert_eq!(produce_at(&mut stream, 2, "legacy", flipped.freeze()).await, (2, -1));
    let whole = message_set(MAGIC_V0, 0, &["hello"]).freeze();
    assert_eq!(
        produce_at(&mut stream, 0, "legacy", whole.slice(..whole.len() - 2)).await,
        (2, -1),
        "truncated"
    );
    let mut zstd = BytesMut::new();
    legacy::write_wrapper(&mut zstd, MAGIC_V1, 4, 0, 1_000, b"zstd needs format v2");
    assert_eq!(
        produce_at(&mut stream, 2, "legacy", zstd.freeze()).await,
        (76, -1),
        "UNSUPPORTED_COMPRESSION_TYPE"
    );
    // Nothing was appended, and the connection still serves.
    assert_eq!(
        produce_at(&mut stream, 2, "legacy", message_set(MAGIC_V1, 1_000, &["ok"]).freeze()).await,
        (0, 0)
    );
    s.stop().await;
}

async fn list_offsets_v0(stream: &mut TcpStream, topic: &str, timestamp: i64, max_num_offsets: i32) -> (i16, Vec<i64>) {
    let request = ListOffsetsRequest::default()
        .with_replica_id((-1).into())
        .with_topics(vec![
            ListOffsetsTopic::default().with_name(name(topic)).with_partitions(vec![
                ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(timestamp)
                    .with_max_num_offsets(max_num_offsets),
            ]),
        ]);
    let response: ListOffsetsResponse = call(stream, ApiKey::ListOffsets, 0, &request).await;
    let p = &response.topics[0].partitions[0];
    (p.error_code, p.old_style_offsets.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_offsets_v0_answers_the_earliest_and_latest_offsets_as_a_list() {
    let s = setup().await;
    let leader = s.topic("lag", 1).await;
    let mut stream = connect(s.addr(leader)).await;
    assert_eq!(
        produce_at(
            &mut stream,
            2,
            "lag",
            message_set(MAGIC_V1, 1_000, &["a", "b", "c"]).freeze()
        )
        .await,
        (0, 0)
    );
    assert_eq!(
        list_offsets_v0(&mut stream, "lag", -1, 1).await,
        (0, vec![3]),
        "latest: the high watermark"
    );
    assert_eq!(
        list_offsets_v0(&mut stream, "lag", -2, 10).await,
        (0, vec![0]),
        "earliest: the log start"
    );
    assert_eq!(
        list_offsets_v0(&mut stream, "lag", -1, 0).await,
        (0, vec![]),
        "max_num_offsets 0"
    );
    assert_eq!(
        list_offsets_v0(&mut stream, "missing", -1, 1).await.0,
        3,
        "UNKNOWN_TOPIC_OR_PARTITION"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_topics_v0_and_v1_create_and_validate_and_delete_topics_v0_deletes() {
    let s = setup().await;
    let mut stream = connect(s.addr(0)).await;
    let create = |topic: &str, validate_only: bool| {
        CreateTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_validate_only(validate_only)
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(name(topic))
                    .with_num_partitions(2)
                    .with_replication_factor(3),
            ])
    };
    let v0: CreateTopicsResponse = call(&mut stream, ApiKey::CreateTopics, 0, &create("from-v0", false)).await;
    assert_eq!(v0.topics[0].error_code, 0);
    assert_eq!(s.cluster.metadata().topics["from-v0"].partitions.len(), 2);
    let again: CreateTopicsResponse = call(&mut stream, ApiKey::CreateTopics, 0, &create("from-v0", false)).await;
    assert_eq!(again.topics[0].error_code, 36, "TOPIC_ALREADY_EXISTS");
    let checked: CreateTopicsResponse = call(&mut stream, ApiKey::CreateTopics, 1, &create("only-checked", true)).await;
    assert_eq!(checked.topics[0].error_code, 0);
    assert!(
        !s.cluster.metadata().topics.contains_key("only-checked"),
        "validate_only creates nothing"
    );

    let delete = DeleteTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topic_names(vec![name("from-v0")]);
    let deleted: DeleteTopicsResponse = call(&mut stream, ApiKey::DeleteTopics, 0, &delete).await;
    assert_eq!(deleted.responses[0].error_code, 0);
    assert!(!s.cluster.metadata().topics.contains_key("from-v0"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offset_commit_and_fetch_v0_and_v1_keep_a_groups_offsets() {
    let s = setup().await;
    s.topic("orders", 1).await;
    let group = GroupId(StrBytes::from_static_str("old-consumers"));
    let mut any = connect(s.addr(0)).await;
    let coordinator = loop {
        let found: FindCoordinatorResponse = call(
            &mut any,
            ApiKey::FindCoordinator,
            0,
            &FindCoordinatorRequest::default().with_key(group.0.clone()),
        )
        .await;
        if found.error_code == 0 {
            break found.node_id.0;
        }
        tokio::task::yield_now().await;
    };
    let mut stream = connect(s.addr(coordinator)).await;
    for (version, offset) in [(0, 5), (1, 7)] {
        let commit = OffsetCommitRequest::default()
            .with_group_id(group.clone())
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![
                OffsetCommitRequestTopic::default()
                    .with_name(name("orders"))
                    .with_partitions(vec![
                        OffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(offset)
                            .with_commit_timestamp(-1),
                    ]),
            ]);
        let committed: OffsetCommitResponse = call(&mut stream, ApiKey::OffsetCommit, version, &commit).await;
        assert_eq!(
            committed.topics[0].partitions[0].error_code, 0,
            "OffsetCommit v{version}"
        );
        for fetch_version in [0, 1] {
            let fetch = OffsetFetchRequest::default()
                .with_group_id(group.clone())
                .with_topics(Some(vec![
                    OffsetFetchRequestTopic::default()
                        .with_name(name("orders"))
                        .with_partition_indexes(vec![0]),
                ]));
            let fetched: OffsetFetchResponse = call(&mut stream, ApiKey::OffsetFetch, fetch_version, &fetch).await;
            let p = &fetched.topics[0].partitions[0];
            assert_eq!(
                (p.error_code, p.committed_offset),
                (0, offset),
                "OffsetFetch v{fetch_version}"
            );
        }
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_configs_v0_says_which_values_are_defaults() {
    let s = setup().await;
    s.cluster
        .create_topic("tuned", TopicConfig::new(1, 3))
        .await
        .expect("topic created");
    let mut stream = connect(s.addr(0)).await;
    let request = DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("tuned"))
            .with_configuration_keys(None),
    ]);
    let response: DescribeConfigsResponse = call(&mut stream, ApiKey::DescribeConfigs, 0, &request).await;
    let result = &response.results[0];
    assert_eq!(result.error_code, 0);
    assert!(!result.configs.is_empty());
    assert!(
        result.configs.iter().all(|c| c.synonyms.is_empty()),
        "no synonyms before v1"
    );
    assert!(
        result.configs.iter().any(|c| c.is_default),
        "untouched settings are defaults"
    );
    s.stop().await;
}
