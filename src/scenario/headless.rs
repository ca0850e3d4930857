//! A scenario run without a screen: `kdeck scenario run NAME --headless` and the tests. The
//! cluster runs on tokio's paused clock (a current-thread runtime), so a scenario's
//! simulated minutes cost real seconds and every run tells the same story. It prints the
//! captions, the commands with their outcomes, the checks with what they saw, and the
//! timeline; [`RunSummary::trace`] is the run's normalised timeline, the golden trace the
//! tests keep.

use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::mpsc;

use super::Scenario;
use super::player::{Player, PlayerEvent, StepReport};
use super::workload::start_embedded;
use crate::config::KdeckConfig;
use crate::embedded::DataDir;
use crate::tui::Action;
use crate::view::ClusterSource;
use crate::view::words::count;

/// How a headless run went.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub steps: Vec<StepReport>,
    /// Simulated time the steps took.
    pub simulated: Duration,
    /// The run's story with what varies between runs taken out: each step's commands,
    /// checks and (sorted, counted) timeline events, with times and large numbers masked.
    pub trace: Vec<String>,
}

impl RunSummary {
    pub fn passed(&self) -> bool {
        self.steps.iter().all(StepReport::passed)
    }

    /// The checks that failed, as "step N: description: saw".
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in &self.steps {
            let n = s.index + 1;
            if !s.reached {
                for (what, v) in s.waited.iter().filter(|(_, v)| !v.holds) {
                    out.push(format!("step {n}: waited in vain for {what}: {}", v.saw));
                }
            }
            for e in &s.errors {
                out.push(format!("step {n}: {e}"));
            }
            for (what, v) in s.expects.iter().filter(|(_, v)| !v.holds) {
                out.push(format!("step {n}: expected {what}: {}", v.saw));
            }
        }
        out
    }
}

/// Runs `scenario` (already translated) on a fresh cluster in a temporary directory,
/// printing as it goes through `print` (nothing printed when it ignores its lines).
/// Call it inside a runtime whose clock is paused.
pub async fn run(scenario: &Scenario, config: &KdeckConfig, print: &mut dyn FnMut(&str)) -> Result<RunSummary> {
    run_paced(scenario, config, &mut |_| Duration::ZERO, print).await
}

/// [`run`] as a trainer presents it: before each step after the first, `pause(step)`
/// passes (tokio time, 0-based step) while the trainer talks and the previous step holds
/// the cluster, or lets it run when that step says `keep_running`.
pub async fn run_paced(
    scenario: &Scenario,
    config: &KdeckConfig,
    pause: &mut dyn FnMut(usize) -> Duration,
    print: &mut dyn FnMut(&str),
) -> Result<RunSummary> {
    let mut config = config.clone();
    config.wire.enabled = false;
    let dir = scratch_dir("kdeck-scenario-")?;
    let embedded = start_embedded(&config, &scenario.setup, DataDir::Ephemeral(dir))
        .await
        .with_context(|| format!("setting up scenario {}", scenario.name))?;
    print(&format!("{}: {}", scenario.name, scenario.title));
    print(&format!("  {}", scenario.concept));
    let result = play(scenario, &embedded, pause, print).await;
    embedded.shutdown().await;
    result
}

async fn play(
    scenario: &Scenario,
    source: &dyn ClusterSource,
    pause: &mut dyn FnMut(usize) -> Duration,
    print: &mut dyn FnMut(&str),
) -> Result<RunSummary> {
    let mut player = Player::new(scenario.clone());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut steps = Vec::new();
    let mut trace = Vec::new();
    loop {
        let next = player.next_step();
        if next > 0 && !player.finished() {
            let wait = pause(next);
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }
        let Some(report) = player.step(source, &tx).await else {
            break;
        };
        let mut commands = Vec::new();
        while let Ok(event) = rx.try_recv() {
            for line in lines(&event) {
                print(&line);
            }
            if let PlayerEvent::Command { text, outcome } = &event {
                commands.push(format!(
                    "  > {text}: {}",
                    match outcome {
                        Ok(_) => "ok",
                        Err(_) => "refused",
                    }
                ));
            }
        }
        trace.push(format!("step {}", report.index + 1));
        trace.extend(commands);
        for (what, v) in report.waited.iter().chain(&report.expects) {
            trace.push(format!("  {} {what}", mark(v.holds)));
        }
        trace.extend(normalise(&report.events).into_iter().map(|e| format!("  | {e}")));
        steps.push(report);
    }
    let simulated = steps.iter().map(|s| s.took).sum();
    let summary = RunSummary {
        steps,
        simulated,
        trace,
    };
    let failures = summary.failures();
    if failures.is_empty() {
        print(&format!(
            "passed: {} in {:.1} s simulated",
            count(summary.steps.len(), "step"),
            simulated.as_secs_f64()
        ));
    } else {
        print(&format!("FAILED: {}", count(failures.len(), "check")));
        for f in &failures {
            print(&format!("  {f}"));
        }
    }
    Ok(summary)
}

fn mark(holds: bool) -> &'static str {
    if holds { "✓" } else { "✗" }
}

/// How the headless run prints one player event.
pub fn lines(event: &PlayerEvent) -> Vec<String> {
    match event {
        PlayerEvent::StepStarted {
            index,
            total,
            caption,
            why,
        } => {
            let mut out = vec![String::new(), format!("[{}/{}]", index + 1, total)];
            out.extend(caption.lines().map(|l| format!("  {l}")));
            if let Some(w) = why {
                out.push(format!("  why: {w}"));
            }
            out
        }
        PlayerEvent::Command { text, outcome } => vec![match outcome {
            Ok(s) => format!("  > {text}: {s}"),
            Err(e) => format!("  > {text}: refused: {e}"),
        }],
        PlayerEvent::Console(Action::Explain { .. }) => Vec::new(),
        PlayerEvent::Console(action) => vec![format!("  > (console) {action:?}")],
        PlayerEvent::Explained { title, lines } => {
            let mut out = vec![format!("  ? {title}")];
            out.extend(lines.iter().map(|l| format!("  ?   {}", l.trim_start())));
            out
        }
        PlayerEvent::Waiting(_) => Vec::new(),
        PlayerEvent::StepEnded(report) => {
            let mut out: Vec<String> = report.events.iter().map(|e| format!("  | {e}")).collect();
            for (what, v) in &report.waited {
                out.push(format!("  {} {what} ({})", mark(v.holds), v.saw));
            }
            for (what, v) in &report.expects {
                out.push(format!("  {} {what} ({})", mark(v.holds), v.saw));
            }
            for e in &report.errors {
                out.push(format!("  ✗ {e}"));
            }
            out.push(format!("  ({:.1} s)", report.took.as_secs_f64()));
            out
        }
    }
}

/// A step's events as a golden trace keeps them: numbers of two digits or more (offsets,
/// counts, times) masked, then sorted and counted, since events of one moment may come in
/// either order.
pub fn normalise(events: &[String]) -> Vec<String> {
    let mut counted: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for e in events {
        *counted.entry(mask_numbers(e)).or_insert(0) += 1;
    }
    counted
        .into_iter()
        .map(|(e, n)| if n > 1 { format!("{e} (x{n})") } else { e })
        .collect()
}

fn mask_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || (chars[i] == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                i += 1;
            }
            let token: String = chars[start..i].iter().collect();
            if token.len() >= 2 {
                out.push('N');
            } else {
                out.push_str(&token);
            }
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// A temporary data directory for a headless run, in memory (`/dev/shm`) where there is one.
pub fn scratch_dir(prefix: &str) -> Result<tempfile::TempDir> {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        std::path::PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(base)
        .context("creating a temporary data directory")
}

/// Runs a scenario headless on a paused clock of its own (a current-thread runtime).
pub fn run_blocking(scenario: &Scenario, config: &KdeckConfig, print: &mut dyn FnMut(&str)) -> Result<RunSummary> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .context("starting the runtime")?;
    runtime.block_on(run(scenario, config, print))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_golden_trace_masks_numbers_that_vary_and_counts_repeats() {
        let events = vec![
            "broker 1 fenced after 3.1 s".to_string(),
            "ISR of orders-0 shrank to [0, 2]".to_string(),
            "broker 1 fenced after 3.4 s".to_string(),
            "HW 1234".to_string(),
        ];
        assert_eq!(
            normalise(&events),
            vec![
                "HW N",
                "ISR of orders-0 shrank to [0, 2]",
                "broker 1 fenced after N s (x2)"
            ]
        );
    }
}
