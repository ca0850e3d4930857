//! Transactions as the console and the CLI show them (ListTransactions, then
//! DescribeTransactions per id): one row per transactional id with its state, producer id
//! and epoch, timeout, partitions, how long its open transaction has run and its coordinator.

use super::BrokerId;

/// One transactional id as its coordinator describes it. What only DescribeTransactions
/// tells stays unknown (`-1`, empty, `None`) when the description could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionRow {
    pub transactional_id: String,
    /// Kafka's name of the state: `Ongoing`, `PrepareCommit`, `CompleteAbort`...
    pub state: String,
    pub producer_id: i64,
    /// -1 when unknown.
    pub producer_epoch: i16,
    /// -1 when unknown.
    pub timeout_ms: i32,
    /// The partitions of the open (or ending) transaction, sorted.
    pub partitions: Vec<(String, i32)>,
    /// When the open transaction began (wall-clock ms), -1 when none is open.
    pub start_time_ms: i64,
    pub coordinator: Option<BrokerId>,
}

impl TransactionRow {
    /// Whether a transaction is open: begun and not yet completed (a coordinator keeps the
    /// last start time in CompleteCommit and CompleteAbort too).
    pub fn is_open(&self) -> bool {
        self.start_time_ms >= 0
            && matches!(
                self.state.as_str(),
                "Ongoing" | "PrepareCommit" | "PrepareAbort" | "PrepareEpochFence"
            )
    }

    /// How long the open transaction has run at `now_ms`; `None` when none is open.
    pub fn open_for_ms(&self, now_ms: i64) -> Option<i64> {
        self.is_open().then(|| (now_ms - self.start_time_ms).max(0))
    }

    /// Whether `filter` appears in its id, state or producer id.
    pub fn matches(&self, filter: &str) -> bool {
        self.transactional_id.contains(filter)
            || self.state.contains(filter)
            || self.producer_id.to_string().contains(filter)
    }
}

/// A source's answer to "list the transactions", or why not.
pub type TransactionsAnswer = Result<Vec<TransactionRow>, String>;

/// What a source that cannot list transactions answers.
pub const NO_TRANSACTIONS: &str = "this source cannot list transactions";

/// Why no transaction could be listed: no coordinator answered (COORDINATOR_NOT_AVAILABLE,
/// or a broker without the APIs), in words.
pub fn no_coordinator(reason: &str) -> String {
    format!("no transaction coordinator answered: {reason}")
}

/// A duration as the age column shows it: `850ms`, `12.3s`, `4m05s`, `2h07m`.
pub fn age(ms: i64) -> String {
    let ms = ms.max(0);
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{}m{:02}s", ms / 60_000, ms % 60_000 / 1000),
        _ => format!("{}h{:02}m", ms / 3_600_000, ms % 3_600_000 / 60_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_at_a_glance() {
        assert_eq!(age(850), "850ms");
        assert_eq!(age(12_345), "12.3s");
        assert_eq!(age(245_000), "4m05s");
        assert_eq!(age(7_620_000), "2h07m");
        assert_eq!(age(-5), "0ms", "a clock behind the coordinator's is no negative age");
    }

    #[test]
    fn only_an_open_transaction_has_an_age() {
        let mut row = TransactionRow {
            transactional_id: "orders-tx".into(),
            state: "Ongoing".into(),
            producer_id: 7,
            producer_epoch: 0,
            timeout_ms: 60_000,
            partitions: vec![("orders".into(), 0)],
            start_time_ms: 1_000,
            coordinator: Some(0),
        };
        assert_eq!(row.open_for_ms(4_000), Some(3_000));
        row.state = "CompleteCommit".into();
        assert_eq!(
            row.open_for_ms(4_000),
            None,
            "a completed transaction keeps its start time"
        );
        row.state = "Ongoing".into();
        row.start_time_ms = -1;
        assert_eq!(row.open_for_ms(4_000), None);
    }
}
