//! The cluster under failures. Every scenario runs on tokio's paused clock and ends with the
//! same checks: every acks=all-acknowledged record is readable at its offset, and no offset
//! holds two records.

mod common;

use std::time::Duration;

use common::engine::{Acked, config};
use common::scratch_dir;
use kdeck::engine::{Acks, Cluster, ElectionReason, EventKind, TopicConfig, TopicPartition};

fn tp(topic: &str) -> TopicPartition {
    TopicPartition::new(topic, 0)
}

#[tokio::test(start_paused = true)]
async fn killing_the_leader_elects_a_new_one_with_a_higher_epoch_and_loses_nothing() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    let mut events = cluster.events();
    cluster
        .create_topic("orders", TopicConfig::new(1, 3).with_min_insync_replicas(2))
        .await
        .expect("create");
    let orders = tp("orders");
    let before = cluster
        .wait_for(Duration::from_secs(10), |s| {
            s.partition(&orders).is_some_and(|p| p.leader.is_some() && p.isr.len() == 3)
        })
        .await
        .expect("partition ready");
    let old = before.partition(&orders).expect("partition").clone();
    let old_leader = old.leader.expect("leader");

    let mut acked = Acked::default();
    for n in 0..50 {
        acked.produce(&cluster, &orders, n, Acks::All, Duration::from_secs(30)).await.expect("produce");
    }
    cluster.kill(old_leader).expect("kill");
    for n in 50..100 {
        acked.produce(&cluster, &orders, n, Acks::All, Duration::from_secs(30)).await.expect("produce after failover");
    }
    let after = cluster.snapshot();
    let p = after.partition(&orders).expect("partition");
    assert_ne!(p.leader, Some(old_leader));
    assert!(p.leader_epoch > old.leader_epoch);
    assert!(!p.isr.contains(&old_leader), "the dead leader left the ISR");
    acked.verify(&cluster, &orders).await;
    assert_eq!(acked.values.len(), 100);

    let mut saw_election = false;
    while let Ok(event) = events.try_recv() {
        if let EventKind::LeaderElected { tp, old, reason, .. } = event.kind
            && tp == orders
            && old == Some(old_leader)
        {
            assert_eq!(reason, ElectionReason::LeaderUnavailable);
            saw_election = true;
        }
    }
    assert!(saw_election, "the timeline shows the election");
    cluster.shutdown().await;
}
