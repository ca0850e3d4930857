//! `assets/kdeck.toml` documents the defaults; it must say what the code does.

use kdeck::config::{ConsoleConfig, KdeckConfig, KeysConfig};
use kdeck::engine::ClusterConfig;
use kdeck::storage::LogConfig;
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
    let keys: KeysConfig = table
        .get("keys")
        .expect("a [keys] section")
        .clone()
        .try_into()
        .expect("[keys] is a valid key config");
    assert_eq!(keys, KeysConfig::default());
}

#[test]
fn the_whole_documented_file_is_the_default_configuration() {
    let loaded = KdeckConfig::from_layers(None).expect("the defaults load");
    assert_eq!(loaded, KdeckConfig::default());
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
