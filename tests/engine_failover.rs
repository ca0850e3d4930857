//! The cluster under failures. Every scenario runs on tokio's paused clock and ends with the
//! same checks: every acks=all-acknowledged record is readable at its offset, and no offset
//! holds two records.

mod common;

use std::time::Duration;

use common::engine::{Acked, config, ready};
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
            s.partition(&orders)
                .is_some_and(|p| p.leader.is_some() && p.isr.len() == 3)
        })
        .await
        .expect("partition ready");
    let old = before.partition(&orders).expect("partition").clone();
    let old_leader = old.leader.expect("leader");

    let mut acked = Acked::default();
    for n in 0..50 {
        acked
            .produce(&cluster, &orders, n, Acks::All, Duration::from_secs(30))
            .await
            .expect("produce");
    }
    cluster.kill(old_leader).expect("kill");
    for n in 50..100 {
        acked
            .produce(&cluster, &orders, n, Acks::All, Duration::from_secs(30))
            .await
            .expect("produce after failover");
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

#[tokio::test(start_paused = true)]
async fn below_min_insync_replicas_writes_fail_and_committed_reads_continue() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("pay", TopicConfig::new(1, 3).with_min_insync_replicas(2))
        .await
        .expect("create");
    ready(&cluster, "pay", 1).await;
    let pay = tp("pay");
    let mut acked = Acked::default();
    for n in 0..20 {
        acked
            .produce(&cluster, &pay, n, Acks::All, Duration::from_secs(30))
            .await
            .expect("produce");
    }
    let leader = cluster
        .snapshot()
        .partition(&pay)
        .and_then(|p| p.leader)
        .expect("leader");
    let followers: Vec<i32> = (0..3).filter(|b| *b != leader).collect();
    let hw_before = cluster
        .snapshot()
        .partition(&pay)
        .and_then(|p| p.high_watermark)
        .expect("hw");
    cluster.kill(followers[0]).expect("kill");
    cluster.kill(followers[1]).expect("kill");
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partition(&pay).is_some_and(|p| p.isr == vec![leader])
        })
        .await
        .expect("ISR shrinks to the leader");
    let refused = cluster
        .produce(
            &pay,
            common::producer_batch(1, 0, 99, 8),
            Acks::All,
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(refused, Err(kdeck::engine::ErrorCode::NotEnoughReplicas));
    let hw_after = cluster
        .snapshot()
        .partition(&pay)
        .and_then(|p| p.high_watermark)
        .expect("hw");
    assert!(hw_after >= hw_before, "the high watermark never moves back");
    acked.verify(&cluster, &pay).await;

    cluster.start_broker(followers[0]).expect("restart");
    for n in 20..30 {
        acked
            .produce(&cluster, &pay, n, Acks::All, Duration::from_secs(60))
            .await
            .expect("writes resume");
    }
    acked.verify(&cluster, &pay).await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_restarted_leader_truncates_its_unreplicated_suffix_by_leader_epoch() {
    use kdeck::engine::{LinkFault, NodeId};
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("kip101", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "kip101", 1).await;
    let t = tp("kip101");
    let mut acked = Acked::default();
    for n in 0..10 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(30))
            .await
            .expect("produce");
    }
    let leader = cluster.snapshot().partition(&t).and_then(|p| p.leader).expect("leader");
    let committed_end = cluster
        .snapshot()
        .partition(&t)
        .and_then(|p| p.high_watermark)
        .expect("hw");
    // Isolate the leader's replication: acks=1 writes land only in its log.
    for b in (0..3).filter(|b| *b != leader) {
        cluster.set_link(NodeId::Broker(leader), NodeId::Broker(b), Some(LinkFault::Cut));
    }
    for n in 100..105 {
        let r = cluster
            .produce(
                &t,
                common::producer_batch(1, 0, n, 8),
                Acks::Leader,
                Duration::from_secs(5),
            )
            .await;
        assert!(r.is_ok(), "acks=1 is answered by the leader alone");
    }
    let leo_with_suffix = committed_end + 5;
    cluster.kill(leader).expect("kill");
    cluster.set_link(NodeId::Broker(leader), NodeId::Broker(0), None);
    for b in 0..3 {
        cluster.set_link(NodeId::Broker(leader), NodeId::Broker(b), None);
    }
    for n in 10..20 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(60))
            .await
            .expect("new leader takes writes");
    }
    let mut events = cluster.events();
    cluster.start_broker(leader).expect("restart");
    let s = cluster
        .wait_for(Duration::from_secs(60), |s| {
            s.partition(&t).is_some_and(|p| {
                p.isr.len() == 3
                    && p.replicas
                        .iter()
                        .all(|r| r.log_end_offset.is_some() && r.log_end_offset == p.high_watermark)
            })
        })
        .await
        .expect("the old leader catches up and rejoins the ISR");
    assert!(s.partition(&t).is_some_and(|p| p.leader != Some(leader)));
    let mut truncated = None;
    while let Ok(e) = events.try_recv() {
        if let EventKind::FollowerTruncated { broker, from, to, .. } = e.kind
            && broker == leader
        {
            truncated = Some((from, to));
        }
    }
    assert_eq!(
        truncated,
        Some((leo_with_suffix, committed_end)),
        "the divergent suffix was cut at the epoch boundary"
    );
    acked.verify(&cluster, &t).await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_paused_follower_leaves_the_isr_and_rejoins_after_resume() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("slow", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "slow", 1).await;
    let t = tp("slow");
    let leader = cluster.snapshot().partition(&t).and_then(|p| p.leader).expect("leader");
    let follower = (0..3).find(|b| *b != leader).expect("a follower");
    cluster.pause(follower).expect("pause");
    let mut acked = Acked::default();
    for n in 0..5 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(60))
            .await
            .expect("produce");
    }
    cluster
        .wait_for(Duration::from_secs(60), |s| {
            s.partition(&t).is_some_and(|p| !p.isr.contains(&follower))
        })
        .await
        .expect("the paused follower leaves the ISR after the lag time");
    cluster.resume(follower).expect("resume");
    cluster
        .wait_for(Duration::from_secs(60), |s| {
            s.partition(&t).is_some_and(|p| p.isr.contains(&follower))
        })
        .await
        .expect("it rejoins once caught up");
    acked.verify(&cluster, &t).await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_killed_follower_stops_holding_acks_all_back_once_fenced() {
    let dir = scratch_dir();
    let config = config(dir.path());
    let (session_ms, lag_ms) = (config.broker_session_timeout_ms, config.replica_lag_time_max_ms);
    assert!(
        session_ms < lag_ms,
        "the scenario needs fencing to come before the lag time"
    );
    let cluster = Cluster::start(config).await.expect("start");
    cluster
        .create_topic("fenced", TopicConfig::new(1, 3).with_min_insync_replicas(2))
        .await
        .expect("create");
    ready(&cluster, "fenced", 1).await;
    let t = tp("fenced");
    let mut acked = Acked::default();
    acked
        .produce(&cluster, &t, 0, Acks::All, Duration::from_secs(30))
        .await
        .expect("produce while every replica is up");
    let leader = cluster.snapshot().partition(&t).and_then(|p| p.leader).expect("leader");
    let follower = (0..3).find(|b| *b != leader).expect("a follower");
    cluster.kill(follower).expect("kill");
    // The dead follower was caught up a moment ago, so for `replica.lag.time.max.ms` it would
    // still count towards the HW; once the controller fences it (after the session timeout)
    // it must not (Kafka's isReplicaIsrEligible). One attempt, no retry, with a timeout
    // between the two.
    let timeout = Duration::from_millis(session_ms + (lag_ms - session_ms) / 2);
    let batch = common::producer_batch(1, common::engine::wall_clock_ms(), 1, 16);
    let offset = cluster
        .produce(&t, batch, Acks::All, timeout)
        .await
        .expect("acknowledged once the dead follower is fenced");
    assert_eq!(offset, 1);
    let after = cluster.snapshot();
    assert!(!after.partition(&t).expect("partition").isr.contains(&follower));
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_paused_leader_that_was_replaced_cannot_acknowledge_a_write() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("frozen", TopicConfig::new(1, 3).with_min_insync_replicas(2))
        .await
        .expect("create");
    ready(&cluster, "frozen", 1).await;
    let t = tp("frozen");
    let mut acked = Acked::default();
    acked
        .produce(&cluster, &t, 0, Acks::All, Duration::from_secs(30))
        .await
        .expect("produce");
    let old = cluster.snapshot().partition(&t).cloned().expect("partition");
    let old_leader = old.leader.expect("leader");
    cluster.pause(old_leader).expect("pause");
    let replaced = cluster
        .wait_for(Duration::from_secs(60), |s| {
            s.partition(&t)
                .is_some_and(|p| p.leader.is_some() && p.leader != Some(old_leader))
        })
        .await
        .expect("a new leader replaces the frozen one");
    assert!(
        replaced
            .partition(&t)
            .is_some_and(|p| p.leader_epoch > old.leader_epoch)
    );
    acked
        .produce(&cluster, &t, 1, Acks::All, Duration::from_secs(30))
        .await
        .expect("the new leader takes writes");
    cluster.resume(old_leader).expect("resume");
    // Straight to the stale leader, before it learns it was replaced.
    let stale = cluster
        .produce_to(
            old_leader,
            &t,
            common::producer_batch(1, 0, 7, 8),
            Acks::All,
            Duration::from_secs(3),
        )
        .await;
    assert!(stale.is_err(), "a replaced leader acknowledged a write: {stale:?}");
    acked.verify(&cluster, &t).await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn killing_the_controllers_broker_moves_the_controller_and_elections_keep_working() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("ctl", TopicConfig::new(3, 3))
        .await
        .expect("create");
    ready(&cluster, "ctl", 3).await;
    let controller = cluster.snapshot().controller.expect("controller");
    cluster.kill(controller).expect("kill controller");
    let s = cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.controller.is_some_and(|c| c != controller)
        })
        .await
        .expect("another broker becomes controller");
    let new_controller = s.controller.expect("controller");
    // The dead broker's leaderships move, which only a working controller can do.
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partitions
                .iter()
                .all(|p| p.leader.is_some() && p.leader != Some(controller))
        })
        .await
        .expect("partitions led by the dead broker get new leaders");
    let victim = (0..3)
        .find(|b| *b != controller && *b != new_controller)
        .expect("a third broker");
    cluster.kill(victim).expect("kill");
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partitions.iter().all(|p| p.leader == Some(new_controller))
        })
        .await
        .expect("elections still work");
    cluster.shutdown().await;
}

/// The controller's broker stopped and started again before the failover moved the role:
/// the new instance has no controller duties of its own, so the role must still move (it
/// once stayed with the restarted broker and nobody fenced or elected again).
#[tokio::test(start_paused = true)]
async fn a_controller_broker_restarted_within_the_failover_time_still_hands_the_role_on() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("ctl", TopicConfig::new(3, 3))
        .await
        .expect("create");
    ready(&cluster, "ctl", 3).await;
    let controller = cluster.snapshot().controller.expect("controller");
    cluster
        .stop(controller)
        .await
        .expect("controlled shutdown of the controller's broker");
    cluster.start_broker(controller).expect("start it again at once");
    let s = cluster
        .wait_for(Duration::from_secs(30), |s| s.controller.is_some())
        .await
        .expect("a controller again");
    let now = s.controller.expect("controller");
    // Whoever holds the role does the work: a crash is fenced and its leaders move.
    let victim = (0..3).find(|b| *b != now).expect("another broker");
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partitions.iter().all(|p| p.isr.len() == 3)
        })
        .await
        .expect("the restarted broker caught up");
    cluster.kill(victim).expect("kill");
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partitions
                .iter()
                .all(|p| p.leader.is_some() && p.leader != Some(victim) && !p.isr.contains(&victim))
        })
        .await
        .expect("the crashed broker is fenced and its leaderships move");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn preferred_election_after_restarts_returns_every_partition_to_its_preferred_leader() {
    let dir = scratch_dir();
    let cluster = Cluster::start(kdeck::engine::ClusterConfig {
        auto_leader_rebalance: false,
        ..config(dir.path())
    })
    .await
    .expect("start");
    cluster
        .create_topic("views", TopicConfig::new(6, 3))
        .await
        .expect("create");
    ready(&cluster, "views", 6).await;
    for victim in [0, 1] {
        cluster.kill(victim).expect("kill");
        cluster
            .wait_for(Duration::from_secs(30), |s| {
                s.partitions.iter().all(|p| p.leader != Some(victim))
            })
            .await
            .expect("leaders move away");
        cluster.start_broker(victim).expect("restart");
        ready(&cluster, "views", 6).await;
    }
    let imbalanced = cluster.snapshot();
    assert!(
        imbalanced
            .partitions
            .iter()
            .any(|p| p.leader != Some(p.preferred_leader)),
        "restarts leave leadership off the preferred replicas"
    );
    cluster.elect_preferred_leaders(|_| true).await.expect("elect");
    let s = cluster
        .wait_for(Duration::from_secs(10), |s| {
            s.partitions.iter().all(|p| p.leader == Some(p.preferred_leader))
        })
        .await
        .expect("every partition led by its preferred replica");
    let counts: Vec<usize> = s.brokers.iter().map(|b| b.leaders).collect();
    let (min, max) = (counts.iter().min().copied(), counts.iter().max().copied());
    assert!(
        max.zip(min).is_some_and(|(a, b)| a - b <= 1),
        "leaders per broker {counts:?}"
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn automatic_rebalance_restores_preferred_leaders() {
    let dir = scratch_dir();
    let cluster = Cluster::start(kdeck::engine::ClusterConfig {
        leader_imbalance_check_interval_ms: 5_000,
        ..config(dir.path())
    })
    .await
    .expect("start");
    cluster
        .create_topic("auto", TopicConfig::new(3, 3))
        .await
        .expect("create");
    ready(&cluster, "auto", 3).await;
    cluster.kill(0).expect("kill");
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partitions.iter().all(|p| p.leader != Some(0))
        })
        .await
        .expect("leaders move away");
    cluster.start_broker(0).expect("restart");
    cluster
        .wait_for(Duration::from_secs(60), |s| {
            s.partitions
                .iter()
                .all(|p| p.leader == Some(p.preferred_leader) && p.isr.len() == 3)
        })
        .await
        .expect("the controller rebalances on its own");
    cluster.shutdown().await;
}

async fn unclean_scenario(unclean: bool) -> (Cluster, tempfile::TempDir, TopicPartition, i32) {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("risky", TopicConfig::new(1, 3).with_unclean_leader_election(unclean))
        .await
        .expect("create");
    ready(&cluster, "risky", 1).await;
    let t = tp("risky");
    let leader = cluster.snapshot().partition(&t).and_then(|p| p.leader).expect("leader");
    let laggard = (0..3).find(|b| *b != leader).expect("a follower");
    let other = (0..3)
        .find(|b| *b != leader && *b != laggard)
        .expect("another follower");
    // The laggard falls out of the ISR, then the ISR dies.
    cluster.kill(laggard).expect("kill");
    let mut acked = Acked::default();
    for n in 0..5 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(30))
            .await
            .expect("produce");
    }
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partition(&t).is_some_and(|p| !p.isr.contains(&laggard))
        })
        .await
        .expect("laggard leaves the ISR");
    cluster.kill(other).expect("kill");
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partition(&t).is_some_and(|p| p.isr == vec![leader])
        })
        .await
        .expect("ISR is the leader alone");
    cluster.kill(leader).expect("kill");
    cluster.start_broker(laggard).expect("restart the out-of-sync replica");
    (cluster, dir, t, laggard)
}

#[tokio::test(start_paused = true)]
async fn without_unclean_election_a_partition_whose_isr_is_dead_stays_offline() {
    let (cluster, _dir, t, laggard) = unclean_scenario(false).await;
    cluster
        .wait_for(Duration::from_secs(10), |s| {
            s.broker(laggard).is_some_and(|b| !b.fenced)
        })
        .await
        .expect("the laggard is back");
    tokio::time::sleep(Duration::from_secs(10)).await;
    let p = cluster.snapshot().partition(&t).cloned().expect("partition");
    assert_eq!(p.leader, None, "an out-of-sync replica must not lead");
    assert_eq!(
        cluster
            .produce(
                &t,
                common::producer_batch(1, 0, 1, 8),
                Acks::Leader,
                Duration::from_secs(1)
            )
            .await,
        Err(kdeck::engine::ErrorCode::LeaderNotAvailable)
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn with_unclean_election_an_out_of_sync_replica_leads_and_the_event_says_so() {
    let (cluster, _dir, t, laggard) = unclean_scenario(true).await;
    let mut events = cluster.events();
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partition(&t).is_some_and(|p| p.leader == Some(laggard))
        })
        .await
        .expect("the out-of-sync replica is elected");
    let mut unclean = false;
    while let Ok(e) = events.try_recv() {
        if let EventKind::LeaderElected { reason, new, .. } = e.kind {
            unclean |= reason == ElectionReason::Unclean && new == laggard;
        }
    }
    assert!(unclean, "the election is reported as unclean (data may be lost)");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_full_restart_from_disk_keeps_topics_data_and_epochs() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("durable", TopicConfig::new(2, 3))
        .await
        .expect("create");
    ready(&cluster, "durable", 2).await;
    let t = tp("durable");
    let mut acked = Acked::default();
    for n in 0..20 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(30))
            .await
            .expect("produce");
    }
    cluster
        .kill(cluster.snapshot().partition(&t).and_then(|p| p.leader).expect("leader"))
        .expect("kill");
    acked
        .produce(&cluster, &t, 20, Acks::All, Duration::from_secs(30))
        .await
        .expect("produce");
    let before = cluster.snapshot();
    cluster.shutdown().await;

    let cluster = Cluster::start(config(dir.path())).await.expect("restart");
    ready(&cluster, "durable", 2).await;
    let after = cluster.snapshot();
    for p in &before.partitions {
        let q = after.partition(&p.tp).expect("topic survives");
        assert_eq!(
            q.replicas.iter().map(|r| r.broker).collect::<Vec<_>>(),
            p.replicas.iter().map(|r| r.broker).collect::<Vec<_>>()
        );
        assert!(q.leader_epoch >= p.leader_epoch, "epochs never go back");
    }
    acked.verify(&cluster, &t).await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn cutting_the_link_to_one_follower_shrinks_the_isr_and_writes_continue() {
    use kdeck::engine::{LinkFault, NodeId};
    let dir = scratch_dir();
    let cluster = Cluster::start(kdeck::engine::ClusterConfig {
        brokers: 4,
        ..config(dir.path())
    })
    .await
    .expect("start");
    cluster
        .create_topic("split", TopicConfig::new(4, 3).with_min_insync_replicas(2))
        .await
        .expect("create");
    ready(&cluster, "split", 4).await;
    // A partition whose leader and cut follower both keep their link to the controller, so
    // the follower leaves the ISR by lagging, not by being fenced.
    let s = cluster.snapshot();
    let controller = s.controller.expect("controller");
    let p = s
        .partitions
        .iter()
        .find(|p| p.leader != Some(controller))
        .expect("a partition led elsewhere");
    let t = p.tp.clone();
    let leader = p.leader.expect("leader");
    let cut = p
        .replicas
        .iter()
        .map(|r| r.broker)
        .find(|b| *b != leader && *b != controller)
        .expect("a follower away from the controller");
    cluster.set_link(NodeId::Broker(leader), NodeId::Broker(cut), Some(LinkFault::Cut));
    let mut acked = Acked::default();
    for n in 0..30 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(60))
            .await
            .expect("writes continue");
    }
    let s = cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partition(&t).is_some_and(|p| !p.isr.contains(&cut))
        })
        .await
        .expect("the cut follower leaves the ISR");
    assert_eq!(
        s.partition(&t).and_then(|p| p.leader),
        Some(leader),
        "the leader keeps its role"
    );
    cluster.set_link(NodeId::Broker(leader), NodeId::Broker(cut), None);
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partition(&t).is_some_and(|p| p.isr.len() == 3)
        })
        .await
        .expect("healed, it rejoins");
    acked.verify(&cluster, &t).await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn balanced_election_picks_the_replica_leading_the_fewest_partitions() {
    use kdeck::engine::LeaderElection;
    for (rule, expect_balanced) in [(LeaderElection::Kafka, false), (LeaderElection::Balanced, true)] {
        let dir = scratch_dir();
        let cluster = Cluster::start(kdeck::engine::ClusterConfig {
            brokers: 4,
            leader_election: rule,
            auto_leader_rebalance: false,
            ..config(dir.path())
        })
        .await
        .expect("start");
        cluster
            .create_topic("spread", TopicConfig::new(8, 3))
            .await
            .expect("create");
        ready(&cluster, "spread", 8).await;
        let before = cluster.snapshot();
        cluster.kill(0).expect("kill");
        let after = cluster
            .wait_for(Duration::from_secs(30), |s| {
                s.partitions.iter().all(|p| p.leader.is_some() && p.leader != Some(0))
            })
            .await
            .expect("leaders move");
        for p in before.partitions.iter().filter(|p| p.leader == Some(0)) {
            let new = after.partition(&p.tp).and_then(|q| q.leader).expect("new leader");
            let candidates: Vec<i32> = p.replicas.iter().map(|r| r.broker).filter(|b| *b != 0).collect();
            if !expect_balanced {
                assert_eq!(
                    new, candidates[0],
                    "Kafka's rule: first in-sync replica in assignment order"
                );
            }
        }
        if expect_balanced {
            let counts: Vec<usize> = after.brokers.iter().filter(|b| b.id != 0).map(|b| b.leaders).collect();
            let spread = counts.iter().max().copied().unwrap_or(0) - counts.iter().min().copied().unwrap_or(0);
            assert!(spread <= 1, "balanced rule keeps leaders even: {counts:?}");
        }
        cluster.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_slow_link_to_the_controllers_broker_delays_heartbeats_but_does_not_fence() {
    use kdeck::engine::{LinkFault, NodeId};
    let dir = scratch_dir();
    let cluster = Cluster::start(kdeck::engine::ClusterConfig {
        broker_session_timeout_ms: 6000,
        ..config(dir.path())
    })
    .await
    .expect("start");
    let s = cluster.snapshot();
    let controller = s.controller.expect("controller");
    let slow = s
        .brokers
        .iter()
        .map(|b| b.id)
        .find(|b| *b != controller)
        .expect("a broker away from the controller");
    // Every request from `slow` to the controller's broker takes 2.5 s: longer than the
    // heartbeat's own timeout, shorter than the session. A slow network still delivers, so
    // the controller keeps hearing from it, late.
    cluster.set_link(
        NodeId::Broker(controller),
        NodeId::Broker(slow),
        Some(LinkFault::Delay(Duration::from_millis(2500))),
    );
    let mut events = cluster.events();
    tokio::time::sleep(Duration::from_secs(30)).await;
    let s = cluster.snapshot();
    let b = s.brokers.iter().find(|b| b.id == slow).expect("the slow broker");
    assert!(!b.fenced, "a slow but delivering link must not fence broker {slow}");
    while let Ok(e) = events.try_recv() {
        assert!(
            !matches!(e.kind, EventKind::BrokerFenced { broker, .. } if broker == slow),
            "broker {slow} was fenced: {e:?}"
        );
    }
    // A cut link does fence it: the heartbeats no longer arrive.
    cluster.set_link(NodeId::Broker(controller), NodeId::Broker(slow), Some(LinkFault::Cut));
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.brokers.iter().any(|b| b.id == slow && b.fenced)
        })
        .await
        .expect("a cut link fences the broker after the session timeout");
    cluster.shutdown().await;
}
