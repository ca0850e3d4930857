//! The Kafka wire protocol in front of the embedded cluster: every broker gets a TCP
//! listener, frames are decoded with the `kafka-protocol` crate, and each request is answered
//! by the engine as the broker that owns the listener (so a client talking to a broker that
//! does not lead a partition is told NOT_LEADER_OR_FOLLOWER, as Kafka would tell it). The
//! simulation skips the sockets: [`connect_in_memory`] serves a pipe the same way.
//!
//! Only the versions in [`versions::SUPPORTED`] are advertised and decoded. Limits against bad
//! peers: frames larger than `socket_request_max_bytes` are refused before any allocation, a
//! malformed frame closes its own connection only, and each connection has a bounded number of
//! requests in flight, answered strictly in request order.

mod codec;
mod connection;
pub mod fetch_session;
mod handlers;
mod memory;
mod server;
pub mod versions;

use serde::Deserialize;

pub use codec::{CodecError, DecodedRequest, Frame, RequestBody, decode_request, encode_response};
pub use memory::{advertised_address, broker_at, connect_in_memory};
pub use server::{Listener, WireServer};

/// The `[wire]` section: where and how the brokers listen for Kafka clients.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WireConfig {
    /// Serve the Kafka protocol at all.
    pub enabled: bool,
    /// Address every broker listens on and advertises in Metadata.
    pub host: String,
    /// Broker `id` listens on `base_port + id`; 0 picks free ports.
    pub base_port: u16,
    /// A host other than a loopback address exposes the cluster to the network: it has to be
    /// asked for explicitly.
    pub allow_non_loopback: bool,
    /// `socket.request.max.bytes` (Kafka 104857600): larger frames close the connection
    /// before anything is allocated for them.
    pub socket_request_max_bytes: u32,
    /// Requests read from one connection before its answers are written (Kafka reads one at
    /// a time; clients pipeline up to their `max.in.flight`).
    pub max_inflight_per_connection: usize,
    /// `auto.create.topics.enable` (Kafka true; off here so a typo does not make a topic).
    pub auto_create_topics: bool,
    /// `num.partitions` (Kafka 1): partitions of auto-created topics and of CreateTopics
    /// requests that leave the count to the broker.
    pub default_partitions: i32,
    /// `default.replication.factor` (Kafka 1), capped at the number of brokers; 3 here so
    /// topics made by clients are replicated like the cluster's own.
    pub default_replication_factor: i32,
    /// `max.incremental.fetch.session.cache.slots` (Kafka 1000): incremental fetch sessions
    /// (KIP-227) each broker keeps; 0 serves every fetch in full.
    pub fetch_session_cache_slots: usize,
    /// `min.incremental.fetch.session.eviction.ms` (Kafka 120000): a session idle this long
    /// may be evicted for a new one, and a younger one only by a bigger or a follower's.
    pub fetch_session_eviction_ms: u64,
}

impl Default for WireConfig {
    fn default() -> Self {
        WireConfig {
            enabled: true,
            host: "127.0.0.1".into(),
            base_port: 9092,
            allow_non_loopback: false,
            socket_request_max_bytes: 104_857_600,
            max_inflight_per_connection: 64,
            auto_create_topics: false,
            default_partitions: 1,
            default_replication_factor: 3,
            fetch_session_cache_slots: 1000,
            fetch_session_eviction_ms: 120_000,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("cannot listen on {addr} for broker {broker}: {source}")]
    Bind {
        broker: i32,
        addr: String,
        source: std::io::Error,
    },
    #[error("port {port} is in use (broker {broker} listens on base_port + id); pick another [wire] base_port or 0")]
    PortInUse { broker: i32, port: u16 },
    #[error(
        "[wire] host {0} is not a loopback address; set allow_non_loopback = true to expose the cluster to the network"
    )]
    NonLoopback(String),
    #[error("[wire] host {0:?} is not an IP address or a name that resolves")]
    BadHost(String),
    #[error("[wire] base_port {base} + broker {broker} is past port 65535")]
    PortRange { base: u16, broker: i32 },
    /// An in-memory connection to a broker that is stopped or killed: refused, as its port
    /// would refuse.
    #[error("broker {0} is not running")]
    NotRunning(i32),
    #[error("no broker {0}")]
    NoBroker(i32),
}
