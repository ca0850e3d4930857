//! The TOML configuration: `assets/kdeck.toml` holds the documented defaults, a user's file
//! (`--config FILE`, else `kdeck/kdeck.toml` in the platform config directory) overrides them
//! key by key. Errors name the file, line and column and the offending key or value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub mod keys;

use crate::engine::ClusterConfig;
use crate::remote::{RemoteConfig, SaslConfig, TlsConfig};
use crate::storage::LogConfig;
use crate::wire::WireConfig;
use crate::workload::DemoConfig;
pub use keys::KeysConfig;

/// The documented defaults, compiled in.
pub const DEFAULTS: &str = include_str!("../assets/kdeck.toml");

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KdeckConfig {
    pub log: LogConfig,
    pub cluster: ClusterConfig,
    pub demo: DemoConfig,
    pub console: ConsoleConfig,
    pub keys: KeysConfig,
    pub wire: WireConfig,
    pub remote: RemoteConfig,
    /// `[clusters.NAME]`: named connection profiles (`kdeck --cluster NAME`, the console's
    /// cluster switcher), by name.
    pub clusters: BTreeMap<String, ClusterProfile>,
}

/// `[clusters.NAME]`: one external cluster by name, with how to reach it. The client's
/// other settings (client id, timeouts, backoffs) are `[remote]`'s.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterProfile {
    /// `host:port[,host:port...]`.
    pub bootstrap: String,
    #[serde(default)]
    pub tls: TlsConfig,
    #[serde(default)]
    pub sasl: SaslConfig,
    /// Offer no action that changes this cluster (as `--read-only`).
    #[serde(default)]
    pub read_only: bool,
}

/// `[console]`: how the console looks and behaves.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsoleConfig {
    /// The name in the header.
    pub cluster_name: String,
    /// How often a new cluster view is taken, in ms.
    pub refresh_ms: u64,
    /// Ask before killing, stopping or pausing a broker and before deleting a topic.
    pub confirm_destructive: bool,
    /// Capture the mouse (wheel scrolls, click focuses a pane); it disables the terminal's
    /// own text selection, hence off by default.
    pub mouse: bool,
    /// Records kept by a message tail.
    pub tail_capacity: usize,
    /// A new tail starts this many records before the end of each partition.
    pub tail_start_last: i64,
    /// Events kept for the timeline.
    pub event_history: usize,
    /// How long a changed cell stays highlighted, in ms.
    pub flash_ms: u64,
    /// The colour theme: `auto` (the default colours, high contrast in the projector
    /// layout), a name from `assets/themes/` (`default`, `high-contrast`, `monochrome`), or
    /// the path of a theme file. `NO_COLOR` always means `monochrome`.
    pub theme: String,
    /// `normal`, or `projector`: fewer, bigger, more spaced items for a room.
    pub layout: Presentation,
}

/// How the dashboard presents itself: `[console] layout`; the console draws it and switches
/// it live by a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Presentation {
    #[default]
    Normal,
    /// For a room, read from a distance: at most two panes side by side, only their
    /// essential columns, a blank line between rows and wider glyphs. A terminal cannot
    /// change its font size: fewer, more spaced, bolder items are what "large" can mean.
    Projector,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        ConsoleConfig {
            cluster_name: "kdeck".into(),
            refresh_ms: 250,
            confirm_destructive: true,
            mouse: false,
            tail_capacity: 1000,
            tail_start_last: 50,
            event_history: 500,
            flash_ms: 2000,
            theme: "auto".into(),
            layout: Presentation::Normal,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    // Not a `source`: the message already says it, and `{:#}` would print it twice.
    #[error("cannot read the configuration file {path}: {error}")]
    Read { path: PathBuf, error: std::io::Error },
    #[error("{path}:{line}:{column}: {message}")]
    Invalid {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Unplaced { path: String, message: String },
}

impl KdeckConfig {
    /// The defaults merged with `explicit` when given (it must exist), else with the user's
    /// platform config file when there is one.
    pub fn load(explicit: Option<&Path>) -> Result<KdeckConfig, ConfigError> {
        let path = match explicit {
            Some(p) => Some(p.to_path_buf()),
            None => user_config_path().filter(|p| p.is_file()),
        };
        match path {
            None => KdeckConfig::from_layers(None),
            Some(path) => {
                let text = std::fs::read_to_string(&path).map_err(|error| ConfigError::Read {
                    path: path.clone(),
                    error,
                })?;
                KdeckConfig::from_layers(Some((&path.display().to_string(), &text)))
            }
        }
    }

    /// The defaults, overridden per key by `user` (its name for messages, and its text).
    pub fn from_layers(user: Option<(&str, &str)>) -> Result<KdeckConfig, ConfigError> {
        let mut merged = parse_table("assets/kdeck.toml", DEFAULTS)?;
        if let Some((name, text)) = user {
            // Deserializing the user's file alone first places every mistake at its line and
            // column; the merged table has no positions left.
            toml::from_str::<KdeckConfig>(text).map_err(|e| placed(name, text, &e))?;
            merge(&mut merged, parse_table(name, text)?);
        }
        let name = user.map_or("assets/kdeck.toml", |(n, _)| n);
        merged.try_into().map_err(|e: toml::de::Error| ConfigError::Unplaced {
            path: name.to_string(),
            message: e.message().to_string(),
        })
    }

    /// The client settings of profile `name`: `[remote]` with the profile's bootstrap, TLS
    /// and SASL. An unknown name is an error listing the known ones.
    pub fn profile(&self, name: &str) -> Result<RemoteConfig, String> {
        let profile = self.clusters.get(name).ok_or_else(|| self.unknown_profile(name))?;
        Ok(RemoteConfig {
            bootstrap: profile.bootstrap.clone(),
            tls: profile.tls.clone(),
            sasl: profile.sasl.clone(),
            ..self.remote.clone()
        })
    }

    /// The profiles' names, in order.
    pub fn profile_names(&self) -> Vec<String> {
        self.clusters.keys().cloned().collect()
    }

    fn unknown_profile(&self, name: &str) -> String {
        if self.clusters.is_empty() {
            format!("no cluster profile {name:?}: the configuration has no [clusters.NAME] tables")
        } else {
            format!(
                "no cluster profile {name:?}; the configuration has: {}",
                self.profile_names().join(", ")
            )
        }
    }

    /// The cluster settings with the `[log]` defaults in place.
    pub fn cluster_config(&self) -> ClusterConfig {
        ClusterConfig {
            log: self.log.clone(),
            ..self.cluster.clone()
        }
    }
}

/// `kdeck/kdeck.toml` in the platform configuration directory.
pub fn user_config_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("kdeck").join("kdeck.toml"))
}

fn parse_table(name: &str, text: &str) -> Result<toml::Table, ConfigError> {
    text.parse::<toml::Table>().map_err(|e| placed(name, text, &e))
}

/// A TOML error placed at its file, line and column (when it has a position).
pub fn placed(name: &str, text: &str, error: &toml::de::Error) -> ConfigError {
    let message = error.message().trim().to_string();
    match error.span() {
        Some(span) => {
            let (line, column) = line_column(text, span.start);
            ConfigError::Invalid {
                path: name.to_string(),
                line,
                column,
                message,
            }
        }
        None => ConfigError::Unplaced {
            path: name.to_string(),
            message,
        },
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// Overrides `base` with `over` key by key; tables merge, everything else is replaced.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters_from_one() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        assert_eq!(line_column(text, 10), (2, 4));
    }
}
