//! Transactions in the message tail, from both sources: the embedded cluster and the same
//! cluster attached over the Kafka protocol mark each record written in a transaction as
//! committed, aborted or open (until its marker comes, then the mark follows), show no
//! marker as a message, and read as read_committed they stop at the last stable offset and
//! leave the aborted records out.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::engine::{config, ready, wall_clock_ms};
use common::scratch_dir;
use kdeck::embedded::tail_cluster;
use kdeck::engine::{Acks, Cluster, TopicConfig, TopicPartition};
use kdeck::remote::source::{RemoteSource, SourceOptions};
use kdeck::remote::{ClientSettings, KafkaClient, RemoteConfig};
use kdeck::storage::records::{self, Compression, Record};
use kdeck::view::{ClusterSource, SeekPosition, TailBuffer, TailHandle, TailSpec, TxnMark};
use kdeck::wire::{WireConfig, WireServer};
use tokio::time::Instant;

const PATIENCE: Duration = Duration::from_secs(60);
const TOPIC: &str = "tx";

/// A batch of `values` from producer `pid` (transactional or not).
fn batch(pid: i64, transactional: bool, values: &[&str]) -> Vec<u8> {
    let recs: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut r = records::record(i as i64, wall_clock_ms(), None, Some(Bytes::from(v.to_string())));
            r.transactional = transactional;
            if transactional {
                r.producer_id = pid;
                r.producer_epoch = 0;
                r.sequence = i as i32;
            }
            r
        })
        .collect();
    records::encode_batch(&recs, Compression::None)
        .expect("encodable")
        .to_vec()
}

/// The tail's records as (value, mark).
fn marks(buffer: &TailBuffer) -> Vec<(String, Option<TxnMark>)> {
    buffer
        .records()
        .iter()
        .map(|r| {
            let value = r.value.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
            (value.into_owned(), r.txn)
        })
        .collect()
}

async fn until(what: &str, buffer: &TailBuffer, want: &[(&str, Option<TxnMark>)]) {
    let want: Vec<(String, Option<TxnMark>)> = want.iter().map(|(v, m)| (v.to_string(), *m)).collect();
    let deadline = Instant::now() + PATIENCE;
    while marks(buffer) != want {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {:?} (error {:?}), wanted {want:?}",
            marks(buffer),
            buffer.error()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Offsets 0..8: a plain record, producer a's committed transaction (a1 a2), producer b's
/// aborted one (b1), the two markers, producer c's open transaction (c1) and a plain record
/// after it. The last stable offset is 6 (c1), the high watermark 8.
async fn cluster_with_transactions(dir: &std::path::Path) -> (Cluster, i64) {
    let cluster = Cluster::start(config(dir)).await.expect("start");
    cluster
        .create_topic(TOPIC, TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, TOPIC, 1).await;
    let tp = TopicPartition::new(TOPIC, 0);
    let (a, _) = cluster.init_producer_id().await.expect("pid a");
    let (b, _) = cluster.init_producer_id().await.expect("pid b");
    let (c, _) = cluster.init_producer_id().await.expect("pid c");
    let produce = |bytes: Vec<u8>| cluster.produce(&tp, bytes, Acks::All, PATIENCE);
    assert_eq!(produce(batch(-1, false, &["p0"])).await, Ok(0));
    assert_eq!(produce(batch(a, true, &["a1", "a2"])).await, Ok(1));
    assert_eq!(produce(batch(b, true, &["b1"])).await, Ok(3));
    assert_eq!(cluster.write_txn_marker(&tp, a, 0, 0, true).await, Ok(4));
    assert_eq!(cluster.write_txn_marker(&tp, b, 0, 0, false).await, Ok(5));
    assert_eq!(produce(batch(c, true, &["c1"])).await, Ok(6));
    assert_eq!(produce(batch(-1, false, &["p7"])).await, Ok(7));
    (cluster, c)
}

fn from_start(read_committed: bool) -> TailSpec {
    TailSpec {
        read_committed,
        ..TailSpec::ring(TOPIC, Some(0), SeekPosition::Beginning)
    }
}

const UNCOMMITTED: [(&str, Option<TxnMark>); 6] = [
    ("p0", None),
    ("a1", Some(TxnMark::Committed)),
    ("a2", Some(TxnMark::Committed)),
    ("b1", Some(TxnMark::Aborted)),
    ("c1", Some(TxnMark::Open)),
    ("p7", None),
];

const COMMITTED: [(&str, Option<TxnMark>); 3] = [
    ("p0", None),
    ("a1", Some(TxnMark::Committed)),
    ("a2", Some(TxnMark::Committed)),
];

/// Both sources' tails of the same log: read_uncommitted marks every record, read_committed
/// stops before the open transaction; once it commits, the open record's mark follows and
/// read_committed reads on.
async fn check(source: &str, tail: impl Fn(TailSpec) -> TailHandle, cluster: &Cluster, c: i64) {
    let uncommitted = tail(from_start(false));
    until(
        &format!("{source}: read_uncommitted marks"),
        &uncommitted.buffer,
        &UNCOMMITTED,
    )
    .await;
    let committed = tail(from_start(true));
    until(&format!("{source}: read_committed"), &committed.buffer, &COMMITTED).await;
    let tp = TopicPartition::new(TOPIC, 0);
    assert_eq!(cluster.write_txn_marker(&tp, c, 0, 0, true).await, Ok(8));
    let mut settled = UNCOMMITTED;
    settled[4].1 = Some(TxnMark::Committed);
    until(
        &format!("{source}: the open record committed"),
        &uncommitted.buffer,
        &settled,
    )
    .await;
    let mut more = COMMITTED.to_vec();
    more.extend([("c1", Some(TxnMark::Committed)), ("p7", None)]);
    until(
        &format!("{source}: read_committed past the commit"),
        &committed.buffer,
        &more,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_tail_marks_transactions_and_reads_committed() {
    let dir = scratch_dir();
    let (cluster, c) = cluster_with_transactions(dir.path()).await;
    check("embedded", |spec| tail_cluster(&cluster, spec, 100), &cluster, c).await;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_remote_tail_marks_transactions_and_reads_committed() {
    let dir = scratch_dir();
    let (cluster, c) = cluster_with_transactions(dir.path()).await;
    let server = WireServer::start(
        cluster.clone(),
        WireConfig {
            base_port: 0,
            ..WireConfig::default()
        },
    )
    .await
    .expect("listeners open");
    let bootstrap: Vec<String> = server.listeners().iter().map(|l| l.addr.to_string()).collect();
    let settings = ClientSettings::from_config(&RemoteConfig {
        bootstrap: bootstrap.join(","),
        connect_timeout_ms: 2_000,
        request_timeout_ms: 5_000,
        ..RemoteConfig::default()
    })
    .expect("valid settings");
    let client = KafkaClient::connect(settings).await.expect("the cluster answers");
    let remote = Arc::new(RemoteSource::start(
        client,
        SourceOptions {
            cluster_name: None,
            refresh: Duration::from_millis(250),
            read_only: true,
            event_history: 100,
        },
    ));
    check("remote", |spec| remote.tail(spec, 100), &cluster, c).await;
    server.shutdown();
    cluster.shutdown().await;
}
