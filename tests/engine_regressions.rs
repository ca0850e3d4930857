//! Engine bugs found in use (kdeck issue 13), each pinned by the scenario that showed it: a
//! follower that could not stop diverging, restarts that never moved leadership, acks=all
//! writes that could only time out, segments rolled per batch, and replicas that must end
//! up byte for byte equal after unclean elections. All on tokio's paused clock.

mod common;

use std::path::Path;
use std::time::Duration;

use common::engine::{Acked, config, ready, wall_clock_ms};
use common::{producer_batch, scratch_dir};
use kdeck::engine::{Acks, Cluster, ErrorCode, TopicConfig, TopicPartition};
use kdeck::storage::{Log, LogConfig};

fn tp(topic: &str) -> TopicPartition {
    TopicPartition::new(topic, 0)
}

fn leader_of(cluster: &Cluster, tp: &TopicPartition) -> i32 {
    cluster
        .snapshot()
        .partition(tp)
        .and_then(|p| p.leader)
        .expect("a leader")
}

/// One replica's log as it is on disk (the cluster must be shut down).
fn replica_log(data_dir: &Path, broker: i32, tp: &TopicPartition) -> Log {
    Log::open(
        data_dir.join(format!("broker-{broker}")).join(tp.dir_name()),
        LogConfig::default(),
        wall_clock_ms(),
    )
    .expect("the replica's log opens")
}

#[tokio::test(start_paused = true)]
async fn an_acks_all_write_whose_isr_shrinks_below_min_insync_is_told_not_enough_replicas_after_append() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("strict", TopicConfig::new(1, 3).with_min_insync_replicas(3))
        .await
        .expect("create");
    ready(&cluster, "strict", 1).await;
    let t = tp("strict");
    let mut acked = Acked::default();
    acked
        .produce(&cluster, &t, 0, Acks::All, Duration::from_secs(30))
        .await
        .expect("produce with the full ISR");
    let leader = leader_of(&cluster, &t);
    let follower = (0..3).find(|b| *b != leader).expect("a follower");
    // Still in the ISR until its session expires: the write is appended, then waits.
    cluster.kill(follower).expect("kill");
    let outcome = cluster
        .produce(
            &t,
            producer_batch(1, wall_clock_ms(), 1, 16),
            Acks::All,
            Duration::from_secs(60),
        )
        .await;
    assert_eq!(outcome, Err(ErrorCode::NotEnoughReplicasAfterAppend));
    let s = cluster.snapshot();
    let p = s.partition(&t).expect("partition");
    assert!(!p.isr.contains(&follower), "the dead follower left the ISR");
    let leader_leo = p
        .replicas
        .iter()
        .find(|r| r.broker == leader)
        .and_then(|r| r.log_end_offset);
    assert_eq!(leader_leo, Some(2), "the write is in the leader's log");
    cluster.shutdown().await;
}

/// A one-record batch as sarama 1.22 sends it: max timestamp -1, CRC to match.
fn batch_without_max_timestamp(timestamp: i64, tag: u64) -> Vec<u8> {
    let mut batch = producer_batch(1, timestamp, tag, 16);
    batch[35..43].copy_from_slice(&(-1i64).to_be_bytes());
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    batch
}

#[tokio::test(start_paused = true)]
async fn batches_without_a_max_timestamp_share_one_segment_and_get_it_from_their_records() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("sarama", TopicConfig::new(1, 3))
        .await
        .expect("create");
    ready(&cluster, "sarama", 1).await;
    let t = tp("sarama");
    let base = wall_clock_ms();
    for n in 0..20 {
        let batch = batch_without_max_timestamp(base + n, n as u64);
        assert_eq!(
            cluster.produce(&t, batch, Acks::All, Duration::from_secs(30)).await,
            Ok(n)
        );
    }
    assert_eq!(
        cluster.list_offset_with_time(&t, base + 12).await,
        Ok((12, base + 12)),
        "the time index finds records by their own timestamps"
    );
    let fetched = cluster.fetch(&t, 0, 1 << 20).await.expect("fetch");
    for (n, (header, _)) in common::split(&fetched.records).iter().enumerate() {
        assert_eq!(
            header.max_timestamp,
            base + n as i64,
            "the header carries the record's timestamp"
        );
    }
    let replicas: Vec<i32> = cluster
        .snapshot()
        .partition(&t)
        .expect("partition")
        .replicas
        .iter()
        .map(|r| r.broker)
        .collect();
    cluster.shutdown().await;
    for broker in replicas {
        let log = replica_log(dir.path(), broker, &t);
        assert_eq!(log.segments().len(), 1, "broker {broker} rolled no segment");
        assert_eq!(log.log_end_offset(), 20);
    }
}
