//! An embedded cluster serving the Kafka protocol on free ports, and a Kafka client attached
//! to it over those listeners: the two sources of one cluster that the remote-source and
//! browse-parity tests compare (tests/remote_source.rs, tests/browse_parity.rs).

use std::time::Duration;

use kdeck::cli::ClusterArgs;
use kdeck::config::KdeckConfig;
use kdeck::embedded::Embedded;
use kdeck::remote::{ClientSettings, KafkaClient, RemoteConfig};
use kdeck::view::{ClusterSource, Command, CommandOutcome};
use tokio::sync::mpsc;

/// How long a command's outcome may take.
const PATIENCE: Duration = Duration::from_secs(60);

/// Three ephemeral brokers without the demo workload, listening on free ports.
pub async fn embedded() -> Embedded {
    let mut config = KdeckConfig::default();
    config.wire.base_port = 0;
    let args = ClusterArgs {
        ephemeral: true,
        no_demo: true,
        brokers: Some(3),
        ..ClusterArgs::default()
    };
    Embedded::start(&config, &args).await.expect("the cluster starts")
}

/// The embedded cluster's listeners, `host:port,...`.
pub fn bootstrap(embedded: &Embedded) -> String {
    let listeners: Vec<String> = embedded.wire_listeners().iter().map(|l| l.addr.to_string()).collect();
    listeners.join(",")
}

/// A client of the cluster at `bootstrap`, with short timeouts.
pub async fn connect(bootstrap: &str) -> KafkaClient {
    let config = RemoteConfig {
        bootstrap: bootstrap.into(),
        connect_timeout_ms: 2_000,
        request_timeout_ms: 5_000,
        ..RemoteConfig::default()
    };
    let settings = ClientSettings::from_config(&config).expect("valid settings");
    KafkaClient::connect(settings).await.expect("the cluster answers")
}

/// Submits `command` to `source` and waits for its outcome.
pub async fn run(source: &dyn ClusterSource, command: Command) -> CommandOutcome {
    let (tx, mut outcomes) = mpsc::unbounded_channel();
    source.submit(command, tx);
    tokio::time::timeout(PATIENCE, outcomes.recv())
        .await
        .expect("an outcome in time")
        .expect("an outcome")
}
