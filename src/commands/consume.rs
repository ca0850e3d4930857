//! `kdeck consume`: the records of topics (named, or matching ^patterns), from assigned
//! partitions or as a group member.

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use regex::Regex;
use tokio::time::Instant;

use super::Output;
use super::format::Format;
use super::member::{Member, Membership};
use super::properties::Tuning;
use crate::cli::ConsumeArgs;
use crate::remote::KafkaClient;
use crate::remote::client::ClusterMetadata;
use crate::remote::ops::{self, FetchedPartition, OffsetSpec, join_all};

/// How long a fetch waits at the leader for new records (fetch.max.wait.ms).
const MAX_WAIT: Duration = Duration::from_millis(500);
/// Bytes per partition per fetch (max.partition.fetch.bytes).
const FETCH_BYTES: i32 = 1024 * 1024;
/// The Java consumer's heartbeat.interval.ms and auto.commit.interval.ms defaults.
const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(3);
const COMMIT_INTERVAL: Duration = Duration::from_secs(5);
/// Kafka's session.timeout.ms default: the coordinator drops a member silent this long.
const SESSION_TIMEOUT_MS: i32 = 30_000;
/// A group member subscribed by pattern looks for new or deleted matching topics this often
/// (librdkafka's topic.metadata.refresh.interval.ms is 5 minutes; a console user waits less).
const PATTERN_RECHECK: Duration = Duration::from_secs(10);

/// Where to start reading a partition (`--from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartAt {
    Beginning,
    End,
    Offset(i64),
    /// This many records before the end (never before the log start).
    BeforeEnd(i64),
    /// The first record at or after this time, in ms since the epoch.
    Time(i64),
}

impl StartAt {
    pub(crate) fn parse(text: &str) -> Result<StartAt> {
        let text = text.trim();
        match text {
            "beginning" | "earliest" => return Ok(StartAt::Beginning),
            "end" | "latest" => return Ok(StartAt::End),
            _ => {}
        }
        if let Some(n) = text.strip_prefix('-')
            && let Ok(n) = n.parse::<i64>()
        {
            return Ok(StartAt::BeforeEnd(n));
        }
        if let Ok(offset) = text.parse::<i64>() {
            return Ok(StartAt::Offset(offset));
        }
        if let Some(ms) = text.strip_suffix("ms").or_else(|| text.strip_prefix("s@"))
            && let Ok(ms) = ms.parse::<i64>()
            && ms >= 0
        {
            return Ok(StartAt::Time(ms));
        }
        if let Ok(time) = chrono::DateTime::parse_from_rfc3339(text) {
            return Ok(StartAt::Time(time.timestamp_millis()));
        }
        bail!(
            "--from {text:?}: expected beginning, end, an offset, -N (N before the end), an RFC 3339 time \
             (2024-05-01T12:00:00Z) or ms since the epoch (1714564800000ms, or kcat's s@1714564800000)"
        )
    }
}

/// A topic to read: by name, or every topic whose name matches (kcat's ^pattern).
#[derive(Debug, Clone)]
enum Subscribed {
    Name(String),
    Pattern(Regex),
}

/// Everything the flags say, checked before the network is touched.
pub(crate) struct Plan {
    subscription: Vec<Subscribed>,
    group: Option<String>,
    partition: Option<i32>,
    start: StartAt,
    count: Option<u64>,
    exit_at_end: bool,
    format: Format,
    auto_commit: bool,
    commit_interval: Duration,
    heartbeat_interval: Duration,
    session_timeout_ms: i32,
    fetch_wait: Duration,
    fetch_bytes: i32,
}

impl Plan {
    pub(crate) fn new(args: &ConsumeArgs, tuning: Tuning) -> Result<Plan> {
        let subscription = args
            .topic
            .iter()
            .chain(&args.topics)
            .map(|topic| {
                if topic.starts_with('^') {
                    Regex::new(topic)
                        .map(Subscribed::Pattern)
                        .map_err(|e| anyhow!("topic pattern {topic:?}: {e}"))
                } else {
                    Ok(Subscribed::Name(topic.clone()))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        if subscription.is_empty() {
            bail!("which topics? give --topic TOPIC (repeatable, or ^REGEX) or the topics after the flags");
        }
        let group = args.group.clone().or(tuning.group);
        if group.is_some() && args.partition.is_some() {
            bail!("--partition reads one partition alone: not with a group");
        }
        let start = match (&args.from, tuning.reset_to_earliest) {
            (Some(from), _) => StartAt::parse(from)?,
            (None, Some(false)) => StartAt::End,
            (None, _) => StartAt::Beginning,
        };
        let format = if args.json { "json" } else { args.format.as_str() };
        Ok(Plan {
            subscription,
            group,
            partition: args.partition,
            start,
            count: args.count,
            exit_at_end: args.exit,
            format: Format::parse(format, args.delimiter.as_deref(), args.key_delimiter.as_deref())?,
            auto_commit: tuning.auto_commit.unwrap_or(true),
            commit_interval: tuning.commit_interval.unwrap_or(COMMIT_INTERVAL),
            heartbeat_interval: tuning.heartbeat_interval.unwrap_or(HEARTBEAT_INTERVAL),
            session_timeout_ms: tuning.session_timeout_ms.unwrap_or(SESSION_TIMEOUT_MS),
            fetch_wait: tuning.fetch_wait.unwrap_or(MAX_WAIT),
            fetch_bytes: [tuning.partition_fetch_bytes, tuning.fetch_max_bytes]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(FETCH_BYTES),
        })
    }

    fn has_pattern(&self) -> bool {
        self.subscription.iter().any(|s| matches!(s, Subscribed::Pattern(_)))
    }

    /// The topics the subscription names in `metadata`, sorted: every named topic (which must
    /// exist) and the topics a pattern matches, internal ones left out (as the Java consumer's
    /// exclude.internal.topics).
    fn topics(&self, metadata: &ClusterMetadata) -> Result<Vec<String>> {
        let mut topics = Vec::new();
        for subscribed in &self.subscription {
            match subscribed {
                Subscribed::Name(name) => {
                    metadata
                        .topic(name)
                        .filter(|t| t.error == 0 && !t.partitions.is_empty())
                        .ok_or_else(|| anyhow!("topic {name} does not exist"))?;
                    topics.push(name.clone());
                }
                Subscribed::Pattern(pattern) => topics.extend(
                    metadata
                        .topics
                        .iter()
                        .filter(|t| !t.internal && t.error == 0 && pattern.is_match(&t.name))
                        .map(|t| t.name.clone()),
                ),
            }
        }
        topics.sort();
        topics.dedup();
        Ok(topics)
    }
}

/// One partition being read.
#[derive(Debug, Clone)]
struct Position {
    topic: String,
    partition: i32,
    offset: i64,
    /// With `-e`: the last fetch found nothing past `offset`.
    at_end: bool,
    /// The offset last committed (group mode), to skip commits that change nothing.
    committed: Option<i64>,
}

struct Reader<'a> {
    client: &'a KafkaClient,
    plan: Plan,
    positions: Vec<Position>,
    printed: u64,
    buf: Vec<u8>,
}

impl Reader<'_> {
    fn done(&self) -> bool {
        self.plan.count.is_some_and(|n| self.printed >= n)
            || (self.plan.exit_at_end && self.positions.iter().all(|p| p.at_end))
    }

    /// Start offsets for `partitions`, as `--from` says.
    async fn resolve(&self, partitions: &[(String, i32)]) -> Result<Vec<i64>> {
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        let offsets = |spec| async move {
            ops::list_offsets(self.client, partitions, spec)
                .await
                .into_iter()
                .collect::<Result<Vec<i64>, _>>()
                .context("cannot find where to start reading")
        };
        Ok(match self.plan.start {
            StartAt::Beginning => offsets(OffsetSpec::Earliest).await?,
            StartAt::End => offsets(OffsetSpec::Latest).await?,
            StartAt::Offset(offset) => vec![offset; partitions.len()],
            StartAt::BeforeEnd(n) => {
                let starts = offsets(OffsetSpec::Earliest).await?;
                let ends = offsets(OffsetSpec::Latest).await?;
                starts
                    .into_iter()
                    .zip(ends)
                    .map(|(start, end)| end.saturating_sub(n).max(start))
                    .collect()
            }
            StartAt::Time(ms) => {
                let at = offsets(OffsetSpec::Timestamp(ms)).await?;
                let ends = offsets(OffsetSpec::Latest).await?;
                // -1: no record that late yet; start at the end, as Kafka's seek by time does.
                at.into_iter()
                    .zip(ends)
                    .map(|(at, end)| if at < 0 { end } else { at })
                    .collect()
            }
        })
    }

    /// One fetch from every partition not yet at its end, concurrently; prints what came.
    async fn fetch_round(&mut self, out: &mut Output) -> Result<()> {
        let active: Vec<usize> = (0..self.positions.len())
            .filter(|&i| !(self.plan.exit_at_end && self.positions[i].at_end))
            .collect();
        if active.is_empty() {
            // A group member without partitions: nothing to fetch until the next rebalance.
            tokio::time::sleep(self.plan.fetch_wait).await;
            return Ok(());
        }
        let (client, wait, bytes) = (self.client, self.plan.fetch_wait, self.plan.fetch_bytes);
        let fetches = active
            .iter()
            .map(|&i| {
                let position = &self.positions[i];
                ops::fetch(
                    client,
                    &position.topic,
                    position.partition,
                    position.offset,
                    wait,
                    bytes,
                )
            })
            .collect();
        let results = join_all(fetches).await;
        for (i, result) in active.into_iter().zip(results) {
            let fetched: FetchedPartition = result?;
            for record in &fetched.records {
                if self.plan.count.is_some_and(|n| self.printed >= n) {
                    break;
                }
                self.buf.clear();
                self.plan.format.write(&self.positions[i].topic, record, &mut self.buf);
                out.write(&self.buf)?;
                self.printed += 1;
                self.positions[i].offset = record.offset + 1;
            }
            if self.plan.count.is_none_or(|n| self.printed < n) {
                self.positions[i].offset = self.positions[i].offset.max(fetched.next_offset);
            }
            self.positions[i].at_end = self.positions[i].offset >= fetched.high_watermark;
        }
        out.flush()
    }
}

pub(crate) async fn run(plan: Plan, client: &KafkaClient, out: &mut Output) -> Result<()> {
    let metadata = client.refresh_metadata().await?;
    let topics = plan.topics(&metadata)?;
    if plan.group.is_none() && topics.is_empty() {
        bail!("no topic matches the given patterns");
    }
    let mut reader = Reader {
        client,
        plan,
        positions: Vec::new(),
        printed: 0,
        buf: Vec::new(),
    };
    if reader.plan.count == Some(0) {
        return Ok(());
    }
    match reader.plan.group.clone() {
        None => {
            let partitions = partitions_to_read(&metadata, &topics, reader.plan.partition)?;
            let offsets = reader.resolve(&partitions).await?;
            reader.positions = positions(&partitions, &offsets, None);
            while !reader.done() {
                reader.fetch_round(out).await?;
            }
            Ok(())
        }
        Some(group) => consume_in_group(&mut reader, &group, topics, out).await,
    }
}

/// Every partition of `topics`, or with `--partition` that one of the one topic.
fn partitions_to_read(metadata: &ClusterMetadata, topics: &[String], only: Option<i32>) -> Result<Vec<(String, i32)>> {
    let of = |topic: &String| -> Vec<i32> {
        metadata
            .topic(topic)
            .map(|t| t.partitions.iter().map(|p| p.partition).collect())
            .unwrap_or_default()
    };
    match (only, topics) {
        (None, _) => Ok(topics
            .iter()
            .flat_map(|t| of(t).into_iter().map(move |p| (t.clone(), p)))
            .collect()),
        (Some(p), [topic]) => {
            let all = of(topic);
            if !all.contains(&p) {
                bail!("topic {topic} has no partition {p} (it has {})", all.len());
            }
            Ok(vec![(topic.clone(), p)])
        }
        (Some(_), many) => bail!(
            "--partition needs exactly one topic, not {} ({})",
            many.len(),
            many.join(", ")
        ),
    }
}

fn positions(partitions: &[(String, i32)], offsets: &[i64], committed: Option<&[Option<i64>]>) -> Vec<Position> {
    partitions
        .iter()
        .zip(offsets)
        .enumerate()
        .map(|(i, ((topic, partition), &offset))| Position {
            topic: topic.clone(),
            partition: *partition,
            offset,
            at_end: false,
            committed: committed.and_then(|c| c.get(i).copied().flatten()),
        })
        .collect()
}

/// Joins, reads the assigned partitions from the group's committed offsets (else `--from`),
/// heartbeats and commits on schedule, and on the way out (count reached, `-e`, Ctrl-C)
/// commits and leaves. Subscribed by pattern, it rejoins when the matching topics change.
async fn consume_in_group(reader: &mut Reader<'_>, group: &str, topics: Vec<String>, out: &mut Output) -> Result<()> {
    let mut member = Member::new(reader.client, group, reader.plan.session_timeout_ms);
    let mut subscribed = topics;
    assign(reader, &mut member, &subscribed).await?;
    let mut next_heartbeat = Instant::now() + reader.plan.heartbeat_interval;
    let mut next_commit = Instant::now() + reader.plan.commit_interval;
    let mut next_recheck = Instant::now() + PATTERN_RECHECK;
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    let result: Result<()> = async {
        while !reader.done() {
            tokio::select! {
                _ = &mut interrupted => return Ok(()),
                round = reader.fetch_round(out) => round?,
            }
            let now = Instant::now();
            let mut membership = Membership::Stable;
            if now >= next_commit {
                membership = commit(reader, &member).await?;
                next_commit = now + reader.plan.commit_interval;
            }
            if membership == Membership::Stable && now >= next_heartbeat {
                membership = member.heartbeat().await?;
                next_heartbeat = now + reader.plan.heartbeat_interval;
            }
            if reader.plan.has_pattern() && now >= next_recheck {
                next_recheck = now + PATTERN_RECHECK;
                let metadata = reader.client.refresh_metadata().await?;
                let matching = reader.plan.topics(&metadata)?;
                if matching != subscribed {
                    subscribed = matching;
                    membership = Membership::Rejoin;
                }
            }
            if membership == Membership::Rejoin {
                // Eager rebalance: hand the partitions back with their offsets committed.
                commit(reader, &member).await?;
                assign(reader, &mut member, &subscribed).await?;
                next_heartbeat = Instant::now() + reader.plan.heartbeat_interval;
            }
        }
        Ok(())
    }
    .await;
    let committed = commit(reader, &member).await;
    let left = member.leave().await;
    result?;
    committed.context("cannot commit the group's offsets")?;
    if let Err(error) = left {
        eprintln!("kdeck: {error:#}");
    }
    Ok(())
}

/// (Re)joins subscribed to `topics` and positions the reader on the new assignment.
async fn assign(reader: &mut Reader<'_>, member: &mut Member<'_>, topics: &[String]) -> Result<()> {
    let partitions = member.join(topics).await?;
    let committed = ops::committed_offsets(reader.client, member.group()).await?;
    let committed: Vec<Option<i64>> = partitions
        .iter()
        .map(|(topic, p)| {
            committed
                .iter()
                .find(|c| &c.topic == topic && c.partition == *p)
                .map(|c| c.offset)
        })
        .collect();
    let missing: Vec<(String, i32)> = partitions
        .iter()
        .zip(&committed)
        .filter(|(_, c)| c.is_none())
        .map(|(tp, _)| tp.clone())
        .collect();
    let mut from_flag = reader.resolve(&missing).await?.into_iter();
    let offsets: Vec<i64> = committed
        .iter()
        .map(|c| c.or_else(|| from_flag.next()).unwrap_or(0))
        .collect();
    reader.positions = positions(&partitions, &offsets, Some(&committed));
    Ok(())
}

/// Commits the positions that moved since the last commit (none with enable.auto.commit=false).
async fn commit(reader: &mut Reader<'_>, member: &Member<'_>) -> Result<Membership> {
    if !reader.plan.auto_commit {
        return Ok(Membership::Stable);
    }
    let moved: Vec<(String, i32, i64)> = reader
        .positions
        .iter()
        .filter(|p| p.committed != Some(p.offset))
        .map(|p| (p.topic.clone(), p.partition, p.offset))
        .collect();
    let membership = member.commit(&moved).await?;
    if membership == Membership::Stable {
        for position in &mut reader.positions {
            position.committed = Some(position.offset);
        }
    }
    Ok(membership)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_accepts_kafka_positions_and_times() {
        assert_eq!(StartAt::parse("beginning").expect("valid"), StartAt::Beginning);
        assert_eq!(StartAt::parse("end").expect("valid"), StartAt::End);
        assert_eq!(StartAt::parse("42").expect("valid"), StartAt::Offset(42));
        assert_eq!(StartAt::parse("-10").expect("valid"), StartAt::BeforeEnd(10));
        assert_eq!(
            StartAt::parse("1714564800000ms").expect("valid"),
            StartAt::Time(1_714_564_800_000)
        );
        assert_eq!(
            StartAt::parse("2024-05-01T12:00:00Z").expect("valid"),
            StartAt::Time(1_714_564_800_000)
        );
        assert_eq!(
            StartAt::parse("2024-05-01T14:00:00+02:00").expect("valid"),
            StartAt::Time(1_714_564_800_000)
        );
        assert_eq!(
            StartAt::parse("s@1714564800000").expect("kcat's form"),
            StartAt::Time(1_714_564_800_000)
        );
        let error = StartAt::parse("nonsense").unwrap_err().to_string();
        assert!(error.contains("--from \"nonsense\""), "{error}");
    }
}
