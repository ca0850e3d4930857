//! `assets/kdeck.toml` documents the defaults; it must say what the code does.

use kdeck::config::{ConsoleConfig, KdeckConfig};
use kdeck::engine::ClusterConfig;
use kdeck::storage::LogConfig;
use kdeck::tui::keymap::{Binding, Keymap};
use kdeck::workload::DemoConfig;

#[test]
fn the_documented_log_defaults_are_the_real_ones() {
    let text = include_str!("../assets/kdeck.toml");
    let table: toml::Table = toml::from_str(text).expect("assets/kdeck.toml parses");
    let log: LogConfig = table
        .get("log")
        .expect("a [log] section")
        .clone()
        .try_into()
        .expect("[log] is a valid log config");
    assert_eq!(log, LogConfig::default());
}

#[test]
fn the_documented_cluster_defaults_are_the_real_ones() {
    let text = include_str!("../assets/kdeck.toml");
    let table: toml::Table = toml::from_str(text).expect("assets/kdeck.toml parses");
    let cluster: ClusterConfig = table
        .get("cluster")
        .expect("a [cluster] section")
        .clone()
        .try_into()
        .expect("[cluster] is a valid cluster config");
    assert_eq!(cluster, ClusterConfig::default());
}

#[test]
fn the_documented_demo_defaults_are_the_real_ones() {
    let text = include_str!("../assets/kdeck.toml");
    let table: toml::Table = toml::from_str(text).expect("assets/kdeck.toml parses");
    let demo: DemoConfig = table
        .get("demo")
        .expect("a [demo] section")
        .clone()
        .try_into()
        .expect("[demo] is a valid demo config");
    assert_eq!(demo, DemoConfig::default());
}

#[test]
fn the_documented_console_and_key_defaults_are_the_real_ones() {
    let text = include_str!("../assets/kdeck.toml");
    let table: toml::Table = toml::from_str(text).expect("assets/kdeck.toml parses");
    let console: ConsoleConfig = table
        .get("console")
        .expect("a [console] section")
        .clone()
        .try_into()
        .expect("[console] is a valid console config");
    assert_eq!(console, ConsoleConfig::default());
}

#[test]
fn every_action_has_a_documented_key_and_no_key_does_two_things() {
    // The keys' defaults live only in assets/kdeck.toml: there is no copy in the code.
    let loaded = KdeckConfig::from_layers(None).expect("the defaults load");
    for binding in Binding::ALL {
        assert!(
            loaded.keys.get(&binding).is_some_and(|k| !k.is_empty()),
            "{binding} has no key in assets/kdeck.toml"
        );
    }
    Keymap::from_config(&loaded.keys).expect("the default keys do not conflict");
}

#[test]
fn the_whole_documented_file_is_the_default_configuration() {
    let loaded = KdeckConfig::from_layers(None).expect("the defaults load");
    let no_keys = KdeckConfig {
        keys: Default::default(),
        ..loaded
    };
    assert_eq!(no_keys, KdeckConfig::default());
}

#[test]
fn the_documented_wire_defaults_are_the_real_ones() {
    let text = include_str!("../assets/kdeck.toml");
    let table: toml::Table = toml::from_str(text).expect("assets/kdeck.toml parses");
    let wire: kdeck::wire::WireConfig = table
        .get("wire")
        .expect("a [wire] section")
        .clone()
        .try_into()
        .expect("[wire] is a valid wire config");
    assert_eq!(wire, kdeck::wire::WireConfig::default());
}

#[test]
fn the_documented_remote_defaults_are_the_real_ones() {
    let text = include_str!("../assets/kdeck.toml");
    let table: toml::Table = toml::from_str(text).expect("assets/kdeck.toml parses");
    let remote: kdeck::remote::RemoteConfig = table
        .get("remote")
        .expect("a [remote] section")
        .clone()
        .try_into()
        .expect("[remote] is a valid remote config");
    assert_eq!(remote, kdeck::remote::RemoteConfig::default());
}
