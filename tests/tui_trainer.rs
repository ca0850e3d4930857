//! Trainer mode in the console: the running scenario's step, rule, commands and checks in
//! the caption overlay; `n`, `N` and `.` go to the scenario, and mean nothing (with a note
//! saying why) when no scenario runs; a Chinese caption keeps its columns aligned.

mod tui_fixture;

use crossterm::event::KeyCode;
use kdeck::scenario::driver::updates_of;
use kdeck::scenario::player::PlayerEvent;
use kdeck::tui::{ScenarioControl, TrainerUpdate};
use tokio::sync::mpsc;
use tui_fixture::{harness, now};

fn present(h: &mut tui_fixture::Harness, updates: Vec<TrainerUpdate>) {
    for u in updates {
        h.console.trainer(u, now());
    }
}

fn loaded(title: &str) -> TrainerUpdate {
    TrainerUpdate::Loaded {
        title: title.into(),
        steps: 4,
    }
}

#[test]
fn the_scenario_keys_without_a_scenario_say_how_to_start_one() {
    let mut h = harness();
    h.press(KeyCode::Char('n'));
    let note = h.app.status.as_ref().map(|s| s.text.clone()).unwrap_or_default();
    assert!(note.contains("kdeck scenario run"), "{note}");
}

#[test]
fn n_shift_n_and_dot_go_to_the_running_scenario() {
    let mut h = harness();
    let (tx, mut rx) = mpsc::unbounded_channel();
    h.console.scenario = Some(tx);
    present(&mut h, vec![loaded("A leader crashes")]);
    h.press(KeyCode::Char('n'));
    h.press(KeyCode::Char('.'));
    h.press(KeyCode::Char('N'));
    let mut got = Vec::new();
    while let Ok(c) = rx.try_recv() {
        got.push(c);
    }
    assert_eq!(
        got,
        vec![
            ScenarioControl::Next,
            ScenarioControl::TogglePlay,
            ScenarioControl::Previous
        ]
    );
}

#[test]
fn a_step_shows_its_caption_rule_commands_and_checks() {
    let mut h = harness();
    present(
        &mut h,
        vec![
            loaded("A leader crashes"),
            TrainerUpdate::Step {
                index: 1,
                caption: "We crash broker 0, the leader.".into(),
                why: Some("A broker silent for broker.session.timeout.ms is fenced.".into()),
            },
            TrainerUpdate::Command {
                text: "kill broker 0".into(),
                outcome: Ok("broker 0 killed".into()),
            },
            TrainerUpdate::Checks(vec![
                ("orders-0 has a new leader".into(), Some(true)),
                ("ISR size of orders-0 = 2: ISR [0, 1, 2] (size 3)".into(), Some(false)),
            ]),
            TrainerUpdate::Ended { passed: false },
        ],
    );
    assert_draw!("trainer_step", h, 100, 30);
}

#[test]
fn a_chinese_caption_keeps_its_columns() {
    let scenario = kdeck::scenario::find("leader-crash", None)
        .expect("shipped")
        .translated(Some("zh"));
    let step = &scenario.steps[1];
    let mut h = harness();
    let mut updates = vec![TrainerUpdate::Loaded {
        title: scenario.title.clone(),
        steps: scenario.steps.len(),
    }];
    updates.extend(updates_of(PlayerEvent::StepStarted {
        index: 1,
        total: scenario.steps.len(),
        caption: step.caption.replace("{leader}", "0"),
        why: step.why.clone(),
    }));
    present(&mut h, updates);
    assert_draw!("trainer_step_zh", h, 100, 30);
}

#[test]
fn the_flow_picture_opens_in_the_projector_layout_and_n_still_steps_the_scenario() {
    let mut h = harness();
    let (tx, mut rx) = mpsc::unbounded_channel();
    h.console.scenario = Some(tx);
    present(&mut h, vec![loaded("A leader crashes")]);
    h.press(KeyCode::Char('P'));
    assert!(h.app.projector());
    h.press(KeyCode::Char('3'));
    h.press(KeyCode::Char('D'));
    assert!(matches!(
        h.app.screen(),
        kdeck::tui::app::Screen::Flow { partition: 0, .. }
    ));
    h.press(KeyCode::Char('n'));
    h.press(KeyCode::Char('F'));
    assert_eq!(rx.try_recv().ok(), Some(ScenarioControl::Next));
    assert_eq!(h.source.commands(), vec![kdeck::view::Command::Freeze]);
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    assert!(text.contains("Records flowing"), "{text}");
}
