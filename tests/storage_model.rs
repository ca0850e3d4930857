//! Model-based test of the partition log: random sequences of append / read / truncate /
//! roll / reopen / retention / delete-records / timestamp lookups against an in-memory model.
//! After every step the whole log is read back and must equal the model byte for byte.

mod common;

use common::{producer_batch, read_all, split};
use kdeck::storage::{EpochEntry, Log, LogConfig, LogError};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Append { count: usize, value_len: usize },
    NewLeaderEpoch,
    Read { pick: u64, max_bytes: usize },
    Truncate { pick: u64 },
    Roll,
    Reopen { clean: bool },
    Retention { hw_pick: u64, advance_ms: i64 },
    DeleteRecords { pick: u64 },
    OffsetForTimestamp { pick: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (1usize..6, 0usize..300).prop_map(|(count, value_len)| Op::Append { count, value_len }),
        1 => Just(Op::NewLeaderEpoch),
        3 => (any::<u64>(), 1usize..2000).prop_map(|(pick, max_bytes)| Op::Read { pick, max_bytes }),
        2 => any::<u64>().prop_map(|pick| Op::Truncate { pick }),
        1 => Just(Op::Roll),
        2 => any::<bool>().prop_map(|clean| Op::Reopen { clean }),
        1 => (any::<u64>(), 0i64..20_000).prop_map(|(hw_pick, advance_ms)| Op::Retention { hw_pick, advance_ms }),
        1 => any::<u64>().prop_map(|pick| Op::DeleteRecords { pick }),
        1 => any::<u64>().prop_map(|pick| Op::OffsetForTimestamp { pick }),
    ]
}

struct ModelBatch {
    base: i64,
    next: i64,
    first_timestamp: i64,
    bytes: Vec<u8>,
}

#[derive(Default)]
struct Model {
    batches: Vec<ModelBatch>,
    log_start: i64,
    log_end: i64,
    epochs: Vec<(i32, i64)>,
    epoch: i32,
    clock: i64,
}

impl Model {
    fn assign_epoch(&mut self, epoch: i32, start: i64) {
        if self.epochs.last().is_some_and(|&(e, s)| e == epoch && start >= s) {
            return;
        }
        self.epochs.retain(|&(e, s)| e < epoch && s < start);
        self.epochs.push((epoch, start));
    }

    fn reset_at(&mut self, offset: i64) {
        self.batches.clear();
        self.log_start = offset;
        self.log_end = offset;
        self.epochs.clear();
    }

    /// The log start moved up: batches wholly below it are gone, epochs follow Kafka's
    /// `truncateFromStart`.
    fn start_at(&mut self, start: i64) {
        self.log_start = start;
        self.batches.retain(|b| b.next > start);
        let below = self.epochs.iter().take_while(|&&(_, s)| s <= start).count();
        if below > 0 {
            let epoch = self.epochs[below - 1].0;
            self.epochs.drain(..below);
            self.epochs.insert(0, (epoch, start));
        }
    }

    fn pick(&self, pick: u64, lo: i64, hi: i64) -> i64 {
        lo + (pick % (hi - lo + 1) as u64) as i64
    }
}

fn config(segment_bytes: u64, index_interval_bytes: u64, retention_bytes: i64, retention_ms: i64) -> LogConfig {
    LogConfig {
        segment_bytes,
        index_interval_bytes,
        retention_bytes,
        retention_ms,
        ..LogConfig::default()
    }
}

fn check(log: &Log, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(log.log_start_offset(), model.log_start);
    prop_assert_eq!(log.log_end_offset(), model.log_end);
    let epochs: Vec<(i32, i64)> = log
        .epoch_entries()
        .iter()
        .map(|&EpochEntry { epoch, start_offset }| (epoch, start_offset))
        .collect();
    prop_assert_eq!(&epochs, &model.epochs);
    let (read, error) = read_all(log);
    prop_assert!(error.is_none(), "read failed: {:?}", error);
    prop_assert_eq!(read.len(), model.batches.len());
    for ((header, bytes), expected) in read.iter().zip(&model.batches) {
        prop_assert_eq!(header.base_offset, expected.base);
        prop_assert!(bytes == &expected.bytes, "batch at {} differs", expected.base);
    }
    Ok(())
}

fn run(ops: Vec<Op>, cfg: LogConfig) -> Result<(), TestCaseError> {
    let dir = common::scratch_dir();
    let path = dir.path().join("topic-0");
    let mut log = Some(Log::open(&path, cfg.clone(), 0).expect("open"));
    let mut model = Model::default();
    for (step, op) in ops.into_iter().enumerate() {
        let l = log.as_ref().expect("log is open");
        model.clock += 100;
        match op {
            Op::Append { count, value_len } => {
                let mut bytes = producer_batch(count, model.clock, step as u64, value_len);
                let info = l
                    .append_as_leader(&mut bytes, model.epoch, model.clock)
                    .expect("append");
                prop_assert_eq!(info.first_offset, model.log_end);
                prop_assert_eq!(info.last_offset, model.log_end + count as i64 - 1);
                if model.epochs.last().is_none_or(|&(e, _)| model.epoch > e) {
                    model.assign_epoch(model.epoch, model.log_end);
                }
                model.batches.push(ModelBatch {
                    base: model.log_end,
                    next: model.log_end + count as i64,
                    first_timestamp: model.clock,
                    bytes,
                });
                model.log_end += count as i64;
            }
            Op::NewLeaderEpoch => {
                model.epoch += 1;
                l.assign_epoch(model.epoch, model.log_end).expect("assign epoch");
                model.assign_epoch(model.epoch, model.log_end);
            }
            Op::Read { pick, max_bytes } => {
                let offset = model.pick(pick, model.log_start - 1, model.log_end + 1);
                match l.read(offset, max_bytes, None) {
                    Err(LogError::OffsetOutOfRange { .. }) => {
                        prop_assert!(offset < model.log_start || offset > model.log_end);
                    }
                    Err(e) => prop_assert!(false, "read at {} failed: {}", offset, e),
                    Ok(data) => {
                        prop_assert!(offset >= model.log_start && offset <= model.log_end);
                        let got = split(&data.records);
                        if offset == model.log_end {
                            prop_assert!(got.is_empty());
                        } else {
                            let first = model
                                .batches
                                .iter()
                                .position(|b| b.next > offset)
                                .expect("a batch holds it");
                            prop_assert!(!got.is_empty());
                            let limit = max_bytes.max(model.batches[first].bytes.len());
                            prop_assert!(data.records.len() <= limit);
                            for (i, (_, bytes)) in got.iter().enumerate() {
                                prop_assert!(bytes == &model.batches[first + i].bytes);
                            }
                        }
                    }
                }
            }
            Op::Truncate { pick } => {
                let to = model.pick(pick, (model.log_start - 3).max(0), model.log_end + 1);
                l.truncate_to(to).expect("truncate");
                // As Kafka's `truncateTo`: even a cut at or past the end drops an epoch that
                // starts at the log end (one a leader assigned and appended nothing under).
                let end = model.log_end;
                model.epochs.retain(|&(_, s)| s < end);
                if to < model.log_end {
                    if to < model.log_start {
                        model.reset_at(to);
                    } else {
                        // A batch that straddles `to` goes whole: the log ends where it began.
                        let end = model.batches.iter().find(|b| b.next > to).map_or(to, |b| b.base);
                        model.batches.retain(|b| b.next <= to);
                        if end < model.log_start {
                            model.reset_at(to);
                        } else {
                            model.log_end = end;
                            model.epochs.retain(|&(_, s)| s < end);
                        }
                    }
                }
            }
            Op::Roll => l.roll(model.clock).expect("roll"),
            Op::Reopen { clean } => {
                let l = log.take().expect("open");
                if clean {
                    l.close().expect("close");
                } else {
                    drop(l);
                }
                log = Some(Log::open(&path, cfg.clone(), model.clock).expect("reopen"));
                // As Kafka's loader does: an epoch that starts at the log end has no batch to
                // vouch for it and is dropped; the next leader election assigns it again.
                let end = model.log_end;
                model.epochs.retain(|&(_, s)| s < end);
            }
            Op::Retention { hw_pick, advance_ms } => {
                let hw = model.pick(hw_pick, model.log_start, model.log_end);
                let before = model.log_start;
                let outcome = l.enforce_retention(model.clock + advance_ms, hw).expect("retention");
                let start = outcome.log_start_offset;
                prop_assert!(start >= before);
                prop_assert!(start <= before.max(hw), "retention passed the high watermark");
                prop_assert!(
                    start == before || start == model.log_end || model.batches.iter().any(|b| b.base == start),
                    "log start {} is not a batch boundary",
                    start
                );
                model.start_at(start);
            }
            Op::DeleteRecords { pick } => {
                let offset = model.pick(pick, model.log_start, model.log_end);
                let start = l
                    .delete_records(offset, model.log_end, model.clock)
                    .expect("delete records");
                prop_assert_eq!(start, offset.max(model.log_start));
                model.start_at(start);
            }
            Op::OffsetForTimestamp { pick } => {
                let target = model.pick(pick, 0, model.clock + 10);
                let expected = model.batches.iter().find_map(|b| {
                    (b.base..b.next)
                        .map(|o| (o, b.first_timestamp + (o - b.base)))
                        .find(|&(o, ts)| o >= model.log_start && ts >= target)
                });
                let got = l
                    .offset_for_timestamp(target)
                    .expect("lookup")
                    .map(|t| (t.offset, t.timestamp));
                prop_assert_eq!(got, expected, "first record at or after {}", target);
            }
        }
        check(log.as_ref().expect("open"), &model)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn log_behaves_like_its_model(
        ops in prop::collection::vec(op(), 1..60),
        segment_bytes in 300u64..3000,
        index_interval in 1u64..600,
        retention_bytes in prop_oneof![Just(-1i64), 500i64..4000],
        retention_ms in prop_oneof![Just(-1i64), 1000i64..10_000],
    ) {
        run(ops, config(segment_bytes, index_interval, retention_bytes, retention_ms))?;
    }
}
