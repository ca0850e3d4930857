//! A scenario presented in the console (trainer mode): the trainer's keys arrive as
//! [`ScenarioControl`]s, the [`Player`] runs steps against the embedded cluster, and what it
//! does goes back to the console as [`TrainerUpdate`]s. Each step ends holding the cluster
//! still (its clock stops, the header says HELD) until the trainer goes on.
//!
//! The scenario's cluster and the player run on a runtime of their own, on a thread of
//! their own: a current-thread runtime, whose clock a replay can pause. Going back a step
//! starts the scenario again on a fresh cluster and replays it to the step before on the
//! paused clock (the same story the headless run tells, in a second or two, not in real
//! time), so what the room sees after `N` is what it saw the first time, not an undo.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::mpsc;

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

/// The running driver: its thread, which owns the scenario's cluster.
pub struct Driver {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Driver {
    /// Stops the driver and shuts its cluster down (logs closed, the data removed); blocks
    /// until that is done, so call it outside any runtime.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The cluster a presentation starts on, and starts again on when the trainer goes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterRecipe {
    /// The scenario's own setup: its brokers, topics, producers and groups.
    Setup,
    /// The console's own cluster as `kdeck record` started it: its brokers, with the demo
    /// traffic or without (a recording played in the console).
    Console { brokers: i32, demo: bool },
}

/// A fresh cluster for `scenario` in a new temporary directory, made as `recipe` says.
pub async fn start_cluster(scenario: &Scenario, recipe: &ClusterRecipe, config: &KdeckConfig) -> Result<Arc<Embedded>> {
    let args = ClusterArgs {
        data_dir: None,
        ephemeral: true,
        brokers: None,
        no_demo: true,
        config: None,
    };
    match recipe {
        ClusterRecipe::Setup => {
            let dir = DataDir::prepare(&args)?;
            Ok(Arc::new(start_embedded(config, &scenario.setup, dir).await?))
        }
        ClusterRecipe::Console { brokers, demo } => {
            let args = ClusterArgs {
                brokers: Some(*brokers),
                no_demo: !demo,
                ..args
            };
            let dir = DataDir::prepare(&args)?;
            Ok(Arc::new(Embedded::start_in(config, &args, dir).await?))
        }
    }
}

/// Starts `scenario` on a fresh cluster on the driver's own thread and runtime; returns
/// the driver, the console's link to it, and the first cluster (to show at once).
pub fn spawn(scenario: Scenario, config: KdeckConfig) -> Result<(Driver, TrainerLink, Arc<Embedded>)> {
    spawn_on(scenario, ClusterRecipe::Setup, config)
}

/// [`spawn`] on the cluster `recipe` makes.
pub fn spawn_on(
    scenario: Scenario,
    recipe: ClusterRecipe,
    config: KdeckConfig,
) -> Result<(Driver, TrainerLink, Arc<Embedded>)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the scenario's runtime")?;
    let (controls_tx, controls) = mpsc::unbounded_channel();
    let (updates_tx, updates) = mpsc::unbounded_channel();
    let (first_tx, first_rx) = std::sync::mpsc::channel::<Result<Arc<Embedded>>>();
    let (stop_tx, stop) = tokio::sync::oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("kdeck-scenario".into())
        .spawn(move || {
            runtime.block_on(async move {
                let first = match start_cluster(&scenario, &recipe, &config)
                    .await
                    .with_context(|| format!("setting up scenario {}", scenario.name))
                {
                    Ok(first) => first,
                    Err(e) => {
                        let _ = first_tx.send(Err(e));
                        return;
                    }
                };
                let current = Arc::clone(&first);
                let _ = first_tx.send(Ok(first));
                let mut current = current;
                tokio::select! {
                    () = drive(&scenario, &recipe, &config, &mut current, controls, &updates_tx) => {}
                    _ = stop => {}
                }
                current.shutdown().await;
            });
        })
        .context("starting the scenario's thread")?;
    let first = first_rx
        .recv()
        .context("the scenario's thread ended before its cluster started")??;
    Ok((
        Driver {
            stop: Some(stop_tx),
            thread: Some(thread),
        },
        TrainerLink {
            controls: controls_tx,
            updates,
        },
        first,
    ))
}

/// Which step `N` goes back to when `shown` (0-based) is on screen: the one before it, or
/// the start (no step run) from the first step.
pub fn back_from(shown: Option<usize>) -> Option<usize> {
    shown.and_then(|s| s.checked_sub(1))
}

async fn drive(
    scenario: &Scenario,
    recipe: &ClusterRecipe,
    config: &KdeckConfig,
    current: &mut Arc<Embedded>,
    mut controls: mpsc::UnboundedReceiver<ScenarioControl>,
    tx: &mpsc::UnboundedSender<TrainerUpdate>,
) {
    let mut player = Player::new(scenario.clone());
    let loaded = || TrainerUpdate::Loaded {
        title: scenario.title.clone(),
        steps: scenario.steps.len(),
        lang: scenario.language.clone(),
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
                    step(&mut player, current.as_ref(), tx).await;
                }
            }
            ScenarioControl::Next => {
                if !player.finished() {
                    step(&mut player, current.as_ref(), tx).await;
                }
                if player.finished() && playing {
                    playing = false;
                    let _ = tx.send(TrainerUpdate::Playing(false));
                }
            }
            ScenarioControl::Previous => {
                let shown = player.next_step().checked_sub(1);
                let to = back_from(shown);
                let _ = tx.send(TrainerUpdate::Replaying { to });
                // The old cluster goes first: the new one takes the same Kafka ports.
                current.shutdown().await;
                match start_cluster(scenario, recipe, config).await {
                    Ok(fresh) => {
                        *current = Arc::clone(&fresh);
                        let _ = tx.send(TrainerUpdate::Source(Arc::clone(&fresh) as Arc<dyn ClusterSource>));
                        player = Player::new(scenario.clone());
                        let _ = tx.send(loaded());
                        if let Some(to) = to {
                            replay(&mut player, fresh.as_ref(), to, tx).await;
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

/// Runs the steps up to `to` (0-based, included) on tokio's paused clock: the cluster's
/// simulated seconds pass as fast as it can work, as in a headless run. The last step ends
/// held, as every step does, so resuming real time changes nothing on screen.
async fn replay(player: &mut Player, source: &dyn ClusterSource, to: usize, tx: &mpsc::UnboundedSender<TrainerUpdate>) {
    // The driver's runtime is current-thread (see `spawn`), where the clock can be paused.
    tokio::time::pause();
    while player.next_step() <= to && !player.finished() {
        step(player, source, tx).await;
    }
    tokio::time::resume();
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

/// A check as the console lists it: what it checks, then what it saw, as the headless run
/// prints it ("acknowledged records lost >= 1 (lost 64)").
fn said(what: &str, v: &super::check::Verdict) -> String {
    if v.saw.is_empty() {
        what.to_string()
    } else {
        format!("{what} ({})", v.saw)
    }
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
                .iter()
                .map(|(what, v)| (said(what, v), v.holds.then_some(true)))
                .collect(),
        )],
        PlayerEvent::StepEnded(report) => {
            let mut checks: Vec<(String, Option<bool>)> = report
                .waited
                .iter()
                .chain(&report.expects)
                .map(|(what, v)| (said(what, v), Some(v.holds)))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_goes_exactly_one_step() {
        // Step 4 on screen (index 3): back shows step 3 (index 2).
        assert_eq!(back_from(Some(3)), Some(2));
        assert_eq!(back_from(Some(1)), Some(0));
        // From the first step, back is the start, before any step.
        assert_eq!(back_from(Some(0)), None);
        assert_eq!(back_from(None), None);
    }
}
