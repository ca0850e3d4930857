//! A trainer in front of a room: a pane maximised, the projector layout (few big, spaced
//! columns), the cluster's clock and settings in the header, and the live toggles, each
//! resolved from what the view says now.

mod tui_fixture;

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use kdeck::config::{ConsoleConfig, Presentation};
use kdeck::tui::Pane;
use kdeck::tui::app::EventRow;
use kdeck::tui::theme::{Theme, Themes};
use kdeck::view::{ClusterView, Command, Controls, EventClass, Refusals, Severity, ViewEvent};
use ratatui::style::Modifier;
use tui_fixture::{Harness, controls, default_keys, external_harness, harness, harness_with, now, view};

/// The fixture with the clock and settings changed by `change`.
fn with_controls(change: impl FnOnce(&mut Controls)) -> ClusterView {
    let mut v = view();
    let mut c = controls();
    change(&mut c);
    v.controls = Some(c);
    v
}

/// Shows `view` to the console, as a new snapshot of the cluster would.
fn show(h: &mut Harness, view: ClusterView) {
    h.set_view(Arc::new(view));
}

fn note(h: &Harness) -> String {
    h.app.status.as_ref().map(|s| s.text.clone()).unwrap_or_default()
}

#[test]
fn maximise_gives_the_focused_pane_the_whole_body_and_again_restores() {
    let mut h = harness();
    for digit in ['1', '2', '3', '4', '5', '6'] {
        h.press(KeyCode::Char(digit));
        h.press(KeyCode::Char('Z'));
        let buffer = tui_fixture::draw(&mut h.console, 100, 30);
        let panes = &h.app.layout.panes;
        assert_eq!(panes.len(), 1, "{digit}: one pane");
        assert_eq!(panes[0].pane, h.app.focus);
        // Header (2 lines) and footer (1 line) stay.
        assert_eq!(panes[0].area, ratatui::layout::Rect::new(0, 2, 100, 27), "{digit}");
        let text = tui_fixture::text(&buffer);
        assert!(text.starts_with(" kdeck · cluster training"), "{text}");
        h.press(KeyCode::Char('Z'));
        tui_fixture::draw(&mut h.console, 100, 30);
        assert!(h.app.layout.panes.len() >= 3, "{digit}: restored");
    }
}

#[test]
fn a_click_in_a_maximised_pane_selects_the_row_under_it() {
    let mut h = harness();
    h.press(KeyCode::Char('3'));
    h.press(KeyCode::Char('Z'));
    assert_draw!("maximised_partitions_100x30", h, 100, 30);
    let rows = h.app.layout.panes[0].rows.expect("partitions are rows");
    h.mouse(
        MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: rows.x + 2,
            row: rows.y + 2,
            modifiers: KeyModifiers::NONE,
        },
        now(),
    );
    assert_eq!(h.app.focus, Pane::Partitions);
    assert_eq!(h.app.selected_partition().map(|p| p.partition), Some(2));
}

#[test]
fn projector_layout_at_100x30() {
    let mut h = harness();
    h.press(KeyCode::Char('P'));
    assert_eq!(h.app.presentation, Presentation::Projector);
    assert_draw!("projector_100x30", h, 100, 30);
    let panes = h.app.layout.panes.clone();
    let on: Vec<Pane> = panes.iter().map(|p| p.pane).collect();
    assert_eq!(on, vec![Pane::Brokers, Pane::Topics, Pane::Partitions, Pane::Events]);
    for line in 2..29 {
        let side_by_side = panes
            .iter()
            .filter(|p| line >= p.area.y && line < p.area.y + p.area.height)
            .count();
        assert!(side_by_side <= 2, "line {line}: {side_by_side} panes side by side");
    }
    h.press(KeyCode::Char('P'));
    assert_eq!(h.app.presentation, Presentation::Normal);
    tui_fixture::draw(&mut h.console, 120, 40);
    assert_eq!(h.app.layout.panes.len(), 6, "the whole dashboard again");
}

#[test]
fn the_projector_layout_spaces_rows_and_a_click_still_finds_them() {
    let console = ConsoleConfig {
        layout: Presentation::Projector,
        ..ConsoleConfig::default()
    };
    let mut h = harness_with(view(), console, default_keys(), Theme::colored());
    assert!(h.app.projector(), "[console] layout = \"projector\" starts in it");
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    // Wide role glyphs, and incidents only in Events.
    assert!(text.contains("★ 0  ✗ 1  ● 2"), "{text}");
    assert!(text.contains("▸ broker 1 down"), "{text}");
    assert!(!text.contains("produce to clicks-1 rejected"), "{text}");
    let brokers = h
        .app
        .layout
        .panes
        .iter()
        .find(|p| p.pane == Pane::Brokers)
        .copied()
        .expect("brokers drawn");
    let rows = brokers.rows.expect("brokers are rows");
    assert_eq!(brokers.stride, 2);
    // The third broker is two rows down: four lines.
    h.mouse(
        MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: rows.x + 1,
            row: rows.y + 4,
            modifiers: KeyModifiers::NONE,
        },
        now(),
    );
    assert_eq!(h.app.selected_broker().map(|b| b.id), Some(2));
}

#[test]
fn the_projector_layout_is_high_contrast_unless_a_theme_is_named() {
    let themes = Themes::load("auto", false).expect("shipped themes");
    let mut h = harness();
    h.console.app = kdeck::tui::app::App::new(
        h.source.capabilities,
        Arc::new(view()),
        kdeck::tui::keymap::Keymap::from_config(&default_keys()).expect("keys"),
        Theme::colored(),
        ConsoleConfig::default(),
        tui_fixture::tz(),
        None,
    )
    .with_themes(themes.clone());
    assert_eq!(h.app.theme, themes.normal);
    h.press(KeyCode::Char('P'));
    assert_eq!(h.app.theme, Theme::load("high-contrast", false).expect("shipped"));
    h.press(KeyCode::Char('P'));
    assert_eq!(h.app.theme, Theme::colored());
}

#[test]
fn the_header_shows_the_clock_frozen_or_slowed_and_the_changed_settings() {
    let mut h = harness();
    show(
        &mut h,
        with_controls(|c| {
            c.frozen = true;
            c.slow_motion = 3;
            c.auto_rebalance = false;
            c.unclean_election = true;
            c.producer_acks = Some(-1);
        }),
    );
    let buffer = tui_fixture::draw(&mut h.console, 120, 40);
    let text = tui_fixture::text(&buffer);
    let header: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    insta::assert_snapshot!("header_frozen_slow", header);
    let frozen = text
        .lines()
        .next()
        .and_then(|l| l.find("FROZEN"))
        .expect("FROZEN shown");
    let x = u16::try_from(text.lines().next().map_or(0, |l| l[..frozen].chars().count())).expect("fits");
    assert!(
        buffer[(x, 0)].modifier.contains(Modifier::REVERSED),
        "FROZEN is reversed, unmissable"
    );

    show(&mut h, with_controls(|_| {}));
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    let header: String = text.lines().take(2).collect();
    for quiet in ["FROZEN", "SLOW", "auto-rebalance", "unclean", "acks="] {
        assert!(!header.contains(quiet), "{quiet} with default settings: {header}");
    }
}

#[test]
fn an_external_cluster_shows_no_trainer_state() {
    let mut h = external_harness(false);
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    let header: String = text.lines().take(2).collect();
    assert!(!header.contains("FROZEN") && !header.contains("acks="), "{header}");
}

#[test]
fn f_freezes_a_running_clock_and_thaws_a_frozen_one() {
    let mut h = harness();
    h.press(KeyCode::Char('F'));
    show(&mut h, with_controls(|c| c.frozen = true));
    h.press(KeyCode::Char('F'));
    assert_eq!(h.source.commands(), vec![Command::Freeze, Command::Thaw]);
}

#[test]
fn slow_motion_steps_through_its_factors_and_back() {
    let mut h = harness();
    h.press(KeyCode::Char('<'));
    assert!(note(&h).contains("real time already"), "{}", note(&h));
    assert!(h.source.commands().is_empty(), "nothing faster than real time");
    h.press(KeyCode::Char('>'));
    assert_eq!(h.source.commands(), vec![Command::SlowMotion { factor: 2 }]);
    show(&mut h, with_controls(|c| c.slow_motion = 3));
    h.press(KeyCode::Char('>'));
    show(&mut h, with_controls(|c| c.slow_motion = 5));
    h.press(KeyCode::Char('<'));
    show(&mut h, with_controls(|c| c.slow_motion = 10));
    h.press(KeyCode::Char('>'));
    assert!(note(&h).contains("slowest"), "{}", note(&h));
    h.press(KeyCode::Char('<'));
    assert_eq!(
        h.source.commands(),
        vec![
            Command::SlowMotion { factor: 2 },
            Command::SlowMotion { factor: 5 },
            Command::SlowMotion { factor: 3 },
            Command::SlowMotion { factor: 5 },
        ]
    );
}

/// Presses quicker than the cluster's snapshots each count: a press builds on what the
/// one before asked, not on a view that has not caught up yet.
#[test]
fn quick_presses_each_count_before_the_view_catches_up() {
    let mut h = harness();
    for _ in 0..3 {
        h.press(KeyCode::Char('>'));
    }
    h.press(KeyCode::Char('<'));
    h.press(KeyCode::Char('F'));
    h.press(KeyCode::Char('F'));
    assert_eq!(
        h.source.commands(),
        vec![
            Command::SlowMotion { factor: 2 },
            Command::SlowMotion { factor: 3 },
            Command::SlowMotion { factor: 5 },
            Command::SlowMotion { factor: 3 },
            Command::Freeze,
            Command::Thaw,
        ]
    );
    // A view half-way through what was asked changes nothing; one that shows something
    // nobody asked for here (a scenario's step) is what the next press builds on.
    show(&mut h, with_controls(|c| c.slow_motion = 3));
    h.press(KeyCode::Char('>'));
    show(&mut h, with_controls(|c| c.slow_motion = 10));
    h.press(KeyCode::Char('<'));
    assert_eq!(
        h.source.commands()[6..],
        [Command::SlowMotion { factor: 5 }, Command::SlowMotion { factor: 5 }]
    );
}

/// In the projector layout the toggles act at once (the operator's console asks first:
/// see tests/tui_keys.rs).
#[test]
fn r_and_u_toggle_auto_rebalance_and_unclean_election() {
    let mut h = harness();
    h.press(KeyCode::Char('P'));
    h.press(KeyCode::Char('R'));
    h.press(KeyCode::Char('U'));
    show(
        &mut h,
        with_controls(|c| {
            c.auto_rebalance = false;
            c.unclean_election = true;
        }),
    );
    h.press(KeyCode::Char('R'));
    h.press(KeyCode::Char('U'));
    assert_eq!(
        h.source.commands(),
        vec![
            Command::SetAutoRebalance(false),
            Command::SetUncleanElection {
                topic: None,
                enabled: true
            },
            Command::SetAutoRebalance(true),
            Command::SetUncleanElection {
                topic: None,
                enabled: false
            },
        ]
    );
}

#[test]
fn plus_and_minus_move_the_selected_topics_min_insync_within_one_and_its_rf() {
    let mut h = harness();
    h.press(KeyCode::Char('P'));
    h.press(KeyCode::Char('+'));
    assert!(note(&h).contains("focus Topics"), "{}", note(&h));
    h.press(KeyCode::Char('2'));
    // page-views: RF 3, min.insync.replicas 2.
    h.press(KeyCode::Char('+'));
    assert_eq!(
        h.source.commands(),
        vec![Command::SetMinInsync {
            topic: "page-views".into(),
            value: 3
        }]
    );
    let mut at_rf = view();
    for p in at_rf.partitions.iter_mut().filter(|p| p.topic == "page-views") {
        p.min_insync_replicas = Some(3);
    }
    show(&mut h, at_rf);
    h.press(KeyCode::Char('+'));
    assert_eq!(h.source.commands().len(), 1, "more than RF refused");
    assert!(note(&h).contains("could never be met"), "{}", note(&h));
    h.press(KeyCode::Char('3'));
    h.press(KeyCode::Char('-'));
    // clicks: min.insync.replicas 1.
    h.press(KeyCode::Char('2'));
    h.press(KeyCode::Down);
    h.press(KeyCode::Char('-'));
    assert!(note(&h).contains("1 already"), "{}", note(&h));
    assert_eq!(
        h.source.commands().last(),
        Some(&Command::SetMinInsync {
            topic: "page-views".into(),
            value: 2
        })
    );
    assert_eq!(h.source.commands().len(), 2);
}

#[test]
fn a_cycles_the_producers_acks_all_one_zero() {
    let mut h = harness();
    h.press(KeyCode::Char('P'));
    h.press(KeyCode::Char('a'));
    assert!(note(&h).contains("no workload producer"), "{}", note(&h));
    for acks in [-1, 1, 0] {
        show(&mut h, with_controls(|c| c.producer_acks = Some(acks)));
        h.press(KeyCode::Char('a'));
    }
    assert_eq!(
        h.source.commands(),
        vec![
            Command::SetProducerAcks(1),
            Command::SetProducerAcks(0),
            Command::SetProducerAcks(-1)
        ]
    );
}

#[test]
fn an_external_cluster_refuses_every_toggle_with_a_note() {
    let mut h = external_harness(false);
    h.press(KeyCode::Char('2'));
    for key in ['F', '>', '<', 'R', 'U', '+', '-', 'a'] {
        h.app.status = None;
        h.press(KeyCode::Char(key));
        assert!(note(&h).contains("only the embedded cluster"), "{key}: {}", note(&h));
    }
    assert!(h.source.commands().is_empty(), "{:?}", h.source.commands());
    // Presentation is the console's own: it works on any cluster.
    h.press(KeyCode::Char('P'));
    h.press(KeyCode::Char('Z'));
    assert!(h.app.projector() && h.app.maximized);
}

/// An event `wall` seconds before the fixture's now on the wall clock, and `cluster` seconds
/// before it on the cluster's clock (slow motion puts them apart).
fn happened(wall: i64, cluster: i64, class: EventClass, text: &str) -> ViewEvent {
    ViewEvent {
        at: now() - chrono::Duration::seconds(wall),
        cluster_at: now() - chrono::Duration::seconds(cluster),
        severity: Severity::Warn,
        text: text.into(),
        msg: None,
        class,
    }
}

/// Under SLOW x10 the fence comes 40 s of the room's time after the kill (4 s of the
/// cluster's): the projector shows the crash as one incident with its fence and election,
/// and shows an election of no incident too (a room follows who leads).
#[test]
fn the_projector_shows_a_slowed_crash_with_its_fence_and_every_election() {
    let mut v = with_controls(|c| c.slow_motion = 10);
    v.events = vec![
        happened(100, 10, EventClass::Fault(1), "broker 1 down: killed"),
        happened(60, 6, EventClass::Fenced(1), "broker 1 fenced: missed heartbeats"),
        happened(
            60,
            6,
            EventClass::LeaderMoved {
                partition: "page-views-1".into(),
                from: Some(1),
                to: 2,
            },
            "leader page-views-1: 1 -> 2, epoch 5 (leader unavailable)",
        ),
        happened(
            5,
            1,
            EventClass::LeaderMoved {
                partition: "clicks-0".into(),
                from: Some(2),
                to: 0,
            },
            "leader clicks-0: 2 -> 0, epoch 3 (preferred leader)",
        ),
    ];
    let mut h = harness_with(
        v,
        ConsoleConfig {
            layout: Presentation::Projector,
            ..ConsoleConfig::default()
        },
        default_keys(),
        Theme::colored(),
    );
    let rows = h.app.event_rows();
    assert_eq!(rows.len(), 2, "{rows:?}");
    match &rows[0] {
        EventRow::Incident { summary, events, .. } => {
            assert_eq!(summary, "broker 1 down: killed -> fenced after 4.0 s -> 1 leader moved");
            assert_eq!(*events, 3);
        }
        other => panic!("the crash is not one incident: {other:?}"),
    }
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    assert!(text.contains("▸ broker 1 down: killed -> fenced after"), "{text}");
    assert!(
        text.contains("leader clicks-0: 2 -> 0"),
        "the election of no incident:\n{text}"
    );
}

fn refused(secs_ago_ms: i64) -> ViewEvent {
    let at = now() - chrono::Duration::milliseconds(secs_ago_ms);
    ViewEvent {
        at,
        cluster_at: at,
        severity: Severity::Error,
        text: "produce to clicks-1 rejected: NotEnoughReplicas: the ISR is smaller than min.insync.replicas; nothing was written".into(),
        msg: None,
        class: EventClass::ProduceRejected(Refusals {
            partition: "clicks-1".into(),
            error: "NOT_ENOUGH_REPLICAS".into(),
            count: 1,
            since: at,
        }),
    }
}

/// 88 refused produces read as one line in the Events pane, with their count and span; the
/// line grows as more come, and something else in between starts a new one.
#[test]
fn refused_produces_in_a_row_are_one_events_line() {
    let mut v = view();
    v.events = (0..88).map(|n| refused(9_000 - n * 40)).collect();
    let mut h = harness_with(v.clone(), ConsoleConfig::default(), default_keys(), Theme::colored());
    let texts = |h: &Harness| -> Vec<String> {
        h.app
            .event_rows()
            .into_iter()
            .map(|r| match r {
                EventRow::Event(e) | EventRow::Member(e, _) => e.text,
                EventRow::Incident { summary, .. } => summary,
            })
            .collect()
    };
    assert_eq!(
        texts(&h),
        vec!["produce to clicks-1 refused x88 over 3.5 s: NOT_ENOUGH_REPLICAS"]
    );
    v.events.push(refused(4_000));
    show(&mut h, v.clone());
    assert_eq!(
        texts(&h),
        vec!["produce to clicks-1 refused x89 over 5.0 s: NOT_ENOUGH_REPLICAS"]
    );
    v.events.push(ViewEvent {
        text: "group billing rebalanced: generation 8, 1 members (range)".into(),
        class: EventClass::Other,
        ..refused(3_000)
    });
    v.events.push(refused(2_000));
    v.events.push(refused(1_000));
    show(&mut h, v);
    assert_eq!(
        texts(&h),
        vec![
            "produce to clicks-1 refused x89 over 5.0 s: NOT_ENOUGH_REPLICAS",
            "group billing rebalanced: generation 8, 1 members (range)",
            "produce to clicks-1 refused x2 over 1.0 s: NOT_ENOUGH_REPLICAS",
        ]
    );
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    assert_eq!(text.matches("refused x").count(), 2, "{text}");
}

/// `line` made only of `items` (longest first) and spaces: no item cut.
fn whole_items(line: &str, items: &[&str]) -> Result<(), String> {
    let mut rest = line.replace('|', " ");
    for item in items {
        rest = rest.replace(item, " ");
    }
    if rest.trim().is_empty() {
        Ok(())
    } else {
        Err(format!("cut: {rest:?} in {line:?}"))
    }
}

/// The footer and the header's counters and settings at 100x30 and 80x24: the least
/// important items go whole; in a scenario its keys stay, and help and quit always.
#[test]
fn footer_and_header_shorten_by_dropping_items_whole() {
    const HINTS: &[&str] = &[
        "n next",
        "N back",
        ". play",
        "x kill",
        "s stop",
        "r restart",
        "z pause",
        "b rebalance",
        "Tab pane",
        "? help",
        "q quit",
    ];
    const COUNTERS: &[&str] = &[
        "brokers up 2/3",
        "brokers 2/3",
        "controller 0",
        "ctrl 0",
        "partitions online 4/5",
        "online 4/5",
        "under-replicated 3",
        "URP 3",
        "offline 1",
        "demo running",
        "auto-rebalance off",
        "rebalance off",
        "unclean on",
        "acks=all",
    ];
    for scenario in [false, true] {
        for (width, height) in [(100u16, 30u16), (80, 24)] {
            let v = with_controls(|c| {
                c.auto_rebalance = false;
                c.unclean_election = true;
                c.frozen = true;
                c.slow_motion = 10;
            });
            let mut h = harness_with(v, ConsoleConfig::default(), default_keys(), Theme::colored());
            if scenario {
                h.console.trainer(
                    kdeck::tui::TrainerUpdate::Loaded {
                        title: "A leader crashes".into(),
                        steps: 4,
                        lang: None,
                    },
                    now(),
                );
            }
            let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, width, height));
            let lines: Vec<&str> = text.lines().collect();
            let footer = lines[usize::from(height) - 1];
            let at = format!("{width}x{height}, scenario {scenario}");
            whole_items(footer, HINTS).unwrap_or_else(|e| panic!("{at}: footer {e}"));
            for key in ["? help", "q quit"] {
                assert!(footer.contains(key), "{at}: {key} missing from {footer:?}");
            }
            if scenario {
                for key in ["n next", "N back", ". play"] {
                    assert!(footer.contains(key), "{at}: {key} missing from {footer:?}");
                }
            }
            whole_items(lines[1], COUNTERS).unwrap_or_else(|e| panic!("{at}: header {e}"));
            for counter in ["2/3", "4/5", "unclean on"] {
                assert!(
                    lines[1].contains(counter),
                    "{at}: {counter} missing from {:?}",
                    lines[1]
                );
            }
            assert!(
                lines[0].contains("FROZEN") && lines[0].contains("SLOW x10"),
                "{at}: {}",
                lines[0]
            );
        }
    }
}
