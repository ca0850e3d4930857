//! The records a group coordinator keeps in `__consumer_offsets`, byte for byte as Kafka's
//! (`OffsetCommitKey`/`OffsetCommitValue`, `GroupMetadataKey`/`GroupMetadataValue` in
//! apache/kafka's group-coordinator message definitions), so a kdeck data directory reads
//! like a Kafka one. A key and a value each start with an int16 version; the key's version
//! says the record's kind (0 and 1 an offset commit, 2 a group's metadata). A null value is a
//! tombstone.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::CommittedOffset;
use crate::engine::TopicPartition;

/// The GroupMetadataValue version Kafka writes since 2.3 (version 4, the first flexible one,
/// is only read).
const GROUP_METADATA_VALUE_VERSION: i16 = 3;
/// The OffsetCommitValue version Kafka writes when no expire timestamp is given.
const OFFSET_COMMIT_VALUE_VERSION: i16 = 3;

/// What a record is about, from its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordinatorKey {
    OffsetCommit { group: String, tp: TopicPartition },
    GroupMetadata { group: String },
}

impl CoordinatorKey {
    pub fn group(&self) -> &str {
        match self {
            CoordinatorKey::OffsetCommit { group, .. } | CoordinatorKey::GroupMetadata { group } => group,
        }
    }
}

/// A classic group as of its last SyncGroup, or as it became empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadataValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub current_state_timestamp: i64,
    pub members: Vec<MemberMetadata>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberMetadata {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    /// The member's metadata for the group's protocol.
    pub subscription: Bytes,
    pub assignment: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("{0} ends early")]
    Truncated(&'static str),
    #[error("{what} has unsupported version {version}")]
    UnsupportedVersion { what: &'static str, version: i16 },
    #[error("{0} is not UTF-8")]
    NotUtf8(&'static str),
    #[error("{0} has a negative length")]
    NegativeLength(&'static str),
}

/// Reads a record key: `None` for kinds classic groups do not use (KIP-848 groups, share
/// groups...), which a loader skips as Kafka's does.
pub fn parse_key(key: &[u8]) -> Result<Option<CoordinatorKey>, RecordError> {
    let mut r = Reader::new(key, false);
    let version = r.i16("key version")?;
    match version {
        0 | 1 => {
            let group = r.string("offset commit key group")?;
            let topic = r.string("offset commit key topic")?;
            let partition = r.i32("offset commit key partition")?;
            Ok(Some(CoordinatorKey::OffsetCommit {
                group,
                tp: TopicPartition::new(topic, partition),
            }))
        }
        2 => Ok(Some(CoordinatorKey::GroupMetadata {
            group: r.string("group metadata key group")?,
        })),
        _ => Ok(None),
    }
}

pub fn offset_commit_key(group: &str, tp: &TopicPartition) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(1);
    put_string(&mut b, group);
    put_string(&mut b, &tp.topic);
    b.put_i32(tp.partition);
    b.freeze()
}

/// OffsetCommitValue version 3: offset, leader epoch (unknown), metadata, commit time.
pub fn offset_commit_value(offset: &CommittedOffset) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(OFFSET_COMMIT_VALUE_VERSION);
    b.put_i64(offset.offset);
    b.put_i32(-1);
    put_string(&mut b, "");
    b.put_i64(offset.commit_timestamp);
    b.freeze()
}

/// OffsetCommitValue versions 0 to 4.
pub fn parse_offset_commit_value(value: &[u8]) -> Result<CommittedOffset, RecordError> {
    let mut r = Reader::new(value, false);
    let version = r.i16("offset commit value version")?;
    if !(0..=4).contains(&version) {
        return Err(RecordError::UnsupportedVersion {
            what: "offset commit value",
            version,
        });
    }
    r.flexible = version >= 4;
    let offset = r.i64("offset commit value offset")?;
    if version >= 3 {
        r.i32("offset commit value leader epoch")?;
    }
    r.string("offset commit value metadata")?;
    let commit_timestamp = r.i64("offset commit value commit timestamp")?;
    Ok(CommittedOffset {
        offset,
        commit_timestamp,
    })
}

pub fn group_metadata_key(group: &str) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(2);
    put_string(&mut b, group);
    b.freeze()
}

/// GroupMetadataValue version 3.
pub fn group_metadata_value(value: &GroupMetadataValue) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(GROUP_METADATA_VALUE_VERSION);
    put_string(&mut b, &value.protocol_type);
    b.put_i32(value.generation);
    put_nullable_string(&mut b, value.protocol.as_deref());
    put_nullable_string(&mut b, value.leader.as_deref());
    b.put_i64(value.current_state_timestamp);
    b.put_i32(value.members.len() as i32);
    for m in &value.members {
        put_string(&mut b, &m.member_id);
        put_nullable_string(&mut b, m.group_instance_id.as_deref());
        put_string(&mut b, &m.client_id);
        put_string(&mut b, &m.client_host);
        b.put_i32(m.rebalance_timeout_ms);
        b.put_i32(m.session_timeout_ms);
        put_bytes(&mut b, &m.subscription);
        put_bytes(&mut b, &m.assignment);
    }
    b.freeze()
}

/// GroupMetadataValue versions 0 to 4.
pub fn parse_group_metadata_value(value: &[u8]) -> Result<GroupMetadataValue, RecordError> {
    let mut r = Reader::new(value, false);
    let version = r.i16("group metadata value version")?;
    if !(0..=4).contains(&version) {
        return Err(RecordError::UnsupportedVersion {
            what: "group metadata value",
            version,
        });
    }
    r.flexible = version >= 4;
    let protocol_type = r.string("group protocol type")?;
    let generation = r.i32("group generation")?;
    let protocol = r.nullable_string("group protocol")?;
    let leader = r.nullable_string("group leader")?;
    let current_state_timestamp = if version >= 2 {
        r.i64("group state timestamp")?
    } else {
        -1
    };
    let count = r.array_len("group members")?;
    let mut members = Vec::with_capacity(count.min(r.buf.len()));
    for _ in 0..count {
        let member_id = r.string("member id")?;
        let group_instance_id = if version >= 3 {
            r.nullable_string("member group instance id")?
        } else {
            None
        };
        let client_id = r.string("member client id")?;
        let client_host = r.string("member client host")?;
        let session_or_rebalance = r.i32("member timeout")?;
        let (rebalance_timeout_ms, session_timeout_ms) = if version >= 1 {
            (session_or_rebalance, r.i32("member session timeout")?)
        } else {
            // Before version 1 a member had one timeout for both.
            (session_or_rebalance, session_or_rebalance)
        };
        let subscription = r.bytes("member subscription")?;
        let assignment = r.bytes("member assignment")?;
        r.skip_tagged_fields("member tagged fields")?;
        members.push(MemberMetadata {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms,
            session_timeout_ms,
            subscription,
            assignment,
        });
    }
    Ok(GroupMetadataValue {
        protocol_type,
        generation,
        protocol,
        leader,
        current_state_timestamp,
        members,
    })
}

fn put_string(b: &mut BytesMut, s: &str) {
    let len = s.len().min(i16::MAX as usize);
    b.put_i16(len as i16);
    b.put_slice(&s.as_bytes()[..len]);
}

fn put_nullable_string(b: &mut BytesMut, s: Option<&str>) {
    match s {
        Some(s) => put_string(b, s),
        None => b.put_i16(-1),
    }
}

fn put_bytes(b: &mut BytesMut, bytes: &[u8]) {
    b.put_i32(bytes.len() as i32);
    b.put_slice(bytes);
}

/// Kafka's schema types over a record's bytes; `flexible` versions use compact (varint)
/// lengths and end each struct with tagged fields.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    flexible: bool,
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8], flexible: bool) -> Self {
        Reader { buf, flexible }
    }

    fn need(&self, n: usize, what: &'static str) -> Result<(), RecordError> {
        if self.buf.remaining() < n {
            return Err(RecordError::Truncated(what));
        }
        Ok(())
    }

    pub(super) fn i16(&mut self, what: &'static str) -> Result<i16, RecordError> {
        self.need(2, what)?;
        Ok(self.buf.get_i16())
    }

    fn i32(&mut self, what: &'static str) -> Result<i32, RecordError> {
        self.need(4, what)?;
        Ok(self.buf.get_i32())
    }

    fn i64(&mut self, what: &'static str) -> Result<i64, RecordError> {
        self.need(8, what)?;
        Ok(self.buf.get_i64())
    }

    fn unsigned_varint(&mut self, what: &'static str) -> Result<u32, RecordError> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            self.need(1, what)?;
            let byte = self.buf.get_u8();
            value |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(RecordError::Truncated(what))
    }

    /// A length, `None` for null.
    fn length(&mut self, what: &'static str, wide: bool) -> Result<Option<usize>, RecordError> {
        let len = if self.flexible {
            i64::from(self.unsigned_varint(what)?) - 1
        } else if wide {
            i64::from(self.i32(what)?)
        } else {
            i64::from(self.i16(what)?)
        };
        match len {
            -1 => Ok(None),
            n if n < 0 => Err(RecordError::NegativeLength(what)),
            n => Ok(Some(n as usize)),
        }
    }

    fn take(&mut self, len: usize, what: &'static str) -> Result<&'a [u8], RecordError> {
        self.need(len, what)?;
        let (head, rest) = self.buf.split_at(len);
        self.buf = rest;
        Ok(head)
    }

    fn nullable_string(&mut self, what: &'static str) -> Result<Option<String>, RecordError> {
        let Some(len) = self.length(what, false)? else {
            return Ok(None);
        };
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| RecordError::NotUtf8(what))
    }

    pub(super) fn string(&mut self, what: &'static str) -> Result<String, RecordError> {
        self.nullable_string(what)?.ok_or(RecordError::NegativeLength(what))
    }

    fn bytes(&mut self, what: &'static str) -> Result<Bytes, RecordError> {
        let len = self.length(what, true)?.ok_or(RecordError::NegativeLength(what))?;
        Ok(Bytes::copy_from_slice(self.take(len, what)?))
    }

    pub(super) fn array_len(&mut self, what: &'static str) -> Result<usize, RecordError> {
        self.length(what, true)?.ok_or(RecordError::NegativeLength(what))
    }

    fn skip_tagged_fields(&mut self, what: &'static str) -> Result<(), RecordError> {
        if !self.flexible {
            return Ok(());
        }
        for _ in 0..self.unsigned_varint(what)? {
            self.unsigned_varint(what)?;
            let size = self.unsigned_varint(what)? as usize;
            self.take(size, what)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str) -> MemberMetadata {
        MemberMetadata {
            member_id: id.into(),
            group_instance_id: None,
            client_id: "kdeck".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 30_000,
            session_timeout_ms: 10_000,
            subscription: Bytes::from_static(b"sub"),
            assignment: Bytes::from_static(b"assigned"),
        }
    }

    #[test]
    fn group_metadata_round_trips_in_kafkas_version_3_layout() {
        let value = GroupMetadataValue {
            protocol_type: "consumer".into(),
            generation: 7,
            protocol: Some("range".into()),
            leader: Some("m-1".into()),
            current_state_timestamp: 1_700_000_000_000,
            members: vec![member("m-1"), member("m-2")],
        };
        let bytes = group_metadata_value(&value);
        // version, "consumer", generation, "range", "m-1", timestamp, member count, then the
        // first member id: the field order of GroupMetadataValue.json.
        assert_eq!(&bytes[..2], &[0, 3]);
        assert_eq!(&bytes[2..12], b"\x00\x08consumer");
        assert_eq!(&bytes[12..16], &7i32.to_be_bytes());
        assert_eq!(&bytes[16..23], b"\x00\x05range");
        assert_eq!(&bytes[23..28], b"\x00\x03m-1");
        assert_eq!(&bytes[28..36], &1_700_000_000_000i64.to_be_bytes());
        assert_eq!(&bytes[36..40], &2i32.to_be_bytes());
        assert_eq!(&bytes[40..45], b"\x00\x03m-1");
        assert_eq!(parse_group_metadata_value(&bytes), Ok(value));
        assert_eq!(
            parse_key(&group_metadata_key("analytics")),
            Ok(Some(CoordinatorKey::GroupMetadata {
                group: "analytics".into()
            }))
        );
    }

    /// KIP-345: each member's `group.instance.id` is kept, so a new coordinator knows the
    /// static members.
    #[test]
    fn a_static_members_instance_id_round_trips() {
        let mut static_member = member("payments-a-0-7");
        static_member.group_instance_id = Some("payments-a".into());
        let value = GroupMetadataValue {
            protocol_type: "consumer".into(),
            generation: 2,
            protocol: Some("range".into()),
            leader: Some("payments-a-0-7".into()),
            current_state_timestamp: 5,
            members: vec![static_member, member("m-2")],
        };
        let bytes = group_metadata_value(&value);
        let parsed = parse_group_metadata_value(&bytes).expect("parses");
        assert_eq!(parsed.members[0].group_instance_id.as_deref(), Some("payments-a"));
        assert_eq!(parsed.members[1].group_instance_id, None);
        assert_eq!(parsed, value);
    }

    #[test]
    fn an_empty_group_has_null_protocol_and_leader() {
        let value = GroupMetadataValue {
            protocol_type: "consumer".into(),
            generation: 3,
            protocol: None,
            leader: None,
            current_state_timestamp: -1,
            members: Vec::new(),
        };
        let bytes = group_metadata_value(&value);
        assert_eq!(&bytes[16..20], &[0xff, 0xff, 0xff, 0xff], "two null strings");
        assert_eq!(parse_group_metadata_value(&bytes), Ok(value));
    }

    #[test]
    fn the_flexible_version_4_is_read() {
        let mut b = BytesMut::new();
        b.put_i16(4);
        b.put_u8(9);
        b.put_slice(b"consumer");
        b.put_i32(2);
        b.put_u8(6);
        b.put_slice(b"range");
        b.put_u8(0);
        b.put_i64(5);
        b.put_u8(2);
        b.put_u8(4);
        b.put_slice(b"m-1");
        // Null group instance id, empty client id and host.
        b.put_u8(0);
        b.put_u8(1);
        b.put_u8(1);
        b.put_i32(1_000);
        b.put_i32(2_000);
        b.put_u8(2);
        b.put_slice(b"s");
        b.put_u8(2);
        b.put_slice(b"a");
        // One tagged field of three bytes the reader does not know.
        b.put_u8(1);
        b.put_u8(9);
        b.put_u8(3);
        b.put_slice(b"xyz");
        b.put_u8(0);
        let parsed = parse_group_metadata_value(&b).expect("parses");
        assert_eq!(parsed.generation, 2);
        assert_eq!(parsed.leader, None);
        assert_eq!(parsed.members.len(), 1);
        assert_eq!(parsed.members[0].member_id, "m-1");
        assert_eq!(parsed.members[0].session_timeout_ms, 2_000);
        assert_eq!(parsed.members[0].assignment, Bytes::from_static(b"a"));
    }

    #[test]
    fn offset_commits_round_trip_and_garbage_is_an_error() {
        let tp = TopicPartition::new("page-views", 3);
        let key = offset_commit_key("analytics", &tp);
        let offset = CommittedOffset {
            offset: 42,
            commit_timestamp: 1000,
        };
        assert_eq!(
            parse_key(&key),
            Ok(Some(CoordinatorKey::OffsetCommit {
                group: "analytics".into(),
                tp
            }))
        );
        assert_eq!(parse_offset_commit_value(&offset_commit_value(&offset)), Ok(offset));
        assert!(parse_key(&[0, 1, 0]).is_err());
        assert_eq!(parse_key(&[0, 3, 0, 0]), Ok(None), "newer record kinds are skipped");
        assert!(parse_offset_commit_value(&[0, 3, 0]).is_err());
        assert!(parse_group_metadata_value(&[0, 9]).is_err());
    }
}
