//! The embedded cluster's transactions as the view shows them: ListTransactions over every
//! running coordinator, then DescribeTransactions per id at its coordinator. Until a
//! coordinator answers (COORDINATOR_NOT_AVAILABLE) the list is empty and a description says
//! that no coordinator answered.

use std::time::Duration;

use crate::engine::{Cluster, ErrorCode, TransactionDescription, TransactionListing, TxnRequest, TxnResponse};
use crate::view::transactions::{TransactionRow, TransactionsAnswer, no_coordinator};

/// How long one DescribeTransactions may take.
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Every transactional id the coordinators know, described.
pub async fn describe_all(cluster: &Cluster) -> TransactionsAnswer {
    let listed = cluster.list_transactions(&[], &[]).await;
    let mut rows = Vec::with_capacity(listed.len());
    for listing in listed {
        // A description lost meanwhile leaves what the listing said.
        let row = match describe(cluster, &listing.transactional_id).await {
            Ok(description) => row(description),
            Err(_) => listed_row(listing),
        };
        rows.push(row);
    }
    Ok(rows)
}

/// One transactional id, described by its coordinator.
pub async fn describe_one(cluster: &Cluster, transactional_id: &str) -> Result<TransactionRow, String> {
    match describe(cluster, transactional_id).await {
        Ok(description) => Ok(row(description)),
        Err(ErrorCode::TransactionalIdNotFound) => Err(format!(
            "no transactional id {transactional_id} (TRANSACTIONAL_ID_NOT_FOUND)"
        )),
        Err(
            e @ (ErrorCode::CoordinatorNotAvailable | ErrorCode::NotCoordinator | ErrorCode::CoordinatorLoadInProgress),
        ) => Err(no_coordinator(&e.to_string())),
        Err(e) => Err(format!("describing {transactional_id}: {e}")),
    }
}

async fn describe(cluster: &Cluster, transactional_id: &str) -> Result<TransactionDescription, ErrorCode> {
    let request = TxnRequest::Describe {
        transactional_id: transactional_id.to_string(),
    };
    match cluster.txn_request(transactional_id, request, DESCRIBE_TIMEOUT).await? {
        TxnResponse::Describe(answer) => answer,
        _ => Err(ErrorCode::UnknownServerError),
    }
}

fn row(d: TransactionDescription) -> TransactionRow {
    TransactionRow {
        transactional_id: d.transactional_id,
        state: d.state.name().to_string(),
        producer_id: d.producer_id,
        producer_epoch: d.producer_epoch,
        timeout_ms: d.timeout_ms,
        partitions: d.partitions.into_iter().map(|tp| (tp.topic, tp.partition)).collect(),
        start_time_ms: d.start_time_ms,
        coordinator: Some(d.coordinator),
    }
}

fn listed_row(l: TransactionListing) -> TransactionRow {
    TransactionRow {
        transactional_id: l.transactional_id,
        state: l.state.name().to_string(),
        producer_id: l.producer_id,
        producer_epoch: -1,
        timeout_ms: -1,
        partitions: Vec::new(),
        start_time_ms: l.start_time_ms,
        coordinator: None,
    }
}
