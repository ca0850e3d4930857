//! The cluster's clock: frozen, nothing in the cluster advances (no session expires, no ISR
//! shrinks); in slow motion every timeout takes that many times longer. All on tokio's
//! paused clock: the test advances real time, the cluster's clock follows or not.

mod common;

use std::time::Duration;

use common::engine::{config, ready};
use common::scratch_dir;
use kdeck::engine::{BrokerId, ClockChange, Cluster, ClusterConfig, ClusterEvent, EventKind, NodeId, TopicConfig};
use tokio::sync::broadcast;
use tokio::time::Instant;

/// Real (tokio) time until the controller fences `broker`.
async fn until_fenced(events: &mut broadcast::Receiver<ClusterEvent>, broker: BrokerId, limit: Duration) -> Duration {
    let start = Instant::now();
    tokio::time::timeout(limit, async {
        loop {
            match events.recv().await {
                Ok(ClusterEvent {
                    kind: EventKind::BrokerFenced { broker: b, .. },
                    ..
                }) if b == broker => return start.elapsed(),
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => panic!("event stream closed"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("broker {broker} not fenced within {limit:?}"))
}

fn fenced_or_shrunk(event: &ClusterEvent) -> bool {
    matches!(event.kind, EventKind::BrokerFenced { .. } | EventKind::IsrShrunk { .. })
}

#[tokio::test(start_paused = true)]
async fn a_sixty_second_freeze_fences_no_broker_and_shrinks_no_isr() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("orders", TopicConfig::new(3, 3))
        .await
        .expect("create");
    ready(&cluster, "orders", 3).await;
    let leaders: Vec<_> = cluster.snapshot().partitions.iter().map(|p| p.leader).collect();
    let mut events = cluster.events();

    assert!(cluster.freeze());
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(cluster.thaw());
    tokio::time::sleep(Duration::from_secs(5)).await;

    let mut timeline = Vec::new();
    while let Ok(event) = events.try_recv() {
        timeline.push(event);
    }
    assert!(
        !timeline.iter().any(fenced_or_shrunk),
        "the freeze fenced or shrank something: {timeline:?}"
    );
    let clock_events: Vec<_> = timeline
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ClockChanged(change) => Some(*change),
            _ => None,
        })
        .collect();
    assert_eq!(
        clock_events,
        [
            ClockChange::Frozen,
            ClockChange::Thawed {
                frozen_for: Duration::from_secs(60)
            }
        ]
    );
    let after = cluster.snapshot();
    assert!(after.brokers.iter().all(|b| !b.fenced));
    assert_eq!(after.partitions.iter().map(|p| p.leader).collect::<Vec<_>>(), leaders);

    // A broker that dies while the clock is frozen is not missed until it runs again.
    let session = Duration::from_millis(cluster.config().broker_session_timeout_ms);
    let heartbeat = Duration::from_millis(cluster.config().broker_heartbeat_interval_ms);
    cluster.freeze();
    cluster.kill(1).expect("kill");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(
        !cluster.snapshot().broker(1).expect("broker 1").fenced,
        "fenced while the clock was frozen"
    );
    assert!(!std::iter::from_fn(|| events.try_recv().ok()).any(|e| fenced_or_shrunk(&e)));
    cluster.thaw();
    let fenced_after = until_fenced(&mut events, 1, Duration::from_secs(30)).await;
    assert!(
        fenced_after >= session - heartbeat && fenced_after <= session + heartbeat,
        "fenced {fenced_after:?} after the thaw; the session timeout is {session:?}"
    );
    cluster.shutdown().await;
}

/// Kills `broker` right after the controller heard its heartbeat and returns the real time
/// until it is fenced. The cluster has no replication traffic, so every request `broker`
/// sends the controller's host is a heartbeat.
async fn kill_after_a_heartbeat(cluster: &Cluster, broker: BrokerId) -> Duration {
    let host = cluster.controller().expect("controller");
    let heartbeats = || {
        cluster
            .inspect()
            .requests_delivered()
            .get(&(NodeId::Broker(broker), host))
            .copied()
            .unwrap_or(0)
    };
    let seen = heartbeats();
    while heartbeats() == seen {
        tokio::time::sleep(Duration::from_micros(100)).await;
    }
    let mut events = cluster.events();
    cluster.kill(broker).expect("kill");
    until_fenced(&mut events, broker, Duration::from_secs(120)).await
}

#[tokio::test(start_paused = true)]
async fn slow_motion_x3_makes_fencing_take_three_session_timeouts() {
    let dir = scratch_dir();
    let cluster = Cluster::start(ClusterConfig {
        // Offsets partitions without followers: brokers send the controller only heartbeats.
        offsets_topic_replication_factor: 1,
        ..config(dir.path())
    })
    .await
    .expect("start");
    let session = Duration::from_millis(cluster.config().broker_session_timeout_ms);
    let heartbeat = Duration::from_millis(cluster.config().broker_heartbeat_interval_ms);
    // The controller checks sessions every half heartbeat interval.
    let slack = heartbeat / 2 + Duration::from_millis(10);

    let real_speed = kill_after_a_heartbeat(&cluster, 1).await;
    assert!(
        real_speed >= session && real_speed < session + slack,
        "fenced after {real_speed:?} at x1"
    );

    assert_eq!(cluster.set_slow_motion(3), Ok(true));
    assert_eq!(cluster.clock().state(), (false, 3));
    let slowed = kill_after_a_heartbeat(&cluster, 2).await;
    assert!(slowed >= 3 * session, "fenced after {slowed:?} at x3");
    assert!(
        slowed < 3 * (session + heartbeat + slack),
        "fenced after {slowed:?} at x3"
    );
    assert!(cluster.set_slow_motion(0).is_err());
    assert!(cluster.set_slow_motion(21).is_err());
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_isolated_controller_host_hands_the_role_over_is_fenced_and_still_answers_clients() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("orders", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "orders", 1).await;
    let host = cluster.controller().expect("controller");
    cluster.isolate(host).expect("isolate");
    let after = cluster
        .wait_for(Duration::from_secs(20), |s| {
            s.controller.is_some_and(|c| c != host) && s.broker(host).is_some_and(|b| b.fenced)
        })
        .await
        .expect("the controller moves and the isolated broker is fenced");
    assert!(
        after.brokers.iter().filter(|b| b.id != host).all(|b| !b.fenced),
        "only the isolated broker is fenced"
    );
    // A client still reaches the zombie: it answers from what it had.
    let tp = kdeck::engine::TopicPartition::new("orders", 0);
    let answer = cluster.fetch_on(host, &tp, 0, -1, 1024, Duration::ZERO).await;
    assert!(
        !matches!(
            answer,
            Err(kdeck::engine::ErrorCode::NetworkException | kdeck::engine::ErrorCode::RequestTimedOut)
        ),
        "the isolated broker did not answer a client: {answer:?}"
    );
    assert!(cluster.heal_links());
    cluster
        .wait_for(Duration::from_secs(20), |s| s.brokers.iter().all(|b| !b.fenced))
        .await
        .expect("healed, the broker is back");
    cluster.shutdown().await;
}
