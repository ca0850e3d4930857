//! Every console view rendered from a fixed cluster view at a fixed clock and time zone, and
//! the styles text snapshots cannot show: replica roles by colour (and by modifier without
//! colour).

mod tui_fixture;

use crossterm::event::KeyCode;
use kdeck::config::ConsoleConfig;
use kdeck::tui::Pane;
use kdeck::tui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use tui_fixture::{external_harness, harness, harness_with, view};

#[test]
fn dashboard_at_120x40() {
    let mut h = harness();
    assert_draw!("dashboard_120x40", h, 120, 40);
}

#[test]
fn dashboard_at_200x60() {
    let mut h = harness();
    assert_draw!("dashboard_200x60", h, 200, 60);
}

#[test]
fn compact_layout_at_80x24_shows_brokers_partitions_and_events() {
    let mut h = harness();
    assert_draw!("compact_80x24", h, 80, 24);
}

#[test]
fn compact_layout_shows_the_focused_pane() {
    let mut h = harness();
    h.press(KeyCode::Char('2'));
    assert_draw!("compact_topics", h, 80, 24);
    h.press(KeyCode::Char('4'));
    assert_draw!("compact_groups", h, 80, 24);
    h.press(KeyCode::Char('5'));
    assert_draw!("compact_messages", h, 80, 24);
}

#[test]
fn below_80x24_one_line_says_the_terminal_is_too_small() {
    let mut h = harness();
    assert_draw!("too_small", h, 79, 24);
    let buffer = tui_fixture::draw(&mut h.console, 60, 10);
    let text = tui_fixture::text(&buffer);
    assert!(
        text.starts_with("terminal too small: 60x10, kdeck needs at least 80x24"),
        "{text}"
    );
    assert_eq!(text.lines().filter(|l| l.trim_end_matches('|').trim() != "").count(), 1);
}

#[test]
fn help_overlay_lists_every_key() {
    let mut h = harness();
    h.press(KeyCode::Char('?'));
    assert_draw!("help", h, 120, 40);
}

#[test]
fn produce_dialog() {
    let mut h = harness();
    h.press(KeyCode::Char('p'));
    h.chars("{\"hello\":\"世界\"}");
    assert_draw!("produce_dialog", h, 120, 40);
}

#[test]
fn create_topic_dialog_with_an_error() {
    let mut h = harness();
    h.press(KeyCode::Char('c'));
    h.chars("bad name!");
    h.press(KeyCode::Enter);
    assert_draw!("create_topic_dialog", h, 120, 40);
}

#[test]
fn kill_confirmation() {
    let mut h = harness();
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('x'));
    assert_draw!("confirm_kill", h, 120, 40);
}

#[test]
fn message_detail_pretty_prints_json() {
    let mut h = harness();
    h.press(KeyCode::Char('5'));
    h.press(KeyCode::Home);
    assert_draw!("messages_from_beginning", h, 120, 40);
    h.press(KeyCode::Enter);
    assert_draw!("message_detail_json", h, 120, 40);
}

#[test]
fn message_detail_shows_binary_as_hex() {
    let mut h = harness();
    h.press(KeyCode::Char('5'));
    h.press(KeyCode::Enter);
    assert_draw!("message_detail_binary", h, 120, 40);
}

#[test]
fn filtering_topics() {
    let mut h = harness();
    h.press(KeyCode::Char('2'));
    h.press(KeyCode::Char('/'));
    h.chars("cli");
    assert_draw!("topics_filtered", h, 120, 40);
}

#[test]
fn events_focused() {
    let mut h = harness();
    h.press(KeyCode::Char('6'));
    assert_draw!("events_focused", h, 120, 40);
}

/// The style of the first replica glyph `glyph` followed by a broker id in the Partitions
/// pane.
fn glyph_style(app: &kdeck::tui::app::App, buffer: &Buffer, glyph: &str) -> ratatui::style::Style {
    let area = app
        .layout
        .panes
        .iter()
        .find(|p| p.pane == Pane::Partitions)
        .map(|p| p.area)
        .expect("the partitions pane is shown");
    for y in area.y..area.y + area.height {
        for x in area.x..(area.x + area.width).saturating_sub(1) {
            let next = buffer[(x + 1, y)].symbol();
            if buffer[(x, y)].symbol() == glyph && next.chars().all(|c| c.is_ascii_digit()) {
                return buffer[(x, y)].style();
            }
        }
    }
    panic!("no replica shown as {glyph}");
}

#[test]
fn replica_roles_have_their_own_colours() {
    let mut h = harness();
    let buffer = tui_fixture::draw(&mut h.console, 120, 40);
    let leader = glyph_style(&h.app, &buffer, "★");
    assert_eq!(leader.fg, Some(Color::Green));
    assert!(leader.add_modifier.contains(Modifier::BOLD));
    assert_eq!(glyph_style(&h.app, &buffer, "●").fg, Some(Color::Cyan));
    assert_eq!(glyph_style(&h.app, &buffer, "○").fg, Some(Color::Yellow));
    let offline = glyph_style(&h.app, &buffer, "✗");
    assert_eq!(offline.fg, Some(Color::Red));
    assert!(offline.add_modifier.contains(Modifier::CROSSED_OUT));
}

#[test]
fn without_colour_roles_read_by_glyph_and_modifier() {
    let mut h = harness_with(
        view(),
        ConsoleConfig::default(),
        tui_fixture::default_keys(),
        Theme::monochrome(),
    );
    let buffer = tui_fixture::draw(&mut h.console, 120, 40);
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            let style = buffer[(x, y)].style();
            assert!(
                matches!(style.fg, None | Some(Color::Reset)) && matches!(style.bg, None | Some(Color::Reset)),
                "a colour at {x},{y} with NO_COLOR: {style:?}"
            );
        }
    }
    assert!(glyph_style(&h.app, &buffer, "★").add_modifier.contains(Modifier::BOLD));
    assert!(glyph_style(&h.app, &buffer, "○").add_modifier.contains(Modifier::DIM));
    assert!(
        glyph_style(&h.app, &buffer, "✗")
            .add_modifier
            .contains(Modifier::CROSSED_OUT)
    );
    assert!(
        !glyph_style(&h.app, &buffer, "●")
            .add_modifier
            .intersects(Modifier::BOLD | Modifier::DIM)
    );
}

#[test]
fn a_changed_partition_flashes_then_settles() {
    let mut h = harness();
    let theme = Theme::colored();
    let buffer = tui_fixture::draw(&mut h.console, 120, 40);
    let flashed = (0..buffer.area.height).any(|y| {
        (0..buffer.area.width).any(|x| buffer[(x, y)].style().bg == theme.flash.bg && buffer[(x, y)].symbol() == "2")
    });
    assert!(flashed, "page-views-1's new leader 2 flashes");
    let mut later = view();
    later.taken_at += chrono::Duration::seconds(10);
    let h2 = &mut harness_with(
        later,
        ConsoleConfig::default(),
        tui_fixture::default_keys(),
        Theme::colored(),
    );
    let buffer = &tui_fixture::draw_at(
        &mut h2.console,
        120,
        40,
        tui_fixture::now() + chrono::Duration::seconds(10),
    );
    let still =
        (0..buffer.area.height).any(|y| (0..buffer.area.width).any(|x| buffer[(x, y)].style().bg == theme.flash.bg));
    assert!(!still, "nothing flashes 10 s later");
}

#[test]
fn external_cluster_shows_its_first_connection_problem_in_the_header() {
    let mut h = external_harness(false);
    assert_draw!("external_problem", h, 120, 40);
    let buffer = tui_fixture::draw(&mut h.console, 120, 40);
    let first_row: String = (0..120).map(|x| buffer[(x, 0)].symbol()).collect();
    let at = first_row
        .find("⚠ 2 problems · broker 1 127.0.0.1:9093: connection refused")
        .expect("the first problem and the count are in the header");
    let x = first_row[..at].chars().count() as u16;
    assert_eq!(
        buffer[(x, 0)].style().fg,
        Theme::colored().error.fg,
        "in the error colour"
    );
}

#[test]
fn external_help_greys_out_broker_control_with_the_reason() {
    let mut h = external_harness(false);
    h.press(KeyCode::Char('?'));
    assert_draw!("help_external", h, 120, 40);
    let buffer = tui_fixture::draw(&mut h.console, 120, 40);
    let dim = Theme::colored().dim.fg;
    let kill_row = (0..40)
        .find(|&y| {
            let row: String = (0..120).map(|x| buffer[(x, y)].symbol()).collect();
            row.contains("kill the selected broker")
        })
        .expect("kill is listed");
    let row: String = (0..120).map(|x| buffer[(x, kill_row)].symbol()).collect();
    let x = row[..row.find("kill the").expect("kill")].chars().count() as u16;
    assert_eq!(buffer[(x, kill_row)].style().fg, dim, "greyed out");
}

#[test]
fn read_only_help_hides_every_mutating_action() {
    let mut h = external_harness(true);
    h.press(KeyCode::Char('?'));
    assert_draw!("help_read_only", h, 120, 40);
}

#[test]
fn a_footer_note_goes_after_a_few_seconds() {
    let mut h = harness();
    h.press(KeyCode::Char('1'));
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::Char('x'));
    let mut footer = |at| {
        let text = tui_fixture::text(&tui_fixture::draw_at(&mut h.console, 120, 40, at));
        text.lines().nth(39).unwrap_or_default().to_string()
    };
    let now = tui_fixture::now();
    assert!(footer(now).contains("broker 1 is already down"), "{}", footer(now));
    let later = footer(now + chrono::Duration::seconds(7));
    assert!(!later.contains("already down"), "{later}");
    assert!(later.contains("kill"), "the key hints are back: {later}");
}

/// A count meets its noun in the right number: one topic, one group.
#[test]
fn one_topic_and_one_group_are_counted_in_the_singular() {
    let mut one = view();
    one.topics.truncate(1);
    one.groups.truncate(1);
    let mut h = harness_with(
        one,
        ConsoleConfig::default(),
        tui_fixture::default_keys(),
        Theme::colored(),
    );
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    assert!(text.contains("1 topic ") || text.contains("1 topic─"), "{text}");
    assert!(text.contains("1 group ") || text.contains("1 group─"), "{text}");
    assert!(!text.contains("1 topics") && !text.contains("1 groups"), "{text}");
}
