//! Events of an external cluster, derived by comparing two successive views: Kafka tells a
//! client what the cluster looks like, not what happened, so "leader moved" or "ISR shrank"
//! is whatever differs between two refreshes. The sentences are the timeline's
//! ([`crate::view::timeline`]), the same the embedded cluster's events read as; what a
//! comparison cannot know (a broker's epoch, why an ISR shrank) is left out.

use std::collections::{BTreeMap, BTreeSet};

use crate::view::timeline::{self, ElectionCause, Line};
use crate::view::{BrokerId, BrokerStatus, ClusterView, EventClass, GroupRow, PartitionRow};

/// The lines of a comparison, each with the part it plays in an incident.
#[derive(Default)]
pub struct Out(pub Vec<(Line, EventClass)>);

impl Out {
    fn push(&mut self, line: Line) {
        self.0.push((line, EventClass::Other));
    }

    fn push_as(&mut self, line: Line, class: EventClass) {
        self.0.push((line, class));
    }
}

/// What changed from `old` to `new`, one line each, in the order an operator reads a story:
/// brokers and the controller first, then topics, partitions and groups.
pub fn diff(old: &ClusterView, new: &ClusterView) -> Vec<Line> {
    diff_classified(old, new).into_iter().map(|(line, _)| line).collect()
}

/// [`diff`] with each line's part in an incident: a broker leaving the metadata opens one.
pub fn diff_classified(old: &ClusterView, new: &ClusterView) -> Vec<(Line, EventClass)> {
    let mut out = Out::default();
    brokers(old, new, &mut out);
    match (old.controller, new.controller) {
        (Some(from), Some(to)) if from != to => out.push(timeline::controller_moved(Some(from), to)),
        (None, Some(to)) => out.push(timeline::controller_moved(None, to)),
        (Some(from), None) => out.push(timeline::no_controller(from)),
        _ => {}
    }
    let old_topics: BTreeMap<&str, _> = old.topics.iter().map(|t| (t.name.as_str(), t)).collect();
    let new_topics: BTreeMap<&str, _> = new.topics.iter().map(|t| (t.name.as_str(), t)).collect();
    for (name, t) in &new_topics {
        if !old_topics.contains_key(name) {
            out.push(timeline::topic_created(name, t.partitions, t.replication_factor));
        }
    }
    for name in old_topics.keys() {
        if !new_topics.contains_key(name) {
            out.push(timeline::topic_deleted(name));
        }
    }
    let old_partitions: BTreeMap<(&str, i32), &PartitionRow> = old
        .partitions
        .iter()
        .map(|p| ((p.topic.as_str(), p.partition), p))
        .collect();
    for p in &new.partitions {
        if let Some(before) = old_partitions.get(&(p.topic.as_str(), p.partition)) {
            partition(before, p, &mut out);
        }
    }
    let old_groups: BTreeMap<&str, &GroupRow> = old.groups.iter().map(|g| (g.group_id.as_str(), g)).collect();
    let new_groups: BTreeMap<&str, &GroupRow> = new.groups.iter().map(|g| (g.group_id.as_str(), g)).collect();
    for (id, g) in &new_groups {
        match old_groups.get(id) {
            Some(before) => group(before, g, &mut out),
            None => out.push(timeline::group_appeared(id, &g.state, g.members.len())),
        }
    }
    for id in old_groups.keys() {
        if !new_groups.contains_key(id) {
            out.push(timeline::group_gone(id));
        }
    }
    out.0
}

fn brokers(old: &ClusterView, new: &ClusterView, out: &mut Out) {
    let before: BTreeMap<BrokerId, BrokerStatus> = old.brokers.iter().map(|b| (b.id, b.status)).collect();
    for b in &new.brokers {
        let was = before.get(&b.id).copied();
        if was == Some(b.status) {
            continue;
        }
        let (line, class) = match (was, b.status) {
            (None, BrokerStatus::Online) => (timeline::broker_joined(b.id), EventClass::Other),
            (_, BrokerStatus::Down) => (
                timeline::broker_down(b.id, timeline::GONE_FROM_METADATA),
                EventClass::Fault(b.id),
            ),
            (_, BrokerStatus::Unreachable) => (timeline::broker_unreachable(b.id), EventClass::Fault(b.id)),
            // Kafka's metadata lists only brokers it has not fenced.
            (Some(BrokerStatus::Down), BrokerStatus::Online) => {
                (timeline::broker_unfenced(b.id), EventClass::Recovered(b.id))
            }
            (Some(BrokerStatus::Unreachable), BrokerStatus::Online) => {
                (timeline::broker_reachable_again(b.id), EventClass::Recovered(b.id))
            }
            (_, status) => (timeline::broker_status(b.id, status), EventClass::Other),
        };
        out.push_as(line, class);
    }
}

fn partition(old: &PartitionRow, new: &PartitionRow, out: &mut Out) {
    let (topic, number) = (new.topic.as_str(), new.partition);
    match (old.leader, new.leader) {
        (Some(_), None) => out.push_as(
            timeline::partition_offline(topic, number, &new.isr),
            EventClass::Offline {
                partition: timeline::partition_name(topic, number),
                isr: new.isr.clone(),
            },
        ),
        (from, Some(to)) if from != Some(to) => {
            // What a comparison can tell of the cause: a partition without a leader got back
            // one of its last in-sync replicas, or the preferred replica took over.
            let cause = if from.is_none() {
                old.isr.contains(&to).then_some(ElectionCause::ReplicaReturned)
            } else {
                (to == new.preferred_leader).then_some(ElectionCause::Preferred)
            };
            out.push_as(
                timeline::leader_elected(topic, number, from, to, new.leader_epoch, cause),
                EventClass::LeaderMoved {
                    partition: timeline::partition_name(topic, number),
                    from,
                    to,
                },
            );
        }
        _ => {}
    }
    let was: BTreeSet<BrokerId> = old.isr.iter().copied().collect();
    let now: BTreeSet<BrokerId> = new.isr.iter().copied().collect();
    let removed: Vec<BrokerId> = was.difference(&now).copied().collect();
    let added: Vec<BrokerId> = now.difference(&was).copied().collect();
    if !removed.is_empty() {
        out.push_as(
            timeline::isr_shrunk(topic, number, &removed, &new.isr, None),
            EventClass::IsrShrunk {
                partition: timeline::partition_name(topic, number),
                removed,
            },
        );
    }
    if !added.is_empty() {
        out.push_as(
            timeline::isr_expanded(topic, number, &added, &new.isr),
            EventClass::IsrExpanded {
                partition: timeline::partition_name(topic, number),
                added,
            },
        );
    }
}

fn group(old: &GroupRow, new: &GroupRow, out: &mut Out) {
    let id = &new.group_id;
    if old.state != new.state {
        out.push(timeline::group_state_changed(id, &old.state, &new.state));
    }
    let members = |g: &GroupRow| g.members.iter().map(|m| m.member_id.clone()).collect::<BTreeSet<_>>();
    let (before, after) = (members(old), members(new));
    if before != after {
        let joined = after.difference(&before).count();
        let left = before.difference(&after).count();
        // DescribeGroups does not carry the generation.
        out.push(timeline::group_rebalanced(
            id,
            None,
            after.len(),
            &format!("+{joined} -{left}"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{BrokerRow, MemberRow, ReplicaRole, ReplicaRow, Severity, SourceKind, Throughput, TopicRow};

    fn broker(id: BrokerId, status: BrokerStatus) -> BrokerRow {
        BrokerRow {
            id,
            status,
            is_controller: id == 0,
            leaders: 0,
            replicas: 0,
            throughput: Throughput::Messages { in_per_sec: 0.0 },
            address: None,
            disk_bytes: None,
            produce_history: Vec::new(),
            changed_at: None,
            lifecycle: None,
        }
    }

    fn partition(leader: Option<BrokerId>, epoch: i32, isr: &[BrokerId]) -> PartitionRow {
        PartitionRow {
            topic: "orders".into(),
            partition: 0,
            leader,
            leader_epoch: epoch,
            replicas: [0, 1, 2]
                .iter()
                .map(|&b| ReplicaRow {
                    broker: b,
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
            last_stable_offset: None,
            log_start_offset: None,
            under_replicated: isr.len() < 3,
            min_insync_replicas: None,
            adding: Vec::new(),
            removing: Vec::new(),
            changed_at: None,
        }
    }

    fn topic(name: &str) -> TopicRow {
        TopicRow {
            name: name.into(),
            internal: false,
            partitions: 1,
            replication_factor: 3,
            under_replicated: 0,
            offline: 0,
            messages: 0,
            size_bytes: None,
            messages_per_sec: 0.0,
            total_lag: None,
            retention: None,
            unclean_election: None,
        }
    }

    fn group(state: &str, members: &[&str]) -> GroupRow {
        GroupRow {
            group_id: "billing".into(),
            state: state.into(),
            protocol: "range".into(),
            generation: 0,
            coordinator: 0,
            members: members
                .iter()
                .map(|m| MemberRow {
                    member_id: (*m).into(),
                    instance_id: None,
                    client_id: String::new(),
                    host: String::new(),
                    assignment: Vec::new(),
                })
                .collect(),
            offsets: Vec::new(),
            total_lag: 0,
            lag_history: Vec::new(),
        }
    }

    fn view() -> ClusterView {
        let mut v = ClusterView::empty("c", SourceKind::External);
        v.controller = Some(0);
        v.brokers = vec![
            broker(0, BrokerStatus::Online),
            broker(1, BrokerStatus::Online),
            broker(2, BrokerStatus::Online),
        ];
        v.topics = vec![topic("orders")];
        v.partitions = vec![partition(Some(1), 4, &[0, 1, 2])];
        v.groups = vec![group("Stable", &["a", "b"])];
        v
    }

    fn texts(old: &ClusterView, new: &ClusterView) -> Vec<String> {
        diff(old, new).into_iter().map(|l| l.text()).collect()
    }

    #[test]
    fn the_same_view_twice_tells_nothing() {
        assert!(diff(&view(), &view()).is_empty());
    }

    #[test]
    fn a_broker_gone_from_metadata_moves_its_leaderships_and_shrinks_the_isr() {
        let old = view();
        let mut new = view();
        new.brokers[1].status = BrokerStatus::Down;
        new.controller = Some(2);
        new.partitions = vec![partition(Some(2), 5, &[0, 2])];
        let events = diff(&old, &new);
        let texts: Vec<String> = events.iter().map(Line::text).collect();
        assert_eq!(
            texts,
            vec![
                "broker 1 down: gone from the cluster's metadata",
                "controller moved: broker 0 -> 2",
                "leader orders-0: 1 -> 2, epoch 5",
                "ISR orders-0 shrank: -[1] -> [0,2]",
            ]
        );
        assert!(events.iter().all(|l| l.severity == Severity::Warn));
    }

    #[test]
    fn a_broker_leaving_and_returning_is_one_incident_externally_too() {
        let old = view();
        let mut gone = view();
        gone.brokers[1].status = BrokerStatus::Down;
        gone.partitions = vec![partition(Some(2), 5, &[0, 2])];
        let back = {
            let mut v = gone.clone();
            v.brokers[1].status = BrokerStatus::Online;
            v.partitions = vec![partition(Some(2), 5, &[0, 2, 1])];
            v
        };
        let mut timeline = crate::view::timeline::Timeline::new(100);
        let at = |s: i64| chrono::DateTime::<chrono::Utc>::from_timestamp(1_700_000_000 + s, 0).unwrap_or_default();
        for (line, class) in diff_classified(&old, &gone) {
            timeline.say_as(at(0), line, class);
        }
        for (line, class) in diff_classified(&gone, &back) {
            timeline.say_as(at(20), line, class);
        }
        let incidents = crate::view::timeline::incidents(&timeline.events());
        assert_eq!(incidents.len(), 1, "{incidents:?}");
        assert_eq!(
            incidents[0].summary,
            "broker 1 down: gone from the cluster's metadata -> 1 leader moved, 1 ISR shrank -> back after 20.0 s, 1 ISR rejoined"
        );
    }

    #[test]
    fn a_returning_broker_expands_the_isr_and_the_preferred_election_is_info() {
        let mut old = view();
        old.brokers[0].status = BrokerStatus::Down;
        old.partitions = vec![partition(Some(1), 5, &[1, 2])];
        let mut new = view();
        new.partitions = vec![partition(Some(0), 6, &[1, 2, 0])];
        let events: Vec<(Severity, String)> = diff(&old, &new).iter().map(|l| (l.severity, l.text())).collect();
        assert_eq!(
            events,
            vec![
                (Severity::Info, "broker 0 unfenced: back in service".to_string()),
                (
                    Severity::Info,
                    "leader orders-0: 1 -> 0, epoch 6 (preferred leader)".to_string()
                ),
                (
                    Severity::Info,
                    "ISR orders-0 expanded: +[0] -> [1,2,0] (caught up)".to_string()
                ),
            ]
        );
    }

    #[test]
    fn a_partition_without_leader_is_offline_then_online() {
        let old = view();
        let mut new = view();
        new.partitions = vec![partition(None, 4, &[1])];
        let events = diff(&old, &new);
        assert_eq!(
            (events[0].severity, events[0].text()),
            (
                Severity::Error,
                "orders-0 OFFLINE: no live in-sync replica (ISR [1])".to_string()
            )
        );
        assert_eq!(
            texts(&new, &old)[0],
            "leader orders-0: none -> 1, epoch 4 (an in-sync replica returned)",
            "and back"
        );
    }

    #[test]
    fn unreachable_brokers_topics_and_groups_are_told() {
        let old = view();
        let mut new = view();
        new.brokers[2].status = BrokerStatus::Unreachable;
        new.topics.push(topic("clicks"));
        new.groups = vec![group("PreparingRebalance", &["a", "c", "d"])];
        assert_eq!(
            texts(&old, &new),
            vec![
                "broker 2 unreachable: kdeck cannot connect to it",
                "topic clicks created: 1 partitions, RF 3",
                "group billing: Stable -> PreparingRebalance",
                "group billing rebalanced: 3 members (+2 -1)",
            ]
        );
        let mut gone = view();
        gone.topics.clear();
        gone.partitions.clear();
        gone.groups.clear();
        assert_eq!(
            texts(&old, &gone),
            vec!["topic orders deleted", "group billing is gone"]
        );
    }
}
