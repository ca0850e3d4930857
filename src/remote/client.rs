//! [`KafkaClient`]: a cluster seen through its brokers. Bootstraps from the first reachable
//! address, keeps one [`Connection`] per broker (opened on first use, reopened with
//! exponential backoff after a failure), caches metadata and group coordinators, and routes
//! each request to the broker that must answer it.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::Request;

use super::{BrokerAddress, ClientSettings, RemoteError};
use crate::view::BrokerId;

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
    #[allow(dead_code)]
    inner: Arc<()>,
}

impl KafkaClient {
    /// Connects to the first bootstrap address that answers and reads the cluster's metadata.
    /// Fails within about `connect_timeout` per address with [`RemoteError::NoBootstrap`]
    /// naming each address and why.
    pub async fn connect(settings: ClientSettings) -> Result<KafkaClient, RemoteError> {
        let _ = settings;
        todo!("remote-core")
    }

    pub fn settings(&self) -> &ClientSettings {
        todo!("remote-core")
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
        let _ = (target, request);
        todo!("remote-core")
    }

    /// The version [`KafkaClient::send`] would use for `api` with `target`'s broker, once
    /// connected; None when the broker does not support it.
    pub async fn version_for(&self, target: Target, api: ApiKey) -> Result<Option<i16>, RemoteError> {
        let _ = (target, api);
        todo!("remote-core")
    }

    /// Reads every topic's metadata now and caches it.
    pub async fn refresh_metadata(&self) -> Result<Arc<ClusterMetadata>, RemoteError> {
        todo!("remote-core")
    }

    /// The cached metadata, refreshed first when older than `metadata_max_age`.
    pub async fn metadata(&self) -> Result<Arc<ClusterMetadata>, RemoteError> {
        todo!("remote-core")
    }

    /// The partition's leader from the cache; refreshes once when unknown or leaderless.
    pub async fn leader_of(&self, topic: &str, partition: i32) -> Result<BrokerId, RemoteError> {
        let _ = (topic, partition);
        todo!("remote-core")
    }

    /// The group's coordinator (FindCoordinator, cached until [`KafkaClient::forget_coordinator`]).
    pub async fn coordinator(&self, group: &str) -> Result<BrokerId, RemoteError> {
        let _ = group;
        todo!("remote-core")
    }

    /// Drops a cached coordinator after NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE.
    pub fn forget_coordinator(&self, group: &str) {
        let _ = group;
        todo!("remote-core")
    }

    /// Every broker the client knows (bootstrap addresses until the first metadata), with
    /// its connection state.
    pub fn health(&self) -> Vec<BrokerHealth> {
        todo!("remote-core")
    }

    /// Closes every connection; later calls fail.
    pub fn close(&self) {
        todo!("remote-core")
    }
}
