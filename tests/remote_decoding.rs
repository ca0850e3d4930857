//! The client kdeck uses for external clusters reads brokers newer or looser than it: every
//! answer it decodes, at the version it negotiates, yields the same values with an unknown
//! tagged field or one a later version defines (at the top level and inside a nested
//! struct); an error code kdeck does not know reads as such and is not retried; a broker
//! newer than kdeck is used at kdeck's highest version, and one that shares no version of an
//! API, or lacks it, fails the call that needs it with both ranges named, never the connect.

use std::fmt::Debug;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kdeck::remote::connection::{decode_answer, kdeck_max_version};
use kdeck::remote::ops::{self, OffsetSpec};
use kdeck::remote::{ClientSettings, KafkaClient, RemoteConfig, RemoteError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A tag no version of any API defines.
const UNKNOWN_TAG: i32 = 9_999;
/// What the injected fields carry: the decoder must skip it by its size.
const TAGGED: &[u8] = b"\x02\x00\x00\x00\x07\x08kafka-7\x00\x00\x23\x84\x00\x00";

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

fn topic(name: &str) -> TopicName {
    TopicName(s(name))
}

fn put_varint(out: &mut BytesMut, mut value: u32) {
    while value >= 0x80 {
        out.put_u8((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.put_u8(value as u8);
}

/// The answer's bytes as a broker sends them after the size: response header, then body.
fn answer<T: Encodable>(api: ApiKey, version: i16, body: &T) -> Bytes {
    let mut out = BytesMut::new();
    ResponseHeader::default()
        .with_correlation_id(42)
        .encode(&mut out, api.response_header_version(version))
        .expect("header encodes");
    body.encode(&mut out, version).expect("body encodes");
    out.freeze()
}

/// `payload` with one more top-level tagged field: a flexible message ends with its tag
/// buffer, here empty (one byte: count 0), which becomes count 1, the tag, its size, its bytes.
fn with_top_level_tag(payload: &Bytes, tag: i32, data: &[u8]) -> Bytes {
    assert_eq!(payload.last(), Some(&0), "the answer ends with an empty tag buffer");
    let mut out = BytesMut::from(&payload[..payload.len() - 1]);
    put_varint(&mut out, 1);
    put_varint(&mut out, tag as u32);
    put_varint(&mut out, data.len() as u32);
    out.put_slice(data);
    out.freeze()
}

/// `payload` with the tagged field `from` (carrying [`TAGGED`]) renumbered `to`: how a
/// nested struct gets a tag the crate will not write for it (one its schema knows in a later
/// version). Nested structs carry no byte length, so the shorter number needs no other change.
fn retag(payload: &Bytes, from: i32, to: i32) -> Bytes {
    let field = |tag: i32| {
        let mut out = BytesMut::new();
        put_varint(&mut out, tag as u32);
        put_varint(&mut out, TAGGED.len() as u32);
        out.put_slice(TAGGED);
        out
    };
    let (old, new) = (field(from), field(to));
    let at: Vec<usize> = (0..payload.len()).filter(|&i| payload[i..].starts_with(&old)).collect();
    assert_eq!(at.len(), 1, "tag {from} appears once");
    let mut out = BytesMut::from(&payload[..at[0]]);
    out.put_slice(&new);
    out.put_slice(&payload[at[0] + old.len()..]);
    out.freeze()
}

/// Tags a nested struct's schema defines from a later version on: where the struct's tagged
/// fields are, and the tag.
type LaterNested<T> = (fn(&mut T) -> &mut std::collections::BTreeMap<i32, Bytes>, i32);

/// Where a message keeps the tagged fields it does not know.
type TagsOf<T> = fn(&mut T) -> &mut std::collections::BTreeMap<i32, Bytes>;

/// kdeck's decode path, which must read the whole answer.
fn decode<T: Decodable>(api: ApiKey, version: i16, payload: Bytes) -> T {
    match decode_answer::<T>(api, version, payload) {
        Ok((answer, unread)) => {
            assert_eq!(unread, 0, "{api:?} v{version}: bytes left unread");
            answer
        }
        Err(e) => panic!("{api:?} v{version} answer does not decode: {e:#}"),
    }
}

/// A tagged field a struct did not define, as the decoder keeps it aside.
fn tagged(tag: i32) -> (i32, Bytes) {
    (tag, Bytes::from_static(TAGGED))
}

/// One answer type at kdeck's version: `base` round-trips; with an unknown top-level tag and
/// each of `later_tags` (tags a later version defines) spliced in, it decodes to the same
/// values with the tag kept aside; `nest` puts unknown tags inside nested structs, which
/// decode to the same values too.
fn tolerates<T>(api: ApiKey, base: T, top: TagsOf<T>, later_tags: &[i32], nest: Option<fn(&mut T)>)
where
    T: Encodable + Decodable + Clone + PartialEq + Debug,
{
    let version = kdeck_max_version(api).expect("kdeck speaks the API");
    let clean: T = decode(api, version, answer(api, version, &base));
    assert_eq!(clean, base, "{api:?} v{version} round trip");
    for &tag in std::iter::once(&UNKNOWN_TAG).chain(later_tags) {
        let spliced = with_top_level_tag(&answer(api, version, &base), tag, TAGGED);
        let mut expected = base.clone();
        top(&mut expected).extend([tagged(tag)]);
        let read: T = decode(api, version, spliced);
        assert_eq!(read, expected, "{api:?} v{version} with top-level tag {tag}");
    }
    if let Some(nest) = nest {
        let mut nested = base.clone();
        nest(&mut nested);
        assert_ne!(nested, base, "{api:?}: the nested struct carries the tags");
        let read: T = decode(api, version, answer(api, version, &nested));
        assert_eq!(read, nested, "{api:?} v{version} with nested tags");
    }
}

/// `base` with a tag a later version defines inside the nested struct `later` points to
/// decodes to the same values, the tag kept aside.
fn tolerates_nested_later<T>(api: ApiKey, base: T, later: LaterNested<T>)
where
    T: Encodable + Decodable + Clone + PartialEq + Debug,
{
    let (tags, tag) = later;
    let version = kdeck_max_version(api).expect("kdeck speaks the API");
    let mut placeholder = base.clone();
    tags(&mut placeholder).extend([tagged(UNKNOWN_TAG)]);
    let payload = retag(&answer(api, version, &placeholder), UNKNOWN_TAG, tag);
    let mut expected = base;
    tags(&mut expected).extend([tagged(tag)]);
    let read: T = decode(api, version, payload);
    assert_eq!(read, expected, "{api:?} v{version} with nested tag {tag}");
}

/// An answer kdeck reads at a version without tagged fields: it round-trips.
fn round_trips<T>(api: ApiKey, base: T)
where
    T: Encodable + Decodable + Clone + PartialEq + Debug,
{
    let version = kdeck_max_version(api).expect("kdeck speaks the API");
    let read: T = decode(api, version, answer(api, version, &base));
    assert_eq!(read, base, "{api:?} v{version} round trip");
}

macro_rules! top {
    ($t:ty) => {
        (|r: &mut $t| &mut r.unknown_tagged_fields) as TagsOf<$t>
    };
}

#[test]
fn connection_and_cluster_answers_tolerate_tags_they_do_not_define() {
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
    use kafka_protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };

    tolerates(
        ApiKey::ApiVersions,
        ApiVersionsResponse::default().with_api_keys(vec![
            ApiVersion::default()
                .with_api_key(ApiKey::Fetch as i16)
                .with_min_version(4)
                .with_max_version(17),
            ApiVersion::default()
                .with_api_key(ApiKey::Metadata as i16)
                .with_max_version(13),
        ]),
        top!(ApiVersionsResponse),
        &[],
        Some(|r| r.api_keys[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)])),
    );
    tolerates(
        ApiKey::Metadata,
        MetadataResponse::default()
            .with_cluster_id(Some(s("prod-eu")))
            .with_controller_id(BrokerId(2))
            .with_brokers(vec![
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(1))
                    .with_host(s("kafka-1"))
                    .with_port(9092)
                    .with_rack(Some(s("a"))),
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(2))
                    .with_host(s("kafka-2"))
                    .with_port(9092),
            ])
            .with_topics(vec![
                MetadataResponseTopic::default()
                    .with_name(Some(topic("orders")))
                    .with_partitions(vec![
                        MetadataResponsePartition::default()
                            .with_partition_index(0)
                            .with_leader_id(BrokerId(1))
                            .with_leader_epoch(4)
                            .with_replica_nodes(vec![BrokerId(1), BrokerId(2)])
                            .with_isr_nodes(vec![BrokerId(1)])
                            .with_offline_replicas(vec![BrokerId(2)]),
                    ]),
            ]),
        top!(MetadataResponse),
        &[],
        Some(|r| {
            r.brokers[1].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)]);
            r.topics[0].partitions[0]
                .unknown_tagged_fields
                .extend([tagged(UNKNOWN_TAG)]);
        }),
    );
    tolerates(
        ApiKey::DescribeCluster,
        DescribeClusterResponse::default()
            .with_cluster_id(s("prod-eu"))
            .with_controller_id(BrokerId(1))
            .with_endpoint_type(1)
            .with_brokers(vec![
                DescribeClusterBroker::default()
                    .with_broker_id(BrokerId(1))
                    .with_host(s("kafka-1"))
                    .with_port(9092),
            ]),
        top!(DescribeClusterResponse),
        &[],
        Some(|r| r.brokers[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)])),
    );
    tolerates(
        ApiKey::SaslAuthenticate,
        SaslAuthenticateResponse::default()
            .with_auth_bytes(Bytes::from_static(b"v=proof"))
            .with_session_lifetime_ms(3_600_000),
        top!(SaslAuthenticateResponse),
        &[],
        None,
    );
    round_trips(
        ApiKey::SaslHandshake,
        SaslHandshakeResponse::default().with_mechanisms(vec![s("PLAIN"), s("SCRAM-SHA-512")]),
    );
}

#[test]
fn record_answers_tolerate_tags_they_do_not_define() {
    use kafka_protocol::messages::delete_records_response::{DeleteRecordsPartitionResult, DeleteRecordsTopicResult};
    use kafka_protocol::messages::fetch_response::{
        AbortedTransaction, FetchableTopicResponse, LeaderIdAndEpoch, PartitionData,
    };
    use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
    use kafka_protocol::messages::produce_response::{
        BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
    };

    // Fetch v12: a broker on v16+ habits sends NodeEndpoints (tag 0) anyway; the case.
    tolerates(
        ApiKey::Fetch,
        FetchResponse::default().with_session_id(0).with_responses(vec![
            FetchableTopicResponse::default()
                .with_topic(topic("orders"))
                .with_partitions(vec![
                    PartitionData::default()
                        .with_partition_index(0)
                        .with_high_watermark(120)
                        .with_last_stable_offset(120)
                        .with_log_start_offset(3)
                        .with_current_leader(
                            LeaderIdAndEpoch::default()
                                .with_leader_id(BrokerId(1))
                                .with_leader_epoch(4),
                        )
                        .with_aborted_transactions(Some(vec![
                            AbortedTransaction::default()
                                .with_producer_id(ProducerId(9))
                                .with_first_offset(17),
                        ]))
                        .with_records(Some(Bytes::from_static(b"not parsed here"))),
                ]),
        ]),
        top!(FetchResponse),
        &[0],
        Some(|r| {
            let partition = &mut r.responses[0].partitions[0];
            partition.unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)]);
            partition
                .current_leader
                .unknown_tagged_fields
                .extend([tagged(UNKNOWN_TAG)]);
        }),
    );
    // Produce v9: NodeEndpoints (tag 0, top level) and CurrentLeader (tag 0 of a partition's
    // answer) arrived in v10.
    let produced = ProduceResponse::default().with_responses(vec![
        TopicProduceResponse::default()
            .with_name(topic("orders"))
            .with_partition_responses(vec![
                PartitionProduceResponse::default()
                    .with_index(0)
                    .with_base_offset(120)
                    .with_log_start_offset(3),
                PartitionProduceResponse::default()
                    .with_index(1)
                    .with_error_code(87)
                    .with_record_errors(vec![
                        BatchIndexAndErrorMessage::default()
                            .with_batch_index(2)
                            .with_batch_index_error_message(Some(s("key is null"))),
                    ])
                    .with_error_message(Some(s("invalid record"))),
            ]),
    ]);
    tolerates(
        ApiKey::Produce,
        produced.clone(),
        top!(ProduceResponse),
        &[0],
        Some(|r| {
            r.responses[0].partition_responses[0]
                .unknown_tagged_fields
                .extend([tagged(UNKNOWN_TAG)]);
            r.responses[0].partition_responses[1].record_errors[0]
                .unknown_tagged_fields
                .extend([tagged(UNKNOWN_TAG)]);
        }),
    );
    tolerates_nested_later(
        ApiKey::Produce,
        produced,
        (|r| &mut r.responses[0].partition_responses[0].unknown_tagged_fields, 0),
    );
    tolerates(
        ApiKey::ListOffsets,
        ListOffsetsResponse::default().with_topics(vec![
            ListOffsetsTopicResponse::default()
                .with_name(topic("orders"))
                .with_partitions(vec![
                    ListOffsetsPartitionResponse::default()
                        .with_partition_index(0)
                        .with_timestamp(1_700_000_000_000)
                        .with_offset(42)
                        .with_leader_epoch(4),
                ]),
        ]),
        top!(ListOffsetsResponse),
        &[],
        Some(|r| {
            r.topics[0].partitions[0]
                .unknown_tagged_fields
                .extend([tagged(UNKNOWN_TAG)])
        }),
    );
    tolerates(
        ApiKey::DeleteRecords,
        DeleteRecordsResponse::default().with_topics(vec![
            DeleteRecordsTopicResult::default()
                .with_name(topic("orders"))
                .with_partitions(vec![
                    DeleteRecordsPartitionResult::default()
                        .with_partition_index(0)
                        .with_low_watermark(50),
                ]),
        ]),
        top!(DeleteRecordsResponse),
        &[],
        Some(|r| r.topics[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)])),
    );
}

#[test]
fn group_answers_tolerate_tags_they_do_not_define() {
    use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
    use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
    use kafka_protocol::messages::find_coordinator_response::Coordinator;
    use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
    use kafka_protocol::messages::leave_group_response::MemberResponse;
    use kafka_protocol::messages::list_groups_response::ListedGroup;
    use kafka_protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
    use kafka_protocol::messages::offset_delete_response::{OffsetDeleteResponsePartition, OffsetDeleteResponseTopic};
    use kafka_protocol::messages::offset_fetch_response::{
        OffsetFetchResponseGroup, OffsetFetchResponsePartitions, OffsetFetchResponseTopics,
    };

    tolerates(
        ApiKey::FindCoordinator,
        FindCoordinatorResponse::default().with_coordinators(vec![
            Coordinator::default()
                .with_key(s("billing"))
                .with_node_id(BrokerId(2))
                .with_host(s("kafka-2"))
                .with_port(9092),
        ]),
        top!(FindCoordinatorResponse),
        &[],
        Some(|r| r.coordinators[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)])),
    );
    tolerates(
        ApiKey::JoinGroup,
        JoinGroupResponse::default()
            .with_generation_id(5)
            .with_protocol_type(Some(s("consumer")))
            .with_protocol_name(Some(s("range")))
            .with_leader(s("m-1"))
            .with_member_id(s("m-1"))
            .with_members(vec![
                JoinGroupResponseMember::default()
                    .with_member_id(s("m-1"))
                    .with_group_instance_id(Some(s("host-a")))
                    .with_metadata(Bytes::from_static(b"\x00\x01")),
            ]),
        top!(JoinGroupResponse),
        &[],
        Some(|r| r.members[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)])),
    );
    tolerates(
        ApiKey::SyncGroup,
        SyncGroupResponse::default()
            .with_protocol_type(Some(s("consumer")))
            .with_protocol_name(Some(s("range")))
            .with_assignment(Bytes::from_static(b"\x00\x03")),
        top!(SyncGroupResponse),
        &[],
        None,
    );
    tolerates(
        ApiKey::Heartbeat,
        HeartbeatResponse::default().with_error_code(27),
        top!(HeartbeatResponse),
        &[],
        None,
    );
    tolerates(
        ApiKey::LeaveGroup,
        LeaveGroupResponse::default().with_members(vec![MemberResponse::default().with_member_id(s("m-1"))]),
        top!(LeaveGroupResponse),
        &[],
        Some(|r| r.members[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)])),
    );
    tolerates(
        ApiKey::OffsetCommit,
        OffsetCommitResponse::default().with_topics(vec![
            OffsetCommitResponseTopic::default()
                .with_name(topic("orders"))
                .with_partitions(vec![OffsetCommitResponsePartition::default().with_partition_index(0)]),
        ]),
        top!(OffsetCommitResponse),
        &[],
        Some(|r| {
            r.topics[0].partitions[0]
                .unknown_tagged_fields
                .extend([tagged(UNKNOWN_TAG)])
        }),
    );
    tolerates(
        ApiKey::OffsetFetch,
        OffsetFetchResponse::default().with_groups(vec![
            OffsetFetchResponseGroup::default()
                .with_group_id(GroupId(s("billing")))
                .with_topics(vec![
                    OffsetFetchResponseTopics::default()
                        .with_name(topic("orders"))
                        .with_partitions(vec![
                            OffsetFetchResponsePartitions::default()
                                .with_partition_index(0)
                                .with_committed_offset(40)
                                .with_committed_leader_epoch(4)
                                .with_metadata(Some(s(""))),
                        ]),
                ]),
        ]),
        top!(OffsetFetchResponse),
        &[],
        Some(|r| {
            r.groups[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)]);
            r.groups[0].topics[0].partitions[0]
                .unknown_tagged_fields
                .extend([tagged(UNKNOWN_TAG)]);
        }),
    );
    tolerates(
        ApiKey::ListGroups,
        ListGroupsResponse::default().with_groups(vec![
            ListedGroup::default()
                .with_group_id(GroupId(s("billing")))
                .with_protocol_type(s("consumer"))
                .with_group_state(s("Stable")),
        ]),
        top!(ListGroupsResponse),
        &[],
        Some(|r| r.groups[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)])),
    );
    tolerates(
        ApiKey::DescribeGroups,
        DescribeGroupsResponse::default().with_groups(vec![
            DescribedGroup::default()
                .with_group_id(GroupId(s("billing")))
                .with_group_state(s("Stable"))
                .with_protocol_type(s("consumer"))
                .with_protocol_data(s("range"))
                .with_members(vec![
                    DescribedGroupMember::default()
                        .with_member_id(s("m-1"))
                        .with_client_id(s("billing-app"))
                        .with_client_host(s("/10.0.0.5"))
                        .with_member_assignment(Bytes::from_static(b"\x00\x03")),
                ]),
        ]),
        top!(DescribeGroupsResponse),
        &[],
        Some(|r| {
            r.groups[0].members[0]
                .unknown_tagged_fields
                .extend([tagged(UNKNOWN_TAG)])
        }),
    );
    tolerates(
        ApiKey::DeleteGroups,
        DeleteGroupsResponse::default().with_results(vec![
            DeletableGroupResult::default()
                .with_group_id(GroupId(s("billing")))
                .with_error_code(68),
        ]),
        top!(DeleteGroupsResponse),
        &[],
        Some(|r| r.results[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)])),
    );
    // OffsetDelete v0 is not a flexible version: it has no tagged fields to tolerate.
    round_trips(
        ApiKey::OffsetDelete,
        OffsetDeleteResponse::default().with_topics(vec![
            OffsetDeleteResponseTopic::default()
                .with_name(topic("orders"))
                .with_partitions(vec![OffsetDeleteResponsePartition::default().with_partition_index(0)]),
        ]),
    );
}

#[test]
fn admin_answers_tolerate_tags_they_do_not_define() {
    use kafka_protocol::messages::alter_partition_reassignments_response::{
        ReassignablePartitionResponse, ReassignableTopicResponse,
    };
    use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
    use kafka_protocol::messages::create_topics_response::{CreatableTopicConfigs, CreatableTopicResult};
    use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
    use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
    use kafka_protocol::messages::describe_configs_response::{
        DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
    };
    use kafka_protocol::messages::describe_log_dirs_response::{
        DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
    };
    use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
    use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
    use kafka_protocol::messages::list_partition_reassignments_response::{
        OngoingPartitionReassignment, OngoingTopicReassignment,
    };

    tolerates(
        ApiKey::CreateTopics,
        CreateTopicsResponse::default().with_topics(vec![
            CreatableTopicResult::default()
                .with_name(topic("orders"))
                .with_num_partitions(3)
                .with_replication_factor(3)
                .with_configs(Some(vec![
                    CreatableTopicConfigs::default()
                        .with_name(s("cleanup.policy"))
                        .with_value(Some(s("delete")))
                        .with_config_source(5),
                ])),
        ]),
        top!(CreateTopicsResponse),
        &[],
        Some(|r| {
            let created = &mut r.topics[0];
            created.unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)]);
            if let Some(configs) = created.configs.as_mut() {
                configs[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)]);
            }
        }),
    );
    tolerates(
        ApiKey::DeleteTopics,
        DeleteTopicsResponse::default()
            .with_responses(vec![DeletableTopicResult::default().with_name(Some(topic("orders")))]),
        top!(DeleteTopicsResponse),
        &[],
        Some(|r| r.responses[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)])),
    );
    tolerates(
        ApiKey::CreatePartitions,
        CreatePartitionsResponse::default().with_results(vec![
            CreatePartitionsTopicResult::default()
                .with_name(topic("orders"))
                .with_error_code(37)
                .with_error_message(Some(s("Topic already has 3 partitions."))),
        ]),
        top!(CreatePartitionsResponse),
        &[],
        Some(|r| r.results[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)])),
    );
    tolerates(
        ApiKey::DescribeConfigs,
        DescribeConfigsResponse::default().with_results(vec![
            DescribeConfigsResult::default()
                .with_resource_type(2)
                .with_resource_name(s("orders"))
                .with_configs(vec![
                    DescribeConfigsResourceResult::default()
                        .with_name(s("retention.ms"))
                        .with_value(Some(s("86400000")))
                        .with_config_source(1)
                        .with_config_type(5)
                        .with_synonyms(vec![
                            DescribeConfigsSynonym::default()
                                .with_name(s("retention.ms"))
                                .with_value(Some(s("86400000")))
                                .with_source(1),
                        ]),
                ]),
        ]),
        top!(DescribeConfigsResponse),
        &[],
        Some(|r| {
            let config = &mut r.results[0].configs[0];
            config.unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)]);
            config.synonyms[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)]);
        }),
    );
    tolerates(
        ApiKey::IncrementalAlterConfigs,
        IncrementalAlterConfigsResponse::default().with_responses(vec![
            AlterConfigsResourceResponse::default()
                .with_resource_type(2)
                .with_resource_name(s("orders")),
        ]),
        top!(IncrementalAlterConfigsResponse),
        &[],
        Some(|r| r.responses[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)])),
    );
    tolerates(
        ApiKey::ElectLeaders,
        ElectLeadersResponse::default().with_replica_election_results(vec![
            ReplicaElectionResult::default()
                .with_topic(topic("orders"))
                .with_partition_result(vec![
                    PartitionResult::default().with_partition_id(0).with_error_code(84),
                ]),
        ]),
        top!(ElectLeadersResponse),
        &[],
        Some(|r| {
            r.replica_election_results[0].partition_result[0]
                .unknown_tagged_fields
                .extend([tagged(UNKNOWN_TAG)])
        }),
    );
    tolerates(
        ApiKey::AlterPartitionReassignments,
        AlterPartitionReassignmentsResponse::default().with_responses(vec![
            ReassignableTopicResponse::default()
                .with_name(topic("orders"))
                .with_partitions(vec![ReassignablePartitionResponse::default().with_partition_index(0)]),
        ]),
        top!(AlterPartitionReassignmentsResponse),
        &[],
        Some(|r| {
            r.responses[0].partitions[0]
                .unknown_tagged_fields
                .extend([tagged(UNKNOWN_TAG)])
        }),
    );
    tolerates(
        ApiKey::ListPartitionReassignments,
        ListPartitionReassignmentsResponse::default().with_topics(vec![
            OngoingTopicReassignment::default()
                .with_name(topic("orders"))
                .with_partitions(vec![
                    OngoingPartitionReassignment::default()
                        .with_partition_index(0)
                        .with_replicas(vec![BrokerId(1), BrokerId(2), BrokerId(3)])
                        .with_adding_replicas(vec![BrokerId(3)])
                        .with_removing_replicas(vec![BrokerId(1)]),
                ]),
        ]),
        top!(ListPartitionReassignmentsResponse),
        &[],
        Some(|r| {
            r.topics[0].partitions[0]
                .unknown_tagged_fields
                .extend([tagged(UNKNOWN_TAG)])
        }),
    );
    tolerates(
        ApiKey::DescribeLogDirs,
        DescribeLogDirsResponse::default().with_results(vec![
            DescribeLogDirsResult::default()
                .with_log_dir(s("/var/lib/kafka"))
                .with_total_bytes(1 << 40)
                .with_usable_bytes(1 << 39)
                .with_topics(vec![
                    DescribeLogDirsTopic::default()
                        .with_name(topic("orders"))
                        .with_partitions(vec![
                            DescribeLogDirsPartition::default()
                                .with_partition_index(0)
                                .with_partition_size(4_096),
                        ]),
                ]),
        ]),
        top!(DescribeLogDirsResponse),
        &[],
        Some(|r| {
            r.results[0].unknown_tagged_fields.extend([tagged(UNKNOWN_TAG)]);
            r.results[0].topics[0].partitions[0]
                .unknown_tagged_fields
                .extend([tagged(UNKNOWN_TAG)]);
        }),
    );
    tolerates(
        ApiKey::DescribeAcls,
        DescribeAclsResponse::default().with_resources(vec![
            DescribeAclsResource::default()
                .with_resource_type(2)
                .with_resource_name(s("orders"))
                .with_pattern_type(3)
                .with_acls(vec![
                    AclDescription::default()
                        .with_principal(s("User:alice"))
                        .with_host(s("*"))
                        .with_operation(3)
                        .with_permission_type(3),
                ]),
        ]),
        top!(DescribeAclsResponse),
        &[],
        Some(|r| {
            r.resources[0].acls[0]
                .unknown_tagged_fields
                .extend([tagged(UNKNOWN_TAG)])
        }),
    );
}

// ---- a broker newer than kdeck, over TCP ----

struct Received {
    api: ApiKey,
    version: i16,
    correlation_id: i32,
}

async fn read_request(stream: &mut TcpStream) -> Option<Received> {
    let length = stream.read_i32().await.ok()?;
    let mut frame = vec![0u8; usize::try_from(length).ok()?];
    stream.read_exact(&mut frame).await.ok()?;
    let mut body = Bytes::from(frame);
    let api = ApiKey::try_from(i16::from_be_bytes([*body.first()?, *body.get(1)?])).ok()?;
    let version = i16::from_be_bytes([*body.get(2)?, *body.get(3)?]);
    let header = RequestHeader::decode(&mut body, api.request_header_version(version)).ok()?;
    Some(Received {
        api,
        version,
        correlation_id: header.correlation_id,
    })
}

async fn write_response<R: Encodable>(stream: &mut TcpStream, request: &Received, response: &R) {
    let mut out = BytesMut::new();
    out.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(request.correlation_id)
        .encode(&mut out, request.api.response_header_version(request.version))
        .expect("header encodes");
    response.encode(&mut out, request.version).expect("response encodes");
    let length = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&length.to_be_bytes());
    stream.write_all(&out).await.expect("answer written");
}

/// A broker from the future: Metadata up to v15 (kdeck: 12), Fetch only v13-17 (kdeck: up
/// to 12), no DescribeLogDirs at all, and ListOffsets answering an error code kdeck does
/// not know. Records which requests came, at which version.
async fn future_broker(seen: Arc<Mutex<Vec<(ApiKey, i16)>>>) -> SocketAddr {
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
    use kafka_protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };

    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                while let Some(request) = read_request(&mut stream).await {
                    seen.lock().expect("lock").push((request.api, request.version));
                    match request.api {
                        ApiKey::ApiVersions => {
                            let range = |api: ApiKey, min, max| {
                                ApiVersion::default()
                                    .with_api_key(api as i16)
                                    .with_min_version(min)
                                    .with_max_version(max)
                            };
                            let answer = ApiVersionsResponse::default().with_api_keys(vec![
                                range(ApiKey::ApiVersions, 0, 5),
                                range(ApiKey::Metadata, 0, 15),
                                range(ApiKey::Fetch, 13, 17),
                                range(ApiKey::ListOffsets, 1, 11),
                            ]);
                            write_response(&mut stream, &request, &answer).await;
                        }
                        ApiKey::Metadata => {
                            let answer = MetadataResponse::default()
                                .with_controller_id(BrokerId(7))
                                .with_brokers(vec![
                                    MetadataResponseBroker::default()
                                        .with_node_id(BrokerId(7))
                                        .with_host(s(&addr.ip().to_string()))
                                        .with_port(i32::from(addr.port())),
                                ])
                                .with_topics(vec![
                                    MetadataResponseTopic::default()
                                        .with_name(Some(topic("orders")))
                                        .with_partitions(vec![
                                            MetadataResponsePartition::default()
                                                .with_partition_index(0)
                                                .with_leader_id(BrokerId(7))
                                                .with_replica_nodes(vec![BrokerId(7)])
                                                .with_isr_nodes(vec![BrokerId(7)]),
                                        ]),
                                ]);
                            write_response(&mut stream, &request, &answer).await;
                        }
                        ApiKey::ListOffsets => {
                            let answer = ListOffsetsResponse::default().with_topics(vec![
                                ListOffsetsTopicResponse::default()
                                    .with_name(topic("orders"))
                                    .with_partitions(vec![
                                        ListOffsetsPartitionResponse::default()
                                            .with_partition_index(0)
                                            .with_error_code(200),
                                    ]),
                            ]);
                            write_response(&mut stream, &request, &answer).await;
                        }
                        _ => return,
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_broker_is_used_at_kdecks_versions_and_a_missing_range_fails_only_its_call() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let addr = future_broker(Arc::clone(&seen)).await;
    let config = RemoteConfig {
        bootstrap: addr.to_string(),
        connect_timeout_ms: 2_000,
        request_timeout_ms: 5_000,
        ..RemoteConfig::default()
    };
    let settings = ClientSettings::from_config(&config).expect("valid settings");
    // Fetch and DescribeLogDirs are unusable, yet the connection opens: they are not needed yet.
    let client = KafkaClient::connect(settings).await.expect("connects");
    let metadata = client.metadata().await.expect("metadata");
    assert_eq!(metadata.topic("orders").map(|t| t.partitions.len()), Some(1));
    assert!(
        seen.lock().expect("lock").contains(&(ApiKey::Metadata, 12)),
        "Metadata at kdeck's v12, not the broker's v15: {:?}",
        seen.lock().expect("lock")
    );

    let fetch = ops::fetch(&client, "orders", 0, 0, Duration::from_millis(10), 1 << 20)
        .await
        .expect_err("no common Fetch version");
    assert!(matches!(fetch, RemoteError::Unsupported { .. }), "{fetch:?}");
    assert_eq!(
        fetch.to_string(),
        format!("broker 7 ({addr}) does not support Fetch (the broker serves v13 to v17; kdeck speaks v0 to v12)")
    );
    let log_dirs = ops::describe_log_dirs(&client, 7)
        .await
        .expect_err("no DescribeLogDirs");
    assert_eq!(
        log_dirs.to_string(),
        format!(
            "broker 7 ({addr}) does not support DescribeLogDirs (the broker does not list it in ApiVersions; \
             kdeck speaks v0 to v4)"
        )
    );
    assert!(
        !seen
            .lock()
            .expect("lock")
            .iter()
            .any(|(api, _)| matches!(api, ApiKey::Fetch | ApiKey::DescribeLogDirs)),
        "nothing was sent at a version the broker does not serve"
    );

    // An error code newer than kdeck: named as unknown, not retried, the connection kept.
    let offsets = ops::list_offsets(&client, &[("orders".into(), 0)], OffsetSpec::Latest).await;
    let error = match offsets.as_slice() {
        [Err(error)] => error.clone(),
        other => panic!("expected one error, got {other:?}"),
    };
    assert!(
        error.to_string().ends_with("error code 200 (unknown to kdeck)"),
        "{error}"
    );
    assert!(!error.is_connection_error());
    let asked: Vec<i16> = seen
        .lock()
        .expect("lock")
        .iter()
        .filter(|(api, _)| *api == ApiKey::ListOffsets)
        .map(|(_, v)| *v)
        .collect();
    assert_eq!(
        asked,
        vec![7],
        "ListOffsets once, at kdeck's v7 (the broker serves up to v11)"
    );
    assert!(client.health().iter().all(|b| b.connected), "{:?}", client.health());
    client.close();
}
