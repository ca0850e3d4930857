//! `kdeck groups [list|describe]`.

use anyhow::{Result, bail};

use super::Output;
use super::topics::table;
use crate::cli::{GroupsAction, GroupsArgs};
use crate::remote::KafkaClient;
use crate::remote::ops::{self, GroupDescription, OffsetSpec};

pub(crate) async fn run(args: &GroupsArgs, client: &KafkaClient, out: &mut Output) -> Result<()> {
    match &args.action {
        None | Some(GroupsAction::List) => list(client, out).await,
        Some(GroupsAction::Describe { groups }) => describe(client, groups, out).await,
    }
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
