//! Byte compatibility with Kafka: batches made by the `kafka-protocol` encoder (every codec)
//! go in and come out unchanged but for base offset and leader epoch; segment files are plain
//! concatenated v2 batches that the same decoder reads from byte 0; index files use Kafka's
//! 8-byte and 12-byte big-endian entries and 20-digit names.

mod common;

use std::fs;

use bytes::Bytes;
use common::scratch_dir;
use kdeck::storage::records::{self, Compression, Record};
use kdeck::storage::{Log, LogConfig};

fn sample_records(n: i64) -> Vec<Record> {
    (0..n)
        .map(|i| {
            let key = (i % 3 != 0).then(|| Bytes::from(format!("user-{i}")));
            let value = (i % 7 != 6).then(|| Bytes::from(format!("{{\"page\":\"/首页/{i}\",\"ok\":true}} 🚀")));
            let mut r = records::record(i, 1_700_000_000_000 + i, key, value);
            r.headers.insert("trace".into(), Some(Bytes::from(format!("t{i}"))));
            r.headers.insert("empty".into(), None);
            r
        })
        .collect()
}

#[test]
fn batches_of_every_codec_round_trip_through_the_log() {
    let dir = scratch_dir();
    let log = Log::open(dir.path().join("compat-0"), LogConfig::default(), 0).expect("open");
    let codecs = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];
    let mut expected = Vec::new();
    for (i, codec) in codecs.into_iter().enumerate() {
        let recs = sample_records(20);
        let mut bytes = records::encode_batch(&recs, codec).expect("encode").to_vec();
        let sent = bytes.clone();
        let info = log.append_as_leader(&mut bytes, 3 + i as i32, 0).expect("append");
        assert_eq!(info.records, 20);
        // Only base offset (bytes 0..8) and leader epoch (12..16) may differ from what was sent.
        assert_eq!(bytes[8..12], sent[8..12]);
        assert_eq!(bytes[16..], sent[16..], "{codec:?} batch was re-encoded");
        let data = log.read(info.first_offset, 1 << 20, None).expect("read");
        let decoded = records::decode(&data.records).expect("decode");
        assert_eq!(decoded.len(), 20, "{codec:?}");
        for (j, (got, want)) in decoded.iter().zip(&recs).enumerate() {
            assert_eq!(got.offset, info.first_offset + j as i64);
            assert_eq!(got.partition_leader_epoch, 3 + i as i32);
            assert_eq!(got.key, want.key, "{codec:?}");
            assert_eq!(got.value, want.value, "{codec:?}");
            assert_eq!(got.headers, want.headers, "{codec:?}");
            assert_eq!(got.timestamp, want.timestamp, "{codec:?}");
        }
        expected.extend(recs);
    }
    log.close().expect("close");

    let segment = dir.path().join("compat-0").join("00000000000000000000.log");
    let raw = fs::read(&segment).expect("segment file");
    let decoded = records::decode(&raw).expect("the segment decodes from byte 0");
    assert_eq!(decoded.len(), expected.len());
    for (i, (got, want)) in decoded.iter().zip(&expected).enumerate() {
        assert_eq!(got.offset, i as i64);
        assert_eq!((&got.key, &got.value), (&want.key, &want.value));
    }
}

#[test]
fn index_files_use_kafkas_layout() {
    let dir = scratch_dir();
    let path = dir.path().join("idx-0");
    let config = LogConfig {
        index_interval_bytes: 256,
        ..LogConfig::default()
    };
    let log = Log::open(&path, config, 0).expect("open");
    let mut batches = Vec::new();
    for i in 0..40 {
        let recs: Vec<_> = (0..3)
            .map(|j| records::record(j, 1000 * i + j, None, Some(Bytes::from(vec![b'x'; 100]))))
            .collect();
        let mut bytes = records::encode_batch(&recs, Compression::None)
            .expect("encode")
            .to_vec();
        let info = log.append_as_leader(&mut bytes, 0, 0).expect("append");
        batches.push((info.first_offset, info.last_offset, bytes.len()));
    }
    log.close().expect("close");

    let index = fs::read(path.join("00000000000000000000.index")).expect("index");
    let time_index = fs::read(path.join("00000000000000000000.timeindex")).expect("time index");
    assert!(!index.is_empty() && index.len().is_multiple_of(8));
    assert!(!time_index.is_empty() && time_index.len().is_multiple_of(12));
    // Batch start positions, to check each entry points at the start of the batch whose last
    // offset it records.
    let mut starts = std::collections::HashMap::new();
    let mut position = 0u32;
    for (_, last, size) in &batches {
        starts.insert(*last, position);
        position += *size as u32;
    }
    let mut previous = None;
    for entry in index.chunks_exact(8) {
        let relative = u32::from_be_bytes(entry[..4].try_into().expect("4 bytes"));
        let position = u32::from_be_bytes(entry[4..].try_into().expect("4 bytes"));
        assert_eq!(starts.get(&i64::from(relative)), Some(&position));
        assert!(previous.is_none_or(|p| p < relative));
        previous = Some(relative);
    }
    for entry in time_index.chunks_exact(12) {
        let timestamp = i64::from_be_bytes(entry[..8].try_into().expect("8 bytes"));
        let relative = u32::from_be_bytes(entry[8..].try_into().expect("4 bytes"));
        // Records of batch i carry timestamps 1000 * i + j; the entry names the batch's last
        // offset as holding the largest timestamp so far.
        let batch = i64::from(relative) / 3;
        assert_eq!(timestamp, 1000 * batch + 2);
    }
}
