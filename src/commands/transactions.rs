//! `kdeck transactions list|describe ID`: the cluster's transactional ids and one id's open
//! transaction, as kafka-transactions.sh shows them (ListTransactions, DescribeTransactions),
//! as a table or as JSON.

use anyhow::Result;
use serde_json::json;

use super::Output;
use super::topics::table;
use crate::cli::{TransactionsAction, TransactionsArgs};
use crate::remote::KafkaClient;
use crate::remote::ops;
use crate::view::transactions::TransactionRow;

pub(crate) async fn run(args: &TransactionsArgs, client: &KafkaClient, out: &mut Output) -> Result<()> {
    let now_ms = chrono::Utc::now().timestamp_millis();
    match &args.action {
        None | Some(TransactionsAction::List) => {
            let rows = ops::describe_transactions(client).await?;
            if args.json {
                rows.iter().try_for_each(|r| out.line(&json_of(r, now_ms).to_string()))
            } else {
                list_table(&rows, now_ms, out)
            }
        }
        Some(TransactionsAction::Describe { transactional_id }) => {
            let row = ops::describe_transaction(client, transactional_id).await?;
            if args.json {
                out.line(&json_of(&row, now_ms).to_string())
            } else {
                describe_lines(&row, now_ms).iter().try_for_each(|l| out.line(l))
            }
        }
    }
}

fn or_dash(value: i64) -> String {
    if value < 0 { "-".into() } else { value.to_string() }
}

fn partitions(row: &TransactionRow) -> String {
    if row.partitions.is_empty() {
        return "-".into();
    }
    row.partitions
        .iter()
        .map(|(t, p)| format!("{t}-{p}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// One line per id: id, state, producer id and epoch, timeout, partitions, how long its open
/// transaction has run, and its coordinator.
fn list_table(rows: &[TransactionRow], now_ms: i64, out: &mut Output) -> Result<()> {
    let mut lines = vec![
        [
            "TRANSACTIONAL-ID",
            "STATE",
            "PRODUCER-ID",
            "EPOCH",
            "TIMEOUT-MS",
            "PARTITIONS",
            "OPEN-FOR-MS",
            "COORDINATOR",
        ]
        .map(String::from),
    ];
    lines.extend(rows.iter().map(|r| {
        [
            r.transactional_id.clone(),
            r.state.clone(),
            r.producer_id.to_string(),
            or_dash(i64::from(r.producer_epoch)),
            or_dash(i64::from(r.timeout_ms)),
            r.partitions.len().to_string(),
            r.open_for_ms(now_ms).map_or("-".into(), |ms| ms.to_string()),
            r.coordinator.map_or("-".into(), |c| c.to_string()),
        ]
    }));
    table(&lines, out)
}

/// kafka-transactions.sh describe's fields, one `Name: value` a line.
fn describe_lines(row: &TransactionRow, now_ms: i64) -> Vec<String> {
    vec![
        format!("TransactionalId: {}", row.transactional_id),
        format!(
            "CoordinatorId: {}",
            row.coordinator.map_or("-".into(), |c| c.to_string())
        ),
        format!("TransactionState: {}", row.state),
        format!("ProducerId: {}", row.producer_id),
        format!("ProducerEpoch: {}", or_dash(i64::from(row.producer_epoch))),
        format!("TransactionTimeoutMs: {}", or_dash(i64::from(row.timeout_ms))),
        format!("CurrentTransactionStartTimeMs: {}", or_dash(row.start_time_ms)),
        format!(
            "TransactionDurationMs: {}",
            row.open_for_ms(now_ms).map_or("-".into(), |ms| ms.to_string())
        ),
        format!("TopicPartitions: {}", partitions(row)),
    ]
}

/// The row as one JSON object; unknown numbers are null.
fn json_of(row: &TransactionRow, now_ms: i64) -> serde_json::Value {
    let known = |v: i64| (v >= 0).then_some(v);
    json!({
        "transactional_id": row.transactional_id,
        "state": row.state,
        "producer_id": row.producer_id,
        "producer_epoch": known(i64::from(row.producer_epoch)),
        "timeout_ms": known(i64::from(row.timeout_ms)),
        "start_time_ms": known(row.start_time_ms),
        "open_for_ms": row.open_for_ms(now_ms),
        "partitions": row.partitions.iter().map(|(t, p)| json!({"topic": t, "partition": p})).collect::<Vec<_>>(),
        "coordinator": row.coordinator,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open() -> TransactionRow {
        TransactionRow {
            transactional_id: "orders-tx".into(),
            state: "Ongoing".into(),
            producer_id: 4001,
            producer_epoch: 3,
            timeout_ms: 60_000,
            partitions: vec![("orders".into(), 0), ("orders".into(), 2)],
            start_time_ms: 1_000,
            coordinator: Some(2),
        }
    }

    #[test]
    fn describe_prints_kafka_transactions_fields_with_the_duration_of_the_open_transaction() {
        let lines = describe_lines(&open(), 43_000);
        assert_eq!(lines[0], "TransactionalId: orders-tx");
        assert_eq!(lines[1], "CoordinatorId: 2");
        assert!(lines.contains(&"TransactionDurationMs: 42000".to_string()), "{lines:?}");
        assert!(
            lines.contains(&"TopicPartitions: orders-0,orders-2".to_string()),
            "{lines:?}"
        );
        let ended = TransactionRow {
            state: "CompleteCommit".into(),
            start_time_ms: -1,
            partitions: Vec::new(),
            ..open()
        };
        let lines = describe_lines(&ended, 43_000);
        assert!(lines.contains(&"TransactionDurationMs: -".to_string()), "{lines:?}");
        assert!(lines.contains(&"TopicPartitions: -".to_string()), "{lines:?}");
    }

    #[test]
    fn json_gives_numbers_and_null_for_what_is_unknown() {
        let value = json_of(&open(), 43_000);
        assert_eq!(value["open_for_ms"], 42_000);
        assert_eq!(value["partitions"][1]["partition"], 2);
        let lost = TransactionRow {
            producer_epoch: -1,
            timeout_ms: -1,
            start_time_ms: -1,
            coordinator: None,
            ..open()
        };
        let value = json_of(&lost, 43_000);
        assert!(value["producer_epoch"].is_null() && value["open_for_ms"].is_null());
        assert!(value["coordinator"].is_null());
    }
}
