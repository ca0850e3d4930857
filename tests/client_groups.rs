//! Consumer groups: partitions shared among members, rebalances on join and death, broadcast
//! to several groups, commits and restarts, coordinator failover and lag. Paused clock.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::engine::{config, coordinators_ready, ready, wall_clock_ms};
use common::{producer_batch, scratch_dir};
use kdeck::client::admin;
use kdeck::client::consumer::{Consumer, ConsumerConfig, OffsetReset};
use kdeck::engine::{Acks, Cluster, TopicConfig, TopicPartition};
use tokio::task::JoinHandle;

/// Records a running consumer has seen: partition, offset, value.
type Seen = Arc<Mutex<Vec<(TopicPartition, i64, Vec<u8>)>>>;

/// A consumer running in its own task, polling until aborted; what it sees is shared.
struct Running {
    task: JoinHandle<()>,
    seen: Seen,
    assignment: Arc<Mutex<Vec<TopicPartition>>>,
}

fn group_config(group: &str) -> ConsumerConfig {
    ConsumerConfig {
        group_id: Some(group.to_string()),
        auto_offset_reset: OffsetReset::Earliest,
        session_timeout_ms: 6_000,
        heartbeat_interval_ms: 500,
        auto_commit_interval_ms: 1_000,
        ..ConsumerConfig::default()
    }
}

fn run_consumer(cluster: &Cluster, config: ConsumerConfig, topics: &[&str]) -> Running {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let assignment = Arc::new(Mutex::new(Vec::new()));
    let mut consumer = Consumer::new(cluster.clone(), config);
    consumer.subscribe(topics.iter().map(|t| t.to_string()).collect());
    let (s, a) = (Arc::clone(&seen), Arc::clone(&assignment));
    let task = tokio::spawn(async move {
        loop {
            if let Ok(recs) = consumer.poll(Duration::from_millis(200)).await {
                let mut s = s.lock().expect("lock");
                for r in recs {
                    s.push((
                        TopicPartition::new(&*r.topic, r.partition),
                        r.offset,
                        r.value.map(|v| v.to_vec()).unwrap_or_default(),
                    ));
                }
            }
            *a.lock().expect("lock") = consumer.assignment().to_vec();
        }
    });
    Running { task, seen, assignment }
}

async fn produce(cluster: &Cluster, topic: &str, partitions: i32, count: u64) {
    for n in 0..count {
        let tp = TopicPartition::new(topic, (n % partitions as u64) as i32);
        let batch = producer_batch(1, wall_clock_ms(), n, 8);
        let mut tries = 0;
        while cluster
            .produce(&tp, batch.clone(), Acks::All, Duration::from_secs(5))
            .await
            .is_err()
        {
            tries += 1;
            assert!(tries < 100, "produce keeps failing");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Waits until the running consumers' assignments satisfy `ok`.
async fn settle(consumers: &[&Running], ok: impl Fn(&[Vec<TopicPartition>]) -> bool) -> Vec<Vec<TopicPartition>> {
    for _ in 0..600 {
        let now: Vec<Vec<TopicPartition>> = consumers
            .iter()
            .map(|c| c.assignment.lock().expect("lock").clone())
            .collect();
        if ok(&now) {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let now: Vec<Vec<TopicPartition>> = consumers
        .iter()
        .map(|c| c.assignment.lock().expect("lock").clone())
        .collect();
    panic!("assignments never settled: {now:?}");
}

fn covers_exactly(assignments: &[Vec<TopicPartition>], topic: &str, partitions: i32) -> bool {
    let all: Vec<&TopicPartition> = assignments.iter().flatten().collect();
    let unique: BTreeSet<&TopicPartition> = all.iter().copied().collect();
    all.len() == unique.len() && unique.len() == partitions as usize && unique.iter().all(|tp| tp.topic == topic)
}

#[tokio::test(start_paused = true)]
async fn members_share_partitions_extras_idle_and_a_dead_members_partitions_move() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("views", TopicConfig::new(6, 3))
        .await
        .expect("create");
    ready(&cluster, "views", 6).await;
    coordinators_ready(&cluster).await;
    let mut events = cluster.events();
    let mut members: Vec<Running> = (0..3)
        .map(|_| run_consumer(&cluster, group_config("analytics"), &["views"]))
        .collect();
    let refs: Vec<&Running> = members.iter().collect();
    let three = settle(&refs, |a| {
        covers_exactly(a, "views", 6) && a.iter().all(|x| x.len() == 2)
    })
    .await;
    assert!(
        three.iter().all(|a| a.len() == 2),
        "3 consumers on 6 partitions own 2 each"
    );
    let mut rebalanced = false;
    while let Ok(e) = events.try_recv() {
        if let kdeck::engine::EventKind::GroupRebalanced { group, members, .. } = e.kind {
            rebalanced |= group == "analytics" && members == 3;
        }
    }
    assert!(rebalanced, "the timeline shows the rebalance");

    for _ in 0..4 {
        members.push(run_consumer(&cluster, group_config("analytics"), &["views"]));
    }
    let refs: Vec<&Running> = members.iter().collect();
    let seven = settle(&refs, |a| {
        covers_exactly(a, "views", 6) && a.iter().filter(|x| x.is_empty()).count() == 1
    })
    .await;
    assert_eq!(seven.iter().filter(|a| a.len() == 1).count(), 6, "6 busy, one idle");

    // A member dies without leaving: its partitions move once its session expires.
    let dead = members.remove(0);
    let orphaned = dead.assignment.lock().expect("lock").clone();
    dead.task.abort();
    let refs: Vec<&Running> = members.iter().collect();
    let after = settle(&refs, |a| covers_exactly(a, "views", 6)).await;
    for tp in &orphaned {
        assert!(after.iter().any(|a| a.contains(tp)), "{tp} was taken over");
    }
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn two_groups_each_receive_every_record() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("events", TopicConfig::new(3, 3))
        .await
        .expect("create");
    ready(&cluster, "events", 3).await;
    coordinators_ready(&cluster).await;
    let a = run_consumer(&cluster, group_config("analytics"), &["events"]);
    let b = run_consumer(&cluster, group_config("audit"), &["events"]);
    produce(&cluster, "events", 3, 60).await;
    for _ in 0..300 {
        if a.seen.lock().expect("lock").len() >= 60 && b.seen.lock().expect("lock").len() >= 60 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for group in [&a, &b] {
        let seen = group.seen.lock().expect("lock");
        let distinct: BTreeSet<(TopicPartition, i64)> = seen.iter().map(|(tp, o, _)| (tp.clone(), *o)).collect();
        assert_eq!(distinct.len(), 60, "each group gets every record");
    }
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_restarted_consumer_resumes_at_the_committed_offset() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("orders", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "orders", 1).await;
    coordinators_ready(&cluster).await;
    produce(&cluster, "orders", 1, 10).await;
    let tp = TopicPartition::new("orders", 0);
    let cfg = ConsumerConfig {
        enable_auto_commit: false,
        ..group_config("billing")
    };
    let mut first = Consumer::new(cluster.clone(), cfg.clone());
    first.subscribe(vec!["orders".into()]);
    let mut got = Vec::new();
    while got.len() < 10 {
        got.extend(first.poll(Duration::from_secs(1)).await.expect("poll"));
    }
    first.commit_offsets(vec![(tp.clone(), 6)]).await.expect("commit");
    first.close().await;

    let mut second = Consumer::new(cluster.clone(), cfg);
    second.subscribe(vec!["orders".into()]);
    let mut resumed = Vec::new();
    while resumed.len() < 4 {
        resumed.extend(second.poll(Duration::from_secs(1)).await.expect("poll"));
    }
    assert_eq!(resumed.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![6, 7, 8, 9]);
    assert_eq!(
        second.committed(vec![tp.clone()]).await.expect("committed"),
        vec![(tp, 6)]
    );
    second.close().await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn killing_the_coordinator_keeps_offsets_and_membership_and_the_group_continues() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("stream", TopicConfig::new(3, 3))
        .await
        .expect("create");
    ready(&cluster, "stream", 3).await;
    coordinators_ready(&cluster).await;
    let member = run_consumer(&cluster, group_config("durable"), &["stream"]);
    produce(&cluster, "stream", 3, 30).await;
    for _ in 0..300 {
        if member.seen.lock().expect("lock").len() >= 30 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Let auto-commit record the positions.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = admin::group_lag(&cluster, "durable").await.expect("lag");
    let committed_before: BTreeMap<TopicPartition, i64> =
        before.partitions.iter().map(|p| (p.tp.clone(), p.committed)).collect();
    assert_eq!(committed_before.values().sum::<i64>(), 30, "{committed_before:?}");
    let group_before = admin::describe_group(&cluster, "durable")
        .await
        .expect("describe")
        .expect("group");

    let coordinator = cluster.find_coordinator("durable").expect("coordinator");
    cluster.kill(coordinator).expect("kill");
    let mut group_after = None;
    for _ in 0..300 {
        if let Ok(Some(d)) = admin::describe_group(&cluster, "durable").await {
            group_after = Some(d);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_ne!(cluster.find_coordinator("durable").ok(), Some(coordinator));
    assert_eq!(
        group_after,
        Some(group_before),
        "the new coordinator knows the member, its generation and assignment"
    );
    let loaded = admin::group_lag(&cluster, "durable").await.expect("lag after failover");
    let committed_loaded: BTreeMap<TopicPartition, i64> =
        loaded.partitions.iter().map(|p| (p.tp.clone(), p.committed)).collect();
    assert_eq!(
        committed_loaded, committed_before,
        "the committed offsets are loaded exactly"
    );

    produce(&cluster, "stream", 3, 30).await;
    for _ in 0..600 {
        if member.seen.lock().expect("lock").len() >= 60 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seen = member.seen.lock().expect("lock").clone();
    let distinct: BTreeSet<(TopicPartition, i64)> = seen.iter().map(|(tp, o, _)| (tp.clone(), *o)).collect();
    assert_eq!(
        (seen.len(), distinct.len()),
        (60, 60),
        "the group kept consuming after the coordinator moved, nothing twice"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = admin::group_lag(&cluster, "durable").await.expect("lag at the end");
    for p in &after.partitions {
        assert_eq!(p.committed, p.end, "{} is committed up to its end", p.tp);
    }
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn lag_is_the_high_watermark_minus_the_committed_offset() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("lagging", TopicConfig::new(2, 3))
        .await
        .expect("create");
    ready(&cluster, "lagging", 2).await;
    coordinators_ready(&cluster).await;
    produce(&cluster, "lagging", 2, 20).await;
    let mut consumer = Consumer::new(
        cluster.clone(),
        ConsumerConfig {
            enable_auto_commit: false,
            ..group_config("slow")
        },
    );
    consumer.assign(vec![
        TopicPartition::new("lagging", 0),
        TopicPartition::new("lagging", 1),
    ]);
    consumer
        .commit_offsets(vec![
            (TopicPartition::new("lagging", 0), 3),
            (TopicPartition::new("lagging", 1), 8),
        ])
        .await
        .expect("commit");
    let lag = admin::group_lag(&cluster, "slow").await.expect("lag");
    let by_tp: BTreeMap<i32, (i64, i64, i64)> = lag
        .partitions
        .iter()
        .map(|p| (p.tp.partition, (p.committed, p.end, p.lag)))
        .collect();
    assert_eq!(by_tp.get(&0), Some(&(3, 10, 7)));
    assert_eq!(by_tp.get(&1), Some(&(8, 10, 2)));
    // The snapshot the console renders says the same.
    let snapshot = cluster.snapshot();
    let view = snapshot
        .groups
        .iter()
        .find(|g| g.group_id == "slow")
        .expect("group in the snapshot");
    let lags: BTreeMap<i32, Option<i64>> = view.offsets.iter().map(|o| (o.tp.partition, o.lag)).collect();
    assert_eq!(lags.get(&0), Some(&Some(7)));
    assert_eq!(lags.get(&1), Some(&Some(2)));
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn commit_covers_only_records_poll_has_returned() {
    // A fetch brings ten records; poll hands out three (max.poll.records). Committing then
    // must store 3, the next record the application has not seen, as Kafka's consumer does,
    // not the fetch position 10: a crash after the commit would otherwise skip seven records.
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("orders", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "orders", 1).await;
    coordinators_ready(&cluster).await;
    produce(&cluster, "orders", 1, 10).await;
    let tp = TopicPartition::new("orders", 0);
    let cfg = ConsumerConfig {
        enable_auto_commit: false,
        max_poll_records: 3,
        ..group_config("billing")
    };
    let mut consumer = Consumer::new(cluster.clone(), cfg.clone());
    consumer.subscribe(vec!["orders".into()]);
    let mut got = Vec::new();
    while got.is_empty() {
        got = consumer.poll(Duration::from_secs(1)).await.expect("poll");
    }
    assert_eq!(got.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![0, 1, 2]);
    consumer.commit().await.expect("commit");
    assert_eq!(
        consumer.committed(vec![tp.clone()]).await.expect("committed"),
        vec![(tp.clone(), 3)]
    );
    consumer.close().await;

    let mut successor = Consumer::new(cluster.clone(), cfg);
    successor.subscribe(vec!["orders".into()]);
    let mut resumed = Vec::new();
    while resumed.len() < 7 {
        resumed.extend(successor.poll(Duration::from_secs(1)).await.expect("poll"));
    }
    assert_eq!(resumed.first().map(|r| r.offset), Some(3), "nothing is skipped");
    successor.close().await;
    cluster.shutdown().await;
}
