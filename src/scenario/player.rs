//! Runs a scenario's steps against a cluster source, one at a time: resolve the step's
//! roles, perform its actions (cluster commands here, console-only actions handed to the
//! console), wait until its conditions hold, let it last its hold time, check its
//! expectations. Everything it does is reported as [`PlayerEvent`]s, which the headless
//! runner prints and the console shows; the same player drives both.
//!
//! Time: waits and holds count simulated time as the view reports it: nothing counts
//! while the cluster's clock is frozen, and slow motion stretches them with the cluster.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::mpsc;

use super::check::{self, Baseline, Verdict};
use super::format::{Check, Scenario, Step};
use super::target;
use crate::tui::Action;
use crate::view::{BrokerId, ClusterSource, ClusterView, CommandOutcome, ViewEvent};

/// What the player did or saw.
#[derive(Debug, Clone, PartialEq)]
pub enum PlayerEvent {
    StepStarted {
        /// 0-based.
        index: usize,
        total: usize,
        caption: String,
        why: Option<String>,
    },
    /// A cluster command ran, with its outcome sentence.
    Command {
        text: String,
        outcome: Result<String, String>,
    },
    /// An action only the console can perform (focus a pane, seek, a caption).
    Console(Action),
    /// A step asked for an explanation (`{ action = "explain", target = ... }`): the same
    /// sentences the console's `e` shows, from the view as it was.
    Explained {
        title: String,
        lines: Vec<String>,
    },
    /// The step is waiting; the checks as they stand (sent when a verdict changes).
    Waiting(Vec<(String, Verdict)>),
    StepEnded(StepReport),
}

/// How one step went.
#[derive(Debug, Clone, PartialEq)]
pub struct StepReport {
    pub index: usize,
    /// The conditions waited for, as they ended.
    pub waited: Vec<(String, Verdict)>,
    /// False when the conditions did not all hold within the step's timeout.
    pub reached: bool,
    pub expects: Vec<(String, Verdict)>,
    /// Timeline events during the step, in order.
    pub events: Vec<String>,
    /// Simulated time the step took.
    pub took: Duration,
    /// Actions that could not be performed.
    pub errors: Vec<String>,
}

impl StepReport {
    pub fn passed(&self) -> bool {
        self.reached && self.errors.is_empty() && self.expects.iter().all(|(_, v)| v.holds)
    }
}

/// Reads new timeline events off successive views (the view keeps a bounded ring).
#[derive(Debug, Default)]
pub struct EventCursor {
    last: Option<(chrono::DateTime<chrono::Utc>, String)>,
}

impl EventCursor {
    /// A cursor past every event of `view`.
    pub fn at_end(view: &ClusterView) -> EventCursor {
        EventCursor {
            last: view.events.last().map(|e| (e.at, e.text.clone())),
        }
    }

    pub fn take_new<'a>(&mut self, view: &'a ClusterView) -> Vec<&'a ViewEvent> {
        let start = match &self.last {
            None => 0,
            Some((at, text)) => view
                .events
                .iter()
                .rposition(|e| e.at == *at && &e.text == text)
                .map_or_else(
                    // Gone from the ring: everything newer than it is new.
                    || view.events.iter().position(|e| e.at > *at).unwrap_or(view.events.len()),
                    |i| i + 1,
                ),
        };
        let new: Vec<&ViewEvent> = view.events[start..].iter().collect();
        if let Some(e) = new.last() {
            self.last = Some((e.at, e.text.clone()));
        }
        new
    }
}

/// Plays one scenario, step by step.
pub struct Player {
    scenario: Scenario,
    bound: BTreeMap<String, BrokerId>,
    /// Each partition's last known high watermark.
    known_hw: BTreeMap<String, i64>,
    next: usize,
    /// How often waits look at the view, in simulated time.
    pub tick: Duration,
    /// Holds are multiplied by this (0 skips them: a replay to a step).
    pub hold_scale: f64,
    /// The player holds the cluster still since its last step ended.
    held: bool,
}

impl Player {
    /// `scenario` already translated.
    pub fn new(scenario: Scenario) -> Player {
        Player {
            scenario,
            bound: BTreeMap::new(),
            known_hw: BTreeMap::new(),
            next: 0,
            tick: Duration::from_millis(100),
            hold_scale: 1.0,
            held: false,
        }
    }

    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The language of the scenario's words and checks.
    pub fn lang(&self) -> &'static crate::view::lang::Lang {
        crate::view::lang::Lang::get(self.scenario.language.as_deref())
    }

    /// The next step to run (0-based); equal to the step count at the end.
    pub fn next_step(&self) -> usize {
        self.next
    }

    pub fn finished(&self) -> bool {
        self.next >= self.scenario.steps.len()
    }

    /// Brokers bound so far, by name.
    pub fn bound(&self) -> &BTreeMap<String, BrokerId> {
        &self.bound
    }

    /// Runs the next step to its end, reporting to `out`; `None` when every step ran.
    pub async fn step(
        &mut self,
        source: &dyn ClusterSource,
        out: &mpsc::UnboundedSender<PlayerEvent>,
    ) -> Option<StepReport> {
        let step = self.scenario.steps.get(self.next)?.clone();
        let index = self.next;
        self.next += 1;
        let mut errors = Vec::new();
        if std::mem::take(&mut self.held)
            && let Err(e) = perform(source, crate::view::Command::Hold(false)).await
        {
            errors.push(format!("ending the hold: {e}"));
        }
        let mut views = source.views();
        let view: Arc<ClusterView> = views.borrow_and_update().clone();
        for (name, role) in &step.bind {
            match target::resolve_text(role, &view, &self.bound) {
                Ok(id) => {
                    self.bound.insert(name.clone(), id);
                }
                Err(e) => errors.push(format!("bind {name}: {e}")),
            }
        }
        let _ = out.send(PlayerEvent::StepStarted {
            index,
            total: self.scenario.steps.len(),
            caption: target::fill_all(&step.caption, &self.bound, &view),
            why: step.why.as_ref().map(|w| target::fill_all(w, &self.bound, &view)),
        });
        self.learn_hw(&view);
        let base = Baseline {
            view: Arc::clone(&view),
            hw: self.known_hw.clone(),
            lang: self.lang(),
        };
        let mut cursor = EventCursor::at_end(&view);
        let mut events: Vec<String> = Vec::new();
        for table in &step.actions {
            let action = {
                let now = views.borrow().clone();
                self.action(table, &now)
            };
            match action {
                Ok(action) => match action.command() {
                    Some(command) => {
                        let text = command.to_string();
                        let outcome = perform(source, command).await;
                        if let Err(e) = &outcome {
                            errors.push(format!("{text}: {e}"));
                        }
                        let _ = out.send(PlayerEvent::Command { text, outcome });
                    }
                    None => {
                        if let Action::Explain { target } = &action {
                            let now = views.borrow().clone();
                            let e = target.explain(&now, &now.events);
                            let _ = out.send(PlayerEvent::Explained {
                                title: e.title.english(),
                                lines: e.english_lines(),
                            });
                        }
                        let _ = out.send(PlayerEvent::Console(action));
                    }
                },
                Err(e) => errors.push(e),
            }
        }
        let (reached, waited, took) = self.wait(&step, source, &base, &mut cursor, &mut events, out).await;
        // The story on screen stays true while the trainer talks: nothing moves until the
        // next step (or the trainer's own thaw). The checks are read from the held cluster,
        // so the values they show are the ones its panes show.
        if !step.keep_running {
            match perform(source, crate::view::Command::Hold(true)).await {
                Ok(_) => {
                    self.held = true;
                    settled_view(source).await;
                }
                Err(e) => errors.push(format!("holding the cluster: {e}")),
            }
        }
        let view = source.views().borrow().clone();
        self.learn_hw(&view);
        events.extend(cursor.take_new(&view).into_iter().map(|e| e.text.clone()));
        let expects = step
            .expect
            .iter()
            .map(|c| {
                (
                    check::describe(c, &self.bound, self.lang()),
                    check::evaluate(c, &view, &base, &events, &self.bound),
                )
            })
            .collect();
        let report = StepReport {
            index,
            waited,
            reached,
            expects,
            events,
            took,
            errors,
        };
        let _ = out.send(PlayerEvent::StepEnded(report.clone()));
        Some(report)
    }

    fn learn_hw(&mut self, view: &ClusterView) {
        for p in view.partitions.iter().filter(|p| !p.offline()) {
            if let Some(hw) = p.high_watermark {
                self.known_hw.insert(format!("{}-{}", p.topic, p.partition), hw);
            }
        }
    }

    fn action(&self, table: &toml::Table, view: &ClusterView) -> Result<Action, String> {
        let resolved = target::resolve_action(table, view, &self.bound)?;
        Action::deserialize(toml::Value::Table(resolved)).map_err(|e| format!("action {table}: {e}"))
    }

    /// Waits until the step's conditions hold and its hold time has passed, in simulated
    /// time; returns whether they held, their last verdicts and the time it took.
    async fn wait(
        &self,
        step: &Step,
        source: &dyn ClusterSource,
        base: &Baseline,
        cursor: &mut EventCursor,
        events: &mut Vec<String>,
        out: &mpsc::UnboundedSender<PlayerEvent>,
    ) -> (bool, Vec<(String, Verdict)>, Duration) {
        let hold = Duration::from_secs_f64((step.hold_s * self.hold_scale).max(0.0));
        let limit = Duration::from_secs_f64(step.timeout_s.max(0.0)).max(hold);
        let mut simulated = Duration::ZERO;
        let mut shown: Vec<(String, Verdict)> = Vec::new();
        loop {
            let view = source.views().borrow().clone();
            events.extend(cursor.take_new(&view).into_iter().map(|e| e.text.clone()));
            let verdicts: Vec<(String, Verdict)> = step
                .wait_until
                .iter()
                .map(|c: &Check| {
                    (
                        check::describe(c, &self.bound, self.lang()),
                        check::evaluate(c, &view, base, events, &self.bound),
                    )
                })
                .collect();
            let held = verdicts.iter().all(|(_, v)| v.holds);
            if verdicts != shown && !verdicts.is_empty() {
                let _ = out.send(PlayerEvent::Waiting(verdicts.clone()));
                shown = verdicts.clone();
            }
            if held && simulated >= hold {
                return (true, verdicts, simulated);
            }
            if simulated >= limit {
                return (held, verdicts, simulated);
            }
            tokio::time::sleep(self.tick).await;
            let (frozen, slow) = view.controls.map_or((false, 1), |c| (c.frozen, c.slow_motion.max(1)));
            if !frozen {
                simulated += self.tick / slow;
            }
        }
    }
}

/// Waits for the views published after a hold: the first that shows it held, then the
/// next (what was in flight when the clock stopped has landed); at most two seconds.
async fn settled_view(source: &dyn ClusterSource) {
    let mut views = source.views();
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        let mut seen_held = 0;
        while seen_held < 2 {
            if views.changed().await.is_err() {
                return;
            }
            if views.borrow_and_update().controls.is_some_and(|c| c.held) {
                seen_held += 1;
            }
        }
    })
    .await;
}

/// Submits a command and waits for its outcome.
pub async fn perform(source: &dyn ClusterSource, command: crate::view::Command) -> Result<String, String> {
    let (tx, mut rx) = mpsc::unbounded_channel::<CommandOutcome>();
    source.submit(command, tx);
    match tokio::time::timeout(Duration::from_secs(120), rx.recv()).await {
        Ok(Some(o)) => o.result,
        Ok(None) => Err("the cluster dropped the command".into()),
        Err(_) => Err("no answer within 120 s".into()),
    }
}
