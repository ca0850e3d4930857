//! `kdeck groups [list|describe|reset-offsets|delete|delete-offsets]`, as
//! kafka-consumer-groups.sh does them.

use anyhow::{Result, anyhow, bail};

use super::Output;
use super::topics::table;
use crate::cli::{GroupsAction, GroupsArgs, ResetOffsetsArgs, TopicPartitions};
use crate::kafka::reset;
use crate::remote::ops::{self, GroupDescription, OffsetSpec};
use crate::remote::{KafkaClient, RemoteError};

const UNKNOWN_MEMBER_ID: i16 = 25;
const NON_EMPTY_GROUP: i16 = 68;
const GROUP_ID_NOT_FOUND: i16 = 69;
const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;

pub(crate) async fn run(args: &GroupsArgs, client: &KafkaClient, out: &mut Output) -> Result<()> {
    match &args.action {
        None | Some(GroupsAction::List) => list(client, out).await,
        Some(GroupsAction::Describe { groups }) => describe(client, groups, out).await,
        Some(GroupsAction::ResetOffsets(reset)) => reset_offsets(client, reset, out).await,
        Some(GroupsAction::Delete { groups }) => delete(client, groups).await,
        Some(GroupsAction::DeleteOffsets { group, topic }) => delete_offsets(client, group, topic, out).await,
    }
}

fn code(error: &RemoteError) -> Option<i16> {
    match error {
        RemoteError::Kafka { code, .. } => Some(*code),
        _ => None,
    }
}

/// The partitions `--topic` names, in the order given and once each: every partition of a
/// bare TOPIC, the listed ones of TOPIC:P,P... A topic or partition the cluster does not
/// have is an error.
async fn partitions_of(client: &KafkaClient, topics: &[TopicPartitions]) -> Result<Vec<(String, i32)>> {
    let metadata = client.refresh_metadata().await?;
    let mut out: Vec<(String, i32)> = Vec::new();
    for wanted in topics {
        let topic = metadata
            .topic(&wanted.topic)
            .filter(|t| t.error == 0)
            .ok_or_else(|| anyhow!("topic {} does not exist", wanted.topic))?;
        let partitions: Vec<i32> = match &wanted.partitions {
            None => topic.partitions.iter().map(|p| p.partition).collect(),
            Some(list) => {
                if let Some(p) = list
                    .iter()
                    .find(|p| !topic.partitions.iter().any(|m| m.partition == **p))
                {
                    bail!("topic {} has no partition {p}", wanted.topic);
                }
                list.clone()
            }
        };
        for p in partitions {
            let tp = (wanted.topic.clone(), p);
            if !out.contains(&tp) {
                out.push(tp);
            }
        }
    }
    Ok(out)
}

/// The group's state as its coordinator describes it ("Dead" when it does not exist).
async fn state_of(client: &KafkaClient, group: &str) -> Result<String> {
    let described = ops::describe_groups(client, &[group.to_string()]).await?;
    Ok(described
        .into_iter()
        .find(|d| d.group_id == group)
        .map_or_else(|| "Dead".to_string(), |d| d.state))
}

/// kafka-consumer-groups.sh --reset-offsets: the plan as a table; committed with --execute.
async fn reset_offsets(client: &KafkaClient, args: &ResetOffsetsArgs, out: &mut Output) -> Result<()> {
    let group = args.group.as_str();
    if let Some(refusal) = reset::reset_refused(group, &state_of(client, group).await?) {
        bail!("{refusal}");
    }
    let partitions = if args.all_topics {
        ops::committed_offsets(client, group)
            .await?
            .into_iter()
            .map(|c| (c.topic, c.partition))
            .collect()
    } else {
        partitions_of(client, &args.topic).await?
    };
    if partitions.is_empty() {
        eprintln!("kdeck: group {group} has no committed offsets to reset");
    }
    let now_ms = chrono::Utc::now().timestamp_millis();
    let plan = ops::plan_offset_reset(client, group, &partitions, args.spec(), now_ms).await?;
    if args.execute && !plan.is_empty() {
        let offsets: Vec<(String, i32, i64)> = plan.iter().map(|p| (p.topic.clone(), p.partition, p.new)).collect();
        if let Err(error) = ops::commit_offsets(client, group, &offsets).await {
            if code(&error) == Some(UNKNOWN_MEMBER_ID) {
                // A member joined since the state was checked.
                let state = state_of(client, group).await.unwrap_or_else(|_| "not Empty".into());
                if let Some(refusal) = reset::reset_refused(group, &state) {
                    bail!("{refusal}");
                }
            }
            return Err(error.into());
        }
    }
    let mut rows = vec![["GROUP", "TOPIC", "PARTITION", "OLD-OFFSET", "NEW-OFFSET", "LAG-AFTER"].map(String::from)];
    rows.extend(plan.iter().map(|p| {
        [
            group.to_string(),
            p.topic.clone(),
            p.partition.to_string(),
            p.old.map_or("-".to_string(), |o| o.to_string()),
            p.new.to_string(),
            (p.log_end - p.new).max(0).to_string(),
        ]
    }));
    table(&rows, out)?;
    if !args.execute {
        eprintln!("kdeck: dry run, nothing committed: add --execute to commit these offsets");
    }
    Ok(())
}

/// kafka-consumer-groups.sh --delete: each group in turn; the failures are told and make the
/// command fail once all were tried.
async fn delete(client: &KafkaClient, groups: &[String]) -> Result<()> {
    let mut failed = 0;
    for group in groups {
        match ops::delete_group(client, group).await {
            Ok(()) => eprintln!("kdeck: deleted group {group}"),
            Err(error) => {
                failed += 1;
                match code(&error) {
                    Some(NON_EMPTY_GROUP) => eprintln!(
                        "kdeck: group {group} is not deleted: it has active members (NON_EMPTY_GROUP); stop its consumers first"
                    ),
                    Some(GROUP_ID_NOT_FOUND) => {
                        eprintln!("kdeck: group {group} is not deleted: it does not exist (GROUP_ID_NOT_FOUND)")
                    }
                    _ => eprintln!("kdeck: group {group} is not deleted: {error}"),
                }
            }
        }
    }
    if failed > 0 {
        bail!("{failed} of {} groups not deleted", groups.len());
    }
    Ok(())
}

/// kafka-consumer-groups.sh --delete-offsets: TOPIC PARTITION STATUS per partition.
async fn delete_offsets(client: &KafkaClient, group: &str, topics: &[TopicPartitions], out: &mut Output) -> Result<()> {
    let partitions = partitions_of(client, topics).await?;
    let outcome = match ops::delete_offsets(client, group, &partitions).await {
        Err(error) if code(&error) == Some(GROUP_ID_NOT_FOUND) => {
            bail!("group {group} does not exist (GROUP_ID_NOT_FOUND)")
        }
        Err(error) if code(&error) == Some(NON_EMPTY_GROUP) => {
            bail!("group {group} has active members and does not use the consumer protocol (NON_EMPTY_GROUP)")
        }
        other => other?,
    };
    let mut rows = vec![["TOPIC", "PARTITION", "STATUS"].map(String::from)];
    let mut subscribed = false;
    let mut failed = 0;
    for (topic, partition, error) in &outcome {
        let status = match error {
            None => "Successful".to_string(),
            Some(error) => {
                failed += 1;
                subscribed |= code(error) == Some(GROUP_SUBSCRIBED_TO_TOPIC);
                match error {
                    RemoteError::Kafka { name, .. } => name.clone(),
                    other => other.to_string(),
                }
            }
        };
        rows.push([topic.clone(), partition.to_string(), status]);
    }
    table(&rows, out)?;
    if subscribed {
        bail!("group {group} keeps the offsets of topics its active members consume (GROUP_SUBSCRIBED_TO_TOPIC)");
    }
    if failed > 0 {
        bail!("{failed} of {} offsets of group {group} not deleted", outcome.len());
    }
    Ok(())
}

fn or_dash(text: &str) -> String {
    if text.is_empty() {
        "-".to_string()
    } else {
        text.to_string()
    }
}

async fn list(client: &KafkaClient, out: &mut Output) -> Result<()> {
    let groups = ops::list_groups(client).await?;
    let mut rows = vec![["GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR"].map(String::from)];
    rows.extend(groups.iter().map(|g| {
        [
            g.group_id.clone(),
            or_dash(&g.state),
            or_dash(&g.protocol_type),
            g.coordinator.to_string(),
        ]
    }));
    table(&rows, out)
}

async fn describe(client: &KafkaClient, names: &[String], out: &mut Output) -> Result<()> {
    let names: Vec<String> = if names.is_empty() {
        ops::list_groups(client)
            .await?
            .into_iter()
            .map(|g| g.group_id)
            .collect()
    } else {
        names.to_vec()
    };
    let described = ops::describe_groups(client, &names).await?;
    for (i, group) in described.iter().enumerate() {
        if group.state == "Dead" && group.members.is_empty() && group.protocol_type.is_empty() {
            bail!("group {} does not exist", group.group_id);
        }
        if i > 0 {
            out.line("")?;
        }
        describe_one(client, group, out).await?;
    }
    Ok(())
}

async fn describe_one(client: &KafkaClient, group: &GroupDescription, out: &mut Output) -> Result<()> {
    out.line(&format!(
        "group {}  state={}  protocol={}  protocol-type={}  coordinator={}",
        group.group_id,
        or_dash(&group.state),
        or_dash(&group.protocol),
        or_dash(&group.protocol_type),
        group.coordinator
    ))?;
    let mut members = vec![["MEMBER", "CLIENT", "HOST", "PARTITIONS"].map(String::from)];
    for member in &group.members {
        let partitions: Vec<String> = member.assignment.iter().map(|(t, p)| format!("{t}/{p}")).collect();
        members.push([
            member.member_id.clone(),
            or_dash(&member.client_id),
            or_dash(&member.host),
            or_dash(&partitions.join(",")),
        ]);
    }
    table(&members, out)?;

    // Every partition with a committed offset or an owner, as kafka-consumer-groups shows them.
    let committed = ops::committed_offsets(client, &group.group_id).await?;
    let mut partitions: Vec<(String, i32)> = committed.iter().map(|c| (c.topic.clone(), c.partition)).collect();
    for member in &group.members {
        partitions.extend(member.assignment.iter().cloned());
    }
    partitions.sort();
    partitions.dedup();
    if partitions.is_empty() {
        return Ok(());
    }
    let ends = ops::list_offsets(client, &partitions, OffsetSpec::Latest).await;
    let mut rows = vec![["TOPIC", "PARTITION", "COMMITTED", "END", "LAG", "OWNER"].map(String::from)];
    for ((topic, partition), end) in partitions.iter().zip(&ends) {
        let commit = committed
            .iter()
            .find(|c| c.topic == *topic && c.partition == *partition)
            .map(|c| c.offset);
        let end = end.as_ref().ok().copied();
        let lag = match (commit, end) {
            (Some(c), Some(e)) => (e - c).max(0).to_string(),
            _ => "-".to_string(),
        };
        let owner = group
            .members
            .iter()
            .find(|m| m.assignment.iter().any(|(t, p)| t == topic && p == partition))
            .map_or("-".to_string(), |m| m.member_id.clone());
        rows.push([
            topic.clone(),
            partition.to_string(),
            commit.map_or("-".to_string(), |c| c.to_string()),
            end.map_or("?".to_string(), |e| e.to_string()),
            lag,
            owner,
        ]);
    }
    out.line("")?;
    table(&rows, out)
}
