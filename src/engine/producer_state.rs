//! Idempotent producers, per partition replica (Kafka's `ProducerStateManager`): for each
//! producer id, its epoch and the sequence numbers and offsets of its last five batches. A
//! leader uses it to answer a retried batch with its original offsets instead of writing it
//! twice, and to refuse batches out of order or from a fenced epoch. Followers and recovery
//! rebuild it from the batches in the log.
//!
//! Transaction markers (control batches) move a producer's epoch and coordinator epoch as in
//! Kafka's `ProducerAppendInfo.appendEndTxnMarker`; which transactions are open is the log's
//! own bookkeeping (`storage::txn`), since its aborted-transaction index is rebuilt from it.

use std::collections::{HashMap, VecDeque};

use super::planted::{self, Bug};
use super::protocol::ErrorCode;
use crate::storage::batch::BatchHeader;

/// Kafka keeps the last five batches per producer (max in-flight requests).
const CACHED_BATCHES: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BatchMetadata {
    first_seq: i32,
    last_seq: i32,
    first_offset: i64,
    last_offset: i64,
}

#[derive(Debug, Clone)]
struct ProducerEntry {
    epoch: i16,
    batches: VecDeque<BatchMetadata>,
    /// The newest max timestamp of its batches (Kafka's `lastTimestamp`): the state expires
    /// `producer.id.expiration.ms` after it.
    last_timestamp: i64,
    /// The epoch of the transaction coordinator whose marker came last (-1 before any).
    coordinator_epoch: i32,
}

impl Default for ProducerEntry {
    fn default() -> Self {
        ProducerEntry {
            epoch: 0,
            batches: VecDeque::new(),
            last_timestamp: 0,
            coordinator_epoch: -1,
        }
    }
}

/// What the leader should do with an incoming batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    /// Append it.
    Append,
    /// Already written: answer with these offsets, write nothing.
    Duplicate { first_offset: i64, last_offset: i64 },
}

#[derive(Debug, Default)]
pub struct ProducerState {
    producers: HashMap<i64, ProducerEntry>,
}

fn last_seq(header: &BatchHeader) -> i32 {
    // Sequences wrap at i32::MAX to 0, as in Kafka.
    ((i64::from(header.base_sequence) + i64::from(header.last_offset_delta)) % (i64::from(i32::MAX) + 1)) as i32
}

impl ProducerState {
    /// Checks a batch a producer sent, before it is appended (offsets not yet assigned).
    pub fn check(&self, header: &BatchHeader) -> Result<SequenceCheck, ErrorCode> {
        if header.producer_id < 0 {
            return Ok(SequenceCheck::Append);
        }
        let Some(entry) = self.producers.get(&header.producer_id) else {
            // Unknown (new, or its state expired with retention): start tracking it.
            return Ok(SequenceCheck::Append);
        };
        if header.producer_epoch < entry.epoch {
            return Err(ErrorCode::InvalidProducerEpoch);
        }
        if header.producer_epoch > entry.epoch {
            return if header.base_sequence == 0 {
                Ok(SequenceCheck::Append)
            } else {
                Err(ErrorCode::OutOfOrderSequenceNumber)
            };
        }
        let last = last_seq(header);
        // Planted (issue 24): a retry of the newest batch passes for the next one.
        if entry
            .batches
            .back()
            .is_some_and(|b| b.first_seq == header.base_sequence)
            && planted::active(Bug::SequenceOffByOne)
        {
            return Ok(SequenceCheck::Append);
        }
        if let Some(dup) = entry
            .batches
            .iter()
            .find(|b| b.first_seq == header.base_sequence && b.last_seq == last)
        {
            return Ok(SequenceCheck::Duplicate {
                first_offset: dup.first_offset,
                last_offset: dup.last_offset,
            });
        }
        let expected = entry
            .batches
            .back()
            .map_or(0, |b| if b.last_seq == i32::MAX { 0 } else { b.last_seq + 1 });
        if entry.batches.is_empty() || header.base_sequence == expected {
            Ok(SequenceCheck::Append)
        } else {
            Err(ErrorCode::OutOfOrderSequenceNumber)
        }
    }

    /// Checks an end-transaction marker before it is appended: a marker of an older producer
    /// epoch is INVALID_PRODUCER_EPOCH, one from an older coordinator epoch
    /// TRANSACTION_COORDINATOR_FENCED. A producer unknown here passes (Kafka writes it).
    pub fn check_marker(&self, producer_id: i64, producer_epoch: i16, coordinator_epoch: i32) -> Result<(), ErrorCode> {
        let Some(entry) = self.producers.get(&producer_id) else {
            return Ok(());
        };
        if producer_epoch < entry.epoch {
            return Err(ErrorCode::InvalidProducerEpoch);
        }
        if coordinator_epoch < entry.coordinator_epoch {
            return Err(ErrorCode::TransactionCoordinatorFenced);
        }
        Ok(())
    }

    /// Checks only the producer's epoch (a coordinator's own transactional batch): an epoch
    /// older than the newest seen is INVALID_PRODUCER_EPOCH.
    pub fn check_epoch(&self, producer_id: i64, producer_epoch: i16) -> Result<(), ErrorCode> {
        match self.producers.get(&producer_id) {
            Some(entry) if producer_epoch < entry.epoch => Err(ErrorCode::InvalidProducerEpoch),
            _ => Ok(()),
        }
    }

    /// Records a batch that is now in the log (offsets assigned). A control batch moves the
    /// producer's epoch and holds no sequence.
    pub fn record(&mut self, header: &BatchHeader) {
        self.record_with(header, None);
    }

    /// [`ProducerState::record`], with the coordinator epoch of the batch when it is an
    /// end-transaction marker.
    pub fn record_with(&mut self, header: &BatchHeader, marker_coordinator_epoch: Option<i32>) {
        if header.producer_id < 0 {
            return;
        }
        let entry = self.producers.entry(header.producer_id).or_default();
        if header.producer_epoch > entry.epoch {
            entry.batches.clear();
        }
        entry.epoch = entry.epoch.max(header.producer_epoch);
        entry.last_timestamp = entry.last_timestamp.max(header.max_timestamp);
        if header.is_control() {
            if let Some(epoch) = marker_coordinator_epoch {
                entry.coordinator_epoch = entry.coordinator_epoch.max(epoch);
            }
            return;
        }
        entry.batches.push_back(BatchMetadata {
            first_seq: header.base_sequence,
            last_seq: last_seq(header),
            first_offset: header.base_offset,
            last_offset: header.last_offset(),
        });
        while entry.batches.len() > CACHED_BATCHES {
            entry.batches.pop_front();
        }
    }

    /// The log was truncated at `offset`: forget batches at or above it.
    pub fn truncate(&mut self, offset: i64) {
        for entry in self.producers.values_mut() {
            entry.batches.retain(|b| b.last_offset < offset);
        }
        self.producers.retain(|_, e| !e.batches.is_empty());
    }

    pub fn clear(&mut self) {
        self.producers.clear();
    }

    /// Forgets producers that wrote nothing for `expiration_ms` (Kafka's
    /// `producer.id.expiration.ms`, one day): a producer id is state a client may leave
    /// behind for ever, so each one costs memory only while it is in use. Returns how many
    /// went. A producer that comes back later starts afresh, as a new one would.
    pub fn expire(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers
            .retain(|_, e| now_ms.saturating_sub(e.last_timestamp) < expiration_ms);
        before - self.producers.len()
    }

    /// Producer ids tracked.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(producer_id: i64, epoch: i16, base_sequence: i32, count: i32, base_offset: i64) -> BatchHeader {
        BatchHeader {
            base_offset,
            batch_length: 49,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: count - 1,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id,
            producer_epoch: epoch,
            base_sequence,
            records_count: count,
        }
    }

    #[test]
    fn a_retried_batch_is_a_duplicate_with_its_original_offsets() {
        let mut s = ProducerState::default();
        s.record(&header(7, 0, 0, 3, 100));
        assert_eq!(
            s.check(&header(7, 0, 0, 3, 0)),
            Ok(SequenceCheck::Duplicate {
                first_offset: 100,
                last_offset: 102
            })
        );
        assert_eq!(s.check(&header(7, 0, 3, 2, 0)), Ok(SequenceCheck::Append));
    }

    #[test]
    fn gaps_and_old_epochs_are_refused() {
        let mut s = ProducerState::default();
        s.record(&header(7, 1, 0, 3, 0));
        assert_eq!(
            s.check(&header(7, 1, 5, 1, 0)),
            Err(ErrorCode::OutOfOrderSequenceNumber)
        );
        assert_eq!(s.check(&header(7, 0, 3, 1, 0)), Err(ErrorCode::InvalidProducerEpoch));
        assert_eq!(
            s.check(&header(7, 2, 0, 1, 0)),
            Ok(SequenceCheck::Append),
            "a new epoch starts at 0"
        );
        assert_eq!(
            s.check(&header(7, 2, 4, 1, 0)),
            Err(ErrorCode::OutOfOrderSequenceNumber)
        );
    }

    #[test]
    fn producers_silent_for_the_expiration_are_forgotten_and_active_ones_kept() {
        let mut s = ProducerState::default();
        let mut old = header(7, 0, 0, 1, 0);
        old.max_timestamp = 1_000;
        let mut recent = header(8, 0, 0, 1, 1);
        recent.max_timestamp = 50_000;
        s.record(&old);
        s.record(&recent);
        assert_eq!(s.expire(60_999, 60_000), 0, "neither silent for a full minute yet");
        assert_eq!(s.expire(61_000, 60_000), 1);
        assert_eq!(s.len(), 1);
        // The expired producer's retry is no longer recognised: it is a new producer now.
        assert_eq!(s.check(&header(7, 0, 0, 1, 0)), Ok(SequenceCheck::Append));
        assert_eq!(
            s.check(&header(8, 0, 0, 1, 0)),
            Ok(SequenceCheck::Duplicate {
                first_offset: 1,
                last_offset: 1
            }),
            "the active producer keeps its state"
        );
        // Thousands of one-shot producers leave nothing behind once they expire.
        for id in 100..10_100 {
            let mut h = header(id, 0, 0, 1, id);
            h.max_timestamp = 70_000;
            s.record(&h);
        }
        assert_eq!(s.len(), 10_001);
        s.expire(200_000, 60_000);
        assert!(s.is_empty());
    }

    #[test]
    fn truncation_forgets_batches_above_the_cut() {
        let mut s = ProducerState::default();
        s.record(&header(7, 0, 0, 2, 0));
        s.record(&header(7, 0, 2, 2, 2));
        s.truncate(2);
        assert_eq!(
            s.check(&header(7, 0, 2, 2, 0)),
            Ok(SequenceCheck::Append),
            "the cut batch may come again"
        );
    }
}
