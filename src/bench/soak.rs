//! `kdeck bench soak`: the embedded cluster as a console or `kdeck serve` runs it for days,
//! sped up. The demo runs at a multiple of its rate; besides it, once a second a Kafka client
//! connects over the wire, reads metadata and disconnects, and a new idempotent producer
//! writes a few records and closes; every ten seconds a message tail opens and closes. Each
//! minute it prints the process's RSS and the data directory's size; at the end, the RSS
//! growth per hour after the warm-up (a least-squares slope) and the largest disk use.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;

use super::{block_on, mb};
use crate::cli::SoakBenchArgs;
use crate::client::producer::{Producer, ProducerConfig, ProducerRecord};
use crate::config::KdeckConfig;
use crate::embedded::{DataDir, Embedded};
use crate::engine::TopicConfig;
use crate::out::outln;
use crate::remote::ClientSettings;
use crate::remote::client::KafkaClient;
use crate::view::{ClusterSource, SeekPosition, TailSpec};

/// The topic the short-lived idempotent producers write to.
const IDEMPOTENT_TOPIC: &str = "soak-idempotent";

pub fn run(args: &SoakBenchArgs) -> Result<()> {
    block_on(soak(args.clone()))
}

/// One minute's figures.
struct Sample {
    minute: f64,
    rss_mb: f64,
    anon_mb: f64,
    disk_mb: f64,
}

async fn soak(args: SoakBenchArgs) -> Result<()> {
    let mut config = KdeckConfig::load(args.config.as_deref())?;
    let multiplier = args.rate_multiplier;
    config.demo.page_views_per_sec = config.demo.page_views_per_sec.saturating_mul(multiplier);
    config.demo.clicks_per_sec = config.demo.clicks_per_sec.saturating_mul(multiplier);
    config.cluster.producer_id_expiration_ms = args.producer_id_expiration_ms;
    // Ports the system picks: the soak must not collide with a running console.
    config.wire.base_port = 0;
    let parent = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir(),
    };
    let tmp = tempfile::Builder::new()
        .prefix("kdeck-soak-")
        .tempdir_in(&parent)
        .with_context(|| format!("creating the soak directory in {}", parent.display()))?;
    let data_path = tmp.path().to_path_buf();
    let cluster_args = crate::cli::ClusterArgs::default();
    let embedded = Arc::new(Embedded::start_in(&config, &cluster_args, DataDir::Ephemeral(tmp)).await?);
    embedded
        .cluster()
        .create_topic(IDEMPOTENT_TOPIC, TopicConfig::new(1, 3.min(config.cluster.brokers)))
        .await?;
    let bootstrap: Vec<String> = embedded.wire_listeners().iter().map(|l| l.addr.to_string()).collect();
    outln!(
        "soak: {} minutes, demo at {multiplier}x ({} page views/s, {} clicks/s), a wire client \
         connecting and an idempotent producer each second, a tail every 10 s; \
         producer.id.expiration.ms {}; data in {}",
        args.minutes,
        config.demo.page_views_per_sec,
        config.demo.clicks_per_sec,
        args.producer_id_expiration_ms,
        data_path.display()
    );
    let connections = Arc::new(AtomicU64::new(0));
    let producers = Arc::new(AtomicU64::new(0));
    let churn = tokio::spawn(client_churn(
        Arc::clone(&embedded),
        bootstrap.join(","),
        Arc::clone(&connections),
        Arc::clone(&producers),
    ));

    let start = Instant::now();
    let mut samples = Vec::new();
    for minute in 1..=args.minutes {
        let due = start + Duration::from_secs(60 * minute);
        tokio::time::sleep_until(due.into()).await;
        let (rss, anon) = memory();
        let sample = Sample {
            minute: start.elapsed().as_secs_f64() / 60.0,
            rss_mb: mb(rss),
            anon_mb: mb(anon),
            disk_mb: mb(disk_usage(&data_path)),
        };
        let view = embedded.views().borrow().clone();
        let messages: i64 = view.topics.iter().filter(|t| !t.internal).map(|t| t.messages).sum();
        outln!(
            "minute {minute:>4}: rss {:>7.1} MB (anon {:>7.1} MB), disk {:>7.1} MB, {} records written, \
             {} connections, {} idempotent producers",
            sample.rss_mb,
            sample.anon_mb,
            sample.disk_mb,
            messages,
            connections.load(Ordering::Relaxed),
            producers.load(Ordering::Relaxed),
        );
        samples.push(sample);
    }
    churn.abort();
    embedded.shutdown().await;

    let warm: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.minute > args.warmup_minutes as f64)
        .collect();
    let max_disk = samples.iter().map(|s| s.disk_mb).fold(0.0, f64::max);
    let max_rss = samples.iter().map(|s| s.rss_mb).fold(0.0, f64::max);
    match (slope(&warm, |s| s.rss_mb), slope(&warm, |s| s.anon_mb)) {
        (Some(rss), Some(anon)) => outln!(
            "after {} warm-up minutes: rss growth {:+.2} MB/hour (anon {:+.2} MB/hour); peak rss {:.1} MB; \
             peak disk {:.1} MB",
            args.warmup_minutes,
            rss * 60.0,
            anon * 60.0,
            max_rss,
            max_disk
        ),
        _ => outln!(
            "too short for a growth figure (needs 2 samples after {} warm-up minutes); peak rss {:.1} MB; \
             peak disk {:.1} MB",
            args.warmup_minutes,
            max_rss,
            max_disk
        ),
    }
    Ok(())
}

/// The clients that come and go: each second a wire connection and an idempotent producer,
/// every ten seconds a tail.
async fn client_churn(
    embedded: Arc<Embedded>,
    bootstrap: String,
    connections: Arc<AtomicU64>,
    producers: Arc<AtomicU64>,
) {
    let settings = ClientSettings::from_config(&crate::remote::RemoteConfig {
        bootstrap,
        ..crate::remote::RemoteConfig::default()
    });
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    for second in 0u64.. {
        tick.tick().await;
        if let Ok(settings) = &settings
            && let Ok(client) = KafkaClient::connect(settings.clone()).await
        {
            drop(client);
            connections.fetch_add(1, Ordering::Relaxed);
        }
        let config = ProducerConfig {
            enable_idempotence: true,
            ..ProducerConfig::default()
        };
        if let Ok(producer) = Producer::new(embedded.cluster().clone(), config).await {
            for i in 0..5 {
                let _ = producer
                    .send(ProducerRecord {
                        topic: IDEMPOTENT_TOPIC.into(),
                        partition: None,
                        key: Some(Bytes::from(format!("p{second}"))),
                        value: Some(Bytes::from(format!("record {i}"))),
                        headers: Vec::new(),
                        timestamp: None,
                    })
                    .await;
            }
            producer.close().await;
            producers.fetch_add(1, Ordering::Relaxed);
        }
        if second % 10 == 0 {
            let tail = embedded.tail(
                TailSpec::ring(crate::workload::PAGE_VIEWS, None, SeekPosition::End),
                1_000,
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
            drop(tail);
        }
    }
}

/// The process's resident set and its anonymous part, in bytes (0 where /proc is missing).
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("RssAnon:"))
}

/// Bytes of the files under `dir`.
fn disk_usage(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => disk_usage(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// The least-squares slope of `y` per minute over the samples; None with fewer than two.
fn slope(samples: &[&Sample], y: impl Fn(&Sample) -> f64) -> Option<f64> {
    if samples.len() < 2 {
        return None;
    }
    let n = samples.len() as f64;
    let mean_x = samples.iter().map(|s| s.minute).sum::<f64>() / n;
    let mean_y = samples.iter().map(|s| y(s)).sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for s in samples {
        num += (s.minute - mean_x) * (y(s) - mean_y);
        den += (s.minute - mean_x).powi(2);
    }
    (den > 0.0).then(|| num / den)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_growth_is_the_least_squares_slope() {
        let samples: Vec<Sample> = [(1.0, 10.0), (2.0, 12.0), (3.0, 14.0), (4.0, 16.0)]
            .into_iter()
            .map(|(minute, rss_mb)| Sample {
                minute,
                rss_mb,
                anon_mb: 0.0,
                disk_mb: 0.0,
            })
            .collect();
        let refs: Vec<&Sample> = samples.iter().collect();
        assert_eq!(slope(&refs, |s| s.rss_mb), Some(2.0));
        assert_eq!(slope(&refs[..1], |s| s.rss_mb), None);
    }

    #[test]
    fn disk_usage_counts_nested_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("a")).expect("mkdir");
        std::fs::write(dir.path().join("a/x"), [0u8; 100]).expect("write");
        std::fs::write(dir.path().join("y"), [0u8; 20]).expect("write");
        assert_eq!(disk_usage(dir.path()), 120);
    }
}
