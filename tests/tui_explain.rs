//! Trainer mode: `e` explains the selection (why this HW, ISR, leader) in an overlay drawn
//! from the current view, `L` opens the picture of a partition's replicated log, whose
//! strips show epochs, HW, LEO and a diverged follower before and after it truncates, and
//! `D` the picture of records flowing through a partition, producers to consumer groups.

mod tui_fixture;

use crossterm::event::KeyCode;
use kdeck::config::ConsoleConfig;
use kdeck::tui::action::ExplainTarget;
use kdeck::tui::app::Screen;
use kdeck::tui::overlay::Overlay;
use kdeck::tui::theme::Theme;
use kdeck::view::{ClusterView, Controls, EpochStart, PartitionRow, ReplicaRole, ReplicaRow};
use tui_fixture::{default_keys, harness, harness_with, view};

fn controls() -> Controls {
    Controls {
        frozen: false,
        held: false,
        slow_motion: 1,
        auto_rebalance: true,
        unclean_election: false,
        balanced_election: false,
        replica_lag_time_max_ms: 6000,
        broker_session_timeout_ms: 3000,
        producer_acks: Some(-1),
        clock_ms: 0,
    }
}

#[test]
fn e_on_a_partition_explains_it_l_pictures_its_log_and_esc_returns() {
    let mut h = harness();
    h.press(KeyCode::Char('3'));
    h.press(KeyCode::Char('e'));
    assert_eq!(
        h.app.overlay(),
        Some(&Overlay::Explain {
            target: ExplainTarget::Partition {
                topic: "page-views".into(),
                partition: 0
            },
            scroll: 0
        })
    );
    h.press(KeyCode::Esc);
    assert_eq!(h.app.overlay(), None);
    h.press(KeyCode::Char('L'));
    assert_eq!(
        h.app.screen(),
        &Screen::ReplicaLog {
            topic: "page-views".into(),
            partition: 0
        }
    );
    // On the picture, `e` explains the same partition; Esc closes that, then goes back.
    h.press(KeyCode::Char('e'));
    assert!(matches!(h.app.overlay(), Some(Overlay::Explain { .. })));
    h.press(KeyCode::Esc);
    assert_eq!(
        h.app.screen(),
        &Screen::ReplicaLog {
            topic: "page-views".into(),
            partition: 0
        }
    );
    h.press(KeyCode::Esc);
    assert_eq!(h.app.screen(), &Screen::Dashboard);
}

#[test]
fn e_explains_the_selected_broker_group_and_event() {
    let mut h = harness();
    h.press(KeyCode::Char('1'));
    h.press(KeyCode::Down);
    h.press(KeyCode::Char('e'));
    assert!(matches!(
        h.app.overlay(),
        Some(Overlay::Explain {
            target: ExplainTarget::Broker { broker: 1 },
            ..
        })
    ));
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char('4'));
    h.press(KeyCode::Char('e'));
    assert!(matches!(
        h.app.overlay(),
        Some(Overlay::Explain { target: ExplainTarget::Group { group }, .. }) if group == "analytics"
    ));
    h.press(KeyCode::Esc);
    // On an incident's row, its broker; opened, its newest event: the rejected produce.
    h.press(KeyCode::Char('6'));
    h.press(KeyCode::Char('e'));
    assert!(matches!(
        h.app.overlay(),
        Some(Overlay::Explain {
            target: ExplainTarget::Broker { broker: 1 },
            ..
        })
    ));
    h.press(KeyCode::Esc);
    h.press(KeyCode::Enter);
    h.press(KeyCode::Char('e'));
    let Some(Overlay::Explain { target, .. }) = h.app.overlay().cloned() else {
        panic!("no explanation: {:?}", h.app.overlay());
    };
    assert_eq!(
        target,
        ExplainTarget::Event {
            text: "produce to clicks-1 rejected: LeaderNotAvailable: no leader".into()
        }
    );
    let e = h.app.explanation(&target);
    assert!(
        e.says("clicks-1 has no live leader: no live ISR member (ISR [1]); down: broker 1 killed"),
        "{e:#?}"
    );
}

#[test]
fn the_explanation_of_a_partition_with_a_slow_follower() {
    let mut v = view();
    v.controls = Some(controls());
    let mut h = harness_with(v, ConsoleConfig::default(), default_keys(), Theme::colored());
    h.press(KeyCode::Char('3'));
    h.press(KeyCode::Down);
    h.press(KeyCode::Char('e'));
    assert_draw!("explain_partition", h, 120, 40);
}

fn epochs(list: &[(i32, i64)]) -> kdeck::view::Epochs {
    list.iter()
        .map(|&(epoch, start_offset)| EpochStart { epoch, start_offset })
        .collect()
}

fn replica(
    broker: i32,
    role: ReplicaRole,
    leo: i64,
    hw: i64,
    list: &[(i32, i64)],
    caught_up: Option<u64>,
) -> ReplicaRow {
    ReplicaRow {
        broker,
        role,
        log_end_offset: Some(leo),
        log_start_offset: Some(0),
        high_watermark: Some(hw),
        epochs: epochs(list),
        size_bytes: None,
        caught_up_ms_ago: caught_up,
    }
}

/// orders-0 after broker 2, leader in epoch 3, was cut off with 1180-1199 written but not
/// committed: broker 1 leads epoch 4 from 1180. `truncated`: broker 2 has cut its log back to
/// 1180 and fetched the leader's since.
fn orders(truncated: bool) -> ClusterView {
    let mut v = view();
    v.controls = Some(controls());
    let leader = [(2, 0), (3, 600), (4, 1180)];
    let replicas = if truncated {
        vec![
            replica(1, ReplicaRole::Leader, 1250, 1250, &leader, None),
            replica(2, ReplicaRole::InSync, 1250, 1250, &leader, Some(40)),
            replica(0, ReplicaRole::InSync, 1250, 1250, &leader, Some(40)),
        ]
    } else {
        vec![
            replica(1, ReplicaRole::Leader, 1250, 1240, &leader, None),
            replica(2, ReplicaRole::OutOfSync, 1200, 1180, &[(2, 0), (3, 600)], None),
            replica(0, ReplicaRole::InSync, 1240, 1240, &leader, Some(30)),
        ]
    };
    v.partitions.push(PartitionRow {
        topic: "orders".into(),
        partition: 0,
        leader: Some(1),
        leader_epoch: 4,
        isr: if truncated { vec![1, 0, 2] } else { vec![1, 0] },
        under_replicated: !truncated,
        replicas,
        preferred_leader: 2,
        high_watermark: Some(if truncated { 1250 } else { 1240 }),
        last_stable_offset: Some(if truncated { 1250 } else { 1240 }),
        log_start_offset: Some(0),
        adding: Vec::new(),
        removing: Vec::new(),
        changed_at: None,
        min_insync_replicas: Some(2),
    });
    v
}

#[test]
fn the_replica_log_of_a_diverged_follower_before_and_after_it_truncates() {
    let mut h = harness_with(
        orders(false),
        ConsoleConfig::default(),
        default_keys(),
        Theme::colored(),
    );
    h.act(
        kdeck::tui::action::Action::ReplicaLog {
            topic: "orders".into(),
            partition: 0,
        },
        tui_fixture::now(),
    );
    assert_draw!("replica_log_diverged", h, 120, 32);
    h.set_view(std::sync::Arc::new(orders(true)));
    assert_draw!("replica_log_truncated", h, 120, 32);
}

#[test]
fn without_colour_the_epochs_read_by_their_numbers() {
    let mut h = harness_with(
        orders(false),
        ConsoleConfig::default(),
        default_keys(),
        Theme::monochrome(),
    );
    h.act(
        kdeck::tui::action::Action::ReplicaLog {
            topic: "orders".into(),
            partition: 0,
        },
        tui_fixture::now(),
    );
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 120, 32));
    for label in ["e2", "e3", "e4", "×", "░", "█"] {
        assert!(text.contains(label), "{label} missing:\n{text}");
    }
}

#[test]
fn d_pictures_records_flowing_and_q_or_esc_goes_back() {
    let mut h = harness();
    h.press(KeyCode::Char('3'));
    h.press(KeyCode::Char('D'));
    let flow = Screen::Flow {
        topic: "page-views".into(),
        partition: 0,
    };
    assert_eq!(h.app.screen(), &flow);
    // From the flow, `L` opens the same partition's log picture; Esc comes back.
    h.press(KeyCode::Char('L'));
    assert!(matches!(h.app.screen(), Screen::ReplicaLog { .. }));
    h.press(KeyCode::Esc);
    assert_eq!(h.app.screen(), &flow);
    // `q` closes the picture in front of the room; it does not end the session.
    h.press(KeyCode::Char('q'));
    assert_eq!(h.app.screen(), &Screen::Dashboard);
    assert!(!h.app.quit);
    // From Topics, the topic's first partition.
    h.press(KeyCode::Char('2'));
    let topic = h.app.selected_topic().map(|t| t.name.clone()).unwrap_or_default();
    h.press(KeyCode::Char('D'));
    assert_eq!(h.app.screen(), &Screen::Flow { topic, partition: 0 });
    h.press(KeyCode::Esc);
    assert_eq!(h.app.screen(), &Screen::Dashboard);
}

/// page-views-0 of the fixture: leader 0, broker 1 offline, broker 2 in sync, 301 records a
/// second, the analytics group reading it.
fn flow_harness() -> tui_fixture::Harness {
    let mut h = harness();
    h.act(
        kdeck::tui::action::Action::Flow {
            topic: "page-views".into(),
            partition: 0,
        },
        tui_fixture::now(),
    );
    h
}

#[test]
fn the_flow_picture_at_100x30() {
    let mut h = flow_harness();
    assert_draw!("flow_100x30", h, 100, 30);
}

#[test]
fn the_flow_picture_fits_80x24_without_a_cut_number() {
    let mut h = flow_harness();
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 80, 24));
    assert!(!text.contains('…'), "a label was cut:\n{text}");
    for whole in [
        "leader 0",
        "epoch",
        "LEO 1200",
        "HW ",
        "producers",
        "offline",
        "consumer groups",
        "analytics",
    ] {
        assert!(text.contains(whole), "{whole} missing:\n{text}");
    }
}

#[test]
fn the_flow_picture_moves_with_the_clock_and_stands_still_when_frozen() {
    let mut h = flow_harness();
    let at = |ms: i64| tui_fixture::now() + chrono::Duration::milliseconds(ms);
    let frame = |h: &mut tui_fixture::Harness, ms: i64| {
        tui_fixture::text(&tui_fixture::draw_at(&mut h.console, 100, 30, at(ms)))
    };
    assert_ne!(frame(&mut h, 0), frame(&mut h, 700));
    assert!(kdeck::tui::flow::moving(&h.app));
    let mut frozen = view();
    if let Some(c) = frozen.controls.as_mut() {
        c.frozen = true;
    }
    h.set_view(std::sync::Arc::new(frozen));
    assert_eq!(frame(&mut h, 0), frame(&mut h, 700));
    assert!(!kdeck::tui::flow::moving(&h.app));
}

/// Opens the replica log of orders-0 on `view`.
fn replica_log_of_orders(view: ClusterView) -> tui_fixture::Harness {
    let mut h = harness_with(view, ConsoleConfig::default(), default_keys(), Theme::monochrome());
    h.act(
        kdeck::tui::action::Action::ReplicaLog {
            topic: "orders".into(),
            partition: 0,
        },
        tui_fixture::now(),
    );
    h
}

#[test]
fn an_offline_partition_shades_each_strip_from_its_replicas_own_last_hw() {
    let mut v = orders(false);
    let p = v.partitions.last_mut().expect("orders-0");
    // Leader and in-sync follower gone; the slow follower alive with HW 356 of 400.
    p.leader = None;
    p.isr = vec![1];
    p.high_watermark = None;
    let stack = [(2, 0), (3, 200)];
    p.replicas = vec![
        ReplicaRow {
            log_end_offset: None,
            high_watermark: None,
            ..replica(1, ReplicaRole::Offline, 0, 0, &stack, None)
        },
        replica(2, ReplicaRole::OutOfSync, 400, 356, &stack, None),
    ];
    let mut h = replica_log_of_orders(v);
    let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    assert!(text.contains("offline: no leader"), "{text}");
    let lines: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
    let strip = lines
        .iter()
        .position(|l| l.iter().collect::<String>().contains("○ broker 2"))
        .unwrap_or_else(|| panic!("no strip of broker 2:\n{text}"));
    // The shading starts where the marker under the strip reads its HW, not at offset 0.
    let shaded = lines[strip].iter().position(|c| *c == '░');
    let marker = lines[strip + 1].windows(2).position(|w| w == ['│', 'H']);
    assert!(lines[strip].contains(&'█'), "below its HW 356 is committed:\n{text}");
    assert!(shaded.is_some() && shaded == marker, "shaded from its HW:\n{text}");
    assert!(text.contains("HW 356"), "{text}");
}

/// The words a legend item is made of, longest first.
const LEGEND_ITEMS: &[&str] = &[
    "█ committed (below the HW)",
    "░ uncommitted (HW to LEO)",
    "× diverged: not in the leader's log",
    "█ committed",
    "░ uncommitted",
    "× diverged",
    "│HW ┘LEO",
    "epochs:",
    "e2",
    "e3",
    "e4",
];

#[test]
fn the_replica_log_legend_drops_items_whole_on_a_narrow_screen() {
    for (width, height) in [(100, 30), (80, 24)] {
        let mut h = replica_log_of_orders(orders(false));
        let text = tui_fixture::text(&tui_fixture::draw(&mut h.console, width, height));
        let legend = text
            .lines()
            .find(|l| l.contains("█ committed"))
            .unwrap_or_else(|| panic!("{width}x{height}: no legend:\n{text}"));
        let mut rest = legend.replace(['│', '|'], " ");
        for item in LEGEND_ITEMS {
            rest = rest.replace(item, " ");
        }
        // `│HW ┘LEO` lost its bar to the border cleaning above.
        rest = rest.replace("HW ┘LEO", " ");
        assert!(
            rest.trim().is_empty(),
            "{width}x{height}: a legend item is cut: {rest:?} in\n{legend}"
        );
        assert!(
            legend.contains("committed") && legend.contains("uncommitted"),
            "{legend}"
        );
    }
}

/// The console in Chinese, as a scenario with `--lang zh` sets it.
fn in_chinese(h: &mut tui_fixture::Harness) {
    h.console.trainer(
        kdeck::tui::TrainerUpdate::Loaded {
            title: "领导者崩溃".into(),
            steps: 4,
            lang: Some("zh".into()),
        },
        tui_fixture::now(),
    );
}

/// `e` in a Chinese console explains in Chinese: a partition's HW, ISR and leader, a
/// killed broker with its events, a group and a rejected produce; the catalogue lacks
/// nothing they say.
#[test]
fn the_explanations_in_chinese() {
    let mut v = view();
    v.controls = Some(controls());
    // Broker 1's fencing in the engine's own words (the fixture's reasons are English only).
    use kdeck::view::timeline;
    let fence = "missed heartbeats for the session timeout";
    for ev in &mut v.events {
        let line = if ev.text.starts_with("broker 1 fenced") {
            timeline::broker_fenced(1, fence)
        } else if ev.text.starts_with("ISR page-views-0 shrank") {
            timeline::isr_shrunk("page-views", 0, &[1], &[0, 2], Some(timeline::fenced_because(1, fence)))
        } else {
            continue;
        };
        ev.text = line.text();
        ev.msg = Some(line.msg);
    }
    let mut h = harness_with(v, ConsoleConfig::default(), default_keys(), Theme::colored());
    in_chinese(&mut h);
    let screen = |h: &mut tui_fixture::Harness| tui_fixture::text(&tui_fixture::draw(&mut h.console, 100, 30));
    h.press(KeyCode::Char('3'));
    h.press(KeyCode::Down);
    h.press(KeyCode::Char('e'));
    assert_draw!("explain_partition_zh", h, 100, 30);
    let partition = screen(&mut h);
    tui_fixture::assert_shows(
        &partition,
        &[
            "原因",
            "高水位",
            "同步副本",
            "领导者",
            "控制器的选举规则：Kafka 的规则，",
            "首选领导者是 broker",
        ],
    );
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char('1'));
    h.press(KeyCode::Down);
    h.press(KeyCode::Char('e'));
    let broker = screen(&mut h);
    tui_fixture::assert_shows(
        &broker,
        &[
            "broker 1：已杀死",
            "已被杀死（崩溃，没有受控关闭）",
            "事件：broker 1 下线：已杀死",
            "事件：broker 1 被隔离：会话超时内没有心跳",
            "角色",
            "控制器是 broker 0",
        ],
    );
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char('4'));
    h.press(KeyCode::Char('e'));
    let group = screen(&mut h);
    tui_fixture::assert_shows(
        &group,
        &[
            "消费者组 analytics：Stable",
            "Stable：每个成员都拿到了分配并在消费",
            "协调者：broker",
            "上次再平衡",
        ],
    );
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char('6'));
    h.press(KeyCode::Enter);
    h.press(KeyCode::Char('e'));
    let event = screen(&mut h);
    tui_fixture::assert_shows(
        &event,
        &[
            "向 clicks-1 生产失败",
            "发生了什么",
            "向 clicks-1 生产被拒",
            "clicks-1 没有存活的领导者",
        ],
    );
    assert_eq!(kdeck::view::lang::Lang::get(Some("zh")).missing(), Vec::<String>::new());
}
