//! The wire tests' harness: a three-broker embedded cluster serving the Kafka protocol on
//! free ports, and a raw client that frames requests with the `kafka-protocol` crate and reads
//! the answers back (tests/wire_protocol.rs, tests/wire_legacy.rs, tests/remote_client.rs).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader, TopicName};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use kdeck::engine::{Cluster, ClusterConfig, TopicConfig, TopicPartition};
use kdeck::wire::{WireConfig, WireServer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a topic may take to get its leaders.
const PATIENCE: Duration = Duration::from_secs(30);

/// The client id every request of these tests carries.
const CLIENT_ID: &str = "wire-test";

/// A running cluster and its listeners; [`Setup::stop`] shuts both down.
pub struct Setup {
    _dir: tempfile::TempDir,
    pub cluster: Cluster,
    pub server: WireServer,
}

/// Listeners on ports the system picks.
pub fn free_ports() -> WireConfig {
    WireConfig {
        base_port: 0,
        ..WireConfig::default()
    }
}

/// Three brokers listening on free ports.
pub async fn setup() -> Setup {
    setup_with(free_ports()).await
}

/// Three brokers listening as `wire` says.
pub async fn setup_with(wire: WireConfig) -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let cluster = Cluster::start(ClusterConfig {
        data_dir: dir.path().to_path_buf(),
        brokers: 3,
        ..ClusterConfig::default()
    })
    .await
    .expect("cluster starts");
    let server = WireServer::start(cluster.clone(), wire).await.expect("listeners open");
    Setup {
        _dir: dir,
        cluster,
        server,
    }
}

impl Setup {
    pub fn addr(&self, broker: i32) -> SocketAddr {
        self.server
            .listeners()
            .into_iter()
            .find(|l| l.broker == broker)
            .expect("a listener for the broker")
            .addr
    }

    /// Every listener, `host:port,...`, as a client's bootstrap list.
    pub fn bootstrap(&self) -> String {
        self.server
            .listeners()
            .iter()
            .map(|l| l.addr.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Creates `name` with `partitions` partitions on all three brokers; returns partition 0's
    /// leader once every partition has a leader, a high watermark and its full ISR.
    pub async fn topic(&self, name: &str, partitions: i32) -> i32 {
        self.topic_with(name, TopicConfig::new(partitions, 3)).await
    }

    /// [`Setup::topic`] with a topic configuration of the test's own.
    pub async fn topic_with(&self, name: &str, config: TopicConfig) -> i32 {
        let partitions = config.partitions;
        self.cluster.create_topic(name, config).await.expect("topic created");
        let snapshot = self
            .cluster
            .wait_for(PATIENCE, |s| {
                (0..partitions).all(|p| {
                    s.partition(&TopicPartition::new(name, p)).is_some_and(|p| {
                        p.leader.is_some() && p.high_watermark.is_some() && p.isr.len() == p.replicas.len()
                    })
                })
            })
            .await
            .expect("every partition has a leader");
        snapshot
            .partition(&TopicPartition::new(name, 0))
            .and_then(|p| p.leader)
            .expect("leader")
    }

    pub async fn stop(self) {
        self.server.shutdown();
        self.cluster.shutdown().await;
    }
}

/// Encodes a request frame.
pub fn frame<R: Encodable + HeaderVersion>(api: ApiKey, version: i16, correlation_id: i32, request: &R) -> Bytes {
    let mut body = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str(CLIENT_ID)))
        .encode(&mut body, R::header_version(version))
        .expect("header encodes");
    request.encode(&mut body, version).expect("request encodes");
    let mut out = BytesMut::new();
    out.put_i32(body.len() as i32);
    out.extend_from_slice(&body);
    out.freeze()
}

/// One response frame's payload (header and body), `None` when the connection ends first.
pub async fn read_response<S: AsyncRead + Unpin>(stream: &mut S) -> Option<Bytes> {
    let length = stream.read_i32().await.ok()?;
    let mut payload = vec![0u8; usize::try_from(length).ok()?];
    stream.read_exact(&mut payload).await.ok()?;
    Some(Bytes::from(payload))
}

/// Sends one request and decodes its response, which must be read to its last byte.
pub async fn call<S, Req, Resp>(stream: &mut S, api: ApiKey, version: i16, request: &Req) -> Resp
where
    S: AsyncRead + AsyncWrite + Unpin,
    Req: Encodable + HeaderVersion,
    Resp: Decodable + HeaderVersion,
{
    stream
        .write_all(&frame(api, version, 42, request))
        .await
        .expect("request sent");
    let mut payload = read_response(stream)
        .await
        .expect("a response (the connection stays open)");
    let header = ResponseHeader::decode(&mut payload, Resp::header_version(version)).expect("response header");
    assert_eq!(header.correlation_id, 42);
    let response = Resp::decode(&mut payload, version).expect("response decodes");
    assert!(!payload.has_remaining(), "{api:?} v{version}: the whole answer is read");
    response
}

pub async fn connect(addr: SocketAddr) -> TcpStream {
    TcpStream::connect(addr).await.expect("connects")
}

/// Whether the server closed the connection (read returns end of stream).
pub async fn closed<S: AsyncRead + Unpin>(stream: &mut S) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

pub fn topic_name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}
