//! The Messages pane as a message browser: a seek puts its record on the first row and the
//! window moves only as the user scrolls; older records load above; a search scans to the
//! end in the background and shows its progress; the cursor stays on its record.

mod tui_fixture;

use crossterm::event::KeyCode;
use kdeck::view::{SeekPosition, TailMode};
use tui_fixture::{Harness, harness};

/// The console on `page-views` partition 0 holding offsets `start..start + n`, focused on
/// Messages.
fn browsing(start: i64, n: i64, needles: &[i64]) -> Harness {
    let mut h = harness();
    h.source.browse(start, n, needles);
    h.press(KeyCode::Char('5'));
    h.press(KeyCode::Char(']'));
    h
}

fn offsets(h: &Harness) -> (i64, i64, usize) {
    let m = h.app.visible_messages();
    (
        m.first().map_or(-1, |r| r.offset),
        m.last().map_or(-1, |r| r.offset),
        m.len(),
    )
}

fn selected_offset(h: &Harness) -> i64 {
    let m = h.app.visible_messages();
    m.get(h.app.cursor(kdeck::tui::Pane::Messages)).map_or(-1, |r| r.offset)
}

#[test]
fn seeking_to_an_offset_puts_it_on_the_first_row_of_a_window() {
    let mut h = browsing(0, 6000, &[]);
    h.press(KeyCode::Char('o'));
    h.chars("100");
    h.press(KeyCode::Enter);
    let spec = h.source.tails().last().cloned().expect("a tail");
    assert_eq!((spec.start, spec.mode), (SeekPosition::Offset(100), TailMode::Window));
    assert_eq!(offsets(&h), (100, 1099, 1000), "today's ring showed 5000-5999");
    assert_eq!(selected_offset(&h), 100);
    // g: the log start.
    h.press(KeyCode::Char('g'));
    assert_eq!(offsets(&h).0, 0);
}

#[test]
fn the_window_moves_on_at_its_bottom_and_the_cursor_stays_on_its_record() {
    let mut h = browsing(0, 6000, &[]);
    h.press(KeyCode::Char('o'));
    h.chars("100");
    h.press(KeyCode::Enter);
    for _ in 0..100 {
        h.press(KeyCode::PageDown);
    }
    assert_eq!(selected_offset(&h), 1099, "at the window's last record");
    h.press(KeyCode::Down);
    h.source.refill();
    assert_eq!(offsets(&h), (600, 1599, 1000), "half a window on");
    assert_eq!(selected_offset(&h), 1099, "the cursor kept its record");
    h.press(KeyCode::Down);
    assert_eq!(selected_offset(&h), 1100);
}

#[test]
fn scrolling_above_the_window_loads_older_records() {
    let mut h = browsing(0, 6000, &[]);
    h.press(KeyCode::Char('o'));
    h.chars("3000");
    h.press(KeyCode::Enter);
    h.press(KeyCode::Up);
    let spec = h.source.tails().last().cloned().expect("a tail");
    assert_eq!(spec.start, SeekPosition::Offset(2500));
    assert_eq!(offsets(&h).0, 2500);
    assert_eq!(selected_offset(&h), 3000, "the cursor stays on the record it was on");
    h.press(KeyCode::Up);
    assert_eq!(selected_offset(&h), 2999);
    // At the log start there is nothing older.
    h.press(KeyCode::Char('g'));
    let tails = h.source.tails().len();
    h.press(KeyCode::Up);
    assert_eq!(h.source.tails().len(), tails, "no reload before the log start");
}

#[test]
fn a_search_scans_the_partition_from_the_cursor_and_shows_its_progress() {
    let mut h = browsing(0, 6000, &[40, 2500, 5999]);
    h.press(KeyCode::Char('o'));
    h.chars("1000");
    h.press(KeyCode::Enter);
    h.press(KeyCode::Char('/'));
    h.chars("needle");
    h.press(KeyCode::Enter);
    let spec = h.source.tails().last().cloned().expect("a tail");
    assert_eq!(spec.start, SeekPosition::Offset(1000), "from the cursor on");
    assert_eq!(spec.filter.as_deref(), Some("needle"));
    assert!(spec.until_end && spec.mode == TailMode::Window);
    let found: Vec<i64> = h.app.visible_messages().iter().map(|r| r.offset).collect();
    assert_eq!(found, vec![2500, 5999]);
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    assert!(text.contains("search: scanned 5000, matched 2, done"), "{text}");
    assert!(
        text.contains("search \"needle\" (Esc clears)"),
        "the footer shows it in full: {text}"
    );
    // Esc goes back to the window the search started from.
    h.press(KeyCode::Esc);
    let back = h.source.tails().last().cloned().expect("a tail");
    assert_eq!((back.start, back.filter), (SeekPosition::Offset(1000), None));
    assert_eq!(offsets(&h).0, 1000);
}

#[test]
fn top_and_bottom_move_within_the_window_without_reloading() {
    let mut h = browsing(0, 6000, &[]);
    h.press(KeyCode::Char('o'));
    h.chars("3000");
    h.press(KeyCode::Enter);
    for _ in 0..5 {
        h.press(KeyCode::Down);
    }
    let tails = h.source.tails().len();
    h.act(kdeck::tui::action::Action::Bottom, tui_fixture::now());
    assert_eq!(selected_offset(&h), 3999);
    h.act(kdeck::tui::action::Action::Top, tui_fixture::now());
    assert_eq!(selected_offset(&h), 3000);
    assert_eq!(h.source.tails().len(), tails, "no reload, no window move");
}
