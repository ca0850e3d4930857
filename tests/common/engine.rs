//! Helpers for the cluster tests: a producer that retries like a real client, and the
//! checks every failure scenario ends with.

use std::collections::BTreeMap;
use std::time::Duration;

use kdeck::engine::{Acks, Cluster, ClusterConfig, ErrorCode, TopicPartition};
use kdeck::storage::records;

use super::producer_batch;

/// Waits until every partition of `topic` has a leader, its full replica set in the ISR and a
/// known HW: the state every test starts producing from.
pub async fn ready(cluster: &Cluster, topic: &str, partitions: i32) {
    cluster
        .wait_for(Duration::from_secs(20), |s| {
            (0..partitions).all(|i| {
                s.partition(&TopicPartition::new(topic, i)).is_some_and(|p| {
                    p.leader.is_some() && p.isr.len() == p.replicas.len() && p.high_watermark.is_some()
                })
            })
        })
        .await
        .expect("partitions ready");
}

/// Waits until every `__consumer_offsets` partition has a leader with a known HW, so every
/// group has a coordinator.
pub async fn coordinators_ready(cluster: &Cluster) {
    cluster
        .wait_for(Duration::from_secs(20), |s| {
            s.partitions
                .iter()
                .filter(|p| p.tp.topic == "__consumer_offsets")
                .all(|p| p.leader.is_some() && p.high_watermark.is_some())
        })
        .await
        .expect("offsets topic ready");
}

pub fn config(dir: &std::path::Path) -> ClusterConfig {
    ClusterConfig {
        data_dir: dir.to_path_buf(),
        ..ClusterConfig::default()
    }
}

/// Acknowledged records by offset, as the producer learned them.
#[derive(Default)]
pub struct Acked {
    pub values: BTreeMap<i64, Vec<u8>>,
}

impl Acked {
    /// Produces one single-record batch tagged `n`, retrying retriable errors (as a client
    /// refreshing metadata would) until `patience` runs out. Returns the final outcome.
    pub async fn produce(
        &mut self,
        cluster: &Cluster,
        tp: &TopicPartition,
        n: u64,
        acks: Acks,
        patience: Duration,
    ) -> Result<i64, ErrorCode> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let batch = producer_batch(1, wall_clock_ms(), n, 16);
            let value = records::decode(&batch).expect("decodes")[0]
                .value
                .clone()
                .expect("value")
                .to_vec();
            match cluster.produce(tp, batch, acks, Duration::from_secs(5)).await {
                Ok(offset) => {
                    if acks == Acks::All {
                        self.values.insert(offset, value);
                    }
                    return Ok(offset);
                }
                Err(e) if e.is_retriable() && tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Every acknowledged record is readable at its offset, and the committed log holds
    /// no offset twice.
    pub async fn verify(&self, cluster: &Cluster, tp: &TopicPartition) {
        let committed = read_committed(cluster, tp).await;
        for (offset, value) in &self.values {
            assert_eq!(
                committed.get(offset),
                Some(value),
                "acknowledged record at offset {offset} is missing or different"
            );
        }
    }
}

/// Record timestamps near the present: stamps far in the past would make every append
/// roll a segment (segment.ms counts from the first record's timestamp, as in Kafka).
pub fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A transactional batch of `values` from producer `pid` at `epoch`, sequences from `seq`,
/// stamped now.
pub fn txn_batch(pid: i64, epoch: i16, seq: i32, values: &[&str]) -> Vec<u8> {
    let recs: Vec<records::Record> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let value = bytes::Bytes::from(v.to_string());
            let mut r = records::record(i as i64, wall_clock_ms(), None, Some(value));
            r.transactional = true;
            r.producer_id = pid;
            r.producer_epoch = epoch;
            r.sequence = seq + i as i32;
            r
        })
        .collect();
    records::encode_batch(&recs, records::Compression::None)
        .expect("encodable")
        .to_vec()
}

/// All committed records of a partition, by offset (retrying while leadership moves).
pub async fn read_committed(cluster: &Cluster, tp: &TopicPartition) -> BTreeMap<i64, Vec<u8>> {
    let mut out = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut offset = loop {
        match cluster.list_offset(tp, -2).await {
            Ok(start) => break start,
            Err(e) => {
                assert!(tokio::time::Instant::now() < deadline, "no leader to read from: {e:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    loop {
        let end = match cluster.list_offset(tp, -1).await {
            Ok(end) => end,
            Err(e) => {
                assert!(tokio::time::Instant::now() < deadline, "no leader to read from: {e:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if offset >= end {
            return out;
        }
        match cluster.fetch(tp, offset, 1 << 20).await {
            Ok(data) => {
                for r in records::decode(&data.records).expect("valid batches") {
                    if r.offset >= offset {
                        let value = r.value.map(|v| v.to_vec()).unwrap_or_default();
                        assert!(
                            out.insert(r.offset, value).is_none(),
                            "offset {} served twice",
                            r.offset
                        );
                        offset = r.offset + 1;
                    }
                }
            }
            Err(e) => {
                assert!(tokio::time::Instant::now() < deadline, "fetch keeps failing: {e:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}
