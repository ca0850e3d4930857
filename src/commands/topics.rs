//! `kdeck topics [list|describe|create|delete|add-partitions]`.

use anyhow::{Result, anyhow};

use super::Output;
use crate::cli::{TopicsAction, TopicsArgs};
use crate::remote::KafkaClient;
use crate::remote::client::{ClusterMetadata, TopicMetadata};
use crate::remote::ops::{self, OffsetSpec};

pub(crate) async fn run(args: &TopicsArgs, client: &KafkaClient, out: &mut Output) -> Result<()> {
    match &args.action {
        None | Some(TopicsAction::List) => list(client, out).await,
        Some(TopicsAction::Describe { topics }) => describe(client, topics, out).await,
        Some(TopicsAction::Create {
            name,
            partitions,
            replication_factor,
            configs,
        }) => {
            ops::create_topic(
                client,
                name,
                partitions.unwrap_or(-1),
                replication_factor.unwrap_or(-1),
                configs,
            )
            .await?;
            eprintln!("kdeck: created topic {name}");
            Ok(())
        }
        Some(TopicsAction::Delete { name }) => {
            ops::delete_topic(client, name).await?;
            eprintln!("kdeck: deleted topic {name}");
            Ok(())
        }
        Some(TopicsAction::AddPartitions { name, partitions }) => {
            ops::create_partitions(client, name, *partitions).await?;
            eprintln!("kdeck: topic {name} has {partitions} partitions");
            Ok(())
        }
    }
}

/// The topics `names` asks for, in that order, or every topic: internal ones
/// (`__consumer_offsets`) after the others, each group by name. A name the cluster does not
/// know is an error; a topic the metadata answered with an error is kept, for the caller to
/// show or drop.
pub(super) fn chosen<'a>(metadata: &'a ClusterMetadata, names: &[String]) -> Result<Vec<&'a TopicMetadata>> {
    if names.is_empty() {
        let mut all: Vec<&TopicMetadata> = metadata.topics.iter().collect();
        all.sort_by(|a, b| (a.internal, &a.name).cmp(&(b.internal, &b.name)));
        return Ok(all);
    }
    names
        .iter()
        .map(|name| {
            metadata
                .topic(name)
                .ok_or_else(|| anyhow!("topic {name} does not exist"))
        })
        .collect()
}

/// [`chosen`] without the topics the metadata answered with an error; a named one of those
/// is an error too.
fn healthy<'a>(metadata: &'a ClusterMetadata, names: &[String]) -> Result<Vec<&'a TopicMetadata>> {
    let mut topics = chosen(metadata, names)?;
    if let Some(t) = topics.iter().find(|t| t.error != 0 && !names.is_empty()) {
        return Err(anyhow!("topic {} does not exist", t.name));
    }
    topics.retain(|t| t.error == 0);
    Ok(topics)
}

async fn list(client: &KafkaClient, out: &mut Output) -> Result<()> {
    let metadata = client.refresh_metadata().await?;
    let topics = healthy(&metadata, &[])?;
    let width = topics.iter().map(|t| t.name.chars().count()).max().unwrap_or(0);
    for topic in topics {
        let replication = topic.partitions.iter().map(|p| p.replicas.len()).max().unwrap_or(0);
        let internal = if topic.internal { "  (internal)" } else { "" };
        out.line(&format!(
            "{:<width$}  partitions={}  replication={replication}{internal}",
            topic.name,
            topic.partitions.len()
        ))?;
    }
    Ok(())
}

async fn describe(client: &KafkaClient, names: &[String], out: &mut Output) -> Result<()> {
    let metadata = client.refresh_metadata().await?;
    let topics = healthy(&metadata, names)?;
    let partitions: Vec<(String, i32)> = topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.name.clone(), p.partition)))
        .collect();
    let starts = ops::list_offsets(client, &partitions, OffsetSpec::Earliest).await;
    let ends = ops::list_offsets(client, &partitions, OffsetSpec::Latest).await;
    let offset = |result: &Result<i64, _>| result.as_ref().map_or("?".to_string(), |o| o.to_string());
    let ids = |ids: &[i32]| {
        if ids.is_empty() {
            "-".to_string()
        } else {
            ids.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
        }
    };
    let mut rows = vec![
        [
            "TOPIC",
            "PARTITION",
            "LEADER",
            "EPOCH",
            "REPLICAS",
            "ISR",
            "OFFLINE",
            "LOG-START",
            "END",
        ]
        .map(String::from),
    ];
    let mut index = 0;
    for topic in &topics {
        for p in &topic.partitions {
            rows.push([
                topic.name.clone(),
                p.partition.to_string(),
                p.leader.map_or("-".to_string(), |l| l.to_string()),
                p.leader_epoch.to_string(),
                ids(&p.replicas),
                ids(&p.isr),
                ids(&p.offline_replicas),
                starts.get(index).map_or("?".to_string(), offset),
                ends.get(index).map_or("?".to_string(), offset),
            ]);
            index += 1;
        }
    }
    table(&rows, out)
}

/// Left-aligned columns two spaces apart.
pub(crate) fn table<const N: usize>(rows: &[[String; N]], out: &mut Output) -> Result<()> {
    let mut widths = [0; N];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in rows {
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
            if i + 1 == N {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        out.line(&line)?;
    }
    Ok(())
}
