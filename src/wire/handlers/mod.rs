//! One function per API. Each answers as the broker that owns the listener, through the
//! engine's public API, and maps engine errors to the Kafka codes a client expects.

mod acls;
mod admin;
mod configs;
mod fetch;
mod groups;
mod log_dirs;
mod metadata;
mod produce;
mod reassign;
mod txn;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, TopicName};
use kafka_protocol::protocol::{Encodable, StrBytes};
use tokio::sync::oneshot;

use super::WireConfig;
use super::codec::{self, CodecError, DecodedRequest, RequestBody};
use super::fetch_session::FetchSessions;
use super::versions;
use crate::engine::{BrokerId, Cluster, ErrorCode};

/// What a handler knows about where it runs.
pub struct Context {
    pub cluster: Cluster,
    /// The broker this listener belongs to.
    pub broker: BrokerId,
    pub config: Arc<WireConfig>,
    pub addresses: Arc<Mutex<BTreeMap<BrokerId, SocketAddr>>>,
    /// The broker's incremental fetch sessions; a restart starts with none, as in Kafka.
    pub fetch_sessions: Arc<FetchSessions>,
}

impl Context {
    pub fn address(&self, broker: BrokerId) -> Option<SocketAddr> {
        self.addresses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&broker)
            .copied()
    }

    /// Brokers a client can reach now: registered, unfenced, and listening.
    pub fn live_brokers(&self) -> Vec<(BrokerId, SocketAddr)> {
        let image = self.cluster.metadata();
        let addresses = self.addresses.lock().unwrap_or_else(|p| p.into_inner()).clone();
        addresses.into_iter().filter(|(id, _)| image.is_live(*id)).collect()
    }
}

/// Kafka's `cluster.id`, the same for every broker of the embedded cluster.
pub const CLUSTER_ID: &str = "kdeck-embedded-cluster";

/// Kafka error codes the engine's `ErrorCode` does not name.
pub mod codes {
    pub const CORRUPT_MESSAGE: i16 = 2;
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    pub const LEADER_NOT_AVAILABLE: i16 = 5;
    pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
    pub const INVALID_TOPIC: i16 = 17;
    pub const INVALID_REQUIRED_ACKS: i16 = 21;
    pub const INVALID_GROUP_ID: i16 = 24;
    pub const UNSUPPORTED_VERSION: i16 = 35;
    pub const INVALID_CONFIG: i16 = 40;
    pub const INVALID_REQUEST: i16 = 42;
    pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
    pub const UNKNOWN_TOPIC_ID: i16 = 100;
}

/// `authorized_operations` when the client did not ask for them (Kafka's INT32_MIN).
pub const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

pub fn str_bytes(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

pub fn topic_name(s: impl Into<String>) -> TopicName {
    TopicName(str_bytes(s))
}

/// Why a request gets no answer and its connection is closed.
#[derive(Debug, thiserror::Error)]
pub enum Unanswered {
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error("the broker went down with the request in hand")]
    BrokerDown,
}

/// The broker this listener serves went down with the request in hand (the engine calls it
/// NETWORK_EXCEPTION). A crashed Kafka broker answers nothing: its connections break, and
/// the client retries elsewhere. NETWORK_EXCEPTION itself is the client's name for a broken
/// connection, never sent by a broker; librdkafka takes it from one as a permanent failure
/// of the records.
#[derive(Debug)]
pub struct BrokerDown;

impl From<BrokerDown> for Unanswered {
    fn from(_: BrokerDown) -> Self {
        Unanswered::BrokerDown
    }
}

/// Tells "the broker went down" apart from the errors a client is to be told. Every engine
/// call of a handler goes to the listener's own broker, so its NETWORK_EXCEPTION means that.
pub fn reached<T>(outcome: Result<T, ErrorCode>) -> Result<Result<T, ErrorCode>, BrokerDown> {
    match outcome {
        Err(ErrorCode::NetworkException) => Err(BrokerDown),
        other => Ok(other),
    }
}

/// A response frame, nothing (acks=0 produce), or why the connection closes instead.
pub type Answer = Result<Option<Bytes>, Unanswered>;

fn frame<R: Encodable>(request: &DecodedRequest, response: &R) -> Answer {
    Ok(Some(codec::encode_response(
        request.api_key,
        request.api_version,
        request.correlation_id,
        response,
    )?))
}

/// Answers one request: the response frame, or `None` when Kafka sends none (acks=0).
///
/// `queued` is dropped once the request's batches wait in their broker's queue (at once for
/// any other request): see [`produce::produce`].
pub async fn handle(ctx: &Context, request: DecodedRequest, queued: oneshot::Sender<()>) -> Answer {
    let v = request.api_version;
    match &request.body {
        RequestBody::ApiVersions(_) => frame(&request, &versions::api_versions_response(0)),
        RequestBody::ApiVersionsUnsupported => Ok(Some(codec::encode_response(
            ApiKey::ApiVersions,
            0,
            request.correlation_id,
            &versions::api_versions_response(codes::UNSUPPORTED_VERSION),
        )?)),
        RequestBody::Metadata(r) => frame(&request, &metadata::metadata(ctx, r, v).await),
        RequestBody::DescribeCluster(_) => frame(&request, &metadata::describe_cluster(ctx)),
        RequestBody::FindCoordinator(r) => frame(&request, &metadata::find_coordinator(ctx, r, v).await),
        RequestBody::Produce(r) => match produce::produce(ctx, r, v, queued).await? {
            Some(response) => frame(&request, &response),
            None => Ok(None),
        },
        RequestBody::InitProducerId(r) => frame(&request, &produce::init_producer_id(ctx, r, v).await?),
        RequestBody::Fetch(r) => frame(&request, &fetch::fetch(ctx, r, v).await?),
        RequestBody::ListOffsets(r) => frame(&request, &fetch::list_offsets(ctx, r, v).await?),
        RequestBody::OffsetForLeaderEpoch(r) => frame(&request, &fetch::offset_for_leader_epoch(ctx, r)),
        RequestBody::JoinGroup(r) => {
            let client = groups::Client {
                id: request.client_id.clone().unwrap_or_default(),
                host: request.client_host.clone(),
            };
            frame(&request, &groups::join(ctx, r, v, client).await?)
        }
        RequestBody::SyncGroup(r) => frame(&request, &groups::sync(ctx, r).await?),
        RequestBody::Heartbeat(r) => frame(&request, &groups::heartbeat(ctx, r).await?),
        RequestBody::LeaveGroup(r) => frame(&request, &groups::leave(ctx, r, v).await?),
        RequestBody::OffsetCommit(r) => frame(&request, &groups::offset_commit(ctx, r).await?),
        RequestBody::OffsetFetch(r) => frame(&request, &groups::offset_fetch(ctx, r, v).await?),
        RequestBody::ListGroups(r) => frame(&request, &groups::list_groups(ctx, r).await?),
        RequestBody::DescribeGroups(r) => frame(&request, &groups::describe_groups(ctx, r).await?),
        RequestBody::DeleteGroups(r) => frame(&request, &groups::delete_groups(ctx, r).await?),
        RequestBody::OffsetDelete(r) => frame(&request, &groups::offset_delete(ctx, r).await?),
        RequestBody::CreateTopics(r) => frame(&request, &admin::create_topics(ctx, r).await),
        RequestBody::DeleteTopics(r) => frame(&request, &admin::delete_topics(ctx, r, v).await),
        RequestBody::CreatePartitions(r) => frame(&request, &admin::create_partitions(ctx, r).await),
        RequestBody::DescribeConfigs(r) => frame(&request, &configs::describe_configs(ctx, r)),
        RequestBody::IncrementalAlterConfigs(r) => frame(&request, &configs::incremental_alter_configs(ctx, r).await),
        RequestBody::AlterConfigs(r) => frame(&request, &configs::alter_configs(ctx, r).await),
        RequestBody::ElectLeaders(r) => frame(&request, &admin::elect_leaders(ctx, r, v).await),
        RequestBody::AlterPartitionReassignments(r) => frame(&request, &reassign::alter(ctx, r, v).await),
        RequestBody::ListPartitionReassignments(r) => frame(&request, &reassign::list(ctx, r)),
        RequestBody::DescribeLogDirs(r) => frame(&request, &log_dirs::describe_log_dirs(ctx, r)?),
        RequestBody::DeleteRecords(r) => frame(&request, &log_dirs::delete_records(ctx, r).await?),
        RequestBody::DescribeAcls(_) => frame(&request, &acls::describe_acls()),
        RequestBody::AddPartitionsToTxn(r) => frame(&request, &txn::add_partitions(ctx, r, v).await?),
        RequestBody::AddOffsetsToTxn(r) => frame(&request, &txn::add_offsets(ctx, r, v).await?),
        RequestBody::EndTxn(r) => frame(&request, &txn::end_txn(ctx, r, v).await?),
        RequestBody::WriteTxnMarkers(r) => frame(&request, &txn::write_txn_markers(ctx, r).await?),
        RequestBody::TxnOffsetCommit(r) => frame(&request, &txn::txn_offset_commit(ctx, r, v).await?),
        RequestBody::DescribeTransactions(r) => frame(&request, &txn::describe_transactions(ctx, r).await?),
        RequestBody::ListTransactions(r) => frame(&request, &txn::list_transactions(ctx, r, v).await?),
    }
}
