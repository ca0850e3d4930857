//! Trainer mode's scenarios: each Kafka concept as a repeatable, explained story that runs
//! on the real engine. The scenarios shipped with kdeck live in `assets/scenarios/` and are
//! compiled in; users add their own as `*.toml` in a directory.
//!
//! - [`format`]: the file format (setup, steps, checks, translations);
//! - [`target`]: brokers named by role ("the leader of orders-0");
//! - [`check`]: what `wait_until` and `expect` evaluate against the view;
//! - [`workload`]: a scenario's producers and consumer groups, and what they count;
//! - [`player`]: steps run against a cluster source, in order, with their outcomes;
//! - [`validate`]: a file checked when it loads, each problem at its line and column.

pub mod check;
pub mod driver;
pub mod format;
pub mod headless;
pub mod player;
pub mod target;
pub mod validate;
pub mod workload;

use std::path::Path;

use anyhow::{Context, Result, bail};

pub use format::Scenario;

/// The scenarios shipped with kdeck, in teaching order: (file name, text).
pub const SHIPPED: &[(&str, &str)] = &[
    ("leader-crash", include_str!("../../assets/scenarios/leader-crash.toml")),
    ("second-crash", include_str!("../../assets/scenarios/second-crash.toml")),
    (
        "unclean-election",
        include_str!("../../assets/scenarios/unclean-election.toml"),
    ),
    (
        "slow-follower",
        include_str!("../../assets/scenarios/slow-follower.toml"),
    ),
    (
        "controlled-shutdown",
        include_str!("../../assets/scenarios/controlled-shutdown.toml"),
    ),
    (
        "preferred-leader",
        include_str!("../../assets/scenarios/preferred-leader.toml"),
    ),
    (
        "balanced-election",
        include_str!("../../assets/scenarios/balanced-election.toml"),
    ),
    (
        "group-rebalance",
        include_str!("../../assets/scenarios/group-rebalance.toml"),
    ),
    ("consumer-lag", include_str!("../../assets/scenarios/consumer-lag.toml")),
    ("keyed-order", include_str!("../../assets/scenarios/keyed-order.toml")),
    (
        "coordinator-failover",
        include_str!("../../assets/scenarios/coordinator-failover.toml"),
    ),
    (
        "diverged-follower",
        include_str!("../../assets/scenarios/diverged-follower.toml"),
    ),
    (
        "leader-isolated",
        include_str!("../../assets/scenarios/leader-isolated.toml"),
    ),
    (
        "controller-failover",
        include_str!("../../assets/scenarios/controller-failover.toml"),
    ),
];

/// Every shipped scenario, parsed; a broken shipped file is a bug the tests catch.
pub fn shipped() -> Result<Vec<Scenario>> {
    SHIPPED
        .iter()
        .map(|(name, text)| load_text(&format!("assets/scenarios/{name}.toml"), name, text))
        .collect()
}

fn load_text(path: &str, name: &str, text: &str) -> Result<Scenario> {
    Ok(validate::load(path, name, text)?)
}

/// The user's scenarios in `dir` (`*.toml`), each checked.
pub fn from_dir(dir: &Path) -> Result<Vec<Scenario>> {
    let mut out = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("reading the scenario directory {}", dir.display()))?;
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        out.push(load_text(&path.display().to_string(), name, &text)?);
    }
    Ok(out)
}

/// Reads and checks one scenario file (`kdeck scenario check`).
pub fn check_file(path: &Path) -> Result<()> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    load_text(&path.display().to_string(), stem, &text).map(|_| ())
}

/// The scenario called `name`: a shipped one, one in `dir`, or a file path.
pub fn find(name: &str, dir: Option<&Path>) -> Result<Scenario> {
    let path = Path::new(name);
    if name.ends_with(".toml") && path.is_file() {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {name}"))?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        return load_text(name, stem, &text);
    }
    if let Some(dir) = dir
        && dir.is_dir()
        && let Some(s) = from_dir(dir)?.into_iter().find(|s| s.name == name)
    {
        return Ok(s);
    }
    if let Some((file, text)) = SHIPPED.iter().find(|(n, _)| *n == name) {
        return load_text(&format!("assets/scenarios/{file}.toml"), file, text);
    }
    let known: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
    bail!("no scenario \"{name}\"; shipped: {}", known.join(", "))
}

/// `kdeck/scenarios/` in the platform configuration directory.
pub fn user_dir() -> Option<std::path::PathBuf> {
    dirs::config_dir().map(|d| d.join("kdeck").join("scenarios"))
}
