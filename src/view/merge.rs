//! Browsing several partitions as one: the order both sources give a window's or a search's
//! records (by timestamp, ties by partition then offset) and the reading loop that keeps it
//! over each source's partition readers. Both sources run this one loop, so the embedded
//! cluster and an external one show the same first page and find the same matches.
//!
//! The rule is a merge of the partitions' own sequences: a record is handed on only once
//! every partition that may still hold an earlier one has shown its next record or said it
//! has nothing more now (its reader reached the high watermark). A partition whose reads
//! keep failing stops holding the others back after [`GIVE_WAY_AFTER`] failures in a row
//! (its records come later, when it answers again), so one offline partition does not stop
//! the browser.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use super::source::{TailBuffer, TailFeed, TailRecord, TailSpec, TxnMarker};

/// The order of records from several partitions: oldest timestamp first, then the lower
/// partition, then the lower offset.
pub fn time_order(record: &TailRecord) -> (i64, i32, i64) {
    (record.timestamp, record.partition, record.offset)
}

/// What one read of one partition brought.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionRead {
    /// In offset order, from the reader's position on.
    pub records: Vec<TailRecord>,
    /// The reader's position reached the partition's end (its high watermark) as the broker
    /// told it with this read: nothing more is there now.
    pub at_end: bool,
    /// A search reached the end offset the partition had when it started: nothing more
    /// will be read from it.
    pub done: bool,
    /// The transaction markers read (not shown as records): they settle the open records
    /// of their producers read before, wherever those wait.
    pub markers: Vec<TxnMarker>,
}

/// One partition of a tail, read by a source: where it starts, how it fetches.
pub trait PartitionReader: Send + 'static {
    fn partition(&self) -> i32;

    /// Reads what follows the reader's position (waiting a while at the end for new
    /// records); an error says why it could not, in words for the pane.
    fn read(&mut self) -> impl Future<Output = Result<PartitionRead, String>> + Send;
}

/// Failed reads in a row after which a partition no longer holds the others back.
pub const GIVE_WAY_AFTER: u32 = 3;

/// The first and the longest wait after a round in which every read failed.
const RETRY: Duration = Duration::from_millis(200);
const RETRY_MAX: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
struct Lane {
    queue: VecDeque<TailRecord>,
    at_end: bool,
    done: bool,
}

/// Records read from several partitions, handed on in [`time_order`] as far as what was
/// read allows.
#[derive(Debug, Default)]
pub struct TimeOrder {
    lanes: BTreeMap<i32, Lane>,
}

impl TimeOrder {
    pub fn new(partitions: impl IntoIterator<Item = i32>) -> TimeOrder {
        TimeOrder {
            lanes: partitions.into_iter().map(|p| (p, Lane::default())).collect(),
        }
    }

    /// Takes one read of `partition`.
    pub fn push(&mut self, partition: i32, read: PartitionRead) {
        let lane = self.lanes.entry(partition).or_default();
        lane.queue.extend(read.records);
        for m in &read.markers {
            m.settle(lane.queue.iter_mut());
        }
        lane.at_end = read.at_end;
        lane.done |= read.done;
    }

    /// `partition` cannot be read now: the others go on without waiting for it.
    pub fn give_way(&mut self, partition: i32) {
        if let Some(lane) = self.lanes.get_mut(&partition) {
            lane.at_end = true;
        }
    }

    /// The partitions whose next record must be read before anything more can be handed
    /// on: nothing of theirs is waiting, and they may hold more.
    pub fn waiting_for(&self) -> Vec<i32> {
        self.lanes
            .iter()
            .filter(|(_, l)| l.queue.is_empty() && !l.at_end && !l.done)
            .map(|(p, _)| *p)
            .collect()
    }

    /// The partitions that may still bring records.
    pub fn open(&self) -> Vec<i32> {
        self.lanes.iter().filter(|(_, l)| !l.done).map(|(p, _)| *p).collect()
    }

    /// The next record in order, if what was read allows to say which it is.
    pub fn pop(&mut self) -> Option<TailRecord> {
        if !self.waiting_for().is_empty() {
            return None;
        }
        let (_, lane) = self
            .lanes
            .iter_mut()
            .filter(|(_, l)| !l.queue.is_empty())
            .min_by_key(|(_, l)| l.queue.front().map(time_order))?;
        lane.queue.pop_front()
    }

    /// Every partition is done and every record handed on.
    pub fn is_done(&self) -> bool {
        self.lanes.values().all(|l| l.done && l.queue.is_empty())
    }
}

/// Fills `buffer` (a window) with the records of `readers` in [`time_order`]: reads the
/// partitions the order waits for (all of them at once), hands on what is in order as far as
/// the window has room, and for a search says done once every partition reached its end.
/// Returns when the tail is closed or the search is done.
pub async fn read_in_time_order<R: PartitionReader>(readers: Vec<R>, spec: &TailSpec, buffer: Arc<TailBuffer>) {
    let mut order = TimeOrder::new(readers.iter().map(PartitionReader::partition));
    let mut idle: BTreeMap<i32, R> = readers.into_iter().map(|r| (r.partition(), r)).collect();
    let mut feed = TailFeed::new(Arc::clone(&buffer), spec);
    let mut failures: BTreeMap<i32, (u32, String)> = BTreeMap::new();
    let mut retry = RETRY;
    while !buffer.is_closed() {
        if feed.is_waiting() {
            feed.wait_for_room().await;
            continue;
        }
        // A full window still takes one at a time: records the filter drops are counted as
        // scanned, and a match that does not fit waits in the feed (counted as matched).
        let room = buffer.room().max(1);
        let ready: Vec<TailRecord> = std::iter::from_fn(|| order.pop()).take(room).collect();
        if !ready.is_empty() {
            feed.offer(ready);
            continue;
        }
        if order.is_done() {
            if spec.until_end {
                buffer.set_done();
            }
            return;
        }
        // Nothing in order yet: read what it waits for; when it waits for nothing, every
        // partition is at its end and all of them wait for new records.
        let mut ask = order.waiting_for();
        if ask.is_empty() {
            ask = order.open();
        }
        let mut reads = JoinSet::new();
        for partition in ask {
            if let Some(mut reader) = idle.remove(&partition) {
                reads.spawn(async move {
                    let result = reader.read().await;
                    (reader, result)
                });
            }
        }
        let (mut asked, mut failed) = (0, 0);
        while let Some(joined) = reads.join_next().await {
            // A reader that panicked is gone; its partition is no longer read.
            let Ok((reader, result)) = joined else {
                continue;
            };
            let partition = reader.partition();
            idle.insert(partition, reader);
            asked += 1;
            match result {
                Ok(read) => {
                    failures.remove(&partition);
                    feed.settle(&read.markers);
                    order.push(partition, read);
                }
                Err(error) => {
                    failed += 1;
                    let count = failures.get(&partition).map_or(0, |(n, _)| *n).saturating_add(1);
                    if count >= GIVE_WAY_AFTER {
                        order.give_way(partition);
                    }
                    failures.insert(partition, (count, error));
                }
            }
        }
        buffer.set_error(failures.iter().next().map(|(p, (_, e))| format!("partition {p}: {e}")));
        if asked == 0 && !order.is_done() {
            // Every reader of an open partition is gone: nothing more can come.
            for partition in order.open() {
                order.push(
                    partition,
                    PartitionRead {
                        done: true,
                        at_end: true,
                        ..PartitionRead::default()
                    },
                );
            }
        }
        if asked > 0 && failed == asked {
            tokio::time::sleep(retry).await;
            retry = (retry * 2).min(RETRY_MAX);
        } else {
            retry = RETRY;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(partition: i32, offset: i64, timestamp: i64) -> TailRecord {
        TailRecord {
            partition,
            offset,
            timestamp,
            key: None,
            value: None,
            headers: Vec::new(),
            producer_id: -1,
            txn: None,
        }
    }

    fn read(records: Vec<TailRecord>, at_end: bool) -> PartitionRead {
        PartitionRead {
            records,
            at_end,
            ..PartitionRead::default()
        }
    }

    fn drain(order: &mut TimeOrder) -> Vec<(i32, i64)> {
        std::iter::from_fn(|| order.pop())
            .map(|r| (r.partition, r.offset))
            .collect()
    }

    #[test]
    fn records_come_by_timestamp_then_partition_then_offset() {
        let mut order = TimeOrder::new([0, 1, 2]);
        order.push(2, read(vec![record(2, 0, 10), record(2, 1, 30)], true));
        order.push(0, read(vec![record(0, 0, 20), record(0, 1, 20)], true));
        order.push(1, read(vec![record(1, 0, 10)], true));
        assert_eq!(drain(&mut order), vec![(1, 0), (2, 0), (0, 0), (0, 1), (2, 1)]);
    }

    #[test]
    fn nothing_is_handed_on_while_a_partition_that_may_hold_an_earlier_record_is_unread() {
        let mut order = TimeOrder::new([0, 1]);
        order.push(1, read(vec![record(1, 0, 50)], false));
        assert_eq!(order.waiting_for(), vec![0]);
        assert_eq!(order.pop(), None);
        order.push(0, read(vec![record(0, 0, 40)], false));
        assert_eq!(drain(&mut order), vec![(0, 0)]);
        // Partition 0 is read out but not at its end: it may hold something before 50.
        assert_eq!(order.waiting_for(), vec![0]);
        order.push(0, read(Vec::new(), true));
        assert_eq!(drain(&mut order), vec![(1, 0)]);
        assert_eq!(order.waiting_for(), vec![1]);
    }

    #[test]
    fn a_partition_that_gives_way_no_longer_holds_the_others_back() {
        let mut order = TimeOrder::new([0, 1]);
        order.push(1, read(vec![record(1, 0, 50)], true));
        order.give_way(0);
        assert_eq!(drain(&mut order), vec![(1, 0)]);
    }

    #[test]
    fn a_search_is_done_when_every_partition_is_done_and_handed_on() {
        let mut order = TimeOrder::new([0, 1]);
        let done = |records| PartitionRead {
            records,
            at_end: true,
            done: true,
            markers: Vec::new(),
        };
        order.push(0, done(vec![record(0, 0, 1)]));
        assert!(!order.is_done());
        order.push(1, done(Vec::new()));
        assert!(!order.is_done());
        assert_eq!(drain(&mut order), vec![(0, 0)]);
        assert!(order.is_done());
        assert!(order.open().is_empty());
    }
}
