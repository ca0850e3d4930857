//! The messages nodes exchange over the in-process network. Names and fields follow Kafka's
//! APIs (Produce, Fetch, ListOffsets, BrokerRegistration, BrokerHeartbeat, AlterPartition);
//! error codes are Kafka's, so the wire layer maps them one to one.

use std::sync::Arc;

use bytes::Bytes;

use super::controller::{MetadataImage, PartitionRegistration};
use super::group::{GroupDescription, GroupState, JoinGroupRequest, JoinGroupResponse, SyncGroupResponse};
use super::txn::{TxnRequest, TxnResponse};
use super::{BrokerId, OffsetSpec, TopicPartition};
use crate::kafka::IsolationLevel;
use crate::storage::{AbortedTxn, EpochEndOffset};

/// Kafka protocol error codes the engine returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i16)]
pub enum ErrorCode {
    None = 0,
    OffsetOutOfRange = 1,
    CorruptMessage = 2,
    UnknownTopicOrPartition = 3,
    LeaderNotAvailable = 5,
    NotLeaderOrFollower = 6,
    RequestTimedOut = 7,
    MessageTooLarge = 10,
    NetworkException = 13,
    CoordinatorLoadInProgress = 14,
    CoordinatorNotAvailable = 15,
    NotCoordinator = 16,
    /// A compressed batch that decompresses past kdeck's bound (`MAX_DECOMPRESSED_BATCH_BYTES`).
    RecordListTooLarge = 18,
    NotEnoughReplicas = 19,
    NotEnoughReplicasAfterAppend = 20,
    IllegalGeneration = 22,
    InconsistentGroupProtocol = 23,
    UnknownMemberId = 25,
    RebalanceInProgress = 27,
    InvalidCommitOffsetSize = 28,
    TopicAlreadyExists = 36,
    OutOfOrderSequenceNumber = 45,
    InvalidProducerEpoch = 47,
    /// A plain batch from a producer whose transaction is open.
    InvalidTxnState = 48,
    /// The producer id is not the one the transactional id holds.
    InvalidProducerIdMapping = 49,
    /// `transaction.timeout.ms` above `transaction.max.timeout.ms`.
    InvalidTransactionTimeout = 50,
    /// The transactional id is completing a transaction; retry.
    ConcurrentTransactions = 51,
    /// A marker from a transaction coordinator older than one already seen.
    TransactionCoordinatorFenced = 52,
    UnknownProducerId = 59,
    /// A newer instance with the same transactional id has a newer epoch (KIP-588).
    ProducerFenced = 90,
    TransactionalIdNotFound = 105,
    InvalidPartitions = 37,
    InvalidReplicationFactor = 38,
    InvalidReplicaAssignment = 39,
    NotController = 41,
    InvalidConfig = 40,
    InvalidRequest = 42,
    /// DeleteRecords on a topic whose `cleanup.policy` does not delete (compact only).
    PolicyViolation = 44,
    /// A partition of a request not tried because another one of it failed.
    OperationNotAttempted = 55,
    KafkaStorageError = 56,
    NonEmptyGroup = 68,
    GroupIdNotFound = 69,
    FencedLeaderEpoch = 74,
    UnknownLeaderEpoch = 75,
    StaleBrokerEpoch = 77,
    OffsetNotAvailable = 78,
    PreferredLeaderNotAvailable = 80,
    EligibleLeadersNotAvailable = 83,
    MemberIdRequired = 79,
    /// KIP-345: the member's `group.instance.id` belongs to a newer member now.
    FencedInstanceId = 82,
    ElectionNotNeeded = 84,
    NoReassignmentInProgress = 85,
    GroupSubscribedToTopic = 86,
    InvalidRecord = 87,
    /// OffsetFetch with `require_stable`: an open transaction has offsets pending for the
    /// partition; the client retries (KIP-447).
    UnstableOffsetCommit = 88,
    InvalidUpdateVersion = 96,
    IneligibleReplica = 107,
    UnknownServerError = -1,
}

/// Kafka's name of the error (`NOT_ENOUGH_REPLICAS`), as its clients and logs print it.
impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::kafka::screaming_snake(&format!("{self:?}")))
    }
}

/// Offset ranges in words for a log line: `0..12, 40..41`.
pub(crate) fn ranges_in_words(ranges: &[(i64, i64)]) -> String {
    let words: Vec<String> = ranges.iter().map(|(a, b)| format!("{a}..{b}")).collect();
    words.join(", ")
}

/// Offsets in words for a log line: `3, 17, 40`.
pub(crate) fn offsets_in_words(offsets: &[i64]) -> String {
    let words: Vec<String> = offsets.iter().map(i64::to_string).collect();
    words.join(", ")
}

impl ErrorCode {
    pub fn code(self) -> i16 {
        self as i16
    }

    pub fn from_storage(code: i16) -> ErrorCode {
        match code {
            1 => ErrorCode::OffsetOutOfRange,
            2 => ErrorCode::CorruptMessage,
            10 => ErrorCode::MessageTooLarge,
            18 => ErrorCode::RecordListTooLarge,
            56 => ErrorCode::KafkaStorageError,
            87 => ErrorCode::InvalidRecord,
            _ => ErrorCode::UnknownServerError,
        }
    }

    /// Errors a client retries after refreshing metadata.
    pub fn is_retriable(self) -> bool {
        matches!(
            self,
            ErrorCode::NotLeaderOrFollower
                | ErrorCode::LeaderNotAvailable
                | ErrorCode::RequestTimedOut
                | ErrorCode::NetworkException
                | ErrorCode::NotEnoughReplicas
                | ErrorCode::NotEnoughReplicasAfterAppend
                | ErrorCode::FencedLeaderEpoch
                | ErrorCode::UnknownLeaderEpoch
                | ErrorCode::OffsetNotAvailable
                | ErrorCode::KafkaStorageError
                | ErrorCode::CoordinatorLoadInProgress
                | ErrorCode::CoordinatorNotAvailable
                | ErrorCode::NotCoordinator
        )
    }
}

/// Produce acknowledgement modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acks {
    /// No response expected (the engine still reports errors to in-process callers).
    None,
    /// After the leader's local append.
    Leader,
    /// After every in-sync replica has the records (HW passed them).
    All,
}

#[derive(Debug, Clone)]
pub struct FetchRequest {
    /// The fetching follower and its broker epoch; `None` for consumers.
    pub replica: Option<(BrokerId, i64)>,
    pub tp: TopicPartition,
    pub fetch_offset: i64,
    pub current_leader_epoch: i32,
    /// Epoch of the last batch the follower has (KIP-320 divergence check).
    pub last_fetched_epoch: Option<i32>,
    pub max_bytes: usize,
    pub max_wait_ms: u64,
    /// A consumer's isolation level (followers read everything).
    pub isolation: IsolationLevel,
}

/// Batches a fetch returned, with the partition's state at that time.
#[derive(Debug, Clone, Default)]
pub struct FetchedRecords {
    pub high_watermark: i64,
    /// The last stable offset: below it no transaction is open.
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub records: Bytes,
    /// For read_committed, the aborted transactions overlapping the records returned (the
    /// consumer drops their records); `None` for read_uncommitted.
    pub aborted_transactions: Option<Vec<AbortedTxn>>,
}

#[derive(Debug)]
pub enum Request {
    Produce {
        tp: TopicPartition,
        records: Vec<u8>,
        acks: Acks,
        timeout_ms: u64,
        /// The producer's `transactional.id`: the leader verifies a transaction's first batch
        /// with its coordinator (KIP-890).
        transactional_id: Option<String>,
    },
    Fetch(FetchRequest),
    ListOffsets {
        tp: TopicPartition,
        spec: OffsetSpec,
        isolation: IsolationLevel,
    },
    /// Transaction coordinator -> partition leader (WriteTxnMarkers, one partition): append
    /// the end-transaction marker of `producer_id`'s transaction with acks=all.
    WriteTxnMarker {
        tp: TopicPartition,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
        timeout_ms: u64,
    },
    /// Client -> leader: move the log start up to `offset` (-1: the high watermark).
    DeleteRecords {
        tp: TopicPartition,
        offset: i64,
    },
    /// Broker -> controller on start.
    RegisterBroker {
        broker: BrokerId,
        /// The epoch the broker had when it last shut down cleanly, -1 after a crash.
        previous_broker_epoch: i64,
    },
    /// Broker -> controller every heartbeat interval.
    BrokerHeartbeat {
        broker: BrokerId,
        broker_epoch: i64,
        metadata_version: u64,
    },
    /// Leader -> controller: change the ISR.
    AlterPartition {
        tp: TopicPartition,
        leader: BrokerId,
        broker_epoch: i64,
        leader_epoch: i32,
        partition_epoch: i32,
        new_isr: Vec<BrokerId>,
    },
    /// Controller -> broker: the metadata changed.
    UpdateMetadata(Arc<MetadataImage>),
    /// Client -> group coordinator.
    Group(GroupRequest),
    /// Producer or operator -> transaction coordinator.
    Txn(TxnRequest),
}

#[derive(Debug)]
pub enum Response {
    Produce {
        error: ErrorCode,
        base_offset: i64,
    },
    Fetch {
        error: ErrorCode,
        diverging_epoch: Option<EpochEndOffset>,
        data: FetchedRecords,
    },
    ListOffsets {
        error: ErrorCode,
        offset: i64,
        timestamp: i64,
    },
    WriteTxnMarker {
        error: ErrorCode,
        /// The marker's offset (-1 when it was not written).
        offset: i64,
    },
    DeleteRecords {
        error: ErrorCode,
        /// The leader's log start offset after the request.
        low_watermark: i64,
    },
    RegisterBroker {
        error: ErrorCode,
        broker_epoch: i64,
        image: Arc<MetadataImage>,
    },
    BrokerHeartbeat {
        error: ErrorCode,
        /// Newer metadata, when the broker is behind.
        image: Option<Arc<MetadataImage>>,
    },
    AlterPartition {
        error: ErrorCode,
        state: Option<PartitionRegistration>,
    },
    UpdateMetadata,
    Group(GroupResponse),
    Txn(TxnResponse),
}

/// Consumer-group APIs, answered by the group's coordinator.
#[derive(Debug)]
pub enum GroupRequest {
    Join(JoinGroupRequest),
    Sync {
        group_id: String,
        generation: i32,
        member_id: String,
        /// KIP-345: a static member's `group.instance.id`, checked against the member id.
        group_instance_id: Option<String>,
        assignments: Vec<(String, Bytes)>,
    },
    Heartbeat {
        group_id: String,
        generation: i32,
        member_id: String,
        group_instance_id: Option<String>,
    },
    /// One member leaves: by member id, or by instance id alone (an empty member id).
    Leave {
        group_id: String,
        member_id: String,
        group_instance_id: Option<String>,
    },
    OffsetCommit {
        group_id: String,
        generation: i32,
        member_id: String,
        group_instance_id: Option<String>,
        offsets: Vec<(TopicPartition, i64)>,
    },
    OffsetFetch {
        group_id: String,
        partitions: Option<Vec<TopicPartition>>,
        /// OffsetFetch v7+'s `require_stable` (KIP-447; a read_committed consumer sets it): a
        /// partition with transactional offsets still pending answers UNSTABLE_OFFSET_COMMIT
        /// instead of the offset committed before that transaction.
        require_stable: bool,
    },
    ListGroups,
    Describe {
        group_id: String,
    },
    /// DeleteGroups, for one group.
    DeleteGroup {
        group_id: String,
    },
    /// OffsetDelete.
    OffsetDelete {
        group_id: String,
        partitions: Vec<TopicPartition>,
    },
    /// TxnOffsetCommit: offsets written to `__consumer_offsets` inside the producer's
    /// transaction, visible to OffsetFetch only once its COMMIT marker is written there.
    /// `generation` -1 and an empty `member_id` skip the member checks (a producer that does
    /// not know the group's metadata, before KIP-447).
    TxnOffsetCommit {
        group_id: String,
        transactional_id: String,
        producer_id: i64,
        producer_epoch: i16,
        generation: i32,
        member_id: String,
        group_instance_id: Option<String>,
        offsets: Vec<(TopicPartition, i64)>,
    },
}

/// OffsetFetch's answer for a group: per partition its committed offset (-1 where none) or
/// its own error (UNSTABLE_OFFSET_COMMIT).
pub type FetchedOffsets = Vec<(TopicPartition, Result<i64, ErrorCode>)>;

#[derive(Debug)]
pub enum GroupResponse {
    Join(JoinGroupResponse),
    Sync(SyncGroupResponse),
    Heartbeat(ErrorCode),
    Leave(ErrorCode),
    OffsetCommit(ErrorCode),
    /// Each partition's committed offset (-1 where none) or its error, or the group's error.
    OffsetFetch(Result<FetchedOffsets, ErrorCode>),
    ListGroups(Vec<(String, GroupState)>),
    Describe(Result<Option<GroupDescription>, ErrorCode>),
    DeleteGroup(ErrorCode),
    /// Each partition's outcome, or the group's error.
    OffsetDelete(Result<Vec<(TopicPartition, ErrorCode)>, ErrorCode>),
    /// One error for every offset of the request.
    TxnOffsetCommit(ErrorCode),
}
