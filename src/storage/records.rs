//! Looking inside batches, for the few places that must (message tails, timestamp lookups,
//! producers, tests): the `kafka-protocol` crate's records codec does the work, every
//! compression codec included.

use bytes::{Bytes, BytesMut};
pub use kafka_protocol::records::{Compression, Record, TimestampType};
use kafka_protocol::records::{RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions};

use super::LogError;

/// Decodes every record of the concatenated batches in `bytes`.
pub fn decode(bytes: &[u8]) -> Result<Vec<Record>, LogError> {
    let mut records = Vec::new();
    for_each_shared(Bytes::copy_from_slice(bytes), |r| records.push(r))?;
    Ok(records)
}

/// Hands each record of the concatenated batches in `buf` to `f`, one batch at a time, with
/// no copy of keys and values (they share `buf`). On a batch that does not decode, `f` has had
/// the records of the batches before it.
pub fn for_each_shared(mut buf: Bytes, mut f: impl FnMut(Record)) -> Result<(), LogError> {
    while !buf.is_empty() {
        let set = RecordBatchDecoder::decode(&mut buf).map_err(|e| LogError::CorruptMessage(format!("{e:#}")))?;
        set.records.into_iter().for_each(&mut f);
    }
    Ok(())
}

/// The offset after the last whole batch in `bytes` (its last offset + 1), None when there
/// is none. A consumer moves its position there once it has the batch's records: past
/// records compaction removed from the end of a batch (an emptied batch may stay for its
/// producer's state) and past control batches, as Kafka's consumer does.
pub fn next_offset_after(bytes: &[u8]) -> Option<i64> {
    super::batch::Batches::checked_before(bytes)
        .map_while(Result::ok)
        .last()
        .map(|(_, header, _)| header.next_offset())
}

/// A plain (non-idempotent, non-transactional) record at `offset_delta` within its batch.
pub fn record(offset_delta: i64, timestamp: i64, key: Option<Bytes>, value: Option<Bytes>) -> Record {
    Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: offset_delta,
        // The encoder keeps records in one batch while `offset - sequence` is constant; this
        // makes one batch with base sequence -1 (no idempotence).
        sequence: offset_delta as i32 - 1,
        timestamp,
        key,
        value,
        headers: Default::default(),
    }
}

/// Encodes `records` (offsets 0.., as a producer sends them) as one v2 batch.
pub fn encode_batch(records: &[Record], compression: Compression) -> Result<BytesMut, LogError> {
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .map_err(|e| LogError::InvalidRecord(format!("cannot encode batch: {e:#}")))?;
    Ok(buf)
}
