//! A fixed cluster view, a fixed clock and time zone, and a source that records what the
//! console asks of it: the ground the console tests stand on.
// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use chrono::{DateTime, FixedOffset, TimeZone, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use kdeck::config::{ConsoleConfig, KdeckConfig, KeysConfig};
use kdeck::tui::Console;
use kdeck::tui::app::App;
use kdeck::tui::keymap::Keymap;
use kdeck::tui::theme::Theme;
use kdeck::view::acls::{Acls, AclsAnswer};
use kdeck::view::lang::Msg;
use kdeck::view::timeline::{self, ElectionCause};
use kdeck::view::transactions::{TransactionRow, TransactionsAnswer};
use kdeck::view::{
    BrokerRow, BrokerStatus, Capabilities, ClusterSource, ClusterView, Command, CommandOutcome, ConfigOrigin,
    ConfigRow, ConfigTarget, Controls, EpochStart, EventClass, GroupOffsetRow, GroupRow, MemberRow, OutcomeSender,
    PartitionRow, Refusals, ReplicaRole, ReplicaRow, Retention, SeekPosition, SourceKind, TailBuffer, TailHandle,
    TailRecord, TailSpec, Throughput, TopicRow, TxnMark, ViewEvent,
};
use tokio::sync::{mpsc, oneshot, watch};

pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 15, 12, 0, 0)
        .single()
        .expect("a valid time")
}

pub fn tz() -> FixedOffset {
    FixedOffset::east_opt(0).expect("UTC")
}

fn at(seconds_before: i64) -> DateTime<Utc> {
    now() - chrono::Duration::seconds(seconds_before)
}

/// A replica whose log began at 0 and holds epochs 3 and 4 (from 1000), its HW at its log
/// end; a follower in sync caught up 0.1 s ago, one out of sync 8.1 s ago.
pub fn replica(broker: i32, role: ReplicaRole, leo: Option<i64>) -> ReplicaRow {
    ReplicaRow {
        broker,
        role,
        log_end_offset: leo,
        log_start_offset: leo.map(|_| 0),
        high_watermark: leo,
        size_bytes: leo.map(|_| 329_218),
        epochs: match leo {
            Some(_) => [epoch(3, 0), epoch(4, 1000)].into(),
            None => Default::default(),
        },
        caught_up_ms_ago: match role {
            ReplicaRole::InSync => Some(100),
            ReplicaRole::OutOfSync => Some(8100),
            _ => None,
        },
    }
}

pub fn epoch(epoch: i32, start_offset: i64) -> EpochStart {
    EpochStart { epoch, start_offset }
}

fn partition(topic: &str, p: i32, leader: Option<i32>, replicas: Vec<ReplicaRow>, isr: &[i32]) -> PartitionRow {
    let preferred = replicas.first().map_or(0, |r| r.broker);
    PartitionRow {
        topic: topic.into(),
        partition: p,
        leader,
        leader_epoch: 4,
        under_replicated: isr.len() < replicas.len(),
        replicas,
        isr: isr.to_vec(),
        preferred_leader: preferred,
        high_watermark: leader.map(|_| 1200 + i64::from(p)),
        last_stable_offset: leader.map(|_| 1200 + i64::from(p)),
        log_start_offset: leader.map(|_| 0),
        min_insync_replicas: Some(if topic == "page-views" { 2 } else { 1 }),
        adding: Vec::new(),
        removing: Vec::new(),
        changed_at: None,
    }
}

/// Three brokers (1 killed), two demo topics and the offsets topic, one partition in each
/// replica role, three groups, a few events.
pub fn view() -> ClusterView {
    use ReplicaRole::*;
    let broker = |id, status, leaders, history: &[u64]| BrokerRow {
        id,
        status,
        is_controller: id == 0,
        leaders,
        replicas: 9,
        throughput: if status == BrokerStatus::Online {
            Throughput::Bytes {
                in_per_sec: 48_000.0,
                out_per_sec: 96_000.0,
            }
        } else {
            Throughput::Bytes {
                in_per_sec: 0.0,
                out_per_sec: 0.0,
            }
        },
        address: Some(format!("127.0.0.1:{}", 9092 + id)),
        disk_bytes: (status == BrokerStatus::Online).then_some(2_962_962 + id as u64 * 1_000_000),
        produce_history: history.to_vec(),
        changed_at: None,
        lifecycle: None,
    };
    let mut brokers = vec![
        broker(0, BrokerStatus::Online, 5, &[10, 20, 30, 40, 50, 60]),
        broker(1, BrokerStatus::Killed, 0, &[40, 40, 40, 0, 0, 0]),
        broker(2, BrokerStatus::Online, 4, &[30, 30, 60, 60, 30, 30]),
    ];
    brokers[1].changed_at = Some(at(1));
    let mut partitions = vec![
        partition(
            "page-views",
            0,
            Some(0),
            vec![
                replica(0, Leader, Some(1200)),
                replica(1, Offline, None),
                replica(2, InSync, Some(1200)),
            ],
            &[0, 2],
        ),
        partition(
            "page-views",
            1,
            Some(2),
            vec![
                replica(1, Offline, None),
                replica(2, Leader, Some(1201)),
                replica(0, OutOfSync, Some(1150)),
            ],
            &[2],
        ),
        partition(
            "page-views",
            2,
            Some(2),
            vec![
                replica(2, Leader, Some(1202)),
                replica(0, InSync, Some(1202)),
                replica(1, Offline, None),
            ],
            &[2, 0],
        ),
        partition(
            "clicks",
            0,
            Some(0),
            vec![replica(0, Leader, Some(77)), replica(2, InSync, Some(77))],
            &[0, 2],
        ),
        partition("clicks", 1, None, vec![replica(1, Offline, None)], &[1]),
    ];
    partitions[1].changed_at = Some(at(1));
    partitions[1].leader_epoch = 5;
    // An open transaction holds read_committed consumers 11 records behind the HW.
    partitions[1].last_stable_offset = Some(1190);
    let topic = |name: &str, parts, rf, urp, offline, rate: f64, lag| TopicRow {
        name: name.into(),
        internal: name.starts_with("__"),
        partitions: parts,
        replication_factor: rf,
        under_replicated: urp,
        offline,
        messages: 3603,
        size_bytes: Some(987_654),
        messages_per_sec: rate,
        total_lag: lag,
        retention: Some(if name.starts_with("__") {
            Retention {
                compact: true,
                delete: false,
                ms: 604_800_000,
                bytes: -1,
            }
        } else {
            Retention {
                compact: false,
                delete: true,
                ms: 3_600_000,
                bytes: 8 << 20,
            }
        }),
        unclean_election: Some(false),
    };
    let groups = vec![
        GroupRow {
            group_id: "analytics".into(),
            state: "Stable".into(),
            protocol: "range".into(),
            generation: 3,
            coordinator: 0,
            members: vec![
                MemberRow {
                    member_id: "analytics-0-5f1c".into(),
                    instance_id: None,
                    client_id: "analytics-app".into(),
                    host: "/10.0.0.5".into(),
                    assignment: vec![("page-views".into(), 0), ("page-views".into(), 1)],
                },
                MemberRow {
                    member_id: "analytics-1-9a2b".into(),
                    instance_id: None,
                    client_id: "analytics-app".into(),
                    host: "/10.0.0.6".into(),
                    assignment: vec![("page-views".into(), 2)],
                },
            ],
            offsets: vec![
                GroupOffsetRow {
                    topic: "page-views".into(),
                    partition: 0,
                    committed: 1190,
                    end: Some(1200),
                    lag: Some(10),
                },
                GroupOffsetRow {
                    topic: "page-views".into(),
                    partition: 1,
                    committed: 1201,
                    end: Some(1201),
                    lag: Some(0),
                },
                GroupOffsetRow {
                    topic: "page-views".into(),
                    partition: 2,
                    committed: 1100,
                    end: Some(1202),
                    lag: Some(102),
                },
            ],
            total_lag: 112,
            lag_history: vec![0, 50, 100, 112],
        },
        GroupRow {
            group_id: "billing".into(),
            state: "PreparingRebalance".into(),
            protocol: "range".into(),
            generation: 7,
            coordinator: 2,
            members: Vec::new(),
            offsets: Vec::new(),
            total_lag: 0,
            lag_history: vec![5, 4, 3, 0],
        },
    ];
    // The part each event plays in broker 1's crash, as the embedded source classifies it.
    let class = |text: &str| match text.split(':').next().unwrap_or_default() {
        "broker 1 down" => EventClass::Fault(1),
        "broker 1 fenced" => EventClass::Fenced(1),
        "leader page-views-1" => EventClass::LeaderMoved {
            partition: "page-views-1".into(),
            from: Some(1),
            to: 2,
        },
        "ISR page-views-0 shrank" => EventClass::IsrShrunk {
            partition: "page-views-0".into(),
            removed: vec![1],
        },
        "clicks-1 OFFLINE" => EventClass::Offline {
            partition: "clicks-1".into(),
            isr: vec![1],
        },
        "produce to clicks-1 rejected" => EventClass::ProduceRejected(Refusals {
            partition: "clicks-1".into(),
            error: "LEADER_NOT_AVAILABLE".into(),
            count: 1,
            since: at(2),
        }),
        _ => EventClass::Other,
    };
    // Said as the sources say them: in English, and as messages for another language.
    let event = |secs, line: timeline::Line| ViewEvent {
        at: at(secs),
        cluster_at: at(secs),
        severity: line.severity,
        text: line.text(),
        class: class(&line.text()),
        msg: Some(line.msg),
    };
    ClusterView {
        cluster_name: "training".into(),
        source: SourceKind::Embedded,
        taken_at: now(),
        controller: Some(0),
        brokers,
        topics: vec![
            topic("page-views", 3, 3, 3, 0, 301.0, Some(112)),
            topic("clicks", 2, 2, 0, 1, 99.0, None),
            topic("__consumer_offsets", 10, 3, 0, 0, 12.0, None),
        ],
        partitions,
        groups,
        events: vec![
            event(9, timeline::broker_down(1, "killed")),
            event(
                6,
                timeline::broker_fenced(1, "no heartbeat for 3000 ms (broker.session.timeout.ms)"),
            ),
            event(
                6,
                timeline::leader_elected("page-views", 1, Some(1), 2, 5, Some(ElectionCause::LeaderUnavailable)),
            ),
            event(
                5,
                timeline::isr_shrunk("page-views", 0, &[1], &[0, 2], Some(Msg::words("broker 1 fenced"))),
            ),
            event(4, timeline::partition_offline("clicks", 1, &[1])),
            event(
                2,
                timeline::produce_rejected("clicks", 1, "LeaderNotAvailable", "no leader"),
            ),
        ],
        demo: Some(true),
        problems: Vec::new(),
        controls: Some(controls()),
        workload: None,
        links: Vec::new(),
    }
}

/// The embedded cluster's clock running in real time and Kafka's default settings.
pub fn controls() -> Controls {
    Controls {
        frozen: false,
        held: false,
        slow_motion: 1,
        auto_rebalance: true,
        unclean_election: false,
        balanced_election: false,
        replica_lag_time_max_ms: 6000,
        broker_session_timeout_ms: 3000,
        producer_acks: None,
        clock_ms: now().timestamp_millis(),
    }
}

/// The fixture as an external cluster sees it: broker 1 unreachable, message rates instead
/// of byte rates, unknown sizes, no demo, and connection problems.
pub fn external_view() -> ClusterView {
    let mut v = view();
    v.cluster_name = "prod-eu".into();
    v.source = SourceKind::External;
    v.demo = None;
    v.controls = None;
    for b in &mut v.brokers {
        b.throughput = Throughput::Messages {
            in_per_sec: if b.status == BrokerStatus::Online { 201.0 } else { 0.0 },
        };
        if b.status == BrokerStatus::Killed {
            b.status = BrokerStatus::Unreachable;
        }
    }
    for t in &mut v.topics {
        t.size_bytes = None;
    }
    v.problems = vec![
        "broker 1 127.0.0.1:9093: connection refused".into(),
        "offsets: clicks-1: LEADER_NOT_AVAILABLE (5)".into(),
    ];
    v
}

/// What the remote source offers.
pub fn external_capabilities(read_only: bool) -> Capabilities {
    Capabilities {
        broker_control: Err("not available on an external cluster: Kafka has no API to stop or start a broker"),
        demo: false,
        read_only,
    }
}

/// Records with JSON, Chinese text, emoji, headers and binary.
pub fn records() -> Vec<TailRecord> {
    let ts = now().timestamp_millis() - 1500;
    let record =
        |partition, offset, key: Option<&str>, value: &[u8], headers: Vec<(String, Option<Bytes>)>| TailRecord {
            partition,
            offset,
            timestamp: ts + offset,
            key: key.map(|k| Bytes::copy_from_slice(k.as_bytes())),
            value: Some(Bytes::copy_from_slice(value)),
            headers,
            producer_id: -1,
            txn: None,
        };
    vec![
        record(
            0,
            1197,
            Some("u17"),
            br#"{"user":"u17","url":"/products/42","referrer":""}"#,
            vec![],
        ),
        record(1, 1198, Some("u8"), r#"{"user":"u8","url":"/首页"}"#.as_bytes(), vec![]),
        record(
            2,
            1199,
            Some("用户"),
            "emoji 🚀 and 商品 详情".as_bytes(),
            vec![("trace".into(), Some(Bytes::from_static(b"abc")))],
        ),
        record(0, 1200, None, &[0x00, 0xff, 0x10, 0x80, 0x41], vec![]),
    ]
}

/// A source that records commands and tails, and answers nothing.
pub struct RecordingSource {
    pub views: watch::Sender<Arc<ClusterView>>,
    pub capabilities: Capabilities,
    pub commands: Mutex<Vec<Command>>,
    pub tails: Mutex<Vec<TailSpec>>,
    /// A partition log to browse (partition 0 of every topic); `None`: every tail holds
    /// [`records`].
    pub log: Mutex<Option<Vec<TailRecord>>>,
    /// What each window still has to hand out, for [`RecordingSource::refill`].
    pub pending: Mutex<Vec<(Arc<TailBuffer>, std::collections::VecDeque<TailRecord>)>>,
    /// The configs it was asked to describe, in order.
    pub config_requests: Mutex<Vec<ConfigTarget>>,
    /// What it answers them: [`config_rows`] unless a test says otherwise.
    pub configs: Mutex<Result<Vec<ConfigRow>, String>>,
    /// What it answers DescribeAcls with: no authorizer (as the embedded cluster) unless a
    /// test says otherwise.
    pub acls: Mutex<AclsAnswer>,
    /// What it answers ListTransactions/DescribeTransactions with: [`transaction_rows`]
    /// unless a test says otherwise.
    pub transactions: Mutex<TransactionsAnswer>,
}

impl RecordingSource {
    pub fn new(view: ClusterView) -> Arc<RecordingSource> {
        RecordingSource::with_capabilities(view, Capabilities::default())
    }

    pub fn with_capabilities(view: ClusterView, capabilities: Capabilities) -> Arc<RecordingSource> {
        Arc::new(RecordingSource {
            views: watch::channel(Arc::new(view)).0,
            capabilities,
            commands: Mutex::new(Vec::new()),
            tails: Mutex::new(Vec::new()),
            log: Mutex::new(None),
            pending: Mutex::new(Vec::new()),
            config_requests: Mutex::new(Vec::new()),
            configs: Mutex::new(Ok(config_rows())),
            acls: Mutex::new(Ok(Acls::NoAuthorizer { embedded: true })),
            transactions: Mutex::new(Ok(transaction_rows())),
        })
    }

    /// Gives the source a log of `n` records in partition 0, offsets from `start`, one a
    /// millisecond; values `v<offset>`, and `needle` in those whose offset is in `needles`.
    pub fn browse(&self, start: i64, n: i64, needles: &[i64]) {
        let base = now().timestamp_millis() - 3_600_000;
        let log = (start..start + n)
            .map(|o| TailRecord {
                partition: 0,
                offset: o,
                timestamp: base + o,
                key: Some(Bytes::from(format!("k{o}"))),
                value: Some(Bytes::from(if needles.contains(&o) {
                    format!("v{o} needle")
                } else {
                    format!("v{o}")
                })),
                headers: Vec::new(),
                producer_id: -1,
                txn: None,
            })
            .collect();
        *self.log.lock().expect("log") = Some(log);
    }

    /// Partition 0 holds a plain record, a committed and an aborted transaction's records
    /// and an open one's, offsets 10..15 (markers take no row).
    pub fn transactions(&self) {
        let base = now().timestamp_millis() - 60_000;
        let record = |offset: i64, value: &str, producer_id: i64, txn: Option<TxnMark>| TailRecord {
            partition: 0,
            offset,
            timestamp: base + offset,
            key: Some(Bytes::from(format!("k{offset}"))),
            value: Some(Bytes::from(value.to_string())),
            headers: Vec::new(),
            producer_id,
            txn,
        };
        *self.log.lock().expect("log") = Some(vec![
            record(10, "plain", -1, None),
            record(11, "paid", 7, Some(TxnMark::Committed)),
            record(12, "refund", 8, Some(TxnMark::Aborted)),
            record(14, "shipped", 7, Some(TxnMark::Committed)),
            record(16, "pending", 9, Some(TxnMark::Open)),
        ]);
    }

    /// What a reader does when a window made room: hands out what it still has.
    pub fn refill(&self) {
        for (buffer, pending) in self.pending.lock().expect("pending").iter_mut() {
            buffer.push_from(pending);
        }
    }

    pub fn commands(&self) -> Vec<Command> {
        self.commands.lock().expect("commands").clone()
    }

    pub fn tails(&self) -> Vec<TailSpec> {
        self.tails.lock().expect("tails").clone()
    }

    pub fn config_requests(&self) -> Vec<ConfigTarget> {
        self.config_requests.lock().expect("config requests").clone()
    }
}

/// Transactional ids as a coordinator describes them: one open for 42 s, one open past its
/// timeout, one whose transaction committed, one whose description was lost.
pub fn transaction_rows() -> Vec<TransactionRow> {
    let ms = now().timestamp_millis();
    let row = |id: &str, state: &str, producer_id, start_time_ms, partitions: Vec<(String, i32)>| TransactionRow {
        transactional_id: id.into(),
        state: state.into(),
        producer_id,
        producer_epoch: 3,
        timeout_ms: 60_000,
        partitions,
        start_time_ms,
        coordinator: Some(2),
    };
    vec![
        row(
            "orders-tx-1",
            "Ongoing",
            4001,
            ms - 42_000,
            vec![("page-views".into(), 0), ("page-views".into(), 1)],
        ),
        row("payments-tx", "Ongoing", 4002, ms - 95_000, vec![("clicks".into(), 0)]),
        row("shipping-tx", "CompleteCommit", 4003, -1, Vec::new()),
        TransactionRow {
            producer_epoch: -1,
            timeout_ms: -1,
            coordinator: None,
            ..row("zz-lost", "Empty", 4004, -1, Vec::new())
        },
    ]
}

/// A topic's configs as a source describes them: one override, a cluster-wide default set at
/// run time, built-in defaults.
pub fn config_rows() -> Vec<ConfigRow> {
    let row = |name: &str, value: &str, origin| ConfigRow {
        name: name.into(),
        value: Some(value.into()),
        origin,
        read_only: false,
    };
    vec![
        row("cleanup.policy", "delete", ConfigOrigin::Default),
        row("max.message.bytes", "1048588", ConfigOrigin::Cluster),
        row("min.insync.replicas", "2", ConfigOrigin::Default),
        row("retention.ms", "3600000", ConfigOrigin::Topic),
        row("segment.bytes", "1073741824", ConfigOrigin::Default),
    ]
}

impl ClusterSource for RecordingSource {
    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn views(&self) -> watch::Receiver<Arc<ClusterView>> {
        self.views.subscribe()
    }

    fn submit(&self, command: Command, _outcomes: OutcomeSender) {
        self.commands.lock().expect("commands").push(command);
    }

    fn describe_configs(&self, target: ConfigTarget) -> oneshot::Receiver<Result<Vec<ConfigRow>, String>> {
        self.config_requests.lock().expect("config requests").push(target);
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(self.configs.lock().expect("configs").clone());
        rx
    }

    fn describe_acls(&self) -> oneshot::Receiver<AclsAnswer> {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(self.acls.lock().expect("acls").clone());
        rx
    }

    fn describe_transactions(&self) -> oneshot::Receiver<TransactionsAnswer> {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(self.transactions.lock().expect("transactions").clone());
        rx
    }

    fn tail(&self, spec: TailSpec, capacity: usize) -> TailHandle {
        self.tails.lock().expect("tails").push(spec.clone());
        let buffer = Arc::new(TailBuffer::with_mode(capacity, spec.mode));
        let Some(log) = self.log.lock().expect("log").clone() else {
            buffer.push(records());
            return TailHandle { spec, buffer };
        };
        // Reads partition 0 as a source would: from the position, clamped into the log.
        let first = log.first().map_or(0, |r| r.offset);
        let end = log.last().map_or(0, |r| r.offset + 1);
        let from = match spec.start {
            SeekPosition::Beginning => first,
            SeekPosition::End => end,
            SeekPosition::Last(n) => (end - n).max(first),
            SeekPosition::Offset(o) => o.clamp(first, end),
            SeekPosition::Timestamp(t) => log
                .iter()
                .find(|r| r.timestamp >= t.timestamp_millis())
                .map_or(end, |r| r.offset),
        };
        // read_committed stops at the first open transaction and leaves the aborted out.
        let stable = log
            .iter()
            .find(|r| r.txn == Some(TxnMark::Open))
            .map_or(i64::MAX, |r| r.offset);
        let committed = |r: &TailRecord| !spec.read_committed || (r.offset < stable && r.txn != Some(TxnMark::Aborted));
        let read: Vec<TailRecord> = log
            .into_iter()
            .filter(|r| r.offset >= from && spec.partition.is_none_or(|p| p == r.partition))
            .filter(committed)
            .collect();
        let mut matched: std::collections::VecDeque<TailRecord> =
            read.iter().filter(|r| spec.matches(r)).cloned().collect();
        buffer.set_log_starts(vec![(0, first)]);
        buffer.count(read.len() as u64, matched.len() as u64);
        if spec.until_end {
            buffer.set_done();
        }
        buffer.push_from(&mut matched);
        self.pending
            .lock()
            .expect("pending")
            .push((Arc::clone(&buffer), matched));
        TailHandle { spec, buffer }
    }
}

/// The console on a recording source; `h.app` reaches the app through the console.
pub struct Harness {
    pub console: Console,
    pub source: Arc<RecordingSource>,
    pub outcomes: mpsc::UnboundedReceiver<CommandOutcome>,
}

impl std::ops::Deref for Harness {
    type Target = Console;
    fn deref(&self) -> &Console {
        &self.console
    }
}

impl std::ops::DerefMut for Harness {
    fn deref_mut(&mut self) -> &mut Console {
        &mut self.console
    }
}

/// The key bindings of `assets/kdeck.toml`, the only place they are written.
pub fn default_keys() -> KeysConfig {
    KdeckConfig::from_layers(None).expect("the defaults load").keys
}

pub fn harness_with(view: ClusterView, console: ConsoleConfig, keys: KeysConfig, theme: Theme) -> Harness {
    harness_of(RecordingSource::new(view), console, keys, theme)
}

/// The console on the external fixture, read-only or not.
pub fn external_harness(read_only: bool) -> Harness {
    harness_of(
        RecordingSource::with_capabilities(external_view(), external_capabilities(read_only)),
        ConsoleConfig::default(),
        default_keys(),
        Theme::colored(),
    )
}

fn harness_of(source: Arc<RecordingSource>, console: ConsoleConfig, keys: KeysConfig, theme: Theme) -> Harness {
    let (tx, outcomes) = mpsc::unbounded_channel();
    let app = App::new(
        source.capabilities(),
        source.views().borrow().clone(),
        Keymap::from_config(&keys).expect("default keys"),
        theme,
        console,
        tz(),
        Some("/data/kdeck/kdeck.log".into()),
    );
    let console = Console::new(app, Arc::clone(&source) as Arc<dyn ClusterSource>, tx);
    Harness {
        console,
        source,
        outcomes,
    }
}

pub fn harness() -> Harness {
    harness_with(view(), ConsoleConfig::default(), default_keys(), Theme::colored())
}

impl Harness {
    pub fn press(&mut self, code: KeyCode) {
        let modifiers = match code {
            KeyCode::Char(c) if c.is_ascii_uppercase() => KeyModifiers::SHIFT,
            _ => KeyModifiers::NONE,
        };
        self.console.key(KeyEvent::new(code, modifiers), now());
    }

    pub fn chars(&mut self, text: &str) {
        for c in text.chars() {
            self.press(KeyCode::Char(c));
        }
    }
}

/// Renders the app into a test terminal of the given size at the fixed clock, and snapshots
/// the text.
#[macro_export]
macro_rules! assert_draw {
    ($name:expr, $harness:expr, $width:expr, $height:expr) => {{
        let buffer = $crate::tui_fixture::draw(&mut $harness.console, $width, $height);
        insta::assert_snapshot!($name, $crate::tui_fixture::text(&buffer));
    }};
}

pub fn draw(console: &mut Console, width: u16, height: u16) -> ratatui::buffer::Buffer {
    draw_at(console, width, height, now())
}

/// [`draw`] at another moment.
pub fn draw_at(console: &mut Console, width: u16, height: u16, at: DateTime<Utc>) -> ratatui::buffer::Buffer {
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height)).expect("terminal");
    console.draw(&mut terminal, at).expect("draw");
    terminal.backend().buffer().clone()
}

/// The buffer's text, one line per row, trailing spaces kept (column alignment is the point).
pub fn text(buffer: &ratatui::buffer::Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut skip = 0;
        for x in 0..area.width {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let symbol = buffer[(x, y)].symbol();
            skip = unicode_width::UnicodeWidthStr::width(symbol).saturating_sub(1);
            out.push_str(symbol);
        }
        out.push_str("|\n");
    }
    out
}

/// Asserts that each of `words` is on `screen`, naming the first that is not.
pub fn assert_shows(screen: &str, words: &[&str]) {
    for words in words {
        assert!(screen.contains(words), "{words} missing from\n{screen}");
    }
}
