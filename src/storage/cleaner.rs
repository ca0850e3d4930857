//! Log compaction, after Kafka's `LogCleaner`: the sealed segments below the first uncleanable
//! offset are rewritten keeping only the latest record of each key, with offsets, producer
//! fields and leader epochs kept, and swapped in with Kafka's crash-safe file protocol
//! (`.cleaned`, then `.swap`, then the old segments go).
//!
//! Transactions (Kafka's `CleanedTransactionMetadata`, in part): the records of aborted
//! transactions (known from the segments' aborted-transaction indexes) never supersede a key
//! and are removed; end-transaction markers are kept as they are, so a read_committed
//! consumer always finds the marker that ends an aborted transaction it was told about.
//!
//! Tombstones follow Kafka's two-pass rule: the clean that first covers a tombstone keeps it;
//! a later clean drops it once `delete.retention.ms` passed since that first clean. When each
//! range of offsets was first cleaned is the cleaner checkpoint, `cleaner-offset-checkpoint`
//! in the log directory: `end_offset cleaned_at_ms` lines, the last end being the first dirty
//! offset where the next clean starts.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::compression::{Compressor, Gzip, Lz4, Snappy, Zstd};

use super::LogError;
use super::batch::{self, BatchHeader, RECORD_BATCH_OVERHEAD};
use super::checkpoint;
use super::records;
use super::segment::{self, Scanner};
use super::txn::AbortedTxn;

pub const CLEANER_CHECKPOINT: &str = "cleaner-offset-checkpoint";
pub const CLEANED_SUFFIX: &str = "cleaned";
pub const SWAP_SUFFIX: &str = "swap";

/// What one clean did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanStats {
    /// Where the dirty section began and where cleaning stopped (the first uncleanable offset).
    pub first_dirty_offset: i64,
    pub end_offset: i64,
    pub segments_before: usize,
    pub segments_after: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub records_removed: u64,
    pub tombstones_removed: u64,
    pub batches_removed: u64,
}

/// The cleaner checkpoint: for each range of offsets cleaned so far, when it was first cleaned.
/// Entry `i` covers `[end[i-1], end[i])`; an entry cleaned at `i64::MIN` stands for ranges whose
/// tombstones are already gone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CleanerCheckpoint {
    entries: Vec<(i64, i64)>,
}

impl CleanerCheckpoint {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(CLEANER_CHECKPOINT)
    }

    /// Reads the checkpoint; a missing or damaged one means the whole log is dirty.
    pub fn read(dir: &Path) -> CleanerCheckpoint {
        let path = CleanerCheckpoint::path(dir);
        match checkpoint::read_pairs(&path) {
            Ok(Some(mut entries)) => {
                entries.sort_unstable();
                CleanerCheckpoint { entries }
            }
            Ok(None) => CleanerCheckpoint::default(),
            Err(e) => {
                tracing::warn!(error = %e, "ignoring a damaged cleaner checkpoint; the whole log counts as dirty");
                CleanerCheckpoint::default()
            }
        }
    }

    pub fn write(&self, dir: &Path) -> Result<(), LogError> {
        checkpoint::write_pairs(&CleanerCheckpoint::path(dir), &self.entries)
    }

    /// Where the next clean's dirty section starts.
    pub fn first_dirty_offset(&self) -> i64 {
        self.entries.last().map_or(0, |e| e.0)
    }

    /// Whether a tombstone at `offset` was first cleaned more than `retention_ms` ago.
    pub fn tombstone_expired(&self, offset: i64, now_ms: i64, retention_ms: i64) -> bool {
        let slot = self.entries.partition_point(|e| e.0 <= offset);
        self.entries
            .get(slot)
            .is_some_and(|(_, cleaned_at)| now_ms.saturating_sub(*cleaned_at) >= retention_ms)
    }

    /// Whether some cleaned range's tombstones became droppable (Kafka cleans then even below
    /// the dirty ratio).
    pub fn has_expired_range(&self, now_ms: i64, retention_ms: i64) -> bool {
        self.entries
            .iter()
            .any(|(_, t)| *t != i64::MIN && now_ms.saturating_sub(*t) >= retention_ms)
    }

    /// Records a clean at `now_ms` that covered everything below `end`.
    pub fn cleaned(&mut self, end: i64, now_ms: i64, retention_ms: i64) {
        let expired = self
            .entries
            .iter()
            .take_while(|(_, t)| now_ms.saturating_sub(*t) >= retention_ms)
            .count();
        if expired > 0 {
            let (last_end, _) = self.entries[expired - 1];
            self.entries.drain(..expired);
            self.entries.insert(0, (last_end, i64::MIN));
        }
        if end > self.first_dirty_offset() {
            self.entries.push((end, now_ms));
        }
    }

    /// Forgets cleaning above `offset` (the log was truncated there). Returns whether it changed.
    pub fn truncate_to(&mut self, offset: i64) -> bool {
        if self.first_dirty_offset() <= offset {
            return false;
        }
        let keep = self.entries.partition_point(|e| e.0 < offset);
        let cut_at = self.entries.get(keep).map(|e| e.1);
        self.entries.truncate(keep);
        if let Some(t) = cut_at
            && offset > self.first_dirty_offset()
        {
            self.entries.push((offset, t));
        }
        true
    }
}

/// What the cleaner needs of a sealed segment, taken under the log's lock and used without it.
#[derive(Clone)]
pub(crate) struct SegmentSnapshot {
    pub base_offset: i64,
    /// The next segment's base offset: the end of the range this segment covers.
    pub upper: i64,
    pub size: u64,
    pub file: Arc<File>,
    pub path: PathBuf,
    pub max_timestamp: i64,
    pub first_batch_timestamp: Option<i64>,
    pub index_entries: usize,
}

/// Where a test stops a clean, to reopen the log as after a crash at that point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum CrashPoint {
    /// The `.cleaned` file is written, nothing renamed.
    AfterCleaned,
    /// Renamed to `.swap`: the clean is committed, the old segments are still there.
    AfterSwap,
    /// The old segments are deleted, the `.swap` file is not renamed yet.
    AfterDeletingOld,
    /// Swapped in, the cleaner checkpoint not written yet.
    BeforeCheckpoint,
}

/// Kafka's `groupSegmentsBySize`: consecutive segments whose total size fits one segment,
/// whose index entries fit one index and whose offsets fit 32 bits from the first base.
pub(crate) fn group_by_size(
    segments: &[SegmentSnapshot],
    max_size: u64,
    max_index_entries: usize,
) -> Vec<Vec<SegmentSnapshot>> {
    let mut groups: Vec<Vec<SegmentSnapshot>> = Vec::new();
    let mut size = 0u64;
    let mut entries = 0usize;
    for seg in segments {
        let fits = groups.last().is_some_and(|g| {
            size + seg.size <= max_size
                && entries + seg.index_entries <= max_index_entries
                && seg.upper - 1 - g[0].base_offset <= i64::from(u32::MAX)
        });
        match groups.last_mut() {
            Some(g) if fits => {
                g.push(seg.clone());
                size += seg.size;
                entries += seg.index_entries;
            }
            _ => {
                groups.push(vec![seg.clone()]);
                size = seg.size;
                entries = seg.index_entries;
            }
        }
    }
    groups
}

/// One record inside an uncompressed records blob.
struct RawRecord<'a> {
    bytes: &'a [u8],
    offset_delta: i64,
    timestamp_delta: i64,
    key: Option<&'a [u8]>,
    has_value: bool,
}

/// Splits an uncompressed records blob into its records, reading only what the cleaner needs.
fn raw_records<'a>(blob: &'a [u8], count: i32, path: &Path, position: u64) -> Result<Vec<RawRecord<'a>>, LogError> {
    let corrupt = |reason: &str| LogError::CorruptBatch {
        path: path.to_path_buf(),
        position,
        reason: format!("cannot read the records for compaction: {reason}"),
    };
    let mut out = Vec::with_capacity(count.max(0) as usize);
    let mut at = 0usize;
    let varint = |bytes: &[u8], at: &mut usize| -> Result<i64, LogError> {
        let (v, n) = bytes
            .get(*at..)
            .and_then(batch::read_varint)
            .ok_or_else(|| corrupt("unreadable varint"))?;
        *at += n;
        Ok(v)
    };
    let slice = |bytes: &'a [u8], at: &mut usize, len: i64| -> Result<Option<&'a [u8]>, LogError> {
        if len < 0 {
            return Ok(None);
        }
        let end = at
            .checked_add(len as usize)
            .filter(|e| *e <= bytes.len())
            .ok_or_else(|| corrupt("field longer than its record"))?;
        let s = &bytes[*at..end];
        *at = end;
        Ok(Some(s))
    };
    for _ in 0..count {
        let start = at;
        let length = varint(blob, &mut at)?;
        let body = slice(blob, &mut at, length)?.ok_or_else(|| corrupt("negative record length"))?;
        let mut b = 1usize; // attributes
        if body.is_empty() {
            return Err(corrupt("empty record"));
        }
        let timestamp_delta = varint(body, &mut b)?;
        let offset_delta = varint(body, &mut b)?;
        let key_len = varint(body, &mut b)?;
        let key = slice(body, &mut b, key_len)?;
        let value_len = varint(body, &mut b)?;
        out.push(RawRecord {
            bytes: &blob[start..at],
            offset_delta,
            timestamp_delta,
            key,
            has_value: value_len >= 0,
        });
    }
    if at != blob.len() {
        return Err(corrupt("bytes left after the last record"));
    }
    Ok(out)
}

fn codec_error(path: &Path, position: u64, e: anyhow::Error) -> LogError {
    LogError::CorruptBatch {
        path: path.to_path_buf(),
        position,
        reason: format!("cannot compress the records for compaction: {e:#}"),
    }
}

/// The records blob of a batch, decompressed (streaming, at most
/// `MAX_DECOMPRESSED_BATCH_BYTES`: the log only holds batches a leader validated so, but a log
/// directory is a file like any other).
fn records_blob(bytes: &[u8], header: &BatchHeader, path: &Path, position: u64) -> Result<Bytes, LogError> {
    let blob = &bytes[RECORD_BATCH_OVERHEAD..header.size()];
    let codec = header.compression();
    let Some(compression) = records::compression_of(codec) else {
        return Err(LogError::CorruptBatch {
            path: path.to_path_buf(),
            position,
            reason: format!("unknown compression codec {codec}"),
        });
    };
    records::decompress(compression, blob, records::MAX_DECOMPRESSED_BATCH_BYTES).map_err(|e| LogError::CorruptBatch {
        path: path.to_path_buf(),
        position,
        reason: format!("cannot decompress the records for compaction: {e}"),
    })
}

fn compress(codec: u8, raw: &[u8], path: &Path, position: u64) -> Result<Vec<u8>, LogError> {
    let mut out = BytesMut::new();
    let put = |b: &mut BytesMut| {
        b.extend_from_slice(raw);
        Ok(())
    };
    let result = match codec {
        1 => Gzip::compress(&mut out, put),
        2 => Snappy::compress(&mut out, put),
        3 => Lz4::compress(&mut out, put),
        4 => Zstd::compress(&mut out, put),
        _ => return Ok(raw.to_vec()),
    };
    result.map_err(|e| codec_error(path, position, e))?;
    Ok(out.to_vec())
}

/// Calls `f(position, header, bytes)` for every batch of a sealed segment.
pub(crate) fn for_each_batch(
    seg: &SegmentSnapshot,
    mut f: impl FnMut(u64, &BatchHeader, &[u8]) -> Result<(), LogError>,
) -> Result<(), LogError> {
    let mut scanner = Scanner::new(&seg.file, seg.size, segment::SCAN_CHUNK);
    let mut position = 0u64;
    while position < seg.size {
        let window = scanner
            .window(position, RECORD_BATCH_OVERHEAD)
            .map_err(segment::io("read", &seg.path))?;
        let header = BatchHeader::parse(window).map_err(|e| LogError::CorruptBatch {
            path: seg.path.clone(),
            position,
            reason: e.to_string(),
        })?;
        if header.size() < RECORD_BATCH_OVERHEAD || header.size() as u64 > seg.size - position {
            return Err(LogError::CorruptBatch {
                path: seg.path.clone(),
                position,
                reason: "batch runs past the end of the segment".into(),
            });
        }
        let window = scanner
            .window(position, header.size())
            .map_err(segment::io("read", &seg.path))?;
        let bytes = &window[..header.size()];
        batch::validate(bytes).map_err(|e| LogError::CorruptBatch {
            path: seg.path.clone(),
            position,
            reason: e.to_string(),
        })?;
        f(position, &header, bytes)?;
        position += header.size() as u64;
    }
    Ok(())
}

/// Kafka's `log.cleaner.dedupe.buffer.size` (128 MiB for all cleaner threads): the most
/// memory one clean's key map may take. A dirty section with more keys is cleaned in
/// several passes, each up to the segment where the map filled.
pub(crate) const DEDUPE_BUFFER_BYTES: usize = 64 << 20;

/// What one key costs in the map besides its bytes: the `Bytes` handle, the offset and the
/// table's own overhead.
const MAP_ENTRY_OVERHEAD: usize = 64;

/// Key -> offset of its latest record in the dirty section (Kafka's `OffsetMap`), and, per
/// producer, the last offset of its last batch in the cleanable range.
pub(crate) struct CleanPlan {
    pub latest: HashMap<Bytes, i64>,
    pub producer_last: HashMap<i64, i64>,
    /// Per producer, the `(first offset, marker offset)` of its aborted transactions.
    pub aborted: HashMap<i64, Vec<(i64, i64)>>,
    /// Where the dirty section was cut because the map was full (the base offset of the
    /// first segment left out); `None` when every dirty segment fit.
    pub end: Option<i64>,
}

/// Maps the keys of the dirty segments, whole segments at a time, while the map stays within
/// `max_map_bytes` (the first dirty segment always goes in, as Kafka requires).
pub(crate) fn build_plan(
    segments: &[SegmentSnapshot],
    first_dirty: i64,
    max_map_bytes: usize,
    aborted: &[AbortedTxn],
) -> Result<CleanPlan, LogError> {
    let mut plan = CleanPlan {
        latest: HashMap::new(),
        producer_last: HashMap::new(),
        aborted: HashMap::new(),
        end: None,
    };
    for t in aborted {
        plan.aborted
            .entry(t.producer_id)
            .or_default()
            .push((t.first_offset, t.last_offset));
    }
    let mut map_bytes = 0usize;
    let mut mapped_any = false;
    for seg in segments {
        let dirty = seg.upper > first_dirty;
        let mut keys: Vec<(Bytes, i64)> = Vec::new();
        let mut producers: Vec<(i64, i64)> = Vec::new();
        for_each_batch(seg, |position, header, bytes| {
            if header.producer_id >= 0 {
                producers.push((header.producer_id, header.last_offset()));
            }
            if !dirty || header.last_offset() < first_dirty || header.is_control() || plan.is_aborted(header) {
                return Ok(());
            }
            let blob = records_blob(bytes, header, &seg.path, position)?;
            for r in raw_records(&blob, header.records_count, &seg.path, position)? {
                let offset = header.base_offset + r.offset_delta;
                if let Some(key) = r.key
                    && offset >= first_dirty
                {
                    keys.push((Bytes::copy_from_slice(key), offset));
                }
            }
            Ok(())
        })?;
        let cost: usize = keys.iter().map(|(k, _)| k.len() + MAP_ENTRY_OVERHEAD).sum();
        if dirty && mapped_any && map_bytes.saturating_add(cost) > max_map_bytes {
            plan.end = Some(seg.base_offset);
            break;
        }
        if dirty {
            mapped_any = true;
        }
        for (key, offset) in keys {
            if plan.latest.insert(key.clone(), offset).is_none() {
                map_bytes = map_bytes.saturating_add(key.len() + MAP_ENTRY_OVERHEAD);
            }
        }
        plan.producer_last.extend(producers);
    }
    Ok(plan)
}

impl CleanPlan {
    /// Whether `header` is a data batch of an aborted transaction.
    pub fn is_aborted(&self, header: &BatchHeader) -> bool {
        header.attributes & 0x10 != 0
            && !header.is_control()
            && self.aborted.get(&header.producer_id).is_some_and(|ranges| {
                ranges
                    .iter()
                    .any(|(first, last)| *first <= header.base_offset && header.base_offset <= *last)
            })
    }
}

/// Decides, record by record, what survives.
pub(crate) struct Retention<'a> {
    pub plan: &'a CleanPlan,
    pub checkpoint: &'a CleanerCheckpoint,
    pub now_ms: i64,
    pub delete_retention_ms: i64,
}

/// What cleaning one batch produced.
pub(crate) enum CleanedBatch {
    Unchanged,
    Dropped,
    Rewritten(Vec<u8>),
}

impl Retention<'_> {
    /// Kafka's `shouldRetainRecord`: superseded records go; a tombstone goes once its range was
    /// first cleaned more than `delete.retention.ms` ago; records without a key stay.
    fn keep(&self, offset: i64, key: Option<&[u8]>, has_value: bool) -> bool {
        let Some(key) = key else { return true };
        if self.plan.latest.get(key).is_some_and(|latest| offset < *latest) {
            return false;
        }
        has_value
            || !self
                .checkpoint
                .tombstone_expired(offset, self.now_ms, self.delete_retention_ms)
    }

    /// Cleans one batch. `keep_header` says the batch must stay even without records: the last
    /// batch of a producer (idempotence state) or the last of the group (the cleaned segment
    /// must end where the old ones did, so that a `.swap` file tells which segments it replaces).
    pub fn clean_batch(
        &self,
        header: &BatchHeader,
        bytes: &[u8],
        keep_header: bool,
        stats: &mut CleanStats,
        path: &Path,
        position: u64,
    ) -> Result<CleanedBatch, LogError> {
        if header.is_control() {
            return Ok(CleanedBatch::Unchanged);
        }
        let keep_header = keep_header
            || (header.producer_id >= 0
                && self.plan.producer_last.get(&header.producer_id) == Some(&header.last_offset()));
        let blob = records_blob(bytes, header, path, position)?;
        let records = raw_records(&blob, header.records_count, path, position)?;
        let aborted = self.plan.is_aborted(header);
        let mut kept = Vec::new();
        let mut max_timestamp = -1i64;
        for r in &records {
            if !aborted && self.keep(header.base_offset + r.offset_delta, r.key, r.has_value) {
                kept.push(r.bytes);
                max_timestamp = max_timestamp.max(header.base_timestamp.saturating_add(r.timestamp_delta));
            } else {
                stats.records_removed += 1;
                if !r.has_value {
                    stats.tombstones_removed += 1;
                }
            }
        }
        if kept.len() == records.len() {
            return Ok(CleanedBatch::Unchanged);
        }
        if kept.is_empty() && !keep_header {
            stats.batches_removed += 1;
            return Ok(CleanedBatch::Dropped);
        }
        if kept.is_empty() || header.is_log_append_time() {
            max_timestamp = header.max_timestamp;
        }
        let raw: Vec<u8> = kept.concat();
        let blob = if kept.is_empty() {
            Vec::new()
        } else {
            compress(header.compression(), &raw, path, position)?
        };
        Ok(CleanedBatch::Rewritten(batch::rebuild(
            bytes,
            kept.len() as i32,
            max_timestamp,
            &blob,
        )))
    }
}

/// `<base>.log.<suffix>` in `dir`.
pub(crate) fn temp_log_path(dir: &Path, base_offset: i64, suffix: &str) -> PathBuf {
    dir.join(format!("{}.{suffix}", segment::file_name(base_offset, "log")))
}
