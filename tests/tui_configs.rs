//! The configs screen through the console's keys: `C` opens the selected topic's configs as
//! the source describes them, Enter edits a value and `d` removes an override (both as the
//! `AlterConfigs` command `:config` runs), and a read-only console only shows them.

mod tui_fixture;

use crossterm::event::KeyCode;
use kdeck::tui::app::Screen;
use kdeck::view::{Command, CommandOutcome, ConfigTarget};
use tui_fixture::{external_harness, harness, now};

fn footer(h: &mut tui_fixture::Harness) -> String {
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    text.lines().last().unwrap_or_default().to_string()
}

fn selected_topic(h: &tui_fixture::Harness) -> String {
    h.app.selected_topic().map(|t| t.name.clone()).unwrap_or_default()
}

/// Opens the configs screen with `C` and moves the cursor to `name`.
fn open_on(h: &mut tui_fixture::Harness, name: &str) -> String {
    let topic = selected_topic(h);
    h.press(KeyCode::Char('C'));
    assert_eq!(
        h.app.screen(),
        &Screen::Configs {
            target: ConfigTarget::Topic(topic.clone())
        }
    );
    let rows: Vec<String> = h
        .app
        .configs
        .as_ref()
        .map(|c| c.rows().iter().map(|r| r.name.clone()).collect())
        .unwrap_or_default();
    let at = rows
        .iter()
        .position(|r| r == name)
        .unwrap_or_else(|| panic!("{name} in {rows:?}"));
    for _ in 0..at {
        h.press(KeyCode::Down);
    }
    topic
}

#[test]
fn c_opens_the_selected_topics_configs_as_the_source_describes_them() {
    let mut h = harness();
    let topic = open_on(&mut h, "cleanup.policy");
    assert_eq!(h.source.config_requests(), vec![ConfigTarget::Topic(topic)]);
    assert_draw!("configs_screen", h, 100, 24);
    h.press(KeyCode::Esc);
    assert_eq!(h.app.screen(), &Screen::Dashboard);
    assert!(h.app.configs.is_none());
}

#[test]
fn enter_edits_the_selected_value_and_enter_again_sets_it() {
    let mut h = harness();
    let topic = open_on(&mut h, "retention.ms");
    h.press(KeyCode::Enter);
    let editing = h.app.configs.as_ref().and_then(|c| c.editing.clone());
    assert_eq!(editing.as_deref(), Some("3600000"), "prefilled with the value in force");
    for _ in 0..7 {
        h.press(KeyCode::Backspace);
    }
    h.chars("7200000");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.source.commands(),
        vec![Command::AlterConfigs {
            topic: Some(topic.clone()),
            set: vec![("retention.ms".into(), "7200000".into())],
            delete: Vec::new(),
        }]
    );

    // Its outcome asks for the configs again: the screen shows what is in force now.
    let command = h.source.commands().remove(0);
    let effects = h.app.on_outcome(
        CommandOutcome {
            command,
            result: Ok("retention.ms=7200000 for the topic".into()),
        },
        now(),
    );
    h.console.perform(effects);
    assert_eq!(h.source.config_requests().len(), 2);
}

#[test]
fn esc_on_the_edit_line_cancels_without_a_command() {
    let mut h = harness();
    open_on(&mut h, "retention.ms");
    h.press(KeyCode::Enter);
    h.chars("1");
    h.press(KeyCode::Esc);
    assert!(h.source.commands().is_empty());
    assert!(matches!(h.app.screen(), Screen::Configs { .. }), "the screen stays");
}

#[test]
fn d_removes_an_override_and_says_why_not_for_a_default() {
    let mut h = harness();
    let topic = open_on(&mut h, "retention.ms");
    h.press(KeyCode::Char('d'));
    assert_eq!(
        h.source.commands(),
        vec![Command::AlterConfigs {
            topic: Some(topic),
            set: Vec::new(),
            delete: vec!["retention.ms".into()],
        }]
    );

    h.press(KeyCode::Up);
    h.press(KeyCode::Char('d'));
    assert_eq!(h.source.commands().len(), 1, "nothing to remove on a default");
    let said = footer(&mut h);
    assert!(said.contains("min.insync.replicas is not overridden here"), "{said}");

    // A cluster-wide default is not the topic's own: removing it from the topic does nothing.
    h.press(KeyCode::Up);
    h.press(KeyCode::Char('d'));
    assert_eq!(h.source.commands().len(), 1);
}

#[test]
fn a_read_only_console_shows_the_configs_and_refuses_to_change_them() {
    let mut h = external_harness(true);
    open_on(&mut h, "retention.ms");
    h.press(KeyCode::Enter);
    assert_eq!(h.app.configs.as_ref().and_then(|c| c.editing.clone()), None);
    assert!(footer(&mut h).contains("read-only"));
    h.press(KeyCode::Char('d'));
    assert!(h.source.commands().is_empty());
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 24));
    assert!(text.contains("retention.ms"), "{text}");
}

#[test]
fn config_topic_without_a_setting_opens_the_screen_and_broker_the_clusters_defaults() {
    let mut h = harness();
    let topic = selected_topic(&h);
    h.press(KeyCode::Char(':'));
    h.chars(&format!("config topic {topic}"));
    h.press(KeyCode::Enter);
    assert_eq!(
        h.app.screen(),
        &Screen::Configs {
            target: ConfigTarget::Topic(topic)
        }
    );
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char(':'));
    h.chars("config broker");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.app.screen(),
        &Screen::Configs {
            target: ConfigTarget::ClusterDefault
        }
    );
}

#[test]
fn a_failed_describe_shows_its_reason_in_the_screen() {
    let mut h = harness();
    *h.source.configs.lock().expect("configs") = Err("topic gone does not exist".into());
    h.press(KeyCode::Char('C'));
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 24));
    assert!(
        text.contains("cannot show the configs: topic gone does not exist"),
        "{text}"
    );
}
