//! Message tails of the embedded cluster: an in-process consumer fills the bounded buffer
//! the console reads, from where the tail's seek says, up to where a search ends. A ring
//! (following the end) has one consumer for its partitions and keeps their records as they
//! come; a window (the browser, a search) has one per partition and hands records on in the
//! time order both sources share (`view::merge`). The consumer hands out the transaction
//! markers too: a record written in a transaction is open until its producer's marker comes,
//! and read_committed reads up to the last stable offset without aborted records.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::client::consumer::{Consumer, ConsumerConfig, ConsumerRecord, OffsetReset};
use crate::engine::{Cluster, ErrorCode, IsolationLevel, OffsetSpec, TopicPartition};
use crate::view::merge::{PartitionRead, PartitionReader, read_in_time_order};
use crate::view::outcome;
use crate::view::source::settle_read;
use crate::view::{SeekPosition, TailBuffer, TailFeed, TailHandle, TailMode, TailRecord, TailSpec, TxnMark, TxnMarker};

/// Starts a tail on `cluster`: what [`super::Embedded`]'s `tail` does, for a cluster started
/// without the rest of the console (tests, benchmarks).
pub fn tail_cluster(cluster: &Cluster, spec: TailSpec, capacity: usize) -> TailHandle {
    tail_on(&tokio::runtime::Handle::current(), cluster, spec, capacity)
}

/// A tail whose consumer runs on `runtime` (the cluster's).
pub(super) fn tail_on(
    runtime: &tokio::runtime::Handle,
    cluster: &Cluster,
    spec: TailSpec,
    capacity: usize,
) -> TailHandle {
    let buffer = Arc::new(TailBuffer::with_mode(capacity, spec.mode));
    runtime.spawn(tail_loop(cluster.clone(), spec.clone(), Arc::clone(&buffer)));
    TailHandle { spec, buffer }
}

/// How long the tail waits before asking again for a partition's bounds.
const TAIL_RETRY: Duration = Duration::from_millis(500);
/// How long one read waits for records at the end of the log.
const READ_WAIT: Duration = Duration::from_millis(500);

/// The isolation level a tail reads at.
fn isolation(spec: &TailSpec) -> IsolationLevel {
    if spec.read_committed {
        IsolationLevel::ReadCommitted
    } else {
        IsolationLevel::ReadUncommitted
    }
}

/// The log start and the end of a partition, as a consumer at `isolation` sees them (the
/// HW, or the last stable offset for read_committed).
async fn log_bounds(
    cluster: &Cluster,
    tp: &TopicPartition,
    isolation: IsolationLevel,
) -> Result<(i64, i64), ErrorCode> {
    let start = cluster.list_offset(tp, OffsetSpec::Earliest).await?;
    let end = cluster.list_offset_isolated(tp, OffsetSpec::Latest, isolation).await?;
    Ok((start, end))
}

async fn tail_loop(cluster: Cluster, spec: TailSpec, buffer: Arc<TailBuffer>) {
    let partitions: Vec<i32> = match cluster.metadata().topics.get(&spec.topic) {
        Some(t) => match spec.partition {
            Some(p) if p >= 0 && (p as usize) < t.partitions.len() => vec![p],
            Some(p) => {
                buffer.set_error(Some(outcome::no_such_partition(&spec.topic, p)));
                return;
            }
            None => (0..t.partitions.len() as i32).collect(),
        },
        None => {
            buffer.set_error(Some(outcome::no_such_topic(&spec.topic)));
            return;
        }
    };
    let tps: Vec<TopicPartition> = partitions
        .iter()
        .map(|p| TopicPartition::new(&spec.topic, *p))
        .collect();
    let mut log_starts = Vec::new();
    // A search's end offsets: where each partition's reading stops.
    let mut ends: HashMap<i32, i64> = HashMap::new();
    let mut bounds_of = HashMap::new();
    for tp in &tps {
        let bounds = loop {
            match log_bounds(&cluster, tp, isolation(&spec)).await {
                Ok(bounds) => break Some(bounds),
                // A search cannot start without knowing where it ends: wait for a leader.
                Err(e) if spec.until_end => {
                    buffer.set_error(Some(format!("finding the end of {tp}: {e:?}")));
                    if buffer.is_closed() {
                        return;
                    }
                    tokio::time::sleep(TAIL_RETRY).await;
                }
                Err(_) => break None,
            }
        };
        if let Some((start, end)) = bounds {
            log_starts.push((tp.partition, start));
            if spec.until_end {
                ends.insert(tp.partition, end);
            }
        }
        bounds_of.insert(tp.partition, bounds);
    }
    buffer.set_error(None);
    buffer.set_log_starts(log_starts);
    if spec.mode == TailMode::Window {
        // A window reads each partition on its own and hands on in the shared time order.
        let mut readers = Vec::with_capacity(tps.len());
        for tp in tps {
            let mut consumer = tail_consumer(&cluster, &spec);
            consumer.assign(vec![tp.clone()]);
            let bounds = bounds_of.get(&tp.partition).copied().flatten();
            position(&mut consumer, &tp, spec.start, bounds, &buffer).await;
            readers.push(PartitionConsumer {
                cluster: cluster.clone(),
                isolation: isolation(&spec),
                end: ends.get(&tp.partition).copied(),
                tp,
                consumer,
            });
        }
        read_in_time_order(readers, &spec, buffer).await;
        return;
    }
    let mut consumer = tail_consumer(&cluster, &spec);
    consumer.assign(tps.clone());
    for tp in &tps {
        let bounds = bounds_of.get(&tp.partition).copied().flatten();
        position(&mut consumer, tp, spec.start, bounds, &buffer).await;
    }
    let mut feed = TailFeed::new(Arc::clone(&buffer), &spec);
    // The partitions a search has not read to their end yet.
    let mut reading = tps;
    while !buffer.is_closed() {
        if feed.is_waiting() {
            feed.wait_for_room().await;
            continue;
        }
        if spec.until_end {
            let before = reading.len();
            reading.retain(|tp| {
                let end = ends.get(&tp.partition).copied().unwrap_or(i64::MAX);
                consumer.position(tp).is_none_or(|at| at < end)
            });
            if reading.is_empty() {
                buffer.set_done();
                return;
            }
            if reading.len() < before {
                consumer.assign(reading.clone());
            }
        }
        match consumer.poll(READ_WAIT).await {
            Ok(records) => {
                buffer.set_error(None);
                // A search reads up to its end offsets, even when more has arrived since.
                let before_end =
                    |r: &ConsumerRecord| !spec.until_end || ends.get(&r.partition).is_some_and(|end| r.offset < *end);
                let (records, markers) = tail_records(records.into_iter().filter(before_end), spec.read_committed);
                feed.offer(records);
                feed.settle(&markers);
            }
            Err(e) => {
                buffer.set_error(Some(e.to_string()));
                tokio::time::sleep(TAIL_RETRY).await;
            }
        }
    }
}

/// The consumer a tail reads with: a ring follows the end; a window that retention
/// overtakes goes on from what is left rather than skip everything. It reads at the tail's
/// isolation level and hands out the transaction markers.
fn tail_consumer(cluster: &Cluster, spec: &TailSpec) -> Consumer {
    let mut consumer = Consumer::new(
        cluster.clone(),
        ConsumerConfig {
            group_id: None,
            auto_offset_reset: match spec.mode {
                TailMode::Ring => OffsetReset::Latest,
                TailMode::Window => OffsetReset::Earliest,
            },
            enable_auto_commit: false,
            fetch_max_wait_ms: 250,
            max_poll_records: 500,
            isolation_level: isolation(spec),
            ..ConsumerConfig::default()
        },
    );
    consumer.deliver_markers();
    consumer
}

/// Puts `consumer` (assigned `tp`) where the tail starts in `tp`, within the log's
/// `bounds` (start, end) when known.
async fn position(
    consumer: &mut Consumer,
    tp: &TopicPartition,
    start: SeekPosition,
    bounds: Option<(i64, i64)>,
    buffer: &TailBuffer,
) {
    let positioned = match (start, bounds) {
        (SeekPosition::Beginning, _) => consumer.seek_to_beginning(tp),
        (SeekPosition::End, _) => consumer.seek_to_end(tp),
        (SeekPosition::Timestamp(t), _) => consumer.seek_to_timestamp(tp, t.timestamp_millis()).await,
        (SeekPosition::Offset(_) | SeekPosition::Last(_), Some((first, end))) => {
            consumer.seek(tp, start.within(first, end).unwrap_or(end))
        }
        (SeekPosition::Offset(o), None) => consumer.seek(tp, o.max(0)),
        (SeekPosition::Last(_), None) => consumer.seek_to_end(tp),
    };
    if let Err(e) = positioned {
        buffer.set_error(Some(format!("seeking {tp}: {e}")));
    }
}

/// The records of one read (in offset order) and the markers among them, the records marked
/// by those markers. Read as read_committed, a transactional record is committed: only those
/// below the last stable offset and not aborted come.
fn tail_records(
    read: impl IntoIterator<Item = ConsumerRecord>,
    read_committed: bool,
) -> (Vec<TailRecord>, Vec<TxnMarker>) {
    let mut records = Vec::new();
    let mut markers = Vec::new();
    for r in read {
        if let Some(committed) = r.marker {
            markers.push(TxnMarker {
                partition: r.partition,
                producer_id: r.producer_id,
                offset: r.offset,
                committed,
            });
            continue;
        }
        let txn = r.transactional.then_some(if read_committed {
            TxnMark::Committed
        } else {
            TxnMark::Open
        });
        records.push(TailRecord {
            partition: r.partition,
            offset: r.offset,
            timestamp: r.timestamp,
            key: r.key,
            value: r.value,
            headers: r.headers,
            producer_id: r.producer_id,
            txn,
        });
    }
    settle_read(&mut records, &markers);
    (records, markers)
}

/// One partition of a window, read by a consumer of its own.
struct PartitionConsumer {
    cluster: Cluster,
    isolation: IsolationLevel,
    tp: TopicPartition,
    consumer: Consumer,
    /// A search's end offset in this partition.
    end: Option<i64>,
}

impl PartitionReader for PartitionConsumer {
    fn partition(&self) -> i32 {
        self.tp.partition
    }

    async fn read(&mut self) -> Result<PartitionRead, String> {
        let reached =
            |position: Option<i64>, end: Option<i64>| matches!((position, end), (Some(at), Some(end)) if at >= end);
        if reached(self.consumer.position(&self.tp), self.end) {
            return Ok(PartitionRead {
                records: Vec::new(),
                at_end: true,
                done: true,
                markers: Vec::new(),
            });
        }
        let records = self.consumer.poll(READ_WAIT).await.map_err(|e| e.to_string())?;
        // A search reads up to its end offset, even when more has arrived since.
        let stop = self.end.unwrap_or(i64::MAX);
        let (records, markers) = tail_records(
            records.into_iter().filter(|r| r.offset < stop),
            self.isolation == IsolationLevel::ReadCommitted,
        );
        let position = self.consumer.position(&self.tp);
        // Records already read are handed on even when the end cannot be learned now.
        let at_end = match self
            .cluster
            .list_offset_isolated(&self.tp, OffsetSpec::Latest, self.isolation)
            .await
        {
            Ok(high_watermark) => position.is_some_and(|at| at >= high_watermark),
            Err(_) => false,
        };
        Ok(PartitionRead {
            records,
            at_end,
            done: reached(position, self.end),
            markers,
        })
    }
}
