//! The `ClusterSource` trait the console drives a cluster through, with what crosses it:
//! commands and their outcomes, and message tails.
//!
//! Rendering never waits on the cluster: the latest view is an `Arc<ClusterView>` in a watch
//! channel, commands are submitted and their outcome arrives later as a message, and message
//! tails travel in bounded ring buffers the renderer only peeks into.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, watch};

use super::{BrokerId, ClusterView, OffsetSpec};

/// A record to produce from the console.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProduceRequest {
    pub topic: String,
    /// `None`: the partitioner chooses (by key, or sticky without one).
    pub partition: Option<i32>,
    pub key: Option<String>,
    pub value: String,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
}

/// What the console asks a cluster to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Produce(ProduceRequest),
    /// Hard crash.
    KillBroker(BrokerId),
    /// Controlled shutdown.
    StopBroker(BrokerId),
    StartBroker(BrokerId),
    PauseBroker(BrokerId),
    ResumeBroker(BrokerId),
    /// Preferred-leader election for one topic, or every topic.
    ElectPreferredLeaders {
        topic: Option<String>,
    },
    CreateTopic {
        name: String,
        partitions: i32,
        replication_factor: i32,
        /// `cleanup.policy` in Kafka's spelling: `delete`, `compact` or `compact,delete`.
        cleanup_policy: String,
    },
    DeleteTopic {
        name: String,
    },
    PauseDemo,
    ResumeDemo,
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Produce(r) => match r.partition {
                Some(p) => write!(f, "produce to {}-{p}", r.topic),
                None => write!(f, "produce to {}", r.topic),
            },
            Command::KillBroker(id) => write!(f, "kill broker {id}"),
            Command::StopBroker(id) => write!(f, "stop broker {id}"),
            Command::StartBroker(id) => write!(f, "start broker {id}"),
            Command::PauseBroker(id) => write!(f, "pause broker {id}"),
            Command::ResumeBroker(id) => write!(f, "resume broker {id}"),
            Command::ElectPreferredLeaders { topic: Some(t) } => write!(f, "preferred-leader election for {t}"),
            Command::ElectPreferredLeaders { topic: None } => write!(f, "preferred-leader election for all topics"),
            Command::CreateTopic {
                name,
                partitions,
                replication_factor,
                cleanup_policy,
            } => write!(
                f,
                "create topic {name} ({partitions} partitions, RF {replication_factor}, cleanup.policy {cleanup_policy})"
            ),
            Command::DeleteTopic { name } => write!(f, "delete topic {name}"),
            Command::PauseDemo => write!(f, "pause the demo workload"),
            Command::ResumeDemo => write!(f, "resume the demo workload"),
        }
    }
}

/// How a command ended: a short human sentence either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutcome {
    pub command: Command,
    pub result: Result<String, String>,
}

pub type OutcomeSender = mpsc::UnboundedSender<CommandOutcome>;

/// Where a message tail starts reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeekPosition {
    Beginning,
    End,
    /// The last `n` records of each partition.
    Last(i64),
    Offset(i64),
    /// The first record at or after this time.
    Timestamp(DateTime<Utc>),
}

impl SeekPosition {
    /// The ListOffsets lookup that finds this position by itself; `None` for the positions
    /// that depend on the log's bounds ([`SeekPosition::within`]).
    pub fn lookup(self) -> Option<OffsetSpec> {
        match self {
            SeekPosition::Beginning => Some(OffsetSpec::Earliest),
            SeekPosition::End => Some(OffsetSpec::Latest),
            SeekPosition::Timestamp(t) => Some(OffsetSpec::Timestamp(t.timestamp_millis())),
            SeekPosition::Last(_) | SeekPosition::Offset(_) => None,
        }
    }

    /// Where this position starts in a log whose records span `first..end`: the last `n`
    /// records, or an offset kept within the log; `None` for the positions a lookup finds.
    pub fn within(self, first: i64, end: i64) -> Option<i64> {
        match self {
            SeekPosition::Last(n) => Some(end.saturating_sub(n.max(0)).max(first)),
            SeekPosition::Offset(o) => Some(o.clamp(first, end.max(first))),
            SeekPosition::Beginning | SeekPosition::End | SeekPosition::Timestamp(_) => None,
        }
    }
}

impl std::fmt::Display for SeekPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SeekPosition::Beginning => write!(f, "beginning"),
            SeekPosition::End => write!(f, "end"),
            SeekPosition::Last(n) => write!(f, "last {n}"),
            SeekPosition::Offset(o) => write!(f, "offset {o}"),
            SeekPosition::Timestamp(t) => write!(f, "{}", t.format("%Y-%m-%d %H:%M:%S UTC")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailSpec {
    pub topic: String,
    /// `None`: every partition.
    pub partition: Option<i32>,
    pub start: SeekPosition,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailRecord {
    pub partition: i32,
    pub offset: i64,
    /// Milliseconds since the epoch.
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// A bounded ring of the newest records of a tail, filled by the source and read by the
/// renderer; the oldest records fall out.
#[derive(Debug)]
pub struct TailBuffer {
    records: Mutex<VecDeque<TailRecord>>,
    capacity: usize,
    /// Bumped on every change so the renderer knows when to redraw.
    version: AtomicU64,
    error: Mutex<Option<String>>,
    closed: AtomicBool,
}

impl TailBuffer {
    pub fn new(capacity: usize) -> TailBuffer {
        TailBuffer {
            records: Mutex::new(VecDeque::with_capacity(capacity.min(4096))),
            capacity: capacity.max(1),
            version: AtomicU64::new(0),
            error: Mutex::new(None),
            closed: AtomicBool::new(false),
        }
    }

    pub fn push(&self, batch: impl IntoIterator<Item = TailRecord>) {
        let mut records = lock(&self.records);
        for r in batch {
            if records.len() == self.capacity {
                records.pop_front();
            }
            records.push_back(r);
        }
        drop(records);
        self.version.fetch_add(1, Ordering::Release);
    }

    /// The last problem reading the tail (cleared by the next successful read).
    pub fn set_error(&self, error: Option<String>) {
        let mut slot = lock(&self.error);
        if *slot != error {
            *slot = error;
            self.version.fetch_add(1, Ordering::Release);
        }
    }

    pub fn error(&self) -> Option<String> {
        lock(&self.error).clone()
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// A copy of the records, oldest first.
    pub fn records(&self) -> Vec<TailRecord> {
        lock(&self.records).iter().cloned().collect()
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running tail; dropping it tells the source to stop filling the buffer.
#[derive(Debug)]
pub struct TailHandle {
    pub spec: TailSpec,
    pub buffer: Arc<TailBuffer>,
}

impl Drop for TailHandle {
    fn drop(&mut self) {
        self.buffer.closed.store(true, Ordering::Release);
    }
}

/// What a source lets the console do; the help overlay greys out or hides the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Kill, stop, start, pause and resume brokers; `Err` says why not.
    pub broker_control: Result<(), &'static str>,
    /// A demo workload that can be paused and resumed.
    pub demo: bool,
    /// Nothing that changes the cluster: no produce, topic changes, elections or broker
    /// control.
    pub read_only: bool,
}

impl Default for Capabilities {
    fn default() -> Self {
        Capabilities {
            broker_control: Ok(()),
            demo: true,
            read_only: false,
        }
    }
}

impl Command {
    /// Whether the command changes the cluster (refused by a read-only source).
    pub fn mutates(&self) -> bool {
        !matches!(self, Command::PauseDemo | Command::ResumeDemo)
    }
}

/// What the console needs from a cluster. Every method returns at once.
pub trait ClusterSource: Send + Sync {
    /// What the console may offer; by default everything.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    /// The latest view; a new one is sent a few times a second while something changes.
    fn views(&self) -> watch::Receiver<Arc<ClusterView>>;
    /// Runs a command in the background; its outcome is sent to `outcomes`.
    fn submit(&self, command: Command, outcomes: OutcomeSender);
    /// Starts reading records into a ring buffer of `capacity` records.
    fn tail(&self, spec: TailSpec, capacity: usize) -> TailHandle;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_ring_keeps_only_the_newest_records() {
        let buffer = TailBuffer::new(3);
        let record = |offset| TailRecord {
            partition: 0,
            offset,
            timestamp: 0,
            key: None,
            value: None,
            headers: Vec::new(),
        };
        let before = buffer.version();
        buffer.push((0..5).map(record));
        let offsets: Vec<i64> = buffer.records().iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![2, 3, 4]);
        assert!(buffer.version() > before);
    }

    #[test]
    fn a_seek_position_is_a_lookup_or_a_place_within_the_log() {
        assert_eq!(SeekPosition::Beginning.lookup(), Some(OffsetSpec::Earliest));
        assert_eq!(SeekPosition::End.lookup(), Some(OffsetSpec::Latest));
        let at = DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::milliseconds(1_700_000_000_000);
        assert_eq!(
            SeekPosition::Timestamp(at).lookup(),
            Some(OffsetSpec::Timestamp(1_700_000_000_000))
        );
        assert_eq!(SeekPosition::Last(5).within(10, 100), Some(95));
        assert_eq!(
            SeekPosition::Last(500).within(10, 100),
            Some(10),
            "not before the log start"
        );
        assert_eq!(SeekPosition::Offset(3).within(10, 100), Some(10));
        assert_eq!(SeekPosition::Offset(300).within(10, 100), Some(100));
        assert_eq!(SeekPosition::End.within(10, 100), None);
    }

    #[test]
    fn dropping_the_handle_closes_the_tail() {
        let buffer = Arc::new(TailBuffer::new(3));
        let handle = TailHandle {
            spec: TailSpec {
                topic: "t".into(),
                partition: None,
                start: SeekPosition::End,
            },
            buffer: Arc::clone(&buffer),
        };
        assert!(!buffer.is_closed());
        drop(handle);
        assert!(buffer.is_closed());
    }
}
