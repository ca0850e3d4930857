//! One segment of a log: `<base>.log` (batches exactly as on the wire), `<base>.index` (8-byte
//! `(relative offset, position)` entries) and `<base>.timeindex` (12-byte `(timestamp,
//! relative offset)` entries), named by the 20-digit zero-padded base offset, as in Kafka.
//!
//! The indexes are kept in memory and written out when the segment is sealed, flushed or
//! closed; after a crash they are rebuilt from the `.log`, which is the only source of truth.
//!
//! `<base>.txnindex` holds the aborted transactions whose ABORT marker is in this segment
//! (34-byte entries, Kafka's `TransactionIndex`); it exists only once there is one, is written
//! as each marker is appended, and the log rebuilds it when it recovers the segment.

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::batch::{self, BatchError, BatchHeader, RECORD_BATCH_OVERHEAD};
use super::checkpoint::LeaderEpochCache;
use super::txn::{self, AbortedTxn};
use super::{LogConfig, LogError};

const INDEX_ENTRY: usize = 8;
const TIME_INDEX_ENTRY: usize = 12;
/// Read size for scans; large enough that recovery runs at memory speed.
pub(crate) const SCAN_CHUNK: usize = 4 << 20;
/// Read size when only batch headers are wanted.
const HEADER_CHUNK: usize = 64 << 10;
/// Read size when looking for one batch from its index entry: the index has an entry about
/// every `index.interval.bytes` (4 KiB by default), so the batch sought is usually within a
/// few KiB, and every fetch does this lookup; a bigger read only copies bytes nobody looks at.
const FIND_CHUNK: usize = 4 << 10;

pub fn file_name(base_offset: i64, extension: &str) -> String {
    format!("{base_offset:020}.{extension}")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IndexEntry {
    relative_offset: u32,
    position: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TimeIndexEntry {
    timestamp: i64,
    relative_offset: u32,
}

/// What a recovery scan of one segment found.
#[derive(Debug, Default)]
pub struct SegmentRecovery {
    /// Bytes cut from the end of the `.log`, and why, when the scan met an invalid batch.
    pub truncated: Option<(u64, String)>,
}

pub struct Segment {
    pub base_offset: i64,
    log_path: PathBuf,
    index_path: PathBuf,
    time_index_path: PathBuf,
    txn_index_path: PathBuf,
    /// The aborted transactions whose marker is in this segment, in marker order.
    aborted: Vec<AbortedTxn>,
    file: Arc<File>,
    size: u64,
    index: Vec<IndexEntry>,
    index_persisted: usize,
    time_index: Vec<TimeIndexEntry>,
    time_index_persisted: usize,
    bytes_since_last_index_entry: u64,
    next_offset: i64,
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
    /// Max timestamp of the first batch: what `segment.ms` measures age from.
    rolling_timestamp: Option<i64>,
    created_ms: i64,
    /// Leader epoch of the last batch: epochs never decrease along a log.
    last_epoch: i32,
    /// Where the last batches appended since the segment was opened sit, oldest first:
    /// followers and consumers mostly fetch from the tail, and this finds their batch without
    /// reading the file.
    recent: VecDeque<(u64, BatchHeader)>,
    /// The batches below this position were not CRC-checked by this process (a segment opened
    /// after a clean shutdown checks only its tail): reads check them. Everything above was
    /// validated on its way in, so reads check its framing only, as Kafka's do.
    unverified_below: u64,
    /// Whether batches may leave offset gaps between them (see [`Gaps`]). A segment created
    /// by this process allows them: its batches were validated on their way in.
    gaps: Gaps,
}

/// Whether a log may have offset gaps. Only compaction makes them, and the base offset is
/// outside the CRC, so a log that was never compacted keeps checking that each batch starts
/// exactly where the previous one ended: that is what catches a damaged base offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gaps {
    Allowed,
    Forbidden,
}

impl Gaps {
    /// Whether a batch starting at `base` may follow one that ended before `expected`.
    pub fn continues(self, expected: i64, base: i64) -> bool {
        match self {
            Gaps::Allowed => base >= expected,
            Gaps::Forbidden => base == expected,
        }
    }
}

/// How many of the last appended batches a segment remembers the place of.
const RECENT_BATCHES: usize = 64;

impl Segment {
    /// Creates an empty segment (replacing any leftover files with the same base offset).
    pub fn create(dir: &Path, base_offset: i64, now_ms: i64) -> Result<Segment, LogError> {
        let mut segment = Segment::handles(dir, base_offset, now_ms, true)?;
        segment.write_index_files_from_scratch()?;
        segment.set_aborted(Vec::new())?;
        Ok(segment)
    }

    fn handles(dir: &Path, base_offset: i64, now_ms: i64, truncate: bool) -> Result<Segment, LogError> {
        let log_path = dir.join(file_name(base_offset, "log"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(truncate)
            .open(&log_path)
            .map_err(io("open", &log_path))?;
        let size = file.metadata().map_err(io("stat", &log_path))?.len();
        Ok(Segment {
            base_offset,
            index_path: dir.join(file_name(base_offset, "index")),
            time_index_path: dir.join(file_name(base_offset, "timeindex")),
            txn_index_path: dir.join(file_name(base_offset, "txnindex")),
            aborted: Vec::new(),
            log_path,
            file: Arc::new(file),
            size,
            index: Vec::new(),
            index_persisted: 0,
            time_index: Vec::new(),
            time_index_persisted: 0,
            bytes_since_last_index_entry: 0,
            next_offset: base_offset,
            max_timestamp: -1,
            offset_of_max_timestamp: -1,
            rolling_timestamp: None,
            created_ms: now_ms,
            last_epoch: -1,
            recent: VecDeque::new(),
            unverified_below: size,
            gaps: Gaps::Allowed,
        })
    }

    /// Opens an existing segment, validating every batch and rebuilding both indexes. Stops
    /// at the first invalid byte, truncates the file there and says what was cut.
    /// `epochs` learns the leader epoch of every batch above its latest epoch.
    pub fn recover(
        dir: &Path,
        base_offset: i64,
        now_ms: i64,
        config: &LogConfig,
        epochs: &mut LeaderEpochCache,
        gaps: Gaps,
    ) -> Result<(Segment, SegmentRecovery), LogError> {
        let mut segment = Segment::handles(dir, base_offset, now_ms, false)?;
        segment.gaps = gaps;
        let file_len = segment.size;
        segment.size = 0;
        let file = Arc::clone(&segment.file);
        let mut scanner = Scanner::new(&file, file_len, SCAN_CHUNK);
        let mut position = 0u64;
        let mut problem = None;
        while position < file_len {
            let window = scanner
                .window(position, RECORD_BATCH_OVERHEAD)
                .map_err(io("read", &segment.log_path))?;
            let header = match BatchHeader::parse(window) {
                Ok(h) if (h.size() as u64) <= file_len - position => h,
                Ok(h) => {
                    problem = Some(
                        BatchError::Truncated {
                            needed: h.size(),
                            available: (file_len - position) as usize,
                        }
                        .to_string(),
                    );
                    break;
                }
                Err(e) => {
                    problem = Some(e.to_string());
                    break;
                }
            };
            let window = scanner
                .window(position, header.size())
                .map_err(io("read", &segment.log_path))?;
            if let Err(e) = batch::validate(window) {
                problem = Some(e.to_string());
                break;
            }
            if let Err(reason) = segment.check_offsets(&header, gaps) {
                problem = Some(reason);
                break;
            }
            if header.partition_leader_epoch >= 0
                && epochs
                    .latest_epoch()
                    .is_none_or(|latest| header.partition_leader_epoch > latest)
            {
                epochs.assign(header.partition_leader_epoch, header.base_offset);
            }
            segment.track_batch(position, &header, config);
            segment.size = position + header.size() as u64;
            position = segment.size;
        }
        let mut report = SegmentRecovery::default();
        if let Some(reason) = problem {
            let cut = file_len - position;
            segment
                .file
                .set_len(position)
                .map_err(io("truncate", &segment.log_path))?;
            report.truncated = Some((cut, reason));
        }
        // Every batch kept was checked above.
        segment.unverified_below = 0;
        segment.write_index_files_from_scratch()?;
        Ok((segment, report))
    }

    /// Opens a segment the log trusts (below the recovery point, or after a clean shutdown):
    /// loads its indexes and checks them, and validates only the batches after the last index
    /// entry. Returns `Ok(None)` when anything looks wrong, so the caller recovers it instead.
    pub fn open_trusted(
        dir: &Path,
        base_offset: i64,
        now_ms: i64,
        config: &LogConfig,
        gaps: Gaps,
    ) -> Result<Option<Segment>, LogError> {
        let mut segment = Segment::handles(dir, base_offset, now_ms, false)?;
        segment.gaps = gaps;
        let Some(index) = read_index_file(&segment.index_path)? else {
            return Ok(None);
        };
        let Some(time_index) = read_time_index_file(&segment.time_index_path)? else {
            return Ok(None);
        };
        let positions_ok = index
            .windows(2)
            .all(|w| w[0].relative_offset < w[1].relative_offset && w[0].position < w[1].position)
            && index.last().is_none_or(|e| u64::from(e.position) < segment.size);
        let times_ok = time_index
            .windows(2)
            .all(|w| w[0].timestamp <= w[1].timestamp && w[0].relative_offset <= w[1].relative_offset);
        if !positions_ok || !times_ok {
            return Ok(None);
        }
        // Validate the tail: from the last indexed batch to the end of the file.
        let start = index.last().map_or(0, |e| u64::from(e.position));
        let file_len = segment.size;
        let file = Arc::clone(&segment.file);
        let mut scanner = Scanner::new(&file, file_len, SCAN_CHUNK);
        let mut position = start;
        let mut tail = Vec::new();
        let mut expected_base = index.is_empty().then_some(base_offset);
        while position < file_len {
            let Ok(window) = scanner.window(position, RECORD_BATCH_OVERHEAD) else {
                return Ok(None);
            };
            let Ok(header) = BatchHeader::parse(window) else {
                return Ok(None);
            };
            if header.size() as u64 > file_len - position {
                return Ok(None);
            }
            let Ok(window) = scanner.window(position, header.size()) else {
                return Ok(None);
            };
            if batch::validate(window).is_err() || expected_base.is_some_and(|b| !gaps.continues(b, header.base_offset))
            {
                return Ok(None);
            }
            expected_base = Some(header.next_offset());
            tail.push((position, header));
            position += header.size() as u64;
        }
        if let (Some(entry), Some((_, first))) = (index.last(), tail.first())
            && first.last_offset() != base_offset + i64::from(entry.relative_offset)
        {
            return Ok(None);
        }
        let last_offset = match (tail.last(), index.is_empty()) {
            (Some((_, h)), _) => Some(h.last_offset()),
            (None, true) => None,
            (None, false) => return Ok(None),
        };
        if let Some(last) = last_offset
            && time_index
                .last()
                .is_some_and(|t| base_offset + i64::from(t.relative_offset) > last)
        {
            return Ok(None);
        }
        segment.index_persisted = index.len();
        segment.index = index;
        segment.time_index_persisted = time_index.len();
        if let Some(t) = time_index.last() {
            segment.max_timestamp = t.timestamp;
            segment.offset_of_max_timestamp = base_offset + i64::from(t.relative_offset);
        }
        segment.time_index = time_index;
        segment.bytes_since_last_index_entry = 0;
        segment.next_offset = last_offset.map_or(base_offset, |l| l + 1);
        for (position, header) in &tail {
            segment.track_tail_batch(*position, header, config);
        }
        if segment.size > 0 {
            segment.rolling_timestamp = segment.first_batch_timestamp()?;
        }
        Ok(Some(segment))
    }

    fn first_batch_timestamp(&self) -> Result<Option<i64>, LogError> {
        let mut head = [0u8; RECORD_BATCH_OVERHEAD];
        if self.size < RECORD_BATCH_OVERHEAD as u64 {
            return Ok(None);
        }
        self.file
            .read_exact_at(&mut head, 0)
            .map_err(io("read", &self.log_path))?;
        Ok(BatchHeader::parse(&head).ok().map(|h| h.max_timestamp))
    }

    /// Offsets must increase (a compacted log has gaps, so a batch may start past the previous
    /// one's end; this also guards the base offset, which the CRC does not cover) and fit 32
    /// bits relative to the segment base.
    fn check_offsets(&self, header: &BatchHeader, gaps: Gaps) -> Result<(), String> {
        if !gaps.continues(self.next_offset, header.base_offset) {
            return Err(format!(
                "batch base offset {} does not continue from the expected next offset {}",
                header.base_offset, self.next_offset
            ));
        }
        if header.partition_leader_epoch < self.last_epoch {
            return Err(format!(
                "batch leader epoch {} is below the previous batch's {}",
                header.partition_leader_epoch, self.last_epoch
            ));
        }
        if header.last_offset() - self.base_offset > i64::from(u32::MAX) {
            return Err(format!(
                "offset {} does not fit segment {}",
                header.last_offset(),
                self.base_offset
            ));
        }
        Ok(())
    }

    /// Index bookkeeping for one batch written at `position`, as Kafka's `LogSegment.append`.
    fn track_batch(&mut self, position: u64, header: &BatchHeader, config: &LogConfig) {
        if header.max_timestamp > self.max_timestamp {
            self.max_timestamp = header.max_timestamp;
            self.offset_of_max_timestamp = header.last_offset();
        }
        if self.rolling_timestamp.is_none() {
            self.rolling_timestamp = Some(header.max_timestamp);
        }
        if self.bytes_since_last_index_entry > config.index_interval_bytes {
            self.index.push(IndexEntry {
                relative_offset: self.relative(header.last_offset()),
                position: position as u32,
            });
            self.maybe_append_time_entry();
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry += header.size() as u64;
        self.next_offset = header.next_offset();
        self.last_epoch = header.partition_leader_epoch;
    }

    /// Like `track_batch` for batches after the last index entry of a trusted segment: the
    /// first of them is the indexed batch itself, which must not be indexed twice.
    fn track_tail_batch(&mut self, position: u64, header: &BatchHeader, config: &LogConfig) {
        let indexed = self.index.last().is_some_and(|e| u64::from(e.position) == position);
        if indexed {
            if header.max_timestamp > self.max_timestamp {
                self.max_timestamp = header.max_timestamp;
                self.offset_of_max_timestamp = header.last_offset();
            }
            self.bytes_since_last_index_entry = header.size() as u64;
        } else {
            self.track_batch(position, header, config);
        }
        self.next_offset = header.next_offset();
    }

    fn maybe_append_time_entry(&mut self) {
        if self.max_timestamp < 0 {
            return;
        }
        if self.time_index.last().is_none_or(|t| self.max_timestamp > t.timestamp) {
            self.time_index.push(TimeIndexEntry {
                timestamp: self.max_timestamp,
                relative_offset: self.relative(self.offset_of_max_timestamp),
            });
        }
    }

    fn relative(&self, offset: i64) -> u32 {
        (offset - self.base_offset) as u32
    }

    /// Appends validated batches (`batches` holds them back to back, `headers` describes
    /// each). On an I/O error the file is cut back to its previous size and nothing changes.
    pub fn append(&mut self, batches: &[u8], headers: &[BatchHeader], config: &LogConfig) -> Result<(), LogError> {
        if let Err(source) = self.file.write_all_at(batches, self.size) {
            // Leave no partial batch behind; if even that fails the log must go offline.
            if let Err(e) = self.file.set_len(self.size) {
                return Err(LogError::Offline {
                    dir: self.log_path.clone(),
                    reason: format!("append failed ({source}) and removing the partial write failed ({e})"),
                });
            }
            return Err(LogError::Io {
                op: "append",
                path: self.log_path.clone(),
                source,
            });
        }
        let mut position = self.size;
        for header in headers {
            self.track_batch(position, header, config);
            if self.recent.len() == RECENT_BATCHES {
                self.recent.pop_front();
            }
            self.recent.push_back((position, *header));
            position += header.size() as u64;
        }
        self.size = position;
        Ok(())
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }

    /// Max timestamp of the first batch, when there is one.
    pub fn first_batch_timestamp_cached(&self) -> Option<i64> {
        self.rolling_timestamp
    }

    /// The log this segment belongs to may now hold gaps.
    pub fn allow_gaps(&mut self) {
        self.gaps = Gaps::Allowed;
    }

    pub fn index_entries(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    pub fn file(&self) -> Arc<File> {
        Arc::clone(&self.file)
    }

    /// Kafka's `shouldRoll`: full by size, too old, index full, or offsets that would not fit.
    pub fn should_roll(&self, incoming_bytes: u64, incoming_last_offset: i64, now_ms: i64, config: &LogConfig) -> bool {
        if self.size == 0 {
            return false;
        }
        let full = self.size > config.segment_bytes.saturating_sub(incoming_bytes);
        // A first batch without a timestamp (-1) says nothing about age: Kafka then counts from
        // the segment's creation, rather than taking the segment for as old as the Unix epoch.
        let age_from = self.rolling_timestamp.filter(|t| *t >= 0).unwrap_or(self.created_ms);
        let old = now_ms.saturating_sub(age_from) > config.segment_ms;
        let index_full = self.index.len() >= config.max_index_entries();
        let offsets_overflow = incoming_last_offset - self.base_offset > i64::from(u32::MAX);
        full || old || index_full || offsets_overflow
    }

    /// File position and header of the first batch whose last offset is `>= target`.
    pub fn find_batch(&self, target: i64) -> Result<Option<(u64, BatchHeader)>, LogError> {
        if self
            .recent
            .front()
            .is_some_and(|(_, first)| first.base_offset <= target)
        {
            let slot = self.recent.partition_point(|(_, h)| h.last_offset() < target);
            return Ok(self.recent.get(slot).copied());
        }
        let slot = self
            .index
            .partition_point(|e| self.base_offset + i64::from(e.relative_offset) <= target);
        let start = if slot == 0 {
            0
        } else {
            u64::from(self.index[slot - 1].position)
        };
        match self.scan_headers_for(start, target) {
            Err(_) if start > 0 => {
                tracing::warn!(segment = %self.log_path.display(), "offset index points into the middle of a batch; scanning from the segment start");
                self.scan_headers_for(0, target)
            }
            other => other,
        }
    }

    fn scan_headers_for(&self, mut position: u64, target: i64) -> Result<Option<(u64, BatchHeader)>, LogError> {
        let mut scanner = Scanner::new(&self.file, self.size, FIND_CHUNK);
        // What the first header must say: the segment base at position 0, else the offset
        // the index entry for this position records.
        let indexed_last = self
            .index
            .iter()
            .rev()
            .find(|e| u64::from(e.position) == position)
            .map(|e| self.base_offset + i64::from(e.relative_offset));
        let mut expected_base = (position == 0).then_some(self.base_offset);
        while position < self.size {
            let window = scanner
                .window(position, RECORD_BATCH_OVERHEAD)
                .map_err(io("read", &self.log_path))?;
            let header = BatchHeader::parse(window)
                .ok()
                .filter(|h| h.magic == batch::MAGIC_V2 && h.size() >= RECORD_BATCH_OVERHEAD)
                .filter(|h| position + h.size() as u64 <= self.size)
                .filter(|h| expected_base.is_none_or(|b| self.gaps.continues(b, h.base_offset)))
                .filter(|h| expected_base.is_some() || indexed_last.is_none_or(|l| h.last_offset() == l))
                .ok_or_else(|| LogError::CorruptBatch {
                    path: self.log_path.clone(),
                    position,
                    reason: "batch header does not continue the log".into(),
                })?;
            expected_base = Some(header.next_offset());
            if header.last_offset() >= target {
                return Ok(Some((position, header)));
            }
            position += header.size() as u64;
        }
        Ok(None)
    }

    /// Whole batches starting with the one that holds `target`, at most `max_bytes` of them
    /// (but always the first one whole), stopping before any batch whose base offset reaches
    /// `upper_bound`. Empty when nothing at or after `target` is here. Batches this process
    /// checked on their way in are checked for framing, the others fully (`unverified_below`).
    pub fn read(&self, target: i64, max_bytes: usize, upper_bound: i64) -> Result<Vec<u8>, LogError> {
        let gaps = self.gaps;
        let Some((position, first)) = self.find_batch(target)? else {
            return Ok(Vec::new());
        };
        if first.base_offset >= upper_bound {
            return Ok(Vec::new());
        }
        let wanted = max_bytes.max(first.size()) as u64;
        let len = wanted.min(self.size - position) as usize;
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, position)
            .map_err(io("read", &self.log_path))?;
        let mut keep = 0usize;
        let mut expected = first.base_offset;
        let batches = if position < self.unverified_below {
            batch::Batches::new(&buf)
        } else {
            batch::Batches::checked_before(&buf)
        };
        for item in batches {
            let item = match item {
                Ok((at, header, _)) if !gaps.continues(expected, header.base_offset) => {
                    Err((at, BatchError::BadBaseOffset(header.base_offset)))
                }
                other => other,
            };
            match item {
                Ok((at, header, _)) if header.base_offset < upper_bound => {
                    keep = at + header.size();
                    expected = header.next_offset();
                }
                Ok(_) => break,
                Err((_, BatchError::Truncated { .. })) if keep > 0 => break,
                Err((at, error)) => {
                    if keep == 0 {
                        return Err(LogError::CorruptBatch {
                            path: self.log_path.clone(),
                            position: position + at as u64,
                            reason: error.to_string(),
                        });
                    }
                    break;
                }
            }
        }
        buf.truncate(keep);
        Ok(buf)
    }

    /// Position of the first index entry at or after a timestamp: the batch to start scanning
    /// from when looking for the first record with `timestamp >= target`.
    pub fn position_for_timestamp(&self, target: i64) -> Result<u64, LogError> {
        let slot = self.time_index.partition_point(|t| t.timestamp <= target);
        let from_offset = if slot == 0 {
            self.base_offset
        } else {
            self.base_offset + i64::from(self.time_index[slot - 1].relative_offset)
        };
        Ok(self.find_batch(from_offset)?.map_or(self.size, |(p, _)| p))
    }

    /// Headers of batches from `position` to the end of the segment.
    pub fn headers_from(&self, position: u64) -> Result<Vec<(u64, BatchHeader)>, LogError> {
        let mut out = Vec::new();
        let mut position = position;
        let mut scanner = Scanner::new(&self.file, self.size, HEADER_CHUNK);
        while position < self.size {
            let window = scanner
                .window(position, RECORD_BATCH_OVERHEAD)
                .map_err(io("read", &self.log_path))?;
            let header = BatchHeader::parse(window).map_err(|e| LogError::CorruptBatch {
                path: self.log_path.clone(),
                position,
                reason: e.to_string(),
            })?;
            out.push((position, header));
            position += header.size().max(RECORD_BATCH_OVERHEAD) as u64;
        }
        Ok(out)
    }

    /// Reads `len` bytes at `position` (a whole batch, found by `headers_from`).
    pub fn read_at(&self, position: u64, len: usize) -> Result<Vec<u8>, LogError> {
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, position)
            .map_err(io("read", &self.log_path))?;
        Ok(buf)
    }

    /// Removes every batch whose last offset is `>= offset`. Returns the bytes removed.
    pub fn truncate_to(&mut self, offset: i64, config: &LogConfig) -> Result<u64, LogError> {
        let Some((cut, _)) = self.find_batch(offset)? else {
            return Ok(0);
        };
        let removed = self.size - cut;
        self.file.set_len(cut).map_err(io("truncate", &self.log_path))?;
        self.size = cut;
        self.recent.retain(|(position, _)| *position < cut);
        self.unverified_below = self.unverified_below.min(cut);
        self.index.retain(|e| u64::from(e.position) < cut);
        // Rebuild the in-memory state from the last index entry on: it is exact and short.
        let resume_at = self.index.last().map_or(0, |e| u64::from(e.position));
        let tail = self.headers_from(resume_at)?;
        let kept_last = tail.last().map(|(_, h)| h.last_offset());
        self.next_offset = kept_last.map_or(self.base_offset, |l| l + 1);
        let next = self.next_offset;
        self.time_index
            .retain(|t| self.base_offset + i64::from(t.relative_offset) < next);
        self.max_timestamp = -1;
        self.offset_of_max_timestamp = -1;
        if let Some(t) = self.time_index.last() {
            self.max_timestamp = t.timestamp;
            self.offset_of_max_timestamp = self.base_offset + i64::from(t.relative_offset);
        }
        self.bytes_since_last_index_entry = 0;
        for (position, header) in &tail {
            self.track_tail_batch(*position, header, config);
        }
        self.next_offset = next;
        if self.size == 0 {
            self.rolling_timestamp = None;
        }
        self.index_persisted = self.index_persisted.min(self.index.len());
        self.time_index_persisted = self.time_index_persisted.min(self.time_index.len());
        self.truncate_index_files()?;
        if self.aborted.iter().any(|t| t.last_offset >= next) {
            let kept = self.aborted.iter().copied().filter(|t| t.last_offset < next).collect();
            self.set_aborted(kept)?;
        }
        Ok(removed)
    }

    fn truncate_index_files(&self) -> Result<(), LogError> {
        for (path, len) in [
            (&self.index_path, self.index_persisted * INDEX_ENTRY),
            (&self.time_index_path, self.time_index_persisted * TIME_INDEX_ENTRY),
        ] {
            let f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
                .map_err(io("open", path))?;
            f.set_len(len as u64).map_err(io("truncate", path))?;
        }
        Ok(())
    }

    /// Called when the segment stops being the active one: records the final max timestamp
    /// in the time index (Kafka's `onBecomeInactiveSegment`) and writes both indexes.
    pub fn seal(&mut self) -> Result<(), LogError> {
        if !self.is_empty() {
            self.maybe_append_time_entry();
        }
        self.persist_indexes()
    }

    /// Writes index entries not yet on disk.
    pub fn persist_indexes(&mut self) -> Result<(), LogError> {
        if self.index_persisted < self.index.len() {
            let bytes: Vec<u8> = self.index[self.index_persisted..]
                .iter()
                .flat_map(|e| {
                    e.relative_offset
                        .to_be_bytes()
                        .into_iter()
                        .chain(e.position.to_be_bytes())
                })
                .collect();
            append_at(&self.index_path, (self.index_persisted * INDEX_ENTRY) as u64, &bytes)?;
            self.index_persisted = self.index.len();
        }
        if self.time_index_persisted < self.time_index.len() {
            let bytes: Vec<u8> = self.time_index[self.time_index_persisted..]
                .iter()
                .flat_map(|t| {
                    t.timestamp
                        .to_be_bytes()
                        .into_iter()
                        .chain(t.relative_offset.to_be_bytes())
                })
                .collect();
            append_at(
                &self.time_index_path,
                (self.time_index_persisted * TIME_INDEX_ENTRY) as u64,
                &bytes,
            )?;
            self.time_index_persisted = self.time_index.len();
        }
        Ok(())
    }

    fn write_index_files_from_scratch(&mut self) -> Result<(), LogError> {
        self.index_persisted = 0;
        self.time_index_persisted = 0;
        self.truncate_index_files()?;
        self.persist_indexes()
    }

    /// fsyncs the `.log` and both indexes.
    pub fn sync_all_files(&mut self) -> Result<(), LogError> {
        self.persist_indexes()?;
        self.file.sync_data().map_err(io("fsync", &self.log_path))?;
        for path in [&self.index_path, &self.time_index_path] {
            File::open(path)
                .and_then(|f| f.sync_data())
                .map_err(io("fsync", path))?;
        }
        self.sync_txn_index()
    }

    /// The aborted transactions whose marker is in this segment.
    pub fn aborted_txns(&self) -> &[AbortedTxn] {
        &self.aborted
    }

    /// Records an aborted transaction whose marker was just appended here.
    pub fn append_aborted(&mut self, entry: AbortedTxn) -> Result<(), LogError> {
        let at = (self.aborted.len() * txn::ABORTED_TXN_SIZE) as u64;
        append_at(&self.txn_index_path, at, &entry.encode())?;
        self.aborted.push(entry);
        Ok(())
    }

    /// Replaces the aborted-transaction index (rebuilt from the log); an empty one has no file.
    pub fn set_aborted(&mut self, entries: Vec<AbortedTxn>) -> Result<(), LogError> {
        if entries.is_empty() {
            match fs::remove_file(&self.txn_index_path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(LogError::Io {
                        op: "delete",
                        path: self.txn_index_path.clone(),
                        source,
                    });
                }
            }
        } else {
            let bytes: Vec<u8> = entries.iter().flat_map(|e| e.encode()).collect();
            append_at(&self.txn_index_path, 0, &bytes)?;
        }
        self.aborted = entries;
        Ok(())
    }

    /// The `.txnindex` as the file holds it: `Ok(None)` when it is damaged (a torn or
    /// unknown entry), an empty list when there is no file.
    pub fn read_txn_index_file(&self) -> Result<Option<Vec<AbortedTxn>>, LogError> {
        Ok(match read_optional(&self.txn_index_path)? {
            None => Some(Vec::new()),
            Some(bytes) => txn::decode_index(&bytes),
        })
    }

    /// Adopts entries read back from a sound `.txnindex` file.
    pub fn adopt_aborted(&mut self, entries: Vec<AbortedTxn>) {
        self.aborted = entries;
    }

    /// fsyncs the aborted-transaction index, when there is one.
    fn sync_txn_index(&self) -> Result<(), LogError> {
        if self.aborted.is_empty() {
            return Ok(());
        }
        File::open(&self.txn_index_path)
            .and_then(|f| f.sync_data())
            .map_err(io("fsync", &self.txn_index_path))
    }

    /// Removes the segment's files.
    pub fn delete_files(&self) -> Result<(), LogError> {
        for path in [
            &self.log_path,
            &self.index_path,
            &self.time_index_path,
            &self.txn_index_path,
        ] {
            match fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(LogError::Io {
                        op: "delete",
                        path: path.clone(),
                        source,
                    });
                }
            }
        }
        Ok(())
    }
}

fn append_at(path: &Path, at: u64, bytes: &[u8]) -> Result<(), LogError> {
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io("open", path))?;
    f.set_len(at).map_err(io("truncate", path))?;
    f.write_all_at(bytes, at).map_err(io("write", path))
}

/// `Ok(None)` when the index file is missing or its size is not a whole number of entries.
fn read_index_file(path: &Path) -> Result<Option<Vec<IndexEntry>>, LogError> {
    let Some(bytes) = read_optional(path)? else {
        return Ok(None);
    };
    if bytes.len() % INDEX_ENTRY != 0 {
        return Ok(None);
    }
    Ok(Some(
        bytes
            .chunks_exact(INDEX_ENTRY)
            .map(|c| IndexEntry {
                relative_offset: u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
                position: u32::from_be_bytes([c[4], c[5], c[6], c[7]]),
            })
            .collect(),
    ))
}

fn read_time_index_file(path: &Path) -> Result<Option<Vec<TimeIndexEntry>>, LogError> {
    let Some(bytes) = read_optional(path)? else {
        return Ok(None);
    };
    if bytes.len() % TIME_INDEX_ENTRY != 0 {
        return Ok(None);
    }
    Ok(Some(
        bytes
            .chunks_exact(TIME_INDEX_ENTRY)
            .map(|c| TimeIndexEntry {
                timestamp: i64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
                relative_offset: u32::from_be_bytes([c[8], c[9], c[10], c[11]]),
            })
            .collect(),
    ))
}

fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, LogError> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(LogError::Io {
            op: "read",
            path: path.to_path_buf(),
            source,
        }),
    }
}

pub(crate) fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> LogError {
    let path = path.to_path_buf();
    move |source| LogError::Io { op, path, source }
}

/// Buffered positional reads over a file, for sequential scans.
pub(crate) struct Scanner<'a> {
    file: &'a File,
    end: u64,
    chunk: usize,
    buf: Vec<u8>,
    buf_start: u64,
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(file: &'a File, end: u64, chunk: usize) -> Self {
        Scanner {
            file,
            end,
            chunk,
            buf: Vec::new(),
            buf_start: 0,
        }
    }

    /// Bytes from `position`: at least `need` of them unless the file ends first.
    pub(crate) fn window(&mut self, position: u64, need: usize) -> std::io::Result<&[u8]> {
        let buf_end = self.buf_start + self.buf.len() as u64;
        let covered = position >= self.buf_start && position + need as u64 <= buf_end;
        let at_file_end = position >= self.buf_start && buf_end == self.end && position <= buf_end;
        if !(covered || at_file_end && !self.buf.is_empty()) {
            let len = (need.max(self.chunk) as u64).min(self.end.saturating_sub(position)) as usize;
            self.buf.resize(len, 0);
            self.file.read_exact_at(&mut self.buf, position)?;
            self.buf_start = position;
        }
        let from = (position - self.buf_start) as usize;
        Ok(&self.buf[from..])
    }
}
