//! The embedded source behind the console: a persistent data directory survives a restart
//! (topics kept, the demo copes with them existing), commands report their outcome, and a
//! tail reads records.

use std::sync::Arc;
use std::time::Duration;

use kdeck::cli::ClusterArgs;
use kdeck::config::KdeckConfig;
use kdeck::embedded::Embedded;
use kdeck::view::{
    BrokerStatus, ClusterSource, ClusterView, Command, ConfigOrigin, ConfigTarget, ProduceRequest, SeekPosition,
    TailSpec,
};
use tokio::sync::mpsc;

const PATIENCE: Duration = Duration::from_secs(60);

async fn wait_view(source: &Embedded, what: &str, condition: impl Fn(&ClusterView) -> bool) -> Arc<ClusterView> {
    let mut views = source.views();
    let wait = async {
        loop {
            let view = views.borrow_and_update().clone();
            if condition(&view) {
                return view;
            }
            views.changed().await.expect("the view task runs");
        }
    };
    tokio::time::timeout(PATIENCE, wait)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

fn messages(view: &ClusterView, topic: &str) -> i64 {
    view.topic(topic).map_or(0, |t| t.messages)
}

/// The defaults, with the Kafka listeners on free ports so tests can run side by side.
fn config() -> KdeckConfig {
    let mut config = KdeckConfig::default();
    config.wire.base_port = 0;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_data_dir_keeps_its_topics_across_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let args = ClusterArgs {
        data_dir: Some(dir.path().to_path_buf()),
        brokers: Some(3),
        ..ClusterArgs::default()
    };
    let config = config();
    let first = Embedded::start(&config, &args).await.expect("first start");
    let view = wait_view(&first, "demo traffic", |v| messages(v, "page-views") > 0).await;
    assert_eq!(view.demo, Some(true));
    let (tx, mut outcomes) = mpsc::unbounded_channel();
    first.submit(
        Command::CreateTopic {
            name: "orders".into(),
            partitions: 2,
            replication_factor: 3,
            cleanup_policy: "delete".into(),
        },
        tx,
    );
    let outcome = tokio::time::timeout(PATIENCE, outcomes.recv())
        .await
        .expect("an outcome")
        .expect("sent");
    assert!(outcome.result.is_ok(), "{outcome:?}");
    let before = messages(
        &*wait_view(&first, "orders", |v| v.topic("orders").is_some()).await,
        "page-views",
    );
    first.shutdown().await;

    let second = Embedded::start(&config, &args)
        .await
        .expect("second start on the same directory");
    let view = wait_view(&second, "the old topics and new traffic", |v| {
        v.topic("orders").is_some() && messages(v, "page-views") > before
    })
    .await;
    assert_eq!(view.topic("orders").map(|t| t.partitions), Some(2));
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_report_outcomes_and_tails_read_records() {
    let args = ClusterArgs {
        ephemeral: true,
        no_demo: true,
        brokers: Some(3),
        ..ClusterArgs::default()
    };
    let embedded = Embedded::start(&config(), &args).await.expect("start");
    let path = embedded.data_dir().to_path_buf();
    let (tx, mut outcomes) = mpsc::unbounded_channel();
    let mut next = async || {
        tokio::time::timeout(PATIENCE, outcomes.recv())
            .await
            .expect("an outcome")
            .expect("sent")
    };

    embedded.submit(
        Command::CreateTopic {
            name: "t".into(),
            partitions: 1,
            replication_factor: 3,
            cleanup_policy: "compact".into(),
        },
        tx.clone(),
    );
    assert!(next().await.result.is_ok());
    let compacted = wait_view(&embedded, "t", |v| v.topic("t").is_some()).await;
    let retention = compacted.topic("t").and_then(|t| t.retention).expect("known");
    assert!(retention.compact && !retention.delete, "{retention:?}");
    embedded.submit(
        Command::Produce(ProduceRequest {
            topic: "t".into(),
            partition: None,
            key: Some("k".into()),
            value: "v 世界".into(),
            headers: vec![("h".into(), "1".into())],
        }),
        tx.clone(),
    );
    let produced = next().await;
    assert_eq!(produced.result, Ok("produced to t-0 at offset 0".to_string()));

    let tail = embedded.tail(TailSpec::ring("t", None, SeekPosition::Beginning), 10);
    let read = tokio::time::timeout(PATIENCE, async {
        loop {
            if let Some(r) = tail.buffer.records().first().cloned() {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the tail reads the record");
    assert_eq!(read.value.as_deref(), Some("v 世界".as_bytes()));
    assert_eq!(read.headers.len(), 1);

    // A confirmed offset reset commits for a group without members; the group is then
    // deleted, once.
    let reset = Command::ResetOffsets {
        group: "g".into(),
        offsets: vec![("t".into(), 0, 1)],
    };
    embedded.submit(reset, tx.clone());
    assert_eq!(next().await.result, Ok("offsets of group g reset".to_string()));
    embedded.submit(Command::DeleteGroup { group: "g".into() }, tx.clone());
    assert_eq!(
        next().await.result,
        Ok("group g deleted with its committed offsets".to_string())
    );
    embedded.submit(Command::DeleteGroup { group: "g".into() }, tx.clone());
    assert_eq!(next().await.result, Err("group g does not exist".to_string()));

    embedded.submit(Command::KillBroker(1), tx.clone());
    assert!(next().await.result.is_ok());
    wait_view(&embedded, "broker 1 killed", |v| {
        v.brokers.iter().any(|b| b.id == 1 && b.status == BrokerStatus::Killed)
    })
    .await;
    embedded.submit(Command::KillBroker(1), tx.clone());
    assert!(next().await.result.is_err(), "a dead broker cannot be killed again");
    embedded.submit(Command::PauseDemo, tx.clone());
    assert!(next().await.result.is_err(), "no demo to pause");
    embedded.submit(Command::StartBroker(1), tx.clone());
    assert!(next().await.result.is_ok());
    wait_view(&embedded, "broker 1 back in the ISR", |v| {
        v.brokers_up() == 3 && v.partitions_of("t").all(|p| p.isr.contains(&1))
    })
    .await;
    drop(tail);
    embedded.shutdown().await;
    assert!(!path.exists(), "the ephemeral data directory is removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_its_only_broker_killed_every_partition_counts_as_offline() {
    let args = ClusterArgs {
        ephemeral: true,
        no_demo: true,
        brokers: Some(1),
        ..ClusterArgs::default()
    };
    let embedded = Embedded::start(&config(), &args).await.expect("start");
    let (tx, mut outcomes) = mpsc::unbounded_channel();
    embedded.submit(
        Command::CreateTopic {
            name: "solo".into(),
            partitions: 3,
            replication_factor: 1,
            cleanup_policy: "delete".into(),
        },
        tx.clone(),
    );
    let created = tokio::time::timeout(PATIENCE, outcomes.recv())
        .await
        .expect("outcome")
        .expect("sent");
    assert!(created.result.is_ok(), "{created:?}");
    let up = wait_view(&embedded, "all partitions online", |v| {
        v.topic("solo").is_some() && v.partitions_online() == v.partitions.len()
    })
    .await;
    let total = up.partitions.len();
    embedded.submit(Command::KillBroker(0), tx);
    let down = wait_view(&embedded, "the broker down", |v| {
        v.brokers.iter().all(|b| b.status != BrokerStatus::Online)
    })
    .await;
    assert_eq!(down.partitions_online(), 0, "no broker, no partition: {total} offline");
    assert_eq!(down.topic("solo").map(|t| t.offline), Some(3));
    embedded.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configs_screen_is_told_a_topics_override_and_where_each_value_comes_from() {
    let args = ClusterArgs {
        ephemeral: true,
        no_demo: true,
        brokers: Some(1),
        ..ClusterArgs::default()
    };
    let embedded = Embedded::start(&config(), &args).await.expect("start");
    let (tx, mut outcomes) = mpsc::unbounded_channel();
    let mut next = async || {
        tokio::time::timeout(PATIENCE, outcomes.recv())
            .await
            .expect("an outcome")
            .expect("sent")
    };
    embedded.submit(
        Command::CreateTopic {
            name: "audit".into(),
            partitions: 1,
            replication_factor: 1,
            cleanup_policy: "delete".into(),
        },
        tx.clone(),
    );
    assert!(next().await.result.is_ok());
    embedded.submit(
        Command::AlterConfigs {
            topic: Some("audit".into()),
            set: vec![("retention.ms".into(), "7200000".into())],
            delete: Vec::new(),
        },
        tx.clone(),
    );
    let altered = next().await;
    assert!(altered.result.is_ok(), "{altered:?}");

    let describe = |target| async {
        tokio::time::timeout(PATIENCE, embedded.describe_configs(target))
            .await
            .expect("an answer in time")
            .expect("answered")
    };
    let rows = describe(ConfigTarget::Topic("audit".into()))
        .await
        .expect("the topic's configs");
    let row = |name: &str| rows.iter().find(|r| r.name == name).cloned();
    let retention = row("retention.ms").expect("retention.ms is listed");
    assert_eq!(retention.value.as_deref(), Some("7200000"));
    assert_eq!(retention.origin, ConfigOrigin::Topic);
    assert!(!retention.read_only);
    assert_eq!(row("segment.bytes").map(|r| r.origin), Some(ConfigOrigin::Default));

    let cluster = describe(ConfigTarget::ClusterDefault)
        .await
        .expect("the cluster's defaults");
    assert!(cluster.iter().any(|r| r.name == "log.retention.ms"), "{cluster:?}");
    let missing = describe(ConfigTarget::Topic("nope".into())).await;
    assert!(missing.is_err_and(|e| e.contains("nope")));
    embedded.shutdown().await;
}
