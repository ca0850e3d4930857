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
    tui_fixture::assert_shows(&screen, &["Cancel 1 move?", "page-views-2  2,0,1 -> 2,1"]);
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

#[test]
fn a_throttled_reassign_names_the_rate_in_its_question_and_sends_it_with_the_moves() {
    use kdeck::view::ReplicaMove;
    let mut h = harness();
    h.press(KeyCode::Char(':'));
    h.chars("reassign drain 1 clicks --throttle 10MiB");
    h.press(KeyCode::Enter);
    let screen = tui_fixture::text(&tui_fixture::draw(&mut h.console, 160, 40));
    tui_fixture::assert_shows(
        &screen,
        &[
            "Reassign 1 partitions? 1 replicas copy the whole log",
            "Replication throttled to 10485760 bytes/s",
        ],
    );
    assert!(h.source.commands().is_empty(), "nothing moves before the answer");
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.source.commands(),
        vec![Command::ReassignThrottled {
            moves: vec![ReplicaMove {
                topic: "clicks".into(),
                partition: 1,
                replicas: Some(vec![0]),
            }],
            throttle: 10 << 20,
        }]
    );

    // A rate that is not one is refused in place.
    for bad in [
        "reassign drain 1 clicks --throttle fast",
        "reassign drain 1 clicks --throttle",
    ] {
        h.press(KeyCode::Char(':'));
        h.chars(bad);
        h.press(KeyCode::Enter);
        assert!(
            line(&h).error.as_deref().is_some_and(|e| e.contains("--throttle")),
            "{bad}: {:?}",
            line(&h)
        );
        h.press(KeyCode::Esc);
    }
    assert_eq!(h.source.commands().len(), 1);
}

/// The fixture with its group `analytics` emptied (its members gone, its offsets kept), as
/// after its consumers stopped: a group whose offsets can be reset and that can be deleted.
fn with_empty_group() -> tui_fixture::Harness {
    let mut view = tui_fixture::view();
    for g in &mut view.groups {
        if g.group_id == "analytics" {
            g.state = "Empty".into();
            g.members.clear();
        }
    }
    tui_fixture::harness_with(
        view,
        kdeck::config::ConsoleConfig::default(),
        tui_fixture::default_keys(),
        kdeck::tui::theme::Theme::colored(),
    )
}

#[test]
fn reset_offsets_previews_old_and_new_offsets_with_the_lag_and_commits_them_on_yes() {
    let mut h = with_empty_group();
    h.press(KeyCode::Char(':'));
    h.chars("reset-offsets analytics --shift-by -100");
    h.press(KeyCode::Enter);
    let question = match h.app.overlay() {
        Some(Overlay::Confirm { question, .. }) => question.clone(),
        other => panic!("no preview: {other:?}"),
    };
    assert_eq!(
        question.lines().skip(1).collect::<Vec<_>>(),
        vec![
            "  page-views-0  1190 -> 1090  lag 110",
            "  page-views-1  1201 -> 1101  lag 100",
            "  page-views-2  1100 -> 1000  lag 202",
        ]
    );
    insta::assert_snapshot!(
        "reset_offsets_preview",
        tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30))
    );
    assert!(h.source.commands().is_empty(), "nothing is committed before the answer");
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.source.commands(),
        vec![Command::ResetOffsets {
            group: "analytics".into(),
            offsets: vec![
                ("page-views".into(), 0, 1090),
                ("page-views".into(), 1, 1101),
                ("page-views".into(), 2, 1000),
            ],
        }]
    );

    // Past the end is clamped to the end, as kafka-consumer-groups.sh does; n cancels.
    h.press(KeyCode::Char(':'));
    h.chars("reset-offsets analytics --topic page-views --to-offset 1201");
    h.press(KeyCode::Enter);
    match h.app.overlay() {
        Some(Overlay::Confirm { question, .. }) => assert!(
            question.contains("page-views-0  1190 -> 1200  lag 0")
                && question.contains("page-views-2  1100 -> 1201  lag 1"),
            "{question}"
        ),
        other => panic!("no preview: {other:?}"),
    }
    h.press(KeyCode::Char('n'));
    assert_eq!(h.source.commands().len(), 1, "cancelled");
}

#[test]
fn reset_offsets_and_delete_group_are_refused_while_the_group_has_members() {
    let mut h = harness();
    for line in ["reset-offsets analytics --to-earliest", "delete-group analytics"] {
        h.press(KeyCode::Char(':'));
        h.chars(line);
        h.press(KeyCode::Enter);
        assert_eq!(h.app.overlay(), None, "{line}: nothing to confirm");
        let status = h.app.status.as_ref().map(|s| s.text.clone()).unwrap_or_default();
        assert!(
            status.contains("inactive, but the current state is Stable") || status.contains("has active members"),
            "{line}: {status}"
        );
    }
    assert!(h.source.commands().is_empty());

    // Lines that are not the command's shape stay open with what is wrong.
    for (bad, wrong) in [
        ("reset-offsets analytics", "usage: reset-offsets"),
        (
            "reset-offsets analytics --to-earliest --to-latest",
            "one of --to-earliest",
        ),
        ("reset-offsets nobody --to-latest", "no group \"nobody\""),
        ("reset-offsets analytics --to-offset x", "\"x\" is not a number"),
    ] {
        h.press(KeyCode::Char(':'));
        h.chars(bad);
        h.press(KeyCode::Enter);
        let error = line(&h).error.unwrap_or_default();
        assert!(error.contains(wrong), "{bad}: {error}");
        h.press(KeyCode::Esc);
    }
}

#[test]
fn delete_group_asks_first_then_deletes_an_empty_group() {
    let mut h = with_empty_group();
    h.press(KeyCode::Char(':'));
    h.chars("delete-group analytics");
    h.press(KeyCode::Enter);
    match h.app.overlay() {
        Some(Overlay::Confirm { question, .. }) => assert!(question.contains("Delete group analytics"), "{question}"),
        other => panic!("no confirmation: {other:?}"),
    }
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.source.commands(),
        vec![Command::DeleteGroup {
            group: "analytics".into()
        }]
    );
}

fn question(h: &tui_fixture::Harness) -> String {
    match h.app.overlay() {
        Some(Overlay::Confirm { question, .. }) => question.clone(),
        other => panic!("no confirmation: {other:?}"),
    }
}

fn note(h: &tui_fixture::Harness) -> String {
    h.app.status.as_ref().map(|s| s.text.clone()).unwrap_or_default()
}

#[test]
fn delete_records_says_how_many_records_go_and_deletes_only_on_yes() {
    let mut h = harness();
    // T on a partition opens the line with the partition typed; the offset is the operator's.
    h.press(KeyCode::Char('3'));
    h.press(KeyCode::Char('T'));
    let typed = line(&h).text;
    let (topic, partition) = h
        .app
        .selected_partition()
        .map(|p| (p.topic.clone(), p.partition))
        .expect("a partition is selected");
    assert_eq!(typed, format!("delete-records {topic}-{partition} "));
    h.press(KeyCode::Esc);

    // page-views-1: log start 0, high watermark 1201.
    h.press(KeyCode::Char(':'));
    h.chars("delete-records page-views-1 100");
    h.press(KeyCode::Enter);
    let asked = question(&h);
    assert!(
        asked.contains("page-views-1 before offset 100") && asked.contains("0 -> 100: 100 records"),
        "{asked}"
    );
    h.press(KeyCode::Char('n'));
    assert!(h.source.commands().is_empty(), "no is no");

    h.press(KeyCode::Char(':'));
    h.chars("delete-records page-views-1 hw");
    h.press(KeyCode::Enter);
    assert!(question(&h).contains("1201 records"), "{}", question(&h));
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.source.commands(),
        vec![Command::DeleteRecords {
            topic: "page-views".into(),
            partition: 1,
            offset: -1,
        }]
    );

    // Past the high watermark is Kafka's OFFSET_OUT_OF_RANGE, said before anything is sent.
    h.press(KeyCode::Char(':'));
    h.chars("delete-records page-views-1 5000");
    h.press(KeyCode::Enter);
    assert!(note(&h).contains("past the high watermark 1201"), "{}", note(&h));
    assert_eq!(h.app.overlay(), None);
    assert_eq!(h.source.commands().len(), 1);
}

#[test]
fn add_partitions_asks_what_it_does_to_keys_and_a_topic_never_shrinks() {
    let mut h = harness();
    h.press(KeyCode::Char('2'));
    h.press(KeyCode::Char('A'));
    let topic = h.app.selected_topic().map(|t| t.name.clone()).expect("a topic");
    assert_eq!(line(&h).text, format!("topic add-partitions {topic} "));
    h.press(KeyCode::Esc);

    h.press(KeyCode::Char(':'));
    h.chars("topic add-partitions page-views 2");
    h.press(KeyCode::Enter);
    assert!(note(&h).contains("only grows"), "{}", note(&h));
    assert!(h.source.commands().is_empty());

    h.press(KeyCode::Char(':'));
    h.chars("topic add-partitions page-views 12");
    h.press(KeyCode::Enter);
    let asked = question(&h);
    assert!(asked.contains("to 12 partitions") && asked.contains("hash"), "{asked}");
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.source.commands(),
        vec![Command::CreatePartitions {
            topic: "page-views".into(),
            count: 12,
        }]
    );
}

#[test]
fn m_and_shift_m_add_and_remove_a_member_of_the_selected_group() {
    let mut h = harness();
    h.press(KeyCode::Char('m'));
    assert!(note(&h).contains("focus it with 4"), "{}", note(&h));
    h.press(KeyCode::Char('4'));
    let group = h.app.selected_group().map(|g| g.group_id.clone()).expect("a group");
    h.press(KeyCode::Char('m'));
    h.press(KeyCode::Char('M'));
    assert_eq!(
        h.source.commands(),
        vec![
            Command::AddMember { group: group.clone() },
            Command::RemoveMember { group }
        ]
    );

    // An external cluster runs no workload of kdeck's: the keys say so and send nothing.
    let mut h = external_harness(false);
    h.press(KeyCode::Char('4'));
    h.press(KeyCode::Char('m'));
    assert!(h.source.commands().is_empty());
}

#[test]
fn a_read_only_console_offers_neither_delete_records_nor_add_partitions() {
    let mut h = external_harness(true);
    h.press(KeyCode::Char('3'));
    h.press(KeyCode::Char('T'));
    assert_ne!(
        h.app.overlay().map(|o| matches!(o, Overlay::Command(_))),
        Some(true),
        "T opens no line in a read-only console"
    );
    h.press(KeyCode::Char(':'));
    h.chars("topic add-partitions orders 12");
    h.press(KeyCode::Enter);
    assert!(h.source.commands().is_empty());
}
