//! Record and replay: `kdeck record FILE` keeps every [`Action`] the console performs and
//! the cluster's timeline, with their times, in a TOML file; `kdeck replay FILE` performs
//! the actions that changed the cluster on a fresh one and says where its timeline differs.
//!
//! ```toml
//! [recording]
//! version = 1
//! kdeck = "0.1.0"
//! started = "2025-01-01T10:00:00Z"
//! brokers = 3
//! demo = false
//! ended_ms = 9000
//!
//! [[action]]
//! at_ms = 1200
//! replayable = false   # it only opened the confirmation
//! action = { action = "kill_broker", broker = 1 }
//!
//! [[action]]
//! at_ms = 2400
//! replayable = true
//! action = { action = "answer", yes = true }
//! performs = { action = "kill_broker", broker = 1 }
//!
//! [[event]]
//! at_ms = 2410
//! text = "broker 1 crashed"
//! ```
//!
//! An action is replayable when it submitted a cluster command; a confirmation's answer
//! performs the action it confirmed, so replay uses `performs` where it is given.

pub mod present;
pub mod replay;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, placed};
use crate::scenario::headless::normalise;
use crate::scenario::player::EventCursor;
use crate::tui::{Action, Effect, Observer};
use crate::view::words::count;
use crate::view::{ClusterView, Command};

/// The format this build writes and reads.
pub const VERSION: u32 = 1;

/// A recorded console session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recording {
    pub recording: Header,
    #[serde(default, rename = "action")]
    pub actions: Vec<RecordedAction>,
    #[serde(default, rename = "event")]
    pub events: Vec<RecordedEvent>,
}

/// What a replay needs to rebuild the cluster, and when the session ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub version: u32,
    /// The kdeck version that recorded it.
    pub kdeck: String,
    pub started: DateTime<Utc>,
    pub brokers: i32,
    /// Whether the demo traffic ran.
    pub demo: bool,
    /// The configuration file the session ran with (none: the defaults and the user's file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<PathBuf>,
    /// How long the session lasted.
    pub ended_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedAction {
    /// Milliseconds since the session started.
    pub at_ms: u64,
    /// It submitted a cluster command: a replay performs it.
    #[serde(default)]
    pub replayable: bool,
    pub action: Action,
    /// The action a confirmation's answer performed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performs: Option<Action>,
}

impl RecordedAction {
    /// The cluster command a replay performs, if any.
    pub fn command(&self) -> Option<Command> {
        if !self.replayable {
            return None;
        }
        self.performs.as_ref().unwrap_or(&self.action).command()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedEvent {
    pub at_ms: u64,
    pub text: String,
}

/// Collects a session as it happens. No I/O. The console watches through a clone of it, as
/// its [`Observer`], and whoever started the console takes the recording with
/// [`Recorder::finish`] when it is done: the console never knows it is recorded.
#[derive(Debug, Clone)]
pub struct Recorder {
    session: Arc<Mutex<Session>>,
}

#[derive(Debug)]
struct Session {
    recording: Recording,
    cursor: EventCursor,
}

impl Recorder {
    /// Starts recording at `started`; the events already in `view` are not part of it.
    pub fn new(
        started: DateTime<Utc>,
        brokers: i32,
        demo: bool,
        config: Option<PathBuf>,
        view: &ClusterView,
    ) -> Recorder {
        let session = Session {
            recording: Recording {
                recording: Header {
                    version: VERSION,
                    kdeck: env!("CARGO_PKG_VERSION").to_string(),
                    started,
                    brokers,
                    demo,
                    config,
                    ended_ms: 0,
                },
                actions: Vec::new(),
                events: Vec::new(),
            },
            cursor: EventCursor::at_end(view),
        };
        Recorder {
            session: Arc::new(Mutex::new(session)),
        }
    }

    fn session(&self) -> MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An action the app performed at `now`, with the effects it returned.
    pub fn action(&self, now: DateTime<Utc>, action: Action, effects: &[Effect]) {
        let mut session = self.session();
        let at_ms = session.since_start(now);
        let submitted: Vec<&Command> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Submit(c) => Some(c),
                _ => None,
            })
            .collect();
        let own = action.command();
        let replayable = submitted.iter().any(|c| own.as_ref() == Some(*c));
        // An answer submits what an earlier action asked to confirm.
        let performs = match submitted.first() {
            Some(c) if !replayable => session
                .recording
                .actions
                .iter()
                .rev()
                .find(|a| !a.replayable && a.action.command().as_ref() == Some(*c))
                .map(|a| a.action.clone()),
            _ => None,
        };
        session.recording.actions.push(RecordedAction {
            at_ms,
            replayable: replayable || performs.is_some(),
            action,
            performs,
        });
        session.recording.recording.ended_ms = session.recording.recording.ended_ms.max(at_ms);
    }

    /// The timeline events of `view` not seen yet, as of `now`.
    pub fn events(&self, now: DateTime<Utc>, view: &ClusterView) {
        let mut session = self.session();
        let at_ms = session.since_start(now);
        let new: Vec<RecordedEvent> = session
            .cursor
            .take_new(view)
            .into_iter()
            .map(|e| RecordedEvent {
                at_ms,
                text: e.text.clone(),
            })
            .collect();
        if !new.is_empty() {
            session.recording.recording.ended_ms = session.recording.recording.ended_ms.max(at_ms);
        }
        session.recording.events.extend(new);
    }

    /// The recording so far, ended at `now`.
    pub fn finish(&self, now: DateTime<Utc>) -> Recording {
        let mut session = self.session();
        let at_ms = session.since_start(now);
        session.recording.recording.ended_ms = session.recording.recording.ended_ms.max(at_ms);
        session.recording.clone()
    }
}

impl Session {
    fn since_start(&self, now: DateTime<Utc>) -> u64 {
        u64::try_from((now - self.recording.recording.started).num_milliseconds()).unwrap_or(0)
    }
}

impl Observer for Recorder {
    fn action(&mut self, now: DateTime<Utc>, action: &Action, effects: &[Effect]) {
        Recorder::action(self, now, action.clone(), effects);
    }

    fn view(&mut self, now: DateTime<Utc>, view: &ClusterView) {
        self.events(now, view);
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot read the recording {path}: {error}")]
    Read { path: PathBuf, error: std::io::Error },
    #[error("cannot write the recording {path}: {error}")]
    Write { path: PathBuf, error: std::io::Error },
    #[error(transparent)]
    Parse(#[from] ConfigError),
    #[error("{path}: recording version {found}; this kdeck reads version {v}", v = VERSION)]
    Version { path: String, found: u32 },
    #[error("cannot write an action as TOML: {0}")]
    Serialize(String),
}

impl Recording {
    /// The recording as TOML, one line per action (as an inline table) and per event.
    pub fn to_toml(&self) -> Result<String, RecordError> {
        #[derive(Serialize)]
        struct HeaderOnly<'a> {
            recording: &'a Header,
        }
        let ser = |e: toml::ser::Error| RecordError::Serialize(e.to_string());
        let mut out = toml::to_string(&HeaderOnly {
            recording: &self.recording,
        })
        .map_err(ser)?;
        let inline = |a: &Action| -> Result<String, RecordError> {
            toml::Value::try_from(a)
                .map(|v| v.to_string())
                .map_err(|e| RecordError::Serialize(e.to_string()))
        };
        for a in &self.actions {
            let _ = write!(
                out,
                "\n[[action]]\nat_ms = {}\nreplayable = {}\naction = {}\n",
                a.at_ms,
                a.replayable,
                inline(&a.action)?
            );
            if let Some(p) = &a.performs {
                let _ = writeln!(out, "performs = {}", inline(p)?);
            }
        }
        for e in &self.events {
            let _ = write!(
                out,
                "\n[[event]]\nat_ms = {}\ntext = {}\n",
                e.at_ms,
                toml::Value::String(e.text.clone())
            );
        }
        Ok(out)
    }

    /// Reads a recording's text; errors say `name:line:column`.
    pub fn parse(name: &str, text: &str) -> Result<Recording, RecordError> {
        let recording = toml::from_str::<Recording>(text).map_err(|e| placed(name, text, &e))?;
        if recording.recording.version != VERSION {
            return Err(RecordError::Version {
                path: name.to_string(),
                found: recording.recording.version,
            });
        }
        Ok(recording)
    }

    pub fn read(path: &Path) -> Result<Recording, RecordError> {
        let text = std::fs::read_to_string(path).map_err(|error| RecordError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        Recording::parse(&path.display().to_string(), &text)
    }

    pub fn write(&self, path: &Path) -> Result<(), RecordError> {
        std::fs::write(path, self.to_toml()?).map_err(|error| RecordError::Write {
            path: path.to_path_buf(),
            error,
        })
    }

    /// The actions a replay performs, in order.
    pub fn replayable(&self) -> impl Iterator<Item = &RecordedAction> {
        self.actions.iter().filter(|a| a.replayable)
    }
}

/// Where one stretch of the timeline differs: between two replayed actions (the first
/// stretch is before any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowDiff {
    /// 0: before the first replayed action; n: after the n-th.
    pub window: usize,
    /// The action that opened the window, as its command says it.
    pub after: Option<String>,
    /// Normalised events only the new run has.
    pub only_new: Vec<String>,
    /// Normalised events only the recording has.
    pub only_recorded: Vec<String>,
}

/// Compares two runs of the same actions: per window between consecutive replayable
/// actions (by time), their normalised events as multisets. Empty when they match.
pub fn diff(recorded: &Recording, new: &Recording) -> Vec<WindowDiff> {
    let windows = recorded.replayable().count() + 1;
    let old = by_window(recorded, windows);
    let new = by_window(new, windows);
    let labels: Vec<Option<String>> = std::iter::once(None)
        .chain(recorded.replayable().map(|a| a.command().map(|c| c.to_string())))
        .collect();
    let mut out = Vec::new();
    for (i, (o, n)) in old.iter().zip(&new).enumerate() {
        let only_new = minus(n, o);
        let only_recorded = minus(o, n);
        if !only_new.is_empty() || !only_recorded.is_empty() {
            out.push(WindowDiff {
                window: i,
                after: labels.get(i).cloned().flatten(),
                only_new,
                only_recorded,
            });
        }
    }
    out
}

/// Each window's normalised events, counted; an event seen at an action's very time was
/// seen before the action's effects could show.
fn by_window(recording: &Recording, windows: usize) -> Vec<BTreeMap<String, usize>> {
    let starts: Vec<u64> = recording.replayable().map(|a| a.at_ms).collect();
    let mut out = vec![BTreeMap::new(); windows];
    for e in &recording.events {
        let w = starts.partition_point(|s| *s < e.at_ms).min(windows - 1);
        let masked = normalise(std::slice::from_ref(&e.text)).pop().unwrap_or_default();
        *out[w].entry(masked).or_insert(0) += 1;
    }
    out
}

/// `a` without `b`, as a multiset, one line per occurrence.
fn minus(a: &BTreeMap<String, usize>, b: &BTreeMap<String, usize>) -> Vec<String> {
    let mut out = Vec::new();
    for (text, n) in a {
        let extra = n.saturating_sub(b.get(text).copied().unwrap_or(0));
        out.extend(std::iter::repeat_n(text.clone(), extra));
    }
    out
}

/// How `kdeck replay` prints the differences: `+` only in the new run, `-` only in the
/// recording, per window, then a summary line.
pub fn report(recorded: &Recording, diffs: &[WindowDiff]) -> Vec<String> {
    let mut out = Vec::new();
    for d in diffs {
        out.push(match &d.after {
            None => "before the first action:".to_string(),
            Some(a) => format!("after action {} ({a}):", d.window),
        });
        out.extend(d.only_new.iter().map(|e| format!("+ {e}")));
        out.extend(d.only_recorded.iter().map(|e| format!("- {e}")));
    }
    let actions = recorded.replayable().count();
    if diffs.is_empty() {
        out.push(format!(
            "the replay matches the recording: {}, {}",
            count(actions, "action"),
            count(recorded.events.len(), "event")
        ));
    } else {
        let added: usize = diffs.iter().map(|d| d.only_new.len()).sum();
        let missing: usize = diffs.iter().map(|d| d.only_recorded.len()).sum();
        out.push(format!(
            "the replay differs from the recording: {} only in this run, {missing} only in the recording, in {} of {} windows",
            count(added, "event"),
            diffs.len(),
            actions + 1
        ));
    }
    out
}
