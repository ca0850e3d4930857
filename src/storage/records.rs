//! Looking inside batches, for the few places that must (message tails, timestamp lookups,
//! validating a producer's compressed batch, producers, tests): the `kafka-protocol` crate's
//! records codec does the work, every compression codec included. Records that came from a
//! peer are never unpacked whole: decompression streams and stops at
//! [`MAX_DECOMPRESSED_BATCH_BYTES`] per batch (a patch of the vendored crate).

use bytes::{Bytes, BytesMut};
pub use kafka_protocol::compression::MAX_DECOMPRESSED_BATCH_BYTES;
use kafka_protocol::compression::{DecompressedTooLarge, decompress_bounded};
pub use kafka_protocol::records::{Compression, Record, TimestampType};
use kafka_protocol::records::{RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions};

use super::LogError;

/// The compression of codec id `codec` (a batch's attributes' low 3 bits), `None` for an id
/// Kafka does not define.
pub fn compression_of(codec: u8) -> Option<Compression> {
    match codec {
        0 => Some(Compression::None),
        1 => Some(Compression::Gzip),
        2 => Some(Compression::Snappy),
        3 => Some(Compression::Lz4),
        4 => Some(Compression::Zstd),
        _ => None,
    }
}

/// `compressed` unpacked with `compression`, streaming, refused with
/// [`LogError::RecordListTooLarge`] once it passes `limit` bytes and with
/// [`LogError::CorruptMessage`] when it does not decompress.
pub fn decompress(compression: Compression, compressed: &[u8], limit: usize) -> Result<Bytes, LogError> {
    decompress_bounded(compression, compressed, limit).map_err(decode_error)
}

/// A decoder's error as the log's: a bomb is too large, anything else corrupt.
fn decode_error(e: anyhow::Error) -> LogError {
    match e.downcast_ref::<DecompressedTooLarge>() {
        Some(too_large) => LogError::RecordListTooLarge { limit: too_large.limit },
        None => LogError::CorruptMessage(format!("{e:#}")),
    }
}

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
        // Each compressed batch stops at MAX_DECOMPRESSED_BATCH_BYTES (the vendored decoders).
        let set = RecordBatchDecoder::decode(&mut buf).map_err(decode_error)?;
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

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use kafka_protocol::compression::{Compressor, Gzip, Lz4, Snappy, Zstd};

    use super::*;

    fn compressed(compression: Compression, raw: &[u8]) -> Vec<u8> {
        let mut out = BytesMut::new();
        let put = |b: &mut BytesMut| {
            b.extend_from_slice(raw);
            Ok(())
        };
        match compression {
            Compression::Gzip => Gzip::compress(&mut out, put),
            Compression::Snappy => Snappy::compress(&mut out, put),
            Compression::Lz4 => Lz4::compress(&mut out, put),
            Compression::Zstd => Zstd::compress(&mut out, put),
            Compression::None => put(&mut out),
        }
        .expect("compresses");
        out.to_vec()
    }

    const CODECS: [Compression; 4] = [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    #[test]
    fn a_payload_of_exactly_the_limit_decompresses_and_one_byte_more_is_too_large() {
        let raw: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for codec in CODECS {
            let packed = compressed(codec, &raw);
            let out = decompress(codec, &packed, raw.len()).unwrap_or_else(|e| panic!("{codec:?}: {e}"));
            assert_eq!(&out[..], &raw[..], "{codec:?} round trip");
            match decompress(codec, &packed, raw.len() - 1) {
                Err(LogError::RecordListTooLarge { limit }) => assert_eq!(limit, raw.len() - 1),
                other => panic!("{codec:?}: expected too large, got {other:?}"),
            }
        }
    }

    #[test]
    fn corrupt_payloads_are_corrupt_messages_not_panics() {
        let raw = vec![7u8; 10_000];
        for codec in CODECS {
            let mut packed = compressed(codec, &raw);
            let middle = packed.len() / 2;
            packed.truncate(middle);
            assert!(
                matches!(decompress(codec, &packed, 1 << 20), Err(LogError::CorruptMessage(_))),
                "{codec:?}: a truncated payload"
            );
            assert!(
                matches!(
                    decompress(codec, b"\xff\xfe not compressed at all", 1 << 20),
                    Err(LogError::CorruptMessage(_))
                ),
                "{codec:?}: garbage"
            );
        }
    }

    /// 1 GiB of zeros in a few kilobytes: concatenated gzip members and zstd frames (both
    /// decoders read on, as Java's do), and a raw snappy block that claims 4 GiB. Refused at
    /// the 1 MiB limit without unpacking the rest.
    #[test]
    fn bombs_stop_at_the_limit() {
        let chunk = vec![0u8; 16 << 20];
        for codec in [Compression::Gzip, Compression::Zstd] {
            let member = compressed(codec, &chunk);
            let bomb = member.repeat(64);
            match decompress(codec, &bomb, 1 << 20) {
                Err(LogError::RecordListTooLarge { limit }) => assert_eq!(limit, 1 << 20),
                other => panic!("{codec:?}: expected too large, got {:?}", other.map(|b| b.len())),
            }
        }
        // A raw snappy block's preamble is its decompressed length as a varint.
        let claims_4_gib = [0xff, 0xff, 0xff, 0xff, 0x0f, 0x00];
        assert!(matches!(
            decompress(Compression::Snappy, &claims_4_gib, 1 << 20),
            Err(LogError::RecordListTooLarge { .. })
        ));
    }

    /// Kafka's record iterator: a batch holds exactly as many records as its header says.
    #[test]
    fn a_batch_whose_header_miscounts_its_records_is_corrupt() {
        let recs = [
            record(0, 1, Some(Bytes::from("k")), Some(Bytes::from("a"))),
            record(1, 1, Some(Bytes::from("k")), Some(Bytes::from("b"))),
        ];
        for codec in [Compression::None, Compression::Gzip] {
            let batch = encode_batch(&recs, codec).expect("encodes");
            for count in [1i32, 3, i32::MAX] {
                let mut bad = batch.clone();
                bad[57..61].copy_from_slice(&count.to_be_bytes());
                let crc = crc32c::crc32c(&bad[21..]);
                bad[17..21].copy_from_slice(&crc.to_be_bytes());
                assert!(
                    matches!(decode(&bad), Err(LogError::CorruptMessage(_))),
                    "{codec:?}: header says {count} records, the batch holds 2"
                );
            }
            assert_eq!(decode(&batch).expect("the true count decodes").len(), 2);
        }
    }
}
