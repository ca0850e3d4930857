//! Adding and decommissioning brokers from the console: `B` adds one at once, `X` always
//! asks (saying how many replicas move) before decommissioning the selected broker, the `:`
//! line does both, the Brokers pane says joining / draining with progress, and an external
//! or read-only console refuses with its reason.

mod tui_fixture;

use crossterm::event::KeyCode;
use kdeck::tui::action::Action;
use kdeck::tui::overlay::Overlay;
use kdeck::view::{BrokerLifecycle, BrokerStatus, Command};
use tui_fixture::{draw, external_harness, harness, harness_with, now, text, view};

#[test]
fn b_adds_a_broker_at_once() {
    let mut h = harness();
    h.press(KeyCode::Char('B'));
    assert_eq!(h.app.overlay(), None, "adding asks nothing");
    assert_eq!(h.source.commands(), vec![Command::AddBroker]);
}

#[test]
fn x_asks_how_many_replicas_move_then_decommissions_the_selected_broker() {
    let mut h = harness();
    h.press(KeyCode::Char('1'));
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('X'));
    match h.app.overlay() {
        Some(Overlay::Confirm { question, .. }) => {
            assert!(question.contains("Decommission broker 2"), "{question}");
            assert!(question.contains("Its 9 replicas move"), "{question}");
        }
        other => panic!("no confirmation: {other:?}"),
    }
    assert!(h.source.commands().is_empty(), "nothing happens before the answer");
    h.press(KeyCode::Char('y'));
    assert_eq!(h.source.commands(), vec![Command::DecommissionBroker(2)]);
}

#[test]
fn x_always_asks_even_when_destructive_actions_are_not_confirmed() {
    let console = kdeck::config::ConsoleConfig {
        confirm_destructive: false,
        ..Default::default()
    };
    let mut h = harness_with(
        view(),
        console,
        tui_fixture::default_keys(),
        kdeck::tui::theme::Theme::colored(),
    );
    h.press(KeyCode::Char('X'));
    assert!(matches!(h.app.overlay(), Some(Overlay::Confirm { .. })));
    h.press(KeyCode::Char('n'));
    assert!(h.source.commands().is_empty(), "no says no");
}

#[test]
fn a_draining_broker_is_not_decommissioned_twice() {
    let mut v = view();
    v.brokers[2].lifecycle = Some(BrokerLifecycle::Draining { moved: 5, total: 12 });
    let mut h = harness_with(
        v,
        Default::default(),
        tui_fixture::default_keys(),
        kdeck::tui::theme::Theme::colored(),
    );
    h.app.update(Action::DecommissionBroker { broker: 2 }, now());
    assert_eq!(h.app.overlay(), None);
    let status = h.app.status.as_ref().expect("a footer note");
    assert!(status.text.contains("already being decommissioned"), "{}", status.text);
}

#[test]
fn the_command_line_adds_and_decommissions_with_completion() {
    let mut h = harness();
    h.press(KeyCode::Char(':'));
    h.chars("broker ad");
    h.press(KeyCode::Tab);
    h.press(KeyCode::Enter);
    assert_eq!(h.source.commands(), vec![Command::AddBroker]);

    h.press(KeyCode::Char(':'));
    h.chars("broker dec");
    h.press(KeyCode::Tab);
    h.chars("0");
    h.press(KeyCode::Enter);
    assert!(
        matches!(h.app.overlay(), Some(Overlay::Confirm { question, .. }) if question.contains("broker 0")),
        "{:?}",
        h.app.overlay()
    );
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.source.commands(),
        vec![Command::AddBroker, Command::DecommissionBroker(0)]
    );
}

#[test]
fn an_external_cluster_refuses_and_points_to_reassign_drain() {
    let mut h = external_harness(false);
    h.press(KeyCode::Char('1'));
    for key in ['B', 'X'] {
        h.press(KeyCode::Char(key));
        assert_eq!(h.app.overlay(), None, "{key}: no confirmation for what cannot happen");
        let status = h.app.status.as_ref().expect("a footer note");
        assert!(
            status.text.contains("Kafka has no API to start a broker"),
            "{}",
            status.text
        );
        assert!(status.text.contains(":reassign drain N"), "{}", status.text);
    }
    assert!(h.source.commands().is_empty());
}

#[test]
fn a_read_only_console_refuses_both() {
    let mut h = external_harness(true);
    h.press(KeyCode::Char('1'));
    for key in ['B', 'X'] {
        h.press(KeyCode::Char(key));
        assert_eq!(h.app.overlay(), None);
        let status = h.app.status.as_ref().expect("a footer note");
        assert!(status.text.starts_with("read-only"), "{}", status.text);
    }
    assert!(h.source.commands().is_empty());
}

#[test]
fn the_brokers_pane_says_joining_and_draining_with_progress() {
    let mut v = view();
    v.brokers[2].lifecycle = Some(BrokerLifecycle::Draining { moved: 5, total: 12 });
    v.brokers[1].status = BrokerStatus::Fenced;
    v.brokers[1].lifecycle = Some(BrokerLifecycle::Joining);
    let mut h = harness_with(
        v,
        Default::default(),
        tui_fixture::default_keys(),
        kdeck::tui::theme::Theme::colored(),
    );
    let screen = text(&draw(&mut h.console, 160, 48));
    assert!(screen.contains("draining 5/12"), "{screen}");
    assert!(screen.contains("joining"), "{screen}");
}
