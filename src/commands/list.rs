//! `kdeck list [TOPIC...]`: kcat -L. The brokers (the controller marked), then each topic
//! with each partition's leader, replicas and in-sync replicas, in kcat's words, so a script
//! written for `kcat -L` reads it.

use anyhow::Result;

use super::Output;
use crate::remote::client::ClusterMetadata;
use crate::remote::{KafkaClient, error_name};

pub(crate) async fn run(names: &[String], client: &KafkaClient, out: &mut Output) -> Result<()> {
    let metadata = client.refresh_metadata().await?;
    for line in lines(&metadata, names)? {
        out.line(&line)?;
    }
    Ok(())
}

/// The listing of `metadata`, every topic or the ones `names` asks for (in that order).
fn lines(metadata: &ClusterMetadata, names: &[String]) -> Result<Vec<String>> {
    // kcat -L shows a topic the metadata answered with an error, with its error.
    let topics = super::topics::chosen(metadata, names)?;
    let mut lines = vec![match &metadata.cluster_id {
        Some(id) => format!("Metadata for {} (cluster {id}):", which(names)),
        None => format!("Metadata for {}:", which(names)),
    }];
    lines.push(format!(" {}:", count(metadata.brokers.len(), "broker")));
    let mut brokers: Vec<_> = metadata.brokers.iter().collect();
    brokers.sort_by_key(|b| b.id);
    for b in brokers {
        let controller = if metadata.controller == Some(b.id) {
            " (controller)"
        } else {
            ""
        };
        let rack = b.rack.as_ref().map(|r| format!(", rack {r}")).unwrap_or_default();
        lines.push(format!("  broker {} at {}{rack}{controller}", b.id, b.address));
    }
    lines.push(format!(" {}:", count(topics.len(), "topic")));
    let ids = |ids: &[i32]| ids.iter().map(i32::to_string).collect::<Vec<_>>().join(",");
    for t in topics {
        if t.error != 0 {
            lines.push(format!("  topic \"{}\" error: {}", t.name, error_name(t.error)));
            continue;
        }
        let internal = if t.internal { " (internal)" } else { "" };
        lines.push(format!(
            "  topic \"{}\" with {}{internal}:",
            t.name,
            count(t.partitions.len(), "partition")
        ));
        for p in &t.partitions {
            let leader = p.leader.map_or("-1".to_string(), |l| l.to_string());
            let mut line = format!(
                "    partition {}, leader {leader}, replicas: {}, isrs: {}",
                p.partition,
                ids(&p.replicas),
                ids(&p.isr)
            );
            if !p.offline_replicas.is_empty() {
                line.push_str(&format!(", offline: {}", ids(&p.offline_replicas)));
            }
            if p.error != 0 {
                line.push_str(&format!(", error: {}", error_name(p.error)));
            }
            lines.push(line);
        }
    }
    Ok(lines)
}

fn which(names: &[String]) -> String {
    match names {
        [] => "all topics".into(),
        [one] => format!("topic {one}"),
        many => format!("topics {}", many.join(", ")),
    }
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::remote::BrokerAddress;
    use crate::remote::client::{BrokerInfo, PartitionMetadata, TopicMetadata};

    fn metadata() -> ClusterMetadata {
        let partition = |partition, leader: Option<i32>, isr: Vec<i32>, error| PartitionMetadata {
            partition,
            leader,
            leader_epoch: 3,
            replicas: vec![1, 2, 0],
            offline_replicas: if leader.is_none() { vec![1] } else { Vec::new() },
            isr,
            error,
        };
        ClusterMetadata {
            cluster_id: Some("kdeck-test".into()),
            controller: Some(0),
            brokers: [2, 0, 1]
                .into_iter()
                .map(|id| BrokerInfo {
                    id,
                    address: BrokerAddress {
                        host: "127.0.0.1".into(),
                        port: 9092 + id as u16,
                    },
                    rack: (id == 2).then(|| "r2".to_string()),
                })
                .collect(),
            topics: vec![
                TopicMetadata {
                    name: "__consumer_offsets".into(),
                    internal: true,
                    error: 0,
                    partitions: vec![partition(0, Some(0), vec![0, 1, 2], 0)],
                },
                TopicMetadata {
                    name: "orders".into(),
                    internal: false,
                    error: 0,
                    partitions: vec![partition(0, Some(1), vec![1, 2, 0], 0), partition(1, None, vec![1], 5)],
                },
            ],
            taken_at: Utc::now(),
        }
    }

    #[test]
    fn brokers_then_topics_with_each_partitions_leader_replicas_and_isr_as_kcat_prints_them() {
        let got = lines(&metadata(), &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            got,
            vec![
                "Metadata for all topics (cluster kdeck-test):",
                " 3 brokers:",
                "  broker 0 at 127.0.0.1:9092 (controller)",
                "  broker 1 at 127.0.0.1:9093",
                "  broker 2 at 127.0.0.1:9094, rack r2",
                " 2 topics:",
                "  topic \"orders\" with 2 partitions:",
                "    partition 0, leader 1, replicas: 1,2,0, isrs: 1,2,0",
                "    partition 1, leader -1, replicas: 1,2,0, isrs: 1, offline: 1, error: LEADER_NOT_AVAILABLE",
                "  topic \"__consumer_offsets\" with 1 partition (internal):",
                "    partition 0, leader 0, replicas: 1,2,0, isrs: 0,1,2",
            ]
        );
    }

    #[test]
    fn named_topics_only_and_a_missing_one_is_an_error() {
        let got = lines(&metadata(), &["orders".into()]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got[0], "Metadata for topic orders (cluster kdeck-test):");
        assert_eq!(got[5], " 1 topic:");
        assert_eq!(got.len(), 9);
        let missing = lines(&metadata(), &["nope".into()])
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(missing, Err("topic nope does not exist".into()));
    }
}
