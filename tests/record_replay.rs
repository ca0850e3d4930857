//! Record and replay: the console records every action with what it submitted; a recording
//! survives its TOML file; replaying it on a fresh cluster (paused clock) tells the same
//! normalised story, and a recording that does not match the cluster's story is reported.

mod tui_fixture;

use crossterm::event::KeyCode;
use kdeck::config::KdeckConfig;
use kdeck::record::{self, Header, RecordedAction, Recorder, Recording, replay};
use kdeck::tui::Action;
use tui_fixture::{harness, now};

fn config() -> KdeckConfig {
    KdeckConfig::from_layers(None).expect("the defaults load")
}

fn at(at_ms: u64, action: Action) -> RecordedAction {
    RecordedAction {
        at_ms,
        replayable: action.command().is_some(),
        action,
        performs: None,
    }
}

/// A session as a user might have had it: a topic, broker 1 crashed and back, leaders
/// moved back to the preferred replicas; a focus change that replay leaves alone.
fn script() -> Recording {
    Recording {
        recording: Header {
            version: record::VERSION,
            kdeck: env!("CARGO_PKG_VERSION").into(),
            started: now(),
            brokers: 3,
            demo: false,
            config: None,
            ended_ms: 40_000,
        },
        actions: vec![
            at(
                500,
                Action::CreateTopic {
                    name: "orders".into(),
                    partitions: 3,
                    replication_factor: 3,
                    cleanup_policy: "delete".into(),
                },
            ),
            at(
                2_000,
                Action::Focus {
                    pane: kdeck::tui::Pane::Partitions,
                },
            ),
            at(5_000, Action::KillBroker { broker: 1 }),
            at(20_000, Action::StartBroker { broker: 1 }),
            at(30_000, Action::ElectPreferredLeaders { topic: None }),
        ],
        events: Vec::new(),
    }
}

async fn replayed(recording: &Recording) -> Recording {
    replay::run(recording, &config(), &mut |_| {})
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
}

#[test]
fn the_console_records_every_action_and_replays_only_what_reached_the_cluster() {
    let mut h = harness();
    let view = h.app.view.clone();
    let recorder = Recorder::new(now(), 3, false, None, &view);
    h.app.observer = Some(Box::new(recorder.clone()));
    h.press(KeyCode::Char('1'));
    h.press(KeyCode::Down);
    h.press(KeyCode::Down);
    h.press(KeyCode::Char('x'));
    h.press(KeyCode::Char('y'));
    let recording = recorder.finish(now());
    let actions: Vec<(&Action, bool)> = recording.actions.iter().map(|a| (&a.action, a.replayable)).collect();
    assert_eq!(
        actions,
        vec![
            (
                &Action::Focus {
                    pane: kdeck::tui::Pane::Brokers
                },
                false
            ),
            (&Action::Move { by: 1 }, false),
            (&Action::Move { by: 1 }, false),
            // It only asked for confirmation: the answer performs it.
            (&Action::KillBroker { broker: 2 }, false),
            (&Action::Answer { yes: true }, true),
        ]
    );
    let performed: Vec<_> = recording.replayable().filter_map(RecordedAction::command).collect();
    assert_eq!(performed, h.source.commands());
}

#[tokio::test(start_paused = true)]
async fn a_recording_round_trips_through_its_file_and_replays_the_same_timeline() {
    let first = replayed(&script()).await;
    assert_eq!(first.replayable().count(), 4, "the focus change is not replayed");
    assert!(
        first.events.iter().any(|e| e.text.contains("broker 1")),
        "the crash is on the timeline: {:?}",
        first.events
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("session.toml");
    first.write(&file).expect("written");
    let text = std::fs::read_to_string(&file).expect("readable");
    assert!(
        text.contains("action = { action = \"kill_broker\", broker = 1 }"),
        "{text}"
    );
    let read = Recording::read(&file).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read, first);

    let again = replayed(&read).await;
    let diffs = record::diff(&read, &again);
    assert!(diffs.is_empty(), "{}", record::report(&read, &diffs).join("\n"));
}

#[tokio::test(start_paused = true)]
async fn a_tampered_recording_is_reported_where_it_differs() {
    let first = replayed(&script()).await;
    let mut tampered = first.clone();
    let event = tampered
        .events
        .iter_mut()
        .find(|e| e.text.contains("broker 1"))
        .expect("an event about broker 1");
    let original = std::mem::replace(&mut event.text, "broker 7 exploded".into());

    let again = replayed(&tampered).await;
    let diffs = record::diff(&tampered, &again);
    assert_eq!(diffs.len(), 1, "{}", record::report(&tampered, &diffs).join("\n"));
    assert_eq!(diffs[0].only_recorded, vec!["broker 7 exploded".to_string()]);
    assert_eq!(diffs[0].only_new.len(), 1);
    assert!(
        diffs[0].only_new[0].contains("broker 1"),
        "{original} vs {:?}",
        diffs[0].only_new
    );
    let report = record::report(&tampered, &diffs);
    assert!(report.contains(&"- broker 7 exploded".to_string()), "{report:?}");
    assert!(
        report.last().is_some_and(|l| l.starts_with("the replay differs")),
        "{report:?}"
    );
}

#[test]
fn a_malformed_recording_names_the_file_line_and_column() {
    let text = "[recording]\nversion = 1\nkdeck = \"0\"\nstarted = \"2025-01-01T00:00:00Z\"\nbrokers = 3\ndemo = false\nended_ms = 10\n\n[[action]]\nat_ms = 5\naction = { action = \"kill_broker\", brokr = 1 }\n";
    let err = Recording::parse("session.toml", text).expect_err("a misspelt field");
    let message = err.to_string();
    assert!(message.starts_with("session.toml:11:"), "{message}");
    assert!(message.contains("brokr"), "{message}");
}
