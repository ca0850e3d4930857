//! `kdeck replay FILE`: a fresh ephemeral cluster built as recorded (brokers, demo on or
//! off), the recording's replayable actions performed at their times as cluster commands
//! (each awaited), and the new run's timeline recorded the way the console records it.
//! It runs on tokio's paused clock in a current-thread runtime, so a long session replays
//! in seconds and two replays tell the same story.

use std::time::Duration;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};

use super::{Recorder, Recording};
use crate::cli::ClusterArgs;
use crate::config::KdeckConfig;
use crate::embedded::{DataDir, Embedded};
use crate::scenario::player::perform;
use crate::tui::Effect;
use crate::view::ClusterSource;

/// How often the replay reads the cluster's view for new events, in simulated time.
const TICK: Duration = Duration::from_millis(100);

/// Replays `recording` on a fresh cluster and returns the new run, recorded. Call it inside
/// a runtime whose clock is paused; `print` gets each command with its outcome.
pub async fn run(recording: &Recording, config: &KdeckConfig, print: &mut dyn FnMut(&str)) -> Result<Recording> {
    let mut config = config.clone();
    config.wire.enabled = false;
    let dir = crate::scenario::headless::scratch_dir("kdeck-replay-")?;
    let header = &recording.recording;
    let args = ClusterArgs {
        brokers: Some(header.brokers),
        no_demo: !header.demo,
        ..ClusterArgs::default()
    };
    let embedded = Embedded::start_in(&config, &args, DataDir::Ephemeral(dir))
        .await
        .context("starting the cluster to replay on")?;
    let result = play(recording, &embedded, print).await;
    embedded.shutdown().await;
    result
}

async fn play(recording: &Recording, source: &dyn ClusterSource, print: &mut dyn FnMut(&str)) -> Result<Recording> {
    let header = &recording.recording;
    let started = Utc::now();
    let clock = tokio::time::Instant::now();
    let now = || -> DateTime<Utc> {
        started + chrono::Duration::from_std(clock.elapsed()).unwrap_or(chrono::Duration::zero())
    };
    let views = source.views();
    let recorder = Recorder::new(
        started,
        header.brokers,
        header.demo,
        header.config.clone(),
        &views.borrow().clone(),
    );
    for recorded in recording.replayable() {
        let Some(command) = recorded.command() else {
            continue;
        };
        collect_until(&recorder, &views, clock + Duration::from_millis(recorded.at_ms), now).await;
        let text = command.to_string();
        let action = recorded.performs.clone().unwrap_or_else(|| recorded.action.clone());
        recorder.action(now(), action, &[Effect::Submit(command.clone())]);
        match perform(source, command).await {
            Ok(outcome) => print(&format!(
                "{:>8.1} s > {text}: {outcome}",
                recorded.at_ms as f64 / 1000.0
            )),
            Err(e) => print(&format!(
                "{:>8.1} s > {text}: refused: {e}",
                recorded.at_ms as f64 / 1000.0
            )),
        }
        // What the command caused is seen after it, never at its very time.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    collect_until(&recorder, &views, clock + Duration::from_millis(header.ended_ms), now).await;
    Ok(recorder.finish(now()))
}

/// Records the new events of each view until `due`.
async fn collect_until(
    recorder: &Recorder,
    views: &tokio::sync::watch::Receiver<std::sync::Arc<crate::view::ClusterView>>,
    due: tokio::time::Instant,
    now: impl Fn() -> DateTime<Utc>,
) {
    loop {
        let view = views.borrow().clone();
        recorder.events(now(), &view);
        let left = due.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return;
        }
        tokio::time::sleep(left.min(TICK)).await;
    }
}

/// Replays on a paused clock of its own (a current-thread runtime).
pub fn run_blocking(recording: &Recording, config: &KdeckConfig, print: &mut dyn FnMut(&str)) -> Result<Recording> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .context("starting the runtime")?;
    runtime.block_on(run(recording, config, print))
}
