//! The cluster's in-process client: the requests as a client sends them (produce, fetch,
//! ListOffsets, OffsetForLeaderEpoch, FindCoordinator and the group requests, InitProducerId)
//! and the admin requests the wire layer forwards. Apart from the control plane because they
//! are a client's view of the cluster: most go through the in-process network to one broker,
//! so a stale leader, a cut link or a paused broker fails them as it would a remote client's,
//! and the admin ones fail with the Kafka error code where the operator's controls give a
//! sentence.

use std::time::Duration;

use anyhow::Result;

use super::{BrokerState, Cluster};
use crate::engine::controller::{NO_LEADER, PartitionRegistration};
use crate::engine::group::{GroupState, OFFSETS_TOPIC, partition_for_group};
use crate::engine::network::{NetError, NodeId};
use crate::engine::partition::Role;
use crate::engine::protocol::{
    Acks, ErrorCode, FetchRequest, FetchedRecords, GroupRequest, GroupResponse, Request, Response,
};
use crate::engine::txn::{TXN_STATE_TOPIC, TransactionListing, TxnRequest, TxnResponse, TxnState, partition_for_txn};
use crate::engine::{BrokerId, IsolationLevel, OffsetSpec, TopicConfig, TopicPartition};
use crate::storage::CleanupPolicy;

/// The outcome of a produce: the base offset assigned, or the Kafka error.
pub type ProduceOutcome = Result<i64, ErrorCode>;

/// What a consumer asks of one partition in a fetch.
#[derive(Debug, Clone, Copy)]
pub struct ConsumerRead {
    pub offset: i64,
    /// -1 when the consumer does not know it.
    pub current_leader_epoch: i32,
    pub max_bytes: usize,
    pub max_wait: Duration,
    pub isolation: IsolationLevel,
}

impl Cluster {
    /// Produces one batch (as a producer built it: base offset 0) to a partition's leader.
    pub async fn produce(
        &self,
        tp: &TopicPartition,
        records: Vec<u8>,
        acks: Acks,
        timeout: Duration,
    ) -> ProduceOutcome {
        let leader = self.leader_of(tp)?;
        self.produce_to(leader, tp, records, acks, timeout).await
    }

    /// Produces straight to one broker, whatever the metadata says (a client with stale
    /// metadata).
    pub async fn produce_to(
        &self,
        broker: BrokerId,
        tp: &TopicPartition,
        records: Vec<u8>,
        acks: Acks,
        timeout: Duration,
    ) -> ProduceOutcome {
        self.produce_as(broker, tp, records, None, acks, timeout).await
    }

    /// Produces a transactional producer's batch to the partition's leader, which verifies the
    /// transaction's first batch with the coordinator of `transactional_id` (KIP-890).
    pub async fn produce_transactional(
        &self,
        tp: &TopicPartition,
        records: Vec<u8>,
        transactional_id: &str,
        acks: Acks,
        timeout: Duration,
    ) -> ProduceOutcome {
        let leader = self.leader_of(tp)?;
        self.produce_as(leader, tp, records, Some(transactional_id.to_string()), acks, timeout)
            .await
    }

    /// Produces straight to one broker, with the producer's transactional id if it has one.
    pub async fn produce_as(
        &self,
        broker: BrokerId,
        tp: &TopicPartition,
        records: Vec<u8>,
        transactional_id: Option<String>,
        acks: Acks,
        timeout: Duration,
    ) -> ProduceOutcome {
        let request = Request::Produce {
            tp: tp.clone(),
            records,
            acks,
            timeout_ms: timeout.as_millis() as u64,
            transactional_id,
        };
        match self.call(broker, request, timeout + Duration::from_secs(1)).await? {
            Response::Produce {
                error: ErrorCode::None,
                base_offset,
                ..
            } => Ok(base_offset),
            Response::Produce { error, .. } => Err(error),
            _ => Err(ErrorCode::UnknownServerError),
        }
    }

    /// InitProducerId: a producer id (and epoch 0) for an idempotent producer.
    pub async fn init_producer_id(&self) -> Result<(i64, i16)> {
        self.controller_host()?;
        Ok(self.inner.ctx.controller.init_producer_id()?)
    }

    /// WriteTxnMarkers for one partition, as the transaction coordinator sends it: the
    /// partition's leader appends the end-transaction marker of `producer_id`'s transaction
    /// (commit or abort) and answers once the ISR has it. Returns the marker's offset.
    /// INVALID_PRODUCER_EPOCH for a marker older than the producer's epoch.
    pub async fn write_txn_marker(
        &self,
        tp: &TopicPartition,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
    ) -> Result<i64, ErrorCode> {
        let leader = self.leader_of(tp)?;
        self.write_txn_marker_on(leader, tp, producer_id, producer_epoch, coordinator_epoch, commit)
            .await
    }

    /// WriteTxnMarkers for one partition served by one broker: NOT_LEADER_OR_FOLLOWER unless
    /// it leads the partition.
    pub async fn write_txn_marker_on(
        &self,
        broker: BrokerId,
        tp: &TopicPartition,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
    ) -> Result<i64, ErrorCode> {
        let timeout = Duration::from_secs(30);
        let request = Request::WriteTxnMarker {
            tp: tp.clone(),
            producer_id,
            producer_epoch,
            coordinator_epoch,
            commit,
            timeout_ms: timeout.as_millis() as u64,
        };
        match self.call(broker, request, timeout + Duration::from_secs(1)).await? {
            Response::WriteTxnMarker {
                error: ErrorCode::None,
                offset,
            } => Ok(offset),
            Response::WriteTxnMarker { error, .. } => Err(error),
            _ => Err(ErrorCode::UnknownServerError),
        }
    }

    /// A consumer fetch from the leader: committed records only (up to the HW).
    pub async fn fetch(&self, tp: &TopicPartition, offset: i64, max_bytes: usize) -> Result<FetchedRecords, ErrorCode> {
        let leader = self.leader_of(tp)?;
        self.fetch_on(leader, tp, offset, -1, max_bytes, Duration::ZERO).await
    }

    /// A consumer fetch that waits up to `max_wait` for records past `offset`.
    pub async fn fetch_wait(
        &self,
        tp: &TopicPartition,
        offset: i64,
        max_bytes: usize,
        max_wait: Duration,
    ) -> Result<FetchedRecords, ErrorCode> {
        let leader = self.leader_of(tp)?;
        self.fetch_on(leader, tp, offset, -1, max_bytes, max_wait).await
    }

    /// A consumer fetch served by one broker, as a client connected to it would send it: a
    /// broker that does not lead the partition answers NOT_LEADER_OR_FOLLOWER.
    pub async fn fetch_on(
        &self,
        broker: BrokerId,
        tp: &TopicPartition,
        offset: i64,
        current_leader_epoch: i32,
        max_bytes: usize,
        max_wait: Duration,
    ) -> Result<FetchedRecords, ErrorCode> {
        let read = ConsumerRead {
            offset,
            current_leader_epoch,
            max_bytes,
            max_wait,
            isolation: IsolationLevel::ReadUncommitted,
        };
        self.fetch_isolated_on(broker, tp, read).await
    }

    /// A consumer fetch from the leader at an isolation level: read_committed reads up to
    /// the last stable offset and answers the aborted transactions among the records.
    pub async fn fetch_isolated(
        &self,
        tp: &TopicPartition,
        offset: i64,
        max_bytes: usize,
        max_wait: Duration,
        isolation: IsolationLevel,
    ) -> Result<FetchedRecords, ErrorCode> {
        let leader = self.leader_of(tp)?;
        let read = ConsumerRead {
            offset,
            current_leader_epoch: -1,
            max_bytes,
            max_wait,
            isolation,
        };
        self.fetch_isolated_on(leader, tp, read).await
    }

    /// [`Cluster::fetch_on`] at an isolation level.
    pub async fn fetch_isolated_on(
        &self,
        broker: BrokerId,
        tp: &TopicPartition,
        read: ConsumerRead,
    ) -> Result<FetchedRecords, ErrorCode> {
        let max_wait = read.max_wait;
        let request = Request::Fetch(FetchRequest {
            replica: None,
            tp: tp.clone(),
            fetch_offset: read.offset,
            current_leader_epoch: read.current_leader_epoch,
            last_fetched_epoch: None,
            max_bytes: read.max_bytes,
            max_wait_ms: max_wait.as_millis() as u64,
            isolation: read.isolation,
        });
        match self.call(broker, request, max_wait + Duration::from_secs(5)).await? {
            Response::Fetch {
                error: ErrorCode::None,
                data,
                ..
            } => Ok(data),
            Response::Fetch { error, .. } => Err(error),
            _ => Err(ErrorCode::UnknownServerError),
        }
    }

    /// ListOffsets: the log start, the HW, or the first offset at or after a timestamp (-1
    /// when none). `spec` may be Kafka's timestamp, -2 and -1 included ([`OffsetSpec`]).
    pub async fn list_offset(&self, tp: &TopicPartition, spec: impl Into<OffsetSpec>) -> Result<i64, ErrorCode> {
        self.list_offset_with_time(tp, spec).await.map(|(offset, _)| offset)
    }

    /// Like [`Cluster::list_offset`], with the timestamp of the record found (-1 for the
    /// earliest and latest lookups).
    pub async fn list_offset_with_time(
        &self,
        tp: &TopicPartition,
        spec: impl Into<OffsetSpec>,
    ) -> Result<(i64, i64), ErrorCode> {
        let leader = self.leader_of(tp)?;
        self.list_offset_on(leader, tp, spec.into()).await
    }

    /// ListOffsets from the leader at an isolation level (see
    /// [`Cluster::list_offset_isolated_on`]); the offset alone.
    pub async fn list_offset_isolated(
        &self,
        tp: &TopicPartition,
        spec: OffsetSpec,
        isolation: IsolationLevel,
    ) -> Result<i64, ErrorCode> {
        let leader = self.leader_of(tp)?;
        self.list_offset_isolated_on(leader, tp, spec, isolation)
            .await
            .map(|(offset, _)| offset)
    }

    /// ListOffsets served by one broker (see [`Cluster::list_offset_with_time`]).
    pub async fn list_offset_on(
        &self,
        broker: BrokerId,
        tp: &TopicPartition,
        spec: OffsetSpec,
    ) -> Result<(i64, i64), ErrorCode> {
        self.list_offset_isolated_on(broker, tp, spec, IsolationLevel::ReadUncommitted)
            .await
    }

    /// ListOffsets at an isolation level: for read_committed, the latest offset is the last
    /// stable offset, and a timestamp lookup finds nothing at or past it.
    pub async fn list_offset_isolated_on(
        &self,
        broker: BrokerId,
        tp: &TopicPartition,
        spec: OffsetSpec,
        isolation: IsolationLevel,
    ) -> Result<(i64, i64), ErrorCode> {
        let request = Request::ListOffsets {
            tp: tp.clone(),
            spec,
            isolation,
        };
        match self.call(broker, request, Duration::from_secs(5)).await? {
            Response::ListOffsets {
                error: ErrorCode::None,
                offset,
                timestamp,
            } => Ok((offset, timestamp)),
            Response::ListOffsets { error, .. } => Err(error),
            _ => Err(ErrorCode::UnknownServerError),
        }
    }

    /// OffsetForLeaderEpoch on one broker's replica: the leader epoch and end offset of the
    /// largest epoch at most `leader_epoch` (KIP-101), checked against the current epoch as
    /// Kafka does (KIP-320).
    pub fn offset_for_leader_epoch_on(
        &self,
        broker: BrokerId,
        tp: &TopicPartition,
        current_leader_epoch: i32,
        leader_epoch: i32,
    ) -> Result<(i32, i64), ErrorCode> {
        let Some(b) = self.running_broker(broker) else {
            return Err(ErrorCode::NotLeaderOrFollower);
        };
        let Some(partition) = b.partition(tp) else {
            return Err(if self.metadata().partition(tp).is_some() {
                ErrorCode::NotLeaderOrFollower
            } else {
                ErrorCode::UnknownTopicOrPartition
            });
        };
        let (role, epoch) = partition.role();
        if role != Role::Leader {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        if current_leader_epoch >= 0 && current_leader_epoch < epoch {
            return Err(ErrorCode::FencedLeaderEpoch);
        }
        if current_leader_epoch > epoch {
            return Err(ErrorCode::UnknownLeaderEpoch);
        }
        let end = partition.log.end_offset_for_epoch(leader_epoch);
        Ok((end.epoch, end.end_offset))
    }

    /// The broker coordinating `group` (FindCoordinator).
    pub fn find_coordinator(&self, group: &str) -> Result<BrokerId, ErrorCode> {
        let partition = partition_for_group(group, self.inner.config.offsets_topic_partitions);
        match self.leader_of(&TopicPartition::new(OFFSETS_TOPIC, partition)) {
            Ok(b) => Ok(b),
            Err(_) => Err(ErrorCode::CoordinatorNotAvailable),
        }
    }

    /// Sends a consumer-group request to the group's coordinator.
    pub async fn group_request(
        &self,
        group: &str,
        request: GroupRequest,
        timeout: Duration,
    ) -> Result<GroupResponse, ErrorCode> {
        let coordinator = self.find_coordinator(group)?;
        match self.call(coordinator, Request::Group(request), timeout).await? {
            Response::Group(r) => Ok(r),
            _ => Err(ErrorCode::UnknownServerError),
        }
    }

    /// A consumer-group request served by one broker: NOT_COORDINATOR unless it coordinates
    /// the group.
    pub async fn group_request_on(
        &self,
        broker: BrokerId,
        request: GroupRequest,
        timeout: Duration,
    ) -> Result<GroupResponse, ErrorCode> {
        match self.call(broker, Request::Group(request), timeout).await? {
            Response::Group(r) => Ok(r),
            _ => Err(ErrorCode::UnknownServerError),
        }
    }

    /// The broker coordinating `transactional_id` (FindCoordinator with key type 1). The
    /// first call makes `__transaction_state`, as Kafka does on the first transactional
    /// FindCoordinator: compacted, `min.insync.replicas` 2 where the brokers allow it.
    pub async fn find_txn_coordinator(&self, transactional_id: &str) -> Result<BrokerId, ErrorCode> {
        let config = &self.inner.config;
        if !self.metadata().topics.contains_key(TXN_STATE_TOPIC) {
            let brokers = self.metadata().brokers.len().max(1) as i32;
            let rf = config.transaction_state_replication_factor.clamp(1, brokers);
            let topic = TopicConfig::new(config.transaction_state_partitions, rf)
                .with_min_insync_replicas(rf.min(2))
                .with_segment_bytes(100 << 20)
                .with_cleanup_policy(CleanupPolicy::Compact);
            match self.create_topic_checked(TXN_STATE_TOPIC, topic).await {
                Ok(()) | Err((ErrorCode::TopicAlreadyExists, _)) => {}
                Err(_) => return Err(ErrorCode::CoordinatorNotAvailable),
            }
        }
        let partition = partition_for_txn(transactional_id, config.transaction_state_partitions);
        self.leader_of(&TopicPartition::new(TXN_STATE_TOPIC, partition))
            .map_err(|_| ErrorCode::CoordinatorNotAvailable)
    }

    /// Sends a transaction request to the transactional id's coordinator.
    pub async fn txn_request(
        &self,
        transactional_id: &str,
        request: TxnRequest,
        timeout: Duration,
    ) -> Result<TxnResponse, ErrorCode> {
        let coordinator = self.find_txn_coordinator(transactional_id).await?;
        self.txn_request_on(coordinator, request, timeout).await
    }

    /// A transaction request served by one broker: NOT_COORDINATOR unless it coordinates the
    /// id.
    pub async fn txn_request_on(
        &self,
        broker: BrokerId,
        request: TxnRequest,
        timeout: Duration,
    ) -> Result<TxnResponse, ErrorCode> {
        match self.call(broker, Request::Txn(request), timeout).await? {
            Response::Txn(r) => Ok(r),
            _ => Err(ErrorCode::UnknownServerError),
        }
    }

    /// ListTransactions over every running coordinator, by transactional id.
    pub async fn list_transactions(&self, states: &[TxnState], producer_ids: &[i64]) -> Vec<TransactionListing> {
        let request = || {
            Request::Txn(TxnRequest::List {
                states: states.to_vec(),
                producer_ids: producer_ids.to_vec(),
            })
        };
        let mut out = self
            .ask_running_brokers(request, |answer| match answer {
                Response::Txn(TxnResponse::List(listed)) => listed,
                _ => Vec::new(),
            })
            .await;
        out.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        out.dedup_by(|a, b| a.transactional_id == b.transactional_id);
        out
    }

    /// Every group known to any running coordinator, with its state.
    pub async fn list_groups(&self) -> Vec<(String, GroupState)> {
        let request = || Request::Group(GroupRequest::ListGroups);
        let mut out = self
            .ask_running_brokers(request, |answer| match answer {
                Response::Group(GroupResponse::ListGroups(groups)) => groups,
                _ => Vec::new(),
            })
            .await;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }

    /// Sends `request()` to every running broker in turn and gathers what `take` finds in the
    /// answers; a broker that does not answer adds nothing.
    async fn ask_running_brokers<T>(&self, request: impl Fn() -> Request, take: impl Fn(Response) -> Vec<T>) -> Vec<T> {
        let ids: Vec<BrokerId> = self
            .slots()
            .iter()
            .filter(|(_, s)| s.state == BrokerState::Running)
            .map(|(id, _)| *id)
            .collect();
        let mut out = Vec::new();
        for id in ids {
            if let Ok(answer) = self.call(id, request(), Duration::from_secs(5)).await {
                out.extend(take(answer));
            }
        }
        out
    }

    /// Creates a topic, with the Kafka error code and message a client should see on failure.
    pub async fn create_topic_checked(&self, name: &str, config: TopicConfig) -> Result<(), (ErrorCode, String)> {
        let host = self
            .controller_host()
            .map_err(|e| (ErrorCode::NotController, e.to_string()))?;
        let image = self
            .inner
            .ctx
            .controller
            .create_topic(name, config)
            .map_err(|e| (e.code(), e.to_string()))?;
        host.publish(image);
        Ok(())
    }

    /// Grows a topic, with the Kafka error code and message on failure.
    pub async fn create_partitions_checked(&self, name: &str, total: i32) -> Result<(), (ErrorCode, String)> {
        let host = self
            .controller_host()
            .map_err(|e| (ErrorCode::NotController, e.to_string()))?;
        let image = self
            .inner
            .ctx
            .controller
            .create_partitions(name, total)
            .map_err(|e| (e.code(), e.to_string()))?;
        host.publish(image);
        Ok(())
    }

    /// AlterPartitionReassignments (KIP-455): per partition a target replica list, or `None`
    /// to cancel. Per partition, `None` or the Kafka error code and message.
    pub async fn alter_reassignments(
        &self,
        requests: &[(TopicPartition, Option<Vec<BrokerId>>)],
    ) -> Result<Vec<(TopicPartition, Option<(ErrorCode, String)>)>, (ErrorCode, String)> {
        let host = self
            .controller_host()
            .map_err(|e| (ErrorCode::NotController, e.to_string()))?;
        let (results, image) = self
            .inner
            .ctx
            .controller
            .alter_reassignments(requests)
            .map_err(|e| (e.code(), e.to_string()))?;
        if let Some(image) = image {
            host.publish(image);
        }
        Ok(results
            .into_iter()
            .map(|(tp, e)| (tp, e.map(|e| (e.code(), e.to_string()))))
            .collect())
    }

    /// ListPartitionReassignments: the moving partitions `scope` selects, with their replicas,
    /// adding and removing replicas.
    pub fn reassignments(
        &self,
        scope: impl Fn(&TopicPartition) -> bool,
    ) -> Vec<(TopicPartition, PartitionRegistration)> {
        self.metadata()
            .partitions()
            .filter(|(tp, p)| p.reassigning() && scope(tp))
            .map(|(tp, p)| (tp, p.clone()))
            .collect()
    }

    /// Deletes a topic, with the Kafka error code and message on failure.
    pub async fn delete_topic_checked(&self, name: &str) -> Result<(), (ErrorCode, String)> {
        let host = self
            .controller_host()
            .map_err(|e| (ErrorCode::NotController, e.to_string()))?;
        let image = self
            .inner
            .ctx
            .controller
            .delete_topic(name)
            .map_err(|e| (e.code(), e.to_string()))?;
        host.publish(image);
        Ok(())
    }

    pub(super) fn leader_of(&self, tp: &TopicPartition) -> Result<BrokerId, ErrorCode> {
        let image = self.metadata();
        let p = image.partition(tp).ok_or(ErrorCode::UnknownTopicOrPartition)?;
        if p.leader == NO_LEADER {
            return Err(ErrorCode::LeaderNotAvailable);
        }
        Ok(p.leader)
    }

    pub(super) async fn call(
        &self,
        broker: BrokerId,
        request: Request,
        timeout: Duration,
    ) -> Result<Response, ErrorCode> {
        self.inner
            .ctx
            .network
            .call(NodeId::Client(self.client), NodeId::Broker(broker), request, timeout)
            .await
            .map_err(|e| match e {
                NetError::Refused => ErrorCode::NetworkException,
                NetError::Timeout => ErrorCode::RequestTimedOut,
            })
    }
}
