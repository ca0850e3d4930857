//! The transaction coordinator's vocabulary (KIP-98; Kafka's `TransactionCoordinator`,
//! `TransactionStateManager`, `TransactionMetadata`): the states a transactional id goes
//! through, the requests a producer sends its coordinator, and what operators see of them.
//!
//! The coordinator of a transactional id is the leader of partition
//! `abs(javaHash(id)) % N` of `__transaction_state`, as a group's is of `__consumer_offsets`.
//! Every state change is a record there, replicated before the producer is answered, so a new
//! leader of the partition replays it and carries the transactions on (coordinator failover).

mod coordinator;
mod load;
pub mod record;

pub(crate) use coordinator::{CoordinatorSetup, TxnCoordinator};
pub(crate) use load::replay;

use super::TopicPartition;
use super::group::partition_for_group;
use super::protocol::ErrorCode;

/// Kafka's transaction log topic: compacted, keyed by transactional id.
pub const TXN_STATE_TOPIC: &str = "__transaction_state";

/// The `__transaction_state` partition that holds a transactional id (the same hash as a
/// group's, Kafka's `partitionFor`).
pub fn partition_for_txn(transactional_id: &str, partitions: i32) -> i32 {
    partition_for_group(transactional_id, partitions)
}

/// Kafka's `TransactionState`, with its names as DescribeTransactions and ListTransactions
/// carry them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    Dead,
    PrepareEpochFence,
}

impl TxnState {
    pub const ALL: [TxnState; 8] = [
        TxnState::Empty,
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteCommit,
        TxnState::CompleteAbort,
        TxnState::Dead,
        TxnState::PrepareEpochFence,
    ];

    /// The name on the wire and in Kafka's tools (`Ongoing`, `PrepareCommit`, ...).
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// The state a name stands for, exactly as [`TxnState::name`] spells it.
    pub fn from_name(name: &str) -> Option<TxnState> {
        TxnState::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The state's id in the `__transaction_state` value (Kafka's `TransactionState.id`).
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    pub fn from_id(id: i8) -> Option<TxnState> {
        TxnState::ALL.into_iter().find(|s| s.id() == id)
    }
}

/// One transactional id as DescribeTransactions shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionDescription {
    pub transactional_id: String,
    pub coordinator: super::BrokerId,
    pub state: TxnState,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    /// When the open transaction began (wall-clock ms), -1 when none is open.
    pub start_time_ms: i64,
    /// The partitions of the open (or ending) transaction, sorted.
    pub partitions: Vec<TopicPartition>,
}

/// One line of ListTransactions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionListing {
    pub transactional_id: String,
    pub producer_id: i64,
    pub state: TxnState,
    /// When the open transaction began (wall-clock ms), -1 when none is open: ListTransactions
    /// v1's duration filter (KIP-994) and the console's age column read it.
    pub start_time_ms: i64,
}

/// Producer -> transaction coordinator (Kafka's APIs of the same names).
#[derive(Debug, Clone)]
pub enum TxnRequest {
    /// InitProducerId with a transactional id: a new producer id, or the id's producer with
    /// its epoch bumped, which fences older instances; an open transaction is aborted first.
    /// `producer_id`/`producer_epoch` are -1 on a first call (KIP-360 sends the current ones).
    InitProducerId {
        transactional_id: String,
        transaction_timeout_ms: i32,
        producer_id: i64,
        producer_epoch: i16,
    },
    /// AddPartitionsToTxn (v0-3, one transaction).
    AddPartitions {
        transactional_id: String,
        producer_id: i64,
        producer_epoch: i16,
        partitions: Vec<TopicPartition>,
    },
    /// AddOffsetsToTxn: adds the group's `__consumer_offsets` partition.
    AddOffsets {
        transactional_id: String,
        producer_id: i64,
        producer_epoch: i16,
        group_id: String,
    },
    /// EndTxn: commit or abort.
    EndTxn {
        transactional_id: String,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
    },
    /// DescribeTransactions, for one id.
    Describe { transactional_id: String },
    /// ListTransactions on this coordinator; empty filters match everything.
    List {
        states: Vec<TxnState>,
        producer_ids: Vec<i64>,
    },
}

#[derive(Debug)]
pub enum TxnResponse {
    InitProducerId(Result<(i64, i16), ErrorCode>),
    /// Each partition's outcome, or one error for them all.
    AddPartitions(Result<Vec<(TopicPartition, ErrorCode)>, ErrorCode>),
    AddOffsets(ErrorCode),
    EndTxn(ErrorCode),
    Describe(Result<TransactionDescription, ErrorCode>),
    List(Vec<TransactionListing>),
}
