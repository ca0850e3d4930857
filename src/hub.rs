//! The clusters one console can show, and the switch between them (`K`, `:cluster NAME`):
//! the embedded cluster (started on first use, then kept running in the background so
//! that switching back is instant; stopped when the console quits) and the configuration's
//! `[clusters.NAME]` profiles (connected on demand; the previous external cluster's client
//! is closed once the new one answers). The console only sends names and receives sources
//! (`tui::SwitchLink`); this room, at the binary's edge, knows how each is reached.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use tokio::sync::mpsc;

use crate::cli::{ClusterArgs, ConsoleTarget};
use crate::config::KdeckConfig;
use crate::embedded::{DataDir, Embedded};
use crate::remote::source::{RemoteSource, SourceOptions};
use crate::remote::{ClientSettings, KafkaClient};
use crate::tui::clusters::{ClusterChoices, EMBEDDED};
use crate::tui::{SwitchLink, Switched};
use crate::view::ClusterSource;

/// What the console may switch to and what is running.
pub struct Hub {
    config: KdeckConfig,
    /// How the embedded cluster starts when it is first asked for.
    cluster_args: ClusterArgs,
    /// `--read-only`: every external cluster opens read-only, and the embedded one (made to
    /// be changed) is not offered.
    read_only: bool,
    /// The target of the command line, when it named a profile: its flags (TLS, SASL) are
    /// kept for switching back to it.
    start: Option<ConsoleTarget>,
    embedded: Option<Arc<Embedded>>,
    /// The external cluster shown, if one is.
    remote: Option<KafkaClient>,
}

impl Hub {
    /// A hub whose console starts on `embedded`, or on the external cluster of `start` through
    /// `client`.
    pub fn new(
        config: KdeckConfig,
        cluster_args: ClusterArgs,
        read_only: bool,
        start: Option<ConsoleTarget>,
        embedded: Option<Arc<Embedded>>,
        client: Option<KafkaClient>,
    ) -> Hub {
        Hub {
            config,
            cluster_args,
            read_only,
            start,
            embedded,
            remote: client,
        }
    }

    /// The list the console shows: the embedded cluster first (unless `--read-only`), then
    /// the profiles; `current` is the one shown at start.
    pub fn choices(&self, current: Option<String>) -> ClusterChoices {
        let mut names = Vec::new();
        if !self.read_only {
            names.push(EMBEDDED.to_string());
        }
        names.extend(self.config.profile_names());
        let read_only = self
            .config
            .clusters
            .iter()
            .filter(|(_, p)| self.read_only || p.read_only)
            .map(|(n, _)| n.clone())
            .collect();
        ClusterChoices {
            names,
            current,
            connecting: None,
            read_only,
        }
    }

    /// Starts or connects cluster `name` and gives its source; on failure nothing changes.
    pub async fn switch(&mut self, name: &str) -> Result<Arc<dyn ClusterSource>, String> {
        if name == EMBEDDED && !self.read_only {
            let embedded = match &self.embedded {
                Some(e) => Arc::clone(e),
                None => {
                    let data_dir = DataDir::prepare(&self.cluster_args).map_err(|e| format!("{e:#}"))?;
                    let started = Embedded::start_in(&self.config, &self.cluster_args, data_dir)
                        .await
                        .map_err(|e| format!("starting the embedded cluster: {e:#}"))?;
                    let started = Arc::new(started);
                    tracing::info!(data_dir = %started.data_dir().display(), "embedded cluster started for the console");
                    self.embedded = Some(Arc::clone(&started));
                    started
                }
            };
            if let Some(client) = self.remote.take() {
                client.close();
            }
            return Ok(embedded);
        }
        let (remote, read_only) = match self.start.as_ref().filter(|t| t.profile.as_deref() == Some(name)) {
            Some(target) => (target.remote.clone(), target.read_only),
            None => {
                let mut remote = self.config.profile(name)?;
                // As on the command line: the password is better kept out of the file.
                if remote.sasl.password.is_empty()
                    && let Ok(password) = std::env::var("KDECK_SASL_PASSWORD")
                {
                    remote.sasl.password = password;
                }
                let read_only = self.read_only || self.config.clusters.get(name).is_some_and(|p| p.read_only);
                (remote, read_only)
            }
        };
        let settings = ClientSettings::from_config(&remote).map_err(|e| format!("[clusters.{name}] {e}"))?;
        let client = KafkaClient::connect(settings)
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", remote.bootstrap))?;
        let options = SourceOptions {
            cluster_name: Some(name.to_string()),
            ..SourceOptions::new(
                self.config.console.refresh_ms,
                self.config.console.event_history,
                read_only,
            )
        };
        let source = Arc::new(RemoteSource::start(client.clone(), options));
        if let Some(old) = self.remote.replace(client) {
            old.close();
        }
        tracing::info!(cluster = name, bootstrap = %remote.bootstrap, read_only, "console switched to an external cluster");
        Ok(source)
    }

    /// Stops what runs: the embedded cluster cleanly, the external cluster's connections.
    pub async fn shutdown(self) {
        if let Some(client) = &self.remote {
            client.close();
        }
        if let Some(embedded) = &self.embedded {
            embedded.shutdown().await;
        }
    }
}

/// Runs the console on `source` with the switcher, until the user quits; then shuts down
/// what the hub runs.
pub async fn run_console(
    hub: Hub,
    source: Arc<dyn ClusterSource>,
    current: Option<String>,
    log_path: Option<PathBuf>,
) -> Result<()> {
    let config = hub.config.clone();
    let choices = hub.choices(current);
    let (requests_tx, mut requests) = mpsc::unbounded_channel::<String>();
    let (answers_tx, answers) = mpsc::unbounded_channel();
    // The hub answers one request at a time; it ends when the console drops its sender.
    let task = tokio::spawn(async move {
        let mut hub = hub;
        while let Some(name) = requests.recv().await {
            let result = hub.switch(&name).await;
            if let Err(e) = &result {
                tracing::warn!(cluster = %name, error = %e, "switching clusters failed");
            }
            if answers_tx.send(Switched { name, result }).is_err() {
                break;
            }
        }
        hub
    });
    let link = SwitchLink {
        requests: requests_tx,
        answers,
    };
    let result = crate::tui::run_switching(source, &config, log_path, choices, link).await;
    match task.await {
        Ok(hub) => hub.shutdown().await,
        Err(e) => tracing::warn!(error = %e, "the cluster switcher stopped"),
    }
    result
}
