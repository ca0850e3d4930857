//! Loading a transaction coordinator's state (Kafka's
//! `TransactionStateManager.loadTransactionsForTxnTopicPartition`): a broker that becomes the
//! leader of a `__transaction_state` partition replays it from start to end; the last record
//! of each transactional id wins, a tombstone forgets it. What cannot be read or decoded is
//! logged and skipped.

use std::collections::BTreeMap;

use super::record::{self, TxnLogValue};
use crate::engine::TopicPartition;
use crate::storage::batch::Batches;
use crate::storage::{Log, LogError, records};

const LOAD_BUFFER_BYTES: usize = 1 << 20;

/// Each transactional id's last state in the partition.
pub(crate) struct TxnReplay {
    pub(super) txns: BTreeMap<String, TxnLogValue>,
}

/// Replays a `__transaction_state` partition from its start to its end as it is now.
pub(crate) async fn replay(tp: &TopicPartition, log: &Log) -> TxnReplay {
    let mut txns: BTreeMap<String, TxnLogValue> = BTreeMap::new();
    let end = log.log_end_offset();
    let mut at = log.log_start_offset();
    while at < end {
        let data = match log.read(at, LOAD_BUFFER_BYTES, Some(end)) {
            Ok(data) => data,
            Err(LogError::OffsetOutOfRange { log_start_offset, .. }) if at < log_start_offset => {
                at = log_start_offset;
                continue;
            }
            Err(error @ (LogError::CorruptBatch { .. } | LogError::CorruptMessage(_))) => {
                tracing::error!(%tp, offset = at, %error, "transaction log unreadable here; skipping an offset");
                at += 1;
                tokio::task::yield_now().await;
                continue;
            }
            Err(error) => {
                tracing::error!(%tp, offset = at, %error, "cannot read the transaction log any further");
                break;
            }
        };
        if data.records.is_empty() {
            break;
        }
        let start = at;
        for batch in Batches::checked_before(&data.records) {
            let Ok((position, header, bytes)) = batch else {
                tracing::error!(%tp, offset = at, "transaction log batch is malformed");
                break;
            };
            if header.last_offset() < at {
                continue;
            }
            if !header.is_control() {
                let from = at;
                let shared = data.records.slice(position..position + bytes.len());
                let decoded = records::for_each_shared(shared, |r| {
                    if r.offset < from {
                        return;
                    }
                    let id = match r.key.as_deref().map(record::parse_key) {
                        Some(Ok(id)) => id,
                        Some(Err(error)) => {
                            tracing::error!(%tp, offset = r.offset, %error, "transaction log key does not decode; skipped");
                            return;
                        }
                        None => return,
                    };
                    match r.value.as_deref().map(record::parse_value) {
                        None => {
                            txns.remove(&id);
                        }
                        Some(Ok(value)) => {
                            txns.insert(id, value);
                        }
                        Some(Err(error)) => {
                            tracing::error!(%tp, offset = r.offset, transactional_id = %id, %error, "transaction log value does not decode; skipped");
                        }
                    }
                });
                if let Err(error) = decoded {
                    tracing::error!(%tp, offset = header.base_offset, %error, "transaction log batch does not decode");
                }
            }
            at = header.next_offset();
        }
        if at == start {
            at += 1;
        }
        tokio::task::yield_now().await;
    }
    TxnReplay { txns }
}
