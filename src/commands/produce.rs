//! `kdeck produce`: one record per stdin line (or `--value`), batched per partition.

use std::io::BufRead;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use bytes::Bytes;
use tokio::sync::mpsc;

use crate::cli::ProduceArgs;
use crate::client::partitioner::partition_for_key;
use crate::remote::KafkaClient;
use crate::remote::ops::{self, OutRecord, join_all};

/// A request carries at most this many records of one partition ...
const BATCH_RECORDS: usize = 1000;
/// ... or about this many bytes of keys and values.
const BATCH_BYTES: usize = 1024 * 1024;
/// Records wait this long for more lines before going out, so that typing a line produces it
/// at once while a pipe still fills whole batches (linger.ms).
const LINGER: Duration = Duration::from_millis(20);

/// Everything the flags say, checked before the network is touched.
pub(crate) struct Plan {
    topic: String,
    key: Key,
    partition: Option<i32>,
    value: Option<String>,
    headers: Vec<(String, Option<Bytes>)>,
    acks: i16,
}

enum Key {
    None,
    Fixed(Bytes),
    /// Split each line at the first occurrence of these bytes (kcat -K).
    Delimiter(Vec<u8>),
}

impl Plan {
    pub(crate) fn new(args: &ProduceArgs) -> Result<Plan> {
        let acks = match args.acks.as_str() {
            "0" => 0,
            "1" => 1,
            "all" | "-1" => -1,
            other => bail!("--acks {other:?}: expected 0, 1 or all"),
        };
        let key = match (&args.key, &args.key_delimiter) {
            (Some(key), _) => Key::Fixed(Bytes::from(key.clone())),
            (None, Some(delimiter)) if delimiter.is_empty() => bail!("--key-delimiter must not be empty"),
            (None, Some(delimiter)) => Key::Delimiter(delimiter.as_bytes().to_vec()),
            (None, None) => Key::None,
        };
        Ok(Plan {
            topic: args.topic.clone(),
            key,
            partition: args.partition,
            value: args.value.clone(),
            headers: args
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), Some(Bytes::from(v.clone()))))
                .collect(),
            acks,
        })
    }

    fn record(&self, line: Vec<u8>) -> OutRecord {
        let (key, value) = match &self.key {
            Key::None => (None, Bytes::from(line)),
            Key::Fixed(key) => (Some(key.clone()), Bytes::from(line)),
            Key::Delimiter(delimiter) => match find(&line, delimiter) {
                Some(at) => {
                    let line = Bytes::from(line);
                    (Some(line.slice(..at)), line.slice(at + delimiter.len()..))
                }
                // kcat: a line without the delimiter is a value without a key.
                None => (None, Bytes::from(line)),
            },
        };
        OutRecord {
            key,
            value: Some(value),
            headers: self.headers.clone(),
            timestamp: None,
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Records waiting to go to one partition.
#[derive(Default)]
struct Pending {
    records: Vec<OutRecord>,
    bytes: usize,
}

struct Producer<'a> {
    client: &'a KafkaClient,
    plan: Plan,
    partitions: i32,
    pending: Vec<Pending>,
    /// Where keyless records go until their batch leaves (the sticky partitioner).
    sticky: i32,
    produced: u64,
    failed: u64,
    first_error: Option<String>,
}

impl Producer<'_> {
    fn partition_of(&self, record: &OutRecord) -> i32 {
        match (self.plan.partition, &record.key) {
            (Some(p), _) => p,
            (None, Some(key)) => partition_for_key(key, self.partitions),
            (None, None) => self.sticky,
        }
    }

    /// Queues `record`; sends its partition's batch once full.
    async fn add(&mut self, record: OutRecord) {
        let partition = self.partition_of(&record);
        let size = record.key.as_ref().map_or(0, Bytes::len) + record.value.as_ref().map_or(0, Bytes::len);
        let Some(pending) = usize::try_from(partition).ok().and_then(|p| self.pending.get_mut(p)) else {
            return;
        };
        pending.records.push(record);
        pending.bytes += size;
        if pending.records.len() >= BATCH_RECORDS || pending.bytes >= BATCH_BYTES {
            self.send(&[partition]).await;
        }
    }

    /// Sends every partition's waiting records, the partitions concurrently.
    async fn flush(&mut self) {
        let waiting: Vec<i32> = (0..self.partitions)
            .filter(|p| {
                usize::try_from(*p)
                    .ok()
                    .and_then(|p| self.pending.get(p))
                    .is_some_and(|p| !p.records.is_empty())
            })
            .collect();
        self.send(&waiting).await;
    }

    async fn send(&mut self, partitions: &[i32]) {
        let batches: Vec<(i32, Vec<OutRecord>)> = partitions
            .iter()
            .filter_map(|&p| {
                let pending = self.pending.get_mut(usize::try_from(p).ok()?)?;
                Some((p, std::mem::take(pending).records))
            })
            .collect();
        let (client, topic, acks) = (self.client, self.plan.topic.as_str(), self.plan.acks);
        let counts: Vec<(i32, u64)> = batches.iter().map(|(p, r)| (*p, r.len() as u64)).collect();
        let results = join_all(
            batches
                .into_iter()
                .map(|(p, records)| ops::produce(client, topic, p, records, acks))
                .collect(),
        )
        .await;
        for ((partition, count), result) in counts.into_iter().zip(results) {
            match result {
                Ok(_) => self.produced += count,
                Err(error) => {
                    self.failed += count;
                    self.first_error.get_or_insert_with(|| error.to_string());
                }
            }
            if partition == self.sticky && self.partitions > 0 {
                self.sticky = (self.sticky + 1) % self.partitions;
            }
        }
    }
}

pub(crate) async fn run(plan: Plan, client: &KafkaClient) -> Result<()> {
    let metadata = client.refresh_metadata().await?;
    let topic = metadata
        .topic(&plan.topic)
        .filter(|t| t.error == 0 && !t.partitions.is_empty())
        .ok_or_else(|| anyhow!("topic {} does not exist", plan.topic))?;
    let partitions = i32::try_from(topic.partitions.len()).unwrap_or(i32::MAX);
    if let Some(p) = plan.partition
        && p >= partitions
    {
        bail!("topic {} has no partition {p} (it has {partitions})", plan.topic);
    }
    // Start the keyless records somewhere different each run, as Kafka's random choice does.
    let sticky = i32::try_from(chrono::Utc::now().timestamp_subsec_nanos() % partitions.unsigned_abs()).unwrap_or(0);
    let mut producer = Producer {
        client,
        pending: (0..partitions).map(|_| Pending::default()).collect(),
        partitions,
        sticky,
        plan,
        produced: 0,
        failed: 0,
        first_error: None,
    };
    if let Some(value) = producer.plan.value.clone() {
        let record = producer.plan.record(value.into_bytes());
        producer.add(record).await;
    } else {
        let mut lines = read_stdin();
        loop {
            let line = match tokio::time::timeout(LINGER, lines.recv()).await {
                Ok(Some(line)) => line.context("cannot read stdin")?,
                Ok(None) => break,
                Err(_) => {
                    producer.flush().await;
                    continue;
                }
            };
            let record = producer.plan.record(line);
            producer.add(record).await;
        }
    }
    producer.flush().await;
    if producer.plan.acks == 0 {
        let mut leaders = Vec::new();
        for partition in 0..partitions {
            if let Ok(leader) = client.leader_of(&producer.plan.topic, partition).await
                && !leaders.contains(&leader)
            {
                leaders.push(leader);
            }
        }
        for result in join_all(leaders.into_iter().map(|l| ops::barrier(client, l)).collect()).await {
            result?;
        }
    }
    if producer.failed > 0 {
        bail!(
            "{} of {} records were not produced: {}",
            producer.failed,
            producer.failed + producer.produced,
            producer.first_error.unwrap_or_default()
        );
    }
    Ok(())
}

/// Lines of stdin without their `\n` (a last line without one counts; bytes are not checked
/// for UTF-8), read on a thread of their own so a slow stdin never stalls the connections.
fn read_stdin() -> mpsc::Receiver<std::io::Result<Vec<u8>>> {
    let (tx, rx) = mpsc::channel(4 * BATCH_RECORDS);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        loop {
            let mut line = Vec::new();
            match stdin.read_until(b'\n', &mut line) {
                Ok(0) => return,
                Ok(_) => {
                    if line.last() == Some(&b'\n') {
                        line.pop();
                    }
                    if tx.blocking_send(Ok(line)).is_err() {
                        return;
                    }
                }
                Err(error) => {
                    let _ = tx.blocking_send(Err(error));
                    return;
                }
            }
        }
    });
    rx
}
