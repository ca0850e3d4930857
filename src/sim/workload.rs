//! The simulation's clients: the real producer and consumer over the embedded cluster, each
//! on its own network node (see [`super::schedule::producer_node`]). Every record carries a
//! unique value (see [`record_value`]); what the clients learn (acks=all acknowledgements,
//! records read, every commit's answer) lands in an outbox the runner hands to the checker
//! after every step: the checker's history of what clients observed. Records go to explicit
//! partitions or by key, so that the producer's random sticky partitioner plays no part in a
//! seed's outcome.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::Rng;
use super::checker::{Ack, Commit, CommitFate, Read, TxnFate, TxnOutcome, record_key, record_value, txn_value};
use super::schedule::{GroupSpec, ProducerSpec, TxnWriterSpec, member_node, producer_node, txn_writer_node};
use super::wire::WireClients;
use crate::client::consumer::{CommitOutcome, Consumer, ConsumerConfig, OffsetReset};
use crate::client::producer::{Producer, ProducerConfig, ProducerRecord};
use crate::client::transactional::{TransactionalProducer, TxnConfig, TxnError};
use bytes::Bytes;

use crate::engine::{Acks, Cluster, ErrorCode, NodeId, TopicPartition};

/// What the clients saw since the runner last looked.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    pub acks: Vec<Ack>,
    pub reads: Vec<Read>,
    pub commits: Vec<Commit>,
    /// Every transaction a transactional writer ended (or died in).
    pub txns: Vec<TxnOutcome>,
}

type SharedOutbox = Arc<Mutex<Outbox>>;

fn lock(outbox: &SharedOutbox) -> MutexGuard<'_, Outbox> {
    outbox.lock().unwrap_or_else(|p| p.into_inner())
}

enum Control {
    Commit,
    Close,
}

struct Member {
    control: mpsc::UnboundedSender<Control>,
    task: JoinHandle<()>,
}

/// A transactional writer's process, running transactions in the background.
struct TxnWriter {
    task: JoinHandle<()>,
    /// Asks it to end its open transaction and exit.
    stop: Arc<AtomicBool>,
    /// The transaction it has open, with the fate it has if the process dies now.
    current: Arc<Mutex<Option<TxnOutcome>>>,
    /// Set when a newer instance replaces it.
    replaced: Arc<AtomicBool>,
}

impl TxnWriter {
    /// The process dies where it is: its open transaction goes to the outbox as it stands.
    fn crash(self, outbox: &SharedOutbox) {
        self.task.abort();
        let open = self.current.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(open) = open {
            lock(outbox).txns.push(open);
        }
    }
}

pub(crate) struct Workload {
    cluster: Cluster,
    specs: Vec<ProducerSpec>,
    producers: Vec<Option<Producer>>,
    /// Each producer's instance: a crash and the next produce start a new one.
    instances: Vec<u32>,
    groups: Vec<GroupSpec>,
    members: BTreeMap<(usize, usize), Member>,
    /// Members asked to leave, finishing their goodbyes in the background.
    leaving: Vec<JoinHandle<()>>,
    /// Batches on their way over the Kafka protocol.
    wire_producers: Vec<JoinHandle<()>>,
    outbox: SharedOutbox,
    next_record: u64,
    /// When the simulation began: acknowledgements say when their record was sent.
    start: tokio::time::Instant,
    /// In a wire seed, every client speaks the Kafka protocol to the brokers through these
    /// (in-memory connections served by the wire layer) instead of calling the engine.
    wire: Option<Arc<WireClients>>,
    /// The wire clients were closed with the old cluster: connect again on the new one.
    wire_reconnect: bool,
    /// Topics whose records are always keyed (compacted).
    compacted: BTreeSet<String>,
    txn_specs: Vec<TxnWriterSpec>,
    /// Each transactional writer's running process.
    txn_writers: Vec<Option<TxnWriter>>,
    /// Each transactional writer's instance: a crash starts the next.
    txn_instances: Vec<u32>,
    /// Each transactional writer's next transaction number, shared by its instances.
    txn_numbers: Vec<Arc<AtomicU64>>,
    /// Replaced instances that carry on, unaware of their successor.
    zombies: Vec<TxnWriter>,
    /// Mixed into each writer instance's own rng.
    txn_seed: u64,
}

impl Workload {
    pub fn new(
        cluster: Cluster,
        producers: &[ProducerSpec],
        groups: &[GroupSpec],
        start: tokio::time::Instant,
    ) -> Self {
        Workload {
            cluster,
            specs: producers.to_vec(),
            producers: vec![None; producers.len()],
            instances: vec![0; producers.len()],
            groups: groups.to_vec(),
            members: BTreeMap::new(),
            leaving: Vec::new(),
            wire_producers: Vec::new(),
            outbox: SharedOutbox::default(),
            next_record: 0,
            start,
            wire: None,
            wire_reconnect: false,
            compacted: BTreeSet::new(),
            txn_specs: Vec::new(),
            txn_writers: Vec::new(),
            txn_instances: Vec::new(),
            txn_numbers: Vec::new(),
            zombies: Vec::new(),
            txn_seed: 0,
        }
    }

    /// Starts the transactional writers (their topics exist by now); `seed` draws their
    /// transactions.
    pub fn start_txn_writers(&mut self, specs: &[TxnWriterSpec], seed: u64) {
        self.txn_specs = specs.to_vec();
        self.txn_seed = seed;
        self.txn_writers = specs.iter().map(|_| None).collect();
        self.txn_instances = vec![0; specs.len()];
        self.txn_numbers = specs.iter().map(|_| Arc::new(AtomicU64::new(0))).collect();
        for w in 0..specs.len() {
            self.spawn_txn_writer(w);
        }
    }

    fn spawn_txn_writer(&mut self, w: usize) {
        let (Some(spec), Some(&instance), Some(numbers)) = (
            self.txn_specs.get(w),
            self.txn_instances.get(w),
            self.txn_numbers.get(w),
        ) else {
            return;
        };
        let NodeId::Client(node) = txn_writer_node(w) else {
            return;
        };
        let stop = Arc::new(AtomicBool::new(false));
        let replaced = Arc::new(AtomicBool::new(false));
        let current = Arc::new(Mutex::new(None));
        let process = WriterProcess {
            cluster: self.cluster.as_client(node),
            spec: spec.clone(),
            writer: w,
            instance,
            numbers: Arc::clone(numbers),
            outbox: Arc::clone(&self.outbox),
            current: Arc::clone(&current),
            stop: Arc::clone(&stop),
            replaced: Arc::clone(&replaced),
            start: self.start,
        };
        let rng = Rng::new(self.txn_seed ^ ((w as u64) << 32) ^ u64::from(instance));
        let task = tokio::spawn(process.run(rng));
        if let Some(slot) = self.txn_writers.get_mut(w) {
            *slot = Some(TxnWriter {
                task,
                stop,
                current,
                replaced,
            });
        }
    }

    /// Transactional writer `writer`'s process is replaced by a new instance: the old one
    /// dies where it is, or (`zombie`) carries on unaware.
    pub fn crash_txn_writer(&mut self, writer: usize, zombie: bool) -> Result<(), String> {
        let slot = self
            .txn_writers
            .get_mut(writer)
            .ok_or_else(|| format!("no transactional writer {writer}"))?;
        if let Some(old) = slot.take() {
            if zombie {
                old.replaced.store(true, Ordering::Relaxed);
                self.zombies.push(old);
            } else {
                old.crash(&self.outbox);
            }
        }
        if let Some(instance) = self.txn_instances.get_mut(writer) {
            *instance += 1;
        }
        self.spawn_txn_writer(writer);
        Ok(())
    }

    /// Topics whose records are always keyed (compacted ones).
    pub fn set_compacted(&mut self, topics: impl IntoIterator<Item = String>) {
        self.compacted = topics.into_iter().collect();
    }

    /// Makes this a wire seed: from now on the clients speak the Kafka protocol.
    pub async fn speak_wire(&mut self) -> Result<(), String> {
        self.wire = Some(Arc::new(WireClients::connect(&self.cluster).await?));
        Ok(())
    }

    pub fn speaks_wire(&self) -> bool {
        self.wire.is_some() || self.wire_reconnect
    }

    /// The Kafka-protocol clients of a wire seed.
    pub fn wire(&self) -> Option<Arc<WireClients>> {
        self.wire.clone()
    }

    pub fn take(&self) -> Outbox {
        std::mem::take(&mut *lock(&self.outbox))
    }

    /// Live group members per group name (a wire seed's consumers are simple consumers,
    /// members of no group).
    pub fn live_members(&self) -> BTreeMap<String, usize> {
        let mut out: BTreeMap<String, usize> = self.groups.iter().map(|g| (g.name.clone(), 0)).collect();
        if self.speaks_wire() {
            return out;
        }
        for ((group, _), m) in &self.members {
            if !m.task.is_finished()
                && let Some(g) = self.groups.get(*group)
            {
                *out.entry(g.name.clone()).or_default() += 1;
            }
        }
        out
    }

    /// Enqueues `records` records, to `partition` or (`keyed`) by key; their outcomes arrive
    /// in the outbox later.
    pub async fn produce(
        &mut self,
        producer: usize,
        topic: &str,
        partition: i32,
        records: u32,
        keyed: bool,
    ) -> Result<(), String> {
        let spec = self
            .specs
            .get(producer)
            .cloned()
            .ok_or_else(|| format!("no producer {producer}"))?;
        let instance = self.instances.get(producer).copied().unwrap_or(0);
        // Kafka refuses a keyless record on a compacted topic (INVALID_RECORD).
        let keyed = keyed || self.compacted.contains(topic);
        if let Some(wire) = &self.wire {
            let wire = Arc::clone(wire);
            return self.produce_over_wire(wire, &spec, producer, instance, topic, partition, records, keyed);
        }
        let slot = self
            .producers
            .get_mut(producer)
            .ok_or_else(|| format!("no producer {producer}"))?;
        if slot.is_none() {
            let config = ProducerConfig {
                acks: spec.acks,
                enable_idempotence: spec.idempotent,
                compression: spec.compression,
                max_in_flight: spec.max_in_flight,
                linger_ms: spec.linger_ms,
                delivery_timeout_ms: 30_000,
                request_timeout_ms: 5_000,
                retry_backoff_ms: 100,
                ..ProducerConfig::default()
            };
            let NodeId::Client(node) = producer_node(producer) else {
                return Err("a producer is a client".into());
            };
            let created = Producer::new(self.cluster.as_client(node), config)
                .await
                .map_err(|e| format!("{e:#}"))?;
            *slot = Some(created);
        }
        let Some(handle) = slot.clone() else {
            return Err("no producer".into());
        };
        for _ in 0..records {
            let n = self.next_record;
            let value = record_value(spec.idempotent, producer, instance, n);
            self.next_record += 1;
            let record = if keyed {
                ProducerRecord::new(topic, value.clone()).with_key(record_key(n))
            } else {
                ProducerRecord::new(topic, value.clone()).with_partition(partition)
            };
            let delivery = handle.enqueue(record).await.map_err(|e| e.to_string())?;
            let outbox = Arc::clone(&self.outbox);
            let topic = topic.to_string();
            let acks = spec.acks;
            let sent_at = self.start.elapsed();
            tokio::spawn(async move {
                if let Ok(Ok(metadata)) = delivery.await
                    && acks == Acks::All
                {
                    lock(&outbox).acks.push(Ack {
                        tp: TopicPartition::new(&topic, metadata.partition),
                        offset: metadata.offset,
                        value,
                        sent_at,
                    });
                }
            });
        }
        Ok(())
    }

    /// One batch of `records` records to `partition` over the Kafka protocol (a plain
    /// producer: no idempotence, keys or retries of a batch that may be in the log); its
    /// outcome arrives in the outbox later.
    #[allow(clippy::too_many_arguments)]
    fn produce_over_wire(
        &mut self,
        wire: Arc<WireClients>,
        spec: &ProducerSpec,
        producer: usize,
        instance: u32,
        topic: &str,
        partition: i32,
        records: u32,
        keyed: bool,
    ) -> Result<(), String> {
        let records: Vec<(Option<Bytes>, Bytes)> = (0..records)
            .map(|i| {
                let n = self.next_record + u64::from(i);
                (keyed.then(|| record_key(n)), record_value(false, producer, instance, n))
            })
            .collect();
        let values: Vec<Bytes> = records.iter().map(|(_, v)| v.clone()).collect();
        self.next_record += records.len() as u64;
        let acks = spec.acks;
        let wire_acks = match acks {
            Acks::All => -1,
            Acks::Leader => 1,
            Acks::None => 0,
        };
        let tp = TopicPartition::new(topic, partition);
        let outbox = Arc::clone(&self.outbox);
        let sent_at = self.start.elapsed();
        let task = tokio::spawn(async move {
            if let Ok(base) = wire.produce(&tp, records, wire_acks).await
                && acks == Acks::All
            {
                let mut outbox = lock(&outbox);
                for (i, value) in values.into_iter().enumerate() {
                    outbox.acks.push(Ack {
                        tp: tp.clone(),
                        offset: base + i as i64,
                        value,
                        sent_at,
                    });
                }
            }
        });
        self.wire_producers.push(task);
        Ok(())
    }

    /// The producer's process dies with what it holds; the next produce starts another.
    pub fn crash_producer(&mut self, producer: usize) -> Result<(), String> {
        if self.wire.is_some() {
            // A wire seed's batches are each sent once and answered or not: a crash only
            // starts a new instance; what is on its way may still land.
            if let Some(instance) = self.instances.get_mut(producer) {
                *instance += 1;
            }
            return Ok(());
        }
        let slot = self
            .producers
            .get_mut(producer)
            .ok_or_else(|| format!("no producer {producer}"))?;
        let Some(running) = slot.take() else {
            return Err("the producer is not running".into());
        };
        running.crash();
        if let Some(instance) = self.instances.get_mut(producer) {
            *instance += 1;
        }
        Ok(())
    }

    pub fn join(&mut self, group: usize, member: usize) -> Result<(), String> {
        let spec = self
            .groups
            .get(group)
            .cloned()
            .ok_or_else(|| format!("no group {group}"))?;
        if self
            .members
            .get(&(group, member))
            .is_some_and(|m| !m.task.is_finished())
        {
            return Err("already a member".into());
        }
        let (control, commands) = mpsc::unbounded_channel();
        if let Some(wire) = &self.wire {
            // Without group membership over the wire, one consumer per group reads every
            // partition and commits as a simple consumer: two would commit over each other.
            if self
                .members
                .iter()
                .any(|((g, _), m)| *g == group && !m.task.is_finished())
            {
                return Err("a wire seed runs one consumer per group".into());
            }
            let task = tokio::spawn(consume_over_wire(
                Arc::clone(wire),
                self.cluster.clone(),
                spec,
                commands,
                Arc::clone(&self.outbox),
                self.start,
            ));
            self.members.insert((group, member), Member { control, task });
            return Ok(());
        }
        let NodeId::Client(node) = member_node(group, member) else {
            return Err("a member is a client".into());
        };
        let task = tokio::spawn(consume(
            self.cluster.as_client(node),
            spec,
            commands,
            Arc::clone(&self.outbox),
            self.start,
        ));
        self.members.insert((group, member), Member { control, task });
        Ok(())
    }

    /// The member commits (with auto-commit on) and leaves, in the background.
    pub fn close(&mut self, group: usize, member: usize) -> Result<(), String> {
        let m = self.members.remove(&(group, member)).ok_or("no such member")?;
        m.control.send(Control::Close).map_err(|_| "the member is gone")?;
        self.leaving.push(m.task);
        Ok(())
    }

    /// The member disappears without a word: the group notices when its session expires.
    pub fn crash(&mut self, group: usize, member: usize) -> Result<(), String> {
        let m = self.members.remove(&(group, member)).ok_or("no such member")?;
        m.task.abort();
        Ok(())
    }

    pub fn commit(&mut self, group: usize, member: usize) -> Result<(), String> {
        let m = self.members.get(&(group, member)).ok_or("no such member")?;
        m.control.send(Control::Commit).map_err(|_| "the member is gone".into())
    }

    /// The whole cluster goes down: consumers die with their connections (they rejoin as
    /// new members in [`Workload::rebind`]); producers are dropped and finish what they hold
    /// against the old cluster, failing it.
    pub fn detach(&mut self) {
        self.producers = vec![None; self.specs.len()];
        if let Some(wire) = self.wire.take() {
            wire.close();
            self.wire_reconnect = true;
        }
        for instance in &mut self.instances {
            *instance += 1;
        }
        for m in self.members.values() {
            m.task.abort();
        }
        // Transactional writers die with the cluster; new instances start on the next one.
        for old in self.txn_writers.iter_mut().filter_map(Option::take) {
            old.crash(&self.outbox);
        }
        for old in std::mem::take(&mut self.zombies) {
            old.crash(&self.outbox);
        }
        for instance in &mut self.txn_instances {
            *instance += 1;
        }
    }

    /// Moves every client to the restarted cluster.
    pub async fn rebind(&mut self, cluster: Cluster) {
        self.cluster = cluster;
        if std::mem::take(&mut self.wire_reconnect) {
            // Until it connects, produces and joins fail; a cluster that just started
            // answers at once.
            let _ = self.speak_wire().await;
        }
        let members: Vec<(usize, usize)> = self.members.keys().copied().collect();
        self.members.clear();
        for (group, member) in members {
            let _ = self.join(group, member);
        }
        for w in 0..self.txn_specs.len() {
            self.spawn_txn_writer(w);
        }
    }

    /// Closes every client and waits for it: producers deliver (or fail) what they hold,
    /// consumers commit and leave.
    pub async fn shutdown(&mut self) {
        // Zombies are let go first; writers end their open transaction and exit (one that
        // does not within a minute dies where it is).
        for old in std::mem::take(&mut self.zombies) {
            old.crash(&self.outbox);
        }
        let writers: Vec<TxnWriter> = self.txn_writers.iter_mut().filter_map(Option::take).collect();
        for writer in &writers {
            writer.stop.store(true, Ordering::Relaxed);
        }
        for mut writer in writers {
            if tokio::time::timeout(Duration::from_secs(60), &mut writer.task)
                .await
                .is_err()
            {
                writer.crash(&self.outbox);
            }
        }
        for producer in self.producers.iter_mut().filter_map(Option::take) {
            producer.close().await;
        }
        for task in self.wire_producers.drain(..) {
            let _ = task.await;
        }
        for (_, m) in std::mem::take(&mut self.members) {
            if m.control.send(Control::Close).is_ok() {
                let _ = m.task.await;
            }
        }
        for task in self.leaving.drain(..) {
            let _ = task.await;
        }
    }
}

/// One group member's life: poll, hand what it read to the outbox, obey commands.
async fn consume(
    cluster: Cluster,
    spec: GroupSpec,
    mut commands: mpsc::UnboundedReceiver<Control>,
    outbox: SharedOutbox,
    start: tokio::time::Instant,
) {
    let config = ConsumerConfig {
        group_id: Some(spec.name.clone()),
        auto_offset_reset: OffsetReset::Earliest,
        enable_auto_commit: spec.auto_commit,
        auto_commit_interval_ms: 1_000,
        session_timeout_ms: spec.session_timeout_ms,
        heartbeat_interval_ms: 500,
        rebalance_timeout_ms: 10_000,
        fetch_max_wait_ms: 200,
        assignors: vec![spec.assignor.clone()],
        ..ConsumerConfig::default()
    };
    let mut consumer = Consumer::new(cluster, config);
    consumer.on_commit({
        let outbox = Arc::clone(&outbox);
        Arc::new(move |outcome: &CommitOutcome| {
            lock(&outbox).commits.push(Commit {
                group: outcome.group.clone(),
                offsets: outcome.offsets.clone(),
                fate: commit_fate(outcome.result),
                answered_at: start.elapsed(),
            });
        })
    });
    consumer.subscribe(spec.topics.clone());
    loop {
        match commands.try_recv() {
            Ok(Control::Commit) => {
                let _ = consumer.commit().await;
            }
            Ok(Control::Close) | Err(mpsc::error::TryRecvError::Disconnected) => {
                consumer.close().await;
                return;
            }
            Err(mpsc::error::TryRecvError::Empty) => {}
        }
        match consumer.poll(Duration::from_millis(200)).await {
            Ok(records) => {
                let reads = records.into_iter().map(|r| Read {
                    tp: TopicPartition::new(&*r.topic, r.partition),
                    offset: r.offset,
                    value: r.value.unwrap_or_default(),
                    leader_epoch: r.leader_epoch.unwrap_or(-1),
                });
                lock(&outbox).reads.extend(reads);
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
        // A poll can return without ever having waited (it spins while a partition has no
        // leader); the application's loop still lets the rest of the process run.
        tokio::task::yield_now().await;
    }
}

/// What a commit's answer tells of its fate: the refusals a coordinator gives before it
/// writes anything mean nothing was stored; any other error leaves the fate unknown. A
/// coordinator that wrote the commit and lost its leadership or its ISR while waiting answers
/// NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE (Kafka's `storeOffsets`), and the record may
/// survive; an answer that never came may follow a commit that was applied.
fn commit_fate(result: Result<(), ErrorCode>) -> CommitFate {
    match result {
        Ok(()) => CommitFate::Acknowledged,
        Err(
            ErrorCode::IllegalGeneration
            | ErrorCode::UnknownMemberId
            | ErrorCode::RebalanceInProgress
            | ErrorCode::CoordinatorLoadInProgress
            | ErrorCode::InvalidCommitOffsetSize,
        ) => CommitFate::Refused,
        Err(_) => CommitFate::Unknown,
    }
}

/// A wire seed's consumer: reads every partition of its group's topics over the Kafka
/// protocol from the group's committed offsets (or the log start), hands what it read to the
/// outbox, and commits its positions as a simple consumer (generation -1), on command, every
/// second with auto-commit, and when it leaves.
async fn consume_over_wire(
    wire: Arc<WireClients>,
    cluster: Cluster,
    spec: GroupSpec,
    mut commands: mpsc::UnboundedReceiver<Control>,
    outbox: SharedOutbox,
    start: tokio::time::Instant,
) {
    let mut positions: BTreeMap<TopicPartition, i64> = BTreeMap::new();
    let mut last_commit = tokio::time::Instant::now();
    let committed = wire.committed(&spec.name).await.unwrap_or_default();
    loop {
        let close = match commands.try_recv() {
            Ok(Control::Commit) => {
                commit_over_wire(&wire, &spec.name, &positions, &outbox, start).await;
                false
            }
            Ok(Control::Close) | Err(mpsc::error::TryRecvError::Disconnected) => true,
            Err(mpsc::error::TryRecvError::Empty) => false,
        };
        if close {
            if spec.auto_commit {
                commit_over_wire(&wire, &spec.name, &positions, &outbox, start).await;
            }
            return;
        }
        if spec.auto_commit && last_commit.elapsed() >= Duration::from_secs(1) {
            commit_over_wire(&wire, &spec.name, &positions, &outbox, start).await;
            last_commit = tokio::time::Instant::now();
        }
        let image = cluster.metadata();
        let tps: Vec<TopicPartition> = image
            .partitions()
            .map(|(tp, _)| tp)
            .filter(|tp| spec.topics.contains(&tp.topic))
            .collect();
        positions.retain(|tp, _| tps.contains(tp));
        let mut read_any = false;
        for tp in tps {
            let from = match positions.get(&tp) {
                Some(p) => *p,
                None => match committed.get(&tp) {
                    Some(c) => *c,
                    None => match wire.list_offsets(&tp, crate::engine::OffsetSpec::Earliest).await {
                        Ok(o) => o,
                        Err(_) => continue,
                    },
                },
            };
            positions.insert(tp.clone(), from);
            match wire.fetch_with_next(&tp, from).await {
                Ok((records, after)) => {
                    // Past the last whole batch, even one compaction emptied.
                    let mut next = from.max(after);
                    let mut out = lock(&outbox);
                    for (offset, value, leader_epoch) in records.into_iter().filter(|r| r.0 >= from) {
                        next = offset + 1;
                        read_any = true;
                        out.reads.push(Read {
                            tp: tp.clone(),
                            offset,
                            value,
                            leader_epoch,
                        });
                    }
                    positions.insert(tp, next);
                }
                Err(_) => {
                    // auto.offset.reset = earliest, for a position the log no longer has.
                    if let Ok(end) = wire.list_offsets(&tp, crate::engine::OffsetSpec::Latest).await
                        && from > end
                        && let Ok(earliest) = wire.list_offsets(&tp, crate::engine::OffsetSpec::Earliest).await
                    {
                        positions.insert(tp, earliest);
                    }
                }
            }
        }
        if !read_any {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        tokio::task::yield_now().await;
    }
}

/// Commits every position, one partition at a time, and hands each answer to the outbox.
async fn commit_over_wire(
    wire: &WireClients,
    group: &str,
    positions: &BTreeMap<TopicPartition, i64>,
    outbox: &SharedOutbox,
    start: tokio::time::Instant,
) {
    for (tp, offset) in positions {
        let result = wire.commit(group, tp, *offset).await;
        lock(outbox).commits.push(Commit {
            group: group.to_string(),
            offsets: vec![(tp.clone(), *offset)],
            // The protocol client's errors do not say whether the coordinator wrote it.
            fate: if result.is_ok() {
                CommitFate::Acknowledged
            } else {
                CommitFate::Unknown
            },
            answered_at: start.elapsed(),
        });
    }
}

/// Limits of a simulated transactional writer: transactions the coordinator aborts after
/// 10 s (so one a dead writer left open ends within the run), calls retried for 10 s.
const TXN_TIMEOUT_MS: i32 = 10_000;
const TXN_MAX_BLOCK: Duration = Duration::from_secs(10);

/// One instance of a transactional writer, as its process sees itself.
struct WriterProcess {
    cluster: Cluster,
    spec: TxnWriterSpec,
    writer: usize,
    instance: u32,
    numbers: Arc<AtomicU64>,
    outbox: SharedOutbox,
    current: Arc<Mutex<Option<TxnOutcome>>>,
    stop: Arc<AtomicBool>,
    /// A newer instance was started: this one is a zombie.
    replaced: Arc<AtomicBool>,
    start: tokio::time::Instant,
}

impl WriterProcess {
    fn open(&self) -> MutexGuard<'_, Option<TxnOutcome>> {
        self.current.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The open transaction ends with `fate`: to the outbox.
    fn end(&self, fate: TxnFate, fenced: bool) {
        if let Some(mut done) = self.open().take() {
            done.fate = fate;
            done.fenced = fenced;
            lock(&self.outbox).txns.push(done);
        }
    }

    /// Transactions until asked to stop: after an error no abort mends, the process inits
    /// again (fencing its own older epoch); fenced, a zombie exits.
    async fn run(self, mut rng: Rng) {
        let mut zombie_fenced = false;
        while !self.stop.load(Ordering::Relaxed) && !zombie_fenced {
            let config = TxnConfig {
                transaction_timeout_ms: TXN_TIMEOUT_MS,
                max_block: TXN_MAX_BLOCK,
                ..TxnConfig::new(self.spec.transactional_id.clone())
            };
            let mut producer = match TransactionalProducer::init(self.cluster.clone(), config).await {
                Ok(p) => p,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            };
            while !self.stop.load(Ordering::Relaxed) {
                let (fenced, healthy) = self.transaction(&mut producer, &mut rng).await;
                if fenced {
                    // A newer instance took over: a zombie ends there. The current instance
                    // (fenced when the coordinator aborted its transaction on timeout and
                    // bumped the epoch) inits again.
                    zombie_fenced = self.replaced.load(Ordering::Relaxed);
                }
                if !healthy {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(self.spec.pause_ms)).await;
            }
            tokio::task::yield_now().await;
        }
    }

    /// One transaction: some partitions, a batch each, then commit or abort. Returns whether
    /// the writer was fenced and whether the producer can go on.
    async fn transaction(&self, producer: &mut TransactionalProducer, rng: &mut Rng) -> (bool, bool) {
        let txn = self.numbers.fetch_add(1, Ordering::Relaxed);
        *self.open() = Some(TxnOutcome {
            writer: self.writer,
            instance: self.instance,
            txn,
            sent: Vec::new(),
            fate: TxnFate::Abandoned,
            fenced: false,
        });
        if producer.begin().is_err() {
            self.end(TxnFate::Abandoned, false);
            return (false, false);
        }
        let mut partitions: Vec<i32> = self
            .spec
            .partitions
            .iter()
            .copied()
            .filter(|_| rng.chance(60))
            .collect();
        if partitions.is_empty()
            && let Some(&p) = rng.pick(&self.spec.partitions)
        {
            partitions.push(p);
        }
        let mut failed: Option<TxnError> = None;
        let mut n = 0u32;
        for p in partitions {
            let tp = TopicPartition::new(&self.spec.topic, p);
            let count = rng.between(1, u64::from(self.spec.max_records.max(1))) as u32;
            let values: Vec<Bytes> = (0..count)
                .map(|i| txn_value(self.writer, self.instance, txn, n + i))
                .collect();
            n += count;
            if let Some(open) = self.open().as_mut() {
                open.sent.push((tp.clone(), values.clone()));
            }
            let records: Vec<(Option<Bytes>, Option<Bytes>)> = values.iter().map(|v| (None, Some(v.clone()))).collect();
            let sent_at = self.start.elapsed();
            match producer.send(&tp, &records).await {
                Ok(base) => {
                    let mut out = lock(&self.outbox);
                    for (i, value) in values.into_iter().enumerate() {
                        out.acks.push(Ack {
                            tp: tp.clone(),
                            offset: base + i as i64,
                            value,
                            sent_at,
                        });
                    }
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let commit = failed.is_none() && !rng.chance(self.spec.abort_percent);
        match failed {
            Some(TxnError::Fenced(_)) => {
                // A fenced producer can neither commit nor abort: only the newer instance's
                // init ends the transaction, with an abort.
                self.end(TxnFate::Abandoned, true);
                (true, false)
            }
            Some(TxnError::Fatal(_)) => {
                self.end(TxnFate::Abandoned, false);
                (false, false)
            }
            _ if commit => {
                if let Some(open) = self.open().as_mut() {
                    open.fate = TxnFate::Unknown;
                }
                match producer.commit().await {
                    Ok(()) => {
                        self.end(TxnFate::Committed, false);
                        (false, true)
                    }
                    Err(e) => {
                        let fenced = matches!(e, TxnError::Fenced(_));
                        self.end(TxnFate::Unknown, fenced);
                        (fenced, false)
                    }
                }
            }
            _ => match producer.abort().await {
                Ok(()) => {
                    self.end(TxnFate::Aborted, false);
                    (false, true)
                }
                Err(e) => {
                    let fenced = matches!(e, TxnError::Fenced(_));
                    self.end(TxnFate::Abandoned, fenced);
                    (fenced, false)
                }
            },
        }
    }
}
