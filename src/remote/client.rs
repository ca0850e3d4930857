//! [`KafkaClient`]: a cluster seen through its brokers. Bootstraps from the first reachable
//! address, keeps one [`Connection`] per broker (opened on first use, reopened with
//! exponential backoff after a failure), caches metadata and group coordinators, and routes
//! each request to the broker that must answer it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use kafka_protocol::messages::{ApiKey, FindCoordinatorRequest, MetadataRequest, MetadataResponse};
use kafka_protocol::protocol::{Request, StrBytes};
use tokio::time::Instant;

use super::connection::{Connection, negotiate};
use super::{BrokerAddress, ClientSettings, RemoteError};
use crate::kafka::BrokerId;

/// Which broker a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Any live broker (the least loaded or the first that answers).
    Any,
    Broker(BrokerId),
    /// The controller Metadata names.
    Controller,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    pub id: BrokerId,
    pub address: BrokerAddress,
    pub rack: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    pub partition: i32,
    /// `None` when the partition has no leader (Kafka's -1).
    pub leader: Option<BrokerId>,
    pub leader_epoch: i32,
    pub replicas: Vec<BrokerId>,
    pub isr: Vec<BrokerId>,
    pub offline_replicas: Vec<BrokerId>,
    /// The partition's error code (0: none; LEADER_NOT_AVAILABLE...).
    pub error: i16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    pub name: String,
    pub internal: bool,
    pub error: i16,
    /// By partition number.
    pub partitions: Vec<PartitionMetadata>,
}

/// One Metadata answer, tidied: brokers by id, topics by name, partitions by number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterMetadata {
    pub cluster_id: Option<String>,
    pub controller: Option<BrokerId>,
    pub brokers: Vec<BrokerInfo>,
    pub topics: Vec<TopicMetadata>,
    pub taken_at: DateTime<Utc>,
}

impl ClusterMetadata {
    pub fn topic(&self, name: &str) -> Option<&TopicMetadata> {
        self.topics.iter().find(|t| t.name == name)
    }

    pub fn broker(&self, id: BrokerId) -> Option<&BrokerInfo> {
        self.brokers.iter().find(|b| b.id == id)
    }
}

/// How the client's connection to one broker is doing, for the console's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerHealth {
    pub id: BrokerId,
    pub address: BrokerAddress,
    pub connected: bool,
    /// The last failure talking to it, cleared by the next success.
    pub last_error: Option<String>,
    pub failing_since: Option<DateTime<Utc>>,
}

/// A client for one external cluster. Cheap to clone; clones share connections and caches.
#[derive(Debug, Clone)]
pub struct KafkaClient {
    inner: Arc<ClientInner>,
}

#[derive(Debug)]
struct ClientInner {
    settings: ClientSettings,
    state: Mutex<ClientState>,
    /// One Metadata request at a time: callers arriving meanwhile share its answer.
    refreshing: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct ClientState {
    /// One slot per bootstrap address (id -1), kept as the last resort of [`Target::Any`].
    bootstrap: Vec<Arc<BrokerSlot>>,
    /// One slot per broker of the latest metadata.
    brokers: BTreeMap<BrokerId, Arc<BrokerSlot>>,
    metadata: Option<(Arc<ClusterMetadata>, Instant)>,
    coordinators: HashMap<String, BrokerId>,
    closed: bool,
}

/// Kafka's id for "no broker" (a leaderless partition, an unknown controller).
const NO_BROKER: i32 = -1;

impl KafkaClient {
    /// Connects to the first bootstrap address that answers and reads the cluster's metadata.
    /// Fails within about `connect_timeout` per address with [`RemoteError::NoBootstrap`]
    /// naming each address and why.
    pub async fn connect(settings: ClientSettings) -> Result<KafkaClient, RemoteError> {
        let bootstrap: Vec<Arc<BrokerSlot>> = settings
            .bootstrap
            .iter()
            .map(|address| Arc::new(BrokerSlot::new(NO_BROKER, address.clone())))
            .collect();
        let client = KafkaClient {
            inner: Arc::new(ClientInner {
                settings,
                state: Mutex::new(ClientState {
                    bootstrap: bootstrap.clone(),
                    ..ClientState::default()
                }),
                refreshing: tokio::sync::Mutex::new(()),
            }),
        };
        let mut failures = Vec::new();
        for slot in &bootstrap {
            let attempt = async {
                let connection = slot.connection(&client.inner.settings).await?;
                client.fetch_metadata(slot, &connection).await
            };
            match attempt.await {
                Ok(metadata) => {
                    tracing::debug!(
                        bootstrap = %slot.address,
                        brokers = metadata.brokers.len(),
                        topics = metadata.topics.len(),
                        "connected to the cluster"
                    );
                    return Ok(client);
                }
                Err(e) => {
                    tracing::warn!(bootstrap = %slot.address, "bootstrap failed: {e}");
                    failures.push(format!("{}: {e}", slot.address));
                }
            }
        }
        client.close();
        Err(RemoteError::NoBootstrap(failures.join("; ")))
    }

    pub fn settings(&self) -> &ClientSettings {
        &self.inner.settings
    }

    /// Sends `request` to `target` at the highest version both sides support and waits for
    /// the answer. Connection failures mark the broker unhealthy and are returned, never
    /// retried here (the caller decides).
    pub async fn send<R: Request + Send + 'static>(
        &self,
        target: Target,
        request: R,
    ) -> Result<R::Response, RemoteError>
    where
        R::Response: Send + 'static,
    {
        let (slot, connection) = self.pick(target).await?;
        let version = version_of::<R>(&slot, &connection)?;
        let result = connection.call(request, version).await;
        slot.observe(&connection, &result, &self.inner.settings);
        result
    }

    /// Like [`KafkaClient::send`] for a request the broker does not answer (Produce with
    /// acks=0): returns once the request is queued on the broker's connection.
    pub async fn send_without_response<R: Request + Send + 'static>(
        &self,
        target: Target,
        request: R,
    ) -> Result<(), RemoteError> {
        let (slot, connection) = self.pick(target).await?;
        let version = version_of::<R>(&slot, &connection)?;
        let result = connection.call_without_response(request, version).await;
        slot.observe(&connection, &result, &self.inner.settings);
        result
    }

    /// The version [`KafkaClient::send`] would use for `api` with `target`'s broker, once
    /// connected; None when the broker does not support it.
    pub async fn version_for(&self, target: Target, api: ApiKey) -> Result<Option<i16>, RemoteError> {
        let (_, connection) = self.pick(target).await?;
        Ok(connection.version(api))
    }

    /// Like [`KafkaClient::version_for`], with a clear error naming the API and both
    /// version ranges when the broker and kdeck share no version of it.
    pub async fn negotiated_version(&self, target: Target, api: ApiKey) -> Result<i16, RemoteError> {
        let (slot, connection) = self.pick(target).await?;
        negotiated(&slot.label, &connection, api)
    }

    /// Reads every topic's metadata now and caches it.
    pub async fn refresh_metadata(&self) -> Result<Arc<ClusterMetadata>, RemoteError> {
        let asked_at = Instant::now();
        let _single_flight = self.inner.refreshing.lock().await;
        if let Some((metadata, at)) = &self.state().metadata
            && *at >= asked_at
        {
            return Ok(Arc::clone(metadata));
        }
        let (slot, connection) = self.pick_any().await?;
        self.fetch_metadata(&slot, &connection).await
    }

    /// The cached metadata, refreshed first when older than `metadata_max_age`.
    pub async fn metadata(&self) -> Result<Arc<ClusterMetadata>, RemoteError> {
        let max_age = self.inner.settings.metadata_max_age;
        if let Some((metadata, at)) = &self.state().metadata
            && at.elapsed() < max_age
        {
            return Ok(Arc::clone(metadata));
        }
        self.refresh_metadata().await
    }

    /// The latest metadata without asking the cluster (None before the first answer).
    pub fn cached_metadata(&self) -> Option<Arc<ClusterMetadata>> {
        self.state().metadata.as_ref().map(|(m, _)| Arc::clone(m))
    }

    /// The partition's leader from the cache; refreshes once when unknown or leaderless.
    pub async fn leader_of(&self, topic: &str, partition: i32) -> Result<BrokerId, RemoteError> {
        let cached = self.metadata().await?;
        if let Ok(leader) = leader_in(&cached, topic, partition) {
            return Ok(leader);
        }
        let refreshed = self.refresh_metadata().await?;
        leader_in(&refreshed, topic, partition)
    }

    /// The group's coordinator (FindCoordinator, cached until [`KafkaClient::forget_coordinator`]).
    pub async fn coordinator(&self, group: &str) -> Result<BrokerId, RemoteError> {
        if let Some(id) = self.state().coordinators.get(group) {
            return Ok(*id);
        }
        let (slot, connection) = self.pick_any().await?;
        let version = version_of::<FindCoordinatorRequest>(&slot, &connection)?;
        let key = StrBytes::from_string(group.to_string());
        // Group coordinators have key type 0; v4 (KIP-699) asks for a batch of keys.
        let request = if version >= 4 {
            FindCoordinatorRequest::default().with_coordinator_keys(vec![key])
        } else {
            FindCoordinatorRequest::default().with_key(key)
        };
        let result = connection.call(request, version).await;
        slot.observe(&connection, &result, &self.inner.settings);
        let response = result?;
        let (id, host, port, code, message) = if version >= 4 {
            let found = response
                .coordinators
                .into_iter()
                .find(|c| c.key.as_str() == group)
                .ok_or_else(|| RemoteError::Protocol {
                    broker: slot.label.clone(),
                    reason: format!("FindCoordinator answer does not mention group {group:?}"),
                })?;
            (
                found.node_id.0,
                found.host,
                found.port,
                found.error_code,
                found.error_message,
            )
        } else {
            (
                response.node_id.0,
                response.host,
                response.port,
                response.error_code,
                response.error_message,
            )
        };
        if code != 0 {
            return Err(RemoteError::kafka(
                format!("FindCoordinator for group {group}"),
                code,
                message.as_deref(),
            ));
        }
        let address = u16::try_from(port)
            .ok()
            .filter(|p| *p > 0)
            .map(|port| BrokerAddress {
                host: host.to_string(),
                port,
            })
            .ok_or_else(|| RemoteError::Protocol {
                broker: slot.label.clone(),
                reason: format!("FindCoordinator names broker {id} at port {port}"),
            })?;
        let mut state = self.state();
        // A coordinator the metadata has not shown yet (it just joined) is reachable anyway.
        state
            .brokers
            .entry(id)
            .or_insert_with(|| Arc::new(BrokerSlot::new(id, address)));
        state.coordinators.insert(group.to_string(), id);
        Ok(id)
    }

    /// Drops a cached coordinator after NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE.
    pub fn forget_coordinator(&self, group: &str) {
        self.state().coordinators.remove(group);
    }

    /// Every broker the client knows (bootstrap addresses until the first metadata), with
    /// its connection state.
    pub fn health(&self) -> Vec<BrokerHealth> {
        let state = self.state();
        if state.metadata.is_none() {
            state.bootstrap.iter().map(|s| s.health()).collect()
        } else {
            state.brokers.values().map(|s| s.health()).collect()
        }
    }

    /// Closes every connection; later calls fail.
    pub fn close(&self) {
        let slots = {
            let mut state = self.state();
            state.closed = true;
            state.metadata = None;
            state.coordinators.clear();
            let mut slots: Vec<Arc<BrokerSlot>> = std::mem::take(&mut state.brokers).into_values().collect();
            slots.extend(state.bootstrap.iter().cloned());
            slots
        };
        for slot in slots {
            slot.retire();
        }
    }

    fn state(&self) -> MutexGuard<'_, ClientState> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The broker `target` names and an open connection to it.
    async fn pick(&self, target: Target) -> Result<(Arc<BrokerSlot>, Connection), RemoteError> {
        let id = match target {
            Target::Any => return self.pick_any().await,
            Target::Broker(id) => id,
            Target::Controller => match self.metadata().await?.controller {
                Some(id) => id,
                None => self
                    .refresh_metadata()
                    .await?
                    .controller
                    .ok_or_else(|| RemoteError::Other("the cluster's metadata names no controller".into()))?,
            },
        };
        let known = self.live_state()?.brokers.get(&id).cloned();
        let slot = match known {
            Some(slot) => slot,
            // A broker that joined after our last look.
            None => {
                self.refresh_metadata().await?;
                self.live_state()?
                    .brokers
                    .get(&id)
                    .cloned()
                    .ok_or(RemoteError::UnknownBroker(id))?
            }
        };
        let connection = slot.connection(&self.inner.settings).await?;
        Ok((slot, connection))
    }

    /// Any broker: one already connected, else the others in turn (those backing off last,
    /// they fail at once), then the bootstrap addresses.
    async fn pick_any(&self) -> Result<(Arc<BrokerSlot>, Connection), RemoteError> {
        let (brokers, bootstrap) = {
            let state = self.live_state()?;
            let brokers: Vec<Arc<BrokerSlot>> = state.brokers.values().cloned().collect();
            (brokers, state.bootstrap.clone())
        };
        for slot in brokers.iter().chain(&bootstrap) {
            if let Some(connection) = slot.open_connection() {
                return Ok((Arc::clone(slot), connection));
            }
        }
        let (ready, backing_off): (Vec<_>, Vec<_>) =
            brokers.iter().chain(&bootstrap).partition(|slot| !slot.backing_off());
        let mut failures = Vec::new();
        for slot in ready.into_iter().chain(backing_off) {
            match slot.connection(&self.inner.settings).await {
                Ok(connection) => return Ok((Arc::clone(slot), connection)),
                Err(e) => failures.push(e.to_string()),
            }
        }
        Err(RemoteError::Connect {
            address: "any broker".into(),
            reason: failures.join("; "),
        })
    }

    fn live_state(&self) -> Result<MutexGuard<'_, ClientState>, RemoteError> {
        let state = self.state();
        if state.closed {
            return Err(RemoteError::Other("the Kafka client is closed".into()));
        }
        Ok(state)
    }

    /// Asks `slot` for every topic's metadata and makes it the client's view of the cluster.
    async fn fetch_metadata(
        &self,
        slot: &BrokerSlot,
        connection: &Connection,
    ) -> Result<Arc<ClusterMetadata>, RemoteError> {
        let version = version_of::<MetadataRequest>(slot, connection)?;
        // v0 has no way to ask for every topic without naming them.
        if version < 1 {
            return Err(RemoteError::Unsupported {
                api: "Metadata v1 or later".into(),
                broker: slot.label.clone(),
            });
        }
        let request = MetadataRequest::default()
            .with_topics(None)
            .with_allow_auto_topic_creation(false);
        let result = connection.call(request, version).await;
        slot.observe(connection, &result, &self.inner.settings);
        let metadata = Arc::new(tidy(result?));
        self.apply(&metadata)?;
        Ok(metadata)
    }

    /// New brokers get a slot, moved brokers a new one, departed brokers lose theirs (and
    /// their connection).
    fn apply(&self, metadata: &Arc<ClusterMetadata>) -> Result<(), RemoteError> {
        let retired = {
            let mut state = self.live_state()?;
            let mut previous = std::mem::take(&mut state.brokers);
            let mut retired = Vec::new();
            for broker in &metadata.brokers {
                let slot = match previous.remove(&broker.id) {
                    Some(slot) if slot.address == broker.address => slot,
                    other => {
                        retired.extend(other);
                        Arc::new(BrokerSlot::new(broker.id, broker.address.clone()))
                    }
                };
                state.brokers.insert(broker.id, slot);
            }
            retired.extend(previous.into_values());
            let ClientState {
                coordinators, brokers, ..
            } = &mut *state;
            coordinators.retain(|_, id| brokers.contains_key(id));
            state.metadata = Some((Arc::clone(metadata), Instant::now()));
            retired
        };
        for slot in retired {
            tracing::debug!(broker = %slot.label, "left the metadata");
            slot.retire();
        }
        Ok(())
    }
}

fn version_of<R: Request>(slot: &BrokerSlot, connection: &Connection) -> Result<i16, RemoteError> {
    let api = ApiKey::try_from(R::KEY).map_err(|_| RemoteError::Unsupported {
        api: format!("API key {}", R::KEY),
        broker: slot.label.clone(),
    })?;
    negotiated(&slot.label, connection, api)
}

/// The version of `api` to use on `connection`, or why there is none.
fn negotiated(label: &str, connection: &Connection, api: ApiKey) -> Result<i16, RemoteError> {
    negotiate(api, connection.supported(api)).map_err(|why| RemoteError::Unsupported {
        api: why,
        broker: label.to_string(),
    })
}

fn leader_in(metadata: &ClusterMetadata, topic: &str, partition: i32) -> Result<BrokerId, RemoteError> {
    let context = format!("leader of {topic}-{partition}");
    let unknown_topic_or_partition = 3;
    let leader_not_available = 5;
    let topic_metadata = metadata
        .topic(topic)
        .ok_or_else(|| RemoteError::kafka(&context, unknown_topic_or_partition, None))?;
    if topic_metadata.error != 0 {
        return Err(RemoteError::kafka(&context, topic_metadata.error, None));
    }
    let found = topic_metadata
        .partitions
        .iter()
        .find(|p| p.partition == partition)
        .ok_or_else(|| RemoteError::kafka(&context, unknown_topic_or_partition, None))?;
    found.leader.ok_or_else(|| {
        let code = if found.error != 0 {
            found.error
        } else {
            leader_not_available
        };
        RemoteError::kafka(&context, code, None)
    })
}

/// A Metadata answer sorted into [`ClusterMetadata`]; brokers with an impossible port are
/// left out (nothing could reach them).
fn tidy(response: MetadataResponse) -> ClusterMetadata {
    let mut brokers: Vec<BrokerInfo> = response
        .brokers
        .into_iter()
        .filter_map(|b| {
            let id = b.node_id.0;
            match u16::try_from(b.port).ok().filter(|p| *p > 0) {
                Some(port) => Some(BrokerInfo {
                    id,
                    address: BrokerAddress {
                        host: b.host.to_string(),
                        port,
                    },
                    rack: b.rack.map(|r| r.to_string()),
                }),
                None => {
                    tracing::warn!(
                        broker = id,
                        port = b.port,
                        "metadata names a broker with an invalid port"
                    );
                    None
                }
            }
        })
        .collect();
    brokers.sort_by_key(|b| b.id);
    let ids = |nodes: Vec<kafka_protocol::messages::BrokerId>| nodes.into_iter().map(|n| n.0).collect::<Vec<_>>();
    let mut topics: Vec<TopicMetadata> = response
        .topics
        .into_iter()
        .filter_map(|t| {
            let name = t.name?.to_string();
            let mut partitions: Vec<PartitionMetadata> = t
                .partitions
                .into_iter()
                .map(|p| PartitionMetadata {
                    partition: p.partition_index,
                    leader: (p.leader_id.0 >= 0).then_some(p.leader_id.0),
                    leader_epoch: p.leader_epoch,
                    replicas: ids(p.replica_nodes),
                    isr: ids(p.isr_nodes),
                    offline_replicas: ids(p.offline_replicas),
                    error: p.error_code,
                })
                .collect();
            partitions.sort_by_key(|p| p.partition);
            Some(TopicMetadata {
                name,
                internal: t.is_internal,
                error: t.error_code,
                partitions,
            })
        })
        .collect();
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    ClusterMetadata {
        cluster_id: response.cluster_id.map(|c| c.to_string()),
        controller: (response.controller_id.0 >= 0).then_some(response.controller_id.0),
        brokers,
        topics,
        taken_at: Utc::now(),
    }
}

/// One broker as the client sees it: its address, its connection (opened on first use,
/// one at a time) and its recent failures.
#[derive(Debug)]
struct BrokerSlot {
    id: BrokerId,
    address: BrokerAddress,
    /// "broker 2 (host:port)" or "bootstrap server host:port", for errors and logs.
    label: String,
    opening: tokio::sync::Mutex<()>,
    status: Mutex<SlotStatus>,
}

#[derive(Debug, Default)]
struct SlotStatus {
    connection: Option<Connection>,
    last_error: Option<RemoteError>,
    failing_since: Option<DateTime<Utc>>,
    /// Failures in a row, for the exponential backoff.
    failures: u32,
    retry_at: Option<Instant>,
    /// No longer part of the cluster (or the client closed): opens nothing more.
    retired: bool,
}

impl BrokerSlot {
    fn new(id: BrokerId, address: BrokerAddress) -> BrokerSlot {
        let label = if id == NO_BROKER {
            format!("bootstrap server {address}")
        } else {
            format!("broker {id} ({address})")
        };
        BrokerSlot {
            id,
            address,
            label,
            opening: tokio::sync::Mutex::new(()),
            status: Mutex::new(SlotStatus::default()),
        }
    }

    fn status(&self) -> MutexGuard<'_, SlotStatus> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn open_connection(&self) -> Option<Connection> {
        self.status().connection.clone().filter(Connection::is_open)
    }

    fn backing_off(&self) -> bool {
        self.status().retry_at.is_some_and(|at| Instant::now() < at)
    }

    /// The open connection, or a new one. Within the backoff after a failure, the last
    /// error comes back at once; two callers never open two sockets.
    async fn connection(&self, settings: &super::ClientSettings) -> Result<Connection, RemoteError> {
        if let Some(connection) = self.ready()? {
            return Ok(connection);
        }
        let _single_flight = self.opening.lock().await;
        if let Some(connection) = self.ready()? {
            return Ok(connection);
        }
        match Connection::open(&self.address, &self.label, settings).await {
            Ok(connection) => {
                let mut status = self.status();
                if status.retired {
                    connection.close();
                    return Err(self.retired_error());
                }
                status.connection = Some(connection.clone());
                status.last_error = None;
                status.failing_since = None;
                status.failures = 0;
                status.retry_at = None;
                Ok(connection)
            }
            Err(e) => {
                self.record_failure(&mut self.status(), &e, settings);
                Err(e)
            }
        }
    }

    /// An open connection, None to open one, or the error to give while backing off.
    fn ready(&self) -> Result<Option<Connection>, RemoteError> {
        let status = self.status();
        if status.retired {
            return Err(self.retired_error());
        }
        if let Some(connection) = status.connection.as_ref().filter(|c| c.is_open()) {
            return Ok(Some(connection.clone()));
        }
        if let (Some(at), Some(error)) = (status.retry_at, &status.last_error)
            && Instant::now() < at
        {
            return Err(error.clone());
        }
        Ok(None)
    }

    fn retired_error(&self) -> RemoteError {
        RemoteError::Disconnected {
            broker: self.label.clone(),
            reason: "the broker left the cluster's metadata, or the client closed".into(),
        }
    }

    /// Notes how a call on `connection` went: a connection failure starts the backoff (once
    /// per connection, however many calls were waiting on it).
    fn observe<T>(&self, connection: &Connection, result: &Result<T, RemoteError>, settings: &ClientSettings) {
        let Err(error) = result else {
            return;
        };
        if !error.is_connection_error() {
            return;
        }
        let mut status = self.status();
        if status.connection.as_ref().is_some_and(|c| c.same_as(connection)) {
            status.connection = None;
            self.record_failure(&mut status, error, settings);
        }
    }

    fn record_failure(&self, status: &mut SlotStatus, error: &RemoteError, settings: &ClientSettings) {
        status.failures = status.failures.saturating_add(1);
        let wait = reconnect_backoff(settings, status.failures);
        tracing::warn!(broker = %self.label, retry_in_ms = wait.as_millis() as u64, "{error}");
        status.last_error = Some(error.clone());
        status.failing_since.get_or_insert_with(Utc::now);
        status.retry_at = Some(Instant::now() + wait);
    }

    fn retire(&self) {
        let connection = {
            let mut status = self.status();
            status.retired = true;
            status.connection.take()
        };
        if let Some(connection) = connection {
            connection.close();
        }
    }

    fn health(&self) -> BrokerHealth {
        let status = self.status();
        BrokerHealth {
            id: self.id,
            address: self.address.clone(),
            connected: status.connection.as_ref().is_some_and(Connection::is_open),
            last_error: status.last_error.as_ref().map(ToString::to_string),
            failing_since: status.failing_since,
        }
    }
}

/// reconnect.backoff.ms doubled per failure in a row up to reconnect.backoff.max.ms, then
/// ±20% jitter so many clients do not reconnect in step (Java's ExponentialBackoff), unless
/// `backoff_jitter` is off.
fn reconnect_backoff(settings: &ClientSettings, failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(30);
    let term = settings
        .reconnect_backoff
        .saturating_mul(1u32 << doublings)
        .min(settings.reconnect_backoff_max);
    if !settings.backoff_jitter {
        return term;
    }
    let mut random = [0u8; 4];
    let unit = match getrandom::fill(&mut random) {
        Ok(()) => f64::from(u32::from_le_bytes(random)) / f64::from(u32::MAX),
        Err(_) => 0.5,
    };
    term.mul_f64(0.8 + 0.4 * unit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::RemoteConfig;

    #[test]
    fn backoff_doubles_up_to_the_maximum_with_jitter() {
        let settings = ClientSettings::from_config(&RemoteConfig {
            reconnect_backoff_ms: 100,
            reconnect_backoff_max_ms: 1_000,
            ..RemoteConfig::default()
        })
        .expect("valid settings");
        let within = |failures: u32, ms: u64| {
            let wait = reconnect_backoff(&settings, failures);
            let low = Duration::from_millis(ms).mul_f64(0.8);
            let high = Duration::from_millis(ms).mul_f64(1.2);
            assert!(
                low <= wait && wait <= high,
                "{failures} failures: {wait:?} not around {ms} ms"
            );
        };
        within(1, 100);
        within(2, 200);
        within(3, 400);
        within(4, 800);
        within(5, 1_000);
        within(u32::MAX, 1_000);
        let exact = ClientSettings {
            backoff_jitter: false,
            ..settings
        };
        assert_eq!(reconnect_backoff(&exact, 3), Duration::from_millis(400));
        assert_eq!(reconnect_backoff(&exact, 9), Duration::from_millis(1_000));
    }
}
