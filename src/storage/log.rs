//! The log of one partition replica: a sequence of segments with append, read, truncation,
//! rolling, retention, the leader-epoch cache, the durability policy and crash recovery, and
//! the transactions its batches open and close (the open ones, the aborted-transaction index).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;

use bytes::Bytes;

use super::batch::{self, BatchHeader};
use super::checkpoint::{self, CheckpointFiles, EpochEndOffset, EpochEntry, LeaderEpochCache};
use super::cleaner::{self, CleanStats, CleanedBatch, CleanerCheckpoint, CrashPoint, SegmentSnapshot};
use super::records;
use super::segment::{self, Gaps, Segment};
use super::txn::{self, AbortedTxn, Transactions};
use super::{FlushPolicy, LogConfig, LogError};

/// What an append wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogAppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub offset_of_max_timestamp: i64,
    pub batches: usize,
    pub records: i64,
    pub bytes: usize,
}

/// Batches returned by a read, with the log bounds at the time of the read.
#[derive(Debug, Clone)]
pub struct FetchData {
    /// Whole batches; the first may start before the requested offset (it contains it).
    pub records: Bytes,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
}

/// The first record at or after a timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    pub offset: i64,
    pub timestamp: i64,
}

/// What a retention pass removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionOutcome {
    pub deleted_segments: usize,
    pub deleted_bytes: u64,
    pub log_start_offset: i64,
}

pub struct Log {
    dir: PathBuf,
    /// Live: a topic's changed config reaches an open log through [`Log::set_config`] and
    /// counts from the next append, roll, retention pass or clean.
    config: RwLock<LogConfig>,
    files: CheckpointFiles,
    state: RwLock<LogState>,
    durability: Arc<Durability>,
    /// One clean at a time; held for the whole clean, never while waiting for `state`'s
    /// writers to finish anything long.
    cleaning: Mutex<()>,
    /// Taken after `state` when both are needed.
    cleaner_checkpoint: Mutex<CleanerCheckpoint>,
    /// Whether this log may hold offset gaps (see [`Gaps`]); once it may, the cleaner
    /// checkpoint file exists, which says so to the next open.
    gaps_allowed: AtomicBool,
    /// The transactions the log's batches opened and closed. Changed only under `state`'s
    /// write lock (taken after it), read alone.
    txns: Mutex<Transactions>,
}

struct LogState {
    segments: BTreeMap<i64, Segment>,
    log_start_offset: i64,
    epochs: LeaderEpochCache,
    /// Set after an I/O failure that left the files in an unknown state; appends refuse.
    offline: Option<String>,
    last_flush_ms: i64,
}

impl LogState {
    fn active(&self) -> &Segment {
        self.segments
            .values()
            .next_back()
            .expect("a log always has an active segment")
    }

    fn active_mut(&mut self) -> &mut Segment {
        self.segments
            .values_mut()
            .next_back()
            .expect("a log always has an active segment")
    }

    fn log_end_offset(&self) -> i64 {
        self.active().next_offset()
    }
}

/// Tracks what is on stable storage and lets concurrent appends share fsyncs.
struct Durability {
    state: Mutex<SyncState>,
    synced: Condvar,
}

struct SyncState {
    /// Every offset below this is fsynced.
    durable_end: i64,
    /// Bumped by every truncation so that an fsync begun before it cannot vouch for offsets
    /// that were rewritten after it.
    generation: u64,
    syncing: bool,
    fsyncs: u64,
    /// fsync of the last sealed segment running in the background (flush = never); it
    /// answers the end it made durable, which counts once it is joined.
    background: Option<JoinHandle<Option<(u64, i64)>>>,
}

impl Durability {
    fn lock(&self) -> MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn mark_durable(&self, generation: u64, end: i64) {
        let mut st = self.lock();
        if st.generation == generation && end > st.durable_end {
            st.durable_end = end;
        }
        st.fsyncs += 1;
    }

    fn truncated(&self, log_end_offset: i64) {
        let mut st = self.lock();
        st.generation += 1;
        st.durable_end = st.durable_end.min(log_end_offset);
    }

    /// Waits for the background fsync and counts what it made durable. Counting it here, at
    /// a point the log's own calls decide (the next roll, a flush, close), rather than
    /// whenever the thread happens to finish, makes what a power loss keeps depend on the
    /// log's history alone: a simulated seed replays exactly.
    fn join_background(&self) {
        let handle = self.lock().background.take();
        if let Some(Ok(Some((generation, end)))) = handle.map(JoinHandle::join) {
            self.mark_durable(generation, end);
        }
    }
}

impl Log {
    /// Opens (or creates) the log in `dir`, recovering it if it was not closed cleanly.
    pub fn open(dir: impl Into<PathBuf>, config: LogConfig, now_ms: i64) -> Result<Log, LogError> {
        config.validate()?;
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(segment::io("create directory", &dir))?;
        let files = CheckpointFiles::in_dir(&dir);
        let clean = files.clean_shutdown.exists();
        // What the clean shutdown left of the transactions (an older marker is empty).
        let txn_snapshot = if clean {
            fs::read(&files.clean_shutdown).ok()
        } else {
            None
        };
        if clean {
            // From here on a crash must be treated as unclean.
            fs::remove_file(&files.clean_shutdown).map_err(segment::io("remove", &files.clean_shutdown))?;
            checkpoint::sync_dir(&dir)?;
        }
        let log_start_ckpt = read_or_warn(checkpoint::read_offset(&files.log_start_offset));
        let mut recovery_point = read_or_warn(checkpoint::read_offset(&files.recovery_point)).unwrap_or(0);
        let mut epochs = match read_or_warn(checkpoint::read_pairs(&files.leader_epoch)) {
            Some(pairs) => LeaderEpochCache::from_entries(&pairs),
            None => {
                // Only a scan of every batch can rebuild a lost epoch cache.
                recovery_point = 0;
                LeaderEpochCache::default()
            }
        };
        let recover_from = if clean { i64::MAX } else { recovery_point };

        complete_interrupted_cleans(&dir)?;
        let gaps = if config.cleanup_policy.compacts() || CleanerCheckpoint::path(&dir).exists() {
            Gaps::Allowed
        } else {
            Gaps::Forbidden
        };
        let bases = list_segments(&dir)?;
        let mut segments = BTreeMap::new();
        let mut next_expected: Option<i64> = None;
        for (i, &base) in bases.iter().enumerate() {
            let upper = bases.get(i + 1).copied().unwrap_or(i64::MAX);
            // A compacted log may have gaps, but segments never overlap.
            if next_expected.is_some_and(|n| !gaps.continues(n, base)) {
                tracing::warn!(
                    log = %dir.display(),
                    segment = base,
                    expected = next_expected,
                    "segment does not continue the previous one; deleting it and every later segment"
                );
                delete_segment_files(&dir, &bases[i..])?;
                break;
            }
            let trusted = if upper <= recover_from {
                Segment::open_trusted(&dir, base, now_ms, &config, gaps)?
            } else {
                None
            };
            let (seg, truncated) = match trusted {
                Some(seg) => (seg, None),
                None => {
                    if upper <= recover_from {
                        tracing::warn!(log = %dir.display(), segment = base, "index missing or inconsistent; recovering segment");
                    }
                    let (seg, report) = Segment::recover(&dir, base, now_ms, &config, &mut epochs, gaps)?;
                    (seg, report.truncated)
                }
            };
            next_expected = Some(seg.next_offset());
            segments.insert(base, seg);
            if let Some((bytes, reason)) = truncated {
                tracing::warn!(
                    log = %dir.display(),
                    segment = base,
                    cut_bytes = bytes,
                    %reason,
                    "found an invalid batch; truncated the segment there"
                );
                if i + 1 < bases.len() {
                    tracing::warn!(log = %dir.display(), segments = %in_words(&bases[i + 1..]), "deleting the segments after the truncation point");
                    delete_segment_files(&dir, &bases[i + 1..])?;
                }
                break;
            }
        }
        if segments.is_empty() {
            let base = log_start_ckpt.unwrap_or(0).max(0);
            segments.insert(base, Segment::create(&dir, base, now_ms)?);
        }

        let mut state = LogState {
            segments,
            log_start_offset: 0,
            epochs: LeaderEpochCache::default(),
            offline: None,
            last_flush_ms: now_ms,
        };
        let first_base = *state.segments.keys().next().expect("at least one segment");
        let mut log_start = log_start_ckpt.unwrap_or(first_base).max(first_base);
        let leo = state.log_end_offset();
        if log_start > leo {
            tracing::warn!(log = %dir.display(), log_start, leo, "log ends before its start offset; starting an empty log there");
            for seg in state.segments.values() {
                seg.delete_files()?;
            }
            state.segments.clear();
            state
                .segments
                .insert(log_start, Segment::create(&dir, log_start, now_ms)?);
            epochs = LeaderEpochCache::default();
        }
        let leo = state.log_end_offset();
        if state.segments.len() == 1 && state.active().is_empty() {
            log_start = state.active().base_offset.max(log_start.min(leo));
        }
        state.log_start_offset = log_start;
        // Start first: moving an old epoch up to the log start must not leave an entry that
        // begins at the log end, which no batch vouches for.
        epochs.truncate_from_start(log_start);
        epochs.truncate_from_end(leo);
        state.epochs = epochs;

        // After a crash, what recovery kept past the recovery point may still sit in the page
        // cache only (a process crash leaves it there): fsync it before the log serves it, so
        // that whatever it holds now survives a later power loss and the flush policy's
        // promise covers records written before the crash too.
        if !clean && leo > recovery_point {
            for seg in state.segments.values_mut() {
                if seg.next_offset() > recovery_point {
                    seg.sync_all_files()?;
                }
            }
            checkpoint::sync_dir(&dir)?;
        }
        let durable_end = leo;
        let log = Log {
            dir,
            config: RwLock::new(config),
            files,
            state: RwLock::new(state),
            durability: Arc::new(Durability {
                state: Mutex::new(SyncState {
                    durable_end,
                    generation: 0,
                    syncing: false,
                    fsyncs: 0,
                    background: None,
                }),
                synced: Condvar::new(),
            }),
            cleaning: Mutex::new(()),
            cleaner_checkpoint: Mutex::new(CleanerCheckpoint::default()),
            gaps_allowed: AtomicBool::new(gaps == Gaps::Allowed),
            txns: Mutex::new(Transactions::default()),
        };
        {
            let mut state = log.write_state();
            // A clean open with the shutdown's snapshot and every `.txnindex` sound has nothing
            // to replay.
            let restored = match txn_snapshot.as_deref().and_then(Transactions::from_snapshot) {
                Some(txns) => sound_txn_indexes(&state)?.map(|indexes| (txns, indexes)),
                None => None,
            };
            match restored {
                Some((txns, indexes)) => {
                    for (seg, entries) in state.segments.values_mut().zip(indexes) {
                        seg.adopt_aborted(entries);
                    }
                    *log.lock_txns() = txns;
                }
                None => log.replay_transactions_into(&mut state)?,
            }
        }
        {
            let state = log.read_state();
            let mut ckpt = CleanerCheckpoint::read(&log.dir);
            if ckpt.truncate_to(state.active().base_offset) {
                ckpt.write(&log.dir)?;
            }
            *log.cleaner_checkpoint.lock().unwrap_or_else(|p| p.into_inner()) = ckpt;
            log.write_epochs(&state)?;
            checkpoint::write_offset(&log.files.log_start_offset, state.log_start_offset)?;
            checkpoint::write_offset(&log.files.recovery_point, durable_end)?;
        }
        Ok(log)
    }

    /// Rebuilds the open transactions and every segment's aborted-transaction index from the
    /// log's batches (a `.txnindex` that agrees is kept, any other rewritten).
    fn replay_transactions_into(&self, state: &mut LogState) -> Result<(), LogError> {
        let (txns, aborted) = replay_transactions(state)?;
        for (seg, entries) in state.segments.values_mut().zip(aborted) {
            match seg.read_txn_index_file()? {
                Some(on_disk) if on_disk == entries => seg.adopt_aborted(on_disk),
                on_disk => {
                    if on_disk.is_none() {
                        tracing::warn!(log = %self.dir.display(), segment = seg.base_offset, "damaged transaction index; rebuilding it from the log");
                    }
                    seg.set_aborted(entries)?;
                }
            }
        }
        *self.lock_txns() = txns;
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The settings in force now (a copy: another thread may change them any time).
    pub fn config(&self) -> LogConfig {
        self.config.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the settings of an open log (a topic config changed live). Segments already
    /// written keep their size; the next roll, retention pass and clean follow the new values.
    pub fn set_config(&self, config: LogConfig) -> Result<(), LogError> {
        config.validate()?;
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = config;
        Ok(())
    }

    fn read_state(&self) -> RwLockReadGuard<'_, LogState> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_state(&self) -> RwLockWriteGuard<'_, LogState> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_txns(&self) -> MutexGuard<'_, Transactions> {
        self.txns.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The first offset a read_committed consumer may not read yet, given the high
    /// watermark: where the earliest open transaction starts, or a completed one whose marker
    /// the HW has not passed. `None` when no transaction holds readers back.
    pub fn first_unstable_offset(&self, high_watermark: i64) -> Option<i64> {
        self.lock_txns().first_unstable_offset(high_watermark)
    }

    /// Open transactions as `(producer id, first offset)`, oldest first.
    pub fn ongoing_transactions(&self) -> Vec<(i64, i64)> {
        self.lock_txns().ongoing()
    }

    /// The first offset of `producer_id`'s open transaction, if it has one.
    pub fn ongoing_transaction_of(&self, producer_id: i64) -> Option<i64> {
        self.lock_txns().ongoing_first_offset(producer_id)
    }

    /// Kafka's `collectAbortedTransactions`: the aborted transactions that overlap
    /// `[fetch_offset, upper_bound)`, from the segment holding `fetch_offset` on.
    pub fn collect_aborted_txns(&self, fetch_offset: i64, upper_bound: i64) -> Vec<AbortedTxn> {
        let state = self.read_state();
        let from = state
            .segments
            .range(..=fetch_offset)
            .next_back()
            .map_or(i64::MIN, |(b, _)| *b);
        let mut out = Vec::new();
        for seg in state.segments.range(from..).map(|(_, s)| s) {
            if txn::collect_aborted(seg.aborted_txns(), fetch_offset, upper_bound, &mut out) {
                break;
            }
        }
        out
    }

    /// Every segment's aborted-transaction index, as `(segment base offset, entries)`.
    pub fn aborted_txn_index(&self) -> Vec<(i64, Vec<AbortedTxn>)> {
        self.read_state()
            .segments
            .values()
            .filter(|s| !s.aborted_txns().is_empty())
            .map(|s| (s.base_offset, s.aborted_txns().to_vec()))
            .collect()
    }

    pub fn log_start_offset(&self) -> i64 {
        self.read_state().log_start_offset
    }

    pub fn log_end_offset(&self) -> i64 {
        self.read_state().log_end_offset()
    }

    /// Bytes of all segments.
    pub fn size_bytes(&self) -> u64 {
        self.read_state().segments.values().map(Segment::size).sum()
    }

    /// `(base offset, bytes)` of each segment, oldest first.
    pub fn segments(&self) -> Vec<(i64, u64)> {
        self.read_state()
            .segments
            .values()
            .map(|s| (s.base_offset, s.size()))
            .collect()
    }

    /// fsyncs done for appended data so far (group commit shares one among many appends).
    pub fn fsync_count(&self) -> u64 {
        self.durability.lock().fsyncs
    }

    /// Why the log refuses appends, if it does.
    pub fn offline_reason(&self) -> Option<String> {
        self.read_state().offline.clone()
    }

    /// Appends batches a producer sent (`base offset` 0 in each): validates them, assigns
    /// offsets from the log end and stamps `leader_epoch`, patching those two fields, and the
    /// max timestamp where the producer's header disagrees with its records.
    pub fn append_as_leader(
        &self,
        records: &mut [u8],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<LogAppendInfo, LogError> {
        let mut headers = self.validate_batches(records)?;
        let mut position = 0usize;
        for h in headers.iter_mut() {
            let bytes = &mut records[position..position + h.size()];
            position += h.size();
            if let Some(max) = validate_producer_records(bytes, h)?
                && max != h.max_timestamp
            {
                h.crc = batch::set_max_timestamp(bytes, max);
                h.max_timestamp = max;
            }
            if h.base_offset != 0 {
                return Err(LogError::InvalidRecord(format!(
                    "a producer batch must have base offset 0, found {}",
                    h.base_offset
                )));
            }
            if h.records_count < 1 || h.last_offset_delta != h.records_count - 1 {
                return Err(LogError::InvalidRecord(format!(
                    "a producer batch must hold contiguous offsets: {} records, last offset delta {}",
                    h.records_count, h.last_offset_delta
                )));
            }
        }
        let info = {
            let mut state = self.write_state();
            self.check_online(&state)?;
            let mut next = state.log_end_offset();
            let mut position = 0usize;
            for h in headers.iter_mut() {
                let bytes = &mut records[position..position + h.size()];
                batch::set_base_offset(bytes, next);
                batch::set_partition_leader_epoch(bytes, leader_epoch);
                h.base_offset = next;
                h.partition_leader_epoch = leader_epoch;
                next = h.next_offset();
                position += h.size();
            }
            self.append_locked(&mut state, records, &headers, now_ms)?
        };
        self.after_append(&info, now_ms)?;
        Ok(info)
    }

    /// Appends batches fetched from the leader, offsets and epochs kept as they are. Offsets must
    /// increase from the log end on; a compacted leader's batches leave gaps, which are kept.
    pub fn append_as_follower(&self, records: &[u8], now_ms: i64) -> Result<LogAppendInfo, LogError> {
        let headers = self.validate_batches(records)?;
        let info = {
            let mut state = self.write_state();
            self.check_online(&state)?;
            let mut expected = state.log_end_offset();
            let mut gap = false;
            for h in &headers {
                if h.base_offset < expected {
                    return Err(LogError::UnexpectedAppendOffset {
                        first_offset: h.base_offset,
                        log_end_offset: expected,
                    });
                }
                gap |= h.base_offset > expected;
                expected = h.next_offset();
            }
            if gap && self.gaps() == Gaps::Forbidden {
                self.allow_gaps()?;
                state.segments.values_mut().for_each(Segment::allow_gaps);
            }
            self.append_locked(&mut state, records, &headers, now_ms)?
        };
        self.after_append(&info, now_ms)?;
        Ok(info)
    }

    fn validate_batches(&self, records: &[u8]) -> Result<Vec<BatchHeader>, LogError> {
        let max_message_bytes = self.config().max_message_bytes;
        let mut headers = Vec::new();
        for item in batch::Batches::new(records) {
            let (_, header, _) =
                item.map_err(|(at, e)| LogError::CorruptMessage(format!("batch at byte {at}: {e}")))?;
            if header.size() as u64 > max_message_bytes {
                return Err(LogError::RecordTooLarge {
                    size: header.size(),
                    max: max_message_bytes,
                });
            }
            headers.push(header);
        }
        if headers.is_empty() {
            return Err(LogError::InvalidRecord("no record batch in the append".into()));
        }
        Ok(headers)
    }

    fn check_online(&self, state: &LogState) -> Result<(), LogError> {
        match &state.offline {
            Some(reason) => Err(LogError::Offline {
                dir: self.dir.clone(),
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    fn append_locked(
        &self,
        state: &mut LogState,
        records: &[u8],
        headers: &[BatchHeader],
        now_ms: i64,
    ) -> Result<LogAppendInfo, LogError> {
        let first = headers.first().expect("validated non-empty");
        let last = headers.last().expect("validated non-empty");
        let roll = state
            .active()
            .should_roll(records.len() as u64, last.last_offset(), now_ms, &self.config());
        if roll {
            let leo = state.log_end_offset();
            self.roll_locked(state, leo, now_ms)?;
        }
        let mut epochs_changed = false;
        for h in headers {
            if h.partition_leader_epoch >= 0
                && state
                    .epochs
                    .latest_epoch()
                    .is_none_or(|latest| h.partition_leader_epoch > latest)
            {
                epochs_changed |= state.epochs.assign(h.partition_leader_epoch, h.base_offset);
            }
        }
        if let Err(e) = state.active_mut().append(records, headers, &self.config()) {
            if let LogError::Offline { reason, .. } = &e {
                state.offline = Some(reason.clone());
            }
            if epochs_changed {
                let leo = state.log_end_offset();
                state.epochs.truncate_from_end(leo);
            }
            return Err(e);
        }
        if epochs_changed {
            self.write_epochs(state)?;
        }
        self.track_transactions(state, records, headers)?;
        let (max_timestamp, offset_of_max_timestamp) = headers
            .iter()
            .map(|h| (h.max_timestamp, h.last_offset()))
            .fold((-1, -1), |acc, x| if x.0 > acc.0 { x } else { acc });
        Ok(LogAppendInfo {
            first_offset: first.base_offset,
            last_offset: last.last_offset(),
            max_timestamp,
            offset_of_max_timestamp,
            batches: headers.len(),
            records: headers.iter().map(|h| i64::from(h.records_count)).sum(),
            bytes: records.len(),
        })
    }

    /// Opens and closes the transactions of batches just appended; an ABORT marker's entry
    /// goes to the active segment's transaction index.
    fn track_transactions(
        &self,
        state: &mut LogState,
        records: &[u8],
        headers: &[BatchHeader],
    ) -> Result<(), LogError> {
        if headers.iter().all(|h| h.attributes & 0x10 == 0) {
            return Ok(());
        }
        let mut txns = self.lock_txns();
        let mut position = 0usize;
        for h in headers {
            let bytes = &records[position..position + h.size()];
            position += h.size();
            if let Some(entry) = txns.apply(h, bytes) {
                state.active_mut().append_aborted(entry)?;
            }
        }
        Ok(())
    }

    /// Applies the flush policy once the log lock is released, so appends can share fsyncs.
    fn after_append(&self, info: &LogAppendInfo, now_ms: i64) -> Result<(), LogError> {
        match self.config().flush {
            FlushPolicy::Never => Ok(()),
            FlushPolicy::Always => self.sync_to(info.last_offset + 1),
            FlushPolicy::IntervalMs(ms) => {
                let due = {
                    let mut state = self.write_state();
                    let due = now_ms.saturating_sub(state.last_flush_ms) >= ms as i64;
                    if due {
                        state.last_flush_ms = now_ms;
                    }
                    due
                };
                if due {
                    self.sync_to(info.last_offset + 1)
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Waits until every offset below `end` is fsynced. The first waiter fsyncs for all who
    /// arrive while it works: group commit.
    fn sync_to(&self, end: i64) -> Result<(), LogError> {
        let d = &self.durability;
        let mut st = d.lock();
        loop {
            if st.durable_end >= end {
                return Ok(());
            }
            if st.syncing {
                st = d.synced.wait(st).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            st.syncing = true;
            let generation = st.generation;
            drop(st);
            let (file, target, path) = {
                let state = self.read_state();
                let active = state.active();
                (active.file(), state.log_end_offset(), self.dir.clone())
            };
            let result = file.sync_data();
            st = d.lock();
            st.syncing = false;
            if result.is_ok() {
                st.fsyncs += 1;
                if st.generation == generation && target > st.durable_end {
                    st.durable_end = target;
                }
            }
            d.synced.notify_all();
            if let Err(source) = result {
                return Err(LogError::Io {
                    op: "fsync",
                    path,
                    source,
                });
            }
        }
    }

    /// Seals the active segment and starts a new one at `new_base`.
    fn roll_locked(&self, state: &mut LogState, new_base: i64, now_ms: i64) -> Result<(), LogError> {
        let leo = state.log_end_offset();
        if state.active().is_empty() {
            if state.active().base_offset == new_base {
                return Ok(());
            }
            // An empty active segment at the wrong base (a follower jumped ahead): replace it.
            let old = state.active().base_offset;
            if let Some(seg) = state.segments.remove(&old) {
                seg.delete_files()?;
            }
            state
                .segments
                .insert(new_base, Segment::create(&self.dir, new_base, now_ms)?);
            return Ok(());
        }
        state.active_mut().seal()?;
        let fresh = Segment::create(&self.dir, new_base, now_ms)?;
        let sealed = state.active_mut();
        match self.config().flush {
            FlushPolicy::Never => {
                // Kafka flushes a segment once it is rolled, in the background: that is what
                // lets the recovery point advance and bounds the scan after a crash.
                let file = sealed.file();
                let indexes = [
                    self.dir.join(segment::file_name(sealed.base_offset, "index")),
                    self.dir.join(segment::file_name(sealed.base_offset, "timeindex")),
                ];
                // The previous segment's fsync has had a whole segment's time to finish.
                self.durability.join_background();
                let mut st = self.durability.lock();
                let generation = st.generation;
                st.background = Some(std::thread::spawn(move || {
                    let ok = file.sync_data().is_ok()
                        && indexes
                            .iter()
                            .all(|p| fs::File::open(p).and_then(|f| f.sync_data()).is_ok());
                    ok.then_some((generation, leo))
                }));
            }
            FlushPolicy::Always | FlushPolicy::IntervalMs(_) => {
                sealed.sync_all_files()?;
                let generation = self.durability.lock().generation;
                self.durability.mark_durable(generation, leo);
            }
        }
        state.segments.insert(new_base, fresh);
        checkpoint::sync_dir(&self.dir)?;
        let durable = self.durability.lock().durable_end;
        checkpoint::write_offset(&self.files.recovery_point, durable)
    }

    /// Rolls a new segment now, if the active one holds anything.
    pub fn roll(&self, now_ms: i64) -> Result<(), LogError> {
        let mut state = self.write_state();
        self.check_online(&state)?;
        let leo = state.log_end_offset();
        self.roll_locked(&mut state, leo, now_ms)
    }

    /// Reads whole batches from `offset` (the first one contains it), about `max_bytes` of
    /// them but always at least one, none at or above `upper_bound` (the high watermark for
    /// consumers; `None` reads to the log end, as followers do). Never returns a batch that
    /// fails its CRC: a corrupt first batch is an error, a later one ends the read early.
    pub fn read(&self, offset: i64, max_bytes: usize, upper_bound: Option<i64>) -> Result<FetchData, LogError> {
        let state = self.read_state();
        let leo = state.log_end_offset();
        if offset < state.log_start_offset || offset > leo {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start_offset: state.log_start_offset,
                log_end_offset: leo,
            });
        }
        let bound = upper_bound.unwrap_or(leo).min(leo);
        let mut records = Vec::new();
        if offset < bound {
            let from = state
                .segments
                .range(..=offset)
                .next_back()
                .map_or(i64::MIN, |(b, _)| *b);
            for seg in state.segments.range(from..).map(|(_, s)| s) {
                records = seg.read(offset, max_bytes, bound)?;
                if !records.is_empty() {
                    break;
                }
            }
        }
        Ok(FetchData {
            records: Bytes::from(records),
            log_start_offset: state.log_start_offset,
            log_end_offset: leo,
        })
    }

    /// The first record with a timestamp at or after `timestamp` (ListOffsets by time).
    pub fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<TimestampOffset>, LogError> {
        let state = self.read_state();
        for seg in state.segments.values().filter(|s| s.max_timestamp() >= timestamp) {
            let from = seg.position_for_timestamp(timestamp)?;
            for (position, header) in seg.headers_from(from)? {
                if header.max_timestamp < timestamp || header.next_offset() <= state.log_start_offset {
                    continue;
                }
                let bytes = seg.read_at(position, header.size())?;
                batch::validate(&bytes).map_err(|e| LogError::CorruptBatch {
                    path: self.dir.join(segment::file_name(seg.base_offset, "log")),
                    position,
                    reason: e.to_string(),
                })?;
                let found = records::decode(&bytes)?
                    .into_iter()
                    .find(|r| r.timestamp >= timestamp && r.offset >= state.log_start_offset);
                if let Some(r) = found {
                    return Ok(Some(TimestampOffset {
                        offset: r.offset,
                        timestamp: r.timestamp,
                    }));
                }
            }
        }
        Ok(None)
    }

    /// Headers of the batches in the newest `segments` segments, oldest first: enough to
    /// rebuild recent per-producer state without reading the whole log.
    pub fn recent_batch_headers(&self, segments: usize) -> Result<Vec<BatchHeader>, LogError> {
        let state = self.read_state();
        let mut out = Vec::new();
        let skip = state.segments.len().saturating_sub(segments);
        for seg in state.segments.values().skip(skip) {
            out.extend(seg.headers_from(0)?.into_iter().map(|(_, h)| h));
        }
        Ok(out)
    }

    /// Removes every batch at or above `offset` (follower truncation). A batch that straddles
    /// `offset` goes whole, so the log may end below it. Returns whether anything was removed.
    pub fn truncate_to(&self, offset: i64) -> Result<bool, LogError> {
        let mut state = self.write_state();
        let leo = state.log_end_offset();
        if offset >= leo {
            // No batch goes, but an epoch entry at the log end can: a leader that assigned an
            // epoch and appended nothing under it must forget that epoch as a follower, or it
            // keeps presenting it and its fetches keep diverging (Kafka's `truncateTo`).
            if state.epochs.truncate_from_end(leo) {
                self.write_epochs(&state)?;
            }
            return Ok(false);
        }
        if offset < state.log_start_offset {
            drop(state);
            self.truncate_fully_and_start_at(offset)?;
            return Ok(true);
        }
        let doomed: Vec<i64> = state.segments.range(offset..).map(|(b, _)| *b).collect();
        for base in &doomed {
            if let Some(seg) = state.segments.remove(base) {
                seg.delete_files()?;
            }
        }
        if state.segments.is_empty() {
            state.segments.insert(offset, Segment::create(&self.dir, offset, 0)?);
        } else {
            state.active_mut().truncate_to(offset, &self.config())?;
        }
        let leo = state.log_end_offset();
        self.truncate_cleaner_checkpoint(leo)?;
        if leo < state.log_start_offset {
            // The batch holding `offset` began below the log start: nothing valid is left.
            drop(state);
            self.truncate_fully_and_start_at(offset)?;
            return Ok(true);
        }
        self.durability.truncated(leo);
        if state.epochs.truncate_from_end(leo) {
            self.write_epochs(&state)?;
        }
        if self.lock_txns().seen() {
            // Markers may have gone with the cut: what is open now comes from the log again.
            let (txns, _) = replay_transactions(&state)?;
            *self.lock_txns() = txns;
        }
        Ok(true)
    }

    /// Deletes everything and restarts the log empty at `offset` (a follower that fell below
    /// the leader's log start).
    pub fn truncate_fully_and_start_at(&self, offset: i64) -> Result<(), LogError> {
        let mut state = self.write_state();
        for seg in state.segments.values() {
            seg.delete_files()?;
        }
        state.segments.clear();
        state.segments.insert(offset, Segment::create(&self.dir, offset, 0)?);
        state.log_start_offset = offset;
        state.epochs = LeaderEpochCache::default();
        self.lock_txns().clear();
        self.truncate_cleaner_checkpoint(offset)?;
        self.durability.truncated(offset);
        self.write_epochs(&state)?;
        checkpoint::write_offset(&self.files.log_start_offset, offset)
    }

    /// Deletes old segments by `retention_ms` and `retention_bytes` (only when the cleanup
    /// policy includes `delete`, as Kafka), and those wholly below the log start offset. Never
    /// deletes a segment holding offsets at or above `high_watermark`.
    pub fn enforce_retention(&self, now_ms: i64, high_watermark: i64) -> Result<RetentionOutcome, LogError> {
        let config = self.config();
        let deletes = config.cleanup_policy.deletes();
        let retention_ms = if deletes { config.retention_ms } else { -1 };
        let retention_bytes = if deletes { config.retention_bytes } else { -1 };
        let mut state = self.write_state();
        let mut remaining: u64 = state.segments.values().map(Segment::size).sum();
        let log_start = state.log_start_offset;
        self.delete_prefix(&mut state, high_watermark, now_ms, |seg, upper| {
            let by_time = retention_ms >= 0 && seg.max_timestamp() >= 0 && now_ms - seg.max_timestamp() > retention_ms;
            let by_size = retention_bytes >= 0 && remaining.saturating_sub(seg.size()) >= retention_bytes as u64;
            let by_start = upper <= log_start;
            let delete = by_time || by_size || by_start;
            if delete {
                remaining -= seg.size();
            }
            delete
        })
    }

    /// Moves the log start offset up to `offset` (DeleteRecords) and deletes the segments
    /// wholly below it. `offset` may not pass the high watermark.
    pub fn delete_records(&self, offset: i64, high_watermark: i64, now_ms: i64) -> Result<i64, LogError> {
        let mut state = self.write_state();
        let leo = state.log_end_offset();
        if offset < 0 || offset > high_watermark.min(leo) {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start_offset: state.log_start_offset,
                log_end_offset: high_watermark.min(leo),
            });
        }
        if offset > state.log_start_offset {
            state.log_start_offset = offset;
            if state.epochs.truncate_from_start(offset) {
                self.write_epochs(&state)?;
            }
            checkpoint::write_offset(&self.files.log_start_offset, offset)?;
        }
        let log_start = state.log_start_offset;
        self.delete_prefix(&mut state, high_watermark, now_ms, |_, upper| upper <= log_start)?;
        Ok(state.log_start_offset)
    }

    /// Deletes the longest prefix of segments for which `doomed(segment, upper bound)` holds,
    /// within the high watermark, and moves the log start past them.
    fn delete_prefix(
        &self,
        state: &mut LogState,
        high_watermark: i64,
        now_ms: i64,
        mut doomed: impl FnMut(&Segment, i64) -> bool,
    ) -> Result<RetentionOutcome, LogError> {
        let leo = state.log_end_offset();
        let bases: Vec<i64> = state.segments.keys().copied().collect();
        let mut count = 0;
        for (i, base) in bases.iter().enumerate() {
            let upper = bases.get(i + 1).copied().unwrap_or(leo);
            let seg = &state.segments[base];
            let last_and_empty = i + 1 == bases.len() && seg.is_empty();
            if upper > high_watermark || last_and_empty || !doomed(seg, upper) {
                break;
            }
            count += 1;
        }
        let mut outcome = RetentionOutcome::default();
        if count == 0 {
            outcome.log_start_offset = state.log_start_offset;
            return Ok(outcome);
        }
        if count == bases.len() {
            self.roll_locked(state, leo, now_ms)?;
        }
        for base in &bases[..count] {
            if let Some(seg) = state.segments.remove(base) {
                outcome.deleted_bytes += seg.size();
                seg.delete_files()?;
            }
        }
        outcome.deleted_segments = count;
        let first = *state.segments.keys().next().expect("the active segment stays");
        if first > state.log_start_offset {
            state.log_start_offset = first;
            checkpoint::write_offset(&self.files.log_start_offset, first)?;
        }
        if state.epochs.truncate_from_start(state.log_start_offset) {
            self.write_epochs(state)?;
        }
        outcome.log_start_offset = state.log_start_offset;
        Ok(outcome)
    }

    fn gaps(&self) -> Gaps {
        if self.gaps_allowed.load(Ordering::Acquire) {
            Gaps::Allowed
        } else {
            Gaps::Forbidden
        }
    }

    /// From now on (and after every reopen) the log may hold gaps.
    fn allow_gaps(&self) -> Result<(), LogError> {
        let ckpt = self.cleaner_checkpoint.lock().unwrap_or_else(|p| p.into_inner());
        ckpt.write(&self.dir)?;
        self.gaps_allowed.store(true, Ordering::Release);
        Ok(())
    }

    fn truncate_cleaner_checkpoint(&self, offset: i64) -> Result<(), LogError> {
        let mut ckpt = self.cleaner_checkpoint.lock().unwrap_or_else(|p| p.into_inner());
        if ckpt.truncate_to(offset) {
            ckpt.write(&self.dir)?;
        }
        Ok(())
    }

    /// Where the cleaner's next pass starts: offsets below it were cleaned at least once.
    pub fn first_dirty_offset(&self) -> i64 {
        self.cleaner_checkpoint
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .first_dirty_offset()
    }

    /// Compacts the log when its cleanup policy includes `compact` and it is due (Kafka's
    /// `LogCleanerManager.grabFilthiestCompactedLog` for one log, then `Cleaner.clean`): the
    /// dirty ratio reached `min.cleanable.dirty.ratio`, a dirty record waited longer than
    /// `max.compaction.lag.ms`, or a cleaned range's tombstones may now go. `Ok(None)` when
    /// nothing was due.
    pub fn clean(&self, now_ms: i64) -> Result<Option<CleanStats>, LogError> {
        self.clean_below(now_ms, i64::MAX)
    }

    /// [`Log::clean`] of the segments wholly below `upper`: a replica passes its high
    /// watermark, as Kafka's cleaner stops at the last stable offset. A record above it may
    /// still be truncated away, and must not have removed the older value of its key.
    pub fn clean_below(&self, now_ms: i64, upper: i64) -> Result<Option<CleanStats>, LogError> {
        self.clean_until(now_ms, upper, cleaner::DEDUPE_BUFFER_BYTES, None)
    }

    /// [`Log::clean`], stopping dead at `crash` as a crash would (tests reopen the log then).
    #[cfg(test)]
    pub(crate) fn clean_and_crash(&self, now_ms: i64, crash: CrashPoint) -> Result<Option<CleanStats>, LogError> {
        self.clean_until(now_ms, i64::MAX, cleaner::DEDUPE_BUFFER_BYTES, Some(crash))
    }

    /// [`Log::clean`] with a key map of at most `max_map_bytes`.
    #[cfg(test)]
    pub(crate) fn clean_with_map_limit(
        &self,
        now_ms: i64,
        max_map_bytes: usize,
    ) -> Result<Option<CleanStats>, LogError> {
        self.clean_until(now_ms, i64::MAX, max_map_bytes, None)
    }

    fn clean_until(
        &self,
        now_ms: i64,
        upper: i64,
        max_map_bytes: usize,
        crash: Option<CrashPoint>,
    ) -> Result<Option<CleanStats>, LogError> {
        let config = &self.config();
        if !config.cleanup_policy.compacts() {
            return Ok(None);
        }
        let _cleaning = self.cleaning.lock().unwrap_or_else(|p| p.into_inner());
        if self.gaps() == Gaps::Forbidden {
            self.allow_gaps()?;
            self.write_state().segments.values_mut().for_each(Segment::allow_gaps);
        }
        let (sealed, log_start, aborted) = {
            let state = self.read_state();
            self.check_online(&state)?;
            let aborted: Vec<AbortedTxn> = state
                .segments
                .values()
                .flat_map(|s| s.aborted_txns().iter().copied())
                .collect();
            let bases: Vec<i64> = state.segments.keys().copied().collect();
            let sealed: Vec<SegmentSnapshot> = state
                .segments
                .values()
                .zip(bases.iter().skip(1))
                .map(|(seg, upper)| SegmentSnapshot {
                    base_offset: seg.base_offset,
                    upper: *upper,
                    size: seg.size(),
                    file: seg.file(),
                    path: self.dir.join(segment::file_name(seg.base_offset, "log")),
                    max_timestamp: seg.max_timestamp(),
                    first_batch_timestamp: seg.first_batch_timestamp_cached(),
                    index_entries: seg.index_entries(),
                })
                .collect();
            (sealed, state.log_start_offset, aborted)
        };
        // Kafka's first uncleanable offset: the active segment, any segment holding a record
        // younger than min.compaction.lag.ms, and any reaching `upper` (the HW).
        let too_young = if config.min_compaction_lag_ms > 0 {
            sealed
                .iter()
                .position(|s| s.max_timestamp > now_ms.saturating_sub(config.min_compaction_lag_ms))
                .unwrap_or(sealed.len())
        } else {
            sealed.len()
        };
        let uncommitted = sealed.iter().position(|s| s.upper > upper).unwrap_or(sealed.len());
        let cleanable = &sealed[..too_young.min(uncommitted)];
        let Some(last) = cleanable.last() else {
            return Ok(None);
        };
        let first_uncleanable = last.upper;
        let ckpt = self
            .cleaner_checkpoint
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let first_dirty = ckpt
            .first_dirty_offset()
            .max(log_start)
            .max(cleanable[0].base_offset)
            .min(first_uncleanable);
        let total: u64 = cleanable.iter().map(|s| s.size).sum();
        let dirty: u64 = cleanable.iter().filter(|s| s.upper > first_dirty).map(|s| s.size).sum();
        let ratio_due = dirty > 0 && total > 0 && dirty as f64 / total as f64 >= config.min_cleanable_dirty_ratio;
        let lag_due = cleanable.iter().filter(|s| s.upper > first_dirty).any(|s| {
            s.first_batch_timestamp
                .is_some_and(|t| t >= 0 && now_ms.saturating_sub(t) > config.max_compaction_lag_ms)
        });
        let tombstones_due = ckpt.has_expired_range(now_ms, config.delete_retention_ms);
        if !(ratio_due || lag_due || tombstones_due) {
            return Ok(None);
        }

        let plan = cleaner::build_plan(cleanable, first_dirty, max_map_bytes, &aborted)?;
        // A full key map cuts this pass short; the next one goes on from there.
        let (cleanable, first_uncleanable) = match plan.end {
            Some(end) => (
                &cleanable[..cleanable
                    .iter()
                    .position(|s| s.base_offset >= end)
                    .unwrap_or(cleanable.len())],
                end,
            ),
            None => (cleanable, first_uncleanable),
        };
        let retention = cleaner::Retention {
            plan: &plan,
            checkpoint: &ckpt,
            now_ms,
            delete_retention_ms: config.delete_retention_ms,
        };
        let mut stats = CleanStats {
            first_dirty_offset: first_dirty,
            end_offset: first_uncleanable,
            segments_before: cleanable.len(),
            bytes_before: cleanable.iter().map(|s| s.size).sum(),
            ..CleanStats::default()
        };
        for group in cleaner::group_by_size(cleanable, config.segment_bytes, config.max_index_entries()) {
            let cleaned = self.write_cleaned(&group, &retention, &mut stats)?;
            if crash == Some(CrashPoint::AfterCleaned) {
                return Ok(Some(stats));
            }
            match self.swap_in(&group, &cleaned, now_ms, crash)? {
                Some(size) => {
                    stats.segments_after += 1;
                    stats.bytes_after += size;
                }
                None => {
                    tracing::info!(log = %self.dir.display(), "the log changed while it was cleaned; the clean stops here and starts again next time");
                    return Ok(Some(stats));
                }
            }
            if crash.is_some_and(|c| c != CrashPoint::BeforeCheckpoint) {
                return Ok(Some(stats));
            }
        }
        if crash == Some(CrashPoint::BeforeCheckpoint) {
            return Ok(Some(stats));
        }
        {
            let state = self.read_state();
            let end = first_uncleanable.min(state.active().base_offset);
            let mut ckpt = self.cleaner_checkpoint.lock().unwrap_or_else(|p| p.into_inner());
            ckpt.cleaned(end, now_ms, config.delete_retention_ms);
            ckpt.write(&self.dir)?;
        }
        tracing::debug!(log = %self.dir.display(), ?stats, "cleaned");
        Ok(Some(stats))
    }

    /// Writes the cleaned records of `group` to `<first base>.log.cleaned`, fsynced.
    fn write_cleaned(
        &self,
        group: &[SegmentSnapshot],
        retention: &cleaner::Retention<'_>,
        stats: &mut CleanStats,
    ) -> Result<PathBuf, LogError> {
        use std::io::Write;
        let path = cleaner::temp_log_path(&self.dir, group[0].base_offset, cleaner::CLEANED_SUFFIX);
        let file = fs::File::create(&path).map_err(segment::io("create", &path))?;
        let mut out = std::io::BufWriter::new(file);
        let mut write = |bytes: &[u8]| out.write_all(bytes).map_err(segment::io("write", &path));
        for (i, seg) in group.iter().enumerate() {
            let last_segment = i + 1 == group.len();
            cleaner::for_each_batch(seg, |position, header, bytes| {
                let last_of_group = last_segment && position + header.size() as u64 == seg.size;
                match retention.clean_batch(header, bytes, last_of_group, stats, &seg.path, position)? {
                    CleanedBatch::Unchanged => write(bytes),
                    CleanedBatch::Dropped => Ok(()),
                    CleanedBatch::Rewritten(b) => write(&b),
                }
            })?;
        }
        let file = out.into_inner().map_err(|e| LogError::Io {
            op: "write",
            path: path.clone(),
            source: e.into_error(),
        })?;
        file.sync_all().map_err(segment::io("fsync", &path))?;
        Ok(path)
    }

    /// Replaces the segments of `group` with the cleaned file, Kafka's way: rename it to
    /// `.swap` (from then on recovery completes the swap), delete the old segments, rename the
    /// swap file to the first segment's name, rebuild its indexes. `Ok(None)` (and the cleaned
    /// file gone) when the segments changed meanwhile (truncated, deleted by retention).
    fn swap_in(
        &self,
        group: &[SegmentSnapshot],
        cleaned: &Path,
        now_ms: i64,
        crash: Option<CrashPoint>,
    ) -> Result<Option<u64>, LogError> {
        let mut state = self.write_state();
        let bases: Vec<i64> = state.segments.keys().copied().collect();
        let unchanged = group.iter().all(|g| {
            let at = bases.binary_search(&g.base_offset);
            at.is_ok_and(|i| bases.get(i + 1) == Some(&g.upper) && state.segments[&g.base_offset].size() == g.size)
        });
        if !unchanged {
            drop(state);
            fs::remove_file(cleaned).map_err(segment::io("delete", cleaned))?;
            return Ok(None);
        }
        let base = group[0].base_offset;
        let swap = cleaner::temp_log_path(&self.dir, base, cleaner::SWAP_SUFFIX);
        fs::rename(cleaned, &swap).map_err(segment::io("rename", cleaned))?;
        checkpoint::sync_dir(&self.dir)?;
        if crash == Some(CrashPoint::AfterSwap) {
            return Ok(Some(0));
        }
        let mut aborted = Vec::new();
        for g in group {
            if let Some(old) = state.segments.remove(&g.base_offset) {
                aborted.extend_from_slice(old.aborted_txns());
                old.delete_files()?;
            }
        }
        if crash == Some(CrashPoint::AfterDeletingOld) {
            return Ok(Some(0));
        }
        let log_path = self.dir.join(segment::file_name(base, "log"));
        fs::rename(&swap, &log_path).map_err(segment::io("rename", &swap))?;
        checkpoint::sync_dir(&self.dir)?;
        // The epochs of a cleaned segment are all in the cache already; cleaning moves none.
        let mut scratch = LeaderEpochCache::default();
        let (mut seg, report) = Segment::recover(&self.dir, base, now_ms, &self.config(), &mut scratch, Gaps::Allowed)?;
        // Markers stay in the cleaned segment, and so do the aborted transactions they close.
        seg.set_aborted(aborted)?;
        if let Some((bytes, reason)) = report.truncated {
            let reason = format!("the cleaned segment {base} is invalid ({reason}, {bytes} bytes cut)");
            state.offline = Some(reason.clone());
            return Err(LogError::Offline {
                dir: self.dir.clone(),
                reason,
            });
        }
        let size = seg.size();
        state.segments.insert(base, seg);
        Ok(Some(size))
    }

    /// Records that `epoch` starts at `start_offset` (a new leader does this at the log end
    /// before appending anything).
    pub fn assign_epoch(&self, epoch: i32, start_offset: i64) -> Result<(), LogError> {
        let mut state = self.write_state();
        if state.epochs.assign(epoch, start_offset) {
            self.write_epochs(&state)?;
        }
        Ok(())
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.read_state().epochs.latest_epoch()
    }

    pub fn epoch_entries(&self) -> Vec<EpochEntry> {
        self.read_state().epochs.entries().to_vec()
    }

    /// Where `epoch` ends in this log (OffsetsForLeaderEpoch, divergence checks).
    pub fn end_offset_for_epoch(&self, epoch: i32) -> EpochEndOffset {
        let state = self.read_state();
        state.epochs.end_offset_for(epoch, state.log_end_offset())
    }

    fn write_epochs(&self, state: &LogState) -> Result<(), LogError> {
        checkpoint::write_pairs(&self.files.leader_epoch, &state.epochs.pairs())
    }

    /// fsyncs everything appended so far and advances the recovery point to the log end.
    pub fn flush(&self) -> Result<(), LogError> {
        self.durability.join_background();
        {
            let mut state = self.write_state();
            state.active_mut().persist_indexes()?;
        }
        let leo = self.log_end_offset();
        self.sync_to(leo)?;
        checkpoint::write_offset(&self.files.recovery_point, self.durability.lock().durable_end)
    }

    /// Flushes everything and leaves a clean-shutdown marker, so the next open skips
    /// recovery. The log refuses appends afterwards.
    pub fn close(&self) -> Result<(), LogError> {
        self.durability.join_background();
        let mut state = self.write_state();
        if let Some(reason) = &state.offline {
            return Err(LogError::Offline {
                dir: self.dir.clone(),
                reason: reason.clone(),
            });
        }
        let leo = state.log_end_offset();
        state.active_mut().seal()?;
        state.active_mut().sync_all_files()?;
        self.write_epochs(&state)?;
        checkpoint::write_offset(&self.files.log_start_offset, state.log_start_offset)?;
        checkpoint::write_offset(&self.files.recovery_point, leo)?;
        // The marker carries the open transactions, so the next open need not replay them.
        let txns = self.lock_txns().snapshot();
        checkpoint::write_atomically(&self.files.clean_shutdown, &txns)?;
        state.offline = Some("closed".into());
        Ok(())
    }

    /// `flush = <ms>` on a timer (Kafka's log flusher checking `flush.ms`): when records are
    /// not yet on stable storage and the interval has passed since the last flush, flushes
    /// them, so the tail is synced within the interval after traffic stops. Returns whether
    /// it flushed.
    pub fn flush_if_due(&self, now_ms: i64) -> Result<bool, LogError> {
        let FlushPolicy::IntervalMs(ms) = self.config().flush else {
            return Ok(false);
        };
        if self.durable_offset() >= self.log_end_offset() {
            return Ok(false);
        }
        let due = {
            let mut state = self.write_state();
            if state.offline.is_some() {
                return Ok(false);
            }
            let due = now_ms.saturating_sub(state.last_flush_ms) >= ms as i64;
            if due {
                state.last_flush_ms = now_ms;
            }
            due
        };
        if due {
            self.flush()?;
        }
        Ok(due)
    }

    /// Every offset below this is on stable storage (what a power loss would keep).
    pub fn durable_offset(&self) -> i64 {
        self.durability.lock().durable_end
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        // Without `close` the next open recovers; still, do not leave a thread writing here.
        self.durability.join_background();
    }
}

/// Kafka's `LogValidator` on a producer's batch: its records are read (a compressed batch
/// decompressed, streaming, and refused past `MAX_DECOMPRESSED_BATCH_BYTES`), they must be
/// exactly as many as the header says, and a create-time batch's max timestamp is the largest
/// of its records' timestamps, whatever the header says (sarama 1.22 always writes -1 there,
/// and a segment whose first batch claims -1 would roll on every append). Returns that max
/// timestamp, `None` when there is nothing to correct from. An uncompressed log-append-time
/// batch is not walked: nothing in it is read.
fn validate_producer_records(bytes: &[u8], header: &BatchHeader) -> Result<Option<i64>, LogError> {
    let corrupt = |e: batch::BatchError| LogError::CorruptMessage(e.to_string());
    let max = match header.compression() {
        0 if header.is_log_append_time() => return Ok(None),
        0 => batch::max_record_timestamp(bytes, header).map_err(corrupt)?,
        codec => {
            let compression = records::compression_of(codec)
                .ok_or_else(|| LogError::CorruptMessage(format!("unknown compression codec {codec}")))?;
            let compressed = &bytes[batch::RECORD_BATCH_OVERHEAD..header.size().min(bytes.len())];
            let raw = records::decompress(compression, compressed, records::MAX_DECOMPRESSED_BATCH_BYTES)?;
            batch::max_decompressed_record_timestamp(&raw, header).map_err(corrupt)?
        }
    };
    Ok(max.filter(|_| !header.is_log_append_time()))
}

fn read_or_warn<T>(result: Result<Option<T>, LogError>) -> Option<T> {
    match result {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(error = %e, "ignoring a damaged checkpoint; the log will be rescanned");
            None
        }
    }
}

/// The files of a log directory as `(base offset, extension after the first dot, path)`;
/// the base offset is `None` unless the stem is a 20-digit offset. Names that are not UTF-8
/// or have no dot are left out.
fn segment_files(dir: &Path) -> Result<Vec<(Option<i64>, String, PathBuf)>, LogError> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).map_err(segment::io("list", dir))? {
        let entry = entry.map_err(segment::io("list", dir))?;
        let name = entry.file_name();
        let Some((stem, ext)) = name.to_str().and_then(|n| n.split_once('.')) else {
            continue;
        };
        let base = (stem.len() == 20).then(|| stem.parse::<i64>().ok()).flatten();
        files.push((base, ext.to_string(), entry.path()));
    }
    Ok(files)
}

/// Base offsets of the `.log` files in `dir`, ascending; removes orphaned indexes and
/// temporary files left by an interrupted checkpoint write.
fn list_segments(dir: &Path) -> Result<Vec<i64>, LogError> {
    let mut logs = Vec::new();
    let mut indexes = Vec::new();
    for (base, ext, path) in segment_files(dir)? {
        match (base, ext.as_str()) {
            (Some(b), "log") => logs.push(b),
            (Some(b), "index" | "timeindex" | "txnindex") => indexes.push((b, path)),
            (_, "tmp") => {
                let _ = fs::remove_file(path);
            }
            _ => {}
        }
    }
    logs.sort_unstable();
    for (base, path) in indexes {
        if logs.binary_search(&base).is_err() {
            tracing::warn!(file = %path.display(), "deleting an index without a segment");
            fs::remove_file(&path).map_err(segment::io("delete", &path))?;
        }
    }
    Ok(logs)
}

/// Finishes what a crash interrupted in the cleaner's swap (Kafka's `LogLoader` does the same):
/// a `.cleaned` file is deleted, since the clean never committed; a `.swap` file replaces every
/// segment whose base offset lies in the range it covers, then takes its own name.
fn complete_interrupted_cleans(dir: &Path) -> Result<(), LogError> {
    let mut swaps = Vec::new();
    let mut segment_bases = Vec::new();
    for (base, ext, path) in segment_files(dir)? {
        let Some(base) = base else { continue };
        match ext.as_str() {
            "log" => segment_bases.push(base),
            "log.cleaned" => {
                tracing::warn!(file = %path.display(), "deleting the output of an interrupted clean");
                fs::remove_file(&path).map_err(segment::io("delete", &path))?;
            }
            "log.swap" => swaps.push(base),
            _ => {}
        }
    }
    for base in swaps {
        let swap = cleaner::temp_log_path(dir, base, cleaner::SWAP_SUFFIX);
        let bytes = fs::read(&swap).map_err(segment::io("read", &swap))?;
        let mut next = base;
        for item in batch::Batches::new(&bytes) {
            match item {
                Ok((_, header, _)) => next = header.next_offset(),
                Err((at, e)) => {
                    return Err(LogError::CorruptBatch {
                        path: swap,
                        position: at as u64,
                        reason: format!("an fsynced swap file is damaged: {e}"),
                    });
                }
            }
        }
        let replaced: Vec<i64> = segment_bases
            .iter()
            .copied()
            .filter(|b| *b >= base && *b < next.max(base + 1))
            .collect();
        tracing::warn!(log = %dir.display(), swap = base, replaced = %in_words(&replaced), "completing a clean interrupted after its swap file was written");
        delete_segment_files(dir, &replaced)?;
        delete_segment_files(dir, &[base])?;
        let log_path = dir.join(segment::file_name(base, "log"));
        fs::rename(&swap, &log_path).map_err(segment::io("rename", &swap))?;
        segment_bases.retain(|b| !replaced.contains(b));
        segment_bases.push(base);
    }
    checkpoint::sync_dir(dir)
}

fn delete_segment_files(dir: &Path, bases: &[i64]) -> Result<(), LogError> {
    for base in bases {
        for ext in ["log", "index", "timeindex", "txnindex"] {
            let path = dir.join(segment::file_name(*base, ext));
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(LogError::Io {
                        op: "delete",
                        path,
                        source,
                    });
                }
            }
        }
    }
    Ok(())
}

/// Every segment's `.txnindex` as its file holds it, in segment order; `None` when one is
/// damaged.
fn sound_txn_indexes(state: &LogState) -> Result<Option<Vec<Vec<AbortedTxn>>>, LogError> {
    let mut out = Vec::with_capacity(state.segments.len());
    for seg in state.segments.values() {
        match seg.read_txn_index_file()? {
            Some(entries) => out.push(entries),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// Replays the transactional batches of every segment, oldest first (Kafka rebuilds its
/// producer state from the log the same way when it has no snapshot): the transactions open
/// at the log end, and each segment's aborted-transaction entries, in segment order. Only
/// headers are read, and the bodies of control batches.
fn replay_transactions(state: &LogState) -> Result<(Transactions, Vec<Vec<AbortedTxn>>), LogError> {
    let mut txns = Transactions::default();
    let mut per_segment = Vec::with_capacity(state.segments.len());
    for seg in state.segments.values() {
        let mut entries = Vec::new();
        for (position, header) in seg.headers_from(0)? {
            if header.attributes & 0x10 == 0 || header.producer_id < 0 {
                continue;
            }
            let bytes = if header.is_control() {
                match seg.read_at(position, header.size()) {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot read a transaction marker; the transactions are replayed up to it");
                        break;
                    }
                }
            } else {
                Vec::new()
            };
            if let Some(entry) = txns.apply(&header, &bytes) {
                entries.push(entry);
            }
        }
        per_segment.push(entries);
    }
    Ok((txns, per_segment))
}

/// Segment base offsets in words for a log line: `0, 4096, 8192`.
fn in_words(bases: &[i64]) -> String {
    let words: Vec<String> = bases.iter().map(i64::to_string).collect();
    words.join(", ")
}
