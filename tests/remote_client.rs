//! The Kafka client kdeck uses for external clusters, against the embedded cluster's real
//! Kafka listeners and against fake brokers written here: metadata, pipelining, timeouts,
//! dead and restarted brokers, garbage on the wire, TLS and SASL.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::{BufMut, Bytes, BytesMut};
use hmac::{Hmac, Mac};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, BrokerId, MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader,
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kdeck::engine::TopicPartition;
use kdeck::remote::connection::Connection;
use kdeck::remote::{BrokerAddress, ClientSettings, KafkaClient, RemoteConfig, RemoteError, Target};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256, Sha512};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const PATIENCE: Duration = Duration::from_secs(30);

mod common;
use common::wire::setup;

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
    let controller = client
        .send(Target::Controller, metadata_of("orders"))
        .await
        .expect("the controller answers");
    assert_eq!(Some(controller.controller_id.0), snapshot.controller);
    let coordinator = client.coordinator("payments").await.expect("a coordinator");
    assert_eq!(Ok(coordinator), setup.cluster.find_coordinator("payments"));
    assert_eq!(client.coordinator("payments").await.expect("cached"), coordinator);
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

    // A peer that accepts the connection and then says nothing (a blackhole, a firewall that
    // swallows packets) costs connect_timeout_ms, not a hang.
    let silent = fake_broker(|mut stream, _| async move {
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest).await;
    })
    .await;
    let mut config = RemoteConfig {
        bootstrap: silent.to_string(),
        connect_timeout_ms: 300,
        ..RemoteConfig::default()
    };
    let error = tokio::time::timeout(
        PATIENCE,
        KafkaClient::connect(ClientSettings::from_config(&config).expect("settings")),
    )
    .await
    .expect("no hang")
    .expect_err("silence");
    assert!(error.to_string().contains("connect_timeout_ms"), "{error}");

    let setup = setup().await;
    config.bootstrap = format!("{dead},{silent},{}", setup.addr(0));
    // Room for a loaded machine on the live address.
    config.connect_timeout_ms = 2_000;
    let client = KafkaClient::connect(ClientSettings::from_config(&config).expect("settings"))
        .await
        .expect("the second address answers");
    assert_eq!(client.metadata().await.expect("metadata").brokers.len(), 3);
    client.close();
    setup.stop().await;
}

/// Waits until `attempt` succeeds, retrying while it fails, for at most [`PATIENCE`].
async fn eventually<T, F, Fut>(what: &str, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, RemoteError>>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match attempt().await {
            Ok(value) => return value,
            // Calls inside a backoff window fail at once: let the window pass between tries.
            Err(_) if tokio::time::Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => panic!("{what}: still failing: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_broker_times_out_and_health_says_so() {
    let setup = setup().await;
    setup.topic("orders", 1).await;
    let mut config = RemoteConfig {
        bootstrap: setup.addr(0).to_string(),
        request_timeout_ms: 500,
        ..RemoteConfig::default()
    };
    config.reconnect_backoff_ms = 20;
    let client = KafkaClient::connect(ClientSettings::from_config(&config).expect("settings"))
        .await
        .expect("connects");
    // 500 ms is short for a loaded machine: a spurious timeout here is retried.
    eventually("broker 2 while running", || {
        client.send(Target::Broker(2), metadata_of("orders"))
    })
    .await;
    setup.cluster.pause(2).expect("pause");
    setup.server.sync().await;
    match client.send(Target::Broker(2), metadata_of("orders")).await {
        Err(RemoteError::Timeout { api, broker, ms }) => {
            assert_eq!(api, "Metadata");
            assert!(broker.contains("broker 2"), "{broker}");
            assert_eq!(ms, 500);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    let health = client.health().into_iter().find(|h| h.id == 2).expect("broker 2");
    assert!(!health.connected);
    assert!(
        health.last_error.as_deref().is_some_and(|e| e.contains("timed out")),
        "{health:?}"
    );
    assert!(health.failing_since.is_some());
    // The other brokers are not affected.
    eventually("broker 0", || client.send(Target::Broker(0), metadata_of("orders"))).await;
    setup.cluster.resume(2).expect("resume");
    setup.server.sync().await;
    eventually("broker 2 after resume", || {
        client.send(Target::Broker(2), metadata_of("orders"))
    })
    .await;
    let health = client.health().into_iter().find(|h| h.id == 2).expect("broker 2");
    assert!(health.connected && health.last_error.is_none(), "{health:?}");
    client.close();
    setup.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_broker_fails_fast_and_is_used_again_after_its_restart() {
    let setup = setup().await;
    setup.topic("orders", 1).await;
    let client = KafkaClient::connect(settings(&setup.addr(0).to_string()))
        .await
        .expect("connects");
    client
        .send(Target::Broker(1), metadata_of("orders"))
        .await
        .expect("broker 1 answers while running");
    setup.cluster.kill(1).expect("kill");
    setup.server.sync().await;
    let error = client
        .send(Target::Broker(1), metadata_of("orders"))
        .await
        .expect_err("broker 1 is dead");
    assert!(error.is_connection_error(), "{error:?}");
    assert!(error.to_string().contains("broker 1"), "{error}");
    let health = client.health().into_iter().find(|h| h.id == 1).expect("broker 1");
    assert!(!health.connected && health.last_error.is_some(), "{health:?}");
    // Target::Any keeps working through the live brokers.
    client
        .send(Target::Any, metadata_of("orders"))
        .await
        .expect("another broker answers");

    // Once the controller fences it, the broker leaves the metadata and the client forgets it.
    eventually("broker 1 fenced", || async {
        match client.refresh_metadata().await?.broker(1) {
            Some(_) => Err(RemoteError::Other("still listed".into())),
            None => Ok(()),
        }
    })
    .await;
    assert!(client.health().iter().all(|h| h.id != 1), "{:?}", client.health());
    match client.send(Target::Broker(1), metadata_of("orders")).await {
        Err(RemoteError::UnknownBroker(1)) => {}
        other => panic!("expected UnknownBroker(1), got {other:?}"),
    }

    setup.cluster.start_broker(1).expect("restart");
    setup.server.sync().await;
    eventually("broker 1 after its restart", || {
        client.send(Target::Broker(1), metadata_of("orders"))
    })
    .await;
    let health = client.health().into_iter().find(|h| h.id == 1).expect("broker 1");
    assert!(health.connected && health.last_error.is_none() && health.failing_since.is_none());
    client.close();
    setup.stop().await;
}

/// One request as a fake broker reads it.
struct Received {
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    body: Bytes,
}

async fn read_request(stream: &mut TcpStream) -> Option<Received> {
    let length = stream.read_i32().await.ok()?;
    let mut frame = vec![0u8; usize::try_from(length).ok()?];
    stream.read_exact(&mut frame).await.ok()?;
    let mut body = Bytes::from(frame);
    let api = ApiKey::try_from(i16::from_be_bytes([body[0], body[1]])).ok()?;
    let version = i16::from_be_bytes([body[2], body[3]]);
    let header = RequestHeader::decode(&mut body, api.request_header_version(version)).ok()?;
    Some(Received {
        api,
        version,
        correlation_id: header.correlation_id,
        body,
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

fn api_versions(apis: &[(ApiKey, i16, i16)]) -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(
        apis.iter()
            .map(|(key, min, max)| {
                ApiVersion::default()
                    .with_api_key(*key as i16)
                    .with_min_version(*min)
                    .with_max_version(*max)
            })
            .collect(),
    )
}

/// A Metadata answer naming the fake broker as the only broker, and no topics.
fn lonely_metadata(addr: SocketAddr) -> MetadataResponse {
    MetadataResponse::default()
        .with_controller_id(BrokerId(7))
        .with_brokers(vec![
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(7))
                .with_host(StrBytes::from_string(addr.ip().to_string()))
                .with_port(i32::from(addr.port())),
        ])
}

/// A listener that runs `serve` on every connection it accepts.
async fn fake_broker<F, Fut>(serve: F) -> SocketAddr
where
    F: Fn(TcpStream, SocketAddr) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, addr));
        }
    });
    addr
}

/// Answers ApiVersions like a broker with Metadata v0-12.
async fn handshake(stream: &mut TcpStream) -> Option<()> {
    let request = read_request(stream).await?;
    assert_eq!(request.api, ApiKey::ApiVersions);
    let answer = api_versions(&[(ApiKey::ApiVersions, 0, 3), (ApiKey::Metadata, 0, 12)]);
    write_response(stream, &request, &answer).await;
    Some(())
}

#[derive(Debug, Clone, Copy)]
enum Garbage {
    WrongCorrelationId,
    HugeLength,
    NegativeLength,
    UndecodableBody,
    HangUp,
}

/// Two calls in flight when the fake broker misbehaves: both end with `expected`, the
/// connection is closed afterwards and says why.
async fn garbage_fails_every_call(garbage: Garbage, expected: impl Fn(&RemoteError) -> bool) {
    let addr = fake_broker(move |mut stream, _| async move {
        handshake(&mut stream).await.expect("ApiVersions");
        let first = read_request(&mut stream).await.expect("a first request");
        read_request(&mut stream).await.expect("a second request");
        match garbage {
            Garbage::WrongCorrelationId => {
                let wrong = Received {
                    correlation_id: first.correlation_id + 1000,
                    ..first
                };
                write_response(&mut stream, &wrong, &MetadataResponse::default()).await;
            }
            Garbage::HugeLength => stream.write_all(&0x7fff_fff0i32.to_be_bytes()).await.expect("written"),
            Garbage::NegativeLength => stream.write_all(&(-5i32).to_be_bytes()).await.expect("written"),
            Garbage::UndecodableBody => {
                let mut frame = BytesMut::new();
                frame.put_i32(7);
                frame.put_i32(first.correlation_id);
                frame.put_slice(&[0xff, 0xff, 0xff]);
                stream.write_all(&frame).await.expect("written");
            }
            Garbage::HangUp => return,
        }
        // Keep the socket open: the client must not wait for more.
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest).await;
    })
    .await;
    let connection = Connection::open(
        &BrokerAddress::parse(&addr.to_string()).expect("address"),
        "broker 7 (fake)",
        &settings(&addr.to_string()),
    )
    .await
    .expect("ApiVersions is answered properly");
    assert_eq!(connection.version(ApiKey::Metadata), Some(12));
    assert_eq!(connection.version(ApiKey::Produce), None);
    let calls = async {
        tokio::join!(
            connection.call(MetadataRequest::default(), 12),
            connection.call(MetadataRequest::default(), 12)
        )
    };
    let (a, b) = tokio::time::timeout(PATIENCE, calls).await.expect("no hang");
    for result in [a, b] {
        let error = result.expect_err("garbage is not an answer");
        assert!(expected(&error), "{garbage:?}: {error:?}");
    }
    assert!(!connection.is_open());
    assert!(connection.close_reason().is_some());
    let later = connection
        .call(MetadataRequest::default(), 12)
        .await
        .expect_err("closed");
    assert!(matches!(later, RemoteError::Disconnected { .. }), "{later:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_from_a_broker_fails_calls_with_clear_errors() {
    let protocol_error = |needle: &'static str| move |e: &RemoteError| matches!(e, RemoteError::Protocol { reason, .. } if reason.contains(needle));
    garbage_fails_every_call(Garbage::WrongCorrelationId, protocol_error("correlation id")).await;
    garbage_fails_every_call(Garbage::HugeLength, protocol_error("size of 2147483632 bytes")).await;
    garbage_fails_every_call(Garbage::NegativeLength, protocol_error("size of -5 bytes")).await;
    // The call whose answer does not decode gets the protocol error; the other one learns
    // the connection was closed because of it.
    garbage_fails_every_call(Garbage::UndecodableBody, |e| match e {
        RemoteError::Protocol { reason, .. } | RemoteError::Disconnected { reason, .. } => {
            reason.contains("does not decode")
        }
        _ => false,
    })
    .await;
    garbage_fails_every_call(
        Garbage::HangUp,
        |e| matches!(e, RemoteError::Disconnected { reason, .. } if reason.contains("closed the connection")),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_is_not_kafka_is_refused_at_bootstrap() {
    let addr = fake_broker(|mut stream, _| async move {
        let _ = read_request(&mut stream).await;
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest).await;
    })
    .await;
    let error = tokio::time::timeout(PATIENCE, KafkaClient::connect(settings(&addr.to_string())))
        .await
        .expect("no hang")
        .expect_err("not a broker");
    match error {
        RemoteError::NoBootstrap(reasons) => {
            assert!(reasons.contains(&addr.to_string()), "{reasons}");
            assert!(reasons.contains("claims a size"), "{reasons}");
        }
        other => panic!("expected NoBootstrap, got {other:?}"),
    }
}

/// The server side of SASL for fake brokers: which mechanisms are enabled and the one user.
#[derive(Clone)]
struct SaslServer {
    enabled: &'static [&'static str],
    user: &'static str,
    password: &'static str,
    /// Answer SCRAM with a signature made from the wrong key (a server that does not know the
    /// credentials).
    forge_signature: bool,
    /// KIP-368's session lifetime given with the last SaslAuthenticate answer; 0: unlimited.
    session_lifetime_ms: i64,
}

#[derive(Clone, Copy)]
enum Hash {
    Sha256,
    Sha512,
}

impl Hash {
    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha256 => {
                let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            Hash::Sha512 => {
                let mut mac = Hmac::<Sha512>::new_from_slice(key).expect("any key length");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha256 => Sha256::digest(data).to_vec(),
            Hash::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    fn salted_password(self, password: &str, salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            Hash::Sha256 => {
                let mut out = [0u8; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password.as_bytes(), salt, iterations, &mut out);
                out.to_vec()
            }
            Hash::Sha512 => {
                let mut out = [0u8; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password.as_bytes(), salt, iterations, &mut out);
                out.to_vec()
            }
        }
    }
}

const AUTHENTICATION_FAILED: i16 = 58;

impl SaslServer {
    /// Reads one SaslAuthenticate request's bytes.
    async fn token(stream: &mut TcpStream) -> Option<(Received, Bytes)> {
        let mut request = read_request(stream).await?;
        assert_eq!(request.api, ApiKey::SaslAuthenticate);
        let body = SaslAuthenticateRequest::decode(&mut request.body, request.version).ok()?;
        Some((request, body.auth_bytes))
    }

    async fn refuse(stream: &mut TcpStream, request: &Received, message: &str) {
        let answer = SaslAuthenticateResponse::default()
            .with_error_code(AUTHENTICATION_FAILED)
            .with_error_message(Some(StrBytes::from_string(message.to_string())));
        write_response(stream, request, &answer).await;
    }

    async fn accept(&self, stream: &mut TcpStream, request: &Received, bytes: Vec<u8>) {
        let answer = SaslAuthenticateResponse::default()
            .with_auth_bytes(Bytes::from(bytes))
            .with_session_lifetime_ms(self.session_lifetime_ms);
        write_response(stream, request, &answer).await;
    }

    /// ApiVersions, SaslHandshake, the mechanism's rounds, then Metadata answers; None when
    /// the client was refused (the connection then closes, as Kafka does).
    async fn serve(self, mut stream: TcpStream, addr: SocketAddr) -> Option<()> {
        let request = read_request(&mut stream).await?;
        let apis = [
            (ApiKey::ApiVersions, 0, 3),
            (ApiKey::Metadata, 0, 12),
            (ApiKey::SaslHandshake, 0, 1),
            (ApiKey::SaslAuthenticate, 0, 2),
        ];
        write_response(&mut stream, &request, &api_versions(&apis)).await;
        let mut request = read_request(&mut stream).await?;
        assert_eq!(request.api, ApiKey::SaslHandshake);
        let handshake = SaslHandshakeRequest::decode(&mut request.body, request.version).ok()?;
        let mechanism = handshake.mechanism.to_string();
        let enabled: Vec<StrBytes> = self.enabled.iter().map(|m| StrBytes::from_static_str(m)).collect();
        let unsupported = !self.enabled.contains(&mechanism.as_str());
        let answer = SaslHandshakeResponse::default()
            .with_error_code(if unsupported { 33 } else { 0 })
            .with_mechanisms(enabled);
        write_response(&mut stream, &request, &answer).await;
        if unsupported {
            return None;
        }
        let failure = format!(
            "Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
        );
        match mechanism.as_str() {
            "PLAIN" => {
                let (request, token) = Self::token(&mut stream).await?;
                let expected = format!("\0{}\0{}", self.user, self.password);
                if token.as_ref() != expected.as_bytes() {
                    Self::refuse(&mut stream, &request, &failure).await;
                    return None;
                }
                self.accept(&mut stream, &request, Vec::new()).await;
            }
            scram => {
                let hash = if scram == "SCRAM-SHA-512" {
                    Hash::Sha512
                } else {
                    Hash::Sha256
                };
                let (request, token) = Self::token(&mut stream).await?;
                let client_first = String::from_utf8(token.to_vec()).ok()?;
                let client_first_bare = client_first.strip_prefix("n,,")?.to_string();
                let user = client_first_bare.strip_prefix("n=")?.split(',').next()?.to_string();
                let client_nonce = client_first_bare.split(",r=").nth(1)?.to_string();
                let salt = b"kdeck-test-salt";
                let nonce = format!("{client_nonce}fake-server-nonce");
                let server_first = format!("r={nonce},s={},i=4096", BASE64.encode(salt));
                self.accept(&mut stream, &request, server_first.clone().into_bytes())
                    .await;
                let (request, token) = Self::token(&mut stream).await?;
                let client_final = String::from_utf8(token.to_vec()).ok()?;
                let (without_proof, proof) = client_final.rsplit_once(",p=")?;
                let proof = BASE64.decode(proof).ok()?;
                let salted = hash.salted_password(self.password, salt, 4096);
                let client_key = hash.hmac(&salted, b"Client Key");
                let stored_key = hash.digest(&client_key);
                let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
                let signature = hash.hmac(&stored_key, auth_message.as_bytes());
                let recovered: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
                if user != self.user
                    || without_proof != format!("c=biws,r={nonce}")
                    || hash.digest(&recovered) != stored_key
                {
                    Self::refuse(&mut stream, &request, &failure).await;
                    return None;
                }
                let server_key_from = if self.forge_signature {
                    b"Forged Key".as_slice()
                } else {
                    b"Server Key"
                };
                let server_key = hash.hmac(&salted, server_key_from);
                let server_final = format!("v={}", BASE64.encode(hash.hmac(&server_key, auth_message.as_bytes())));
                self.accept(&mut stream, &request, server_final.into_bytes()).await;
            }
        }
        loop {
            let request = read_request(&mut stream).await?;
            assert_eq!(request.api, ApiKey::Metadata);
            write_response(&mut stream, &request, &lonely_metadata(addr)).await;
        }
    }
}

/// The fake broker's address and how many connections it accepted.
async fn sasl_broker(server: SaslServer) -> (SocketAddr, Arc<AtomicU64>) {
    let accepted = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&accepted);
    let addr = fake_broker(move |stream, addr| {
        counter.fetch_add(1, Ordering::SeqCst);
        let server = server.clone();
        async move {
            server.serve(stream, addr).await;
        }
    })
    .await;
    (addr, accepted)
}

fn sasl_settings(addr: SocketAddr, mechanism: &str, user: &str, password: &str) -> ClientSettings {
    let mut config = RemoteConfig {
        bootstrap: addr.to_string(),
        ..RemoteConfig::default()
    };
    config.sasl.mechanism = mechanism.into();
    config.sasl.username = user.into();
    config.sasl.password = password.into();
    ClientSettings::from_config(&config).expect("valid settings")
}

async fn open_with(addr: SocketAddr, settings: &ClientSettings) -> Result<Connection, RemoteError> {
    let address = BrokerAddress::parse(&addr.to_string()).expect("address");
    tokio::time::timeout(PATIENCE, Connection::open(&address, "broker 7 (fake)", settings))
        .await
        .expect("no hang")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_plain_and_scram_authenticate_with_the_right_password_only() {
    let server = SaslServer {
        enabled: &["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],
        user: "alice",
        password: "wonder,land=1",
        forge_signature: false,
        session_lifetime_ms: 0,
    };
    let (addr, _) = sasl_broker(server).await;
    for mechanism in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let client = KafkaClient::connect(sasl_settings(addr, mechanism, "alice", "wonder,land=1"))
            .await
            .unwrap_or_else(|e| panic!("{mechanism}: {e}"));
        let metadata = client.refresh_metadata().await.expect("metadata after authenticating");
        assert_eq!(metadata.brokers.len(), 1);
        assert_eq!(metadata.brokers[0].address.to_string(), addr.to_string());
        client.close();

        match open_with(addr, &sasl_settings(addr, mechanism, "alice", "wrong")).await {
            Err(RemoteError::Sasl { address, reason }) => {
                assert!(address.contains("broker 7"), "{address}");
                assert!(reason.contains("invalid credentials"), "{mechanism}: {reason}");
            }
            other => panic!("{mechanism} with a wrong password: expected a SASL error, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_names_the_brokers_mechanisms_and_checks_the_servers_proof() {
    let (addr, _) = sasl_broker(SaslServer {
        enabled: &["SCRAM-SHA-512"],
        user: "bob",
        password: "pw",
        forge_signature: false,
        session_lifetime_ms: 0,
    })
    .await;
    match open_with(addr, &sasl_settings(addr, "PLAIN", "bob", "pw")).await {
        Err(RemoteError::Sasl { reason, .. }) => {
            assert!(reason.contains("does not enable PLAIN"), "{reason}");
            assert!(reason.contains("SCRAM-SHA-512"), "{reason}");
        }
        other => panic!("expected a SASL error, got {other:?}"),
    }

    let (forger, _) = sasl_broker(SaslServer {
        enabled: &["SCRAM-SHA-256"],
        user: "bob",
        password: "pw",
        forge_signature: true,
        session_lifetime_ms: 0,
    })
    .await;
    match open_with(forger, &sasl_settings(forger, "SCRAM-SHA-256", "bob", "pw")).await {
        Err(RemoteError::Sasl { reason, .. }) => {
            assert!(reason.contains("server signature does not match"), "{reason}")
        }
        other => panic!("expected a SASL error, got {other:?}"),
    }
}

/// A CA and a certificate it signed for "localhost" and 127.0.0.1, as PEM files.
struct Pki {
    dir: tempfile::TempDir,
    ca_cert: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
}

impl Pki {
    /// `name` is the CA's common name (distinct CAs need distinct names, or a verifier takes
    /// one for the other and reports a bad signature instead of an unknown issuer).
    fn new(name: &str) -> Pki {
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        let ca_cert = params.self_signed(&ca_key).expect("CA certificate");
        let pki = Pki {
            dir: tempfile::tempdir().expect("temp dir"),
            ca_cert,
            ca_key,
        };
        std::fs::write(pki.path("ca.pem"), pki.ca_cert.pem()).expect("CA written");
        pki
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    /// A certificate for `names` signed by this CA, written as `<stem>.pem` and `<stem>.key`.
    fn issue(&self, stem: &str, names: &[&str]) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
        let key = rcgen::KeyPair::generate().expect("key");
        let params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).expect("params");
        let cert = params.signed_by(&key, &self.ca_cert, &self.ca_key).expect("signed");
        std::fs::write(self.path(&format!("{stem}.pem")), cert.pem()).expect("cert written");
        std::fs::write(self.path(&format!("{stem}.key")), key.serialize_pem()).expect("key written");
        let der_key = PrivateKeyDer::try_from(key.serialize_der()).expect("key der");
        (cert.der().clone(), der_key)
    }
}

/// TLS in front of one broker's plaintext port; counts the bytes clients sent through TLS.
struct TlsProxy {
    addr: SocketAddr,
    bytes_from_clients: Arc<AtomicU64>,
}

async fn tls_proxy(pki: &Pki, backend: SocketAddr, client_ca: Option<&Pki>) -> TlsProxy {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let (cert, key) = pki.issue("server", &["localhost", "127.0.0.1"]);
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .expect("protocol versions");
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.ca_cert.der().clone()).expect("client CA");
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder.with_single_cert(vec![cert], key).expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let bytes_from_clients = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&bytes_from_clients);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let counter = Arc::clone(&counter);
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(upstream) = TcpStream::connect(backend).await else {
                    return;
                };
                let (mut from_client, mut to_client) = tokio::io::split(tls);
                let (mut from_broker, mut to_broker) = upstream.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut from_broker, &mut to_client).await;
                });
                let mut buffer = vec![0u8; 64 * 1024];
                while let Ok(n) = from_client.read(&mut buffer).await {
                    // Counted before forwarding, so the count is up to date once the answer is back.
                    counter.fetch_add(n as u64, Ordering::SeqCst);
                    if n == 0 || to_broker.write_all(&buffer[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    TlsProxy {
        addr,
        bytes_from_clients,
    }
}

fn tls_settings(bootstrap: SocketAddr, tls: impl FnOnce(&mut kdeck::remote::TlsConfig)) -> ClientSettings {
    let mut config = RemoteConfig {
        bootstrap: bootstrap.to_string(),
        ..RemoteConfig::default()
    };
    config.tls.enabled = true;
    tls(&mut config.tls);
    ClientSettings::from_config(&config).expect("valid settings")
}

/// Only the bootstrap connection goes through the proxy (the brokers advertise their
/// plaintext ports), so the test checks what crossed TLS: the bootstrap's ApiVersions and
/// Metadata, and a request sent to `Target::Any`, which uses that open connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_the_right_ca_wrong_ca_and_no_verification() {
    let setup = setup().await;
    let pki = Pki::new("kdeck test CA");
    let proxy = tls_proxy(&pki, setup.addr(0), None).await;
    let ca = pki.path("ca.pem").display().to_string();

    let client = KafkaClient::connect(tls_settings(proxy.addr, |t| t.ca_file = ca.clone()))
        .await
        .expect("connects through TLS");
    let after_bootstrap = proxy.bytes_from_clients.load(Ordering::SeqCst);
    assert!(after_bootstrap > 0, "the bootstrap requests crossed TLS");
    assert_eq!(client.cached_metadata().expect("metadata").brokers.len(), 3);
    let answer = client
        .send(Target::Any, MetadataRequest::default())
        .await
        .expect("an answer through TLS");
    assert_eq!(answer.brokers.len(), 3);
    assert!(proxy.bytes_from_clients.load(Ordering::SeqCst) > after_bootstrap);
    client.close();

    // By host name, with the name checked against the certificate.
    let by_name = RemoteConfig {
        bootstrap: format!("localhost:{}", proxy.addr.port()),
        tls: kdeck::remote::TlsConfig {
            enabled: true,
            ca_file: ca.clone(),
            ..kdeck::remote::TlsConfig::default()
        },
        ..RemoteConfig::default()
    };
    KafkaClient::connect(ClientSettings::from_config(&by_name).expect("settings"))
        .await
        .expect("localhost matches the certificate")
        .close();
    let wrong_name = tls_settings(proxy.addr, |t| {
        t.ca_file = ca.clone();
        t.server_name = "kafka.example.com".into();
    });
    let error = KafkaClient::connect(wrong_name).await.expect_err("name mismatch");
    assert!(
        error.to_string().contains("not valid for name \"kafka.example.com\""),
        "{error}"
    );

    let other = Pki::new("some other CA");
    let other_ca = other.path("ca.pem").display().to_string();
    let error = KafkaClient::connect(tls_settings(proxy.addr, |t| t.ca_file = other_ca.clone()))
        .await
        .expect_err("an unknown issuer");
    match &error {
        RemoteError::NoBootstrap(reasons) => {
            assert!(reasons.contains("TLS with bootstrap server"), "{reasons}");
            assert!(reasons.contains("UnknownIssuer"), "{reasons}");
        }
        other => panic!("expected NoBootstrap, got {other:?}"),
    }

    let unverified = tls_settings(proxy.addr, |t| {
        t.ca_file = other_ca.clone();
        t.verify = false;
    });
    let client = KafkaClient::connect(unverified).await.expect("no verification");
    client
        .send(Target::Any, MetadataRequest::default())
        .await
        .expect("answer");
    client.close();

    let missing = tls_settings(proxy.addr, |t| t.ca_file = pki.path("nope.pem").display().to_string());
    let error = KafkaClient::connect(missing).await.expect_err("no CA file");
    assert!(error.to_string().contains("nope.pem"), "{error}");
    std::fs::write(pki.path("empty.pem"), "").expect("written");
    let empty = tls_settings(proxy.addr, |t| t.ca_file = pki.path("empty.pem").display().to_string());
    let error = KafkaClient::connect(empty).await.expect_err("empty CA file");
    assert!(error.to_string().contains("empty.pem"), "{error}");
    setup.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_needs_the_client_certificate() {
    let setup = setup().await;
    let pki = Pki::new("kdeck test CA");
    let proxy = tls_proxy(&pki, setup.addr(0), Some(&pki)).await;
    let ca = pki.path("ca.pem").display().to_string();
    pki.issue("client", &["kdeck-client"]);

    let anonymous = tls_settings(proxy.addr, |t| t.ca_file = ca.clone());
    let error = KafkaClient::connect(anonymous)
        .await
        .expect_err("no client certificate");
    assert!(matches!(error, RemoteError::NoBootstrap(_)), "{error:?}");

    let identified = tls_settings(proxy.addr, |t| {
        t.ca_file = ca.clone();
        t.cert_file = pki.path("client.pem").display().to_string();
        t.key_file = pki.path("client.key").display().to_string();
    });
    let client = KafkaClient::connect(identified)
        .await
        .expect("with the client certificate");
    client
        .send(Target::Any, MetadataRequest::default())
        .await
        .expect("answer");
    client.close();
    setup.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_broker_gets_apiversions_at_the_version_it_lists() {
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let addr = fake_broker(move |mut stream, _| {
        let seen = Arc::clone(&seen);
        async move {
            while let Some(request) = read_request(&mut stream).await {
                seen.lock().expect("lock").push(request.version);
                let apis = [(ApiKey::ApiVersions, 0, 2), (ApiKey::Metadata, 1, 9)];
                if request.version > 2 {
                    // What Kafka does with a version it cannot parse: UNSUPPORTED_VERSION in
                    // the v0 layout, listing what it supports.
                    let answer = api_versions(&apis).with_error_code(35);
                    let v0 = Received { version: 0, ..request };
                    write_response(&mut stream, &v0, &answer).await;
                } else {
                    write_response(&mut stream, &request, &api_versions(&apis)).await;
                }
            }
        }
    })
    .await;
    let connection = open_with(addr, &settings(&addr.to_string())).await.expect("negotiated");
    assert_eq!(*asked.lock().expect("lock"), vec![3, 2]);
    assert_eq!(connection.version(ApiKey::Metadata), Some(9));
    assert_eq!(connection.version(ApiKey::ApiVersions), Some(2));
    assert_eq!(
        connection.supported(ApiKey::Metadata),
        Some(kdeck::remote::connection::VersionRange { min: 1, max: 9 })
    );
    assert_eq!(connection.version(ApiKey::Fetch), None);
}

/// A fake broker that answers Metadata forever and counts the connections it accepted.
async fn counting_broker() -> (SocketAddr, Arc<AtomicU64>) {
    let accepted = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&accepted);
    let addr = fake_broker(move |mut stream, addr| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            if handshake(&mut stream).await.is_none() {
                return;
            }
            while let Some(request) = read_request(&mut stream).await {
                write_response(&mut stream, &request, &lonely_metadata(addr)).await;
            }
        }
    })
    .await;
    (addr, accepted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_callers_share_one_connection_per_broker() {
    let (addr, accepted) = counting_broker().await;
    let client = KafkaClient::connect(settings(&addr.to_string()))
        .await
        .expect("connects");
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "the bootstrap connection");
    // Broker 7 is the same process under its metadata name: its own slot, its own socket,
    // opened once however many callers ask at the same moment.
    let calls: Vec<_> = (0..50)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.send(Target::Broker(7), MetadataRequest::default()).await })
        })
        .collect();
    for answer in futures_join(calls).await {
        answer.expect("an answer");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    client.close();
    let error = client
        .send(Target::Any, MetadataRequest::default())
        .await
        .expect_err("closed");
    assert!(error.to_string().contains("closed"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_gives_up_leaves_the_connection_usable() {
    // The broker answers only once it holds two requests, so the first caller gives up
    // before its answer comes; that late answer must not be taken for the second's.
    let addr = fake_broker(|mut stream, addr| async move {
        handshake(&mut stream).await.expect("ApiVersions");
        let first = read_request(&mut stream).await.expect("first");
        let second = read_request(&mut stream).await.expect("second");
        write_response(
            &mut stream,
            &first,
            &MetadataResponse::default().with_controller_id(BrokerId(1)),
        )
        .await;
        write_response(&mut stream, &second, &lonely_metadata(addr)).await;
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest).await;
    })
    .await;
    let connection = open_with(addr, &settings(&addr.to_string())).await.expect("open");
    let gave_up = tokio::time::timeout(
        Duration::from_millis(100),
        connection.call(MetadataRequest::default(), 12),
    )
    .await;
    assert!(gave_up.is_err(), "the broker holds the first answer back");
    let second = connection
        .call(MetadataRequest::default(), 12)
        .await
        .expect("the second answer");
    assert_eq!(second.controller_id, BrokerId(7));
    assert!(connection.is_open());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sasl_session_that_ends_makes_the_connection_be_replaced() {
    let (addr, accepted) = sasl_broker(SaslServer {
        enabled: &["SCRAM-SHA-256"],
        user: "carol",
        password: "pw",
        forge_signature: false,
        session_lifetime_ms: 200,
    })
    .await;
    let settings = sasl_settings(addr, "SCRAM-SHA-256", "carol", "pw");
    let connection = open_with(addr, &settings).await.expect("authenticated");
    eventually("the session to near its end", || async {
        if connection.is_open() {
            Err(RemoteError::Other("still in its session".into()))
        } else {
            Ok(())
        }
    })
    .await;
    // Not a failure: the socket itself is fine, it is only retired before the broker drops it.
    assert_eq!(connection.close_reason(), None);
    let client = KafkaClient::connect(settings).await.expect("connects");
    client
        .send(Target::Broker(7), MetadataRequest::default())
        .await
        .expect("an answer");
    let before = accepted.load(Ordering::SeqCst);
    eventually("a request on a new connection", || async {
        client.send(Target::Broker(7), MetadataRequest::default()).await?;
        if accepted.load(Ordering::SeqCst) > before {
            Ok(())
        } else {
            Err(RemoteError::Other("the old session is still in use".into()))
        }
    })
    .await;
    let broker = client.health().into_iter().find(|h| h.id == 7).expect("broker 7");
    assert!(
        broker.last_error.is_none(),
        "replacing a session is not a failure: {broker:?}"
    );
    client.close();
}
