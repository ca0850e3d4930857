//! Every command and flag of the `kdeck` binary.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};

use crate::engine::Acks;
use crate::storage::records::Compression;

#[derive(Debug, Parser)]
#[command(
    name = "kdeck",
    version,
    about = "A terminal console with an embedded, replicated Kafka-style cluster"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Without a command, kdeck opens the console on an embedded cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// Where and how the embedded cluster runs; shared by every command that starts one.
#[derive(Debug, Clone, Default, Args)]
pub struct ClusterArgs {
    /// Data directory of the cluster, kept across runs (default: kdeck/ in the platform data directory).
    #[arg(long, value_name = "DIR", conflicts_with = "ephemeral")]
    pub data_dir: Option<PathBuf>,
    /// Use a temporary data directory, removed on exit.
    #[arg(long)]
    pub ephemeral: bool,
    /// Brokers to start (default: [cluster] brokers of the configuration).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(1..=32))]
    pub brokers: Option<i32>,
    /// Do not run the built-in demo traffic.
    #[arg(long)]
    pub no_demo: bool,
    /// Configuration file (default: kdeck/kdeck.toml in the platform config directory, when present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the embedded cluster headless and serve the Kafka protocol to real clients
    /// (kcat, librdkafka, kafka-python...). Line commands on stdin when it is not a terminal:
    /// kill N, start N, stop N, pause N, resume N, elect, status.
    Serve(ClusterArgs),
    /// Measure kdeck's speed (prints Kafka-perf-test-style lines).
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Append to, read and recover one partition log, against raw sequential writes.
    Storage(StorageBenchArgs),
    /// Read a filled topic with a group consumer (kafka-consumer-perf-test).
    Consume(ConsumeBenchArgs),
    /// End-to-end latency: scheduled producer sends to a group consumer's receipt.
    E2e(EndToEndBenchArgs),
    /// Produce with acks=all to an embedded 3-broker cluster, no client batching.
    Engine(EngineBenchArgs),
    /// Produce through the client producer to an embedded cluster (kafka-producer-perf-test).
    Produce(ProduceBenchArgs),
    /// Console rendering: one frame of a large cluster view, and the idle console's CPU use.
    Render(RenderBenchArgs),
}

#[derive(Debug, Clone, Args)]
pub struct RenderBenchArgs {
    /// Partitions in the rendered cluster view.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub partitions: u32,
    /// Frames to render.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub frames: u32,
    /// Terminal width of the frame.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u16).range(20..=1000))]
    pub width: u16,
    /// Terminal height of the frame.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u16).range(5..=1000))]
    pub height: u16,
    /// Seconds to measure the idle console (embedded cluster without demo); 0 skips it.
    #[arg(long, default_value_t = 10.0, value_parser = parse_idle_seconds)]
    pub idle_secs: f64,
}

#[derive(Debug, Clone, Args)]
pub struct EndToEndBenchArgs {
    /// Records per second, sent on a fixed schedule.
    #[arg(long, default_value_t = 500_000, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub rate: u32,
    /// How long to send, in seconds.
    #[arg(long, default_value_t = 10.0, value_parser = parse_seconds)]
    pub secs: f64,
    /// Size of each record's value (at least 8: it carries the due time).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(8..=1_000_000))]
    pub record_size: u32,
    /// Partitions of the benchmark topic.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(i32).range(1..=1000))]
    pub partitions: i32,
    /// The producer's `linger.ms`.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub linger_ms: u64,
    /// The producer's `batch.size` in bytes (Kafka's default, 16384, unless given).
    #[arg(long, default_value_t = 16_384, value_parser = clap::value_parser!(u64).range(1..=(64 << 20)))]
    pub batch_size: u64,
    /// Directory for the cluster's data (default: the system temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ConsumeBenchArgs {
    /// Records to write first and then consume.
    #[arg(long, default_value_t = 5_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub records: u64,
    /// Size of each record's value.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub record_size: u32,
    /// Partitions of the benchmark topic.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(i32).range(1..=1000))]
    pub partitions: i32,
    /// Replication factor of the benchmark topic (at most 3, the embedded brokers).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=3))]
    pub replication_factor: i32,
    /// Directory for the cluster's data (default: the system temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct EngineBenchArgs {
    /// How long to produce, in seconds.
    #[arg(long, default_value_t = 20.0, value_parser = parse_seconds)]
    pub secs: f64,
    /// Partitions of the benchmark topic.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(i32).range(1..=1000))]
    pub partitions: i32,
    /// Produce requests in flight per partition.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub in_flight: u32,
    /// Size of each record batch.
    #[arg(long, default_value = "16KiB", value_parser = parse_size)]
    pub batch_bytes: u64,
    /// Size of each record's value.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub record_bytes: u32,
    /// Directory for the cluster's data (default: the system temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ProduceBenchArgs {
    /// Records to produce.
    #[arg(long, default_value_t = 5_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub records: u64,
    /// Size of each record's value, in bytes.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub record_size: u32,
    /// Acknowledgements: 0, 1 or all (-1).
    #[arg(long, default_value = "all", value_parser = PossibleValuesParser::new(["0", "1", "all", "-1"]).map(|a| parse_acks(&a)))]
    pub acks: Acks,
    /// Partitions of the benchmark topic.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(i32).range(1..=1000))]
    pub partitions: i32,
    /// Replication factor of the benchmark topic (min.insync.replicas is 2 from RF 2 up).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=32))]
    pub replication_factor: i32,
    /// Producers sharing the records, each with its own task.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub producers: u32,
    /// Compression codec of the batches.
    #[arg(long, default_value = "none", value_parser = PossibleValuesParser::new(["none", "gzip", "snappy", "lz4", "zstd"]).map(|c| parse_compression(&c)))]
    pub compression: Compression,
    /// Brokers in the embedded cluster.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=32))]
    pub brokers: i32,
    /// Directory for the cluster's data (default: the system temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// Maps a value `PossibleValuesParser` already checked.
fn parse_acks(text: &str) -> Acks {
    match text {
        "0" => Acks::None,
        "1" => Acks::Leader,
        _ => Acks::All,
    }
}

/// Maps a value `PossibleValuesParser` already checked.
fn parse_compression(text: &str) -> Compression {
    match text {
        "gzip" => Compression::Gzip,
        "snappy" => Compression::Snappy,
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd,
        _ => Compression::None,
    }
}

#[derive(Debug, Clone, Args)]
pub struct StorageBenchArgs {
    /// Bytes to append (suffixes KiB, MiB, GiB).
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub bytes: u64,
    /// Size of each record batch.
    #[arg(long, default_value = "16KiB", value_parser = parse_size)]
    pub batch_bytes: u64,
    /// Size of each record's value.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub record_bytes: u32,
    /// segment.bytes of the benchmarked log.
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub segment_bytes: u64,
    /// Rounds of raw write and log append (medians are compared).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Seconds for each group-commit (flush = always) run.
    #[arg(long, default_value_t = 3.0, value_parser = parse_seconds)]
    pub group_commit_secs: f64,
    /// Concurrent appenders in the group-commit run.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub writers: u32,
    /// Directory for the temporary files (default: the system temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// Parses `4096`, `16KiB`, `256MiB`, `1GiB` (also `KB`/`MB`/`GB`, powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size: expected a number with an optional KiB, MiB or GiB suffix"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => return Err(format!("unknown size unit {other:?} in {text:?}: use KiB, MiB or GiB")),
    };
    match n.checked_mul(scale) {
        Some(0) => Err(format!("size must be positive, got {text:?}")),
        Some(v) => Ok(v),
        None => Err(format!("size {text:?} is too large")),
    }
}

fn parse_idle_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(0.0) => Ok(0.0),
        _ => parse_seconds(text),
    }
}

fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => Ok(s),
        _ => Err(format!("{text:?} is not a duration in seconds between 0 and 3600")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units_and_reject_garbage() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("16KiB"), Ok(16 << 10));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("99999999999GiB").is_err());
    }
}
