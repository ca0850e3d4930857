//! Transactions on a Kafka cluster (as `kafka-transactions.sh list` and `describe`):
//! ListTransactions at every broker, each the coordinator of the ids it lists, then
//! DescribeTransactions for those ids at the broker that listed them. One id alone is asked
//! of every broker: its coordinator describes it, the others answer NOT_COORDINATOR.

use kafka_protocol::messages::describe_transactions_response::TransactionState;
use kafka_protocol::messages::{
    ApiKey, DescribeTransactionsRequest, ListTransactionsRequest, ListTransactionsResponse, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;

use super::{join_all, kafka_error, version};
use crate::kafka::BrokerId;
use crate::remote::{KafkaClient, RemoteError, Target};
use crate::view::transactions::{TransactionRow, no_coordinator};

const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;
const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;

/// Whether `code` says the broker coordinates no transaction now.
fn no_coordinator_code(code: i16) -> bool {
    matches!(
        code,
        COORDINATOR_LOAD_IN_PROGRESS | COORDINATOR_NOT_AVAILABLE | NOT_COORDINATOR
    )
}

/// Every transactional id of the cluster, described, by id. `Err` when no broker could list
/// any (no coordinator answered, or none speaks ListTransactions).
pub async fn describe_transactions(client: &KafkaClient) -> Result<Vec<TransactionRow>, RemoteError> {
    let metadata = client.metadata().await?;
    let brokers: Vec<BrokerId> = metadata.brokers.iter().map(|b| b.id).collect();
    let listed = join_all(brokers.iter().map(|&b| list_at(client, b)).collect()).await;
    let mut rows = Vec::new();
    let mut first_error = None;
    let mut answered = false;
    for (&broker, answer) in brokers.iter().zip(listed) {
        match answer {
            Ok(response) => {
                answered = true;
                rows.extend(describe_listed(client, broker, &response).await);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if !answered && let Some(e) = first_error {
        return Err(match e {
            RemoteError::Kafka { code, .. } if no_coordinator_code(code) => {
                RemoteError::Other(no_coordinator(&e.to_string()))
            }
            other => other,
        });
    }
    rows.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
    rows.dedup_by(|a, b| a.transactional_id == b.transactional_id);
    Ok(rows)
}

/// One transactional id, described by its coordinator.
pub async fn describe_transaction(client: &KafkaClient, transactional_id: &str) -> Result<TransactionRow, RemoteError> {
    let metadata = client.metadata().await?;
    let brokers: Vec<BrokerId> = metadata.brokers.iter().map(|b| b.id).collect();
    let ids = [transactional_id.to_string()];
    let answers = join_all(brokers.iter().map(|&b| describe_at(client, b, &ids)).collect()).await;
    let mut last = None;
    for (&broker, answer) in brokers.iter().zip(answers) {
        match answer {
            Ok(states) => {
                for state in states {
                    match state.error_code {
                        0 => return Ok(row(broker, &state)),
                        TRANSACTIONAL_ID_NOT_FOUND => {
                            return Err(RemoteError::Other(format!(
                                "no transactional id {transactional_id} (TRANSACTIONAL_ID_NOT_FOUND)"
                            )));
                        }
                        code => last = Some(kafka_error(format!("describing {transactional_id}"), code, None)),
                    }
                }
            }
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(RemoteError::Kafka { code, .. }) if no_coordinator_code(code) => {
            RemoteError::Other(no_coordinator(&crate::remote::error_name(code)))
        }
        Some(e) => e,
        None => RemoteError::Other(no_coordinator("the cluster has no brokers")),
    })
}

/// ListTransactions at `broker`: the ids it coordinates.
async fn list_at(client: &KafkaClient, broker: BrokerId) -> Result<ListTransactionsResponse, RemoteError> {
    let target = Target::Broker(broker);
    version(client, target, ApiKey::ListTransactions).await?;
    // No filters: every id, in every state; a duration filter of -1 is none (KIP-994).
    let request = ListTransactionsRequest::default().with_duration_filter(-1);
    let response = client.send(target, request).await?;
    if response.error_code != 0 {
        return Err(kafka_error(
            format!("ListTransactions at broker {broker}"),
            response.error_code,
            None,
        ));
    }
    Ok(response)
}

/// DescribeTransactions for `ids` at `broker`.
async fn describe_at(
    client: &KafkaClient,
    broker: BrokerId,
    ids: &[String],
) -> Result<Vec<TransactionState>, RemoteError> {
    let target = Target::Broker(broker);
    version(client, target, ApiKey::DescribeTransactions).await?;
    let request = DescribeTransactionsRequest::default().with_transactional_ids(
        ids.iter()
            .map(|id| TransactionalId(StrBytes::from_string(id.clone())))
            .collect(),
    );
    Ok(client.send(target, request).await?.transaction_states)
}

/// The ids `broker` listed, described by it; an id it could not describe keeps what the
/// listing said.
async fn describe_listed(
    client: &KafkaClient,
    broker: BrokerId,
    listed: &ListTransactionsResponse,
) -> Vec<TransactionRow> {
    let ids: Vec<String> = listed
        .transaction_states
        .iter()
        .map(|t| t.transactional_id.0.to_string())
        .collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let described = describe_at(client, broker, &ids).await.unwrap_or_default();
    listed
        .transaction_states
        .iter()
        .map(|listing| {
            let id = listing.transactional_id.0.as_str();
            match described
                .iter()
                .find(|d| d.error_code == 0 && d.transactional_id.0.as_str() == id)
            {
                Some(d) => row(broker, d),
                None => TransactionRow {
                    transactional_id: id.to_string(),
                    state: listing.transaction_state.to_string(),
                    producer_id: listing.producer_id.0,
                    producer_epoch: -1,
                    timeout_ms: -1,
                    partitions: Vec::new(),
                    start_time_ms: -1,
                    coordinator: Some(broker),
                },
            }
        })
        .collect()
}

fn row(coordinator: BrokerId, d: &TransactionState) -> TransactionRow {
    let mut partitions: Vec<(String, i32)> = d
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.topic.0.to_string(), *p)))
        .collect();
    partitions.sort();
    TransactionRow {
        transactional_id: d.transactional_id.0.to_string(),
        state: d.transaction_state.to_string(),
        producer_id: d.producer_id.0,
        producer_epoch: d.producer_epoch,
        timeout_ms: d.transaction_timeout_ms,
        partitions,
        start_time_ms: d.transaction_start_time_ms,
        coordinator: Some(coordinator),
    }
}
