//! Message formats v0 and v1 (Kafka's `LegacyRecord`, the "message sets" of Produce v0-2 and
//! Fetch v0-3), converted to and from the v2 record batches the log keeps.
//!
//! Layout of one message (big-endian): `offset i64 | size i32 | crc u32 | magic i8 |
//! attributes i8 | timestamp i64 (magic 1 only) | key bytes | value bytes`, where bytes are an
//! i32 length (-1 for null) and the data; the CRC-32 (IEEE) covers magic to the end. The
//! attributes hold the compression codec in the low 3 bits and, in magic 1, the timestamp type
//! in bit 3. A compressed message wraps a whole message set in its value; in magic 1 the inner
//! offsets are relative to the first (the wrapper carries the last one's absolute offset).
//!
//! Up-conversion follows Kafka 3.x's `LogValidator`: every message's CRC is checked, a wrapper
//! may hold neither another wrapper nor a message of another magic, and the messages become
//! one v2 batch with the wrapper's codec; a magic 0 message has no timestamp (-1), as Kafka
//! keeps it. Down-conversion follows `RecordsUtil.downConvert`: control batches are dropped,
//! headers too, records before the fetch offset are skipped. kdeck writes the converted messages
//! uncompressed (Kafka recompresses with the batch's codec): every old client reads those.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::records::RecordBatchDecoder;
use thiserror::Error;

use super::LogError;
use super::batch::{BatchHeader, Batches, LOG_OVERHEAD};
use super::records::{self, Compression, MAX_DECOMPRESSED_BATCH_BYTES, Record};

pub const MAGIC_V0: i8 = 0;
pub const MAGIC_V1: i8 = 1;
/// `crc u32 | magic i8 | attributes i8 | key length i32 | value length i32`.
const MESSAGE_OVERHEAD_V0: usize = 14;
/// V0's overhead and the timestamp.
const MESSAGE_OVERHEAD_V1: usize = 22;
const COMPRESSION_MASK: i8 = 0x07;
const LOG_APPEND_TIME_FLAG: i8 = 0x08;
/// Kafka's `RecordBatch.NO_TIMESTAMP`.
pub const NO_TIMESTAMP: i64 = -1;

/// Why a message set cannot be read or written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LegacyError {
    #[error("truncated message at byte {at}: {needed} bytes needed, {available} available")]
    Truncated { at: usize, needed: usize, available: usize },
    #[error("message at byte {at} has size {size}, less than a magic {magic} message's {minimum}")]
    TooSmall {
        at: usize,
        size: i32,
        magic: i8,
        minimum: usize,
    },
    #[error("message at byte {at} has magic {magic}; a message set holds magic 0 or 1")]
    UnsupportedMagic { at: usize, magic: i8 },
    #[error("message at byte {at} has CRC {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch { at: usize, stored: u32, computed: u32 },
    #[error("message at byte {at} has a key or value length {length} past its end")]
    BadLength { at: usize, length: i32 },
    #[error("compression codec {0} is not valid for message format v0/v1")]
    UnsupportedCompression(i8),
    #[error("compressed message: {0}")]
    Decompress(String),
    #[error("the compressed messages of the message set decompress to more than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("a compressed message holds another compressed message")]
    NestedCompression,
    #[error("a compressed magic {outer} message holds a magic {inner} message")]
    MixedMagic { outer: i8, inner: i8 },
    #[error("empty message set")]
    Empty,
    #[error("record batch: {0}")]
    Batch(String),
}

impl LegacyError {
    /// The Kafka error code a producer or consumer sees.
    pub fn code(&self) -> i16 {
        match self {
            // ZSTD (codec 4) exists only from message format v2 (KIP-110).
            LegacyError::UnsupportedCompression(4) => 76, // UNSUPPORTED_COMPRESSION_TYPE
            LegacyError::TooLarge { .. } => 18,           // RECORD_LIST_TOO_LARGE
            _ => 2,                                       // CORRUPT_MESSAGE
        }
    }
}

/// One message of a message set, compressed wrappers unpacked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyMessage {
    pub offset: i64,
    pub magic: i8,
    /// `NO_TIMESTAMP` in magic 0.
    pub timestamp: i64,
    pub log_append_time: bool,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
}

/// A message as read from the wire, its value still compressed when it is a wrapper.
struct RawMessage {
    offset: i64,
    magic: i8,
    attributes: i8,
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

impl RawMessage {
    fn codec(&self) -> i8 {
        self.attributes & COMPRESSION_MASK
    }
}

/// Reads the messages of `bytes` at the shallow level, each CRC checked.
fn read_shallow(mut bytes: Bytes) -> Result<Vec<RawMessage>, LegacyError> {
    let total = bytes.len();
    let mut out = Vec::new();
    while bytes.has_remaining() {
        let at = total - bytes.len();
        if bytes.len() < LOG_OVERHEAD {
            return Err(LegacyError::Truncated {
                at,
                needed: LOG_OVERHEAD,
                available: bytes.len(),
            });
        }
        let offset = bytes.get_i64();
        let size = bytes.get_i32();
        let body_len = usize::try_from(size).unwrap_or(0);
        if body_len < MESSAGE_OVERHEAD_V0 {
            return Err(LegacyError::TooSmall {
                at,
                size,
                magic: MAGIC_V0,
                minimum: MESSAGE_OVERHEAD_V0,
            });
        }
        if bytes.len() < body_len {
            return Err(LegacyError::Truncated {
                at,
                needed: LOG_OVERHEAD + body_len,
                available: bytes.len() + LOG_OVERHEAD,
            });
        }
        let mut body = bytes.split_to(body_len);
        let stored = body.get_u32();
        let computed = crc32fast::hash(&body);
        let magic = body.get_i8();
        if magic != MAGIC_V0 && magic != MAGIC_V1 {
            return Err(LegacyError::UnsupportedMagic { at, magic });
        }
        if magic == MAGIC_V1 && body_len < MESSAGE_OVERHEAD_V1 {
            return Err(LegacyError::TooSmall {
                at,
                size,
                magic,
                minimum: MESSAGE_OVERHEAD_V1,
            });
        }
        if stored != computed {
            return Err(LegacyError::CrcMismatch { at, stored, computed });
        }
        let attributes = body.get_i8();
        let timestamp = if magic == MAGIC_V1 {
            body.get_i64()
        } else {
            NO_TIMESTAMP
        };
        let key = read_bytes(&mut body, at)?;
        let value = read_bytes(&mut body, at)?;
        out.push(RawMessage {
            offset,
            magic,
            attributes,
            timestamp,
            key,
            value,
        });
    }
    Ok(out)
}

fn read_bytes(body: &mut Bytes, at: usize) -> Result<Option<Bytes>, LegacyError> {
    if body.len() < 4 {
        return Err(LegacyError::BadLength { at, length: -1 });
    }
    let length = body.get_i32();
    if length < 0 {
        return Ok(None);
    }
    let len = length as usize;
    if body.len() < len {
        return Err(LegacyError::BadLength { at, length });
    }
    Ok(Some(body.split_to(len)))
}

/// A wrapper's value decompressed, streaming: refused once it passes `limit` bytes, what is
/// left of the message set's `total`.
fn decompress(compression: Compression, data: &[u8], limit: usize, total: usize) -> Result<Bytes, LegacyError> {
    records::decompress(compression, data, limit).map_err(|e| match e {
        LogError::RecordListTooLarge { .. } => LegacyError::TooLarge { limit: total },
        other => LegacyError::Decompress(other.to_string()),
    })
}

fn compression_of(codec: i8) -> Compression {
    match codec {
        1 => Compression::Gzip,
        2 => Compression::Snappy,
        3 => Compression::Lz4,
        _ => Compression::None,
    }
}

/// Every message of a message set (as Produce v0-2 carries it), wrappers unpacked, with the
/// codec of the first wrapper (`Compression::None` when none is compressed). The wrappers
/// together may decompress to at most `MAX_DECOMPRESSED_BATCH_BYTES`, the bound of the one v2
/// batch they become.
pub fn read_message_set(bytes: &[u8]) -> Result<(Vec<LegacyMessage>, Compression), LegacyError> {
    read_message_set_within(bytes, MAX_DECOMPRESSED_BATCH_BYTES)
}

/// [`read_message_set`] with the wrappers' decompressed bytes bounded by `limit` in all.
fn read_message_set_within(bytes: &[u8], limit: usize) -> Result<(Vec<LegacyMessage>, Compression), LegacyError> {
    let mut messages = Vec::new();
    let mut compression = None;
    let mut budget = limit;
    for outer in read_shallow(Bytes::copy_from_slice(bytes))? {
        let codec = outer.codec();
        if codec == 0 {
            messages.push(LegacyMessage {
                offset: outer.offset,
                magic: outer.magic,
                timestamp: outer.timestamp,
                log_append_time: outer.magic == MAGIC_V1 && outer.attributes & LOG_APPEND_TIME_FLAG != 0,
                key: outer.key,
                value: outer.value,
            });
            continue;
        }
        let compressed = compression_of(codec);
        if compressed == Compression::None {
            return Err(LegacyError::UnsupportedCompression(codec));
        }
        compression.get_or_insert(compressed);
        let unpacked = decompress(compressed, outer.value.as_deref().unwrap_or_default(), budget, limit)?;
        budget -= unpacked.len();
        let inner = read_shallow(unpacked)?;
        let log_append_time = outer.magic == MAGIC_V1 && outer.attributes & LOG_APPEND_TIME_FLAG != 0;
        for m in inner {
            if m.codec() != 0 {
                return Err(LegacyError::NestedCompression);
            }
            if outer.magic == MAGIC_V1 && m.magic != outer.magic {
                return Err(LegacyError::MixedMagic {
                    outer: outer.magic,
                    inner: m.magic,
                });
            }
            messages.push(LegacyMessage {
                offset: m.offset,
                magic: m.magic,
                // A LogAppendTime wrapper's timestamp stands for every inner message's.
                timestamp: if log_append_time { outer.timestamp } else { m.timestamp },
                log_append_time,
                key: m.key,
                value: m.value,
            });
        }
    }
    Ok((messages, compression.unwrap_or(Compression::None)))
}

/// A producer's message set as one v2 batch (offsets 0.., CreateTime, no producer id), ready
/// for the log's append, which assigns the real offsets.
pub fn to_batch(bytes: &[u8]) -> Result<BytesMut, LegacyError> {
    let (messages, compression) = read_message_set(bytes)?;
    if messages.is_empty() {
        return Err(LegacyError::Empty);
    }
    let records: Vec<Record> = messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| records::record(i as i64, m.timestamp, m.key, m.value))
        .collect();
    records::encode_batch(&records, compression).map_err(|e| LegacyError::Batch(e.to_string()))
}

/// Appends one uncompressed message in format `magic` (the timestamp is dropped in magic 0).
pub fn write_message(
    out: &mut BytesMut,
    magic: i8,
    offset: i64,
    timestamp: i64,
    log_append_time: bool,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) {
    write_raw(out, magic, 0, offset, timestamp, log_append_time, key, value);
}

/// Appends a compressed wrapper holding `inner` (a message set already encoded) with `codec`.
/// For tests and tools that speak as an old producer; the broker itself writes no wrappers.
pub fn write_wrapper(out: &mut BytesMut, magic: i8, codec: i8, offset: i64, timestamp: i64, compressed: &[u8]) {
    write_raw(out, magic, codec, offset, timestamp, false, None, Some(compressed));
}

#[allow(clippy::too_many_arguments)]
fn write_raw(
    out: &mut BytesMut,
    magic: i8,
    codec: i8,
    offset: i64,
    timestamp: i64,
    log_append_time: bool,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) {
    let mut body = BytesMut::new();
    body.put_i8(magic);
    let mut attributes = codec & COMPRESSION_MASK;
    if magic == MAGIC_V1 && log_append_time {
        attributes |= LOG_APPEND_TIME_FLAG;
    }
    body.put_i8(attributes);
    if magic == MAGIC_V1 {
        body.put_i64(timestamp);
    }
    for field in [key, value] {
        match field {
            Some(b) => {
                body.put_i32(b.len() as i32);
                body.put_slice(b);
            }
            None => body.put_i32(-1),
        }
    }
    out.put_i64(offset);
    out.put_i32((body.len() + 4) as i32);
    out.put_u32(crc32fast::hash(&body));
    out.put_slice(&body);
}

/// The v2 batches of a fetch (`log`) as a message set of format `magic` for Fetch v0-3:
/// records from `fetch_offset` on, control batches and headers dropped, whole messages only,
/// no more than `max_bytes` unless the first message alone is larger (a consumer could never
/// get past it otherwise). A partial batch at the end of `log` is left out.
pub fn down_convert(log: &[u8], magic: i8, fetch_offset: i64, max_bytes: usize) -> Result<Bytes, LegacyError> {
    let mut out = BytesMut::new();
    for batch in Batches::checked_before(log) {
        let Ok((_, header, bytes)) = batch else { break };
        if header.is_control() {
            continue;
        }
        let set = RecordBatchDecoder::decode(&mut Bytes::copy_from_slice(bytes))
            .map_err(|e| LegacyError::Batch(format!("{e:#}")))?;
        for r in set.records.iter().filter(|r| r.offset >= fetch_offset) {
            let timestamp = timestamp_of(&header, r);
            let before = out.len();
            write_message(
                &mut out,
                magic,
                r.offset,
                timestamp,
                header.is_log_append_time(),
                r.key.as_deref(),
                r.value.as_deref(),
            );
            if before > 0 && out.len() > max_bytes {
                out.truncate(before);
                return Ok(out.freeze());
            }
        }
    }
    Ok(out.freeze())
}

/// A LogAppendTime batch's records all carry the time the leader appended it, its max
/// timestamp (the records' own fields hold what the producer sent).
fn timestamp_of(header: &BatchHeader, record: &Record) -> i64 {
    if header.is_log_append_time() {
        header.max_timestamp
    } else {
        record.timestamp
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::compression::{Compressor, Gzip};

    use super::*;

    fn plain_set(magic: i8, messages: &[(i64, i64, Option<&str>, &str)]) -> BytesMut {
        let mut out = BytesMut::new();
        for (offset, ts, key, value) in messages {
            write_message(
                &mut out,
                magic,
                *offset,
                *ts,
                false,
                key.map(str::as_bytes),
                Some(value.as_bytes()),
            );
        }
        out
    }

    fn gzip_set(magic: i8, inner: &[u8], wrapper_offset: i64) -> BytesMut {
        let mut compressed = BytesMut::new();
        Gzip::compress(&mut compressed, |b: &mut BytesMut| {
            b.put_slice(inner);
            Ok(())
        })
        .expect("gzip compresses");
        let mut out = BytesMut::new();
        write_wrapper(&mut out, magic, 1, wrapper_offset, 1_000, &compressed);
        out
    }

    fn values(batch: &[u8]) -> Vec<(i64, i64, Option<Bytes>, Option<Bytes>)> {
        records::decode(batch)
            .expect("a valid v2 batch")
            .into_iter()
            .map(|r| (r.offset, r.timestamp, r.key, r.value))
            .collect()
    }

    #[test]
    fn a_magic_1_message_set_becomes_one_v2_batch_with_its_timestamps_keys_and_values() {
        let set = plain_set(MAGIC_V1, &[(0, 1_000, Some("k"), "a"), (1, 1_001, None, "b")]);
        let batch = to_batch(&set).expect("converts");
        assert_eq!(
            values(&batch),
            vec![
                (0, 1_000, Some(Bytes::from("k")), Some(Bytes::from("a"))),
                (1, 1_001, None, Some(Bytes::from("b"))),
            ]
        );
    }

    #[test]
    fn magic_0_messages_have_no_timestamp() {
        let set = plain_set(MAGIC_V0, &[(0, 5, None, "a")]);
        assert_eq!(values(&to_batch(&set).expect("converts"))[0].1, NO_TIMESTAMP);
    }

    #[test]
    fn a_gzip_wrapper_is_unpacked_and_the_batch_keeps_gzip() {
        for magic in [MAGIC_V0, MAGIC_V1] {
            let inner = plain_set(magic, &[(0, 1_000, None, "x"), (1, 1_000, None, "y")]);
            let set = gzip_set(magic, &inner, 1);
            let (messages, compression) = read_message_set(&set).expect("reads");
            assert_eq!(compression, Compression::Gzip);
            let got: Vec<_> = messages.iter().map(|m| m.value.clone()).collect();
            assert_eq!(got, vec![Some(Bytes::from("x")), Some(Bytes::from("y"))]);
            let batch = to_batch(&set).expect("converts");
            let header = BatchHeader::parse(&batch).expect("a header");
            assert_eq!(header.compression(), 1, "gzip kept");
            assert_eq!(values(&batch).len(), 2);
        }
    }

    #[test]
    fn a_flipped_byte_is_refused_as_a_crc_mismatch_with_corrupt_message() {
        let mut set = plain_set(MAGIC_V1, &[(0, 1_000, None, "hello")]);
        let last = set.len() - 1;
        set[last] ^= 0xff;
        let err = to_batch(&set).expect_err("corrupt");
        assert!(matches!(err, LegacyError::CrcMismatch { .. }), "{err}");
        assert_eq!(err.code(), 2);
    }

    #[test]
    fn truncated_sizes_bad_lengths_and_bad_magics_are_errors_not_panics() {
        let set = plain_set(MAGIC_V1, &[(0, 1_000, Some("key"), "value")]);
        for cut in 0..set.len() {
            assert!(to_batch(&set[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = set.clone();
        bad[16] = 7; // magic
        assert!(matches!(
            read_message_set(&bad),
            Err(LegacyError::UnsupportedMagic { .. })
        ));
        let mut negative = set.clone();
        negative[8..12].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(matches!(read_message_set(&negative), Err(LegacyError::TooSmall { .. })));
        let garbage = gzip_set(MAGIC_V1, b"not a message set", 0);
        assert!(to_batch(&garbage).is_err());
    }

    #[test]
    fn wrappers_that_together_decompress_past_the_bound_are_refused_as_record_list_too_large() {
        let inner = plain_set(MAGIC_V1, &[(0, 1, Some("k"), &"x".repeat(1_000))]);
        let one = gzip_set(MAGIC_V1, &inner, 0);
        let mut two = one.clone();
        two.extend_from_slice(&one);
        assert!(
            read_message_set_within(&one, inner.len()).is_ok(),
            "exactly the bound passes"
        );
        assert!(read_message_set_within(&two, 2 * inner.len()).is_ok());
        // Each wrapper alone is within the bound; the second one passes what the first left.
        let err = read_message_set_within(&two, 2 * inner.len() - 1).expect_err("past the bound");
        assert_eq!(
            err,
            LegacyError::TooLarge {
                limit: 2 * inner.len() - 1
            }
        );
        assert_eq!(err.code(), 18, "RECORD_LIST_TOO_LARGE");
    }

    #[test]
    fn nested_wrappers_and_zstd_are_refused() {
        let inner = plain_set(MAGIC_V1, &[(0, 1, None, "x")]);
        let once = gzip_set(MAGIC_V1, &inner, 0);
        let twice = gzip_set(MAGIC_V1, &once, 0);
        assert_eq!(
            read_message_set(&twice).map(|_| ()),
            Err(LegacyError::NestedCompression)
        );
        let mut zstd = BytesMut::new();
        write_wrapper(&mut zstd, MAGIC_V1, 4, 0, 1, b"whatever");
        let err = to_batch(&zstd).expect_err("zstd needs v2");
        assert_eq!(err.code(), 76);
    }

    #[test]
    fn down_conversion_round_trips_records_from_the_fetch_offset() {
        let set = plain_set(
            MAGIC_V1,
            &[(0, 1_000, Some("k"), "a"), (1, 1_001, None, "b"), (2, 1_002, None, "c")],
        );
        let mut batch = to_batch(&set).expect("converts");
        super::super::batch::set_base_offset(&mut batch, 40);
        let v1 = down_convert(&batch, MAGIC_V1, 41, usize::MAX).expect("down-converts");
        let (messages, compression) = read_message_set(&v1).expect("a valid message set");
        assert_eq!(compression, Compression::None);
        let got: Vec<_> = messages
            .iter()
            .map(|m| (m.offset, m.magic, m.timestamp, m.value.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (41, 1, 1_001, Some(Bytes::from("b"))),
                (42, 1, 1_002, Some(Bytes::from("c")))
            ]
        );
        let v0 = down_convert(&batch, MAGIC_V0, 0, usize::MAX).expect("down-converts");
        let (messages, _) = read_message_set(&v0).expect("a valid message set");
        assert_eq!(messages.len(), 3);
        assert!(messages.iter().all(|m| m.magic == 0 && m.timestamp == NO_TIMESTAMP));
        assert_eq!(messages[0].key, Some(Bytes::from("k")));
    }

    #[test]
    fn down_conversion_stays_under_max_bytes_but_always_gives_the_first_message() {
        let set = plain_set(MAGIC_V1, &[(0, 1, None, "aaaa"), (1, 1, None, "bbbb")]);
        let batch = to_batch(&set).expect("converts");
        let one = down_convert(&batch, MAGIC_V1, 0, 10).expect("down-converts");
        assert_eq!(
            read_message_set(&one).expect("valid").0.len(),
            1,
            "the first message alone"
        );
        let whole = down_convert(&batch, MAGIC_V1, 0, usize::MAX).expect("down-converts");
        let exact = down_convert(&batch, MAGIC_V1, 0, whole.len()).expect("down-converts");
        assert_eq!(exact, whole);
        let cut = down_convert(&batch, MAGIC_V1, 0, whole.len() - 1).expect("down-converts");
        assert_eq!(read_message_set(&cut).expect("valid").0.len(), 1);
    }

    #[test]
    fn down_conversion_leaves_out_a_partial_last_batch() {
        let batch = to_batch(&plain_set(MAGIC_V1, &[(0, 1, None, "a")])).expect("converts");
        let mut two = batch.to_vec();
        two.extend_from_slice(&batch[..batch.len() - 3]);
        let out = down_convert(&two, MAGIC_V1, 0, usize::MAX).expect("down-converts");
        assert_eq!(read_message_set(&out).expect("valid").0.len(), 1);
    }
}
