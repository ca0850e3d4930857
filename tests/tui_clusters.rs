//! Several clusters in one console: the ACL screen (`W`, `:acls`) with its list, its filter
//! and the plain words of a cluster without an authorizer; and the cluster switcher (`K`,
//! `:cluster NAME`), which lists the embedded cluster and the profiles, asks the outer loop to
//! switch, and stays on the current cluster when the switch fails.

mod tui_fixture;

use std::sync::Arc;

use crossterm::event::KeyCode;
use kdeck::tui::Switched;
use kdeck::tui::app::Screen;
use kdeck::tui::clusters::{ClusterChoices, EMBEDDED};
use kdeck::tui::overlay::Overlay;
use kdeck::view::ClusterSource;
use kdeck::view::acls::{AclRow, Acls};
use tokio::sync::mpsc;
use tui_fixture::{
    Harness, RecordingSource, assert_shows, external_capabilities, external_harness, external_view, harness, now,
};

fn screen(h: &mut Harness, width: u16, height: u16) -> String {
    tui_fixture::text(&tui_fixture::draw(&mut h.console, width, height))
}

fn footer(h: &mut Harness) -> String {
    screen(h, 120, 40).lines().last().unwrap_or_default().to_string()
}

fn acl(principal: &str, operation: &str, permission: &str, kind: &str, name: &str, pattern: &str) -> AclRow {
    AclRow {
        principal: principal.into(),
        host: "*".into(),
        operation: operation.into(),
        permission: permission.into(),
        resource_type: kind.into(),
        resource_name: name.into(),
        pattern_type: pattern.into(),
    }
}

fn some_acls() -> Acls {
    Acls::Listed(vec![
        acl("User:alice", "READ", "ALLOW", "GROUP", "billing-", "PREFIXED"),
        acl("User:alice", "READ", "ALLOW", "TOPIC", "orders", "LITERAL"),
        acl("User:bob", "WRITE", "DENY", "TOPIC", "orders", "LITERAL"),
        acl("User:ops", "ALL", "ALLOW", "CLUSTER", "kafka-cluster", "LITERAL"),
    ])
}

#[test]
fn w_lists_every_acl_binding_and_slash_filters_them() {
    let mut h = external_harness(true);
    *h.source.acls.lock().expect("acls") = Ok(some_acls());
    h.press(KeyCode::Char('W'));
    assert_eq!(h.app.screen(), &Screen::Acls);
    assert_draw!("acls_list", h, 120, 24);

    h.press(KeyCode::Char('/'));
    h.chars("alice");
    h.press(KeyCode::Enter);
    let shown: Vec<String> = h
        .app
        .acls
        .as_ref()
        .map(|a| a.rows().iter().map(|r| r.resource_name.clone()).collect())
        .unwrap_or_default();
    assert_eq!(shown, vec!["billing-", "orders"], "only alice's bindings");
    assert_draw!("acls_filtered", h, 120, 24);

    // Esc clears the filter first, then goes back.
    h.press(KeyCode::Esc);
    assert_eq!(h.app.acls.as_ref().map(|a| a.rows().len()), Some(4));
    h.press(KeyCode::Esc);
    assert_eq!(h.app.screen(), &Screen::Dashboard);
    assert!(h.app.acls.is_none());
}

#[test]
fn the_embedded_cluster_says_plainly_that_it_has_no_authorizer() {
    let mut h = harness();
    h.press(KeyCode::Char(':'));
    h.chars("acls");
    h.press(KeyCode::Enter);
    assert_eq!(h.app.screen(), &Screen::Acls);
    assert_draw!("acls_embedded", h, 100, 24);
}

#[test]
fn an_external_cluster_answering_security_disabled_has_no_authorizer() {
    let mut h = external_harness(false);
    *h.source.acls.lock().expect("acls") = Ok(Acls::NoAuthorizer { embedded: false });
    h.press(KeyCode::Char('W'));
    assert_draw!("acls_security_disabled", h, 100, 24);
    *h.source.acls.lock().expect("acls") = Err("DescribeAcls: CLUSTER_AUTHORIZATION_FAILED (31)".into());
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char('W'));
    assert_shows(
        &screen(&mut h, 100, 24),
        &["cannot show the ACLs: DescribeAcls: CLUSTER_AUTHORIZATION_FAILED (31)"],
    );
}

/// A console that can switch between the embedded cluster and two profiles (`prod`
/// read-only), on the embedded one; and where its switch requests go.
fn switching() -> (Harness, mpsc::UnboundedReceiver<String>) {
    let mut h = harness();
    let (tx, rx) = mpsc::unbounded_channel();
    h.console.switch_requests = Some(tx);
    h.console.app.clusters = Some(ClusterChoices {
        names: vec![EMBEDDED.into(), "prod".into(), "staging".into()],
        current: Some(EMBEDDED.into()),
        connecting: None,
        read_only: vec!["prod".into()],
    });
    (h, rx)
}

#[test]
fn k_lists_the_clusters_and_enter_asks_to_switch_to_the_chosen_one() {
    let (mut h, mut requests) = switching();
    h.press(KeyCode::Char('K'));
    assert!(matches!(h.app.overlay(), Some(Overlay::Clusters { cursor: 0, .. })));
    assert_draw!("clusters_list", h, 100, 24);
    h.press(KeyCode::Down);
    h.press(KeyCode::Enter);
    assert_eq!(requests.try_recv().ok().as_deref(), Some("prod"));
    assert!(h.app.overlay().is_none(), "the list closes");
    let connecting = h.app.clusters.as_ref().and_then(|c| c.connecting.clone());
    assert_eq!(connecting.as_deref(), Some("prod"));
    assert_shows(&footer(&mut h), &["connecting to prod…"]);

    // One switch at a time.
    h.press(KeyCode::Char(':'));
    h.chars("cluster staging");
    h.press(KeyCode::Enter);
    assert!(requests.try_recv().is_err());
    assert_shows(&footer(&mut h), &["still connecting to prod"]);
}

#[test]
fn a_failed_switch_keeps_the_console_on_its_cluster_and_says_why() {
    let (mut h, _requests) = switching();
    h.press(KeyCode::Char('K'));
    h.press(KeyCode::Down);
    h.press(KeyCode::Enter);
    let before = Arc::clone(&h.app.view);
    h.console.switched(
        Switched {
            name: "prod".into(),
            result: Err("cannot connect to kafka-1:9092: connection refused".into()),
        },
        now(),
    );
    assert!(Arc::ptr_eq(&before, &h.app.view), "the same cluster's view");
    let choices = h.app.clusters.clone().unwrap_or_default();
    assert_eq!(choices.current.as_deref(), Some(EMBEDDED));
    assert_eq!(choices.connecting, None);
    assert_shows(
        &footer(&mut h),
        &["cannot switch to prod: cannot connect to kafka-1:9092"],
    );
}

#[test]
fn a_switch_starts_the_console_again_on_the_new_cluster() {
    let (mut h, _requests) = switching();
    h.press(KeyCode::Char('W'));
    let prod = RecordingSource::with_capabilities(external_view(), external_capabilities(true));
    h.console.switched(
        Switched {
            name: "prod".into(),
            result: Ok(Arc::clone(&prod) as Arc<dyn ClusterSource>),
        },
        now(),
    );
    assert_eq!(h.app.screen(), &Screen::Dashboard, "back on the dashboard");
    assert!(h.app.acls.is_none());
    assert!(h.app.capabilities.read_only, "the new cluster's capabilities");
    assert_eq!(h.app.view.cluster_name, external_view().cluster_name);
    assert_eq!(
        h.app.clusters.as_ref().and_then(|c| c.current.clone()).as_deref(),
        Some("prod")
    );
    assert_eq!(prod.tails().len(), 1, "the message tail starts on the new cluster");
    let text = screen(&mut h, 120, 40);
    assert_shows(&text, &[&external_view().cluster_name, "switched to prod"]);
}

#[test]
fn cluster_completes_profile_names_and_refuses_unknown_and_current_ones() {
    let (mut h, mut requests) = switching();
    h.press(KeyCode::Char(':'));
    h.chars("cluster st");
    h.press(KeyCode::Tab);
    match h.app.overlay() {
        Some(Overlay::Command(line)) => assert_eq!(line.text, "cluster staging "),
        other => panic!("expected the command line, got {other:?}"),
    }
    h.press(KeyCode::Enter);
    assert_eq!(requests.try_recv().ok().as_deref(), Some("staging"));

    let (mut h, mut requests) = switching();
    h.press(KeyCode::Char(':'));
    h.chars("cluster nope");
    h.press(KeyCode::Enter);
    assert!(requests.try_recv().is_err());
    assert_shows(
        &footer(&mut h),
        &["no cluster nope (clusters: embedded, prod, staging)"],
    );
    h.press(KeyCode::Char(':'));
    h.chars("cluster embedded");
    h.press(KeyCode::Enter);
    assert!(requests.try_recv().is_err());
    assert_shows(&footer(&mut h), &["the console already shows embedded"]);
}

#[test]
fn a_console_without_a_switcher_says_it_cannot_switch() {
    let mut h = harness();
    h.press(KeyCode::Char('K'));
    assert!(h.app.overlay().is_none());
    assert_shows(&footer(&mut h), &["this console cannot switch clusters"]);
}
