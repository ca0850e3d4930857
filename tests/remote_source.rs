//! The console's source for an external cluster, attached to kdeck's own cluster over the
//! Kafka protocol: its view matches the embedded engine's own for the same cluster; a broker
//! killed through `kdeck serve` shows down with its leaderships moved, and a preferred-leader
//! election through the source puts them back; a tail reads produced records, a window tail
//! reads from its offset and a search finds its matches and ends; an unreachable bootstrap
//! fails fast with a clear message.

use std::collections::BTreeMap;
use std::process::{Command as Process, Stdio};
use std::sync::Arc;
use std::time::Duration;

use kdeck::client::consumer::{Consumer, ConsumerConfig};
use kdeck::engine::TopicPartition;
use kdeck::remote::KafkaClient;
use kdeck::remote::ops::{self, OutRecord};
use kdeck::remote::source::{RemoteSource, SourceOptions};
use kdeck::view::{
    BrokerStatus, ClusterSource, ClusterView, Command, ConfigTarget, ProduceRequest, ReplicaRole, SeekPosition,
    TailBuffer, TailMode, TailSpec,
};

mod common;
use common::listeners::{bootstrap, connect, embedded, run};

const PATIENCE: Duration = Duration::from_secs(60);

/// Refreshes faster than a console would (the console's minimum is a second): tests wait on
/// conditions, and quicker rounds meet them sooner.
fn attach(client: KafkaClient) -> RemoteSource {
    RemoteSource::start(
        client,
        SourceOptions {
            cluster_name: None,
            refresh: Duration::from_millis(250),
            read_only: false,
            event_history: 500,
        },
    )
}

/// The first view that satisfies `condition`, or a panic naming what was awaited and the
/// last thing `condition` said.
async fn wait_view(
    source: &dyn ClusterSource,
    what: &str,
    condition: impl Fn(&ClusterView) -> Result<(), String>,
) -> Arc<ClusterView> {
    let mut views = source.views();
    let mut last = String::new();
    let wait = async {
        loop {
            let view = views.borrow_and_update().clone();
            match condition(&view) {
                Ok(()) => return view,
                Err(why) => last = why,
            }
            views.changed().await.expect("the view task runs");
        }
    };
    match tokio::time::timeout(PATIENCE, wait).await {
        Ok(view) => view,
        Err(_) => panic!("timed out waiting for {what}: {last}"),
    }
}

async fn ok(source: &dyn ClusterSource, command: Command) -> String {
    let outcome = run(source, command).await;
    outcome.result.unwrap_or_else(|e| panic!("{}: {e}", outcome.command))
}

fn produce(topic: &str, partition: i32, value: &str) -> Command {
    Command::Produce(ProduceRequest {
        topic: topic.into(),
        partition: Some(partition),
        key: None,
        value: value.into(),
        headers: vec![("source".into(), "test".into())],
    })
}

/// Everything both views know, side by side: `Err` names the first difference.
///
/// Not compared, because an external cluster cannot tell them or tells them on other clocks:
/// byte rates (JMX), sizes (DescribeLogDirs, asked every few refreshes), followers' log end offsets (only the leader's high watermark is
/// public), a group's generation (DescribeGroups does not carry it), change times and
/// events (the remote ones come from diffing its own refreshes).
fn same_cluster(embedded: &ClusterView, remote: &ClusterView) -> Result<(), String> {
    let check = |what: String, a: String, b: String| {
        if a == b {
            Ok(())
        } else {
            Err(format!("{what}: embedded {a}, remote {b}"))
        }
    };
    check(
        "controller".into(),
        format!("{:?}", embedded.controller),
        format!("{:?}", remote.controller),
    )?;
    let brokers = |v: &ClusterView| {
        v.brokers
            .iter()
            .map(|b| (b.id, b.status.is_up(), b.is_controller, b.leaders, b.replicas))
            .collect::<Vec<_>>()
    };
    check(
        "brokers (id, up, controller, leaders, replicas)".into(),
        format!("{:?}", brokers(embedded)),
        format!("{:?}", brokers(remote)),
    )?;
    let topics = |v: &ClusterView| {
        v.topics
            .iter()
            .map(|t| {
                (
                    t.name.clone(),
                    t.internal,
                    t.partitions,
                    t.replication_factor,
                    t.under_replicated,
                    t.offline,
                    t.messages,
                    t.total_lag,
                )
            })
            .collect::<Vec<_>>()
    };
    check(
        "topics".into(),
        format!("{:?}", topics(embedded)),
        format!("{:?}", topics(remote)),
    )?;
    let partitions = |v: &ClusterView| {
        v.partitions
            .iter()
            .map(|p| {
                let roles: Vec<(i32, ReplicaRole)> = p.replicas.iter().map(|r| (r.broker, r.role)).collect();
                (
                    format!("{}-{}", p.topic, p.partition),
                    p.leader,
                    p.leader_epoch,
                    roles,
                    p.isr.clone(),
                    p.preferred_leader,
                    p.high_watermark,
                    p.log_start_offset,
                    p.under_replicated,
                )
            })
            .collect::<Vec<_>>()
    };
    check(
        "partitions".into(),
        format!("{:?}", partitions(embedded)),
        format!("{:?}", partitions(remote)),
    )?;
    let groups = |v: &ClusterView| {
        v.groups
            .iter()
            .map(|g| {
                let offsets: Vec<_> = g
                    .offsets
                    .iter()
                    .map(|o| (o.topic.clone(), o.partition, o.committed, o.end, o.lag))
                    .collect();
                (
                    g.group_id.clone(),
                    g.state.clone(),
                    g.members.len(),
                    g.coordinator,
                    offsets,
                    g.total_lag,
                )
            })
            .collect::<Vec<_>>()
    };
    check(
        "groups".into(),
        format!("{:?}", groups(embedded)),
        format!("{:?}", groups(remote)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_remote_view_matches_the_embedded_one() {
    let embedded = embedded().await;
    ok(
        &embedded,
        Command::CreateTopic {
            name: "orders".into(),
            partitions: 3,
            replication_factor: 3,
            cleanup_policy: "delete".into(),
        },
    )
    .await;
    for i in 0..9 {
        ok(&embedded, produce("orders", i % 3, &format!("order {i}"))).await;
    }
    // A group that read some of each partition: committed offsets, no members.
    let mut consumer = Consumer::new(
        embedded.cluster().clone(),
        ConsumerConfig {
            group_id: Some("billing".into()),
            enable_auto_commit: false,
            ..ConsumerConfig::default()
        },
    );
    let tps: Vec<TopicPartition> = (0..3).map(|p| TopicPartition::new("orders", p)).collect();
    consumer.assign(tps.clone());
    consumer
        .commit_offsets(tps.into_iter().zip([1, 2, 3]).collect())
        .await
        .expect("offsets committed");
    consumer.close().await;

    let remote = attach(connect(&bootstrap(&embedded)).await);
    let mut embedded_views = embedded.views();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut last = String::new();
    // Both refresh on their own clocks: wait until a pair agrees.
    loop {
        let mine = embedded_views.borrow_and_update().clone();
        let theirs = remote.views().borrow().clone();
        let group_read = theirs
            .groups
            .iter()
            .any(|g| g.group_id == "billing" && !g.offsets.is_empty());
        if group_read {
            match same_cluster(&mine, &theirs) {
                Ok(()) => {
                    let billing = theirs.groups.iter().find(|g| g.group_id == "billing").expect("billing");
                    assert_eq!(
                        billing.total_lag,
                        3 * 3 - (1 + 2 + 3),
                        "lag = high watermark - committed"
                    );
                    assert_eq!(theirs.topic("orders").map(|t| t.messages), Some(9));
                    assert!(theirs.problems.is_empty(), "{:?}", theirs.problems);
                    assert!(theirs.events.first().is_some_and(|e| e.text.starts_with("attached to")));
                    break;
                }
                Err(why) => last = why,
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the views never matched: {last}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(remote);
    embedded.shutdown().await;
}

#[path = "common/serve.rs"]
mod serve;

fn start_serve() -> (serve::Serve, String) {
    let serve = serve::Serve::start("");
    let bootstrap = serve.bootstrap.clone();
    (serve, bootstrap)
}

fn leaders(view: &ClusterView, topic: &str) -> BTreeMap<i32, Option<i32>> {
    view.partitions_of(topic).map(|p| (p.partition, p.leader)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_broker_shows_down_and_a_preferred_election_restores_its_leaders() {
    let (mut server, bootstrap) = tokio::task::block_in_place(start_serve);
    let remote = attach(connect(&bootstrap).await);
    ok(
        &remote,
        Command::CreateTopic {
            name: "payments".into(),
            partitions: 6,
            replication_factor: 3,
            cleanup_policy: "delete".into(),
        },
    )
    .await;
    let balanced = wait_view(&remote, "payments led by preferred replicas", |v| {
        let parts: Vec<_> = v.partitions_of("payments").collect();
        if parts.len() == 6 && parts.iter().all(|p| p.preferred_leads() && !p.under_replicated) {
            Ok(())
        } else {
            Err(format!("{:?}", leaders(v, "payments")))
        }
    })
    .await;
    let led_by_1 = balanced
        .partitions_of("payments")
        .filter(|p| p.leader == Some(1))
        .count();
    assert!(led_by_1 > 0, "broker 1 leads something before the kill");

    // The tail reads what the source produced, with headers.
    let tail = remote.tail(TailSpec::ring("payments", None, SeekPosition::Beginning), 100);
    for p in 0..6 {
        ok(&remote, produce("payments", p, &format!("payment {p}"))).await;
    }
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let mut values: Vec<String> = tail
            .buffer
            .records()
            .iter()
            .filter_map(|r| r.value.as_ref().map(|v| String::from_utf8_lossy(v).into_owned()))
            .collect();
        values.sort();
        if values.len() == 6 {
            assert_eq!(values, (0..6).map(|p| format!("payment {p}")).collect::<Vec<_>>());
            let record = &tail.buffer.records()[0];
            assert_eq!(record.headers.len(), 1);
            assert_eq!(record.headers[0].0, "source");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the tail read {values:?} (error: {:?})",
            tail.buffer.error()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(tail);

    tokio::task::block_in_place(|| {
        server.command("kill 1");
    });
    let down = wait_view(&remote, "broker 1 down and its leaderships moved", |v| {
        let status = v.brokers.iter().find(|b| b.id == 1).map(|b| b.status);
        let moved = v
            .partitions_of("payments")
            .all(|p| p.leader.is_some() && p.leader != Some(1));
        if matches!(status, Some(BrokerStatus::Down)) && moved {
            Ok(())
        } else {
            Err(format!("broker 1 {status:?}, leaders {:?}", leaders(v, "payments")))
        }
    })
    .await;
    assert!(
        down.problems.iter().any(|p| p.starts_with("broker 1 ")),
        "the header names the broker: {:?}",
        down.problems
    );
    let texts: Vec<&str> = down.events.iter().map(|e| e.text.as_str()).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("broker 1 down: gone from the cluster's metadata")),
        "an event says so: {texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("leader payments-") && t.contains(": 1 -> ")),
        "and that leaders moved: {texts:?}"
    );

    tokio::task::block_in_place(|| {
        server.command("start 1");
    });
    wait_view(&remote, "broker 1 back in every ISR", |v| {
        let back = v.brokers.iter().any(|b| b.id == 1 && b.status == BrokerStatus::Online);
        let full = v.partitions_of("payments").all(|p| p.isr.len() == 3);
        if back && full {
            Ok(())
        } else {
            Err(format!(
                "back {back}, ISRs {:?}",
                v.partitions_of("payments").map(|p| p.isr.clone()).collect::<Vec<_>>()
            ))
        }
    })
    .await;
    let outcome = ok(&remote, Command::ElectPreferredLeaders { topic: None }).await;
    assert!(outcome.starts_with("preferred-leader election"), "{outcome}");
    wait_view(&remote, "preferred leaders restored", |v| {
        if v.partitions_of("payments").all(|p| p.preferred_leads()) {
            Ok(())
        } else {
            Err(format!("{:?}", leaders(v, "payments")))
        }
    })
    .await;

    let refused = run(&remote, Command::KillBroker(2)).await;
    assert_eq!(
        refused.result,
        Err("not available on an external cluster: Kafka has no API to stop or start a broker".into())
    );
}

/// DescribeLogDirs of every broker: each replica's size, a topic's as its leaders' sum and a
/// broker's disk use as its replicas' sum show instead of "-".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_dirs_give_replica_topic_and_broker_sizes() {
    let (_server, bootstrap) = tokio::task::block_in_place(start_serve);
    let remote = attach(connect(&bootstrap).await);
    ok(
        &remote,
        Command::CreateTopic {
            name: "sized".into(),
            partitions: 2,
            replication_factor: 3,
            cleanup_policy: "delete".into(),
        },
    )
    .await;
    for i in 0..20 {
        ok(
            &remote,
            produce("sized", i % 2, &format!("a record of some length {i}")),
        )
        .await;
    }
    let view = wait_view(&remote, "sizes of every replica of sized", |v| {
        let parts: Vec<_> = v.partitions_of("sized").collect();
        let sizes: Vec<Option<u64>> = parts
            .iter()
            .flat_map(|p| p.replicas.iter().map(|r| r.size_bytes))
            .collect();
        let full = parts.len() == 2
            && parts
                .iter()
                .all(|p| p.high_watermark == Some(10) && !p.under_replicated)
            && sizes.iter().all(|s| s.is_some_and(|s| s > 0))
            && parts.iter().all(|p| {
                let leader = p.replicas.iter().find(|r| r.role == ReplicaRole::Leader);
                p.replicas
                    .iter()
                    .all(|r| r.size_bytes == leader.and_then(|l| l.size_bytes))
            });
        if full { Ok(()) } else { Err(format!("{sizes:?}")) }
    })
    .await;
    let leaders: u64 = view
        .partitions_of("sized")
        .filter_map(|p| p.replicas.iter().find(|r| r.role == ReplicaRole::Leader)?.size_bytes)
        .sum();
    let topic = view.topic("sized").expect("sized is listed");
    assert_eq!(topic.size_bytes, Some(leaders), "a topic's size is its leaders' sum");
    for b in &view.brokers {
        let hosted: u64 = view
            .partitions
            .iter()
            .flat_map(|p| &p.replicas)
            .filter(|r| r.broker == b.id)
            .filter_map(|r| r.size_bytes)
            .sum();
        let disk = b.disk_bytes.expect("every broker tells its disk use");
        assert!(
            disk >= hosted && hosted > 0,
            "broker {}: disk {disk}, replicas {hosted}",
            b.id
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_source_refuses_every_change() {
    let (_server, bootstrap) = tokio::task::block_in_place(start_serve);
    let remote = RemoteSource::start(
        connect(&bootstrap).await,
        SourceOptions {
            cluster_name: Some("ro".into()),
            refresh: Duration::from_millis(250),
            read_only: true,
            event_history: 10,
        },
    );
    assert!(remote.capabilities().read_only);
    for command in [
        Command::CreateTopic {
            name: "nope".into(),
            partitions: 1,
            replication_factor: 1,
            cleanup_policy: "delete".into(),
        },
        produce("nope", 0, "x"),
        Command::ElectPreferredLeaders { topic: None },
        Command::DeleteTopic { name: "nope".into() },
    ] {
        let outcome = run(&remote, command).await;
        assert!(
            outcome.result.as_ref().is_err_and(|e| e.starts_with("read-only")),
            "{outcome:?}"
        );
    }
    let view = wait_view(&remote, "the first refresh", |v| {
        if v.brokers.len() == 3 {
            Ok(())
        } else {
            Err(format!("{} brokers", v.brokers.len()))
        }
    })
    .await;
    assert_eq!(view.cluster_name, "ro");
    assert!(view.topic("nope").is_none(), "nothing was created");
    // Looking is not changing: the configs screen of a read-only console still lists them.
    let defaults = tokio::time::timeout(PATIENCE, remote.describe_configs(ConfigTarget::ClusterDefault))
        .await
        .expect("an answer in time")
        .expect("answered")
        .expect("the cluster's defaults");
    assert!(defaults.iter().any(|r| r.name == "log.retention.ms"), "{defaults:?}");
}

/// Waits until `condition` holds for a tail's buffer.
async fn until_tail(what: &str, buffer: &TailBuffer, condition: impl Fn(&TailBuffer) -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !condition(buffer) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}: {} records, scanned {}, matched {}, error {:?}",
            buffer.records().len(),
            buffer.scanned(),
            buffer.matched(),
            buffer.error()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn tail_offsets(buffer: &TailBuffer) -> Vec<i64> {
    buffer.records().iter().map(|r| r.offset).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_window_reads_from_its_offset_and_a_search_finds_the_matches() {
    let embedded = embedded().await;
    let client = connect(&bootstrap(&embedded)).await;
    let remote = attach(client.clone());
    ok(
        &remote,
        Command::CreateTopic {
            name: "browse".into(),
            partitions: 1,
            replication_factor: 3,
            cleanup_policy: "delete".into(),
        },
    )
    .await;
    wait_view(&remote, "browse with a leader", |v| {
        if v.partitions_of("browse").any(|p| p.leader.is_some()) {
            Ok(())
        } else {
            Err("no leader yet".into())
        }
    })
    .await;
    let needles = [7_i64, 2_500, 5_999];
    for base in (0..6_000_i64).step_by(500) {
        let batch = (base..base + 500)
            .map(|offset| OutRecord {
                key: Some(format!("k{offset}").into()),
                value: Some(if needles.contains(&offset) {
                    format!("a needle at {offset}").into()
                } else {
                    format!("record {offset}").into()
                }),
                ..OutRecord::default()
            })
            .collect();
        let at = ops::produce(&client, "browse", 0, batch, -1).await.expect("produced");
        assert_eq!(at, base);
    }

    let window = TailSpec {
        mode: TailMode::Window,
        ..TailSpec::ring("browse", Some(0), SeekPosition::Offset(100))
    };
    let tail = remote.tail(window, 1_000);
    until_tail("a full window", &tail.buffer, |b| b.room() == 0).await;
    assert_eq!(tail_offsets(&tail.buffer), (100..1_100).collect::<Vec<_>>());
    assert_eq!(tail.buffer.log_starts(), vec![(0, 0)]);
    tail.buffer.advance(500);
    until_tail("the window moved on", &tail.buffer, |b| b.room() == 0).await;
    assert_eq!(tail_offsets(&tail.buffer), (600..1_600).collect::<Vec<_>>());
    drop(tail);

    let search = TailSpec {
        mode: TailMode::Window,
        filter: Some("needle".into()),
        until_end: true,
        ..TailSpec::ring("browse", Some(0), SeekPosition::Offset(-5))
    };
    let found = remote.tail(search, 1_000);
    until_tail("the search done", &found.buffer, TailBuffer::is_done).await;
    assert_eq!(tail_offsets(&found.buffer), needles.to_vec());
    assert_eq!((found.buffer.scanned(), found.buffer.matched()), (6_000, 3));
    drop(found);
    drop(remote);
    embedded.shutdown().await;
}

/// The console attaches before it needs a terminal, so an unreachable cluster is an error
/// and exit code 1 even here, without one.
#[test]
fn an_unreachable_bootstrap_fails_fast_with_a_clear_message() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = free.local_addr().expect("address").port();
    drop(free);
    for bootstrap in ["127.0.0.1:1".to_string(), format!("127.0.0.1:{port}")] {
        let home = tempfile::tempdir().expect("temp dir");
        let output = Process::new(env!("CARGO_BIN_EXE_kdeck"))
            .args(["--bootstrap", &bootstrap])
            .env("XDG_CONFIG_HOME", home.path())
            .env("XDG_DATA_HOME", home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("kdeck runs");
        assert_eq!(output.status.code(), Some(1), "{bootstrap}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!("cannot attach the console to {bootstrap}")) && stderr.contains(&bootstrap),
            "{stderr}"
        );
        assert!(
            !stderr.contains("needs a terminal"),
            "the connection is checked first: {stderr}"
        );
    }
}
