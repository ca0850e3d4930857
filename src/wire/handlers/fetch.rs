//! Fetch (long-polling on the high watermark), ListOffsets and OffsetForLeaderEpoch. Fetch v0-3
//! answers with message sets (formats v0/v1), down-converted from the log's v2 batches.

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

use super::{BrokerDown, Context, reached, topic_name};
use crate::engine::{ConsumerRead, ErrorCode, FetchedRecords, IsolationLevel, OffsetSpec, TopicPartition};
use crate::storage::legacy;
use crate::wire::fetch_session::{Answered, FetchContext, Wanted};

/// How the engine reads one partition of a fetch: the isolation level is the request's, so
/// each fetch of a session may read at its own.
fn consumer_read(w: &Wanted, isolation: IsolationLevel, max_wait: Duration) -> ConsumerRead {
    ConsumerRead {
        offset: w.offset,
        current_leader_epoch: w.leader_epoch,
        max_bytes: w.max_bytes,
        max_wait,
        isolation,
    }
}

type Outcome = Result<FetchedRecords, ErrorCode>;

fn has_records(outcome: &Outcome) -> bool {
    outcome.as_ref().map_or(true, |d| !d.records.is_empty())
}

/// Reads every partition once, without waiting.
async fn read_all(ctx: &Context, wanted: &[Wanted], isolation: IsolationLevel) -> Result<Vec<Outcome>, BrokerDown> {
    let mut tasks = Vec::with_capacity(wanted.len());
    for w in wanted {
        let cluster = ctx.cluster.clone();
        let broker = ctx.broker;
        let w = w.clone();
        tasks.push(tokio::spawn(async move {
            cluster
                .fetch_isolated_on(broker, &w.tp, consumer_read(&w, isolation, Duration::ZERO))
                .await
        }));
    }
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(reached(t.await.unwrap_or(Err(ErrorCode::UnknownServerError)))?);
    }
    Ok(out)
}

/// Waits until one partition has records (or an error) or the deadline passes.
async fn wait_for_data(ctx: &Context, wanted: &[Wanted], isolation: IsolationLevel, deadline: Instant) {
    let mut waiting: JoinSet<(usize, Outcome)> = JoinSet::new();
    let spawn = |waiting: &mut JoinSet<(usize, Outcome)>, index: usize| {
        let cluster = ctx.cluster.clone();
        let broker = ctx.broker;
        let Some(w) = wanted.get(index).cloned() else { return };
        let wait = deadline.saturating_duration_since(Instant::now());
        waiting.spawn(async move {
            let outcome = cluster
                .fetch_isolated_on(broker, &w.tp, consumer_read(&w, isolation, wait))
                .await;
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

/// The request's partitions, and for an incremental fetch (v7+) the ones it forgets.
fn requested(request: &FetchRequest) -> (Vec<Wanted>, Vec<TopicPartition>) {
    let wanted = request
        .topics
        .iter()
        .flat_map(|t| {
            let name = t.topic.0.to_string();
            t.partitions.iter().map(move |p| Wanted {
                tp: TopicPartition::new(name.clone(), p.partition),
                offset: p.fetch_offset,
                leader_epoch: p.current_leader_epoch,
                max_bytes: p.partition_max_bytes.max(0) as usize,
            })
        })
        .collect();
    let forgotten = request
        .forgotten_topics_data
        .iter()
        .flat_map(|t| {
            let name = t.topic.0.to_string();
            t.partitions.iter().map(move |p| TopicPartition::new(name.clone(), *p))
        })
        .collect();
    (wanted, forgotten)
}

pub async fn fetch(ctx: &Context, request: &FetchRequest, version: i16) -> Result<FetchResponse, BrokerDown> {
    let (requested, forgotten) = requested(request);
    // Sessions (KIP-227) start at v7; older clients always fetch in full.
    let context = if version >= 7 {
        ctx.fetch_sessions.new_context(
            request.session_id,
            request.session_epoch,
            request.replica_id.0 >= 0,
            requested,
            &forgotten,
            Instant::now(),
        )
    } else {
        FetchContext::Sessionless(requested)
    };
    if let FetchContext::Error { code, session_id } = context {
        return Ok(FetchResponse::default()
            .with_error_code(code)
            .with_session_id(session_id));
    }
    let wanted = context.wanted();
    let isolation = IsolationLevel::from_wire(request.isolation_level);
    let deadline = Instant::now() + Duration::from_millis(request.max_wait_ms.max(0) as u64);
    let min_bytes = request.min_bytes.max(0) as usize;
    let mut outcomes = read_all(ctx, wanted, isolation).await?;
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
        wait_for_data(ctx, wanted, isolation, deadline).await;
        outcomes = read_all(ctx, wanted, isolation).await?;
    }
    // The response-wide limit: whole partitions past it come back empty (the first
    // non-empty one is always kept, so a large batch cannot block a consumer).
    let max_total = if version >= 3 {
        request.max_bytes.max(0) as usize
    } else {
        usize::MAX
    };
    let mut total = 0usize;
    let mut partitions: Vec<PartitionData> = Vec::with_capacity(wanted.len());
    let mut answers: Vec<Answered> = Vec::with_capacity(wanted.len());
    for (w, outcome) in wanted.iter().zip(outcomes) {
        let outcome = if version <= 3 {
            down_convert(w, outcome, version)
        } else {
            outcome
        };
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
        answers.push(Answered {
            record_bytes: partition.records.as_ref().map_or(0, |r| r.len()),
            high_watermark: partition.high_watermark,
            log_start_offset: partition.log_start_offset,
            error: partition.error_code != 0,
        });
        partitions.push(partition);
    }
    let finished = ctx.fetch_sessions.finish(&context, &answers, Instant::now());
    let mut topics: Vec<FetchableTopicResponse> = Vec::new();
    let kept = wanted
        .iter()
        .zip(partitions)
        .zip(&finished.keep)
        .filter(|(_, keep)| **keep)
        .map(|(pair, _)| pair);
    for (w, partition) in kept {
        match topics.last_mut() {
            Some(t) if t.topic.0.as_str() == w.tp.topic => t.partitions.push(partition),
            _ => topics.push(
                FetchableTopicResponse::default()
                    .with_topic(topic_name(w.tp.topic.clone()))
                    .with_partitions(vec![partition]),
            ),
        }
    }
    Ok(FetchResponse::default()
        .with_error_code(finished.error_code)
        .with_session_id(finished.session_id)
        .with_responses(topics))
}

/// Fetch v0-1 read message format v0, v2-3 format v1 (Kafka's down-conversion).
fn down_convert(w: &Wanted, outcome: Outcome, version: i16) -> Outcome {
    let mut data = outcome?;
    let magic = if version <= 1 {
        legacy::MAGIC_V0
    } else {
        legacy::MAGIC_V1
    };
    data.records = legacy::down_convert(&data.records, magic, w.offset, w.max_bytes).map_err(|e| {
        tracing::warn!(partition = %w.tp, "Fetch v{version} down-conversion: {e}");
        ErrorCode::CorruptMessage
    })?;
    Ok(data)
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
                    .with_old_style_offsets(old_style_offsets(offset, p.max_num_offsets))
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

/// ListOffsets v0's answer, a list of offsets: kdeck gives the one offset v1 would (the high
/// watermark for latest, the log start for earliest, the first at or after a timestamp), not
/// the segments' base offsets of Kafka's legacy lookup, and none where v1 finds none.
fn old_style_offsets(offset: i64, max_num_offsets: i32) -> Vec<i64> {
    if offset >= 0 && max_num_offsets > 0 {
        vec![offset]
    } else {
        Vec::new()
    }
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
