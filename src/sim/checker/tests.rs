//! The checker's unit tests, on hand-built samples of one small world (three brokers, one
//! partition, one group): each breaks one rule or takes a loss Kafka allows, so every
//! invariant is seen to fire with its facts, and to stay quiet where the rules allow.

use super::*;
use crate::engine::group::GroupState;
use crate::engine::{
    BrokerRegistration, BrokerView, ElectionReason, GroupOffsetView, GroupView, Membership, PartitionRegistration,
    TopicConfig, TopicMetadata,
};
use crate::storage::CleanupPolicy;
use crate::storage::batch::{self, BatchHeader};
use crate::storage::records::Compression;

fn tp() -> TopicPartition {
    TopicPartition::new("t", 0)
}

/// Batches per broker, read as a log reads them.
#[derive(Default)]
struct FakeLogs(BTreeMap<BrokerId, Vec<Vec<u8>>>);

impl ReplicaLogs for FakeLogs {
    fn read(&self, broker: BrokerId, _: &TopicPartition, from: i64, upper: i64) -> Result<Bytes, ErrorCode> {
        let batches = self.0.get(&broker).ok_or(ErrorCode::NotLeaderOrFollower)?;
        let mut out = Vec::new();
        for b in batches {
            let h = BatchHeader::parse(b).map_err(|_| ErrorCode::CorruptMessage)?;
            if h.last_offset() < from {
                continue;
            }
            if h.base_offset >= upper {
                break;
            }
            out.extend_from_slice(b);
        }
        Ok(Bytes::from(out))
    }
}

fn batch(base: i64, epoch: i32, values: &[&str]) -> Vec<u8> {
    let recs: Vec<_> = values
        .iter()
        .enumerate()
        .map(|(i, v)| records::record(i as i64, 1_000, None, Some(Bytes::from(v.to_string()))))
        .collect();
    let mut b = records::encode_batch(&recs, Compression::None)
        .expect("encodes")
        .to_vec();
    batch::set_base_offset(&mut b, base);
    batch::set_partition_leader_epoch(&mut b, epoch);
    b
}

/// Three brokers; topic `t` has one partition on all three, led by broker 0 in epoch 1
/// with every replica in the ISR; group `g` is coordinated by broker 0.
struct World {
    image: MetadataImage,
    snapshot: ClusterSnapshot,
    replicas: Vec<ReplicaProbe>,
    logs: FakeLogs,
    step: usize,
    /// The epoch the coordinator's replica has applied, when behind the metadata's.
    offsets_replica_epoch: Option<i32>,
    /// The HW and log end of the coordinator's replica.
    offsets_replica_hw_leo: (i64, i64),
}

impl World {
    fn new() -> World {
        let partition = |replicas: Vec<BrokerId>| PartitionRegistration {
            leader: 0,
            leader_epoch: 1,
            partition_epoch: 1,
            ..PartitionRegistration::new(replicas)
        };
        let topic = |id: &str, replicas: Vec<BrokerId>| TopicMetadata {
            id: id.into(),
            config: TopicConfig::new(1, replicas.len() as i32),
            partitions: vec![partition(replicas)],
        };
        let image = MetadataImage {
            version: 1,
            topics: [
                ("t".to_string(), topic("id-t", vec![0, 1, 2])),
                (OFFSETS_TOPIC.to_string(), topic("id-o", vec![0])),
            ]
            .into(),
            brokers: (0..3)
                .map(|b| {
                    (
                        b,
                        BrokerRegistration {
                            epoch: 10 + i64::from(b),
                            fenced: false,
                            shutting_down: false,
                        },
                    )
                })
                .collect(),
            next_broker_epoch: 13,
            next_producer_id: 0,
            unclean_leader_election: None,
            cluster_configs: Default::default(),
            ..MetadataImage::default()
        };
        let brokers = (0..3)
            .map(|b| BrokerView {
                id: b,
                state: BrokerState::Running,
                fenced: false,
                is_controller: b == 0,
                broker_epoch: 10 + i64::from(b),
                leaders: 0,
                replicas: 0,
                bytes_in: 0,
                bytes_out: 0,
                membership: Membership::Member,
            })
            .collect();
        let mut world = World {
            image,
            snapshot: ClusterSnapshot {
                controller: Some(0),
                metadata_version: 1,
                brokers,
                topics: Vec::new(),
                partitions: Vec::new(),
                groups: Vec::new(),
            },
            replicas: (0..3)
                .map(|b| ReplicaProbe {
                    tp: tp(),
                    broker: b,
                    broker_epoch: 10 + i64::from(b),
                    is_leader: b == 0,
                    leader: Some(0),
                    leader_epoch: 1,
                    high_watermark: 0,
                    log_start_offset: 0,
                    log_end_offset: 0,
                    epochs: Vec::new(),
                })
                .collect(),
            logs: FakeLogs::default(),
            step: 0,
            offsets_replica_epoch: None,
            offsets_replica_hw_leo: (0, 0),
        };
        let log = vec![batch(0, 1, &["a", "b"]), batch(2, 1, &["c"])];
        for b in 0..3 {
            world.set_log(b, log.clone());
        }
        world.set_hw(3);
        world
    }

    fn set_log(&mut self, broker: BrokerId, batches: Vec<Vec<u8>>) {
        let end = batches
            .last()
            .map_or(0, |b| BatchHeader::parse(b).expect("a batch").next_offset());
        self.probe(broker).log_end_offset = end;
        self.logs.0.insert(broker, batches);
    }

    /// Every replica learns the HW `hw`.
    fn set_hw(&mut self, hw: i64) {
        for r in &mut self.replicas {
            r.high_watermark = hw.min(r.log_end_offset);
        }
    }

    fn probe(&mut self, broker: BrokerId) -> &mut ReplicaProbe {
        self.replicas
            .iter_mut()
            .find(|r| r.broker == broker)
            .expect("a replica")
    }

    fn partition(&mut self) -> &mut PartitionRegistration {
        &mut self.image.topics.get_mut("t").expect("topic").partitions[0]
    }

    /// The replicas of `t-0` and the coordinator's replica of `__consumer_offsets`.
    fn probes(&self) -> Vec<ReplicaProbe> {
        let offsets = ReplicaProbe {
            tp: TopicPartition::new(OFFSETS_TOPIC, 0),
            broker: 0,
            broker_epoch: 10,
            is_leader: true,
            leader: Some(0),
            leader_epoch: self.offsets_replica_epoch.unwrap_or_else(|| {
                self.image
                    .topics
                    .get(OFFSETS_TOPIC)
                    .map_or(1, |t| t.partitions[0].leader_epoch)
            }),
            high_watermark: self.offsets_replica_hw_leo.0,
            log_start_offset: 0,
            log_end_offset: self.offsets_replica_hw_leo.1,
            epochs: Vec::new(),
        };
        let mut all = self.replicas.clone();
        all.push(offsets);
        all
    }

    fn observe(&mut self, checker: &mut Checker) {
        self.step += 1;
        checker.observe(&Observation {
            step: self.step,
            at: Duration::from_secs(self.step as u64),
            image: &self.image,
            snapshot: &self.snapshot,
            replicas: &self.probes(),
            logs: &self.logs,
        });
    }

    fn unsettled(&self, checker: &Checker, live: &[(&str, usize)]) -> Option<String> {
        checker.unsettled(
            &Observation {
                step: self.step,
                at: Duration::ZERO,
                image: &self.image,
                snapshot: &self.snapshot,
                replicas: &self.probes(),
                logs: &self.logs,
            },
            &live.iter().map(|(g, n)| (g.to_string(), *n)).collect(),
        )
    }

    fn group(&mut self, generation: i32, committed: i64) {
        self.snapshot.groups = vec![GroupView {
            group_id: "g".into(),
            state: GroupState::Stable,
            protocol: "range".into(),
            generation,
            coordinator: 0,
            members: vec![crate::engine::group::MemberDescription {
                member_id: "m".into(),
                group_instance_id: None,
                client_id: String::new(),
                client_host: String::new(),
                assignment: Bytes::new(),
                metadata: Bytes::new(),
            }],
            offsets: vec![GroupOffsetView {
                tp: tp(),
                committed,
                end: None,
                lag: None,
            }],
        }];
    }
}

fn checker_config(unclean: bool) -> CheckerConfig {
    CheckerConfig {
        offsets_topic_partitions: 1,
        unclean_leader_election: unclean,
        ordered_producers: BTreeSet::from([0]),
        power_loss_loses_data: true,
    }
}

fn checker(unclean: bool) -> Checker {
    Checker::new(checker_config(unclean))
}

/// Broker `new` elected leader of `t-0` for `epoch` (the reason is the engine's label, which
/// the checker does not trust).
fn elected(new: BrokerId, epoch: i32) -> ClusterEvent {
    ClusterEvent {
        at: chrono::Utc::now(),
        cluster_at: chrono::Utc::now(),
        kind: EventKind::LeaderElected {
            tp: tp(),
            old: None,
            new,
            leader_epoch: epoch,
            reason: ElectionReason::Unclean,
            isr: vec![new],
        },
    }
}

/// What a fresh consumer reads back of `t-0`: these values from offset 0.
fn final_log(values: &[&str]) -> FinalState {
    final_log_epochs(&values.iter().map(|v| (*v, 1)).collect::<Vec<_>>())
}

/// What a fresh consumer reads back of `t-0`: these (value, batch leader epoch) from 0.
fn final_log_epochs(records: &[(&str, i32)]) -> FinalState {
    let mut state = FinalState::default();
    state.insert_log(
        &tp(),
        records
            .iter()
            .enumerate()
            .map(|(i, (v, epoch))| (i as i64, Bytes::from(v.to_string()), *epoch)),
    );
    state
}

fn broken(checker: &Checker) -> Vec<Invariant> {
    checker.violations().iter().map(|v| v.invariant).collect()
}

#[test]
fn a_consistent_cluster_breaks_nothing() {
    let mut world = World::new();
    let mut c = checker(false);
    c.acked(Ack {
        tp: tp(),
        offset: 1,
        value: Bytes::from("b"),
        sent_at: Duration::ZERO,
    });
    c.consumed(Read {
        tp: tp(),
        offset: 2,
        value: Bytes::from("c"),
        leader_epoch: 1,
    });
    world.group(1, 2);
    world.observe(&mut c);
    world.set_log(
        0,
        vec![batch(0, 1, &["a", "b"]), batch(2, 1, &["c"]), batch(3, 1, &["d"])],
    );
    world.observe(&mut c);
    world.group(2, 3);
    world.observe(&mut c);
    assert_eq!(c.violations(), &[]);
    assert_eq!(
        world.unsettled(&c, &[("g", 1)]),
        Some("t-0: the leader's HW 3 is below its log end 4".to_string())
    );
}

#[test]
fn a_leader_hw_moving_back_within_its_epoch_is_reported() {
    let mut world = World::new();
    let mut c = checker(false);
    world.observe(&mut c);
    world.probe(0).high_watermark = 2;
    world.observe(&mut c);
    assert_eq!(broken(&c), vec![Invariant::HighWatermarkMonotonic]);
}

#[test]
fn a_leader_epoch_going_back_is_reported_in_the_metadata_and_on_a_replica() {
    let mut world = World::new();
    let mut c = checker(false);
    world.observe(&mut c);
    world.partition().leader_epoch = 0;
    world.probe(2).leader_epoch = 0;
    world.observe(&mut c);
    assert_eq!(
        broken(&c),
        vec![Invariant::LeaderEpochMonotonic, Invariant::LeaderEpochMonotonic]
    );
}

#[test]
fn two_leaders_in_one_epoch_are_reported() {
    let mut world = World::new();
    let mut c = checker(false);
    world.probe(1).is_leader = true;
    world.observe(&mut c);
    assert_eq!(broken(&c), vec![Invariant::OneLeaderPerEpoch]);

    let mut world = World::new();
    let mut c = checker(false);
    world.observe(&mut c);
    world.partition().leader = 1;
    world.observe(&mut c);
    assert!(broken(&c).contains(&Invariant::OneLeaderPerEpoch));
}

#[test]
fn an_isr_outside_the_replicas_or_without_its_leader_is_reported() {
    let mut world = World::new();
    let mut c = checker(false);
    world.partition().isr = vec![0, 1, 7];
    world.observe(&mut c);
    world.partition().isr = vec![1, 2];
    world.observe(&mut c);
    assert_eq!(
        broken(&c),
        vec![Invariant::IsrWithinReplicas, Invariant::IsrWithinReplicas]
    );
}

#[test]
fn an_hw_past_the_log_end_is_reported() {
    let mut world = World::new();
    let mut c = checker(false);
    world.probe(1).high_watermark = 9;
    world.observe(&mut c);
    assert_eq!(broken(&c), vec![Invariant::ReplicaOffsetsOrdered]);
}

#[test]
fn an_isr_member_with_other_batches_below_the_hw_is_reported() {
    let mut world = World::new();
    let mut c = checker(false);
    world.set_log(2, vec![batch(0, 1, &["a", "b"]), batch(2, 1, &["X"])]);
    world.observe(&mut c);
    assert_eq!(broken(&c), vec![Invariant::CommittedLogsAgree]);
    assert!(
        c.violations()[0].facts.contains("ISR member 2"),
        "{}",
        c.violations()[0]
    );
}

#[test]
fn a_new_leader_without_the_committed_batches_is_reported() {
    let mut world = World::new();
    let mut c = checker(false);
    world.observe(&mut c);
    // Broker 1 lost its last batch, then the controller elects it.
    world.set_log(1, vec![batch(0, 1, &["a", "b"])]);
    world.partition().leader = 1;
    world.partition().leader_epoch = 2;
    for r in &mut world.replicas {
        r.leader = Some(1);
        r.leader_epoch = 2;
        r.is_leader = r.broker == 1;
    }
    world.set_hw(2);
    world.observe(&mut c);
    assert!(
        broken(&c).contains(&Invariant::CommittedLogsAgree),
        "{:?}",
        c.violations()
    );
}

#[test]
fn an_acknowledged_record_that_is_not_in_the_log_is_reported() {
    let mut world = World::new();
    let mut c = checker(false);
    c.acked(Ack {
        tp: tp(),
        offset: 1,
        value: Bytes::from("z"),
        sent_at: Duration::ZERO,
    });
    world.observe(&mut c);
    assert_eq!(broken(&c), vec![Invariant::AckedRecordsDurable]);
}

#[test]
fn an_acknowledged_record_the_log_never_reaches_is_reported_at_the_end() {
    let mut world = World::new();
    let mut c = checker(false);
    c.acked(Ack {
        tp: tp(),
        offset: 7,
        value: Bytes::from("late"),
        sent_at: Duration::ZERO,
    });
    world.observe(&mut c);
    assert_eq!(c.violations(), &[]);
    c.finish(&final_log(&["a", "b", "c"]));
    assert_eq!(broken(&c), vec![Invariant::AckedRecordsDurable]);
}

#[test]
fn an_idempotent_record_written_twice_is_reported() {
    let mut world = World::new();
    let mut c = checker(false);
    let dup = record_value(true, 0, 0, 5);
    let dup = std::str::from_utf8(&dup).expect("utf-8").to_string();
    let log = vec![batch(0, 1, &["a", &dup]), batch(2, 1, &[&dup])];
    for b in 0..3 {
        world.set_log(b, log.clone());
    }
    world.observe(&mut c);
    assert_eq!(broken(&c), vec![Invariant::NoIdempotentDuplicates]);

    let mut world = World::new();
    let mut c = checker(false);
    let twice = record_value(false, 0, 0, 5);
    let twice = std::str::from_utf8(&twice).expect("utf-8").to_string();
    let log = vec![batch(0, 1, &["a", &twice]), batch(2, 1, &[&twice])];
    for b in 0..3 {
        world.set_log(b, log.clone());
    }
    world.observe(&mut c);
    assert_eq!(c.violations(), &[], "a plain producer's retry may write twice");
}

#[test]
fn a_consumer_reading_what_the_committed_log_does_not_hold_is_reported() {
    let mut world = World::new();
    let mut c = checker(false);
    c.consumed(Read {
        tp: tp(),
        offset: 0,
        value: Bytes::from("ghost"),
        leader_epoch: 1,
    });
    world.observe(&mut c);
    assert_eq!(broken(&c), vec![Invariant::ConsistentReads]);
}

#[test]
fn committed_offsets_going_back_or_vanishing_are_reported() {
    let mut world = World::new();
    let mut c = checker(false);
    world.group(1, 3);
    world.observe(&mut c);
    world.group(1, 2);
    world.observe(&mut c);
    world.snapshot.groups[0].offsets.clear();
    world.observe(&mut c);
    c.finish(&FinalState::default());
    assert_eq!(
        broken(&c),
        vec![
            Invariant::CommittedOffsetsMonotonic,
            Invariant::CommittedOffsetsMonotonic
        ]
    );
}

#[test]
fn a_group_generation_going_back_is_reported() {
    let mut world = World::new();
    let mut c = checker(false);
    world.group(4, 0);
    world.observe(&mut c);
    world.group(1, 0);
    world.observe(&mut c);
    c.finish(&FinalState::default());
    assert_eq!(broken(&c), vec![Invariant::GroupGenerationMonotonic]);
}

#[test]
fn a_generation_never_stored_may_go_back_with_its_coordinator() {
    // Kafka writes the group record when the leader's assignment is stored: a
    // generation that never reached Stable is not loaded by the next coordinator.
    let mut world = World::new();
    let mut c = checker(false);
    world.group(4, 0);
    world.observe(&mut c);
    world.group(5, 0);
    world.snapshot.groups[0].state = GroupState::CompletingRebalance;
    world.observe(&mut c);
    world.group(4, 0);
    world.observe(&mut c);
    world.group(3, 0);
    world.observe(&mut c);
    c.finish(&FinalState::default());
    assert_eq!(broken(&c), vec![Invariant::GroupGenerationMonotonic]);
    assert!(
        c.violations()[0].facts.contains("generation 4 was stored"),
        "{:?}",
        c.violations()
    );
}

#[test]
fn an_offset_loaded_above_the_coordinators_hw_counts_once_the_hw_passes_it() {
    let set_epoch = |world: &mut World, epoch: i32| {
        if let Some(t) = world.image.topics.get_mut(OFFSETS_TOPIC) {
            t.partitions[0].leader_epoch = epoch;
        }
    };
    let mut world = World::new();
    let mut c = checker(false);
    world.group(1, 5);
    world.offsets_replica_hw_leo = (10, 10);
    world.observe(&mut c);
    world.observe(&mut c);
    // A new coordinator epoch loads 9 from a commit record above its HW (10 of 12): no
    // client was told it is committed, and the next failover drops it.
    set_epoch(&mut world, 2);
    world.offsets_replica_hw_leo = (10, 12);
    world.group(1, 9);
    world.observe(&mut c);
    set_epoch(&mut world, 3);
    world.offsets_replica_hw_leo = (10, 10);
    world.group(1, 5);
    world.observe(&mut c);
    assert_eq!(c.violations(), &[]);
    // Loaded again, and this time the HW passes it: now it must hold.
    set_epoch(&mut world, 4);
    world.offsets_replica_hw_leo = (10, 12);
    world.group(1, 9);
    world.observe(&mut c);
    world.offsets_replica_hw_leo = (12, 12);
    world.observe(&mut c);
    world.group(1, 5);
    world.observe(&mut c);
    c.finish(&FinalState::default());
    assert_eq!(
        broken(&c),
        vec![Invariant::CommittedOffsetsMonotonic],
        "{:?}",
        c.violations()
    );
}

#[test]
fn a_coordinator_not_yet_leading_the_new_epoch_is_not_held_to_it() {
    let mut world = World::new();
    let mut c = checker(false);
    world.group(4, 7);
    world.observe(&mut c);
    // The metadata moved the offsets partition to a new epoch; the named coordinator has
    // not applied it yet and still serves what it held in epoch 1.
    if let Some(t) = world.image.topics.get_mut(OFFSETS_TOPIC) {
        t.partitions[0].leader_epoch = 2;
    }
    world.offsets_replica_epoch = Some(1);
    world.group(3, 5);
    world.observe(&mut c);
    world.offsets_replica_epoch = None;
    world.group(4, 7);
    world.observe(&mut c);
    c.finish(&FinalState::default());
    assert_eq!(c.violations(), &[]);
}

#[test]
fn group_values_may_go_back_only_across_a_loss_of_their_records() {
    let offsets_epoch = |world: &mut World, epoch: i32| {
        if let Some(t) = world.image.topics.get_mut(OFFSETS_TOPIC) {
            t.partitions[0].leader_epoch = epoch;
        }
    };
    let mut world = World::new();
    let mut c = checker(true);
    world.group(4, 7);
    world.observe(&mut c);
    // The offsets partition is led uncleanly in epoch 2: both values go back, and the
    // loss is recognised only after the coordinator served them.
    offsets_epoch(&mut world, 2);
    world.group(2, 5);
    world.observe(&mut c);
    c.allow_loss(
        &TopicPartition::new(OFFSETS_TOPIC, 0),
        2,
        Allowance::UncleanElection,
        "unclean election".into(),
    );
    // Later, with no loss, they must not go back again.
    offsets_epoch(&mut world, 3);
    world.group(3, 6);
    world.observe(&mut c);
    world.group(2, 4);
    world.observe(&mut c);
    c.finish(&FinalState::default());
    assert_eq!(
        broken(&c),
        vec![
            Invariant::GroupGenerationMonotonic,
            Invariant::CommittedOffsetsMonotonic
        ],
        "{:?}",
        c.violations()
    );
}

#[test]
fn a_paused_old_leader_acknowledging_after_an_unclean_election_is_an_allowed_loss() {
    let mut world = World::new();
    let mut c = checker(true);
    world.partition().isr = vec![0];
    world.observe(&mut c);
    // Broker 2 is elected uncleanly while broker 0, paused, still leads epoch 1 with
    // only itself in sync: when it wakes it acknowledges what it appends.
    world.set_log(2, vec![batch(0, 1, &["a", "b"]), batch(2, 2, &["new"])]);
    world.partition().leader = 2;
    world.partition().leader_epoch = 2;
    world.partition().isr = vec![2];
    for r in world.replicas.iter_mut().filter(|r| r.broker != 0) {
        r.leader = Some(2);
        r.leader_epoch = 2;
        r.is_leader = r.broker == 2;
    }
    world.probe(2).high_watermark = 3;
    c.event(&elected(2, 2));
    world.observe(&mut c);
    c.acked(Ack {
        tp: tp(),
        offset: 2,
        value: Bytes::from("zombie"),
        sent_at: Duration::ZERO,
    });
    world.observe(&mut c);
    assert_eq!(c.violations(), &[]);
    // Nor is a record sent before the loss whose answer comes late.
    c.acked(Ack {
        tp: tp(),
        offset: 3,
        value: Bytes::from("late"),
        sent_at: Duration::ZERO,
    });
    // Once no replica leads an older epoch (and its answers had time to arrive), an
    // acknowledgement the log does not hold is a violation again.
    world.replicas.retain(|r| r.broker != 0);
    for _ in 0..3 {
        world.observe(&mut c);
    }
    c.acked(Ack {
        tp: tp(),
        offset: 2,
        value: Bytes::from("lost"),
        sent_at: Duration::from_secs(100),
    });
    world.observe(&mut c);
    assert_eq!(broken(&c), vec![Invariant::AckedRecordsDurable], "{:?}", c.violations());
}

#[test]
fn an_unclean_election_is_an_allowed_loss_not_a_violation() {
    let mut world = World::new();
    let mut c = checker(true);
    c.acked(Ack {
        tp: tp(),
        offset: 2,
        value: Bytes::from("c"),
        sent_at: Duration::ZERO,
    });
    world.partition().isr = vec![0];
    world.observe(&mut c);
    // Broker 2, out of the ISR and behind, becomes leader and takes new writes.
    world.set_log(2, vec![batch(0, 1, &["a", "b"]), batch(2, 2, &["other"])]);
    world.partition().leader = 2;
    world.partition().leader_epoch = 2;
    world.partition().isr = vec![2];
    for r in &mut world.replicas {
        r.leader = Some(2);
        r.leader_epoch = 2;
        r.is_leader = r.broker == 2;
    }
    world.probe(2).high_watermark = 3;
    c.event(&elected(2, 2));
    world.observe(&mut c);
    assert_eq!(c.violations(), &[]);
    c.finish(&final_log(&["a", "b", "other"]));
    assert_eq!(c.violations(), &[]);
    assert_eq!(
        c.excused().get(&Allowance::UncleanElection),
        Some(&1),
        "{:?}",
        c.allowed_losses()
    );

    // With unclean election disabled, the same election breaks a rule.
    let mut world = World::new();
    let mut c = checker(false);
    world.partition().isr = vec![0];
    world.observe(&mut c);
    c.event(&elected(2, 2));
    assert_eq!(broken(&c), vec![Invariant::ElectedFromIsr]);
}

/// Broker 1, alone in the ISR and leading, loses power and comes back with only the first
/// batch; the controller elects it again (epoch 2), and the checker samples the result.
fn last_in_sync_replica_returns_short(world: &mut World, c: &mut Checker) {
    world.partition().isr = vec![1];
    world.partition().leader = 1;
    for r in &mut world.replicas {
        r.leader = Some(1);
        r.is_leader = r.broker == 1;
    }
    world.observe(c);
    c.power_loss(1, &world.image);
    world.set_log(1, vec![batch(0, 1, &["a", "b"])]);
    world.partition().leader_epoch = 2;
    for r in &mut world.replicas {
        r.leader_epoch = 2;
    }
    world.probe(1).broker_epoch = 20;
    world.set_hw(2);
    c.event(&ClusterEvent {
        at: chrono::Utc::now(),
        cluster_at: chrono::Utc::now(),
        kind: EventKind::LeaderElected {
            tp: tp(),
            old: None,
            new: 1,
            leader_epoch: 2,
            reason: ElectionReason::ReplicaReturned,
            isr: vec![1],
        },
    });
    world.observe(c);
}

#[test]
fn a_power_lost_replica_is_excused_only_when_the_controller_elects_it() {
    let mut world = World::new();
    let mut c = checker(false);
    // Broker 1 comes back with its log cut to what it had fsynced; the controller elects
    // it again as the last in-sync replica.
    last_in_sync_replica_returns_short(&mut world, &mut c);
    assert_eq!(c.violations(), &[]);
    assert_eq!(c.allowed_losses().len(), 1);

    // Without an election the same shortened leader loses committed records.
    let mut world = World::new();
    let mut c = checker(false);
    world.observe(&mut c);
    c.power_loss(0, &world.image);
    world.set_log(0, vec![batch(0, 1, &["a", "b"])]);
    world.probe(0).broker_epoch = -1;
    world.set_hw(0);
    world.observe(&mut c);
    assert!(
        broken(&c).contains(&Invariant::CommittedLogsAgree),
        "{:?}",
        c.violations()
    );
}

#[test]
fn an_unsettled_cluster_says_why() {
    let mut world = World::new();
    let c = checker(false);
    world.partition().leader = NO_LEADER;
    assert_eq!(
        world.unsettled(&c, &[]),
        Some("t-0 has no leader (ISR [0, 1, 2])".to_string())
    );
}

#[test]
fn an_idle_cluster_spinning_is_reported_with_its_busiest_link() {
    let mut c = checker(false);
    let quiet = BTreeMap::from([((NodeId::Broker(1), 0), 40u64)]);
    c.idle_work(Duration::from_secs(10), &quiet, 50.0);
    assert_eq!(c.violations(), &[]);
    let busy = BTreeMap::from([((NodeId::Broker(1), 0), 40_000u64)]);
    c.idle_work(Duration::from_secs(10), &busy, 50.0);
    assert_eq!(broken(&c), vec![Invariant::IdleWork]);
    assert!(c.violations()[0].facts.contains("Broker(1) -> broker 0: 40000"));
}

/// Broker 2, out of the ISR, is elected uncleanly for epoch 2 while broker 0 (paused) still
/// leads epoch 1; then broker 0 acknowledges `value` at offset 2, sent after the election.
fn deposed_leader_acknowledges(min_insync: i32, value: &str) -> Checker {
    let mut world = World::new();
    world
        .image
        .topics
        .get_mut("t")
        .expect("topic")
        .config
        .min_insync_replicas = min_insync;
    let mut c = checker(true);
    world.partition().isr = vec![0];
    world.observe(&mut c);
    world.set_log(2, vec![batch(0, 1, &["a", "b"]), batch(2, 2, &["new"])]);
    world.partition().leader = 2;
    world.partition().leader_epoch = 2;
    world.partition().isr = vec![2];
    for r in world.replicas.iter_mut().filter(|r| r.broker != 0) {
        r.leader = Some(2);
        r.leader_epoch = 2;
        r.is_leader = r.broker == 2;
    }
    world.probe(2).high_watermark = 3;
    c.event(&elected(2, 2));
    world.observe(&mut c);
    c.acked(Ack {
        tp: tp(),
        offset: 2,
        value: Bytes::from(value.to_string()),
        sent_at: Duration::from_secs(50),
    });
    world.observe(&mut c);
    c.finish(&final_log(&["a", "b", "new"]));
    c
}

#[test]
fn a_deposed_leader_may_lose_acknowledgements_only_when_one_in_sync_copy_is_enough() {
    // min.insync.replicas 1: the deposed leader, alone in its ISR, acknowledged what the new
    // leader never had. Kafka allows that window (KIP-320 closes it only for readers).
    let c = deposed_leader_acknowledges(1, "zombie");
    assert_eq!(c.violations(), &[]);
    assert_eq!(c.excused().get(&Allowance::DeposedLeader), Some(&1));
    // min.insync.replicas 2: a leader alone in its ISR refuses acks=all writes
    // (NOT_ENOUGH_REPLICAS), so an acknowledgement it gave must survive: no window.
    let c = deposed_leader_acknowledges(2, "zombie");
    let found = broken(&c);
    assert!(
        !found.is_empty() && found.iter().all(|i| *i == Invariant::AckedRecordsDurable),
        "{:?}",
        c.violations()
    );
    assert_eq!(c.excused().get(&Allowance::DeposedLeader), None);
}

#[test]
fn with_flush_always_a_power_loss_excuses_nothing() {
    let mut world = World::new();
    let mut c = Checker::new(CheckerConfig {
        power_loss_loses_data: false,
        ..checker_config(false)
    });
    // The broker comes back short of what it had acknowledged and is elected: every
    // record was fsynced before its ack, so this is a lost commit, not bad luck.
    last_in_sync_replica_returns_short(&mut world, &mut c);
    assert!(
        broken(&c).contains(&Invariant::CommittedLogsAgree),
        "{:?}",
        c.violations()
    );
    assert!(c.excused().is_empty(), "{:?}", c.excused());
}

fn commit(offset: i64, fate: CommitFate, answered_at: u64) -> Commit {
    Commit {
        group: "g".into(),
        offsets: vec![(tp(), offset)],
        fate,
        answered_at: Duration::from_secs(answered_at),
    }
}

fn final_commit(offset: Option<i64>) -> FinalState {
    let mut state = final_log(&["a", "b", "c"]);
    state
        .commits
        .insert("g".into(), offset.into_iter().map(|o| (tp(), o)).collect());
    state
}

#[test]
fn the_final_committed_offset_is_the_last_acknowledged_commit_or_one_whose_fate_was_unknown() {
    let judge = |commits: &[Commit], stored: Option<i64>| {
        let mut c = checker(false);
        for x in commits {
            c.committed(x.clone());
        }
        c.finish(&final_commit(stored));
        broken(&c)
    };
    let acked = [
        commit(5, CommitFate::Acknowledged, 1),
        commit(8, CommitFate::Acknowledged, 30),
    ];
    assert_eq!(judge(&acked, Some(8)), vec![]);
    // A commit answered 29 s before the last cannot have overtaken it.
    assert_eq!(judge(&acked, Some(5)), vec![Invariant::CommitsDurable]);
    assert_eq!(judge(&acked, None), vec![Invariant::CommitsDurable]);
    // Two answered within the request timeout may have reached the coordinator either way.
    let close = [
        commit(5, CommitFate::Acknowledged, 25),
        commit(8, CommitFate::Acknowledged, 30),
    ];
    assert_eq!(judge(&close, Some(5)), vec![]);
    // A commit with no answer may have been written; a refused one was not.
    let unknown = [acked[0].clone(), acked[1].clone(), commit(9, CommitFate::Unknown, 31)];
    assert_eq!(judge(&unknown, Some(9)), vec![]);
    let refused = [acked[0].clone(), acked[1].clone(), commit(9, CommitFate::Refused, 31)];
    assert_eq!(judge(&refused, Some(9)), vec![Invariant::CommitsDurable]);
}

#[test]
fn an_idempotent_duplicate_is_excused_only_when_the_acknowledged_copy_is_the_last() {
    let value = record_value(true, 0, 0, 5);
    let text = std::str::from_utf8(&value).expect("utf-8").to_string();
    let judge = |acked_at: i64| {
        let mut c = checker(false);
        c.acked(Ack {
            tp: tp(),
            offset: acked_at,
            value: value.clone(),
            sent_at: Duration::ZERO,
        });
        c.finish(&final_log(&["a", &text, &text]));
        c
    };
    // The first copy's answer was lost; the bumped epoch wrote it again and that one was
    // acknowledged: the producer never knew the first was written.
    let c = judge(2);
    assert_eq!(c.violations(), &[]);
    assert_eq!(c.excused().get(&Allowance::RetryAfterUnknownFate), Some(&1));
    // Acknowledged at 1 and written again at 2: the producer knew, and wrote it twice.
    let c = judge(1);
    assert_eq!(broken(&c), vec![Invariant::NoIdempotentDuplicates]);
}

#[test]
fn an_ordered_producers_records_out_of_order_in_the_final_log_are_reported() {
    let v = |n| String::from_utf8(record_value(true, 0, 0, n).to_vec()).expect("utf-8");
    let mut c = checker(false);
    let first = |c: &mut Checker, value: String| {
        c.acked(Ack {
            tp: tp(),
            offset: 0,
            value: Bytes::from(value),
            sent_at: Duration::ZERO,
        })
    };
    first(&mut c, v(1));
    c.finish(&final_log(&[&v(1), &v(3), &v(2)]));
    assert_eq!(broken(&c), vec![Invariant::ProducerOrder]);
    // A producer not promised order (more than one request in flight without idempotence)
    // is not held to it.
    let w = |n| String::from_utf8(record_value(false, 1, 0, n).to_vec()).expect("utf-8");
    let mut c = checker(false);
    first(&mut c, w(1));
    c.finish(&final_log(&[&w(1), &w(3), &w(2)]));
    assert_eq!(c.violations(), &[]);
}

#[test]
fn a_read_of_an_old_epoch_is_excused_only_when_a_later_loss_removed_it() {
    let run = |offset: i64, read_value: &str, epoch: i32| {
        let mut world = World::new();
        let mut c = checker(true);
        world.partition().isr = vec![0];
        world.observe(&mut c);
        c.consumed(Read {
            tp: tp(),
            offset,
            value: Bytes::from(read_value.to_string()),
            leader_epoch: epoch,
        });
        world.set_log(2, vec![batch(0, 1, &["a", "b"]), batch(2, 2, &["other"])]);
        world.partition().leader = 2;
        world.partition().leader_epoch = 2;
        world.partition().isr = vec![2];
        for r in &mut world.replicas {
            r.leader = Some(2);
            r.leader_epoch = 2;
            r.is_leader = r.broker == 2;
        }
        world.probe(2).high_watermark = 3;
        c.event(&elected(2, 2));
        world.observe(&mut c);
        c.finish(&final_log_epochs(&[("a", 1), ("b", 1), ("other", 2)]));
        c
    };
    // Read "c" at epoch 1, lost by the unclean election of epoch 2: excused.
    let c = run(2, "c", 1);
    assert_eq!(c.violations(), &[]);
    assert_eq!(c.excused().get(&Allowance::UncleanElection), Some(&1));
    // A read of the same epoch whose record survived is held to the log and needs no excuse.
    let c = run(1, "b", 1);
    assert_eq!(c.violations(), &[]);
    assert_eq!(c.excused().get(&Allowance::UncleanElection), None);
    // ... and one it does not match is a violation, epoch before the loss or not.
    let c = run(1, "ghost", 1);
    assert!(broken(&c).contains(&Invariant::ConsistentReads), "{:?}", c.violations());
    // A read of epoch 2 (after the loss) that the final log does not hold is a violation.
    let c = run(2, "ghost", 2);
    assert!(broken(&c).contains(&Invariant::ConsistentReads), "{:?}", c.violations());
}

#[test]
fn a_compacted_log_may_lose_a_record_only_to_a_later_record_of_its_key() {
    let v = |n| record_value(false, 0, 0, n);
    let text = |n| String::from_utf8(v(n).to_vec()).expect("utf-8");
    let (v0, v1, v8) = (text(0), text(1), text(8)); // 0 and 8 share a key (KEY_SPACE 8)
    let mut world = World::new();
    world.image.topics.get_mut("t").expect("topic").config.cleanup_policy = Some(CleanupPolicy::Compact);
    world.set_log(0, vec![batch(0, 1, &[&v0, &v1]), batch(2, 1, &[&v8])]);
    // Broker 1's cleaner removed v0 (v8 has its key); broker 2 lost v1, which nothing
    // replaces.
    world.set_log(1, vec![batch(1, 1, &[&v1]), batch(2, 1, &[&v8])]);
    world.set_log(2, vec![batch(0, 1, &[&v0]), batch(2, 1, &[&v8])]);
    world.set_hw(3);
    let mut c = checker(false);
    world.observe(&mut c);
    let found: Vec<_> = c.violations().iter().map(|v| (v.invariant, v.facts.clone())).collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, Invariant::CommittedLogsAgree);
    assert!(
        found[0].1.contains("ISR member 2") && found[0].1.contains(&v1),
        "{found:?}"
    );

    let read_back = |records: &[(i64, &str)]| {
        let mut state = FinalState::default();
        state.insert_log(&tp(), records.iter().map(|(o, v)| (*o, Bytes::from(v.to_string()), 1)));
        state
    };
    let mut world = World::new();
    world.image.topics.get_mut("t").expect("topic").config.cleanup_policy = Some(CleanupPolicy::Compact);
    for b in 0..3 {
        world.set_log(b, vec![batch(0, 1, &[&v0, &v1]), batch(2, 1, &[&v8])]);
    }
    world.set_hw(3);
    let mut c = checker(false);
    c.acked(Ack {
        tp: tp(),
        offset: 0,
        value: v(0),
        sent_at: Duration::ZERO,
    });
    world.observe(&mut c);
    c.finish(&read_back(&[(1, &v1), (2, &v8)]));
    assert_eq!(c.violations(), &[]);
    assert_eq!(c.cleaned_records(), 1);
    // The same read-back without v1: nothing of its key came after it.
    let mut c = checker(false);
    world.observe(&mut c);
    c.finish(&read_back(&[(0, &v0), (2, &v8)]));
    assert_eq!(broken(&c), vec![Invariant::CommittedLogsAgree], "{:?}", c.violations());
}

fn txn(txn: u64, fate: TxnFate, sent: &[(i32, &[u32])]) -> TxnOutcome {
    TxnOutcome {
        writer: 0,
        instance: 0,
        txn,
        sent: sent
            .iter()
            .map(|(p, ns)| {
                (
                    TopicPartition::new("t", *p),
                    ns.iter().map(|n| txn_value(0, 0, txn, *n)).collect(),
                )
            })
            .collect(),
        fate,
        fenced: false,
    }
}

/// A read_committed read-back: these (partition, transaction, record) in offset order.
fn committed_read(records: &[(i32, u64, u32)]) -> FinalState {
    let mut state = FinalState::default();
    for (i, (p, t, n)) in records.iter().enumerate() {
        state
            .committed_logs
            .entry(TopicPartition::new("t", *p))
            .or_default()
            .push((i as i64, txn_value(0, 0, *t, *n)));
    }
    state
}

#[test]
fn transaction_values_are_told_apart_from_producer_values() {
    let v = txn_value(1, 2, 30, 4);
    assert_eq!(parse_txn_value(&v), Some((1, 2, 30, 4)));
    assert_eq!(
        parse_value(&v),
        None,
        "a producer check never misreads a transaction's record"
    );
    assert_eq!(parse_txn_value(&record_value(true, 1, 2, 3)), None);
}

#[test]
fn read_committed_seeing_exactly_the_committed_transactions_breaks_nothing() {
    let mut c = checker(false);
    c.transaction(txn(0, TxnFate::Committed, &[(0, &[0, 1]), (1, &[2])]));
    c.transaction(txn(1, TxnFate::Aborted, &[(0, &[0])]));
    c.transaction(txn(2, TxnFate::Abandoned, &[(1, &[0])]));
    c.transaction(txn(3, TxnFate::Unknown, &[(0, &[0]), (1, &[1])]));
    c.transaction(txn(4, TxnFate::Unknown, &[(0, &[0])]));
    c.transaction(txn(5, TxnFate::Committed, &[(0, &[0])]));
    c.finish(&committed_read(&[
        (0, 0, 0),
        (0, 0, 1),
        (1, 0, 2),
        (0, 3, 0),
        (1, 3, 1),
        (0, 5, 0),
    ]));
    assert_eq!(broken(&c), vec![]);
    let counts = c.transactions();
    assert_eq!(counts.get("committed"), Some(&2));
    assert_eq!(counts.get("unknown"), Some(&2));
}

#[test]
fn an_aborted_or_abandoned_transaction_seen_at_read_committed_breaks_atomicity() {
    for fate in [TxnFate::Aborted, TxnFate::Abandoned] {
        let mut c = checker(false);
        c.transaction(txn(0, fate, &[(0, &[0, 1])]));
        c.finish(&committed_read(&[(0, 0, 1)]));
        assert_eq!(broken(&c), vec![Invariant::TxnAtomic], "{fate:?}");
    }
}

#[test]
fn an_unknown_transaction_seen_in_part_breaks_atomicity() {
    let mut c = checker(false);
    c.transaction(txn(0, TxnFate::Unknown, &[(0, &[0]), (1, &[1])]));
    c.transaction(txn(1, TxnFate::Committed, &[(1, &[0])]));
    c.finish(&committed_read(&[(0, 0, 0), (1, 1, 0)]));
    assert_eq!(broken(&c), vec![Invariant::TxnAtomic]);
    assert!(c.violations()[0].facts.contains("t-1"), "{}", c.violations()[0].facts);
}

#[test]
fn a_committed_transaction_missing_duplicated_or_reordered_breaks_exactly_once() {
    let mut missing = checker(false);
    missing.transaction(txn(0, TxnFate::Committed, &[(0, &[0, 1])]));
    missing.finish(&committed_read(&[(0, 0, 0)]));
    assert_eq!(broken(&missing), vec![Invariant::TxnCommittedOnce]);

    let mut twice = checker(false);
    twice.transaction(txn(0, TxnFate::Committed, &[(0, &[0])]));
    twice.finish(&committed_read(&[(0, 0, 0), (0, 0, 0)]));
    assert_eq!(broken(&twice), vec![Invariant::TxnCommittedOnce]);

    let mut reordered = checker(false);
    reordered.transaction(txn(0, TxnFate::Committed, &[(0, &[0])]));
    reordered.transaction(txn(1, TxnFate::Committed, &[(0, &[0])]));
    reordered.finish(&committed_read(&[(0, 1, 0), (0, 0, 0)]));
    assert_eq!(broken(&reordered), vec![Invariant::TxnCommittedOnce]);
}

#[test]
fn a_record_no_transaction_sent_breaks_atomicity() {
    let mut c = checker(false);
    c.finish(&committed_read(&[(0, 7, 0)]));
    assert_eq!(broken(&c), vec![Invariant::TxnAtomic]);
}
