//! One connection to one broker: Kafka framing, correlation ids, requests pipelined on one
//! socket (answers matched by correlation id), a timeout per request, ApiVersions negotiated
//! on connect, then TLS and SASL when configured.

use std::sync::Arc;

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::Request;

use super::{BrokerAddress, ClientSettings, RemoteError};

/// The versions a broker supports for one API, from its ApiVersions answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRange {
    pub min: i16,
    pub max: i16,
}

/// An open, authenticated connection. Cheap to clone; every clone shares the socket.
#[derive(Debug, Clone)]
pub struct Connection {
    #[allow(dead_code)]
    inner: Arc<()>,
}

impl Connection {
    /// Connects (TCP, then TLS, then ApiVersions, then SASL), all within
    /// `settings.connect_timeout`. `label` names the broker in errors ("broker 2 (host:port)").
    pub async fn open(
        address: &BrokerAddress,
        label: &str,
        settings: &ClientSettings,
    ) -> Result<Connection, RemoteError> {
        let _ = (address, label, settings);
        todo!("remote-core")
    }

    /// Sends `request` at `version` and waits for its answer, at most the request timeout.
    /// Many calls may be in flight on one connection at once.
    pub async fn call<R: Request + Send + 'static>(&self, request: R, version: i16) -> Result<R::Response, RemoteError>
    where
        R::Response: Send + 'static,
    {
        let _ = (request, version);
        todo!("remote-core")
    }

    /// The version to use for `api`: the highest both kdeck and the broker support.
    pub fn version(&self, api: ApiKey) -> Option<i16> {
        let _ = api;
        todo!("remote-core")
    }

    /// The broker's advertised range for `api`.
    pub fn supported(&self, api: ApiKey) -> Option<VersionRange> {
        let _ = api;
        todo!("remote-core")
    }

    /// False once the socket failed or was closed; a closed connection answers every call
    /// with `RemoteError::Disconnected`.
    pub fn is_open(&self) -> bool {
        todo!("remote-core")
    }

    pub fn close(&self) {
        todo!("remote-core")
    }
}
