//! Configs on a Kafka cluster: DescribeConfigs (every config with its value and source, as
//! `kafka-configs.sh --describe --all`) and IncrementalAlterConfigs (SET and DELETE, as
//! `kafka-configs.sh --alter --add-config/--delete-config`). A broker's own configs go to that
//! broker; a topic's and the cluster-wide defaults to any broker, which hands them to the
//! controller.

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::{ApiKey, DescribeConfigsRequest, IncrementalAlterConfigsRequest};
use kafka_protocol::protocol::StrBytes;

use super::{kafka_error, version};
use crate::remote::{KafkaClient, RemoteError, Target};
use crate::view::{ConfigOrigin, ConfigRow, ConfigTarget};

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;

/// The resource type, name and the broker to ask for `target`.
fn resource(target: &ConfigTarget) -> (i8, String, Target) {
    match target {
        ConfigTarget::Topic(t) => (RESOURCE_TOPIC, t.clone(), Target::Any),
        ConfigTarget::Broker(id) => (RESOURCE_BROKER, id.to_string(), Target::Broker(*id)),
        ConfigTarget::ClusterDefault => (RESOURCE_BROKER, String::new(), Target::Any),
    }
}

/// Every config of `target`, sorted by name.
pub async fn describe_configs(client: &KafkaClient, target: &ConfigTarget) -> Result<Vec<ConfigRow>, RemoteError> {
    let (kind, name, to) = resource(target);
    version(client, to, ApiKey::DescribeConfigs).await?;
    let request = DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(StrBytes::from_string(name.clone()))
            .with_configuration_keys(None),
    ]);
    let response = client.send(to, request).await?;
    let Some(result) = response.results.into_iter().next() else {
        return Err(RemoteError::Protocol {
            broker: format!("{to:?}"),
            reason: format!("DescribeConfigs answer without {target}"),
        });
    };
    if result.error_code != 0 {
        return Err(kafka_error(
            format!("describing the configs of {target}"),
            result.error_code,
            result.error_message.as_ref(),
        ));
    }
    let mut rows: Vec<ConfigRow> = result
        .configs
        .into_iter()
        .map(|c| ConfigRow {
            name: c.name.to_string(),
            value: if c.is_sensitive {
                None
            } else {
                c.value.map(|v| v.to_string())
            },
            origin: ConfigOrigin::from_kafka(c.config_source),
            read_only: c.read_only,
        })
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}

/// Sets `set` and removes `delete` (back to the default) on `target`, all or nothing;
/// `validate_only` asks the broker to check and change nothing.
pub async fn incremental_alter_configs(
    client: &KafkaClient,
    target: &ConfigTarget,
    set: &[(String, String)],
    delete: &[String],
    validate_only: bool,
) -> Result<(), RemoteError> {
    let (kind, name, to) = resource(target);
    version(client, to, ApiKey::IncrementalAlterConfigs).await?;
    let configs = set
        .iter()
        .map(|(k, v)| {
            AlterableConfig::default()
                .with_name(StrBytes::from_string(k.clone()))
                .with_config_operation(OP_SET)
                .with_value(Some(StrBytes::from_string(v.clone())))
        })
        .chain(delete.iter().map(|k| {
            AlterableConfig::default()
                .with_name(StrBytes::from_string(k.clone()))
                .with_config_operation(OP_DELETE)
                .with_value(None)
        }))
        .collect();
    let request = IncrementalAlterConfigsRequest::default()
        .with_validate_only(validate_only)
        .with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(kind)
                .with_resource_name(StrBytes::from_string(name))
                .with_configs(configs),
        ]);
    let response = client.send(to, request).await?;
    let Some(result) = response.responses.into_iter().next() else {
        return Err(RemoteError::Protocol {
            broker: format!("{to:?}"),
            reason: format!("IncrementalAlterConfigs answer without {target}"),
        });
    };
    if result.error_code != 0 {
        return Err(kafka_error(
            format!("altering the configs of {target}"),
            result.error_code,
            result.error_message.as_ref(),
        ));
    }
    Ok(())
}
