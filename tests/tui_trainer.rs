//! Trainer mode in the console: the running scenario's step, rule, commands and checks in
//! the caption overlay; `n`, `N` and `.` go to the scenario, and mean nothing (with a note
//! saying why) when no scenario runs; a Chinese caption keeps its columns aligned.

mod tui_fixture;

use crossterm::event::KeyCode;
use kdeck::scenario::driver::updates_of;
use kdeck::scenario::player::PlayerEvent;
use kdeck::tui::app::EventRow;
use kdeck::tui::{ScenarioControl, TrainerUpdate};
use tokio::sync::mpsc;
use tui_fixture::{harness, now};

fn present(h: &mut tui_fixture::Harness, updates: Vec<TrainerUpdate>) {
    for u in updates {
        h.console.trainer(u, now());
    }
}

fn loaded(title: &str) -> TrainerUpdate {
    loaded_in(title, None)
}

/// A four-step scenario called `title`, in `lang`.
fn loaded_in(title: &str, lang: Option<&str>) -> TrainerUpdate {
    TrainerUpdate::Loaded {
        title: title.into(),
        steps: 4,
        lang: lang.map(String::from),
    }
}

#[test]
fn the_scenario_keys_without_a_scenario_say_how_to_start_one() {
    let mut h = harness();
    h.press(KeyCode::Char('n'));
    let note = h.app.status.as_ref().map(|s| s.text.clone()).unwrap_or_default();
    assert!(note.contains("kdeck scenario run"), "{note}");
}

#[test]
fn n_shift_n_and_dot_go_to_the_running_scenario() {
    let mut h = harness();
    let (tx, mut rx) = mpsc::unbounded_channel();
    h.console.scenario = Some(tx);
    present(&mut h, vec![loaded("A leader crashes")]);
    h.press(KeyCode::Char('n'));
    h.press(KeyCode::Char('.'));
    h.press(KeyCode::Char('N'));
    let mut got = Vec::new();
    while let Ok(c) = rx.try_recv() {
        got.push(c);
    }
    assert_eq!(
        got,
        vec![
            ScenarioControl::Next,
            ScenarioControl::TogglePlay,
            ScenarioControl::Previous
        ]
    );
}

#[test]
fn a_step_shows_its_caption_rule_commands_and_checks() {
    let mut h = harness();
    present(
        &mut h,
        vec![
            loaded("A leader crashes"),
            TrainerUpdate::Step {
                index: 1,
                caption: "We crash broker 0, the leader.".into(),
                why: Some("A broker silent for broker.session.timeout.ms is fenced.".into()),
            },
            TrainerUpdate::Command {
                text: "kill broker 0".into(),
                outcome: Ok("broker 0 killed".into()),
            },
            TrainerUpdate::Checks(vec![
                ("orders-0 has a new leader".into(), Some(true)),
                ("ISR size of orders-0 = 2: ISR [0, 1, 2] (size 3)".into(), Some(false)),
            ]),
            TrainerUpdate::Ended { passed: false },
        ],
    );
    assert_draw!("trainer_step", h, 100, 30);
}

#[test]
fn a_chinese_caption_keeps_its_columns() {
    let scenario = kdeck::scenario::find("leader-crash", None)
        .expect("shipped")
        .translated(Some("zh"));
    let step = &scenario.steps[1];
    let mut h = harness();
    let mut updates = vec![TrainerUpdate::Loaded {
        title: scenario.title.clone(),
        steps: scenario.steps.len(),
        lang: scenario.language.clone(),
    }];
    updates.extend(updates_of(PlayerEvent::StepStarted {
        index: 1,
        total: scenario.steps.len(),
        caption: step.caption.replace("{leader}", "0").replace("{controller}", "0"),
        why: step
            .why
            .as_ref()
            .map(|w| w.replace("{session_timeout}", "3000\u{a0}ms")),
    }));
    present(&mut h, updates);
    assert_draw!("trainer_step_zh", h, 100, 30);
}

/// A step that has run: caption, rule, a command and checks with their values.
fn a_step() -> Vec<TrainerUpdate> {
    vec![
        loaded("A leader crashes"),
        TrainerUpdate::Step {
            index: 1,
            caption: "We crash broker 0, the leader.".into(),
            why: Some("A broker silent for broker.session.timeout.ms is fenced.".into()),
        },
        TrainerUpdate::Command {
            text: "kill broker 0".into(),
            outcome: Ok("broker 0 killed".into()),
        },
        TrainerUpdate::Checks(vec![
            ("orders-0 has a new leader (leader 1 (was 0))".into(), Some(true)),
            ("acknowledged records lost = 0 (lost 0)".into(), Some(true)),
        ]),
        TrainerUpdate::Ended { passed: true },
    ]
}

#[test]
fn the_scenario_keys_work_over_an_explanation_and_close_it() {
    let mut h = harness();
    let (tx, mut rx) = mpsc::unbounded_channel();
    h.console.scenario = Some(tx);
    present(&mut h, a_step());
    h.press(KeyCode::Char('e'));
    assert!(
        matches!(h.app.overlay(), Some(kdeck::tui::overlay::Overlay::Explain { .. })),
        "e opens the explanation"
    );
    // The caption stays on screen under the explanation.
    let screen = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    assert!(screen.contains("We crash broker 0, the leader."), "{screen}");
    assert!(screen.contains("✓ acknowledged records lost = 0 (lost 0)"), "{screen}");
    h.press(KeyCode::Char('.'));
    assert!(h.app.overlay().is_some(), "play keeps the explanation open");
    h.press(KeyCode::Char('n'));
    assert!(h.app.overlay().is_none(), "going on closes the step's explanation");
    let mut got = Vec::new();
    while let Ok(c) = rx.try_recv() {
        got.push(c);
    }
    assert_eq!(got, vec![ScenarioControl::TogglePlay, ScenarioControl::Next]);
}

#[test]
fn in_a_confirmation_n_still_means_no() {
    let mut h = harness();
    let (tx, mut rx) = mpsc::unbounded_channel();
    h.console.scenario = Some(tx);
    present(&mut h, a_step());
    h.press(KeyCode::Char('x'));
    assert!(
        matches!(h.app.overlay(), Some(kdeck::tui::overlay::Overlay::Confirm { .. })),
        "x asks before killing"
    );
    h.press(KeyCode::Char('n'));
    assert!(h.app.overlay().is_none(), "n answered the question");
    assert!(rx.try_recv().is_err(), "and went to no scenario");
}

#[test]
fn a_caption_too_tall_for_the_terminal_keeps_its_checks_and_keys() {
    let mut h = harness();
    let long = "A sentence that goes on and on about replication, leaders and followers. ".repeat(8);
    present(
        &mut h,
        vec![
            loaded("A leader crashes"),
            TrainerUpdate::Step {
                index: 1,
                caption: format!("{long}\n{long}"),
                why: Some(long.clone()),
            },
            TrainerUpdate::Checks(vec![
                ("orders-0 has a new leader (leader 1 (was 0))".into(), Some(true)),
                ("acknowledged records lost = 0 (lost 0)".into(), Some(true)),
            ]),
            TrainerUpdate::Ended { passed: true },
        ],
    );
    let screen = tui_fixture::text(&tui_fixture::draw(&mut h.console, 80, 24));
    assert!(screen.contains("✓ acknowledged records lost = 0 (lost 0)"), "{screen}");
    assert!(screen.contains("n next"), "{screen}");
    assert!(screen.contains("not shown: a taller terminal"), "{screen}");
    // The words fill the band to its last row: no empty row while lines are left out.
    let band: Vec<&str> = screen
        .lines()
        .skip_while(|l| !l.starts_with("┌ ["))
        .skip(1)
        .take_while(|l| !l.starts_with('└'))
        .collect();
    assert!(!band.is_empty(), "{screen}");
    assert!(
        band.iter().all(|l| !l.trim_matches(['│', ' ', '|']).is_empty()),
        "an empty row in the caption band:\n{screen}"
    );
}

#[test]
fn a_held_step_says_held_in_the_header() {
    let mut h = harness();
    present(&mut h, a_step());
    let mut view = tui_fixture::view();
    view.controls = Some(kdeck::view::Controls {
        frozen: true,
        held: true,
        ..tui_fixture::controls()
    });
    h.console.set_view(std::sync::Arc::new(view));
    assert_draw!("trainer_held", h, 100, 30);
}

/// The whole trainer screen in Chinese: a real run of leader-crash's first two steps in zh
/// (captions, why, commands, checks with what they saw, and the events the cluster told of
/// them), shown with the console's chrome (header, panes, caption keys, footer), then the
/// Events pane maximised with the crash's incident open, then the help; the catalogue lacks
/// nothing any of them asked for.
#[tokio::test(start_paused = true)]
async fn the_trainer_screen_in_chinese_needs_nothing_the_catalogue_lacks() {
    use kdeck::view::ClusterSource;
    use kdeck::view::lang::Lang;
    let scenario = kdeck::scenario::find("leader-crash", None)
        .expect("shipped")
        .translated(Some("zh"));
    let mut config = kdeck::config::KdeckConfig::default();
    config.wire.enabled = false;
    let dir = kdeck::scenario::headless::scratch_dir("kdeck-zh-").expect("scratch");
    let cluster =
        kdeck::scenario::workload::start_embedded(&config, &scenario.setup, kdeck::embedded::DataDir::Ephemeral(dir))
            .await
            .expect("cluster");
    let mut player = kdeck::scenario::player::Player::new(scenario.clone());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut updates = vec![TrainerUpdate::Loaded {
        title: scenario.title.clone(),
        steps: scenario.steps.len(),
        lang: scenario.language.clone(),
    }];
    for _ in 0..2 {
        let report = player.step(&cluster, &tx).await.expect("a step");
        assert!(report.passed(), "{report:?}");
    }
    let events = cluster.views().borrow().events.clone();
    cluster.shutdown().await;
    assert!(
        events
            .iter()
            .any(|e| e.text.starts_with("broker ") && e.text.contains(" fenced: ")),
        "the crash's fence is among the events: {events:#?}"
    );
    while let Ok(event) = rx.try_recv() {
        // The console opens explanations itself; this test shows the caption.
        if !matches!(event, PlayerEvent::Console(_)) {
            updates.extend(updates_of(event));
        }
    }
    let mut h = harness();
    present(&mut h, updates);
    let mut view = tui_fixture::view();
    view.controls = Some(kdeck::view::Controls {
        frozen: true,
        held: true,
        ..tui_fixture::controls()
    });
    // The fixture's panes (a killed broker, every replica role), the run's own events.
    view.events = events;
    h.console.set_view(std::sync::Arc::new(view));
    let screen = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    tui_fixture::assert_shows(
        &screen,
        &[
            // The caption, the header and the keys.
            "原因：",
            "已定格",
            "下一步",
            "有了新的领导者",
            "领导者 broker",
            // Panes: titles, legends, column headers, broker states.
            "1 Broker",
            "3 分区",
            "★ 领导者 ● 同步",
            "状态",
            "纪元",
            "已杀死",
            "在线",
            // The crash, folded into one line of the Events pane.
            "6 事件",
            "下线：已杀死",
            "秒后被隔离",
        ],
    );
    // Every event of the crash, one by one: the Events pane maximised, its incident open
    // and the cursor on its last event.
    h.press(KeyCode::Char('6'));
    h.press(KeyCode::Char('Z'));
    let rows = h.app.event_rows();
    let (at, members) = rows
        .iter()
        .enumerate()
        .find_map(|(i, r)| match r {
            EventRow::Incident { events, .. } => Some((i, *events)),
            _ => None,
        })
        .expect("the crash is an incident");
    h.press(KeyCode::Char('g'));
    for _ in 0..at {
        h.press(KeyCode::Down);
    }
    h.press(KeyCode::Enter);
    for _ in 0..members {
        h.press(KeyCode::Down);
    }
    let events = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    tui_fixture::assert_shows(
        &events,
        &[
            "▾ broker",
            "被隔离：会话超时内没有心跳",
            "的领导者：",
            "（领导者不可用）",
        ],
    );
    assert!(!events.contains(" fenced: "), "an event left in English:\n{events}");
    h.press(KeyCode::Char('?'));
    let help = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    tui_fixture::assert_shows(&help, &["按键", "当前面板：事件", "深入：", "本帮助"]);
    assert_eq!(Lang::get(Some("zh")).missing(), Vec::<String>::new());
}

/// The Chinese help over the trainer's screen at 100x30: titles, keys and descriptions.
#[test]
fn the_help_in_chinese() {
    let mut h = harness();
    present(&mut h, vec![loaded_in("领导者崩溃", Some("zh"))]);
    h.press(KeyCode::Char('?'));
    assert_draw!("trainer_help_zh", h, 100, 30);
}

/// `D`'s line in the help (the longest description) shows whole at 100x30, in English and
/// in Chinese: the help scrolls to it and wraps what is longer than the line.
#[test]
fn the_flow_key_reads_whole_in_the_help_in_both_languages() {
    use kdeck::tui::keymap::{Binding, Meaning};
    for lang in [None, Some("zh")] {
        let mut h = harness();
        present(&mut h, vec![loaded_in("A leader crashes", lang)]);
        let describe = kdeck::view::lang::Lang::get(lang)
            .tr(Binding::Flow.describe())
            .to_string();
        h.press(KeyCode::Char('?'));
        let mut seen = false;
        for _ in 0..80 {
            let screen = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
            if screen
                .lines()
                .any(|l| l.contains(&format!("D{}{describe}", " ".repeat(15))))
            {
                seen = true;
                break;
            }
            h.press(KeyCode::Down);
        }
        assert!(seen, "{lang:?}: \"{describe}\" never shows whole");
    }
}

/// The partition pictures in Chinese at 100x30 (page-views-1: a leader, a broker down, a
/// follower out of the ISR): `L`'s strips, labels, sentences and legend, `D`'s boxes,
/// arrows' labels and rules; the catalogue lacks nothing they asked for.
#[test]
fn the_partition_pictures_in_chinese() {
    let mut h = harness();
    present(&mut h, vec![loaded_in("领导者崩溃", Some("zh"))]);
    h.press(KeyCode::Char('3'));
    h.press(KeyCode::Down);
    h.press(KeyCode::Char('L'));
    assert_draw!("replica_log_zh", h, 100, 30);
    let log = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    tui_fixture::assert_shows(&log, &["复制日志", "在 ISR 中", "不同步", "已提交", "纪元："]);
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char('D'));
    assert_draw!("flow_zh", h, 100, 30);
    let flow = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    tui_fixture::assert_shows(&flow, &["消息流动", "生产者", "消费者组", "一批消息"]);
    assert_eq!(kdeck::view::lang::Lang::get(Some("zh")).missing(), Vec::<String>::new());
}

/// Killing a broker from the Chinese console asks in Chinese; a message's detail, the
/// produce dialog and a terminal too small speak it too.
#[test]
fn a_confirmation_a_message_and_a_dialog_in_chinese() {
    let mut h = harness();
    present(&mut h, vec![loaded_in("领导者崩溃", Some("zh"))]);
    h.press(KeyCode::Char('x'));
    let screen = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    tui_fixture::assert_shows(&screen, &["确认", "杀死 broker 0（硬崩溃，不做受控关闭）？", "y：是"]);
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char('5'));
    h.press(KeyCode::Enter);
    let detail = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    tui_fixture::assert_shows(&detail, &["主题-分区", "时间戳", "值（"]);
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char('2'));
    h.press(KeyCode::Char('p'));
    let dialog = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    tui_fixture::assert_shows(
        &dialog,
        &["向 page-views 生产", "分区: ", "留空：按键的哈希选择", "Enter 提交"],
    );
    h.press(KeyCode::Esc);
    let small = tui_fixture::text(&tui_fixture::draw(&mut h.console, 60, 20));
    assert!(small.contains("终端太小：60x20"), "{small}");
    assert_eq!(kdeck::view::lang::Lang::get(Some("zh")).missing(), Vec::<String>::new());
}

#[test]
fn the_flow_picture_opens_in_the_projector_layout_and_n_still_steps_the_scenario() {
    let mut h = harness();
    let (tx, mut rx) = mpsc::unbounded_channel();
    h.console.scenario = Some(tx);
    present(&mut h, vec![loaded("A leader crashes")]);
    h.press(KeyCode::Char('P'));
    assert!(h.app.projector());
    h.press(KeyCode::Char('3'));
    h.press(KeyCode::Char('D'));
    assert!(matches!(
        h.app.screen(),
        kdeck::tui::app::Screen::Flow { partition: 0, .. }
    ));
    h.press(KeyCode::Char('n'));
    h.press(KeyCode::Char('F'));
    assert_eq!(rx.try_recv().ok(), Some(ScenarioControl::Next));
    assert_eq!(h.source.commands(), vec![kdeck::view::Command::Freeze]);
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    assert!(text.contains("Records flowing"), "{text}");
}

/// The commands a step ran and what came of them, which the cluster answers in English,
/// are said in the scenario's language in its caption.
#[test]
fn a_steps_commands_and_their_outcomes_in_chinese() {
    use kdeck::view::outcome;
    let mut h = harness();
    present(
        &mut h,
        vec![
            loaded_in("领导者崩溃", Some("zh")),
            TrainerUpdate::Step {
                index: 1,
                caption: "我们让领导者崩溃。".into(),
                why: None,
            },
            TrainerUpdate::Command {
                text: "kill broker 0".into(),
                outcome: Ok(outcome::controller_broker_killed(0, 1500, 3000)),
            },
            TrainerUpdate::Command {
                text: "start broker 2".into(),
                outcome: Ok(outcome::broker_starting(2)),
            },
            TrainerUpdate::Command {
                text: "pause broker 1".into(),
                outcome: Err(outcome::topic_deleted("orders")),
            },
        ],
    );
    let screen = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    tui_fixture::assert_shows(
        &screen,
        &[
            "> broker 0 已杀死；它承载着控制器：另一个 broker 在 1500 ms 后接过控制器角色",
            "> broker 2 启动中：恢复日志并追上进度",
            "> 暂停 broker 1: 主题 orders 已删除",
        ],
    );
}

/// What a key's command came to, which the cluster answers in English, is said in the
/// console's language in the footer, a failure in Events too; a pane says which of its
/// rows it shows in that language.
#[test]
fn the_footers_outcome_a_failure_and_a_panes_rows_in_chinese() {
    use kdeck::view::{Command, CommandOutcome, outcome};
    let mut h = harness();
    present(&mut h, vec![loaded_in("领导者崩溃", Some("zh"))]);
    h.app.on_outcome(
        CommandOutcome {
            command: Command::KillBroker(0),
            result: Ok(outcome::broker_killed(0, 3000)),
        },
        now(),
    );
    let screen = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    let said = "broker 0 已杀死；控制器在 3000 ms 没有心跳后隔离它";
    assert!(screen.contains(said), "{said} missing from\n{screen}");
    h.app.on_outcome(
        CommandOutcome {
            command: Command::PauseBroker(1),
            result: Err(outcome::topic_deleted("orders")),
        },
        now(),
    );
    let failed = "暂停 broker 1 失败：主题 orders 已删除";
    assert_eq!(h.app.status.as_ref().map(|s| s.text.as_str()), Some(failed));
    let last = h.app.event_rows().last().cloned();
    assert!(
        matches!(&last, Some(EventRow::Event(e)) if e.text == "pause broker 1 failed: topic orders deleted"),
        "the timeline keeps the English: {last:?}"
    );
    let screen = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 40));
    assert!(screen.contains(failed), "{failed} missing from\n{screen}");
    let small = tui_fixture::text(&tui_fixture::draw(&mut h.console, 80, 24));
    assert!(small.contains("，共 "), "no pane says which rows it shows:\n{small}");
    assert!(!small.contains(" of "), "{small}");
    assert_eq!(kdeck::view::lang::Lang::get(Some("zh")).missing(), Vec::<String>::new());
}
