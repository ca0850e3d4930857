//! The `:` command line through the console's keys: a line runs the same command a key
//! would, says in place what is wrong with it, completes with Tab and remembers what ran.

mod tui_fixture;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use kdeck::tui::command::CommandLine;
use kdeck::tui::overlay::Overlay;
use kdeck::view::Command;
use tui_fixture::{external_harness, harness, now};

fn line(h: &tui_fixture::Harness) -> CommandLine {
    match h.app.overlay() {
        Some(Overlay::Command(line)) => line.clone(),
        other => panic!("the command line is not open: {other:?}"),
    }
}

fn footer(h: &mut tui_fixture::Harness) -> String {
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    text.lines().last().unwrap_or_default().to_string()
}

#[test]
fn a_line_runs_the_command_its_key_would_and_asks_first_as_the_key_does() {
    let mut h = harness();
    h.press(KeyCode::Char(':'));
    h.chars("kill 2");
    assert!(footer(&mut h).contains(":kill 2"), "typed in the footer");
    h.press(KeyCode::Enter);
    assert!(
        matches!(h.app.overlay(), Some(Overlay::Confirm { .. })),
        "kill asks first, as x does: {:?}",
        h.app.overlay()
    );
    h.press(KeyCode::Char('y'));
    assert_eq!(h.source.commands(), vec![Command::KillBroker(2)]);
    assert_eq!(h.app.overlay(), None);

    h.press(KeyCode::Char(':'));
    h.chars("topic create audit --partitions 6 --rf 3");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.source.commands().last(),
        Some(&Command::CreateTopic {
            name: "audit".into(),
            partitions: 6,
            replication_factor: 3,
            cleanup_policy: "delete".into(),
        })
    );
}

#[test]
fn a_wrong_line_stays_with_what_is_wrong_beside_it_and_runs_nothing() {
    let mut h = harness();
    h.press(KeyCode::Char(':'));
    h.chars("kill 9");
    h.press(KeyCode::Enter);
    let open = line(&h);
    assert_eq!(open.text, "kill 9", "the text is kept to fix");
    assert_eq!(open.error.as_deref(), Some("no broker 9 (brokers: 0, 1, 2)"));
    assert!(footer(&mut h).contains("no broker 9"), "said in place");
    assert!(h.source.commands().is_empty());
    // Fixing it clears the complaint.
    h.press(KeyCode::Backspace);
    h.chars("1");
    assert_eq!(line(&h).error, None);
    h.press(KeyCode::Esc);
    assert_eq!(h.app.overlay(), None, "Esc closes the line");
    assert!(h.source.commands().is_empty(), "and runs nothing");
}

#[test]
fn tab_completes_commands_and_targets_and_lists_what_it_cannot_choose_between() {
    let mut h = harness();
    h.press(KeyCode::Char(':'));
    h.chars("ki");
    h.press(KeyCode::Tab);
    assert_eq!(line(&h).text, "kill ");
    h.press(KeyCode::Tab);
    assert_eq!(line(&h).offered, vec!["0", "1", "2"]);
    assert!(footer(&mut h).contains("0  1  2"), "the choices show");
    h.console
        .key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL), now());
    h.chars("seek cl");
    h.press(KeyCode::Tab);
    assert_eq!(
        line(&h).text,
        "seek clicks",
        "as far as clicks, clicks-0 and clicks-1 agree"
    );
    h.chars("-1 ear");
    h.press(KeyCode::Tab);
    assert_eq!(line(&h).text, "seek clicks-1 earliest ");
}

#[test]
fn up_and_down_go_through_the_lines_that_ran() {
    let mut h = harness();
    for text in ["focus topics", "filter page"] {
        h.press(KeyCode::Char(':'));
        h.chars(text);
        h.press(KeyCode::Enter);
    }
    assert_eq!(
        h.app.filter(kdeck::tui::Pane::Topics),
        "page",
        "filter ran on the focused pane"
    );
    h.press(KeyCode::Char(':'));
    h.press(KeyCode::Up);
    assert_eq!(line(&h).text, "filter page");
    h.press(KeyCode::Up);
    assert_eq!(line(&h).text, "focus topics");
    h.press(KeyCode::Up);
    assert_eq!(line(&h).text, "focus topics", "the oldest stays");
    h.press(KeyCode::Down);
    assert_eq!(line(&h).text, "filter page");
    h.press(KeyCode::Down);
    assert_eq!(line(&h).text, "", "past the newest: a new line");
}

#[test]
fn a_read_only_console_refuses_a_change_in_place_and_still_runs_what_only_looks() {
    let mut h = external_harness(true);
    h.press(KeyCode::Char(':'));
    h.chars("elect");
    h.press(KeyCode::Enter);
    let open = line(&h);
    assert!(
        open.error.as_deref().is_some_and(|e| e.contains("read-only")),
        "{:?}",
        open.error
    );
    assert!(h.source.commands().is_empty());
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char(':'));
    h.chars("focus groups");
    h.press(KeyCode::Enter);
    assert_eq!(h.app.focus, kdeck::tui::Pane::Groups);
}

#[test]
fn reassign_shows_the_plan_as_a_diff_and_moves_only_when_confirmed() {
    use kdeck::config::ConsoleConfig;
    use kdeck::view::ReplicaMove;
    // Broker 1 is down in the fixture: a move onto it is refused in place.
    let mut h = harness();
    h.press(KeyCode::Char(':'));
    h.chars("reassign move clicks-0 2 1");
    h.press(KeyCode::Enter);
    assert!(
        line(&h)
            .error
            .as_deref()
            .is_some_and(|e| e.contains("broker 1 is not a live broker")),
        "{:?}",
        line(&h)
    );
    assert!(h.source.commands().is_empty());
    h.press(KeyCode::Esc);

    // Drain broker 1's replica of clicks: the plan shows each partition now -> after.
    h.press(KeyCode::Char(':'));
    h.chars("reassign drain 1 clicks");
    h.press(KeyCode::Enter);
    assert!(
        matches!(h.app.overlay(), Some(Overlay::Confirm { .. })),
        "{:?}",
        h.app.overlay()
    );
    let screen = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    tui_fixture::assert_shows(
        &screen,
        &[
            "Reassign 1 partitions? 1 replicas copy the whole log",
            "clicks-1  1 -> 0",
        ],
    );
    assert!(h.source.commands().is_empty(), "nothing moves before the answer");
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.source.commands(),
        vec![Command::Reassign(vec![ReplicaMove {
            topic: "clicks".into(),
            partition: 1,
            replicas: Some(vec![0]),
        }])]
    );

    // A move in progress shows in the Partitions pane (+ joining, - leaving) and cancels:
    // page-views-2 gained broker 0 (in sync already) and drops broker 1 next.
    let mut view = tui_fixture::view();
    let moving = view
        .partitions
        .iter_mut()
        .find(|p| p.topic == "page-views" && p.partition == 2)
        .expect("page-views-2");
    moving.adding = vec![0];
    moving.removing = vec![1];
    let mut h = tui_fixture::harness_with(
        view,
        ConsoleConfig::default(),
        tui_fixture::default_keys(),
        kdeck::tui::theme::Theme::colored(),
    );
    let screen = tui_fixture::text(&tui_fixture::draw(&mut h.console, 160, 40));
    assert!(screen.contains("★2 +●0 -✗1"), "{screen}");
    h.press(KeyCode::Char(':'));
    h.chars("reassign cancel all");
    h.press(KeyCode::Enter);
    let screen = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    tui_fixture::assert_shows(&screen, &["Cancel 1 moves?", "page-views-2  -> 2,1"]);
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.source.commands(),
        vec![Command::Reassign(vec![ReplicaMove {
            topic: "page-views".into(),
            partition: 2,
            replicas: None,
        }])]
    );
}
