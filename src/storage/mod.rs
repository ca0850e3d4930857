//! One replica's log on disk, byte-compatible with a Kafka log directory. It knows nothing of
//! brokers, leaders or sockets: the engine tells it what to append, where to truncate and how
//! far retention may go.

pub mod batch;
pub mod checkpoint;
mod cleaner;
#[cfg(test)]
mod cleaner_tests;
pub mod legacy;
mod log;
pub mod records;
mod segment;
pub mod txn;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use checkpoint::{EpochEndOffset, EpochEntry};
pub use cleaner::CleanStats;
pub use log::{FetchData, Log, LogAppendInfo, RetentionOutcome, TimestampOffset};
pub use txn::AbortedTxn;

/// When appended data is fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "FlushSetting")]
pub enum FlushPolicy {
    /// Leave it to the kernel; replication protects against losing a machine (Kafka's default).
    Never,
    /// fsync before an append returns; concurrent appends share one fsync (group commit).
    Always,
    /// fsync when this many milliseconds passed since the last one.
    IntervalMs(u64),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum FlushSetting {
    Word(String),
    Millis(u64),
}

impl TryFrom<FlushSetting> for FlushPolicy {
    type Error = String;

    fn try_from(value: FlushSetting) -> Result<Self, Self::Error> {
        match value {
            FlushSetting::Word(w) if w == "never" => Ok(FlushPolicy::Never),
            FlushSetting::Word(w) if w == "always" => Ok(FlushPolicy::Always),
            FlushSetting::Word(w) => Err(format!(
                "flush must be \"never\", \"always\" or an interval in milliseconds, not {w:?}"
            )),
            FlushSetting::Millis(0) => Ok(FlushPolicy::Always),
            FlushSetting::Millis(ms) => Ok(FlushPolicy::IntervalMs(ms)),
        }
    }
}

/// `cleanup.policy`: what happens to old data. Retention by time and size applies only when
/// the policy includes `delete`; cleaning only when it includes `compact` (as Kafka).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum CleanupPolicy {
    Delete,
    Compact,
    CompactDelete,
}

impl CleanupPolicy {
    pub fn deletes(self) -> bool {
        matches!(self, CleanupPolicy::Delete | CleanupPolicy::CompactDelete)
    }

    pub fn compacts(self) -> bool {
        matches!(self, CleanupPolicy::Compact | CleanupPolicy::CompactDelete)
    }

    /// Kafka's spelling, as DescribeConfigs shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            CleanupPolicy::Delete => "delete",
            CleanupPolicy::Compact => "compact",
            CleanupPolicy::CompactDelete => "compact,delete",
        }
    }
}

impl std::str::FromStr for CleanupPolicy {
    type Err = String;

    /// A comma-separated list of `delete` and `compact`, in any order (Kafka's list type).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (mut delete, mut compact) = (false, false);
        for word in s.split(',').map(str::trim) {
            match word {
                "delete" => delete = true,
                "compact" => compact = true,
                _ => {
                    return Err(format!(
                        "cleanup.policy must be \"delete\", \"compact\" or \"compact,delete\", not {s:?}"
                    ));
                }
            }
        }
        Ok(match (compact, delete) {
            (true, true) => CleanupPolicy::CompactDelete,
            (true, false) => CleanupPolicy::Compact,
            _ => CleanupPolicy::Delete,
        })
    }
}

impl From<CleanupPolicy> for String {
    fn from(policy: CleanupPolicy) -> String {
        policy.as_str().to_string()
    }
}

impl TryFrom<String> for CleanupPolicy {
    type Error = String;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

/// Per-log settings, named after Kafka's topic configs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `segment.bytes`: roll to a new segment past this size.
    pub segment_bytes: u64,
    /// `segment.ms`: roll a segment whose first batch is older than this.
    pub segment_ms: i64,
    /// `segment.index.bytes`: a full offset index also rolls the segment.
    pub segment_index_bytes: u64,
    /// `index.interval.bytes`: bytes between two offset index entries.
    pub index_interval_bytes: u64,
    /// `retention.ms`: delete segments whose newest record is older; -1 keeps forever.
    pub retention_ms: i64,
    /// `retention.bytes`: delete the oldest segments while the log is larger; -1 is no limit.
    pub retention_bytes: i64,
    /// `max.message.bytes`: the largest batch accepted.
    pub max_message_bytes: u64,
    /// `flush`: `"never"`, `"always"`, or an interval in milliseconds.
    pub flush: FlushPolicy,
    /// `cleanup.policy`: `"delete"`, `"compact"` or `"compact,delete"`.
    pub cleanup_policy: CleanupPolicy,
    /// `delete.retention.ms`: how long a tombstone outlives the first clean that saw it.
    pub delete_retention_ms: i64,
    /// `min.cleanable.dirty.ratio`: the share of not-yet-cleaned bytes that triggers a clean.
    pub min_cleanable_dirty_ratio: f64,
    /// `min.compaction.lag.ms`: records younger than this are never cleaned.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`: a dirty record older than this forces a clean.
    pub max_compaction_lag_ms: i64,
}

// The ratio is validated to lie in [0, 1], never NaN.
impl Eq for LogConfig {}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 7 * 24 * 3600 * 1000,
            segment_index_bytes: 10 << 20,
            index_interval_bytes: 4096,
            retention_ms: 7 * 24 * 3600 * 1000,
            retention_bytes: -1,
            max_message_bytes: 1_048_588,
            flush: FlushPolicy::Never,
            cleanup_policy: CleanupPolicy::Delete,
            delete_retention_ms: 86_400_000,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
        }
    }
}

impl LogConfig {
    /// Rejects settings the on-disk format cannot honour.
    pub fn validate(&self) -> Result<(), LogError> {
        let bad = |reason: String| Err(LogError::InvalidConfig(reason));
        if self.segment_bytes < 64 || self.segment_bytes > i32::MAX as u64 {
            return bad(format!(
                "segment_bytes must be between 64 and {} (positions are 32-bit), got {}",
                i32::MAX,
                self.segment_bytes
            ));
        }
        if self.segment_ms <= 0 {
            return bad(format!("segment_ms must be positive, got {}", self.segment_ms));
        }
        if self.segment_index_bytes < 8 {
            return bad(format!(
                "segment_index_bytes must be at least 8, got {}",
                self.segment_index_bytes
            ));
        }
        if self.max_message_bytes < batch::RECORD_BATCH_OVERHEAD as u64 || self.max_message_bytes > i32::MAX as u64 {
            return bad(format!(
                "max_message_bytes must be between {} and {}, got {}",
                batch::RECORD_BATCH_OVERHEAD,
                i32::MAX,
                self.max_message_bytes
            ));
        }
        if self.retention_ms < -1 || self.retention_bytes < -1 {
            return bad("retention_ms and retention_bytes must be -1 (unlimited) or positive".into());
        }
        if !(0.0..=1.0).contains(&self.min_cleanable_dirty_ratio) {
            return bad(format!(
                "min_cleanable_dirty_ratio must be between 0 and 1, got {}",
                self.min_cleanable_dirty_ratio
            ));
        }
        if self.delete_retention_ms < 0 || self.min_compaction_lag_ms < 0 || self.max_compaction_lag_ms < 1 {
            return bad(format!(
                "delete_retention_ms and min_compaction_lag_ms must be at least 0 and max_compaction_lag_ms at least 1, got {}, {} and {}",
                self.delete_retention_ms, self.min_compaction_lag_ms, self.max_compaction_lag_ms
            ));
        }
        Ok(())
    }

    pub(crate) fn max_index_entries(&self) -> usize {
        (self.segment_index_bytes / 8) as usize
    }
}

/// Everything that can go wrong with a log. Kafka error codes are assigned where a client
/// would see them (see [`LogError::kafka_error_code`]).
#[derive(Debug, Error)]
pub enum LogError {
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("corrupt record batch in {} at byte {position}: {reason}", path.display())]
    CorruptBatch {
        path: PathBuf,
        position: u64,
        reason: String,
    },
    #[error("corrupt message: {0}")]
    CorruptMessage(String),
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    #[error("record batch of {size} bytes exceeds max.message.bytes {max}")]
    RecordTooLarge { size: usize, max: u64 },
    #[error("the records of a compressed batch decompress to more than {limit} bytes")]
    RecordListTooLarge { limit: usize },
    #[error("offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    #[error("unexpected append offset: batch starts at {first_offset}, log ends at {log_end_offset}")]
    UnexpectedAppendOffset { first_offset: i64, log_end_offset: i64 },
    #[error("corrupt checkpoint {} line {line}: {reason}", path.display())]
    CorruptCheckpoint { path: PathBuf, line: usize, reason: String },
    #[error("invalid log config: {0}")]
    InvalidConfig(String),
    #[error("log {} is offline after an I/O failure: {reason}", dir.display())]
    Offline { dir: PathBuf, reason: String },
}

impl LogError {
    /// The Kafka protocol error code a client should receive for this error.
    pub fn kafka_error_code(&self) -> i16 {
        match self {
            LogError::CorruptBatch { .. } | LogError::CorruptMessage(_) => 2, // CORRUPT_MESSAGE
            LogError::OffsetOutOfRange { .. } => 1,                           // OFFSET_OUT_OF_RANGE
            LogError::RecordTooLarge { .. } => 10,                            // MESSAGE_TOO_LARGE
            LogError::RecordListTooLarge { .. } => 18,                        // RECORD_LIST_TOO_LARGE
            LogError::InvalidRecord(_) => 87,                                 // INVALID_RECORD
            LogError::Io { .. } | LogError::Offline { .. } => 56,             // KAFKA_STORAGE_ERROR
            _ => -1,                                                          // UNKNOWN_SERVER_ERROR
        }
    }
}
