//! The controller: cluster metadata (topics, partition assignments, leaders, epochs, ISR,
//! broker registrations), broker liveness, and every election. It is a single writer: each
//! change is applied to a copy of the metadata image, persisted, then swapped in, so a
//! restart (or another broker taking over the controller role) sees exactly what took effect.
//!
//! The rules are Kafka's KRaft controller's (`ReplicationControlManager`,
//! `PartitionChangeBuilder`): brokers register and heartbeat; one silent for the session
//! timeout is fenced and removed from every ISR; a leader change bumps the leader epoch and
//! every change bumps the partition epoch; leaders ask for ISR changes with AlterPartition,
//! validated in Kafka's order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::config::{ClusterConfig, LeaderElection, TopicConfig};
use super::configs::{self, ConfigAlteration, ConfigResource};
use super::events::{ElectionReason, EventBus, EventKind, LiveSetting};
use super::planted::{self, Bug};
use super::protocol::ErrorCode;
use super::{BrokerId, Clock, TopicPartition};
use crate::kafka::{is_internal_topic, topic_name_error};
use crate::storage::checkpoint;

pub const NO_LEADER: BrokerId = -1;

/// Per partition, the outcome of an election (`ErrorCode::None` when a leader was elected).
pub type ElectionResults = Vec<(TopicPartition, ErrorCode)>;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRegistration {
    pub replicas: Vec<BrokerId>,
    pub leader: BrokerId,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub isr: Vec<BrokerId>,
    /// Set by an unclean election until the new leader widens the ISR again.
    pub recovering: bool,
    /// KIP-455, while a reassignment runs: the target's replicas that were not assigned
    /// before. `replicas` is then the target followed by `removing`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adding: Vec<BrokerId>,
    /// KIP-455, while a reassignment runs: the replicas the target drops, which stay (and may
    /// lead) until every adding replica is in the ISR.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removing: Vec<BrokerId>,
}

impl PartitionRegistration {
    /// A new partition on `replicas`, all in sync, led by the first.
    pub fn new(replicas: Vec<BrokerId>) -> PartitionRegistration {
        PartitionRegistration {
            leader: replicas.first().copied().unwrap_or(NO_LEADER),
            isr: replicas.clone(),
            replicas,
            leader_epoch: 0,
            partition_epoch: 0,
            recovering: false,
            adding: Vec::new(),
            removing: Vec::new(),
        }
    }

    pub fn preferred(&self) -> BrokerId {
        self.replicas.first().copied().unwrap_or(NO_LEADER)
    }

    /// Whether a reassignment is in progress (Kafka's `isReassigning`).
    pub fn reassigning(&self) -> bool {
        !self.adding.is_empty() || !self.removing.is_empty()
    }

    /// The replicas before the reassignment began.
    pub fn original_replicas(&self) -> Vec<BrokerId> {
        self.replicas
            .iter()
            .copied()
            .filter(|r| !self.adding.contains(r))
            .collect()
    }

    /// The replicas the reassignment ends with (all of them when none is in progress).
    pub fn target_replicas(&self) -> Vec<BrokerId> {
        self.replicas
            .iter()
            .copied()
            .filter(|r| !self.removing.contains(r))
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicMetadata {
    pub id: String,
    pub config: TopicConfig,
    pub partitions: Vec<PartitionRegistration>,
}

impl TopicMetadata {
    /// The topic's id as Kafka's 128-bit topic id (KIP-516), stable for the topic's life and
    /// new when a topic of the same name is made again: drawn from the 64-bit id the
    /// controller gave it, never 0 (Kafka's ZERO_UUID) or 1 (its metadata topic's id).
    pub fn topic_uuid(&self) -> u128 {
        let seed = u64::from_str_radix(&self.id, 16).unwrap_or_else(|_| {
            // Not hex (never written so): any stable mix of its bytes.
            self.id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            })
        });
        let low = seed.rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15;
        let id = (u128::from(seed) << 64) | u128::from(low);
        if id <= 1 { id | 0x2 } else { id }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerRegistration {
    pub epoch: i64,
    pub fenced: bool,
    pub shutting_down: bool,
}

/// Everything the controller knows, as one immutable, versioned value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataImage {
    pub version: u64,
    pub topics: BTreeMap<String, TopicMetadata>,
    pub brokers: BTreeMap<BrokerId, BrokerRegistration>,
    pub next_broker_epoch: i64,
    /// Producer ids are handed out once, cluster-wide (InitProducerId).
    #[serde(default)]
    pub next_producer_id: i64,
    /// `unclean.leader.election.enable` set for the whole cluster at run time (Kafka's
    /// dynamic cluster-wide broker config); `None`: the static configuration's.
    #[serde(default)]
    pub unclean_leader_election: Option<bool>,
    /// The cluster-wide log defaults set at run time (`log.retention.ms`, ...: Kafka's dynamic
    /// cluster-wide broker configs), by Kafka's name; every topic without its own follows them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cluster_configs: BTreeMap<String, String>,
    /// Each broker's own configs set at run time (Kafka's per-broker dynamic configs: the
    /// replication throttle rates), by broker id and Kafka's name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub broker_configs: BTreeMap<BrokerId, BTreeMap<String, String>>,
    /// Brokers added while the cluster ran, beyond the configured `0..brokers`: a restart on
    /// this data directory launches them again.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub added_brokers: BTreeSet<BrokerId>,
    /// Brokers being decommissioned, each with the number of replicas it held when its drain
    /// began: a restart resumes the drain (the reassignments are in the partitions).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub draining: BTreeMap<BrokerId, usize>,
    /// Brokers that were decommissioned (Kafka's UnregisterBroker): never launched again, and
    /// their ids never reused.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub decommissioned: BTreeSet<BrokerId>,
}

impl MetadataImage {
    /// The topic with this KIP-516 id.
    pub fn topic_by_uuid(&self, uuid: u128) -> Option<&str> {
        self.topics
            .iter()
            .find(|(_, t)| t.topic_uuid() == uuid)
            .map(|(name, _)| name.as_str())
    }

    pub fn partition(&self, tp: &TopicPartition) -> Option<&PartitionRegistration> {
        self.topics
            .get(&tp.topic)?
            .partitions
            .get(usize::try_from(tp.partition).ok()?)
    }

    fn partition_mut(&mut self, tp: &TopicPartition) -> Option<&mut PartitionRegistration> {
        self.topics
            .get_mut(&tp.topic)?
            .partitions
            .get_mut(usize::try_from(tp.partition).ok()?)
    }

    pub fn is_live(&self, broker: BrokerId) -> bool {
        self.brokers.get(&broker).is_some_and(|b| !b.fenced && !b.shutting_down)
    }

    /// The brokers new partitions may go to: live, and not being decommissioned.
    pub fn placeable_brokers(&self) -> Vec<BrokerId> {
        self.brokers
            .keys()
            .copied()
            .filter(|b| self.is_live(*b) && !self.draining.contains_key(b))
            .collect()
    }

    /// How many partitions have a replica on `broker` (leaving ones of a reassignment included).
    pub fn replica_count(&self, broker: BrokerId) -> usize {
        self.partitions().filter(|(_, p)| p.replicas.contains(&broker)).count()
    }

    /// The highest broker id the cluster has known: registered, added or decommissioned.
    pub fn highest_known_broker(&self) -> Option<BrokerId> {
        let registered = self.brokers.keys().next_back().copied();
        let added = self.added_brokers.iter().next_back().copied();
        let gone = self.decommissioned.iter().next_back().copied();
        [registered, added, gone].into_iter().flatten().max()
    }

    pub fn leader_count(&self, broker: BrokerId) -> usize {
        self.topics
            .values()
            .flat_map(|t| &t.partitions)
            .filter(|p| p.leader == broker)
            .count()
    }

    pub fn partitions(&self) -> impl Iterator<Item = (TopicPartition, &PartitionRegistration)> {
        self.topics.iter().flat_map(|(name, t)| {
            t.partitions
                .iter()
                .enumerate()
                .map(move |(i, p)| (TopicPartition::new(name.clone(), i as i32), p))
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("{code:?}: {message}")]
    Rejected { code: ErrorCode, message: String },
    #[error("persisting cluster metadata: {0}")]
    Persist(String),
}

impl ControllerError {
    fn rejected(code: ErrorCode, message: impl Into<String>) -> Self {
        ControllerError::Rejected {
            code,
            message: message.into(),
        }
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            ControllerError::Rejected { code, .. } => *code,
            ControllerError::Persist(_) => ErrorCode::KafkaStorageError,
        }
    }
}

struct ControllerState {
    image: Arc<MetadataImage>,
    /// By broker id: brokers whose sessions end at once are fenced in one order every run.
    last_heartbeat: BTreeMap<BrokerId, Instant>,
}

/// Whether a fenced broker leaves the ISRs it is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isr {
    Leave,
    Keep,
}

pub(crate) struct Controller {
    config: ClusterConfig,
    path: PathBuf,
    events: EventBus,
    clock: Clock,
    state: Mutex<ControllerState>,
}

impl Controller {
    /// Loads persisted metadata, or starts empty. Brokers keep their registrations, as
    /// KRaft's replayed metadata log does: one that registers again is a new incarnation and
    /// is fenced first (its leaderships move, their epochs bump), one that never comes back is
    /// fenced when its session expires ([`Controller::reset_heartbeats`] starts the clock).
    /// Fencing them all here instead would skip that: the leaders would stay where they were,
    /// on brokers that may be gone for good.
    pub fn load(config: ClusterConfig, events: EventBus, clock: Clock) -> Result<Controller, ControllerError> {
        let dir = config.data_dir.join("metadata");
        std::fs::create_dir_all(&dir).map_err(|e| ControllerError::Persist(format!("{}: {e}", dir.display())))?;
        let path = dir.join("cluster-metadata.json");
        let mut image = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<MetadataImage>(&bytes).map_err(|e| {
                ControllerError::Persist(format!("{} is not valid cluster metadata: {e}", path.display()))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => MetadataImage::default(),
            Err(e) => return Err(ControllerError::Persist(format!("{}: {e}", path.display()))),
        };
        // A controlled shutdown in progress ended with the process; the broker stays fenced.
        for b in image.brokers.values_mut() {
            b.shutting_down = false;
        }
        Ok(Controller {
            config,
            path,
            events,
            clock,
            state: Mutex::new(ControllerState {
                image: Arc::new(image),
                last_heartbeat: BTreeMap::new(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, ControllerState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn image(&self) -> Arc<MetadataImage> {
        Arc::clone(&self.lock().image)
    }

    /// Applies `change` to a copy of the image; if anything changed, persists the copy
    /// before it takes effect, then publishes the events the change produced.
    fn mutate<T>(
        &self,
        change: impl FnOnce(&mut MetadataImage, &mut Vec<EventKind>, &mut ControllerState) -> Result<T, ControllerError>,
    ) -> Result<(T, Option<Arc<MetadataImage>>), ControllerError> {
        let mut state = self.lock();
        let mut next = (*state.image).clone();
        let mut events = Vec::new();
        let out = change(&mut next, &mut events, &mut state)?;
        if next == *state.image {
            return Ok((out, None));
        }
        next.version = state.image.version + 1;
        let bytes = serde_json::to_vec_pretty(&next).map_err(|e| ControllerError::Persist(e.to_string()))?;
        checkpoint::write_atomically(&self.path, &bytes).map_err(|e| ControllerError::Persist(e.to_string()))?;
        let next = Arc::new(next);
        state.image = Arc::clone(&next);
        drop(state);
        for e in events {
            self.events.publish(e);
        }
        Ok((out, Some(next)))
    }

    /// Gives every broker a full session timeout from now (a new controller does not know
    /// when they last spoke).
    pub fn reset_heartbeats(&self) {
        let now = self.clock.now();
        let mut state = self.lock();
        let ids: Vec<BrokerId> = state.image.brokers.keys().copied().collect();
        for id in ids {
            state.last_heartbeat.insert(id, now);
        }
    }

    /// A new idempotent producer id, with epoch 0.
    pub fn init_producer_id(&self) -> Result<(i64, i16), ControllerError> {
        let (id, _) = self.mutate(|image, _, _| {
            let id = image.next_producer_id;
            image.next_producer_id += 1;
            Ok(id)
        })?;
        Ok((id, 0))
    }

    /// A broker (re)starts. `previous_broker_epoch` is the epoch it had when it last shut down
    /// cleanly, -1 after a crash.
    pub fn register_broker(
        &self,
        broker: BrokerId,
        previous_broker_epoch: i64,
    ) -> Result<(i64, Arc<MetadataImage>), ControllerError> {
        let (epoch, _) = self.mutate(|image, events, state| {
            // A new incarnation replaces the old one, whose in-memory leader state is gone: its
            // leaderships move (new epochs). After a crash its log may have lost what it had
            // acknowledged, so it also leaves every ISR and rejoins through the leaders. After
            // a clean shutdown (it presents the epoch it stopped with, KIP-966's detection)
            // its log holds everything it had, and it stays in sync: otherwise restarting
            // every broker would push each out of the ISRs in turn, down to whichever broker
            // registers last, or to one that never comes back.
            let clean = image
                .brokers
                .get(&broker)
                .is_some_and(|b| b.epoch == previous_broker_epoch);
            if clean {
                self.fence(
                    image,
                    events,
                    broker,
                    "registered again after a clean shutdown",
                    Isr::Keep,
                );
            } else {
                self.fence(
                    image,
                    events,
                    broker,
                    "registered again with a new incarnation",
                    Isr::Leave,
                );
            }
            let epoch = image.next_broker_epoch;
            image.next_broker_epoch += 1;
            image.brokers.insert(
                broker,
                BrokerRegistration {
                    epoch,
                    fenced: true,
                    shutting_down: false,
                },
            );
            state.last_heartbeat.insert(broker, self.clock.now());
            events.push(EventKind::BrokerStarted {
                broker,
                broker_epoch: epoch,
            });
            Ok(epoch)
        })?;
        Ok((epoch, self.image()))
    }

    /// A heartbeat: keeps the broker's session alive and unfences it (it has the metadata).
    pub fn heartbeat(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> Result<Option<Arc<MetadataImage>>, ControllerError> {
        let (_, changed) = self.mutate(|image, events, state| {
            let Some(reg) = image.brokers.get_mut(&broker) else {
                return Err(ControllerError::rejected(
                    ErrorCode::StaleBrokerEpoch,
                    "broker is not registered",
                ));
            };
            if reg.epoch != broker_epoch {
                return Err(ControllerError::rejected(
                    ErrorCode::StaleBrokerEpoch,
                    format!("broker epoch {broker_epoch} is not the registered {}", reg.epoch),
                ));
            }
            state.last_heartbeat.insert(broker, self.clock.now());
            if reg.fenced && !reg.shutting_down {
                reg.fenced = false;
                events.push(EventKind::BrokerUnfenced { broker });
                self.elect_where_leaderless(image, events);
            }
            Ok(())
        })?;
        Ok(changed)
    }

    /// Fences every broker whose session expired. Returns the new image if any was.
    pub fn expire_sessions(&self) -> Result<Option<Arc<MetadataImage>>, ControllerError> {
        let timeout = std::time::Duration::from_millis(self.config.broker_session_timeout_ms);
        let (_, changed) = self.mutate(|image, events, state| {
            let now = self.clock.now();
            let expired: Vec<BrokerId> = image
                .brokers
                .iter()
                .filter(|(id, b)| {
                    !b.fenced
                        && state
                            .last_heartbeat
                            .get(id)
                            .is_none_or(|t| now.duration_since(*t) > timeout)
                })
                .map(|(id, _)| *id)
                .collect();
            for broker in expired {
                self.fence(
                    image,
                    events,
                    broker,
                    "missed heartbeats for the session timeout",
                    Isr::Leave,
                );
            }
            Ok(())
        })?;
        Ok(changed)
    }

    /// Remembers a broker added while the cluster runs, before it is launched, so that a
    /// restart launches it again.
    pub fn note_added_broker(&self, broker: BrokerId) -> Result<(), ControllerError> {
        self.mutate(|image, events, _| {
            if image.decommissioned.contains(&broker) {
                return Err(ControllerError::rejected(
                    ErrorCode::InvalidRequest,
                    format!("broker {broker} was decommissioned; its id is not reused"),
                ));
            }
            image.added_brokers.insert(broker);
            events.push(EventKind::BrokerJoined { broker });
            Ok(())
        })?;
        Ok(())
    }

    /// Marks `broker` as draining, with the number of replicas it holds now.
    pub fn begin_drain(&self, broker: BrokerId, replicas: usize) -> Result<(), ControllerError> {
        self.mutate(|image, events, _| {
            image.draining.insert(broker, replicas);
            events.push(EventKind::BrokerDraining { broker, replicas });
            Ok(())
        })?;
        Ok(())
    }

    /// Kafka's UnregisterBroker: the controller forgets the broker's registration, once no
    /// partition has a replica on it any more. It no longer appears anywhere in the metadata.
    pub fn unregister_broker(&self, broker: BrokerId) -> Result<Option<Arc<MetadataImage>>, ControllerError> {
        let (_, changed) = self.mutate(|image, events, state| {
            let left = image.replica_count(broker);
            if left > 0 {
                return Err(ControllerError::rejected(
                    ErrorCode::InvalidRequest,
                    format!("broker {broker} still holds {left} replicas"),
                ));
            }
            image.brokers.remove(&broker);
            image.draining.remove(&broker);
            image.added_brokers.remove(&broker);
            image.decommissioned.insert(broker);
            state.last_heartbeat.remove(&broker);
            events.push(EventKind::BrokerDecommissioned { broker });
            Ok(())
        })?;
        Ok(changed)
    }

    /// Controlled shutdown: leadership moves away and the broker leaves every ISR first.
    pub fn controlled_shutdown(&self, broker: BrokerId) -> Result<Option<Arc<MetadataImage>>, ControllerError> {
        let (_, changed) = self.mutate(|image, events, _| {
            if image.brokers.contains_key(&broker) {
                self.fence(image, events, broker, CONTROLLED_SHUTDOWN, Isr::Leave);
                if let Some(reg) = image.brokers.get_mut(&broker) {
                    reg.shutting_down = true;
                }
            }
            Ok(())
        })?;
        Ok(changed)
    }

    /// Moves the leaderships of `broker` and, with [`Isr::Leave`], removes it from every ISR
    /// (Kafka's `handleBrokerFenced`). An ISR never becomes empty: its last member stays,
    /// leaderless. A broker that stays in sync leaves no partition to an unclean election: it
    /// leads again once unfenced.
    fn fence(&self, image: &mut MetadataImage, events: &mut Vec<EventKind>, broker: BrokerId, reason: &str, isr: Isr) {
        let leave = isr == Isr::Leave;
        let Some(reg) = image.brokers.get_mut(&broker) else {
            return;
        };
        if reg.fenced {
            return;
        }
        reg.fenced = true;
        events.push(EventKind::BrokerFenced {
            broker,
            reason: reason.to_string(),
        });
        let tps: Vec<TopicPartition> = image
            .partitions()
            .filter(|(_, p)| p.isr.contains(&broker) || p.leader == broker)
            .map(|(tp, _)| tp)
            .collect();
        for tp in tps {
            let unclean = self.unclean_allowed(image, &tp);
            let snapshot = image.clone();
            let Some(p) = image.partition_mut(&tp) else { continue };
            if p.leader == broker {
                let candidates: Vec<BrokerId> = p
                    .replicas
                    .iter()
                    .copied()
                    .filter(|r| *r != broker && p.isr.contains(r) && snapshot.is_live(*r))
                    .collect();
                let old = Some(broker);
                if let Some(new) = self.choose(&snapshot, &candidates) {
                    p.leader = new;
                    // Planted (issue 24): the new leader inherits the failed leader's epoch.
                    if !planted::active(Bug::LeaderEpochReused) {
                        p.leader_epoch += 1;
                    }
                    if leave {
                        p.isr.retain(|r| *r != broker);
                    }
                    events.push(EventKind::LeaderElected {
                        tp: tp.clone(),
                        old,
                        new,
                        leader_epoch: p.leader_epoch,
                        isr: p.isr.clone(),
                        reason: if reason == CONTROLLED_SHUTDOWN {
                            ElectionReason::ControlledShutdown
                        } else {
                            ElectionReason::LeaderUnavailable
                        },
                    });
                } else if let Some(new) = (unclean && leave)
                    .then(|| {
                        p.replicas
                            .iter()
                            .copied()
                            .find(|r| *r != broker && snapshot.is_live(*r))
                    })
                    .flatten()
                {
                    p.leader = new;
                    p.leader_epoch += 1;
                    p.isr = vec![new];
                    p.recovering = true;
                    events.push(EventKind::LeaderElected {
                        tp: tp.clone(),
                        old,
                        new,
                        leader_epoch: p.leader_epoch,
                        reason: ElectionReason::Unclean,
                        isr: p.isr.clone(),
                    });
                } else {
                    p.leader = NO_LEADER;
                    p.leader_epoch += 1;
                    if leave && p.isr.len() > 1 {
                        p.isr.retain(|r| *r != broker);
                    }
                    events.push(EventKind::PartitionOffline {
                        tp: tp.clone(),
                        isr: p.isr.clone(),
                    });
                }
                p.partition_epoch += 1;
            } else if leave && p.isr.len() > 1 {
                p.isr.retain(|r| *r != broker);
                p.partition_epoch += 1;
                events.push(EventKind::IsrShrunk {
                    tp: tp.clone(),
                    removed: vec![broker],
                    isr: p.isr.clone(),
                    reason: if reason == CONTROLLED_SHUTDOWN {
                        format!("broker {broker} controlled shutdown")
                    } else {
                        format!("broker {broker} fenced: {reason}")
                    },
                });
            }
        }
    }

    /// The cluster's `unclean.leader.election.enable`: set at run time, or configured.
    pub fn unclean_default(&self, image: &MetadataImage) -> bool {
        configs::unclean_default(image, &self.config)
    }

    /// A topic's own setting wins over the cluster's (Kafka's rule).
    fn unclean_allowed(&self, image: &MetadataImage, tp: &TopicPartition) -> bool {
        let default = self.unclean_default(image);
        image
            .topics
            .get(&tp.topic)
            .map_or(default, |t| t.config.unclean_election(default))
    }

    /// Elects leaders for leaderless partitions that have a live in-sync replica again (or,
    /// where unclean election is allowed, any live replica).
    fn elect_where_leaderless(&self, image: &mut MetadataImage, events: &mut Vec<EventKind>) {
        let tps: Vec<TopicPartition> = image
            .partitions()
            .filter(|(_, p)| p.leader == NO_LEADER)
            .map(|(tp, _)| tp)
            .collect();
        for tp in tps {
            let unclean = self.unclean_allowed(image, &tp);
            let snapshot = image.clone();
            let Some(p) = image.partition_mut(&tp) else { continue };
            let in_sync: Vec<BrokerId> = p
                .replicas
                .iter()
                .copied()
                .filter(|r| p.isr.contains(r) && snapshot.is_live(*r))
                .collect();
            let (new, reason) = match self.choose(&snapshot, &in_sync) {
                Some(new) => (new, ElectionReason::ReplicaReturned),
                None if unclean => match p.replicas.iter().copied().find(|r| snapshot.is_live(*r)) {
                    Some(new) => (new, ElectionReason::Unclean),
                    None => continue,
                },
                None => continue,
            };
            p.leader = new;
            p.leader_epoch += 1;
            p.partition_epoch += 1;
            if reason == ElectionReason::Unclean {
                p.isr = vec![new];
                p.recovering = true;
            }
            events.push(EventKind::LeaderElected {
                tp,
                old: None,
                new,
                leader_epoch: p.leader_epoch,
                reason,
                isr: p.isr.clone(),
            });
        }
    }

    /// Picks a leader among `candidates` (already in assignment order and eligible).
    fn choose(&self, image: &MetadataImage, candidates: &[BrokerId]) -> Option<BrokerId> {
        match self.config.leader_election {
            LeaderElection::Kafka => candidates.first().copied(),
            LeaderElection::Balanced => candidates
                .iter()
                .enumerate()
                .min_by_key(|(i, b)| (image.leader_count(**b), *i))
                .map(|(_, b)| *b),
        }
    }

    /// IncrementalAlterConfigs of a topic or of the cluster-wide defaults, live (Kafka's
    /// config records): the change is part of the metadata, so every broker applies it to its
    /// logs and every later election and acks=all check sees the same value. Turning unclean
    /// election on elects an out-of-sync leader at once where a partition is offline for lack
    /// of an in-sync one. `validate_only` checks and changes nothing.
    pub fn alter_configs(
        &self,
        resource: &ConfigResource,
        alterations: &[ConfigAlteration],
        validate_only: bool,
    ) -> Result<Option<Arc<MetadataImage>>, ControllerError> {
        let refused = |(code, message): configs::ConfigError| ControllerError::Rejected { code, message };
        let (_, changed) = self.mutate(|image, events, _| {
            match resource {
                ConfigResource::Topic(topic) => {
                    let (config, changed) =
                        configs::alter_topic(image, &self.config, topic, alterations).map_err(refused)?;
                    if validate_only {
                        return Ok(());
                    }
                    if let Some(t) = image.topics.get_mut(topic) {
                        t.config = config;
                    }
                    for (name, value) in changed {
                        events.push(EventKind::SettingChanged(match name.as_str() {
                            "min.insync.replicas" => LiveSetting::MinInsync {
                                topic: topic.clone(),
                                value: value.parse().unwrap_or_default(),
                            },
                            "unclean.leader.election.enable" => LiveSetting::UncleanElection {
                                topic: Some(topic.clone()),
                                enabled: value == "true",
                            },
                            _ => LiveSetting::Config {
                                topic: Some(topic.clone()),
                                name,
                                value,
                            },
                        }));
                    }
                }
                ConfigResource::ClusterDefault => {
                    let next = configs::alter_cluster(image, &self.config, alterations).map_err(refused)?;
                    if validate_only {
                        return Ok(());
                    }
                    let before = configs::describe_cluster(image, &self.config, self.config.auto_leader_rebalance);
                    image.cluster_configs = next.cluster_configs;
                    image.unclean_leader_election = next.unclean_leader_election;
                    let after = configs::describe_cluster(image, &self.config, self.config.auto_leader_rebalance);
                    for (entry, _) in after.into_iter().zip(before).filter(|(a, b)| a.value != b.value) {
                        events.push(EventKind::SettingChanged(match entry.name.as_str() {
                            "unclean.leader.election.enable" => LiveSetting::UncleanElection {
                                topic: None,
                                enabled: entry.value == "true",
                            },
                            _ => LiveSetting::Config {
                                topic: None,
                                name: entry.name,
                                value: entry.value,
                            },
                        }));
                    }
                }
                ConfigResource::Broker(id) => {
                    let own = configs::alter_broker(image, &self.config, *id, alterations).map_err(refused)?;
                    if validate_only {
                        return Ok(());
                    }
                    let auto = self.config.auto_leader_rebalance;
                    let before = configs::describe_broker(image, &self.config, auto, *id);
                    if own.is_empty() {
                        image.broker_configs.remove(id);
                    } else {
                        image.broker_configs.insert(*id, own);
                    }
                    let after = configs::describe_broker(image, &self.config, auto, *id);
                    for (entry, _) in after.into_iter().zip(before).filter(|(a, b)| a.value != b.value) {
                        events.push(EventKind::SettingChanged(LiveSetting::Config {
                            topic: None,
                            name: format!("{} of broker {id}", entry.name),
                            value: entry.value,
                        }));
                    }
                }
            }
            self.elect_where_leaderless(image, events);
            Ok(())
        })?;
        Ok(changed)
    }

    pub fn create_topic(&self, name: &str, config: TopicConfig) -> Result<Arc<MetadataImage>, ControllerError> {
        validate_topic_name(name)?;
        if let Err(e) = configs::topic_log_config(&self.image(), &self.config.log, &config).validate() {
            return Err(ControllerError::rejected(ErrorCode::InvalidConfig, e.to_string()));
        }
        if config.partitions < 1 {
            return Err(ControllerError::rejected(
                ErrorCode::InvalidPartitions,
                format!("a topic needs at least one partition, not {}", config.partitions),
            ));
        }
        let (_, changed) = self.mutate(|image, events, _| {
            if image.topics.contains_key(name) {
                return Err(ControllerError::rejected(
                    ErrorCode::TopicAlreadyExists,
                    format!("topic {name:?} already exists"),
                ));
            }
            let live = image.placeable_brokers();
            if config.replication_factor < 1 || config.replication_factor as usize > live.len() {
                return Err(ControllerError::rejected(
                    ErrorCode::InvalidReplicationFactor,
                    format!(
                        "replication factor {} needs that many live brokers; {} are live",
                        config.replication_factor,
                        live.len()
                    ),
                ));
            }
            let seed = name.bytes().fold(image.version ^ 0x9e37_79b9, |h, b| {
                h.wrapping_mul(31).wrapping_add(u64::from(b))
            });
            let assignment = assign_replicas(&live, 0, config.partitions, config.replication_factor, seed);
            let mut partitions = Vec::new();
            for (i, replicas) in assignment.into_iter().enumerate() {
                let leader = replicas[0];
                events.push(EventKind::LeaderElected {
                    tp: TopicPartition::new(name, i as i32),
                    old: None,
                    new: leader,
                    leader_epoch: 0,
                    reason: ElectionReason::Created,
                    isr: replicas.clone(),
                });
                partitions.push(PartitionRegistration::new(replicas));
            }
            events.insert(
                0,
                EventKind::TopicCreated {
                    topic: name.to_string(),
                    partitions: config.partitions,
                    replication_factor: config.replication_factor,
                },
            );
            image.topics.insert(
                name.to_string(),
                TopicMetadata {
                    id: format!("{seed:016x}"),
                    config: config.clone(),
                    partitions,
                },
            );
            Ok(())
        })?;
        Ok(changed.unwrap_or_else(|| self.image()))
    }

    /// Adds partitions to a topic, up to `total`, assigned like new ones.
    pub fn create_partitions(&self, name: &str, total: i32) -> Result<Arc<MetadataImage>, ControllerError> {
        let (_, changed) = self.mutate(|image, events, _| {
            let live = image.placeable_brokers();
            let version = image.version;
            let Some(topic) = image.topics.get_mut(name) else {
                return Err(ControllerError::rejected(
                    ErrorCode::UnknownTopicOrPartition,
                    format!("no topic {name:?}"),
                ));
            };
            let current = topic.partitions.len() as i32;
            if total <= current {
                return Err(ControllerError::rejected(
                    ErrorCode::InvalidPartitions,
                    format!("topic {name:?} has {current} partitions; the new count must be larger, not {total}"),
                ));
            }
            let rf = topic.config.replication_factor;
            if rf as usize > live.len() {
                return Err(ControllerError::rejected(
                    ErrorCode::InvalidReplicationFactor,
                    format!(
                        "replication factor {rf} needs that many live brokers; {} are live",
                        live.len()
                    ),
                ));
            }
            let seed = version ^ u64::from(total.unsigned_abs());
            for (i, replicas) in assign_replicas(&live, current, total - current, rf, seed)
                .into_iter()
                .enumerate()
            {
                let leader = replicas[0];
                events.push(EventKind::LeaderElected {
                    tp: TopicPartition::new(name, current + i as i32),
                    old: None,
                    new: leader,
                    leader_epoch: 0,
                    reason: ElectionReason::Created,
                    isr: replicas.clone(),
                });
                topic.partitions.push(PartitionRegistration::new(replicas));
            }
            topic.config.partitions = total;
            Ok(())
        })?;
        Ok(changed.unwrap_or_else(|| self.image()))
    }

    pub fn delete_topic(&self, name: &str) -> Result<Arc<MetadataImage>, ControllerError> {
        if is_internal_topic(name) {
            // Kafka refuses too: the cluster's own state (groups, offsets) lives there.
            return Err(ControllerError::rejected(
                ErrorCode::InvalidRequest,
                format!("{name} is an internal topic and cannot be deleted"),
            ));
        }
        let (_, changed) = self.mutate(|image, events, _| {
            if image.topics.remove(name).is_none() {
                return Err(ControllerError::rejected(
                    ErrorCode::UnknownTopicOrPartition,
                    format!("no topic {name:?}"),
                ));
            }
            events.push(EventKind::TopicDeleted {
                topic: name.to_string(),
            });
            Ok(())
        })?;
        Ok(changed.unwrap_or_else(|| self.image()))
    }

    /// Preferred-leader election for the partitions `scope` selects. Returns per partition
    /// the outcome (None = elected).
    pub fn elect_preferred(
        &self,
        scope: impl Fn(&TopicPartition) -> bool,
    ) -> Result<(ElectionResults, Option<Arc<MetadataImage>>), ControllerError> {
        self.mutate(|image, events, _| {
            let snapshot = image.clone();
            let tps: Vec<TopicPartition> = snapshot.partitions().map(|(tp, _)| tp).filter(|tp| scope(tp)).collect();
            let mut results = Vec::new();
            for tp in tps {
                let Some(p) = image.partition_mut(&tp) else { continue };
                let preferred = p.preferred();
                let outcome = if p.leader == preferred {
                    ErrorCode::ElectionNotNeeded
                } else if !p.isr.contains(&preferred) || !snapshot.is_live(preferred) {
                    ErrorCode::PreferredLeaderNotAvailable
                } else {
                    let old = (p.leader != NO_LEADER).then_some(p.leader);
                    p.leader = preferred;
                    p.leader_epoch += 1;
                    p.partition_epoch += 1;
                    events.push(EventKind::LeaderElected {
                        tp: tp.clone(),
                        old,
                        new: preferred,
                        leader_epoch: p.leader_epoch,
                        reason: ElectionReason::Preferred,
                        isr: p.isr.clone(),
                    });
                    ErrorCode::None
                };
                results.push((tp, outcome));
            }
            Ok(results)
        })
    }

    /// AlterPartitionReassignments (KIP-455): per partition a new replica list, or `None` to
    /// cancel the reassignment in progress. Each partition succeeds or fails on its own;
    /// returns per partition `None` or the error and its message.
    pub fn alter_reassignments(
        &self,
        requests: &[(TopicPartition, Option<Vec<BrokerId>>)],
    ) -> Result<(ReassignmentResults, Option<Arc<MetadataImage>>), ControllerError> {
        self.mutate(|image, events, _| {
            let mut results = Vec::new();
            for (tp, target) in requests {
                let outcome = match target {
                    Some(target) => self.reassign(image, events, tp, target),
                    None => self.cancel_reassignment(image, events, tp),
                };
                if outcome.is_ok() {
                    sync_replication_factor(image, &tp.topic);
                }
                results.push((tp.clone(), outcome.err()));
            }
            Ok(results)
        })
    }

    /// Starts moving `tp` to `target`, from its original replicas: a reassignment already in
    /// progress is replaced, as Kafka's controller does (it reverts, then applies the new
    /// target). Completes at once when nothing needs to catch up.
    fn reassign(
        &self,
        image: &mut MetadataImage,
        events: &mut Vec<EventKind>,
        tp: &TopicPartition,
        target: &[BrokerId],
    ) -> Result<(), ControllerError> {
        let invalid = |message: String| Err(ControllerError::rejected(ErrorCode::InvalidReplicaAssignment, message));
        if target.is_empty() {
            return invalid(format!("{tp}: the target replica list is empty"));
        }
        let mut seen = Vec::with_capacity(target.len());
        for b in target {
            if seen.contains(b) {
                return invalid(format!("{tp}: broker {b} appears twice in {target:?}"));
            }
            if !image.brokers.contains_key(b) {
                return invalid(format!("{tp}: broker {b} is not registered"));
            }
            seen.push(*b);
        }
        let choose = |candidates: &[BrokerId], image: &MetadataImage| self.choose(image, candidates);
        let snapshot = image.clone();
        let p = partition_or_unknown(image, tp)?;
        let original = p.original_replicas();
        let isr: Vec<BrokerId> = p.isr.iter().copied().filter(|r| !p.adding.contains(r)).collect();
        if isr.is_empty() {
            return invalid(format!(
                "{tp}: none of the original replicas {original:?} is in sync; cancel would leave no ISR"
            ));
        }
        let adding: Vec<BrokerId> = target.iter().copied().filter(|r| !original.contains(r)).collect();
        let removing: Vec<BrokerId> = original.iter().copied().filter(|r| !target.contains(r)).collect();
        let mut replicas = target.to_vec();
        replicas.extend(&removing);
        if replicas == p.replicas && adding == p.adding && removing == p.removing {
            return Ok(());
        }
        let dropped_adding = p.adding.iter().any(|r| !adding.contains(r));
        p.replicas = replicas;
        p.isr = p.replicas.iter().copied().filter(|r| isr.contains(r)).collect();
        p.adding = adding;
        p.removing = removing;
        p.partition_epoch += 1;
        if dropped_adding {
            // A replica that was joining is no longer assigned: fence its fetches.
            p.leader_epoch += 1;
        }
        if p.reassigning() {
            events.push(EventKind::ReassignmentStarted {
                tp: tp.clone(),
                from: original,
                to: target.to_vec(),
            });
        }
        complete_reassignment(p, tp, events, |c| choose(c, &snapshot), |b| snapshot.is_live(b));
        Ok(())
    }

    /// Cancels `tp`'s reassignment: back to the original replicas; the adding ones leave the
    /// ISR; a leader among them hands over to an original in-sync replica.
    fn cancel_reassignment(
        &self,
        image: &mut MetadataImage,
        events: &mut Vec<EventKind>,
        tp: &TopicPartition,
    ) -> Result<(), ControllerError> {
        let snapshot = image.clone();
        let p = partition_or_unknown(image, tp)?;
        if !p.reassigning() {
            return Err(ControllerError::rejected(
                ErrorCode::NoReassignmentInProgress,
                format!("{tp} has no reassignment in progress"),
            ));
        }
        let original = p.original_replicas();
        let isr: Vec<BrokerId> = p.isr.iter().copied().filter(|r| !p.adding.contains(r)).collect();
        if isr.is_empty() {
            return Err(ControllerError::rejected(
                ErrorCode::InvalidReplicaAssignment,
                format!("{tp}: none of the original replicas {original:?} is in sync; cancelling would leave no ISR"),
            ));
        }
        let dropped = !p.adding.is_empty();
        p.replicas = original.clone();
        p.isr = isr;
        p.adding.clear();
        p.removing.clear();
        p.partition_epoch += 1;
        let old = p.leader;
        if old != NO_LEADER && !p.replicas.contains(&old) {
            let candidates: Vec<BrokerId> = p
                .replicas
                .iter()
                .copied()
                .filter(|r| p.isr.contains(r) && snapshot.is_live(*r))
                .collect();
            p.leader = self.choose(&snapshot, &candidates).unwrap_or(NO_LEADER);
        }
        if dropped || p.leader != old {
            p.leader_epoch += 1;
        }
        events.push(EventKind::ReassignmentCancelled {
            tp: tp.clone(),
            replicas: original,
        });
        leader_change_events(p, tp, old, events);
        Ok(())
    }

    /// AlterPartition from a leader, validated in Kafka's order.
    #[allow(clippy::too_many_arguments)]
    pub fn alter_partition(
        &self,
        tp: &TopicPartition,
        leader: BrokerId,
        broker_epoch: i64,
        leader_epoch: i32,
        partition_epoch: i32,
        new_isr: Vec<BrokerId>,
    ) -> Result<(PartitionRegistration, Option<Arc<MetadataImage>>), ControllerError> {
        self.mutate(|image, events, _| {
            let snapshot = image.clone();
            let Some(p) = image.partition_mut(tp) else {
                return Err(ControllerError::rejected(
                    ErrorCode::UnknownTopicOrPartition,
                    tp.to_string(),
                ));
            };
            let reject = |code, message: String| Err(ControllerError::rejected(code, message));
            if leader_epoch > p.leader_epoch || partition_epoch > p.partition_epoch {
                return reject(ErrorCode::NotController, "request is ahead of the controller".into());
            }
            if leader_epoch < p.leader_epoch {
                return reject(
                    ErrorCode::FencedLeaderEpoch,
                    format!("leader epoch {leader_epoch} < {}", p.leader_epoch),
                );
            }
            if leader != p.leader {
                return reject(ErrorCode::InvalidRequest, format!("{leader} is not the leader"));
            }
            if partition_epoch < p.partition_epoch {
                return reject(
                    ErrorCode::InvalidUpdateVersion,
                    format!("partition epoch {partition_epoch} < {}", p.partition_epoch),
                );
            }
            if !new_isr.contains(&leader) || new_isr.iter().any(|r| !p.replicas.contains(r)) {
                return reject(
                    ErrorCode::InvalidRequest,
                    format!("ISR {new_isr:?} is not within the replicas"),
                );
            }
            if snapshot.brokers.get(&leader).map(|b| b.epoch) != Some(broker_epoch) {
                return reject(
                    ErrorCode::StaleBrokerEpoch,
                    format!("broker epoch {broker_epoch} is stale"),
                );
            }
            let added: Vec<BrokerId> = new_isr.iter().copied().filter(|r| !p.isr.contains(r)).collect();
            if let Some(bad) = added.iter().find(|r| !snapshot.is_live(**r)) {
                return reject(
                    ErrorCode::IneligibleReplica,
                    format!("broker {bad} is fenced or shutting down"),
                );
            }
            let removed: Vec<BrokerId> = p.isr.iter().copied().filter(|r| !new_isr.contains(r)).collect();
            let mut isr: Vec<BrokerId> = p.replicas.iter().copied().filter(|r| new_isr.contains(r)).collect();
            isr.dedup();
            if isr != p.isr {
                p.isr = isr.clone();
                p.partition_epoch += 1;
                if p.isr.len() > 1 {
                    p.recovering = false;
                }
                if !removed.is_empty() {
                    events.push(EventKind::IsrShrunk {
                        tp: tp.clone(),
                        removed,
                        isr: isr.clone(),
                        reason: "follower fell behind by more than replica.lag.time.max.ms".into(),
                    });
                }
                if !added.is_empty() {
                    events.push(EventKind::IsrExpanded {
                        tp: tp.clone(),
                        added,
                        isr,
                    });
                }
                let chooser = |c: &[BrokerId]| self.choose(&snapshot, c);
                if complete_reassignment(p, tp, events, chooser, |b| snapshot.is_live(b)) {
                    sync_replication_factor(image, &tp.topic);
                    return Ok(image
                        .partition(tp)
                        .cloned()
                        .unwrap_or_else(|| PartitionRegistration::new(Vec::new())));
                }
            }
            Ok(p.clone())
        })
    }
}

/// Per partition of an AlterPartitionReassignments, `None` or why it was refused.
pub type ReassignmentResults = Vec<(TopicPartition, Option<ControllerError>)>;

fn partition_or_unknown<'a>(
    image: &'a mut MetadataImage,
    tp: &TopicPartition,
) -> Result<&'a mut PartitionRegistration, ControllerError> {
    image
        .partition_mut(tp)
        .ok_or_else(|| ControllerError::rejected(ErrorCode::UnknownTopicOrPartition, format!("no partition {tp}")))
}

/// Finishes `p`'s reassignment once every adding replica is in the ISR and an in-sync replica
/// stays (Kafka's `PartitionReassignmentReplicas.maybeCompleteReassignment`): the removing
/// replicas leave the replicas and the ISR, and a leader among them hands over to the first
/// in-sync target replica. The leader epoch moves whenever replicas leave, which fences them.
/// Returns whether it completed.
fn complete_reassignment(
    p: &mut PartitionRegistration,
    tp: &TopicPartition,
    events: &mut Vec<EventKind>,
    choose: impl Fn(&[BrokerId]) -> Option<BrokerId>,
    is_live: impl Fn(BrokerId) -> bool,
) -> bool {
    if !p.reassigning() || !p.adding.iter().all(|r| p.isr.contains(r)) {
        return false;
    }
    let isr: Vec<BrokerId> = p.isr.iter().copied().filter(|r| !p.removing.contains(r)).collect();
    if isr.is_empty() {
        return false;
    }
    let removed = std::mem::take(&mut p.removing);
    p.adding.clear();
    p.replicas.retain(|r| !removed.contains(r));
    p.isr = isr;
    p.partition_epoch += 1;
    let old = p.leader;
    if old == NO_LEADER || !p.replicas.contains(&old) {
        let candidates: Vec<BrokerId> = p
            .replicas
            .iter()
            .copied()
            .filter(|r| p.isr.contains(r) && is_live(*r))
            .collect();
        p.leader = choose(&candidates).unwrap_or(NO_LEADER);
    }
    if !removed.is_empty() || p.leader != old {
        p.leader_epoch += 1;
    }
    events.push(EventKind::ReassignmentCompleted {
        tp: tp.clone(),
        replicas: p.replicas.clone(),
        removed,
    });
    leader_change_events(p, tp, old, events);
    true
}

/// The events of a reassignment's leader change, if it made one.
fn leader_change_events(p: &PartitionRegistration, tp: &TopicPartition, old: BrokerId, events: &mut Vec<EventKind>) {
    if p.leader == old {
        return;
    }
    if p.leader == NO_LEADER {
        events.push(EventKind::PartitionOffline {
            tp: tp.clone(),
            isr: p.isr.clone(),
        });
    } else {
        events.push(EventKind::LeaderElected {
            tp: tp.clone(),
            old: (old != NO_LEADER).then_some(old),
            new: p.leader,
            leader_epoch: p.leader_epoch,
            reason: ElectionReason::Reassignment,
            isr: p.isr.clone(),
        });
    }
}

/// A topic's configured replication factor follows its partitions once they all agree (a
/// reassignment may change it; Kafka derives it from the assignment).
fn sync_replication_factor(image: &mut MetadataImage, topic: &str) {
    let Some(t) = image.topics.get_mut(topic) else { return };
    let Some(first) = t.partitions.first() else { return };
    let rf = first.target_replicas().len();
    if t.partitions.iter().all(|p| !p.reassigning() && p.replicas.len() == rf) {
        t.config.replication_factor = rf as i32;
    }
}

/// Kafka's rack-unaware assignment: a random start broker and a random shift for the
/// followers, so leaders and followers spread evenly.
fn assign_replicas(
    brokers: &[BrokerId],
    first_partition: i32,
    partitions: i32,
    replication_factor: i32,
    seed: u64,
) -> Vec<Vec<BrokerId>> {
    let n = brokers.len();
    let start = (seed % n as u64) as usize;
    let mut shift = ((seed >> 17) % n as u64) as usize + first_partition as usize / n;
    (first_partition as usize..(first_partition + partitions) as usize)
        .map(|p| {
            if p > 0 && p % n == 0 {
                shift += 1;
            }
            let first = (p + start) % n;
            let mut replicas = vec![brokers[first]];
            for j in 0..(replication_factor as usize).saturating_sub(1) {
                let s = 1 + (shift + j) % (n - 1);
                replicas.push(brokers[(first + s) % n]);
            }
            replicas
        })
        .collect()
}

/// The reason a broker in a controlled shutdown is fenced with (Kafka moves its leaderships
/// first, then lets it go).
pub const CONTROLLED_SHUTDOWN: &str = "controlled shutdown";

fn validate_topic_name(name: &str) -> Result<(), ControllerError> {
    match topic_name_error(name) {
        None => Ok(()),
        Some(why) => Err(ControllerError::rejected(ErrorCode::InvalidRequest, why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignment_spreads_leaders_and_never_repeats_a_broker() {
        let a = assign_replicas(&[0, 1, 2], 0, 6, 3, 7);
        for r in &a {
            let mut s = r.clone();
            s.sort();
            s.dedup();
            assert_eq!(s.len(), 3);
        }
        for b in 0..3 {
            assert_eq!(a.iter().filter(|r| r[0] == b).count(), 2);
        }
    }
}
