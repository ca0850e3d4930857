//! Every sentence a command outcome shows the operator, success or refusal, made in one place
//! so the embedded and the external source answer the same command the same way. A source
//! runs the command; the sentence of what came of it is chosen here.

use super::BrokerId;
use super::words::count;

pub fn produced(topic: &str, partition: i32, offset: i64) -> String {
    format!("produced to {topic}-{partition} at offset {offset}")
}

pub fn broker_killed(broker: BrokerId, session_timeout_ms: u64) -> String {
    format!("broker {broker} killed; the controller fences it after {session_timeout_ms} ms without heartbeats")
}

/// A kill of the broker that hosted the active controller: the role moves first, then the
/// new controller fences the dead broker, so the fence comes later than the session alone.
pub fn controller_broker_killed(broker: BrokerId, failover_ms: u64, session_timeout_ms: u64) -> String {
    format!(
        "broker {broker} killed; it hosted the controller: another broker takes the role after \
         {failover_ms} ms, then fences broker {broker} once {session_timeout_ms} ms pass without heartbeats"
    )
}

pub fn broker_stopped(broker: BrokerId) -> String {
    format!("broker {broker} stopped after moving its leaderships away")
}

pub fn broker_starting(broker: BrokerId) -> String {
    format!("broker {broker} starting: it recovers its logs and catches up")
}

pub fn broker_paused(broker: BrokerId) -> String {
    format!("broker {broker} paused (frozen, like a long GC pause)")
}

pub fn broker_resumed(broker: BrokerId) -> String {
    format!("broker {broker} resumed")
}

pub fn topic_created(name: &str) -> String {
    format!("topic {name} created")
}

pub fn topic_deleted(name: &str) -> String {
    format!("topic {name} deleted")
}

pub fn offsets_reset(group: &str) -> String {
    format!("offsets of group {group} reset")
}

pub fn records_deleted(topic: &str, partition: i32, low_watermark: i64) -> String {
    format!("{topic}-{partition} now starts at offset {low_watermark}: the records before it are deleted")
}

/// DeleteRecords past the high watermark: Kafka answers OFFSET_OUT_OF_RANGE.
pub fn past_high_watermark(topic: &str, partition: i32, offset: i64) -> String {
    format!("OFFSET_OUT_OF_RANGE: {topic}-{partition} has no offset {offset} below its high watermark to delete up to")
}

pub fn partitions_created(topic: &str, count: i32) -> String {
    format!("topic {topic} now has {count} partitions")
}

pub fn group_deleted(group: &str) -> String {
    format!("group {group} deleted with its committed offsets")
}

/// Why a group's offsets were not reset: Kafka's coordinator refuses a commit from outside
/// the generation while the group has members.
pub fn reset_refused_active(group: &str) -> String {
    format!("group {group} has active members: stop its consumers before resetting its offsets")
}

/// Why a group was not deleted (NON_EMPTY_GROUP).
pub fn delete_refused_active(group: &str) -> String {
    format!("group {group} has active members: stop its consumers before deleting it")
}

pub fn no_such_group(group: &str) -> String {
    format!("group {group} does not exist")
}

pub const DEMO_PAUSED: &str = "demo workload paused";
pub const DEMO_RESUMED: &str = "demo workload resumed";

/// How one partition's preferred-leader election ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elected {
    /// The preferred replica took over.
    Moved,
    /// The preferred replica already led (Kafka's ELECTION_NOT_NEEDED).
    Already,
    /// It could not move; the text names the partition and why.
    Failed(String),
}

/// The sentence of a preferred-leader election over several partitions.
pub fn preferred_election(results: impl IntoIterator<Item = Elected>) -> String {
    let (mut moved, mut already, mut failed) = (0, 0, 0);
    let mut first_failure = None;
    for result in results {
        match result {
            Elected::Moved => moved += 1,
            Elected::Already => already += 1,
            Elected::Failed(why) => {
                failed += 1;
                first_failure.get_or_insert(why);
            }
        }
    }
    let why = first_failure.map_or(String::new(), |w| format!(" ({w})"));
    format!(
        "preferred-leader election: {} moved, {} could not move{why}, {} already led by their preferred replica",
        count(moved, "leader"),
        count(failed, "partition"),
        count(already, "partition")
    )
}

/// The sentence of a reassignment's start or cancel: how many partitions the controller
/// took, and the first refusal.
pub fn reassignment(cancel: bool, taken: usize, refused: &[String]) -> String {
    let what = if cancel {
        format!("{} cancelled", count(taken, "move"))
    } else {
        format!("{} moving", count(taken, "partition"))
    };
    match refused.first() {
        None => format!("reassignment: {what}"),
        Some(first) => format!(
            "reassignment: {what}, {} refused ({first})",
            count(refused.len(), "partition")
        ),
    }
}

// The trainer's clock, links and live settings.

pub const CLOCK_FROZEN: &str =
    "clock frozen: no heartbeat is missed, no session expires, no follower falls behind; clients wait";
pub const ALREADY_FROZEN: &str = "the clock is already frozen";
pub const CLOCK_THAWED: &str = "clock running again: timers go on from where they stopped";
pub const NOT_FROZEN: &str = "the clock is not frozen";

pub fn held(on: bool, changed: bool) -> String {
    match (on, changed) {
        (true, true) => "held: the cluster's clock stands still until the next step".into(),
        (true, false) => "the clock was already frozen".into(),
        (false, true) => "the hold ends: the cluster's clock runs again".into(),
        (false, false) => "the cluster was not held".into(),
    }
}

pub fn slow_motion(factor: u32, changed: bool) -> String {
    match (factor, changed) {
        (1, true) => "clock back to real time".into(),
        (1, false) => "the clock already runs in real time".into(),
        (f, true) => format!("slow motion x{f}: every timeout and interval takes {f} times longer"),
        (f, false) => format!("the clock already runs at x{f}"),
    }
}

/// `state` as a link's state reads: "cut", "delayed 200 ms", "up".
pub fn link_set(a: BrokerId, b: BrokerId, state: &str) -> String {
    format!("link {a}-{b} {state}")
}

pub fn broker_isolated(broker: BrokerId, hosts_controller: bool, failover_ms: u64) -> String {
    let controller = if hosts_controller {
        format!("; it hosts the controller, which moves to another broker after {failover_ms} ms")
    } else {
        String::new()
    };
    format!("broker {broker} cut off from the other brokers and the controller; clients still reach it{controller}")
}

pub fn links_healed(any: bool) -> String {
    if any {
        "every link healed".into()
    } else {
        "every link was already up".into()
    }
}

/// A live setting: its Kafka config name, the topic (`None`: the cluster's) and the value.
pub fn setting_set(config: &str, topic: Option<&str>, value: &str) -> String {
    match topic {
        Some(t) => format!("{config} of {t} set to {value}"),
        None => format!("{config} set to {value}"),
    }
}

/// A config removed: it follows its default again.
pub fn setting_removed(config: &str, topic: Option<&str>) -> String {
    match topic {
        Some(t) => format!("{config} of {t} back to its default"),
        None => format!("{config} back to its default"),
    }
}

/// What an AlterConfigs did, in one sentence.
pub fn configs_altered(topic: Option<&str>, set: &[(String, String)], delete: &[String]) -> String {
    match (set, delete) {
        ([(k, v)], []) => setting_set(k, topic, v),
        ([], [k]) => setting_removed(k, topic),
        _ => match topic {
            Some(t) => format!("{} configs of {t} changed", set.len() + delete.len()),
            None => format!("{} cluster configs changed", set.len() + delete.len()),
        },
    }
}

// Refusals and failures.

/// Why a read-only source refuses every command that changes the cluster.
pub const READ_ONLY: &str = "read-only: this console changes nothing in the cluster (--read-only)";

/// Why the console cannot kill, stop or start a broker of an external cluster.
pub const NO_BROKER_CONTROL: &str = "not available on an external cluster: Kafka has no API to stop or start a broker";

/// Why the console cannot add or decommission a broker of an external cluster.
pub const NO_BROKER_MEMBERSHIP: &str = "not available on an external cluster: Kafka has no API to start a broker; :reassign drain N moves the replicas off one";

/// A broker added to the embedded cluster.
pub fn broker_added(broker: BrokerId) -> String {
    format!(
        "broker {broker} added: it registers with the controller; partitions come to it by reassignment or new topics"
    )
}

/// A decommission began.
pub fn decommission_started(broker: BrokerId, replicas: usize) -> String {
    format!(
        "broker {broker} decommissioning: {replicas} replicas move to the other brokers, then it shuts down and leaves the cluster"
    )
}

pub const NO_DEMO_EXTERNAL: &str = "an external cluster has no demo workload";

/// A trainer's control (the clock, links, workload, live settings) asked of an external
/// cluster.
pub fn embedded_only(command: &super::Command) -> String {
    format!("{command}: only the embedded cluster can do this")
}
/// Why a trainer's control (freeze, slow motion, live settings, the workload's acks) is not
/// offered: the source shows no clock or settings to change.
pub const NO_CONTROLS: &str = "only the embedded cluster has a clock and live settings to change";
/// The console's words when the source has no demo to pause.
pub const NO_DEMO_WORKLOAD: &str = "this cluster has no demo workload";
pub const NO_DEMO: &str = "this console runs without the demo workload (--no-demo)";
pub const DEMO_NOT_RUNNING: &str = "the demo workload is not running";
pub const DEMO_ALREADY_RUNNING: &str = "the demo workload is already running";

pub fn no_such_topic(topic: &str) -> String {
    format!("topic {topic} does not exist")
}

pub fn no_such_partition(topic: &str, partition: i32) -> String {
    format!("topic {topic} has no partition {partition}")
}

pub fn no_partitions(topic: &str) -> String {
    format!("topic {topic} has no partitions")
}

/// A scenario key pressed when no scenario runs.
pub const NO_SCENARIO: &str = "no scenario is running: start one with kdeck scenario run NAME (kdeck scenario list)";

/// A workload command asked of a cluster that runs neither the demo nor a scenario.
pub const NO_WORKLOAD: &str =
    "only the demo's or a scenario's producers and groups take this (this console runs with --no-demo)";

pub fn producer_acks(acks: i16) -> String {
    format!("the producers now send with acks={}", super::source::acks_label(acks))
}

pub fn member_added(group: &str, members: usize) -> String {
    format!(
        "a consumer joins {group} ({}): the group rebalances",
        count(members, "member")
    )
}

pub fn member_removed(group: &str, members: usize) -> String {
    format!(
        "a consumer leaves {group} ({} left): the group rebalances",
        count(members, "member")
    )
}

pub fn group_paused(group: &str) -> String {
    format!("the consumers of {group} stop polling: lag builds")
}

pub fn group_resumed(group: &str) -> String {
    format!("the consumers of {group} poll again: lag drains")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_election_counts_what_moved_failed_and_needed_nothing() {
        assert_eq!(
            preferred_election([Elected::Moved, Elected::Already, Elected::Already]),
            "preferred-leader election: 1 leader moved, 0 partitions could not move, 2 partitions already led by their preferred replica"
        );
        assert_eq!(
            preferred_election([
                Elected::Failed("orders-1: PREFERRED_LEADER_NOT_AVAILABLE".into()),
                Elected::Moved,
                Elected::Failed("orders-2: PREFERRED_LEADER_NOT_AVAILABLE".into()),
            ]),
            "preferred-leader election: 1 leader moved, 2 partitions could not move (orders-1: PREFERRED_LEADER_NOT_AVAILABLE), 0 partitions already led by their preferred replica"
        );
    }

    #[test]
    fn broker_commands_say_what_happens_next() {
        assert_eq!(
            broker_killed(2, 6_000),
            "broker 2 killed; the controller fences it after 6000 ms without heartbeats"
        );
        assert_eq!(broker_stopped(1), "broker 1 stopped after moving its leaderships away");
    }
}
