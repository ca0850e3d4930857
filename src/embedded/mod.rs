//! The embedded cluster as a [`ClusterSource`]: a room beside `view/`, the one place that
//! knows both the engine and the view types. Here it starts (the cluster, its Kafka
//! listeners and the demo workload, from the configuration and the command-line flags, or a
//! cluster set up for a caller's own traffic) and answers the console; its parts:
//!
//! - [`data_dir`]: where the cluster keeps its data;
//! - [`views`]: engine snapshots and events mapped to `Arc<ClusterView>`s;
//! - [`timeline`]: engine events as the view's timeline lines;
//! - [`runner`]: console commands performed in the background;
//! - [`tail`]: message tails filled by in-process consumers.
//!
//! It knows no lesson: a scenario hands it a [`ClusterSetup`] and steers it through the
//! [`Traffic`] trait. The same start-up serves a headless `kdeck serve`.

mod data_dir;
mod runner;
mod tail;
mod timeline;
pub mod transactions;
mod views;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::Utc;
use tokio::sync::{OnceCell, oneshot, watch};
use tokio::task::JoinHandle;

pub use data_dir::{DataDir, remove_stale_ephemeral_dirs};
pub use tail::tail_cluster;

use crate::cli::ClusterArgs;
use crate::client::producer::Producer;
use crate::config::{ConsoleConfig, KdeckConfig};
use crate::engine::{Cluster, ClusterConfig, TopicConfig};
use crate::view::configs::ConfigsAnswer;
use crate::view::{
    ClusterSource, ClusterView, Command, CommandOutcome, ConfigTarget, OutcomeSender, TailHandle, TailSpec,
    WorkloadStats,
};
use crate::wire::{Listener, WireServer};
use crate::workload::{DemoConfig, Workload};
use views::{ViewBuilder, snapshot_loop};

/// A cluster set up for a caller's own story: its settings, and the topics to create (in
/// order) before anything runs.
#[derive(Debug, Clone)]
pub struct ClusterSetup {
    pub cluster: ClusterConfig,
    pub topics: Vec<(String, TopicConfig)>,
}

/// What a [`Traffic`] command answers, once performed.
pub type Steered<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// Traffic that runs on the cluster in place of the demo and that console commands steer:
/// its producers' acks, its groups' members. A scenario's workload is one.
pub trait Traffic: Send + Sync {
    /// What it counted so far (acknowledged, failed, lost...), for the view.
    fn stats(&self) -> WorkloadStats;
    /// Ends it; called once, when the cluster shuts down.
    fn stop(&self);
    /// Every producer's `acks` from now on (0, 1 or -1 for all).
    fn set_acks(&self, acks: i16) -> Steered<'_, ()>;
    /// One more member in `group`; answers the members it has now.
    fn add_member<'a>(&'a self, group: &'a str) -> Steered<'a, usize>;
    /// One member fewer in `group`; answers the members it has now.
    fn remove_member<'a>(&'a self, group: &'a str) -> Steered<'a, usize>;
    /// Stops (or resumes) `group`'s members' polling, without leaving the group.
    fn pause_group<'a>(&'a self, group: &'a str, paused: bool) -> Steered<'a, ()>;
}

struct Shared {
    cluster: Cluster,
    /// The brokers' Kafka listeners (`[wire]`); a broker added live gets one too.
    wire: Option<WireServer>,
    demo: Option<DemoConfig>,
    workload: tokio::sync::Mutex<Option<Workload>>,
    /// Traffic that steers the cluster instead of the demo (a scenario's producers and groups).
    traffic: Option<Box<dyn Traffic>>,
    demo_running: std::sync::atomic::AtomicBool,
    /// The demo's producers' `acks` as last set (it outlives a pause of the demo).
    demo_acks: std::sync::atomic::AtomicI16,
    producer: OnceCell<Producer>,
    console: ConsoleConfig,
}

/// A running embedded cluster with its view task; call [`Embedded::shutdown`] to stop it.
pub struct Embedded {
    shared: Arc<Shared>,
    views: watch::Receiver<Arc<ClusterView>>,
    snapshot_task: Mutex<Option<JoinHandle<()>>>,
    data_dir: Mutex<Option<DataDir>>,
    data_path: PathBuf,
    /// The runtime the cluster was started on: commands and tails run there too, so every
    /// engine task reads one tokio clock (a scenario's cluster runs on a runtime of its own,
    /// whose clock a replay pauses).
    runtime: tokio::runtime::Handle,
}

impl Embedded {
    /// Prepares the data directory from the flags and starts everything.
    pub async fn start(config: &KdeckConfig, args: &ClusterArgs) -> Result<Embedded> {
        let dir = DataDir::prepare(args)?;
        Embedded::start_in(config, args, dir).await
    }

    /// Starts the cluster in an already prepared data directory (the console prepares it
    /// first to put its log file there).
    pub async fn start_in(config: &KdeckConfig, args: &ClusterArgs, data_dir: DataDir) -> Result<Embedded> {
        // The log (kdeck.log, `kdeck serve`'s output) says events as the timeline does.
        crate::engine::log_events_in_words(|kind| timeline::describe(kind).text());
        let mut cluster_config = config.cluster_config();
        cluster_config.data_dir = data_dir.path().to_path_buf();
        if let Some(n) = args.brokers {
            cluster_config.brokers = n;
        }
        let cluster = Cluster::start(cluster_config).await?;
        let wire = Embedded::listen(config, &cluster).await?;
        let demo = (!args.no_demo).then(|| config.demo.clone());
        let workload = match &demo {
            Some(d) => match Workload::start(&cluster, d.clone()).await {
                Ok(w) => Some(w),
                Err(e) => {
                    cluster.shutdown().await;
                    return Err(e.context("starting the demo workload"));
                }
            },
            None => None,
        };
        Ok(Embedded::assemble(
            config, cluster, wire, data_dir, demo, workload, None,
        ))
    }

    /// Sets up the cluster `setup` describes (its settings, then its topics, every partition
    /// with a leader) in `data_dir`, without the demo, and starts its Kafka listeners. The
    /// caller starts its own traffic on [`Starting::cluster`], then [`Starting::run`]s it.
    pub async fn set_up(config: &KdeckConfig, setup: &ClusterSetup, data_dir: DataDir) -> Result<Starting> {
        let mut cluster_config = setup.cluster.clone();
        cluster_config.data_dir = data_dir.path().to_path_buf();
        let cluster = Cluster::start(cluster_config).await?;
        let started = async {
            for (name, topic) in &setup.topics {
                cluster
                    .create_topic(name, topic.clone())
                    .await
                    .with_context(|| format!("creating topic {name}"))?;
            }
            // Traffic starts once every partition has a leader, so the story starts calm.
            let names: Vec<&str> = setup.topics.iter().map(|(name, _)| name.as_str()).collect();
            cluster
                .wait_for(Duration::from_secs(30), |s| {
                    names.iter().all(|n| s.partitions.iter().any(|p| p.tp.topic == *n))
                        && s.partitions
                            .iter()
                            .filter(|p| names.contains(&p.tp.topic.as_str()))
                            .all(|p| p.leader.is_some())
                })
                .await
                .context("waiting for the topics' partitions to have leaders")
        };
        if let Err(e) = started.await {
            cluster.shutdown().await;
            return Err(e);
        }
        let wire = Embedded::listen(config, &cluster).await?;
        Ok(Starting {
            config: config.clone(),
            cluster,
            wire,
            data_dir,
        })
    }

    /// Kafka clients reach the same brokers the console shows (`[wire]`).
    async fn listen(config: &KdeckConfig, cluster: &Cluster) -> Result<Option<WireServer>> {
        if !config.wire.enabled {
            return Ok(None);
        }
        match WireServer::start(cluster.clone(), config.wire.clone()).await {
            Ok(server) => Ok(Some(server)),
            Err(e) => {
                cluster.shutdown().await;
                Err(anyhow::Error::new(e).context("starting the Kafka listeners ([wire])"))
            }
        }
    }

    fn assemble(
        config: &KdeckConfig,
        cluster: Cluster,
        wire: Option<WireServer>,
        data_dir: DataDir,
        demo: Option<DemoConfig>,
        workload: Option<Workload>,
        traffic: Option<Box<dyn Traffic>>,
    ) -> Embedded {
        let events = cluster.events();
        let shared = Arc::new(Shared {
            demo_running: std::sync::atomic::AtomicBool::new(workload.is_some()),
            demo_acks: std::sync::atomic::AtomicI16::new(-1),
            cluster,
            wire,
            demo,
            workload: tokio::sync::Mutex::new(workload),
            traffic,
            producer: OnceCell::new(),
            console: config.console.clone(),
        });
        let mut builder = ViewBuilder::new(&config.console, &shared.wire_listeners());
        let first = Arc::new(builder.build(&shared.cluster.snapshot(), shared.demo_state(), Utc::now()));
        let (tx, views) = watch::channel(first);
        let task = tokio::spawn(snapshot_loop(Arc::clone(&shared), builder, events, tx));
        Embedded {
            shared,
            views,
            snapshot_task: Mutex::new(Some(task)),
            data_path: data_dir.path().to_path_buf(),
            data_dir: Mutex::new(Some(data_dir)),
            runtime: tokio::runtime::Handle::current(),
        }
    }

    pub fn cluster(&self) -> &Cluster {
        &self.shared.cluster
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_path
    }

    /// Every broker's Kafka listener address (none when `[wire] enabled = false`).
    pub fn wire_listeners(&self) -> Vec<Listener> {
        self.shared.wire_listeners()
    }

    /// Brings the Kafka listeners in step with the brokers' states now, so a script that
    /// just killed or started a broker sees its port closed or open.
    pub async fn wire_sync(&self) {
        self.shared.wire_sync().await;
    }

    /// Stops the demo, the view task and every broker (logs closed cleanly); an ephemeral
    /// data directory is removed.
    pub async fn shutdown(&self) {
        if let Some(w) = self.shared.workload.lock().await.take() {
            w.stop();
        }
        if let Some(t) = &self.shared.traffic {
            t.stop();
        }
        if let Some(t) = lock(&self.snapshot_task).take() {
            t.abort();
        }
        if let Some(server) = &self.shared.wire {
            server.shutdown();
        }
        if let Some(p) = self.shared.producer.get() {
            p.clone().close().await;
        }
        self.shared.cluster.shutdown().await;
        lock(&self.data_dir).take();
    }
}

impl ClusterSource for Embedded {
    fn views(&self) -> watch::Receiver<Arc<ClusterView>> {
        self.views.clone()
    }

    fn submit(&self, command: Command, outcomes: OutcomeSender) {
        let shared = Arc::clone(&self.shared);
        self.runtime.spawn(async move {
            let result = shared.execute(&command).await.map_err(|e| format!("{e:#}"));
            if let Err(e) = &result {
                tracing::warn!(%command, error = %e, "console command failed");
            }
            let _ = outcomes.send(CommandOutcome { command, result });
        });
    }

    fn tail(&self, spec: TailSpec, capacity: usize) -> TailHandle {
        tail::tail_on(&self.runtime, &self.shared.cluster, spec, capacity)
    }

    fn describe_configs(&self, target: ConfigTarget) -> oneshot::Receiver<ConfigsAnswer> {
        // The engine answers from its metadata image at once: nothing to wait for.
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(self.shared.describe_configs(&target));
        rx
    }

    /// The embedded cluster has no authorizer: it keeps no ACLs and refuses nobody.
    fn describe_acls(&self) -> oneshot::Receiver<crate::view::acls::AclsAnswer> {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(Ok(crate::view::acls::Acls::NoAuthorizer { embedded: true }));
        rx
    }

    fn describe_transactions(&self) -> oneshot::Receiver<crate::view::transactions::TransactionsAnswer> {
        let (tx, rx) = oneshot::channel();
        let cluster = self.shared.cluster.clone();
        self.runtime.spawn(async move {
            let _ = tx.send(transactions::describe_all(&cluster).await);
        });
        rx
    }
}

impl Shared {
    fn wire_listeners(&self) -> Vec<Listener> {
        self.wire.as_ref().map_or_else(Vec::new, WireServer::listeners)
    }

    async fn wire_sync(&self) {
        if let Some(server) = &self.wire {
            server.sync().await;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A cluster [`Embedded::set_up`] made, listening, whose views have not started: the caller
/// starts its traffic on it, then [`Starting::run`]s it, or [`Starting::abandon`]s it.
pub struct Starting {
    config: KdeckConfig,
    cluster: Cluster,
    wire: Option<WireServer>,
    data_dir: DataDir,
}

impl Starting {
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// The running source, steered by `traffic`.
    pub fn run(self, traffic: Box<dyn Traffic>) -> Embedded {
        Embedded::assemble(
            &self.config,
            self.cluster,
            self.wire,
            self.data_dir,
            None,
            None,
            Some(traffic),
        )
    }

    /// Shuts the cluster down (its traffic could not start); an ephemeral directory goes.
    pub async fn abandon(self) {
        if let Some(server) = &self.wire {
            server.shutdown();
        }
        self.cluster.shutdown().await;
    }
}
