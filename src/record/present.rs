//! `kdeck replay FILE` in the console: a recording presented the way a scenario is, one
//! step per recorded cluster action. The cluster is the console's own as the recording
//! started it (its brokers, demo traffic on or off); each step performs its action, lets
//! the cluster run for the time the recording ran until the next one (cluster time: slow
//! motion stretches it, freezing stops it), and holds it there until `n`. The caption says
//! what the step did and what the recording saw happen after it, so the room can compare.
//! `.` plays, `N` goes back a step on a fresh cluster, `F` freezes, as in any scenario.

use anyhow::{Context, Result};

use super::Recording;
use crate::scenario::format::{ElectionRule, Setup, Step};
use crate::scenario::{Scenario, driver::ClusterRecipe};
use crate::view::words::count;

/// How many of the events the recording saw after an action a caption lists.
const EVENTS_SHOWN: usize = 3;

/// The recording as a scenario: a first step that runs the cluster until the first action,
/// then one step per replayable action. `name` names it on screen (the file's name).
pub fn as_scenario(recording: &Recording, name: &str) -> Result<Scenario> {
    let header = &recording.recording;
    let actions: Vec<_> = recording
        .replayable()
        .filter_map(|a| a.command().map(|c| (a, c)))
        .collect();
    let first_at = actions.first().map_or(header.ended_ms, |(a, _)| a.at_ms);
    let mut steps = vec![Step {
        caption: format!(
            "Recorded {}: {}, demo traffic {}; {} over {}. The cluster runs as recorded until \
             the first action.",
            header.started.format("%Y-%m-%d %H:%M UTC"),
            count(header.brokers.max(0) as usize, "broker"),
            if header.demo { "on" } else { "off" },
            count(actions.len(), "action"),
            seconds(header.ended_ms),
        ),
        why: None,
        bind: Default::default(),
        actions: Vec::new(),
        wait_until: Vec::new(),
        hold_s: first_at as f64 / 1000.0,
        timeout_s: 0.0,
        expect: Vec::new(),
        keep_running: false,
    }];
    for (i, (recorded, command)) in actions.iter().enumerate() {
        let until = actions
            .get(i + 1)
            .map_or(header.ended_ms, |(next, _)| next.at_ms)
            .max(recorded.at_ms);
        let action = recorded.performs.as_ref().unwrap_or(&recorded.action);
        let table = toml::Table::try_from(action)
            .with_context(|| format!("the action at {} cannot be replayed", seconds(recorded.at_ms)))?;
        let seen: Vec<&str> = recording
            .events
            .iter()
            .filter(|e| e.at_ms >= recorded.at_ms && e.at_ms < until.max(recorded.at_ms + 1))
            .map(|e| e.text.as_str())
            .collect();
        let next = if i + 1 < actions.len() {
            "the next action"
        } else {
            "the recording ended"
        };
        steps.push(Step {
            caption: format!(
                "At {} the recording did: {command}. The cluster runs {} until {next}.",
                seconds(recorded.at_ms),
                seconds(until - recorded.at_ms),
            ),
            why: recorded_after(&seen),
            bind: Default::default(),
            actions: vec![table],
            wait_until: Vec::new(),
            hold_s: (until - recorded.at_ms) as f64 / 1000.0,
            timeout_s: 0.0,
            expect: Vec::new(),
            keep_running: false,
        });
    }
    Ok(Scenario {
        name: name.to_string(),
        title: format!("Replay of {name}"),
        concept: "a recorded session replayed on a fresh cluster".into(),
        setup: Setup {
            brokers: header.brokers,
            unclean_election: false,
            leader_election: ElectionRule::Kafka,
            auto_rebalance: true,
            leader_imbalance_check_interval_ms: None,
            replica_lag_time_max_ms: None,
            broker_session_timeout_ms: None,
            topics: Vec::new(),
            producers: Vec::new(),
            groups: Vec::new(),
        },
        steps,
        lang: Default::default(),
        language: None,
    })
}

/// The cluster a recording replays on: the console's, as it was started.
pub fn recipe(recording: &Recording) -> ClusterRecipe {
    ClusterRecipe::Console {
        brokers: recording.recording.brokers,
        demo: recording.recording.demo,
    }
}

/// "recorded after it: a; b; c (and 4 more)".
fn recorded_after(seen: &[&str]) -> Option<String> {
    if seen.is_empty() {
        return Some("the recording saw no event after it".into());
    }
    let mut text = format!(
        "the recording saw after it: {}",
        seen.iter().take(EVENTS_SHOWN).copied().collect::<Vec<_>>().join("; ")
    );
    if seen.len() > EVENTS_SHOWN {
        text.push_str(&format!(" (and {} more)", seen.len() - EVENTS_SHOWN));
    }
    Some(text)
}

fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Header, RecordedAction, RecordedEvent};
    use crate::tui::Action;

    fn recording() -> Recording {
        let kill = Action::KillBroker { broker: 1 };
        Recording {
            recording: Header {
                version: crate::record::VERSION,
                kdeck: "test".into(),
                started: chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default(),
                brokers: 3,
                demo: true,
                config: None,
                ended_ms: 20_000,
            },
            actions: vec![
                // Opened the confirmation only: not a step.
                RecordedAction {
                    at_ms: 1_000,
                    replayable: false,
                    action: kill.clone(),
                    performs: None,
                },
                RecordedAction {
                    at_ms: 2_500,
                    replayable: true,
                    action: Action::Answer { yes: true },
                    performs: Some(kill),
                },
                RecordedAction {
                    at_ms: 12_500,
                    replayable: true,
                    action: Action::StartBroker { broker: 1 },
                    performs: None,
                },
            ],
            events: ["broker 1 crashed", "broker 1 fenced", "a", "b", "c"]
                .iter()
                .enumerate()
                .map(|(i, t)| RecordedEvent {
                    at_ms: 2_600 + i as u64 * 100,
                    text: (*t).into(),
                })
                .collect(),
        }
    }

    #[test]
    fn each_replayable_action_is_a_step_that_runs_until_the_next() {
        let s = as_scenario(&recording(), "class.toml").expect("scenario");
        assert_eq!(s.title, "Replay of class.toml");
        assert_eq!(s.steps.len(), 3, "the start, then the kill and the restart");
        assert_eq!(s.steps[0].hold_s, 2.5, "the cluster runs until the first action");
        assert!(
            s.steps[0]
                .caption
                .contains("3 brokers, demo traffic on; 2 actions over 20.0 s")
        );
        let kill = &s.steps[1];
        assert_eq!(kill.hold_s, 10.0);
        assert_eq!(
            kill.actions[0].get("action").and_then(|v| v.as_str()),
            Some("kill_broker")
        );
        assert!(
            kill.caption.starts_with("At 2.5 s the recording did: kill broker 1."),
            "{}",
            kill.caption
        );
        assert_eq!(
            kill.why.as_deref(),
            Some("the recording saw after it: broker 1 crashed; broker 1 fenced; a (and 2 more)")
        );
        assert_eq!(s.steps[2].hold_s, 7.5, "the last runs until the recording ended");
        assert!(
            s.steps[2].caption.ends_with("runs 7.5 s until the recording ended."),
            "{}",
            s.steps[2].caption
        );
        assert!(s.steps.iter().all(|st| !st.keep_running), "every step holds");
    }

    #[test]
    fn the_steps_are_actions_the_scenario_player_can_perform() {
        let s = as_scenario(&recording(), "r").expect("scenario");
        for step in &s.steps {
            for table in &step.actions {
                let action = Action::deserialize(toml::Value::Table(table.clone())).expect("an action");
                assert!(action.command().is_some(), "{action:?} changes the cluster");
            }
        }
        assert_eq!(recipe(&recording()), ClusterRecipe::Console { brokers: 3, demo: true });
    }

    use serde::Deserialize;
}
