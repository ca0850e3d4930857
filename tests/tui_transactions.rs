//! Transactions in the console: the Messages pane marks each record written in a transaction
//! (committed, aborted, open), the isolation key switches the tail between read_uncommitted
//! and read_committed and the pane's title says which, and the Partitions pane shows the last
//! stable offset next to the high watermark, highlighted while a transaction holds it back.

#[macro_use]
mod tui_fixture;

use crossterm::event::KeyCode;
use kdeck::tui::Pane;
use tui_fixture::{Harness, harness};

/// The console browsing partition 0 of `page-views` from its start, which holds transactions.
fn browsing_transactions() -> Harness {
    let mut h = harness();
    h.source.transactions();
    h.press(KeyCode::Char('5'));
    h.press(KeyCode::Char(']'));
    h.press(KeyCode::Home);
    h
}

fn values(h: &Harness) -> Vec<String> {
    h.app
        .visible_messages()
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

#[test]
fn records_say_how_their_transaction_ended() {
    let mut h = browsing_transactions();
    assert_eq!(values(&h), ["plain", "paid", "refund", "shipped", "pending"]);
    assert_draw!("messages_transactions", h, 120, 30);
}

#[test]
fn the_isolation_key_reads_committed_then_everything_again() {
    let mut h = browsing_transactions();
    assert!(
        h.source.tails().iter().all(|t| !t.read_committed),
        "read_uncommitted by default"
    );
    h.press(KeyCode::Char('i'));
    let tail = h.source.tails().pop().expect("the tail started again");
    assert!(tail.read_committed);
    assert_eq!(tail.partition, Some(0), "the same partition, from the same start");
    assert_eq!(
        values(&h),
        ["plain", "paid", "shipped"],
        "no aborted and no open record"
    );
    assert_draw!("messages_read_committed", h, 120, 30);
    // A seek keeps the isolation level.
    h.press(KeyCode::Char('G'));
    assert!(h.source.tails().pop().is_some_and(|t| t.read_committed));
    h.press(KeyCode::Char('i'));
    assert!(h.source.tails().pop().is_some_and(|t| !t.read_committed));
    h.press(KeyCode::Home);
    assert_eq!(values(&h), ["plain", "paid", "refund", "shipped", "pending"]);
}

#[test]
fn the_isolation_key_speaks_chinese() {
    let mut h = browsing_transactions();
    h.console.app.lang = kdeck::view::lang::Lang::get(Some("zh"));
    h.press(KeyCode::Char('i'));
    let buffer = tui_fixture::draw(&mut h.console, 120, 30);
    let text = tui_fixture::text(&buffer);
    assert!(text.contains("read_committed（只读已提交）"), "{text}");
    h.press(KeyCode::Char('i'));
    h.press(KeyCode::Down);
    h.press(KeyCode::Enter);
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 30));
    assert!(
        text.contains("已提交（生产者 7）"),
        "the detail says how the transaction ended: {text}"
    );
    assert_eq!(kdeck::view::lang::Lang::get(Some("zh")).missing(), Vec::<String>::new());
}

#[test]
fn the_partitions_pane_highlights_an_lso_held_back_by_a_transaction() {
    let mut h = harness();
    h.press(KeyCode::Char('3'));
    let buffer = tui_fixture::draw(&mut h.console, 120, 40);
    let area = h
        .app
        .layout
        .panes
        .iter()
        .find(|p| p.pane == Pane::Partitions)
        .map(|p| p.area)
        .expect("the partitions pane is shown");
    let style_of = |text: &str| {
        (area.y..area.y + area.height).find_map(|y| {
            let line: String = (area.x..area.x + area.width).map(|x| buffer[(x, y)].symbol()).collect();
            let at = line.find(text)?;
            let column = line[..at].chars().count() as u16;
            Some(buffer[(area.x + column, y)].style())
        })
    };
    let held = style_of("1190").expect("partition 1's LSO is shown");
    let warn = h.app.theme.warn;
    assert_eq!(held.fg, warn.fg, "an LSO below the HW is highlighted");
}

#[test]
fn the_transactions_screen_lists_each_id_with_the_age_of_its_open_transaction() {
    let mut h = harness();
    h.press(KeyCode::Char('Y'));
    assert_draw!("transactions_screen", h, 120, 30);
    // The answer is as of the question: a minute of redraws later its ages are the same (the
    // transaction may well have ended since), and the footer says when it was asked.
    let asked = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 30));
    let later = tui_fixture::now() + chrono::Duration::seconds(60);
    let redrawn = tui_fixture::text(&tui_fixture::draw_at(&mut h.console, 120, 30, later));
    assert_eq!(asked, redrawn.replace(&clock(later), &clock(tui_fixture::now())));
    assert!(
        asked.contains(&format!("as of {}", clock(tui_fixture::now()))),
        "{asked}"
    );
    // Asked again with the same key, on a source that lost its coordinator meanwhile.
    *h.source.transactions.lock().expect("transactions") =
        Err(kdeck::view::transactions::no_coordinator("COORDINATOR_NOT_AVAILABLE"));
    h.press(KeyCode::Char('Y'));
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 30));
    assert!(
        text.contains("cannot list the transactions: no transaction coordinator answered: COORDINATOR_NOT_AVAILABLE"),
        "{text}"
    );
    h.press(KeyCode::Esc);
    assert!(h.app.transactions.is_none(), "Esc goes back to the dashboard");
}

#[test]
fn no_transactional_id_says_so_and_the_command_line_opens_the_screen() {
    let mut h = harness();
    *h.source.transactions.lock().expect("transactions") = Ok(Vec::new());
    h.press(KeyCode::Char(':'));
    h.chars("transactions");
    h.press(KeyCode::Enter);
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 30));
    assert!(text.contains("no transactional ids"), "{text}");
}

#[test]
fn the_transactions_screen_speaks_chinese() {
    let mut h = harness();
    h.console.app.lang = kdeck::view::lang::Lang::get(Some("zh"));
    h.press(KeyCode::Char('Y'));
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 30));
    assert!(text.contains("事务 ID"), "{text}");
    assert_eq!(kdeck::view::lang::Lang::get(Some("zh")).missing(), Vec::<String>::new());
}

/// `at` as the header's clock shows it (the fixture's console runs in UTC).
fn clock(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%H:%M:%S").to_string()
}
