//! The replication throttle (KIP-73) on the embedded cluster: broker rates and topic
//! throttled-replica lists set through the configs API hold a moving replica's copy to the
//! rate, measured on the cluster's (paused) clock, while the in-sync replicas' replication,
//! and so acks=all produces, go on unthrottled.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::engine::{Acked, config, ready, wall_clock_ms};
use common::{producer_batch, scratch_dir};
use kdeck::engine::{
    Acks, Cluster, ClusterConfig, ConfigAlteration, ConfigResource, ConfigSource, ErrorCode, TopicConfig,
    TopicPartition,
};
use tokio::time::Instant;

/// The throttle every throttled move here runs under, bytes per second.
const RATE: u64 = 256 * 1024;
/// The partition's data before the move: 32 seconds' worth at `RATE`.
const DATA: u64 = 8 * 1024 * 1024;

fn four_brokers(dir: &std::path::Path) -> ClusterConfig {
    ClusterConfig {
        brokers: 4,
        ..config(dir)
    }
}

/// A topic with one partition on brokers 0, 1, 2 (0 leading), holding `DATA` bytes.
async fn filled_topic(cluster: &Cluster) -> TopicPartition {
    cluster
        .create_topic("moving", TopicConfig::new(1, 3).with_min_insync_replicas(2))
        .await
        .expect("create");
    ready(cluster, "moving", 1).await;
    let tp = TopicPartition::new("moving", 0);
    let placed = cluster
        .alter_reassignments(&[(tp.clone(), Some(vec![0, 1, 2]))])
        .await
        .expect("controller");
    assert_eq!(placed[0].1, None);
    settled(cluster, &tp, &[0, 1, 2]).await;
    cluster.elect_preferred_leaders(|t| *t == tp).await.expect("elect 0");
    cluster
        .wait_for(Duration::from_secs(20), |s| {
            s.partition(&tp).is_some_and(|p| p.leader == Some(0))
        })
        .await
        .expect("broker 0 leads");
    let batch_values = 64 * 1024;
    for n in 0..DATA / batch_values as u64 {
        // Retried while the leadership settles after the election.
        loop {
            let batch = producer_batch(1, wall_clock_ms(), n, batch_values);
            match cluster.produce(&tp, batch, Acks::All, Duration::from_secs(10)).await {
                Ok(_) => break,
                Err(e) if e.is_retriable() => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(e) => panic!("filling the partition: {e:?}"),
            }
        }
    }
    tp
}

/// Waits until `tp` sits on `replicas`, all in sync, no move in progress.
async fn settled(cluster: &Cluster, tp: &TopicPartition, replicas: &[i32]) {
    let done = cluster
        .wait_for(Duration::from_secs(600), |s| {
            s.partition(tp).is_some_and(|p| {
                let on: Vec<i32> = p.replicas.iter().map(|r| r.broker).collect();
                on == replicas && p.isr.len() == replicas.len() && p.leader.is_some()
            })
        })
        .await;
    assert!(done.is_ok(), "{tp} never settled on {replicas:?}");
    assert!(cluster.reassignments(|t| t == tp).is_empty());
}

async fn alter(cluster: &Cluster, resource: ConfigResource, set: &[(&str, &str)]) {
    let alterations: Vec<ConfigAlteration> = set.iter().map(|(k, v)| ConfigAlteration::set(*k, *v)).collect();
    cluster
        .alter_configs(&resource, &alterations, false)
        .await
        .unwrap_or_else(|e| panic!("altering {resource:?}: {e:?}"));
}

/// The least of kafka-reassign-partitions.sh --throttle for moving broker 2's replica to
/// broker 3 (the tool sets both rates on all four brokers; each acts only on the replicas the
/// topic's lists name): the leader rate where the current replicas are, the follower rate
/// where the new one goes.
async fn throttle_move(cluster: &Cluster) {
    let rate = RATE.to_string();
    for broker in [0, 1, 2] {
        alter(
            cluster,
            ConfigResource::Broker(broker),
            &[("leader.replication.throttled.rate", &rate)],
        )
        .await;
    }
    alter(
        cluster,
        ConfigResource::Broker(3),
        &[("follower.replication.throttled.rate", &rate)],
    )
    .await;
    alter(
        cluster,
        ConfigResource::Topic("moving".into()),
        &[
            ("leader.replication.throttled.replicas", "0:0,0:1,0:2"),
            ("follower.replication.throttled.replicas", "0:3"),
        ],
    )
    .await;
}

/// Produces one record with acks=all every 20 ms until stopped; returns how many were acked
/// and the longest any took, on the cluster's clock.
fn keep_producing(
    cluster: &Cluster,
    tp: &TopicPartition,
) -> (Arc<AtomicBool>, tokio::task::JoinHandle<(Acked, Duration)>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (cluster, tp, flag) = (cluster.clone(), tp.clone(), Arc::clone(&stop));
    let task = tokio::spawn(async move {
        let mut acked = Acked::default();
        let mut longest = Duration::ZERO;
        let mut n = 1_000_000;
        while !flag.load(Ordering::SeqCst) {
            let sent = Instant::now();
            acked
                .produce(&cluster, &tp, n, Acks::All, Duration::from_secs(60))
                .await
                .expect("acks=all produces keep succeeding through the throttled move");
            longest = longest.max(sent.elapsed());
            n += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        (acked, longest)
    });
    (stop, task)
}

/// Moves broker 2's replica to broker 3 and returns how long the move took on the cluster's
/// clock.
async fn timed_move(cluster: &Cluster, tp: &TopicPartition) -> Duration {
    let started = Instant::now();
    let results = cluster
        .alter_reassignments(&[(tp.clone(), Some(vec![0, 1, 3]))])
        .await
        .expect("controller");
    assert_eq!(results, vec![(tp.clone(), None)]);
    settled(cluster, tp, &[0, 1, 3]).await;
    started.elapsed()
}

#[tokio::test(start_paused = true)]
async fn a_throttled_move_copies_at_about_the_throttled_rate_and_completes() {
    let dir = scratch_dir();
    let cluster = Cluster::start(four_brokers(dir.path())).await.expect("start");
    let tp = filled_topic(&cluster).await;
    throttle_move(&cluster).await;
    let took = timed_move(&cluster, &tp).await;
    // Kafka's rate counts a young window as ten seconds long, so the first ten seconds'
    // worth goes through at once: the rest takes about (DATA / RATE - 10) seconds.
    let at_the_rate = Duration::from_secs(DATA / RATE);
    assert!(
        took >= at_the_rate / 2,
        "an {DATA}-byte copy at {RATE} bytes/s took only {took:?} of cluster time"
    );
    assert!(took <= at_the_rate * 2, "the throttled move took {took:?}");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn without_a_throttle_the_same_move_is_much_faster() {
    let dir = scratch_dir();
    let cluster = Cluster::start(four_brokers(dir.path())).await.expect("start");
    let tp = filled_topic(&cluster).await;
    let took = timed_move(&cluster, &tp).await;
    let at_the_rate = Duration::from_secs(DATA / RATE);
    assert!(
        took < at_the_rate / 4,
        "an unthrottled move took {took:?} of cluster time"
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn in_sync_replicas_are_not_throttled_so_acks_all_produces_keep_completing() {
    let dir = scratch_dir();
    let cluster = Cluster::start(four_brokers(dir.path())).await.expect("start");
    let tp = filled_topic(&cluster).await;
    throttle_move(&cluster).await;
    let (stop, task) = keep_producing(&cluster, &tp);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let took = timed_move(&cluster, &tp).await;
    stop.store(true, Ordering::SeqCst);
    let (acked, longest) = task.await.expect("producer task");
    assert!(
        took >= Duration::from_secs(DATA / RATE) / 2,
        "the move was throttled: {took:?}"
    );
    // One produce every 20 ms plus its round trips: most of the move's 50 per second.
    let expected = took.as_millis() as usize / 20 / 2;
    assert!(
        acked.values.len() >= expected,
        "{} acks=all produces completed during a {took:?} move (expected at least {expected})",
        acked.values.len()
    );
    assert!(
        longest < Duration::from_secs(1),
        "an acks=all produce waited {longest:?}: the in-sync followers were held back"
    );
    acked.verify(&cluster, &tp).await;
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn throttle_configs_are_per_broker_or_cluster_wide_and_described_with_their_source() {
    let dir = scratch_dir();
    let cluster = Cluster::start(four_brokers(dir.path())).await.expect("start");
    cluster.create_topic("t", TopicConfig::new(2, 3)).await.expect("create");
    let find = |resource: ConfigResource, name: &str| {
        cluster
            .describe_configs(&resource)
            .expect("describe")
            .into_iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("{name} described"))
    };
    let rate = "leader.replication.throttled.rate";
    let unbounded = find(ConfigResource::Broker(1), rate);
    assert_eq!(unbounded.value, i64::MAX.to_string());
    assert_eq!(unbounded.source, ConfigSource::Default);

    alter(&cluster, ConfigResource::ClusterDefault, &[(rate, "1000")]).await;
    alter(&cluster, ConfigResource::Broker(1), &[(rate, "500")]).await;
    let own = find(ConfigResource::Broker(1), rate);
    assert_eq!((own.value.as_str(), own.source), ("500", ConfigSource::DynamicBroker));
    let default = find(ConfigResource::Broker(2), rate);
    assert_eq!(
        (default.value.as_str(), default.source),
        ("1000", ConfigSource::DynamicClusterDefault)
    );
    assert_eq!(find(ConfigResource::ClusterDefault, rate).value, "1000");

    alter(
        &cluster,
        ConfigResource::Topic("t".into()),
        &[("follower.replication.throttled.replicas", "0:1, 1:2")],
    )
    .await;
    let listed = find(
        ConfigResource::Topic("t".into()),
        "follower.replication.throttled.replicas",
    );
    assert_eq!(
        (listed.value.as_str(), listed.source),
        ("0:1,1:2", ConfigSource::TopicOverride)
    );

    let refused = |resource: ConfigResource, name: &str, value: &str| {
        let cluster = cluster.clone();
        let set = ConfigAlteration::set(name, value);
        async move { cluster.alter_configs(&resource, &[set], false).await }
    };
    let bad_list = refused(
        ConfigResource::Topic("t".into()),
        "leader.replication.throttled.replicas",
        "0-1",
    )
    .await;
    assert_eq!(bad_list.map_err(|e| e.0), Err(ErrorCode::InvalidConfig));
    let bad_rate = refused(ConfigResource::Broker(1), rate, "fast").await;
    assert_eq!(bad_rate.map_err(|e| e.0), Err(ErrorCode::InvalidConfig));
    let not_per_broker = refused(ConfigResource::Broker(1), "log.retention.ms", "1000").await;
    assert_eq!(not_per_broker.map_err(|e| e.0), Err(ErrorCode::InvalidRequest));

    // Deleting the broker's own rate falls back to the cluster's.
    cluster
        .alter_configs(&ConfigResource::Broker(1), &[ConfigAlteration::delete(rate)], false)
        .await
        .expect("delete");
    assert_eq!(find(ConfigResource::Broker(1), rate).value, "1000");
    cluster.shutdown().await;
}
