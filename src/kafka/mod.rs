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
