//! The reassignments screen through the console's keys: `V` (or `:reassign` alone) lists each
//! moving partition with its joining replicas' lag, progress, rate and ETA from successive
//! views, keeps the moves that finished or were cancelled, plans a move through the
//! `:reassign` command line and its diff, cancels the selected move after asking, and in a
//! read-only console only shows.

mod tui_fixture;

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use crossterm::event::KeyCode;
use kdeck::config::ConsoleConfig;
use kdeck::tui::app::Screen;
use kdeck::tui::overlay::Overlay;
use kdeck::tui::theme::Theme;
use kdeck::view::{BrokerStatus, ClusterView, Command, PartitionRow, ReplicaMove, ReplicaRole};
use tui_fixture::{default_keys, harness_with, now, replica};

/// The fixture with a fourth broker, online, that holds nothing yet: taken `secs` after the
/// fixture's clock.
fn four_brokers(secs: i64) -> ClusterView {
    let mut v = tui_fixture::view();
    let mut b3 = v.brokers[0].clone();
    b3.id = 3;
    b3.is_controller = false;
    b3.leaders = 0;
    b3.replicas = 0;
    b3.address = Some("127.0.0.1:9095".into());
    v.brokers.push(b3);
    v.taken_at = at(secs);
    v
}

fn at(secs: i64) -> DateTime<Utc> {
    now() + Duration::seconds(secs)
}

fn row<'a>(v: &'a mut ClusterView, topic: &str, partition: i32) -> &'a mut PartitionRow {
    v.partitions
        .iter_mut()
        .find(|p| p.topic == topic && p.partition == partition)
        .unwrap_or_else(|| panic!("{topic}-{partition}"))
}

/// Three moves under way, `secs` after the fixture's clock, broker 3's copy of page-views-0
/// holding `copied` of its leader's 1200 records (and as many bytes of its 329218, pro rata):
/// - page-views-0 drains broker 1 onto 3: 3 copies, not in the ISR yet;
/// - clicks-0 leaves broker 0, its leader, for 3: 3 is in the ISR, the leader must move;
/// - page-views-2 leaves broker 1 (down) for 0: 0 is in the ISR, 1 is being removed.
fn moving(secs: i64, copied: i64) -> ClusterView {
    use ReplicaRole::*;
    let mut v = four_brokers(secs);
    let p = row(&mut v, "page-views", 0);
    let mut joining = replica(3, OutOfSync, Some(copied));
    joining.size_bytes = Some((329_218 * copied / 1200) as u64);
    p.replicas = vec![
        replica(0, Leader, Some(1200)),
        replica(2, InSync, Some(1200)),
        joining,
        replica(1, Offline, None),
    ];
    p.adding = vec![3];
    p.removing = vec![1];
    let p = row(&mut v, "clicks", 0);
    p.replicas = vec![
        replica(2, InSync, Some(77)),
        replica(3, InSync, Some(77)),
        replica(0, Leader, Some(77)),
    ];
    p.isr = vec![0, 2, 3];
    p.adding = vec![3];
    p.removing = vec![0];
    let p = row(&mut v, "page-views", 2);
    p.adding = vec![0];
    p.removing = vec![1];
    v
}

/// The moves over: page-views-0 and page-views-2 on their targets, clicks-0 back where it was
/// (cancelled).
fn finished(secs: i64) -> ClusterView {
    use ReplicaRole::*;
    let mut v = four_brokers(secs);
    let p = row(&mut v, "page-views", 0);
    p.replicas = vec![
        replica(0, Leader, Some(1200)),
        replica(2, InSync, Some(1200)),
        replica(3, InSync, Some(1200)),
    ];
    p.isr = vec![0, 2, 3];
    let p = row(&mut v, "page-views", 2);
    p.replicas = vec![replica(2, Leader, Some(1202)), replica(0, InSync, Some(1202))];
    v
}

/// The console on the fixture with broker 3 from 15 s before the fixture's clock, then the
/// moves 10 s before it and at it: the console saw them start, and has two samples of each.
fn watching() -> tui_fixture::Harness {
    let mut h = harness_with(
        four_brokers(-15),
        ConsoleConfig::default(),
        default_keys(),
        Theme::colored(),
    );
    h.console.set_view(Arc::new(moving(-10, 400)));
    h.console.set_view(Arc::new(moving(0, 800)));
    h
}

fn screen(h: &mut tui_fixture::Harness) -> String {
    tui_fixture::text(&tui_fixture::draw(&mut h.console, 140, 30))
}

fn command_line(h: &tui_fixture::Harness) -> Option<String> {
    match h.app.overlay() {
        Some(Overlay::Command(line)) => Some(line.text.clone()),
        _ => None,
    }
}

#[test]
fn v_opens_the_screen_and_esc_goes_back() {
    let mut h = watching();
    h.press(KeyCode::Char('V'));
    assert_eq!(h.app.screen(), &Screen::Reassignments);
    tui_fixture::assert_shows(&screen(&mut h), &["Partition reassignments", "3 moving"]);
    h.press(KeyCode::Esc);
    assert_eq!(h.app.screen(), &Screen::Dashboard);
}

#[test]
fn reassign_alone_on_the_command_line_opens_the_screen() {
    for line in ["reassign", "reassignments"] {
        let mut h = watching();
        h.press(KeyCode::Char(':'));
        h.chars(line);
        h.press(KeyCode::Enter);
        assert_eq!(h.app.screen(), &Screen::Reassignments, ":{line}");
        assert!(h.source.commands().is_empty());
    }
}

#[test]
fn the_screen_shows_each_moves_lag_progress_rate_and_eta() {
    let mut h = watching();
    h.press(KeyCode::Char('V'));
    assert_draw!("reassign_in_progress", h, 140, 30);
    let shown = screen(&mut h);
    tui_fixture::assert_shows(
        &shown,
        &[
            // 1200 - 800 records, 329218 - 219478 bytes behind; 109739 bytes more in 10 s.
            "page-views-0",
            "0,2,-1 -> 0,2,+3",
            "+3 400 / 107 KiB",
            "10.7 KiB/s",
            "copying: +3 not in the ISR yet",
            "in ISR, waiting for the leader to move",
            "in ISR, removing the old replicas",
            "3 moving · 107 KiB left · copying 10.7 KiB/s · ETA 10s",
        ],
    );
}

#[test]
fn finished_moves_stay_marked_done_or_cancelled_with_how_long_they_took() {
    let mut h = watching();
    h.console.set_view(Arc::new(finished(20)));
    h.press(KeyCode::Char('V'));
    let buffer = tui_fixture::draw_at(&mut h.console, 140, 30, at(25));
    insta::assert_snapshot!("reassign_done", tui_fixture::text(&buffer));
    let shown = tui_fixture::text(&buffer);
    tui_fixture::assert_shows(
        &shown,
        &[
            "no partition is moving · 2 done · 1 cancelled",
            "done in 30s",
            "cancelled after 30s",
        ],
    );
    assert!(!shown.contains("copying:"), "{shown}");
}

#[test]
fn a_move_stalls_when_its_joining_replicas_broker_is_down() {
    let mut h = watching();
    let mut v = moving(5, 800);
    if let Some(b) = v.brokers.iter_mut().find(|b| b.id == 3) {
        b.status = BrokerStatus::Killed;
    }
    h.console.set_view(Arc::new(v));
    h.press(KeyCode::Char('V'));
    tui_fixture::assert_shows(&screen(&mut h), &["stalled: broker 3 is down"]);
}

#[test]
fn the_plan_of_a_drain_is_confirmed_over_the_screen() {
    let mut h = harness_with(
        four_brokers(0),
        ConsoleConfig::default(),
        default_keys(),
        Theme::colored(),
    );
    h.press(KeyCode::Char('V'));
    tui_fixture::assert_shows(&screen(&mut h), &["no partition is moving"]);
    h.press(KeyCode::Char('d'));
    assert_eq!(command_line(&h).as_deref(), Some("reassign drain "));
    h.chars("2");
    h.press(KeyCode::Enter);
    assert!(
        matches!(h.app.overlay(), Some(Overlay::Confirm { .. })),
        "{:?}",
        h.app.overlay()
    );
    assert_eq!(
        h.app.screen(),
        &Screen::Reassignments,
        "the confirmation is over the screen"
    );
    assert_draw!("reassign_plan", h, 120, 30);
    assert!(h.source.commands().is_empty(), "nothing moves before the answer");
    h.press(KeyCode::Char('y'));
    match h.source.commands().as_slice() {
        [Command::Reassign(moves)] => {
            assert!(!moves.is_empty());
            assert!(
                moves
                    .iter()
                    .all(|m| m.replicas.as_ref().is_some_and(|r| !r.contains(&2))),
                "{moves:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_screens_keys_open_the_command_line_with_the_plan_to_complete() {
    let mut h = watching();
    h.press(KeyCode::Char('V'));
    for (key, text) in [
        ('b', "reassign balance"),
        ('m', "reassign move "),
        ('c', "reassign cancel all"),
        // The selected move's topic (the first row: clicks-0).
        ('r', "reassign rf clicks "),
    ] {
        h.press(KeyCode::Char(key));
        assert_eq!(command_line(&h).as_deref(), Some(text), "{key}");
        h.press(KeyCode::Esc);
        assert_eq!(
            h.app.screen(),
            &Screen::Reassignments,
            "Esc closes the line, not the screen"
        );
    }
    assert!(h.source.commands().is_empty());
}

#[test]
fn x_cancels_the_selected_move_after_saying_where_it_goes_back() {
    let mut h = watching();
    h.press(KeyCode::Char('V'));
    h.press(KeyCode::Down);
    assert_eq!(h.app.selected_move().map(|m| m.name()).as_deref(), Some("page-views-0"));
    h.press(KeyCode::Char('x'));
    tui_fixture::assert_shows(
        &screen(&mut h),
        &[
            "Cancel 1 move? The partition goes back to its replicas from before:",
            "page-views-0  0,2,3,1 -> 0,2,1",
        ],
    );
    assert!(h.source.commands().is_empty(), "asked first");
    h.press(KeyCode::Char('n'));
    assert!(h.source.commands().is_empty(), "no is no");
    h.press(KeyCode::Delete);
    h.press(KeyCode::Char('y'));
    assert_eq!(
        h.source.commands(),
        vec![Command::Reassign(vec![ReplicaMove {
            topic: "page-views".into(),
            partition: 0,
            replicas: None,
        }])]
    );
}

#[test]
fn a_finished_move_has_nothing_to_cancel() {
    let mut h = watching();
    h.console.set_view(Arc::new(finished(20)));
    h.press(KeyCode::Char('V'));
    h.press(KeyCode::Char('x'));
    assert!(h.app.overlay().is_none());
    tui_fixture::assert_shows(&screen(&mut h), &["is not moving: nothing to cancel"]);
    assert!(h.source.commands().is_empty());
}

/// An external cluster's moves, read-only: the screen shows them (sizes unknown said, not
/// zeros) and offers no plan and no cancel.
#[test]
fn a_read_only_console_shows_the_moves_and_offers_no_plan_or_cancel() {
    let mut h = tui_fixture::external_harness(true);
    let external = |secs: i64, copied: i64| {
        let mut v = moving(secs, copied);
        v.source = kdeck::view::SourceKind::External;
        v.controls = None;
        for p in &mut v.partitions {
            for r in &mut p.replicas {
                r.size_bytes = None;
                if r.role != ReplicaRole::Leader {
                    r.log_end_offset = None;
                }
            }
        }
        v
    };
    h.console.set_view(Arc::new(external(-10, 400)));
    h.console.set_view(Arc::new(external(0, 800)));
    h.press(KeyCode::Char('V'));
    assert_eq!(h.app.screen(), &Screen::Reassignments);
    let shown = screen(&mut h);
    tui_fixture::assert_shows(
        &shown,
        &[
            "replica sizes or log ends unknown",
            "+3 - / -",
            "read-only: moves are shown, not planned or cancelled",
        ],
    );
    assert!(!shown.contains("0 B"), "unknown sizes are not zeros\n{shown}");
    for key in ['x', 'd', 'b', 'c'] {
        h.press(KeyCode::Char(key));
        assert!(h.app.overlay().is_none(), "{key}: {:?}", h.app.overlay());
    }
    tui_fixture::assert_shows(&screen(&mut h), &["read-only"]);
    h.press(KeyCode::Char(':'));
    h.chars("reassign cancel all");
    h.press(KeyCode::Enter);
    assert!(h.source.commands().is_empty());
}

#[test]
fn the_screen_speaks_chinese() {
    let mut h = watching();
    h.app.lang = kdeck::view::lang::Lang::get(Some("zh"));
    h.press(KeyCode::Char('V'));
    tui_fixture::assert_shows(&screen(&mut h), &["分区重分配", "复制中：+3 尚未进入 ISR"]);
    h.console.set_view(Arc::new(finished(20)));
    tui_fixture::assert_shows(&screen(&mut h), &["已完成，用时 30s"]);
    h.press(KeyCode::Char('?'));
    screen(&mut h);
    assert_eq!(kdeck::view::lang::Lang::get(Some("zh")).missing(), Vec::<String>::new());
}
