//! The Kafka client kdeck uses for external clusters, against the embedded cluster's real
//! Kafka listeners and against fake brokers written here: metadata, pipelining, timeouts,
//! dead and restarted brokers, garbage on the wire, TLS and SASL.

use std::net::SocketAddr;
use std::time::Duration;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kdeck::engine::{Cluster, ClusterConfig, TopicConfig, TopicPartition};
use kdeck::remote::{ClientSettings, KafkaClient, RemoteConfig, RemoteError, Target};
use kdeck::wire::{WireConfig, WireServer};

const PATIENCE: Duration = Duration::from_secs(30);

struct Setup {
    _dir: tempfile::TempDir,
    cluster: Cluster,
    server: WireServer,
}

async fn setup() -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let cluster = Cluster::start(ClusterConfig {
        data_dir: dir.path().to_path_buf(),
        brokers: 3,
        ..ClusterConfig::default()
    })
    .await
    .expect("cluster starts");
    let server = WireServer::start(
        cluster.clone(),
        WireConfig {
            base_port: 0,
            ..WireConfig::default()
        },
    )
    .await
    .expect("listeners open");
    Setup {
        _dir: dir,
        cluster,
        server,
    }
}

impl Setup {
    fn addr(&self, broker: i32) -> SocketAddr {
        self.server
            .listeners()
            .into_iter()
            .find(|l| l.broker == broker)
            .expect("a listener for the broker")
            .addr
    }

    fn bootstrap(&self) -> String {
        self.server
            .listeners()
            .iter()
            .map(|l| l.addr.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Creates `name` and waits until every partition has a leader and a high watermark.
    async fn topic(&self, name: &str, partitions: i32) {
        self.cluster
            .create_topic(name, TopicConfig::new(partitions, 3))
            .await
            .expect("topic created");
        self.cluster
            .wait_for(PATIENCE, |s| {
                (0..partitions).all(|p| {
                    s.partition(&TopicPartition::new(name, p))
                        .is_some_and(|p| p.leader.is_some() && p.high_watermark.is_some() && p.isr.len() == 3)
                })
            })
            .await
            .expect("partitions have leaders");
    }

    async fn stop(self) {
        self.server.shutdown();
        self.cluster.shutdown().await;
    }
}

fn settings(bootstrap: &str) -> ClientSettings {
    ClientSettings::from_config(&RemoteConfig {
        bootstrap: bootstrap.into(),
        connect_timeout_ms: 5_000,
        request_timeout_ms: 10_000,
        reconnect_backoff_ms: 20,
        reconnect_backoff_max_ms: 200,
        ..RemoteConfig::default()
    })
    .expect("valid settings")
}

fn metadata_of(topic: &str) -> MetadataRequest {
    MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_string(topic.to_string())))),
    ]))
}

/// A port nothing listens on: bound, then released.
fn dead_address() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    drop(listener);
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_matches_the_cluster() {
    let setup = setup().await;
    setup.topic("orders", 3).await;
    setup.topic("audit", 1).await;
    let client = KafkaClient::connect(settings(&setup.bootstrap()))
        .await
        .expect("connects");
    let metadata = client.metadata().await.expect("metadata");
    let snapshot = setup.cluster.snapshot();

    let mut listeners: Vec<(i32, String)> = setup
        .server
        .listeners()
        .iter()
        .map(|l| (l.broker, l.addr.to_string()))
        .collect();
    listeners.sort();
    let brokers: Vec<(i32, String)> = metadata.brokers.iter().map(|b| (b.id, b.address.to_string())).collect();
    assert_eq!(brokers, listeners);
    assert_eq!(metadata.controller, snapshot.controller);
    for name in ["audit", "orders"] {
        let topic = metadata.topic(name).expect("topic in metadata");
        assert!(!topic.internal);
        assert_eq!(topic.error, 0);
        let numbers: Vec<i32> = topic.partitions.iter().map(|p| p.partition).collect();
        let expected: Vec<i32> = (0..if name == "orders" { 3 } else { 1 }).collect();
        assert_eq!(numbers, expected, "{name}: partitions by number");
        for partition in &topic.partitions {
            let view = snapshot
                .partition(&TopicPartition::new(name, partition.partition))
                .expect("partition in the engine");
            assert_eq!(partition.leader, view.leader, "{name}-{}", partition.partition);
            assert_eq!(partition.leader_epoch, view.leader_epoch);
            let replicas: Vec<i32> = view.replicas.iter().map(|r| r.broker).collect();
            assert_eq!(partition.replicas, replicas);
            let (mut isr, mut expected_isr) = (partition.isr.clone(), view.isr.clone());
            isr.sort_unstable();
            expected_isr.sort_unstable();
            assert_eq!(isr, expected_isr);
        }
    }
    for topic in &snapshot.topics {
        assert!(metadata.topic(&topic.name).is_some(), "{} missing", topic.name);
    }
    assert_eq!(
        client.leader_of("orders", 1).await.expect("leader"),
        snapshot
            .partition(&TopicPartition::new("orders", 1))
            .and_then(|p| p.leader)
            .expect("engine leader")
    );
    match client.leader_of("no-such-topic", 0).await {
        Err(RemoteError::Kafka { name, .. }) => assert_eq!(name, "UNKNOWN_TOPIC_OR_PARTITION"),
        other => panic!("expected UNKNOWN_TOPIC_OR_PARTITION, got {other:?}"),
    }
    let health = client.health();
    assert_eq!(health.iter().map(|h| h.id).collect::<Vec<_>>(), vec![0, 1, 2]);
    assert!(health.iter().all(|h| h.last_error.is_none()), "{health:?}");
    client.close();
    setup.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_pipelined_requests_get_their_own_answers() {
    let setup = setup().await;
    setup.topic("orders", 3).await;
    let client = KafkaClient::connect(settings(&setup.addr(1).to_string()))
        .await
        .expect("connects");
    let calls = (0..200).map(|i| {
        let client = client.clone();
        // Every answer names the topic it was asked about; unknown names come back with
        // UNKNOWN_TOPIC_OR_PARTITION, so each answer is told apart from the others.
        let topic = if i % 10 == 0 {
            "orders".to_string()
        } else {
            format!("missing-{i}")
        };
        tokio::spawn(async move {
            let answer = client.send(Target::Broker(1), metadata_of(&topic)).await;
            (topic, answer)
        })
    });
    let answers = futures_join(calls.collect()).await;
    assert_eq!(answers.len(), 200);
    for (topic, answer) in answers {
        let answer = answer.unwrap_or_else(|e| panic!("{topic}: {e}"));
        assert_eq!(answer.topics.len(), 1, "{topic}");
        let named = answer.topics[0].name.as_ref().map(|n| n.0.to_string());
        assert_eq!(named.as_deref(), Some(topic.as_str()));
        let expected_error = if topic == "orders" { 0 } else { 3 };
        assert_eq!(answer.topics[0].error_code, expected_error, "{topic}");
    }
    let broker_1 = client.health().into_iter().find(|h| h.id == 1).expect("broker 1");
    assert!(broker_1.connected && broker_1.last_error.is_none(), "{broker_1:?}");
    client.close();
    setup.stop().await;
}

async fn futures_join<T: Send + 'static>(handles: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::with_capacity(handles.len());
    for handle in handles {
        out.push(
            tokio::time::timeout(PATIENCE, handle)
                .await
                .expect("in time")
                .expect("task"),
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_bootstrap_fails_fast_and_the_next_address_is_used() {
    let dead = dead_address();
    let error = KafkaClient::connect(settings(&dead.to_string()))
        .await
        .expect_err("nothing listens");
    match &error {
        RemoteError::NoBootstrap(reasons) => assert!(reasons.contains(&dead.to_string()), "{reasons}"),
        other => panic!("expected NoBootstrap, got {other:?}"),
    }

    let setup = setup().await;
    let client = KafkaClient::connect(settings(&format!("{dead},{}", setup.addr(0))))
        .await
        .expect("the second address answers");
    assert_eq!(client.metadata().await.expect("metadata").brokers.len(), 3);
    client.close();
    setup.stop().await;
}
