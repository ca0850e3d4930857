//! `kdeck configs describe|alter`: a topic's configs, a broker's, or the cluster-wide broker
//! defaults, as kafka-configs.sh shows and changes them (DescribeConfigs,
//! IncrementalAlterConfigs).

use anyhow::{Result, bail};

use super::Output;
use crate::cli::{ConfigsAction, ConfigsArgs, ConfigsEntity};
use crate::remote::KafkaClient;
use crate::remote::ops;
use crate::view::ConfigTarget;

pub(crate) async fn run(args: &ConfigsArgs, client: &KafkaClient, out: &mut Output) -> Result<()> {
    match &args.action {
        ConfigsAction::Describe { entity, overrides } => {
            let target = target(entity)?;
            let rows = ops::describe_configs(client, &target).await?;
            let rows: Vec<_> = rows
                .into_iter()
                .filter(|r| !*overrides || r.origin.is_override())
                .collect();
            let width = rows.iter().map(|r| r.name.chars().count()).max().unwrap_or(0);
            for r in rows {
                let value = r.value.as_deref().unwrap_or("(sensitive)");
                out.line(&format!(
                    "{:<width$}  {value}  source={}{}",
                    r.name,
                    r.origin.kafka_name(),
                    if r.read_only { "  read-only" } else { "" }
                ))?;
            }
            Ok(())
        }
        ConfigsAction::Alter {
            entity,
            add_config,
            delete_config,
            validate_only,
        } => {
            let target = target(entity)?;
            let mut set = Vec::new();
            for arg in add_config {
                set.extend(parse_add_config(arg)?);
            }
            let delete: Vec<String> = delete_config
                .iter()
                .map(|k| k.trim().to_string())
                .filter(|k| !k.is_empty())
                .collect();
            if set.is_empty() && delete.is_empty() {
                bail!("nothing to change: give --add-config k=v or --delete-config k");
            }
            ops::incremental_alter_configs(client, &target, &set, &delete, *validate_only).await?;
            let verb = if *validate_only { "would alter" } else { "altered" };
            eprintln!("kdeck: {verb} the configs of {target}");
            Ok(())
        }
    }
}

fn target(entity: &ConfigsEntity) -> Result<ConfigTarget> {
    Ok(match (&entity.topic, entity.broker, entity.broker_defaults) {
        (Some(topic), None, false) => ConfigTarget::Topic(topic.clone()),
        (None, Some(id), false) => ConfigTarget::Broker(id),
        (None, None, true) => ConfigTarget::ClusterDefault,
        _ => bail!("give exactly one of --topic, --broker, --broker-defaults"),
    })
}

/// `k=v[,k2=v2]` as kafka-configs.sh reads it: pairs split at commas outside square
/// brackets; a bracketed value keeps its commas (`cleanup.policy=[compact,delete]`).
fn parse_add_config(arg: &str) -> Result<Vec<(String, String)>> {
    let mut pairs = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let mut parts = Vec::new();
    for (i, c) in arg.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&arg[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&arg[start..]);
    for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        let Some((key, value)) = part.split_once('=') else {
            bail!("--add-config takes k=v pairs, not {part:?}");
        };
        let value = value.trim();
        let value = value
            .strip_prefix('[')
            .and_then(|v| v.strip_suffix(']'))
            .unwrap_or(value);
        if key.trim().is_empty() {
            bail!("--add-config takes k=v pairs, not {part:?}");
        }
        pairs.push((key.trim().to_string(), value.to_string()));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::parse_add_config;

    #[test]
    fn add_config_splits_pairs_at_commas_outside_brackets() {
        let pairs = parse_add_config("retention.ms=1000,cleanup.policy=[compact,delete]").expect("parses");
        assert_eq!(
            pairs,
            vec![
                ("retention.ms".to_string(), "1000".to_string()),
                ("cleanup.policy".to_string(), "compact,delete".to_string())
            ]
        );
        assert!(parse_add_config("retention.ms").is_err());
    }
}
