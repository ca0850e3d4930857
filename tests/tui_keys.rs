//! Each console action becomes the right `ClusterSource` call (or state change).

mod tui_fixture;

use crossterm::event::KeyCode;
use kdeck::config::ConsoleConfig;
use kdeck::tui::Pane;
use kdeck::tui::keymap::{Binding, parse_key};
use kdeck::tui::overlay::Overlay;
use kdeck::tui::theme::Theme;
use kdeck::view::{Command, ProduceRequest, SeekPosition};
use tui_fixture::{external_harness, harness, harness_with, view};

#[test]
fn kill_asks_first_then_kills_the_selected_broker() {
    let mut h = harness();
    h.press(KeyCode::Char('1'));
    h.press(KeyCode::Char('x'));
    assert!(matches!(h.app.overlay(), Some(Overlay::Confirm { .. })));
    assert!(h.source.commands().is_empty(), "nothing happens before the answer");
    h.press(KeyCode::Char('y'));
    assert_eq!(h.source.commands(), vec![Command::KillBroker(0)]);
}

#[test]
fn no_cancels_a_destructive_action() {
    let mut h = harness();
    h.press(KeyCode::Char('s'));
    h.press(KeyCode::Char('n'));
    assert!(h.source.commands().is_empty());
    assert_eq!(h.app.overlay(), None);
}

#[test]
fn enter_alone_does_not_confirm_a_kill_and_the_prompt_names_the_broker() {
    let mut h = harness();
    h.press(KeyCode::Char('1'));
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('x'));
    match h.app.overlay() {
        Some(Overlay::Confirm { question, .. }) => assert!(question.contains("broker 2"), "{question}"),
        other => panic!("no confirmation: {other:?}"),
    }
    h.press(KeyCode::Enter);
    assert!(h.source.commands().is_empty(), "Enter says no");
    assert_eq!(h.app.overlay(), None);
}

#[test]
fn internal_topics_cannot_be_deleted_from_the_console() {
    let mut h = harness();
    h.press(KeyCode::Char('2'));
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('j'));
    assert_eq!(
        h.app.selected_topic().map(|t| t.name.clone()),
        Some("__consumer_offsets".into())
    );
    h.press(KeyCode::Char('d'));
    assert_eq!(h.app.overlay(), None, "no confirmation is even offered");
    h.press(KeyCode::Char('y'));
    assert!(h.source.commands().is_empty());
    let status = h.app.status.as_ref().expect("a footer note");
    assert!(status.text.contains("internal topic"), "{}", status.text);
}

#[test]
fn stop_restart_and_pause_act_on_the_selected_broker() {
    let mut h = harness();
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('s'));
    h.press(KeyCode::Char('y'));
    h.press(KeyCode::Char('z'));
    h.press(KeyCode::Char('k'));
    h.press(KeyCode::Char('r'));
    assert_eq!(
        h.source.commands(),
        vec![Command::StopBroker(2), Command::PauseBroker(2), Command::StartBroker(1)]
    );
}

#[test]
fn without_confirmations_kill_acts_at_once() {
    let console = ConsoleConfig {
        confirm_destructive: false,
        ..ConsoleConfig::default()
    };
    let mut h = harness_with(view(), console, tui_fixture::default_keys(), Theme::colored());
    h.press(KeyCode::Char('x'));
    assert_eq!(h.source.commands(), vec![Command::KillBroker(0)]);
}

#[test]
fn a_paused_broker_resumes_with_z_or_r() {
    let mut paused = view();
    paused.brokers[2].status = kdeck::view::BrokerStatus::Paused;
    let mut h = harness_with(
        paused,
        ConsoleConfig::default(),
        tui_fixture::default_keys(),
        Theme::colored(),
    );
    h.press(KeyCode::Char('G'));
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('z'));
    h.press(KeyCode::Char('r'));
    assert_eq!(
        h.source.commands(),
        vec![Command::ResumeBroker(2), Command::ResumeBroker(2)]
    );
}

#[test]
fn rebalance_targets_the_selected_topic_or_all() {
    let mut h = harness();
    h.press(KeyCode::Char('b'));
    h.press(KeyCode::Char('2'));
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('b'));
    assert_eq!(
        h.source.commands(),
        vec![
            Command::ElectPreferredLeaders { topic: None },
            Command::ElectPreferredLeaders {
                topic: Some("clicks".into())
            },
        ]
    );
}

#[test]
fn produce_sends_the_dialog_fields() {
    let mut h = harness();
    h.press(KeyCode::Char('p'));
    h.chars("hello 世界");
    h.press(KeyCode::Tab);
    h.chars("source=console, trace=1");
    h.press(KeyCode::Tab);
    h.chars("2");
    h.press(KeyCode::Tab);
    h.chars("u1");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.source.commands(),
        vec![Command::Produce(ProduceRequest {
            topic: "page-views".into(),
            partition: Some(2),
            key: Some("u1".into()),
            value: "hello 世界".into(),
            headers: vec![("source".into(), "console".into()), ("trace".into(), "1".into())],
        })]
    );
}

#[test]
fn a_bad_partition_keeps_the_dialog_open_with_the_reason() {
    let mut h = harness();
    h.press(KeyCode::Char('p'));
    h.press(KeyCode::Tab);
    h.press(KeyCode::Tab);
    h.chars("two");
    h.press(KeyCode::Enter);
    assert!(h.source.commands().is_empty());
    match h.app.overlay() {
        Some(Overlay::Dialog(d)) => assert!(d.error.as_deref().is_some_and(|e| e.contains("two")), "{d:?}"),
        other => panic!("the dialog closed: {other:?}"),
    }
}

#[test]
fn create_and_delete_topics() {
    let mut h = harness();
    h.press(KeyCode::Char('c'));
    h.chars("orders");
    h.press(KeyCode::Tab);
    h.press(KeyCode::Backspace);
    h.chars("6");
    h.press(KeyCode::Enter);
    h.press(KeyCode::Char('2'));
    h.press(KeyCode::Char('d'));
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.source.commands(),
        vec![
            Command::CreateTopic {
                name: "orders".into(),
                partitions: 6,
                // The dialog offers at most the live brokers (broker 1 is down).
                replication_factor: 2,
                cleanup_policy: "delete".into(),
            },
            Command::DeleteTopic {
                name: "page-views".into()
            },
        ]
    );
}

#[test]
fn a_compacted_topic_is_created_from_the_dialog_and_a_bad_policy_keeps_it_open() {
    let mut h = harness();
    h.press(KeyCode::Char('c'));
    h.chars("profiles");
    for _ in 0..3 {
        h.press(KeyCode::Tab);
    }
    for _ in 0.."delete".len() {
        h.press(KeyCode::Backspace);
    }
    h.chars("compaction");
    h.press(KeyCode::Enter);
    assert!(h.source.commands().is_empty());
    match h.app.overlay() {
        Some(Overlay::Dialog(d)) => assert!(
            d.error.as_deref().is_some_and(|e| e.contains("compact,delete")),
            "{d:?}"
        ),
        other => panic!("the dialog closed: {other:?}"),
    }
    for _ in 0.."ion".len() {
        h.press(KeyCode::Backspace);
    }
    h.press(KeyCode::Enter);
    assert_eq!(
        h.source.commands(),
        vec![Command::CreateTopic {
            name: "profiles".into(),
            partitions: 3,
            replication_factor: 2,
            cleanup_policy: "compact".into(),
        }]
    );
}

#[test]
fn w_pauses_and_resumes_the_demo() {
    let mut h = harness();
    h.press(KeyCode::Char('w'));
    let mut paused = view();
    paused.demo = Some(false);
    h.set_view(std::sync::Arc::new(paused));
    h.press(KeyCode::Char('w'));
    assert_eq!(h.source.commands(), vec![Command::PauseDemo, Command::ResumeDemo]);
}

#[test]
fn q_quits() {
    let mut h = harness();
    h.press(KeyCode::Char('q'));
    assert!(h.app.quit);
}

#[test]
fn panes_cycle_with_tab_and_jump_with_digits() {
    let mut h = harness();
    assert_eq!(h.app.focus, Pane::Brokers);
    h.press(KeyCode::Tab);
    assert_eq!(h.app.focus, Pane::Topics);
    h.press(KeyCode::BackTab);
    h.press(KeyCode::BackTab);
    assert_eq!(h.app.focus, Pane::Events);
    h.press(KeyCode::Char('3'));
    assert_eq!(h.app.focus, Pane::Partitions);
}

#[test]
fn the_tail_follows_the_selected_topic_partition_and_seeks() {
    let mut h = harness();
    assert_eq!(h.source.tails().last().map(|t| t.topic.as_str()), Some("page-views"));
    h.press(KeyCode::Char('3'));
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Enter);
    assert_eq!(h.app.focus, Pane::Messages);
    let spec = h.source.tails().last().cloned().expect("a tail");
    assert_eq!((spec.topic.as_str(), spec.partition), ("page-views", Some(1)));
    h.press(KeyCode::Char('g'));
    assert_eq!(h.source.tails().last().map(|t| t.start), Some(SeekPosition::Beginning));
    h.press(KeyCode::Char('G'));
    assert_eq!(h.source.tails().last().map(|t| t.start), Some(SeekPosition::End));
    h.press(KeyCode::Char('o'));
    h.chars("1100");
    h.press(KeyCode::Enter);
    assert_eq!(
        h.source.tails().last().map(|t| t.start),
        Some(SeekPosition::Offset(1100))
    );
    h.press(KeyCode::Char(']'));
    assert_eq!(h.source.tails().last().and_then(|t| t.partition), Some(2));
    h.press(KeyCode::Char('2'));
    h.press(KeyCode::Char('j'));
    assert_eq!(h.source.tails().last().map(|t| t.topic.as_str()), Some("clicks"));
}

#[test]
fn seek_to_a_time_accepts_relative_and_local_times() {
    let mut h = harness();
    h.press(KeyCode::Char('5'));
    h.press(KeyCode::Char('t'));
    h.chars("2026-01-15 11:59:00");
    h.press(KeyCode::Enter);
    let expected = tui_fixture::now() - chrono::Duration::seconds(60);
    assert_eq!(
        h.source.tails().last().map(|t| t.start),
        Some(SeekPosition::Timestamp(expected))
    );
    h.press(KeyCode::Char('t'));
    h.chars("yesterday");
    h.press(KeyCode::Enter);
    assert!(
        matches!(h.app.overlay(), Some(Overlay::Dialog(_))),
        "a bad time keeps the dialog open"
    );
}

#[test]
fn the_message_filter_matches_keys_values_and_headers() {
    let mut h = harness();
    h.press(KeyCode::Char('5'));
    h.press(KeyCode::Char('/'));
    h.chars("首页");
    h.press(KeyCode::Enter);
    let offsets: Vec<i64> = h.app.visible_messages().iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![1198]);
    h.press(KeyCode::Esc);
    assert_eq!(h.app.visible_messages().len(), 4);
}

#[test]
fn keys_come_from_the_configuration() {
    let mut keys = tui_fixture::default_keys();
    keys.insert(Binding::KillBroker, vec![parse_key("J").expect("a key")]);
    let mut h = harness_with(view(), ConsoleConfig::default(), keys, Theme::colored());
    h.press(KeyCode::Char('x'));
    assert_eq!(h.app.overlay(), None, "x is no longer bound");
    h.press(KeyCode::Char('J'));
    h.press(KeyCode::Char('y'));
    assert_eq!(h.source.commands(), vec![Command::KillBroker(0)]);
}

#[test]
fn the_selected_topic_stays_selected_when_a_topic_is_created_before_it() {
    let mut h = harness();
    h.press(KeyCode::Char('2'));
    h.press(KeyCode::Char('j'));
    assert_eq!(h.app.selected_topic().map(|t| t.name.clone()), Some("clicks".into()));
    let mut grown = view();
    let mut first = grown.topics[1].clone();
    first.name = "accounts".into();
    grown.topics.insert(0, first);
    h.set_view(std::sync::Arc::new(grown));
    assert_eq!(h.app.selected_topic().map(|t| t.name.clone()), Some("clicks".into()));
}

#[test]
fn a_read_only_console_submits_nothing_and_says_why() {
    let mut h = external_harness(true);
    for pane in ['1', '2', '3'] {
        h.press(KeyCode::Char(pane));
        for key in ['p', 'x', 's', 'r', 'z', 'b', 'c', 'd', 'w'] {
            h.press(KeyCode::Char(key));
            assert_eq!(h.app.overlay(), None, "{key} opens nothing");
            h.press(KeyCode::Enter);
            h.press(KeyCode::Esc);
        }
    }
    assert!(h.source.commands().is_empty(), "{:?}", h.source.commands());
    h.press(KeyCode::Char('p'));
    let status = h.app.status.as_ref().expect("a footer note");
    assert!(status.text.starts_with("read-only"), "{}", status.text);
}

#[test]
fn broker_control_on_an_external_cluster_explains_itself() {
    let mut h = external_harness(false);
    h.press(KeyCode::Char('1'));
    h.press(KeyCode::Char('x'));
    assert_eq!(h.app.overlay(), None, "no confirmation for what cannot happen");
    assert!(h.source.commands().is_empty());
    let status = h.app.status.as_ref().expect("a footer note");
    assert!(
        status.text.contains("Kafka has no API to stop or start a broker"),
        "{}",
        status.text
    );
    h.press(KeyCode::Char('b'));
    assert_eq!(
        h.source.commands(),
        vec![Command::ElectPreferredLeaders { topic: None }],
        "elections work"
    );
}

#[test]
fn a_too_small_terminal_ignores_keys_but_quit() {
    let mut h = harness();
    tui_fixture::draw(&mut h.console, 60, 20);
    for key in ['?', 'x', 'y', 'd', 'c', 'p'] {
        h.press(KeyCode::Char(key));
        assert_eq!(h.app.overlay(), None, "{key} opens nothing unseen");
    }
    assert!(h.source.commands().is_empty());
    tui_fixture::draw(&mut h.console, 120, 40);
    h.press(KeyCode::Char('?'));
    assert!(
        matches!(h.app.overlay(), Some(Overlay::Help { .. })),
        "at a usable size the keys work again"
    );
    h.press(KeyCode::Esc);
    tui_fixture::draw(&mut h.console, 60, 20);
    h.press(KeyCode::Char('q'));
    assert!(h.app.quit);
}

#[test]
fn a_confirmation_left_open_by_a_shrinking_terminal_is_not_answered_unseen() {
    let mut h = harness();
    h.press(KeyCode::Char('x'));
    assert!(matches!(h.app.overlay(), Some(Overlay::Confirm { .. })));
    tui_fixture::draw(&mut h.console, 60, 20);
    h.press(KeyCode::Char('y'));
    assert!(
        h.source.commands().is_empty(),
        "no kill confirmed behind the too-small line"
    );
    h.press(KeyCode::Esc);
    assert_eq!(h.app.overlay(), None);
}

#[test]
fn the_create_dialog_refuses_what_kafka_would_and_keeps_the_input() {
    let mut h = harness();
    h.press(KeyCode::Char('c'));
    h.chars("orders");
    h.press(KeyCode::Tab);
    h.press(KeyCode::Tab);
    h.press(KeyCode::Backspace);
    h.chars("3");
    h.press(KeyCode::Enter);
    let error = |h: &tui_fixture::Harness| match h.app.overlay() {
        Some(Overlay::Dialog(d)) => (d.error.clone().unwrap_or_default(), d.fields[0].value.clone()),
        other => panic!("the dialog closed: {other:?}"),
    };
    let (message, name) = error(&h);
    assert!(
        message.contains("replication factor 3") && message.contains("2 live brokers"),
        "{message}"
    );
    assert_eq!(name, "orders", "the typed name is kept");
    // A name Kafka refuses, and one that exists.
    h.press(KeyCode::Backspace);
    h.chars("2");
    h.press(KeyCode::BackTab);
    h.press(KeyCode::BackTab);
    h.chars("/eu");
    h.press(KeyCode::Enter);
    let (message, _) = error(&h);
    assert!(message.contains("'/'"), "{message}");
    for _ in 0.."orders/eu".len() {
        h.press(KeyCode::Backspace);
    }
    h.chars("clicks");
    h.press(KeyCode::Enter);
    assert!(error(&h).0.contains("already exists"));
    h.press(KeyCode::Backspace);
    h.press(KeyCode::Enter);
    assert_eq!(h.app.overlay(), None);
    assert!(matches!(
        h.source.commands().as_slice(),
        [Command::CreateTopic { name, replication_factor: 2, .. }] if name == "click"
    ));
}

#[test]
fn the_produce_dialog_refuses_a_partition_the_topic_does_not_have() {
    let mut h = harness();
    h.press(KeyCode::Char('2'));
    h.press(KeyCode::Char('p'));
    h.press(KeyCode::BackTab);
    h.press(KeyCode::BackTab);
    h.chars("7");
    h.press(KeyCode::Tab);
    h.press(KeyCode::Tab);
    h.chars("hello");
    h.press(KeyCode::Enter);
    match h.app.overlay() {
        Some(Overlay::Dialog(d)) => {
            let e = d.error.as_deref().unwrap_or_default();
            assert!(e.contains("partition 7 is out of range") && e.contains("(0-2)"), "{e}");
            assert_eq!(d.fields[2].value, "hello", "the value is kept");
        }
        other => panic!("the dialog closed: {other:?}"),
    }
    assert!(h.source.commands().is_empty());
}

#[test]
fn restart_and_pause_act_only_where_the_selected_broker_is_in_sight() {
    let mut h = harness();
    h.press(KeyCode::Char('1'));
    h.press(KeyCode::Down);
    h.press(KeyCode::Char('2'));
    h.press(KeyCode::Char('r'));
    assert!(h.source.commands().is_empty(), "not from the Topics pane");
    let hint = h.app.status.as_ref().map(|s| s.text.clone()).unwrap_or_default();
    assert!(hint.contains("Brokers") && hint.contains('1'), "{hint}");
    h.press(KeyCode::Char('1'));
    h.press(KeyCode::Char('r'));
    assert_eq!(h.source.commands(), vec![Command::StartBroker(1)]);
}

/// A stray `-` must not change a cluster's settings: in the operator's console each live
/// toggle (`+`/`-` min.insync, `U`, `R`, `a`) asks first, saying what it would set.
#[test]
fn live_toggles_ask_first_in_the_operators_console() {
    let mut h = harness();
    let mut v = view();
    if let Some(c) = v.controls.as_mut() {
        c.producer_acks = Some(-1);
    }
    h.set_view(std::sync::Arc::new(v));
    h.press(KeyCode::Char('2'));
    for (key, asks) in [
        ('-', "Set min.insync.replicas of page-views to 1 (now 2)?"),
        ('+', "Set min.insync.replicas of page-views to 3 (now 2)?"),
        (
            'U',
            "Turn unclean leader election on for the cluster: an out-of-sync replica may lead and acknowledged \
             records can be lost?",
        ),
        ('R', "Turn automatic preferred-leader rebalance off?"),
        ('a', "Set the workload producers' acks to 1?"),
    ] {
        h.press(KeyCode::Char(key));
        match h.app.overlay() {
            Some(Overlay::Confirm { question, .. }) => assert_eq!(question, asks, "{key}"),
            other => panic!("{key}: no confirmation: {other:?}"),
        }
        h.press(KeyCode::Char('n'));
    }
    assert!(h.source.commands().is_empty(), "{:?}", h.source.commands());
    h.press(KeyCode::Char('-'));
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.source.commands(),
        vec![Command::SetMinInsync {
            topic: "page-views".into(),
            value: 1
        }]
    );
}

/// A trainer (a scenario presented, or the projector layout) wants the toggles at once.
#[test]
fn live_toggles_act_at_once_for_a_trainer() {
    let mut h = harness();
    h.app.trainer = Some(kdeck::tui::app::Trainer::default());
    h.press(KeyCode::Char('R'));
    assert_eq!(h.app.overlay(), None);
    let mut p = harness();
    p.press(KeyCode::Char('P'));
    p.press(KeyCode::Char('R'));
    assert_eq!(p.app.overlay(), None);
    assert_eq!(h.source.commands(), vec![Command::SetAutoRebalance(false)]);
    assert_eq!(p.source.commands(), vec![Command::SetAutoRebalance(false)]);
}
