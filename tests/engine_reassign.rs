//! Partition reassignment (KIP-455) on the embedded cluster: replicas move under acks=all
//! load without losing or duplicating a record, through kills of the leader and of a joining
//! replica, and a cancel puts the partition back where it was.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::engine::{Acked, config, ready};
use common::scratch_dir;
use kdeck::engine::{
    Acks, BrokerId, Cluster, ClusterConfig, ElectionReason, ErrorCode, EventKind, TopicConfig, TopicPartition,
};

fn four_brokers(dir: &std::path::Path) -> ClusterConfig {
    ClusterConfig {
        brokers: 4,
        ..config(dir)
    }
}

/// A topic `name` with one partition on `replicas` (leader first), everything in sync.
async fn topic_on(cluster: &Cluster, name: &str, replicas: &[BrokerId]) -> TopicPartition {
    cluster
        .create_topic(name, TopicConfig::new(1, 3).with_min_insync_replicas(2))
        .await
        .expect("create");
    ready(cluster, name, 1).await;
    let tp = TopicPartition::new(name, 0);
    let placed = cluster
        .alter_reassignments(&[(tp.clone(), Some(replicas.to_vec()))])
        .await
        .expect("controller");
    assert_eq!(placed[0].1, None, "placing {tp} on {replicas:?}");
    settled(cluster, &tp, replicas).await;
    cluster
        .elect_preferred_leaders(|t| *t == tp)
        .await
        .expect("elect the first replica");
    cluster
        .wait_for(Duration::from_secs(20), |s| {
            s.partition(&tp).is_some_and(|p| p.leader == Some(replicas[0]))
        })
        .await
        .expect("the first replica leads");
    tp
}

/// Waits until `tp`'s reassignment is over, on `replicas`, all of them in sync.
async fn settled(cluster: &Cluster, tp: &TopicPartition, replicas: &[BrokerId]) {
    let done = cluster
        .wait_for(Duration::from_secs(60), |s| {
            s.partition(tp).is_some_and(|p| {
                let on: Vec<BrokerId> = p.replicas.iter().map(|r| r.broker).collect();
                on == replicas && p.isr.len() == replicas.len() && p.leader.is_some()
            })
        })
        .await;
    assert!(
        done.is_ok(),
        "{tp} never settled on {replicas:?}: {:?}",
        cluster.metadata().partition(tp)
    );
    assert!(cluster.reassignments(|t| t == tp).is_empty(), "no reassignment listed");
}

/// Produces with acks=all, one record every 20 ms, until told to stop; returns what was acked.
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
                .expect("acks=all produce keeps succeeding through the move");
            n += 1;
            // A steady stream on the paused clock: time moves only while every task waits.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        acked
    });
    (stop, task)
}

async fn stop_producing(stop: Arc<AtomicBool>, task: tokio::task::JoinHandle<Acked>) -> Acked {
    stop.store(true, Ordering::SeqCst);
    task.await.expect("producer task")
}

fn replica_dir(dir: &std::path::Path, broker: BrokerId, tp: &TopicPartition) -> std::path::PathBuf {
    dir.join(format!("broker-{broker}/{}-{}", tp.topic, tp.partition))
}

#[tokio::test(start_paused = true)]
async fn moving_a_follower_under_acks_all_load_loses_and_duplicates_nothing() {
    let dir = scratch_dir();
    let cluster = Cluster::start(four_brokers(dir.path())).await.expect("start");
    let tp = topic_on(&cluster, "orders", &[0, 1, 2]).await;
    let (stop, task) = keep_producing(&cluster, &tp);
    tokio::time::sleep(Duration::from_secs(2)).await;

    let results = cluster
        .alter_reassignments(&[(tp.clone(), Some(vec![0, 1, 3]))])
        .await
        .expect("controller");
    assert_eq!(results, vec![(tp.clone(), None)]);
    let moving = cluster.reassignments(|t| *t == tp);
    assert_eq!(moving.len(), 1, "listed while it runs");
    assert_eq!(moving[0].1.adding, vec![3]);
    assert_eq!(moving[0].1.removing, vec![2]);
    assert_eq!(
        moving[0].1.replicas,
        vec![0, 1, 3, 2],
        "target first, then the leaving replica"
    );

    settled(&cluster, &tp, &[0, 1, 3]).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let acked = stop_producing(stop, task).await;
    assert!(
        acked.values.len() > 10,
        "the producer kept going: {}",
        acked.values.len()
    );
    acked.verify(&cluster, &tp).await;
    let p = cluster.metadata().partition(&tp).cloned().expect("partition");
    assert_eq!(p.leader, 0, "the leader stayed: it is in the target");
    let gone = cluster
        .wait_for(Duration::from_secs(10), |_| !replica_dir(dir.path(), 2, &tp).exists())
        .await;
    assert!(gone.is_ok(), "the removed replica's log is deleted");
    assert!(replica_dir(dir.path(), 3, &tp).exists(), "the new replica has a log");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn moving_the_leader_away_hands_leadership_to_a_target_replica_with_a_new_epoch() {
    let dir = scratch_dir();
    let cluster = Cluster::start(four_brokers(dir.path())).await.expect("start");
    let tp = topic_on(&cluster, "payments", &[0, 1, 2]).await;
    let epoch_before = cluster.metadata().partition(&tp).expect("partition").leader_epoch;
    let mut events = cluster.events();
    let (stop, task) = keep_producing(&cluster, &tp);
    tokio::time::sleep(Duration::from_secs(1)).await;

    cluster
        .alter_reassignments(&[(tp.clone(), Some(vec![3, 1, 2]))])
        .await
        .expect("controller");
    settled(&cluster, &tp, &[3, 1, 2]).await;
    let acked = stop_producing(stop, task).await;
    acked.verify(&cluster, &tp).await;

    let p = cluster.metadata().partition(&tp).cloned().expect("partition");
    assert!(
        p.leader == 3 || p.leader == 1 || p.leader == 2,
        "leader {} is in the target",
        p.leader
    );
    assert!(p.leader_epoch > epoch_before, "the move fenced the old leader");
    let mut started = false;
    let mut completed = false;
    let mut elected = false;
    while let Ok(event) = events.try_recv() {
        match event.kind {
            EventKind::ReassignmentStarted { tp: t, from, to } if t == tp => {
                assert_eq!((from, to), (vec![0, 1, 2], vec![3, 1, 2]));
                started = true;
            }
            EventKind::ReassignmentCompleted { tp: t, removed, .. } if t == tp => {
                assert_eq!(removed, vec![0]);
                completed = true;
            }
            EventKind::LeaderElected {
                tp: t,
                old: Some(0),
                reason,
                ..
            } if t == tp => {
                assert_eq!(reason, ElectionReason::Reassignment);
                elected = true;
            }
            _ => {}
        }
    }
    assert!(
        started && completed && elected,
        "started {started} completed {completed} elected {elected}"
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_move_survives_the_leader_being_killed_midway() {
    let dir = scratch_dir();
    let cluster = Cluster::start(four_brokers(dir.path())).await.expect("start");
    let tp = topic_on(&cluster, "events", &[0, 1, 2]).await;
    let (stop, task) = keep_producing(&cluster, &tp);
    tokio::time::sleep(Duration::from_secs(2)).await;

    cluster
        .alter_reassignments(&[(tp.clone(), Some(vec![1, 2, 3]))])
        .await
        .expect("controller");
    cluster.kill(0).expect("kill the leader mid-move");
    settled(&cluster, &tp, &[1, 2, 3]).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let acked = stop_producing(stop, task).await;
    acked.verify(&cluster, &tp).await;
    assert!(!acked.values.is_empty());
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_killed_adding_replica_stalls_the_move_and_cancel_restores_the_original_assignment() {
    let dir = scratch_dir();
    let cluster = Cluster::start(four_brokers(dir.path())).await.expect("start");
    let tp = topic_on(&cluster, "audit", &[0, 1, 2]).await;
    let (stop, task) = keep_producing(&cluster, &tp);
    tokio::time::sleep(Duration::from_secs(1)).await;

    cluster
        .alter_reassignments(&[(tp.clone(), Some(vec![0, 1, 3]))])
        .await
        .expect("controller");
    cluster.kill(3).expect("kill the adding replica");
    tokio::time::sleep(Duration::from_secs(30)).await;
    let moving = cluster.reassignments(|t| *t == tp);
    assert_eq!(moving.len(), 1, "the move waits for broker 3");
    assert!(!moving[0].1.isr.contains(&3), "a dead replica never joins the ISR");

    let results = cluster
        .alter_reassignments(&[(tp.clone(), None)])
        .await
        .expect("controller");
    assert_eq!(results, vec![(tp.clone(), None)]);
    settled(&cluster, &tp, &[0, 1, 2]).await;
    let p = cluster.metadata().partition(&tp).cloned().expect("partition");
    assert!(p.adding.is_empty() && p.removing.is_empty());
    let acked = stop_producing(stop, task).await;
    acked.verify(&cluster, &tp).await;

    let results = cluster
        .alter_reassignments(&[(tp.clone(), None)])
        .await
        .expect("controller");
    assert_eq!(
        results[0].1.as_ref().map(|(code, _)| *code),
        Some(ErrorCode::NoReassignmentInProgress)
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_replication_factor_grows_and_shrinks_by_reassignment() {
    let dir = scratch_dir();
    let cluster = Cluster::start(four_brokers(dir.path())).await.expect("start");
    let tp = topic_on(&cluster, "grow", &[0, 1, 2]).await;
    let mut acked = Acked::default();
    for n in 0..20 {
        acked
            .produce(&cluster, &tp, n, Acks::All, Duration::from_secs(30))
            .await
            .expect("produce");
    }
    cluster
        .alter_reassignments(&[(tp.clone(), Some(vec![0, 1, 2, 3]))])
        .await
        .expect("controller");
    settled(&cluster, &tp, &[0, 1, 2, 3]).await;
    assert_eq!(cluster.metadata().topics["grow"].config.replication_factor, 4);

    let results = cluster
        .alter_reassignments(&[(tp.clone(), Some(vec![1, 3]))])
        .await
        .expect("controller");
    assert_eq!(results[0].1, None);
    let p = cluster.metadata().partition(&tp).cloned().expect("partition");
    assert_eq!(p.replicas, vec![1, 3], "dropping replicas completes at once");
    assert!(!p.reassigning());
    assert_eq!(p.leader, 1, "the first in-sync target replica leads");
    settled(&cluster, &tp, &[1, 3]).await;
    assert_eq!(cluster.metadata().topics["grow"].config.replication_factor, 2);
    acked.verify(&cluster, &tp).await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn bad_targets_are_refused_per_partition_and_the_rest_proceed() {
    let dir = scratch_dir();
    let cluster = Cluster::start(four_brokers(dir.path())).await.expect("start");
    cluster
        .create_topic("many", TopicConfig::new(3, 2))
        .await
        .expect("create");
    ready(&cluster, "many", 3).await;
    let tp = |p| TopicPartition::new("many", p);
    let results = cluster
        .alter_reassignments(&[
            (tp(0), Some(vec![])),
            (tp(1), Some(vec![1, 1])),
            (tp(2), Some(vec![1, 9])),
            (TopicPartition::new("many", 7), Some(vec![0, 1])),
            (TopicPartition::new("nope", 0), Some(vec![0, 1])),
            (tp(2), Some(vec![3, 2])),
        ])
        .await
        .expect("controller");
    let codes: Vec<Option<ErrorCode>> = results.iter().map(|(_, e)| e.as_ref().map(|(c, _)| *c)).collect();
    assert_eq!(
        codes,
        vec![
            Some(ErrorCode::InvalidReplicaAssignment),
            Some(ErrorCode::InvalidReplicaAssignment),
            Some(ErrorCode::InvalidReplicaAssignment),
            Some(ErrorCode::UnknownTopicOrPartition),
            Some(ErrorCode::UnknownTopicOrPartition),
            None,
        ]
    );
    let message = &results[1].1.as_ref().expect("refused").1;
    assert!(message.contains("twice"), "{message}");
    let message = &results[2].1.as_ref().expect("refused").1;
    assert!(message.contains("broker 9 is not registered"), "{message}");
    settled(&cluster, &tp(2), &[3, 2]).await;
    cluster.shutdown().await;
}
