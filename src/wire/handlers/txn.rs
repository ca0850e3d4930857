//! The transaction APIs (KIP-98): InitProducerId with a transactional id, AddPartitionsToTxn,
//! AddOffsetsToTxn, EndTxn, TxnOffsetCommit, WriteTxnMarkers, and DescribeTransactions and
//! ListTransactions for operators. Each goes to the listener's own broker, which answers
//! NOT_COORDINATOR unless it coordinates the id (the client asked FindCoordinator with key
//! type 1 first), as Kafka's brokers do. PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH for
//! the versions that predate it (KIP-588), as Kafka's `KafkaApis` maps it.

use std::time::Duration;

use kafka_protocol::messages::add_offsets_to_txn_response::AddOffsetsToTxnResponse;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::describe_transactions_response::{
    DescribeTransactionsResponse, TopicData, TransactionState as DescribedState,
};
use kafka_protocol::messages::end_txn_response::EndTxnResponse;
use kafka_protocol::messages::list_transactions_response::{ListTransactionsResponse, TransactionState as ListedState};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult, WriteTxnMarkersResponse,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, DescribeTransactionsRequest, EndTxnRequest,
    InitProducerIdRequest, InitProducerIdResponse, ListTransactionsRequest, TransactionalId, TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
};

use super::{BrokerDown, Context, codes, reached, str_bytes, topic_name};
use crate::engine::{ErrorCode, GroupRequest, GroupResponse, TopicPartition, TxnRequest, TxnResponse, TxnState};

/// How long a transaction request may wait for its coordinator's write.
const TXN_CALL: Duration = Duration::from_secs(30);

/// PRODUCER_FENCED for clients that know it, INVALID_PRODUCER_EPOCH for older ones.
fn fenced_for(version: i16, first_with_fenced: i16, error: ErrorCode) -> i16 {
    if error == ErrorCode::ProducerFenced && version < first_with_fenced {
        ErrorCode::InvalidProducerEpoch.code()
    } else {
        error.code()
    }
}

async fn call(ctx: &Context, request: TxnRequest) -> Result<Result<TxnResponse, ErrorCode>, BrokerDown> {
    reached(ctx.cluster.txn_request_on(ctx.broker, request, TXN_CALL).await)
}

fn txn_id(id: &TransactionalId) -> Option<String> {
    let id = id.0.to_string();
    (!id.is_empty()).then_some(id)
}

/// InitProducerId with a `transactional.id`: the coordinator's producer id and bumped epoch.
pub async fn init_transactional(
    ctx: &Context,
    request: &InitProducerIdRequest,
    version: i16,
    transactional_id: String,
) -> Result<InitProducerIdResponse, BrokerDown> {
    let engine_request = TxnRequest::InitProducerId {
        transactional_id,
        transaction_timeout_ms: request.transaction_timeout_ms,
        producer_id: request.producer_id.0,
        producer_epoch: request.producer_epoch,
    };
    let outcome = match call(ctx, engine_request).await? {
        Ok(TxnResponse::InitProducerId(outcome)) => outcome,
        Ok(_) => Err(ErrorCode::UnknownServerError),
        Err(e) => Err(e),
    };
    Ok(match outcome {
        Ok((id, epoch)) => InitProducerIdResponse::default()
            .with_producer_id(id.into())
            .with_producer_epoch(epoch),
        Err(error) => InitProducerIdResponse::default()
            .with_error_code(fenced_for(version, 4, error))
            .with_producer_id((-1).into())
            .with_producer_epoch(-1),
    })
}

/// AddPartitionsToTxn v0-3: one transaction's partitions.
pub async fn add_partitions(
    ctx: &Context,
    request: &AddPartitionsToTxnRequest,
    version: i16,
) -> Result<AddPartitionsToTxnResponse, BrokerDown> {
    let partitions: Vec<TopicPartition> = request
        .v3_and_below_topics
        .iter()
        .flat_map(|t| {
            let name = t.name.0.to_string();
            t.partitions.iter().map(move |p| TopicPartition::new(name.clone(), *p))
        })
        .collect();
    let outcome = match txn_id(&request.v3_and_below_transactional_id) {
        None => Err(ErrorCode::InvalidRequest),
        Some(transactional_id) => {
            let engine_request = TxnRequest::AddPartitions {
                transactional_id,
                producer_id: request.v3_and_below_producer_id.0,
                producer_epoch: request.v3_and_below_producer_epoch,
                partitions: partitions.clone(),
            };
            match call(ctx, engine_request).await? {
                Ok(TxnResponse::AddPartitions(outcome)) => outcome,
                Ok(_) => Err(ErrorCode::UnknownServerError),
                Err(e) => Err(e),
            }
        }
    };
    let code_of = |tp: &TopicPartition| -> i16 {
        match &outcome {
            Err(error) => fenced_for(version, 2, *error),
            Ok(results) => results
                .iter()
                .find(|(p, _)| p == tp)
                .map_or(ErrorCode::None.code(), |(_, e)| fenced_for(version, 2, *e)),
        }
    };
    let mut topics: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
    for tp in &partitions {
        let result = AddPartitionsToTxnPartitionResult::default()
            .with_partition_index(tp.partition)
            .with_partition_error_code(code_of(tp));
        match topics.iter_mut().find(|t| t.name.0.as_str() == tp.topic) {
            Some(t) => t.results_by_partition.push(result),
            None => topics.push(
                AddPartitionsToTxnTopicResult::default()
                    .with_name(topic_name(tp.topic.clone()))
                    .with_results_by_partition(vec![result]),
            ),
        }
    }
    Ok(AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(topics))
}

pub async fn add_offsets(
    ctx: &Context,
    request: &AddOffsetsToTxnRequest,
    version: i16,
) -> Result<AddOffsetsToTxnResponse, BrokerDown> {
    let error = match txn_id(&request.transactional_id) {
        None => ErrorCode::InvalidRequest,
        Some(_) if request.group_id.0.is_empty() => {
            return Ok(AddOffsetsToTxnResponse::default().with_error_code(codes::INVALID_GROUP_ID));
        }
        Some(transactional_id) => {
            let engine_request = TxnRequest::AddOffsets {
                transactional_id,
                producer_id: request.producer_id.0,
                producer_epoch: request.producer_epoch,
                group_id: request.group_id.0.to_string(),
            };
            match call(ctx, engine_request).await? {
                Ok(TxnResponse::AddOffsets(error)) => error,
                Ok(_) => ErrorCode::UnknownServerError,
                Err(e) => e,
            }
        }
    };
    Ok(AddOffsetsToTxnResponse::default().with_error_code(fenced_for(version, 2, error)))
}

pub async fn end_txn(ctx: &Context, request: &EndTxnRequest, version: i16) -> Result<EndTxnResponse, BrokerDown> {
    let error = match txn_id(&request.transactional_id) {
        None => ErrorCode::InvalidRequest,
        Some(transactional_id) => {
            let engine_request = TxnRequest::EndTxn {
                transactional_id,
                producer_id: request.producer_id.0,
                producer_epoch: request.producer_epoch,
                commit: request.committed,
            };
            match call(ctx, engine_request).await? {
                Ok(TxnResponse::EndTxn(error)) => error,
                Ok(_) => ErrorCode::UnknownServerError,
                Err(e) => e,
            }
        }
    };
    Ok(EndTxnResponse::default()
        .with_error_code(fenced_for(version, 2, error))
        .with_producer_id((-1).into())
        .with_producer_epoch(-1))
}

/// TxnOffsetCommit goes to the group's coordinator, which keeps the offsets pending until the
/// transaction's COMMIT marker reaches its `__consumer_offsets` partition.
pub async fn txn_offset_commit(
    ctx: &Context,
    request: &TxnOffsetCommitRequest,
    version: i16,
) -> Result<TxnOffsetCommitResponse, BrokerDown> {
    let offsets: Vec<(TopicPartition, i64)> = request
        .topics
        .iter()
        .flat_map(|t| {
            let name = t.name.0.to_string();
            t.partitions
                .iter()
                .map(move |p| (TopicPartition::new(name.clone(), p.partition_index), p.committed_offset))
        })
        .collect();
    let code = if request.group_id.0.is_empty() {
        codes::INVALID_GROUP_ID
    } else if request.transactional_id.0.is_empty() {
        codes::INVALID_REQUEST
    } else {
        let engine_request = GroupRequest::TxnOffsetCommit {
            group_id: request.group_id.0.to_string(),
            transactional_id: request.transactional_id.0.to_string(),
            producer_id: request.producer_id.0,
            producer_epoch: request.producer_epoch,
            // v3 (KIP-447) adds the member fields; older versions skip the member checks.
            generation: if version >= 3 { request.generation_id } else { -1 },
            member_id: if version >= 3 {
                request.member_id.to_string()
            } else {
                String::new()
            },
            group_instance_id: request.group_instance_id.as_ref().map(|i| i.to_string()),
            offsets,
        };
        match reached(ctx.cluster.group_request_on(ctx.broker, engine_request, TXN_CALL).await)? {
            Ok(GroupResponse::TxnOffsetCommit(e)) => fenced_for(version, 2, e),
            Ok(_) => ErrorCode::UnknownServerError.code(),
            Err(e) => e.code(),
        }
    };
    let topics = request
        .topics
        .iter()
        .map(|t| {
            TxnOffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            TxnOffsetCommitResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(code)
                        })
                        .collect(),
                )
        })
        .collect();
    Ok(TxnOffsetCommitResponse::default().with_topics(topics))
}

/// WriteTxnMarkers, as a transaction coordinator sends it to a partition leader: each
/// partition's marker appended with acks=all on this broker.
pub async fn write_txn_markers(
    ctx: &Context,
    request: &WriteTxnMarkersRequest,
) -> Result<WriteTxnMarkersResponse, BrokerDown> {
    let mut markers = Vec::new();
    for marker in &request.markers {
        let mut topics = Vec::new();
        for topic in &marker.topics {
            let mut partitions = Vec::new();
            for index in &topic.partition_indexes {
                let tp = TopicPartition::new(topic.name.0.to_string(), *index);
                let outcome = ctx
                    .cluster
                    .write_txn_marker_on(
                        ctx.broker,
                        &tp,
                        marker.producer_id.0,
                        marker.producer_epoch,
                        marker.coordinator_epoch,
                        marker.transaction_result,
                    )
                    .await;
                let code = match reached(outcome)? {
                    Ok(_) => ErrorCode::None.code(),
                    Err(e) => e.code(),
                };
                partitions.push(
                    WritableTxnMarkerPartitionResult::default()
                        .with_partition_index(*index)
                        .with_error_code(code),
                );
            }
            topics.push(
                WritableTxnMarkerTopicResult::default()
                    .with_name(topic.name.clone())
                    .with_partitions(partitions),
            );
        }
        markers.push(
            WritableTxnMarkerResult::default()
                .with_producer_id(marker.producer_id)
                .with_topics(topics),
        );
    }
    Ok(WriteTxnMarkersResponse::default().with_markers(markers))
}

pub async fn describe_transactions(
    ctx: &Context,
    request: &DescribeTransactionsRequest,
) -> Result<DescribeTransactionsResponse, BrokerDown> {
    let mut states = Vec::new();
    for id in &request.transactional_ids {
        let name = id.0.to_string();
        let engine_request = TxnRequest::Describe {
            transactional_id: name.clone(),
        };
        let outcome = match call(ctx, engine_request).await? {
            Ok(TxnResponse::Describe(outcome)) => outcome,
            Ok(_) => Err(ErrorCode::UnknownServerError),
            Err(e) => Err(e),
        };
        let state = match outcome {
            Ok(d) => {
                let mut topics: Vec<TopicData> = Vec::new();
                for tp in &d.partitions {
                    match topics.iter_mut().find(|t| t.topic.0.as_str() == tp.topic) {
                        Some(t) => t.partitions.push(tp.partition),
                        None => topics.push(
                            TopicData::default()
                                .with_topic(topic_name(tp.topic.clone()))
                                .with_partitions(vec![tp.partition]),
                        ),
                    }
                }
                DescribedState::default()
                    .with_transactional_id(id.clone())
                    .with_transaction_state(str_bytes(d.state.name()))
                    .with_transaction_timeout_ms(d.timeout_ms)
                    .with_transaction_start_time_ms(d.start_time_ms)
                    .with_producer_id(d.producer_id.into())
                    .with_producer_epoch(d.producer_epoch)
                    .with_topics(topics)
            }
            Err(error) => DescribedState::default()
                .with_error_code(error.code())
                .with_transactional_id(id.clone())
                .with_transaction_state(str_bytes(""))
                .with_transaction_start_time_ms(-1)
                .with_producer_id((-1).into())
                .with_producer_epoch(-1),
        };
        states.push(state);
    }
    Ok(DescribeTransactionsResponse::default().with_transaction_states(states))
}

/// ListTransactions: this coordinator's transactional ids. Unknown state names are returned
/// in `unknown_state_filters`, as Kafka does; v1's duration filter keeps transactions open
/// longer than it (KIP-994).
pub async fn list_transactions(
    ctx: &Context,
    request: &ListTransactionsRequest,
    version: i16,
) -> Result<ListTransactionsResponse, BrokerDown> {
    let mut states = Vec::new();
    let mut unknown = Vec::new();
    for name in &request.state_filters {
        match TxnState::from_name(name.as_str()) {
            Some(s) => states.push(s),
            None => unknown.push(name.clone()),
        }
    }
    // Filtering by states none of which exists matches nothing.
    if states.is_empty() && !request.state_filters.is_empty() {
        return Ok(ListTransactionsResponse::default().with_unknown_state_filters(unknown));
    }
    let engine_request = TxnRequest::List {
        states,
        producer_ids: request.producer_id_filters.iter().map(|p| p.0).collect(),
    };
    let (error, listed) = match call(ctx, engine_request).await? {
        Ok(TxnResponse::List(listed)) => (ErrorCode::None, listed),
        Ok(_) => (ErrorCode::UnknownServerError, Vec::new()),
        Err(e) => (e, Vec::new()),
    };
    let now = ctx.cluster.wall_now_ms();
    let min_duration = if version >= 1 { request.duration_filter } else { -1 };
    let transaction_states = listed
        .into_iter()
        .filter(|t| {
            let open = matches!(
                t.state,
                TxnState::Ongoing | TxnState::PrepareCommit | TxnState::PrepareAbort | TxnState::PrepareEpochFence
            );
            min_duration < 0 || (open && t.start_time_ms >= 0 && now - t.start_time_ms > min_duration)
        })
        .map(|t| {
            ListedState::default()
                .with_transactional_id(TransactionalId(str_bytes(t.transactional_id)))
                .with_producer_id(t.producer_id.into())
                .with_transaction_state(str_bytes(t.state.name()))
        })
        .collect();
    Ok(ListTransactionsResponse::default()
        .with_error_code(error.code())
        .with_unknown_state_filters(unknown)
        .with_transaction_states(transaction_states))
}
