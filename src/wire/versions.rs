//! The API versions kdeck implements and advertises. Curated, not the crate's
//! `valid_versions()`: only versions whose semantics the handlers follow (topic names rather
//! than topic ids), and only versions the crate's structs decode (its
//! `valid_versions()` overstates OffsetCommit, OffsetFetch and InitProducerId). The minimums
//! are Kafka 3.9's (the vendored crate is patched for the versions 4.0 dropped): old clients
//! that distributions still package send exactly those.

use kafka_protocol::messages::ApiKey;
use kafka_protocol::messages::api_versions_response::{ApiVersion, ApiVersionsResponse};

/// `(api, min, max)` for every API kdeck answers.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    // v0-2 carry message sets (formats v0/v1), converted to v2 batches on append; v13 names
    // topics by id.
    (ApiKey::Produce, 0, 9),
    // v0-3 answer with message sets, down-converted from the log; v13 names topics by id.
    (ApiKey::Fetch, 0, 12),
    // v0 answers a list of offsets; v7 adds MAX_TIMESTAMP lookups, which the engine does not
    // answer.
    (ApiKey::ListOffsets, 0, 6),
    (ApiKey::Metadata, 0, 12),
    // v0 commits as a v1 commit without a generation: Kafka 3.9 kept v0's offsets in
    // ZooKeeper (and refused them in KRaft mode); kdeck has one store, the group coordinator's.
    (ApiKey::OffsetCommit, 0, 8),
    (ApiKey::OffsetFetch, 0, 8),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::JoinGroup, 0, 7),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 4),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::ListGroups, 0, 4),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::CreateTopics, 0, 7),
    (ApiKey::DeleteTopics, 0, 6),
    (ApiKey::InitProducerId, 0, 4),
    (ApiKey::OffsetForLeaderEpoch, 0, 4),
    (ApiKey::DescribeConfigs, 0, 4),
    // SET, DELETE, APPEND and SUBTRACT; v1 is v0 made flexible.
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    // The legacy form, which replaces a resource's whole set of overrides.
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::DescribeCluster, 0, 1),
    // KIP-455; v1 adds allow_replication_factor_change (KIP-860).
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::ListPartitionReassignments, 0, 0),
    // Every version: v2 is v1 made flexible. Admin clients delete groups with it
    // (kafka-consumer-groups.sh --delete, confluent-kafka's delete_consumer_groups).
    (ApiKey::DeleteGroups, 0, 2),
    // Its only version: kafka-consumer-groups.sh --delete-offsets, Admin.deleteConsumerGroupOffsets.
    (ApiKey::OffsetDelete, 0, 0),
    // Each broker has one log dir; v4 adds its filesystem's total and usable bytes.
    (ApiKey::DescribeLogDirs, 0, 4),
    // Answered as soon as the leader moved its log start (no wait for the followers').
    (ApiKey::DeleteRecords, 0, 2),
    // Answered as a broker without an authorizer answers (SECURITY_DISABLED).
    (ApiKey::DescribeAcls, 0, 3),
    // KIP-98 transactions. AddPartitionsToTxn v4+ is the brokers' batched form and v5, like
    // EndTxn, AddOffsetsToTxn and TxnOffsetCommit v4+, KIP-890's second part (server-side
    // verification, TRANSACTION_ABORTABLE), which Kafka 3.9's own clients do not send.
    (ApiKey::AddPartitionsToTxn, 0, 3),
    (ApiKey::AddOffsetsToTxn, 0, 3),
    (ApiKey::EndTxn, 0, 3),
    (ApiKey::TxnOffsetCommit, 0, 3),
    // Coordinator to partition leader; v0 is v1 without a flexible encoding (the crate reads
    // only v1).
    (ApiKey::WriteTxnMarkers, 1, 1),
    (ApiKey::DescribeTransactions, 0, 0),
    // v1 adds the duration filter (KIP-994).
    (ApiKey::ListTransactions, 0, 1),
];

/// The advertised range of `api`, if kdeck implements it.
pub fn range(api: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(k, _, _)| *k == api)
        .map(|(_, min, max)| (*min, *max))
}

pub fn is_supported(api: ApiKey, version: i16) -> bool {
    range(api).is_some_and(|(min, max)| (min..=max).contains(&version))
}

/// The ApiVersions answer: `error_code` 0, or 35 (UNSUPPORTED_VERSION) when the client asked
/// with a version we do not know, which it then retries with one from this list.
pub fn api_versions_response(error_code: i16) -> ApiVersionsResponse {
    ApiVersionsResponse::default()
        .with_error_code(error_code)
        .with_api_keys(
            SUPPORTED
                .iter()
                .map(|(key, min, max)| {
                    ApiVersion::default()
                        .with_api_key(*key as i16)
                        .with_min_version(*min)
                        .with_max_version(*max)
                })
                .collect(),
        )
}
