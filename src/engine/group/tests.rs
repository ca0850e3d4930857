//! Unit tests of the coordinator: what it rebuilds from its partition, and how the answers
//! it gives follow its records.

use std::path::Path;

use super::record::{group_metadata_key, group_metadata_value};
use super::*;
use crate::storage::Log;
use crate::storage::LogConfig;

fn coordinator() -> GroupCoordinator {
    // One offsets partition: every group lives in partition 0.
    GroupCoordinator::new(
        1,
        1,
        0,
        EventBus::new(WallClock::new(), Clock::new()),
        WallClock::new(),
        Clock::new(),
    )
}

fn offsets_log(dir: &Path) -> Log {
    Log::open(dir.join("__consumer_offsets-0"), LogConfig::default(), 0).expect("open the log")
}

/// Makes `coordinator` load partition 0 from `log`; returns what the replay found unreadable.
async fn load(coordinator: &GroupCoordinator, log: Log) -> (Arc<Partition>, Vec<(i64, i64)>) {
    let partition = Arc::new(Partition::new(
        TopicPartition::new(OFFSETS_TOPIC, 0),
        1,
        log,
        10_000,
        Clock::new(),
    ));
    assert!(coordinator.begin_loading(&partition, 0));
    let replayed = replay(&partition.tp, &partition.log).await;
    let unreadable = replayed.unreadable.clone();
    coordinator.finish_loading(0, 0, replayed);
    (partition, unreadable)
}

/// A consumer's JoinGroup with a 10 s session and the range protocol.
fn join_request(group: &str, member_id: &str) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: group.into(),
        member_id: member_id.into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::from_static(b"subscription"))],
        client_id: "app".into(),
        client_host: "/10.0.0.1".into(),
        group_instance_id: None,
    }
}

/// OffsetFetch without `require_stable`, where no partition has an error of its own.
fn committed_offsets(
    coordinator: &GroupCoordinator,
    group: &str,
    partitions: Option<&[TopicPartition]>,
) -> Result<Vec<(TopicPartition, i64)>, ErrorCode> {
    let fetched = coordinator.fetch_offsets(group, partitions, false)?;
    Ok(fetched
        .into_iter()
        .map(|(tp, o)| (tp, o.expect("no per-partition error without require_stable")))
        .collect())
}

fn commit(offset: i64) -> CommittedOffset {
    CommittedOffset {
        offset,
        commit_timestamp: 0,
    }
}

fn member(id: &str, assignment: &'static [u8]) -> MemberMetadata {
    MemberMetadata {
        member_id: id.into(),
        group_instance_id: None,
        client_id: String::new(),
        client_host: String::new(),
        rebalance_timeout_ms: 30_000,
        session_timeout_ms: 10_000,
        subscription: Bytes::from_static(b"subscription"),
        assignment: Bytes::from_static(assignment),
    }
}

/// A batch whose CRC is right but whose record does not decode.
fn undecodable_batch() -> Vec<u8> {
    let mut batch = offset_commit_batch("analytics", &[(TopicPartition::new("views", 0), commit(7))]);
    // The first record's length (a zigzag varint right after the 61-byte header) now claims
    // far more bytes than the batch has.
    batch[61] = 0x7e;
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    batch
}

fn single_record_batch(key: &'static [u8]) -> Vec<u8> {
    encode(&[records::record(0, 0, Some(Bytes::from_static(key)), None)])
}

#[test]
fn coordinator_partition_uses_javas_string_hash() {
    assert_eq!(java_string_hash(""), 0);
    assert_eq!(java_string_hash("a"), 97);
    assert_eq!(
        java_string_hash("analytics"),
        "analytics"
            .chars()
            .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
    );
    // "polygenelubricants" hashes to i32::MIN in Java; Kafka's abs maps it to 0.
    assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
    assert_eq!(partition_for_group("polygenelubricants", 50), 0);
}

#[tokio::test(start_paused = true)]
async fn an_older_commit_completing_last_does_not_move_the_offset_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let coordinator = coordinator();
    let _partition = load(&coordinator, offsets_log(dir.path())).await;
    let tp = TopicPartition::new("orders", 0);
    // Two commits whose records sit at offsets 100 and 101 finish replicating in reverse.
    coordinator.committed("billing", &[(tp.clone(), commit(20))], 101);
    coordinator.committed("billing", &[(tp.clone(), commit(10))], 100);
    assert_eq!(
        committed_offsets(&coordinator, "billing", Some(std::slice::from_ref(&tp))),
        Ok(vec![(tp, 20)])
    );
}

#[tokio::test(start_paused = true)]
async fn a_load_brings_the_group_back_stable_and_skips_what_does_not_decode() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = offsets_log(dir.path());
    let views = TopicPartition::new("views", 0);
    let clicks = TopicPartition::new("clicks", 0);
    let group = GroupMetadataValue {
        protocol_type: "consumer".into(),
        generation: 4,
        protocol: Some("range".into()),
        leader: Some("m-1".into()),
        current_state_timestamp: 0,
        members: vec![member("m-1", b"views"), member("m-2", b"clicks")],
    };
    let batches = [
        group_metadata_batch("analytics", &group),
        offset_commit_batch("analytics", &[(views.clone(), commit(5))]),
        undecodable_batch(),
        single_record_batch(&[0, 1, 0]),
        offset_commit_batch("analytics", &[(clicks.clone(), commit(9))]),
    ];
    // Written as a follower copies them: a leader's append would refuse the bad batch.
    for mut batch in batches {
        batch[..8].copy_from_slice(&log.log_end_offset().to_be_bytes());
        log.append_as_follower(&batch, 0).expect("append");
    }
    let coordinator = coordinator();
    let (_partition, unreadable) = load(&coordinator, log).await;
    assert_eq!(
        unreadable,
        vec![(2, 3), (3, 4)],
        "the bad batch and the bad key are named"
    );
    let described = coordinator
        .describe("analytics")
        .expect("served")
        .expect("the group is back");
    assert_eq!(described.state, GroupState::Stable);
    assert_eq!(described.generation_id, 4);
    let members: Vec<(&str, &[u8])> = described
        .members
        .iter()
        .map(|m| (m.member_id.as_str(), &m.assignment[..]))
        .collect();
    assert_eq!(members, vec![("m-1", &b"views"[..]), ("m-2", &b"clicks"[..])]);
    assert_eq!(coordinator.heartbeat("analytics", 4, "m-2", None), ErrorCode::None);
    assert_eq!(
        committed_offsets(&coordinator, "analytics", None),
        Ok(vec![(clicks, 9), (views, 5)]),
        "the commit after the bad batch is loaded; the one inside it is not"
    );
}

#[tokio::test(start_paused = true)]
async fn a_group_tombstone_leaves_only_the_offsets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = offsets_log(dir.path());
    let tp = TopicPartition::new("views", 0);
    let group = GroupMetadataValue {
        protocol_type: "consumer".into(),
        generation: 2,
        protocol: Some("range".into()),
        leader: Some("m-1".into()),
        current_state_timestamp: 0,
        members: vec![member("m-1", b"views")],
    };
    let tombstone = encode(&[records::record(0, 0, Some(group_metadata_key("analytics")), None)]);
    let value = group_metadata_value(&group);
    assert!(!value.is_empty());
    for mut batch in [
        group_metadata_batch("analytics", &group),
        offset_commit_batch("analytics", &[(tp.clone(), commit(3))]),
        tombstone,
    ] {
        log.append_as_leader(&mut batch, 0, 0).expect("append");
    }
    let coordinator = coordinator();
    let _partition = load(&coordinator, log).await;
    let described = coordinator
        .describe("analytics")
        .expect("served")
        .expect("offsets keep it");
    assert_eq!(described.state, GroupState::Empty);
    assert!(described.members.is_empty());
    assert_eq!(committed_offsets(&coordinator, "analytics", None), Ok(vec![(tp, 3)]));
}

#[tokio::test(start_paused = true)]
async fn a_sync_whose_group_record_cannot_be_written_answers_not_coordinator_and_rebalances() {
    let dir = tempfile::tempdir().expect("tempdir");
    let coordinator = coordinator();
    // The replica is not its partition's leader, so no append succeeds.
    let _partition = load(&coordinator, offsets_log(dir.path())).await;
    let join = |member_id: &str| coordinator.join(join_request("analytics", member_id)).0;
    let member_id = join("").await.expect("answered").member_id;
    let joined = join(&member_id).await.expect("answered");
    assert_eq!((joined.error, joined.leader.as_str()), (None, member_id.as_str()));
    let (synced, write) = coordinator.sync(
        "analytics",
        joined.generation_id,
        &member_id,
        None,
        vec![(member_id.clone(), Bytes::from_static(b"views"))],
    );
    assert!(write.is_none());
    assert_eq!(synced.await.expect("answered").error, Some(ErrorCode::NotCoordinator));
    let described = coordinator.describe("analytics").expect("served").expect("group");
    assert_eq!(described.state, GroupState::PreparingRebalance);
}

#[tokio::test(start_paused = true)]
async fn a_join_with_an_id_the_coordinator_does_not_know_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let coordinator = coordinator();
    let _partition = load(&coordinator, offsets_log(dir.path())).await;
    let join = |member_id: &str| coordinator.join(join_request("analytics", member_id)).0;
    // Never given out (or given out by an earlier coordinator, or its member was removed):
    // the member must start afresh, giving up what it owned, as Kafka answers.
    let stale = join("analytics-0-1").await.expect("answered");
    assert_eq!(stale.error, Some(ErrorCode::UnknownMemberId));
    // An id given out is good until its session would have expired.
    let fresh = join("").await.expect("answered");
    assert_eq!(fresh.error, Some(ErrorCode::MemberIdRequired));
    tokio::time::advance(Duration::from_secs(11)).await;
    coordinator.tick();
    let late = join(&fresh.member_id).await.expect("answered");
    assert_eq!(late.error, Some(ErrorCode::UnknownMemberId));
    let again = join("").await.expect("answered").member_id;
    let joined = join(&again).await.expect("answered");
    assert_eq!((joined.error, joined.leader.as_str()), (None, again.as_str()));
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_missed_epochs_reloads_its_groups_from_the_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let coordinator = coordinator();
    let (partition, _) = load(&coordinator, offsets_log(dir.path())).await;
    // Same leader, same epoch: nothing to do.
    assert!(!coordinator.begin_loading(&partition, 0));
    // Same leader in a later epoch (it may have missed the epochs between, in which another
    // leader committed what its own failed writes had left in the log): its memory is
    // rebuilt from the log.
    assert!(coordinator.begin_loading(&partition, 2));
    assert!(!coordinator.begin_loading(&partition, 2));
}

/// Loads partition 0 as its only replica and leader, so that the coordinator's writes
/// succeed (acks=all is met by the leader alone).
async fn load_as_leader(coordinator: &GroupCoordinator, log: Log) -> Arc<Partition> {
    let partition = Arc::new(Partition::new(
        TopicPartition::new(OFFSETS_TOPIC, 0),
        1,
        log,
        10_000,
        Clock::new(),
    ));
    let registration = crate::engine::controller::PartitionRegistration::new(vec![1]);
    partition.apply(&registration, 1, |_| true).expect("lead");
    assert!(coordinator.begin_loading(&partition, 0));
    coordinator.finish_loading(0, 0, replay(&partition.tp, &partition.log).await);
    partition
}

/// Commits `offset` for `tp` as `member` of `generation` and lets it complete.
fn commit_now(
    coordinator: &GroupCoordinator,
    clock: WallClock,
    group: &str,
    generation: i32,
    member: &str,
    tp: &TopicPartition,
    offset: i64,
) {
    let offsets = [(
        tp.clone(),
        CommittedOffset {
            offset,
            commit_timestamp: clock.now_ms(),
        },
    )];
    let write = coordinator
        .commit_offsets(group, generation, member, None, &offsets)
        .expect("commit accepted")
        .expect("written");
    coordinator.committed(group, &offsets, write.appended.first_offset);
}

#[tokio::test(start_paused = true)]
async fn offsets_expire_after_the_retention_and_empty_groups_go_with_them() {
    const DAY: Duration = Duration::from_secs(86_400);
    const RETENTION_MS: i64 = 7 * 86_400_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = WallClock::new();
    let coordinator = GroupCoordinator::new(1, 1, 0, EventBus::new(clock, Clock::new()), clock, Clock::new());
    let partition = load_as_leader(&coordinator, offsets_log(dir.path())).await;
    let views = TopicPartition::new("views", 0);

    // A consumer group with one member commits, and a standalone consumer (no group
    // protocol, generation -1) commits too.
    let member_id = coordinator
        .join(join_request("analytics", ""))
        .0
        .await
        .expect("answered")
        .member_id;
    let joined = coordinator
        .join(join_request("analytics", &member_id))
        .0
        .await
        .expect("answered");
    let (_synced, _write) = coordinator.sync(
        "analytics",
        joined.generation_id,
        &member_id,
        None,
        vec![(member_id.clone(), Bytes::from_static(b"views"))],
    );
    coordinator.group_stored("analytics", joined.generation_id, ErrorCode::None);
    commit_now(
        &coordinator,
        clock,
        "analytics",
        joined.generation_id,
        &member_id,
        &views,
        40,
    );
    commit_now(&coordinator, clock, "tool", -1, "", &views, 7);

    // Eight days on, the live group's member keeps heartbeating: its offsets stay however
    // old they are. The standalone commit is older than the retention and goes.
    for _ in 0..8 {
        tokio::time::advance(DAY).await;
        assert_eq!(
            coordinator.heartbeat("analytics", joined.generation_id, &member_id, None),
            ErrorCode::None
        );
    }
    assert_eq!(coordinator.expire_offsets(RETENTION_MS), (1, 1));
    assert_eq!(
        committed_offsets(&coordinator, "analytics", None),
        Ok(vec![(views.clone(), 40)])
    );
    assert_eq!(coordinator.describe("tool"), Ok(None));

    // The member leaves: the group's offsets now count from when it emptied, not from the
    // (eight-day-old) commit.
    assert_eq!(coordinator.leave("analytics", &member_id, None), ErrorCode::None);
    tokio::time::advance(6 * DAY).await;
    assert_eq!(coordinator.expire_offsets(RETENTION_MS), (0, 0));
    assert_eq!(
        committed_offsets(&coordinator, "analytics", None),
        Ok(vec![(views.clone(), 40)])
    );
    tokio::time::advance(DAY).await;
    assert_eq!(coordinator.expire_offsets(RETENTION_MS), (1, 1));
    assert_eq!(coordinator.describe("analytics"), Ok(None));
    assert_eq!(committed_offsets(&coordinator, "analytics", None), Ok(vec![]));

    // The tombstones are in the log: a new coordinator loading it finds neither group.
    let successor = self::coordinator();
    let replayed = replay(&partition.tp, &partition.log).await;
    assert!(successor.begin_loading(&partition, 1));
    successor.finish_loading(0, 1, replayed);
    assert_eq!(successor.list_groups(), vec![]);
}

#[tokio::test(start_paused = true)]
async fn a_compacted_offsets_partition_replays_only_the_latest_commits_and_keeps_tombstoned_groups_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = WallClock::new();
    let coordinator = GroupCoordinator::new(1, 1, 0, EventBus::new(clock, Clock::new()), clock, Clock::new());
    let config = LogConfig {
        segment_bytes: 2048,
        cleanup_policy: crate::storage::CleanupPolicy::Compact,
        min_cleanable_dirty_ratio: 0.0,
        ..LogConfig::default()
    };
    let log = Log::open(dir.path().join("__consumer_offsets-0"), config, 0).expect("open the log");
    let partition = load_as_leader(&coordinator, log).await;
    let views = TopicPartition::new("views", 0);
    let clicks = TopicPartition::new("clicks", 0);
    // A standalone consumer commits 500 times; another commits once and its offsets expire.
    for n in 0..500 {
        commit_now(&coordinator, clock, "billing", -1, "", &views, n);
        commit_now(&coordinator, clock, "billing", -1, "", &clicks, 1000 + n);
    }
    commit_now(&coordinator, clock, "gone", -1, "", &views, 7);
    tokio::time::advance(Duration::from_secs(8 * 86_400)).await;
    commit_now(&coordinator, clock, "billing", -1, "", &views, 500);
    assert_eq!(
        coordinator.expire_offsets(7 * 86_400_000),
        (1, 1),
        "gone's offsets expired"
    );
    partition.log.roll(clock.now_ms()).expect("roll");
    let before = partition.log.size_bytes();
    let stats = partition
        .log
        .clean_below(clock.now_ms(), partition.high_watermark())
        .expect("clean")
        .expect("due");
    assert!(stats.records_removed >= 998, "{stats:?}");
    assert!(
        partition.log.size_bytes() < before / 10,
        "{} of {before} bytes left",
        partition.log.size_bytes()
    );

    // A new coordinator replays the cleaned log: the latest commits, and no trace of "gone"
    // beyond its tombstones (kept for delete.retention.ms).
    let successor = self::coordinator();
    let replayed = replay(&partition.tp, &partition.log).await;
    assert!(replayed.unreadable.is_empty(), "{:?}", replayed.unreadable);
    assert!(successor.begin_loading(&partition, 1));
    successor.finish_loading(0, 1, replayed);
    assert_eq!(
        committed_offsets(&successor, "billing", None),
        Ok(vec![(clicks, 1499), (views, 500)])
    );
    assert_eq!(successor.describe("gone"), Ok(None));
}

/// A standalone commit of `offset` for `tp`, appended but not yet replicated.
fn commit_appended(coordinator: &GroupCoordinator, group: &str, tp: &TopicPartition, offset: i64) -> i64 {
    coordinator
        .commit_offsets(group, -1, "", None, &[(tp.clone(), commit(offset))])
        .expect("commit accepted")
        .expect("written")
        .appended
        .first_offset
}

#[tokio::test(start_paused = true)]
async fn a_commit_appended_before_its_group_was_deleted_does_not_bring_the_group_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let coordinator = coordinator();
    let _partition = load_as_leader(&coordinator, offsets_log(dir.path())).await;
    let tp = TopicPartition::new("orders", 0);
    let at = commit_appended(&coordinator, "billing", &tp, 10);
    coordinator.delete_group("billing").expect("an empty group is deleted");
    // The commit's record precedes the tombstones: a reload would not have it either.
    coordinator.committed("billing", &[(tp.clone(), commit(10))], at);
    assert_eq!(coordinator.describe("billing"), Ok(None));
    assert_eq!(committed_offsets(&coordinator, "billing", None), Ok(Vec::new()));

    // A group of the same name made afresh ignores the old commit too.
    let again = commit_appended(&coordinator, "billing", &tp, 30);
    coordinator.committed("billing", &[(tp.clone(), commit(10))], at);
    coordinator.committed("billing", &[(tp.clone(), commit(30))], again);
    assert_eq!(committed_offsets(&coordinator, "billing", None), Ok(vec![(tp, 30)]));
}

#[tokio::test(start_paused = true)]
async fn a_commit_appended_before_its_offset_was_deleted_does_not_bring_the_offset_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let coordinator = coordinator();
    let _partition = load_as_leader(&coordinator, offsets_log(dir.path())).await;
    let tp = TopicPartition::new("orders", 0);
    let first = commit_appended(&coordinator, "billing", &tp, 10);
    coordinator.committed("billing", &[(tp.clone(), commit(10))], first);
    let in_flight = commit_appended(&coordinator, "billing", &tp, 20);
    let (outcome, write) = coordinator
        .delete_offsets("billing", std::slice::from_ref(&tp))
        .expect("offset delete");
    assert_eq!(outcome, vec![(tp.clone(), ErrorCode::None)]);
    assert!(write.is_some(), "a tombstone was written");
    coordinator.committed("billing", &[(tp.clone(), commit(20))], in_flight);
    assert_eq!(committed_offsets(&coordinator, "billing", None), Ok(Vec::new()));
}

#[test]
fn a_consumer_subscription_gives_its_topics_and_garbage_gives_none() {
    // ConsumerProtocolSubscription v1: version, topics, user data, owned partitions.
    let mut b = Vec::new();
    b.extend_from_slice(&1i16.to_be_bytes());
    b.extend_from_slice(&2i32.to_be_bytes());
    for topic in ["orders", "payments"] {
        b.extend_from_slice(&(topic.len() as i16).to_be_bytes());
        b.extend_from_slice(topic.as_bytes());
    }
    b.extend_from_slice(&(-1i32).to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes());
    assert_eq!(
        admin::subscription_topics(&b),
        Some(vec!["orders".to_string(), "payments".to_string()])
    );
    assert_eq!(admin::subscription_topics(&b[..9]), None);
    assert_eq!(admin::subscription_topics(b"x"), None);
}

/// TxnOffsetCommit of `offset` for `tp` by producer 7, replicated: pending until its marker.
fn txn_commit_replicated(coordinator: &GroupCoordinator, group: &str, tp: &TopicPartition, offset: i64) {
    let offsets = [(tp.clone(), commit(offset))];
    let write = coordinator
        .txn_commit_offsets(group, (7, 0), -1, "", None, &offsets)
        .expect("TxnOffsetCommit accepted")
        .expect("written");
    coordinator.txn_offsets_appended(group, 7, &offsets, write.appended.first_offset);
}

#[tokio::test(start_paused = true)]
async fn require_stable_answers_unstable_while_a_transaction_has_offsets_pending() {
    let dir = tempfile::tempdir().expect("tempdir");
    let coordinator = coordinator();
    let _partition = load_as_leader(&coordinator, offsets_log(dir.path())).await;
    let (orders, payments) = (TopicPartition::new("orders", 0), TopicPartition::new("payments", 0));
    let at = commit_appended(&coordinator, "etl", &orders, 10);
    coordinator.committed("etl", &[(orders.clone(), commit(10))], at);
    let at = commit_appended(&coordinator, "etl", &payments, 4);
    coordinator.committed("etl", &[(payments.clone(), commit(4))], at);
    txn_commit_replicated(&coordinator, "etl", &orders, 25);

    // Asked for stable offsets, the partition in the transaction is refused and the other
    // answered; asked plainly, both give what is committed now.
    let both = [orders.clone(), payments.clone()];
    assert_eq!(
        coordinator.fetch_offsets("etl", Some(&both), true),
        Ok(vec![
            (orders.clone(), Err(ErrorCode::UnstableOffsetCommit)),
            (payments.clone(), Ok(4))
        ])
    );
    assert_eq!(
        coordinator.fetch_offsets("etl", None, true),
        Ok(vec![
            (orders.clone(), Err(ErrorCode::UnstableOffsetCommit)),
            (payments.clone(), Ok(4))
        ])
    );
    assert_eq!(
        committed_offsets(&coordinator, "etl", Some(&both)),
        Ok(vec![(orders.clone(), 10), (payments.clone(), 4)])
    );

    // The COMMIT marker makes the transaction's offset the committed one, and stable.
    coordinator.complete_txn(0, 7, true);
    assert_eq!(
        coordinator.fetch_offsets("etl", Some(&both), true),
        Ok(vec![(orders.clone(), Ok(25)), (payments.clone(), Ok(4))])
    );

    // After an ABORT the offset committed before the transaction is stable again.
    txn_commit_replicated(&coordinator, "etl", &payments, 9);
    assert_eq!(
        coordinator.fetch_offsets("etl", Some(std::slice::from_ref(&payments)), true),
        Ok(vec![(payments.clone(), Err(ErrorCode::UnstableOffsetCommit))])
    );
    coordinator.complete_txn(0, 7, false);
    assert_eq!(
        coordinator.fetch_offsets("etl", Some(std::slice::from_ref(&payments)), true),
        Ok(vec![(payments, Ok(4))])
    );
}

#[tokio::test(start_paused = true)]
async fn an_empty_group_with_transactional_offsets_pending_is_not_expired() {
    let dir = tempfile::tempdir().expect("tempdir");
    let coordinator = coordinator();
    let _partition = load_as_leader(&coordinator, offsets_log(dir.path())).await;
    let tp = TopicPartition::new("orders", 0);
    txn_commit_replicated(&coordinator, "etl", &tp, 25);
    tokio::time::advance(Duration::from_secs(8 * 86_400)).await;
    // Kafka keeps a group while `hasOffsets`, which counts pending transactional ones.
    assert_eq!(coordinator.expire_offsets(7 * 86_400_000), (0, 0));
    coordinator.complete_txn(0, 7, true);
    assert_eq!(committed_offsets(&coordinator, "etl", None), Ok(vec![(tp, 25)]));
}
