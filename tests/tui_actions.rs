//! The console as data flow: keys, clicks and scripts become the same actions; `update`
//! returns effects and performs none; overlays layer (a caption stays under a confirmation).

mod tui_fixture;

use crossterm::event::{KeyCode, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use kdeck::tui::Pane;
use kdeck::tui::action::{Action, Effect};
use kdeck::tui::overlay::Overlay;
use kdeck::view::{Command, SeekPosition, TailMode, TailSpec};
use tui_fixture::{harness, now};

#[derive(serde::Deserialize)]
struct Script {
    step: Vec<Action>,
}

#[test]
fn a_script_and_the_keys_produce_the_same_commands() {
    let mut by_keys = harness();
    by_keys.press(KeyCode::Char('1'));
    by_keys.press(KeyCode::Down);
    by_keys.press(KeyCode::Down);
    by_keys.press(KeyCode::Char('x'));
    by_keys.press(KeyCode::Char('y'));

    let script: Script = toml::from_str(
        r#"
        [[step]]
        action = "kill_broker"
        broker = 2
        [[step]]
        action = "answer"
        yes = true
        "#,
    )
    .expect("a valid script");
    let mut by_script = harness();
    for step in script.step {
        by_script.act(step, now());
    }
    assert_eq!(by_keys.source.commands(), vec![Command::KillBroker(2)]);
    assert_eq!(by_script.source.commands(), by_keys.source.commands());
}

#[test]
fn update_returns_effects_and_performs_none() {
    let mut h = harness();
    let tails_before = h.source.tails().len();
    let effects = h.app.update(
        Action::Seek {
            topic: "clicks".into(),
            partition: Some(1),
            to: SeekPosition::Offset(100),
        },
        now(),
    );
    // From an offset the tail is a window the user scrolls, not a ring that follows.
    let spec = TailSpec {
        mode: TailMode::Window,
        ..TailSpec::ring("clicks", Some(1), SeekPosition::Offset(100))
    };
    assert_eq!(
        effects,
        vec![Effect::Tail {
            spec: spec.clone(),
            capacity: 1000
        }]
    );
    assert_eq!(h.source.tails().len(), tails_before, "update itself started no tail");
    assert_eq!(h.app.selected_topic().map(|t| t.name.as_str()), Some("clicks"));
    h.perform(effects);
    assert_eq!(h.source.tails().last(), Some(&spec));

    let effects = h.app.update(Action::KillBroker { broker: 0 }, now());
    assert!(effects.is_empty(), "a kill asks first: {effects:?}");
    let effects = h.app.update(Action::Answer { yes: true }, now());
    assert_eq!(effects, vec![Effect::Submit(Command::KillBroker(0))]);
    assert!(
        h.source.commands().is_empty(),
        "submitted only when the loop performs it"
    );
}

#[test]
fn a_caption_stays_on_screen_under_a_confirmation() {
    let mut h = harness();
    h.act(
        Action::Caption {
            title: "Step 2 of 5".into(),
            text: "Broker 0 leads page-views-0. Watch the ISR when it dies.".into(),
        },
        now(),
    );
    h.press(KeyCode::Char('x'));
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    assert!(text.contains("Watch the ISR when it dies"), "{text}");
    assert!(text.contains("Kill broker 0"), "{text}");
    h.press(KeyCode::Char('y'));
    assert_eq!(h.source.commands(), vec![Command::KillBroker(0)]);
    assert!(matches!(h.app.overlays.as_slice(), [Overlay::Caption { .. }]));
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    assert!(
        text.contains("Watch the ISR") && !text.contains("Kill broker 0"),
        "{text}"
    );
    h.act(Action::HideCaption, now());
    assert!(h.app.overlays.is_empty());
}

#[test]
fn a_click_focuses_a_pane_and_selects_the_row_under_it() {
    let mut h = harness();
    tui_fixture::draw(&mut h.console, 120, 40);
    let topics = h
        .app
        .layout
        .panes
        .iter()
        .find(|p| p.pane == Pane::Topics)
        .copied()
        .expect("the topics pane is drawn");
    let rows = topics.rows.expect("topics are rows");
    let click = |column, row| MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column,
        row,
        modifiers: KeyModifiers::NONE,
    };
    h.mouse(click(rows.x + 2, rows.y + 1), now());
    assert_eq!(h.app.focus, Pane::Topics);
    let second = h.app.view.topics[1].name.clone();
    assert_eq!(h.app.selected_topic().map(|t| t.name.clone()), Some(second));
    // The frame itself focuses without moving the selection.
    h.mouse(click(rows.x + 2, rows.y + 1), now());
    h.mouse(click(topics.area.x, topics.area.y), now());
    assert_eq!(h.app.cursor(Pane::Topics), 1);
}

#[test]
fn help_fits_80x24_scrolls_and_lists_the_focused_panes_keys_first() {
    let mut h = harness();
    h.press(KeyCode::Char('5'));
    h.press(KeyCode::Char('?'));
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 80, 24));
    let lines: Vec<&str> = text.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.contains("Keys ·"))
        .expect("the overlay is drawn");
    assert!(lines[top].contains("scroll"), "{}", lines[top]);
    assert!(lines[top + 1].contains("In Messages"), "{}", lines[top + 1]);
    assert!(
        lines[top + 2].contains("Enter") && lines[top + 2].contains("detail"),
        "{}",
        lines[top + 2]
    );
    assert!(!text.contains("Log file"), "the end is below");
    // Keys, then the `:` commands, then the notes: PgDn goes 10 lines at a time.
    for _ in 0..16 {
        h.press(KeyCode::PageDown);
    }
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 80, 24));
    assert!(text.contains("Log file"), "scrolled to the end: {text}");
    h.press(KeyCode::Char('x'));
    assert_eq!(h.app.overlay(), None, "another key closes help");
    assert!(h.source.commands().is_empty(), "and does nothing else");
}

#[test]
fn a_fault_is_one_incident_that_opens_to_its_events() {
    let mut h = harness();
    h.press(KeyCode::Char('6'));
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    // One incident line; its "3.0 s" wraps whole, never parted from its unit.
    assert!(
        text.contains("▸ broker 1 down: killed -> fenced after") && text.contains("3.0 s ->"),
        "one line for the crash: {text}"
    );
    assert!(
        !text.contains("ISR page-views-0 shrank"),
        "its events are folded: {text}"
    );
    h.press(KeyCode::Enter);
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    assert!(text.contains("▾ broker 1 down"), "{text}");
    assert!(
        text.contains("  ISR page-views-0 shrank"),
        "its events show, indented: {text}"
    );
    h.press(KeyCode::Enter);
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    assert!(!text.contains("ISR page-views-0 shrank"), "folded again: {text}");
    // A filter lists the matching events themselves.
    h.press(KeyCode::Char('/'));
    h.chars("ISR");
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    assert!(text.contains("ISR page-views-0 shrank"), "{text}");
}

#[test]
fn a_failed_action_is_in_the_timeline_in_full() {
    let mut h = harness();
    let reason = "INVALID_REPLICATION_FACTOR: replication factor 5 is larger than the 3 brokers that are registered";
    h.app.on_outcome(
        kdeck::view::CommandOutcome {
            command: Command::CreateTopic {
                name: "orders".into(),
                partitions: 3,
                replication_factor: 5,
                cleanup_policy: "delete".into(),
            },
            result: Err(reason.into()),
        },
        now(),
    );
    let rows = h.app.event_rows();
    let last = rows.last().expect("a row");
    assert!(
        matches!(last, kdeck::tui::app::EventRow::Event(e) if e.text.ends_with(reason) && e.text.starts_with("create topic orders")),
        "{last:?}"
    );
    assert!(h.app.status.as_ref().is_some_and(|s| s.text.contains("failed")));
}
