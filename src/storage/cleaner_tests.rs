//! Compaction against a model: random appends (keys from a small set, values, tombstones,
//! records without a key), rolls, cleans as time passes, crashes at every step of the swap
//! protocol and reopens. After every step the log read from its start must hold each key's
//! latest value, every record at its original offset, offsets increasing and the log end
//! unchanged; once `delete.retention.ms` has passed over a fully cleaned log, tombstoned keys
//! are gone. A follower copying the cleaned leader ends with the same batches.

use std::collections::BTreeMap;

use bytes::Bytes;
use proptest::prelude::*;

use super::batch::{self, BatchHeader};
use super::cleaner::CrashPoint;
use super::records::{self, Compression};
use super::{CleanupPolicy, Log, LogConfig};

const KEYS: u8 = 6;
const DELETE_RETENTION_MS: i64 = 1_000;

fn config(min_ratio: f64) -> LogConfig {
    LogConfig {
        segment_bytes: 600,
        cleanup_policy: CleanupPolicy::Compact,
        delete_retention_ms: DELETE_RETENTION_MS,
        min_cleanable_dirty_ratio: min_ratio,
        ..LogConfig::default()
    }
}

/// One record as the test writes it: key (`None`: no key), value (`None`: tombstone).
type Written = (Option<u8>, Option<Vec<u8>>);

fn encode(records_: &[Written], timestamp: i64, compression: Compression) -> Vec<u8> {
    let recs: Vec<_> = records_
        .iter()
        .enumerate()
        .map(|(i, (k, v))| {
            records::record(
                i as i64,
                timestamp,
                k.map(|k| Bytes::from(vec![b'k', k])),
                v.clone().map(Bytes::from),
            )
        })
        .collect();
    match records::encode_batch(&recs, compression) {
        Ok(b) => b.to_vec(),
        Err(e) => panic!("test batch does not encode: {e}"),
    }
}

/// Every batch of the log, from its start, as `(header, bytes)`.
fn read_batches(log: &Log) -> Vec<(BatchHeader, Vec<u8>)> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    loop {
        let data = log.read(offset, 4096, None).expect("read");
        if data.records.is_empty() {
            break;
        }
        for item in batch::Batches::new(&data.records) {
            let (_, header, bytes) = item.expect("valid batch");
            if header.last_offset() >= offset {
                offset = header.next_offset();
                out.push((header, bytes.to_vec()));
            }
        }
    }
    out
}

#[derive(Default)]
struct Model {
    /// Every record ever written, by offset.
    written: BTreeMap<i64, Written>,
    /// Latest offset of each key.
    latest: BTreeMap<u8, i64>,
    log_end: i64,
}

impl Model {
    /// Checks the log against the model; `fully_cleaned` says tombstones must be gone and each
    /// key appear once.
    fn check(&self, log: &Log, fully_cleaned: bool) {
        assert_eq!(log.log_end_offset(), self.log_end, "cleaning never moves the log end");
        let mut last_offset = -1i64;
        let mut seen: BTreeMap<u8, Vec<i64>> = BTreeMap::new();
        let mut keyless = Vec::new();
        for (_, bytes) in read_batches(log) {
            for r in records::decode(&bytes).expect("decodes") {
                assert!(
                    r.offset > last_offset,
                    "offsets increase: {} after {last_offset}",
                    r.offset
                );
                last_offset = r.offset;
                let (key, value) = self
                    .written
                    .get(&r.offset)
                    .unwrap_or_else(|| panic!("offset {} was never written", r.offset));
                assert_eq!(r.key.as_ref().map(|k| k[1]), *key, "key at offset {}", r.offset);
                assert_eq!(r.value.as_deref(), value.as_deref(), "value at offset {}", r.offset);
                match key {
                    Some(k) => seen.entry(*k).or_default().push(r.offset),
                    None => keyless.push(r.offset),
                }
            }
        }
        let expected_keyless: Vec<i64> = self
            .written
            .iter()
            .filter(|(_, (k, _))| k.is_none())
            .map(|(o, _)| *o)
            .collect();
        assert_eq!(keyless, expected_keyless, "records without a key are all kept");
        for (key, latest) in &self.latest {
            let tombstone = self.written[latest].1.is_none();
            let offsets = seen.get(key).cloned().unwrap_or_default();
            match (tombstone, offsets.last()) {
                (false, last) => assert_eq!(last, Some(latest), "key {key}: its latest value is its last record"),
                (true, None) => {}
                (true, Some(last)) => assert_eq!(last, latest, "key {key}: deleted, only its tombstone may be last"),
            }
            if fully_cleaned {
                let want = if tombstone { vec![] } else { vec![*latest] };
                assert_eq!(offsets, want, "key {key} after a full clean past delete.retention.ms");
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Append { records: Vec<Written>, compressed: bool },
    NewEpoch,
    Roll,
    Clean { advance_ms: i64 },
    Crash { point: CrashPoint, advance_ms: i64 },
    Reopen { clean: bool },
}

fn written() -> impl Strategy<Value = Written> {
    prop_oneof![
        6 => (0..KEYS, proptest::collection::vec(any::<u8>(), 0..12)).prop_map(|(k, v)| (Some(k), Some(v))),
        2 => (0..KEYS).prop_map(|k| (Some(k), None)),
        1 => proptest::collection::vec(any::<u8>(), 0..6).prop_map(|v| (None, Some(v))),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let crash = prop_oneof![
        Just(CrashPoint::AfterCleaned),
        Just(CrashPoint::AfterSwap),
        Just(CrashPoint::AfterDeletingOld),
        Just(CrashPoint::BeforeCheckpoint),
    ];
    prop_oneof![
        10 => (proptest::collection::vec(written(), 1..5), any::<bool>())
            .prop_map(|(records, compressed)| Op::Append { records, compressed }),
        1 => Just(Op::NewEpoch),
        2 => Just(Op::Roll),
        4 => (0i64..800).prop_map(|advance_ms| Op::Clean { advance_ms }),
        3 => (crash, 0i64..800).prop_map(|(point, advance_ms)| Op::Crash { point, advance_ms }),
        1 => any::<bool>().prop_map(|clean| Op::Reopen { clean }),
    ]
}

fn run(ops: Vec<Op>, min_ratio: f64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t-0");
    let mut now = 1_000_000i64;
    let mut log = Log::open(&path, config(min_ratio), now).expect("open");
    let mut model = Model::default();
    let mut epoch = 0;
    log.assign_epoch(epoch, 0).expect("epoch");
    for op in ops {
        match op {
            Op::Append { records, compressed } => {
                now += 10;
                let compression = if compressed {
                    Compression::Gzip
                } else {
                    Compression::None
                };
                let mut bytes = encode(&records, now, compression);
                let info = log.append_as_leader(&mut bytes, epoch, now).expect("append");
                for (i, r) in records.into_iter().enumerate() {
                    let offset = info.first_offset + i as i64;
                    if let Some(k) = r.0 {
                        model.latest.insert(k, offset);
                    }
                    model.written.insert(offset, r);
                }
                model.log_end = info.last_offset + 1;
            }
            Op::NewEpoch => {
                epoch += 1;
                log.assign_epoch(epoch, log.log_end_offset()).expect("epoch");
            }
            Op::Roll => log.roll(now).expect("roll"),
            Op::Clean { advance_ms } => {
                now += advance_ms;
                let epochs = log.epoch_entries();
                log.clean(now).expect("clean");
                assert_eq!(log.epoch_entries(), epochs, "cleaning moves no epoch");
            }
            Op::Crash { point, advance_ms } => {
                now += advance_ms;
                log.clean_and_crash(now, point).expect("clean");
                drop(log);
                log = Log::open(&path, config(min_ratio), now).expect("reopen after a crash mid-clean");
            }
            Op::Reopen { clean } => {
                if clean {
                    log.close().expect("close");
                }
                drop(log);
                log = Log::open(&path, config(min_ratio), now).expect("reopen");
            }
        }
        model.check(&log, false);
    }
    // Everything sealed and cleaned, then cleaned again once the tombstones' time is up.
    drop(log);
    let log = Log::open(&path, config(0.0), now).expect("reopen");
    log.roll(now).expect("roll");
    log.clean(now).expect("clean");
    model.check(&log, false);
    now += DELETE_RETENTION_MS + 1;
    log.clean(now).expect("clean");
    model.check(&log, true);

    // A follower copying the cleaned leader accepts its gaps and ends with the same batches.
    let follower = Log::open(dir.path().join("t-0-follower"), config(0.5), now).expect("open follower");
    let leader_batches = read_batches(&log);
    for (_, bytes) in &leader_batches {
        follower.append_as_follower(bytes, now).expect("follower append");
    }
    assert_eq!(read_batches(&follower), leader_batches);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn compaction_keeps_the_latest_value_of_every_key_through_crashes(
        ops in proptest::collection::vec(op(), 1..60),
        eager in any::<bool>(),
    ) {
        run(ops, if eager { 0.0 } else { 0.5 });
    }
}

fn append(log: &Log, records_: &[Written], epoch: i32, now: i64) -> i64 {
    let mut bytes = encode(records_, now, Compression::None);
    log.append_as_leader(&mut bytes, epoch, now)
        .expect("append")
        .first_offset
}

#[test]
fn a_clean_keeps_the_latest_record_per_key_and_shrinks_the_segment_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = Log::open(dir.path().join("t-0"), config(0.5), 0).expect("open");
    for round in 0..20u8 {
        append(&log, &[(Some(round % 3), Some(vec![round]))], 0, i64::from(round));
        log.roll(i64::from(round)).expect("roll");
    }
    let before = log.segments().len();
    let stats = log.clean(100).expect("clean").expect("due");
    assert_eq!(stats.records_removed, 17);
    assert!(
        log.segments().len() < before,
        "{} segments, {} before",
        log.segments().len(),
        before
    );
    let offsets: Vec<i64> = read_batches(&log)
        .iter()
        .flat_map(|(_, b)| records::decode(b).expect("decodes"))
        .map(|r| r.offset)
        .collect();
    assert_eq!(offsets, vec![17, 18, 19]);
    assert_eq!(log.log_end_offset(), 20);
    assert_eq!(log.first_dirty_offset(), 20);
    // Nothing dirty: the next clean has nothing to do.
    assert_eq!(log.clean(200).expect("clean"), None);
}

/// The keys and offsets of every record left in the log.
fn kept(log: &Log) -> Vec<(Option<Vec<u8>>, i64)> {
    read_batches(log)
        .iter()
        .flat_map(|(_, b)| records::decode(b).expect("decodes"))
        .map(|r| (r.key.map(|k| k.to_vec()), r.offset))
        .collect()
}

#[test]
fn a_replica_cleans_only_below_its_high_watermark() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = Log::open(dir.path().join("t-0"), config(0.0), 0).expect("open");
    // Key 1 at offsets 0..=3 in four sealed segments; the HW is 2: offsets 2 and 3 may still be
    // truncated away by a new leader, so they must not remove offset 1's value.
    for v in 0..4u8 {
        append(&log, &[(Some(1), Some(vec![v]))], 0, 0);
        log.roll(0).expect("roll");
    }
    let stats = log.clean_below(0, 2).expect("clean").expect("due");
    assert_eq!(stats.end_offset, 2, "{stats:?}");
    assert_eq!(
        kept(&log).iter().map(|(_, o)| *o).collect::<Vec<_>>(),
        vec![1, 2, 3],
        "offset 0 is superseded by the committed offset 1; 2 and 3 do not count yet"
    );
    // Once the HW passes them, they do.
    log.clean_below(0, 4).expect("clean");
    assert_eq!(kept(&log).iter().map(|(_, o)| *o).collect::<Vec<_>>(), vec![3]);
}

#[test]
fn a_full_key_map_cleans_in_several_passes_and_loses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = Log::open(dir.path().join("t-0"), config(0.0), 0).expect("open");
    // Ten segments of 20 distinct keys each, then the same 200 keys again: every one of the
    // first 200 records is superseded. A map room for about two segments' keys cleans in
    // passes of a couple of segments each.
    for round in 0..2 {
        for seg in 0..10u8 {
            let batch: Vec<Written> = (0..20u8).map(|k| (Some(seg * 20 + k), Some(vec![round]))).collect();
            append(&log, &batch, 0, 0);
            log.roll(0).expect("roll");
        }
    }
    let map_limit = 2 * 20 * (1 + 64) + 10;
    let first = log.clean_with_map_limit(0, map_limit).expect("clean").expect("due");
    assert!(
        first.end_offset < 400,
        "the first pass stops where the map filled: {first:?}"
    );
    let mut passes = 1;
    while log.first_dirty_offset() < 400 {
        log.clean_with_map_limit(0, map_limit).expect("clean");
        passes += 1;
        assert!(passes < 50, "the passes make progress");
    }
    assert!(passes > 2, "{passes} passes");
    // The latest record of every key, and nothing else.
    let left = kept(&log);
    assert_eq!(left.len(), 200, "{left:?}");
    assert!(left.iter().all(|(_, offset)| *offset >= 200));
}

#[test]
fn a_fetch_inside_a_gap_returns_the_next_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = Log::open(dir.path().join("t-0"), config(0.0), 0).expect("open");
    for v in 0..6u8 {
        append(&log, &[(Some(v % 2), Some(vec![v]))], 0, 0);
    }
    log.roll(0).expect("roll");
    log.clean(0).expect("clean");
    // Offsets 0..=3 are superseded by 4 and 5: a gap.
    let data = log.read(1, 1 << 20, None).expect("read");
    let first = batch::Batches::new(&data.records)
        .next()
        .expect("a batch")
        .expect("valid")
        .1;
    assert_eq!(first.base_offset, 4);
    let at = log.offset_for_timestamp(0).expect("lookup").expect("found");
    assert_eq!(at.offset, 4);
}

#[test]
fn a_tombstone_survives_the_first_clean_and_goes_after_delete_retention() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = Log::open(dir.path().join("t-0"), config(0.0), 0).expect("open");
    append(&log, &[(Some(1), Some(b"a".to_vec()))], 0, 0);
    append(&log, &[(Some(1), None)], 0, 0);
    append(&log, &[(Some(2), Some(b"b".to_vec()))], 0, 0);
    log.roll(0).expect("roll");
    let stats = log.clean(10).expect("clean").expect("due");
    assert_eq!((stats.records_removed, stats.tombstones_removed), (1, 0));
    let keys = |log: &Log| -> Vec<(i64, bool)> {
        read_batches(log)
            .iter()
            .flat_map(|(_, b)| records::decode(b).expect("decodes"))
            .map(|r| (r.offset, r.value.is_some()))
            .collect()
    };
    assert_eq!(keys(&log), vec![(1, false), (2, true)]);
    assert_eq!(log.clean(10 + DELETE_RETENTION_MS - 1).expect("clean"), None);
    let stats = log
        .clean(10 + DELETE_RETENTION_MS)
        .expect("clean")
        .expect("tombstones due");
    assert_eq!(stats.tombstones_removed, 1);
    assert_eq!(keys(&log), vec![(2, true)]);
}

#[test]
fn the_last_batch_of_each_producer_stays_even_when_emptied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = Log::open(dir.path().join("t-0"), config(0.0), 0).expect("open");
    let idempotent = |seq: i32, value: &[u8]| {
        let mut r = records::record(
            0,
            0,
            Some(Bytes::from_static(&[b'k', 1])),
            Some(Bytes::copy_from_slice(value)),
        );
        r.producer_id = 7;
        r.producer_epoch = 0;
        r.sequence = seq;
        let mut b = records::encode_batch(&[r], Compression::None)
            .expect("encodes")
            .to_vec();
        log.append_as_leader(&mut b, 0, 0).expect("append");
    };
    idempotent(0, b"a");
    idempotent(1, b"b");
    append(&log, &[(Some(1), Some(b"c".to_vec()))], 0, 0);
    append(&log, &[(Some(1), Some(b"d".to_vec()))], 0, 0);
    log.roll(0).expect("roll");
    append(&log, &[(Some(1), Some(b"d".to_vec()))], 0, 0);
    append(&log, &[(Some(1), Some(b"k".to_vec()))], 0, 0);
    log.roll(0).expect("roll");
    log.clean(0).expect("clean");
    let headers: Vec<BatchHeader> = read_batches(&log).into_iter().map(|(h, _)| h).collect();
    let producer_batches: Vec<_> = headers
        .iter()
        .filter(|h| h.producer_id == 7)
        .map(|h| (h.base_offset, h.records_count, h.base_sequence))
        .collect();
    assert_eq!(producer_batches, vec![(1, 0, 1)], "{headers:?}");
}

#[test]
fn a_crash_at_any_step_of_the_swap_loses_nothing_and_leaves_no_temporary_file() {
    for point in [
        CrashPoint::AfterCleaned,
        CrashPoint::AfterSwap,
        CrashPoint::AfterDeletingOld,
        CrashPoint::BeforeCheckpoint,
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t-0");
        let log = Log::open(&path, config(0.0), 0).expect("open");
        for v in 0..12u8 {
            append(&log, &[(Some(v % 3), Some(vec![v]))], 0, 0);
            if v % 2 == 1 {
                log.roll(0).expect("roll");
            }
        }
        log.clean_and_crash(0, point).expect("clean");
        drop(log);
        let log = Log::open(&path, config(0.0), 0).expect("reopen");
        let leftovers: Vec<String> = std::fs::read_dir(&path)
            .expect("list")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap"))
            .collect();
        assert!(leftovers.is_empty(), "{point:?}: {leftovers:?}");
        let values: Vec<(i64, u8)> = read_batches(&log)
            .iter()
            .flat_map(|(_, b)| records::decode(b).expect("decodes"))
            .map(|r| (r.offset, r.value.expect("value")[0]))
            .collect();
        let kept_by_clean = vec![(9, 9), (10, 10), (11, 11)];
        if point == CrashPoint::AfterCleaned {
            assert_eq!(values.len(), 12, "{point:?}: the clean never committed");
        } else {
            // The first group's swap completed; later groups may still wait for the next clean.
            assert!(
                values.len() < 12 && values.ends_with(&kept_by_clean),
                "{point:?}: {values:?}"
            );
        }
        log.clean(0).expect("clean again");
        assert_eq!(
            read_batches(&log)
                .iter()
                .flat_map(|(_, b)| records::decode(b).expect("decodes"))
                .map(|r| (r.offset, r.value.expect("value")[0]))
                .collect::<Vec<_>>(),
            kept_by_clean
        );
    }
}
