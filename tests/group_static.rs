//! Static group membership (KIP-345, `group.instance.id`): a static member restarted within
//! its session timeout gets its partitions back without a rebalance, one gone longer is
//! removed and the group rebalances; a second consumer with the same instance id fences the
//! first; LeaveGroup by instance id; a coordinator failover keeps the instance ids. Paused
//! clock.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::engine::{config, coordinators_ready, ready};
use common::scratch_dir;
use kdeck::client::admin;
use kdeck::client::consumer::{ConsumeError, Consumer, ConsumerConfig, OffsetReset};
use kdeck::engine::group::GroupDescription;
use kdeck::engine::{Cluster, ErrorCode, EventKind, GroupRequest, GroupResponse, TopicConfig, TopicPartition};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

const GROUP: &str = "payments";
const TOPIC: &str = "ledger";

/// A consumer polling in its own task until told to stop, when it closes (a static member
/// does not leave the group on close).
struct Running {
    task: JoinHandle<()>,
    stop: Arc<AtomicBool>,
    assignment: Arc<Mutex<Vec<TopicPartition>>>,
    generation: Arc<Mutex<Option<i32>>>,
    fenced: Arc<AtomicBool>,
}

impl Running {
    fn assignment(&self) -> Vec<TopicPartition> {
        let mut a = self.assignment.lock().expect("lock").clone();
        a.sort();
        a
    }

    fn generation(&self) -> Option<i32> {
        *self.generation.lock().expect("lock")
    }

    /// Closes the consumer as a restarting application would, and waits until it is gone.
    async fn close(self) {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.expect("consumer task");
    }
}

fn static_member(cluster: &Cluster, instance: &str) -> Running {
    let mut consumer = Consumer::new(
        cluster.clone(),
        ConsumerConfig {
            group_id: Some(GROUP.into()),
            group_instance_id: Some(instance.into()),
            auto_offset_reset: OffsetReset::Earliest,
            session_timeout_ms: 10_000,
            heartbeat_interval_ms: 500,
            auto_commit_interval_ms: 1_000,
            client_id: format!("{instance}-app"),
            ..ConsumerConfig::default()
        },
    );
    consumer.subscribe(vec![TOPIC.into()]);
    let stop = Arc::new(AtomicBool::new(false));
    let assignment = Arc::new(Mutex::new(Vec::new()));
    let generation = Arc::new(Mutex::new(None));
    let fenced = Arc::new(AtomicBool::new(false));
    let (s, a, g, f) = (
        Arc::clone(&stop),
        Arc::clone(&assignment),
        Arc::clone(&generation),
        Arc::clone(&fenced),
    );
    let task = tokio::spawn(async move {
        loop {
            if s.load(Ordering::SeqCst) {
                consumer.close().await;
                return;
            }
            if let Err(ConsumeError::Fenced(_)) = consumer.poll(Duration::from_millis(200)).await {
                f.store(true, Ordering::SeqCst);
                return;
            }
            *a.lock().expect("lock") = consumer.assignment().to_vec();
            *g.lock().expect("lock") = consumer.generation();
        }
    });
    Running {
        task,
        stop,
        assignment,
        generation,
        fenced,
    }
}

async fn cluster_with_topic() -> (tempfile::TempDir, Cluster) {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic(TOPIC, TopicConfig::new(4, 3))
        .await
        .expect("create");
    ready(&cluster, TOPIC, 4).await;
    coordinators_ready(&cluster).await;
    (dir, cluster)
}

async fn describe(cluster: &Cluster) -> GroupDescription {
    admin::describe_group(cluster, GROUP)
        .await
        .expect("describe")
        .expect("the group exists")
}

/// Waits (on the paused clock) until `ok` holds, polling every 100 ms for up to a minute.
async fn until(what: &str, mut ok: impl FnMut() -> bool) {
    for _ in 0..600 {
        if ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never happened: {what}");
}

/// Two static members, "a" and "b", sharing the topic's four partitions two each.
async fn two_static_members(cluster: &Cluster) -> (Running, Running) {
    let a = static_member(cluster, "a");
    let b = static_member(cluster, "b");
    until("a and b own two partitions each", || {
        a.assignment().len() == 2 && b.assignment().len() == 2 && a.generation() == b.generation()
    })
    .await;
    (a, b)
}

fn instance_of<'a>(group: &'a GroupDescription, instance: &str) -> Option<&'a str> {
    group
        .members
        .iter()
        .find(|m| m.group_instance_id.as_deref() == Some(instance))
        .map(|m| m.member_id.as_str())
}

/// Group events since `events` was taken: rebalances, removals, static replacements.
fn group_events(events: &mut broadcast::Receiver<kdeck::engine::ClusterEvent>) -> Vec<EventKind> {
    let mut out = Vec::new();
    while let Ok(e) = events.try_recv() {
        if matches!(
            e.kind,
            EventKind::GroupRebalanced { .. }
                | EventKind::GroupMemberRemoved { .. }
                | EventKind::StaticMemberReplaced { .. }
                | EventKind::StaticMemberFenced { .. }
        ) {
            out.push(e.kind);
        }
    }
    out
}

#[tokio::test(start_paused = true)]
async fn a_static_member_restarted_within_its_session_timeout_gets_its_partitions_back_without_a_rebalance() {
    let (_dir, cluster) = cluster_with_topic().await;
    let (a, b) = two_static_members(&cluster).await;
    let before = describe(&cluster).await;
    let (a_partitions, b_partitions) = (a.assignment(), b.assignment());
    let b_generation = b.generation();
    let old_a = instance_of(&before, "a").expect("a is a member").to_string();
    let mut events = cluster.events();

    // The application restarts: the consumer closes without leaving and a new one with the
    // same instance id starts 3 s later, well within the 10 s session timeout.
    a.close().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let a = static_member(&cluster, "a");
    until("the restarted a owns partitions", || !a.assignment().is_empty()).await;

    assert_eq!(a.assignment(), a_partitions, "a got its own partitions back");
    let after = describe(&cluster).await;
    assert_eq!(after.state, kdeck::engine::group::GroupState::Stable);
    assert_eq!(after.generation_id, before.generation_id, "no new generation");
    assert_eq!(a.generation(), Some(before.generation_id));
    let new_a = instance_of(&after, "a").expect("a is a member again");
    assert_ne!(new_a, old_a, "under a new member id");
    assert_eq!(after.members.len(), 2);
    assert_eq!(instance_of(&after, "b"), instance_of(&before, "b"), "b untouched");
    // b was never told to rebalance: same generation, same partitions.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!((b.assignment(), b.generation()), (b_partitions, b_generation));
    let seen = group_events(&mut events);
    assert_eq!(
        seen,
        vec![EventKind::StaticMemberReplaced {
            group: GROUP.into(),
            instance: "a".into(),
            old_member: old_a,
            new_member: new_a.to_string(),
            rebalance: false,
        }],
        "the timeline says a rejoined and kept its assignment, and nothing else"
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_static_member_gone_longer_than_its_session_timeout_is_removed_and_the_group_rebalances() {
    let (_dir, cluster) = cluster_with_topic().await;
    let (a, b) = two_static_members(&cluster).await;
    let before = describe(&cluster).await;
    let mut events = cluster.events();

    a.close().await;
    // Its partitions stay assigned to it while its session lasts...
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(describe(&cluster).await.members.len(), 2, "a still holds its place");
    assert_eq!(b.assignment().len(), 2);
    // ...and move to b once it expired.
    until("b owns all four partitions", || b.assignment().len() == 4).await;
    let after = describe(&cluster).await;
    assert_eq!(after.members.len(), 1);
    assert!(after.generation_id > before.generation_id);
    let seen = group_events(&mut events);
    assert!(
        seen.iter()
            .any(|e| matches!(e, EventKind::GroupMemberRemoved { member, .. }
            if Some(member.as_str()) == instance_of(&before, "a"))),
        "{seen:?}"
    );

    // Back after that, a joins as a new member: another rebalance shares the partitions.
    let a = static_member(&cluster, "a");
    until("a and b share again", || {
        a.assignment().len() == 2 && b.assignment().len() == 2
    })
    .await;
    assert!(describe(&cluster).await.generation_id > after.generation_id);
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_second_consumer_with_the_same_instance_id_fences_the_first() {
    let (_dir, cluster) = cluster_with_topic().await;
    let (a, b) = two_static_members(&cluster).await;
    let before = describe(&cluster).await;
    let old_a = instance_of(&before, "a").expect("a").to_string();
    let a_partitions = a.assignment();
    let mut events = cluster.events();

    // A copy of the application starts with the same instance id while the first runs.
    let twin = static_member(&cluster, "a");
    until("the twin owns a's partitions", || twin.assignment() == a_partitions).await;
    until("the first a learns it is fenced", || a.fenced.load(Ordering::SeqCst)).await;
    let new_a = instance_of(&describe(&cluster).await, "a").expect("a").to_string();
    assert_ne!(new_a, old_a);

    // Any request of the old member id is refused with FENCED_INSTANCE_ID (82).
    let heartbeat = GroupRequest::Heartbeat {
        group_id: GROUP.into(),
        generation: before.generation_id,
        member_id: old_a.clone(),
        group_instance_id: Some("a".into()),
    };
    let answer = cluster
        .group_request(GROUP, heartbeat, Duration::from_secs(5))
        .await
        .expect("answered");
    assert!(matches!(answer, GroupResponse::Heartbeat(ErrorCode::FencedInstanceId)));
    assert_eq!(ErrorCode::FencedInstanceId.code(), 82);
    let commit = GroupRequest::OffsetCommit {
        group_id: GROUP.into(),
        generation: before.generation_id,
        member_id: old_a.clone(),
        group_instance_id: Some("a".into()),
        offsets: vec![(a_partitions[0].clone(), 0)],
    };
    let answer = cluster
        .group_request(GROUP, commit, Duration::from_secs(5))
        .await
        .expect("answered");
    assert!(matches!(
        answer,
        GroupResponse::OffsetCommit(ErrorCode::FencedInstanceId)
    ));

    let seen = group_events(&mut events);
    assert!(
        seen.contains(&EventKind::StaticMemberFenced {
            group: GROUP.into(),
            instance: "a".into(),
            member: old_a,
            by: new_a,
        }),
        "{seen:?}"
    );
    assert_eq!(
        seen.iter()
            .filter(|e| matches!(e, EventKind::StaticMemberFenced { .. }))
            .count(),
        1,
        "said once: {seen:?}"
    );
    assert!(
        !seen.iter().any(|e| matches!(e, EventKind::GroupRebalanced { .. })),
        "{seen:?}"
    );
    drop(b);
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn leave_group_by_instance_id_removes_the_static_member_at_once() {
    let (_dir, cluster) = cluster_with_topic().await;
    let (a, b) = two_static_members(&cluster).await;
    a.close().await;
    // An operator removes the stopped instance (kafka-consumer-groups --delete-members):
    // LeaveGroup with only its instance id.
    let leave = GroupRequest::Leave {
        group_id: GROUP.into(),
        member_id: String::new(),
        group_instance_id: Some("a".into()),
    };
    let answer = cluster
        .group_request(GROUP, leave, Duration::from_secs(5))
        .await
        .expect("answered");
    assert!(matches!(answer, GroupResponse::Leave(ErrorCode::None)));
    // Well before a's session would have expired, b owns everything.
    tokio::time::timeout(
        Duration::from_secs(8),
        until("b owns all four", || b.assignment().len() == 4),
    )
    .await
    .expect("within the session timeout");
    assert_eq!(describe(&cluster).await.members.len(), 1);
    // An instance id nobody holds is an unknown member.
    let again = GroupRequest::Leave {
        group_id: GROUP.into(),
        member_id: String::new(),
        group_instance_id: Some("a".into()),
    };
    let answer = cluster
        .group_request(GROUP, again, Duration::from_secs(5))
        .await
        .expect("answered");
    assert!(matches!(answer, GroupResponse::Leave(ErrorCode::UnknownMemberId)));
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_coordinator_failover_keeps_the_static_members_and_a_restart_still_needs_no_rebalance() {
    let (_dir, cluster) = cluster_with_topic().await;
    let (a, b) = two_static_members(&cluster).await;
    // The group record is written once the assignment is stored; let it replicate.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = describe(&cluster).await;
    let a_partitions = a.assignment();

    let coordinator = cluster.find_coordinator(GROUP).expect("coordinator");
    cluster.kill(coordinator).expect("kill");
    until("another broker coordinates the group", || {
        cluster.find_coordinator(GROUP).is_ok_and(|c| c != coordinator)
    })
    .await;
    let mut loaded = None;
    for _ in 0..300 {
        if let Ok(Some(d)) = admin::describe_group(&cluster, GROUP).await {
            loaded = Some(d);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let loaded = loaded.expect("the new coordinator serves the group");
    assert_eq!(instance_of(&loaded, "a"), instance_of(&before, "a"));
    assert_eq!(instance_of(&loaded, "b"), instance_of(&before, "b"));
    assert_eq!(loaded.generation_id, before.generation_id);

    // The new coordinator knows a's instance id: a restart takes its place back.
    a.close().await;
    let a = static_member(&cluster, "a");
    until("the restarted a owns partitions", || !a.assignment().is_empty()).await;
    assert_eq!(a.assignment(), a_partitions);
    let after = describe(&cluster).await;
    assert_eq!(after.generation_id, before.generation_id, "no rebalance");
    assert_eq!(after.members.len(), 2);
    drop(b);
    cluster.shutdown().await;
}
