//! `-X name=value`: librdkafka's client properties (as kcat takes them) laid onto kdeck's own
//! settings. Only names kdeck has an equivalent for are taken; any other is an error naming
//! it, as kcat's, so a script never believes a setting took effect when it did not.

use std::time::Duration;

use anyhow::{Result, bail};
use kafka_protocol::records::Compression;

use crate::remote::RemoteConfig;

/// Which command the properties are for: a producer property means nothing to a consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Producer,
    Consumer,
    /// `kdeck list`: connection properties only.
    Metadata,
}

/// Which commands a property applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Connection,
    Producer,
    Consumer,
}

/// The properties kdeck takes: every name (aliases after the first), where it applies, and
/// what it sets (printed by `-X list`).
const PROPERTIES: &[(&[&str], Scope, &str)] = &[
    (
        &["bootstrap.servers", "metadata.broker.list"],
        Scope::Connection,
        "bootstrap servers (as -b)",
    ),
    (
        &["client.id"],
        Scope::Connection,
        "the client id sent with every request",
    ),
    (
        &["security.protocol"],
        Scope::Connection,
        "plaintext, ssl, sasl_plaintext or sasl_ssl",
    ),
    (
        &["sasl.mechanisms", "sasl.mechanism"],
        Scope::Connection,
        "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
    ),
    (&["sasl.username"], Scope::Connection, "SASL user name"),
    (&["sasl.password"], Scope::Connection, "SASL password"),
    (
        &["ssl.ca.location"],
        Scope::Connection,
        "PEM file of the CA certificates to trust",
    ),
    (
        &["ssl.certificate.location"],
        Scope::Connection,
        "PEM client certificate (mutual TLS)",
    ),
    (
        &["ssl.key.location"],
        Scope::Connection,
        "PEM private key of the client certificate",
    ),
    (
        &["enable.ssl.certificate.verification"],
        Scope::Connection,
        "true or false: verify the brokers' certificates",
    ),
    (
        &["ssl.endpoint.identification.algorithm"],
        Scope::Connection,
        "https (check the host name) or none (only with verification off)",
    ),
    (
        &["socket.connection.setup.timeout.ms"],
        Scope::Connection,
        "giving up on a connect, in ms",
    ),
    (
        &["request.timeout.ms", "socket.timeout.ms"],
        Scope::Connection,
        "giving up on one request's answer, in ms",
    ),
    (
        &["reconnect.backoff.ms"],
        Scope::Connection,
        "first wait before reconnecting, in ms",
    ),
    (
        &["reconnect.backoff.max.ms"],
        Scope::Connection,
        "longest wait between reconnects, in ms",
    ),
    (
        &["metadata.max.age.ms"],
        Scope::Connection,
        "cached metadata older than this is refreshed",
    ),
    (
        &["acks", "request.required.acks"],
        Scope::Producer,
        "0, 1, all or -1 (as --acks)",
    ),
    (
        &["compression.type", "compression.codec"],
        Scope::Producer,
        "none, gzip, snappy, lz4 or zstd (as -z)",
    ),
    (
        &["linger.ms", "queue.buffering.max.ms"],
        Scope::Producer,
        "how long records wait for more before their batch leaves",
    ),
    (&["batch.num.messages"], Scope::Producer, "records per batch, at most"),
    (
        &["batch.size"],
        Scope::Producer,
        "bytes of keys and values per batch, at most",
    ),
    (
        &["message.max.bytes"],
        Scope::Producer,
        "the largest record (key and value) kdeck sends",
    ),
    (
        &["enable.idempotence"],
        Scope::Producer,
        "false only: kdeck produce is not idempotent",
    ),
    (
        &["group.id"],
        Scope::Consumer,
        "consume as a member of this group (as -g)",
    ),
    (
        &["auto.offset.reset"],
        Scope::Consumer,
        "earliest/smallest/beginning or latest/largest/end: where to start without a committed offset",
    ),
    (
        &["enable.auto.commit"],
        Scope::Consumer,
        "true or false: commit the group's offsets",
    ),
    (
        &["auto.commit.interval.ms"],
        Scope::Consumer,
        "time between offset commits",
    ),
    (
        &["heartbeat.interval.ms"],
        Scope::Consumer,
        "time between group heartbeats",
    ),
    (
        &["session.timeout.ms"],
        Scope::Consumer,
        "the coordinator drops a member silent this long",
    ),
    (
        &["fetch.wait.max.ms", "fetch.max.wait.ms"],
        Scope::Consumer,
        "how long a fetch waits at the leader for new records",
    ),
    (
        &["max.partition.fetch.bytes", "fetch.message.max.bytes"],
        Scope::Consumer,
        "bytes per partition per fetch",
    ),
    (&["fetch.max.bytes"], Scope::Consumer, "bytes per fetch response"),
];

/// What the producer and consumer properties set; None: the command's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tuning {
    pub acks: Option<i16>,
    pub compression: Option<Compression>,
    pub linger: Option<Duration>,
    pub batch_records: Option<usize>,
    pub batch_bytes: Option<usize>,
    pub message_max_bytes: Option<usize>,
    pub group: Option<String>,
    /// Where a group member starts on a partition without a committed offset: true for the
    /// beginning, false for the end.
    pub reset_to_earliest: Option<bool>,
    pub auto_commit: Option<bool>,
    pub commit_interval: Option<Duration>,
    pub heartbeat_interval: Option<Duration>,
    pub session_timeout_ms: Option<i32>,
    pub fetch_wait: Option<Duration>,
    pub partition_fetch_bytes: Option<i32>,
    pub fetch_max_bytes: Option<i32>,
}

/// The lines `-X list` prints: each property kdeck takes, where it applies, what it sets.
pub(crate) fn list() -> Vec<String> {
    PROPERTIES
        .iter()
        .map(|(names, scope, about)| {
            let scope = match scope {
                Scope::Connection => "all",
                Scope::Producer => "produce",
                Scope::Consumer => "consume",
            };
            let aliases = if names.len() > 1 {
                format!(" (also {})", names[1..].join(", "))
            } else {
                String::new()
            };
            format!("{:<40} {scope:<8} {about}{aliases}", names[0])
        })
        .collect()
}

/// Lays `properties` over `remote` (the connection) and returns what they set for `role`.
/// A name kdeck does not know, one for another role or a value it cannot read is an error.
pub(crate) fn apply(properties: &[(String, String)], role: Role, remote: &mut RemoteConfig) -> Result<Tuning> {
    let mut tuning = Tuning::default();
    let mut protocol = None;
    let mut hostname_check = None;
    for (given, value) in properties {
        // kcat passes "topic."-prefixed names to the topic configuration; ours are one set.
        let name = given.strip_prefix("topic.").unwrap_or(given);
        let Some((names, scope, _)) = PROPERTIES.iter().find(|(names, _, _)| names.contains(&name)) else {
            bail!("-X {given}: unknown or unsupported property (kdeck list -X list shows the ones kdeck takes)");
        };
        let command = match role {
            Role::Producer => "produce",
            Role::Consumer => "consume",
            Role::Metadata => "list",
        };
        match (scope, role) {
            (Scope::Connection, _) | (Scope::Producer, Role::Producer) | (Scope::Consumer, Role::Consumer) => {}
            (Scope::Producer, _) => bail!("-X {given}: a producer property, of no use to kdeck {command}"),
            (Scope::Consumer, _) => bail!("-X {given}: a consumer property, of no use to kdeck {command}"),
        }
        let value = value.trim();
        let bad = |expected: &str| anyhow::anyhow!("-X {given}={value}: expected {expected}");
        let ms = || value.parse::<u64>().map_err(|_| bad("a number of milliseconds"));
        let positive_ms = || ms().and_then(|n| if n == 0 { Err(bad("more than 0 ms")) } else { Ok(n) });
        let bytes = || {
            value
                .parse::<i32>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| bad("a positive number of bytes"))
        };
        let flag = || match value.to_ascii_lowercase().as_str() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(bad("true or false")),
        };
        match names[0] {
            "bootstrap.servers" => remote.bootstrap = value.to_string(),
            "client.id" => remote.client_id = value.to_string(),
            "security.protocol" => protocol = Some(value.to_ascii_lowercase()),
            "sasl.mechanisms" => remote.sasl.mechanism = value.to_ascii_uppercase(),
            "sasl.username" => remote.sasl.username = value.to_string(),
            "sasl.password" => remote.sasl.password = value.to_string(),
            "ssl.ca.location" => remote.tls.ca_file = value.to_string(),
            "ssl.certificate.location" => remote.tls.cert_file = value.to_string(),
            "ssl.key.location" => remote.tls.key_file = value.to_string(),
            "enable.ssl.certificate.verification" => remote.tls.verify = flag()?,
            "ssl.endpoint.identification.algorithm" => match value.to_ascii_lowercase().as_str() {
                "https" => hostname_check = Some(true),
                "none" => hostname_check = Some(false),
                _ => return Err(bad("https or none")),
            },
            "socket.connection.setup.timeout.ms" => remote.connect_timeout_ms = positive_ms()?,
            "request.timeout.ms" => remote.request_timeout_ms = positive_ms()?,
            "reconnect.backoff.ms" => remote.reconnect_backoff_ms = positive_ms()?,
            "reconnect.backoff.max.ms" => remote.reconnect_backoff_max_ms = positive_ms()?,
            "metadata.max.age.ms" => remote.metadata_max_age_ms = positive_ms()?,
            "acks" => {
                tuning.acks = Some(match value.to_ascii_lowercase().as_str() {
                    "0" => 0,
                    "1" => 1,
                    "all" | "-1" => -1,
                    _ => return Err(bad("0, 1, all or -1")),
                })
            }
            "compression.type" => {
                tuning.compression = Some(compression(value).ok_or_else(|| bad("none, gzip, snappy, lz4 or zstd"))?)
            }
            "linger.ms" => tuning.linger = Some(Duration::from_millis(ms()?)),
            "batch.num.messages" => {
                tuning.batch_records = Some(
                    value
                        .parse::<usize>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| bad("a positive number of records"))?,
                )
            }
            "batch.size" => tuning.batch_bytes = Some(bytes()?.unsigned_abs() as usize),
            "message.max.bytes" => tuning.message_max_bytes = Some(bytes()?.unsigned_abs() as usize),
            "enable.idempotence" => {
                if flag()? {
                    bail!("-X {given}=true: kdeck produce has no idempotent producer (leave it false)");
                }
            }
            "group.id" => {
                if value.is_empty() {
                    return Err(bad("a group id"));
                }
                tuning.group = Some(value.to_string())
            }
            "auto.offset.reset" => {
                tuning.reset_to_earliest = Some(match value.to_ascii_lowercase().as_str() {
                    "earliest" | "smallest" | "beginning" => true,
                    "latest" | "largest" | "end" => false,
                    _ => return Err(bad("earliest, smallest, beginning, latest, largest or end")),
                })
            }
            "enable.auto.commit" => tuning.auto_commit = Some(flag()?),
            "auto.commit.interval.ms" => tuning.commit_interval = Some(Duration::from_millis(positive_ms()?)),
            "heartbeat.interval.ms" => tuning.heartbeat_interval = Some(Duration::from_millis(positive_ms()?)),
            "session.timeout.ms" => {
                tuning.session_timeout_ms = Some(
                    value
                        .parse::<i32>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| bad("a positive number of milliseconds"))?,
                )
            }
            "fetch.wait.max.ms" => tuning.fetch_wait = Some(Duration::from_millis(ms()?)),
            "max.partition.fetch.bytes" => tuning.partition_fetch_bytes = Some(bytes()?),
            "fetch.max.bytes" => tuning.fetch_max_bytes = Some(bytes()?),
            other => bail!("-X {other}: taken but not wired up (a kdeck bug)"),
        }
    }
    if let Some(protocol) = protocol {
        let (tls, sasl) = match protocol.as_str() {
            "plaintext" => (false, false),
            "ssl" => (true, false),
            "sasl_plaintext" => (false, true),
            "sasl_ssl" => (true, true),
            other => bail!("-X security.protocol={other}: expected plaintext, ssl, sasl_plaintext or sasl_ssl"),
        };
        remote.tls.enabled = tls;
        if !sasl {
            remote.sasl.mechanism.clear();
        } else if remote.sasl.mechanism.is_empty() {
            // librdkafka's default mechanism is GSSAPI (Kerberos), which kdeck does not speak.
            bail!(
                "-X security.protocol={protocol}: also give -X sasl.mechanisms=PLAIN, SCRAM-SHA-256 or \
                 SCRAM-SHA-512 (kdeck has no GSSAPI, librdkafka's default)"
            );
        }
    }
    if hostname_check == Some(false) && remote.tls.verify {
        bail!(
            "-X ssl.endpoint.identification.algorithm=none: kdeck checks a verified certificate's \
             name always; turn verification off with -X enable.ssl.certificate.verification=false"
        );
    }
    Ok(tuning)
}

/// A codec by kcat's and librdkafka's names (`-z`, compression.codec).
pub(crate) fn compression(name: &str) -> Option<Compression> {
    Some(match name.to_ascii_lowercase().as_str() {
        "none" => Compression::None,
        "gzip" => Compression::Gzip,
        "snappy" => Compression::Snappy,
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn librdkafka_names_set_kdecks_settings() {
        let mut remote = RemoteConfig::default();
        let tuning = apply(
            &props(&[
                ("metadata.broker.list", "k1:9092,k2:9092"),
                ("client.id", "etl"),
                ("security.protocol", "SASL_SSL"),
                ("sasl.mechanism", "scram-sha-512"),
                ("sasl.username", "alice"),
                ("ssl.ca.location", "/etc/ca.pem"),
                ("request.required.acks", "1"),
                ("compression.codec", "lz4"),
                ("topic.linger.ms", "5"),
                ("batch.num.messages", "10"),
            ]),
            Role::Producer,
            &mut remote,
        )
        .expect("known properties");
        assert_eq!(remote.bootstrap, "k1:9092,k2:9092");
        assert_eq!(remote.client_id, "etl");
        assert!(remote.tls.enabled);
        assert_eq!(remote.sasl.mechanism, "SCRAM-SHA-512");
        assert_eq!(remote.sasl.username, "alice");
        assert_eq!(remote.tls.ca_file, "/etc/ca.pem");
        assert_eq!(tuning.acks, Some(1));
        assert_eq!(tuning.compression, Some(Compression::Lz4));
        assert_eq!(tuning.linger, Some(Duration::from_millis(5)));
        assert_eq!(tuning.batch_records, Some(10));
    }

    #[test]
    fn consumer_properties_set_the_group_and_where_it_starts() {
        let mut remote = RemoteConfig::default();
        let tuning = apply(
            &props(&[
                ("group.id", "billing"),
                ("auto.offset.reset", "largest"),
                ("enable.auto.commit", "false"),
            ]),
            Role::Consumer,
            &mut remote,
        )
        .expect("known properties");
        assert_eq!(tuning.group.as_deref(), Some("billing"));
        assert_eq!(tuning.reset_to_earliest, Some(false));
        assert_eq!(tuning.auto_commit, Some(false));
    }

    #[test]
    fn unknown_misplaced_and_unreadable_properties_are_errors_naming_them() {
        let error = |pairs: &[(&str, &str)], role| {
            apply(&props(pairs), role, &mut RemoteConfig::default())
                .map(|_| ())
                .expect_err("refused")
                .to_string()
        };
        assert!(error(&[("queue.buffering.max.kbytes", "1")], Role::Producer).contains("queue.buffering.max.kbytes"));
        assert!(error(&[("group.id", "g")], Role::Producer).contains("consumer property"));
        assert!(error(&[("acks", "1")], Role::Metadata).contains("producer property"));
        assert!(error(&[("acks", "2")], Role::Producer).contains("0, 1, all or -1"));
        assert!(error(&[("compression.codec", "brotli")], Role::Producer).contains("brotli"));
        assert!(error(&[("enable.idempotence", "true")], Role::Producer).contains("idempotent"));
        assert!(error(&[("security.protocol", "sasl_plaintext")], Role::Consumer).contains("GSSAPI"));
    }

    #[test]
    fn the_list_names_every_property_once() {
        let lines = list();
        assert_eq!(lines.len(), PROPERTIES.len());
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("compression.type") && l.contains("compression.codec"))
        );
    }
}
