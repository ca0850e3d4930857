//! Kafka's producer, in process. A record goes to its explicit partition, else to murmur2 of
//! its key over all partitions, else to the topic's sticky partition (KIP-794); records
//! accumulate per partition into one v2 batch until `batch_size` bytes or `linger_ms`, and a
//! sender task per partition delivers the batches to the partition's leader, retrying
//! retriable errors after `retry_backoff_ms` until `delivery_timeout_ms` runs out.
//!
//! With idempotence on, every batch carries the producer id and epoch from InitProducerId and
//! a sequence number per partition, so the leader recognises a retried batch (it is resent
//! byte for byte) and answers with the original offsets instead of writing it twice.
//!
//! **Several batches in flight per partition** (`max_in_flight`, Kafka's
//! `max.in.flight.requests.per.connection`, 5 by default): a batch waiting for its acks=all
//! answer does not hold up the next one. The requests leave in sequence order and the leader
//! appends a partition's produce requests in the order they arrive; answers may come back in
//! any order, but records are resolved in order. Retries follow the Java client's rules for an
//! idempotent producer (see [`Window`]), so order per partition and exactly-once writes hold
//! across leader changes. Without idempotence a retried batch may land behind batches sent
//! after it, as in Kafka; `max_in_flight = 1` rules that out.
//!
//! Differences from the Java client, each forced by the in-process setting or kept simple:
//! - an unknown topic is refused at once (the in-process metadata is authoritative) instead of
//!   waiting `max.block.ms` for it to appear;
//! - with `acks = 0` the engine still answers in-process callers, so a refused batch is
//!   reported (Kafka cannot know); a delivered one has offset -1 as in Kafka, and nothing is
//!   retried, as in Kafka;
//! - record headers must have distinct keys (the batch codec keeps headers in a map);
//! - a batch the broker refuses as too large is failed, not split and retried.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{RecordBatchEncoder, RecordEncodeOptions};
use tokio::sync::{Notify, Semaphore, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::partitioner::{StickyPartitioner, TopicHasher, partition_for_key};
use crate::engine::{Acks, Clock, Cluster, ErrorCode, NO_LEADER, ProduceOutcome, TopicPartition, WallClock};
use crate::storage::batch::RECORD_BATCH_OVERHEAD;
use crate::storage::records::{self, Compression, Record};

/// The most batches an idempotent producer may have in flight per partition (Kafka's limit,
/// the number of batches a leader remembers per producer).
const MAX_IN_FLIGHT_IDEMPOTENT: usize = 5;

/// Producer settings, named after Kafka's and defaulting as in Kafka 4.
#[derive(Debug, Clone)]
pub struct ProducerConfig {
    /// `acks` (default all).
    pub acks: Acks,
    /// `linger.ms` (default 5): how long a batch that is not full waits for more records.
    pub linger_ms: u64,
    /// `batch.size` (default 16384): bytes per batch before it is sent without lingering.
    pub batch_size: usize,
    /// `compression.type` (default none).
    pub compression: Compression,
    /// `enable.idempotence` (default true); needs `acks = all`, as in Kafka.
    pub enable_idempotence: bool,
    /// `delivery.timeout.ms` (default 120000): from enqueue to giving up on a record.
    pub delivery_timeout_ms: u64,
    /// `request.timeout.ms` (default 30000): one produce attempt's limit.
    pub request_timeout_ms: u64,
    /// `retry.backoff.ms` (default 100): the pause before a retry.
    pub retry_backoff_ms: u64,
    /// `buffer.memory` (default 32 MiB): record bytes waiting or in flight before an enqueue
    /// waits for room.
    pub buffer_memory: usize,
    /// `metadata.max.age.ms` (default 300000): how long the partition counts and leaders used
    /// for partitioning are trusted; errors refresh them sooner.
    pub metadata_max_age_ms: u64,
    /// `max.in.flight.requests.per.connection` (default 5), counted per partition here: batches
    /// sent and not yet resolved. At most 5 with idempotence, as in Kafka: a leader remembers
    /// the last 5 batches of a producer to recognise a retried one.
    pub max_in_flight: usize,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            acks: Acks::All,
            linger_ms: 5,
            batch_size: 16_384,
            compression: Compression::None,
            enable_idempotence: true,
            delivery_timeout_ms: 120_000,
            request_timeout_ms: 30_000,
            retry_backoff_ms: 100,
            buffer_memory: 32 * 1024 * 1024,
            metadata_max_age_ms: 300_000,
            max_in_flight: 5,
        }
    }
}

/// A record to produce.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProducerRecord {
    pub topic: String,
    /// Explicit partition; otherwise chosen from the key, or sticky for records without one.
    pub partition: Option<i32>,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    /// Header keys must be distinct.
    pub headers: Vec<(String, Option<Bytes>)>,
    /// CreateTime in ms since the epoch; the producer's clock when unset.
    pub timestamp: Option<i64>,
}

impl ProducerRecord {
    pub fn new(topic: impl Into<String>, value: impl Into<Bytes>) -> Self {
        ProducerRecord {
            topic: topic.into(),
            value: Some(value.into()),
            ..ProducerRecord::default()
        }
    }

    pub fn with_key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    pub fn with_partition(mut self, partition: i32) -> Self {
        self.partition = Some(partition);
        self
    }
}

/// Where an acknowledged record was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMetadata {
    /// Shared by every record of the partition: cloning it costs no allocation.
    pub topic: Arc<str>,
    pub partition: i32,
    /// -1 with `acks = 0`, which learns no offsets.
    pub offset: i64,
    /// The record's CreateTime.
    pub timestamp: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProduceError {
    /// The leader refused the batch with an error that retrying cannot fix.
    #[error("{tp}: the broker refused the batch: {error:?}")]
    Kafka { tp: TopicPartition, error: ErrorCode },
    /// Retriable errors (or a slow queue) used up `delivery.timeout.ms`.
    #[error(
        "{tp}: record expired {elapsed_ms} ms after its batch was created (delivery.timeout.ms); last error {last_error:?}"
    )]
    DeliveryTimeout {
        tp: TopicPartition,
        elapsed_ms: u64,
        last_error: Option<ErrorCode>,
    },
    #[error("topic {0:?} does not exist")]
    UnknownTopic(String),
    #[error("topic {topic:?} has {partitions} partitions, so there is no partition {partition}")]
    UnknownPartition {
        topic: String,
        partition: i32,
        partitions: i32,
    },
    #[error("the record is {size} bytes, more than buffer.memory ({buffer_memory} bytes)")]
    RecordTooLarge { size: usize, buffer_memory: usize },
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    #[error("{tp}: cannot encode the batch: {reason}")]
    Encode { tp: TopicPartition, reason: String },
    /// The producer was closed before the record was accepted or resolved.
    #[error("the producer is closed")]
    Closed,
}

/// How a record ends: where it was written, or why not.
pub type DeliveryResult = Result<RecordMetadata, ProduceError>;

/// Resolves once the record is acknowledged or has failed.
pub type Delivery = oneshot::Receiver<DeliveryResult>;

/// Kafka's producer over an embedded [`Cluster`]. Cheap to clone; the clones share one
/// producer. Dropping the last clone closes it without waiting: what is batched still goes out.
#[derive(Clone)]
pub struct Producer {
    handle: Arc<Handle>,
}

/// What the user's clones share; dropping it starts the close. The sender tasks hold only
/// [`Shared`], so they do not keep a forgotten producer alive.
struct Handle {
    shared: Arc<Shared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        drop(self.shared.begin_close());
    }
}

impl Producer {
    /// Checks the settings as Kafka does and, with idempotence, obtains a producer id.
    pub async fn new(cluster: Cluster, config: ProducerConfig) -> anyhow::Result<Producer> {
        if config.enable_idempotence && config.acks != Acks::All {
            bail!("enable_idempotence needs acks = all, otherwise idempotence cannot be guaranteed");
        }
        if config.delivery_timeout_ms < config.linger_ms.saturating_add(config.request_timeout_ms) {
            bail!(
                "delivery_timeout_ms ({}) must be at least linger_ms + request_timeout_ms ({} + {})",
                config.delivery_timeout_ms,
                config.linger_ms,
                config.request_timeout_ms
            );
        }
        if config.max_in_flight == 0 {
            bail!("max_in_flight must be at least 1");
        }
        if config.enable_idempotence && config.max_in_flight > MAX_IN_FLIGHT_IDEMPOTENT {
            bail!(
                "max_in_flight ({}) must be at most {MAX_IN_FLIGHT_IDEMPOTENT} with idempotence: a leader recognises a \
                 retried batch only among a producer's last {MAX_IN_FLIGHT_IDEMPOTENT}",
                config.max_in_flight
            );
        }
        if config.buffer_memory > Semaphore::MAX_PERMITS {
            bail!("buffer_memory {} is too large", config.buffer_memory);
        }
        let identity = if config.enable_idempotence {
            let (id, epoch) = cluster
                .init_producer_id()
                .await
                .context("InitProducerId for the idempotent producer")?;
            Some(tokio::sync::Mutex::new(ProducerIdentity { id, epoch }))
        } else {
            None
        };
        let shared = Shared {
            memory: Semaphore::new(config.buffer_memory),
            accumulator: Mutex::new(Accumulator {
                closed: false,
                topics: HashMap::default(),
                sticky: StickyPartitioner::new(config.batch_size, partitioner_seed()),
                senders: Vec::new(),
            }),
            closing: AtomicBool::new(false),
            wall: WallClock::new(),
            clock: cluster.clock().clone(),
            identity,
            cluster,
            config,
        };
        Ok(Producer {
            handle: Arc::new(Handle {
                shared: Arc::new(shared),
            }),
        })
    }

    /// Sends one record and waits for its acknowledgement (linger included).
    pub async fn send(&self, record: ProducerRecord) -> DeliveryResult {
        let delivery = self.enqueue(record).await?;
        // The sender is only dropped unresolved when the runtime shuts down under it.
        delivery.await.unwrap_or(Err(ProduceError::Closed))
    }

    /// Adds a record to its partition's batch and returns at once (unless `buffer_memory` is
    /// full, then once there is room), so many records can be in flight. Errors known before
    /// sending (unknown topic or partition, invalid record, closed) are returned here.
    pub async fn enqueue(&self, record: ProducerRecord) -> Result<Delivery, ProduceError> {
        let (tx, rx) = oneshot::channel();
        self.enqueue_delivery(record, Resolver::Channel(tx)).await?;
        Ok(rx)
    }

    /// Like [`Producer::enqueue`], calling `callback` with the outcome instead (Kafka's
    /// `send(record, callback)`). It runs on the partition's sender task, so it must be quick;
    /// a panic in it is caught and logged. When this returns an error the callback is never
    /// called.
    pub async fn enqueue_with_callback(
        &self,
        record: ProducerRecord,
        callback: impl FnOnce(DeliveryResult) + Send + 'static,
    ) -> Result<(), ProduceError> {
        self.enqueue_delivery(record, Resolver::Callback(Box::new(callback)))
            .await
    }

    /// Sends every batch now, linger or not, and waits until every record enqueued before the
    /// call is resolved.
    pub async fn flush(&self) {
        self.handle.shared.flush().await;
    }

    /// Dies on the spot, as a killed process does: its sender tasks stop, nothing more is
    /// sent or retried, and no enqueued record learns its fate (requests already on the
    /// network may still land). This stops the producer for every clone.
    pub fn crash(self) {
        for sender in self.handle.shared.begin_close() {
            sender.abort();
        }
    }

    /// Refuses new records, delivers everything enqueued, and waits for the sender tasks.
    /// This closes the producer for every clone.
    pub async fn close(self) {
        let shared = Arc::clone(&self.handle.shared);
        let senders = shared.begin_close();
        drop(self);
        shared.flush().await;
        for sender in senders {
            // A sender only fails to join when the runtime is shutting down; nothing is left
            // to wait for then.
            let _ = sender.await;
        }
    }

    async fn enqueue_delivery(&self, record: ProducerRecord, resolver: Resolver) -> Result<(), ProduceError> {
        let shared = &self.handle.shared;
        let ProducerRecord {
            topic,
            partition,
            key,
            value,
            headers,
            timestamp,
        } = record;
        // One clock reading per record: it stamps the record and dates the cached metadata.
        let now_ms = shared.wall.now_ms();
        let timestamp = match timestamp {
            Some(t) if t < 0 => {
                return Err(ProduceError::InvalidRecord(format!(
                    "timestamp {t} is negative; leave it unset for the producer's clock"
                )));
            }
            Some(t) => t,
            None => now_ms,
        };
        let fixed = fixed_record_bytes(key.as_deref(), value.as_deref(), &headers);
        let mut pending = records::record(0, timestamp, key, value);
        for (name, value) in headers {
            let name = StrBytes::from_string(name);
            if pending.headers.contains_key(&name) {
                return Err(ProduceError::InvalidRecord(format!(
                    "header {:?} appears twice",
                    name.as_str()
                )));
            }
            pending.headers.insert(name, value);
        }
        // The size the record takes at the start of a batch: what buffer.memory counts and the
        // sticky partitioner adds up.
        let size = record_bytes(fixed, 0, 0);
        let buffer_memory = shared.config.buffer_memory;
        let permits = u32::try_from(size)
            .ok()
            .filter(|_| size <= buffer_memory)
            .ok_or(ProduceError::RecordTooLarge { size, buffer_memory })?;
        let queue = shared.route(&topic, partition, pending.key.as_deref(), size, now_ms)?;
        shared
            .memory
            .acquire_many(permits)
            .await
            .map_err(|_| ProduceError::Closed)?
            .forget();
        let appended = queue.append(
            shared,
            Pending {
                record: pending,
                fixed,
                memory: size,
                resolver,
            },
        );
        if appended.is_err() {
            shared.memory.add_permits(size);
        }
        appended
    }
}

/// Picks the sticky partitioner's seed: Kafka chooses sticky partitions at random, and
/// producers started together should not all pick the same ones.
fn partitioner_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ProducerIdentity {
    id: i64,
    epoch: i16,
}

struct Shared {
    cluster: Cluster,
    config: ProducerConfig,
    /// Record timestamps.
    wall: WallClock,
    /// Linger, retries, request and delivery timeouts: the cluster's clock, so a frozen
    /// cluster times none of them out.
    clock: Clock,
    /// The producer id and epoch new batches are stamped with; `None` without idempotence.
    /// An async lock, because replacing the identity waits for InitProducerId.
    identity: Option<tokio::sync::Mutex<ProducerIdentity>>,
    /// `buffer.memory`: one permit per record byte waiting or in flight.
    memory: Semaphore,
    accumulator: Mutex<Accumulator>,
    /// Set once, under the accumulator lock; read by the senders without it.
    closing: AtomicBool,
}

struct Accumulator {
    closed: bool,
    topics: HashMap<String, TopicEntry, TopicHasher>,
    sticky: StickyPartitioner,
    senders: Vec<JoinHandle<()>>,
}

/// What the producer knows of a topic, and its partitions' queues.
struct TopicEntry {
    partitions: i32,
    /// Partitions with a leader, for the sticky partitioner.
    available: Vec<i32>,
    /// When the metadata was read, on the producer's clock.
    refreshed_ms: i64,
    /// An error said the leaders moved: refresh before the next record.
    stale: bool,
    queues: Vec<Option<Arc<PartitionQueue>>>,
}

impl Shared {
    fn accumulator(&self) -> MutexGuard<'_, Accumulator> {
        self.accumulator.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// The queue of the partition a record goes to (explicit, by key, or sticky), its sender
    /// started on first use.
    fn route(
        self: &Arc<Self>,
        topic: &str,
        partition: Option<i32>,
        key: Option<&[u8]>,
        size: usize,
        now_ms: i64,
    ) -> Result<Arc<PartitionQueue>, ProduceError> {
        let mut guard = self.accumulator();
        if guard.closed {
            return Err(ProduceError::Closed);
        }
        let max_age_ms = i64::try_from(self.config.metadata_max_age_ms).unwrap_or(i64::MAX);
        if guard
            .topics
            .get(topic)
            .is_none_or(|t| t.stale || now_ms.saturating_sub(t.refreshed_ms) >= max_age_ms)
        {
            self.refresh(&mut guard, topic, now_ms)?;
        }
        let Accumulator {
            topics,
            sticky,
            senders,
            ..
        } = &mut *guard;
        let entry = topics
            .get_mut(topic)
            .ok_or_else(|| ProduceError::UnknownTopic(topic.to_owned()))?;
        let chosen = match (partition, key) {
            (Some(p), _) => p,
            (None, Some(key)) => partition_for_key(key, entry.partitions),
            (None, None) => sticky.partition(topic, &entry.available, entry.partitions, size),
        };
        let index = usize::try_from(chosen)
            .ok()
            .filter(|_| chosen < entry.partitions)
            .ok_or_else(|| ProduceError::UnknownPartition {
                topic: topic.to_owned(),
                partition: chosen,
                partitions: entry.partitions,
            })?;
        if entry.queues.len() <= index {
            entry.queues.resize(index + 1, None);
        }
        let queue = entry.queues[index].get_or_insert_with(|| {
            let queue = Arc::new(PartitionQueue::new(TopicPartition::new(topic, chosen)));
            senders.push(tokio::spawn(run_sender(Arc::clone(self), Arc::clone(&queue))));
            queue
        });
        Ok(Arc::clone(queue))
    }

    /// Re-reads a topic's partitions and leaders from the cluster's metadata.
    fn refresh(&self, accumulator: &mut Accumulator, topic: &str, now_ms: i64) -> Result<(), ProduceError> {
        let image = self.cluster.metadata();
        let Some(metadata) = image.topics.get(topic) else {
            return Err(ProduceError::UnknownTopic(topic.to_owned()));
        };
        let partitions = i32::try_from(metadata.partitions.len()).unwrap_or(i32::MAX);
        let available = (0..partitions)
            .zip(&metadata.partitions)
            .filter(|(_, p)| p.leader != NO_LEADER)
            .map(|(i, _)| i)
            .collect();
        match accumulator.topics.get_mut(topic) {
            Some(entry) => {
                entry.partitions = partitions;
                entry.available = available;
                entry.refreshed_ms = now_ms;
                entry.stale = false;
            }
            None => {
                let entry = TopicEntry {
                    partitions,
                    available,
                    refreshed_ms: now_ms,
                    stale: false,
                    queues: Vec::new(),
                };
                accumulator.topics.insert(topic.to_owned(), entry);
            }
        }
        Ok(())
    }

    fn mark_stale(&self, topic: &str) {
        if let Some(entry) = self.accumulator().topics.get_mut(topic) {
            entry.stale = true;
        }
    }

    fn queues(&self) -> Vec<Arc<PartitionQueue>> {
        self.accumulator()
            .topics
            .values()
            .flat_map(|t| t.queues.iter().flatten().cloned())
            .collect()
    }

    /// Refuses new records and wakes every sender to deliver what is left; returns the
    /// sender tasks for the first caller to wait on.
    fn begin_close(&self) -> Vec<JoinHandle<()>> {
        let senders = {
            let mut accumulator = self.accumulator();
            accumulator.closed = true;
            self.closing.store(true, Ordering::Release);
            std::mem::take(&mut accumulator.senders)
        };
        // Enqueues waiting for buffer memory give up rather than wait for a closed producer.
        self.memory.close();
        for queue in self.queues() {
            queue.wakeup.notify_one();
        }
        senders
    }

    async fn flush(&self) {
        let mut targets = Vec::new();
        for queue in self.queues() {
            let target = {
                let mut state = queue.state();
                state.flush_until = state.appended;
                state.appended
            };
            queue.wakeup.notify_one();
            targets.push((queue, target));
        }
        for (queue, target) in targets {
            let mut completed = queue.completed.subscribe();
            // The sender half lives in the queue we hold, so this cannot fail.
            let _ = completed.wait_for(|done| *done >= target).await;
        }
    }
}

/// A partition's sequence numbers under the producer identity it last used.
#[derive(Default)]
struct SequenceState {
    identity: Option<ProducerIdentity>,
    next: i32,
    /// A batch failed after being sent: it may be in the log or not, so the sequence numbers
    /// after it can be neither reused nor skipped.
    unresolved: bool,
}

/// Kafka's sequence numbers wrap from `i32::MAX` to 0.
fn next_sequence(base: i32, count: usize) -> i32 {
    let modulus = i64::from(i32::MAX) + 1;
    let count = i64::try_from(count).unwrap_or(i64::MAX) % modulus;
    ((i64::from(base) + count) % modulus) as i32
}

/// Numbers the records 0.. within their batch and encodes them as one v2 batch of about
/// `size` bytes. `stamp` (producer identity and base sequence) makes it an idempotent batch;
/// without it the batch keeps `records::record`'s defaults (no producer id, base sequence -1).
fn encode(
    records: &mut [Record],
    stamp: Option<(ProducerIdentity, i32)>,
    compression: Compression,
    size: usize,
) -> Result<Vec<u8>, String> {
    for (delta, record) in records.iter_mut().enumerate() {
        let delta = i32::try_from(delta).map_err(|_| "more than 2^31 records in one batch".to_owned())?;
        record.offset = i64::from(delta);
        match stamp {
            Some((identity, base)) => {
                record.producer_id = identity.id;
                record.producer_epoch = identity.epoch;
                // Only the batch's base sequence is on the wire; the codec needs each record's
                // sequence to advance with its offset to keep them in one batch.
                record.sequence = base.wrapping_add(delta);
            }
            None => record.sequence = delta - 1,
        }
    }
    // The codec `records::encode_batch` wraps, into a buffer of the batch's known size: grown
    // from empty instead, it reallocates a dozen times per batch, which costs the producer
    // about 5% of its throughput.
    let mut buf = BytesMut::with_capacity(size);
    let options = RecordEncodeOptions {
        version: 2,
        compression,
    };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &options)
        .map(|()| Vec::from(buf))
        .map_err(|e| format!("{e:#}"))
}

/// The most records a new batch makes room for up front (64 KiB of them): tiny records in a
/// huge batch grow it instead, so that idle partitions do not sit on large vectors.
const MAX_PRESIZED_RECORDS: usize = 64 * 1024 / std::mem::size_of::<Record>();

/// How a record's outcome reaches its producer.
enum Resolver {
    Channel(oneshot::Sender<DeliveryResult>),
    Callback(Box<dyn FnOnce(DeliveryResult) + Send>),
}

impl Resolver {
    fn resolve(self, result: DeliveryResult) {
        match self {
            // A dropped receiver means nobody wants the outcome any more.
            Resolver::Channel(tx) => {
                let _ = tx.send(result);
            }
            Resolver::Callback(callback) => {
                // A panicking callback must not take the partition's sender down with it: the
                // records behind it would never resolve. Kafka likewise logs and carries on.
                // The producer's state is not in the callback's reach, so unwinding cannot
                // leave it broken.
                if std::panic::catch_unwind(AssertUnwindSafe(|| callback(result))).is_err() {
                    tracing::error!("a delivery callback panicked");
                }
            }
        }
    }
}

/// A record on its way into a batch.
struct Pending {
    record: Record,
    /// Its bytes that do not depend on its place in a batch.
    fixed: usize,
    /// Its share of buffer.memory.
    memory: usize,
    resolver: Resolver,
}

/// Records of one partition that go out in one request.
struct ProducerBatch {
    created: Instant,
    /// The partition's count of appended records when this batch opened.
    first_record: u64,
    first_timestamp: i64,
    records: Vec<Record>,
    resolvers: Vec<Resolver>,
    /// Encoded size before compression, batch header included.
    size: usize,
    memory: usize,
}

impl ProducerBatch {
    fn new(created: Instant, first_record: u64, first_timestamp: i64, storage: BatchStorage) -> Self {
        ProducerBatch {
            created,
            first_record,
            first_timestamp,
            records: storage.records,
            resolvers: storage.resolvers,
            size: RECORD_BATCH_OVERHEAD,
            memory: 0,
        }
    }

    /// The size the next record would take in this batch.
    fn next_record_bytes(&self, fixed: usize, timestamp: i64) -> usize {
        record_bytes(
            fixed,
            self.records.len() as i64,
            timestamp.saturating_sub(self.first_timestamp),
        )
    }

    /// Resolves every record with its offset (from the batch's `base_offset`, -1 for none)
    /// or the batch's error.
    fn resolve(mut self, topic: &Arc<str>, tp: &TopicPartition, result: Result<i64, ProduceError>) -> Resolved {
        let count = self.records.len() as u64;
        for ((delta, record), resolver) in self.records.iter().enumerate().zip(self.resolvers.drain(..)) {
            let outcome = match &result {
                Ok(base_offset) => Ok(RecordMetadata {
                    topic: Arc::clone(topic),
                    partition: tp.partition,
                    offset: if *base_offset < 0 {
                        -1
                    } else {
                        base_offset + delta as i64
                    },
                    timestamp: record.timestamp,
                }),
                Err(e) => Err(e.clone()),
            };
            resolver.resolve(outcome);
        }
        self.records.clear();
        Resolved {
            records: count,
            memory: self.memory,
            storage: BatchStorage {
                records: self.records,
                resolvers: self.resolvers,
            },
        }
    }
}

/// A resolved batch's emptied vectors, kept for the partition's next batch: allocating them
/// afresh for every batch costs more than anything else the producer does per batch.
struct BatchStorage {
    records: Vec<Record>,
    resolvers: Vec<Resolver>,
}

/// What a resolved batch gives back: its record count, its buffer memory and its storage.
struct Resolved {
    records: u64,
    memory: usize,
    storage: BatchStorage,
}

/// One partition's batches, oldest first; the last one is open for appends.
struct PartitionQueue {
    tp: TopicPartition,
    /// The topic name handed to every record's [`RecordMetadata`].
    topic: Arc<str>,
    state: Mutex<QueueState>,
    /// Tells the sender that a batch is ready, the producer flushes or closes.
    wakeup: Notify,
    /// Records resolved so far, for flush.
    completed: watch::Sender<u64>,
}

struct QueueState {
    batches: VecDeque<ProducerBatch>,
    appended: u64,
    /// Batches holding records appended before this count go out without lingering.
    flush_until: u64,
    /// The vectors of the last resolved batch, for the next one.
    spare: Option<BatchStorage>,
}

impl PartitionQueue {
    fn new(tp: TopicPartition) -> Self {
        PartitionQueue {
            topic: Arc::from(tp.topic.as_str()),
            tp,
            state: Mutex::new(QueueState {
                batches: VecDeque::new(),
                appended: 0,
                flush_until: 0,
                spare: None,
            }),
            wakeup: Notify::new(),
            completed: watch::Sender::new(0),
        }
    }

    fn state(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a record to the open batch, or opens a new one when it would overflow
    /// `batch_size` (a record bigger than that gets a batch of its own, as in Kafka).
    fn append(&self, shared: &Shared, pending: Pending) -> Result<(), ProduceError> {
        let batch_size = shared.config.batch_size;
        let timestamp = pending.record.timestamp;
        let mut guard = self.state();
        let state = &mut *guard;
        // Checked under the queue lock, which the sender also holds when it sees the queue
        // empty and the producer closing and stops: so no record lands behind it.
        if shared.is_closing() {
            return Err(ProduceError::Closed);
        }
        let fits = state.batches.back().is_some_and(|open| {
            open.records.is_empty() || open.size + open.next_record_bytes(pending.fixed, timestamp) <= batch_size
        });
        let mut opened = None;
        let open = match state.batches.back_mut() {
            Some(open) if fits => open,
            _ => {
                let storage = state.spare.take().unwrap_or_else(|| {
                    // Records like this one fill a batch at about this count, so that filling
                    // it does not move them; larger records grow the vectors instead.
                    let capacity = (batch_size / record_bytes(pending.fixed, 0, 0)).clamp(1, MAX_PRESIZED_RECORDS);
                    BatchStorage {
                        records: Vec::with_capacity(capacity),
                        resolvers: Vec::with_capacity(capacity),
                    }
                });
                opened.insert(ProducerBatch::new(
                    shared.clock.now(),
                    state.appended,
                    timestamp,
                    storage,
                ))
            }
        };
        open.size += open.next_record_bytes(pending.fixed, timestamp);
        open.memory += pending.memory;
        open.records.push(pending.record);
        open.resolvers.push(pending.resolver);
        // The sender waits for a batch to fill or for a second one behind it; a new first
        // batch starts its linger.
        let wake = open.size >= batch_size || opened.is_some();
        if let Some(batch) = opened {
            state.batches.push_back(batch);
        }
        state.appended += 1;
        drop(guard);
        if wake {
            self.wakeup.notify_one();
        }
        Ok(())
    }

    /// The next batch to send: the oldest, once it is full, has a successor, has lingered
    /// long enough, or the producer flushes or closes. `None` when closed and drained.
    async fn next_ready(&self, shared: &Shared) -> Option<ProducerBatch> {
        let linger = Duration::from_millis(shared.config.linger_ms);
        loop {
            let due = {
                let mut state = self.state();
                let closing = shared.is_closing();
                match state.batches.front() {
                    None if closing => return None,
                    None => None,
                    Some(oldest) => {
                        let due = oldest.created + linger;
                        let ready = state.batches.len() > 1
                            || oldest.size >= shared.config.batch_size
                            || oldest.first_record < state.flush_until
                            || closing
                            || shared.clock.now() >= due;
                        if ready {
                            return state.batches.pop_front();
                        }
                        Some(due)
                    }
                }
            };
            match due {
                Some(due) => {
                    tokio::select! {
                        // One order on every run: tokio otherwise picks a random branch first.
                        biased;
                        () = self.wakeup.notified() => {}
                        () = shared.clock.sleep_until(due) => {}
                    }
                }
                None => self.wakeup.notified().await,
            }
        }
    }
}

/// A partition's sender: up to `max_in_flight` batches on their way at once, sent in sequence
/// order, their records resolved in that order whatever order the answers come back in.
async fn run_sender(shared: Arc<Shared>, queue: Arc<PartitionQueue>) {
    let mut window = Window::new(&shared, &queue);
    let mut drained = false;
    loop {
        window.dispatch().await;
        if drained && window.slots.is_empty() {
            return;
        }
        let take = !drained && window.slots.len() < shared.config.max_in_flight;
        tokio::select! {
            // Answers first: they free room in the window and keep the requests' order.
            biased;
            () = window.progress() => {}
            next = queue.next_ready(&shared), if take => match next {
                Some(batch) => window.push(batch),
                None => drained = true,
            },
        }
    }
}

/// A produce request on its way to the partition's leader.
type Request<'a> = Pin<Box<dyn Future<Output = ProduceOutcome> + Send + 'a>>;

/// One batch of the window.
struct Slot<'a> {
    batch: ProducerBatch,
    deadline: Instant,
    /// The encoded batch once it has been sent under the partition's current sequence: every
    /// retry sends these same bytes, so the leader recognises a batch it already has.
    request: Option<Vec<u8>>,
    /// Every earlier batch was acknowledged when this one was last sent: an out-of-order answer
    /// then means the leader lost the producer's state, not that this batch overtook another.
    sent_as_next: bool,
    last_error: Option<ErrorCode>,
    state: SlotState<'a>,
}

enum SlotState<'a> {
    /// Not sent yet, or to be sent again (not before `retry_at`).
    Waiting {
        retry_at: Option<Instant>,
    },
    Sending(Request<'a>),
    Answered(ProduceOutcome),
    /// Resolved once every batch before it is.
    Done(Result<i64, ProduceError>),
}

/// A partition's batches from the moment they leave the accumulator until their records are
/// resolved, oldest (lowest sequence) first. Kafka's rules for several in-flight batches of an
/// idempotent producer: a batch whose answer is retriable goes again only once every batch
/// before it is acknowledged, so retries go one at a time and in order; new batches wait behind
/// retries; a batch refused as out of order while an earlier one was still unanswered overtook
/// it and is retried after it; and when a batch fails with its fate unknown, the rest wait until
/// nothing is in flight and go again, renumbered, under a new producer identity.
struct Window<'a> {
    shared: &'a Shared,
    queue: &'a PartitionQueue,
    slots: VecDeque<Slot<'a>>,
    sequence: SequenceState,
    /// InitProducerId failed: asked again no sooner than this.
    identity_retry_at: Option<Instant>,
}

impl<'a> Window<'a> {
    fn new(shared: &'a Shared, queue: &'a PartitionQueue) -> Self {
        Window {
            shared,
            queue,
            slots: VecDeque::new(),
            sequence: SequenceState::default(),
            identity_retry_at: None,
        }
    }

    fn push(&mut self, batch: ProducerBatch) {
        let deadline = batch.created + Duration::from_millis(self.shared.config.delivery_timeout_ms);
        self.slots.push_back(Slot {
            batch,
            deadline,
            request: None,
            sent_as_next: false,
            last_error: None,
            state: SlotState::Waiting { retry_at: None },
        });
    }

    /// Takes in the answers, fails what ran out of time, resolves the oldest batches that are
    /// done, and sends whatever may go now.
    async fn dispatch(&mut self) {
        let now = self.shared.clock.now();
        self.settle_answers(now);
        self.expire(now);
        self.resolve_done();
        if self.sequence_ready(now).await {
            self.send(now);
        }
    }

    fn settle_answers(&mut self, now: Instant) {
        let config = &self.shared.config;
        let backoff = Duration::from_millis(config.retry_backoff_ms);
        let tp = &self.queue.tp;
        for slot in &mut self.slots {
            let SlotState::Answered(outcome) = slot.state else {
                continue;
            };
            slot.state = match outcome {
                Ok(base_offset) => {
                    slot.request = None;
                    SlotState::Done(Ok(if config.acks == Acks::None { -1 } else { base_offset }))
                }
                // Kafka does not retry with acks = 0: it never learns of a failure.
                Err(error) if config.acks == Acks::None => {
                    SlotState::Done(Err(ProduceError::Kafka { tp: tp.clone(), error }))
                }
                Err(ErrorCode::OutOfOrderSequenceNumber) if config.enable_idempotence && !slot.sent_as_next => {
                    tracing::debug!(%tp, "a batch overtook an earlier one; resending it after that one");
                    slot.last_error = Some(ErrorCode::OutOfOrderSequenceNumber);
                    SlotState::Waiting { retry_at: None }
                }
                Err(error) if error.is_retriable() => {
                    tracing::debug!(%tp, ?error, "produce failed; retrying after backoff");
                    slot.last_error = Some(error);
                    self.shared.mark_stale(&tp.topic);
                    SlotState::Waiting {
                        retry_at: Some((now + backoff).min(slot.deadline)),
                    }
                }
                Err(error) => {
                    self.sequence.unresolved = true;
                    SlotState::Done(Err(ProduceError::Kafka { tp: tp.clone(), error }))
                }
            };
        }
    }

    /// Batches not in flight whose delivery timeout passed fail; one that was sent may be in
    /// the log or not, which leaves its sequence unresolved.
    fn expire(&mut self, now: Instant) {
        for slot in &mut self.slots {
            if matches!(slot.state, SlotState::Waiting { .. }) && now >= slot.deadline {
                self.sequence.unresolved |= slot.request.take().is_some();
                slot.state = SlotState::Done(Err(ProduceError::DeliveryTimeout {
                    tp: self.queue.tp.clone(),
                    elapsed_ms: now.duration_since(slot.batch.created).as_millis() as u64,
                    last_error: slot.last_error,
                }));
            }
        }
    }

    /// Resolves the records of the oldest batches that are done, in order.
    fn resolve_done(&mut self) {
        while self
            .slots
            .front()
            .is_some_and(|s| matches!(s.state, SlotState::Done(_)))
        {
            let Some(Slot {
                batch,
                state: SlotState::Done(result),
                ..
            }) = self.slots.pop_front()
            else {
                return;
            };
            let resolved = batch.resolve(&self.queue.topic, &self.queue.tp, result);
            self.shared.memory.add_permits(resolved.memory);
            self.queue.state().spare = Some(resolved.storage);
            self.queue.completed.send_modify(|done| *done += resolved.records);
        }
    }

    /// Whether batches may be numbered and sent. After a batch failed with its sequence
    /// unresolved, nothing goes until nothing is in flight; then the producer bumps its epoch
    /// (KIP-360) and the batches not yet done are renumbered from 0.
    /// A new identity another partition took is adopted once this partition has no numbered
    /// batch left, so that a retry never follows a batch numbered under the new identity.
    async fn sequence_ready(&mut self, now: Instant) -> bool {
        let Some(lock) = &self.shared.identity else {
            return true;
        };
        if self.slots.iter().any(|s| matches!(s.state, SlotState::Sending(_))) {
            return !self.sequence.unresolved;
        }
        let numbered = self.slots.iter().any(|s| s.request.is_some());
        if !self.sequence.unresolved && numbered {
            return true;
        }
        if self.identity_retry_at.is_some_and(|at| now < at) {
            return false;
        }
        let mut current = lock.lock().await;
        if self.sequence.unresolved && self.sequence.identity == Some(*current) {
            // KIP-360, as Java's and librdkafka's idempotent producers do it: the same id
            // with the next epoch, whose sequences start at 0 again (a leader accepts a newer
            // epoch from sequence 0); a new id only when the epoch would overflow.
            let bumped = match current.epoch.checked_add(1) {
                Some(epoch) => Ok((current.id, epoch)),
                None => self.shared.cluster.init_producer_id().await,
            };
            match bumped {
                Ok((id, epoch)) => *current = ProducerIdentity { id, epoch },
                Err(e) => {
                    tracing::debug!(tp = %self.queue.tp, error = %e, "no new producer id yet; retrying");
                    self.identity_retry_at = Some(now + Duration::from_millis(self.shared.config.retry_backoff_ms));
                    return false;
                }
            }
        }
        self.identity_retry_at = None;
        if self.sequence.identity != Some(*current) {
            self.sequence = SequenceState {
                identity: Some(*current),
                next: 0,
                unresolved: false,
            };
            for slot in &mut self.slots {
                slot.request = None;
            }
        }
        true
    }

    /// Sends, in order, every batch that may go: at most `max_in_flight` requests out, a
    /// resent batch only once every batch before it is acknowledged, and nothing past a batch
    /// that has to wait.
    fn send(&mut self, now: Instant) {
        let shared = self.shared;
        let config = &shared.config;
        let tp = &self.queue.tp;
        let mut in_flight = self
            .slots
            .iter()
            .filter(|s| matches!(s.state, SlotState::Sending(_)))
            .count();
        let mut earlier_unacknowledged = false;
        for slot in &mut self.slots {
            let retry_at = match &slot.state {
                SlotState::Done(_) => continue,
                SlotState::Sending(_) | SlotState::Answered(_) => {
                    earlier_unacknowledged = true;
                    continue;
                }
                SlotState::Waiting { retry_at } => *retry_at,
            };
            let resend = slot.request.is_some();
            if in_flight >= config.max_in_flight
                || retry_at.is_some_and(|at| now < at)
                || (resend && earlier_unacknowledged)
            {
                return;
            }
            let bytes = match &slot.request {
                Some(bytes) => bytes.clone(),
                None => {
                    let stamp = self.sequence.identity.map(|identity| (identity, self.sequence.next));
                    let batch = &mut slot.batch;
                    match encode(&mut batch.records, stamp, config.compression, batch.size) {
                        Ok(encoded) => {
                            if let Some((_, base)) = stamp {
                                self.sequence.next = next_sequence(base, batch.records.len());
                            }
                            slot.request.insert(encoded).clone()
                        }
                        Err(reason) => {
                            slot.state = SlotState::Done(Err(ProduceError::Encode { tp: tp.clone(), reason }));
                            continue;
                        }
                    }
                }
            };
            let timeout = Duration::from_millis(config.request_timeout_ms).min(slot.deadline - now);
            slot.sent_as_next = !earlier_unacknowledged;
            slot.state = SlotState::Sending(Box::pin(shared.cluster.produce(tp, bytes, config.acks, timeout)));
            earlier_unacknowledged = true;
            in_flight += 1;
        }
    }

    /// Waits until a request is answered or a retry or delivery timeout falls due. A request
    /// leaves when first polled, and the requests are polled oldest first, so they reach the
    /// leader in sequence order.
    async fn progress(&mut self) {
        let clock = self.shared.clock.clone();
        let now = clock.now();
        let timer = self
            .slots
            .iter()
            .filter_map(|s| match s.state {
                SlotState::Waiting { retry_at } => Some(
                    retry_at
                        .filter(|at| *at > now)
                        .map_or(s.deadline, |at| at.min(s.deadline)),
                ),
                _ => None,
            })
            .chain(self.identity_retry_at.filter(|at| *at > now))
            .min();
        let mut sleep = std::pin::pin!(async move {
            match timer {
                Some(at) => clock.sleep_until(at).await,
                None => std::future::pending().await,
            }
        });
        std::future::poll_fn(|cx| {
            let mut answered = false;
            for slot in &mut self.slots {
                if let SlotState::Sending(request) = &mut slot.state
                    && let Poll::Ready(outcome) = request.as_mut().poll(cx)
                {
                    slot.state = SlotState::Answered(outcome);
                    answered = true;
                }
            }
            if answered {
                Poll::Ready(())
            } else {
                sleep.as_mut().poll(cx)
            }
        })
        .await;
    }
}

/// The bytes of a record in a v2 batch that do not depend on its place: attributes, key,
/// value and headers with their length prefixes (Kafka's `DefaultRecord.sizeInBytes`).
fn fixed_record_bytes(key: Option<&[u8]>, value: Option<&[u8]>, headers: &[(String, Option<Bytes>)]) -> usize {
    let field = |bytes: Option<&[u8]>| bytes.map_or(1, |b| varint_bytes(b.len() as i64) + b.len());
    let headers_bytes: usize = headers
        .iter()
        .map(|(name, value)| field(Some(name.as_bytes())) + field(value.as_deref()))
        .sum();
    1 + field(key) + field(value) + varint_bytes(headers.len() as i64) + headers_bytes
}

/// A record's full size at `offset_delta` with `timestamp_delta` in its batch.
fn record_bytes(fixed: usize, offset_delta: i64, timestamp_delta: i64) -> usize {
    let body = fixed + varint_bytes(offset_delta) + varint_bytes(timestamp_delta);
    varint_bytes(body as i64) + body
}

/// Bytes of a zig-zag varint (or varlong), as the v2 record format writes its numbers.
fn varint_bytes(value: i64) -> usize {
    let zigzag = ((value << 1) ^ (value >> 63)) as u64;
    let bits = 64 - (zigzag | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_sizes_match_the_encoder() {
        let headers = vec![
            ("trace".to_owned(), Some(Bytes::from_static(b"abc"))),
            ("none".to_owned(), None),
        ];
        let key = Bytes::from_static(b"user-42");
        let value = Bytes::from(vec![b'x'; 300]);
        let fixed = fixed_record_bytes(Some(&key), Some(&value), &headers);
        let mut batch = Vec::new();
        for delta in 0..200i64 {
            let mut record = records::record(delta, 1_000 + delta * 7, Some(key.clone()), Some(value.clone()));
            for (name, v) in &headers {
                record.headers.insert(StrBytes::from_string(name.clone()), v.clone());
            }
            batch.push(record);
        }
        let expected: usize = RECORD_BATCH_OVERHEAD + (0..200i64).map(|d| record_bytes(fixed, d, d * 7)).sum::<usize>();
        let encoded = records::encode_batch(&batch, Compression::None).expect("encodes");
        assert_eq!(encoded.len(), expected);
    }

    #[test]
    fn batches_are_what_records_encode_batch_makes_and_idempotent_ones_are_stamped() {
        let value = Bytes::from(vec![b'v'; 100]);
        let fresh = || -> Vec<Record> {
            (0..50)
                .map(|i| records::record(i, 1_000 + i, None, Some(value.clone())))
                .collect()
        };
        for compression in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let expected = records::encode_batch(&fresh(), compression).expect("encodes");
            let encoded = encode(&mut fresh(), None, compression, 16_384).expect("encodes");
            assert_eq!(encoded, expected.to_vec(), "{compression:?}");
        }
        let identity = ProducerIdentity { id: 42, epoch: 3 };
        let encoded = encode(&mut fresh(), Some((identity, i32::MAX - 9)), Compression::None, 0).expect("encodes");
        let header = crate::storage::batch::BatchHeader::parse(&encoded).expect("a batch");
        assert_eq!(
            (
                header.producer_id,
                header.producer_epoch,
                header.base_sequence,
                header.records_count
            ),
            (42, 3, i32::MAX - 9, 50),
            "one batch whose sequences wrap past i32::MAX"
        );
    }

    #[test]
    fn varints_take_seven_bits_a_byte_after_zigzag() {
        assert_eq!(varint_bytes(0), 1);
        assert_eq!(varint_bytes(-1), 1);
        assert_eq!(varint_bytes(63), 1);
        assert_eq!(varint_bytes(64), 2);
        assert_eq!(varint_bytes(-65), 2);
        assert_eq!(varint_bytes(i64::MAX), 10);
        assert_eq!(varint_bytes(i64::MIN), 10);
    }

    #[test]
    fn sequences_wrap_to_zero_after_i32_max() {
        assert_eq!(next_sequence(0, 10), 10);
        assert_eq!(next_sequence(i32::MAX - 1, 1), i32::MAX);
        assert_eq!(next_sequence(i32::MAX - 1, 3), 1);
    }
}
