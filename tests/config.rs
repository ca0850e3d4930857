//! The configuration file: defaults merged with the user's file key by key, and mistakes
//! reported at their file, line and column.

use kdeck::config::{ConfigError, KdeckConfig};
use kdeck::tui::keymap::{Binding, Keymap, parse_key};

fn error(text: &str) -> String {
    KdeckConfig::from_layers(Some(("my.toml", text)))
        .map(|_| ())
        .expect_err("the file is refused")
        .to_string()
}

#[test]
fn user_values_override_the_defaults_key_by_key() {
    let config = KdeckConfig::from_layers(Some((
        "my.toml",
        "[cluster]\nbrokers = 5\n\n[console]\nconfirm_destructive = false\n\n[keys]\nkill_broker = [\"K\"]\n",
    )))
    .expect("valid");
    let defaults = KdeckConfig::from_layers(None).expect("the defaults load");
    assert_eq!(config.cluster.brokers, 5);
    assert_eq!(
        config.cluster.replica_lag_time_max_ms,
        defaults.cluster.replica_lag_time_max_ms
    );
    assert!(!config.console.confirm_destructive);
    assert_eq!(config.console.refresh_ms, defaults.console.refresh_ms);
    assert_eq!(config.keys[&Binding::KillBroker], vec![parse_key("K").expect("a key")]);
    assert_eq!(config.keys[&Binding::Quit], defaults.keys[&Binding::Quit]);
    assert_eq!(config.log, defaults.log);
}

#[test]
fn a_malformed_file_is_placed_at_its_line_and_column() {
    let message = error("[console]\nrefresh_ms = = 3\n");
    assert!(message.starts_with("my.toml:2:"), "{message}");
}

#[test]
fn an_unknown_key_is_named_with_its_position() {
    let message = error("[console]\nrefresh_ms = 100\nrefrsh = 3\n");
    assert!(message.starts_with("my.toml:3:1:"), "{message}");
    assert!(message.contains("refrsh"), "{message}");
}

#[test]
fn a_wrong_type_is_named_with_its_position() {
    let message = error("[cluster]\nbrokers = \"three\"\n");
    assert!(message.starts_with("my.toml:2:11:"), "{message}");
    assert!(message.contains("three") || message.contains("string"), "{message}");
}

#[test]
fn an_unknown_section_is_refused() {
    let message = error("[consle]\nmouse = true\n");
    assert!(message.starts_with("my.toml:1:"), "{message}");
    assert!(message.contains("consle"), "{message}");
}

#[test]
fn a_missing_explicit_file_is_an_error_naming_it() {
    let path = std::path::Path::new("/nonexistent/kdeck.toml");
    match KdeckConfig::load(Some(path)) {
        Err(ConfigError::Read { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected a read error, got {other:?}"),
    }
}

#[test]
fn a_bad_key_or_an_unknown_action_in_keys_is_placed() {
    let message = error("[keys]\nkill_broker = [\"hyper-x\"]\n");
    assert!(message.starts_with("my.toml:2:"), "{message}");
    assert!(message.contains("hyper-x"), "{message}");
    let message = error("[keys]\nkil_broker = [\"x\"]\n");
    assert!(message.starts_with("my.toml:2:1:"), "{message}");
    assert!(
        message.contains("kil_broker") && message.contains("kill_broker"),
        "{message}"
    );
}

#[test]
fn a_key_taken_from_another_action_is_an_error_naming_both() {
    // `x` kills a broker by default: giving it to `follow` as well is ambiguous.
    let config = KdeckConfig::from_layers(Some(("my.toml", "[keys]\nfollow = [\"x\"]\n"))).expect("parses");
    let message = Keymap::from_config(&config.keys).map(|_| ()).unwrap_err().to_string();
    assert!(
        message.contains("kill_broker") && message.contains("follow") && message.contains("x"),
        "{message}"
    );
    // Moving kill_broker away first makes it fine; an empty list unbinds.
    let config = KdeckConfig::from_layers(Some((
        "my.toml",
        "[keys]\nfollow = [\"x\"]\nkill_broker = [\"ctrl-k\"]\npause_broker = []\n",
    )))
    .expect("parses");
    let keymap = Keymap::from_config(&config.keys).expect("no conflict");
    assert_eq!(keymap.hint(Binding::Follow), "x");
    assert_eq!(keymap.hint(Binding::PauseBroker), "-");
}

#[test]
fn a_theme_that_does_not_exist_is_a_clear_error() {
    let config = KdeckConfig::from_layers(Some(("my.toml", "[console]\ntheme = \"solarised\"\n"))).expect("parses");
    let message = kdeck::tui::check_config(&config).map(|_| ()).unwrap_err().to_string();
    assert!(
        message.contains("solarised") && message.contains("high-contrast"),
        "{message}"
    );
}

#[test]
fn a_console_layout_that_does_not_exist_is_placed_at_its_line_and_column() {
    let err = KdeckConfig::from_layers(Some(("my.toml", "[console]\nlayout = \"big\"\n")))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("my.toml:2:10:"), "{err}");
    assert!(err.contains("normal") && err.contains("projector"), "{err}");
    let config = KdeckConfig::from_layers(Some(("my.toml", "[console]\nlayout = \"projector\"\n"))).expect("parses");
    assert_eq!(config.console.layout, kdeck::config::Presentation::Projector);
}

const PROFILES: &str = r#"
[remote]
client_id = "ops-console"

[clusters.staging]
bootstrap = "kafka-staging:9092"

[clusters.prod]
bootstrap = "kafka-1:9093,kafka-2:9093"
read_only = true
tls = { enabled = true, ca_file = "ca.pem" }
sasl = { mechanism = "SCRAM-SHA-512", username = "alice" }
"#;

#[test]
fn cluster_profiles_carry_bootstrap_tls_sasl_and_read_only_over_the_remote_settings() {
    let config = KdeckConfig::from_layers(Some(("my.toml", PROFILES))).expect("valid");
    assert_eq!(config.profile_names(), vec!["prod", "staging"]);
    let prod = config.profile("prod").expect("a profile");
    assert_eq!(prod.bootstrap, "kafka-1:9093,kafka-2:9093");
    assert!(prod.tls.enabled);
    assert_eq!(prod.tls.ca_file, "ca.pem");
    assert!(prod.tls.verify, "unset TLS keys keep their defaults");
    assert_eq!(prod.sasl.mechanism, "SCRAM-SHA-512");
    assert_eq!(
        prod.client_id, "ops-console",
        "the client's other settings are [remote]'s"
    );
    assert!(config.clusters["prod"].read_only);
    let staging = config.profile("staging").expect("a profile");
    assert!(!staging.tls.enabled && staging.sasl.mechanism.is_empty());
    assert!(!config.clusters["staging"].read_only);
}

#[test]
fn an_unknown_profile_is_an_error_listing_the_known_ones() {
    let config = KdeckConfig::from_layers(Some(("my.toml", PROFILES))).expect("valid");
    let error = config.profile("stagin").expect_err("unknown");
    assert!(
        error.contains("\"stagin\"") && error.contains("prod, staging"),
        "{error}"
    );
    let none = KdeckConfig::from_layers(None).expect("the defaults load");
    let error = none.profile("prod").expect_err("no profiles at all");
    assert!(error.contains("no [clusters.NAME]"), "{error}");
}

#[test]
fn a_bad_profile_table_is_placed_at_its_line_and_column() {
    let message = error("[clusters.prod]\nbootstrap = \"k:9092\"\nbootstarp = \"k:9093\"\n");
    assert!(message.starts_with("my.toml:3:1:"), "{message}");
    assert!(message.contains("bootstarp"), "{message}");
    let message = error("[clusters.prod]\nbootstrap = \"k:9092\"\n[clusters.prod.tls]\nenabled = \"yes\"\n");
    assert!(message.starts_with("my.toml:4:11:"), "{message}");
    let message = error("[clusters.prod]\nread_only = true\n");
    assert!(message.starts_with("my.toml:1:"), "{message}");
    assert!(message.contains("bootstrap"), "{message}");
}
