//! Engine bugs found in use (kdeck issue 13), each pinned by the scenario that showed it: a
//! follower that could not stop diverging, restarts that never moved leadership, acks=all
//! writes that could only time out, segments rolled per batch, and replicas that must end
//! up byte for byte equal after unclean elections. All on tokio's paused clock.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::engine::{Acked, config, ready, wall_clock_ms};
use common::{producer_batch, read_all, scratch_dir};
use kdeck::engine::{Acks, Cluster, ClusterConfig, ErrorCode, TopicConfig, TopicPartition};
use kdeck::storage::batch::BatchHeader;
use kdeck::storage::{EpochEntry, Log, LogConfig};

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

/// Every batch of a log, header and bytes.
type Batches = Vec<(BatchHeader, Vec<u8>)>;

fn batches(log: &Log) -> Batches {
    let (batches, error) = read_all(log);
    assert!(error.is_none(), "the log reads to its end: {error:?}");
    batches
}

#[tokio::test(start_paused = true)]
async fn a_follower_that_led_an_epoch_without_writing_follows_again_after_a_preferred_election() {
    let dir = scratch_dir();
    let cluster = Cluster::start(ClusterConfig {
        auto_leader_rebalance: false,
        ..config(dir.path())
    })
    .await
    .expect("start");
    cluster
        .create_topic("quiet", TopicConfig::new(1, 3).with_min_insync_replicas(3))
        .await
        .expect("create");
    ready(&cluster, "quiet", 1).await;
    let t = tp("quiet");
    let mut acked = Acked::default();
    for n in 0..10 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(30))
            .await
            .expect("produce");
    }
    let preferred = leader_of(&cluster, &t);
    cluster.kill(preferred).expect("kill");
    // The next replica leads epoch 1 and assigns it at offset 10, but nothing is written in it.
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partition(&t)
                .is_some_and(|p| p.leader.is_some_and(|l| l != preferred))
        })
        .await
        .expect("another replica leads");
    cluster.start_broker(preferred).expect("restart");
    ready(&cluster, "quiet", 1).await;
    cluster.elect_preferred_leaders(|_| true).await.expect("elect");
    cluster
        .wait_for(Duration::from_secs(10), |s| {
            s.partition(&t).is_some_and(|p| p.leader == Some(preferred))
        })
        .await
        .expect("the preferred replica leads again");

    // min.insync.replicas = 3: this is acknowledged only if every replica fetches again,
    // including the one that led epoch 1 and must first forget it.
    acked
        .produce(&cluster, &t, 10, Acks::All, Duration::from_secs(30))
        .await
        .expect("every replica replicates the new record");
    acked.verify(&cluster, &t).await;
    cluster.shutdown().await;

    let replicas: Vec<(Vec<EpochEntry>, Batches)> = (0..3)
        .map(|b| {
            let log = replica_log(dir.path(), b, &t);
            (log.epoch_entries(), batches(&log))
        })
        .collect();
    for (broker, replica) in replicas.iter().enumerate() {
        assert_eq!(
            replica, &replicas[0],
            "broker {broker}'s log and epochs equal broker 0's"
        );
    }
    assert!(
        replicas[0].0.iter().all(|e| e.epoch != 1),
        "no replica keeps the epoch that wrote nothing: {:?}",
        replicas[0].0
    );
}

#[tokio::test(start_paused = true)]
async fn replicas_that_diverged_through_two_unclean_elections_end_up_with_the_leaders_batches() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("risky", TopicConfig::new(1, 2).with_unclean_leader_election(true))
        .await
        .expect("create");
    ready(&cluster, "risky", 1).await;
    let t = tp("risky");
    let replicas = cluster.snapshot().partition(&t).expect("partition").replicas.clone();
    let (a, b) = (replicas[0].broker, replicas[1].broker);
    assert_eq!(leader_of(&cluster, &t), a);
    let mut acked = Acked::default();
    let produce = async |acked: &mut Acked, range: std::ops::Range<u64>| {
        for n in range {
            acked
                .produce(&cluster, &t, n, Acks::All, Duration::from_secs(30))
                .await
                .expect("produce");
        }
    };
    let leader_is = |want: Option<i32>| {
        let t = t.clone();
        move |s: &kdeck::engine::ClusterSnapshot| s.partition(&t).is_some_and(|p| p.leader == want)
    };

    // Offsets 0..5 on both replicas, 5..10 on `a` only.
    produce(&mut acked, 0..5).await;
    cluster.kill(b).expect("kill b");
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            s.partition(&t).is_some_and(|p| p.isr == vec![a])
        })
        .await
        .expect("b leaves the ISR");
    produce(&mut acked, 5..10).await;
    cluster.kill(a).expect("kill a");
    cluster
        .wait_for(Duration::from_secs(30), leader_is(None))
        .await
        .expect("offline");
    // `b` leads uncleanly and writes its own 5..12.
    cluster.start_broker(b).expect("start b");
    cluster
        .wait_for(Duration::from_secs(30), leader_is(Some(b)))
        .await
        .expect("b leads");
    let mut lost = Acked::default();
    produce(&mut lost, 100..107).await;
    cluster.kill(b).expect("kill b again");
    cluster
        .wait_for(Duration::from_secs(30), leader_is(None))
        .await
        .expect("offline again");
    // `a` leads uncleanly with its own 5..10 under epoch 0, which `b` never had; `b`'s log
    // differs from it from offset 5 on, under an epoch `a` never had.
    cluster.start_broker(a).expect("start a");
    cluster
        .wait_for(Duration::from_secs(30), leader_is(Some(a)))
        .await
        .expect("a leads");
    produce(&mut acked, 10..13).await;
    cluster.start_broker(b).expect("start b again");
    cluster
        .wait_for(Duration::from_secs(60), |s| {
            s.partition(&t)
                .is_some_and(|p| p.isr.len() == 2 && p.replicas.iter().all(|r| r.log_end_offset == p.high_watermark))
        })
        .await
        .expect("b truncates, catches up and rejoins the ISR");
    acked.verify(&cluster, &t).await;
    cluster.shutdown().await;

    let leader = batches(&replica_log(dir.path(), a, &t));
    let follower = batches(&replica_log(dir.path(), b, &t));
    assert_eq!(leader.len(), follower.len(), "as many batches on both replicas");
    for ((lh, lb), (fh, fb)) in leader.iter().zip(&follower) {
        assert_eq!(lh, fh, "batch at offset {} has the same header", lh.base_offset);
        assert_eq!(lb, fb, "batch at offset {} has the same bytes", lh.base_offset);
    }
}

#[tokio::test(start_paused = true)]
async fn restarting_with_fewer_brokers_moves_leadership_to_the_ones_that_came_back() {
    let dir = scratch_dir();
    let cluster = Cluster::start(ClusterConfig {
        auto_leader_rebalance: false,
        ..config(dir.path())
    })
    .await
    .expect("start");
    cluster
        .create_topic("spread", TopicConfig::new(6, 2))
        .await
        .expect("create");
    ready(&cluster, "spread", 6).await;
    let mut acked: BTreeMap<i32, Acked> = BTreeMap::new();
    for i in 0..6 {
        acked
            .entry(i)
            .or_default()
            .produce(
                &cluster,
                &TopicPartition::new("spread", i),
                0,
                Acks::All,
                Duration::from_secs(30),
            )
            .await
            .expect("produce");
    }
    let before = cluster.snapshot();
    assert!(
        before.partitions.iter().any(|p| p.leader == Some(2)),
        "broker 2 leads some partitions"
    );
    cluster.shutdown().await;

    let cluster = Cluster::start(ClusterConfig {
        brokers: 2,
        auto_leader_rebalance: false,
        ..config(dir.path())
    })
    .await
    .expect("a restart with fewer brokers starts");
    let live = [0, 1];
    cluster
        .wait_for(Duration::from_secs(30), |s| {
            before.partitions.iter().all(|old| {
                let has_live_isr = old.isr.iter().any(|r| live.contains(r));
                !has_live_isr
                    || s.partition(&old.tp).is_some_and(|p| {
                        p.leader.is_some_and(|l| live.contains(&l)) && p.leader_epoch > old.leader_epoch
                    })
            })
        })
        .await
        .expect("every partition with a live in-sync replica is led by a live broker in a new epoch");
    for i in 0..6 {
        let t = TopicPartition::new("spread", i);
        let acked = acked.entry(i).or_default();
        acked
            .produce(&cluster, &t, 1, Acks::All, Duration::from_secs(30))
            .await
            .expect("produce after the restart");
        acked.verify(&cluster, &t).await;
    }
    cluster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_full_restart_bumps_every_leader_epoch_and_brings_every_partition_back_online() {
    let dir = scratch_dir();
    let cluster = Cluster::start(config(dir.path())).await.expect("start");
    cluster
        .create_topic("again", TopicConfig::new(3, 3))
        .await
        .expect("create");
    ready(&cluster, "again", 3).await;
    let t = tp("again");
    let mut acked = Acked::default();
    for n in 0..5 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(30))
            .await
            .expect("produce");
    }
    let before = cluster.snapshot();
    cluster.shutdown().await;

    let cluster = Cluster::start(config(dir.path())).await.expect("restart");
    cluster
        .wait_for(Duration::from_secs(60), |s| {
            before.partitions.iter().all(|old| {
                s.partition(&old.tp).is_some_and(|p| {
                    p.leader.is_some()
                        && p.leader_epoch > old.leader_epoch
                        && p.isr.len() == p.replicas.len()
                        && p.high_watermark.is_some()
                })
            })
        })
        .await
        .expect("every partition has a leader in a new epoch and its full ISR");
    for n in 5..10 {
        acked
            .produce(&cluster, &t, n, Acks::All, Duration::from_secs(30))
            .await
            .expect("produce after the restart");
    }
    acked.verify(&cluster, &t).await;
    cluster.shutdown().await;
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
