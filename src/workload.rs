//! Built-in demo traffic, so the console shows a moving cluster the moment it opens: the
//! activity-tracking scenario of Kafka's origin story. Users' page views (keyed by user id,
//! JSON values, some in Chinese) and clicks are produced at a modest rate; three consumer
//! groups read them: `analytics` (3 members sharing `page-views`), `audit` (a second group
//! on `page-views`: every group gets every record) and `billing` (one deliberately slow
//! member on `clicks`, whose lag stays visible but bounded). Producers and consumers retry
//! through failures like real clients, so the demo survives broker kills.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Result;
use bytes::Bytes;
use serde::Deserialize;
use tokio::task::JoinHandle;

use crate::client::consumer::{Consumer, ConsumerConfig, OffsetReset};
use crate::client::producer::{Producer, ProducerConfig, ProducerRecord};
use crate::engine::{Clock, Cluster, TopicConfig};

pub const PAGE_VIEWS: &str = "page-views";
pub const CLICKS: &str = "clicks";

/// `[demo]` in the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DemoConfig {
    pub page_views_per_sec: u32,
    pub clicks_per_sec: u32,
    /// Distinct user ids (the record keys).
    pub users: u32,
    /// How long the slow `billing` consumer spends per record.
    pub billing_ms_per_record: u64,
    /// `segment.bytes` of the demo topics: small, so that retention can delete within
    /// minutes (user topics keep Kafka's 1 GiB).
    pub segment_bytes: u64,
    /// `retention.ms` of the demo topics.
    pub retention_ms: i64,
    /// `retention.bytes` of each demo partition: a day-long demo stays within a few hundred
    /// MB on disk.
    pub retention_bytes: i64,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            page_views_per_sec: 300,
            clicks_per_sec: 100,
            users: 200,
            billing_ms_per_record: 8,
            segment_bytes: 2 << 20,
            retention_ms: 3_600_000,
            retention_bytes: 8 << 20,
        }
    }
}

/// The running demo; dropping it does not stop it, [`Workload::stop`] does.
pub struct Workload {
    tasks: Vec<JoinHandle<()>>,
    /// Records consumed per consumer (`group/member-index`), for the console and tests.
    pub consumed: BTreeMap<String, Arc<AtomicU64>>,
    pub produced: Arc<AtomicU64>,
}

impl Workload {
    /// Creates the demo topics if needed and starts producers and consumers.
    pub async fn start(cluster: &Cluster, config: DemoConfig) -> Result<Workload> {
        let brokers = cluster.config().brokers;
        let rf = brokers.min(3);
        for (topic, partitions) in [(PAGE_VIEWS, 6), (CLICKS, 3)] {
            if !cluster.metadata().topics.contains_key(topic) {
                let min_isr = if rf >= 3 { 2 } else { 1 };
                cluster
                    .create_topic(
                        topic,
                        TopicConfig::new(partitions, rf)
                            .with_min_insync_replicas(min_isr)
                            .with_segment_bytes(config.segment_bytes)
                            .with_retention(Some(config.retention_ms), Some(config.retention_bytes)),
                    )
                    .await?;
            }
        }
        let produced = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        let producer = Producer::new(cluster.clone(), ProducerConfig::default()).await?;
        tasks.push(tokio::spawn(produce_loop(
            producer.clone(),
            cluster.clock().clone(),
            PAGE_VIEWS,
            config.page_views_per_sec,
            config.users,
            Arc::clone(&produced),
        )));
        tasks.push(tokio::spawn(produce_loop(
            producer,
            cluster.clock().clone(),
            CLICKS,
            config.clicks_per_sec,
            config.users,
            Arc::clone(&produced),
        )));
        let mut consumed = BTreeMap::new();
        let members = [
            ("analytics", PAGE_VIEWS, 3, 0),
            ("audit", PAGE_VIEWS, 1, 0),
            ("billing", CLICKS, 1, config.billing_ms_per_record),
        ];
        for (group, topic, count, delay) in members {
            for i in 0..count {
                let counter = Arc::new(AtomicU64::new(0));
                consumed.insert(format!("{group}/{i}"), Arc::clone(&counter));
                tasks.push(tokio::spawn(consume_loop(
                    cluster.clone(),
                    group,
                    topic,
                    delay,
                    counter,
                )));
            }
        }
        Ok(Workload {
            tasks,
            consumed,
            produced,
        })
    }

    pub fn stop(self) {
        for t in self.tasks {
            t.abort();
        }
    }
}

const PAGES: [&str; 8] = [
    "/",
    "/products",
    "/products/42",
    "/cart",
    "/checkout",
    "/help",
    "/首页",
    "/商品/详情",
];
const REFERRERS: [&str; 4] = [
    "https://www.google.com/",
    "https://news.ycombinator.com/",
    "",
    "https://www.baidu.com/",
];
const AGENTS: [&str; 3] = [
    "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) Safari/604.1",
    "curl/8.11.0",
];

/// A deterministic pseudo-random sequence (no global state, no extra crate).
struct Sequence(u64);

impl Sequence {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

fn json_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Paced on the cluster's clock: a frozen cluster gets no new demo records.
async fn produce_loop(
    producer: Producer,
    clock: Clock,
    topic: &'static str,
    per_sec: u32,
    users: u32,
    produced: Arc<AtomicU64>,
) {
    let mut seq = Sequence(0x2545_f491_4f6c_dd1d ^ topic.len() as u64);
    let tick = Duration::from_millis(100);
    let per_tick = (per_sec / 10).max(1);
    let mut interval = clock.interval(tick);
    loop {
        interval.tick().await;
        for _ in 0..per_tick {
            let user = seq.next() % u64::from(users.max(1));
            let value = if topic == PAGE_VIEWS {
                format!(
                    r#"{{"user":"u{user}","url":"{}","referrer":"{}","user_agent":"{}"}}"#,
                    json_escape(seq.pick(&PAGES)),
                    json_escape(seq.pick(&REFERRERS)),
                    json_escape(seq.pick(&AGENTS)),
                )
            } else {
                format!(r#"{{"user":"u{user}","element":"button-{}"}}"#, seq.next() % 12)
            };
            let record = ProducerRecord {
                topic: topic.to_string(),
                partition: None,
                key: Some(Bytes::from(format!("u{user}"))),
                value: Some(Bytes::from(value)),
                headers: Vec::new(),
                timestamp: None,
            };
            // The producer retries on its own; only acknowledged records are counted.
            let counter = Arc::clone(&produced);
            let enqueued = producer
                .enqueue_with_callback(record, move |outcome| {
                    if outcome.is_ok() {
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                })
                .await;
            if let Err(e) = enqueued {
                tracing::debug!(topic, error = %e, "demo record refused");
            }
        }
    }
}

async fn consume_loop(
    cluster: Cluster,
    group: &'static str,
    topic: &'static str,
    delay_ms: u64,
    counter: Arc<AtomicU64>,
) {
    let clock = cluster.clock().clone();
    let mut consumer = Consumer::new(
        cluster,
        ConsumerConfig {
            group_id: Some(group.to_string()),
            auto_offset_reset: OffsetReset::Earliest,
            auto_commit_interval_ms: 1_000,
            max_poll_records: 100,
            ..ConsumerConfig::default()
        },
    );
    consumer.subscribe(vec![topic.to_string()]);
    loop {
        match consumer.poll(Duration::from_millis(500)).await {
            Ok(records) => {
                counter.fetch_add(records.len() as u64, Ordering::Relaxed);
                if delay_ms > 0 && !records.is_empty() {
                    clock
                        .sleep(Duration::from_millis(delay_ms * records.len() as u64))
                        .await;
                }
            }
            Err(e) => {
                tracing::debug!(group, error = %e, "demo consumer poll failed; retrying");
                clock.sleep(Duration::from_millis(500)).await;
            }
        }
    }
}
