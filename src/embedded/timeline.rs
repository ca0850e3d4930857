//! Engine events as timeline lines: which part each plays in an incident, and the view's
//! sentence for it, the same one an external cluster's inferred change reads as.

use crate::engine::{ClockChange, ElectionReason, EventKind, LinkFault, LiveSetting, NodeId};
use chrono::{DateTime, Utc};

use crate::kafka::screaming_snake;
use crate::view::Severity;
use crate::view::lang::Msg;
use crate::view::timeline::{self, ElectionCause, Line};
use crate::view::{BrokerId, EventClass, Refusals};

/// The part an engine event plays in an incident; `cluster_at` is when it happened on the
/// cluster's clock.
pub(super) fn classify(kind: &EventKind, cluster_at: DateTime<Utc>) -> EventClass {
    match kind {
        EventKind::BrokerStopped { broker, .. }
        | EventKind::BrokerPaused { broker }
        | EventKind::BrokerIsolated { broker } => EventClass::Fault(*broker),
        EventKind::BrokerFenced { broker, reason } if reason == crate::engine::CONTROLLED_SHUTDOWN => {
            EventClass::Fault(*broker)
        }
        EventKind::BrokerFenced { broker, .. } => EventClass::Fenced(*broker),
        EventKind::BrokerStarted { broker, .. } => EventClass::Restarted(*broker),
        EventKind::BrokerUnfenced { broker } | EventKind::BrokerResumed { broker } => EventClass::Recovered(*broker),
        EventKind::LeaderElected { tp, old, new, .. } => EventClass::LeaderMoved {
            partition: tp.to_string(),
            from: *old,
            to: *new,
        },
        EventKind::IsrShrunk { tp, removed, .. } => EventClass::IsrShrunk {
            partition: tp.to_string(),
            removed: removed.clone(),
        },
        EventKind::IsrExpanded { tp, added, .. } => EventClass::IsrExpanded {
            partition: tp.to_string(),
            added: added.clone(),
        },
        EventKind::PartitionOffline { tp, isr } => EventClass::Offline {
            partition: tp.to_string(),
            isr: isr.clone(),
        },
        EventKind::ProduceRejected { tp, error, .. } => EventClass::ProduceRejected(Refusals {
            partition: tp.to_string(),
            error: screaming_snake(&format!("{error:?}")),
            count: 1,
            since: cluster_at,
        }),
        _ => EventClass::Other,
    }
}

/// An engine event's timeline line: the engine says what happened and why, the view says it.
pub(super) fn describe(kind: &EventKind) -> Line {
    match kind {
        EventKind::BrokerStarted { broker, broker_epoch } => timeline::broker_started(*broker, *broker_epoch),
        EventKind::BrokerFenced { broker, reason } if reason == crate::engine::CONTROLLED_SHUTDOWN => {
            timeline::broker_controlled_shutdown(*broker)
        }
        EventKind::BrokerFenced { broker, reason } => timeline::broker_fenced(*broker, reason),
        EventKind::BrokerUnfenced { broker } => timeline::broker_unfenced(*broker),
        EventKind::BrokerStopped { broker, how } => timeline::broker_down(*broker, how),
        EventKind::BrokerPaused { broker } => timeline::broker_paused(*broker),
        EventKind::BrokerResumed { broker } => timeline::broker_resumed(*broker),
        EventKind::BrokerJoined { broker } => timeline::broker_joined(*broker),
        EventKind::BrokerDraining { broker, replicas } => timeline::broker_draining(*broker, *replicas),
        EventKind::BrokerDecommissioned { broker } => timeline::broker_decommissioned(*broker),
        EventKind::ControllerMoved { from, to } => timeline::controller_moved(*from, *to),
        EventKind::TopicCreated {
            topic,
            partitions,
            replication_factor,
        } => timeline::topic_created(topic, *partitions, *replication_factor),
        EventKind::TopicDeleted { topic } => timeline::topic_deleted(topic),
        EventKind::LeaderElected {
            tp,
            old,
            new,
            leader_epoch,
            reason,
            ..
        } => {
            let cause = match reason {
                ElectionReason::Created => ElectionCause::Created,
                ElectionReason::LeaderUnavailable => ElectionCause::LeaderUnavailable,
                ElectionReason::ControlledShutdown => ElectionCause::ControlledShutdown,
                ElectionReason::ReplicaReturned => ElectionCause::ReplicaReturned,
                ElectionReason::Preferred => ElectionCause::Preferred,
                ElectionReason::Unclean => ElectionCause::Unclean,
                ElectionReason::Reassignment => ElectionCause::Reassignment,
            };
            timeline::leader_elected(&tp.topic, tp.partition, *old, *new, *leader_epoch, Some(cause))
        }
        EventKind::PartitionOffline { tp, isr } => timeline::partition_offline(&tp.topic, tp.partition, isr),
        EventKind::IsrShrunk {
            tp,
            removed,
            isr,
            reason,
        } => timeline::isr_shrunk(
            &tp.topic,
            tp.partition,
            removed,
            isr,
            Some(shrink_reason(reason, removed)),
        ),
        EventKind::IsrExpanded { tp, added, isr } => timeline::isr_expanded(&tp.topic, tp.partition, added, isr),
        EventKind::ReassignmentStarted { tp, from, to } => {
            timeline::reassignment_started(&tp.topic, tp.partition, from, to)
        }
        EventKind::ReassignmentCompleted { tp, replicas, removed } => {
            timeline::reassignment_completed(&tp.topic, tp.partition, replicas, removed)
        }
        EventKind::ReassignmentCancelled { tp, replicas } => {
            timeline::reassignment_cancelled(&tp.topic, tp.partition, replicas)
        }
        EventKind::FollowerTruncated { tp, broker, from, to } => {
            timeline::follower_truncated(&tp.topic, tp.partition, *broker, *from, *to)
        }
        EventKind::ProduceRejected { tp, error, reason } => {
            timeline::produce_rejected(&tp.topic, tp.partition, &format!("{error:?}"), reason)
        }
        EventKind::LinkChanged { a, b, fault } => {
            timeline::link_changed(&node_label(*a), &node_label(*b), fault.map(link_fault_label))
        }
        EventKind::BrokerIsolated { broker } => timeline::broker_isolated(*broker),
        EventKind::LinksHealed => timeline::links_healed(),
        EventKind::ClockChanged(ClockChange::Frozen) => timeline::clock_frozen(),
        EventKind::ClockChanged(ClockChange::Thawed { frozen_for }) => timeline::clock_thawed(frozen_for.as_secs_f64()),
        EventKind::ClockChanged(ClockChange::SlowMotion { factor }) => timeline::slow_motion(*factor),
        EventKind::SettingChanged(setting) => match setting {
            LiveSetting::AutoRebalance(on) => {
                timeline::setting_changed("auto.leader.rebalance.enable", None, &on.to_string())
            }
            LiveSetting::UncleanElection { topic, enabled } => {
                timeline::setting_changed("unclean.leader.election.enable", topic.as_deref(), &enabled.to_string())
            }
            LiveSetting::MinInsync { topic, value } => {
                timeline::setting_changed("min.insync.replicas", Some(topic), &value.to_string())
            }
            LiveSetting::Config { topic, name, value } => timeline::setting_changed(name, topic.as_deref(), value),
        },
        EventKind::GroupRebalanced {
            group,
            generation,
            members,
            protocol,
        } => timeline::group_rebalanced(group, Some(*generation), *members, protocol),
        EventKind::GroupMemberRemoved { group, member, reason } => {
            timeline::group_member_removed(group, member, reason)
        }
        EventKind::StaticMemberReplaced {
            group,
            instance,
            old_member,
            new_member,
            rebalance,
        } => timeline::static_member_rejoined(group, new_member, instance, old_member, *rebalance),
        EventKind::StaticMemberFenced {
            group,
            instance,
            member,
            by,
        } => timeline::static_member_fenced(group, member, instance, by),
        EventKind::TxnCommitted {
            transactional_id,
            producer_id,
            partitions,
        } => txn_line(
            Severity::Info,
            "transaction {id} committed (producer {pid}, {n} partitions)",
            transactional_id,
            *producer_id,
            *partitions,
        ),
        EventKind::TxnAborted {
            transactional_id,
            producer_id,
            partitions,
        } => txn_line(
            Severity::Info,
            "transaction {id} aborted (producer {pid}, {n} partitions)",
            transactional_id,
            *producer_id,
            *partitions,
        ),
        EventKind::TxnTimedOut {
            transactional_id,
            producer_id,
            partitions,
        } => txn_line(
            Severity::Warn,
            "transaction {id} timed out and was aborted (producer {pid}, {n} partitions)",
            transactional_id,
            *producer_id,
            *partitions,
        ),
        EventKind::ProducerFenced {
            transactional_id,
            producer_id,
            epoch,
        } => Line {
            severity: Severity::Warn,
            msg: Msg::new("transactional id {id}: producer {pid} fenced by a new instance (epoch {epoch}); its open transaction is aborted")
                .with("id", transactional_id)
                .with("pid", producer_id)
                .with("epoch", epoch),
        },
    }
}

/// A transaction's end as a timeline line.
fn txn_line(severity: Severity, id: &'static str, transactional_id: &str, producer_id: i64, partitions: usize) -> Line {
    Line {
        severity,
        msg: Msg::new(id)
            .with("id", transactional_id)
            .with("pid", producer_id)
            .with("n", partitions),
    }
}

/// Why the controller shrank an ISR, as the view's words: a fenced broker's reason or its
/// controlled shutdown (the controller says them as `broker 1 fenced: {reason}` and `broker 1
/// controlled shutdown`), else the controller's words as they are.
fn shrink_reason(reason: &str, removed: &[BrokerId]) -> Msg {
    for &broker in removed {
        if let Some(why) = reason.strip_prefix(&format!("broker {broker} fenced: ")) {
            return timeline::fenced_because(broker, why);
        }
        if reason == format!("broker {broker} {}", crate::engine::CONTROLLED_SHUTDOWN) {
            return timeline::shut_down_in_control(broker);
        }
    }
    Msg::words(reason)
}

/// A node as the timeline names it: a broker by its id.
fn node_label(node: NodeId) -> String {
    match node {
        NodeId::Broker(b) => b.to_string(),
        NodeId::Controller => "controller".into(),
        NodeId::Client(c) => format!("client {c}"),
    }
}

fn link_fault_label(fault: LinkFault) -> Msg {
    match fault {
        LinkFault::Cut => Msg::new("cut"),
        LinkFault::Delay(d) => Msg::new("delayed {ms} ms").with("ms", d.as_millis()),
        LinkFault::Drop { one_in } => Msg::new("dropping 1 request in {n}").with("n", one_in),
    }
}

/// The same happening, learnt from the engine and inferred by comparing two views of an
/// external cluster, reads the same on the timeline.
#[cfg(test)]
mod same_sentence_from_both_sources {
    use super::*;
    use crate::engine::TopicPartition;
    use crate::remote::source::diff;
    use crate::view::{BrokerId, ClusterView, PartitionRow, ReplicaRole, ReplicaRow, Severity, SourceKind};

    fn row(leader: Option<BrokerId>, epoch: i32, isr: &[BrokerId]) -> PartitionRow {
        PartitionRow {
            topic: "orders".into(),
            partition: 0,
            leader,
            leader_epoch: epoch,
            replicas: [0, 1, 2]
                .iter()
                .map(|&broker| ReplicaRow {
                    broker,
                    role: ReplicaRole::InSync,
                    log_end_offset: None,
                    log_start_offset: None,
                    high_watermark: None,
                    epochs: Default::default(),
                    size_bytes: None,
                    caught_up_ms_ago: None,
                })
                .collect(),
            isr: isr.to_vec(),
            preferred_leader: 0,
            high_watermark: None,
            log_start_offset: None,
            under_replicated: isr.len() < 3,
            min_insync_replicas: None,
            adding: Vec::new(),
            removing: Vec::new(),
            changed_at: None,
        }
    }

    /// What an external source says going from partition `old` to `new`.
    fn remote(old: PartitionRow, new: PartitionRow) -> Vec<Line> {
        let mut before = ClusterView::empty("c", SourceKind::External);
        before.partitions = vec![old];
        let mut after = before.clone();
        after.partitions = vec![new];
        diff(&before, &after)
    }

    fn tp() -> TopicPartition {
        TopicPartition::new("orders", 0)
    }

    /// The controller's reason for an ISR shrink becomes the view's words: the fenced
    /// broker's number stays out of the catalogue's id.
    #[test]
    fn a_shrink_because_of_a_fence_is_said_as_the_fence() {
        let line = describe(&EventKind::IsrShrunk {
            tp: tp(),
            removed: vec![1],
            isr: vec![0, 2],
            reason: "broker 1 fenced: missed heartbeats for the session timeout".into(),
        });
        assert_eq!(
            line.text(),
            "ISR orders-0 shrank: -[1] -> [0,2] (broker 1 fenced: missed heartbeats for the session timeout)"
        );
        assert_eq!(
            crate::view::lang::Lang::get(Some("zh")).say(&line.msg),
            "orders-0 的 ISR 收缩：-[1] → [0,2]（broker 1 被隔离：会话超时内没有心跳）"
        );
        let shutdown = describe(&EventKind::IsrShrunk {
            tp: tp(),
            removed: vec![1],
            isr: vec![0, 2],
            reason: "broker 1 controlled shutdown".into(),
        });
        assert_eq!(shutdown.msg.args.last().map(|(n, _)| *n), Some("reason"));
        assert_eq!(
            crate::view::lang::Lang::get(Some("zh")).say(&shutdown.msg),
            "orders-0 的 ISR 收缩：-[1] → [0,2]（broker 1 受控关闭）"
        );
    }

    #[test]
    fn a_preferred_leader_election() {
        let embedded = describe(&EventKind::LeaderElected {
            tp: tp(),
            old: Some(1),
            new: 0,
            leader_epoch: 6,
            reason: ElectionReason::Preferred,
            isr: vec![0, 1, 2],
        });
        assert_eq!(
            (embedded.severity, embedded.text()),
            (
                Severity::Info,
                "leader orders-0: 1 -> 0, epoch 6 (preferred leader)".to_string()
            )
        );
        assert_eq!(
            remote(row(Some(1), 5, &[0, 1, 2]), row(Some(0), 6, &[0, 1, 2])),
            vec![embedded]
        );
    }

    #[test]
    fn a_partition_that_goes_offline_and_comes_back() {
        let offline = describe(&EventKind::PartitionOffline { tp: tp(), isr: vec![1] });
        assert_eq!(remote(row(Some(1), 4, &[1]), row(None, 4, &[1])), vec![offline]);
        let back = describe(&EventKind::LeaderElected {
            tp: tp(),
            old: None,
            new: 1,
            leader_epoch: 5,
            reason: ElectionReason::ReplicaReturned,
            isr: vec![1],
        });
        assert_eq!(remote(row(None, 4, &[1]), row(Some(1), 5, &[1])), vec![back]);
    }

    #[test]
    fn an_isr_shrink_and_expansion() {
        let reason = "follower fell behind by more than replica.lag.time.max.ms";
        let embedded = describe(&EventKind::IsrShrunk {
            tp: tp(),
            removed: vec![1],
            isr: vec![0, 2],
            reason: reason.into(),
        });
        let inferred = remote(row(Some(0), 4, &[0, 1, 2]), row(Some(0), 4, &[0, 2]));
        assert_eq!(inferred.len(), 1);
        // An external cluster does not tell why; the rest of the sentence is the same.
        assert_eq!(embedded.severity, inferred[0].severity);
        assert_eq!(embedded.text(), format!("{} ({reason})", inferred[0].text()));
        let expanded = describe(&EventKind::IsrExpanded {
            tp: tp(),
            added: vec![1],
            isr: vec![0, 2, 1],
        });
        assert_eq!(
            remote(row(Some(0), 4, &[0, 2]), row(Some(0), 4, &[0, 2, 1])),
            vec![expanded]
        );
    }
}
