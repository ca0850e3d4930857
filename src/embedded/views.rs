//! Engine snapshots and events mapped to `Arc<ClusterView>`s a few times a second. Only the
//! mapping to rows is here; what one snapshot cannot tell (rates, histories, the timeline,
//! when things last changed) is kept by the view-model in `view/`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{broadcast, watch};

use super::Shared;
use super::timeline::{classify, describe};
use crate::client::assignor::decode_assignment;
use crate::config::ConsoleConfig;
use crate::engine::{BrokerState, ClusterEvent, ClusterSnapshot, EventKind, LinkFault, Membership, NodeId};
use crate::view::LinkState;
use crate::view::history::{CounterRates, Trends, topic_lag};
use crate::view::timeline::{self, Timeline};
use crate::view::{
    BrokerLifecycle, BrokerLink, BrokerRow, BrokerStatus, ClusterView, Controls, EpochStart, Epochs, GroupOffsetRow,
    GroupRow, MemberRow, PartitionRow, ReplicaRole, ReplicaRow, Retention, SourceKind, Throughput, TopicRow, ViewEvent,
};
use crate::wire::Listener;

impl Shared {
    /// The clock and the settings as they are now.
    pub(super) fn controls(&self) -> Controls {
        let config = self.cluster.config();
        let (frozen, slow_motion) = self.cluster.clock().state();
        Controls {
            frozen,
            held: self.cluster.clock().held(),
            slow_motion,
            auto_rebalance: self.cluster.auto_rebalance(),
            unclean_election: self.cluster.unclean_election_default(),
            balanced_election: config.leader_election == crate::engine::LeaderElection::Balanced,
            replica_lag_time_max_ms: config.replica_lag_time_max_ms,
            broker_session_timeout_ms: config.broker_session_timeout_ms,
            producer_acks: match &self.traffic {
                Some(t) => t.stats().acks,
                None => {
                    (self.demo_state() == Some(true)).then(|| self.demo_acks.load(std::sync::atomic::Ordering::Relaxed))
                }
            },
            clock_ms: self.cluster.clock().now_ms(),
        }
    }

    /// The faulty links between brokers (the controller's own links are not drawn).
    pub(super) fn links(&self) -> Vec<BrokerLink> {
        let state = |fault: LinkFault| match fault {
            LinkFault::Cut => Some(LinkState::Cut),
            LinkFault::Delay(d) => Some(LinkState::Delay(d.as_millis() as u64)),
            // Only the simulation drops a share of requests; the console sets no such link.
            LinkFault::Drop { .. } => None,
        };
        self.cluster
            .link_faults()
            .into_iter()
            .filter_map(|(from, to, fault)| match (from, to) {
                (NodeId::Broker(from), NodeId::Broker(to)) => Some(BrokerLink {
                    from,
                    to,
                    state: state(fault)?,
                }),
                _ => None,
            })
            .collect()
    }

    pub(super) fn demo_state(&self) -> Option<bool> {
        self.demo
            .as_ref()
            .map(|_| self.demo_running.load(std::sync::atomic::Ordering::Relaxed))
    }
}

pub(super) async fn snapshot_loop(
    shared: Arc<Shared>,
    mut builder: ViewBuilder,
    mut events: broadcast::Receiver<ClusterEvent>,
    tx: watch::Sender<Arc<ClusterView>>,
) {
    let mut interval = tokio::time::interval(Duration::from_millis(shared.console.refresh_ms.max(20)));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        interval.tick().await;
        loop {
            match events.try_recv() {
                Ok(event) => builder.record(&event),
                Err(broadcast::error::TryRecvError::Lagged(n)) => {
                    builder.timeline.say(Utc::now(), timeline::events_dropped(n))
                }
                Err(_) => break,
            }
        }
        builder.set_addresses(&shared.wire_listeners());
        let mut view = builder.build(&shared.cluster.snapshot(), shared.demo_state(), Utc::now());
        view.controls = Some(shared.controls());
        view.workload = shared.traffic.as_ref().map(|t| t.stats());
        view.links = shared.links();
        if !crate::view::publish_if_changed(&tx, view) {
            return;
        }
    }
}

/// A broker's place in the membership as the view says it.
fn lifecycle(membership: Membership) -> Option<BrokerLifecycle> {
    match membership {
        Membership::Member => None,
        Membership::Joining => Some(BrokerLifecycle::Joining),
        Membership::Draining { left, total } => Some(BrokerLifecycle::Draining {
            moved: total.saturating_sub(left),
            total,
        }),
    }
}

/// Turns snapshots and events into views; what a single snapshot cannot tell (rates,
/// histories, the timeline, when things last changed) is kept by the shared view-model.
pub(super) struct ViewBuilder {
    cluster_name: String,
    timeline: Timeline,
    trends: Trends,
    bytes_in: CounterRates<i32>,
    bytes_out: CounterRates<i32>,
    /// Kafka listener of each broker; the port stays the same across restarts (refreshed
    /// before each build: brokers join and leave).
    addresses: HashMap<i32, String>,
    /// Each replica's long epoch cache as the last view had it: an unchanged one is shared
    /// with it, so dropping the old view on the console's thread frees nothing of them.
    /// (Short caches sit in the rows: nothing to share.)
    epochs: HashMap<(String, i32, i32), Epochs>,
}

impl ViewBuilder {
    pub(super) fn new(console: &ConsoleConfig, listeners: &[Listener]) -> ViewBuilder {
        ViewBuilder {
            addresses: listeners.iter().map(|l| (l.broker, l.addr.to_string())).collect(),
            cluster_name: console.cluster_name.clone(),
            timeline: Timeline::new(console.event_history),
            trends: Trends::default(),
            bytes_in: CounterRates::default(),
            bytes_out: CounterRates::default(),
            epochs: HashMap::new(),
        }
    }

    /// The listeners as they are now: a broker added live has one, a decommissioned one not.
    pub(super) fn set_addresses(&mut self, listeners: &[Listener]) {
        self.addresses = listeners.iter().map(|l| (l.broker, l.addr.to_string())).collect();
    }

    pub(super) fn record(&mut self, event: &ClusterEvent) {
        let at = event.at;
        match &event.kind {
            EventKind::BrokerStarted { broker, .. }
            | EventKind::BrokerFenced { broker, .. }
            | EventKind::BrokerUnfenced { broker }
            | EventKind::BrokerStopped { broker, .. }
            | EventKind::BrokerPaused { broker }
            | EventKind::BrokerResumed { broker }
            | EventKind::BrokerJoined { broker }
            | EventKind::BrokerDraining { broker, .. } => {
                self.trends.broker_changed.mark(*broker, at);
            }
            EventKind::LeaderElected { tp, .. }
            | EventKind::PartitionOffline { tp, .. }
            | EventKind::IsrShrunk { tp, .. }
            | EventKind::IsrExpanded { tp, .. } => {
                self.trends.partition_changed.mark((tp.topic.clone(), tp.partition), at);
            }
            // The transactions screen (Y) shows them; the timeline keeps to changes.
            kind if kind.is_routine() => return,
            _ => {}
        }
        let line = describe(&event.kind);
        self.timeline.push(ViewEvent {
            at,
            cluster_at: event.cluster_at,
            severity: line.severity,
            text: line.text(),
            msg: Some(line.msg),
            class: classify(&event.kind, event.cluster_at),
        });
    }

    pub(super) fn build(&mut self, snapshot: &ClusterSnapshot, demo: Option<bool>, now: DateTime<Utc>) -> ClusterView {
        // Both directions are sampled at the same moments, so they round together.
        let sampled = self
            .bytes_in
            .sample(snapshot.brokers.iter().map(|b| (b.id, b.bytes_in)), now);
        self.bytes_out
            .sample(snapshot.brokers.iter().map(|b| (b.id, b.bytes_out)), now);
        let brokers = snapshot
            .brokers
            .iter()
            .map(|b| {
                let (rate_in, rate_out) = (self.bytes_in.rate(&b.id), self.bytes_out.rate(&b.id));
                let produce_history = if sampled {
                    self.trends.produce_history.push(b.id, rate_in as u64)
                } else {
                    self.trends.produce_history.samples(&b.id)
                };
                let status = match b.state {
                    BrokerState::Running if b.fenced => BrokerStatus::Fenced,
                    BrokerState::Running => BrokerStatus::Online,
                    BrokerState::Paused => BrokerStatus::Paused,
                    BrokerState::Stopped => BrokerStatus::Stopped,
                    BrokerState::Killed => BrokerStatus::Killed,
                };
                BrokerRow {
                    id: b.id,
                    status,
                    is_controller: b.is_controller,
                    leaders: b.leaders,
                    replicas: b.replicas,
                    throughput: Throughput::Bytes {
                        in_per_sec: rate_in,
                        out_per_sec: rate_out,
                    },
                    address: self.addresses.get(&b.id).cloned(),
                    disk_bytes: matches!(b.state, BrokerState::Running | BrokerState::Paused).then(|| {
                        snapshot
                            .partitions
                            .iter()
                            .flat_map(|p| &p.replicas)
                            .filter(|r| r.broker == b.id)
                            .filter_map(|r| r.size_bytes)
                            .sum()
                    }),
                    produce_history,
                    changed_at: None,
                    lifecycle: lifecycle(b.membership),
                }
            })
            .collect();
        let mut last_epochs = std::mem::take(&mut self.epochs);
        let mut epochs_of = |topic: &str, partition: i32, broker: i32, epochs: &[crate::storage::EpochEntry]| {
            let starts = epochs.iter().map(|e| EpochStart {
                epoch: e.epoch,
                start_offset: e.start_offset,
            });
            if Epochs::fit_in_row(epochs.len()) {
                return starts.collect();
            }
            let key = (topic.to_string(), partition, broker);
            let shared = Epochs::reuse(last_epochs.remove(&key).as_ref(), starts);
            self.epochs.insert(key, shared.clone());
            shared
        };
        let partitions: Vec<PartitionRow> = snapshot
            .partitions
            .iter()
            .map(|p| PartitionRow {
                topic: p.tp.topic.clone(),
                partition: p.tp.partition,
                leader: p.leader,
                leader_epoch: p.leader_epoch,
                replicas: p
                    .replicas
                    .iter()
                    .map(|r| ReplicaRow {
                        broker: r.broker,
                        role: if !r.online {
                            ReplicaRole::Offline
                        } else if r.is_leader {
                            ReplicaRole::Leader
                        } else if r.in_isr {
                            ReplicaRole::InSync
                        } else {
                            ReplicaRole::OutOfSync
                        },
                        log_end_offset: r.log_end_offset,
                        log_start_offset: r.log_start_offset,
                        high_watermark: r.high_watermark,
                        size_bytes: r.size_bytes,
                        epochs: epochs_of(&p.tp.topic, p.tp.partition, r.broker, &r.epochs),
                        caught_up_ms_ago: r.caught_up_ms_ago,
                    })
                    .collect(),
                isr: p.isr.clone(),
                preferred_leader: p.preferred_leader,
                high_watermark: p.high_watermark,
                last_stable_offset: p.last_stable_offset,
                log_start_offset: p.log_start_offset,
                under_replicated: p.under_replicated,
                min_insync_replicas: Some(p.min_insync_replicas),
                adding: p.adding.clone(),
                removing: p.removing.clone(),
                changed_at: None,
            })
            .collect();
        let groups: Vec<GroupRow> = snapshot
            .groups
            .iter()
            .map(|g| {
                let mut row = GroupRow {
                    group_id: g.group_id.clone(),
                    state: format!("{:?}", g.state),
                    protocol: g.protocol.clone(),
                    generation: g.generation,
                    coordinator: g.coordinator,
                    members: g
                        .members
                        .iter()
                        .map(|m| MemberRow {
                            member_id: m.member_id.clone(),
                            instance_id: m.group_instance_id.clone(),
                            client_id: m.client_id.clone(),
                            host: m.client_host.clone(),
                            assignment: decode_assignment(&m.assignment)
                                .unwrap_or_default()
                                .into_iter()
                                .map(|tp| (tp.topic, tp.partition))
                                .collect(),
                        })
                        .collect(),
                    offsets: g
                        .offsets
                        .iter()
                        .map(|o| GroupOffsetRow {
                            topic: o.tp.topic.clone(),
                            partition: o.tp.partition,
                            committed: o.committed,
                            end: o.end,
                            lag: o.lag,
                        })
                        .collect(),
                    total_lag: 0,
                    lag_history: Vec::new(),
                };
                self.trends.sample_lag(&mut row);
                row
            })
            .collect();
        let topics: Vec<TopicRow> = snapshot
            .topics
            .iter()
            .map(|t| TopicRow {
                name: t.name.clone(),
                internal: crate::engine::is_internal_topic(&t.name),
                partitions: t.partitions,
                replication_factor: t.replication_factor,
                under_replicated: t.under_replicated,
                offline: t.offline,
                messages: t.messages,
                size_bytes: Some(t.size_bytes),
                messages_per_sec: t.messages_per_sec,
                total_lag: topic_lag(&groups, &t.name),
                retention: Some(Retention {
                    compact: t.log.cleanup_policy.compacts(),
                    delete: t.log.cleanup_policy.deletes(),
                    ms: t.log.retention_ms,
                    bytes: t.log.retention_bytes,
                }),
                unclean_election: Some(t.unclean_leader_election),
            })
            .collect();
        let mut view = ClusterView {
            cluster_name: self.cluster_name.clone(),
            source: SourceKind::Embedded,
            taken_at: now,
            controller: snapshot.controller,
            brokers,
            topics,
            partitions,
            groups,
            events: self.timeline.events(),
            demo,
            problems: Vec::new(),
            controls: None,
            workload: None,
            links: Vec::new(),
        };
        crate::view::sort_rows(&mut view);
        self.trends.forget_what_is_gone(&view);
        self.trends.stamp_changes(&mut view);
        view
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Cluster, TopicConfig};

    /// A one-broker cluster in a temporary directory (kept while the handle lives).
    async fn one_broker() -> (tempfile::TempDir, Cluster) {
        let dir = tempfile::tempdir().expect("tempdir");
        let cluster = Cluster::start(crate::engine::ClusterConfig {
            data_dir: dir.path().to_path_buf(),
            brokers: 1,
            ..crate::engine::ClusterConfig::default()
        })
        .await
        .expect("start");
        (dir, cluster)
    }

    /// The snapshot with every replica's epoch cache grown to `n` entries (a partition
    /// that has had that many leaders write to it).
    fn with_epochs(mut snapshot: ClusterSnapshot, n: i32) -> ClusterSnapshot {
        for p in &mut snapshot.partitions {
            for r in &mut p.replicas {
                r.epochs = (0..n)
                    .map(|e| crate::storage::EpochEntry {
                        epoch: e,
                        start_offset: i64::from(e) * 10,
                    })
                    .collect();
            }
        }
        snapshot
    }

    /// A short epoch cache sits in its row; a long one that did not change shares its copy
    /// with the view before, so the console's thread drops an old view without freeing
    /// it; a new epoch is a new copy.
    #[tokio::test(start_paused = true)]
    async fn short_epochs_sit_in_the_row_and_unchanged_long_ones_are_shared_between_views() {
        let (_dir, cluster) = one_broker().await;
        cluster.create_topic("t", TopicConfig::new(1, 1)).await.expect("create");
        let mut builder = ViewBuilder::new(&ConsoleConfig::default(), &[]);
        let epochs = |view: &ClusterView| {
            let p = view.partitions.iter().find(|p| p.topic == "t").expect("t-0");
            p.replicas[0].epochs.clone()
        };
        let short = epochs(&builder.build(&with_epochs(cluster.snapshot(), 2), None, Utc::now()));
        assert_eq!(short.len(), 2);
        assert!(!short.is_shared(), "{short:?} shared");
        assert!(builder.epochs.is_empty(), "nothing kept for a short cache");
        let first = epochs(&builder.build(&with_epochs(cluster.snapshot(), 6), None, Utc::now()));
        let second = epochs(&builder.build(&with_epochs(cluster.snapshot(), 6), None, Utc::now()));
        assert_eq!(second.len(), 6);
        assert!(second.same_copy(&first), "{first:?} copied, not shared");
        let third = epochs(&builder.build(&with_epochs(cluster.snapshot(), 7), None, Utc::now()));
        assert_eq!(third.len(), 7);
        assert!(!third.same_copy(&first), "a changed cache is a new copy");
        cluster.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_deleted_topic_and_a_vanished_group_leave_nothing_in_the_view_builder() {
        let (_dir, cluster) = one_broker().await;
        let mut builder = ViewBuilder::new(&ConsoleConfig::default(), &[]);
        for i in 0..20 {
            let name = format!("run-{i}");
            cluster
                .create_topic(&name, TopicConfig::new(2, 1))
                .await
                .expect("create");
            builder.trends.partition_changed.mark((name.clone(), 0), Utc::now());
            builder.trends.partition_changed.mark((name, 1), Utc::now());
            builder.trends.lag_history.push(format!("group-{i}"), 1);
        }
        builder.build(&with_epochs(cluster.snapshot(), 5), None, Utc::now());
        assert_eq!(builder.trends.partition_changed.len(), 40);
        assert!(
            builder
                .epochs
                .keys()
                .filter(|(topic, _, _)| topic.starts_with("run-"))
                .count()
                == 40
        );
        assert!(builder.trends.lag_history.is_empty(), "no such groups in the cluster");
        for i in 0..20 {
            cluster.delete_topic(&format!("run-{i}")).await.expect("delete");
        }
        builder.build(&with_epochs(cluster.snapshot(), 5), None, Utc::now());
        assert!(builder.trends.partition_changed.is_empty());
        assert!(
            builder.epochs.keys().all(|(topic, _, _)| !topic.starts_with("run-")),
            "no replica's epochs kept for a deleted topic"
        );
        cluster.shutdown().await;
    }
}
