//! The console: input becomes [`action::Action`]s, [`app::App::update`] turns them into
//! state and [`action::Effect`]s, and the event loop here performs the effects (the only I/O).
//! A reader task turns terminal input and ticks into one channel; the loop redraws only for a
//! new view, a key, a resize, new tail records or the clock, and coalesces bursts into one
//! frame, so an idle console costs almost nothing.

pub mod acls;
pub mod action;
pub mod app;
pub mod awaited;
pub mod brokers;
pub mod cast;
pub mod clusters;
pub mod command;
pub mod configs;
pub mod dialog;
pub mod events;
pub mod explain;
pub mod flow;
pub mod footer;
pub mod groups;
pub mod header;
pub mod help;
pub mod keymap;
pub mod layout;
pub mod messages;
pub mod overlay;
pub mod pane;
pub mod partitions;
pub mod reassign;
pub mod replica_log;
pub mod text;
pub mod theme;
pub mod topics;
pub mod transactions;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::{DateTime, Local, Utc};
use crossterm::event::{self, Event as TermEvent, KeyEvent, KeyEventKind, MouseEvent};
use tokio::sync::mpsc;

use ratatui::Terminal;
use ratatui::backend::Backend;

use crate::config::KdeckConfig;
use crate::view::{ClusterSource, ClusterView, CommandOutcome, OutcomeSender};
pub use action::{Action, Effect, ScenarioControl, TrainerUpdate};
use app::App;
pub use app::Observer;
use keymap::Keymap;
use theme::Themes;

/// The panes of the dashboard, in focus order (keys 1-6). What each one is and draws is its
/// [`pane::PaneView`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pane {
    Brokers,
    Topics,
    Partitions,
    Groups,
    Messages,
    Events,
}

impl Pane {
    pub const ALL: [Pane; 6] = [
        Pane::Brokers,
        Pane::Topics,
        Pane::Partitions,
        Pane::Groups,
        Pane::Messages,
        Pane::Events,
    ];

    pub fn index(self) -> usize {
        match self {
            Pane::Brokers => 0,
            Pane::Topics => 1,
            Pane::Partitions => 2,
            Pane::Groups => 3,
            Pane::Messages => 4,
            Pane::Events => 5,
        }
    }

    pub fn next(self) -> Pane {
        Pane::ALL[(self.index() + 1) % Pane::ALL.len()]
    }

    pub fn prev(self) -> Pane {
        Pane::ALL[(self.index() + Pane::ALL.len() - 1) % Pane::ALL.len()]
    }

    pub fn title(self) -> &'static str {
        pane::view_of(self).title()
    }

    /// Its name in scripts and `:` commands (as serialized).
    pub fn name(self) -> &'static str {
        match self {
            Pane::Brokers => "brokers",
            Pane::Topics => "topics",
            Pane::Partitions => "partitions",
            Pane::Groups => "groups",
            Pane::Messages => "messages",
            Pane::Events => "events",
        }
    }
}

/// What the event loop reacts to, besides new views and command outcomes.
pub enum Input {
    Terminal(TermEvent),
    Tick,
    /// SIGTERM or SIGHUP (the terminal closed): quit as `q` does, so the cluster shuts down
    /// cleanly and an ephemeral data directory is removed.
    Stop,
}

/// The shortest time between two frames: bursts of changes become one frame.
const FRAME: Duration = Duration::from_millis(33);
const TICK: Duration = Duration::from_millis(250);

/// What the outer loop answers a switch request with: the new cluster's source, or why the
/// console stays where it is.
pub struct Switched {
    pub name: String,
    pub result: Result<Arc<dyn ClusterSource>, String>,
}

/// How a console reaches other clusters without knowing how they are reached: it sends a
/// cluster's name on `requests`; whoever started it connects (or starts the embedded one)
/// and answers on `answers`.
pub struct SwitchLink {
    pub requests: mpsc::UnboundedSender<String>,
    pub answers: mpsc::UnboundedReceiver<Switched>,
}

/// The app with what performs its effects: the source, and the channel that brings
/// command outcomes back.
pub struct Console {
    pub app: App,
    pub source: Arc<dyn ClusterSource>,
    outcomes: OutcomeSender,
    /// Where the trainer's scenario controls go, in trainer mode.
    pub scenario: Option<mpsc::UnboundedSender<ScenarioControl>>,
    /// Where each frame is also written (`--cast FILE`).
    pub cast: Option<cast::Cast>,
    /// Where switch requests go, when the console can switch clusters.
    pub switch_requests: Option<mpsc::UnboundedSender<String>>,
    /// The answers to them (the event loop takes it).
    pub switch_answers: Option<mpsc::UnboundedReceiver<Switched>>,
}

impl Console {
    /// The console of an app on a source; performs the app's first effects (its tail).
    pub fn new(app: App, source: Arc<dyn ClusterSource>, outcomes: OutcomeSender) -> Console {
        let mut console = Console {
            app,
            source,
            outcomes,
            scenario: None,
            cast: None,
            switch_requests: None,
            switch_answers: None,
        };
        let effects = console.app.start();
        console.perform(effects);
        console
    }

    /// Does what the app asked for.
    pub fn perform(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Submit(command) => self.source.submit(command, self.outcomes.clone()),
                Effect::Tail { spec, capacity } => {
                    let handle = self.source.tail(spec, capacity);
                    self.app.attach_tail(handle);
                }
                Effect::Advance { n } => {
                    if let Some(handle) = self.app.tail.as_ref().and_then(|t| t.handle.as_ref()) {
                        handle.buffer.advance(n);
                    }
                }
                Effect::DescribeConfigs(target) => {
                    let answer = self.source.describe_configs(target.clone());
                    self.app.attach_configs(&target, answer);
                }
                Effect::DescribeAcls => {
                    let answer = self.source.describe_acls();
                    self.app.attach_acls(answer);
                }
                Effect::DescribeTransactions => {
                    let answer = self.source.describe_transactions();
                    self.app.attach_transactions(answer);
                }
                Effect::SwitchCluster(name) => match &self.switch_requests {
                    Some(tx) if tx.send(name.clone()).is_ok() => {}
                    _ => {
                        let effects =
                            self.app
                                .switched(&name, Err("this console cannot switch clusters".into()), Utc::now());
                        self.perform(effects);
                    }
                },
                Effect::Scenario(control) => {
                    if let Some(tx) = &self.scenario {
                        let _ = tx.send(control);
                    }
                }
                Effect::Quit => self.app.quit = true,
            }
        }
    }

    pub fn key(&mut self, key: KeyEvent, now: DateTime<Utc>) {
        let effects = self.app.on_key(key, now);
        self.perform(effects);
    }

    pub fn mouse(&mut self, event: MouseEvent, now: DateTime<Utc>) {
        let effects = self.app.on_mouse(event, now);
        self.perform(effects);
    }

    pub fn act(&mut self, action: Action, now: DateTime<Utc>) {
        let effects = self.app.update(action, now);
        self.perform(effects);
    }

    /// What the running scenario said; a new cluster (going back) replaces the source, and
    /// the message tail starts again on it.
    pub fn trainer(&mut self, update: TrainerUpdate, now: DateTime<Utc>) {
        if let TrainerUpdate::Source(source) = &update {
            self.source = Arc::clone(source);
            self.app.tail = None;
            let effects = self.app.start();
            self.perform(effects);
        }
        let effects = self.app.on_trainer(update, now);
        self.perform(effects);
    }

    /// The outer loop's answer to a switch: on success the new source replaces the old one
    /// (dropping it stops its refresh) and the app starts again on it.
    pub fn switched(&mut self, switched: Switched, now: DateTime<Utc>) {
        let result = switched.result.map(|source| {
            let capabilities = source.capabilities();
            let view = source.views().borrow().clone();
            self.source = source;
            (capabilities, view)
        });
        let effects = self.app.switched(&switched.name, result, now);
        self.perform(effects);
    }

    pub fn set_view(&mut self, view: Arc<ClusterView>) {
        if let Some(observer) = self.app.observer.as_mut() {
            observer.view(Utc::now(), &view);
        }
        let effects = self.app.set_view(view);
        self.perform(effects);
    }

    /// Draws a frame and keeps its layout for the next clicks and keys.
    pub fn draw<B: Backend>(&mut self, terminal: &mut Terminal<B>, now: DateTime<Utc>) -> Result<(), B::Error> {
        let mut layout = layout::FrameLayout::default();
        let completed = terminal.draw(|frame| layout = layout::draw(frame, &self.app, now))?;
        if let Some(cast) = self.cast.as_mut()
            && let Err(e) = cast.frame(completed.buffer)
        {
            // The console goes on without its cast rather than stopping the class.
            tracing::warn!(error = %e, cast = %cast.path().display(), frames = cast.frames(), "writing the cast failed; it stops here");
            self.cast = None;
        }
        self.app.layout = layout;
        Ok(())
    }
}

/// The keymap and theme of a configuration, checked: run before the terminal switches to the
/// console, so a mistake is a clear error on a normal screen.
pub fn check_config(config: &KdeckConfig) -> Result<(Keymap, Themes)> {
    let keymap = Keymap::from_config(&config.keys)?;
    let themes = Themes::load(&config.console.theme, theme::no_color())?;
    Ok((keymap, themes))
}

/// Builds the console for a source from the configuration.
pub fn new_console(
    source: Arc<dyn ClusterSource>,
    config: &KdeckConfig,
    log_path: Option<PathBuf>,
) -> Result<(Console, mpsc::UnboundedReceiver<CommandOutcome>)> {
    let (keymap, themes) = check_config(config)?;
    let (outcomes_tx, outcomes) = mpsc::unbounded_channel();
    let tz = *Local::now().offset();
    let view = source.views().borrow().clone();
    let app = App::new(
        source.capabilities(),
        view,
        keymap,
        themes.normal.clone(),
        config.console.clone(),
        tz,
        log_path,
    )
    .with_themes(themes);
    Ok((Console::new(app, source, outcomes_tx), outcomes))
}

/// Runs the console until the user quits. The terminal is restored on return and on panic.
pub async fn run(source: Arc<dyn ClusterSource>, config: &KdeckConfig, log_path: Option<PathBuf>) -> Result<()> {
    run_with(source, config, log_path, None, None).await
}

/// A scenario presented in the console: where its controls go and what it says.
pub struct TrainerLink {
    pub controls: mpsc::UnboundedSender<ScenarioControl>,
    pub updates: mpsc::UnboundedReceiver<TrainerUpdate>,
}

/// [`run`], able to switch clusters: `choices` lists them, `link` reaches whoever switches.
pub async fn run_switching(
    source: Arc<dyn ClusterSource>,
    config: &KdeckConfig,
    log_path: Option<PathBuf>,
    choices: clusters::ClusterChoices,
    link: SwitchLink,
) -> Result<()> {
    let (mut console, outcomes) = new_console(source, config, log_path)?;
    console.app.clusters = Some(choices);
    console.switch_requests = Some(link.requests);
    console.switch_answers = Some(link.answers);
    run_console(console, outcomes, config, None).await.map(drop)
}

/// [`run`], in trainer mode when `trainer` is given, writing its frames to `cast` when
/// given.
pub async fn run_with(
    source: Arc<dyn ClusterSource>,
    config: &KdeckConfig,
    log_path: Option<PathBuf>,
    trainer: Option<TrainerLink>,
    cast: Option<cast::Cast>,
) -> Result<()> {
    let (mut console, outcomes) = new_console(source, config, log_path)?;
    console.cast = cast;
    let mut updates = None;
    if let Some(link) = trainer {
        console.scenario = Some(link.controls);
        updates = Some(link.updates);
    }
    run_console(console, outcomes, config, updates).await.map(drop)
}

/// Runs a console built by [`new_console`] until the user quits, and gives it back (with
/// what it recorded); in trainer mode when `trainer_updates` is given.
pub async fn run_console(
    mut console: Console,
    mut outcomes: mpsc::UnboundedReceiver<CommandOutcome>,
    config: &KdeckConfig,
    mut trainer_updates: Option<mpsc::UnboundedReceiver<TrainerUpdate>>,
) -> Result<Console> {
    let mut terminal = ratatui::try_init().context("opening the terminal")?;
    if config.console.mouse {
        crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture).context("enabling the mouse")?;
    }
    let (input_tx, mut input) = mpsc::unbounded_channel();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = spawn_reader(input_tx.clone(), Arc::clone(&stop)).context("starting the terminal reader")?;
    let signals = spawn_signal_watch(input_tx.clone());
    let ticker = spawn_ticker(input_tx);
    let result = event_loop(
        &mut terminal,
        &mut console,
        &mut input,
        &mut outcomes,
        trainer_updates.as_mut(),
    )
    .await;
    stop.store(true, Ordering::Release);
    ticker.abort();
    signals.abort();
    if config.console.mouse {
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
    }
    ratatui::restore();
    // The reader sees `stop` within its poll interval, unless the terminal hung up: then
    // crossterm's poll spins on the dead tty and never returns. It is left behind rather than
    // waited for, so a closed terminal still ends the console and shuts the cluster down.
    let deadline = std::time::Instant::now() + Duration::from_millis(500);
    while !reader.is_finished() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if reader.is_finished() {
        let _ = reader.join();
    } else {
        tracing::warn!("the terminal reader did not stop (the terminal hung up?): leaving it behind");
    }
    let cast = console.cast.take().map(|cast| {
        let path = cast.path().to_path_buf();
        cast.finish()
            .with_context(|| format!("finishing the cast {}", path.display()))
    });
    result?;
    cast.transpose()?;
    Ok(console)
}

/// Turns SIGTERM and SIGHUP into [`Input::Stop`] (Ctrl-C is a key in raw mode).
fn spawn_signal_watch(tx: mpsc::UnboundedSender<Input>) -> tokio::task::JoinHandle<()> {
    use tokio::signal::unix::{SignalKind, signal};
    tokio::spawn(async move {
        let (Ok(mut term), Ok(mut hup)) = (signal(SignalKind::terminate()), signal(SignalKind::hangup())) else {
            tracing::warn!("cannot watch SIGTERM/SIGHUP: the console stops only with its quit key");
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
        let _ = tx.send(Input::Stop);
    })
}

/// Sends a tick four times a second (clock, flashes, new tail records).
pub fn spawn_ticker(tx: mpsc::UnboundedSender<Input>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tick.tick().await;
            if tx.send(Input::Tick).is_err() {
                return;
            }
        }
    })
}

/// Redraws when something changed, at most once per frame time, until the app quits.
pub async fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    console: &mut Console,
    input: &mut mpsc::UnboundedReceiver<Input>,
    outcomes: &mut mpsc::UnboundedReceiver<CommandOutcome>,
    mut trainer: Option<&mut mpsc::UnboundedReceiver<TrainerUpdate>>,
) -> Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let mut views = console.source.views();
    let mut views_open = true;
    let mut switched = console.switch_answers.take();
    let mut dirty = true;
    let mut last_frame = tokio::time::Instant::now() - FRAME;
    let mut last_second = Utc::now().timestamp();
    loop {
        if dirty {
            let wait = FRAME.saturating_sub(last_frame.elapsed());
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            console.draw(terminal, Utc::now())?;
            last_frame = tokio::time::Instant::now();
            dirty = false;
        }
        tokio::select! {
            Some(i) = input.recv() => dirty |= handle(console, i, &mut last_second),
            changed = views.changed(), if views_open => match changed {
                Ok(()) => {
                    let view = views.borrow_and_update().clone();
                    console.set_view(view);
                    dirty = true;
                }
                Err(_) => views_open = false,
            },
            Some(outcome) = outcomes.recv() => {
                let effects = console.app.on_outcome(outcome, Utc::now());
                console.perform(effects);
                dirty = true;
            }
            Some(update) = async {
                match trainer.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                let replaced = matches!(update, TrainerUpdate::Source(_));
                console.trainer(update, Utc::now());
                if replaced {
                    views = console.source.views();
                    views_open = true;
                    let view = views.borrow_and_update().clone();
                    console.set_view(view);
                }
                dirty = true;
            }
            Some(answer) = async {
                match switched.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                let replaced = answer.result.is_ok();
                console.switched(answer, Utc::now());
                if replaced {
                    views = console.source.views();
                    views_open = true;
                    let view = views.borrow_and_update().clone();
                    console.set_view(view);
                }
                dirty = true;
            }
        }
        while let Ok(i) = input.try_recv() {
            dirty |= handle(console, i, &mut last_second);
        }
        if console.app.quit {
            return Ok(());
        }
    }
}

/// True when the screen must be redrawn.
fn handle(console: &mut Console, input: Input, last_second: &mut i64) -> bool {
    let now = Utc::now();
    match input {
        Input::Terminal(TermEvent::Key(key)) if key.kind != KeyEventKind::Release => {
            console.key(key, now);
            true
        }
        Input::Terminal(TermEvent::Mouse(m)) => {
            console.mouse(m, now);
            true
        }
        Input::Terminal(TermEvent::Resize(..)) => true,
        Input::Terminal(_) => false,
        Input::Stop => {
            console.act(Action::Quit, now);
            false
        }
        Input::Tick => {
            let second = now.timestamp();
            let clock = second != *last_second;
            *last_second = second;
            let flashing = layout::flash_active(&console.app, now);
            // The flow picture's batches move on the cluster's clock: a frame per tick while
            // they do, none while nothing moves (no traffic, or the clock frozen).
            let flowing = flow::moving(&console.app);
            console.app.on_tick() | clock | flashing | flowing
        }
    }
}

/// Reads terminal events on a thread of its own (crossterm's reader blocks), polling so that
/// it notices when the console quits. Not a tokio blocking task: the runtime waits for those
/// when it shuts down, and this one never ends on a hung-up terminal (see `run_console`).
fn spawn_reader(
    tx: mpsc::UnboundedSender<Input>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("terminal-reader".into())
        .spawn(move || {
            while !stop.load(Ordering::Acquire) {
                match event::poll(Duration::from_millis(100)) {
                    Ok(true) => match event::read() {
                        Ok(e) => {
                            if tx.send(Input::Terminal(e)).is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "reading the terminal failed");
                            return;
                        }
                    },
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "polling the terminal failed");
                        return;
                    }
                }
            }
        })
}
