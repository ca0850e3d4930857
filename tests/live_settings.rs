//! Settings a trainer changes while the cluster runs: `min.insync.replicas`,
//! `unclean.leader.election.enable` and `auto.leader.rebalance.enable` take effect at once,
//! through the controller's metadata where Kafka keeps them there. On tokio's paused clock.

mod common;

use std::time::Duration;

use common::engine::{config, ready};
use common::{producer_batch, scratch_dir};
use kdeck::engine::{
    Acks, Cluster, ClusterEvent, ElectionReason, ErrorCode, EventKind, LiveSetting, TopicConfig, TopicPartition,
};

fn orders() -> TopicPartition {
    TopicPartition::new("orders", 0)
}

fn leader(cluster: &Cluster, tp: &TopicPartition) -> Option<i32> {
    cluster.snapshot().partition(tp).and_then(|p| p.leader)
}

fn drain(events: &mut tokio::sync::broadcast::Receiver<ClusterEvent>) -> Vec<EventKind> {
    std::iter::from_fn(|| events.try_recv().ok()).map(|e| e.kind).collect()
}

#[tokio::test(start_paused = true)]
async fn raising_min_insync_replicas_live_makes_an_acks_all_produce_with_isr_1_fail_not_enough_replicas() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("orders", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "orders", 1).await;
    let tp = orders();
    let leader = leader(&cluster, &tp).expect("leader");
    for follower in (0..3).filter(|b| *b != leader) {
        cluster.kill(follower).expect("kill");
    }
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partition(&tp).is_some_and(|p| p.isr == vec![leader])
        })
        .await
        .expect("the ISR shrinks to the leader");
    let produce = || cluster.produce(&tp, producer_batch(1, 0, 7, 8), Acks::All, Duration::from_secs(5));
    assert!(
        produce().await.is_ok(),
        "min.insync.replicas 1: the leader alone acknowledges"
    );

    let mut events = cluster.events();
    let refused = cluster.set_min_insync("orders", 4).await.expect_err("4 > RF 3");
    assert_eq!(
        refused.to_string(),
        "min.insync.replicas of orders must be between 1 and its replication factor 3, not 4"
    );
    cluster.set_min_insync("orders", 2).await.expect("set");
    // The new metadata reaches the leader in one hop on the in-process network.
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(produce().await, Err(ErrorCode::NotEnoughReplicas));
    assert_eq!(
        cluster.snapshot().partition(&tp).map(|p| p.min_insync_replicas),
        Some(2)
    );
    assert!(
        drain(&mut events).contains(&EventKind::SettingChanged(LiveSetting::MinInsync {
            topic: "orders".into(),
            value: 2
        }))
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn enabling_unclean_election_on_a_topic_whose_only_isr_member_died_elects_an_out_of_sync_replica() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("orders", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "orders", 1).await;
    let tp = orders();
    let old_leader = leader(&cluster, &tp).expect("leader");
    let followers: Vec<i32> = (0..3).filter(|b| *b != old_leader).collect();
    for f in &followers {
        cluster.kill(*f).expect("kill");
    }
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partition(&tp).is_some_and(|p| p.isr == vec![old_leader])
        })
        .await
        .expect("the ISR shrinks to the leader");
    cluster.kill(old_leader).expect("kill the last in-sync replica");
    let revived = followers[0];
    cluster.start_broker(revived).expect("restart an out-of-sync replica");
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.broker(revived).is_some_and(|b| !b.fenced) && s.broker(old_leader).is_some_and(|b| b.fenced)
        })
        .await
        .expect("the out-of-sync replica is back, the old leader fenced");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(leader(&cluster, &tp), None, "no clean election is possible");

    let mut events = cluster.events();
    cluster
        .set_unclean_election(Some("orders"), true)
        .await
        .expect("enable unclean election");
    assert_eq!(leader(&cluster, &tp), Some(revived));
    let timeline = drain(&mut events);
    assert!(
        timeline.contains(&EventKind::SettingChanged(LiveSetting::UncleanElection {
            topic: Some("orders".into()),
            enabled: true
        }))
    );
    assert!(timeline.iter().any(|e| matches!(
        e,
        EventKind::LeaderElected { tp: t, new, reason: ElectionReason::Unclean, .. } if *t == tp && *new == revived
    )));
    let topic = cluster
        .snapshot()
        .topics
        .into_iter()
        .find(|t| t.name == "orders")
        .expect("topic");
    assert!(topic.unclean_leader_election);
    assert!(!cluster.unclean_election_default(), "only the topic changed");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn with_auto_rebalance_disabled_leaders_stay_off_their_preferred_broker_past_the_imbalance_interval() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    let interval = Duration::from_millis(cluster.config().leader_imbalance_check_interval_ms);
    cluster
        .create_topic("orders", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "orders", 1).await;
    let tp = orders();
    let preferred = leader(&cluster, &tp).expect("leader");
    let mut events = cluster.events();
    cluster.set_auto_rebalance(false);
    assert!(!cluster.auto_rebalance());
    cluster.stop(preferred).await.expect("stop");
    cluster.start_broker(preferred).expect("start");
    ready(&cluster, "orders", 1).await;
    assert_ne!(leader(&cluster, &tp), Some(preferred), "leadership moved away");

    tokio::time::sleep(3 * interval).await;
    assert_ne!(
        leader(&cluster, &tp),
        Some(preferred),
        "no automatic rebalance while it is disabled"
    );

    cluster.set_auto_rebalance(true);
    cluster
        .wait_for(2 * interval, |s| {
            s.partition(&tp).and_then(|p| p.leader) == Some(preferred)
        })
        .await
        .expect("enabled again, the next imbalance check moves the leader back");
    let settings: Vec<_> = drain(&mut events)
        .into_iter()
        .filter(|e| matches!(e, EventKind::SettingChanged(_)))
        .collect();
    assert_eq!(
        settings,
        [
            EventKind::SettingChanged(LiveSetting::AutoRebalance(false)),
            EventKind::SettingChanged(LiveSetting::AutoRebalance(true)),
        ]
    );
    cluster.shutdown().await;
}
