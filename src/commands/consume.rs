//! `kdeck consume`: a topic's records, from assigned partitions or as a group member.

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use tokio::time::Instant;

use super::Output;
use super::format::Format;
use super::member::{Member, Membership};
use crate::cli::ConsumeArgs;
use crate::remote::KafkaClient;
use crate::remote::ops::{self, FetchedPartition, OffsetSpec, join_all};

/// How long a fetch waits at the leader for new records (fetch.max.wait.ms).
const MAX_WAIT: Duration = Duration::from_millis(500);
/// Bytes per partition per fetch (max.partition.fetch.bytes).
const FETCH_BYTES: i32 = 1024 * 1024;
/// The Java consumer's heartbeat.interval.ms and auto.commit.interval.ms defaults.
const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(3);
const COMMIT_INTERVAL: Duration = Duration::from_secs(5);

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
        if let Some(ms) = text.strip_suffix("ms")
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
             (2024-05-01T12:00:00Z) or ms since the epoch (1714564800000ms)"
        )
    }
}

/// Everything the flags say, checked before the network is touched.
pub(crate) struct Plan {
    topic: String,
    group: Option<String>,
    partition: Option<i32>,
    start: StartAt,
    count: Option<u64>,
    exit_at_end: bool,
    format: Format,
}

impl Plan {
    pub(crate) fn new(args: &ConsumeArgs) -> Result<Plan> {
        Ok(Plan {
            topic: args.topic.clone(),
            group: args.group.clone(),
            partition: args.partition,
            start: StartAt::parse(&args.from)?,
            count: args.count,
            exit_at_end: args.exit,
            format: Format::parse(&args.format)?,
        })
    }
}

/// One partition being read.
#[derive(Debug, Clone, Copy)]
struct Position {
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
    async fn resolve(&self, partitions: &[i32]) -> Result<Vec<i64>> {
        let wanted: Vec<(String, i32)> = partitions.iter().map(|&p| (self.plan.topic.clone(), p)).collect();
        let wanted = &wanted;
        let offsets = |spec| async move {
            ops::list_offsets(self.client, wanted, spec)
                .await
                .into_iter()
                .collect::<Result<Vec<i64>, _>>()
                .with_context(|| format!("cannot find where to start reading {}", self.plan.topic))
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
            tokio::time::sleep(MAX_WAIT).await;
            return Ok(());
        }
        let (client, topic) = (self.client, self.plan.topic.as_str());
        let fetches = active
            .iter()
            .map(|&i| {
                let position = self.positions[i];
                ops::fetch(
                    client,
                    topic,
                    position.partition,
                    position.offset,
                    MAX_WAIT,
                    FETCH_BYTES,
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
                self.plan.format.write(&self.plan.topic, record, &mut self.buf);
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
    let topic = metadata
        .topic(&plan.topic)
        .filter(|t| t.error == 0 && !t.partitions.is_empty())
        .ok_or_else(|| anyhow!("topic {} does not exist", plan.topic))?;
    let all: Vec<i32> = topic.partitions.iter().map(|p| p.partition).collect();
    if let Some(p) = plan.partition
        && !all.contains(&p)
    {
        bail!("topic {} has no partition {p} (it has {})", plan.topic, all.len());
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
            let partitions = reader.plan.partition.map_or(all, |p| vec![p]);
            let offsets = reader.resolve(&partitions).await?;
            reader.positions = positions(&partitions, &offsets, None);
            while !reader.done() {
                reader.fetch_round(out).await?;
            }
            Ok(())
        }
        Some(group) => consume_in_group(&mut reader, &group, out).await,
    }
}

fn positions(partitions: &[i32], offsets: &[i64], committed: Option<&[Option<i64>]>) -> Vec<Position> {
    partitions
        .iter()
        .zip(offsets)
        .enumerate()
        .map(|(i, (&partition, &offset))| Position {
            partition,
            offset,
            at_end: false,
            committed: committed.and_then(|c| c.get(i).copied().flatten()),
        })
        .collect()
}

/// Joins, reads the assigned partitions from the group's committed offsets (else `--from`),
/// heartbeats and commits on schedule, and on the way out (count reached, `-e`, Ctrl-C)
/// commits and leaves.
async fn consume_in_group(reader: &mut Reader<'_>, group: &str, out: &mut Output) -> Result<()> {
    let mut member = Member::new(reader.client, group, &reader.plan.topic);
    assign(reader, &mut member).await?;
    let mut next_heartbeat = Instant::now() + HEARTBEAT_INTERVAL;
    let mut next_commit = Instant::now() + COMMIT_INTERVAL;
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
                next_commit = now + COMMIT_INTERVAL;
            }
            if membership == Membership::Stable && now >= next_heartbeat {
                membership = member.heartbeat().await?;
                next_heartbeat = now + HEARTBEAT_INTERVAL;
            }
            if membership == Membership::Rejoin {
                // Eager rebalance: hand the partitions back with their offsets committed.
                commit(reader, &member).await?;
                assign(reader, &mut member).await?;
                next_heartbeat = Instant::now() + HEARTBEAT_INTERVAL;
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

/// (Re)joins and positions the reader on the new assignment.
async fn assign(reader: &mut Reader<'_>, member: &mut Member<'_>) -> Result<()> {
    let partitions = member.join().await?;
    let committed = ops::committed_offsets(reader.client, member.group()).await?;
    let committed: Vec<Option<i64>> = partitions
        .iter()
        .map(|&p| {
            committed
                .iter()
                .find(|c| c.topic == reader.plan.topic && c.partition == p)
                .map(|c| c.offset)
        })
        .collect();
    let missing: Vec<i32> = partitions
        .iter()
        .zip(&committed)
        .filter(|(_, c)| c.is_none())
        .map(|(&p, _)| p)
        .collect();
    let mut from_flag = reader.resolve(&missing).await?.into_iter();
    let offsets: Vec<i64> = committed
        .iter()
        .map(|c| c.or_else(|| from_flag.next()).unwrap_or(0))
        .collect();
    reader.positions = positions(&partitions, &offsets, Some(&committed));
    Ok(())
}

/// Commits the positions that moved since the last commit.
async fn commit(reader: &mut Reader<'_>, member: &Member<'_>) -> Result<Membership> {
    let moved: Vec<(i32, i64)> = reader
        .positions
        .iter()
        .filter(|p| p.committed != Some(p.offset))
        .map(|p| (p.partition, p.offset))
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
        let error = StartAt::parse("nonsense").unwrap_err().to_string();
        assert!(error.contains("--from \"nonsense\""), "{error}");
    }
}
