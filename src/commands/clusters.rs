//! `kdeck clusters`: the configuration's cluster profiles (`[clusters.NAME]`), one line each:
//! name, bootstrap servers and how kdeck connects (TLS, SASL, read-only). Passwords are never
//! printed.

use crate::config::{ClusterProfile, KdeckConfig};

/// The table `kdeck clusters` prints; a sentence when there is no profile.
pub fn lines(config: &KdeckConfig) -> Vec<String> {
    if config.clusters.is_empty() {
        return vec!["no cluster profiles: add [clusters.NAME] tables with a bootstrap to the configuration".into()];
    }
    let name_width = config
        .clusters
        .keys()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let bootstrap_width = config
        .clusters
        .values()
        .map(|p| p.bootstrap.chars().count())
        .max()
        .unwrap_or(0)
        .max(9);
    let mut lines = vec![format!(
        "{:name_width$}  {:bootstrap_width$}  CONNECTION",
        "NAME", "BOOTSTRAP"
    )];
    for (name, profile) in &config.clusters {
        lines.push(format!(
            "{name:name_width$}  {:bootstrap_width$}  {}",
            profile.bootstrap,
            connection(profile)
        ));
    }
    lines
}

/// `plaintext`, `TLS`, `SASL SCRAM-SHA-512 as alice`, with `, read-only` when it is.
fn connection(profile: &ClusterProfile) -> String {
    let mut parts = Vec::new();
    if profile.tls.enabled {
        parts.push("TLS".to_string());
    }
    if !profile.sasl.mechanism.is_empty() {
        parts.push(format!("SASL {} as {}", profile.sasl.mechanism, profile.sasl.username));
    }
    if parts.is_empty() {
        parts.push("plaintext".into());
    }
    let mut text = parts.join(", ");
    if profile.read_only {
        text.push_str(", read-only");
    }
    text
}
