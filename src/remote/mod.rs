//! Attach to an external Kafka cluster over the Kafka protocol: a client (one pipelined
//! connection per broker, TLS, SASL, metadata, reconnects), the operations the console and
//! the CLI need, and [`source::RemoteSource`], the console's `ClusterSource` for a real
//! cluster. Imports `view/`, the protocol crate, the `[console]` settings and the murmur2
//! partitioner (`client::partitioner`, pure arithmetic, so produce lands where a Java client
//! would put it), never `engine/` (bar `OffsetSpec`, the one name of a ListOffsets lookup,
//! which `view` re-exports from it).

pub mod client;
pub mod connection;
pub mod ops;
pub mod security;
pub mod source;

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite};

pub use client::{BrokerHealth, KafkaClient, Target};

/// `[remote]`: how kdeck talks to an external cluster (`--bootstrap`, and the CLI commands).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RemoteConfig {
    /// `host:port[,host:port...]`; empty: the console runs the embedded cluster, and the CLI
    /// commands use 127.0.0.1:9092.
    pub bootstrap: String,
    /// The client id sent with every request (client.id).
    pub client_id: String,
    /// Giving up on a TCP (and TLS and SASL) connect, in ms (socket.connection.setup.timeout.ms).
    pub connect_timeout_ms: u64,
    /// Giving up on one request's answer, in ms (request.timeout.ms).
    pub request_timeout_ms: u64,
    /// First wait before reconnecting to a broker, doubled per failure (reconnect.backoff.ms).
    pub reconnect_backoff_ms: u64,
    /// The longest wait between reconnects (reconnect.backoff.max.ms).
    pub reconnect_backoff_max_ms: u64,
    /// Cached metadata older than this is refreshed before use (metadata.max.age.ms).
    pub metadata_max_age_ms: u64,
    pub tls: TlsConfig,
    pub sasl: SaslConfig,
}

impl Default for RemoteConfig {
    fn default() -> Self {
        RemoteConfig {
            bootstrap: String::new(),
            client_id: "kdeck".into(),
            connect_timeout_ms: 5_000,
            request_timeout_ms: 15_000,
            reconnect_backoff_ms: 100,
            reconnect_backoff_max_ms: 5_000,
            metadata_max_age_ms: 30_000,
            tls: TlsConfig::default(),
            sasl: SaslConfig::default(),
        }
    }
}

/// `[remote.tls]` (security.protocol=SSL / SASL_SSL).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    pub enabled: bool,
    /// PEM file of the CA certificates to trust; empty: the Mozilla roots (webpki-roots).
    pub ca_file: String,
    /// PEM client certificate chain and its private key, for mutual TLS; both or neither.
    pub cert_file: String,
    pub key_file: String,
    /// The name to verify the brokers' certificates against; empty: each broker's host.
    pub server_name: String,
    /// Verify the brokers' certificates (enable.ssl.certificate.verification).
    pub verify: bool,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            enabled: false,
            ca_file: String::new(),
            cert_file: String::new(),
            key_file: String::new(),
            server_name: String::new(),
            verify: true,
        }
    }
}

/// `[remote.sasl]`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SaslConfig {
    /// Empty (no SASL), `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`.
    pub mechanism: String,
    pub username: String,
    /// Prefer the `KDECK_SASL_PASSWORD` environment variable to writing it here.
    pub password: String,
    /// Send credentials without TLS to a host that is not loopback. Off: kdeck refuses.
    pub allow_plaintext: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    Plain,
    ScramSha256,
    ScramSha512,
}

impl SaslMechanism {
    pub fn parse(name: &str) -> Option<SaslMechanism> {
        match name.to_ascii_uppercase().as_str() {
            "PLAIN" => Some(SaslMechanism::Plain),
            "SCRAM-SHA-256" => Some(SaslMechanism::ScramSha256),
            "SCRAM-SHA-512" => Some(SaslMechanism::ScramSha512),
            _ => None,
        }
    }

    /// The name Kafka's SaslHandshake uses.
    pub fn kafka_name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslSettings {
    pub mechanism: SaslMechanism,
    pub username: String,
    pub password: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    pub ca_file: Option<std::path::PathBuf>,
    pub client_cert: Option<(std::path::PathBuf, std::path::PathBuf)>,
    pub server_name: Option<String>,
    pub verify: bool,
}

/// A broker address as the user or Metadata gave it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BrokerAddress {
    pub host: String,
    pub port: u16,
}

impl BrokerAddress {
    /// `host:port`, `[v6]:port`.
    pub fn parse(text: &str) -> Result<BrokerAddress, String> {
        let text = text.trim();
        let (host, port) = match text.strip_prefix('[') {
            Some(rest) => {
                let (host, port) = rest
                    .split_once("]:")
                    .ok_or_else(|| format!("{text:?}: expected [ipv6]:port"))?;
                (host, port)
            }
            None => text
                .rsplit_once(':')
                .ok_or_else(|| format!("{text:?}: expected host:port"))?,
        };
        if host.is_empty() {
            return Err(format!("{text:?}: the host is empty"));
        }
        let port: u16 = port
            .parse()
            .map_err(|_| format!("{text:?}: the port must be a number from 1 to 65535"))?;
        if port == 0 {
            return Err(format!("{text:?}: the port must be a number from 1 to 65535"));
        }
        Ok(BrokerAddress {
            host: host.to_string(),
            port,
        })
    }

    pub fn is_loopback(&self) -> bool {
        match self.host.parse::<IpAddr>() {
            Ok(ip) => ip.is_loopback(),
            Err(_) => self.host.eq_ignore_ascii_case("localhost"),
        }
    }
}

impl std::fmt::Display for BrokerAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// A byte stream a connection runs over: a TCP socket, or whatever a [`Dialer`] opens.
pub trait AsyncReadWrite: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> AsyncReadWrite for T {}

/// What a [`Dialer`] returns: the stream to one broker, or why there is none.
pub type DialFuture = Pin<Box<dyn Future<Output = std::io::Result<Box<dyn AsyncReadWrite>>> + Send>>;

/// Opens the stream to a broker address instead of a TCP connect (the simulation reaches its
/// brokers through in-memory pipes). TLS, ApiVersions and SASL then run over it as over TCP.
#[derive(Clone)]
pub struct Dialer(Arc<dyn Fn(&BrokerAddress) -> DialFuture + Send + Sync>);

impl Dialer {
    pub fn new(dial: impl Fn(&BrokerAddress) -> DialFuture + Send + Sync + 'static) -> Dialer {
        Dialer(Arc::new(dial))
    }

    pub fn dial(&self, address: &BrokerAddress) -> DialFuture {
        (self.0)(address)
    }
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Dialer")
    }
}

/// Two dialers are equal when they are clones of one.
impl PartialEq for Dialer {
    fn eq(&self, other: &Dialer) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Dialer {}

/// How a [`KafkaClient`] reaches a broker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Transport {
    /// A TCP connection to the broker's address.
    #[default]
    Tcp,
    /// Whatever stream the dialer opens for the address.
    Dial(Dialer),
}

/// Everything a [`KafkaClient`] needs, checked: built from [`RemoteConfig`] by
/// [`ClientSettings::from_config`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSettings {
    pub bootstrap: Vec<BrokerAddress>,
    pub client_id: String,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    pub reconnect_backoff: Duration,
    pub reconnect_backoff_max: Duration,
    pub metadata_max_age: Duration,
    pub tls: Option<TlsSettings>,
    pub sasl: Option<SaslSettings>,
    pub transport: Transport,
    /// Spread reconnect backoffs by ±20% at random so many clients do not reconnect in step;
    /// off where a run must replay exactly (the simulation).
    pub backoff_jitter: bool,
}

/// The bootstrap the CLI commands use when none is given.
pub const DEFAULT_BOOTSTRAP: &str = "127.0.0.1:9092";

impl ClientSettings {
    /// Checks `config`: addresses parse, a SASL mechanism is known and has a user, TLS files
    /// come in pairs, and credentials never go in clear text to a host that is not loopback
    /// unless `allow_plaintext` says so. An empty bootstrap means [`DEFAULT_BOOTSTRAP`].
    pub fn from_config(config: &RemoteConfig) -> Result<ClientSettings, String> {
        let bootstrap_text = if config.bootstrap.trim().is_empty() {
            DEFAULT_BOOTSTRAP
        } else {
            config.bootstrap.as_str()
        };
        let bootstrap = bootstrap_text
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(BrokerAddress::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("bootstrap servers: {e}"))?;
        if bootstrap.is_empty() {
            return Err("bootstrap servers: none given".into());
        }
        let positive = |name: &str, ms: u64| {
            if ms == 0 {
                Err(format!("{name} must be more than 0"))
            } else {
                Ok(Duration::from_millis(ms))
            }
        };
        let tls = if config.tls.enabled {
            let client_cert = match (config.tls.cert_file.is_empty(), config.tls.key_file.is_empty()) {
                (true, true) => None,
                (false, false) => Some((config.tls.cert_file.clone().into(), config.tls.key_file.clone().into())),
                _ => return Err("TLS: a client certificate needs both cert_file and key_file".into()),
            };
            Some(TlsSettings {
                ca_file: (!config.tls.ca_file.is_empty()).then(|| config.tls.ca_file.clone().into()),
                client_cert,
                server_name: (!config.tls.server_name.is_empty()).then(|| config.tls.server_name.clone()),
                verify: config.tls.verify,
            })
        } else {
            None
        };
        let sasl = if config.sasl.mechanism.is_empty() {
            None
        } else {
            let mechanism = SaslMechanism::parse(&config.sasl.mechanism).ok_or_else(|| {
                format!(
                    "SASL mechanism {:?} is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)",
                    config.sasl.mechanism
                )
            })?;
            if config.sasl.username.is_empty() {
                return Err(format!("SASL {}: a username is needed", mechanism.kafka_name()));
            }
            Some(SaslSettings {
                mechanism,
                username: config.sasl.username.clone(),
                password: config.sasl.password.clone(),
            })
        };
        if sasl.is_some()
            && tls.is_none()
            && !config.sasl.allow_plaintext
            && let Some(remote) = bootstrap.iter().find(|a| !a.is_loopback())
        {
            return Err(format!(
                "SASL credentials would go to {remote} in clear text: use TLS (--tls), or allow it \
                 with --allow-plaintext-credentials"
            ));
        }
        Ok(ClientSettings {
            bootstrap,
            client_id: config.client_id.clone(),
            connect_timeout: positive("connect_timeout_ms", config.connect_timeout_ms)?,
            request_timeout: positive("request_timeout_ms", config.request_timeout_ms)?,
            reconnect_backoff: positive("reconnect_backoff_ms", config.reconnect_backoff_ms)?,
            reconnect_backoff_max: positive("reconnect_backoff_max_ms", config.reconnect_backoff_max_ms)?,
            metadata_max_age: positive("metadata_max_age_ms", config.metadata_max_age_ms)?,
            tls,
            sasl,
            transport: Transport::Tcp,
            backoff_jitter: true,
        })
    }
}

/// What can go wrong talking to a cluster; each says which broker or address. The `broker`
/// and `address` fields hold a whole label: "broker 2 (host:port)", "bootstrap server host:port".
#[derive(Debug, Clone, thiserror::Error)]
pub enum RemoteError {
    #[error("cannot connect to {address}: {reason}")]
    Connect { address: String, reason: String },
    #[error("none of the bootstrap servers answered ({0})")]
    NoBootstrap(String),
    #[error("{api} to {broker} timed out after {ms} ms")]
    Timeout { api: String, broker: String, ms: u64 },
    #[error("connection to {broker} lost: {reason}")]
    Disconnected { broker: String, reason: String },
    #[error("TLS with {address}: {reason}")]
    Tls { address: String, reason: String },
    #[error("SASL authentication with {address} failed: {reason}")]
    Sasl { address: String, reason: String },
    #[error("{broker} does not support {api}")]
    Unsupported { api: String, broker: String },
    #[error("{broker} sent an answer kdeck cannot read: {reason}")]
    Protocol { broker: String, reason: String },
    #[error("broker {0} is not in the cluster's metadata")]
    UnknownBroker(i32),
    /// A Kafka error code in an answer, with its name (`NOT_LEADER_OR_FOLLOWER`) and what it
    /// was about; a code kdeck does not know reads "error code 200 (unknown to kdeck)".
    #[error("{context}: {}{}", code_words(*code, name), message.as_ref().map(|m| format!(": {m}")).unwrap_or_default())]
    Kafka {
        context: String,
        code: i16,
        name: String,
        message: Option<String>,
    },
    #[error("{0}")]
    Other(String),
}

impl RemoteError {
    /// A Kafka error code from an answer: `context` says what was asked ("FindCoordinator for
    /// group g"), `message` is the broker's error message when it sent one.
    pub fn kafka(context: impl Into<String>, code: i16, message: Option<&str>) -> RemoteError {
        RemoteError::Kafka {
            context: context.into(),
            code,
            name: error_name(code),
            message: message.filter(|m| !m.is_empty()).map(str::to_string),
        }
    }

    /// True for failures of the connection itself (the broker is unreachable, silent or
    /// speaks nonsense), false for answers the broker gave.
    pub fn is_connection_error(&self) -> bool {
        matches!(
            self,
            RemoteError::Connect { .. }
                | RemoteError::NoBootstrap(_)
                | RemoteError::Timeout { .. }
                | RemoteError::Disconnected { .. }
                | RemoteError::Tls { .. }
                | RemoteError::Sasl { .. }
                | RemoteError::Protocol { .. }
        )
    }
}

/// Kafka's name for an error code, as its clients print it: 6 is `NOT_LEADER_OR_FOLLOWER`,
/// 0 is `NONE`, a code this build does not know is `UNKNOWN_ERROR_CODE_<code>`.
pub fn error_name(code: i16) -> String {
    use kafka_protocol::error::ResponseError;
    match ResponseError::try_from_code(code) {
        None => "NONE".into(),
        Some(ResponseError::Unknown(code)) => format!("UNKNOWN_ERROR_CODE_{code}"),
        Some(error) => screaming_snake(&format!("{error:?}")),
    }
}

/// Whether this build knows Kafka's name for `code` (0 is `NONE`).
pub fn is_known_error(code: i16) -> bool {
    use kafka_protocol::error::ResponseError;
    !matches!(ResponseError::try_from_code(code), Some(ResponseError::Unknown(_)))
}

/// An error code in words: `NOT_LEADER_OR_FOLLOWER (6)`, or for a code newer than kdeck
/// `error code 200 (unknown to kdeck)`.
fn code_words(code: i16, name: &str) -> String {
    if is_known_error(code) {
        format!("{name} ({code})")
    } else {
        format!("error code {code} (unknown to kdeck)")
    }
}

/// `NotLeaderOrFollower` -> `NOT_LEADER_OR_FOLLOWER`.
fn screaming_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_with_clear_errors() {
        assert_eq!(
            BrokerAddress::parse("kafka-1:9092"),
            Ok(BrokerAddress {
                host: "kafka-1".into(),
                port: 9092
            })
        );
        assert_eq!(
            BrokerAddress::parse("[::1]:9093").map(|a| a.to_string()),
            Ok("[::1]:9093".into())
        );
        assert!(
            BrokerAddress::parse("kafka-1")
                .unwrap_err()
                .contains("expected host:port")
        );
        assert!(BrokerAddress::parse("h:99999").unwrap_err().contains("1 to 65535"));
        assert!(BrokerAddress::parse(":9092").unwrap_err().contains("host is empty"));
    }

    #[test]
    fn credentials_are_not_sent_in_clear_text_to_a_remote_host() {
        let mut config = RemoteConfig {
            bootstrap: "kafka.example.com:9092".into(),
            ..RemoteConfig::default()
        };
        config.sasl.mechanism = "SCRAM-SHA-512".into();
        config.sasl.username = "alice".into();
        let error = ClientSettings::from_config(&config).unwrap_err();
        assert!(error.contains("clear text"), "{error}");
        config.tls.enabled = true;
        assert!(ClientSettings::from_config(&config).is_ok());
        config.tls.enabled = false;
        config.sasl.allow_plaintext = true;
        assert!(ClientSettings::from_config(&config).is_ok());
        config.sasl.allow_plaintext = false;
        config.bootstrap = "127.0.0.1:9092".into();
        assert!(ClientSettings::from_config(&config).is_ok());
    }

    #[test]
    fn unknown_mechanisms_and_half_client_certificates_are_refused() {
        let mut config = RemoteConfig::default();
        config.sasl.mechanism = "GSSAPI".into();
        config.sasl.username = "u".into();
        assert!(
            ClientSettings::from_config(&config)
                .unwrap_err()
                .contains("not supported")
        );
        let mut config = RemoteConfig::default();
        config.tls.enabled = true;
        config.tls.cert_file = "c.pem".into();
        assert!(ClientSettings::from_config(&config).unwrap_err().contains("both"));
    }
    #[test]
    fn error_codes_have_kafka_names() {
        assert_eq!(error_name(6), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(error_name(3), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
        assert_eq!(error_name(0), "NONE");
        assert_eq!(error_name(32000), "UNKNOWN_ERROR_CODE_32000");
        let error = RemoteError::kafka("FindCoordinator for group g", 15, Some("loading"));
        assert_eq!(
            error.to_string(),
            "FindCoordinator for group g: COORDINATOR_NOT_AVAILABLE (15): loading"
        );
        assert_eq!(
            RemoteError::kafka("x", 15, Some("")).to_string(),
            "x: COORDINATOR_NOT_AVAILABLE (15)"
        );
    }

    #[test]
    fn an_error_code_newer_than_kdeck_reads_as_unknown_and_is_not_a_connection_failure() {
        assert!(!is_known_error(200));
        assert!(is_known_error(0) && is_known_error(-1) && is_known_error(6));
        let error = RemoteError::kafka("ListOffsets for t-0", 200, Some("new in Kafka 9"));
        assert_eq!(
            error.to_string(),
            "ListOffsets for t-0: error code 200 (unknown to kdeck): new in Kafka 9"
        );
        assert!(!error.is_connection_error());
    }
}
