//! The Kafka wire protocol served by the embedded brokers, spoken by the `kafka-protocol`
//! crate as a client: versions, metadata, produce and fetch routing, ordering, acks=0, frame
//! limits, malformed peers and broker lifecycles.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::compression::{Compressor, Gzip, Zstd};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::offset_fetch_request::{OffsetFetchRequestGroup, OffsetFetchRequestTopics};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, HeaderVersion, StrBytes};
use kdeck::engine::{Cluster, ClusterConfig, TopicConfig, TopicPartition};
use kdeck::storage::legacy;
use kdeck::storage::records::{self, Compression};
use kdeck::wire::{WireConfig, WireError, WireServer, versions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;
use common::engine::txn_batch;
use common::wire::{Setup, call, closed, connect, frame, free_ports, read_response, setup, setup_with, topic_name};

fn batch(values: &[&str]) -> Bytes {
    let recs: Vec<_> = values
        .iter()
        .enumerate()
        .map(|(i, v)| records::record(i as i64, 1_000, None, Some(Bytes::from(v.to_string()))))
        .collect();
    records::encode_batch(&recs, Compression::None)
        .expect("batch encodes")
        .freeze()
}

fn produce_request(topic: &str, partition: i32, acks: i16, records: Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(topic_name(topic))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(records)),
                ]),
        ])
}

fn fetch_request(topic: &str, partition: i32, offset: i64, max_wait_ms: i32) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_fetch_stops_at_the_last_stable_offset_and_lists_aborted_transactions() {
    let s = setup().await;
    let leader = s.topic("txns", 1).await;
    let tp = TopicPartition::new("txns", 0);
    let (aborting, _) = s.cluster.init_producer_id().await.expect("pid");
    let (open, _) = s.cluster.init_producer_id().await.expect("pid");
    let produce = |bytes: Vec<u8>| {
        s.cluster
            .produce(&tp, bytes, kdeck::engine::Acks::All, Duration::from_secs(10))
    };
    // Written through the engine: the wire cannot start transactions yet.
    assert_eq!(produce(txn_batch(aborting, 0, 0, &["x"])).await, Ok(0));
    assert_eq!(produce(txn_batch(aborting, 0, 1, &["y"])).await, Ok(1));
    assert_eq!(s.cluster.write_txn_marker(&tp, aborting, 0, 0, false).await, Ok(2));
    assert_eq!(produce(txn_batch(open, 0, 0, &["z"])).await, Ok(3));
    assert_eq!(produce(txn_batch(open, 0, 1, &["w"])).await, Ok(4));

    let mut stream = connect(s.addr(leader)).await;
    let committed: FetchResponse = call(
        &mut stream,
        ApiKey::Fetch,
        12,
        &fetch_request("txns", 0, 0, 0).with_isolation_level(1),
    )
    .await;
    let p = &committed.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    assert_eq!((p.high_watermark, p.last_stable_offset), (5, 3));
    let aborted: Vec<(i64, i64)> = p
        .aborted_transactions
        .iter()
        .flatten()
        .map(|t| (t.producer_id.0, t.first_offset))
        .collect();
    assert_eq!(aborted, [(aborting, 0)]);
    let offsets: Vec<i64> = records::decode(p.records.as_ref().expect("records"))
        .expect("decodes")
        .iter()
        .map(|r| r.offset)
        .collect();
    assert_eq!(
        offsets,
        [0, 1, 2],
        "the aborted transaction and its marker, nothing of the open one"
    );

    let uncommitted: FetchResponse = call(&mut stream, ApiKey::Fetch, 12, &fetch_request("txns", 0, 0, 0)).await;
    let p = &uncommitted.responses[0].partitions[0];
    assert_eq!((p.high_watermark, p.last_stable_offset), (5, 3));
    assert_eq!(p.aborted_transactions, None);
    assert_eq!(
        records::decode(p.records.as_ref().expect("records"))
            .expect("decodes")
            .len(),
        5
    );

    let latest = |isolation_level: i8| {
        ListOffsetsRequest::default()
            .with_replica_id((-1).into())
            .with_isolation_level(isolation_level)
            .with_topics(vec![
                kafka_protocol::messages::list_offsets_request::ListOffsetsTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("txns")))
                    .with_partitions(vec![
                        kafka_protocol::messages::list_offsets_request::ListOffsetsPartition::default()
                            .with_partition_index(0)
                            .with_timestamp(-1),
                    ]),
            ])
    };
    for (level, expected) in [(1, 3), (0, 5)] {
        let answer: ListOffsetsResponse = call(&mut stream, ApiKey::ListOffsets, 6, &latest(level)).await;
        assert_eq!(
            answer.topics[0].partitions[0].offset, expected,
            "isolation level {level}"
        );
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_versions_advertises_our_table_and_answers_unknown_versions_in_v0() {
    let s = setup().await;
    let mut stream = connect(s.addr(0)).await;
    let response: ApiVersionsResponse = call(
        &mut stream,
        ApiKey::ApiVersions,
        3,
        &ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("test"))
            .with_client_software_version(StrBytes::from_static_str("1")),
    )
    .await;
    assert_eq!(response.error_code, 0);
    let advertised: Vec<(i16, i16, i16)> = response
        .api_keys
        .iter()
        .map(|k| (k.api_key, k.min_version, k.max_version))
        .collect();
    let ours: Vec<(i16, i16, i16)> = versions::SUPPORTED
        .iter()
        .map(|(k, min, max)| (*k as i16, *min, *max))
        .collect();
    assert_eq!(advertised, ours);
    assert!(
        advertised
            .iter()
            .any(|(k, _, max)| *k == ApiKey::AddPartitionsToTxn as i16 && *max == 3),
        "transactions are advertised, AddPartitionsToTxn up to v3 (v4+ is the brokers' form)"
    );

    // A version from the future: not parsed, answered with a v0 body and error 35.
    let mut body = BytesMut::new();
    body.put_i16(ApiKey::ApiVersions as i16);
    body.put_i16(99);
    body.put_i32(7);
    body.put_i16(-1);
    body.put_slice(b"whatever a future version carries");
    stream.write_i32(body.len() as i32).await.expect("sent");
    stream.write_all(&body).await.expect("sent");
    let mut payload = read_response(&mut stream).await.expect("an answer");
    assert_eq!(payload.get_i32(), 7, "correlation id");
    let v0 = ApiVersionsResponse::decode(&mut payload, 0).expect("a v0 response");
    assert_eq!(v0.error_code, 35);
    assert_eq!(v0.api_keys.len(), versions::SUPPORTED.len());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_advertises_the_listeners_leaders_epochs_and_isr() {
    let s = setup().await;
    s.topic("events", 3).await;
    let mut stream = connect(s.addr(1)).await;
    let all = MetadataRequest::default().with_topics(None);
    let response: MetadataResponse = call(&mut stream, ApiKey::Metadata, 12, &all).await;
    let mut brokers: Vec<(i32, String, i32)> = response
        .brokers
        .iter()
        .map(|b| (b.node_id.0, b.host.to_string(), b.port))
        .collect();
    brokers.sort();
    let expected: Vec<(i32, String, i32)> = s
        .server
        .listeners()
        .iter()
        .map(|l| (l.broker, l.addr.ip().to_string(), i32::from(l.addr.port())))
        .collect();
    assert_eq!(brokers, expected);
    let snapshot = s.cluster.snapshot();
    let topic = response
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == "events"))
        .expect("the topic is listed");
    assert_eq!(topic.partitions.len(), 3);
    for p in &topic.partitions {
        let view = snapshot
            .partition(&TopicPartition::new("events", p.partition_index))
            .expect("known partition");
        assert_eq!(Some(p.leader_id.0), view.leader);
        assert_eq!(p.leader_epoch, view.leader_epoch);
        assert_eq!(p.isr_nodes.iter().map(|b| b.0).collect::<Vec<_>>(), view.isr);
        assert_eq!(p.replica_nodes.len(), 3);
        assert!(p.offline_replicas.is_empty());
    }

    // An unknown topic is not created unless auto-creation is configured.
    let request = MetadataRequest::default()
        .with_topics(Some(vec![
            metadata_request::MetadataRequestTopic::default()
                .with_name(Some(TopicName(StrBytes::from_static_str("nope")))),
        ]))
        .with_allow_auto_topic_creation(true);
    let response: MetadataResponse = call(&mut stream, ApiKey::Metadata, 12, &request).await;
    assert_eq!(response.topics[0].error_code, 3, "UNKNOWN_TOPIC_OR_PARTITION");
    assert!(!s.cluster.metadata().topics.contains_key("nope"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_listener_serves_as_its_broker() {
    let s = setup().await;
    let leader = s.topic("orders", 1).await;
    let follower = (leader + 1) % 3;

    let mut to_follower = connect(s.addr(follower)).await;
    let refused: ProduceResponse = call(
        &mut to_follower,
        ApiKey::Produce,
        9,
        &produce_request("orders", 0, -1, batch(&["a"])),
    )
    .await;
    assert_eq!(
        refused.responses[0].partition_responses[0].error_code, 6,
        "NOT_LEADER_OR_FOLLOWER"
    );

    let mut to_leader = connect(s.addr(leader)).await;
    let accepted: ProduceResponse = call(
        &mut to_leader,
        ApiKey::Produce,
        9,
        &produce_request("orders", 0, -1, batch(&["a", "b", "c"])),
    )
    .await;
    let p = &accepted.responses[0].partition_responses[0];
    assert_eq!((p.error_code, p.base_offset), (0, 0));

    let fetched: FetchResponse = call(&mut to_leader, ApiKey::Fetch, 12, &fetch_request("orders", 0, 0, 0)).await;
    let data = &fetched.responses[0].partitions[0];
    assert_eq!(data.error_code, 0);
    assert_eq!(data.high_watermark, 3);
    let values: Vec<Bytes> = records::decode(data.records.as_ref().expect("records"))
        .expect("records decode")
        .into_iter()
        .filter_map(|r| r.value)
        .collect();
    assert_eq!(values, vec![Bytes::from("a"), Bytes::from("b"), Bytes::from("c")]);

    let from_follower: FetchResponse =
        call(&mut to_follower, ApiKey::Fetch, 12, &fetch_request("orders", 0, 0, 0)).await;
    assert_eq!(from_follower.responses[0].partitions[0].error_code, 6);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_waits_for_records_and_answers_when_they_are_committed() {
    let s = setup().await;
    let leader = s.topic("waiting", 1).await;
    let addr = s.addr(leader);
    let consumer = tokio::spawn(async move {
        let mut stream = connect(addr).await;
        let response: FetchResponse =
            call(&mut stream, ApiKey::Fetch, 12, &fetch_request("waiting", 0, 0, 30_000)).await;
        response
    });
    let mut producer = connect(addr).await;
    let produced: ProduceResponse = call(
        &mut producer,
        ApiKey::Produce,
        9,
        &produce_request("waiting", 0, -1, batch(&["late"])),
    )
    .await;
    assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
    let response = consumer.await.expect("the consumer task");
    let data = &response.responses[0].partitions[0];
    assert_eq!(data.high_watermark, 1);
    assert!(!data.records.as_ref().expect("records").is_empty());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_zero_gets_no_answer_and_answers_keep_request_order() {
    let s = setup().await;
    let leader = s.topic("fire", 1).await;
    let mut stream = connect(s.addr(leader)).await;
    let mut pipelined = BytesMut::new();
    pipelined.extend_from_slice(&frame(
        ApiKey::Produce,
        9,
        1,
        &produce_request("fire", 0, 0, batch(&["forget"])),
    ));
    // A slow request (a fetch waiting for data) followed by fast ones: answers stay in order.
    pipelined.extend_from_slice(&frame(ApiKey::Fetch, 12, 2, &fetch_request("fire", 0, 1, 500)));
    for correlation_id in 3..10 {
        pipelined.extend_from_slice(&frame(
            ApiKey::ApiVersions,
            3,
            correlation_id,
            &ApiVersionsRequest::default(),
        ));
    }
    stream.write_all(&pipelined).await.expect("sent");
    let mut order = Vec::new();
    for _ in 2..10 {
        let mut payload = read_response(&mut stream).await.expect("an answer");
        order.push(payload.get_i32());
    }
    assert_eq!(order, (2..10).collect::<Vec<i32>>(), "the acks=0 produce got no answer");
    s.stop().await;
}

/// An idempotent batch of `count` records: producer `id`, epoch 0, sequences from `base`.
fn idempotent_batch(id: i64, base: i32, count: usize) -> Bytes {
    // Today's timestamps: records from 1970 would be past retention and roll the segment on
    // every append.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64;
    let recs: Vec<_> = (0..count)
        .map(|i| {
            let mut r = records::record(i as i64, now, None, Some(Bytes::from(format!("{}", base as usize + i))));
            r.producer_id = id;
            r.producer_epoch = 0;
            r.sequence = base + i as i32;
            r
        })
        .collect();
    records::encode_batch(&recs, Compression::None)
        .expect("batch encodes")
        .freeze()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_idempotent_batches_of_one_connection_are_appended_in_the_order_sent() {
    let s = setup().await;
    let leader = s.topic("sequenced", 6).await;
    let snapshot = s
        .cluster
        .wait_for(Duration::from_secs(10), |s| {
            (0..6).all(|p| {
                s.partition(&TopicPartition::new("sequenced", p))
                    .is_some_and(|v| v.leader.is_some() && v.high_watermark.is_some())
            })
        })
        .await
        .expect("every partition has a leader");
    let partitions: Vec<i32> = (0..6)
        .filter(|p| {
            snapshot
                .partition(&TopicPartition::new("sequenced", *p))
                .is_some_and(|v| v.leader == Some(leader))
        })
        .collect();
    let mut stream = connect(s.addr(leader)).await;
    let producer: InitProducerIdResponse = call(
        &mut stream,
        ApiKey::InitProducerId,
        4,
        &InitProducerIdRequest::default()
            .with_transactional_id(None)
            .with_transaction_timeout_ms(60_000)
            .with_producer_id((-1).into())
            .with_producer_epoch(-1),
    )
    .await;
    assert_eq!(producer.error_code, 0);
    let id = producer.producer_id.0;

    // librdkafka keeps up to 5 requests in flight per connection; more, and several
    // partitions per request, give the server every chance to reorder them.
    const REQUESTS: i32 = 400;
    const RECORDS: usize = 3;
    let mut pipelined = BytesMut::new();
    for n in 0..REQUESTS {
        let base = n * RECORDS as i32;
        let request = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_static_str("sequenced")))
                    .with_partition_data(
                        partitions
                            .iter()
                            .map(|p| {
                                PartitionProduceData::default()
                                    .with_index(*p)
                                    .with_records(Some(idempotent_batch(id, base, RECORDS)))
                            })
                            .collect(),
                    ),
            ]);
        pipelined.extend_from_slice(&frame(ApiKey::Produce, 9, n, &request));
    }
    // Written from a task of its own: the server stops reading while answers wait.
    let (mut reader, mut writer) = stream.into_split();
    let sending = tokio::spawn(async move { writer.write_all(&pipelined).await.expect("sent") });
    for n in 0..REQUESTS {
        let length = reader.read_i32().await.expect("an answer");
        let mut payload = vec![0u8; length as usize];
        reader.read_exact(&mut payload).await.expect("an answer");
        let mut payload = Bytes::from(payload);
        let header = ResponseHeader::decode(&mut payload, ProduceResponse::header_version(9)).expect("header");
        assert_eq!(header.correlation_id, n);
        let response = ProduceResponse::decode(&mut payload, 9).expect("response decodes");
        for p in &response.responses[0].partition_responses {
            assert_eq!(
                (p.error_code, p.base_offset),
                (0, i64::from(n) * RECORDS as i64),
                "request {n}, partition {}: appended in the order sent, no OUT_OF_ORDER_SEQUENCE_NUMBER (45)",
                p.index
            );
        }
    }
    sending.await.expect("the writer");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_frames_close_only_their_connection() {
    let s = setup_with(WireConfig {
        socket_request_max_bytes: 4096,
        ..free_ports()
    })
    .await;
    let addr = s.addr(0);

    let mut too_large = connect(addr).await;
    too_large.write_i32(4097).await.expect("sent");
    assert!(
        closed(&mut too_large).await,
        "a frame past the limit closes the connection"
    );

    let mut two_gib = connect(addr).await;
    two_gib.write_i32(i32::MAX).await.expect("sent");
    assert!(closed(&mut two_gib).await);

    let mut negative = connect(addr).await;
    negative.write_i32(-5).await.expect("sent");
    assert!(closed(&mut negative).await);

    let mut unknown_key = connect(addr).await;
    let mut body = BytesMut::new();
    body.put_i16(4242);
    body.put_i16(0);
    body.put_i32(1);
    body.put_i16(-1);
    unknown_key.write_i32(body.len() as i32).await.expect("sent");
    unknown_key.write_all(&body).await.expect("sent");
    assert!(
        closed(&mut unknown_key).await,
        "an unknown API key closes the connection"
    );

    let mut huge_array = connect(addr).await;
    let mut body = BytesMut::new();
    body.put_i16(ApiKey::Metadata as i16);
    body.put_i16(1);
    body.put_i32(1);
    body.put_i16(-1);
    body.put_i32(i32::MAX);
    huge_array.write_i32(body.len() as i32).await.expect("sent");
    huge_array.write_all(&body).await.expect("sent");
    assert!(
        closed(&mut huge_array).await,
        "an array longer than its frame is malformed"
    );

    // A connection opened before the garbage still works, and so does a new one.
    let mut fine = connect(addr).await;
    let response: ApiVersionsResponse = call(&mut fine, ApiKey::ApiVersions, 3, &ApiVersionsRequest::default()).await;
    assert_eq!(response.error_code, 0);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_broker_stops_listening_and_comes_back_on_the_same_port() {
    let s = setup().await;
    let addr = s.addr(2);
    let mut open = connect(addr).await;
    s.cluster.kill(2).expect("kill");
    s.server.sync().await;
    assert!(closed(&mut open).await, "open connections are dropped");
    assert!(TcpStream::connect(addr).await.is_err(), "the port refuses connections");

    s.cluster.start_broker(2).expect("start");
    s.server.sync().await;
    assert_eq!(s.addr(2), addr);
    let mut again = connect(addr).await;
    let response: ApiVersionsResponse = call(&mut again, ApiKey::ApiVersions, 3, &ApiVersionsRequest::default()).await;
    assert_eq!(response.error_code, 0);
    s.stop().await;
}

/// The brokers listed in a Metadata answer from `addr`, by id.
async fn metadata_brokers(addr: SocketAddr) -> Vec<(i32, i32)> {
    let mut stream = connect(addr).await;
    let all = MetadataRequest::default().with_topics(None);
    let response: MetadataResponse = call(&mut stream, ApiKey::Metadata, 12, &all).await;
    let mut brokers: Vec<(i32, i32)> = response.brokers.iter().map(|b| (b.node_id.0, b.port)).collect();
    brokers.sort();
    brokers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_broker_gets_a_listener_and_is_in_metadata_until_it_is_decommissioned() {
    let s = setup().await;
    let id = s.cluster.add_broker().expect("a broker is added");
    assert_eq!(id, 3);
    s.cluster
        .wait_for(Duration::from_secs(30), |snap| {
            snap.broker(3).is_some_and(|b| !b.fenced)
        })
        .await
        .expect("broker 3 registers");
    s.server.sync().await;
    let addr = s.addr(3);
    let listed = metadata_brokers(addr).await;
    assert_eq!(
        listed.iter().map(|(b, _)| *b).collect::<Vec<_>>(),
        vec![0, 1, 2, 3],
        "the new broker answers Metadata and lists itself"
    );
    assert!(listed.contains(&(3, i32::from(addr.port()))));

    s.cluster.decommission(3).await.expect("decommission starts");
    s.cluster
        .wait_for(Duration::from_secs(30), |snap| snap.broker(3).is_none())
        .await
        .expect("broker 3 leaves");
    s.server.sync().await;
    assert!(
        s.server.listeners().iter().all(|l| l.broker != 3),
        "its address is released"
    );
    assert!(TcpStream::connect(addr).await.is_err(), "its port refuses connections");
    let listed = metadata_brokers(s.addr(0)).await;
    assert_eq!(listed.iter().map(|(b, _)| *b).collect::<Vec<_>>(), vec![0, 1, 2]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_memory_connection_to_a_listener_pauses_and_closes_with_it() {
    let s = setup().await;
    let mut pipe = s.server.connect_in_memory(2).expect("connects");
    let response: ApiVersionsResponse = call(&mut pipe, ApiKey::ApiVersions, 3, &ApiVersionsRequest::default()).await;
    assert_eq!(response.error_code, 0);

    s.cluster.pause(2).expect("pause");
    s.server.sync().await;
    pipe.write_all(&frame(ApiKey::ApiVersions, 3, 5, &ApiVersionsRequest::default()))
        .await
        .expect("sent");
    let mut length = [0u8; 4];
    assert!(
        tokio::time::timeout(Duration::from_millis(300), pipe.read_exact(&mut length))
            .await
            .is_err(),
        "a paused broker does not answer"
    );
    s.cluster.resume(2).expect("resume");
    s.server.sync().await;
    let mut payload = read_response(&mut pipe).await.expect("answered after resume");
    assert_eq!(payload.get_i32(), 5);

    s.cluster.kill(2).expect("kill");
    s.server.sync().await;
    assert!(closed(&mut pipe).await, "open connections are dropped");
    assert!(matches!(s.server.connect_in_memory(2), Err(WireError::NotRunning(2))));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_dies_with_requests_in_hand_closes_their_connections_without_network_exception() {
    let s = setup().await;
    let leader = s.topic("doomed", 1).await;
    let tp = TopicPartition::new("doomed", 0);
    let followers: Vec<i32> = (0..3).filter(|b| *b != leader).collect();
    // With its followers frozen, an acks=all produce waits in the leader for replication.
    for f in &followers {
        s.cluster.pause(*f).expect("pause");
    }
    let mut producing = connect(s.addr(leader)).await;
    producing
        .write_all(&frame(
            ApiKey::Produce,
            9,
            1,
            &produce_request("doomed", 0, -1, batch(&["in flight"])),
        ))
        .await
        .expect("sent");
    s.cluster
        .wait_for(Duration::from_secs(10), |snapshot| {
            snapshot.partition(&tp).is_some_and(|p| {
                p.replicas
                    .iter()
                    .any(|r| r.broker == leader && r.log_end_offset == Some(1))
            })
        })
        .await
        .expect("the leader appended the batch");
    let mut fetching = connect(s.addr(leader)).await;
    let mut listing = connect(s.addr(leader)).await;
    let mut heartbeating = connect(s.addr(leader)).await;

    // The port stays open until the listeners catch up with the kill: requests sent meanwhile
    // reach a broker that is gone.
    s.cluster.kill(leader).expect("kill");
    fetching
        .write_all(&frame(ApiKey::Fetch, 12, 2, &fetch_request("doomed", 0, 0, 0)))
        .await
        .expect("sent");
    let list = ListOffsetsRequest::default()
        .with_replica_id((-1).into())
        .with_topics(vec![
            list_offsets_request::ListOffsetsTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("doomed")))
                .with_partitions(vec![
                    list_offsets_request::ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_timestamp(-1),
                ]),
        ]);
    listing
        .write_all(&frame(ApiKey::ListOffsets, 6, 3, &list))
        .await
        .expect("sent");
    let heartbeat = HeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("doomed-group")))
        .with_generation_id(1)
        .with_member_id(StrBytes::from_static_str("member"));
    heartbeating
        .write_all(&frame(ApiKey::Heartbeat, 4, 4, &heartbeat))
        .await
        .expect("sent");

    // NETWORK_EXCEPTION (13) is what a client makes of a broken connection; librdkafka
    // takes it from a broker as a permanent failure of the records.
    let mut answered = Vec::new();
    for (api, stream) in [
        ("Produce", &mut producing),
        ("Fetch", &mut fetching),
        ("ListOffsets", &mut listing),
        ("Heartbeat", &mut heartbeating),
    ] {
        if !closed(stream).await {
            answered.push(api);
        }
    }
    assert!(
        answered.is_empty(),
        "a crashed broker's connections close without an answer; these were answered: {answered:?}"
    );
    for f in &followers {
        s.cluster.resume(*f).expect("resume");
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_broker_accepts_and_never_answers_until_resumed() {
    let s = setup().await;
    s.cluster.pause(1).expect("pause");
    s.server.sync().await;
    let mut stream = connect(s.addr(1)).await;
    stream
        .write_all(&frame(ApiKey::ApiVersions, 3, 5, &ApiVersionsRequest::default()))
        .await
        .expect("sent");
    let mut length = [0u8; 4];
    assert!(
        tokio::time::timeout(Duration::from_millis(300), stream.read_exact(&mut length))
            .await
            .is_err(),
        "a paused broker does not answer"
    );
    s.cluster.resume(1).expect("resume");
    s.server.sync().await;
    let mut payload = read_response(&mut stream).await.expect("answered after resume");
    assert_eq!(payload.get_i32(), 5);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listener_configuration_errors_are_clear() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cluster = Cluster::start(ClusterConfig {
        data_dir: dir.path().to_path_buf(),
        brokers: 1,
        ..ClusterConfig::default()
    })
    .await
    .expect("cluster starts");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("addr").port();
    let error = WireServer::start(
        cluster.clone(),
        WireConfig {
            base_port: port,
            ..WireConfig::default()
        },
    )
    .await
    .err()
    .expect("the port is in use");
    assert!(matches!(error, WireError::PortInUse { broker: 0, port: p } if p == port));
    assert!(error.to_string().contains(&port.to_string()), "{error}");

    let error = WireServer::start(
        cluster.clone(),
        WireConfig {
            host: "0.0.0.0".into(),
            ..free_ports()
        },
    )
    .await
    .err()
    .expect("a non-loopback host needs the opt-in");
    assert!(matches!(error, WireError::NonLoopback(_)), "{error}");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_topics_takes_topic_configs_and_refuses_bad_ones_with_invalid_config() {
    let s = setup().await;
    let mut stream = connect(s.addr(0)).await;
    let create = |name: &str, configs: &[(&str, &str)]| {
        CreateTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![creatable_topic(name, configs)])
    };
    let answer = |response: &CreateTopicsResponse| {
        let t = &response.topics[0];
        (
            t.error_code,
            t.error_message.as_ref().map(|m| m.to_string()).unwrap_or_default(),
        )
    };
    let version = 5;
    let ok: CreateTopicsResponse = call(
        &mut stream,
        ApiKey::CreateTopics,
        version,
        &create(
            "profiles",
            &[("cleanup.policy", "compact"), ("delete.retention.ms", "1000")],
        ),
    )
    .await;
    assert_eq!(answer(&ok).0, 0, "{:?}", answer(&ok));
    let log = s.cluster.metadata().topics["profiles"]
        .config
        .log_config(&s.cluster.config().log);
    assert!(log.cleanup_policy.compacts() && !log.cleanup_policy.deletes());
    assert_eq!(log.delete_retention_ms, 1000);

    for (configs, says) in [
        (&[("min.cleanable.dirty.ratio", "2")][..], "min_cleanable_dirty_ratio"),
        (&[("delete.retention.ms", "-5")][..], "delete_retention_ms"),
        (&[("cleanup.policy", "shred")][..], "shred"),
        (&[("retention.ms", "soon")][..], "retention.ms"),
        (&[("compression.codec", "zstd")][..], "not supported"),
    ] {
        let refused: CreateTopicsResponse =
            call(&mut stream, ApiKey::CreateTopics, version, &create("bad", configs)).await;
        let (code, message) = answer(&refused);
        assert_eq!(code, 40, "INVALID_CONFIG for {configs:?}: {message}");
        assert!(message.contains(says), "{configs:?}: {message}");
    }
    assert!(!s.cluster.metadata().topics.contains_key("bad"));
    s.stop().await;
}

fn creatable_topic(
    name: &str,
    configs: &[(&str, &str)],
) -> kafka_protocol::messages::create_topics_request::CreatableTopic {
    use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    CreatableTopic::default()
        .with_name(TopicName(StrBytes::from_string(name.to_string())))
        .with_num_partitions(1)
        .with_replication_factor(3)
        .with_configs(
            configs
                .iter()
                .map(|(k, v)| {
                    CreatableTopicConfig::default()
                        .with_name(StrBytes::from_string(k.to_string()))
                        .with_value(Some(StrBytes::from_string(v.to_string())))
                })
                .collect(),
        )
}

/// A topic of `partitions` partitions with `cleanup.policy=compact`.
fn compacted(partitions: i32) -> TopicConfig {
    TopicConfig::new(partitions, 3).with_cleanup_policy(kdeck::storage::CleanupPolicy::Compact)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_topic_refuses_keyless_records_with_kafkas_message() {
    let s = setup().await;
    let leader = s.topic_with("profiles", compacted(1)).await;
    let mut stream = connect(s.addr(leader)).await;
    // `batch` makes keyless records.
    let refused: ProduceResponse = call(
        &mut stream,
        ApiKey::Produce,
        9,
        &produce_request("profiles", 0, -1, batch(&["no key"])),
    )
    .await;
    let answer = &refused.responses[0].partition_responses[0];
    assert_eq!(answer.error_code, 87, "INVALID_RECORD");
    assert_eq!(
        answer.error_message.as_ref().map(|m| m.as_str()),
        Some("Compacted topic cannot accept message without key in topic partition profiles-0.")
    );
    // Produce v7 has no error_message: the code alone, and the response still encodes.
    let refused: ProduceResponse = call(
        &mut stream,
        ApiKey::Produce,
        7,
        &produce_request("profiles", 0, -1, batch(&["no key"])),
    )
    .await;
    assert_eq!(refused.responses[0].partition_responses[0].error_code, 87);
    let keyed = records::encode_batch(
        &[records::record(
            0,
            1_000,
            Some(Bytes::from("k")),
            Some(Bytes::from("v")),
        )],
        Compression::None,
    )
    .expect("batch encodes")
    .freeze();
    let accepted: ProduceResponse = call(
        &mut stream,
        ApiKey::Produce,
        9,
        &produce_request("profiles", 0, -1, keyed),
    )
    .await;
    let answer = &accepted.responses[0].partition_responses[0];
    assert_eq!((answer.error_code, answer.base_offset), (0, 0));
    s.stop().await;
}

/// AlterPartitionReassignments and ListPartitionReassignments (KIP-455): a move is listed
/// while the adding replica cannot catch up, completes once it can, and bad requests get
/// Kafka's error codes per partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_reassignment_is_listed_while_it_moves_and_completes() {
    use kafka_protocol::messages::alter_partition_reassignments_request::{ReassignablePartition, ReassignableTopic};
    let s = setup().await;
    s.cluster
        .create_topic("moving", TopicConfig::new(1, 1))
        .await
        .expect("topic created");
    let tp = TopicPartition::new("moving", 0);
    let snapshot = s
        .cluster
        .wait_for(Duration::from_secs(10), |s| {
            s.partition(&tp)
                .is_some_and(|p| p.leader.is_some() && p.high_watermark.is_some())
        })
        .await
        .expect("a leader");
    let from = snapshot.partition(&tp).and_then(|p| p.leader).expect("leader");
    let to = (from + 1) % 3;
    let alter = |replicas: Option<Vec<i32>>| {
        AlterPartitionReassignmentsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![
                ReassignableTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("moving")))
                    .with_partitions(vec![
                        ReassignablePartition::default()
                            .with_partition_index(0)
                            .with_replicas(replicas.map(|r| r.into_iter().map(BrokerId).collect())),
                    ]),
            ])
    };
    let code = |r: &AlterPartitionReassignmentsResponse| (r.error_code, r.responses[0].partitions[0].error_code);
    let mut stream = connect(s.addr(from)).await;

    // Nothing moves yet: a cancel is refused, as are bad targets.
    let r: AlterPartitionReassignmentsResponse =
        call(&mut stream, ApiKey::AlterPartitionReassignments, 0, &alter(None)).await;
    assert_eq!(code(&r), (0, 85), "NO_REASSIGNMENT_IN_PROGRESS");
    for bad in [vec![], vec![to, to], vec![7]] {
        let r: AlterPartitionReassignmentsResponse = call(
            &mut stream,
            ApiKey::AlterPartitionReassignments,
            0,
            &alter(Some(bad.clone())),
        )
        .await;
        assert_eq!(code(&r), (0, 39), "INVALID_REPLICA_ASSIGNMENT for {bad:?}");
    }
    let r: AlterPartitionReassignmentsResponse = call(
        &mut stream,
        ApiKey::AlterPartitionReassignments,
        1,
        &alter(Some(vec![from, to])).with_allow_replication_factor_change(false),
    )
    .await;
    assert_eq!(
        code(&r),
        (0, 38),
        "INVALID_REPLICATION_FACTOR when v1 forbids the change"
    );
    assert!(!r.allow_replication_factor_change);

    // The target broker is paused: the move starts and stays listed.
    s.cluster.pause(to).expect("pause");
    let r: AlterPartitionReassignmentsResponse = call(
        &mut stream,
        ApiKey::AlterPartitionReassignments,
        0,
        &alter(Some(vec![to])),
    )
    .await;
    assert_eq!(code(&r), (0, 0));
    let listed: ListPartitionReassignmentsResponse = call(
        &mut stream,
        ApiKey::ListPartitionReassignments,
        0,
        &ListPartitionReassignmentsRequest::default().with_timeout_ms(10_000),
    )
    .await;
    assert_eq!(listed.topics.len(), 1, "{listed:?}");
    let moving = &listed.topics[0].partitions[0];
    assert_eq!(listed.topics[0].name.0.as_str(), "moving");
    assert_eq!(moving.replicas, vec![BrokerId(to), BrokerId(from)]);
    assert_eq!(moving.adding_replicas, vec![BrokerId(to)]);
    assert_eq!(moving.removing_replicas, vec![BrokerId(from)]);

    // Once the new replica can fetch, the move completes and the list is empty again.
    s.cluster.resume(to).expect("resume");
    s.cluster
        .wait_for(Duration::from_secs(20), |snap| {
            snap.partition(&tp)
                .is_some_and(|p| p.replicas.iter().map(|r| r.broker).eq([to]) && p.leader == Some(to))
        })
        .await
        .expect("the partition moved to the target broker");
    let listed: ListPartitionReassignmentsResponse = call(
        &mut stream,
        ApiKey::ListPartitionReassignments,
        0,
        &ListPartitionReassignmentsRequest::default().with_timeout_ms(10_000),
    )
    .await;
    assert!(listed.topics.is_empty(), "{listed:?}");
    s.stop().await;
}

fn describe_log_dirs_request(topic: Option<(&str, i32)>) -> DescribeLogDirsRequest {
    DescribeLogDirsRequest::default().with_topics(topic.map(|(name, partition)| {
        vec![
            describe_log_dirs_request::DescribableLogDirTopic::default()
                .with_topic(TopicName(StrBytes::from_string(name.to_string())))
                .with_partitions(vec![partition]),
        ]
    }))
}

fn delete_records_request(topic: &str, partition: i32, offset: i64) -> DeleteRecordsRequest {
    DeleteRecordsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![
            delete_records_request::DeleteRecordsTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![
                    delete_records_request::DeleteRecordsPartition::default()
                        .with_partition_index(partition)
                        .with_offset(offset),
                ]),
        ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_log_dirs_tells_each_replica_size_and_delete_records_moves_the_log_start_on_the_leader() {
    let s = setup().await;
    let leader = s.topic("orders", 1).await;
    let follower = (leader + 1) % 3;
    let tp = TopicPartition::new("orders", 0);
    let mut to_leader = connect(s.addr(leader)).await;
    let produced: ProduceResponse = call(
        &mut to_leader,
        ApiKey::Produce,
        9,
        &produce_request("orders", 0, -1, batch(&["a", "b", "c", "d"])),
    )
    .await;
    assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
    s.cluster
        .wait_for(Duration::from_secs(10), |snap| {
            snap.partition(&tp)
                .is_some_and(|p| p.replicas.iter().all(|r| r.log_end_offset == Some(4)))
        })
        .await
        .expect("replicated");

    let mut to_follower = connect(s.addr(follower)).await;
    // v0 as Kafka 3.9 serves it, v1, and v4 with the filesystem's sizes.
    for version in [0, 1, 4] {
        let dirs: DescribeLogDirsResponse = call(
            &mut to_follower,
            ApiKey::DescribeLogDirs,
            version,
            &describe_log_dirs_request(Some(("orders", 0))),
        )
        .await;
        assert_eq!(dirs.results.len(), 1, "one log dir per broker");
        let dir = &dirs.results[0];
        assert_eq!(dir.error_code, 0);
        assert!(
            dir.log_dir.ends_with(&format!("broker-{follower}")),
            "{}",
            dir.log_dir.as_str()
        );
        assert_eq!(dir.topics.len(), 1);
        assert_eq!(dir.topics[0].name.as_str(), "orders");
        let p = &dir.topics[0].partitions[0];
        assert_eq!((p.partition_index, p.offset_lag, p.is_future_key), (0, 0, false));
        assert!(p.partition_size > 0, "the segment holds the four records");
        if version == 4 {
            assert!(dir.total_bytes > 0 && dir.usable_bytes >= 0 && dir.usable_bytes <= dir.total_bytes);
        }
    }
    let all: DescribeLogDirsResponse = call(
        &mut to_follower,
        ApiKey::DescribeLogDirs,
        4,
        &describe_log_dirs_request(None),
    )
    .await;
    assert!(
        all.results[0].topics.iter().any(|t| t.name.as_str() == "orders"),
        "null topics: every replica"
    );

    let refused: DeleteRecordsResponse = call(
        &mut to_follower,
        ApiKey::DeleteRecords,
        2,
        &delete_records_request("orders", 0, 2),
    )
    .await;
    assert_eq!(refused.topics[0].partitions[0].error_code, 6, "NOT_LEADER_OR_FOLLOWER");
    let past: DeleteRecordsResponse = call(
        &mut to_leader,
        ApiKey::DeleteRecords,
        2,
        &delete_records_request("orders", 0, 5),
    )
    .await;
    assert_eq!(
        past.topics[0].partitions[0].error_code, 1,
        "OFFSET_OUT_OF_RANGE past the HW"
    );
    let deleted: DeleteRecordsResponse = call(
        &mut to_leader,
        ApiKey::DeleteRecords,
        0,
        &delete_records_request("orders", 0, 2),
    )
    .await;
    let p = &deleted.topics[0].partitions[0];
    assert_eq!((p.error_code, p.low_watermark), (0, 2));
    let below: FetchResponse = call(&mut to_leader, ApiKey::Fetch, 12, &fetch_request("orders", 0, 0, 0)).await;
    assert_eq!(below.responses[0].partitions[0].error_code, 1, "offset 0 is gone");
    let to_hw: DeleteRecordsResponse = call(
        &mut to_leader,
        ApiKey::DeleteRecords,
        1,
        &delete_records_request("orders", 0, -1),
    )
    .await;
    assert_eq!(
        to_hw.topics[0].partitions[0].low_watermark, 4,
        "-1 is the high watermark"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_acls_is_answered_as_by_a_broker_without_an_authorizer() {
    let s = setup().await;
    let mut stream = connect(s.addr(0)).await;
    let everything = DescribeAclsRequest::default()
        .with_resource_type_filter(1)
        .with_pattern_type_filter(1)
        .with_operation(1)
        .with_permission_type(1);
    // v0 (no pattern types) as Kafka 3.9 serves it.
    for version in 0..=3 {
        let response: DescribeAclsResponse = call(&mut stream, ApiKey::DescribeAcls, version, &everything).await;
        assert_eq!(response.error_code, 54, "SECURITY_DISABLED at v{version}");
        assert_eq!(
            response.error_message.as_ref().map(|m| m.as_str()),
            Some("No Authorizer is configured.")
        );
        assert!(response.resources.is_empty());
    }
    assert_eq!(versions::range(ApiKey::DescribeAcls), Some((0, 3)), "advertised");
    s.stop().await;
}

/// A fetch of several partitions of one topic, as a session's client sends it.
fn session_fetch(
    topic: &str,
    partitions: &[(i32, i64)],
    session_id: i32,
    epoch: i32,
    max_wait_ms: i32,
) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_id(session_id)
        .with_session_epoch(epoch)
        .with_topics(if partitions.is_empty() {
            vec![]
        } else {
            vec![
                FetchTopic::default().with_topic(topic_name(topic)).with_partitions(
                    partitions
                        .iter()
                        .map(|(p, offset)| {
                            FetchPartition::default()
                                .with_partition(*p)
                                .with_fetch_offset(*offset)
                                .with_partition_max_bytes(1 << 20)
                        })
                        .collect(),
                ),
            ]
        })
}

fn answered(response: &FetchResponse) -> Vec<(i32, usize)> {
    response
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| (p.partition_index, p.records.as_ref().map_or(0, |r| r.len())))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incremental_fetch_session_answers_only_partitions_that_changed() {
    let s = setup().await;
    s.topic("sessions", 4).await;
    // Two partitions with the same leader (leaders go round the three brokers).
    let snapshot = s
        .cluster
        .wait_for(Duration::from_secs(10), |snap| {
            (0..4).all(|p| {
                snap.partition(&TopicPartition::new("sessions", p))
                    .is_some_and(|v| v.leader.is_some() && v.high_watermark.is_some())
            })
        })
        .await
        .expect("every partition has a leader");
    let leader_of = |p: i32| {
        snapshot
            .partition(&TopicPartition::new("sessions", p))
            .and_then(|v| v.leader)
    };
    let (a, b) = (0..4)
        .flat_map(|a| (a + 1..4).map(move |b| (a, b)))
        .find(|(a, b)| leader_of(*a) == leader_of(*b))
        .expect("two of four partitions share one of three leaders");
    let leader = leader_of(a).expect("a leader");
    let mut stream = connect(s.addr(leader)).await;

    // Epoch 0: a full fetch that opens a session.
    let full: FetchResponse = call(
        &mut stream,
        ApiKey::Fetch,
        12,
        &session_fetch("sessions", &[(a, 0), (b, 0)], 0, 0, 0),
    )
    .await;
    assert_eq!(full.error_code, 0);
    assert_ne!(full.session_id, 0, "the broker opened a session");
    assert_eq!(answered(&full), vec![(a, 0), (b, 0)]);
    let id = full.session_id;

    // Epoch 1, naming nothing: nothing changed, nothing answered.
    let idle: FetchResponse = call(
        &mut stream,
        ApiKey::Fetch,
        12,
        &session_fetch("sessions", &[], id, 1, 0),
    )
    .await;
    assert_eq!((idle.error_code, idle.session_id), (0, id));
    assert_eq!(answered(&idle), vec![]);

    // A record on `a`: the next incremental fetch answers `a` alone, with it.
    let mut producer = connect(s.addr(leader)).await;
    let produced: ProduceResponse = call(
        &mut producer,
        ApiKey::Produce,
        9,
        &produce_request("sessions", a, -1, batch(&["news"])),
    )
    .await;
    assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
    let news: FetchResponse = call(
        &mut stream,
        ApiKey::Fetch,
        12,
        &session_fetch("sessions", &[], id, 2, 10_000),
    )
    .await;
    assert_eq!(news.error_code, 0);
    let got = answered(&news);
    assert_eq!(got.len(), 1, "only the partition with news: {got:?}");
    assert_eq!(got[0].0, a);
    assert!(got[0].1 > 0, "with its records");

    // The client moves `a` on: quiet again.
    let moved: FetchResponse = call(
        &mut stream,
        ApiKey::Fetch,
        12,
        &session_fetch("sessions", &[(a, 1)], id, 3, 0),
    )
    .await;
    assert_eq!(answered(&moved), vec![]);

    // A repeated epoch, and an unknown session.
    let again: FetchResponse = call(
        &mut stream,
        ApiKey::Fetch,
        12,
        &session_fetch("sessions", &[], id, 3, 0),
    )
    .await;
    assert_eq!(again.error_code, 71, "INVALID_FETCH_SESSION_EPOCH");
    let unknown = if id == i32::MAX { 1 } else { id + 1 };
    let lost: FetchResponse = call(
        &mut stream,
        ApiKey::Fetch,
        12,
        &session_fetch("sessions", &[], unknown, 1, 0),
    )
    .await;
    assert_eq!(lost.error_code, 70, "FETCH_SESSION_ID_NOT_FOUND");

    // The final epoch closes the session and is answered in full, without one.
    let last: FetchResponse = call(
        &mut stream,
        ApiKey::Fetch,
        12,
        &session_fetch("sessions", &[(a, 1), (b, 0)], id, -1, 0),
    )
    .await;
    assert_eq!((last.error_code, last.session_id), (0, 0));
    assert_eq!(answered(&last), vec![(a, 0), (b, 0)]);
    let closed: FetchResponse = call(
        &mut stream,
        ApiKey::Fetch,
        12,
        &session_fetch("sessions", &[], id, 4, 0),
    )
    .await;
    assert_eq!(closed.error_code, 70);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_have_ids_that_metadata_and_delete_topics_take() {
    let s = setup().await;
    let leader = s.topic("with-id", 1).await;
    s.topic("other", 1).await;
    let mut stream = connect(s.addr(leader)).await;
    let all: MetadataResponse = call(
        &mut stream,
        ApiKey::Metadata,
        12,
        &MetadataRequest::default().with_topics(None),
    )
    .await;
    let id_of = |name: &str| {
        all.topics
            .iter()
            .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == name))
            .map(|t| t.topic_id)
            .expect("the topic is listed")
    };
    let id = id_of("with-id");
    assert!(!id.is_nil(), "a topic id, as Metadata v10+ carries");
    assert_ne!(id, id_of("other"), "each topic its own id");

    // v12 asks by id alone; an id no topic has is UNKNOWN_TOPIC_ID.
    let unknown = uuid::Uuid::from_u128(id.as_u128() ^ 0xff);
    let by_id: MetadataResponse = call(
        &mut stream,
        ApiKey::Metadata,
        12,
        &MetadataRequest::default().with_topics(Some(vec![
            metadata_request::MetadataRequestTopic::default()
                .with_name(None)
                .with_topic_id(id),
            metadata_request::MetadataRequestTopic::default()
                .with_name(None)
                .with_topic_id(unknown),
        ])),
    )
    .await;
    assert_eq!(by_id.topics.len(), 2);
    assert_eq!(by_id.topics[0].name.as_ref().map(|n| n.0.as_str()), Some("with-id"));
    assert_eq!((by_id.topics[0].error_code, by_id.topics[0].topic_id), (0, id));
    assert_eq!((by_id.topics[1].error_code, by_id.topics[1].topic_id), (100, unknown));

    // DeleteTopics v6 by id.
    let deleted: DeleteTopicsResponse = call(
        &mut stream,
        ApiKey::DeleteTopics,
        6,
        &DeleteTopicsRequest::default()
            .with_topics(vec![
                delete_topics_request::DeleteTopicState::default()
                    .with_name(None)
                    .with_topic_id(id),
            ])
            .with_timeout_ms(10_000),
    )
    .await;
    assert_eq!(deleted.responses[0].error_code, 0);
    assert!(!s.cluster.metadata().topics.contains_key("with-id"));
    assert!(s.cluster.metadata().topics.contains_key("other"));
    s.stop().await;
}

fn add_partitions(id: &str, pid: i64, epoch: i16, topic: &str, partition: i32) -> AddPartitionsToTxnRequest {
    use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
    AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(TransactionalId(StrBytes::from_string(id.to_string())))
        .with_v3_and_below_producer_id(pid.into())
        .with_v3_and_below_producer_epoch(epoch)
        .with_v3_and_below_topics(vec![
            AddPartitionsToTxnTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partitions(vec![partition]),
        ])
}

fn end_txn(id: &str, pid: i64, epoch: i16, commit: bool) -> EndTxnRequest {
    EndTxnRequest::default()
        .with_transactional_id(TransactionalId(StrBytes::from_string(id.to_string())))
        .with_producer_id(pid.into())
        .with_producer_epoch(epoch)
        .with_committed(commit)
}

fn init_txn(id: &str) -> InitProducerIdRequest {
    InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_string(id.to_string()))))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id((-1).into())
        .with_producer_epoch(-1)
}

/// The coordinator of `key` (FindCoordinator v4 with `key_type`: 0 a group, 1 a transactional
/// id), asked until it answers: the first transactional ask makes `__transaction_state`.
async fn coordinator_of(s: &Setup, key_type: i8, key: &str) -> TcpStream {
    let mut any = connect(s.addr(0)).await;
    for _ in 0..100 {
        let found: FindCoordinatorResponse = call(
            &mut any,
            ApiKey::FindCoordinator,
            4,
            &FindCoordinatorRequest::default()
                .with_key_type(key_type)
                .with_coordinator_keys(vec![StrBytes::from_string(key.to_string())]),
        )
        .await;
        let c = &found.coordinators[0];
        if c.error_code == 0 {
            return connect(s.addr(c.node_id.0)).await;
        }
        assert_eq!(c.error_code, 15, "COORDINATOR_NOT_AVAILABLE while the topic is made");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no coordinator for {key}");
}

/// `id`'s coordinator and the producer id and epoch InitProducerId gave it (retried while the
/// coordinator loads its partition, as clients do).
async fn transactional_id_ready(s: &Setup, id: &str) -> (TcpStream, i64, i16) {
    let mut coordinator = coordinator_of(s, 1, id).await;
    for _ in 0..100 {
        let r: InitProducerIdResponse = call(&mut coordinator, ApiKey::InitProducerId, 4, &init_txn(id)).await;
        if ![14, 15, 16, 51].contains(&r.error_code) {
            assert_eq!(r.error_code, 0, "InitProducerId");
            return (coordinator, r.producer_id.0, r.producer_epoch);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("InitProducerId never answered for {id}");
}

/// OffsetFetch v8 of one partition of `group`: (error code, committed offset).
async fn offset_fetch_v8(
    conn: &mut TcpStream,
    group: &str,
    topic: &str,
    partition: i32,
    require_stable: bool,
) -> (i16, i64) {
    let request = OffsetFetchRequest::default()
        .with_groups(vec![
            OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
                .with_topics(Some(vec![
                    OffsetFetchRequestTopics::default()
                        .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                        .with_partition_indexes(vec![partition]),
                ])),
        ])
        .with_require_stable(require_stable);
    let fetched: OffsetFetchResponse = call(conn, ApiKey::OffsetFetch, 8, &request).await;
    let group = &fetched.groups[0];
    assert_eq!(group.error_code, 0, "OffsetFetch of {}", group.group_id.as_str());
    let p = &group.topics[0].partitions[0];
    (p.error_code, p.committed_offset)
}

/// KIP-447 as librdkafka and the Java consumer use it at read_committed: while a transaction
/// has offsets pending for a partition, OffsetFetch with require_stable answers
/// UNSTABLE_OFFSET_COMMIT (88) for it, and without the flag the offset committed before; the
/// COMMIT marker makes the new offset the stable one, an ABORT leaves the old one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_stable_offset_fetch_waits_for_the_transaction_that_commits_the_offsets() {
    let s = setup().await;
    s.topic("input", 1).await;
    let id = "etl-writer";
    let (mut txn_coordinator, pid, epoch) = transactional_id_ready(&s, id).await;
    let mut group_coordinator = coordinator_of(&s, 0, "etl").await;
    let txn_id = || TransactionalId(StrBytes::from_static_str("etl-writer"));

    let mut before = -1;
    for (offset, commit) in [(10, true), (25, true), (40, false)] {
        let added = loop {
            let added: AddOffsetsToTxnResponse = call(
                &mut txn_coordinator,
                ApiKey::AddOffsetsToTxn,
                3,
                &AddOffsetsToTxnRequest::default()
                    .with_transactional_id(txn_id())
                    .with_producer_id(pid.into())
                    .with_producer_epoch(epoch)
                    .with_group_id(GroupId(StrBytes::from_static_str("etl"))),
            )
            .await;
            // CONCURRENT_TRANSACTIONS while the previous transaction completes.
            if added.error_code != 51 {
                break added.error_code;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(added, 0, "AddOffsetsToTxn for {offset}");
        let committed: TxnOffsetCommitResponse = call(
            &mut group_coordinator,
            ApiKey::TxnOffsetCommit,
            3,
            &TxnOffsetCommitRequest::default()
                .with_transactional_id(txn_id())
                .with_group_id(GroupId(StrBytes::from_static_str("etl")))
                .with_producer_id(pid.into())
                .with_producer_epoch(epoch)
                .with_generation_id(-1)
                .with_member_id(StrBytes::from_static_str(""))
                .with_topics(vec![
                    TxnOffsetCommitRequestTopic::default()
                        .with_name(TopicName(StrBytes::from_static_str("input")))
                        .with_partitions(vec![
                            TxnOffsetCommitRequestPartition::default()
                                .with_partition_index(0)
                                .with_committed_offset(offset),
                        ]),
                ]),
        )
        .await;
        assert_eq!(
            committed.topics[0].partitions[0].error_code, 0,
            "TxnOffsetCommit of {offset}"
        );

        assert_eq!(
            offset_fetch_v8(&mut group_coordinator, "etl", "input", 0, true).await,
            (88, -1),
            "UNSTABLE_OFFSET_COMMIT while {offset} is pending"
        );
        assert_eq!(
            offset_fetch_v8(&mut group_coordinator, "etl", "input", 0, false).await,
            (0, before),
            "without require_stable: the offset committed before"
        );

        let ended: EndTxnResponse = call(
            &mut txn_coordinator,
            ApiKey::EndTxn,
            3,
            &end_txn(id, pid, epoch, commit),
        )
        .await;
        assert_eq!(ended.error_code, 0, "EndTxn for {offset}");
        // The marker reaches the offsets partition after EndTxn is answered.
        let wanted = if commit { offset } else { before };
        let mut seen = (88, -1);
        for _ in 0..100 {
            seen = offset_fetch_v8(&mut group_coordinator, "etl", "input", 0, true).await;
            if seen.0 != 88 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(
            seen,
            (0, wanted),
            "after {} of {offset}",
            if commit { "COMMIT" } else { "ABORT" }
        );
        before = wanted;
    }
}

/// A transactional producer's whole conversation over TCP, as librdkafka and the Java client
/// have it: FindCoordinator with key type 1, InitProducerId, AddPartitionsToTxn, Produce to the
/// leader, EndTxn; a read_committed Fetch then sees the committed record and not the aborted
/// one; DescribeTransactions and ListTransactions show the id; a second InitProducerId fences
/// the first epoch (PRODUCER_FENCED from v2 of AddPartitionsToTxn and EndTxn,
/// INVALID_PRODUCER_EPOCH before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transactional_producer_commits_aborts_and_is_fenced_over_the_wire() {
    let s = setup().await;
    let leader = s.topic("ledger", 1).await;
    let id = "ledger-writer";
    let (mut coordinator, pid, epoch) = transactional_id_ready(&s, id).await;
    assert!(s.cluster.metadata().topics.contains_key("__transaction_state"));

    let mut to_leader = connect(s.addr(leader)).await;
    for (seq, value, commit) in [(0, "kept", true), (1, "dropped", false)] {
        // CONCURRENT_TRANSACTIONS while the previous transaction's markers are written; the
        // clients retry it.
        let added = loop {
            let added: AddPartitionsToTxnResponse = call(
                &mut coordinator,
                ApiKey::AddPartitionsToTxn,
                3,
                &add_partitions(id, pid, epoch, "ledger", 0),
            )
            .await;
            let code = added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code;
            if code != 51 {
                break code;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(added, 0, "AddPartitionsToTxn for {value}");
        let produced: ProduceResponse = call(
            &mut to_leader,
            ApiKey::Produce,
            9,
            &produce_request("ledger", 0, -1, Bytes::from(txn_batch(pid, epoch, seq, &[value])))
                .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("ledger-writer")))),
        )
        .await;
        assert_eq!(produced.responses[0].partition_responses[0].error_code, 0, "{value}");
        let ended: EndTxnResponse = call(&mut coordinator, ApiKey::EndTxn, 3, &end_txn(id, pid, epoch, commit)).await;
        assert_eq!(ended.error_code, 0, "EndTxn for {value}");
    }

    // Both markers are written once the coordinator completes; read_committed then reads to
    // the end and drops the aborted record.
    let mut values = Vec::new();
    for _ in 0..100 {
        let fetched: FetchResponse = call(
            &mut to_leader,
            ApiKey::Fetch,
            12,
            &fetch_request("ledger", 0, 0, 0).with_isolation_level(1),
        )
        .await;
        let p = &fetched.responses[0].partitions[0];
        if p.last_stable_offset == 4 {
            let aborted: Vec<i64> = p
                .aborted_transactions
                .iter()
                .flatten()
                .map(|t| t.first_offset)
                .collect();
            assert_eq!(aborted, [2], "the aborted transaction's first offset");
            values = records::decode(p.records.as_ref().expect("records"))
                .expect("decodes")
                .into_iter()
                .filter(|r| !r.control && !aborted.contains(&r.offset))
                .filter_map(|r| r.value.map(|v| String::from_utf8_lossy(&v).into_owned()))
                .collect();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        values,
        ["kept"],
        "kept, COMMIT, dropped, ABORT: read_committed keeps one record"
    );

    let described: DescribeTransactionsResponse = call(
        &mut coordinator,
        ApiKey::DescribeTransactions,
        0,
        &DescribeTransactionsRequest::default()
            .with_transactional_ids(vec![TransactionalId(StrBytes::from_static_str("ledger-writer"))]),
    )
    .await;
    let state = &described.transaction_states[0];
    assert_eq!(state.error_code, 0);
    assert_eq!(state.transaction_state.as_str(), "CompleteAbort");
    assert_eq!((state.producer_id.0, state.producer_epoch), (pid, epoch));
    let listed: ListTransactionsResponse = call(
        &mut coordinator,
        ApiKey::ListTransactions,
        1,
        &ListTransactionsRequest::default()
            .with_state_filters(vec![
                StrBytes::from_static_str("CompleteAbort"),
                StrBytes::from_static_str("Bogus"),
            ])
            .with_duration_filter(-1),
    )
    .await;
    let ids: Vec<&str> = listed
        .transaction_states
        .iter()
        .map(|t| t.transactional_id.0.as_str())
        .collect();
    assert_eq!(ids, ["ledger-writer"]);
    let unknown: Vec<&str> = listed.unknown_state_filters.iter().map(|s| s.as_str()).collect();
    assert_eq!(unknown, ["Bogus"]);

    // A new instance bumps the epoch; the old one is fenced.
    let second: InitProducerIdResponse = call(&mut coordinator, ApiKey::InitProducerId, 4, &init_txn(id)).await;
    assert_eq!(second.error_code, 0);
    assert_eq!(second.producer_id.0, pid);
    assert!(second.producer_epoch > epoch);
    let fenced: AddPartitionsToTxnResponse = call(
        &mut coordinator,
        ApiKey::AddPartitionsToTxn,
        3,
        &add_partitions(id, pid, epoch, "ledger", 0),
    )
    .await;
    assert_eq!(
        fenced.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code, 90,
        "PRODUCER_FENCED"
    );
    let fenced_old: EndTxnResponse = call(&mut coordinator, ApiKey::EndTxn, 1, &end_txn(id, pid, epoch, true)).await;
    assert_eq!(fenced_old.error_code, 47, "INVALID_PRODUCER_EPOCH for EndTxn v1");
    // The partition has not seen the new epoch (no marker since), so only the leader's check
    // with the coordinator (KIP-890) refuses the zombie's next transaction.
    let zombie: ProduceResponse = call(
        &mut to_leader,
        ApiKey::Produce,
        9,
        &produce_request("ledger", 0, -1, Bytes::from(txn_batch(pid, epoch, 2, &["zombie"])))
            .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("ledger-writer")))),
    )
    .await;
    assert_eq!(
        zombie.responses[0].partition_responses[0].error_code, 47,
        "INVALID_PRODUCER_EPOCH"
    );
    // Transactional records without a transactional id are refused, as Kafka refuses them.
    let anonymous: ProduceResponse = call(
        &mut to_leader,
        ApiKey::Produce,
        9,
        &produce_request("ledger", 0, -1, Bytes::from(txn_batch(pid, epoch, 2, &["anonymous"]))),
    )
    .await;
    assert_eq!(
        anonymous.responses[0].partition_responses[0].error_code, 53,
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    );
    s.stop().await;
}

/// `chunk_len` zeros compressed once and repeated `copies` times: concatenated gzip members or
/// zstd frames, which decoders read on (as Java's `GZIPInputStream` and zstd-jni do). A
/// payload of `chunk_len * copies` bytes in about a thousandth (gzip) or far less (zstd).
fn bomb(compression: Compression, chunk_len: usize, copies: usize) -> Vec<u8> {
    let chunk = vec![0u8; chunk_len];
    let mut member = BytesMut::new();
    let put = |b: &mut BytesMut| {
        b.extend_from_slice(&chunk);
        Ok(())
    };
    match compression {
        Compression::Gzip => Gzip::compress(&mut member, put),
        Compression::Zstd => Zstd::compress(&mut member, put),
        other => panic!("no bomb of {other:?} here"),
    }
    .expect("compresses");
    member.repeat(copies)
}

/// A v2 batch whose header says `count` records and whose records are `blob`, compressed
/// with `compression`: a producer's batch with a payload of the test's choosing.
fn batch_with_records(compression: Compression, count: i32, blob: &[u8]) -> Bytes {
    let one = records::record(0, 1_000, Some(Bytes::from("k")), Some(Bytes::from("v")));
    let mut b = records::encode_batch(&[one], compression)
        .expect("batch encodes")
        .to_vec();
    b.truncate(61);
    b.extend_from_slice(blob);
    let length = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&length.to_be_bytes());
    b[23..27].copy_from_slice(&(count - 1).to_be_bytes());
    b[57..61].copy_from_slice(&count.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(b)
}

/// The most memory this test process has held (VmHWM), where Linux tells.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

async fn produce_code(stream: &mut TcpStream, version: i16, topic: &str, records: Bytes) -> i16 {
    let response: ProduceResponse = call(
        stream,
        ApiKey::Produce,
        version,
        &produce_request(topic, 0, -1, records),
    )
    .await;
    response.responses[0].partition_responses[0].error_code
}

/// Compressed batches are unpacked streaming and refused past 64 MiB (RECORD_LIST_TOO_LARGE)
/// on every produce path: a v2 batch (the leader's validation), a compacted topic's batch
/// (the keyless-record check) and a Produce v2 message set (the legacy conversion). Each bomb
/// here would unpack to most of a gigabyte or more; the broker stays small and keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decompression_bombs_are_refused_and_the_broker_keeps_serving() {
    let s = setup().await;
    let leader = s.topic("plain", 1).await;
    let compacted_leader = s.topic_with("profiles", compacted(1)).await;
    let mut stream = connect(s.addr(leader)).await;

    // 768 MiB of gzip in a batch under the default max.message.bytes (1 MiB).
    let gzip = batch_with_records(Compression::Gzip, 1, &bomb(Compression::Gzip, 16 << 20, 48));
    assert!(gzip.len() < 1_048_588, "{} bytes", gzip.len());
    assert_eq!(
        produce_code(&mut stream, 9, "plain", gzip).await,
        18,
        "RECORD_LIST_TOO_LARGE"
    );

    // 2 GiB of zstd in a few kilobytes, to a compacted topic: its keyless check reads records.
    let zstd = batch_with_records(Compression::Zstd, 1, &bomb(Compression::Zstd, 16 << 20, 128));
    let mut compacted = connect(s.addr(compacted_leader)).await;
    assert_eq!(produce_code(&mut compacted, 9, "profiles", zstd).await, 18);

    // 2 GiB of gzip in a Produce v2 message set (format v1), converted before the log.
    let mut set = BytesMut::new();
    legacy::write_wrapper(
        &mut set,
        legacy::MAGIC_V1,
        1,
        0,
        1_000,
        &bomb(Compression::Gzip, 16 << 20, 128),
    );
    assert_eq!(produce_code(&mut stream, 2, "plain", set.freeze()).await, 18);

    // Kafka's record iterator: a batch holds exactly the records its header counts.
    let two = [
        records::record(0, 1_000, Some(Bytes::from("a")), Some(Bytes::from("1"))),
        records::record(1, 1_000, Some(Bytes::from("b")), Some(Bytes::from("2"))),
    ];
    let whole = records::encode_batch(&two, Compression::Gzip).expect("batch encodes");
    for count in [1, 3] {
        let miscounted = batch_with_records(Compression::Gzip, count, &whole[61..]);
        assert_eq!(
            produce_code(&mut stream, 9, "plain", miscounted).await,
            2,
            "CORRUPT_MESSAGE for a header counting {count} of 2 records"
        );
    }

    // The same connection, and a new one, still produce and fetch.
    let keyed = records::encode_batch(&two, Compression::Gzip)
        .expect("batch encodes")
        .freeze();
    assert_eq!(produce_code(&mut stream, 9, "plain", keyed.clone()).await, 0);
    assert_eq!(produce_code(&mut compacted, 9, "profiles", keyed).await, 0);
    let mut fresh = connect(s.addr(leader)).await;
    let fetched: FetchResponse = call(&mut fresh, ApiKey::Fetch, 12, &fetch_request("plain", 0, 0, 0)).await;
    let p = &fetched.responses[0].partitions[0];
    assert_eq!((p.error_code, p.high_watermark), (0, 2));
    let values: Vec<_> = records::decode(&p.records.clone().unwrap_or_default())
        .expect("decodes")
        .into_iter()
        .map(|r| r.value)
        .collect();
    assert_eq!(values, vec![Some(Bytes::from("1")), Some(Bytes::from("2"))]);

    if let Some(peak) = peak_rss_bytes() {
        assert!(
            peak < 1 << 30,
            "the bombs stayed compressed: peak RSS {} MiB",
            peak >> 20
        );
    }
    s.stop().await;
}
