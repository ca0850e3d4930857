//! Kafka's shared vocabulary: the words both sides of kdeck use, the embedded engine and an
//! external cluster's client alike. The topic-name rule, a ListOffsets lookup, a broker's id,
//! where a key's records go and where an offset reset moves a group mean the same whichever
//! cluster the console shows, so they live here, at the bottom: this room imports nothing of
//! ours, and the engine, the wire, the view and the remote client all import it.

pub mod acl;
pub mod offsets;
pub mod partitioner;
pub mod reassign;
pub mod reset;
pub mod topic;

pub use offsets::OffsetSpec;
pub use topic::{is_internal_topic, topic_name_error};

/// Which records a consumer reads (Kafka's `isolation.level`): everything up to the high
/// watermark, or only up to the last stable offset, without aborted transactions' records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IsolationLevel {
    #[default]
    ReadUncommitted,
    ReadCommitted,
}

impl IsolationLevel {
    /// The wire's `isolation_level` byte: 1 is read_committed, anything else read_uncommitted.
    pub fn from_wire(level: i8) -> IsolationLevel {
        if level == 1 {
            IsolationLevel::ReadCommitted
        } else {
            IsolationLevel::ReadUncommitted
        }
    }
}

/// A broker's node id, as Kafka numbers brokers.
pub type BrokerId = i32;

/// Kafka's spelling of an error from its variant's name: `NotEnoughReplicas` ->
/// `NOT_ENOUGH_REPLICAS`, as Kafka's clients print it.
pub fn screaming_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
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
