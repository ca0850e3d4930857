//! Built-in demo traffic, so the console shows a moving cluster the moment it opens: the
//! activity-tracking scenario of Kafka's origin story. Users' page views (keyed by user id,
//! JSON values, some in Chinese) and clicks are produced at a modest rate; three consumer
//! groups read them: `analytics` (3 members sharing `page-views`), `audit` (a second group
//! on `page-views`: every group gets every record) and `billing` (one deliberately slow
//! member on `clicks`, whose lag stays visible but bounded). A transactional `checkout`
//! writer places orders on `purchases`, each order one transaction of two records (the order,
//! then its payment) with a short wait between them, so the LSO visibly trails the HW; one
//! order in `declined_one_in` is declined and its transaction aborted. `fulfilment` reads
//! `purchases` read_committed and never sees a declined order. Producers and consumers retry
//! through failures like real clients, so the demo survives broker kills.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{Result, bail};
use bytes::Bytes;
use serde::Deserialize;
use tokio::task::JoinHandle;

use crate::client::consumer::{Consumer, ConsumerConfig, OffsetReset};
use crate::client::producer::{Producer, ProducerConfig, ProducerRecord};
use crate::client::transactional::{TransactionalProducer, TxnConfig, TxnError};
use crate::engine::{Acks, Clock, Cluster, IsolationLevel, TopicConfig, TopicPartition};
use crate::kafka::partitioner::partition_for_key;

pub const PAGE_VIEWS: &str = "page-views";
pub const CLICKS: &str = "clicks";
pub const PURCHASES: &str = "purchases";
/// The `transactional.id` of the demo's checkout writer.
pub const CHECKOUT_TXN_ID: &str = "demo-checkout";
/// Partitions of `purchases`.
const PURCHASES_PARTITIONS: i32 = 3;

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
    /// Orders the transactional checkout writer places per second, one transaction each;
    /// 0 runs no checkout (and no `fulfilment` group).
    pub orders_per_sec: u32,
    /// One order in this many is declined: its transaction is aborted (0: none is).
    pub declined_one_in: u32,
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
            orders_per_sec: 2,
            declined_one_in: 6,
        }
    }
}

/// The running demo; dropping it does not stop it, [`Workload::stop`] does. A trainer or an
/// operator steers it from the console as a scenario's traffic: the producers' `acks`, one
/// member more or fewer in a group, a group's consumers paused.
pub struct Workload {
    cluster: Cluster,
    config: DemoConfig,
    producer_tasks: Mutex<Vec<JoinHandle<()>>>,
    /// The checkout writer: transactional, so acks=all whatever the other producers use.
    checkout: Option<JoinHandle<()>>,
    acks: AtomicI16,
    groups: tokio::sync::Mutex<BTreeMap<&'static str, DemoGroup>>,
    pub produced: Arc<AtomicU64>,
}

/// One of the demo's consumer groups and its members, newest last.
struct DemoGroup {
    topic: &'static str,
    delay_ms: u64,
    isolation: IsolationLevel,
    paused: Arc<AtomicBool>,
    members: Vec<Member>,
    /// The index the next member's counter gets (`group/index`), never reused.
    next: usize,
    /// Records consumed per member, members that left included.
    consumed: BTreeMap<usize, Arc<AtomicU64>>,
}

struct Member {
    task: JoinHandle<()>,
    leave: Arc<AtomicBool>,
}

/// The producers' `acks` as the client takes it.
fn acks_of(code: i16) -> Acks {
    match code {
        0 => Acks::None,
        1 => Acks::Leader,
        _ => Acks::All,
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Workload {
    /// Creates the demo topics if needed and starts producers and consumers.
    pub async fn start(cluster: &Cluster, config: DemoConfig) -> Result<Workload> {
        let brokers = cluster.config().brokers;
        let rf = brokers.min(3);
        let checkout = config.orders_per_sec > 0;
        let topics = [(PAGE_VIEWS, 6), (CLICKS, 3), (PURCHASES, PURCHASES_PARTITIONS)];
        for (topic, partitions) in topics.into_iter().filter(|(t, _)| checkout || *t != PURCHASES) {
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
        let workload = Workload {
            cluster: cluster.clone(),
            checkout: checkout.then(|| tokio::spawn(checkout_loop(cluster.clone(), config.clone()))),
            config,
            producer_tasks: Mutex::new(Vec::new()),
            acks: AtomicI16::new(-1),
            groups: tokio::sync::Mutex::new(BTreeMap::new()),
            produced: Arc::new(AtomicU64::new(0)),
        };
        let tasks = workload.start_producers(-1).await?;
        *lock(&workload.producer_tasks) = tasks;
        let uncommitted = IsolationLevel::ReadUncommitted;
        let groups = [
            ("analytics", PAGE_VIEWS, 3, 0, uncommitted),
            ("audit", PAGE_VIEWS, 1, 0, uncommitted),
            ("billing", CLICKS, 1, workload.config.billing_ms_per_record, uncommitted),
            ("fulfilment", PURCHASES, 1, 0, IsolationLevel::ReadCommitted),
        ];
        {
            let mut runs = workload.groups.lock().await;
            for (name, topic, count, delay_ms, isolation) in groups {
                if topic == PURCHASES && !checkout {
                    continue;
                }
                let mut group = DemoGroup {
                    topic,
                    delay_ms,
                    isolation,
                    paused: Arc::new(AtomicBool::new(false)),
                    members: Vec::new(),
                    next: 0,
                    consumed: BTreeMap::new(),
                };
                for _ in 0..count {
                    workload.spawn_member(name, &mut group);
                }
                runs.insert(name, group);
            }
        }
        Ok(workload)
    }

    /// The producers' tasks with `acks`; idempotence only with acks=all, as Kafka's producer
    /// turns it off by default when acks is not all.
    async fn start_producers(&self, acks: i16) -> Result<Vec<JoinHandle<()>>> {
        let config = ProducerConfig {
            acks: acks_of(acks),
            enable_idempotence: acks == -1,
            ..ProducerConfig::default()
        };
        let producer = Producer::new(self.cluster.clone(), config).await?;
        let tasks = [
            (PAGE_VIEWS, self.config.page_views_per_sec),
            (CLICKS, self.config.clicks_per_sec),
        ]
        .into_iter()
        .map(|(topic, per_sec)| {
            tokio::spawn(produce_loop(
                producer.clone(),
                self.cluster.clock().clone(),
                topic,
                per_sec,
                self.config.users,
                Arc::clone(&self.produced),
            ))
        })
        .collect();
        Ok(tasks)
    }

    fn spawn_member(&self, name: &'static str, group: &mut DemoGroup) {
        let counter = Arc::new(AtomicU64::new(0));
        group.consumed.insert(group.next, Arc::clone(&counter));
        group.next += 1;
        let leave = Arc::new(AtomicBool::new(false));
        let member = DemoMember {
            group: name,
            client_id: format!("{name}-consumer-{}", group.next - 1),
            topic: group.topic,
            delay_ms: group.delay_ms,
            isolation: group.isolation,
        };
        let task = tokio::spawn(consume_loop(
            self.cluster.clone(),
            member,
            Arc::clone(&group.paused),
            Arc::clone(&leave),
            counter,
        ));
        group.members.push(Member { task, leave });
    }

    /// Records consumed per consumer (`group/member-index`), members that left included.
    pub async fn consumed(&self) -> BTreeMap<String, u64> {
        let runs = self.groups.lock().await;
        runs.iter()
            .flat_map(|(name, g)| {
                g.consumed
                    .iter()
                    .map(move |(i, c)| (format!("{name}/{i}"), c.load(Ordering::Relaxed)))
            })
            .collect()
    }

    /// The producers' `acks` now (0, 1 or -1 for all).
    pub fn acks(&self) -> i16 {
        self.acks.load(Ordering::Relaxed)
    }

    /// Restarts the producers with another `acks` (a Kafka producer cannot change it live).
    pub async fn set_acks(&self, acks: i16) -> Result<()> {
        if ![-1, 0, 1].contains(&acks) {
            bail!("acks must be all (-1), 1 or 0, not {acks}");
        }
        // The new producers first: a failure leaves the old ones running.
        let tasks = self.start_producers(acks).await?;
        self.acks.store(acks, Ordering::Relaxed);
        for t in std::mem::replace(&mut *lock(&self.producer_tasks), tasks) {
            t.abort();
        }
        Ok(())
    }

    /// One more consumer in `group`; answers how many it runs now.
    pub async fn add_member(&self, group: &str) -> Result<usize> {
        let mut runs = self.groups.lock().await;
        let (Some(name), Some(run)) = (DEMO_GROUPS.iter().find(|g| **g == group), runs.get_mut(group)) else {
            bail!("the demo runs no group {group} (it runs {})", DEMO_GROUPS.join(", "));
        };
        self.spawn_member(name, run);
        Ok(run.members.len())
    }

    /// The newest consumer of `group` leaves it (its consumer closes: LeaveGroup).
    pub async fn remove_member(&self, group: &str) -> Result<usize> {
        let mut runs = self.groups.lock().await;
        let Some(run) = runs.get_mut(group) else {
            bail!("the demo runs no group {group} (it runs {})", DEMO_GROUPS.join(", "));
        };
        let Some(member) = run.members.pop() else {
            bail!("group {group} has no member left to remove");
        };
        // The loop sees the flag, closes its consumer (LeaveGroup) and ends.
        member.leave.store(true, Ordering::Relaxed);
        Ok(run.members.len())
    }

    /// Stops (or resumes) `group`'s consumers polling, without leaving the group: their
    /// heartbeats go on, so the group keeps its members while the lag grows.
    pub async fn pause_group(&self, group: &str, paused: bool) -> Result<()> {
        let runs = self.groups.lock().await;
        let Some(run) = runs.get(group) else {
            bail!("the demo runs no group {group} (it runs {})", DEMO_GROUPS.join(", "));
        };
        run.paused.store(paused, Ordering::Relaxed);
        Ok(())
    }

    pub fn stop(mut self) {
        for t in lock(&self.producer_tasks).drain(..).chain(self.checkout.take()) {
            t.abort();
        }
        for (_, run) in std::mem::take(self.groups.get_mut()) {
            for m in run.members {
                m.task.abort();
            }
        }
    }
}

/// The demo's consumer groups.
pub const DEMO_GROUPS: [&str; 4] = ["analytics", "audit", "billing", "fulfilment"];

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

/// Who a demo consumer is: its group, `client.id`, topic, time spent per record and
/// `isolation.level`.
struct DemoMember {
    group: &'static str,
    client_id: String,
    topic: &'static str,
    delay_ms: u64,
    isolation: IsolationLevel,
}

async fn consume_loop(
    cluster: Cluster,
    member: DemoMember,
    paused: Arc<AtomicBool>,
    leave: Arc<AtomicBool>,
    counter: Arc<AtomicU64>,
) {
    let DemoMember {
        group,
        client_id,
        topic,
        delay_ms,
        isolation,
    } = member;
    let clock = cluster.clock().clone();
    let mut consumer = Consumer::new(
        cluster,
        ConsumerConfig {
            group_id: Some(group.to_string()),
            auto_offset_reset: OffsetReset::Earliest,
            auto_commit_interval_ms: 1_000,
            max_poll_records: 100,
            client_id,
            isolation_level: isolation,
            ..ConsumerConfig::default()
        },
    );
    consumer.subscribe(vec![topic.to_string()]);
    loop {
        if leave.load(Ordering::Relaxed) {
            consumer.close().await;
            return;
        }
        if paused.load(Ordering::Relaxed) {
            clock.sleep(Duration::from_millis(200)).await;
            continue;
        }
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

/// How long an order's transaction stays open between its two records (the payment being
/// authorised): long enough that the console, redrawing every 250 ms, shows a partition's LSO
/// trailing its HW, short against the time between orders.
const ORDER_OPEN_FOR: Duration = Duration::from_millis(300);
/// Wait before registering the transactional id again after the writer failed.
const CHECKOUT_RETRY: Duration = Duration::from_secs(1);

/// The checkout writer: each order is a transaction of two records on the user's partition
/// of `purchases` (the order, then its payment), committed, or aborted when the payment is
/// declined. Paced on the cluster's clock. A fenced or failed producer (its coordinator gone
/// for longer than `max.block.ms`, say) is replaced by a new instance with the same
/// transactional id, which aborts whatever the old one left open.
async fn checkout_loop(cluster: Cluster, config: DemoConfig) {
    let clock = cluster.clock().clone();
    let every = Duration::from_millis(1_000 / u64::from(config.orders_per_sec.clamp(1, 1_000)));
    let mut seq = Sequence(0x9e37_79b9_7f4a_7c15);
    let mut order: u64 = 0;
    let mut txn_config = TxnConfig::new(CHECKOUT_TXN_ID);
    txn_config.transaction_timeout_ms = 10_000;
    txn_config.max_block = Duration::from_secs(10);
    loop {
        let mut producer = match TransactionalProducer::init(cluster.clone(), txn_config.clone()).await {
            Ok(p) => p,
            Err(e) => {
                tracing::debug!(error = %e, "demo checkout could not register its transactional id; retrying");
                clock.sleep(CHECKOUT_RETRY).await;
                continue;
            }
        };
        let mut interval = clock.interval(every);
        loop {
            interval.tick().await;
            order += 1;
            let user = seq.next() % u64::from(config.users.max(1));
            let declined = config.declined_one_in > 0 && seq.next().is_multiple_of(u64::from(config.declined_one_in));
            let placed = place_order(&mut producer, &clock, &mut seq, order, user, declined).await;
            let outcome = match placed {
                Ok(()) if declined => producer.abort().await,
                Ok(()) => producer.commit().await,
                Err(TxnError::Abortable(e)) => {
                    tracing::debug!(order, error = %e, "demo order failed; aborting its transaction");
                    producer.abort().await
                }
                Err(e) => Err(e),
            };
            if let Err(e) = outcome {
                tracing::debug!(order, error = %e, "demo checkout producer failed; starting a new one");
                clock.sleep(CHECKOUT_RETRY).await;
                break;
            }
        }
    }
}

/// One order's transaction up to (not including) its commit or abort.
async fn place_order(
    producer: &mut TransactionalProducer,
    clock: &Clock,
    seq: &mut Sequence,
    order: u64,
    user: u64,
    declined: bool,
) -> Result<(), TxnError> {
    let key = Bytes::from(format!("u{user}"));
    let tp = TopicPartition::new(PURCHASES, partition_for_key(&key, PURCHASES_PARTITIONS));
    let items = 1 + seq.next() % 4;
    let cents = 500 + seq.next() % 20_000;
    let placed = format!(
        r#"{{"order":{order},"user":"u{user}","items":{items},"total":"{}.{:02}"}}"#,
        cents / 100,
        cents % 100
    );
    let status = if declined { "declined" } else { "paid" };
    let payment = format!(r#"{{"order":{order},"payment":"{status}"}}"#);
    producer.begin()?;
    producer
        .send(&tp, &[(Some(key.clone()), Some(Bytes::from(placed)))])
        .await?;
    clock.sleep(ORDER_OPEN_FOR).await;
    producer.send(&tp, &[(Some(key), Some(Bytes::from(payment)))]).await?;
    Ok(())
}
