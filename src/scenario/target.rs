//! Brokers named by their role in the cluster as it is now: a scenario says "kill the
//! leader of orders-0", not "kill broker 1", so the same story holds whichever broker the
//! controller happened to pick. A role resolves against a [`ClusterView`] when its step
//! starts; `bind` keeps the answer under a name for later steps ("restart the victim").

use std::collections::BTreeMap;

use crate::view::{BrokerId, ClusterView, PartitionRow};

/// The roles a scenario can name.
pub const ROLES: &str = "a broker id, a bound name, \"controller\", \"leader of T-P\", \
\"follower of T-P\", \"out-of-sync replica of T-P\", \"preferred leader of T-P\" or \
\"coordinator of GROUP\"";

/// `"orders-0"` as (topic, partition); topics may contain dashes.
pub fn parse_partition(text: &str) -> Option<(String, i32)> {
    let (topic, partition) = text.rsplit_once('-')?;
    let partition = partition.parse().ok()?;
    (!topic.is_empty()).then(|| (topic.to_string(), partition))
}

/// The partition a scenario names as "topic-N", in `view`.
pub(super) fn partition<'a>(view: &'a ClusterView, text: &str) -> Result<&'a PartitionRow, String> {
    let (topic, number) = parse_partition(text).ok_or_else(|| format!("\"{text}\" is not a partition (topic-N)"))?;
    view.partitions
        .iter()
        .find(|p| p.topic == topic && p.partition == number)
        .ok_or_else(|| format!("no partition {text}"))
}

/// The broker a TOML value names: a number, a name bound earlier, or a role.
pub fn resolve(
    value: &toml::Value,
    view: &ClusterView,
    bound: &BTreeMap<String, BrokerId>,
) -> Result<BrokerId, String> {
    match value {
        toml::Value::Integer(n) => BrokerId::try_from(*n).map_err(|_| format!("{n} is not a broker id")),
        toml::Value::String(s) => resolve_text(s, view, bound),
        other => Err(format!("{other} names no broker: use {ROLES}")),
    }
}

/// A role as written, before it meets a cluster: what [`resolve_text`] resolves and what
/// a file is checked against when it loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role<'a> {
    Id(BrokerId),
    Controller,
    LeaderOf(&'a str),
    PreferredLeaderOf(&'a str),
    FollowerOf(&'a str),
    OutOfSyncReplicaOf(&'a str),
    CoordinatorOf(&'a str),
    /// Anything else: a name bound by an earlier `bind`, or a mistake.
    Name(&'a str),
}

impl<'a> Role<'a> {
    /// The partition ("topic-N") the role names, if it names one.
    pub fn partition(&self) -> Option<&'a str> {
        match *self {
            Role::LeaderOf(p) | Role::PreferredLeaderOf(p) | Role::FollowerOf(p) | Role::OutOfSyncReplicaOf(p) => {
                Some(p)
            }
            _ => None,
        }
    }
}

/// Reads a role's text ("the leader of orders-0", "2", "victim").
pub fn parse_role(text: &str) -> Role<'_> {
    let text = text.trim();
    if let Ok(id) = text.parse::<BrokerId>() {
        return Role::Id(id);
    }
    let bare = text.strip_prefix("the ").unwrap_or(text);
    let after = |prefixes: &[&str]| prefixes.iter().find_map(|p| bare.strip_prefix(p));
    if bare == "controller" {
        Role::Controller
    } else if let Some(group) = after(&["coordinator of "]) {
        Role::CoordinatorOf(group)
    } else if let Some(p) = after(&["leader of "]) {
        Role::LeaderOf(p)
    } else if let Some(p) = after(&["preferred leader of "]) {
        Role::PreferredLeaderOf(p)
    } else if let Some(p) = after(&["follower of ", "a follower of "]) {
        Role::FollowerOf(p)
    } else if let Some(p) = after(&["out-of-sync replica of ", "an out-of-sync replica of "]) {
        Role::OutOfSyncReplicaOf(p)
    } else {
        Role::Name(text)
    }
}

pub fn resolve_text(text: &str, view: &ClusterView, bound: &BTreeMap<String, BrokerId>) -> Result<BrokerId, String> {
    if let Some(id) = bound.get(text.trim()) {
        return Ok(*id);
    }
    match parse_role(text) {
        Role::Id(id) => Ok(id),
        Role::Controller => view.controller.ok_or_else(|| "there is no controller now".to_string()),
        Role::CoordinatorOf(group) => view
            .groups
            .iter()
            .find(|g| g.group_id == group)
            .map(|g| g.coordinator)
            .ok_or_else(|| format!("no group {group}")),
        Role::LeaderOf(p) => {
            let row = partition(view, p)?;
            row.leader.ok_or_else(|| format!("{p} has no leader now"))
        }
        Role::PreferredLeaderOf(p) => Ok(partition(view, p)?.preferred_leader),
        Role::FollowerOf(p) => {
            let row = partition(view, p)?;
            let followers = || row.replicas.iter().filter(|r| Some(r.broker) != row.leader);
            followers()
                .find(|r| row.isr.contains(&r.broker))
                .or_else(|| followers().next())
                .map(|r| r.broker)
                .ok_or_else(|| format!("{p} has no follower"))
        }
        Role::OutOfSyncReplicaOf(p) => {
            let row = partition(view, p)?;
            row.replicas
                .iter()
                .find(|r| !row.isr.contains(&r.broker))
                .map(|r| r.broker)
                .ok_or_else(|| format!("every replica of {p} is in sync"))
        }
        Role::Name(text) => Err(format!("\"{text}\" names no broker: use {ROLES}")),
    }
}

/// The fields of an action table that name a broker.
pub const BROKER_FIELDS: [&str; 3] = ["broker", "a", "b"];

/// An action table with its broker fields resolved to ids.
pub fn resolve_action(
    table: &toml::Table,
    view: &ClusterView,
    bound: &BTreeMap<String, BrokerId>,
) -> Result<toml::Table, String> {
    let mut out = table.clone();
    for field in BROKER_FIELDS {
        if let Some(value) = out.get_mut(field)
            && value.is_str()
        {
            *value = toml::Value::Integer(i64::from(resolve(value, view, bound)?));
        }
    }
    Ok(out)
}

/// Replaces `{name}` in a caption with the broker bound to it.
pub fn fill(text: &str, bound: &BTreeMap<String, BrokerId>) -> String {
    let mut out = text.to_string();
    for (name, id) in bound {
        out = out.replace(&format!("{{{name}}}"), &id.to_string());
    }
    out
}

/// The placeholders a caption may use besides bound names, filled from the cluster as the
/// step starts, so a caption's timings are the setup's, not a number written by hand.
pub const SETUP_PLACEHOLDERS: &[(&str, &str)] = &[
    ("session_timeout", "broker.session.timeout.ms, as \"6000 ms\""),
    ("replica_lag_max", "replica.lag.time.max.ms, as \"2000 ms\""),
    ("controller", "the broker hosting the controller"),
];

/// [`fill`], then the setup's placeholders from `view` (a number and its unit are joined by
/// a non-breaking space: a wrapped caption never parts them).
pub fn fill_all(text: &str, bound: &BTreeMap<String, BrokerId>, view: &ClusterView) -> String {
    let mut out = fill(text, bound);
    if let Some(c) = &view.controls {
        out = out.replace("{session_timeout}", &format!("{}\u{a0}ms", c.broker_session_timeout_ms));
        out = out.replace("{replica_lag_max}", &format!("{}\u{a0}ms", c.replica_lag_time_max_ms));
    }
    if let Some(id) = view.controller {
        out = out.replace("{controller}", &id.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{ReplicaRole, ReplicaRow, SourceKind};

    fn view() -> ClusterView {
        let mut v = ClusterView::empty("t", SourceKind::Embedded);
        v.controller = Some(2);
        v.partitions = vec![PartitionRow {
            topic: "my-orders".into(),
            partition: 0,
            leader: Some(1),
            leader_epoch: 3,
            replicas: [
                (0, ReplicaRole::OutOfSync),
                (1, ReplicaRole::Leader),
                (2, ReplicaRole::InSync),
            ]
            .into_iter()
            .map(|(broker, role)| ReplicaRow {
                broker,
                role,
                log_end_offset: None,
                log_start_offset: None,
                high_watermark: None,
                epochs: Default::default(),
                size_bytes: None,
                caught_up_ms_ago: None,
            })
            .collect(),
            isr: vec![1, 2],
            preferred_leader: 0,
            high_watermark: None,
            last_stable_offset: None,
            log_start_offset: None,
            under_replicated: true,
            adding: Vec::new(),
            removing: Vec::new(),
            changed_at: None,
            min_insync_replicas: Some(2),
        }];
        v
    }

    #[test]
    fn roles_name_brokers_in_the_view_as_it_is() {
        let v = view();
        let bound = BTreeMap::from([("victim".to_string(), 7)]);
        let r = |t: &str| resolve_text(t, &v, &bound);
        assert_eq!(r("leader of my-orders-0"), Ok(1));
        assert_eq!(r("the leader of my-orders-0"), Ok(1));
        assert_eq!(r("follower of my-orders-0"), Ok(2), "the in-sync follower first");
        assert_eq!(r("out-of-sync replica of my-orders-0"), Ok(0));
        assert_eq!(r("preferred leader of my-orders-0"), Ok(0));
        assert_eq!(r("controller"), Ok(2));
        assert_eq!(r("victim"), Ok(7));
        assert_eq!(r("4"), Ok(4));
        assert!(r("leader of my-orders-9").is_err_and(|e| e.contains("no partition my-orders-9")));
        assert!(r("the janitor").is_err_and(|e| e.contains("names no broker")));
    }

    #[test]
    fn an_action_table_gets_its_broker_fields_resolved() {
        let v = view();
        let table: toml::Table =
            toml::from_str("action = \"set_link\"\na = \"leader of my-orders-0\"\nb = 0\nstate = \"cut\"")
                .unwrap_or_else(|e| panic!("{e}"));
        let out = resolve_action(&table, &v, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.get("a"), Some(&toml::Value::Integer(1)));
        assert_eq!(out.get("b"), Some(&toml::Value::Integer(0)));
        assert_eq!(
            fill("broker {victim} died", &BTreeMap::from([("victim".into(), 1)])),
            "broker 1 died"
        );
    }
}
