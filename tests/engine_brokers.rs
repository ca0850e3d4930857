//! Brokers joining and leaving the running cluster: an added broker registers, is unfenced
//! and takes replicas of new topics; a decommission under acks=all load moves every replica
//! away (full replication factor on the others, nothing lost or duplicated), then the broker
//! leaves the metadata; a decommission the others cannot absorb is refused; a restart on the
//! same data directory keeps both changes.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::engine::{Acked, config, read_committed, ready};
use common::scratch_dir;
use kdeck::engine::{
    Acks, BrokerId, Cluster, ClusterConfig, ClusterSnapshot, EventKind, Membership, TopicConfig, TopicPartition,
};

fn brokers(dir: &std::path::Path, n: i32) -> ClusterConfig {
    ClusterConfig {
        brokers: n,
        ..config(dir)
    }
}

fn ids(snapshot: &ClusterSnapshot) -> Vec<BrokerId> {
    snapshot.brokers.iter().map(|b| b.id).collect()
}

/// Every partition has its replication factor on brokers other than `gone`, all in sync, with
/// a leader, and no move in progress.
fn fully_replicated_without(snapshot: &ClusterSnapshot, gone: BrokerId, rf_of: impl Fn(&str) -> usize) -> bool {
    snapshot.partitions.iter().all(|p| {
        let on: Vec<BrokerId> = p.replicas.iter().map(|r| r.broker).collect();
        on.len() == rf_of(&p.tp.topic)
            && !on.contains(&gone)
            && p.isr.len() == on.len()
            && p.leader.is_some()
            && p.adding.is_empty()
            && p.removing.is_empty()
    })
}

/// Produces acks=all records tagged 0, 1, 2... to `tp` until told to stop, retrying as a
/// client would; returns what was acknowledged.
fn keep_producing(cluster: &Cluster, tp: &TopicPartition) -> (Arc<AtomicBool>, tokio::task::JoinHandle<Acked>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (cluster, tp, flag) = (cluster.clone(), tp.clone(), Arc::clone(&stop));
    let task = tokio::spawn(async move {
        let mut acked = Acked::default();
        let mut n = 0;
        while !flag.load(Ordering::SeqCst) {
            acked
                .produce(&cluster, &tp, n, Acks::All, Duration::from_secs(60))
                .await
                .expect("acks=all produce keeps succeeding through the decommission");
            n += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        acked
    });
    (stop, task)
}

/// Every acknowledged record is in the committed log exactly once, and in the order the
/// producer sent them (its records' offsets grow with their tags).
async fn read_back_once_in_order(cluster: &Cluster, tp: &TopicPartition, acked: &Acked) {
    acked.verify(cluster, tp).await;
    let committed = read_committed(cluster, tp).await;
    let acked_values: Vec<&Vec<u8>> = acked.values.values().collect();
    let in_log: Vec<&Vec<u8>> = committed.values().filter(|v| acked_values.contains(v)).collect();
    assert_eq!(
        in_log, acked_values,
        "{tp}: each acknowledged record once, in the order acknowledged"
    );
}

#[tokio::test(start_paused = true)]
async fn an_added_broker_registers_unfenced_and_new_topics_place_replicas_on_it() {
    let dir = scratch_dir();
    let cluster = Cluster::start(brokers(dir.path(), 3)).await.expect("start");
    let before = cluster.snapshot();
    let mut events = cluster.events();

    let id = cluster.add_broker().expect("a broker is added");
    assert_eq!(id, 3, "one past the highest id the cluster knows");
    let joining = cluster.snapshot();
    let new = joining.broker(3).expect("listed at once");
    assert_eq!(new.membership, Membership::Joining, "launched, not yet registered");

    let joined = cluster
        .wait_for(Duration::from_secs(20), |s| {
            s.broker(3)
                .is_some_and(|b| !b.fenced && b.broker_epoch >= 0 && b.membership == Membership::Member)
        })
        .await
        .expect("the new broker registers and is unfenced");
    assert_eq!(ids(&joined), vec![0, 1, 2, 3]);
    assert!(cluster.metadata().is_live(3), "the controller has it, live");
    assert_eq!(
        joined.broker(3).map(|b| b.replicas),
        Some(0),
        "it takes no partition by itself (as in Kafka)"
    );
    assert_eq!(joined.partitions.len(), before.partitions.len());
    let mut saw_joined = false;
    while let Ok(e) = events.try_recv() {
        saw_joined |= e.kind == EventKind::BrokerJoined { broker: 3 };
    }
    assert!(saw_joined, "the timeline says it joined");

    cluster
        .create_topic("fresh", TopicConfig::new(8, 3))
        .await
        .expect("create a topic");
    ready(&cluster, "fresh", 8).await;
    let placed = cluster.snapshot();
    let on_new = placed
        .partitions
        .iter()
        .filter(|p| p.tp.topic == "fresh" && p.replicas.iter().any(|r| r.broker == 3))
        .count();
    assert!(on_new > 0, "a new topic places replicas on the new broker");
    assert!(
        dir.path().join("broker-3").is_dir(),
        "its replicas live in its own log directory in the data directory"
    );
    assert_eq!(cluster.add_broker().expect("another"), 4, "ids keep growing");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn decommission_under_acks_all_load_leaves_full_replication_on_the_others_and_loses_nothing() {
    let dir = scratch_dir();
    let cluster = Cluster::start(brokers(dir.path(), 4)).await.expect("start");
    cluster
        .create_topic("orders", TopicConfig::new(4, 3).with_min_insync_replicas(2))
        .await
        .expect("create");
    ready(&cluster, "orders", 4).await;
    let mut events = cluster.events();
    let tps: Vec<TopicPartition> = (0..4).map(|p| TopicPartition::new("orders", p)).collect();
    let producers: Vec<_> = tps.iter().map(|tp| keep_producing(&cluster, tp)).collect();
    tokio::time::sleep(Duration::from_secs(2)).await;

    let held = cluster.snapshot().broker(1).map(|b| b.replicas).expect("broker 1");
    assert!(held > 0, "broker 1 holds replicas to move");
    let moving = cluster.decommission(1).await.expect("the decommission starts");
    assert_eq!(moving, held, "it moves every replica broker 1 holds");
    let draining = cluster.snapshot();
    assert!(
        matches!(
            draining.broker(1).map(|b| b.membership),
            Some(Membership::Draining { total, .. }) if total == held
        ),
        "the broker says it is draining, with its progress: {:?}",
        draining.broker(1)
    );
    assert!(
        cluster.decommission(1).await.is_err(),
        "a second decommission of the same broker is refused"
    );

    let done = cluster
        .wait_for(Duration::from_secs(120), |s| {
            s.broker(1).is_none() && fully_replicated_without(s, 1, |_| 3)
        })
        .await;
    assert!(done.is_ok(), "the drain never finished: {:?}", cluster.snapshot());
    let after = cluster.metadata();
    assert!(!after.brokers.contains_key(&1), "the controller forgot broker 1");
    assert!(after.partitions().all(|(_, p)| !p.replicas.contains(&1)));
    assert_eq!(ids(&cluster.snapshot()), vec![0, 2, 3]);

    // The producers go on a while on the remaining brokers.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for ((stop, task), tp) in producers.into_iter().zip(&tps) {
        stop.store(true, Ordering::SeqCst);
        let acked = task.await.expect("producer task");
        assert!(acked.values.len() > 10, "{tp}: the producer kept going");
        read_back_once_in_order(&cluster, tp, &acked).await;
    }
    let mut said = Vec::new();
    while let Ok(e) = events.try_recv() {
        match e.kind {
            EventKind::BrokerDraining { broker: 1, replicas } => said.push(format!("draining {replicas}")),
            EventKind::BrokerDecommissioned { broker: 1 } => said.push("decommissioned".into()),
            _ => {}
        }
    }
    assert_eq!(said, vec![format!("draining {held}"), "decommissioned".to_string()]);
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_decommission_the_other_brokers_cannot_absorb_is_refused() {
    let dir = scratch_dir();
    // The offsets topic on one replica: the user's topic is what cannot move.
    let config = ClusterConfig {
        offsets_topic_replication_factor: 1,
        ..brokers(dir.path(), 3)
    };
    let cluster = Cluster::start(config).await.expect("start");
    cluster
        .create_topic("wide", TopicConfig::new(2, 3))
        .await
        .expect("create");
    ready(&cluster, "wide", 2).await;
    let refused = cluster.decommission(2).await.expect_err("RF 3 on 2 brokers");
    let said = refused.to_string();
    assert!(said.contains("topic wide"), "it says which topic: {said}");
    assert!(said.contains("replication factor 3"), "{said}");
    assert!(
        cluster.metadata().partitions().all(|(_, p)| !p.reassigning()),
        "nothing started moving"
    );
    assert!(cluster.decommission(7).await.is_err(), "no broker 7");
    cluster.shutdown().await;

    let alone = scratch_dir();
    let single = Cluster::start(brokers(alone.path(), 1)).await.expect("start");
    let last = single.decommission(0).await.expect_err("the last broker stays");
    assert!(last.to_string().contains("last broker"), "{last}");
    single.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_restart_on_the_same_data_dir_keeps_added_brokers_and_leaves_decommissioned_ones_out() {
    let dir = scratch_dir();
    let cluster = Cluster::start(brokers(dir.path(), 2)).await.expect("start");
    assert_eq!(cluster.add_broker().expect("added"), 2);
    cluster
        .wait_for(Duration::from_secs(20), |s| s.broker(2).is_some_and(|b| !b.fenced))
        .await
        .expect("broker 2 unfenced");
    cluster.decommission(0).await.expect("decommission broker 0");
    cluster
        .wait_for(Duration::from_secs(120), |s| s.broker(0).is_none())
        .await
        .expect("broker 0 left");
    cluster.shutdown().await;

    let again = Cluster::start(brokers(dir.path(), 2)).await.expect("restart");
    let snapshot = again.snapshot();
    assert_eq!(
        ids(&snapshot),
        vec![1, 2],
        "the added broker comes back; the decommissioned one does not"
    );
    assert!(snapshot.brokers.iter().all(|b| !b.fenced));
    assert!(!again.metadata().brokers.contains_key(&0));
    assert_eq!(
        again.add_broker().expect("added"),
        3,
        "a decommissioned id is not reused"
    );
    again.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_draining_broker_that_crashes_still_leaves_once_its_replicas_moved() {
    let dir = scratch_dir();
    let cluster = Cluster::start(brokers(dir.path(), 4)).await.expect("start");
    cluster
        .create_topic("orders", TopicConfig::new(4, 3).with_min_insync_replicas(2))
        .await
        .expect("create");
    ready(&cluster, "orders", 4).await;
    cluster.decommission(3).await.expect("decommission starts");
    cluster.kill(3).expect("the draining broker crashes");
    let done = cluster
        .wait_for(Duration::from_secs(120), |s| {
            s.broker(3).is_none() && fully_replicated_without(s, 3, |_| 3)
        })
        .await;
    assert!(
        done.is_ok(),
        "the moves finish from the other in-sync replicas and the broker leaves: {:?}",
        cluster.snapshot()
    );
    cluster.shutdown().await;
}
