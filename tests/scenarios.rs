//! Every shipped teaching scenario runs headless to its end on tokio's paused clock, with
//! every check passing, and tells the same story each time: its normalised timeline (each
//! step's commands, checks and events, numbers that vary masked) is a golden trace kept as
//! an insta snapshot. A change in the engine that changes a story shows up here as a diff
//! to read.

#[macro_use]
mod shipped;

use kdeck::config::KdeckConfig;
use kdeck::scenario::{self, headless};

async fn run(name: &str) {
    let found = scenario::find(name, None).unwrap_or_else(|e| panic!("{e:#}"));
    let config = KdeckConfig::default();
    let summary = headless::run(&found, &config, &mut |_| {})
        .await
        .unwrap_or_else(|e| panic!("{name}: {e:#}"));
    assert!(
        summary.passed(),
        "{name} failed:\n{}\n\ntrace:\n{}",
        summary.failures().join("\n"),
        summary.trace.join("\n")
    );
    insta::assert_snapshot!(format!("scenario_{name}"), summary.trace.join("\n"));
}

macro_rules! scenario_tests {
    ($($test:ident => $name:literal),* $(,)?) => {
        $(
            #[tokio::test(start_paused = true)]
            async fn $test() {
                run($name).await;
            }
        )*

        /// Each shipped scenario has its test above.
        #[test]
        fn every_shipped_scenario_has_a_test() {
            let tested = [$($name),*];
            for (name, _) in scenario::SHIPPED {
                assert!(tested.contains(name), "scenario {name} has no test in tests/scenarios.rs");
            }
        }
    };
}

shipped!(scenario_tests);

#[test]
fn every_shipped_scenario_parses_and_there_are_at_least_two_in_chinese() {
    let all = scenario::shipped().unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(all.len(), scenario::SHIPPED.len());
    let chinese = all.iter().filter(|s| s.lang.contains_key("zh")).count();
    assert!(chinese >= 2, "{chinese} scenarios have [lang.zh]");
    for s in all.iter().filter(|s| s.lang.contains_key("zh")) {
        let zh = s.translated(Some("zh"));
        assert_ne!(zh.title, s.title, "{}: the Chinese title is the English one", s.name);
        assert!(
            zh.steps.iter().zip(&s.steps).all(|(a, b)| a.caption != b.caption),
            "{}: a step lacks its Chinese caption",
            s.name
        );
    }
}

#[test]
fn a_malformed_scenario_is_refused_with_its_file_line_and_column() {
    let text = "name = \"x\"\ntitle = \"t\"\nconcept = \"c\"\n[setup]\nbrokers = \"three\"\n";
    let e = scenario::validate::load("my.toml", "x", text).expect_err("a string for brokers");
    assert!(e.to_string().starts_with("my.toml:5:11:"), "{e}");
    let unknown = "name = \"x\"\ntitle = \"t\"\nconcept = \"c\"\n[setup]\n[[step]]\ncaption = \"c\"\nactions = [{ action = \"kill_everything\" }]\n";
    let e = scenario::validate::load("my.toml", "x", unknown).expect_err("an unknown action");
    assert!(
        e.to_string()
            .starts_with("my.toml:7:23: step 1: unknown action \"kill_everything\"; a scenario may use: kill_broker,"),
        "{e}"
    );
}

/// A number compared with nothing always holds, so a check without a bound could never
/// fail: it is refused when the file is loaded, not passed when it runs.
#[test]
fn a_counting_check_without_a_bound_is_refused_at_load() {
    let text = "name = \"x\"\ntitle = \"t\"\nconcept = \"c\"\n[setup]\n[[step]]\ncaption = \"c\"\nexpect = [{ check = \"acked\" }]\n";
    let e = scenario::validate::load("my.toml", "x", text).expect_err("an acked check with no bound");
    assert!(
        e.to_string().starts_with("my.toml:7:11: step 1:") && e.to_string().contains("compares with nothing"),
        "{e}"
    );
    let bounded = text.replace("{ check = \"acked\" }", "{ check = \"acked\", at_least = 1 }");
    assert!(scenario::validate::load("my.toml", "x", &bounded).is_ok());
}

/// Key order holds only when the group read keyed records and none came out of order: a
/// group that read nothing has shown nothing.
#[test]
fn key_order_held_needs_records_read() {
    use kdeck::scenario::check::{Baseline, evaluate};
    use kdeck::scenario::format::Check;
    use kdeck::view::{ClusterView, SourceKind, WorkloadStats};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    let check = Check::KeyOrderHeld { group: "g".into() };
    let verdict = |stats: WorkloadStats| {
        let mut view = ClusterView::empty("c", SourceKind::Embedded);
        view.workload = Some(stats);
        let base = Baseline {
            view: Arc::new(view.clone()),
            hw: BTreeMap::new(),
            lang: kdeck::view::lang::Lang::english(),
        };
        evaluate(&check, &view, &base, &[], &BTreeMap::new())
    };
    let nothing_read = verdict(WorkloadStats::default());
    assert!(!nothing_read.holds, "{}", nothing_read.saw);
    let mut read = WorkloadStats::default();
    read.order_checked.insert("g".into(), 40);
    let in_order = verdict(read.clone());
    assert!(in_order.holds, "{}", in_order.saw);
    read.out_of_order.insert("g".into(), 2);
    let out_of_order = verdict(read);
    assert!(
        !out_of_order.holds && out_of_order.saw.contains("2 of 40"),
        "{}",
        out_of_order.saw
    );
}
