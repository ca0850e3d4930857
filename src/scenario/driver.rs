//! A scenario presented in the console (trainer mode): the trainer's keys arrive as
//! [`ScenarioControl`]s, the [`Player`] runs steps against the embedded cluster, and what it
//! does goes back to the console as [`TrainerUpdate`]s. Going back a step starts the
//! scenario again on a fresh cluster and replays it to that step, so what the room sees
//! after `N` is what it saw the first time, not an undo.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinHandle;

use super::Scenario;
use super::player::{Player, PlayerEvent};
use super::workload::start_embedded;
use crate::cli::ClusterArgs;
use crate::config::KdeckConfig;
use crate::embedded::{DataDir, Embedded};
use crate::tui::{ScenarioControl, TrainerLink, TrainerUpdate};
use crate::view::ClusterSource;

/// How long playing lingers on a finished step before the next one starts.
pub const PLAY_PAUSE: Duration = Duration::from_secs(4);

/// The running driver: the cluster it presents now (going back replaces it).
pub struct Driver {
    pub current: Arc<Mutex<Arc<Embedded>>>,
    pub task: JoinHandle<()>,
}

impl Driver {
    /// Stops the driver and shuts its cluster down.
    pub async fn shutdown(self) {
        self.task.abort();
        let current = self.current.lock().await.clone();
        current.shutdown().await;
    }
}

/// A fresh cluster for `scenario` in a new temporary directory.
pub async fn start_cluster(scenario: &Scenario, config: &KdeckConfig) -> Result<Arc<Embedded>> {
    let args = ClusterArgs {
        data_dir: None,
        ephemeral: true,
        brokers: None,
        no_demo: true,
        config: None,
    };
    let dir = DataDir::prepare(&args)?;
    Ok(Arc::new(start_embedded(config, &scenario.setup, dir).await?))
}

/// Starts presenting `scenario` on `first` (its cluster, already started).
pub fn spawn(scenario: Scenario, config: KdeckConfig, first: Arc<Embedded>) -> (Driver, TrainerLink) {
    let (controls_tx, controls) = mpsc::unbounded_channel();
    let (updates_tx, updates) = mpsc::unbounded_channel();
    let current = Arc::new(Mutex::new(first));
    let task = tokio::spawn(drive(scenario, config, Arc::clone(&current), controls, updates_tx));
    (
        Driver { current, task },
        TrainerLink {
            controls: controls_tx,
            updates,
        },
    )
}

async fn drive(
    scenario: Scenario,
    config: KdeckConfig,
    current: Arc<Mutex<Arc<Embedded>>>,
    mut controls: mpsc::UnboundedReceiver<ScenarioControl>,
    tx: mpsc::UnboundedSender<TrainerUpdate>,
) {
    let mut player = Player::new(scenario.clone());
    let loaded = || TrainerUpdate::Loaded {
        title: scenario.title.clone(),
        steps: scenario.steps.len(),
    };
    let _ = tx.send(loaded());
    let mut playing = false;
    loop {
        let control = if playing && !player.finished() {
            tokio::select! {
                c = controls.recv() => c,
                () = tokio::time::sleep(PLAY_PAUSE) => Some(ScenarioControl::Next),
            }
        } else {
            controls.recv().await
        };
        let Some(control) = control else {
            return;
        };
        match control {
            ScenarioControl::TogglePlay => {
                playing = !playing;
                let _ = tx.send(TrainerUpdate::Playing(playing));
                if playing && !player.finished() {
                    let source = current.lock().await.clone();
                    step(&mut player, source.as_ref(), &tx).await;
                }
            }
            ScenarioControl::Next => {
                if !player.finished() {
                    let source = current.lock().await.clone();
                    step(&mut player, source.as_ref(), &tx).await;
                }
            }
            ScenarioControl::Previous => {
                // The step before the one shown: replay every step before it, then the
                // trainer runs it again with `n`.
                let to = player.next_step().saturating_sub(2);
                let _ = tx.send(TrainerUpdate::Replaying { to });
                let mut slot = current.lock().await;
                // The old cluster goes first: the new one takes the same Kafka ports.
                slot.shutdown().await;
                match start_cluster(&scenario, &config).await {
                    Ok(fresh) => {
                        *slot = Arc::clone(&fresh);
                        drop(slot);
                        let _ = tx.send(TrainerUpdate::Source(Arc::clone(&fresh) as Arc<dyn ClusterSource>));
                        player = Player::new(scenario.clone());
                        let _ = tx.send(loaded());
                        for _ in 0..to {
                            step(&mut player, fresh.as_ref(), &tx).await;
                        }
                        let _ = tx.send(TrainerUpdate::Ready);
                    }
                    Err(e) => {
                        let _ = tx.send(TrainerUpdate::Command {
                            text: "starting the scenario again".into(),
                            outcome: Err(format!("{e:#}")),
                        });
                        return;
                    }
                }
            }
        }
    }
}

/// Runs the player's next step, passing what it says on to the console as it happens.
async fn step(player: &mut Player, source: &dyn ClusterSource, tx: &mpsc::UnboundedSender<TrainerUpdate>) {
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let forward = {
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                for update in updates_of(event) {
                    let _ = tx.send(update);
                }
            }
        })
    };
    player.step(source, &events_tx).await;
    drop(events_tx);
    let _ = forward.await;
}

/// What the console is told of a player event.
pub fn updates_of(event: PlayerEvent) -> Vec<TrainerUpdate> {
    match event {
        PlayerEvent::StepStarted {
            index, caption, why, ..
        } => vec![TrainerUpdate::Step { index, caption, why }],
        PlayerEvent::Command { text, outcome } => vec![TrainerUpdate::Command { text, outcome }],
        PlayerEvent::Console(action) => vec![TrainerUpdate::Console(action)],
        // The console opens the explanation itself (the Console action), live.
        PlayerEvent::Explained { .. } => Vec::new(),
        PlayerEvent::Waiting(verdicts) => vec![TrainerUpdate::Checks(
            verdicts
                .into_iter()
                .map(|(what, v)| (what, v.holds.then_some(true)))
                .collect(),
        )],
        PlayerEvent::StepEnded(report) => {
            let mut checks: Vec<(String, Option<bool>)> = report
                .waited
                .iter()
                .chain(&report.expects)
                .map(|(what, v)| {
                    let said = if v.holds {
                        what.clone()
                    } else {
                        format!("{what}: {}", v.saw)
                    };
                    (said, Some(v.holds))
                })
                .collect();
            checks.extend(report.errors.iter().map(|e| (e.clone(), Some(false))));
            vec![
                TrainerUpdate::Checks(checks),
                TrainerUpdate::Ended {
                    passed: report.passed(),
                },
            ]
        }
    }
}
