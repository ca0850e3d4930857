//! One broker: it registers with the controller and heartbeats, hosts partition replicas in
//! `broker-<id>/<topic>-<partition>/`, answers requests from its inbox, runs a fetcher for
//! every partition it follows and checks its ISRs for laggards. When it hosts the
//! controller, it also runs the controller's timers and forwards controller requests.
//!
//! Every task of a broker lives in one `JoinSet`: a kill aborts them all at once, so nothing
//! of the broker's memory survives, only what it wrote to its files. A `JoinSet` keeps each
//! finished task until it is joined, so spawning reaps the finished ones first.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

use super::config::ClusterConfig;
use super::configs;
use super::controller::{Controller, ControllerError, MetadataImage, NO_LEADER};
use super::events::{EventBus, EventKind};
use super::group::{self, CommittedOffset, GroupCoordinator, OFFSETS_TOPIC};
use super::network::{Envelope, NetError, Network, NodeId};
use super::partition::{AppendTicket, Appended, IsrProposal, Partition, Role};
use super::protocol::{Acks, ErrorCode, FetchRequest, FetchedRecords, GroupRequest, GroupResponse, Request, Response};
use super::quota::{ReplicationQuota, ThrottledReplicas};
use super::signal::{Signal, Watcher};
use super::txn::{self as txn, TXN_STATE_TOPIC, TxnCoordinator, TxnRequest, TxnResponse};
use super::{BrokerId, Clock, IsolationLevel, OffsetSpec, TopicPartition, WallClock};
use crate::storage::checkpoint::{self, CLEAN_SHUTDOWN_MARKER};
use crate::storage::{FlushPolicy, Log};

/// Replica fetches ask for up to this much per partition.
const REPLICA_FETCH_MAX_BYTES: usize = 1 << 20;
/// Time allowed for a request beyond its own wait.
const REQUEST_SLACK: Duration = Duration::from_secs(5);

/// What every broker shares with the rest of the cluster.
#[derive(Clone)]
pub(crate) struct BrokerContext {
    pub config: ClusterConfig,
    pub network: Network,
    pub controller: Arc<Controller>,
    pub events: EventBus,
    /// Record timestamps, retention, event times.
    pub wall: WallClock,
    /// Every timer.
    pub clock: Clock,
    /// `auto.leader.rebalance.enable`, live.
    pub auto_rebalance: Arc<AtomicBool>,
}

pub(crate) struct Broker {
    pub id: BrokerId,
    ctx: BrokerContext,
    dir: PathBuf,
    me: Weak<Broker>,
    /// By topic and partition: whatever walks them (fetchers, shutdown, ISR checks) does so
    /// in one order on every run, so a simulated seed replays exactly.
    partitions: Mutex<BTreeMap<TopicPartition, Arc<Partition>>>,
    fetchers: Mutex<BTreeMap<TopicPartition, AbortHandle>>,
    tasks: Mutex<JoinSet<()>>,
    broker_epoch: AtomicI64,
    /// The epoch this broker had when it last shut down cleanly (-1 after a crash), from the
    /// marker it left in its directory.
    previous_broker_epoch: i64,
    metadata_version: AtomicU64,
    paused: Signal<bool>,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    groups: GroupCoordinator,
    /// The transaction coordinator of the `__transaction_state` partitions led here.
    txns: Arc<TxnCoordinator>,
    /// KIP-73: what this broker serves as leader to out-of-sync replicas of throttled
    /// partitions, and what it fetches for them as follower, within its throttled rates.
    leader_quota: ReplicationQuota,
    follower_quota: ReplicationQuota,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Broker {
    /// Starts the broker: it listens, registers with the controller and begins heartbeats.
    pub fn start(id: BrokerId, ctx: BrokerContext) -> Arc<Broker> {
        let dir = ctx.config.data_dir.join(format!("broker-{id}"));
        let previous_broker_epoch = take_clean_shutdown_marker(&dir);
        let groups = GroupCoordinator::new(
            id,
            ctx.config.offsets_topic_partitions,
            ctx.config.group_initial_rebalance_delay_ms,
            ctx.events.clone(),
            ctx.wall,
            ctx.clock.clone(),
        );
        let txns = Arc::new(TxnCoordinator::new(txn::CoordinatorSetup {
            broker: id,
            state_partitions: ctx.config.transaction_state_partitions,
            offsets_partitions: ctx.config.offsets_topic_partitions,
            max_timeout_ms: ctx.config.transaction_max_timeout_ms,
            expiration_ms: ctx.config.transactional_id_expiration_ms,
            network: ctx.network.clone(),
            controller: Arc::clone(&ctx.controller),
            events: ctx.events.clone(),
            wall: ctx.wall,
            clock: ctx.clock.clone(),
        }));
        let broker = Arc::new_cyclic(|me| Broker {
            id,
            dir,
            me: me.clone(),
            ctx,
            partitions: Mutex::new(BTreeMap::new()),
            fetchers: Mutex::new(BTreeMap::new()),
            tasks: Mutex::new(JoinSet::new()),
            broker_epoch: AtomicI64::new(-1),
            previous_broker_epoch,
            metadata_version: AtomicU64::new(0),
            paused: Signal::new(false),
            bytes_in: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
            groups,
            txns,
            leader_quota: ReplicationQuota::default(),
            follower_quota: ReplicationQuota::default(),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        broker.ctx.network.attach(id, tx);
        broker.spawn(Arc::clone(&broker).serve(rx));
        broker.spawn(Arc::clone(&broker).heartbeats());
        broker.spawn(Arc::clone(&broker).isr_expiration());
        broker.spawn(Arc::clone(&broker).retention());
        if let FlushPolicy::IntervalMs(ms) = broker.ctx.config.log.flush {
            broker.spawn(Arc::clone(&broker).flusher(ms));
        }
        broker.spawn(Arc::clone(&broker).group_timers());
        broker.spawn(Arc::clone(&broker).txn_timers());
        broker
    }

    fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) -> AbortHandle {
        let mut tasks = lock(&self.tasks);
        while tasks.try_join_next().is_some() {}
        tasks.spawn(task)
    }

    /// Tasks spawned and not yet reaped: the long-lived ones plus requests in progress.
    #[cfg(test)]
    pub(crate) fn task_count(&self) -> usize {
        lock(&self.tasks).len()
    }

    fn now_ms(&self) -> i64 {
        self.ctx.wall.now_ms()
    }

    /// The broker's log directory (`<data_dir>/broker-<id>`), Kafka's `log.dirs` of one entry.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    pub fn broker_epoch(&self) -> i64 {
        self.broker_epoch.load(Ordering::SeqCst)
    }

    pub fn partition(&self, tp: &TopicPartition) -> Option<Arc<Partition>> {
        lock(&self.partitions).get(tp).cloned()
    }

    pub fn partitions(&self) -> Vec<Arc<Partition>> {
        lock(&self.partitions).values().cloned().collect()
    }

    /// Freezes every task of the broker (a stopped process, a long GC pause): requests
    /// queue up unanswered, heartbeats and fetches stop.
    pub fn pause(&self) {
        self.paused.send_replace(true);
    }

    pub fn resume(&self) {
        self.paused.send_replace(false);
    }

    async fn unpaused(&self) {
        let mut rx = self.paused.subscribe();
        let _ = rx.wait_for(|p| !*p).await;
    }

    /// Hard crash: every task aborted, every in-memory state gone; files stay as written.
    pub fn kill(&self) {
        self.ctx.network.detach(self.id);
        lock(&self.tasks).abort_all();
        for (_, f) in std::mem::take(&mut *lock(&self.fetchers)) {
            f.abort();
        }
        lock(&self.partitions).clear();
    }

    /// Clean stop: logs are flushed and closed, then the broker leaves its epoch in a
    /// clean-shutdown marker, so that when it registers again the controller knows its logs
    /// hold everything it had acknowledged.
    pub fn shutdown(&self) {
        self.ctx.network.detach(self.id);
        lock(&self.tasks).abort_all();
        for (_, f) in std::mem::take(&mut *lock(&self.fetchers)) {
            f.abort();
        }
        let mut clean = true;
        for (tp, p) in std::mem::take(&mut *lock(&self.partitions)) {
            if let Err(e) = p.log.close() {
                tracing::warn!(broker = self.id, %tp, error = %e, "closing log");
                clean = false;
            }
        }
        let epoch = self.broker_epoch();
        if clean && epoch >= 0 {
            let marker = self.dir.join(CLEAN_SHUTDOWN_MARKER);
            let contents = format!("{{\"version\":0,\"brokerEpoch\":{epoch}}}");
            let written = std::fs::create_dir_all(&self.dir)
                .map_err(|e| e.to_string())
                .and_then(|()| checkpoint::write_atomically(&marker, contents.as_bytes()).map_err(|e| e.to_string()));
            if let Err(e) = written {
                tracing::warn!(broker = self.id, error = %e, "cannot leave a clean-shutdown marker");
            }
        }
    }

    /// Offsets on stable storage per partition (what a power loss keeps).
    pub fn durable_offsets(&self) -> Vec<(PathBuf, i64)> {
        lock(&self.partitions)
            .values()
            .map(|p| (p.log.dir().to_path_buf(), p.log.durable_offset()))
            .collect()
    }

    async fn serve(self: Arc<Self>, mut inbox: mpsc::UnboundedReceiver<Envelope>) {
        while let Some(envelope) = inbox.recv().await {
            self.unpaused().await;
            // The tasks below run in any order: a produce request takes its place in its
            // partition's append order here, in the order requests arrive.
            let ticket = match &envelope.request {
                Request::Produce { tp, .. } => self.partition(tp).map(|p| p.append_ticket()),
                _ => None,
            };
            let me = Arc::clone(&self);
            self.spawn(async move {
                let response = me.handle(envelope.from, envelope.request, ticket).await;
                let _ = envelope.reply.send(response);
            });
        }
    }

    async fn handle(self: Arc<Self>, _from: NodeId, request: Request, ticket: Option<AppendTicket>) -> Response {
        match request {
            Request::Produce {
                tp,
                mut records,
                acks,
                timeout_ms,
                transactional_id,
            } => {
                self.handle_produce(tp, ticket, &mut records, acks, timeout_ms, transactional_id.as_deref())
                    .await
            }
            Request::Fetch(req) => self.handle_fetch(req).await,
            Request::ListOffsets { tp, spec, isolation } => self.handle_list_offsets(&tp, spec, isolation),
            Request::WriteTxnMarker {
                tp,
                producer_id,
                producer_epoch,
                coordinator_epoch,
                commit,
                timeout_ms,
            } => {
                self.handle_write_txn_marker(&tp, producer_id, producer_epoch, coordinator_epoch, commit, timeout_ms)
                    .await
            }
            Request::DeleteRecords { tp, offset } => self.handle_delete_records(&tp, offset),
            Request::UpdateMetadata(image) => {
                self.apply_image(&image);
                Response::UpdateMetadata
            }
            Request::Group(req) => Response::Group(self.handle_group(req).await),
            Request::Txn(req) => Response::Txn(self.handle_txn(req).await),
            request @ (Request::RegisterBroker { .. }
            | Request::BrokerHeartbeat { .. }
            | Request::AlterPartition { .. }) => self.handle_controller_request(request),
        }
    }

    /// `ticket` is the request's place in its partition's append order, `None` when the
    /// partition was not hosted here as the request arrived.
    async fn handle_produce(
        &self,
        tp: TopicPartition,
        ticket: Option<AppendTicket>,
        records: &mut [u8],
        acks: Acks,
        timeout_ms: u64,
        transactional_id: Option<&str>,
    ) -> Response {
        let reply = |error, base_offset| Response::Produce { error, base_offset };
        let Some(ticket) = ticket else {
            return reply(self.unknown_or_not_leader(&tp), -1);
        };
        if let Some(id) = transactional_id
            && let Some(error) = self.verify_transaction(ticket.partition(), id, records).await
        {
            return reply(error, -1);
        }
        ticket.turn().await;
        let partition = Arc::clone(ticket.partition());
        let mut progress = partition.subscribe();
        let appended = partition.append_as_leader(records, acks == Acks::All, self.now_ms());
        // The next request may append now; this one only waits for replication from here.
        drop(ticket);
        let info = match appended {
            Ok(ok) => ok,
            Err(error) => {
                if error == ErrorCode::NotEnoughReplicas {
                    self.ctx.events.publish(EventKind::ProduceRejected {
                        tp: tp.clone(),
                        error,
                        reason: "the ISR is smaller than min.insync.replicas; nothing was written".into(),
                    });
                }
                return reply(error, -1);
            }
        };
        self.bytes_in.fetch_add(info.bytes as u64, Ordering::Relaxed);
        if acks != Acks::All {
            return reply(ErrorCode::None, info.first_offset);
        }
        let error = await_replication(
            &self.ctx.clock,
            &partition,
            &info,
            &mut progress,
            Duration::from_millis(timeout_ms),
        )
        .await;
        if error == ErrorCode::NotEnoughReplicasAfterAppend {
            self.ctx.events.publish(EventKind::ProduceRejected {
                tp,
                error,
                reason: "the ISR shrank below min.insync.replicas while waiting; the records are in the log".into(),
            });
        }
        reply(error, info.first_offset)
    }

    /// KIP-890's verification (on by default since Kafka 3.6): before the first batch of a
    /// producer's transaction on this partition, the leader asks the transaction's coordinator
    /// whether the partition was added to it at this epoch, so that a fenced zombie or a
    /// producer that skipped AddPartitionsToTxn cannot leave a transaction no coordinator will
    /// end. The error to answer, or `None` to append. Coordinator trouble answers
    /// NOT_ENOUGH_REPLICAS, which every producer retries, as Kafka's `ReplicaManager` does.
    async fn verify_transaction(
        &self,
        partition: &Partition,
        transactional_id: &str,
        records: &[u8],
    ) -> Option<ErrorCode> {
        // Bad framing is refused by the append itself.
        let header = crate::storage::batch::BatchHeader::parse(records).ok()?;
        if header.attributes & 0x10 == 0 || header.producer_id < 0 {
            return None;
        }
        if partition.log.ongoing_transaction_of(header.producer_id).is_some() {
            return None;
        }
        let index = txn::partition_for_txn(transactional_id, self.ctx.config.transaction_state_partitions);
        let coordinator = self
            .ctx
            .controller
            .image()
            .partition(&TopicPartition::new(TXN_STATE_TOPIC, index))
            .map(|p| p.leader)
            .filter(|leader| *leader != NO_LEADER);
        let Some(coordinator) = coordinator else {
            return Some(ErrorCode::NotEnoughReplicas);
        };
        let request = Request::Txn(TxnRequest::Verify {
            transactional_id: transactional_id.to_string(),
            producer_id: header.producer_id,
            producer_epoch: header.producer_epoch,
            tp: partition.tp.clone(),
        });
        let answer = self
            .ctx
            .network
            .call(
                NodeId::Broker(self.id),
                NodeId::Broker(coordinator),
                request,
                REQUEST_SLACK,
            )
            .await;
        match answer {
            Ok(Response::Txn(TxnResponse::Verify(error))) => match error {
                ErrorCode::None => None,
                ErrorCode::ProducerFenced => Some(ErrorCode::InvalidProducerEpoch),
                ErrorCode::ConcurrentTransactions
                | ErrorCode::CoordinatorLoadInProgress
                | ErrorCode::CoordinatorNotAvailable
                | ErrorCode::NotCoordinator => Some(ErrorCode::NotEnoughReplicas),
                other => Some(other),
            },
            _ => Some(ErrorCode::NotEnoughReplicas),
        }
    }

    /// WriteTxnMarkers for one partition: the marker is appended by the leader and answered
    /// once the ISR has it (acks=all), as Kafka's coordinator asks.
    async fn handle_write_txn_marker(
        &self,
        tp: &TopicPartition,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
        timeout_ms: u64,
    ) -> Response {
        let reply = |error, offset| Response::WriteTxnMarker { error, offset };
        let Some(partition) = self.partition(tp) else {
            return reply(self.unknown_or_not_leader(tp), -1);
        };
        let mut progress = partition.subscribe();
        let appended =
            match partition.append_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit, self.now_ms()) {
                Ok(appended) => appended,
                Err(error) => return reply(error, -1),
            };
        self.bytes_in.fetch_add(appended.bytes as u64, Ordering::Relaxed);
        let error = await_replication(
            &self.ctx.clock,
            &partition,
            &appended,
            &mut progress,
            Duration::from_millis(timeout_ms),
        )
        .await;
        if error == ErrorCode::None && tp.topic == OFFSETS_TOPIC {
            // The group coordinator of this offsets partition exposes or drops the producer's
            // transactional offsets (Kafka's `onTransactionCompleted`).
            self.groups.complete_txn(tp.partition, producer_id, commit);
        }
        reply(error, appended.first_offset)
    }

    async fn handle_group(&self, req: GroupRequest) -> GroupResponse {
        let g = &self.groups;
        match req {
            GroupRequest::Join(join) => {
                let (rx, rejoin) = g.join(join);
                if let Some(rejoin) = rejoin {
                    let error = await_coordinator_write(&self.ctx.clock, &rejoin.write).await;
                    g.static_member_stored(rejoin, error);
                }
                GroupResponse::Join(rx.await.unwrap_or_else(|_| group::JoinGroupResponse {
                    error: Some(ErrorCode::NotCoordinator),
                    ..Default::default()
                }))
            }
            GroupRequest::Sync {
                group_id,
                generation,
                member_id,
                group_instance_id,
                assignments,
            } => {
                let (rx, stored) = g.sync(
                    &group_id,
                    generation,
                    &member_id,
                    group_instance_id.as_deref(),
                    assignments,
                );
                if let Some(write) = stored {
                    g.group_stored(
                        &group_id,
                        generation,
                        await_coordinator_write(&self.ctx.clock, &write).await,
                    );
                }
                GroupResponse::Sync(rx.await.unwrap_or_else(|_| group::SyncGroupResponse {
                    error: Some(ErrorCode::NotCoordinator),
                    ..Default::default()
                }))
            }
            GroupRequest::Heartbeat {
                group_id,
                generation,
                member_id,
                group_instance_id,
            } => GroupResponse::Heartbeat(g.heartbeat(&group_id, generation, &member_id, group_instance_id.as_deref())),
            GroupRequest::Leave {
                group_id,
                member_id,
                group_instance_id,
            } => GroupResponse::Leave(g.leave(&group_id, &member_id, group_instance_id.as_deref())),
            GroupRequest::OffsetCommit {
                group_id,
                generation,
                member_id,
                group_instance_id,
                offsets,
            } => GroupResponse::OffsetCommit(
                self.commit_offsets(&group_id, generation, &member_id, group_instance_id.as_deref(), offsets)
                    .await,
            ),
            GroupRequest::OffsetFetch {
                group_id,
                partitions,
                require_stable,
            } => GroupResponse::OffsetFetch(g.fetch_offsets(&group_id, partitions.as_deref(), require_stable)),
            GroupRequest::ListGroups => GroupResponse::ListGroups(g.list_groups()),
            GroupRequest::Describe { group_id } => GroupResponse::Describe(g.describe(&group_id)),
            GroupRequest::DeleteGroup { group_id } => GroupResponse::DeleteGroup(match g.delete_group(&group_id) {
                Ok(write) => group::tombstone_error(await_coordinator_write(&self.ctx.clock, &write).await),
                Err(error) => group::tombstone_error(error),
            }),
            GroupRequest::OffsetDelete { group_id, partitions } => {
                GroupResponse::OffsetDelete(match g.delete_offsets(&group_id, &partitions) {
                    Ok((outcome, None)) => Ok(outcome),
                    Ok((outcome, Some(write))) => {
                        match group::tombstone_error(await_coordinator_write(&self.ctx.clock, &write).await) {
                            ErrorCode::None => Ok(outcome),
                            error => Err(error),
                        }
                    }
                    Err(error) => Err(group::tombstone_error(error)),
                })
            }
            GroupRequest::TxnOffsetCommit {
                group_id,
                transactional_id: _,
                producer_id,
                producer_epoch,
                generation,
                member_id,
                group_instance_id,
                offsets,
            } => GroupResponse::TxnOffsetCommit(
                self.txn_commit_offsets(
                    &group_id,
                    (producer_id, producer_epoch),
                    generation,
                    &member_id,
                    group_instance_id.as_deref(),
                    offsets,
                )
                .await,
            ),
        }
    }

    /// The transaction coordinator's requests; markers of a transaction it ends run on as a
    /// task of this broker after the answer.
    async fn handle_txn(&self, req: TxnRequest) -> TxnResponse {
        let (response, job) = self.txns.handle(req).await;
        if let Some(job) = job {
            self.spawn(Arc::clone(&self.txns).complete(job));
        }
        response
    }

    /// Every `transaction.abort.timed.out.transaction.cleanup.interval.ms`: transactions open
    /// longer than their timeout are aborted, and idle transactional ids expire.
    async fn txn_timers(self: Arc<Self>) {
        let every = Duration::from_millis(self.ctx.config.transaction_abort_timed_out_interval_ms.max(10));
        loop {
            self.ctx.clock.sleep(every).await;
            self.unpaused().await;
            for job in self.txns.abort_timed_out().await {
                self.spawn(Arc::clone(&self.txns).complete(job));
            }
            self.txns.expire_ids().await;
        }
    }

    /// Leading a `__transaction_state` partition makes this broker the coordinator of its
    /// transactional ids, once the partition is replayed; transactions found prepared are
    /// completed with this coordinator's epoch.
    fn txn_leadership_changed(&self, partition: &Arc<Partition>) {
        let index = partition.tp.partition;
        let (role, leader_epoch) = partition.role();
        if role != Role::Leader {
            self.txns.unload(index);
            return;
        }
        if !self.txns.begin_loading(partition, leader_epoch) {
            return;
        }
        let Some(me) = self.me.upgrade() else { return };
        let partition = Arc::clone(partition);
        self.spawn(async move {
            let replay = txn::replay(&partition.tp, &partition.log).await;
            for job in me.txns.finish_loading(index, leader_epoch, replay) {
                me.spawn(Arc::clone(&me.txns).complete(job));
            }
        });
    }

    /// TxnOffsetCommit: the offsets become records of the producer's transaction in the
    /// group's `__consumer_offsets` partition; OffsetFetch sees them once its COMMIT marker is
    /// written there.
    async fn txn_commit_offsets(
        &self,
        group_id: &str,
        (producer_id, producer_epoch): (i64, i16),
        generation: i32,
        member_id: &str,
        instance: Option<&str>,
        offsets: Vec<(TopicPartition, i64)>,
    ) -> ErrorCode {
        let committed = stamped(offsets, self.now_ms());
        let write = match self.groups.txn_commit_offsets(
            group_id,
            (producer_id, producer_epoch),
            generation,
            member_id,
            instance,
            &committed,
        ) {
            Ok(Some(write)) => write,
            Ok(None) => return ErrorCode::None,
            Err(error) => return group::commit_error(error),
        };
        let error = await_coordinator_write(&self.ctx.clock, &write).await;
        if error == ErrorCode::None {
            self.groups
                .txn_offsets_appended(group_id, producer_id, &committed, write.appended.first_offset);
        }
        group::commit_error(error)
    }

    /// OffsetCommit: the offsets become records of the group's `__consumer_offsets`
    /// partition, visible once the ISR has them.
    async fn commit_offsets(
        &self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance: Option<&str>,
        offsets: Vec<(TopicPartition, i64)>,
    ) -> ErrorCode {
        let committed = stamped(offsets, self.now_ms());
        let write = match self
            .groups
            .commit_offsets(group_id, generation, member_id, instance, &committed)
        {
            Ok(Some(write)) => write,
            Ok(None) => return ErrorCode::None,
            Err(error) => return group::commit_error(error),
        };
        let error = await_coordinator_write(&self.ctx.clock, &write).await;
        if error == ErrorCode::None {
            self.groups.committed(group_id, &committed, write.appended.first_offset);
        }
        group::commit_error(error)
    }

    pub fn group_snapshot(&self) -> Vec<(group::GroupDescription, Vec<(TopicPartition, i64)>)> {
        self.groups.snapshot()
    }

    /// Runs the coordinator's join-phase and session timers.
    async fn group_timers(self: Arc<Self>) {
        loop {
            self.ctx.clock.sleep(Duration::from_millis(100)).await;
            self.unpaused().await;
            self.groups.tick();
        }
    }

    /// Leading an offsets partition makes this broker the coordinator of its groups, once
    /// their records (offsets and group metadata) are replayed from the log.
    fn offsets_leadership_changed(&self, partition: &Arc<Partition>) {
        let index = partition.tp.partition;
        let (role, leader_epoch) = partition.role();
        if role != Role::Leader {
            self.groups.unload(index);
            return;
        }
        if !self.groups.begin_loading(partition, leader_epoch) {
            return;
        }
        let Some(me) = self.me.upgrade() else { return };
        let partition = Arc::clone(partition);
        self.spawn(async move {
            let replay = group::replay(&partition.tp, &partition.log).await;
            me.groups.finish_loading(index, leader_epoch, replay);
        });
    }

    fn unknown_or_not_leader(&self, tp: &TopicPartition) -> ErrorCode {
        if self.ctx.controller.image().partition(tp).is_some() {
            ErrorCode::NotLeaderOrFollower
        } else {
            ErrorCode::UnknownTopicOrPartition
        }
    }

    async fn handle_fetch(&self, req: FetchRequest) -> Response {
        let Some(partition) = self.partition(&req.tp) else {
            return Response::Fetch {
                error: self.unknown_or_not_leader(&req.tp),
                diverging_epoch: None,
                data: FetchedRecords::default(),
            };
        };
        // Kafka's DelayedFetch: an empty answer waits for records (up to `max_wait_ms`); a
        // follower is also answered as soon as the HW moves, since fetches are how it learns
        // the HW. Waking only for that, not for every append or HW step, spares a round trip.
        let deadline = self.ctx.clock.now() + Duration::from_millis(req.max_wait_ms);
        let mut first_high_watermark = None;
        loop {
            let mut progress = partition.subscribe();
            let arrival = first_high_watermark.is_none();
            let throttled = req.replica.is_some_and(|(replica, _)| {
                self.leader_quota
                    .should_throttle(&req.tp, partition.in_sync(replica), self.ctx.clock.now())
            });
            let (result, proposal) = partition.read_for_fetch(&req, arrival, throttled);
            if let Some(p) = proposal {
                self.propose_isr(p);
            }
            match result {
                Err(error) => {
                    let log = &partition.log;
                    return Response::Fetch {
                        error,
                        diverging_epoch: None,
                        data: FetchedRecords {
                            high_watermark: partition.high_watermark(),
                            last_stable_offset: partition.last_stable_offset(),
                            log_start_offset: log.log_start_offset(),
                            log_end_offset: log.log_end_offset(),
                            records: Default::default(),
                            aborted_transactions: None,
                        },
                    };
                }
                Ok((data, Some(diverging))) => {
                    return Response::Fetch {
                        error: ErrorCode::None,
                        diverging_epoch: Some(diverging),
                        data,
                    };
                }
                Ok((data, None)) => {
                    let first = *first_high_watermark.get_or_insert(data.high_watermark);
                    let news = !data.records.is_empty() || (req.replica.is_some() && data.high_watermark != first);
                    if !news && self.ctx.clock.now() < deadline {
                        // Past the deadline the next round answers with what there is.
                        let _ = self.ctx.clock.timeout_at(deadline, progress.changed()).await;
                        continue;
                    }
                    self.bytes_out.fetch_add(data.records.len() as u64, Ordering::Relaxed);
                    // Kafka counts every replica's traffic of a throttled partition against
                    // the quota, in sync or not, so the total stays within the rate.
                    if req.replica.is_some() && self.leader_quota.is_throttled(&req.tp) {
                        self.leader_quota
                            .record(self.ctx.clock.now(), data.records.len() as u64);
                    }
                    return Response::Fetch {
                        error: ErrorCode::None,
                        diverging_epoch: None,
                        data,
                    };
                }
            }
        }
    }

    fn handle_list_offsets(&self, tp: &TopicPartition, spec: OffsetSpec, isolation: IsolationLevel) -> Response {
        let reply = |error, offset, timestamp| Response::ListOffsets {
            error,
            offset,
            timestamp,
        };
        let Some(partition) = self.partition(tp) else {
            return reply(self.unknown_or_not_leader(tp), -1, -1);
        };
        if partition.role().0 != Role::Leader {
            return reply(ErrorCode::NotLeaderOrFollower, -1, -1);
        }
        // Kafka's `lastFetchableOffset`: what a consumer of this isolation level may read.
        let hw = match isolation {
            IsolationLevel::ReadUncommitted => partition.high_watermark(),
            IsolationLevel::ReadCommitted => partition.last_stable_offset(),
        };
        if !partition.high_watermark_known() {
            return reply(ErrorCode::OffsetNotAvailable, -1, -1);
        }
        match spec {
            OffsetSpec::Earliest => reply(ErrorCode::None, partition.log.log_start_offset(), -1),
            OffsetSpec::Latest => reply(ErrorCode::None, hw, -1),
            OffsetSpec::Timestamp(ts) => match partition.log.offset_for_timestamp(ts) {
                Ok(Some(found)) if found.offset < hw => reply(ErrorCode::None, found.offset, found.timestamp),
                Ok(_) => reply(ErrorCode::None, -1, -1),
                Err(e) => reply(ErrorCode::from_storage(e.kafka_error_code()), -1, -1),
            },
        }
    }

    fn handle_delete_records(&self, tp: &TopicPartition, offset: i64) -> Response {
        let Some(partition) = self.partition(tp) else {
            return Response::DeleteRecords {
                error: self.unknown_or_not_leader(tp),
                low_watermark: -1,
            };
        };
        match partition.delete_records(offset, self.now_ms()) {
            Ok(low_watermark) => {
                tracing::info!(broker = self.id, %tp, log_start = low_watermark, "records deleted");
                Response::DeleteRecords {
                    error: ErrorCode::None,
                    low_watermark,
                }
            }
            Err(error) => Response::DeleteRecords {
                error,
                low_watermark: -1,
            },
        }
    }

    fn is_controller(&self) -> bool {
        self.ctx.network.controller() == Some(self.id)
    }

    fn handle_controller_request(&self, request: Request) -> Response {
        let controller = &self.ctx.controller;
        let not_controller = !self.is_controller();
        match request {
            Request::RegisterBroker {
                broker,
                previous_broker_epoch,
            } => {
                if not_controller {
                    return Response::RegisterBroker {
                        error: ErrorCode::NotController,
                        broker_epoch: -1,
                        image: Arc::default(),
                    };
                }
                match controller.register_broker(broker, previous_broker_epoch) {
                    Ok((broker_epoch, image)) => {
                        self.publish(Arc::clone(&image));
                        Response::RegisterBroker {
                            error: ErrorCode::None,
                            broker_epoch,
                            image,
                        }
                    }
                    Err(e) => Response::RegisterBroker {
                        error: e.code(),
                        broker_epoch: -1,
                        image: Arc::default(),
                    },
                }
            }
            Request::BrokerHeartbeat {
                broker,
                broker_epoch,
                metadata_version,
            } => {
                if not_controller {
                    return Response::BrokerHeartbeat {
                        error: ErrorCode::NotController,
                        image: None,
                    };
                }
                match controller.heartbeat(broker, broker_epoch) {
                    Ok(changed) => {
                        if let Some(image) = changed {
                            self.publish(image);
                        }
                        let image = controller.image();
                        Response::BrokerHeartbeat {
                            error: ErrorCode::None,
                            image: (image.version != metadata_version).then_some(image),
                        }
                    }
                    Err(e) => Response::BrokerHeartbeat {
                        error: e.code(),
                        image: None,
                    },
                }
            }
            Request::AlterPartition {
                tp,
                leader,
                broker_epoch,
                leader_epoch,
                partition_epoch,
                new_isr,
            } => {
                if not_controller {
                    return Response::AlterPartition {
                        error: ErrorCode::NotController,
                        state: None,
                    };
                }
                match controller.alter_partition(&tp, leader, broker_epoch, leader_epoch, partition_epoch, new_isr) {
                    Ok((state, changed)) => {
                        if let Some(image) = changed {
                            self.publish(image);
                        }
                        Response::AlterPartition {
                            error: ErrorCode::None,
                            state: Some(state),
                        }
                    }
                    Err(e) => Response::AlterPartition {
                        error: e.code(),
                        state: None,
                    },
                }
            }
            _ => unreachable!("only controller requests are routed here"),
        }
    }

    /// Sends new metadata to every registered broker (as the controller's host).
    pub fn publish(&self, image: Arc<MetadataImage>) {
        for &broker in image.brokers.keys() {
            let network = self.ctx.network.clone();
            let image = Arc::clone(&image);
            tokio::spawn(async move {
                let _ = network
                    .call(
                        NodeId::Controller,
                        NodeId::Broker(broker),
                        Request::UpdateMetadata(image),
                        REQUEST_SLACK,
                    )
                    .await;
            });
        }
    }

    /// Publishes the result of a controller operation run from this (host) broker.
    pub fn publish_result(&self, result: Result<Option<Arc<MetadataImage>>, ControllerError>) {
        match result {
            Ok(Some(image)) => self.publish(image),
            Ok(None) => {}
            Err(e) => tracing::warn!(broker = self.id, error = %e, "controller operation failed"),
        }
    }

    /// Runs the controller's timers while this broker hosts it: session expiry and the
    /// automatic preferred-leader rebalance.
    pub fn spawn_controller_duties(self: &Arc<Self>) {
        let me = Arc::clone(self);
        self.spawn(async move {
            let tick = Duration::from_millis((me.ctx.config.broker_heartbeat_interval_ms / 2).max(10));
            let rebalance_every = Duration::from_millis(me.ctx.config.leader_imbalance_check_interval_ms.max(1));
            let clock = &me.ctx.clock;
            let mut next_rebalance = clock.now() + rebalance_every;
            loop {
                clock.sleep(tick).await;
                me.unpaused().await;
                if !me.is_controller() {
                    return;
                }
                me.publish_result(me.ctx.controller.expire_sessions());
                if clock.now() < next_rebalance {
                    continue;
                }
                next_rebalance += rebalance_every;
                if me.ctx.auto_rebalance.load(Ordering::Relaxed) {
                    let result = me.ctx.controller.elect_preferred(|_| true).map(|(_, image)| image);
                    me.publish_result(result);
                }
            }
        });
    }

    async fn heartbeats(self: Arc<Self>) {
        let interval = Duration::from_millis(self.ctx.config.broker_heartbeat_interval_ms);
        loop {
            self.unpaused().await;
            let epoch = self.broker_epoch();
            let request = if epoch < 0 {
                Request::RegisterBroker {
                    broker: self.id,
                    previous_broker_epoch: self.previous_broker_epoch,
                }
            } else {
                Request::BrokerHeartbeat {
                    broker: self.id,
                    broker_epoch: epoch,
                    metadata_version: self.metadata_version.load(Ordering::SeqCst),
                }
            };
            match self
                .ctx
                .network
                .call(NodeId::Broker(self.id), NodeId::Controller, request, interval * 2)
                .await
            {
                Ok(Response::RegisterBroker {
                    error: ErrorCode::None,
                    broker_epoch,
                    image,
                }) => {
                    self.broker_epoch.store(broker_epoch, Ordering::SeqCst);
                    self.apply_image(&image);
                    // Heartbeat right away: it unfences us.
                    continue;
                }
                Ok(Response::BrokerHeartbeat {
                    error: ErrorCode::None,
                    image: Some(image),
                }) => self.apply_image(&image),
                Ok(Response::BrokerHeartbeat {
                    error: ErrorCode::StaleBrokerEpoch,
                    ..
                }) => self.broker_epoch.store(-1, Ordering::SeqCst),
                _ => {}
            }
            self.ctx.clock.sleep(interval).await;
        }
    }

    async fn isr_expiration(self: Arc<Self>) {
        let every = Duration::from_millis((self.ctx.config.replica_lag_time_max_ms / 2).max(10));
        loop {
            self.ctx.clock.sleep(every).await;
            self.unpaused().await;
            for p in self.partitions() {
                if let Some(proposal) = p.shrink_proposal() {
                    self.propose_isr(proposal);
                }
            }
        }
    }

    /// The broker's housekeeping, every `log.retention.check.interval.ms`: the log cleaner
    /// on compacted logs, then retention deleting old segments (never past the replica's
    /// HW); every ten minutes also expiry of idle producer ids and of old committed offsets
    /// and empty groups.
    async fn retention(self: Arc<Self>) {
        /// Kafka's `log.cleaner.backoff.ms`: how long the cleaner rests after a pass that found
        /// nothing to clean.
        const LOG_CLEANER_BACKOFF_MS: i64 = 15_000;
        /// Kafka's `producer.id.expiration.check.interval.ms` and
        /// `offsets.retention.check.interval.ms` (both ten minutes).
        const EXPIRY_CHECK_INTERVAL_MS: i64 = 600_000;
        let every = Duration::from_millis(self.ctx.config.retention_check_interval_ms.max(10));
        let producer_id_expiration_ms = i64::try_from(self.ctx.config.producer_id_expiration_ms).unwrap_or(i64::MAX);
        let offsets_retention_ms = i64::try_from(self.ctx.config.offsets_retention_minutes)
            .unwrap_or(i64::MAX)
            .saturating_mul(60_000);
        let mut cleaner_rests_until = i64::MIN;
        let mut next_expiry = self.now_ms().saturating_add(EXPIRY_CHECK_INTERVAL_MS);
        loop {
            self.ctx.clock.sleep(every).await;
            self.unpaused().await;
            let now = self.now_ms();
            let run_cleaner = now >= cleaner_rests_until;
            let expire = now >= next_expiry;
            let mut cleaned_any = false;
            for p in self.partitions() {
                if run_cleaner && p.log.config().cleanup_policy.compacts() {
                    cleaned_any |= self.clean(&p, now);
                }
                match p.log.enforce_retention(now, p.high_watermark()) {
                    Ok(outcome) if outcome.deleted_segments > 0 => tracing::info!(
                        broker = self.id,
                        tp = %p.tp,
                        segments = outcome.deleted_segments,
                        bytes = outcome.deleted_bytes,
                        log_start = outcome.log_start_offset,
                        "retention deleted old segments"
                    ),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(broker = self.id, tp = %p.tp, error = %e, "retention failed"),
                }
                if expire {
                    let expired = p.expire_producers(now, producer_id_expiration_ms);
                    if expired > 0 {
                        tracing::debug!(broker = self.id, tp = %p.tp, producers = expired, "expired idle producer ids");
                    }
                }
            }
            if run_cleaner && !cleaned_any {
                cleaner_rests_until = now.saturating_add(LOG_CLEANER_BACKOFF_MS);
            }
            if expire {
                self.groups.expire_offsets(offsets_retention_ms);
                next_expiry = now.saturating_add(EXPIRY_CHECK_INTERVAL_MS);
            }
        }
    }

    /// One pass of Kafka's log cleaner over a compacted log, below the replica's HW; whether
    /// it cleaned anything.
    fn clean(&self, p: &Partition, now: i64) -> bool {
        // Kafka's cleaner stops at the last stable offset: an open transaction may still abort.
        match p.log.clean_below(now, p.last_stable_offset()) {
            Ok(Some(stats)) => {
                tracing::info!(
                    broker = self.id,
                    tp = %p.tp,
                    records_removed = stats.records_removed,
                    bytes_before = stats.bytes_before,
                    bytes_after = stats.bytes_after,
                    "log cleaner compacted the log"
                );
                true
            }
            Ok(None) => false,
            Err(e) => {
                tracing::warn!(broker = self.id, tp = %p.tp, error = %e, "log cleaning failed");
                false
            }
        }
    }

    /// `flush = <ms>`: syncs each log whose unsynced tail is older than the interval, also
    /// when no append comes to trigger it (Kafka's `log.flush.scheduler.interval.ms`).
    async fn flusher(self: Arc<Self>, interval_ms: u64) {
        let every = Duration::from_millis(interval_ms.clamp(10, 1_000));
        loop {
            self.ctx.clock.sleep(every).await;
            self.unpaused().await;
            let now = self.now_ms();
            for p in self.partitions() {
                if let Err(e) = p.log.flush_if_due(now) {
                    tracing::warn!(broker = self.id, tp = %p.tp, error = %e, "scheduled flush failed");
                }
            }
        }
    }

    /// Sends an ISR change to the controller and applies its answer.
    fn propose_isr(&self, proposal: IsrProposal) {
        let Some(me) = self.me.upgrade() else { return };
        self.spawn(async move {
            let Some(partition) = me.partition(&proposal.tp) else {
                return;
            };
            let request = Request::AlterPartition {
                tp: proposal.tp.clone(),
                leader: me.id,
                broker_epoch: me.broker_epoch(),
                leader_epoch: proposal.leader_epoch,
                partition_epoch: proposal.partition_epoch,
                new_isr: proposal.new_isr,
            };
            let response = me
                .ctx
                .network
                .call(NodeId::Broker(me.id), NodeId::Controller, request, REQUEST_SLACK)
                .await;
            let committed = match response {
                Ok(Response::AlterPartition {
                    error: ErrorCode::None,
                    state,
                }) => state,
                _ => None,
            };
            partition.isr_change_done(committed.as_ref());
        });
    }

    /// Brings the replicas hosted here in line with the controller's metadata.
    pub fn apply_image(&self, image: &MetadataImage) {
        // Only metadata that knows this incarnation counts (a KRaft broker publishes its
        // first image after it registered and caught up): an image from before still gives
        // the previous incarnation its leaderships and ISR places, and a restarted broker
        // acting on it would lead with a log a crash may have cut back, before the
        // controller moved those leaderships away.
        let epoch = self.broker_epoch();
        if epoch < 0 || image.brokers.get(&self.id).map(|b| b.epoch) != Some(epoch) {
            return;
        }
        let now = self.now_ms();
        let mut partitions = lock(&self.partitions);
        if image.version < self.metadata_version.load(Ordering::SeqCst) {
            return;
        }
        self.metadata_version.store(image.version, Ordering::SeqCst);
        let mut hosted = Vec::new();
        for (tp, reg) in image.partitions() {
            if !reg.replicas.contains(&self.id) {
                continue;
            }
            hosted.push(tp.clone());
            let topic = image.topics.get(&tp.topic);
            let log_config = topic.map_or_else(
                || configs::cluster_log_defaults(image, &self.ctx.config.log),
                |t| configs::topic_log_config(image, &self.ctx.config.log, &t.config),
            );
            let partition = match partitions.get(&tp) {
                Some(p) => {
                    // A topic config altered live reaches the replicas' open logs here.
                    if p.log.config() != log_config
                        && let Err(e) = p.log.set_config(log_config)
                    {
                        tracing::error!(broker = self.id, %tp, error = %e, "applying the topic's config");
                    }
                    Arc::clone(p)
                }
                None => match Log::open(self.dir.join(tp.dir_name()), log_config, now) {
                    Ok(log) => {
                        let lag = self.ctx.config.replica_lag_time_max_ms as i64;
                        let p = Arc::new(Partition::new(tp.clone(), self.id, log, lag, self.ctx.clock.clone()));
                        partitions.insert(tp.clone(), Arc::clone(&p));
                        p
                    }
                    Err(e) => {
                        tracing::error!(broker = self.id, %tp, error = %e, "cannot open the replica's log");
                        continue;
                    }
                },
            };
            let min_isr = image.topics.get(&tp.topic).map_or(1, |t| t.config.min_insync_replicas);
            match partition.apply(reg, min_isr, |b| image.is_live(b)) {
                Ok(true) => {
                    self.restart_fetcher(&partition);
                    if tp.topic == OFFSETS_TOPIC {
                        self.offsets_leadership_changed(&partition);
                    } else if tp.topic == TXN_STATE_TOPIC {
                        self.txn_leadership_changed(&partition);
                    }
                }
                Ok(false) => {}
                Err(e) => tracing::error!(broker = self.id, %tp, error = %e, "applying partition state"),
            }
        }
        self.configure_quotas(image, &hosted);
        let gone: Vec<TopicPartition> = partitions.keys().filter(|tp| !hosted.contains(tp)).cloned().collect();
        for tp in gone {
            if let Some(f) = lock(&self.fetchers).remove(&tp) {
                f.abort();
            }
            // The topic was deleted or a reassignment moved this replica away: as a KRaft
            // broker applying the metadata delta, stop the replica and delete its log.
            if tp.topic == TXN_STATE_TOPIC {
                self.txns.unload(tp.partition);
            }
            if let Some(p) = partitions.remove(&tp) {
                let dir = p.log.dir().to_path_buf();
                drop(p);
                if let Err(e) = std::fs::remove_dir_all(&dir) {
                    tracing::warn!(broker = self.id, dir = %dir.display(), error = %e, "deleting a replica");
                }
            }
        }
    }

    /// The replication quotas' rates and throttled partitions from the metadata: the
    /// broker's own `*.replication.throttled.rate` (else the cluster's), and the hosted
    /// partitions whose topics list this broker's replica in `*.replication.throttled.replicas`.
    fn configure_quotas(&self, image: &MetadataImage, hosted: &[TopicPartition]) {
        let throttled = |name: &str| -> BTreeSet<TopicPartition> {
            hosted
                .iter()
                .filter(|tp| {
                    image
                        .topics
                        .get(&tp.topic)
                        .and_then(|t| t.config.get(name))
                        .and_then(|list| ThrottledReplicas::parse(&list).ok())
                        .is_some_and(|r| r.includes(tp.partition, self.id))
                })
                .cloned()
                .collect()
        };
        self.leader_quota.configure(
            configs::replication_rate(image, self.id, configs::LEADER_THROTTLED_RATE),
            throttled(configs::LEADER_THROTTLED_REPLICAS),
        );
        self.follower_quota.configure(
            configs::replication_rate(image, self.id, configs::FOLLOWER_THROTTLED_RATE),
            throttled(configs::FOLLOWER_THROTTLED_REPLICAS),
        );
    }

    fn restart_fetcher(&self, partition: &Arc<Partition>) {
        if let Some(old) = lock(&self.fetchers).remove(&partition.tp) {
            old.abort();
        }
        if let (Role::Follower { leader }, epoch) = partition.role()
            && let Some(me) = self.me.upgrade()
        {
            let handle = self.spawn(me.fetch_from_leader(Arc::clone(partition), leader, epoch));
            lock(&self.fetchers).insert(partition.tp.clone(), handle);
        }
    }

    /// The follower's fetch loop for one partition, as Kafka's replica fetcher.
    async fn fetch_from_leader(self: Arc<Self>, partition: Arc<Partition>, leader: BrokerId, leader_epoch: i32) {
        let backoff = Duration::from_millis(self.ctx.config.replica_fetch_backoff_ms);
        let max_wait = self.ctx.config.replica_fetch_wait_max_ms;
        // The leader holds a fetch that finds nothing new for `max_wait`; one answered sooner
        // that changed nothing here (a divergence that cut nothing, a refused or empty fetch)
        // would otherwise be sent again at once, forever.
        let held = Duration::from_millis(max_wait.max(1));
        // Kafka's fetcher lag: in sync while the last fetch left this replica at or past the
        // leader's HW; a new fetcher starts from the ISR this replica knows.
        let mut in_sync = partition.in_sync(self.id);
        loop {
            self.unpaused().await;
            if partition.role() != (Role::Follower { leader }, leader_epoch) {
                return;
            }
            if self
                .follower_quota
                .should_throttle(&partition.tp, in_sync, self.ctx.clock.now())
            {
                // Left out of the fetch while the follower quota is exceeded (Kafka's
                // `shouldFollowerThrottle`), as a fetcher with nothing to ask backs off.
                self.ctx.clock.sleep(backoff.max(Duration::from_millis(1))).await;
                continue;
            }
            let (fetch_offset, last_fetched_epoch) = partition.fetch_position();
            let before = (fetch_offset, last_fetched_epoch, partition.high_watermark());
            let request = Request::Fetch(FetchRequest {
                replica: Some((self.id, self.broker_epoch())),
                tp: partition.tp.clone(),
                fetch_offset,
                current_leader_epoch: leader_epoch,
                last_fetched_epoch,
                max_bytes: REPLICA_FETCH_MAX_BYTES,
                max_wait_ms: max_wait,
                isolation: IsolationLevel::ReadUncommitted,
            });
            let sent = self.ctx.clock.now();
            let response = self
                .ctx
                .network
                .call(
                    NodeId::Broker(self.id),
                    NodeId::Broker(leader),
                    request,
                    Duration::from_millis(max_wait) + REQUEST_SLACK,
                )
                .await;
            let step = match response {
                Ok(Response::Fetch {
                    error: ErrorCode::None,
                    diverging_epoch: Some(diverging),
                    ..
                }) => Some(partition.truncate_diverging(leader_epoch, diverging).map(|cut| {
                    cut.map(|(from, to)| {
                        if from != to {
                            self.ctx.events.publish(EventKind::FollowerTruncated {
                                tp: partition.tp.clone(),
                                broker: self.id,
                                from,
                                to,
                            });
                        }
                    })
                })),
                Ok(Response::Fetch {
                    error: ErrorCode::None,
                    data,
                    ..
                }) => {
                    let applied = partition.append_as_follower(leader_epoch, &data, self.now_ms());
                    if matches!(applied, Ok(Some(()))) {
                        in_sync = data.high_watermark <= partition.fetch_position().0;
                        if self.follower_quota.is_throttled(&partition.tp) {
                            self.follower_quota
                                .record(self.ctx.clock.now(), data.records.len() as u64);
                        }
                    }
                    Some(applied)
                }
                Ok(Response::Fetch {
                    error: ErrorCode::OffsetOutOfRange,
                    data,
                    ..
                }) => Some(if fetch_offset < data.log_start_offset {
                    partition.reset_to(leader_epoch, data.log_start_offset)
                } else {
                    partition.truncate_to(leader_epoch, data.log_end_offset)
                }),
                // The leader refused the fetch or did not answer.
                Ok(_) | Err(NetError::Refused) | Err(NetError::Timeout) => None,
            };
            let failed = match step {
                Some(Ok(Some(()))) => false,
                // This replica no longer follows in this epoch; its new fetcher takes over.
                Some(Ok(None)) => return,
                Some(Err(e)) => {
                    tracing::warn!(broker = self.id, tp = %partition.tp, error = %e, "applying a fetch failed");
                    true
                }
                None => true,
            };
            let (leo, epoch) = partition.fetch_position();
            let unchanged = (leo, epoch, partition.high_watermark()) == before;
            if failed || (unchanged && self.ctx.clock.elapsed(sent) < held) {
                self.ctx.clock.sleep(backoff).await;
            }
        }
    }
}

/// Reads and removes the clean-shutdown marker a broker left in its directory (Kafka's
/// `CleanShutdownFileHandler`): the broker epoch it stopped with, or -1 when there is none,
/// as after a crash. Removing it first means a crash from here on counts as unclean.
/// Offsets to commit, each stamped with the commit's time.
fn stamped(offsets: Vec<(TopicPartition, i64)>, now: i64) -> Vec<(TopicPartition, CommittedOffset)> {
    offsets
        .into_iter()
        .map(|(tp, offset)| {
            (
                tp,
                CommittedOffset {
                    offset,
                    commit_timestamp: now,
                },
            )
        })
        .collect()
}

fn take_clean_shutdown_marker(dir: &std::path::Path) -> i64 {
    #[derive(serde::Deserialize)]
    struct Marker {
        #[serde(rename = "brokerEpoch")]
        broker_epoch: i64,
    }
    let path = dir.join(CLEAN_SHUTDOWN_MARKER);
    let Ok(bytes) = std::fs::read(&path) else {
        return -1;
    };
    if let Err(e) = std::fs::remove_file(&path) {
        tracing::warn!(marker = %path.display(), error = %e, "cannot remove the clean-shutdown marker");
        return -1;
    }
    match serde_json::from_slice::<Marker>(&bytes) {
        Ok(marker) => marker.broker_epoch,
        Err(e) => {
            tracing::warn!(marker = %path.display(), error = %e, "ignoring an unreadable clean-shutdown marker");
            -1
        }
    }
}

/// Waits until an acks=all append is replicated to the ISR (HW passed it), the leader
/// changes, or the timeout passes.
pub(crate) async fn await_replication(
    clock: &Clock,
    partition: &Partition,
    appended: &Appended,
    progress: &mut Watcher<u64>,
    timeout: Duration,
) -> ErrorCode {
    let wait = async {
        loop {
            match partition.check_acks_all(appended.last_offset + 1, appended.leader_epoch) {
                Ok(true) => return ErrorCode::None,
                Ok(false) => {
                    if progress.changed().await.is_err() {
                        return ErrorCode::NotLeaderOrFollower;
                    }
                }
                Err(e) => return e,
            }
        }
    };
    clock.timeout(timeout, wait).await.unwrap_or(ErrorCode::RequestTimedOut)
}

/// Waits until a coordinator record is replicated to the ISR.
async fn await_coordinator_write(clock: &Clock, write: &group::PendingWrite) -> ErrorCode {
    let mut progress = write.partition.subscribe();
    await_replication(
        clock,
        &write.partition,
        &write.appended,
        &mut progress,
        group::OFFSETS_COMMIT_TIMEOUT,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn finished_request_tasks_do_not_accumulate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = ClusterConfig {
            data_dir: dir.path().to_path_buf(),
            brokers: 1,
            ..ClusterConfig::default()
        };
        let wall = WallClock::new();
        let clock = Clock::new();
        let events = EventBus::new(wall, clock.clone());
        let controller = Arc::new(Controller::load(config.clone(), events.clone(), clock.clone()).expect("controller"));
        let network = Network::new(clock.clone());
        network.set_controller(Some(0));
        let broker = Broker::start(
            0,
            BrokerContext {
                config,
                network: network.clone(),
                controller,
                events,
                wall,
                clock,
                auto_rebalance: Arc::new(AtomicBool::new(true)),
            },
        );
        let long_lived = broker.task_count();
        for _ in 0..500 {
            let request = Request::ListOffsets {
                tp: TopicPartition::new("absent", 0),
                spec: OffsetSpec::Latest,
                isolation: IsolationLevel::ReadUncommitted,
            };
            network
                .call(NodeId::Client(0), NodeId::Broker(0), request, Duration::from_secs(1))
                .await
                .expect("answered");
        }
        assert!(
            broker.task_count() <= long_lived + 2,
            "{} tasks after 500 requests; {long_lived} before",
            broker.task_count()
        );
        broker.kill();
    }
}
