//! The records a transaction coordinator keeps in `__transaction_state`, byte for byte as
//! Kafka's (`TransactionLogKey` version 0, `TransactionLogValue` versions 0 and 1 in
//! apache/kafka's transaction-coordinator message definitions), so a kdeck data directory
//! reads like a Kafka one. The key is the transactional id; a null value is a tombstone (the
//! id expired). Version 0 is written, as Kafka does until `transaction.version` 1; version 1
//! (flexible: compact strings and arrays, tagged fields) is read too.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::TxnState;
use crate::engine::TopicPartition;

const KEY_VERSION: i16 = 0;
const VALUE_VERSION: i16 = 0;

/// One transactional id's state as its record holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnLogValue {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    /// Sorted; empty (null on disk) in state Empty.
    pub partitions: Vec<TopicPartition>,
    pub last_update_ms: i64,
    pub start_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxnRecordError {
    #[error("{0} ends early")]
    Truncated(&'static str),
    #[error("{what} has unsupported version {version}")]
    UnsupportedVersion { what: &'static str, version: i16 },
    #[error("{0} is not UTF-8")]
    NotUtf8(&'static str),
    #[error("{0} has a negative length")]
    NegativeLength(&'static str),
    #[error("unknown transaction status {0}")]
    UnknownState(i8),
}

type Result<T> = std::result::Result<T, TxnRecordError>;

pub fn txn_key(transactional_id: &str) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(KEY_VERSION);
    put_string(&mut b, transactional_id);
    b.freeze()
}

/// The transactional id of a key.
pub fn parse_key(key: &[u8]) -> Result<String> {
    let mut r = key;
    let version = i16_of(&mut r, "transaction log key version")?;
    if version != KEY_VERSION {
        return Err(TxnRecordError::UnsupportedVersion {
            what: "transaction log key",
            version,
        });
    }
    string(&mut r, false, "transactional id")
}

pub fn txn_value(v: &TxnLogValue) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(VALUE_VERSION);
    b.put_i64(v.producer_id);
    b.put_i16(v.producer_epoch);
    b.put_i32(v.timeout_ms);
    b.put_i8(v.state.id());
    if v.state == TxnState::Empty {
        b.put_i32(-1);
    } else {
        let by_topic = group_by_topic(&v.partitions);
        b.put_i32(by_topic.len() as i32);
        for (topic, ids) in by_topic {
            put_string(&mut b, topic);
            b.put_i32(ids.len() as i32);
            for id in ids {
                b.put_i32(id);
            }
        }
    }
    b.put_i64(v.last_update_ms);
    b.put_i64(v.start_ms);
    b.freeze()
}

pub fn parse_value(value: &[u8]) -> Result<TxnLogValue> {
    let mut r = value;
    let version = i16_of(&mut r, "transaction log value version")?;
    let flexible = match version {
        0 => false,
        1 => true,
        version => {
            return Err(TxnRecordError::UnsupportedVersion {
                what: "transaction log value",
                version,
            });
        }
    };
    let producer_id = i64_of(&mut r, "producer id")?;
    let producer_epoch = i16_of(&mut r, "producer epoch")?;
    let timeout_ms = i32_of(&mut r, "transaction timeout")?;
    let status = i8_of(&mut r, "transaction status")?;
    let state = TxnState::from_id(status).ok_or(TxnRecordError::UnknownState(status))?;
    let mut partitions = Vec::new();
    if let Some(topics) = array_len(&mut r, flexible, "transaction partitions")? {
        for _ in 0..topics {
            let topic = string(&mut r, flexible, "transaction partition topic")?;
            let ids = array_len(&mut r, flexible, "transaction partition ids")?.unwrap_or(0);
            for _ in 0..ids {
                partitions.push(TopicPartition::new(&topic, i32_of(&mut r, "partition id")?));
            }
            if flexible {
                skip_tagged(&mut r)?;
            }
        }
    }
    let last_update_ms = i64_of(&mut r, "last update timestamp")?;
    let start_ms = i64_of(&mut r, "start timestamp")?;
    if state == TxnState::Empty {
        partitions.clear();
    }
    partitions.sort();
    partitions.dedup();
    Ok(TxnLogValue {
        producer_id,
        producer_epoch,
        timeout_ms,
        state,
        partitions,
        last_update_ms,
        start_ms,
    })
}

fn group_by_topic(partitions: &[TopicPartition]) -> Vec<(&str, Vec<i32>)> {
    let mut out: Vec<(&str, Vec<i32>)> = Vec::new();
    for tp in partitions {
        match out.iter_mut().find(|(t, _)| *t == tp.topic) {
            Some((_, ids)) => ids.push(tp.partition),
            None => out.push((&tp.topic, vec![tp.partition])),
        }
    }
    out
}

fn put_string(b: &mut BytesMut, s: &str) {
    let len = i16::try_from(s.len()).unwrap_or(i16::MAX);
    b.put_i16(len);
    b.put_slice(&s.as_bytes()[..len as usize]);
}

fn need(r: &[u8], n: usize, what: &'static str) -> Result<()> {
    if r.remaining() < n {
        Err(TxnRecordError::Truncated(what))
    } else {
        Ok(())
    }
}

fn i8_of(r: &mut &[u8], what: &'static str) -> Result<i8> {
    need(r, 1, what)?;
    Ok(r.get_i8())
}

fn i16_of(r: &mut &[u8], what: &'static str) -> Result<i16> {
    need(r, 2, what)?;
    Ok(r.get_i16())
}

fn i32_of(r: &mut &[u8], what: &'static str) -> Result<i32> {
    need(r, 4, what)?;
    Ok(r.get_i32())
}

fn i64_of(r: &mut &[u8], what: &'static str) -> Result<i64> {
    need(r, 8, what)?;
    Ok(r.get_i64())
}

fn uvarint(r: &mut &[u8], what: &'static str) -> Result<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = i8_of(r, what)? as u8;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(TxnRecordError::Truncated(what))
}

/// An array's length; `None` for a null array.
fn array_len(r: &mut &[u8], flexible: bool, what: &'static str) -> Result<Option<usize>> {
    if flexible {
        let n = uvarint(r, what)?;
        return Ok(n.checked_sub(1).map(|n| n as usize));
    }
    match i32_of(r, what)? {
        -1 => Ok(None),
        n if n < 0 => Err(TxnRecordError::NegativeLength(what)),
        n => Ok(Some(n as usize)),
    }
}

fn string(r: &mut &[u8], flexible: bool, what: &'static str) -> Result<String> {
    let len = if flexible {
        uvarint(r, what)?
            .checked_sub(1)
            .ok_or(TxnRecordError::NegativeLength(what))? as usize
    } else {
        let n = i16_of(r, what)?;
        usize::try_from(n).map_err(|_| TxnRecordError::NegativeLength(what))?
    };
    need(r, len, what)?;
    let s = std::str::from_utf8(&r[..len])
        .map_err(|_| TxnRecordError::NotUtf8(what))?
        .to_string();
    r.advance(len);
    Ok(s)
}

fn skip_tagged(r: &mut &[u8]) -> Result<()> {
    let fields = uvarint(r, "tagged fields")?;
    for _ in 0..fields {
        uvarint(r, "tag")?;
        let size = uvarint(r, "tagged field size")? as usize;
        need(r, size, "tagged field")?;
        r.advance(size);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_and_value_are_kafkas_version_0_bytes_and_read_back() {
        assert_eq!(&txn_key("t1")[..], &[0, 0, 0, 2, b't', b'1']);
        let v = TxnLogValue {
            producer_id: 7,
            producer_epoch: 2,
            timeout_ms: 60_000,
            state: TxnState::Ongoing,
            partitions: vec![TopicPartition::new("a", 0), TopicPartition::new("a", 3)],
            last_update_ms: 11,
            start_ms: 10,
        };
        let bytes = txn_value(&v);
        let mut want = vec![0, 0];
        want.extend_from_slice(&7i64.to_be_bytes());
        want.extend_from_slice(&2i16.to_be_bytes());
        want.extend_from_slice(&60_000i32.to_be_bytes());
        want.push(1);
        want.extend_from_slice(&1i32.to_be_bytes());
        want.extend_from_slice(&[0, 1, b'a']);
        want.extend_from_slice(&2i32.to_be_bytes());
        want.extend_from_slice(&0i32.to_be_bytes());
        want.extend_from_slice(&3i32.to_be_bytes());
        want.extend_from_slice(&11i64.to_be_bytes());
        want.extend_from_slice(&10i64.to_be_bytes());
        assert_eq!(&bytes[..], &want[..]);
        assert_eq!(parse_value(&bytes), Ok(v));
        assert_eq!(parse_key(&txn_key("t1")), Ok("t1".to_string()));
    }

    #[test]
    fn empty_state_writes_null_partitions_and_version_1_reads() {
        let v = TxnLogValue {
            producer_id: 1,
            producer_epoch: 0,
            timeout_ms: 5,
            state: TxnState::Empty,
            partitions: vec![],
            last_update_ms: 1,
            start_ms: -1,
        };
        let bytes = txn_value(&v);
        assert_eq!(&bytes[17..21], &(-1i32).to_be_bytes());
        assert_eq!(parse_value(&bytes), Ok(v));
        // Version 1, flexible: one topic "b" with partition 4, then tagged fields.
        let mut flex = vec![0, 1];
        flex.extend_from_slice(&9i64.to_be_bytes());
        flex.extend_from_slice(&1i16.to_be_bytes());
        flex.extend_from_slice(&100i32.to_be_bytes());
        flex.push(2);
        flex.extend_from_slice(&[2, 2, b'b', 2]);
        flex.extend_from_slice(&4i32.to_be_bytes());
        flex.push(0);
        flex.extend_from_slice(&3i64.to_be_bytes());
        flex.extend_from_slice(&2i64.to_be_bytes());
        flex.push(0);
        let parsed = parse_value(&flex).expect("parses");
        assert_eq!(parsed.state, TxnState::PrepareCommit);
        assert_eq!(parsed.partitions, vec![TopicPartition::new("b", 4)]);
        assert_eq!((parsed.last_update_ms, parsed.start_ms), (3, 2));
        assert!(parse_value(&flex[..10]).is_err());
    }
}
