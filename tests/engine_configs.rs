//! Topic configs and the cluster-wide defaults changed while the cluster runs
//! (IncrementalAlterConfigs in the engine): each takes effect on the replicas' open logs at the
//! next append, roll or retention pass; refusals change nothing; overrides are part of the
//! metadata, so they survive a restart. On tokio's paused clock.

mod common;

use std::time::Duration;

use common::engine::{config, ready, wall_clock_ms};
use common::{producer_batch, scratch_dir};
use kdeck::engine::{
    Acks, Cluster, ClusterConfig, ConfigAlteration, ConfigEntry, ConfigResource, ConfigSource, ErrorCode, TopicConfig,
    TopicPartition,
};

fn orders() -> TopicPartition {
    TopicPartition::new("orders", 0)
}

fn topic() -> ConfigResource {
    ConfigResource::Topic("orders".into())
}

fn entry(cluster: &Cluster, resource: &ConfigResource, name: &str) -> ConfigEntry {
    cluster
        .describe_configs(resource)
        .expect("describe")
        .into_iter()
        .find(|e| e.name == name)
        .expect("the config is described")
}

fn fast_retention(dir: &std::path::Path) -> ClusterConfig {
    ClusterConfig {
        retention_check_interval_ms: 1_000,
        ..config(dir)
    }
}

async fn start_with_orders(cluster_config: ClusterConfig, topic: TopicConfig) -> Cluster {
    let cluster = Cluster::start(cluster_config).await.expect("start");
    cluster.create_topic("orders", topic).await.expect("create");
    ready(&cluster, "orders", 1).await;
    cluster
}

async fn produce(cluster: &Cluster, count: u64, timestamp: i64, value_len: usize) {
    for n in 0..count {
        cluster
            .produce(
                &orders(),
                producer_batch(1, timestamp, n, value_len),
                Acks::All,
                Duration::from_secs(5),
            )
            .await
            .expect("produce");
    }
}

fn log_start(cluster: &Cluster) -> Option<i64> {
    cluster.snapshot().partition(&orders()).and_then(|p| p.log_start_offset)
}

/// The leader's segment files of orders-0.
fn segments(dir: &std::path::Path, cluster: &Cluster) -> usize {
    let leader = cluster
        .snapshot()
        .partition(&orders())
        .and_then(|p| p.leader)
        .expect("leader");
    std::fs::read_dir(dir.join(format!("broker-{leader}")).join("orders-0"))
        .expect("the leader's log directory")
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .count()
}

#[tokio::test(start_paused = true)]
async fn lowering_retention_bytes_live_deletes_old_segments_on_the_next_retention_pass() {
    let dir = scratch_dir();
    let cluster = start_with_orders(
        fast_retention(dir.path()),
        TopicConfig::new(1, 3).with_segment_bytes(1024),
    )
    .await;
    produce(&cluster, 60, wall_clock_ms(), 16).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(log_start(&cluster), Some(0), "no retention.bytes: everything stays");

    cluster
        .alter_configs(&topic(), &[ConfigAlteration::set("retention.bytes", "2048")], false)
        .await
        .expect("alter");
    cluster
        .wait_for(Duration::from_secs(10), |s| {
            s.partition(&orders())
                .and_then(|p| p.log_start_offset)
                .is_some_and(|o| o > 0)
        })
        .await
        .expect("the next retention pass deletes the oldest segments");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn lowering_retention_ms_live_deletes_segments_older_than_it() {
    let dir = scratch_dir();
    let cluster = start_with_orders(
        fast_retention(dir.path()),
        TopicConfig::new(1, 3).with_segment_bytes(1024),
    )
    .await;
    let an_hour_ago = wall_clock_ms() - 3_600_000;
    produce(&cluster, 40, an_hour_ago, 16).await;
    produce(&cluster, 1, wall_clock_ms(), 16).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        log_start(&cluster),
        Some(0),
        "7 days' retention keeps an hour-old record"
    );

    cluster
        .alter_configs(&topic(), &[ConfigAlteration::set("retention.ms", "60000")], false)
        .await
        .expect("alter");
    cluster
        .wait_for(Duration::from_secs(10), |s| {
            s.partition(&orders())
                .and_then(|p| p.log_start_offset)
                .is_some_and(|o| o > 0)
        })
        .await
        .expect("segments an hour old go at the next retention pass");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn lowering_segment_bytes_live_rolls_the_next_segments_at_the_new_size() {
    let dir = scratch_dir();
    let cluster = start_with_orders(config(dir.path()), TopicConfig::new(1, 3)).await;
    produce(&cluster, 20, wall_clock_ms(), 100).await;
    assert_eq!(segments(dir.path(), &cluster), 1, "1 GiB segments: one segment");

    cluster
        .alter_configs(&topic(), &[ConfigAlteration::set("segment.bytes", "1024")], false)
        .await
        .expect("alter");
    tokio::time::sleep(Duration::from_millis(10)).await;
    produce(&cluster, 40, wall_clock_ms(), 100).await;
    assert!(
        segments(dir.path(), &cluster) > 3,
        "about 150 bytes a batch roll a 1 KiB segment every few appends"
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn lowering_max_message_bytes_live_refuses_a_larger_batch_with_message_too_large() {
    let dir = scratch_dir();
    let cluster = start_with_orders(config(dir.path()), TopicConfig::new(1, 3)).await;
    let tp = orders();
    let big = || producer_batch(1, wall_clock_ms(), 1, 2_000);
    let send = |batch| cluster.produce(&tp, batch, Acks::All, Duration::from_secs(5));
    assert!(send(big()).await.is_ok(), "2 KB fits the 1 MiB default");

    cluster
        .alter_configs(&topic(), &[ConfigAlteration::set("max.message.bytes", "1000")], false)
        .await
        .expect("alter");
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(send(big()).await, Err(ErrorCode::MessageTooLarge));

    cluster
        .alter_configs(&topic(), &[ConfigAlteration::delete("max.message.bytes")], false)
        .await
        .expect("delete");
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(send(big()).await.is_ok(), "back at the default");
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_invalid_alteration_is_refused_with_kafkas_error_and_changes_nothing() {
    let dir = scratch_dir();
    let cluster = start_with_orders(config(dir.path()), TopicConfig::new(1, 3)).await;
    let before = cluster.describe_configs(&topic()).expect("describe");
    let refused = |alterations: Vec<ConfigAlteration>| {
        let cluster = cluster.clone();
        async move {
            cluster
                .alter_configs(&topic(), &alterations, false)
                .await
                .expect_err("refused")
                .0
        }
    };
    // All or nothing: a good setting beside a bad one is not applied either.
    let bad_size = vec![
        ConfigAlteration::set("retention.ms", "1000"),
        ConfigAlteration::set("segment.bytes", "10"),
    ];
    assert_eq!(refused(bad_size).await, ErrorCode::InvalidConfig);
    assert_eq!(
        refused(vec![ConfigAlteration::set("retention.ms", "soon")]).await,
        ErrorCode::InvalidConfig
    );
    assert_eq!(
        refused(vec![ConfigAlteration::set("no.such.config", "1")]).await,
        ErrorCode::InvalidConfig
    );
    assert_eq!(
        refused(vec![ConfigAlteration::set("min.insync.replicas", "4")]).await,
        ErrorCode::InvalidConfig
    );
    let twice = vec![
        ConfigAlteration::set("retention.ms", "1000"),
        ConfigAlteration::delete("retention.ms"),
    ];
    assert_eq!(refused(twice).await, ErrorCode::InvalidRequest);
    let missing = cluster
        .alter_configs(
            &ConfigResource::Topic("missing".into()),
            &[ConfigAlteration::set("retention.ms", "1")],
            false,
        )
        .await
        .expect_err("no such topic");
    assert_eq!(missing.0, ErrorCode::UnknownTopicOrPartition);
    // validate_only checks and changes nothing.
    cluster
        .alter_configs(&topic(), &[ConfigAlteration::set("retention.ms", "1000")], true)
        .await
        .expect("a valid alteration validates");
    assert_eq!(cluster.describe_configs(&topic()).expect("describe"), before);
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_override_reports_its_source_and_deleting_it_returns_to_the_default() {
    let dir = scratch_dir();
    let cluster = start_with_orders(config(dir.path()), TopicConfig::new(1, 3)).await;
    let retention = entry(&cluster, &topic(), "retention.ms");
    assert_eq!(retention.source, ConfigSource::Default);
    assert_eq!(retention.value, "604800000");
    assert_eq!(
        entry(&cluster, &topic(), "min.insync.replicas").source,
        ConfigSource::Default
    );

    let alterations = [
        ConfigAlteration::set("retention.ms", "3600000"),
        ConfigAlteration::set("min.insync.replicas", "2"),
        ConfigAlteration::set("cleanup.policy", "compact,delete"),
    ];
    cluster
        .alter_configs(&topic(), &alterations, false)
        .await
        .expect("alter");
    let retention = entry(&cluster, &topic(), "retention.ms");
    assert_eq!(
        (retention.value.as_str(), retention.source),
        ("3600000", ConfigSource::TopicOverride)
    );
    assert_eq!(
        entry(&cluster, &topic(), "min.insync.replicas").source,
        ConfigSource::TopicOverride
    );
    assert_eq!(entry(&cluster, &topic(), "cleanup.policy").value, "compact,delete");

    cluster
        .alter_configs(&topic(), &[ConfigAlteration::delete("retention.ms")], false)
        .await
        .expect("delete");
    let retention = entry(&cluster, &topic(), "retention.ms");
    assert_eq!(
        (retention.value.as_str(), retention.source),
        ("604800000", ConfigSource::Default)
    );
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_cluster_wide_default_applies_to_topics_without_their_own_and_per_broker_changes_are_refused() {
    let dir = scratch_dir();
    let cluster = start_with_orders(
        fast_retention(dir.path()),
        TopicConfig::new(1, 3).with_segment_bytes(1024),
    )
    .await;
    produce(&cluster, 60, wall_clock_ms(), 16).await;
    let defaults = ConfigResource::ClusterDefault;
    cluster
        .alter_configs(
            &defaults,
            &[ConfigAlteration::set("log.retention.bytes", "2048")],
            false,
        )
        .await
        .expect("alter the cluster default");
    let own = entry(&cluster, &topic(), "retention.bytes");
    assert_eq!(
        (own.value.as_str(), own.source),
        ("2048", ConfigSource::DynamicClusterDefault)
    );
    assert_eq!(
        entry(&cluster, &defaults, "log.retention.bytes").source,
        ConfigSource::DynamicClusterDefault
    );
    cluster
        .wait_for(Duration::from_secs(10), |s| {
            s.partition(&orders())
                .and_then(|p| p.log_start_offset)
                .is_some_and(|o| o > 0)
        })
        .await
        .expect("the default reaches the topic's logs");

    let per_broker = cluster
        .alter_configs(
            &ConfigResource::Broker(1),
            &[ConfigAlteration::set("log.retention.bytes", "1")],
            false,
        )
        .await
        .expect_err("only the replication throttle rates are per broker");
    assert_eq!(per_broker.0, ErrorCode::InvalidRequest);
    let fixed = cluster
        .alter_configs(
            &defaults,
            &[ConfigAlteration::set("replica.lag.time.max.ms", "1")],
            false,
        )
        .await
        .expect_err("read from the configuration file at start");
    assert_eq!(fixed.0, ErrorCode::InvalidRequest);
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn overrides_and_cluster_defaults_survive_a_restart() {
    let dir = scratch_dir();
    let cluster = start_with_orders(config(dir.path()), TopicConfig::new(1, 3)).await;
    cluster
        .alter_configs(&topic(), &[ConfigAlteration::set("max.message.bytes", "5000")], false)
        .await
        .expect("alter the topic");
    cluster
        .alter_configs(
            &ConfigResource::ClusterDefault,
            &[ConfigAlteration::set("log.retention.ms", "86400000")],
            false,
        )
        .await
        .expect("alter the default");
    cluster.shutdown().await;

    let cluster = Cluster::start(config(dir.path())).await.expect("restart");
    ready(&cluster, "orders", 1).await;
    let max = entry(&cluster, &topic(), "max.message.bytes");
    assert_eq!((max.value.as_str(), max.source), ("5000", ConfigSource::TopicOverride));
    let retention = entry(&cluster, &topic(), "retention.ms");
    assert_eq!(
        (retention.value.as_str(), retention.source),
        ("86400000", ConfigSource::DynamicClusterDefault)
    );
    let big = producer_batch(1, wall_clock_ms(), 1, 6_000);
    assert_eq!(
        cluster.produce(&orders(), big, Acks::All, Duration::from_secs(5)).await,
        Err(ErrorCode::MessageTooLarge),
        "the reopened logs have the override"
    );
    cluster.shutdown().await;
}
