//! A group's coordinator moves (its broker dies): the new coordinator replays the group from
//! `__consumer_offsets`, so members keep their ids, generation and assignments, commits stay
//! where they were, and a member joining afterwards rebalances together with the old ones.
//! Paused clock.

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::engine::{config, coordinators_ready, ready, wall_clock_ms};
use common::{producer_batch, scratch_dir};
use kdeck::client::admin;
use kdeck::client::consumer::{Consumer, ConsumerConfig, OffsetReset};
use kdeck::engine::group::{GroupDescription, GroupState};
use kdeck::engine::{Acks, Cluster, ErrorCode, EventKind, GroupRequest, GroupResponse, TopicConfig, TopicPartition};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

/// A consumer polling in its own task until aborted; what it saw and where it stands.
struct Running {
    task: JoinHandle<()>,
    seen: Arc<Mutex<Vec<(TopicPartition, i64)>>>,
    assignment: Arc<Mutex<Vec<TopicPartition>>>,
    generation: Arc<Mutex<Option<i32>>>,
}

impl Running {
    fn start(cluster: &Cluster, config: ConsumerConfig, topic: &str) -> Running {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let assignment = Arc::new(Mutex::new(Vec::new()));
        let generation = Arc::new(Mutex::new(None));
        let mut consumer = Consumer::new(cluster.clone(), config);
        consumer.subscribe(vec![topic.to_string()]);
        let (s, a, g) = (Arc::clone(&seen), Arc::clone(&assignment), Arc::clone(&generation));
        let task = tokio::spawn(async move {
            loop {
                if let Ok(records) = consumer.poll(Duration::from_millis(200)).await {
                    let mut s = s.lock().expect("lock");
                    s.extend(
                        records
                            .iter()
                            .map(|r| (TopicPartition::new(&*r.topic, r.partition), r.offset)),
                    );
                }
                *a.lock().expect("lock") = consumer.assignment().to_vec();
                *g.lock().expect("lock") = consumer.generation();
            }
        });
        Running {
            task,
            seen,
            assignment,
            generation,
        }
    }

    fn generation(&self) -> Option<i32> {
        *self.generation.lock().expect("lock")
    }

    fn seen(&self) -> usize {
        self.seen.lock().expect("lock").len()
    }
}

fn member_config(session_timeout_ms: u64, heartbeat_interval_ms: u64) -> ConsumerConfig {
    ConsumerConfig {
        group_id: Some("durable".into()),
        auto_offset_reset: OffsetReset::Earliest,
        session_timeout_ms,
        heartbeat_interval_ms,
        auto_commit_interval_ms: 1_000,
        ..ConsumerConfig::default()
    }
}

async fn start_cluster(dir: &std::path::Path) -> Cluster {
    let cluster = Cluster::start(config(dir)).await.expect("start");
    cluster
        .create_topic("stream", TopicConfig::new(4, 3))
        .await
        .expect("create");
    ready(&cluster, "stream", 4).await;
    coordinators_ready(&cluster).await;
    cluster
}

async fn produce(cluster: &Cluster, count: u64) {
    for n in 0..count {
        let tp = TopicPartition::new("stream", (n % 4) as i32);
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

/// Waits until `ok` holds for the group as its coordinator describes it.
async fn described(cluster: &Cluster, ok: impl Fn(&GroupDescription) -> bool) -> GroupDescription {
    let mut last = None;
    for _ in 0..600 {
        if let Ok(Some(d)) = admin::describe_group(cluster, "durable").await {
            if ok(&d) {
                return d;
            }
            last = Some(d);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the group never got there: {last:?}");
}

fn stable_with(members: usize) -> impl Fn(&GroupDescription) -> bool {
    move |d| d.state == GroupState::Stable && d.members.len() == members
}

async fn committed(cluster: &Cluster) -> Vec<(TopicPartition, i64)> {
    let lag = admin::group_lag(cluster, "durable").await.expect("lag");
    lag.partitions.iter().map(|p| (p.tp.clone(), p.committed)).collect()
}

fn member_ids(d: &GroupDescription) -> BTreeSet<String> {
    d.members.iter().map(|m| m.member_id.clone()).collect()
}

/// The group's rebalances and removed members since `events` was taken.
fn group_events(events: &mut broadcast::Receiver<kdeck::engine::ClusterEvent>) -> Vec<EventKind> {
    let mut out = Vec::new();
    while let Ok(e) = events.try_recv() {
        match &e.kind {
            EventKind::GroupRebalanced { group, .. } | EventKind::GroupMemberRemoved { group, .. }
                if group == "durable" =>
            {
                out.push(e.kind)
            }
            _ => {}
        }
    }
    out
}

/// Kills the group's coordinator and waits until another broker serves the group.
async fn kill_coordinator(cluster: &Cluster) {
    let coordinator = cluster.find_coordinator("durable").expect("coordinator");
    cluster.kill(coordinator).expect("kill");
    described(cluster, |_| true).await;
    assert_ne!(cluster.find_coordinator("durable").ok(), Some(coordinator));
}

#[tokio::test(start_paused = true)]
async fn members_keep_their_ids_generation_and_offsets_when_the_coordinator_dies() {
    let dir = scratch_dir();
    let cluster = start_cluster(dir.path()).await;
    let members = [
        Running::start(&cluster, member_config(6_000, 500), "stream"),
        Running::start(&cluster, member_config(6_000, 500), "stream"),
    ];
    produce(&cluster, 40).await;
    let before = described(&cluster, stable_with(2)).await;
    for _ in 0..300 {
        if members.iter().map(Running::seen).sum::<usize>() >= 40 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Auto-commit records every position.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let committed_before = committed(&cluster).await;
    assert_eq!(
        committed_before.iter().map(|(_, o)| o).sum::<i64>(),
        40,
        "{committed_before:?}"
    );
    let generations_before: Vec<Option<i32>> = members.iter().map(Running::generation).collect();
    assert_eq!(generations_before, vec![Some(before.generation_id); 2]);
    let mut events = cluster.events();

    kill_coordinator(&cluster).await;
    // Several session timeouts: members that were not known would have been dropped.
    tokio::time::sleep(Duration::from_secs(20)).await;

    let after = described(&cluster, |_| true).await;
    assert_eq!(after.state, GroupState::Stable);
    assert_eq!(after.generation_id, before.generation_id, "no new generation");
    assert_eq!(member_ids(&after), member_ids(&before), "the same members");
    assert_eq!(after.members, before.members, "the same assignments");
    assert_eq!(
        members.iter().map(Running::generation).collect::<Vec<_>>(),
        generations_before,
        "the consumers never rejoined"
    );
    assert_eq!(group_events(&mut events), Vec::new(), "no rebalance, nobody removed");
    assert_eq!(committed(&cluster).await, committed_before, "offsets intact");

    // Consumption goes on where it was: every record is seen once.
    produce(&cluster, 20).await;
    for _ in 0..300 {
        if members.iter().map(Running::seen).sum::<usize>() >= 60 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seen: Vec<(TopicPartition, i64)> = members
        .iter()
        .flat_map(|m| m.seen.lock().expect("lock").clone())
        .collect();
    let distinct: BTreeSet<&(TopicPartition, i64)> = seen.iter().collect();
    assert_eq!((seen.len(), distinct.len()), (60, 60), "no record read twice");
    for m in members {
        m.task.abort();
    }
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_member_joining_a_loaded_group_rebalances_once_with_the_old_members() {
    let dir = scratch_dir();
    let cluster = start_cluster(dir.path()).await;
    // Long sessions and slow heartbeats, as in the report: an old member only learns of the
    // rebalance at its next heartbeat, seconds after the new member asked to join.
    let old = [
        Running::start(&cluster, member_config(30_000, 3_000), "stream"),
        Running::start(&cluster, member_config(30_000, 3_000), "stream"),
    ];
    let before = described(&cluster, stable_with(2)).await;
    kill_coordinator(&cluster).await;
    let loaded = described(&cluster, |_| true).await;
    assert_eq!(
        (loaded.state, loaded.generation_id),
        (GroupState::Stable, before.generation_id),
        "the group was loaded as it was"
    );
    let mut events = cluster.events();

    let newcomer = Running::start(&cluster, member_config(30_000, 3_000), "stream");
    let after = described(&cluster, stable_with(3)).await;
    assert_eq!(after.generation_id, before.generation_id + 1, "exactly one rebalance");
    assert!(
        member_ids(&after).is_superset(&member_ids(&before)),
        "the old members are in it: {after:?}"
    );
    for _ in 0..100 {
        if old
            .iter()
            .chain([&newcomer])
            .all(|m| m.generation() == Some(after.generation_id))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut owned = Vec::new();
    for m in old.iter().chain([&newcomer]) {
        assert_eq!(m.generation(), Some(after.generation_id));
        owned.extend(m.assignment.lock().expect("lock").clone());
    }
    let distinct: BTreeSet<&TopicPartition> = owned.iter().collect();
    assert_eq!(
        (owned.len(), distinct.len()),
        (4, 4),
        "the three share the 4 partitions: {owned:?}"
    );
    assert_eq!(
        group_events(&mut events),
        vec![EventKind::GroupRebalanced {
            group: "durable".into(),
            generation: after.generation_id,
            members: 3,
            protocol: "range".into(),
        }]
    );
    for m in old.into_iter().chain([newcomer]) {
        m.task.abort();
    }
    cluster.shutdown().await;
}

/// A standalone OffsetCommit (no member, as `Consumer::assign` users send).
async fn commit(cluster: &Cluster, tp: &TopicPartition, offset: i64) -> ErrorCode {
    let request = GroupRequest::OffsetCommit {
        group_id: "durable".into(),
        generation: -1,
        member_id: String::new(),
        group_instance_id: None,
        offsets: vec![(tp.clone(), offset)],
    };
    match cluster.group_request("durable", request, Duration::from_secs(10)).await {
        Ok(GroupResponse::OffsetCommit(e)) => e,
        other => panic!("unexpected answer {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn the_later_of_two_commits_in_flight_wins_whichever_finishes_first() {
    let dir = scratch_dir();
    let cluster = start_cluster(dir.path()).await;
    let tp = TopicPartition::new("stream", 0);
    // Both commits of a round are appended in the order sent and replicated by the same
    // follower fetch; which one the broker finishes first is up to the scheduler, so many
    // rounds give the older one many chances to land last.
    for round in 0..40 {
        let (older, newer) = tokio::join!(commit(&cluster, &tp, 2 * round), commit(&cluster, &tp, 2 * round + 1));
        assert_eq!((older, newer), (ErrorCode::None, ErrorCode::None));
        let request = GroupRequest::OffsetFetch {
            group_id: "durable".into(),
            partitions: Some(vec![tp.clone()]),
            require_stable: false,
        };
        let fetched = cluster
            .group_request("durable", request, Duration::from_secs(5))
            .await
            .expect("offset fetch");
        assert!(
            matches!(&fetched, GroupResponse::OffsetFetch(Ok(o)) if o == &vec![(tp.clone(), Ok(2 * round + 1))]),
            "round {round}: {fetched:?}"
        );
    }
    cluster.shutdown().await;
}
