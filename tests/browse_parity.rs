//! Browsing gives the same rows from the embedded cluster and from the same cluster attached
//! over the Kafka protocol: one console script (`g` over all partitions, the next page, `g`
//! again and a search for `你好`, then one partition from its start) runs against each source,
//! and both show the same records, in timestamp order across partitions (ties by partition,
//! then offset), and the same matches.

use std::sync::Arc;
use std::time::Duration;

use chrono::{FixedOffset, Utc};
use kdeck::config::{ConsoleConfig, KdeckConfig};
use kdeck::remote::ops::{self, OutRecord};
use kdeck::remote::source::{RemoteSource, SourceOptions};
use kdeck::tui::action::Action;
use kdeck::tui::app::App;
use kdeck::tui::keymap::Keymap;
use kdeck::tui::theme::Theme;
use kdeck::tui::{Console, Pane};
use kdeck::view::{ClusterSource, ClusterView, Command, SeekPosition};
use tokio::sync::mpsc;

mod common;
use common::listeners::{bootstrap, connect, embedded, run};

const PATIENCE: Duration = Duration::from_secs(60);
const TOPIC: &str = "orders";
/// Records per partition.
const PER_PARTITION: i64 = 10;
/// The console's window: small, so the data set spans pages.
const WINDOW: usize = 8;

/// A row as the Messages pane shows it.
type Row = (i32, i64, String, String);

/// The data set: partition `p`, offset `k` at `base + 10k` (+5 in partition 1, so it falls
/// between; partitions 0 and 2 tie, and partition 0 comes first). Partition 2's records are
/// produced first, so the order cannot come from arrival.
fn data_set(base: i64) -> Vec<(i32, Vec<OutRecord>)> {
    [2, 1, 0]
        .into_iter()
        .map(|p| {
            let records = (0..PER_PARTITION)
                .map(|k| {
                    let value = match (p, k) {
                        (0, 0) => "你好 😀".to_string(),
                        (2, 7) => "hello 你好".to_string(),
                        _ => format!("order {p}-{k}"),
                    };
                    OutRecord {
                        key: Some(format!("k{p}-{k}").into()),
                        value: Some(value.into()),
                        headers: Vec::new(),
                        timestamp: Some(base + 10 * k + if p == 1 { 5 } else { 0 }),
                    }
                })
                .collect();
            (p, records)
        })
        .collect()
}

fn row(p: i32, k: i64) -> Row {
    let value = match (p, k) {
        (0, 0) => "你好 😀".to_string(),
        (2, 7) => "hello 你好".to_string(),
        _ => format!("order {p}-{k}"),
    };
    (p, k, format!("k{p}-{k}"), value)
}

/// Every record in the order both sources must give: timestamp, then partition, then offset.
fn in_time_order() -> Vec<Row> {
    let mut all: Vec<(i64, i32, i64)> = (0..3)
        .flat_map(|p| (0..PER_PARTITION).map(move |k| (10 * k + if p == 1 { 5 } else { 0 }, p, k)))
        .collect();
    all.sort();
    all.into_iter().map(|(_, p, k)| row(p, k)).collect()
}

/// The first view in which `orders` has a leader for each partition.
async fn view_with_topic(source: &dyn ClusterSource) -> Arc<ClusterView> {
    let mut views = source.views();
    let wait = async {
        loop {
            let view = views.borrow_and_update().clone();
            let led = view.partitions_of(TOPIC).filter(|p| p.leader.is_some()).count();
            if led == 3 && view.topic(TOPIC).is_some_and(|t| t.messages == 3 * PER_PARTITION) {
                return view;
            }
            views.changed().await.expect("the view task runs");
        }
    };
    tokio::time::timeout(PATIENCE, wait)
        .await
        .expect("the topic shows with its records")
}

/// The console on `source`, with a window of [`WINDOW`] records.
fn console(source: Arc<dyn ClusterSource>, view: Arc<ClusterView>) -> Console {
    let config = KdeckConfig::from_layers(None).expect("the defaults load");
    let (tx, _outcomes) = mpsc::unbounded_channel();
    let app = App::new(
        source.capabilities(),
        view,
        Keymap::from_config(&config.keys).expect("default keys"),
        Theme::colored(),
        ConsoleConfig {
            tail_capacity: WINDOW,
            ..ConsoleConfig::default()
        },
        FixedOffset::east_opt(0).expect("UTC"),
        None,
    );
    Console::new(app, source, tx)
}

fn rows(console: &Console) -> Vec<Row> {
    let text = |b: &Option<bytes::Bytes>| {
        b.as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    console
        .app
        .visible_messages()
        .iter()
        .map(|r| (r.partition, r.offset, text(&r.key), text(&r.value)))
        .collect()
}

/// Waits until the console's tail meets `condition`.
async fn until(what: &str, console: &Console, condition: impl Fn(&Console) -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !condition(console) {
        let buffer = console
            .app
            .tail
            .as_ref()
            .and_then(|t| t.handle.as_ref())
            .map(|h| &h.buffer);
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}: rows {:?}, error {:?}",
            rows(console),
            buffer.and_then(|b| b.error())
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn window_full(console: &Console) -> bool {
    console
        .app
        .tail
        .as_ref()
        .and_then(|t| t.handle.as_ref())
        .is_some_and(|h| h.buffer.room() == 0)
}

fn search_done(console: &Console) -> bool {
    console
        .app
        .tail
        .as_ref()
        .and_then(|t| t.search_progress())
        .is_some_and(|(_, _, done)| done)
}

/// What the Messages pane showed after each step of the script.
#[derive(Debug, PartialEq, Eq)]
struct Pages {
    first: Vec<Row>,
    next: Vec<Row>,
    found: Vec<Row>,
    partition: Vec<Row>,
}

/// The script: `g` over all partitions, down past the window's end (the next page), `g`
/// again and `/你好`, then partition 0 from its start.
async fn browse(source: Arc<dyn ClusterSource>) -> Pages {
    let view = view_with_topic(source.as_ref()).await;
    let mut console = console(source, view);
    let now = Utc::now();
    let seek = |partition| Action::Seek {
        topic: TOPIC.into(),
        partition,
        to: SeekPosition::Beginning,
    };
    console.act(Action::Focus { pane: Pane::Messages }, now);
    console.act(seek(None), now);
    until("the first page", &console, window_full).await;
    let first = rows(&console);
    console.act(Action::Bottom, now);
    console.act(Action::Move { by: 1 }, now);
    until("the next page", &console, |c| window_full(c) && rows(c) != first).await;
    let next = rows(&console);
    console.act(seek(None), now);
    until("the first page again", &console, window_full).await;
    console.act(Action::Search { text: "你好".into() }, now);
    until("the search done", &console, search_done).await;
    let found = rows(&console);
    console.act(Action::StopSearch, now);
    console.act(seek(Some(0)), now);
    until("partition 0", &console, window_full).await;
    let partition = rows(&console);
    Pages {
        first,
        next,
        found,
        partition,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_and_the_remote_source_browse_alike_in_time_order() {
    let embedded = Arc::new(embedded().await);
    let created = run(
        embedded.as_ref(),
        Command::CreateTopic {
            name: TOPIC.into(),
            partitions: 3,
            replication_factor: 3,
            cleanup_policy: "delete".into(),
        },
    )
    .await;
    assert!(created.result.is_ok(), "{created:?}");
    let client = connect(&bootstrap(&embedded)).await;
    // Recent, or retention would take the records while the test runs.
    let base = Utc::now().timestamp_millis() - 60_000;
    for (partition, records) in data_set(base) {
        let mut produced = Err(String::new());
        // The partition's leader may still be settling right after the topic was created.
        for _ in 0..50 {
            produced = ops::produce(&client, TOPIC, partition, records.clone(), -1)
                .await
                .map_err(|e| e.to_string());
            if produced.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(produced, Ok(0), "partition {partition}");
    }

    let from_embedded = browse(Arc::clone(&embedded) as Arc<dyn ClusterSource>).await;
    let remote = Arc::new(RemoteSource::start(
        client,
        SourceOptions {
            cluster_name: None,
            refresh: Duration::from_millis(250),
            read_only: true,
            event_history: 100,
        },
    ));
    let from_remote = browse(Arc::clone(&remote) as Arc<dyn ClusterSource>).await;
    assert_eq!(from_remote, from_embedded, "the sources browse differently");

    let all = in_time_order();
    assert_eq!(
        from_embedded.first,
        all[..WINDOW].to_vec(),
        "the first page, in time order"
    );
    assert_eq!(
        from_embedded.next,
        all[WINDOW / 2..WINDOW / 2 + WINDOW].to_vec(),
        "the next page moved on by half a window"
    );
    assert_eq!(from_embedded.found, vec![row(0, 0), row(2, 7)], "the search's matches");
    assert_eq!(
        from_embedded.partition,
        (0..WINDOW as i64).map(|k| row(0, k)).collect::<Vec<_>>(),
        "partition 0 from its start"
    );
    drop(remote);
    embedded.shutdown().await;
}
