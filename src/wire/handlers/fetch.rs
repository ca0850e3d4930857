//! Fetch (long-polling on the high watermark), ListOffsets and OffsetForLeaderEpoch.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchResponse, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderEpochResponse, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{FetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest, ProducerId};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{BrokerDown, Context, codes, reached, topic_name};
use crate::engine::{ConsumerRead, ErrorCode, FetchedRecords, IsolationLevel, OffsetSpec, TopicPartition};

/// One partition of a fetch request.
#[derive(Clone)]
struct Wanted {
    tp: TopicPartition,
    offset: i64,
    leader_epoch: i32,
    max_bytes: usize,
    isolation: IsolationLevel,
}

impl Wanted {
    fn read(&self, max_wait: Duration) -> ConsumerRead {
        ConsumerRead {
            offset: self.offset,
            current_leader_epoch: self.leader_epoch,
            max_bytes: self.max_bytes,
            max_wait,
            isolation: self.isolation,
        }
    }
}

type Outcome = Result<FetchedRecords, ErrorCode>;

fn has_records(outcome: &Outcome) -> bool {
    outcome.as_ref().map_or(true, |d| !d.records.is_empty())
}

/// Reads every partition once, without waiting.
async fn read_all(ctx: &Context, wanted: &[Wanted]) -> Result<Vec<Outcome>, BrokerDown> {
    let mut tasks = Vec::with_capacity(wanted.len());
    for w in wanted {
        let cluster = ctx.cluster.clone();
        let broker = ctx.broker;
        let w = w.clone();
        tasks.push(tokio::spawn(async move {
            cluster.fetch_isolated_on(broker, &w.tp, w.read(Duration::ZERO)).await
        }));
    }
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(reached(t.await.unwrap_or(Err(ErrorCode::UnknownServerError)))?);
    }
    Ok(out)
}

/// Waits until one partition has records (or an error) or the deadline passes.
async fn wait_for_data(ctx: &Context, wanted: &[Wanted], deadline: Instant) {
    let mut waiting: JoinSet<(usize, Outcome)> = JoinSet::new();
    let spawn = |waiting: &mut JoinSet<(usize, Outcome)>, index: usize| {
        let cluster = ctx.cluster.clone();
        let broker = ctx.broker;
        let Some(w) = wanted.get(index).cloned() else { return };
        let wait = deadline.saturating_duration_since(Instant::now());
        waiting.spawn(async move {
            let outcome = cluster.fetch_isolated_on(broker, &w.tp, w.read(wait)).await;
            (index, outcome)
        });
    };
    for index in 0..wanted.len() {
        spawn(&mut waiting, index);
    }
    loop {
        // Biased: records that arrive as the deadline passes are answered, on every run alike.
        let next = tokio::select! {
            biased;
            next = waiting.join_next() => next,
            _ = tokio::time::sleep_until(deadline) => break,
        };
        let Some(Ok((index, outcome))) = next else { break };
        if has_records(&outcome) || Instant::now() >= deadline {
            break;
        }
        // An early empty answer (the partition changed without new committed records):
        // wait on that partition again.
        spawn(&mut waiting, index);
    }
    waiting.abort_all();
}

pub async fn fetch(ctx: &Context, request: &FetchRequest, version: i16) -> Result<FetchResponse, BrokerDown> {
    if version >= 7 && request.session_id != 0 {
        // Fetch sessions are not kept: a client that believes in one starts over.
        return Ok(FetchResponse::default().with_error_code(codes::FETCH_SESSION_ID_NOT_FOUND));
    }
    let isolation = IsolationLevel::from_wire(request.isolation_level);
    let wanted: Vec<Wanted> = request
        .topics
        .iter()
        .flat_map(|t| {
            let name = t.topic.0.to_string();
            t.partitions.iter().map(move |p| Wanted {
                tp: TopicPartition::new(name.clone(), p.partition),
                offset: p.fetch_offset,
                leader_epoch: p.current_leader_epoch,
                max_bytes: p.partition_max_bytes.max(0) as usize,
                isolation,
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_millis(request.max_wait_ms.max(0) as u64);
    let min_bytes = request.min_bytes.max(0) as usize;
    let mut outcomes = read_all(ctx, &wanted).await?;
    let enough = |outcomes: &[Outcome]| {
        outcomes.iter().any(|o| o.is_err())
            || outcomes
                .iter()
                .filter_map(|o| o.as_ref().ok())
                .map(|d| d.records.len())
                .sum::<usize>()
                >= min_bytes.max(1)
    };
    if !enough(&outcomes) && Instant::now() < deadline && !wanted.is_empty() {
        wait_for_data(ctx, &wanted, deadline).await;
        outcomes = read_all(ctx, &wanted).await?;
    }
    // The response-wide limit: whole partitions past it come back empty (the first
    // non-empty one is always kept, so a large batch cannot block a consumer).
    let max_total = if version >= 3 {
        request.max_bytes.max(0) as usize
    } else {
        usize::MAX
    };
    let mut total = 0usize;
    let mut topics: Vec<FetchableTopicResponse> = Vec::new();
    for (w, outcome) in wanted.iter().zip(outcomes) {
        let partition = match outcome {
            Ok(data) => {
                let records = if total > 0 && total + data.records.len() > max_total {
                    Bytes::new()
                } else {
                    data.records.clone()
                };
                // The aborted transactions go with the records they cover.
                let aborted = data.aborted_transactions.as_ref().map(|list| {
                    list.iter()
                        .filter(|_| !records.is_empty())
                        .map(|t| {
                            AbortedTransaction::default()
                                .with_producer_id(ProducerId(t.producer_id))
                                .with_first_offset(t.first_offset)
                        })
                        .collect()
                });
                total += records.len();
                PartitionData::default()
                    .with_partition_index(w.tp.partition)
                    .with_high_watermark(data.high_watermark)
                    .with_last_stable_offset(data.last_stable_offset)
                    .with_log_start_offset(data.log_start_offset)
                    .with_aborted_transactions(aborted)
                    .with_records(Some(records))
            }
            Err(error) => PartitionData::default()
                .with_partition_index(w.tp.partition)
                .with_error_code(error.code())
                .with_high_watermark(-1)
                .with_aborted_transactions(None)
                .with_records(Some(Bytes::new())),
        };
        match topics.last_mut() {
            Some(t) if t.topic.0.as_str() == w.tp.topic => t.partitions.push(partition),
            _ => topics.push(
                FetchableTopicResponse::default()
                    .with_topic(topic_name(w.tp.topic.clone()))
                    .with_partitions(vec![partition]),
            ),
        }
    }
    Ok(FetchResponse::default().with_responses(topics))
}

pub async fn list_offsets(
    ctx: &Context,
    request: &ListOffsetsRequest,
    version: i16,
) -> Result<ListOffsetsResponse, BrokerDown> {
    let image = ctx.cluster.metadata();
    let mut topics = Vec::with_capacity(request.topics.len());
    for t in &request.topics {
        let name = t.name.0.to_string();
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in &t.partitions {
            let tp = TopicPartition::new(name.clone(), p.partition_index);
            let epoch = image.partition(&tp).map_or(-1, |r| r.leader_epoch);
            let fenced = match image.partition(&tp) {
                Some(r) if p.current_leader_epoch >= 0 && p.current_leader_epoch < r.leader_epoch => {
                    Some(ErrorCode::FencedLeaderEpoch)
                }
                Some(r) if p.current_leader_epoch > r.leader_epoch => Some(ErrorCode::UnknownLeaderEpoch),
                _ => None,
            };
            let outcome = match fenced {
                Some(e) => Err(e),
                None => reached(
                    ctx.cluster
                        .list_offset_isolated_on(
                            ctx.broker,
                            &tp,
                            OffsetSpec::from_timestamp(p.timestamp),
                            IsolationLevel::from_wire(request.isolation_level),
                        )
                        .await,
                )?,
            };
            partitions.push(match outcome {
                Ok((offset, timestamp)) => ListOffsetsPartitionResponse::default()
                    .with_partition_index(p.partition_index)
                    .with_offset(offset)
                    .with_timestamp(timestamp)
                    .with_leader_epoch(if offset >= 0 && version >= 4 { epoch } else { -1 }),
                Err(e) => ListOffsetsPartitionResponse::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(e.code())
                    .with_offset(-1)
                    .with_timestamp(-1),
            });
        }
        topics.push(
            ListOffsetsTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(partitions),
        );
    }
    Ok(ListOffsetsResponse::default().with_topics(topics))
}

pub fn offset_for_leader_epoch(ctx: &Context, request: &OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let name = t.topic.0.to_string();
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let tp = TopicPartition::new(name.clone(), p.partition);
                    match ctx.cluster.offset_for_leader_epoch_on(
                        ctx.broker,
                        &tp,
                        p.current_leader_epoch,
                        p.leader_epoch,
                    ) {
                        Ok((epoch, end)) => EpochEndOffset::default()
                            .with_partition(p.partition)
                            .with_leader_epoch(epoch)
                            .with_end_offset(end),
                        Err(e) => EpochEndOffset::default()
                            .with_partition(p.partition)
                            .with_error_code(e.code())
                            .with_leader_epoch(-1)
                            .with_end_offset(-1),
                    }
                })
                .collect();
            OffsetForLeaderTopicResult::default()
                .with_topic(t.topic.clone())
                .with_partitions(partitions)
        })
        .collect();
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}
