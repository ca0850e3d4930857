//! `kdeck produce`: records split from stdin (or files) at a delimiter, whole files, or
//! `--value`, batched per partition and compressed as asked.

use std::io::BufRead;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use bytes::Bytes;
use kafka_protocol::records::Compression;
use tokio::sync::mpsc;

use super::format::unescape;
use super::properties::Tuning;
use crate::cli::ProduceArgs;
use crate::client::partitioner::partition_for_key;
use crate::remote::KafkaClient;
use crate::remote::ops::{self, OutRecord, join_all};

/// A request carries at most this many records of one partition (batch.num.messages) ...
const BATCH_RECORDS: usize = 1000;
/// ... or about this many bytes of keys and values (batch.size).
const BATCH_BYTES: usize = 1024 * 1024;
/// Records wait this long for more lines before going out, so that typing a line produces it
/// at once while a pipe still fills whole batches (linger.ms).
const LINGER: Duration = Duration::from_millis(20);

/// Everything the flags say, checked before the network is touched.
pub(crate) struct Plan {
    topic: String,
    key: Key,
    /// Records are split from the input at these bytes.
    delimiter: Vec<u8>,
    /// With a key delimiter, an empty key or value is null (kcat -Z).
    null_empty: bool,
    partition: Option<i32>,
    input: Input,
    headers: Vec<(String, Option<Bytes>)>,
    acks: i16,
    compression: Compression,
    linger: Duration,
    batch_records: usize,
    batch_bytes: usize,
    /// A record larger than this (key and value) is refused before sending (message.max.bytes).
    message_max_bytes: Option<usize>,
}

enum Key {
    None,
    Fixed(Bytes),
    /// Split each record at the first occurrence of these bytes (kcat -K); records without
    /// them get the fixed key, if any.
    Delimiter(Vec<u8>, Option<Bytes>),
}

/// Where the records come from.
enum Input {
    /// One record: `--value`.
    Value(String),
    /// Split at the delimiter: stdin, or the files one after the other (kcat -l).
    Split(Vec<PathBuf>),
    /// Each file one record (kcat -P FILE...).
    WholeFiles(Vec<PathBuf>),
}

impl Plan {
    pub(crate) fn new(args: &ProduceArgs, tuning: Tuning) -> Result<Plan> {
        // The flags win over -X, which wins over kdeck's defaults.
        let acks = match args.acks.as_deref() {
            None => tuning.acks.unwrap_or(-1),
            Some("0") => 0,
            Some("1") => 1,
            Some("all" | "-1") => -1,
            Some(other) => bail!("--acks {other:?}: expected 0, 1 or all"),
        };
        let delimiter = match &args.delimiter {
            Some(d) => unescape(d).map_err(|e| anyhow!("--delimiter: {e}"))?,
            None => b"\n".to_vec(),
        };
        if delimiter.is_empty() {
            bail!("--delimiter must not be empty when producing");
        }
        let fixed = args.key.as_ref().map(|k| Bytes::from(k.clone()));
        let key = match (&args.key_delimiter, fixed) {
            (Some(d), fixed) => {
                let d = unescape(d).map_err(|e| anyhow!("--key-delimiter: {e}"))?;
                if d.is_empty() {
                    bail!("--key-delimiter must not be empty");
                }
                Key::Delimiter(d, fixed)
            }
            (None, Some(fixed)) => Key::Fixed(fixed),
            (None, None) => Key::None,
        };
        let input = match (&args.value, args.line_mode) {
            (Some(value), _) => Input::Value(value.clone()),
            (None, true) => Input::Split(args.files.clone()),
            (None, false) if args.files.is_empty() => Input::Split(Vec::new()),
            (None, false) => Input::WholeFiles(args.files.clone()),
        };
        Ok(Plan {
            topic: args.topic.clone(),
            key,
            delimiter,
            null_empty: args.null_empty,
            partition: args.partition,
            input,
            headers: args
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), Some(Bytes::from(v.clone()))))
                .collect(),
            acks,
            compression: args.compression.or(tuning.compression).unwrap_or(Compression::None),
            linger: tuning.linger.unwrap_or(LINGER),
            batch_records: tuning.batch_records.unwrap_or(BATCH_RECORDS),
            batch_bytes: tuning.batch_bytes.unwrap_or(BATCH_BYTES),
            message_max_bytes: tuning.message_max_bytes,
        })
    }

    /// One input record (a delimited piece of the input, a file or --value) as a record.
    fn record(&self, bytes: Vec<u8>) -> OutRecord {
        let (key, value) = match &self.key {
            Key::None => (None, Some(Bytes::from(bytes))),
            Key::Fixed(key) => (Some(key.clone()), Some(Bytes::from(bytes))),
            Key::Delimiter(delimiter, fixed) => match find(&bytes, delimiter) {
                Some(at) => {
                    let bytes = Bytes::from(bytes);
                    let key = bytes.slice(..at);
                    let value = bytes.slice(at + delimiter.len()..);
                    let null_if_empty = |b: Bytes| (!(self.null_empty && b.is_empty())).then_some(b);
                    (null_if_empty(key), null_if_empty(value))
                }
                // kcat: an input record without the delimiter is a value with the -k key.
                None => (fixed.clone(), Some(Bytes::from(bytes))),
            },
        };
        OutRecord {
            key,
            value,
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
    async fn add(&mut self, record: OutRecord) -> Result<()> {
        let partition = self.partition_of(&record);
        let size = record.key.as_ref().map_or(0, Bytes::len) + record.value.as_ref().map_or(0, Bytes::len);
        if let Some(max) = self.plan.message_max_bytes
            && size > max
        {
            bail!("a record of {size} bytes is larger than message.max.bytes ({max})");
        }
        let Some(pending) = usize::try_from(partition).ok().and_then(|p| self.pending.get_mut(p)) else {
            return Ok(());
        };
        pending.records.push(record);
        pending.bytes += size;
        if pending.records.len() >= self.plan.batch_records || pending.bytes >= self.plan.batch_bytes {
            self.send(&[partition]).await;
        }
        Ok(())
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
        let (client, topic, acks, compression) = (
            self.client,
            self.plan.topic.as_str(),
            self.plan.acks,
            self.plan.compression,
        );
        let counts: Vec<(i32, u64)> = batches.iter().map(|(p, r)| (*p, r.len() as u64)).collect();
        let results = join_all(
            batches
                .into_iter()
                .map(|(p, records)| ops::produce_with(client, topic, p, records, acks, compression))
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
    match &producer.plan.input {
        Input::Value(value) => {
            let record = producer.plan.record(value.clone().into_bytes());
            producer.add(record).await?;
        }
        Input::WholeFiles(files) => {
            for file in files.clone() {
                let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
                let record = producer.plan.record(bytes);
                producer.add(record).await?;
            }
        }
        Input::Split(files) => {
            let mut records = read_records(
                files.clone(),
                producer.plan.delimiter.clone(),
                producer.plan.batch_records,
            );
            let linger = producer.plan.linger;
            loop {
                let bytes = match tokio::time::timeout(linger, records.recv()).await {
                    Ok(Some(bytes)) => bytes?,
                    Ok(None) => break,
                    Err(_) => {
                        producer.flush().await;
                        continue;
                    }
                };
                let record = producer.plan.record(bytes);
                producer.add(record).await?;
            }
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

/// The input's records without their delimiter (a last one without it counts; empty ones are
/// skipped, as kcat does; bytes are bytes, never checked for UTF-8): stdin, or `files` one
/// after the other. Read on a thread of their own so a slow input never stalls the
/// connections.
fn read_records(files: Vec<PathBuf>, delimiter: Vec<u8>, batch: usize) -> mpsc::Receiver<Result<Vec<u8>>> {
    let (tx, rx) = mpsc::channel(4 * batch.min(BATCH_RECORDS));
    std::thread::spawn(move || {
        let send_all = |reader: &mut dyn BufRead, name: &str| -> bool {
            let mut split = Split {
                reader,
                delimiter: &delimiter,
            };
            loop {
                let next = match split.next_record() {
                    Ok(Some(record)) if record.is_empty() => continue,
                    Ok(Some(record)) => Ok(record),
                    Ok(None) => return true,
                    Err(error) => Err(anyhow::Error::new(error).context(format!("cannot read {name}"))),
                };
                let failed = next.is_err();
                if tx.blocking_send(next).is_err() || failed {
                    return false;
                }
            }
        };
        if files.is_empty() {
            send_all(&mut std::io::stdin().lock(), "stdin");
            return;
        }
        for file in files {
            let name = file.display().to_string();
            match std::fs::File::open(&file) {
                Ok(f) => {
                    if !send_all(&mut std::io::BufReader::new(f), &name) {
                        return;
                    }
                }
                Err(error) => {
                    let _ = tx.blocking_send(Err(anyhow::Error::new(error).context(format!("cannot read {name}"))));
                    return;
                }
            }
        }
    });
    rx
}

/// Records of a byte stream split at a delimiter of one or more bytes.
struct Split<'a> {
    reader: &'a mut dyn BufRead,
    delimiter: &'a [u8],
}

impl Split<'_> {
    /// The next record without its delimiter; None at the end of the input.
    fn next_record(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        let Some(&last) = self.delimiter.last() else {
            let mut all = Vec::new();
            self.reader.read_to_end(&mut all)?;
            return Ok((!all.is_empty()).then_some(all));
        };
        let mut record = Vec::new();
        loop {
            if self.reader.read_until(last, &mut record)? == 0 {
                return Ok((!record.is_empty()).then_some(record));
            }
            if record.ends_with(self.delimiter) {
                record.truncate(record.len() - self.delimiter.len());
                return Ok(Some(record));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(input: &[u8], delimiter: &[u8]) -> Vec<Vec<u8>> {
        let mut reader = std::io::Cursor::new(input.to_vec());
        let mut split = Split {
            reader: &mut reader,
            delimiter,
        };
        std::iter::from_fn(|| split.next_record().expect("in memory")).collect()
    }

    #[test]
    fn input_splits_at_any_delimiter_bytes_and_keeps_every_other_byte() {
        assert_eq!(split(b"a\nb\n", b"\n"), vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(
            split(b"a\nb", b"\n"),
            vec![b"a".to_vec(), b"b".to_vec()],
            "a last record without one"
        );
        assert_eq!(
            split(b"\xff\x00x||y|z||", b"||"),
            vec![b"\xff\x00x".to_vec(), b"y|z".to_vec()],
            "a multi-byte delimiter, a lone | and invalid UTF-8 inside"
        );
        assert_eq!(split(b"1\x002\x00", b"\x00"), vec![b"1".to_vec(), b"2".to_vec()]);
    }
}
