//! Configs: DescribeConfigs, IncrementalAlterConfigs and the legacy AlterConfigs, over the
//! engine's config rules (`engine::configs`): a topic's, a broker's (the cluster's, with the
//! broker's own replication throttle rates) and the cluster-wide defaults (the empty broker
//! name, Kafka's `--entity-default`).

use kafka_protocol::messages::alter_configs_response::{
    AlterConfigsResourceResponse as LegacyResourceResponse, AlterConfigsResponse,
};
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResponse, DescribeConfigsResult,
};
use kafka_protocol::messages::incremental_alter_configs_response::{
    AlterConfigsResourceResponse, IncrementalAlterConfigsResponse,
};
use kafka_protocol::messages::{AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest};
use kafka_protocol::protocol::StrBytes;

use super::{Context, str_bytes};
use crate::engine::configs::ConfigError;
use crate::engine::{AlterOp, ConfigAlteration, ConfigEntry, ConfigResource, ConfigSource, ConfigType, ErrorCode};

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;

/// Kafka's `ConfigSource` codes.
fn source_code(source: ConfigSource) -> i8 {
    match source {
        ConfigSource::TopicOverride => 1,
        ConfigSource::DynamicBroker => 2,
        ConfigSource::DynamicClusterDefault => 3,
        ConfigSource::StaticBroker => 4,
        ConfigSource::Default => 5,
    }
}

/// Kafka's `ConfigType` codes (DescribeConfigs v3+).
fn type_code(kind: ConfigType) -> i8 {
    match kind {
        ConfigType::Boolean => 1,
        ConfigType::String => 2,
        ConfigType::Int => 3,
        ConfigType::Long => 5,
        ConfigType::Double => 6,
        ConfigType::List => 7,
    }
}

/// The resource a request names, or why kdeck cannot serve it.
fn resource(ctx: &Context, kind: i8, name: &str) -> Result<ConfigResource, ConfigError> {
    match kind {
        RESOURCE_TOPIC => Ok(ConfigResource::Topic(name.to_string())),
        RESOURCE_BROKER if name.is_empty() => Ok(ConfigResource::ClusterDefault),
        RESOURCE_BROKER => match name.parse::<i32>() {
            Ok(id) if ctx.cluster.metadata().brokers.contains_key(&id) => Ok(ConfigResource::Broker(id)),
            _ => Err((ErrorCode::InvalidRequest, format!("there is no broker {name}"))),
        },
        other => Err((
            ErrorCode::InvalidRequest,
            format!("resource type {other} is not supported by kdeck (only topics and brokers)"),
        )),
    }
}

/// A broker's entries: the cluster's, and the wire listener's own static settings.
fn broker_entries(ctx: &Context, broker: i32, mut entries: Vec<ConfigEntry>) -> Vec<ConfigEntry> {
    let wire = &ctx.config;
    let fixed = |name: &str, value: String, kind: ConfigType| ConfigEntry {
        name: name.to_string(),
        value,
        source: ConfigSource::StaticBroker,
        kind,
        read_only: true,
    };
    entries.extend([
        fixed("broker.id", broker.to_string(), ConfigType::Int),
        fixed(
            "auto.create.topics.enable",
            wire.auto_create_topics.to_string(),
            ConfigType::Boolean,
        ),
        fixed("num.partitions", wire.default_partitions.to_string(), ConfigType::Int),
        fixed(
            "default.replication.factor",
            wire.default_replication_factor.to_string(),
            ConfigType::Int,
        ),
        fixed(
            "socket.request.max.bytes",
            wire.socket_request_max_bytes.to_string(),
            ConfigType::Int,
        ),
    ]);
    entries
}

pub fn describe_configs(ctx: &Context, request: &DescribeConfigsRequest) -> DescribeConfigsResponse {
    let results = request
        .resources
        .iter()
        .map(|r| {
            let name = r.resource_name.to_string();
            let result = DescribeConfigsResult::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone());
            let described = resource(ctx, r.resource_type, &name).and_then(|res| {
                let entries = ctx.cluster.describe_configs(&res)?;
                Ok(match res {
                    ConfigResource::Topic(_) => entries,
                    ConfigResource::Broker(id) => broker_entries(ctx, id, entries),
                    ConfigResource::ClusterDefault => broker_entries(ctx, ctx.broker, entries),
                })
            });
            let entries = match described {
                Ok(entries) => entries,
                Err((code, message)) => {
                    return result
                        .with_error_code(code.code())
                        .with_error_message(Some(str_bytes(message)));
                }
            };
            let keys = r.configuration_keys.as_ref();
            let configs = entries
                .into_iter()
                .filter(|e| keys.is_none_or(|ks| ks.iter().any(|k| k.as_str() == e.name)))
                .map(|e| {
                    DescribeConfigsResourceResult::default()
                        .with_name(str_bytes(e.name))
                        .with_value(Some(str_bytes(e.value)))
                        .with_read_only(e.read_only)
                        // DescribeConfigs v0 has no source, only whether the value is Kafka's default.
                        .with_is_default(e.source == ConfigSource::Default)
                        .with_config_source(source_code(e.source))
                        .with_config_type(type_code(e.kind))
                })
                .collect();
            result.with_configs(configs)
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

/// One resource's incremental alterations, as the engine takes them.
fn alterations(
    configs: impl Iterator<Item = (StrBytes, i8, Option<StrBytes>)>,
) -> Result<Vec<ConfigAlteration>, ConfigError> {
    configs
        .map(|(name, op, value)| {
            let name = name.to_string();
            let value = value.map(|v| v.to_string());
            let op = match (op, value) {
                (1, _) => AlterOp::Delete,
                (0 | 2 | 3, None) => {
                    return Err((
                        ErrorCode::InvalidRequest,
                        format!("Null value not supported for : {name}"),
                    ));
                }
                (0, Some(v)) => AlterOp::Set(v),
                (2, Some(v)) => AlterOp::Append(v),
                (3, Some(v)) => AlterOp::Subtract(v),
                (other, _) => {
                    return Err((
                        ErrorCode::InvalidRequest,
                        format!("unknown config operation {other} for {name}"),
                    ));
                }
            };
            Ok(ConfigAlteration { name, op })
        })
        .collect()
}

async fn alter_one(
    ctx: &Context,
    kind: i8,
    name: &str,
    asked: Result<Vec<ConfigAlteration>, ConfigError>,
    validate_only: bool,
) -> Result<(), ConfigError> {
    let res = resource(ctx, kind, name)?;
    let asked = asked?;
    ctx.cluster.alter_configs(&res, &asked, validate_only).await
}

pub async fn incremental_alter_configs(
    ctx: &Context,
    request: &IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for r in &request.resources {
        let asked = alterations(
            r.configs
                .iter()
                .map(|c| (c.name.clone(), c.config_operation, c.value.clone())),
        );
        let name = r.resource_name.to_string();
        let outcome = alter_one(ctx, r.resource_type, &name, asked, request.validate_only).await;
        let response = AlterConfigsResourceResponse::default()
            .with_resource_type(r.resource_type)
            .with_resource_name(r.resource_name.clone());
        responses.push(match outcome {
            Ok(()) => response,
            Err((code, message)) => response
                .with_error_code(code.code())
                .with_error_message(Some(str_bytes(message))),
        });
    }
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

/// Legacy AlterConfigs replaces the resource's whole set of overrides: what the request
/// names is set, every other override is removed.
pub async fn alter_configs(ctx: &Context, request: &AlterConfigsRequest) -> AlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for r in &request.resources {
        let name = r.resource_name.to_string();
        let asked =
            alterations(r.configs.iter().map(|c| (c.name.clone(), 0, c.value.clone()))).and_then(|mut asked| {
                let res = resource(ctx, r.resource_type, &name)?;
                // A topic's own values, or the cluster's run-time defaults: a topic's entries
                // that come from the cluster's defaults are not the topic's to drop.
                let own = match res {
                    ConfigResource::Topic(_) => ConfigSource::TopicOverride,
                    ConfigResource::Broker(_) => ConfigSource::DynamicBroker,
                    ConfigResource::ClusterDefault => ConfigSource::DynamicClusterDefault,
                };
                let removed: Vec<ConfigAlteration> = ctx
                    .cluster
                    .describe_configs(&res)?
                    .into_iter()
                    .filter(|e| e.source == own && !asked.iter().any(|a| a.name == e.name))
                    .map(|e| ConfigAlteration::delete(e.name))
                    .collect();
                asked.extend(removed);
                Ok(asked)
            });
        let outcome = alter_one(ctx, r.resource_type, &name, asked, request.validate_only).await;
        let response = LegacyResourceResponse::default()
            .with_resource_type(r.resource_type)
            .with_resource_name(r.resource_name.clone());
        responses.push(match outcome {
            Ok(()) => response,
            Err((code, message)) => response
                .with_error_code(code.code())
                .with_error_message(Some(str_bytes(message))),
        });
    }
    AlterConfigsResponse::default().with_responses(responses)
}
