//! Managing a group's offsets from outside, as Kafka's admin client and
//! kafka-consumer-groups.sh do: deleting a group (only an empty one, and for good: the
//! tombstones outlive its coordinator), deleting offsets (not of topics its members subscribe
//! to), and resetting offsets with a commit outside the group (only while nobody is a
//! member). Paused clock.

mod common;

use std::time::Duration;

use common::engine::{config, coordinators_ready, ready};
use common::scratch_dir;
use kdeck::client::admin;
use kdeck::client::consumer::{Consumer, ConsumerConfig, OffsetReset};
use kdeck::engine::group::GroupState;
use kdeck::engine::{Cluster, ErrorCode, GroupRequest, GroupResponse, TopicConfig, TopicPartition};

const GROUP: &str = "ops";

async fn start_cluster(dir: &std::path::Path) -> Cluster {
    let cluster = Cluster::start(config(dir)).await.expect("start");
    for topic in ["stream", "other"] {
        cluster
            .create_topic(topic, TopicConfig::new(2, 3))
            .await
            .expect("create");
        ready(&cluster, topic, 2).await;
    }
    coordinators_ready(&cluster).await;
    cluster
}

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

/// A member of the group subscribed to `stream`, polling until it is Stable.
async fn join(cluster: &Cluster) -> Consumer {
    let mut consumer = Consumer::new(
        cluster.clone(),
        ConsumerConfig {
            group_id: Some(GROUP.into()),
            auto_offset_reset: OffsetReset::Earliest,
            ..ConsumerConfig::default()
        },
    );
    consumer.subscribe(vec!["stream".into()]);
    for _ in 0..300 {
        let _ = consumer.poll(Duration::from_millis(100)).await;
        if state(cluster).await == Some(GroupState::Stable) && !consumer.assignment().is_empty() {
            return consumer;
        }
    }
    panic!("the member never settled: {:?}", state(cluster).await);
}

async fn state(cluster: &Cluster) -> Option<GroupState> {
    admin::describe_group(cluster, GROUP)
        .await
        .ok()
        .flatten()
        .map(|d| d.state)
}

/// Every committed offset of the group, as its coordinator answers OffsetFetch.
async fn committed(cluster: &Cluster) -> Vec<(TopicPartition, i64)> {
    let request = GroupRequest::OffsetFetch {
        group_id: GROUP.into(),
        partitions: None,
        require_stable: false,
    };
    match cluster.group_request(GROUP, request, Duration::from_secs(5)).await {
        Ok(GroupResponse::OffsetFetch(Ok(offsets))) => offsets
            .into_iter()
            .map(|(tp, o)| {
                let offset = o.unwrap_or_else(|e| panic!("offset fetch of {tp}: {e}"));
                (tp, offset)
            })
            .collect(),
        other => panic!("offset fetch: {other:?}"),
    }
}

/// Kills the group's coordinator and waits until another broker has loaded the group's
/// partition of `__consumer_offsets`.
async fn kill_coordinator(cluster: &Cluster) {
    let coordinator = cluster.find_coordinator(GROUP).expect("coordinator");
    cluster.kill(coordinator).expect("kill");
    for _ in 0..600 {
        let moved = cluster.find_coordinator(GROUP).is_ok_and(|c| c != coordinator);
        if moved && admin::describe_group(cluster, GROUP).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no other broker took the group over");
}

#[tokio::test(start_paused = true)]
async fn only_an_empty_group_can_be_deleted_and_it_stays_deleted_when_its_coordinator_dies() {
    let dir = scratch_dir();
    let cluster = start_cluster(dir.path()).await;
    assert_eq!(
        admin::delete_group(&cluster, GROUP).await,
        Err(ErrorCode::GroupIdNotFound),
        "a group nobody created"
    );

    let member = join(&cluster).await;
    assert_eq!(
        admin::delete_group(&cluster, GROUP).await,
        Err(ErrorCode::NonEmptyGroup)
    );
    assert_eq!(state(&cluster).await, Some(GroupState::Stable), "still there");

    member.close().await;
    assert_eq!(state(&cluster).await, Some(GroupState::Empty));
    admin::commit_offsets(&cluster, GROUP, &[(tp("stream", 0), 3), (tp("other", 1), 5)])
        .await
        .expect("commit while empty");
    let before = committed(&cluster).await;
    assert!(before.contains(&(tp("other", 1), 5)), "{before:?}");

    assert_eq!(admin::delete_group(&cluster, GROUP).await, Ok(()));
    assert_eq!(state(&cluster).await, None, "gone");
    assert_eq!(committed(&cluster).await, Vec::new(), "with its offsets");
    assert_eq!(
        admin::delete_group(&cluster, GROUP).await,
        Err(ErrorCode::GroupIdNotFound),
        "deleted twice"
    );

    // The next coordinator replays the partition: the tombstones come after the group's
    // records, so it loads nothing of the group.
    kill_coordinator(&cluster).await;
    assert_eq!(state(&cluster).await, None, "not back after failover");
    assert_eq!(committed(&cluster).await, Vec::new());
    assert!(!cluster.list_groups().await.iter().any(|(id, _)| id == GROUP));
    assert_eq!(
        admin::delete_group(&cluster, GROUP).await,
        Err(ErrorCode::GroupIdNotFound)
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn offset_delete_refuses_the_topics_active_members_subscribe_to_and_deletes_the_others() {
    let dir = scratch_dir();
    let cluster = start_cluster(dir.path()).await;
    assert_eq!(
        admin::delete_offsets(&cluster, GROUP, &[tp("other", 0)]).await,
        Err(ErrorCode::GroupIdNotFound)
    );
    admin::commit_offsets(
        &cluster,
        GROUP,
        &[(tp("stream", 0), 0), (tp("stream", 1), 0), (tp("other", 0), 7)],
    )
    .await
    .expect("commit while empty");
    let mut member = join(&cluster).await;

    let outcome = admin::delete_offsets(&cluster, GROUP, &[tp("stream", 0), tp("other", 0), tp("other", 1)])
        .await
        .expect("offset delete");
    assert_eq!(
        outcome,
        vec![
            (tp("stream", 0), ErrorCode::GroupSubscribedToTopic),
            (tp("other", 0), ErrorCode::None),
            (tp("other", 1), ErrorCode::None),
        ],
        "a partition without an offset is deleted too, as Kafka answers"
    );
    let left = committed(&cluster).await;
    assert!(left.contains(&(tp("stream", 0), 0)), "{left:?}");
    assert!(!left.iter().any(|(t, _)| t.topic == "other"), "{left:?}");

    // The member leaves: nobody subscribes to `stream` any more.
    member.commit().await.expect("commit");
    member.close().await;
    let outcome = admin::delete_offsets(&cluster, GROUP, &[tp("stream", 0)])
        .await
        .expect("offset delete");
    assert_eq!(outcome, vec![(tp("stream", 0), ErrorCode::None)]);
    let left = committed(&cluster).await;
    assert_eq!(left, vec![(tp("stream", 1), 0)]);

    kill_coordinator(&cluster).await;
    assert_eq!(committed(&cluster).await, left, "the tombstones were replicated");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_reset_commit_is_refused_while_the_group_has_members_and_taken_once_it_is_empty() {
    let dir = scratch_dir();
    let cluster = start_cluster(dir.path()).await;
    let member = join(&cluster).await;
    let reset = [(tp("stream", 0), 0), (tp("stream", 1), 0)];
    assert_eq!(
        admin::commit_offsets(&cluster, GROUP, &reset).await,
        Err(ErrorCode::UnknownMemberId),
        "Kafka refuses a commit outside the generation of an active group"
    );
    assert!(committed(&cluster).await.is_empty(), "nothing was written");

    member.close().await;
    admin::commit_offsets(&cluster, GROUP, &reset)
        .await
        .expect("the empty group takes it");
    assert_eq!(committed(&cluster).await, reset.to_vec());
    cluster.shutdown().await;
}
