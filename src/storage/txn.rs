//! Transactions as a partition log sees them (KIP-98): end-transaction markers (control
//! batches), the aborted-transaction index entries Kafka keeps per segment in `.txnindex`, and
//! the bookkeeping of which transactions are still open, replayed from the batches in the log
//! as Kafka's `ProducerStateManager` does for its `currentTxnFirstOffset`.
//!
//! A marker is one control batch (attributes: transactional and control) holding one record:
//! key = version i16 (0) + type i16 (0 ABORT, 1 COMMIT), value = version i16 (0) +
//! coordinator epoch i32 (Kafka's `ControlRecordType` and `EndTransactionMarker`).

use std::collections::{BTreeSet, HashMap};

use super::batch::{self, BatchHeader, RECORD_BATCH_OVERHEAD};

/// Bytes of one `.txnindex` entry: version i16, producer id i64, first offset i64, last
/// offset i64, last stable offset i64.
pub const ABORTED_TXN_SIZE: usize = 34;
const ABORTED_TXN_VERSION: i16 = 0;

/// Attributes of a marker batch: transactional (bit 4) and control (bit 5), uncompressed,
/// create time.
const MARKER_ATTRIBUTES: i16 = 0x30;

/// One aborted transaction (Kafka's `AbortedTxn`): its producer, its first offset, the offset
/// of its ABORT marker, and the last stable offset right after the marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    pub fn encode(&self) -> [u8; ABORTED_TXN_SIZE] {
        let mut out = [0u8; ABORTED_TXN_SIZE];
        out[0..2].copy_from_slice(&ABORTED_TXN_VERSION.to_be_bytes());
        out[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        out[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        out[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        out[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        out
    }

    /// One entry, `None` when it is not a version-0 entry with sane offsets.
    pub fn decode(bytes: &[u8]) -> Option<AbortedTxn> {
        let bytes: &[u8; ABORTED_TXN_SIZE] = bytes.get(..ABORTED_TXN_SIZE)?.try_into().ok()?;
        let i64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            i64::from_be_bytes(b)
        };
        if i16::from_be_bytes([bytes[0], bytes[1]]) != ABORTED_TXN_VERSION {
            return None;
        }
        let txn = AbortedTxn {
            producer_id: i64_at(2),
            first_offset: i64_at(10),
            last_offset: i64_at(18),
            last_stable_offset: i64_at(26),
        };
        (txn.producer_id >= 0 && txn.first_offset >= 0 && txn.first_offset <= txn.last_offset).then_some(txn)
    }
}

/// Decodes a whole `.txnindex` file: `None` when its size or any entry is wrong (the caller
/// rebuilds it from the log).
pub fn decode_index(bytes: &[u8]) -> Option<Vec<AbortedTxn>> {
    if !bytes.len().is_multiple_of(ABORTED_TXN_SIZE) {
        return None;
    }
    let entries: Option<Vec<AbortedTxn>> = bytes.chunks_exact(ABORTED_TXN_SIZE).map(AbortedTxn::decode).collect();
    entries.filter(|e| e.windows(2).all(|w| w[0].last_offset < w[1].last_offset))
}

/// What a transaction marker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTxnMarker {
    pub commit: bool,
    pub coordinator_epoch: i32,
}

/// A zigzag varint, as record fields are written.
fn put_varint(out: &mut Vec<u8>, value: i64) {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The control batch of an end-transaction marker, as a coordinator hands it to a partition
/// leader (base offset 0, which the leader assigns), CRC included.
pub fn end_txn_marker_batch(
    producer_id: i64,
    producer_epoch: i16,
    coordinator_epoch: i32,
    commit: bool,
    timestamp: i64,
) -> Vec<u8> {
    let mut body = Vec::with_capacity(24);
    body.push(0); // record attributes
    put_varint(&mut body, 0); // timestamp delta
    put_varint(&mut body, 0); // offset delta
    put_varint(&mut body, 4);
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&i16::from(commit).to_be_bytes());
    put_varint(&mut body, 6);
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&coordinator_epoch.to_be_bytes());
    put_varint(&mut body, 0); // headers
    let mut record = Vec::with_capacity(body.len() + 2);
    put_varint(&mut record, body.len() as i64);
    record.extend_from_slice(&body);

    let mut out = Vec::with_capacity(RECORD_BATCH_OVERHEAD + record.len());
    out.extend_from_slice(&0i64.to_be_bytes()); // base offset
    let length = (RECORD_BATCH_OVERHEAD - batch::LOG_OVERHEAD + record.len()) as i32;
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(&(-1i32).to_be_bytes()); // partition leader epoch
    out.push(batch::MAGIC_V2 as u8);
    out.extend_from_slice(&0u32.to_be_bytes()); // crc, below
    out.extend_from_slice(&MARKER_ATTRIBUTES.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes()); // last offset delta
    out.extend_from_slice(&timestamp.to_be_bytes());
    out.extend_from_slice(&timestamp.to_be_bytes());
    out.extend_from_slice(&producer_id.to_be_bytes());
    out.extend_from_slice(&producer_epoch.to_be_bytes());
    out.extend_from_slice(&(-1i32).to_be_bytes()); // base sequence
    out.extend_from_slice(&1i32.to_be_bytes()); // records count
    out.extend_from_slice(&record);
    let crc = crc32c::crc32c(&out[21..]);
    out[17..21].copy_from_slice(&crc.to_be_bytes());
    out
}

/// The marker held by the control batch `bytes` (described by `header`); `None` for a control
/// batch that is not an end-transaction marker (an unknown control type, or no record, as
/// Kafka's cleaner may leave), which Kafka's readers skip too.
pub fn read_end_txn_marker(bytes: &[u8], header: &BatchHeader) -> Option<EndTxnMarker> {
    if !header.is_control() || header.records_count < 1 || header.compression() != 0 {
        return None;
    }
    let end = header.size().min(bytes.len());
    let record = bytes.get(RECORD_BATCH_OVERHEAD..end)?;
    let mut at = 0usize;
    let varint = |at: &mut usize| -> Option<i64> {
        let (v, n) = batch::read_varint(record.get(*at..)?)?;
        *at += n;
        Some(v)
    };
    let _length = varint(&mut at)?;
    at += 1; // attributes
    let _timestamp_delta = varint(&mut at)?;
    let _offset_delta = varint(&mut at)?;
    let key_len = usize::try_from(varint(&mut at)?).ok()?;
    let key = record.get(at..at.checked_add(key_len)?)?;
    at += key_len;
    if key.len() < 4 {
        return None;
    }
    let commit = match i16::from_be_bytes([key[2], key[3]]) {
        0 => false,
        1 => true,
        _ => return None,
    };
    let value_len = usize::try_from(varint(&mut at)?).ok()?;
    let value = record.get(at..at.checked_add(value_len)?)?;
    let coordinator_epoch = match value {
        [_, _, a, b, c, d, ..] => i32::from_be_bytes([*a, *b, *c, *d]),
        _ => return None,
    };
    Some(EndTxnMarker {
        commit,
        coordinator_epoch,
    })
}

/// The transactions of one log: which producers have one open and from which offset, and
/// those completed whose marker the high watermark has not passed yet (Kafka's
/// `unreplicatedTxns`: until then the last stable offset stays at their first offset).
#[derive(Debug, Default, Clone)]
pub struct Transactions {
    /// Producer id -> first offset of its open transaction.
    ongoing: HashMap<i64, i64>,
    /// The same, ordered by first offset.
    by_first: BTreeSet<(i64, i64)>,
    /// `(first offset, marker offset)` of completed transactions, in marker order.
    unreplicated: Vec<(i64, i64)>,
    /// Whether the log ever held a transactional batch: a log that never did needs no replay
    /// when it is truncated.
    seen: bool,
}

impl Transactions {
    /// Takes one batch now in the log (offsets assigned). A transactional data batch opens
    /// its producer's transaction if none is open; a marker closes it. Returns the index entry
    /// of an ABORT marker.
    pub fn apply(&mut self, header: &BatchHeader, bytes: &[u8]) -> Option<AbortedTxn> {
        if header.attributes & 0x10 == 0 || header.producer_id < 0 {
            return None;
        }
        self.seen = true;
        let pid = header.producer_id;
        if !header.is_control() {
            if let std::collections::hash_map::Entry::Vacant(v) = self.ongoing.entry(pid) {
                v.insert(header.base_offset);
                self.by_first.insert((header.base_offset, pid));
            }
            return None;
        }
        let marker = read_end_txn_marker(bytes, header)?;
        let offset = header.base_offset;
        // A marker for a producer without an open transaction is written all the same (the
        // coordinator may retry); it covers itself alone.
        let first = match self.ongoing.remove(&pid) {
            Some(first) => {
                self.by_first.remove(&(first, pid));
                first
            }
            None => offset,
        };
        self.unreplicated.push((first, offset));
        if marker.commit {
            return None;
        }
        // Kafka's `lastStableOffset(completedTxn)`: the next open transaction's first offset,
        // or right after this marker.
        let last_stable_offset = self.by_first.first().map_or(offset + 1, |(f, _)| *f);
        Some(AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: offset,
            last_stable_offset,
        })
    }

    /// The first offset a read_committed consumer may not see yet, given the high watermark:
    /// the earliest open transaction, or a completed one whose marker is not below the HW.
    /// Completed transactions the HW passed are forgotten here.
    pub fn first_unstable_offset(&mut self, high_watermark: i64) -> Option<i64> {
        self.unreplicated.retain(|(_, marker)| *marker >= high_watermark);
        let open = self.by_first.first().map(|(f, _)| *f);
        let completed = self.unreplicated.iter().map(|(f, _)| *f).min();
        match (open, completed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Open transactions as `(producer id, first offset)`, oldest first.
    pub fn ongoing(&self) -> Vec<(i64, i64)> {
        self.by_first.iter().map(|(f, p)| (*p, *f)).collect()
    }

    /// The first offset of `producer_id`'s open transaction.
    pub fn ongoing_first_offset(&self, producer_id: i64) -> Option<i64> {
        self.ongoing.get(&producer_id).copied()
    }

    pub fn seen(&self) -> bool {
        self.seen
    }

    /// Forgets everything (the log restarts empty).
    pub fn clear(&mut self) {
        *self = Transactions::default();
    }

    /// The state as a clean shutdown leaves it in the log's clean-shutdown marker, so a clean
    /// open need not read every batch header of every segment again (Kafka snapshots its
    /// producer state for the same reason). Text, one fact a line.
    pub fn snapshot(&self) -> Vec<u8> {
        let mut out = format!("{SNAPSHOT_MAGIC}\nseen {}\n", u8::from(self.seen));
        for (first, pid) in &self.by_first {
            out.push_str(&format!("ongoing {pid} {first}\n"));
        }
        for (first, marker) in &self.unreplicated {
            out.push_str(&format!("completed {first} {marker}\n"));
        }
        out.into_bytes()
    }

    /// The state [`Transactions::snapshot`] wrote; `None` for anything else (an empty marker
    /// from a kdeck before transactions, a torn or edited file): the log replays instead.
    pub fn from_snapshot(bytes: &[u8]) -> Option<Transactions> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.lines();
        if lines.next()? != SNAPSHOT_MAGIC {
            return None;
        }
        let mut txns = Transactions::default();
        let mut saw_seen = false;
        for line in lines {
            let words: Vec<&str> = line.split(' ').collect();
            let number = |i: usize| words.get(i).and_then(|w| w.parse::<i64>().ok());
            match (words.first().copied(), words.len()) {
                (Some("seen"), 2) => {
                    txns.seen = number(1)? != 0;
                    saw_seen = true;
                }
                (Some("ongoing"), 3) => {
                    let (pid, first) = (number(1)?, number(2)?);
                    if txns.ongoing.insert(pid, first).is_some() {
                        return None;
                    }
                    txns.by_first.insert((first, pid));
                }
                (Some("completed"), 3) => txns.unreplicated.push((number(1)?, number(2)?)),
                _ => return None,
            }
        }
        saw_seen.then_some(txns)
    }
}

/// The first line of a transactions snapshot.
const SNAPSHOT_MAGIC: &str = "kdeck transactions 1";

/// Kafka's `TransactionIndex.collectAbortedTxns`: the entries of one segment that overlap
/// `[fetch_offset, upper_bound)`, and whether the search is complete (an entry's last stable
/// offset reached the upper bound, so no later segment can hold an overlapping one).
pub fn collect_aborted(entries: &[AbortedTxn], fetch_offset: i64, upper_bound: i64, out: &mut Vec<AbortedTxn>) -> bool {
    for txn in entries {
        if txn.last_offset >= fetch_offset && txn.first_offset < upper_bound {
            out.push(*txn);
        }
        if txn.last_stable_offset >= upper_bound {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_reads_back_as_the_state_it_was_taken_of_and_anything_else_is_refused() {
        let mut txns = Transactions {
            seen: true,
            ..Transactions::default()
        };
        for (pid, first) in [(8, 2), (9, 4)] {
            txns.ongoing.insert(pid, first);
            txns.by_first.insert((first, pid));
        }
        txns.unreplicated.push((0, 3));
        let back = Transactions::from_snapshot(&txns.snapshot()).expect("reads back");
        assert_eq!(
            (back.ongoing(), back.unreplicated.clone(), back.seen()),
            (txns.ongoing(), txns.unreplicated.clone(), true)
        );
        let empty = Transactions::from_snapshot(&Transactions::default().snapshot()).expect("empty");
        assert!(empty.ongoing().is_empty() && !empty.seen());
        for bad in [
            &b""[..],
            b"seen 1\n",
            b"kdeck transactions 1\n",
            b"kdeck transactions 1\nseen 1\nongoing 8\n",
            b"kdeck transactions 1\nseen 1\nongoing 8 2\nongoing 8 4\n",
            b"kdeck transactions 1\nseen x\n",
            b"kdeck transactions 2\nseen 1\n",
            b"\xff\xfe",
        ] {
            assert!(
                Transactions::from_snapshot(bad).is_none(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_marker_batch_is_valid_and_reads_back() {
        for commit in [false, true] {
            let bytes = end_txn_marker_batch(42, 3, 7, commit, 1_000);
            let header = batch::validate(&bytes).expect("a valid batch");
            assert!(header.is_control());
            assert_eq!(header.attributes & 0x10, 0x10, "transactional");
            assert_eq!((header.producer_id, header.producer_epoch), (42, 3));
            assert_eq!(header.records_count, 1);
            assert_eq!(
                read_end_txn_marker(&bytes, &header),
                Some(EndTxnMarker {
                    commit,
                    coordinator_epoch: 7
                })
            );
            // Kafka's own record reader agrees.
            let decoded = super::super::records::decode(&bytes).expect("decodes");
            assert_eq!(decoded.len(), 1);
            assert!(decoded[0].control);
            let key = decoded[0].key.clone().expect("a key");
            assert_eq!(&key[..], &[0, 0, 0, u8::from(commit)]);
        }
    }

    #[test]
    fn index_entries_round_trip_and_damage_is_refused() {
        let txn = AbortedTxn {
            producer_id: 9,
            first_offset: 10,
            last_offset: 20,
            last_stable_offset: 21,
        };
        let mut file = txn.encode().to_vec();
        file.extend(AbortedTxn { last_offset: 30, ..txn }.encode());
        assert_eq!(decode_index(&file).map(|e| e.len()), Some(2));
        assert_eq!(decode_index(&file[..40]), None, "a torn entry");
        let mut bad = file.clone();
        bad[1] = 5;
        assert_eq!(decode_index(&bad), None, "an unknown version");
    }
}
