//! The transaction coordinator (KIP-98) end to end on a three-broker cluster: a test producer
//! speaks InitProducerId / AddPartitionsToTxn / EndTxn to its coordinator and produces
//! transactional batches; read_committed consumers see exactly the committed records.
//! Zombies are fenced, timed-out transactions aborted, and a prepared transaction survives
//! the loss of its coordinator or of a partition leader while markers are written.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::engine::{config, coordinators_ready, ready, txn_batch};
use common::scratch_dir;
use kdeck::client::consumer::{Consumer, ConsumerConfig, OffsetReset};
use kdeck::engine::txn::partition_for_txn;
use kdeck::engine::{
    Acks, BrokerId, Cluster, ClusterConfig, ClusterEvent, ErrorCode, EventKind, GroupRequest, GroupResponse,
    IsolationLevel, LinkFault, NodeId, TXN_STATE_TOPIC, TopicConfig, TopicPartition, TransactionDescription,
    TxnRequest, TxnResponse, TxnState,
};
use tokio::sync::broadcast;

const PATIENCE: Duration = Duration::from_secs(30);
const TIMEOUT_MS: i32 = 60_000;

fn txn_config(dir: &std::path::Path) -> ClusterConfig {
    ClusterConfig {
        transaction_state_partitions: 3,
        transaction_abort_timed_out_interval_ms: 1_000,
        ..config(dir)
    }
}

/// A transactional producer as a client library drives its coordinator: retriable errors
/// (CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, ...) are retried after a pause.
struct TxnProducer {
    cluster: Cluster,
    id: String,
    pid: i64,
    epoch: i16,
    seq: HashMap<TopicPartition, i32>,
}

fn retriable(e: ErrorCode) -> bool {
    e.is_retriable() || e == ErrorCode::ConcurrentTransactions
}

async fn pause() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

async fn request(cluster: &Cluster, id: &str, req: TxnRequest) -> Result<TxnResponse, ErrorCode> {
    cluster.txn_request(id, req, Duration::from_secs(10)).await
}

async fn init_with(
    cluster: &Cluster,
    id: &str,
    timeout_ms: i32,
    expected: (i64, i16),
) -> Result<(i64, i16), ErrorCode> {
    for _ in 0..300 {
        let req = TxnRequest::InitProducerId {
            transactional_id: id.to_string(),
            transaction_timeout_ms: timeout_ms,
            producer_id: expected.0,
            producer_epoch: expected.1,
        };
        match request(cluster, id, req).await {
            Ok(TxnResponse::InitProducerId(Ok(pe))) => return Ok(pe),
            Ok(TxnResponse::InitProducerId(Err(e))) | Err(e) if retriable(e) => pause().await,
            Ok(TxnResponse::InitProducerId(Err(e))) | Err(e) => return Err(e),
            Ok(other) => panic!("unexpected answer {other:?}"),
        }
    }
    panic!("InitProducerId never answered");
}

async fn describe(cluster: &Cluster, id: &str) -> Result<TransactionDescription, ErrorCode> {
    for _ in 0..300 {
        let req = TxnRequest::Describe {
            transactional_id: id.to_string(),
        };
        match request(cluster, id, req).await {
            Ok(TxnResponse::Describe(Ok(d))) => return Ok(d),
            Ok(TxnResponse::Describe(Err(e))) | Err(e) if e.is_retriable() => pause().await,
            Ok(TxnResponse::Describe(Err(e))) | Err(e) => return Err(e),
            Ok(other) => panic!("unexpected answer {other:?}"),
        }
    }
    panic!("Describe never answered");
}

/// Waits until the id's coordinator shows `state`.
async fn wait_state(cluster: &Cluster, id: &str, state: TxnState) -> TransactionDescription {
    let mut last = None;
    for _ in 0..600 {
        match describe(cluster, id).await {
            Ok(d) if d.state == state => return d,
            other => last = Some(other),
        }
        pause().await;
    }
    panic!("{id} never reached {state:?}; last {last:?}");
}

impl TxnProducer {
    async fn init(cluster: &Cluster, id: &str) -> TxnProducer {
        Self::init_timeout(cluster, id, TIMEOUT_MS).await
    }

    async fn init_timeout(cluster: &Cluster, id: &str, timeout_ms: i32) -> TxnProducer {
        let (pid, epoch) = init_with(cluster, id, timeout_ms, (-1, -1))
            .await
            .expect("InitProducerId");
        TxnProducer {
            cluster: cluster.clone(),
            id: id.to_string(),
            pid,
            epoch,
            seq: HashMap::new(),
        }
    }

    async fn add(&self, tps: &[TopicPartition]) -> Result<Vec<(TopicPartition, ErrorCode)>, ErrorCode> {
        for _ in 0..300 {
            let req = TxnRequest::AddPartitions {
                transactional_id: self.id.clone(),
                producer_id: self.pid,
                producer_epoch: self.epoch,
                partitions: tps.to_vec(),
            };
            match request(&self.cluster, &self.id, req).await {
                Ok(TxnResponse::AddPartitions(Ok(r))) => return Ok(r),
                Ok(TxnResponse::AddPartitions(Err(e))) | Err(e) if retriable(e) => pause().await,
                Ok(TxnResponse::AddPartitions(Err(e))) | Err(e) => return Err(e),
                Ok(other) => panic!("unexpected answer {other:?}"),
            }
        }
        panic!("AddPartitions never answered");
    }

    async fn add_one(&self, tp: &TopicPartition) -> Result<Vec<(TopicPartition, ErrorCode)>, ErrorCode> {
        self.add(std::slice::from_ref(tp)).await
    }

    async fn send(&mut self, tp: &TopicPartition, values: &[&str]) -> Result<i64, ErrorCode> {
        let seq = *self.seq.get(tp).unwrap_or(&0);
        let batch = txn_batch(self.pid, self.epoch, seq, values);
        let offset = self.cluster.produce(tp, batch, Acks::All, PATIENCE).await?;
        self.seq.insert(tp.clone(), seq + values.len() as i32);
        Ok(offset)
    }

    async fn end(&self, commit: bool) -> ErrorCode {
        for _ in 0..300 {
            let req = TxnRequest::EndTxn {
                transactional_id: self.id.clone(),
                producer_id: self.pid,
                producer_epoch: self.epoch,
                commit,
            };
            match request(&self.cluster, &self.id, req).await {
                Ok(TxnResponse::EndTxn(e)) | Err(e) if e.is_retriable() => pause().await,
                Ok(TxnResponse::EndTxn(e)) | Err(e) => return e,
                Ok(other) => panic!("unexpected answer {other:?}"),
            }
        }
        panic!("EndTxn never answered");
    }
}

async fn consume_committed(cluster: &Cluster, tp: &TopicPartition, want: usize) -> Vec<String> {
    let mut consumer = Consumer::new(
        cluster.clone(),
        ConsumerConfig {
            auto_offset_reset: OffsetReset::Earliest,
            isolation_level: IsolationLevel::ReadCommitted,
            ..ConsumerConfig::default()
        },
    );
    consumer.assign(vec![tp.clone()]);
    let mut seen = Vec::new();
    for _ in 0..20 {
        for r in consumer.poll(Duration::from_millis(500)).await.expect("poll") {
            seen.push(String::from_utf8_lossy(&r.value.unwrap_or_default()).into_owned());
        }
        if seen.len() > want {
            break;
        }
    }
    consumer.close().await;
    seen
}

/// The events published so far.
fn drain(events: &mut broadcast::Receiver<ClusterEvent>) -> Vec<EventKind> {
    let mut out = Vec::new();
    while let Ok(e) = events.try_recv() {
        out.push(e.kind);
    }
    out
}

async fn start(dir: &std::path::Path, cfg: impl FnOnce(ClusterConfig) -> ClusterConfig) -> (Cluster, TopicPartition) {
    let cluster = Cluster::start(cfg(txn_config(dir))).await.expect("start");
    cluster
        .create_topic("tx", TopicConfig::new(1, 3).with_min_insync_replicas(2))
        .await
        .expect("create");
    ready(&cluster, "tx", 1).await;
    (cluster, TopicPartition::new("tx", 0))
}

fn leader(cluster: &Cluster, tp: &TopicPartition) -> BrokerId {
    cluster.snapshot().partition(tp).and_then(|p| p.leader).expect("leader")
}

#[tokio::test(start_paused = true)]
async fn committed_records_are_read_once_in_order_and_aborted_ones_never() {
    let dir = scratch_dir();
    let (cluster, tp) = start(dir.path(), |c| c).await;
    let mut events = cluster.events();
    let mut p = TxnProducer::init(&cluster, "orders").await;
    assert_eq!(p.epoch, 0);
    // Only the id's coordinator serves it.
    let coordinator = cluster.find_txn_coordinator("orders").await.expect("coordinator");
    let other = cluster
        .snapshot()
        .brokers
        .iter()
        .map(|b| b.id)
        .find(|b| *b != coordinator)
        .expect("another broker");
    let describe_elsewhere = TxnRequest::Describe {
        transactional_id: "orders".into(),
    };
    match cluster.txn_request_on(other, describe_elsewhere, PATIENCE).await {
        Ok(TxnResponse::Describe(Err(e))) => assert_eq!(e, ErrorCode::NotCoordinator),
        other => panic!("Describe on a broker that does not coordinate: {other:?}"),
    }
    // EndTxn with no transaction open.
    assert_eq!(p.end(true).await, ErrorCode::InvalidTxnState);

    assert_eq!(p.add_one(&tp).await, Ok(vec![(tp.clone(), ErrorCode::None)]));
    let open = describe(&cluster, "orders").await.expect("describe");
    assert_eq!(open.state, TxnState::Ongoing);
    assert_eq!(open.partitions, vec![tp.clone()]);
    assert!(open.start_time_ms > 0);
    p.send(&tp, &["a1", "a2"]).await.expect("a");
    assert_eq!(p.end(true).await, ErrorCode::None);
    let done = wait_state(&cluster, "orders", TxnState::CompleteCommit).await;
    assert!(done.partitions.is_empty());
    // Retries of the same EndTxn succeed; the opposite outcome is refused.
    assert_eq!(p.end(true).await, ErrorCode::None);
    assert_eq!(p.end(false).await, ErrorCode::InvalidTxnState);

    p.add_one(&tp).await.expect("add");
    p.send(&tp, &["b1", "b2"]).await.expect("b");
    assert_eq!(p.end(false).await, ErrorCode::None);
    wait_state(&cluster, "orders", TxnState::CompleteAbort).await;
    assert_eq!(p.end(false).await, ErrorCode::None);
    assert_eq!(p.end(true).await, ErrorCode::InvalidTxnState);

    p.add_one(&tp).await.expect("add");
    p.send(&tp, &["c1"]).await.expect("c");
    assert_eq!(p.end(true).await, ErrorCode::None);
    wait_state(&cluster, "orders", TxnState::CompleteCommit).await;

    assert_eq!(consume_committed(&cluster, &tp, 3).await, ["a1", "a2", "c1"]);
    // A marker written again (a new coordinator completing what the old one had half
    // done) is harmless: it covers no records.
    let state_tp = TopicPartition::new(TXN_STATE_TOPIC, partition_for_txn("orders", 3));
    let coordinator_epoch = cluster
        .snapshot()
        .partition(&state_tp)
        .map(|p| p.leader_epoch)
        .expect("state partition");
    for commit in [true, false] {
        cluster
            .write_txn_marker(&tp, p.pid, p.epoch, coordinator_epoch, commit)
            .await
            .expect("marker again");
    }
    assert_eq!(consume_committed(&cluster, &tp, 3).await, ["a1", "a2", "c1"]);
    let ended: Vec<(bool, String)> = drain(&mut events)
        .into_iter()
        .filter_map(|e| match e {
            EventKind::TxnCommitted { transactional_id, .. } => Some((true, transactional_id)),
            EventKind::TxnAborted { transactional_id, .. } => Some((false, transactional_id)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ended,
        [
            (true, "orders".to_string()),
            (false, "orders".to_string()),
            (true, "orders".to_string())
        ]
    );
    let listed = cluster.list_transactions(&[], &[]).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (
            listed[0].transactional_id.as_str(),
            listed[0].producer_id,
            listed[0].state
        ),
        ("orders", p.pid, TxnState::CompleteCommit)
    );
    assert!(cluster.list_transactions(&[TxnState::Ongoing], &[]).await.is_empty());
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_second_instance_fences_the_zombie_and_aborts_its_transaction() {
    let dir = scratch_dir();
    let (cluster, tp) = start(dir.path(), |c| c).await;
    // Bad requests first.
    assert_eq!(
        init_with(&cluster, "app", 900_001, (-1, -1)).await,
        Err(ErrorCode::InvalidTransactionTimeout)
    );
    assert_eq!(
        init_with(&cluster, "app", 0, (-1, -1)).await,
        Err(ErrorCode::InvalidTransactionTimeout)
    );

    let mut zombie = TxnProducer::init(&cluster, "app").await;
    let absent = TopicPartition::new("absent", 0);
    assert_eq!(
        zombie.add(&[absent.clone(), tp.clone()]).await,
        Ok(vec![
            (absent, ErrorCode::UnknownTopicOrPartition),
            (tp.clone(), ErrorCode::OperationNotAttempted)
        ])
    );
    zombie.add_one(&tp).await.expect("add");
    zombie.send(&tp, &["z1"]).await.expect("z1");

    // The new instance: the zombie's open transaction is aborted with a bumped epoch, then
    // the new instance gets the next one.
    let mut events = cluster.events();
    let mut fresh = TxnProducer::init(&cluster, "app").await;
    assert_eq!(fresh.pid, zombie.pid);
    assert!(drain(&mut events).iter().any(|e| matches!(
        e,
        EventKind::ProducerFenced { transactional_id, epoch, .. } if transactional_id == "app" && *epoch == zombie.epoch + 1
    )));
    assert_eq!(fresh.epoch, zombie.epoch + 2);

    assert_eq!(zombie.add_one(&tp).await, Err(ErrorCode::ProducerFenced));
    assert_eq!(zombie.end(true).await, ErrorCode::ProducerFenced);
    assert_eq!(zombie.send(&tp, &["z2"]).await, Err(ErrorCode::InvalidProducerEpoch));
    // KIP-360: a producer id the id does not hold is fenced too.
    assert_eq!(
        init_with(&cluster, "app", TIMEOUT_MS, (zombie.pid + 1000, 0)).await,
        Err(ErrorCode::ProducerFenced)
    );
    // A wrong producer id on AddPartitions.
    let mut stranger = TxnProducer::init(&cluster, "other").await;
    stranger.id = "app".into();
    stranger.pid = zombie.pid + 1000;
    assert_eq!(stranger.add_one(&tp).await, Err(ErrorCode::InvalidProducerIdMapping));

    fresh.add_one(&tp).await.expect("add");
    fresh.send(&tp, &["f1"]).await.expect("f1");
    assert_eq!(fresh.end(true).await, ErrorCode::None);
    wait_state(&cluster, "app", TxnState::CompleteCommit).await;
    assert_eq!(consume_committed(&cluster, &tp, 1).await, ["f1"]);
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_transaction_open_past_its_timeout_is_aborted_and_its_producer_fenced() {
    let dir = scratch_dir();
    let (cluster, tp) = start(dir.path(), |c| c).await;
    let mut events = cluster.events();
    let mut p = TxnProducer::init_timeout(&cluster, "slow", 2_000).await;
    p.add_one(&tp).await.expect("add");
    p.send(&tp, &["late1", "late2"]).await.expect("send");
    let aborted = wait_state(&cluster, "slow", TxnState::CompleteAbort).await;
    assert_eq!(aborted.producer_epoch, p.epoch + 1, "the abort bumps the epoch");
    assert_eq!(p.end(true).await, ErrorCode::ProducerFenced);
    assert_eq!(p.send(&tp, &["late3"]).await, Err(ErrorCode::InvalidProducerEpoch));
    assert!(consume_committed(&cluster, &tp, 0).await.is_empty());
    // The last stable offset moved past the aborted transaction.
    let snapshot = cluster.snapshot();
    let partition = snapshot.partition(&tp).expect("partition");
    assert_eq!(partition.last_stable_offset, partition.high_watermark);
    assert!(drain(&mut events).iter().any(
        |e| matches!(e, EventKind::TxnTimedOut { transactional_id, producer_id, partitions: 1 } if transactional_id == "slow" && *producer_id == p.pid)
    ));
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_idle_transactional_id_expires() {
    let dir = scratch_dir();
    let (cluster, _) = start(dir.path(), |c| ClusterConfig {
        transactional_id_expiration_ms: 60_000,
        ..c
    })
    .await;
    let p = TxnProducer::init(&cluster, "brief").await;
    assert_eq!(describe(&cluster, "brief").await.map(|d| d.producer_id), Ok(p.pid));
    tokio::time::sleep(Duration::from_secs(90)).await;
    assert_eq!(
        describe(&cluster, "brief").await,
        Err(ErrorCode::TransactionalIdNotFound)
    );
    cluster.shutdown().await;
}

/// A transactional id whose coordinator is not `avoid`.
async fn id_not_coordinated_by(cluster: &Cluster, avoid: BrokerId) -> (String, BrokerId) {
    for i in 0..50 {
        let id = format!("app-{i}");
        let coordinator = loop {
            match cluster.find_txn_coordinator(&id).await {
                Ok(c) => break c,
                Err(_) => pause().await,
            }
        };
        if coordinator != avoid {
            return (id, coordinator);
        }
    }
    panic!("every id is coordinated by {avoid}");
}

/// Begins a transaction of `values` on `tp` and asks to commit it while the coordinator
/// cannot reach the partition's leader: the transaction stays PrepareCommit.
async fn commit_with_markers_blocked(cluster: &Cluster, tp: &TopicPartition) -> (TxnProducer, BrokerId, BrokerId) {
    let data_leader = leader(cluster, tp);
    let (id, coordinator) = id_not_coordinated_by(cluster, data_leader).await;
    let mut p = TxnProducer::init(cluster, &id).await;
    p.add_one(tp).await.expect("add");
    p.send(tp, &["x1", "x2"]).await.expect("send");
    cluster.set_link_one_way(
        NodeId::Broker(coordinator),
        NodeId::Broker(data_leader),
        Some(LinkFault::Cut),
    );
    assert_eq!(p.end(true).await, ErrorCode::None);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let prepared = describe(cluster, &id).await.expect("describe");
    assert_eq!(prepared.state, TxnState::PrepareCommit);
    assert_eq!(prepared.coordinator, coordinator);
    // While the markers are in flight: the same EndTxn is CONCURRENT_TRANSACTIONS, the
    // opposite one INVALID_TXN_STATE.
    assert_eq!(p.end(true).await, ErrorCode::ConcurrentTransactions);
    assert_eq!(p.end(false).await, ErrorCode::InvalidTxnState);
    assert!(
        consume_committed(cluster, tp, 0).await.is_empty(),
        "nothing committed before the markers"
    );
    (p, coordinator, data_leader)
}

#[tokio::test(start_paused = true)]
async fn a_new_coordinator_completes_a_prepared_commit() {
    let dir = scratch_dir();
    let (cluster, tp) = start(dir.path(), |c| c).await;
    let (p, coordinator, _) = commit_with_markers_blocked(&cluster, &tp).await;
    cluster.kill(coordinator).expect("kill");
    cluster.heal_links();
    let done = wait_state(&cluster, &p.id, TxnState::CompleteCommit).await;
    assert_ne!(done.coordinator, coordinator, "completed by the new coordinator");
    assert_eq!(done.producer_epoch, p.epoch);
    assert_eq!(consume_committed(&cluster, &tp, 2).await, ["x1", "x2"]);
    // The producer carries on with the new coordinator.
    let mut p = p;
    p.add_one(&tp).await.expect("add");
    p.send(&tp, &["x3"]).await.expect("send");
    assert_eq!(p.end(true).await, ErrorCode::None);
    wait_state(&cluster, &p.id, TxnState::CompleteCommit).await;
    assert_eq!(consume_committed(&cluster, &tp, 3).await, ["x1", "x2", "x3"]);
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn markers_reach_the_new_leader_when_the_partition_leader_dies() {
    let dir = scratch_dir();
    let (cluster, tp) = start(dir.path(), |c| c).await;
    let (p, coordinator, data_leader) = commit_with_markers_blocked(&cluster, &tp).await;
    cluster.kill(data_leader).expect("kill");
    let done = wait_state(&cluster, &p.id, TxnState::CompleteCommit).await;
    assert_eq!(done.coordinator, coordinator);
    assert_ne!(leader(&cluster, &tp), data_leader);
    assert_eq!(consume_committed(&cluster, &tp, 2).await, ["x1", "x2"]);
    cluster.heal_links();
    cluster.shutdown().await;
}

async fn add_offsets(p: &TxnProducer, group: &str) -> ErrorCode {
    for _ in 0..300 {
        let req = TxnRequest::AddOffsets {
            transactional_id: p.id.clone(),
            producer_id: p.pid,
            producer_epoch: p.epoch,
            group_id: group.to_string(),
        };
        match request(&p.cluster, &p.id, req).await {
            Ok(TxnResponse::AddOffsets(e)) | Err(e) if retriable(e) => pause().await,
            Ok(TxnResponse::AddOffsets(e)) | Err(e) => return e,
            Ok(other) => panic!("unexpected answer {other:?}"),
        }
    }
    panic!("AddOffsetsToTxn never answered");
}

async fn txn_commit_offset(p: &TxnProducer, group: &str, tp: &TopicPartition, offset: i64) -> ErrorCode {
    for _ in 0..300 {
        let req = GroupRequest::TxnOffsetCommit {
            group_id: group.to_string(),
            transactional_id: p.id.clone(),
            producer_id: p.pid,
            producer_epoch: p.epoch,
            generation: -1,
            member_id: String::new(),
            group_instance_id: None,
            offsets: vec![(tp.clone(), offset)],
        };
        match p.cluster.group_request(group, req, Duration::from_secs(10)).await {
            Ok(GroupResponse::TxnOffsetCommit(e)) | Err(e) if e.is_retriable() => pause().await,
            Ok(GroupResponse::TxnOffsetCommit(e)) | Err(e) => return e,
            Ok(other) => panic!("unexpected answer {other:?}"),
        }
    }
    panic!("TxnOffsetCommit never answered");
}

async fn committed_offset(cluster: &Cluster, group: &str, tp: &TopicPartition) -> i64 {
    for _ in 0..300 {
        let req = GroupRequest::OffsetFetch {
            group_id: group.to_string(),
            partitions: Some(vec![tp.clone()]),
            require_stable: false,
        };
        match cluster.group_request(group, req, Duration::from_secs(10)).await {
            Ok(GroupResponse::OffsetFetch(Ok(offsets))) => {
                return match offsets.iter().find(|(t, _)| t == tp) {
                    Some((_, Ok(o))) => *o,
                    Some((_, Err(e))) => panic!("OffsetFetch of {tp}: {e}"),
                    None => -1,
                };
            }
            Ok(GroupResponse::OffsetFetch(Err(e))) | Err(e) if e.is_retriable() => pause().await,
            other => panic!("OffsetFetch: {other:?}"),
        }
    }
    panic!("OffsetFetch never answered");
}

fn group_coordinator(cluster: &Cluster, group: &str) -> BrokerId {
    cluster.find_coordinator(group).expect("group coordinator")
}

#[tokio::test(start_paused = true)]
async fn transactional_offsets_show_only_after_commit_and_survive_coordinator_failover() {
    let dir = scratch_dir();
    let (cluster, tp) = start(dir.path(), |c| c).await;
    coordinators_ready(&cluster).await;
    let group = "readers";
    let mut p = TxnProducer::init(&cluster, "copier").await;

    assert_eq!(add_offsets(&p, group).await, ErrorCode::None);
    assert_eq!(txn_commit_offset(&p, group, &tp, 5).await, ErrorCode::None);
    assert_eq!(
        committed_offset(&cluster, group, &tp).await,
        -1,
        "pending until the commit"
    );
    assert_eq!(p.end(true).await, ErrorCode::None);
    wait_state(&cluster, "copier", TxnState::CompleteCommit).await;
    assert_eq!(committed_offset(&cluster, group, &tp).await, 5);

    assert_eq!(add_offsets(&p, group).await, ErrorCode::None);
    assert_eq!(txn_commit_offset(&p, group, &tp, 9).await, ErrorCode::None);
    assert_eq!(p.end(false).await, ErrorCode::None);
    wait_state(&cluster, "copier", TxnState::CompleteAbort).await;
    assert_eq!(
        committed_offset(&cluster, group, &tp).await,
        5,
        "an aborted commit is dropped"
    );

    // Pending across a failover of the group's coordinator: the new one replays the
    // transactional records as pending, and exposes them at the marker.
    assert_eq!(add_offsets(&p, group).await, ErrorCode::None);
    assert_eq!(txn_commit_offset(&p, group, &tp, 12).await, ErrorCode::None);
    let first = group_coordinator(&cluster, group);
    cluster.kill(first).expect("kill");
    assert_eq!(committed_offset(&cluster, group, &tp).await, 5);
    assert_ne!(group_coordinator(&cluster, group), first);
    p.seq.clear();
    assert_eq!(p.end(true).await, ErrorCode::None);
    wait_state(&cluster, "copier", TxnState::CompleteCommit).await;
    assert_eq!(committed_offset(&cluster, group, &tp).await, 12);

    // And a coordinator that loads the partition with the marker in it sees them committed.
    cluster.start_broker(first).expect("restart");
    ready(
        &cluster,
        "__consumer_offsets",
        cluster.config().offsets_topic_partitions,
    )
    .await;
    let second = group_coordinator(&cluster, group);
    cluster.kill(second).expect("kill");
    assert_eq!(committed_offset(&cluster, group, &tp).await, 12);
    cluster.shutdown().await;
}
