//! The seeded schedule: a cluster setup and a list of steps (client actions and faults, each
//! followed by a wait), drawn from one seed by a model of what the schedule itself did (which
//! brokers it stopped, which links it cut, which consumers it started). The model never looks
//! at the engine, so the schedule is a pure function of the seed and can be printed, cut short
//! or edited by hand; an action that no longer applies (a broker already up) just fails.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use super::Rng;
use crate::engine::{Acks, BrokerId, LeaderElection, LinkFault, NodeId};
use crate::storage::FlushPolicy;
use crate::storage::records::Compression;

/// The most brokers a whole-cluster restart grows to.
const MAX_BROKERS: i32 = 5;
/// The most members a simulated consumer group has at once.
const MAX_MEMBERS: usize = 3;
/// Keys of keyed records: few enough that each repeats, so per-key order means something.
pub const KEY_SPACE: u64 = 8;
/// The share of generator 2's seeds (in percent) whose first topic is compacted.
const COMPACTED_SHARE: u64 = 30;

/// The network node of producer `p` (each client has its own links to cut).
pub fn producer_node(p: usize) -> NodeId {
    NodeId::Client(1 + p as u32)
}

/// The network node of transactional writer `w` (every instance of it).
pub fn txn_writer_node(w: usize) -> NodeId {
    NodeId::Client(50 + w as u32)
}

/// The network node of member `member` of group `group`.
pub fn member_node(group: usize, member: usize) -> NodeId {
    NodeId::Client(100 + 100 * group as u32 + member as u32)
}

#[derive(Debug, Clone, PartialEq)]
pub struct TopicSpec {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i32,
    pub min_insync_replicas: i32,
    pub unclean_leader_election: bool,
    /// `cleanup.policy=compact` with small segments and an eager cleaner: its producers
    /// always key their records (Kafka refuses keyless records on a compacted topic), and a
    /// record may vanish once a later record of its key is in the log.
    pub compacted: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProducerSpec {
    pub acks: Acks,
    pub idempotent: bool,
    pub compression: Compression,
    pub max_in_flight: usize,
    pub linger_ms: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupSpec {
    pub name: String,
    pub topics: Vec<String>,
    pub assignor: String,
    pub auto_commit: bool,
    pub session_timeout_ms: u64,
}

/// A transactional writer: a process that runs transactions one after another in the
/// background for the whole run (begin, one batch to some of its partitions, then commit or
/// abort), with its own `transactional.id`. A [`Action::CrashTxnWriter`] replaces its
/// process with a new instance of the same id.
#[derive(Debug, Clone, PartialEq)]
pub struct TxnWriterSpec {
    pub transactional_id: String,
    pub topic: String,
    /// The partitions its transactions write (each transaction some of them).
    pub partitions: Vec<i32>,
    /// The share of transactions (in percent) it aborts on purpose.
    pub abort_percent: u64,
    /// The most records per partition in one transaction.
    pub max_records: u32,
    /// Simulated time between the end of one transaction and the next.
    pub pause_ms: u64,
}

/// The cluster and clients a seed starts with.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    pub brokers: i32,
    pub offsets_topic_partitions: i32,
    pub unclean_leader_election: bool,
    pub leader_election: LeaderElection,
    /// The automatic preferred-leader rebalance and its interval, when on.
    pub auto_rebalance_ms: Option<u64>,
    pub flush: FlushPolicy,
    pub segment_bytes: u64,
    pub replica_lag_time_max_ms: u64,
    pub replica_fetch_wait_max_ms: u64,
    pub group_initial_rebalance_delay_ms: u64,
    pub topics: Vec<TopicSpec>,
    pub producers: Vec<ProducerSpec>,
    pub groups: Vec<GroupSpec>,
    /// Generator 3: a third of the seeds run one or two transactional writers.
    pub txn_writers: Vec<TxnWriterSpec>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Enqueue `records` records with one of the seed's producers: to `partition`, or, when
    /// `keyed`, each with a key of [`KEY_SPACE`] to the partition the key hashes to.
    Produce {
        producer: usize,
        topic: String,
        partition: i32,
        records: u32,
        keyed: bool,
    },
    /// The producer's process dies: nothing it holds is sent or retried, and it never learns
    /// the fate of what was in flight. The next produce starts a new instance (a new id).
    CrashProducer(usize),
    /// Nothing but the step's wait.
    Wait,
    /// Transactional writer `writer`'s process is replaced by a new instance with the same
    /// `transactional.id`, whose init fences the old one and aborts what it left open. The old
    /// process dies mid-transaction, or, as a `zombie`, stalls and carries on with its open
    /// transaction as if nothing happened (its writes and commit must be refused).
    CrashTxnWriter {
        writer: usize,
        zombie: bool,
    },
    JoinConsumer {
        group: usize,
        member: usize,
    },
    /// The member commits and leaves the group.
    CloseConsumer {
        group: usize,
        member: usize,
    },
    /// The member vanishes without leaving: its session has to time out.
    CrashConsumer {
        group: usize,
        member: usize,
    },
    CommitConsumer {
        group: usize,
        member: usize,
    },
    Kill(BrokerId),
    /// A kill that also drops what the broker never fsynced.
    PowerLoss(BrokerId),
    /// Controlled shutdown.
    Stop(BrokerId),
    Start(BrokerId),
    Pause(BrokerId),
    Resume(BrokerId),
    Link {
        a: NodeId,
        b: NodeId,
        fault: Option<LinkFault>,
    },
    /// A fault on the way from `from` to `to` only (or its healing).
    OneWayLink {
        from: NodeId,
        to: NodeId,
        fault: Option<LinkFault>,
    },
    ElectPreferred,
    /// A setting changed while the cluster runs.
    Setting(LiveChange),
    /// The topic grows to `total` partitions.
    AddPartitions {
        topic: String,
        total: i32,
    },
    CreateTopic(TopicSpec),
    DeleteTopic(String),
    /// Every broker shut down, then the cluster started again on the same data directory
    /// with this many brokers.
    RestartCluster {
        brokers: i32,
    },
    /// Every running broker loses power at once (each drops what it never fsynced), then the
    /// cluster starts again on the same data directory with this many brokers.
    PowerLossCluster {
        brokers: i32,
    },
}

/// A setting changed live, as an operator or a trainer changes it.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveChange {
    /// `unclean.leader.election.enable` of a topic, or of the cluster (`None`).
    Unclean {
        topic: Option<String>,
        enabled: bool,
    },
    MinInsync {
        topic: String,
        value: i32,
    },
    AutoRebalance(bool),
}

impl Action {
    /// Whether the action injects (or heals) a fault.
    pub fn is_fault(&self) -> bool {
        self.fault_kind().is_some()
    }

    /// The kind of fault the action injects or heals, as `kdeck bench sim` counts them;
    /// `None` for client work.
    pub fn fault_kind(&self) -> Option<&'static str> {
        Some(match self {
            Action::Kill(_) => "kill",
            Action::PowerLoss(_) => "power loss",
            Action::Stop(_) => "controlled stop",
            Action::Start(_) => "start",
            Action::Pause(_) => "pause",
            Action::Resume(_) => "resume",
            Action::Link { fault: None, .. } => "link healed",
            Action::Link { a, b, .. } if [a, b].contains(&&NodeId::Controller) => "controller link fault",
            Action::Link { a, b, .. } if [a, b].iter().any(|n| matches!(n, NodeId::Client(_))) => "client link fault",
            Action::Link {
                fault: Some(LinkFault::Cut),
                ..
            } => "link cut",
            Action::Link {
                fault: Some(LinkFault::Delay(_)),
                ..
            } => "link delayed",
            Action::Link {
                fault: Some(LinkFault::Drop { .. }),
                ..
            } => "link dropping",
            Action::OneWayLink { fault: None, .. } => "one-way link healed",
            Action::OneWayLink { fault: Some(_), .. } => "one-way link fault",
            Action::ElectPreferred => "preferred election",
            Action::Setting(_) => "setting changed",
            Action::AddPartitions { .. } => "partitions added",
            Action::CrashConsumer { .. } => "consumer crash",
            Action::CrashProducer(_) => "producer crash",
            Action::CrashTxnWriter { .. } => "transactional writer crash",
            Action::DeleteTopic(_) => "topic deleted",
            Action::RestartCluster { .. } => "cluster restart",
            Action::PowerLossCluster { .. } => "cluster power loss",
            Action::Produce { .. }
            | Action::Wait
            | Action::JoinConsumer { .. }
            | Action::CloseConsumer { .. }
            | Action::CommitConsumer { .. }
            | Action::CreateTopic(_) => return None,
        })
    }

    /// Every kind [`Action::fault_kind`] names, for reports that list each.
    pub const FAULT_KINDS: [&'static str; 23] = [
        "kill",
        "power loss",
        "controlled stop",
        "start",
        "pause",
        "resume",
        "link cut",
        "link delayed",
        "link dropping",
        "link healed",
        "controller link fault",
        "client link fault",
        "one-way link fault",
        "one-way link healed",
        "preferred election",
        "setting changed",
        "partitions added",
        "consumer crash",
        "producer crash",
        "transactional writer crash",
        "topic deleted",
        "cluster restart",
        "cluster power loss",
    ];
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub action: Action,
    /// Simulated time to let pass after the action.
    pub wait: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub seed: u64,
    /// The generator that drew it: [`GENERATOR`] for new runs; the shrunk schedules of
    /// failures fixed before it grew new kinds of steps replay with the one they were found
    /// with.
    pub generator: u32,
    /// The clients speak the Kafka protocol to the brokers (over in-memory connections
    /// served by the wire layer) instead of calling the engine: a quarter of generator 2's
    /// seeds, drawn apart from the rest so the other draws stay as they were.
    pub wire: bool,
    pub setup: Setup,
    pub steps: Vec<Step>,
}

/// The current schedule generator. Generator 1 drew no setting changes, one-way or
/// controller or per-client link faults, added partitions, producer crashes, whole-cluster
/// power losses or keyed records; generator 2 no transactional writers (generator 3 draws
/// them from an rng of their own, so its seeds' other draws are generator 2's).
pub const GENERATOR: u32 = 3;

/// The share of generator 3's seeds (in percent) that run transactional writers.
const TXN_SHARE: u64 = 33;
/// Mixed into a seed for the rng that draws the transactional writers and their crashes.
const TXN_SALT: u64 = 0x5452_414E_5341_4354;

/// What the schedule believes a broker is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Believed {
    Up,
    Paused,
    Down,
}

/// The schedule's own record of what it did, so that it picks actions that make sense.
struct Model {
    brokers: BTreeMap<BrokerId, Believed>,
    links: BTreeSet<(NodeId, NodeId)>,
    one_way: BTreeSet<(NodeId, NodeId)>,
    topics: Vec<(String, i32, i32)>,
    next_topic: usize,
    members: Vec<BTreeSet<usize>>,
    next_member: Vec<usize>,
}

impl Model {
    fn with(&self, state: Believed) -> Vec<BrokerId> {
        self.brokers
            .iter()
            .filter(|(_, s)| **s == state)
            .map(|(id, _)| *id)
            .collect()
    }
}

impl Schedule {
    /// The schedule of `seed`, `steps` long. A shorter schedule of the same seed is a prefix
    /// of a longer one.
    pub fn generate(seed: u64, steps: usize) -> Schedule {
        Schedule::generate_with(seed, steps, GENERATOR)
    }

    /// The schedule `generator` draws for `seed` (see [`GENERATOR`]).
    pub fn generate_with(seed: u64, steps: usize, generator: u32) -> Schedule {
        let mut rng = Rng::new(seed);
        let mut setup = Setup::draw(&mut rng);
        // A third of generator 2's seeds make their first topic compacted, drawn apart from
        // the rest so the other draws stay as they were.
        if generator >= 2
            && Rng::new(seed ^ 0x434F_4D50_4143_5421).chance(COMPACTED_SHARE)
            && let Some(first) = setup.topics.first_mut()
        {
            first.compacted = true;
        }
        let mut model = Model {
            brokers: (0..setup.brokers).map(|b| (b, Believed::Up)).collect(),
            links: BTreeSet::new(),
            one_way: BTreeSet::new(),
            topics: setup
                .topics
                .iter()
                .map(|t| (t.name.clone(), t.partitions, t.replication_factor))
                .collect(),
            next_topic: setup.topics.len(),
            members: vec![BTreeSet::new(); setup.groups.len()],
            next_member: vec![0; setup.groups.len()],
        };
        // Generator 3's transactional writers, drawn apart from the rest so the other draws
        // stay as they were; their crashes take the place of some of the plain waits.
        let mut txn_rng = Rng::new(seed ^ TXN_SALT);
        if generator >= 3 && txn_rng.chance(TXN_SHARE) {
            setup.txn_writers = draw_txn_writers(&mut txn_rng, &setup.topics);
        }
        let steps = (0..steps)
            .map(|_| {
                let action = if generator >= 2 {
                    next_action_2(&mut rng, &setup, &mut model)
                } else {
                    next_action(&mut rng, &setup, &mut model, 1)
                };
                let action = match action {
                    Action::Wait if !setup.txn_writers.is_empty() && txn_rng.chance(40) => Action::CrashTxnWriter {
                        writer: txn_rng.below(setup.txn_writers.len() as u64) as usize,
                        zombie: txn_rng.chance(50),
                    },
                    other => other,
                };
                let wait = Duration::from_millis(match rng.below(100) {
                    0..30 => 0,
                    30..70 => rng.between(10, 300),
                    70..95 => rng.between(300, 2_000),
                    _ => rng.between(2_000, 8_000),
                });
                Step { action, wait }
            })
            .collect();
        Schedule {
            seed,
            generator,
            wire: generator >= 2 && Rng::new(seed ^ 0x5749_5245_5345_4544).chance(25),
            setup,
            steps,
        }
    }
}

impl Setup {
    fn draw(rng: &mut Rng) -> Setup {
        let brokers = rng.between(3, 4) as i32;
        let topics = (0..rng.between(1, 2))
            .map(|i| TopicSpec::draw(rng, format!("t{i}"), brokers))
            .collect::<Vec<_>>();
        let producers = (0..rng.between(2, 3)).map(|_| ProducerSpec::draw(rng)).collect();
        let topic_names: Vec<String> = topics.iter().map(|t| t.name.clone()).collect();
        let groups = (0..rng.between(1, 2))
            .map(|i| GroupSpec {
                name: format!("g{i}"),
                topics: topic_names.clone(),
                assignor: if rng.chance(50) { "range" } else { "cooperative-sticky" }.into(),
                auto_commit: rng.chance(60),
                session_timeout_ms: rng.between(3, 6) * 1000,
            })
            .collect();
        Setup {
            brokers,
            offsets_topic_partitions: rng.between(2, 3) as i32,
            unclean_leader_election: rng.chance(20),
            leader_election: if rng.chance(75) {
                LeaderElection::Kafka
            } else {
                LeaderElection::Balanced
            },
            auto_rebalance_ms: rng.chance(30).then(|| rng.between(5, 15) * 1000),
            flush: match rng.below(100) {
                0..70 => FlushPolicy::Never,
                70..85 => FlushPolicy::IntervalMs(rng.between(100, 1_000)),
                _ => FlushPolicy::Always,
            },
            segment_bytes: [16 << 10, 64 << 10, 1 << 20][rng.below(3) as usize],
            replica_lag_time_max_ms: rng.between(2, 6) * 1000,
            replica_fetch_wait_max_ms: rng.between(100, 500),
            group_initial_rebalance_delay_ms: rng.between(0, 500),
            topics,
            producers,
            groups,
            txn_writers: Vec::new(),
        }
    }
}

/// One or two writers on the seed's topics that are not compacted (a transaction's records
/// carry no key; Kafka refuses keyless records on a compacted topic); none without one.
fn draw_txn_writers(rng: &mut Rng, topics: &[TopicSpec]) -> Vec<TxnWriterSpec> {
    let plain: Vec<&TopicSpec> = topics.iter().filter(|t| !t.compacted).collect();
    if plain.is_empty() {
        return Vec::new();
    }
    (0..rng.between(1, 2))
        .filter_map(|w| {
            let topic = *rng.pick(&plain)?;
            let mut partitions: Vec<i32> = (0..topic.partitions).filter(|_| rng.chance(70)).collect();
            if partitions.is_empty() {
                partitions.push(rng.below(topic.partitions as u64) as i32);
            }
            Some(TxnWriterSpec {
                transactional_id: format!("tx{w}"),
                topic: topic.name.clone(),
                partitions,
                abort_percent: rng.between(15, 40),
                max_records: rng.between(1, 5) as u32,
                pause_ms: rng.between(50, 500),
            })
        })
        .collect()
}

impl TopicSpec {
    fn draw(rng: &mut Rng, name: String, live_brokers: i32) -> TopicSpec {
        let replication_factor = rng.between(1, live_brokers.clamp(1, 3) as u64) as i32;
        let replication_factor = if replication_factor == 1 && rng.chance(70) {
            live_brokers.clamp(1, 3)
        } else {
            replication_factor
        };
        TopicSpec {
            name,
            partitions: rng.between(1, 3) as i32,
            replication_factor,
            min_insync_replicas: rng.between(1, replication_factor.min(2) as u64) as i32,
            unclean_leader_election: rng.chance(10),
            compacted: false,
        }
    }
}

impl ProducerSpec {
    fn draw(rng: &mut Rng) -> ProducerSpec {
        let acks = match rng.below(100) {
            0..60 => Acks::All,
            60..85 => Acks::Leader,
            _ => Acks::None,
        };
        let idempotent = acks == Acks::All && rng.chance(60);
        ProducerSpec {
            acks,
            idempotent,
            compression: match rng.below(100) {
                0..60 => Compression::None,
                60..70 => Compression::Gzip,
                70..80 => Compression::Snappy,
                80..90 => Compression::Lz4,
                _ => Compression::Zstd,
            },
            max_in_flight: rng.between(1, 5) as usize,
            linger_ms: rng.between(0, 10),
        }
    }
}

fn next_action(rng: &mut Rng, setup: &Setup, model: &mut Model, generator: u32) -> Action {
    match rng.below(100) {
        0..35 => produce(rng, setup, model, generator),
        35..43 => Action::Wait,
        43..55 => consumer_action(rng, setup, model),
        55..75 => broker_action(rng, model).unwrap_or_else(|| produce(rng, setup, model, generator)),
        75..85 => link_action(rng, setup, model, generator),
        85..88 => Action::ElectPreferred,
        88..93 => topic_action(rng, model),
        93..95 => restart(rng, model),
        _ => produce(rng, setup, model, generator),
    }
}

/// Generator 2: one step in five is of the kinds generator 1 never drew; the rest are drawn
/// as before (with keyed records and links to the controller and to each client).
fn next_action_2(rng: &mut Rng, setup: &Setup, model: &mut Model) -> Action {
    if !rng.chance(20) {
        return next_action(rng, setup, model, 2);
    }
    match rng.below(100) {
        0..30 => one_way_link_action(rng, setup, model),
        30..55 => setting_action(rng, model),
        55..70 => add_partitions(rng, model).unwrap_or(Action::Wait),
        70..90 => Action::CrashProducer(rng.below(setup.producers.len() as u64) as usize),
        _ => {
            let Action::RestartCluster { brokers } = restart(rng, model) else {
                return Action::Wait;
            };
            Action::PowerLossCluster { brokers }
        }
    }
}

fn produce(rng: &mut Rng, setup: &Setup, model: &Model, generator: u32) -> Action {
    let (topic, partitions, _) = rng.pick(&model.topics).cloned().unwrap_or_else(|| ("t0".into(), 1, 1));
    Action::Produce {
        producer: rng.below(setup.producers.len() as u64) as usize,
        topic,
        partition: rng.below(partitions as u64) as i32,
        records: if rng.chance(10) {
            rng.between(20, 100) as u32
        } else {
            rng.between(1, 10) as u32
        },
        keyed: generator >= 2 && rng.chance(30),
    }
}

fn consumer_action(rng: &mut Rng, setup: &Setup, model: &mut Model) -> Action {
    let group = rng.below(setup.groups.len() as u64) as usize;
    let alive: Vec<usize> = model.members[group].iter().copied().collect();
    if alive.len() < MAX_MEMBERS && (alive.is_empty() || rng.chance(40)) {
        let member = model.next_member[group];
        model.next_member[group] += 1;
        model.members[group].insert(member);
        return Action::JoinConsumer { group, member };
    }
    let member = *rng.pick(&alive).unwrap_or(&0);
    match rng.below(100) {
        0..30 => {
            model.members[group].remove(&member);
            Action::CloseConsumer { group, member }
        }
        30..55 => {
            model.members[group].remove(&member);
            Action::CrashConsumer { group, member }
        }
        _ => Action::CommitConsumer { group, member },
    }
}

fn broker_action(rng: &mut Rng, model: &mut Model) -> Option<Action> {
    let up = model.with(Believed::Up);
    let paused = model.with(Believed::Paused);
    let down = model.with(Believed::Down);
    let total = model.brokers.len();
    if !down.is_empty() && (rng.chance(45) || down.len() * 2 >= total) {
        let b = *rng.pick(&down)?;
        model.brokers.insert(b, Believed::Up);
        return Some(Action::Start(b));
    }
    if !paused.is_empty() && rng.chance(50) {
        let b = *rng.pick(&paused)?;
        model.brokers.insert(b, Believed::Up);
        return Some(Action::Resume(b));
    }
    // The last running broker goes down only now and then: a dead cluster tests little.
    if up.len() <= 1 && !rng.chance(10) {
        return None;
    }
    let b = *rng.pick(&up)?;
    let (action, state) = match rng.below(100) {
        0..35 => (Action::Kill(b), Believed::Down),
        35..50 => (Action::PowerLoss(b), Believed::Down),
        50..80 => (Action::Stop(b), Believed::Down),
        _ => (Action::Pause(b), Believed::Paused),
    };
    model.brokers.insert(b, state);
    Some(action)
}

/// A node some link fault can involve: another broker (most often), the controller, or
/// one of the clients (generator 2 gives each its own node; generator 1 had one).
fn peer(rng: &mut Rng, setup: &Setup, model: &Model, x: BrokerId, generator: u32) -> NodeId {
    let ids: Vec<BrokerId> = model.brokers.keys().copied().filter(|b| *b != x).collect();
    if generator < 2 {
        return if rng.chance(70) {
            NodeId::Broker(*rng.pick(&ids).unwrap_or(&0))
        } else {
            NodeId::Client(0)
        };
    }
    match rng.below(100) {
        0..60 => NodeId::Broker(*rng.pick(&ids).unwrap_or(&0)),
        60..75 => NodeId::Controller,
        75..90 => producer_node(rng.below(setup.producers.len() as u64) as usize),
        _ => {
            let group = rng.below(setup.groups.len() as u64) as usize;
            let members: Vec<usize> = model
                .members
                .get(group)
                .map(|m| m.iter().copied().collect())
                .unwrap_or_default();
            member_node(group, *rng.pick(&members).unwrap_or(&0))
        }
    }
}

fn draw_fault(rng: &mut Rng) -> LinkFault {
    match rng.below(100) {
        0..40 => LinkFault::Cut,
        40..70 => LinkFault::Delay(Duration::from_millis(rng.between(20, 1_500))),
        _ => LinkFault::Drop {
            one_in: rng.between(2, 6) as u32,
        },
    }
}

fn link_action(rng: &mut Rng, setup: &Setup, model: &mut Model, generator: u32) -> Action {
    let faulty: Vec<(NodeId, NodeId)> = model.links.iter().copied().collect();
    if let Some(&(a, b)) = rng.pick(&faulty).filter(|_| rng.chance(50)) {
        model.links.remove(&(a, b));
        return Action::Link { a, b, fault: None };
    }
    let ids: Vec<BrokerId> = model.brokers.keys().copied().collect();
    let x = *rng.pick(&ids).unwrap_or(&0);
    let a = peer(rng, setup, model, x, generator);
    let b = NodeId::Broker(x);
    let fault = draw_fault(rng);
    let key = if a < b { (a, b) } else { (b, a) };
    model.links.insert(key);
    Action::Link {
        a: key.0,
        b: key.1,
        fault: Some(fault),
    }
}

fn one_way_link_action(rng: &mut Rng, setup: &Setup, model: &mut Model) -> Action {
    let faulty: Vec<(NodeId, NodeId)> = model.one_way.iter().copied().collect();
    if let Some(&(from, to)) = rng.pick(&faulty).filter(|_| rng.chance(40)) {
        model.one_way.remove(&(from, to));
        return Action::OneWayLink { from, to, fault: None };
    }
    let ids: Vec<BrokerId> = model.brokers.keys().copied().collect();
    let x = *rng.pick(&ids).unwrap_or(&0);
    let other = peer(rng, setup, model, x, 2);
    let (from, to) = if rng.chance(50) {
        (NodeId::Broker(x), other)
    } else {
        (other, NodeId::Broker(x))
    };
    // Towards a client, the fault loses only the answers to its requests: what it sent
    // lands, and it never learns so.
    model.one_way.insert((from, to));
    Action::OneWayLink {
        from,
        to,
        fault: Some(draw_fault(rng)),
    }
}

fn setting_action(rng: &mut Rng, model: &Model) -> Action {
    let topic = rng.pick(&model.topics).cloned();
    match (rng.below(100), topic) {
        (0..35, Some((name, _, rf))) => Action::Setting(LiveChange::MinInsync {
            topic: name,
            value: rng.between(1, rf.clamp(1, 3) as u64) as i32,
        }),
        (35..55, Some((name, _, _))) => Action::Setting(LiveChange::Unclean {
            topic: Some(name),
            enabled: rng.chance(50),
        }),
        (55..75, _) => Action::Setting(LiveChange::Unclean {
            topic: None,
            enabled: rng.chance(40),
        }),
        _ => Action::Setting(LiveChange::AutoRebalance(rng.chance(50))),
    }
}

fn add_partitions(rng: &mut Rng, model: &mut Model) -> Option<Action> {
    let index = rng.below(model.topics.len() as u64) as usize;
    let entry = model.topics.get_mut(index)?;
    if entry.1 >= 6 {
        return None;
    }
    entry.1 += rng.between(1, 2) as i32;
    Some(Action::AddPartitions {
        topic: entry.0.clone(),
        total: entry.1,
    })
}

fn topic_action(rng: &mut Rng, model: &mut Model) -> Action {
    if model.topics.len() > 1 && rng.chance(40) {
        let index = rng.below(model.topics.len() as u64) as usize;
        let (name, _, _) = model.topics.remove(index);
        return Action::DeleteTopic(name);
    }
    // Names are never reused: an acknowledgement can then only be for one incarnation.
    let name = format!("t{}", model.next_topic);
    model.next_topic += 1;
    let live = model.brokers.values().filter(|s| **s == Believed::Up).count() as i32;
    let spec = TopicSpec::draw(rng, name, live.max(1));
    model
        .topics
        .push((spec.name.clone(), spec.partitions, spec.replication_factor));
    Action::CreateTopic(spec)
}

fn restart(rng: &mut Rng, model: &mut Model) -> Action {
    let now = model.brokers.len() as i32;
    let brokers = match rng.below(3) {
        0 if now > 2 => now - 1,
        1 if now < MAX_BROKERS => now + 1,
        _ => now,
    };
    model.brokers = (0..brokers).map(|b| (b, Believed::Up)).collect();
    model.links.clear();
    model.one_way.clear();
    Action::RestartCluster { brokers }
}

fn describe_fault(fault: &LinkFault) -> String {
    match fault {
        LinkFault::Cut => "cut".into(),
        LinkFault::Delay(d) => format!("delay of {} ms", d.as_millis()),
        LinkFault::Drop { one_in } => format!("drop 1 in {one_in}"),
    }
}

fn node(n: &NodeId) -> String {
    match n {
        NodeId::Broker(b) => format!("broker {b}"),
        NodeId::Controller => "controller".into(),
        NodeId::Client(c) => format!("client {c}"),
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Produce {
                producer,
                topic,
                partition,
                records,
                keyed: false,
            } => write!(f, "producer {producer} sends {records} records to {topic}-{partition}"),
            Action::Produce {
                producer,
                topic,
                records,
                keyed: true,
                ..
            } => write!(f, "producer {producer} sends {records} keyed records to {topic}"),
            Action::CrashProducer(p) => write!(f, "producer {p} crashes"),
            Action::CrashTxnWriter { writer, zombie: false } => {
                write!(
                    f,
                    "transactional writer {writer} crashes mid-transaction; a new instance takes over"
                )
            }
            Action::CrashTxnWriter { writer, zombie: true } => write!(
                f,
                "transactional writer {writer} stalls and a new instance takes over; the old one carries on as a zombie"
            ),
            Action::OneWayLink { from, to, fault: None } => {
                write!(f, "heal the way from {} to {}", node(from), node(to))
            }
            Action::OneWayLink {
                from,
                to,
                fault: Some(fault),
            } => write!(
                f,
                "{} on the way from {} to {} only",
                describe_fault(fault),
                node(from),
                node(to)
            ),
            Action::Setting(LiveChange::Unclean {
                topic: Some(t),
                enabled,
            }) => {
                write!(f, "set unclean.leader.election.enable={enabled} on topic {t}")
            }
            Action::Setting(LiveChange::Unclean { topic: None, enabled }) => {
                write!(f, "set unclean.leader.election.enable={enabled} on the cluster")
            }
            Action::Setting(LiveChange::MinInsync { topic, value }) => {
                write!(f, "set min.insync.replicas={value} on topic {topic}")
            }
            Action::Setting(LiveChange::AutoRebalance(on)) => write!(f, "set auto.leader.rebalance.enable={on}"),
            Action::AddPartitions { topic, total } => write!(f, "grow topic {topic} to {total} partitions"),
            Action::PowerLossCluster { brokers } => {
                write!(
                    f,
                    "power loss on every broker, then start the cluster with {brokers} brokers"
                )
            }
            Action::Wait => write!(f, "wait"),
            Action::JoinConsumer { group, member } => write!(f, "consumer g{group}/{member} joins"),
            Action::CloseConsumer { group, member } => write!(f, "consumer g{group}/{member} leaves"),
            Action::CrashConsumer { group, member } => write!(f, "consumer g{group}/{member} crashes"),
            Action::CommitConsumer { group, member } => write!(f, "consumer g{group}/{member} commits"),
            Action::Kill(b) => write!(f, "kill broker {b}"),
            Action::PowerLoss(b) => write!(f, "power loss on broker {b}"),
            Action::Stop(b) => write!(f, "stop broker {b} (controlled shutdown)"),
            Action::Start(b) => write!(f, "start broker {b}"),
            Action::Pause(b) => write!(f, "pause broker {b}"),
            Action::Resume(b) => write!(f, "resume broker {b}"),
            Action::Link { a, b, fault: None } => write!(f, "heal link {} <-> {}", node(a), node(b)),
            Action::Link {
                a,
                b,
                fault: Some(LinkFault::Cut),
            } => write!(f, "cut link {} <-> {}", node(a), node(b)),
            Action::Link {
                a,
                b,
                fault: Some(LinkFault::Delay(d)),
            } => write!(f, "delay link {} <-> {} by {} ms", node(a), node(b), d.as_millis()),
            Action::Link {
                a,
                b,
                fault: Some(LinkFault::Drop { one_in }),
            } => write!(f, "drop 1 in {one_in} on link {} <-> {}", node(a), node(b)),
            Action::ElectPreferred => write!(f, "preferred-leader election"),
            Action::CreateTopic(t) => write!(
                f,
                "create topic {} ({} partitions, RF {}, min.insync {}{}{})",
                t.name,
                t.partitions,
                t.replication_factor,
                t.min_insync_replicas,
                if t.unclean_leader_election { ", unclean" } else { "" },
                if t.compacted { ", compacted" } else { "" }
            ),
            Action::DeleteTopic(t) => write!(f, "delete topic {t}"),
            Action::RestartCluster { brokers } => write!(f, "restart the whole cluster with {brokers} brokers"),
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, then wait {} ms", self.action, self.wait.as_millis())
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.setup;
        writeln!(
            f,
            "seed {} (generator {}{}): {} brokers, {} offsets partitions, unclean {}, {:?} elections, auto rebalance {}, flush {:?}, segments of {} bytes, replica lag {} ms, fetch wait {} ms",
            self.seed,
            self.generator,
            if self.wire {
                ", clients over the Kafka protocol"
            } else {
                ""
            },
            s.brokers,
            s.offsets_topic_partitions,
            s.unclean_leader_election,
            s.leader_election,
            s.auto_rebalance_ms
                .map_or_else(|| "off".to_string(), |ms| format!("every {ms} ms")),
            s.flush,
            s.segment_bytes,
            s.replica_lag_time_max_ms,
            s.replica_fetch_wait_max_ms,
        )?;
        for t in &s.topics {
            writeln!(f, "  {}", Action::CreateTopic(t.clone()))?;
        }
        for (i, p) in s.producers.iter().enumerate() {
            writeln!(
                f,
                "  producer {i}: acks {:?}, idempotent {}, {:?}, {} in flight, linger {} ms",
                p.acks, p.idempotent, p.compression, p.max_in_flight, p.linger_ms
            )?;
        }
        for g in &s.groups {
            writeln!(
                f,
                "  group {} on {:?}: {}, auto commit {}, session {} ms",
                g.name, g.topics, g.assignor, g.auto_commit, g.session_timeout_ms
            )?;
        }
        for (i, w) in s.txn_writers.iter().enumerate() {
            writeln!(
                f,
                "  transactional writer {i} ({}): {} partitions {:?}, up to {} records a partition, aborts {}%, pauses {} ms",
                w.transactional_id, w.topic, w.partitions, w.max_records, w.abort_percent, w.pause_ms
            )?;
        }
        for (i, step) in self.steps.iter().enumerate() {
            writeln!(f, "  step {i}: {step}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_always_draws_the_same_schedule_and_a_shorter_one_is_its_prefix() {
        let long = Schedule::generate(42, 80);
        assert_eq!(long, Schedule::generate(42, 80));
        let short = Schedule::generate(42, 30);
        assert_eq!(short.setup, long.setup);
        assert_eq!(short.steps[..], long.steps[..30]);
        assert_ne!(long, Schedule::generate(43, 80));
    }

    #[test]
    fn schedules_mix_client_work_with_every_kind_of_fault() {
        let mut seen = std::collections::HashSet::new();
        for seed in 0..50 {
            for step in Schedule::generate(seed, 60).steps {
                seen.insert(std::mem::discriminant(&step.action));
            }
        }
        assert_eq!(seen.len(), 23, "every action appears in 50 seeds");
        let kinds: std::collections::BTreeSet<&str> = (0..50)
            .flat_map(|seed| Schedule::generate(seed, 60).steps)
            .filter_map(|step| step.action.fault_kind())
            .collect();
        let missing: Vec<&&str> = Action::FAULT_KINDS.iter().filter(|k| !kinds.contains(**k)).collect();
        assert!(missing.is_empty(), "fault kinds never drawn in 50 seeds: {missing:?}");
    }
}
