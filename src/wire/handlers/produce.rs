//! Produce and InitProducerId. Record batches are appended as the client sent them; the
//! engine checks them, the idempotent producer's sequence numbers and a transactional
//! producer's epoch. Produce v0-2 carries
//! message sets (formats v0/v1), converted to one v2 batch first, as Kafka 3.x's
//! `LogValidator` converts them.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use kafka_protocol::messages::produce_response::{PartitionProduceResponse, ProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProduceRequest};
use kafka_protocol::protocol::StrBytes;
use tokio::sync::oneshot;

use super::{BrokerDown, Context, codes, reached};
use crate::engine::{Acks, ErrorCode, TopicPartition, has_keyless_record};
use crate::storage::legacy;

/// One partition's append: its base offset or the error code for the client.
type Outcome = Result<Result<i64, i16>, BrokerDown>;

/// A partition's produce call after its first step.
enum Started<F> {
    Done(Outcome),
    Waiting(Pin<Box<F>>),
}

/// The response, or `None` for acks=0 (Kafka sends nothing back).
///
/// Kafka's broker handles one connection's requests one at a time, and an idempotent
/// producer with several requests in flight relies on that: its batches must be appended in
/// the order sent, or a batch that overtakes its predecessor is refused as out of order. The
/// engine fixes a partition's append order as requests reach its broker's queue, which a
/// call does on its first poll; so each partition's call takes that step here, in request
/// order, before `queued` is dropped and the connection reads its next request. The waits for
/// acknowledgements then overlap with later requests.
pub async fn produce(
    ctx: &Context,
    request: &ProduceRequest,
    version: i16,
    queued: oneshot::Sender<()>,
) -> Result<Option<ProduceResponse>, BrokerDown> {
    let acks = match request.acks {
        0 => Some(Acks::None),
        1 => Some(Acks::Leader),
        -1 => Some(Acks::All),
        _ => None,
    };
    let timeout = Duration::from_millis(request.timeout_ms.max(0) as u64);
    let mut pending = Vec::new();
    for topic in &request.topic_data {
        let name = topic.name.0.to_string();
        for p in &topic.partition_data {
            let tp = TopicPartition::new(name.clone(), p.index);
            let records = p.records.clone();
            let cluster = ctx.cluster.clone();
            let broker = ctx.broker;
            let transactional_id = request
                .transactional_id
                .as_ref()
                .map(|id| id.0.to_string())
                .filter(|id| !id.is_empty());
            let mut call = Box::pin(async move {
                let Some(acks) = acks else {
                    return Ok(Err(codes::INVALID_REQUIRED_ACKS));
                };
                let Some(records) = records.filter(|r| !r.is_empty()) else {
                    return Ok(Err(codes::CORRUPT_MESSAGE));
                };
                // Kafka's KafkaApis: transactional records need the producer's transactional
                // id (the leader checks it with the coordinator), else the request is refused.
                // (Produce v0-2 carries message sets, which have no transactional attribute.)
                if version >= 3 && transactional_id.is_none() && is_transactional(&records) {
                    return Ok(Err(codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED));
                }
                let records = if version < 3 {
                    match legacy::to_batch(&records) {
                        Ok(batch) => batch.to_vec(),
                        Err(e) => {
                            tracing::debug!(broker, %tp, "Produce v{version}: {e}");
                            return Ok(Err(e.code()));
                        }
                    }
                } else {
                    records.to_vec()
                };
                let outcome = cluster
                    .produce_as(broker, &tp, records, transactional_id, acks, timeout)
                    .await;
                reached(outcome).map(|appended| appended.map_err(ErrorCode::code))
            });
            let first = std::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await;
            let started = match first {
                Poll::Ready(done) => Started::Done(done),
                Poll::Pending => Started::Waiting(call),
            };
            pending.push((name.clone(), p.index, p.records.clone(), started));
        }
    }
    drop(queued);
    let mut responses: Vec<TopicProduceResponse> = Vec::new();
    for (topic, index, records, started) in pending {
        let outcome = match started {
            Started::Done(done) => done?,
            Started::Waiting(call) => call.await?,
        };
        let partition = match outcome {
            Ok(base_offset) => PartitionProduceResponse::default()
                .with_index(index)
                .with_base_offset(base_offset),
            Err(code) => PartitionProduceResponse::default()
                .with_index(index)
                .with_error_code(code)
                .with_base_offset(-1)
                // error_message exists from Produce v8.
                .with_error_message(
                    (version >= 8)
                        .then(|| refusal_reason(ctx, &topic, index, code, records.as_deref()))
                        .flatten()
                        .map(StrBytes::from_string),
                ),
        };
        match responses.iter_mut().find(|t| t.name.0.as_str() == topic) {
            Some(t) => t.partition_responses.push(partition),
            None => responses.push(
                TopicProduceResponse::default()
                    .with_name(super::topic_name(topic))
                    .with_partition_responses(vec![partition]),
            ),
        }
    }
    Ok((request.acks != 0).then(|| ProduceResponse::default().with_responses(responses)))
}

/// Whether the first batch of a v2 record set has the transactional attribute (bit 4).
fn is_transactional(records: &[u8]) -> bool {
    crate::storage::batch::BatchHeader::parse(records).is_ok_and(|h| h.attributes & 0x10 != 0)
}

/// Kafka's words for a refusal whose code alone would leave the client guessing: a keyless
/// record on a compacted topic (`LogValidator.validateKey`).
fn refusal_reason(ctx: &Context, topic: &str, index: i32, code: i16, records: Option<&[u8]>) -> Option<String> {
    let compacted = ctx
        .cluster
        .metadata()
        .topics
        .get(topic)
        .is_some_and(|t| t.config.cleanup_policy.is_some_and(|p| p.compacts()));
    (code == ErrorCode::InvalidRecord.code() && compacted && records.is_some_and(has_keyless_record))
        .then(|| format!("Compacted topic cannot accept message without key in topic partition {topic}-{index}."))
}

/// InitProducerId: from the transaction coordinator for a `transactional.id`, else a fresh
/// id for an idempotent producer.
pub async fn init_producer_id(
    ctx: &Context,
    request: &InitProducerIdRequest,
    version: i16,
) -> Result<InitProducerIdResponse, BrokerDown> {
    if let Some(id) = request.transactional_id.as_ref().filter(|id| !id.0.is_empty()) {
        return super::txn::init_transactional(ctx, request, version, id.0.to_string()).await;
    }
    Ok(match ctx.cluster.init_producer_id().await {
        Ok((id, epoch)) => InitProducerIdResponse::default()
            .with_producer_id(id.into())
            .with_producer_epoch(epoch),
        Err(e) => {
            tracing::warn!(broker = ctx.broker, "InitProducerId: {e:#}");
            InitProducerIdResponse::default()
                .with_error_code(codes::COORDINATOR_NOT_AVAILABLE)
                .with_producer_id((-1).into())
                .with_producer_epoch(-1)
        }
    })
}
