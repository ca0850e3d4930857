//! [`RemoteSource`]: the console's `ClusterSource` for an external cluster. A refresh task
//! builds a `ClusterView` from Metadata, ListOffsets and the group APIs, derives events by
//! diffing successive snapshots, and reports connection problems in the view.
//!
//! What an external cluster cannot tell a client, and what the view shows instead:
//! - a replica's log end offset: the leader's is shown as the high watermark (ListOffsets
//!   latest), followers' as unknown;
//! - byte rates (JMX only): brokers show the records per second appended to the partitions
//!   they lead, from successive end offsets;
//! - sizes: each broker's DescribeLogDirs, asked on the first round, after a command and
//!   then every [`LOG_DIRS_EVERY`] (it walks every log on the broker): a replica's size, a
//!   topic's as its leaders' sum, a broker's disk use as its replicas' sum; unknown (`-`)
//!   where a broker refuses it (an ACL, a broker older than Kafka 1.0) or does not answer;
//! - a group's generation: DescribeGroups does not carry it (0).

mod events;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use tokio::sync::{Notify, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};

use super::client::ClusterMetadata;
use super::ops::{self, GroupDescription, OffsetSpec, OutRecord};
use super::{BrokerHealth, KafkaClient, RemoteError};
use crate::kafka::partitioner::partition_for_key;
use crate::kafka::reassign::{Assignment, Ongoing, Plan, Throttle, ThrottleTarget};
use crate::view::configs::ConfigsAnswer;
use crate::view::history::{CounterRates, PartitionKey, Trends, topic_lag};
use crate::view::merge::{PartitionRead, PartitionReader, read_in_time_order};
use crate::view::outcome::{self, Elected};
use crate::view::timeline::{self, Timeline};
use crate::view::{
    BrokerId, BrokerRow, BrokerStatus, Capabilities, ClusterSource, ClusterView, Command, CommandOutcome,
    GroupOffsetRow, GroupRow, MemberRow, OutcomeSender, PartitionRow, ReplicaRole, ReplicaRow, SeekPosition,
    SourceKind, TailBuffer, TailFeed, TailHandle, TailMode, TailSpec, Throughput, TopicRow,
};

pub use events::{diff, diff_classified};

pub use crate::view::outcome::NO_BROKER_CONTROL;

/// A real cluster is refreshed at most once a second: each round asks every partition
/// leader and every group coordinator, which a console should not do four times a second.
pub const MIN_REFRESH: Duration = Duration::from_secs(1);

/// How often the refresh asks every broker for its log dirs (besides the first round and
/// the round after a command): DescribeLogDirs walks every log on a broker, more than a
/// console's refresh should cost a cluster.
pub const LOG_DIRS_EVERY: Duration = Duration::from_secs(10);

/// How long a tail's fetch waits at the broker for new records.
const TAIL_MAX_WAIT: Duration = Duration::from_millis(500);
/// The most a tail's fetch asks for, per partition.
const TAIL_MAX_BYTES: i32 = 1 << 20;
/// The first and the longest wait before a failed tail read is retried.
const TAIL_BACKOFF: Duration = Duration::from_millis(200);
const TAIL_BACKOFF_MAX: Duration = Duration::from_secs(5);

/// How a [`RemoteSource`] shows its cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceOptions {
    /// The header's name; `None`: the cluster id from Metadata, else the bootstrap servers.
    pub cluster_name: Option<String>,
    /// Time between refresh rounds.
    pub refresh: Duration,
    /// Refuse (and let the console hide) every command that changes the cluster.
    pub read_only: bool,
    /// Events kept in the timeline.
    pub event_history: usize,
}

impl SourceOptions {
    /// From `[console]`'s refresh_ms (not below [`MIN_REFRESH`]) and event_history.
    pub fn new(refresh_ms: u64, event_history: usize, read_only: bool) -> SourceOptions {
        SourceOptions {
            cluster_name: None,
            refresh: Duration::from_millis(refresh_ms).max(MIN_REFRESH),
            read_only,
            event_history: event_history.max(1),
        }
    }
}

/// An external Kafka cluster as a console source. Dropping it stops the refresh task.
pub struct RemoteSource {
    client: KafkaClient,
    views: watch::Receiver<Arc<ClusterView>>,
    refresh_now: Arc<Notify>,
    task: JoinHandle<()>,
    read_only: bool,
    /// Round robin over partitions for records without key or partition.
    next_partition: Arc<AtomicUsize>,
}

impl RemoteSource {
    /// Starts the refresh task (needs a tokio runtime). The first view is empty until the
    /// first round answers.
    pub fn start(client: KafkaClient, options: SourceOptions) -> RemoteSource {
        let bootstrap = client
            .settings()
            .bootstrap
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let name = options.cluster_name.clone().unwrap_or_else(|| bootstrap.clone());
        let (tx, views) = watch::channel(Arc::new(ClusterView::empty(&name, SourceKind::External)));
        let refresh_now = Arc::new(Notify::new());
        let builder = ViewBuilder::new(options.cluster_name.clone(), bootstrap, options.event_history);
        let task = tokio::spawn(refresh_loop(
            client.clone(),
            options.refresh,
            builder,
            tx,
            Arc::clone(&refresh_now),
        ));
        RemoteSource {
            client,
            views,
            refresh_now,
            task,
            read_only: options.read_only,
            next_partition: Arc::new(AtomicUsize::new(0)),
        }
    }

    pub fn client(&self) -> &KafkaClient {
        &self.client
    }
}

impl Drop for RemoteSource {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ClusterSource for RemoteSource {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            broker_control: Err(NO_BROKER_CONTROL),
            demo: false,
            read_only: self.read_only,
        }
    }

    fn views(&self) -> watch::Receiver<Arc<ClusterView>> {
        self.views.clone()
    }

    fn submit(&self, command: Command, outcomes: OutcomeSender) {
        let client = self.client.clone();
        let read_only = self.read_only;
        let next_partition = Arc::clone(&self.next_partition);
        let refresh_now = Arc::clone(&self.refresh_now);
        tokio::spawn(async move {
            let result = execute(&client, &command, read_only, &next_partition).await;
            match &result {
                Ok(_) => refresh_now.notify_one(),
                Err(e) => tracing::warn!(%command, error = %e, "console command failed"),
            }
            let _ = outcomes.send(CommandOutcome { command, result });
        });
    }

    fn tail(&self, spec: TailSpec, capacity: usize) -> TailHandle {
        let buffer = Arc::new(TailBuffer::with_mode(capacity, spec.mode));
        tokio::spawn(tail_loop(self.client.clone(), spec.clone(), Arc::clone(&buffer)));
        TailHandle { spec, buffer }
    }

    fn describe_configs(&self, target: crate::view::ConfigTarget) -> oneshot::Receiver<ConfigsAnswer> {
        let (tx, rx) = oneshot::channel();
        let client = self.client.clone();
        tokio::spawn(async move {
            let answer = ops::describe_configs(&client, &target).await.map_err(|e| e.to_string());
            let _ = tx.send(answer);
        });
        rx
    }

    fn describe_acls(&self) -> oneshot::Receiver<crate::view::acls::AclsAnswer> {
        let (tx, rx) = oneshot::channel();
        let client = self.client.clone();
        tokio::spawn(async move {
            let answer = ops::describe_acls(&client).await.map_err(|e| e.to_string());
            let _ = tx.send(answer);
        });
        rx
    }

    fn describe_transactions(&self) -> oneshot::Receiver<crate::view::transactions::TransactionsAnswer> {
        let (tx, rx) = oneshot::channel();
        let client = self.client.clone();
        tokio::spawn(async move {
            let answer = ops::describe_transactions(&client).await.map_err(|e| e.to_string());
            let _ = tx.send(answer);
        });
        rx
    }
}

/// Runs one console command against the cluster; the outcome is a sentence either way.
async fn execute(
    client: &KafkaClient,
    command: &Command,
    read_only: bool,
    next_partition: &AtomicUsize,
) -> Result<String, String> {
    if read_only && command.mutates() {
        return Err(outcome::READ_ONLY.into());
    }
    let kafka = |e: RemoteError| e.to_string();
    match command {
        Command::Produce(request) => {
            let mut metadata = client.metadata().await.map_err(kafka)?;
            if metadata.topic(&request.topic).is_none() {
                // Created since the metadata was cached (a topic made a moment ago): ask again.
                metadata = client.refresh_metadata().await.map_err(kafka)?;
            }
            let topic = metadata
                .topic(&request.topic)
                .ok_or_else(|| outcome::no_such_topic(&request.topic))?;
            let count = topic.partitions.len() as i32;
            let partition = match (request.partition, &request.key) {
                (Some(p), _) if p >= 0 && p < count => p,
                (Some(p), _) => return Err(outcome::no_such_partition(&request.topic, p)),
                // Java's and librdkafka's default partitioner: murmur2 of the key.
                (None, Some(key)) => partition_for_key(key.as_bytes(), count),
                (None, None) => {
                    let led: Vec<i32> = topic
                        .partitions
                        .iter()
                        .filter(|p| p.leader.is_some())
                        .map(|p| p.partition)
                        .collect();
                    let choices = if led.is_empty() { (0..count).collect() } else { led };
                    let n = next_partition.fetch_add(1, Ordering::Relaxed);
                    *choices
                        .get(n % choices.len().max(1))
                        .ok_or_else(|| outcome::no_partitions(&request.topic))?
                }
            };
            let record = OutRecord {
                key: request.key.clone().map(Bytes::from),
                value: Some(Bytes::from(request.value.clone())),
                headers: request
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), Some(Bytes::from(v.clone()))))
                    .collect(),
                timestamp: None,
            };
            let offset = ops::produce(client, &request.topic, partition, vec![record], -1)
                .await
                .map_err(kafka)?;
            Ok(outcome::produced(&request.topic, partition, offset))
        }
        Command::KillBroker(_)
        | Command::StopBroker(_)
        | Command::StartBroker(_)
        | Command::PauseBroker(_)
        | Command::ResumeBroker(_) => Err(NO_BROKER_CONTROL.into()),
        Command::AddBroker | Command::DecommissionBroker(_) => Err(outcome::NO_BROKER_MEMBERSHIP.into()),
        Command::PauseDemo | Command::ResumeDemo => Err(outcome::NO_DEMO_EXTERNAL.into()),
        Command::ElectPreferredLeaders { topic } => {
            let results = ops::elect_preferred(client, topic.as_deref(), None)
                .await
                .map_err(kafka)?;
            Ok(outcome::preferred_election(results.into_iter().map(
                |r| match r.error {
                    Some(e) => Elected::Failed(format!("{}-{}: {e}", r.topic, r.partition)),
                    None if r.not_needed => Elected::Already,
                    None => Elected::Moved,
                },
            )))
        }
        Command::ReassignThrottled { moves, throttle } => {
            let (current, _) = ops::assignments(client).await.map_err(kafka)?;
            let plan = Plan {
                partitions: moves
                    .iter()
                    .filter_map(|m| Some(Assignment::new(m.topic.clone(), m.partition, m.replicas.clone()?)))
                    .collect(),
            };
            for (target, set) in Throttle::of(&plan, &current, *throttle).configs() {
                let target = match target {
                    ThrottleTarget::Broker(b) => crate::view::ConfigTarget::Broker(b),
                    ThrottleTarget::Topic(t) => crate::view::ConfigTarget::Topic(t),
                };
                ops::incremental_alter_configs(client, &target, &set, &[], false)
                    .await
                    .map_err(kafka)?;
            }
            Box::pin(execute(
                client,
                &Command::Reassign(moves.clone()),
                read_only,
                next_partition,
            ))
            .await
        }
        Command::Reassign(moves) => {
            let asked: Vec<(String, i32, Option<Vec<BrokerId>>)> = moves
                .iter()
                .map(|m| (m.topic.clone(), m.partition, m.replicas.clone()))
                .collect();
            let answers = ops::alter_reassignments(client, &asked).await.map_err(kafka)?;
            let refused: Vec<String> = answers
                .iter()
                .filter_map(|(t, p, e)| e.as_ref().map(|e| format!("{t}-{p}: {e}")))
                .collect();
            let cancel = moves.iter().all(|m| m.replicas.is_none());
            Ok(outcome::reassignment(cancel, answers.len() - refused.len(), &refused))
        }
        Command::CreateTopic {
            name,
            partitions,
            replication_factor,
            cleanup_policy,
        } => {
            let rf = i16::try_from(*replication_factor)
                .map_err(|_| format!("replication factor {replication_factor} is too large"))?;
            let configs = [("cleanup.policy".to_string(), cleanup_policy.clone())];
            ops::create_topic(client, name, *partitions, rf, &configs)
                .await
                .map_err(kafka)?;
            Ok(outcome::topic_created(name))
        }
        Command::DeleteTopic { name } => {
            ops::delete_topic(client, name).await.map_err(kafka)?;
            Ok(outcome::topic_deleted(name))
        }
        Command::ResetOffsets { group, offsets } => match ops::commit_offsets(client, group, offsets).await {
            Ok(()) => Ok(outcome::offsets_reset(group)),
            Err(e) if kafka_code(&e) == Some(UNKNOWN_MEMBER_ID) => Err(outcome::reset_refused_active(group)),
            Err(e) => Err(kafka(e)),
        },
        Command::DeleteGroup { group } => match ops::delete_group(client, group).await {
            Ok(()) => Ok(outcome::group_deleted(group)),
            Err(e) if kafka_code(&e) == Some(NON_EMPTY_GROUP) => Err(outcome::delete_refused_active(group)),
            Err(e) if kafka_code(&e) == Some(GROUP_ID_NOT_FOUND) => Err(outcome::no_such_group(group)),
            Err(e) => Err(kafka(e)),
        },
        Command::DeleteRecords {
            topic,
            partition,
            offset,
        } => {
            let low = ops::delete_records(client, topic, *partition, *offset)
                .await
                .map_err(kafka)?;
            Ok(outcome::records_deleted(topic, *partition, low))
        }
        Command::CreatePartitions { topic, count } => {
            ops::create_partitions(client, topic, *count).await.map_err(kafka)?;
            Ok(outcome::partitions_created(topic, *count))
        }
        Command::AlterConfigs { topic, set, delete } => {
            let target = match topic {
                Some(t) => crate::view::ConfigTarget::Topic(t.clone()),
                None => crate::view::ConfigTarget::ClusterDefault,
            };
            ops::incremental_alter_configs(client, &target, set, delete, false)
                .await
                .map_err(kafka)?;
            Ok(outcome::configs_altered(topic.as_deref(), set, delete))
        }
        // Kafka's AlterConfigs could set min.insync.replicas and the unclean rule, but an
        // operator's console does not change a shared cluster's settings as a side effect
        // of a trainer's toggle.
        other => Err(outcome::embedded_only(other)),
    }
}

const UNKNOWN_MEMBER_ID: i16 = 25;
const NON_EMPTY_GROUP: i16 = 68;
const GROUP_ID_NOT_FOUND: i16 = 69;

/// The Kafka error code of a broker's answer, if that is what went wrong.
fn kafka_code(error: &RemoteError) -> Option<i16> {
    match error {
        RemoteError::Kafka { code, .. } => Some(*code),
        _ => None,
    }
}

/// What one refresh round read from the cluster.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    pub metadata: Option<Arc<ClusterMetadata>>,
    /// (log start, high watermark) by partition, when its leader answered.
    pub offsets: HashMap<(String, i32), (Option<i64>, Option<i64>)>,
    /// The last stable offset by partition (ListOffsets read_committed at the latest), when
    /// its leader answered.
    pub stable: HashMap<(String, i32), i64>,
    /// `None` when the groups could not be read: the last ones stay shown.
    pub groups: Option<Vec<GroupObservation>>,
    pub health: Vec<BrokerHealth>,
    /// The reassignments in progress (one ListPartitionReassignments at the controller);
    /// empty when none, or when the cluster cannot list them.
    pub reassignments: Vec<Ongoing>,
    /// Each broker's replicas and their sizes (`None`: the broker refused or did not
    /// answer DescribeLogDirs), when this round asked; `None`: the last ones stay.
    pub log_dirs: Option<BTreeMap<BrokerId, Option<Vec<ops::ReplicaSize>>>>,
    /// What went wrong this round besides broker connections.
    pub problems: Vec<String>,
}

/// One refresh round: metadata, then every partition's offsets and every group, each
/// request bounded by the client's timeouts. A failure leaves its part empty and a problem.
async fn observe(client: &KafkaClient, log_dirs: bool) -> Observation {
    let mut observation = Observation::default();
    let metadata = match client.refresh_metadata().await {
        Ok(m) => m,
        Err(e) => {
            observation
                .problems
                .push(format!("cannot read the cluster's metadata: {e}"));
            observation.health = client.health();
            return observation;
        }
    };
    let partitions: Vec<(String, i32)> = metadata
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.name.clone(), p.partition)))
        .collect();
    // Committed offsets first, end offsets after, as kafka-consumer-groups does: a commit
    // read after the end offsets could be past them and the lag would read negative.
    let groups = observe_groups(client).await;
    match ops::list_reassignments(client, None).await {
        Ok(moving) => observation.reassignments = moving,
        // A cluster older than Kafka 2.4 has no such API: nothing moves as far as it can say.
        Err(RemoteError::Unsupported { .. }) => {}
        Err(e) => observation.problems.push(format!("cannot list the reassignments: {e}")),
    }
    let brokers: Vec<BrokerId> = metadata.brokers.iter().map(|b| b.id).collect();
    let (starts, ends, stable, sizes) = tokio::join!(
        ops::list_offsets(client, &partitions, OffsetSpec::Earliest),
        ops::list_offsets(client, &partitions, OffsetSpec::Latest),
        ops::list_offsets_isolated(client, &partitions, OffsetSpec::Latest, ops::Isolation::ReadCommitted),
        async {
            if !log_dirs {
                return None;
            }
            let answers = ops::join_all(brokers.iter().map(|&b| ops::describe_log_dirs(client, b)).collect()).await;
            Some(
                brokers
                    .iter()
                    .zip(answers)
                    .map(|(&b, answer)| {
                        let sizes = answer
                            .inspect_err(|e| tracing::debug!(broker = b, error = %e, "no log dirs"))
                            .ok();
                        (b, sizes)
                    })
                    .collect(),
            )
        },
    );
    observation.log_dirs = sizes;
    // A broker older than ListOffsets v2 cannot tell the LSO: it shows as unknown, no problem.
    for (tp, lso) in partitions.iter().zip(stable) {
        if let Ok(lso) = lso {
            observation.stable.insert(tp.clone(), lso);
        }
    }
    let mut offset_errors = BTreeSet::new();
    for ((tp, start), end) in partitions.into_iter().zip(starts).zip(ends) {
        let mut keep = |r: Result<i64, RemoteError>| match r {
            Ok(o) => Some(o),
            Err(e) => {
                offset_errors.insert(e.to_string());
                None
            }
        };
        let start = keep(start);
        let end = keep(end);
        observation.offsets.insert(tp, (start, end));
    }
    match groups {
        Ok((groups, problems)) => {
            observation.groups = Some(groups);
            observation.problems.extend(problems);
        }
        Err(e) => observation
            .problems
            .push(format!("cannot read the consumer groups: {e}")),
    }
    if let Some(first) = offset_errors.iter().next() {
        let more = offset_errors.len() - 1;
        observation.problems.push(if more == 0 {
            format!("offsets: {first}")
        } else {
            format!("offsets: {first} (+{more} other errors)")
        });
    }
    observation.metadata = Some(metadata);
    observation.health = client.health();
    observation
}

/// A group and its committed offsets.
pub type GroupObservation = (GroupDescription, Vec<ops::CommittedOffset>);

async fn observe_groups(client: &KafkaClient) -> Result<(Vec<GroupObservation>, Vec<String>), RemoteError> {
    let listings = ops::list_groups(client).await?;
    let ids: Vec<String> = listings.into_iter().map(|g| g.group_id).collect();
    if ids.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let descriptions = ops::describe_groups(client, &ids).await?;
    let mut tasks = JoinSet::new();
    for (i, d) in descriptions.iter().enumerate() {
        let client = client.clone();
        let group = d.group_id.clone();
        tasks.spawn(async move { (i, ops::committed_offsets(&client, &group).await) });
    }
    let mut committed: BTreeMap<usize, Vec<ops::CommittedOffset>> = BTreeMap::new();
    let mut problems = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((i, Ok(offsets))) => {
                committed.insert(i, offsets);
            }
            Ok((i, Err(e))) => {
                let group = descriptions.get(i).map_or("?", |d| d.group_id.as_str());
                problems.push(format!("group {group}: {e}"));
            }
            Err(e) => problems.push(format!("reading committed offsets: {e}")),
        }
    }
    let groups = descriptions
        .into_iter()
        .enumerate()
        .map(|(i, d)| (d, committed.remove(&i).unwrap_or_default()))
        .collect();
    Ok((groups, problems))
}

async fn refresh_loop(
    client: KafkaClient,
    refresh: Duration,
    mut builder: ViewBuilder,
    tx: watch::Sender<Arc<ClusterView>>,
    refresh_now: Arc<Notify>,
) {
    let mut interval = tokio::time::interval(refresh);
    // A round that overruns its interval makes the next one wait for its own tick: rounds
    // never queue up behind a slow cluster.
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let settings = client.settings().clone();
    let budget = refresh.max(settings.request_timeout + settings.connect_timeout);
    let mut log_dirs_at: Option<tokio::time::Instant> = None;
    loop {
        let asked = tokio::select! {
            _ = interval.tick() => false,
            _ = refresh_now.notified() => true,
        };
        let log_dirs = asked || log_dirs_at.is_none_or(|at| at.elapsed() >= LOG_DIRS_EVERY);
        if log_dirs {
            log_dirs_at = Some(tokio::time::Instant::now());
        }
        let observation = match tokio::time::timeout(budget, observe(&client, log_dirs)).await {
            Ok(o) => o,
            Err(_) => Observation {
                problems: vec![format!(
                    "the cluster did not answer a refresh within {} ms",
                    budget.as_millis()
                )],
                health: client.health(),
                ..Observation::default()
            },
        };
        let view = builder.build(&observation, Utc::now());
        if !crate::view::publish_if_changed(&tx, view) {
            return;
        }
    }
}

/// Bytes of each replica a broker hosts, by (topic, partition).
type ReplicaSizes = HashMap<(String, i32), u64>;

/// Turns observations into views, keeping the brokers seen before and the previous view to
/// compare the next with; rates, histories, the timeline and change times are kept by the
/// shared view-model.
pub struct ViewBuilder {
    cluster_name: Option<String>,
    bootstrap: String,
    timeline: Timeline,
    trends: Trends,
    previous: Option<ClusterView>,
    /// Every broker ever seen in metadata, with its last address.
    known_brokers: BTreeMap<BrokerId, String>,
    /// Records per second by partition, from successive high watermarks.
    partition_rates: CounterRates<PartitionKey>,
    /// Each broker's replica sizes from its last DescribeLogDirs (`None`: it refused).
    sizes: BTreeMap<BrokerId, Option<ReplicaSizes>>,
    /// Each broker's disk use from its last DescribeLogDirs: every replica in its log dirs,
    /// future ones included (they take disk too).
    disk: BTreeMap<BrokerId, Option<u64>>,
}

impl ViewBuilder {
    pub fn new(cluster_name: Option<String>, bootstrap: String, event_history: usize) -> ViewBuilder {
        ViewBuilder {
            cluster_name,
            bootstrap,
            timeline: Timeline::new(event_history),
            trends: Trends::default(),
            previous: None,
            known_brokers: BTreeMap::new(),
            partition_rates: CounterRates::default(),
            sizes: BTreeMap::new(),
            disk: BTreeMap::new(),
        }
    }

    pub fn build(&mut self, observation: &Observation, now: DateTime<Utc>) -> ClusterView {
        let mut view = match &observation.metadata {
            Some(metadata) => self.view_of(metadata, observation, now),
            // Without metadata the last picture stays, with brokers re-judged by connection.
            None => {
                let mut last = self
                    .previous
                    .clone()
                    .unwrap_or_else(|| ClusterView::empty(&self.name(None), SourceKind::External));
                for b in &mut last.brokers {
                    if b.status == BrokerStatus::Online && failing(&observation.health, b.id).is_some() {
                        b.status = BrokerStatus::Unreachable;
                    }
                }
                last.taken_at = now;
                last
            }
        };
        view.problems = problems(observation, &view.brokers);
        match self.previous.take() {
            None => {
                let line = timeline::attached(
                    &view.cluster_name,
                    &self.bootstrap,
                    view.brokers.len(),
                    view.topics.len(),
                    view.groups.len(),
                );
                self.timeline.say(now, line);
            }
            Some(old) => {
                for (line, class) in diff_classified(&old, &view) {
                    self.timeline.say_as(now, line, class);
                }
                self.mark_changes(&old, &view, now);
            }
        }
        self.trends.forget_what_is_gone(&view);
        let partitions: BTreeSet<(&str, i32)> = view
            .partitions
            .iter()
            .map(|p| (p.topic.as_str(), p.partition))
            .collect();
        self.partition_rates
            .retain(|(topic, partition)| partitions.contains(&(topic.as_str(), *partition)));
        self.trends.stamp_changes(&mut view);
        view.events = self.timeline.events();
        self.previous = Some(view.clone());
        view
    }

    fn name(&self, metadata: Option<&ClusterMetadata>) -> String {
        self.cluster_name
            .clone()
            .or_else(|| metadata.and_then(|m| m.cluster_id.clone()).filter(|id| !id.is_empty()))
            .unwrap_or_else(|| self.bootstrap.clone())
    }

    fn mark_changes(&mut self, old: &ClusterView, new: &ClusterView, now: DateTime<Utc>) {
        for b in &new.brokers {
            if old.brokers.iter().find(|o| o.id == b.id).map(|o| o.status) != Some(b.status) {
                self.trends.broker_changed.mark(b.id, now);
            }
        }
        for p in &new.partitions {
            let before = old
                .partitions
                .iter()
                .find(|o| o.topic == p.topic && o.partition == p.partition);
            if before.is_some_and(|o| o.leader != p.leader || o.isr != p.isr) {
                self.trends.partition_changed.mark((p.topic.clone(), p.partition), now);
            }
        }
    }

    fn view_of(&mut self, metadata: &ClusterMetadata, observation: &Observation, now: DateTime<Utc>) -> ClusterView {
        for b in &metadata.brokers {
            self.known_brokers.insert(b.id, b.address.to_string());
        }
        if let Some(log_dirs) = &observation.log_dirs {
            self.disk = log_dirs
                .iter()
                .map(|(&broker, replicas)| (broker, replicas.as_ref().map(|r| r.iter().map(|r| r.size_bytes).sum())))
                .collect();
            self.sizes = log_dirs
                .iter()
                .map(|(&broker, replicas)| {
                    let sizes = replicas.as_ref().map(|replicas| {
                        // A future replica (moving between log dirs) is not the replica's size.
                        replicas
                            .iter()
                            .filter(|r| !r.future)
                            .map(|r| ((r.topic.clone(), r.partition), r.size_bytes))
                            .collect()
                    });
                    (broker, sizes)
                })
                .collect();
        }
        let sizes = &self.sizes;
        let size_of = |broker: BrokerId, topic: &str, partition: i32| {
            sizes
                .get(&broker)?
                .as_ref()?
                .get(&(topic.to_string(), partition))
                .copied()
        };
        let in_metadata: BTreeSet<BrokerId> = metadata.brokers.iter().map(|b| b.id).collect();
        let status = |id: BrokerId| {
            if !in_metadata.contains(&id) {
                BrokerStatus::Down
            } else if failing(&observation.health, id).is_some() {
                BrokerStatus::Unreachable
            } else {
                BrokerStatus::Online
            }
        };
        // A partition whose leader did not answer keeps its last end for the next sample.
        let sampled = self.partition_rates.sample(
            observation
                .offsets
                .iter()
                .filter_map(|(tp, (_, end))| Some((tp.clone(), u64::try_from((*end)?).ok()?))),
            now,
        );
        let mut partitions: Vec<PartitionRow> = Vec::new();
        for t in &metadata.topics {
            for p in &t.partitions {
                let (start, end) = observation
                    .offsets
                    .get(&(t.name.clone(), p.partition))
                    .copied()
                    .unwrap_or((None, None));
                let moving = observation
                    .reassignments
                    .iter()
                    .find(|o| o.topic == t.name && o.partition == p.partition);
                let replicas = p
                    .replicas
                    .iter()
                    .map(|&broker| {
                        let role = if p.offline_replicas.contains(&broker) || status(broker) == BrokerStatus::Down {
                            ReplicaRole::Offline
                        } else if p.leader == Some(broker) {
                            ReplicaRole::Leader
                        } else if p.isr.contains(&broker) {
                            ReplicaRole::InSync
                        } else {
                            ReplicaRole::OutOfSync
                        };
                        // Kafka tells a client the leader's high watermark, not any replica's
                        // log end: the leader's is shown as the high watermark.
                        let leads = role == ReplicaRole::Leader;
                        let log_end_offset = leads.then_some(end).flatten();
                        ReplicaRow {
                            broker,
                            role,
                            log_end_offset,
                            log_start_offset: leads.then_some(start).flatten(),
                            high_watermark: log_end_offset,
                            epochs: Default::default(),
                            size_bytes: (role != ReplicaRole::Offline)
                                .then(|| size_of(broker, &t.name, p.partition))
                                .flatten(),
                            caught_up_ms_ago: None,
                        }
                    })
                    .collect();
                partitions.push(PartitionRow {
                    topic: t.name.clone(),
                    partition: p.partition,
                    leader: p.leader,
                    leader_epoch: p.leader_epoch,
                    replicas,
                    isr: p.isr.clone(),
                    preferred_leader: p.replicas.first().copied().unwrap_or(-1),
                    high_watermark: end,
                    last_stable_offset: observation.stable.get(&(t.name.clone(), p.partition)).copied(),
                    log_start_offset: start,
                    // While replicas move, Kafka counts the original assignment's.
                    under_replicated: p.isr.len() < moving.map_or(p.replicas.len(), |o| o.original().len()),
                    min_insync_replicas: None,
                    adding: moving.map_or_else(Vec::new, |o| o.adding.clone()),
                    removing: moving.map_or_else(Vec::new, |o| o.removing.clone()),
                    changed_at: None,
                });
            }
        }
        let groups = self.groups(observation, &partitions);
        let topics: Vec<TopicRow> = metadata
            .topics
            .iter()
            .map(|t| {
                let mine: Vec<&PartitionRow> = partitions.iter().filter(|p| p.topic == t.name).collect();
                TopicRow {
                    name: t.name.clone(),
                    internal: t.internal || t.name.starts_with("__"),
                    partitions: t.partitions.len() as i32,
                    replication_factor: mine.iter().map(|p| p.replicas.len()).max().unwrap_or(0) as i32,
                    under_replicated: mine.iter().filter(|p| p.under_replicated).count(),
                    offline: mine.iter().filter(|p| p.offline()).count(),
                    messages: mine
                        .iter()
                        .filter_map(|p| Some(p.high_watermark? - p.log_start_offset?))
                        .sum(),
                    size_bytes: {
                        let leaders: Vec<u64> = mine
                            .iter()
                            .filter_map(|p| p.replicas.iter().find(|r| r.role == ReplicaRole::Leader))
                            .filter_map(|r| r.size_bytes)
                            .collect();
                        (!leaders.is_empty()).then(|| leaders.iter().sum())
                    },
                    messages_per_sec: mine
                        .iter()
                        .map(|p| self.partition_rates.rate(&(p.topic.clone(), p.partition)))
                        .fold(0.0, |sum, r| sum + r),
                    total_lag: topic_lag(&groups, &t.name),
                    // DescribeConfigs per topic on every refresh is more than a view needs.
                    retention: None,
                    unclean_election: None,
                }
            })
            .collect();
        let brokers = self
            .known_brokers
            .clone()
            .into_iter()
            .map(|(id, address)| {
                let led = partitions.iter().filter(|p| p.leader == Some(id));
                // A fold from +0.0: an empty float sum is -0.0, shown as "-0/s".
                let rate = led
                    .clone()
                    .map(|p| self.partition_rates.rate(&(p.topic.clone(), p.partition)))
                    .fold(0.0, |sum, r| sum + r);
                let produce_history = if sampled {
                    self.trends.produce_history.push(id, rate as u64)
                } else {
                    self.trends.produce_history.samples(&id)
                };
                BrokerRow {
                    id,
                    status: status(id),
                    is_controller: metadata.controller == Some(id),
                    leaders: led.count(),
                    replicas: partitions
                        .iter()
                        .filter(|p| p.replicas.iter().any(|r| r.broker == id))
                        .count(),
                    throughput: Throughput::Messages { in_per_sec: rate },
                    address: Some(address),
                    // Every replica in its log dirs, future ones included: they take disk too.
                    disk_bytes: (status(id) == BrokerStatus::Online)
                        .then(|| self.disk.get(&id).copied().flatten())
                        .flatten(),
                    produce_history,
                    changed_at: None,
                    lifecycle: None,
                }
            })
            .collect();
        let mut view = ClusterView {
            cluster_name: self.name(Some(metadata)),
            source: SourceKind::External,
            taken_at: now,
            controller: metadata.controller,
            brokers,
            topics,
            partitions,
            groups,
            events: Vec::new(),
            demo: None,
            problems: Vec::new(),
            controls: None,
            workload: None,
            links: Vec::new(),
        };
        crate::view::sort_rows(&mut view);
        view
    }

    fn groups(&mut self, observation: &Observation, partitions: &[PartitionRow]) -> Vec<GroupRow> {
        let Some(observed) = &observation.groups else {
            return self.previous.as_ref().map_or_else(Vec::new, |v| v.groups.clone());
        };
        let end_of = |topic: &str, partition: i32| {
            partitions
                .iter()
                .find(|p| p.topic == topic && p.partition == partition)
                .and_then(|p| p.high_watermark)
        };
        observed
            .iter()
            .map(|(d, committed)| {
                let offsets: Vec<GroupOffsetRow> = committed
                    .iter()
                    .map(|c| {
                        let end = end_of(&c.topic, c.partition);
                        GroupOffsetRow {
                            topic: c.topic.clone(),
                            partition: c.partition,
                            committed: c.offset,
                            end,
                            lag: end.map(|e| (e - c.offset).max(0)),
                        }
                    })
                    .collect();
                let mut row = GroupRow {
                    group_id: d.group_id.clone(),
                    state: d.state.clone(),
                    protocol: d.protocol.clone(),
                    generation: 0,
                    coordinator: d.coordinator,
                    members: d
                        .members
                        .iter()
                        .map(|m| MemberRow {
                            member_id: m.member_id.clone(),
                            instance_id: m.group_instance_id.clone(),
                            client_id: m.client_id.clone(),
                            host: m.host.clone(),
                            assignment: m.assignment.clone(),
                        })
                        .collect(),
                    offsets,
                    total_lag: 0,
                    lag_history: Vec::new(),
                };
                self.trends.sample_lag(&mut row);
                row
            })
            .collect()
    }
}

/// The last connection error of broker `id`, when kdeck cannot talk to it now.
fn failing(health: &[BrokerHealth], id: BrokerId) -> Option<&str> {
    health.iter().find(|h| h.id == id).and_then(|h| h.last_error.as_deref())
}

/// The header's problems: brokers kdeck cannot reach first (by id), then what the round
/// could not read.
fn problems(observation: &Observation, brokers: &[BrokerRow]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for b in brokers {
        match b.status {
            BrokerStatus::Down => out.push(format!(
                "broker {} {}: down (gone from the metadata)",
                b.id,
                b.address.as_deref().unwrap_or("?")
            )),
            BrokerStatus::Unreachable => {
                let error = failing(&observation.health, b.id).unwrap_or("unreachable");
                out.push(format!(
                    "broker {} {}: {error}",
                    b.id,
                    b.address.as_deref().unwrap_or("?")
                ));
            }
            _ => {}
        }
    }
    // Bootstrap addresses (before any metadata) fail under their own address.
    for h in &observation.health {
        if let Some(error) = &h.last_error
            && !brokers.iter().any(|b| b.id == h.id)
        {
            out.push(format!("{}: {error}", h.address));
        }
    }
    out.extend(observation.problems.iter().cloned());
    out
}

/// Fills `buffer` with `spec`'s records. A window (the browser, a search) reads its
/// partitions through the time order both sources share (`view::merge`), until the handle
/// is dropped or a search reached the end every partition had when it started; a ring has
/// one task per partition, each resolving its start then fetching until the handle is
/// dropped, its records kept as they come.
async fn tail_loop(client: KafkaClient, spec: TailSpec, buffer: Arc<TailBuffer>) {
    let errors = Arc::new(TailErrors::default());
    let mut backoff = TAIL_BACKOFF;
    let partitions = loop {
        if buffer.is_closed() {
            return;
        }
        match client.metadata().await {
            Ok(m) => match m.topic(&spec.topic) {
                Some(t) => {
                    let all: Vec<i32> = t.partitions.iter().map(|p| p.partition).collect();
                    match spec.partition {
                        Some(p) if all.contains(&p) => break vec![p],
                        Some(p) => buffer.set_error(Some(outcome::no_such_partition(&spec.topic, p))),
                        None => break all,
                    }
                }
                None => buffer.set_error(Some(outcome::no_such_topic(&spec.topic))),
            },
            Err(e) => buffer.set_error(Some(e.to_string())),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(TAIL_BACKOFF_MAX);
    };
    buffer.set_error(None);
    let Some(ends) = capture_bounds(&client, &spec, &partitions, &buffer).await else {
        return;
    };
    if spec.mode == TailMode::Window {
        // A window hands records on in the time order both sources share.
        let readers = partitions
            .into_iter()
            .map(|partition| PartitionFetcher {
                client: client.clone(),
                isolation: isolation(&spec),
                topic: spec.topic.clone(),
                partition,
                start: spec.start,
                end: ends.get(&partition).copied(),
                position: None,
            })
            .collect();
        read_in_time_order(readers, &spec, buffer).await;
        return;
    }
    let mut tasks = JoinSet::new();
    for partition in partitions {
        tasks.spawn(tail_partition(
            client.clone(),
            PartitionTail {
                spec: spec.clone(),
                partition,
                end: ends.get(&partition).copied(),
            },
            Arc::clone(&buffer),
            Arc::clone(&errors),
        ));
    }
    while tasks.join_next().await.is_some() {}
    // Every partition reached its end, or the handle was dropped.
    if spec.until_end && !buffer.is_closed() {
        buffer.set_done();
    }
}

/// Sets the log start of each partition on the buffer and returns, for a search, each
/// partition's end (the high watermark now). A search asks until every partition answers
/// (it cannot know where to stop otherwise); `None` when the handle is dropped meanwhile.
async fn capture_bounds(
    client: &KafkaClient,
    spec: &TailSpec,
    partitions: &[i32],
    buffer: &TailBuffer,
) -> Option<HashMap<i32, i64>> {
    let wanted: Vec<(String, i32)> = partitions.iter().map(|p| (spec.topic.clone(), *p)).collect();
    let mut backoff = TAIL_BACKOFF;
    loop {
        let (starts, latest) = tokio::join!(
            ops::list_offsets(client, &wanted, OffsetSpec::Earliest),
            ops::list_offsets_isolated(client, &wanted, OffsetSpec::Latest, isolation(spec))
        );
        let mut log_starts = Vec::new();
        let mut ends = HashMap::new();
        let mut problem = None;
        for ((partition, start), end) in partitions.iter().zip(starts).zip(latest) {
            match start {
                Ok(o) => log_starts.push((*partition, o)),
                Err(e) => problem = Some(format!("partition {partition}: {e}")),
            }
            match end {
                Ok(o) if spec.until_end => {
                    ends.insert(*partition, o);
                }
                Ok(_) => {}
                Err(e) => problem = Some(format!("partition {partition}: {e}")),
            }
        }
        if problem.is_none() || !spec.until_end {
            buffer.set_log_starts(log_starts);
            return Some(ends);
        }
        buffer.set_error(problem);
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(TAIL_BACKOFF_MAX);
        if buffer.is_closed() {
            return None;
        }
    }
}

/// Each partition's last read error; the buffer shows the first, so one partition's
/// success does not hide another's failure.
#[derive(Default)]
struct TailErrors(Mutex<BTreeMap<i32, String>>);

impl TailErrors {
    fn set(&self, buffer: &TailBuffer, partition: i32, error: Option<String>) {
        let mut errors = lock(&self.0);
        match error {
            Some(e) => errors.insert(partition, e),
            None => errors.remove(&partition),
        };
        buffer.set_error(errors.iter().next().map(|(p, e)| format!("partition {p}: {e}")));
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The isolation level a tail reads at.
fn isolation(spec: &TailSpec) -> ops::Isolation {
    if spec.read_committed {
        ops::Isolation::ReadCommitted
    } else {
        ops::Isolation::ReadUncommitted
    }
}

/// Where a tail starts in one partition (its end is the last stable offset for
/// read_committed).
async fn resolve_start(
    client: &KafkaClient,
    topic: &str,
    partition: i32,
    start: SeekPosition,
    isolation: ops::Isolation,
) -> Result<i64, RemoteError> {
    let offset = |spec| offset_of(client, topic, partition, spec, isolation);
    match start.lookup() {
        Some(spec) => {
            let at = offset(spec).await?;
            // No record at or after that time: the tail waits at the end.
            if at < 0 {
                offset(OffsetSpec::Latest).await
            } else {
                Ok(at)
            }
        }
        None => {
            let (first, end) = (offset(OffsetSpec::Earliest).await?, offset(OffsetSpec::Latest).await?);
            Ok(start.within(first, end).unwrap_or(end))
        }
    }
}

async fn offset_of(
    client: &KafkaClient,
    topic: &str,
    partition: i32,
    spec: OffsetSpec,
    isolation: ops::Isolation,
) -> Result<i64, RemoteError> {
    ops::list_offsets_isolated(client, &[(topic.to_string(), partition)], spec, isolation)
        .await
        .pop()
        .unwrap_or_else(|| Err(RemoteError::Other(format!("no offset for {topic}-{partition}"))))
}

/// One partition of a window: where it starts, where a search stops, where it is.
struct PartitionFetcher {
    client: KafkaClient,
    isolation: ops::Isolation,
    topic: String,
    partition: i32,
    start: SeekPosition,
    end: Option<i64>,
    position: Option<i64>,
}

impl PartitionReader for PartitionFetcher {
    fn partition(&self) -> i32 {
        self.partition
    }

    async fn read(&mut self) -> Result<PartitionRead, String> {
        let (topic, partition) = (self.topic.as_str(), self.partition);
        let offset = match self.position {
            Some(offset) => offset,
            None => {
                let offset = resolve_start(&self.client, topic, partition, self.start, self.isolation)
                    .await
                    .map_err(|e| e.to_string())?;
                self.position = Some(offset);
                offset
            }
        };
        let reached = |at: i64| self.end.is_some_and(|end| at >= end);
        if reached(offset) {
            return Ok(PartitionRead {
                records: Vec::new(),
                at_end: true,
                done: true,
                markers: Vec::new(),
            });
        }
        let limits = (TAIL_MAX_WAIT, TAIL_MAX_BYTES);
        match ops::fetch_isolated(&self.client, topic, partition, offset, limits, self.isolation).await {
            Ok(fetched) => {
                // A search reads up to its end offset, even when more has arrived since.
                let stop = self.end.unwrap_or(i64::MAX);
                let next = fetched.next_offset.max(offset);
                self.position = Some(next);
                // read_committed ends at the last stable offset.
                let end = match self.isolation {
                    ops::Isolation::ReadCommitted => fetched.last_stable_offset,
                    ops::Isolation::ReadUncommitted => fetched.high_watermark,
                };
                Ok(PartitionRead {
                    records: fetched.records.into_iter().filter(|r| r.offset < stop).collect(),
                    at_end: next >= end,
                    done: reached(next),
                    markers: fetched.markers.into_iter().filter(|m| m.offset < stop).collect(),
                })
            }
            // Retention removed what the window was about to read: it goes on from where it
            // was, kept within the log.
            Err(RemoteError::Kafka { ref name, .. }) if name == "OFFSET_OUT_OF_RANGE" => {
                self.position = None;
                self.start = SeekPosition::Offset(offset);
                Err(format!("offset {offset} is out of range; reading from the start"))
            }
            Err(e) => Err(e.to_string()),
        }
    }
}

/// One partition of a ring tail: the tail's spec and, for a search, where this partition stops.
struct PartitionTail {
    spec: TailSpec,
    partition: i32,
    end: Option<i64>,
}

async fn tail_partition(client: KafkaClient, tail: PartitionTail, buffer: Arc<TailBuffer>, errors: Arc<TailErrors>) {
    let PartitionTail { spec, partition, end } = tail;
    let topic = spec.topic.as_str();
    let mut feed = TailFeed::new(Arc::clone(&buffer), &spec);
    let mut start = spec.start;
    let mut backoff = TAIL_BACKOFF;
    let mut position: Option<i64> = None;
    while !buffer.is_closed() {
        if feed.is_waiting() {
            feed.wait_for_room().await;
            continue;
        }
        if let (Some(end), Some(at)) = (end, position)
            && at >= end
        {
            return;
        }
        let result = match position {
            None => resolve_start(&client, topic, partition, start, isolation(&spec))
                .await
                .map(|o| {
                    position = Some(o);
                }),
            Some(offset) => match ops::fetch_isolated(
                &client,
                topic,
                partition,
                offset,
                (TAIL_MAX_WAIT, TAIL_MAX_BYTES),
                isolation(&spec),
            )
            .await
            {
                Ok(fetched) => {
                    // A search reads up to its end offset, even when more has arrived since.
                    let stop = end.unwrap_or(i64::MAX);
                    feed.offer(fetched.records.into_iter().filter(|r| r.offset < stop));
                    let markers: Vec<_> = fetched.markers.into_iter().filter(|m| m.offset < stop).collect();
                    feed.settle(&markers);
                    position = Some(fetched.next_offset.max(offset));
                    Ok(())
                }
                // Retention removed what the tail was about to read: go on from the new start.
                Err(RemoteError::Kafka { ref name, .. }) if name == "OFFSET_OUT_OF_RANGE" => {
                    position = None;
                    // A window goes on from where it was, kept within the log; a ring
                    // starts over as it was asked to.
                    if spec.mode == TailMode::Window {
                        start = SeekPosition::Offset(offset);
                    }
                    Err(RemoteError::Other(format!(
                        "offset {offset} is out of range; reading from the start"
                    )))
                }
                Err(e) => Err(e),
            },
        };
        match result {
            Ok(()) => {
                errors.set(&buffer, partition, None);
                backoff = TAIL_BACKOFF;
            }
            Err(e) => {
                errors.set(&buffer, partition, Some(e.to_string()));
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(TAIL_BACKOFF_MAX);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::BrokerAddress;
    use crate::remote::client::{BrokerInfo, PartitionMetadata, TopicMetadata};

    fn metadata(brokers: &[BrokerId], leader: Option<BrokerId>, isr: &[BrokerId]) -> Arc<ClusterMetadata> {
        Arc::new(ClusterMetadata {
            cluster_id: Some("prod-eu".into()),
            controller: brokers.first().copied(),
            brokers: brokers
                .iter()
                .map(|&id| BrokerInfo {
                    id,
                    address: BrokerAddress {
                        host: "10.0.0.1".into(),
                        port: 9092 + id as u16,
                    },
                    rack: None,
                })
                .collect(),
            topics: vec![TopicMetadata {
                name: "orders".into(),
                internal: false,
                error: 0,
                partitions: vec![PartitionMetadata {
                    partition: 0,
                    leader,
                    leader_epoch: 3,
                    replicas: vec![0, 1, 2],
                    isr: isr.to_vec(),
                    offline_replicas: Vec::new(),
                    error: 0,
                }],
            }],
            taken_at: Utc::now(),
        })
    }

    fn observation(metadata: Arc<ClusterMetadata>, end: i64) -> Observation {
        let mut o = Observation {
            metadata: Some(metadata),
            ..Observation::default()
        };
        o.offsets.insert(("orders".into(), 0), (Some(10), Some(end)));
        o
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::seconds(1_800_000_000 + seconds)
    }

    #[test]
    fn histories_of_groups_and_partitions_that_went_leave_nothing_behind() {
        let mut builder = ViewBuilder::new(None, "10.0.0.1:9092".into(), 100);
        let mut seen = observation(metadata(&[0, 1, 2], Some(1), &[1, 2]), 110);
        let group = |id: &str| -> GroupObservation {
            (
                ops::GroupDescription {
                    group_id: id.into(),
                    state: "Empty".into(),
                    protocol_type: "consumer".into(),
                    protocol: String::new(),
                    coordinator: 0,
                    members: Vec::new(),
                },
                vec![ops::CommittedOffset {
                    topic: "orders".into(),
                    partition: 0,
                    offset: 100,
                }],
            )
        };
        seen.groups = Some((0..500).map(|i| group(&format!("test-run-{i}"))).collect());
        builder.build(&seen, at(0));
        assert_eq!(builder.trends.lag_history.len(), 500);
        // A leader change marks the partition as changed; the groups are gone (expired).
        let mut later = observation(metadata(&[0, 1, 2], Some(2), &[1, 2]), 120);
        later.groups = Some(Vec::new());
        builder.build(&later, at(1));
        assert_eq!(builder.trends.partition_changed.len(), 1);
        assert!(builder.trends.lag_history.is_empty(), "the groups expired");
        let mut gone = observation(metadata(&[0, 1, 2], Some(2), &[1, 2]), 130);
        gone.offsets.clear();
        if let Some(m) = gone.metadata.as_mut() {
            Arc::make_mut(m).topics.clear();
        }
        builder.build(&gone, at(2));
        assert!(builder.trends.partition_changed.is_empty(), "the topic was deleted");
        assert!(builder.partition_rates.is_empty(), "and its rate with it");
    }

    #[test]
    fn the_first_view_says_attached_and_maps_kafka_metadata() {
        let mut builder = ViewBuilder::new(None, "10.0.0.1:9092".into(), 100);
        let view = builder.build(&observation(metadata(&[0, 1, 2], Some(1), &[1, 2]), 110), at(0));
        assert_eq!(view.cluster_name, "prod-eu");
        assert_eq!(view.events.len(), 1);
        assert!(view.events[0].text.starts_with("attached to prod-eu via 10.0.0.1:9092"));
        let p = &view.partitions[0];
        assert_eq!((p.leader, p.leader_epoch, p.preferred_leader), (Some(1), 3, 0));
        assert!(p.under_replicated);
        let roles: Vec<ReplicaRole> = p.replicas.iter().map(|r| r.role).collect();
        assert_eq!(
            roles,
            vec![ReplicaRole::OutOfSync, ReplicaRole::Leader, ReplicaRole::InSync]
        );
        assert_eq!(
            p.leader_log_end(),
            Some(110),
            "the leader's log end is its high watermark"
        );
        assert_eq!((p.high_watermark, p.log_start_offset), (Some(110), Some(10)));
        assert_eq!(view.topics[0].messages, 100);
        assert_eq!(view.topics[0].size_bytes, None);
        assert!(view.brokers[0].is_controller);
    }

    #[test]
    fn a_broker_that_leaves_the_metadata_is_down_and_its_replicas_offline() {
        let mut builder = ViewBuilder::new(None, "b".into(), 100);
        builder.build(&observation(metadata(&[0, 1, 2], Some(1), &[0, 1, 2]), 10), at(0));
        let view = builder.build(&observation(metadata(&[0, 2], Some(2), &[0, 2]), 10), at(1));
        assert_eq!(view.brokers.len(), 3, "a broker once seen stays listed");
        assert_eq!(view.brokers[1].status, BrokerStatus::Down);
        assert_eq!(view.partitions[0].replicas[1].role, ReplicaRole::Offline);
        assert_eq!(
            view.problems[0],
            "broker 1 10.0.0.1:9093: down (gone from the metadata)"
        );
        let texts: Vec<&str> = view.events.iter().map(|e| e.text.as_str()).collect();
        assert!(texts.contains(&"leader orders-0: 1 -> 2, epoch 3"), "{texts:?}");
        assert!(view.partitions[0].changed_at.is_some());
    }

    #[test]
    fn rates_come_from_successive_high_watermarks() {
        let mut builder = ViewBuilder::new(None, "b".into(), 100);
        builder.build(&observation(metadata(&[0, 1, 2], Some(1), &[0, 1, 2]), 100), at(0));
        let view = builder.build(&observation(metadata(&[0, 1, 2], Some(1), &[0, 1, 2]), 300), at(2));
        assert_eq!(view.topics[0].messages_per_sec, 100.0);
        assert_eq!(view.brokers[1].throughput, Throughput::Messages { in_per_sec: 100.0 });
        assert_eq!(view.brokers[0].throughput, Throughput::Messages { in_per_sec: 0.0 });
    }

    #[test]
    fn group_lag_is_the_high_watermark_minus_the_commit_and_a_failed_read_keeps_the_groups() {
        let mut builder = ViewBuilder::new(None, "b".into(), 100);
        let mut with_group = observation(metadata(&[0, 1, 2], Some(1), &[0, 1, 2]), 110);
        with_group.groups = Some(vec![(
            GroupDescription {
                group_id: "billing".into(),
                state: "Stable".into(),
                protocol_type: "consumer".into(),
                protocol: "range".into(),
                coordinator: 2,
                members: vec![ops::GroupMember {
                    member_id: "m-1".into(),
                    group_instance_id: None,
                    client_id: "c".into(),
                    host: "/10.0.0.9".into(),
                    assignment: vec![("orders".into(), 0)],
                }],
            },
            vec![ops::CommittedOffset {
                topic: "orders".into(),
                partition: 0,
                offset: 100,
            }],
        )]);
        let view = builder.build(&with_group, at(0));
        let billing = &view.groups[0];
        assert_eq!((billing.offsets[0].end, billing.offsets[0].lag), (Some(110), Some(10)));
        assert_eq!(billing.total_lag, 10);
        assert_eq!(billing.owner("orders", 0).map(|m| m.member_id.as_str()), Some("m-1"));
        assert_eq!(view.topics[0].total_lag, Some(10));
        let unread = observation(metadata(&[0, 1, 2], Some(1), &[0, 1, 2]), 110);
        let later = builder.build(&unread, at(1));
        assert_eq!(later.groups, view.groups, "a failed read is not a deleted group");
        assert_eq!(later.events.len(), 1, "nothing happened: {:?}", later.events);
    }

    #[test]
    fn a_failed_round_keeps_the_picture_and_names_the_problem() {
        let mut builder = ViewBuilder::new(None, "b".into(), 100);
        let first = builder.build(&observation(metadata(&[0, 1, 2], Some(1), &[0, 1, 2]), 10), at(0));
        let failed = Observation {
            problems: vec!["cannot read the cluster's metadata: timed out".into()],
            health: vec![BrokerHealth {
                id: 1,
                address: BrokerAddress {
                    host: "10.0.0.1".into(),
                    port: 9093,
                },
                connected: false,
                last_error: Some("connection refused".into()),
                failing_since: Some(at(1)),
            }],
            ..Observation::default()
        };
        let view = builder.build(&failed, at(1));
        assert_eq!(view.partitions, first.partitions);
        assert_eq!(view.brokers[1].status, BrokerStatus::Unreachable);
        assert_eq!(
            view.problems,
            vec![
                "broker 1 10.0.0.1:9093: connection refused".to_string(),
                "cannot read the cluster's metadata: timed out".to_string()
            ]
        );
    }
}
