//! The command runner: each console command performed on the embedded cluster (or on the
//! traffic that steers it), answered with the view's sentence for what happened.

use std::time::Duration;

use anyhow::{Result, bail};
use bytes::Bytes;

use super::Shared;
use crate::client::producer::{Producer, ProducerConfig, ProducerRecord};
use crate::engine::{
    ConfigAlteration, ConfigResource, ConfigSource, ErrorCode, LinkFault, NodeId, TopicConfig, TopicPartition,
};
use crate::kafka::reassign::{Assignment, Plan, Throttle, ThrottleTarget};
use crate::kafka::screaming_snake;
use crate::storage::CleanupPolicy;
use crate::view::configs::ConfigsAnswer;
use crate::view::outcome::{self, Elected};
use crate::view::{Command, ConfigOrigin, ConfigRow, ConfigTarget, LinkState};
use crate::workload::Workload;

impl Shared {
    /// The configs of `target` as the engine has them now (what DescribeConfigs answers).
    pub(super) fn describe_configs(&self, target: &ConfigTarget) -> ConfigsAnswer {
        let resource = match target {
            ConfigTarget::Topic(t) => ConfigResource::Topic(t.clone()),
            ConfigTarget::Broker(id) => ConfigResource::Broker(*id),
            ConfigTarget::ClusterDefault => ConfigResource::ClusterDefault,
        };
        let entries = self
            .cluster
            .describe_configs(&resource)
            .map_err(|(_, message)| message)?;
        Ok(entries
            .into_iter()
            .map(|e| ConfigRow {
                name: e.name,
                value: Some(e.value),
                origin: match e.source {
                    ConfigSource::TopicOverride => ConfigOrigin::Topic,
                    ConfigSource::DynamicBroker => ConfigOrigin::Broker,
                    ConfigSource::DynamicClusterDefault => ConfigOrigin::Cluster,
                    ConfigSource::StaticBroker => ConfigOrigin::Static,
                    ConfigSource::Default => ConfigOrigin::Default,
                },
                read_only: e.read_only,
            })
            .collect())
    }

    /// The running demo, which takes the workload commands when no scenario's traffic
    /// steers the cluster.
    async fn demo_workload(&self) -> Result<tokio::sync::MappedMutexGuard<'_, Workload>> {
        let slot = self.workload.lock().await;
        match tokio::sync::MutexGuard::try_map(slot, Option::as_mut) {
            Ok(workload) => Ok(workload),
            Err(_) if self.demo.is_some() => bail!(outcome::DEMO_NOT_RUNNING),
            Err(_) => bail!(outcome::NO_WORKLOAD),
        }
    }

    async fn producer(&self) -> Result<&Producer> {
        self.producer
            .get_or_try_init(|| async {
                let config = ProducerConfig {
                    request_timeout_ms: 5_000,
                    delivery_timeout_ms: 15_000,
                    ..ProducerConfig::default()
                };
                Producer::new(self.cluster.clone(), config).await
            })
            .await
    }

    /// Performs a console command; the sentence says what happened.
    pub(super) async fn execute(&self, command: &Command) -> Result<String> {
        let cluster = &self.cluster;
        match command {
            Command::Produce(request) => {
                let record = ProducerRecord {
                    topic: request.topic.clone(),
                    partition: request.partition,
                    key: request.key.clone().map(Bytes::from),
                    value: Some(Bytes::from(request.value.clone())),
                    headers: request
                        .headers
                        .iter()
                        .map(|(k, v)| (k.clone(), Some(Bytes::from(v.clone()))))
                        .collect(),
                    timestamp: None,
                };
                let meta = self.producer().await?.send(record).await?;
                Ok(outcome::produced(&meta.topic, meta.partition, meta.offset))
            }
            Command::KillBroker(id) => {
                let hosted_controller = cluster.controller() == Some(*id);
                cluster.kill(*id)?;
                let config = cluster.config();
                Ok(if hosted_controller {
                    outcome::controller_broker_killed(
                        *id,
                        config.controller_failover_ms,
                        config.broker_session_timeout_ms,
                    )
                } else {
                    outcome::broker_killed(*id, config.broker_session_timeout_ms)
                })
            }
            Command::StopBroker(id) => {
                cluster.stop(*id).await?;
                Ok(outcome::broker_stopped(*id))
            }
            Command::StartBroker(id) => {
                cluster.start_broker(*id)?;
                Ok(outcome::broker_starting(*id))
            }
            Command::PauseBroker(id) => {
                cluster.pause(*id)?;
                Ok(outcome::broker_paused(*id))
            }
            Command::ResumeBroker(id) => {
                cluster.resume(*id)?;
                Ok(outcome::broker_resumed(*id))
            }
            Command::AddBroker => {
                let id = cluster.add_broker()?;
                self.wire_sync().await;
                Ok(outcome::broker_added(id))
            }
            Command::DecommissionBroker(id) => {
                let replicas = cluster.decommission(*id).await?;
                Ok(outcome::decommission_started(*id, replicas))
            }
            Command::ElectPreferredLeaders { topic } => {
                let results = cluster
                    .elect_preferred_leaders(|tp| topic.as_ref().is_none_or(|t| &tp.topic == t))
                    .await?;
                Ok(outcome::preferred_election(results.iter().map(|(tp, e)| match e {
                    ErrorCode::None => Elected::Moved,
                    ErrorCode::ElectionNotNeeded => Elected::Already,
                    e => Elected::Failed(format!("{tp}: {e:?}")),
                })))
            }
            Command::ReassignThrottled { moves, throttle } => {
                let current: Vec<Assignment> = cluster
                    .metadata()
                    .partitions()
                    .map(|(tp, p)| Assignment::new(tp.topic, tp.partition, p.replicas.clone()))
                    .collect();
                let plan = Plan {
                    partitions: moves
                        .iter()
                        .filter_map(|m| Some(Assignment::new(m.topic.clone(), m.partition, m.replicas.clone()?)))
                        .collect(),
                };
                for (target, set) in Throttle::of(&plan, &current, *throttle).configs() {
                    let resource = match target {
                        ThrottleTarget::Broker(b) => ConfigResource::Broker(b),
                        ThrottleTarget::Topic(t) => ConfigResource::Topic(t),
                    };
                    let alterations: Vec<ConfigAlteration> =
                        set.iter().map(|(k, v)| ConfigAlteration::set(k, v)).collect();
                    cluster
                        .alter_configs(&resource, &alterations, false)
                        .await
                        .map_err(|(_, message)| anyhow::anyhow!("setting the replication throttle: {message}"))?;
                }
                Box::pin(self.execute(&Command::Reassign(moves.clone()))).await
            }
            Command::Reassign(moves) => {
                let asked: Vec<(TopicPartition, Option<Vec<i32>>)> = moves
                    .iter()
                    .map(|m| (TopicPartition::new(m.topic.clone(), m.partition), m.replicas.clone()))
                    .collect();
                let results = cluster.alter_reassignments(&asked).await.map_err(|(code, message)| {
                    anyhow::anyhow!("{}: {message}", screaming_snake(&format!("{code:?}")))
                })?;
                let refused: Vec<String> = results
                    .iter()
                    .filter_map(|(tp, e)| {
                        e.as_ref()
                            .map(|(code, m)| format!("{tp}: {}: {m}", screaming_snake(&format!("{code:?}"))))
                    })
                    .collect();
                let cancel = moves.iter().all(|m| m.replicas.is_none());
                Ok(outcome::reassignment(cancel, results.len() - refused.len(), &refused))
            }
            Command::CreateTopic {
                name,
                partitions,
                replication_factor,
                cleanup_policy,
            } => {
                let min_isr = cluster.config().min_insync_replicas.min(*replication_factor).max(1);
                let policy: CleanupPolicy = cleanup_policy.parse().map_err(|e: String| anyhow::anyhow!(e))?;
                let config = TopicConfig::new(*partitions, *replication_factor)
                    .with_default_min_insync_replicas(min_isr)
                    .with_cleanup_policy(policy);
                cluster.create_topic(name, config).await?;
                Ok(outcome::topic_created(name))
            }
            Command::DeleteTopic { name } => {
                cluster.delete_topic(name).await?;
                Ok(outcome::topic_deleted(name))
            }
            Command::ResetOffsets { group, offsets } => {
                let offsets: Vec<(TopicPartition, i64)> = offsets
                    .iter()
                    .map(|(topic, partition, offset)| (TopicPartition::new(topic.clone(), *partition), *offset))
                    .collect();
                match crate::client::admin::commit_offsets(cluster, group, &offsets).await {
                    Ok(()) => Ok(outcome::offsets_reset(group)),
                    Err(ErrorCode::UnknownMemberId | ErrorCode::IllegalGeneration | ErrorCode::RebalanceInProgress) => {
                        bail!(outcome::reset_refused_active(group))
                    }
                    Err(e) => bail!("{e:?}"),
                }
            }
            Command::DeleteGroup { group } => match crate::client::admin::delete_group(cluster, group).await {
                Ok(()) => Ok(outcome::group_deleted(group)),
                Err(ErrorCode::NonEmptyGroup) => bail!(outcome::delete_refused_active(group)),
                Err(ErrorCode::GroupIdNotFound) => bail!(outcome::no_such_group(group)),
                Err(e) => bail!("{e:?}"),
            },
            Command::DeleteRecords {
                topic,
                partition,
                offset,
            } => {
                let tp = TopicPartition::new(topic.clone(), *partition);
                let leader = cluster
                    .metadata()
                    .partition(&tp)
                    .map(|p| p.leader)
                    .filter(|l| *l >= 0)
                    .ok_or_else(|| anyhow::anyhow!(outcome::no_such_partition(topic, *partition)))?;
                match cluster.delete_records_on(leader, &tp, *offset).await {
                    Ok(low) => Ok(outcome::records_deleted(topic, *partition, low)),
                    Err(ErrorCode::OffsetOutOfRange) => bail!(outcome::past_high_watermark(topic, *partition, *offset)),
                    Err(e) => bail!("{tp}: {}", screaming_snake(&format!("{e:?}"))),
                }
            }
            Command::CreatePartitions { topic, count } => {
                cluster.create_partitions(topic, *count).await?;
                Ok(outcome::partitions_created(topic, *count))
            }
            Command::PauseDemo => {
                let workload = self.workload.lock().await.take();
                match workload {
                    Some(w) => {
                        w.stop();
                        self.demo_running.store(false, std::sync::atomic::Ordering::Relaxed);
                        Ok(outcome::DEMO_PAUSED.into())
                    }
                    None => bail!(outcome::DEMO_NOT_RUNNING),
                }
            }
            Command::ResumeDemo => {
                let Some(demo) = &self.demo else {
                    bail!(outcome::NO_DEMO);
                };
                let mut slot = self.workload.lock().await;
                if slot.is_some() {
                    bail!(outcome::DEMO_ALREADY_RUNNING);
                }
                let workload = Workload::start(cluster, demo.clone()).await?;
                // The demo comes back with the acks it was last set to.
                let acks = self.demo_acks.load(std::sync::atomic::Ordering::Relaxed);
                if acks != -1 {
                    workload.set_acks(acks).await?;
                }
                *slot = Some(workload);
                self.demo_running.store(true, std::sync::atomic::Ordering::Relaxed);
                Ok(outcome::DEMO_RESUMED.into())
            }
            Command::Freeze => {
                if !cluster.freeze() {
                    bail!(outcome::ALREADY_FROZEN);
                }
                Ok(outcome::CLOCK_FROZEN.into())
            }
            Command::Thaw => {
                if !cluster.thaw() {
                    bail!(outcome::NOT_FROZEN);
                }
                Ok(outcome::CLOCK_THAWED.into())
            }
            Command::Hold(on) => {
                let changed = if *on { cluster.hold() } else { cluster.release() };
                Ok(outcome::held(*on, changed))
            }
            Command::SlowMotion { factor } => {
                let changed = cluster.set_slow_motion(*factor)?;
                Ok(outcome::slow_motion(*factor, changed))
            }
            Command::SetLink { a, b, state } => {
                for id in [a, b] {
                    if !cluster.broker_states().iter().any(|(b, _)| b == id) {
                        bail!("there is no broker {id}");
                    }
                }
                if a == b {
                    bail!("a link joins two different brokers");
                }
                let fault = match state {
                    LinkState::Up => None,
                    LinkState::Cut => Some(LinkFault::Cut),
                    LinkState::Delay(ms) => Some(LinkFault::Delay(Duration::from_millis(*ms))),
                };
                cluster.set_link(NodeId::Broker(*a), NodeId::Broker(*b), fault);
                Ok(outcome::link_set(*a, *b, &state.to_string()))
            }
            Command::Isolate(id) => {
                let hosts_controller = cluster.controller() == Some(*id);
                cluster.isolate(*id)?;
                Ok(outcome::broker_isolated(
                    *id,
                    hosts_controller,
                    cluster.config().controller_failover_ms,
                ))
            }
            Command::HealLinks => Ok(outcome::links_healed(cluster.heal_links())),
            Command::SetAutoRebalance(on) => {
                cluster.set_auto_rebalance(*on);
                Ok(outcome::setting_set(
                    "auto.leader.rebalance.enable",
                    None,
                    &on.to_string(),
                ))
            }
            Command::SetUncleanElection { topic, enabled } => {
                cluster.set_unclean_election(topic.as_deref(), *enabled).await?;
                Ok(outcome::setting_set(
                    "unclean.leader.election.enable",
                    topic.as_deref(),
                    &enabled.to_string(),
                ))
            }
            Command::SetMinInsync { topic, value } => {
                cluster.set_min_insync(topic, *value).await?;
                Ok(outcome::setting_set(
                    "min.insync.replicas",
                    Some(topic),
                    &value.to_string(),
                ))
            }
            Command::AlterConfigs { topic, set, delete } => {
                let resource = match topic {
                    Some(t) => ConfigResource::Topic(t.clone()),
                    None => ConfigResource::ClusterDefault,
                };
                let alterations: Vec<ConfigAlteration> = set
                    .iter()
                    .map(|(k, v)| ConfigAlteration::set(k, v))
                    .chain(delete.iter().map(ConfigAlteration::delete))
                    .collect();
                cluster
                    .alter_configs(&resource, &alterations, false)
                    .await
                    .map_err(|(_, message)| anyhow::anyhow!(message))?;
                Ok(outcome::configs_altered(topic.as_deref(), set, delete))
            }
            Command::SetProducerAcks(acks) => {
                match &self.traffic {
                    Some(t) => t.set_acks(*acks).await?,
                    None => {
                        self.demo_workload().await?.set_acks(*acks).await?;
                        self.demo_acks.store(*acks, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                Ok(outcome::producer_acks(*acks))
            }
            Command::AddMember { group } => {
                let members = match &self.traffic {
                    Some(t) => t.add_member(group).await?,
                    None => self.demo_workload().await?.add_member(group).await?,
                };
                Ok(outcome::member_added(group, members))
            }
            Command::RemoveMember { group } => {
                let members = match &self.traffic {
                    Some(t) => t.remove_member(group).await?,
                    None => self.demo_workload().await?.remove_member(group).await?,
                };
                Ok(outcome::member_removed(group, members))
            }
            Command::PauseGroup { group } | Command::ResumeGroup { group } => {
                let paused = matches!(command, Command::PauseGroup { .. });
                match &self.traffic {
                    Some(t) => t.pause_group(group, paused).await?,
                    None => self.demo_workload().await?.pause_group(group, paused).await?,
                }
                Ok(if paused {
                    outcome::group_paused(group)
                } else {
                    outcome::group_resumed(group)
                })
            }
        }
    }
}
