//! Loading a group coordinator's state (Kafka's `CoordinatorLoaderImpl`): a broker that
//! becomes the leader of an offsets partition replays it from start to end, record by record
//! in log order, before it serves the partition's groups. What cannot be read or decoded is
//! logged with its offsets and skipped; the load goes on with the next readable batch and
//! says which groups and offset ranges it had to leave out.

use std::collections::BTreeMap;

use super::CommitRecordMetadataAndOffset;
use super::record::{self, CoordinatorKey, GroupMetadataValue};
use crate::engine::TopicPartition;
use crate::storage::batch::Batches;
use crate::storage::{Log, LogError, records};

/// How much of the offsets partition one read brings.
const LOAD_BUFFER_BYTES: usize = 1 << 20;

/// What replaying an offsets partition found, record by record in log order: per group its
/// last metadata (None after a tombstone) and its offsets.
pub(crate) struct Replay {
    pub(super) tp: TopicPartition,
    pub(super) groups: BTreeMap<String, ReplayedGroup>,
    /// Offset ranges `[from, to)` that could not be read or decoded, so whose groups are
    /// unknown.
    pub(super) unreadable: Vec<(i64, i64)>,
}

#[derive(Default)]
pub(super) struct ReplayedGroup {
    pub(super) metadata: Option<GroupMetadataValue>,
    pub(super) offsets: BTreeMap<TopicPartition, CommitRecordMetadataAndOffset>,
    /// Offsets of this group's records whose value did not decode.
    pub(super) unreadable: Vec<i64>,
    /// TxnOffsetCommit offsets whose transaction has no marker yet, by producer id.
    pub(super) pending_txn: BTreeMap<i64, BTreeMap<TopicPartition, CommitRecordMetadataAndOffset>>,
}

impl Replay {
    fn new(tp: TopicPartition) -> Self {
        Replay {
            tp,
            groups: BTreeMap::new(),
            unreadable: Vec::new(),
        }
    }

    fn skipped(&mut self, from: i64, to: i64) {
        tracing::error!(tp = %self.tp, from, to, "offsets records skipped: they cannot be read");
        self.unreadable.push((from, to));
    }

    /// The end marker of `producer_id`'s transaction: its offsets are committed or dropped.
    fn marker(&mut self, producer_id: i64, commit: bool) {
        for group in self.groups.values_mut() {
            if let Some(pending) = group.pending_txn.remove(&producer_id)
                && commit
            {
                super::merge_txn_offsets(&mut group.offsets, pending);
            }
        }
    }

    /// `txn_producer`: the producer of the transactional batch holding the record.
    fn record(&mut self, offset: i64, key: Option<&[u8]>, value: Option<&[u8]>, txn_producer: Option<i64>) {
        let key = match key.map(record::parse_key) {
            Some(Ok(Some(key))) => key,
            Some(Ok(None)) => {
                // Kafka's loader skips record kinds it does not know, such as KIP-848's.
                tracing::warn!(tp = %self.tp, offset, "offsets record of a kind classic groups do not use; skipped");
                return;
            }
            Some(Err(error)) => {
                tracing::error!(tp = %self.tp, offset, %error, "offsets record key does not decode; skipped");
                self.unreadable.push((offset, offset + 1));
                return;
            }
            None => {
                tracing::error!(tp = %self.tp, offset, "offsets record without a key; skipped");
                self.unreadable.push((offset, offset + 1));
                return;
            }
        };
        let group = self.groups.entry(key.group().to_string()).or_default();
        let failed = match (key, value) {
            (CoordinatorKey::OffsetCommit { tp, .. }, None) => {
                group.offsets.remove(&tp);
                None
            }
            (CoordinatorKey::OffsetCommit { tp, .. }, Some(value)) => match record::parse_offset_commit_value(value) {
                Ok(committed) => {
                    let target = match txn_producer {
                        Some(pid) => group.pending_txn.entry(pid).or_default(),
                        None => &mut group.offsets,
                    };
                    target.insert(
                        tp,
                        CommitRecordMetadataAndOffset {
                            appended_offset: offset,
                            offset: committed,
                        },
                    );
                    None
                }
                Err(error) => Some(error),
            },
            (CoordinatorKey::GroupMetadata { .. }, None) => {
                group.metadata = None;
                None
            }
            (CoordinatorKey::GroupMetadata { .. }, Some(value)) => match record::parse_group_metadata_value(value) {
                Ok(metadata) => {
                    group.metadata = Some(metadata);
                    None
                }
                Err(error) => Some(error),
            },
        };
        if let Some(error) = failed {
            tracing::error!(tp = %self.tp, offset, %error, "offsets record value does not decode; skipped");
            group.unreadable.push(offset);
        }
    }
}

/// Replays an offsets partition from its start to its end as it is now (Kafka's
/// `CoordinatorLoaderImpl`). What cannot be read or decoded is logged with its offsets and
/// skipped, and the replay goes on with the next readable batch.
pub(crate) async fn replay(tp: &TopicPartition, log: &Log) -> Replay {
    let mut replay = Replay::new(tp.clone());
    let end = log.log_end_offset();
    let mut at = log.log_start_offset();
    // Where the current run of unreadable offsets began.
    let mut unreadable_from = None;
    while at < end {
        let data = match log.read(at, LOAD_BUFFER_BYTES, Some(end)) {
            Ok(data) => data,
            Err(LogError::OffsetOutOfRange { log_start_offset, .. }) if at < log_start_offset => {
                // Retention moved the log start while we read.
                at = log_start_offset;
                continue;
            }
            Err(error @ (LogError::CorruptBatch { .. } | LogError::CorruptMessage(_))) => {
                if unreadable_from.is_none() {
                    tracing::error!(%tp, offset = at, %error, "cannot read the offsets partition here; looking for the next readable batch");
                    unreadable_from = Some(at);
                }
                // The read fails for the whole batch holding `at`; the next batch starts at
                // an offset we do not know, so try each.
                at += 1;
                tokio::task::yield_now().await;
                continue;
            }
            Err(error) => {
                // Nothing further can be read (the log went offline, say).
                tracing::error!(%tp, offset = at, %error, "cannot read the offsets partition any further");
                break;
            }
        };
        if data.records.is_empty() {
            break;
        }
        let start = at;
        for batch in Batches::checked_before(&data.records) {
            let (position, header, bytes) = match batch {
                Ok(batch) => batch,
                Err((_, error)) => {
                    tracing::error!(%tp, offset = at, %error, "offsets batch is malformed");
                    break;
                }
            };
            if header.last_offset() < at {
                continue;
            }
            if let Some(from) = unreadable_from.take() {
                replay.skipped(from, at);
            }
            let txn_producer = (header.attributes & 0x10 != 0 && header.producer_id >= 0).then_some(header.producer_id);
            if header.is_control() {
                if let Some(pid) = txn_producer
                    && header.base_offset >= at
                    && let Some(marker) = crate::storage::txn::read_end_txn_marker(bytes, &header)
                {
                    replay.marker(pid, marker.commit);
                }
            } else {
                let from = at;
                let shared = data.records.slice(position..position + bytes.len());
                let decoded = records::for_each_shared(shared, |r| {
                    if r.offset >= from {
                        replay.record(r.offset, r.key.as_deref(), r.value.as_deref(), txn_producer);
                    }
                });
                if let Err(error) = decoded {
                    tracing::error!(%tp, offset = header.base_offset, %error, "offsets batch does not decode");
                    replay.skipped(header.base_offset.max(from), header.next_offset());
                }
            }
            at = header.next_offset();
        }
        if at == start {
            unreadable_from.get_or_insert(at);
            at += 1;
        }
        tokio::task::yield_now().await;
    }
    if at < end || unreadable_from.is_some() {
        replay.skipped(unreadable_from.unwrap_or(at), end);
    }
    replay
}
