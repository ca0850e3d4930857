//! View and in-place patch of a Kafka v2 record batch (magic 2), and its CRC-32C.
//!
//! Layout (big-endian), from Kafka's `DefaultRecordBatch`:
//! `baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 | crc u32 |
//!  attributes i16 | lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 |
//!  producerId i64 | producerEpoch i16 | baseSequence i32 | recordsCount i32 | records...`
//!
//! The CRC covers bytes 21 (attributes) to the end of the batch, so the two fields a leader
//! always rewrites, base offset and partition leader epoch, can be patched without recomputing
//! it; a max timestamp the leader corrects (as Kafka's `LogValidator`) needs a new CRC.

use thiserror::Error;

const BASE_OFFSET: usize = 0;
const BATCH_LENGTH: usize = 8;
const PARTITION_LEADER_EPOCH: usize = 12;
const MAGIC: usize = 16;
const CRC: usize = 17;
const ATTRIBUTES: usize = 21;
const LAST_OFFSET_DELTA: usize = 23;
const BASE_TIMESTAMP: usize = 27;
const MAX_TIMESTAMP: usize = 35;
const PRODUCER_ID: usize = 43;
const PRODUCER_EPOCH: usize = 51;
const BASE_SEQUENCE: usize = 53;
const RECORDS_COUNT: usize = 57;

/// Bytes before `batchLength` counts: base offset and the length itself.
pub const LOG_OVERHEAD: usize = 12;
/// Size of a v2 batch header, records excluded.
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// The only on-disk format kdeck reads and writes.
pub const MAGIC_V2: i8 = 2;

/// Why a byte range is not a valid v2 record batch.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BatchError {
    #[error("truncated batch: {needed} bytes needed, {available} available")]
    Truncated { needed: usize, available: usize },
    #[error("unsupported magic {0} (only record batch v2 is supported)")]
    UnsupportedMagic(i8),
    #[error("batch length {0} is smaller than a v2 batch header")]
    LengthTooSmall(i32),
    #[error("CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch { stored: u32, computed: u32 },
    #[error("unknown compression codec {0}")]
    UnknownCompression(u8),
    #[error("invalid offset delta: last offset delta {last_offset_delta}, {records_count} records")]
    BadOffsetDelta { last_offset_delta: i32, records_count: i32 },
    #[error("base offset {0} is out of range")]
    BadBaseOffset(i64),
    #[error("record {index} of the batch: {reason}")]
    CorruptRecord { index: i32, reason: &'static str },
}

/// The decoded 61-byte header of one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
}

impl BatchHeader {
    /// Reads the header fields without checking anything but that 61 bytes are present.
    pub fn parse(bytes: &[u8]) -> Result<Self, BatchError> {
        if bytes.len() < RECORD_BATCH_OVERHEAD {
            return Err(BatchError::Truncated {
                needed: RECORD_BATCH_OVERHEAD,
                available: bytes.len(),
            });
        }
        Ok(BatchHeader {
            base_offset: i64_at(bytes, BASE_OFFSET),
            batch_length: i32_at(bytes, BATCH_LENGTH),
            partition_leader_epoch: i32_at(bytes, PARTITION_LEADER_EPOCH),
            magic: bytes[MAGIC] as i8,
            crc: u32::from_be_bytes(array_at(bytes, CRC)),
            attributes: i16::from_be_bytes(array_at(bytes, ATTRIBUTES)),
            last_offset_delta: i32_at(bytes, LAST_OFFSET_DELTA),
            base_timestamp: i64_at(bytes, BASE_TIMESTAMP),
            max_timestamp: i64_at(bytes, MAX_TIMESTAMP),
            producer_id: i64_at(bytes, PRODUCER_ID),
            producer_epoch: i16::from_be_bytes(array_at(bytes, PRODUCER_EPOCH)),
            base_sequence: i32_at(bytes, BASE_SEQUENCE),
            records_count: i32_at(bytes, RECORDS_COUNT),
        })
    }

    /// Total size of the batch on disk, `batchLength` plus the 12 bytes before it.
    pub fn size(&self) -> usize {
        LOG_OVERHEAD + self.batch_length.max(0) as usize
    }

    pub fn last_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta)
    }

    /// The offset right after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset() + 1
    }

    /// Compression codec id: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
    pub fn compression(&self) -> u8 {
        (self.attributes & 0x07) as u8
    }

    pub fn is_control(&self) -> bool {
        self.attributes & 0x20 != 0
    }

    /// The records carry the broker's append time rather than the producer's create time.
    pub fn is_log_append_time(&self) -> bool {
        self.attributes & 0x08 != 0
    }
}

/// Checks one batch at the start of `bytes`: header present, magic 2, length within the
/// buffer, CRC-32C, codec and offset deltas sane. Returns its header.
///
/// `records_count` may be below `last_offset_delta + 1` (compaction leaves gaps and even empty
/// batches), but never above it.
pub fn validate(bytes: &[u8]) -> Result<BatchHeader, BatchError> {
    let header = check_framing(bytes)?;
    let computed = crc32c::crc32c(&bytes[ATTRIBUTES..header.size()]);
    if computed != header.crc {
        return Err(BatchError::CrcMismatch {
            stored: header.crc,
            computed,
        });
    }
    Ok(header)
}

/// Everything [`validate`] checks except the CRC: enough to walk batches whose bytes were
/// checked when they were appended, as Kafka's read path does.
pub fn check_framing(bytes: &[u8]) -> Result<BatchHeader, BatchError> {
    let header = BatchHeader::parse(bytes)?;
    if header.magic != MAGIC_V2 {
        return Err(BatchError::UnsupportedMagic(header.magic));
    }
    if (header.batch_length as i64) < (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i64 {
        return Err(BatchError::LengthTooSmall(header.batch_length));
    }
    let size = header.size();
    if size > bytes.len() {
        return Err(BatchError::Truncated {
            needed: size,
            available: bytes.len(),
        });
    }
    if header.compression() > 4 {
        return Err(BatchError::UnknownCompression(header.compression()));
    }
    if header.last_offset_delta < 0
        || header.records_count < 0
        || i64::from(header.records_count) > i64::from(header.last_offset_delta) + 1
    {
        return Err(BatchError::BadOffsetDelta {
            last_offset_delta: header.last_offset_delta,
            records_count: header.records_count,
        });
    }
    if header.base_offset < 0
        || header
            .base_offset
            .checked_add(i64::from(header.last_offset_delta))
            .is_none()
    {
        return Err(BatchError::BadBaseOffset(header.base_offset));
    }
    Ok(header)
}

/// Overwrites the base offset of the batch starting at `batch[0]`.
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) {
    batch[BASE_OFFSET..BASE_OFFSET + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Overwrites the partition leader epoch of the batch starting at `batch[0]`.
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    batch[PARTITION_LEADER_EPOCH..PARTITION_LEADER_EPOCH + 4].copy_from_slice(&epoch.to_be_bytes());
}

/// Overwrites the max timestamp of the batch that is exactly `batch` and recomputes its CRC.
/// Returns the new CRC.
pub fn set_max_timestamp(batch: &mut [u8], max_timestamp: i64) -> u32 {
    batch[MAX_TIMESTAMP..MAX_TIMESTAMP + 8].copy_from_slice(&max_timestamp.to_be_bytes());
    let crc = crc32c::crc32c(&batch[ATTRIBUTES..]);
    batch[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    crc
}

/// The largest record timestamp of the uncompressed batch that is exactly `batch`, read from
/// the records themselves (`None` when it holds none). Walks only the record framing: each
/// record's length, and the timestamp delta after its attributes byte. Like Kafka's record
/// iterator, it refuses a batch whose records do not fill it exactly.
pub fn max_record_timestamp(batch: &[u8], header: &BatchHeader) -> Result<Option<i64>, BatchError> {
    records_max_timestamp(batch, RECORD_BATCH_OVERHEAD, header.size().min(batch.len()), header)
}

/// [`max_record_timestamp`] for the records of a compressed batch once decompressed: exactly
/// `header.records_count` records that fill `records`, as Kafka's record iterator requires.
pub fn max_decompressed_record_timestamp(records: &[u8], header: &BatchHeader) -> Result<Option<i64>, BatchError> {
    records_max_timestamp(records, 0, records.len(), header)
}

/// The records of `batch[start..end]`, walked by their framing.
fn records_max_timestamp(
    batch: &[u8],
    start: usize,
    end: usize,
    header: &BatchHeader,
) -> Result<Option<i64>, BatchError> {
    let mut at = start;
    let mut max = i64::MIN;
    for index in 0..header.records_count {
        let corrupt = |reason| BatchError::CorruptRecord { index, reason };
        let (length, read) = varint_at(batch, at, end).ok_or_else(|| corrupt("unreadable length"))?;
        at += read;
        let length = usize::try_from(length).map_err(|_| corrupt("negative length"))?;
        let body_end = at
            .checked_add(length)
            .filter(|e| *e <= end)
            .ok_or_else(|| corrupt("longer than the batch"))?;
        // The timestamp delta follows the record's attributes byte.
        let (delta, _) = varint_at(batch, at + 1, body_end).ok_or_else(|| corrupt("unreadable timestamp"))?;
        let timestamp = header
            .base_timestamp
            .checked_add(delta)
            .ok_or_else(|| corrupt("timestamp out of range"))?;
        max = max.max(timestamp);
        at = body_end;
    }
    if at != end {
        return Err(BatchError::CorruptRecord {
            index: header.records_count,
            reason: "bytes left after the last record",
        });
    }
    Ok((header.records_count > 0).then_some(max))
}

/// A zigzag-encoded varint's value.
#[inline]
fn zigzag(raw: u64) -> i64 {
    (raw >> 1) as i64 ^ -((raw & 1) as i64)
}

/// The varint at `bytes[at..end]`, one- and two-byte values (a record's length and timestamp
/// delta, nearly always) read without the general loop: this runs once per produced record.
#[inline]
fn varint_at(bytes: &[u8], at: usize, end: usize) -> Option<(i64, usize)> {
    let window = bytes.get(at..end)?;
    match *window {
        [b0, ..] if b0 < 0x80 => Some((zigzag(u64::from(b0)), 1)),
        [b0, b1, ..] if b1 < 0x80 => Some((zigzag(u64::from(b0 & 0x7f) | (u64::from(b1) << 7)), 2)),
        _ => read_varint(window),
    }
}

/// A copy of the batch whose 61-byte header is `header_bytes`, holding `records` (already
/// compressed as the header's codec says) instead: same offsets, producer fields and leader
/// epoch, a new records count, max timestamp, length and CRC. Compaction builds its batches
/// this way, as Kafka's cleaner keeps a batch's base and last offset. A batch left without
/// records is uncompressed, as Kafka's `writeEmptyHeader` writes it.
pub fn rebuild(header_bytes: &[u8], records_count: i32, max_timestamp: i64, records: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(RECORD_BATCH_OVERHEAD + records.len());
    out.extend_from_slice(&header_bytes[..RECORD_BATCH_OVERHEAD]);
    out.extend_from_slice(records);
    let length = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + records.len()) as i32;
    out[BATCH_LENGTH..BATCH_LENGTH + 4].copy_from_slice(&length.to_be_bytes());
    out[RECORDS_COUNT..RECORDS_COUNT + 4].copy_from_slice(&records_count.to_be_bytes());
    if records.is_empty() {
        let attributes = i16::from_be_bytes(array_at(&out, ATTRIBUTES)) & !0x07;
        out[ATTRIBUTES..ATTRIBUTES + 2].copy_from_slice(&attributes.to_be_bytes());
    }
    set_max_timestamp(&mut out, max_timestamp);
    out
}

/// A zigzag varint or varlong (Kafka's record fields), and how many bytes it took.
pub(crate) fn read_varint(bytes: &[u8]) -> Option<(i64, usize)> {
    let mut raw: u64 = 0;
    for (i, b) in bytes.iter().take(10).enumerate() {
        raw |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((zigzag(raw), i + 1));
        }
    }
    None
}

/// Splits a buffer of concatenated batches, validating each one. Stops at the first invalid
/// batch, yielding its error; a buffer that ends exactly at a batch boundary ends cleanly.
pub struct Batches<'a> {
    bytes: &'a [u8],
    position: usize,
    failed: bool,
    check: fn(&[u8]) -> Result<BatchHeader, BatchError>,
}

impl<'a> Batches<'a> {
    /// Every batch fully validated, CRC included: for bytes from outside (a producer, a leader).
    pub fn new(bytes: &'a [u8]) -> Self {
        Batches {
            bytes,
            position: 0,
            failed: false,
            check: validate,
        }
    }

    /// Framing checked, CRC not ([`check_framing`]): for bytes already validated once, such as
    /// a log's own contents or a buffer just appended.
    pub fn checked_before(bytes: &'a [u8]) -> Self {
        Batches {
            check: check_framing,
            ..Batches::new(bytes)
        }
    }
}

impl<'a> Iterator for Batches<'a> {
    /// `(position in the buffer, header, the batch's bytes)`.
    type Item = Result<(usize, BatchHeader, &'a [u8]), (usize, BatchError)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.position >= self.bytes.len() {
            return None;
        }
        let rest = &self.bytes[self.position..];
        match (self.check)(rest) {
            Ok(header) => {
                let at = self.position;
                self.position += header.size();
                Some(Ok((at, header, &rest[..header.size()])))
            }
            Err(error) => {
                self.failed = true;
                Some(Err((self.position, error)))
            }
        }
    }
}

fn array_at<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

fn i64_at(bytes: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(array_at(bytes, at))
}

fn i32_at(bytes: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(array_at(bytes, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal uncompressed batch with `count` empty-bodied offsets (no records bytes).
    fn raw_batch(last_offset_delta: i32, count: i32) -> Vec<u8> {
        let mut b = vec![0u8; RECORD_BATCH_OVERHEAD];
        b[BATCH_LENGTH..BATCH_LENGTH + 4]
            .copy_from_slice(&((RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32).to_be_bytes());
        b[MAGIC] = 2;
        b[LAST_OFFSET_DELTA..LAST_OFFSET_DELTA + 4].copy_from_slice(&last_offset_delta.to_be_bytes());
        b[RECORDS_COUNT..RECORDS_COUNT + 4].copy_from_slice(&count.to_be_bytes());
        let crc = crc32c::crc32c(&b[ATTRIBUTES..]);
        b[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
        b
    }

    #[test]
    fn patching_offset_and_epoch_keeps_the_crc_valid() {
        let mut b = raw_batch(4, 5);
        set_base_offset(&mut b, 1234);
        set_partition_leader_epoch(&mut b, 7);
        let h = validate(&b).expect("still valid");
        assert_eq!(h.base_offset, 1234);
        assert_eq!(h.partition_leader_epoch, 7);
        assert_eq!(h.next_offset(), 1239);
    }

    #[test]
    fn a_flipped_bit_in_the_crc_range_is_detected() {
        let mut b = raw_batch(0, 1);
        b[ATTRIBUTES + 1] ^= 0x10;
        assert!(matches!(validate(&b), Err(BatchError::CrcMismatch { .. })));
    }

    #[test]
    fn a_framing_check_skips_the_crc_but_nothing_else() {
        let mut buf = raw_batch(0, 1);
        buf[ATTRIBUTES + 1] ^= 0x10;
        buf.extend(raw_batch(2, 3));
        assert!(check_framing(&buf).is_ok());
        assert_eq!(Batches::checked_before(&buf).filter(|b| b.is_ok()).count(), 2);
        assert!(matches!(
            Batches::new(&buf).next(),
            Some(Err((0, BatchError::CrcMismatch { .. })))
        ));
        // Framing errors still stop the walk.
        let mut torn = raw_batch(0, 1);
        torn.extend(&raw_batch(0, 2)[..40]);
        let walked: Vec<_> = Batches::checked_before(&torn).collect();
        assert!(matches!(walked[..], [Ok(_), Err((_, BatchError::Truncated { .. }))]));
        assert!(matches!(
            check_framing(&raw_batch(0, 2)),
            Err(BatchError::BadOffsetDelta { .. })
        ));
    }

    #[test]
    fn the_max_record_timestamp_comes_from_the_records_and_patching_it_keeps_the_batch_valid() {
        use crate::storage::records;
        let recs: Vec<_> = [1_000, 1_009, 1_004]
            .iter()
            .enumerate()
            .map(|(i, ts)| records::record(i as i64, *ts, None, Some(bytes::Bytes::from_static(b"v"))))
            .collect();
        let mut b = records::encode_batch(&recs, records::Compression::None)
            .expect("encodes")
            .to_vec();
        let header = validate(&b).expect("valid");
        assert_eq!(max_record_timestamp(&b, &header), Ok(Some(1_009)));
        set_max_timestamp(&mut b, -1);
        let unset = validate(&b).expect("still valid with a new CRC");
        assert_eq!(unset.max_timestamp, -1);
        assert_eq!(max_record_timestamp(&b, &unset), Ok(Some(1_009)));
        let mut short = b.clone();
        short.truncate(b.len() - 1);
        let len = (header.batch_length - 1).to_be_bytes();
        short[BATCH_LENGTH..BATCH_LENGTH + 4].copy_from_slice(&len);
        let cut = BatchHeader::parse(&short).expect("header");
        assert!(matches!(
            max_record_timestamp(&short, &cut),
            Err(BatchError::CorruptRecord { index: 2, .. })
        ));
    }

    #[test]
    fn record_lengths_and_timestamp_deltas_of_every_varint_width_are_read() {
        use crate::storage::records;
        // Deltas of one, two, three and five varint bytes, negative ones, and values long
        // enough that the records' lengths take two and three bytes.
        let base = 1_700_000_000_000_i64;
        let deltas = [
            0_i64,
            63,
            -64,
            64,
            8_191,
            -8_192,
            8_192,
            1_000_000,
            -1_000_000,
            40_000_000_000,
        ];
        let value_sizes = [1_usize, 100, 20_000];
        let recs: Vec<_> = deltas
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let value = bytes::Bytes::from(vec![b'v'; value_sizes[i % value_sizes.len()]]);
                records::record(i as i64, base + d, None, Some(value))
            })
            .collect();
        let b = records::encode_batch(&recs, records::Compression::None)
            .expect("encodes")
            .to_vec();
        let header = validate(&b).expect("valid");
        let decoded = records::decode(&b).expect("decodes");
        assert_eq!(decoded.iter().map(|r| r.timestamp - base).min(), Some(-1_000_000));
        assert_eq!(max_record_timestamp(&b, &header), Ok(Some(base + 40_000_000_000)));
    }

    #[test]
    fn more_records_than_offsets_is_rejected() {
        let b = raw_batch(0, 2);
        assert!(matches!(validate(&b), Err(BatchError::BadOffsetDelta { .. })));
    }

    #[test]
    fn iteration_stops_at_a_torn_tail() {
        let mut buf = raw_batch(0, 1);
        buf.extend(raw_batch(0, 1));
        buf.extend(&raw_batch(0, 1)[..30]);
        let items: Vec<_> = Batches::new(&buf).collect();
        assert_eq!(items.len(), 3);
        assert!(items[0].is_ok() && items[1].is_ok());
        assert!(matches!(items[2], Err((122, BatchError::Truncated { .. }))));
    }
}
