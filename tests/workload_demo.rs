//! The demo workload survives a broker kill and restart underneath it: producers keep being
//! acknowledged and every consumer of every group keeps making progress. Paused clock.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::engine::config;
use common::scratch_dir;
use kdeck::client::admin;
use kdeck::engine::Cluster;
use kdeck::workload::{DemoConfig, Workload};

fn counts(w: &Workload) -> BTreeMap<String, u64> {
    w.consumed
        .iter()
        .map(|(k, v)| (k.clone(), v.load(Ordering::Relaxed)))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_demo_keeps_flowing_through_a_broker_kill_and_restart() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    let workload = Workload::start(&cluster, DemoConfig::default()).await.expect("demo");
    tokio::time::sleep(Duration::from_secs(20)).await;
    let warm = counts(&workload);
    assert!(warm.values().all(|c| *c > 0), "every consumer got records: {warm:?}");

    cluster.kill(1).expect("kill");
    tokio::time::sleep(Duration::from_secs(20)).await;
    cluster.start_broker(1).expect("restart");
    tokio::time::sleep(Duration::from_secs(10)).await;
    let restarted = counts(&workload);
    let produced_then = workload.produced.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(30)).await;
    let end = counts(&workload);
    for (name, before) in &restarted {
        assert!(end[name] > *before, "{name} is stuck: {before} -> {}", end[name]);
    }
    assert!(
        workload.produced.load(Ordering::Relaxed) > produced_then,
        "producers are acknowledged"
    );

    // billing is slow on purpose, but keeps up on average: its lag stays bounded.
    let billing = admin::group_lag(&cluster, "billing").await.expect("billing lag");
    let lag: i64 = billing.partitions.iter().map(|p| p.lag).sum();
    assert!(lag < 2_000, "billing lag {lag} grows without bound");
    for group in ["analytics", "audit", "billing"] {
        let g = admin::group_lag(&cluster, group).await.expect("group");
        assert!(!g.members.is_empty(), "{group} has members");
    }
    let analytics = admin::group_lag(&cluster, "analytics").await.expect("analytics");
    assert_eq!(analytics.members.len(), 3);
    assert!(
        analytics.members.iter().all(|(_, parts)| parts.len() == 2),
        "{:?}",
        analytics.members
    );
    workload.stop();
    cluster.shutdown().await;
}
