//! One connection to one broker: Kafka framing, correlation ids, requests pipelined on one
//! socket (answers matched by correlation id), a timeout per request, ApiVersions negotiated
//! on connect, then TLS and SASL when configured.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, Request, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::{AsyncReadWrite, BrokerAddress, ClientSettings, RemoteError, Transport, security};

/// The versions a broker supports for one API, from its ApiVersions answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRange {
    pub min: i16,
    pub max: i16,
}

/// The highest version kdeck speaks of each API it sends.
const KDECK_MAX_VERSIONS: &[(ApiKey, i16)] = &[
    (ApiKey::ApiVersions, 3),
    (ApiKey::Metadata, 12),
    (ApiKey::Produce, 9),
    (ApiKey::Fetch, 12),
    (ApiKey::ListOffsets, 7),
    (ApiKey::FindCoordinator, 4),
    (ApiKey::JoinGroup, 7),
    (ApiKey::SyncGroup, 5),
    (ApiKey::Heartbeat, 4),
    (ApiKey::LeaveGroup, 4),
    (ApiKey::OffsetCommit, 8),
    (ApiKey::OffsetFetch, 8),
    (ApiKey::ListGroups, 4),
    (ApiKey::DescribeGroups, 5),
    (ApiKey::DeleteGroups, 2),
    (ApiKey::OffsetDelete, 0),
    (ApiKey::CreateTopics, 7),
    (ApiKey::DeleteTopics, 6),
    (ApiKey::CreatePartitions, 3),
    (ApiKey::DescribeConfigs, 4),
    (ApiKey::IncrementalAlterConfigs, 1),
    (ApiKey::ElectLeaders, 2),
    (ApiKey::AlterPartitionReassignments, 1),
    (ApiKey::ListPartitionReassignments, 0),
    (ApiKey::DescribeCluster, 1),
    (ApiKey::DescribeLogDirs, 4),
    (ApiKey::DeleteRecords, 2),
    (ApiKey::DescribeAcls, 3),
    (ApiKey::DescribeTransactions, 0),
    (ApiKey::ListTransactions, 1),
    (ApiKey::SaslHandshake, 1),
    (ApiKey::SaslAuthenticate, 2),
];

/// The highest version of `api` kdeck speaks; None for an API kdeck never sends.
pub fn kdeck_max_version(api: ApiKey) -> Option<i16> {
    KDECK_MAX_VERSIONS.iter().find(|(key, _)| *key == api).map(|(_, v)| *v)
}

/// The version of `api` to use with a broker that advertised `broker` for it: the highest
/// both speak (a broker newer than kdeck is used at kdeck's highest). `Err` says why there is
/// none, naming the API and both ranges: "Fetch (the broker serves v13 to v17; kdeck speaks
/// v0 to v12)". Asked when the API is used, never at connect: a broker that lacks an API
/// kdeck does not need now is fine.
pub fn negotiate(api: ApiKey, broker: Option<VersionRange>) -> Result<i16, String> {
    let Some(ours) = kdeck_max_version(api) else {
        return Err(format!("{api:?} (kdeck does not speak it)"));
    };
    let Some(broker) = broker else {
        return Err(format!(
            "{api:?} (the broker does not list it in ApiVersions; kdeck speaks v0 to v{ours})"
        ));
    };
    let version = ours.min(broker.max);
    if version >= broker.min && version >= 0 {
        Ok(version)
    } else {
        Err(format!(
            "{api:?} (the broker serves v{} to v{}; kdeck speaks v0 to v{ours})",
            broker.min, broker.max
        ))
    }
}

/// Answers larger than this close the connection before anything is allocated for them (a
/// broker's fetch answers stay far below: fetch.max.bytes is 50 MiB by default).
pub const MAX_RESPONSE_BYTES: usize = 256 * 1024 * 1024;

/// The Kafka error code a broker answers an ApiVersions request it cannot parse with (in the
/// v0 layout, listing what it supports).
const UNSUPPORTED_VERSION: i16 = 35;

/// Frames waiting for the writer task; callers wait for room when it is full.
const WRITE_QUEUE: usize = 256;

/// An open, authenticated connection. Cheap to clone; every clone shares the socket.
#[derive(Debug, Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    link: Link,
    versions: HashMap<i16, VersionRange>,
    /// When to stop using the connection because its SASL session is about to end.
    session_ends: OnceLock<Instant>,
}

/// How much of a SASL session's lifetime to use before opening a new connection: Java's
/// client re-authenticates at 85-95% of it; a new connection is simpler and as good for a
/// console that reconnects anyway.
const SESSION_SHARE: f64 = 0.85;

impl Connection {
    /// Connects (TCP, then TLS, then ApiVersions, then SASL), all within
    /// `settings.connect_timeout`. `label` names the broker in errors ("broker 2 (host:port)").
    pub async fn open(
        address: &BrokerAddress,
        label: &str,
        settings: &ClientSettings,
    ) -> Result<Connection, RemoteError> {
        let limit = settings.connect_timeout;
        match tokio::time::timeout(limit, Connection::open_unbounded(address, label, settings)).await {
            Ok(result) => result,
            Err(_) => Err(RemoteError::Connect {
                address: label.to_string(),
                reason: format!("no connection within {} ms (connect_timeout_ms)", limit.as_millis()),
            }),
        }
    }

    async fn open_unbounded(
        address: &BrokerAddress,
        label: &str,
        settings: &ClientSettings,
    ) -> Result<Connection, RemoteError> {
        tracing::debug!(broker = label, "connecting");
        let refused = |e: std::io::Error| RemoteError::Connect {
            address: label.to_string(),
            reason: e.to_string(),
        };
        let link = match &settings.transport {
            Transport::Tcp => {
                let tcp = TcpStream::connect((address.host.as_str(), address.port))
                    .await
                    .map_err(refused)?;
                // Requests are small and latency matters more than packet count.
                let _ = tcp.set_nodelay(true);
                start_link(tcp, address, label, settings).await?
            }
            Transport::Dial(dialer) => {
                let stream: Box<dyn AsyncReadWrite> = dialer.dial(address).await.map_err(refused)?;
                start_link(stream, address, label, settings).await?
            }
        };
        let versions = negotiate_versions(&link).await?;
        let connection = Connection {
            inner: Arc::new(Inner {
                link,
                versions,
                session_ends: OnceLock::new(),
            }),
        };
        if let Some(sasl) = &settings.sasl
            && let Some(lifetime) = security::authenticate(&connection, label, sasl).await?
        {
            // The broker closes the connection once the session ends (KIP-368).
            let _ = connection
                .inner
                .session_ends
                .set(Instant::now() + lifetime.mul_f64(SESSION_SHARE));
        }
        tracing::debug!(broker = label, "connected");
        Ok(connection)
    }

    /// Sends `request` at `version` and waits for its answer, at most the request timeout.
    /// Many calls may be in flight on one connection at once.
    pub async fn call<R: Request + Send + 'static>(&self, request: R, version: i16) -> Result<R::Response, RemoteError>
    where
        R::Response: Send + 'static,
    {
        let api = api_key::<R>(&self.inner.link)?;
        let payload = self.inner.link.round_trip(api, version, &request).await?;
        self.inner.link.decode_response::<R::Response>(api, version, payload)
    }

    /// Sends `request` at `version` without waiting for an answer, for requests the broker
    /// does not answer (Produce with acks=0). Returns once the request is queued for the socket.
    pub async fn call_without_response<R: Request + Send + 'static>(
        &self,
        request: R,
        version: i16,
    ) -> Result<(), RemoteError> {
        let api = api_key::<R>(&self.inner.link)?;
        self.inner.link.send_only(api, version, &request).await
    }

    /// The version to use for `api`: the highest both kdeck and the broker support.
    pub fn version(&self, api: ApiKey) -> Option<i16> {
        negotiate(api, self.supported(api)).ok()
    }

    /// The broker's advertised range for `api`.
    pub fn supported(&self, api: ApiKey) -> Option<VersionRange> {
        self.inner.versions.get(&(api as i16)).copied()
    }

    /// False once the socket failed or was closed; a closed connection answers every call
    /// with `RemoteError::Disconnected`. Also false, with the socket still working, once the
    /// SASL session is close to the end the broker set: the next user opens a new connection.
    pub fn is_open(&self) -> bool {
        self.inner.link.shared.is_open() && self.inner.session_ends.get().is_none_or(|end| Instant::now() < *end)
    }

    /// Why the connection closed, once it has.
    pub fn close_reason(&self) -> Option<String> {
        self.inner.link.shared.state().closed.clone()
    }

    pub fn close(&self) {
        self.inner.link.shared.close("closed by kdeck");
    }

    /// True when both are clones of one connection.
    pub fn same_as(&self, other: &Connection) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

/// TLS over `stream` when configured, then the reader and writer tasks.
async fn start_link<S: AsyncReadWrite + 'static>(
    stream: S,
    address: &BrokerAddress,
    label: &str,
    settings: &ClientSettings,
) -> Result<Link, RemoteError> {
    Ok(match &settings.tls {
        Some(tls) => {
            let stream = security::tls_connect(stream, address, label, tls).await?;
            Link::start(stream, label, settings)
        }
        None => Link::start(stream, label, settings),
    })
}

fn api_key<R: Request>(link: &Link) -> Result<ApiKey, RemoteError> {
    ApiKey::try_from(R::KEY).map_err(|_| RemoteError::Unsupported {
        api: format!("API key {}", R::KEY),
        broker: link.shared.label.clone(),
    })
}

/// Asks for ApiVersions v3 (with kdeck's name and version); a broker that does not know v3
/// answers UNSUPPORTED_VERSION in the v0 layout with its own range, and we ask again at the
/// highest version it lists (Kafka's client does the same).
async fn negotiate_versions(link: &Link) -> Result<HashMap<i16, VersionRange>, RemoteError> {
    let request = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("kdeck"))
        .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
    let ours = kdeck_max_version(ApiKey::ApiVersions).unwrap_or(0);
    let mut version = ours;
    let mut asked = Vec::new();
    loop {
        asked.push(version);
        let payload = link.round_trip(ApiKey::ApiVersions, version, &request).await?;
        let response = decode_api_versions(link, version, payload)?;
        if response.error_code == UNSUPPORTED_VERSION {
            let broker_max = response
                .api_keys
                .iter()
                .find(|k| k.api_key == ApiKey::ApiVersions as i16)
                .map_or(0, |k| k.max_version);
            let next = broker_max.clamp(0, ours);
            if asked.contains(&next) {
                return Err(RemoteError::Unsupported {
                    api: format!("ApiVersions (asked v{asked:?})"),
                    broker: link.shared.label.clone(),
                });
            }
            version = next;
            continue;
        }
        if response.error_code != 0 {
            return Err(RemoteError::kafka(
                format!("ApiVersions from {}", link.shared.label),
                response.error_code,
                None,
            ));
        }
        tracing::debug!(broker = %link.shared.label, version, apis = response.api_keys.len(), "ApiVersions");
        return Ok(response
            .api_keys
            .iter()
            .map(|k| {
                (
                    k.api_key,
                    VersionRange {
                        min: k.min_version,
                        max: k.max_version,
                    },
                )
            })
            .collect());
    }
}

/// An ApiVersions answer: in the asked version, or in v0 when its error code says the
/// broker did not understand the version we asked for.
fn decode_api_versions(link: &Link, version: i16, mut payload: Bytes) -> Result<ApiVersionsResponse, RemoteError> {
    let api = ApiKey::ApiVersions;
    ResponseHeader::decode(&mut payload, api.response_header_version(version))
        .map_err(|e| link.protocol_failure(api, version, &e))?;
    let error_code = (payload.len() >= 2).then(|| i16::from_be_bytes([payload[0], payload[1]]));
    let body_version = if error_code == Some(UNSUPPORTED_VERSION) {
        0
    } else {
        version
    };
    ApiVersionsResponse::decode(&mut payload, body_version).map_err(|e| link.protocol_failure(api, version, &e))
}

/// Reads one answer's bytes (response header, then body) as `api` answers at `version`: what
/// every call's answer goes through. Tagged fields the version does not define are skipped,
/// as Kafka's generated readers do. Returns the answer and how many bytes were left unread.
pub fn decode_answer<T: Decodable>(api: ApiKey, version: i16, mut payload: Bytes) -> anyhow::Result<(T, usize)> {
    ResponseHeader::decode(&mut payload, api.response_header_version(version))?;
    let response = T::decode(&mut payload, version)?;
    Ok((response, payload.remaining()))
}

/// The socket behind a connection: a writer task fed through a queue, a reader task routing
/// answers by correlation id to the calls waiting for them.
#[derive(Debug)]
struct Link {
    shared: Arc<Shared>,
    frames: mpsc::Sender<Bytes>,
    next_correlation: AtomicI32,
    request_timeout: Duration,
    client_id: StrBytes,
}

#[derive(Debug)]
struct Shared {
    label: String,
    state: Mutex<State>,
    tasks: Mutex<Vec<AbortHandle>>,
}

#[derive(Debug, Default)]
struct State {
    /// By correlation id: a closing connection fails its calls in the order they were sent
    /// (a hash map's order would differ per run, and so would the order the callers wake).
    pending: BTreeMap<i32, Pending>,
    /// Why the connection closed; set once, never cleared.
    closed: Option<String>,
}

#[derive(Debug)]
struct Pending {
    api: ApiKey,
    answer: oneshot::Sender<Result<Bytes, RemoteError>>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_open(&self) -> bool {
        self.state().closed.is_none()
    }

    fn disconnected(&self, reason: &str) -> RemoteError {
        RemoteError::Disconnected {
            broker: self.label.clone(),
            reason: reason.to_string(),
        }
    }

    /// Closes the socket (both tasks end) and fails every call still waiting with `reason`.
    fn close(&self, reason: &str) {
        self.close_failing_calls(reason, self.disconnected(reason));
    }

    /// Closes the socket and answers every call still waiting with `error`.
    fn close_failing_calls(&self, reason: &str, error: RemoteError) {
        let pending = {
            let mut state = self.state();
            if state.closed.is_some() {
                return;
            }
            state.closed = Some(reason.to_string());
            std::mem::take(&mut state.pending)
        };
        for (_, call) in pending {
            let _ = call.answer.send(Err(error.clone()));
        }
        for task in self.tasks.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            task.abort();
        }
    }

    /// A failure of the connection itself: logged once, then closed with `error` for every
    /// call waiting.
    fn fail_with(&self, reason: &str, error: RemoteError) {
        if self.is_open() {
            tracing::warn!(broker = %self.label, "connection closed: {reason}");
        }
        self.close_failing_calls(reason, error);
    }

    fn fail(&self, reason: &str) {
        self.fail_with(reason, self.disconnected(reason));
    }
}

impl Link {
    fn start<S>(stream: S, label: &str, settings: &ClientSettings) -> Link
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (reader, writer) = tokio::io::split(stream);
        let shared = Arc::new(Shared {
            label: label.to_string(),
            state: Mutex::new(State::default()),
            tasks: Mutex::new(Vec::new()),
        });
        let (frames, queue) = mpsc::channel(WRITE_QUEUE);
        let write_task = tokio::spawn(write_loop(writer, queue, Arc::clone(&shared)));
        let read_task = tokio::spawn(read_loop(reader, Arc::clone(&shared)));
        shared
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend([write_task.abort_handle(), read_task.abort_handle()]);
        Link {
            shared,
            frames,
            next_correlation: AtomicI32::new(0),
            request_timeout: settings.request_timeout,
            client_id: StrBytes::from_string(settings.client_id.clone()),
        }
    }

    fn correlation_id(&self) -> i32 {
        // Wraps after 2^31 requests like Java's client; an id still pending then is skipped.
        let id = self.next_correlation.fetch_add(1, Ordering::Relaxed);
        id & i32::MAX
    }

    fn encode<R: Encodable>(
        &self,
        api: ApiKey,
        version: i16,
        correlation_id: i32,
        request: &R,
    ) -> Result<Bytes, RemoteError> {
        let encode_error = |e: anyhow::Error| RemoteError::Other(format!("encoding {api:?} v{version}: {e:#}"));
        let mut frame = BytesMut::with_capacity(64);
        frame.put_i32(0);
        RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(self.client_id.clone()))
            .encode(&mut frame, api.request_header_version(version))
            .map_err(encode_error)?;
        request.encode(&mut frame, version).map_err(encode_error)?;
        let length = i32::try_from(frame.len() - 4)
            .map_err(|_| RemoteError::Other(format!("{api:?} request of {} bytes is too large", frame.len())))?;
        frame[..4].copy_from_slice(&length.to_be_bytes());
        Ok(frame.freeze())
    }

    async fn enqueue(&self, frame: Bytes) -> Result<(), RemoteError> {
        self.frames.send(frame).await.map_err(|_| {
            let reason = self
                .shared
                .state()
                .closed
                .clone()
                .unwrap_or_else(|| "writer stopped".into());
            self.shared.disconnected(&reason)
        })
    }

    /// Sends one request and returns its answer's bytes (response header included).
    async fn round_trip<R: Encodable>(&self, api: ApiKey, version: i16, request: &R) -> Result<Bytes, RemoteError> {
        let (answer, answered) = oneshot::channel();
        let correlation_id = {
            let mut state = self.shared.state();
            if let Some(reason) = &state.closed {
                return Err(self.shared.disconnected(reason));
            }
            let mut id = self.correlation_id();
            while state.pending.contains_key(&id) {
                id = self.correlation_id();
            }
            state.pending.insert(id, Pending { api, answer });
            id
        };
        let mut unsent = Unsent {
            shared: &self.shared,
            correlation_id: Some(correlation_id),
        };
        let frame = self.encode(api, version, correlation_id, request)?;
        self.enqueue(frame).await?;
        // Once sent, the entry stays until its answer arrives even if this caller gives up:
        // the reader then drops that answer instead of taking it for a stranger's.
        unsent.correlation_id = None;
        let limit = self.request_timeout;
        match tokio::time::timeout(limit, answered).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(self.shared.disconnected("the connection closed")),
            Err(_) => {
                let ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
                // Java's client disconnects on a request timeout: a late answer could not be
                // told apart from a broker stuck for good, and other calls would wait as well.
                self.shared.fail(&format!(
                    "{api:?} v{version} got no answer within {ms} ms (request_timeout_ms)"
                ));
                Err(RemoteError::Timeout {
                    api: format!("{api:?}"),
                    broker: self.shared.label.clone(),
                    ms,
                })
            }
        }
    }

    async fn send_only<R: Encodable>(&self, api: ApiKey, version: i16, request: &R) -> Result<(), RemoteError> {
        if let Some(reason) = &self.shared.state().closed {
            return Err(self.shared.disconnected(reason));
        }
        let frame = self.encode(api, version, self.correlation_id(), request)?;
        self.enqueue(frame).await
    }

    fn decode_response<T: Decodable>(&self, api: ApiKey, version: i16, payload: Bytes) -> Result<T, RemoteError> {
        let (response, unread) =
            decode_answer(api, version, payload).map_err(|e| self.protocol_failure(api, version, &e))?;
        if unread > 0 {
            tracing::debug!(
                broker = %self.shared.label,
                "{api:?} v{version} answer has {unread} bytes kdeck did not read"
            );
        }
        Ok(response)
    }

    /// An answer that does not decode: the stream can no longer be trusted, so the
    /// connection closes and every other call waiting on it fails too.
    fn protocol_failure(&self, api: ApiKey, version: i16, error: &anyhow::Error) -> RemoteError {
        let reason = format!("{api:?} v{version} answer does not decode: {error:#}");
        self.shared.fail(&reason);
        RemoteError::Protocol {
            broker: self.shared.label.clone(),
            reason,
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.shared.close("connection dropped");
    }
}

/// A registered call whose request has not reached the writer's queue: if it never does
/// (encoding failed, the caller gave up), nothing will answer it, so its entry goes.
struct Unsent<'a> {
    shared: &'a Shared,
    correlation_id: Option<i32>,
}

impl Drop for Unsent<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.correlation_id {
            self.shared.state().pending.remove(&id);
        }
    }
}

/// Writes whole frames in order; flushes when the queue runs dry so pipelined requests share
/// packets (and TLS records).
async fn write_loop<W: AsyncWrite>(mut writer: WriteHalf<W>, mut queue: mpsc::Receiver<Bytes>, shared: Arc<Shared>) {
    while let Some(frame) = queue.recv().await {
        let mut result = writer.write_all(&frame).await;
        while result.is_ok() {
            match queue.try_recv() {
                Ok(next) => result = writer.write_all(&next).await,
                Err(_) => break,
            }
        }
        if result.is_ok() {
            result = writer.flush().await;
        }
        if let Err(e) = result {
            shared.fail(&format!("writing to the socket: {e}"));
            return;
        }
    }
}

/// Why the reader stopped.
enum ReadEnd {
    /// The socket closed or failed.
    Lost(String),
    /// The bytes are not Kafka answers to our requests.
    Garbage(String),
}

/// Reads answers and hands each to the call with its correlation id. Anything that does not
/// fit (a size out of bounds, an id nobody waits for, end of stream) closes the connection.
async fn read_loop<R: AsyncRead>(mut reader: ReadHalf<R>, shared: Arc<Shared>) {
    let end = loop {
        let length = match reader.read_i32().await {
            Ok(length) => length,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                break ReadEnd::Lost("the broker closed the connection".into());
            }
            Err(e) => break ReadEnd::Lost(format!("reading from the socket: {e}")),
        };
        let size = match usize::try_from(length) {
            Ok(size) if (4..=MAX_RESPONSE_BYTES).contains(&size) => size,
            _ => {
                break ReadEnd::Garbage(format!(
                    "an answer claims a size of {length} bytes (expected 4 to {MAX_RESPONSE_BYTES})"
                ));
            }
        };
        let mut payload = BytesMut::zeroed(size);
        if let Err(e) = reader.read_exact(&mut payload).await {
            break ReadEnd::Lost(format!("reading a {size}-byte answer: {e}"));
        }
        let payload = payload.freeze();
        let correlation_id = i32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
        let waiting = shared.state().pending.remove(&correlation_id);
        let Some(call) = waiting else {
            break ReadEnd::Garbage(format!(
                "an answer carries correlation id {correlation_id}, which no request is waiting for"
            ));
        };
        tracing::trace!(broker = %shared.label, api = ?call.api, correlation_id, size, "answer");
        let _ = call.answer.send(Ok(payload));
    };
    match end {
        ReadEnd::Lost(reason) => shared.fail(&reason),
        // The calls waiting learn the broker spoke nonsense, not merely that it went away.
        ReadEnd::Garbage(reason) => shared.fail_with(
            &reason,
            RemoteError::Protocol {
                broker: shared.label.clone(),
                reason: reason.clone(),
            },
        ),
    }
}
