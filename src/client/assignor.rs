//! Consumer-group partition assignors, run by the group leader exactly where Kafka's Java
//! consumers run theirs (`range`, `roundrobin`, `cooperative-sticky`), and the consumer
//! protocol's encodings of a member's subscription (JoinGroup metadata) and of its assignment
//! (SyncGroup), byte-compatible with Kafka's `ConsumerProtocol`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;

use anyhow::{Context, Result, bail};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition as AssignedPartitions;
use kafka_protocol::messages::consumer_protocol_subscription::TopicPartition as OwnedPartitions;
use kafka_protocol::messages::{ConsumerProtocolAssignment, ConsumerProtocolSubscription, TopicName};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::engine::TopicPartition;

/// The generation of a member that has not been part of any generation of the group yet, as
/// Kafka's `AbstractStickyAssignor.DEFAULT_GENERATION`.
pub const DEFAULT_GENERATION: i32 = -1;

/// The newest consumer protocol version; subscription and assignment schemas move together.
const CONSUMER_PROTOCOL_VERSION: i16 = 3;

/// What a member tells the group leader when it joins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub topics: Vec<String>,
    /// What the member held in the last generation it took part in: the sticky assignor keeps
    /// these where balance allows, and the cooperative protocol revokes from them before anyone
    /// else may take them.
    pub owned_partitions: Vec<TopicPartition>,
    /// The generation in which the member owned `owned_partitions`, or [`DEFAULT_GENERATION`].
    pub generation: i32,
}

/// Partitions per member id.
pub type Assignment = BTreeMap<String, Vec<TopicPartition>>;

/// A partition assignment strategy, as `ConsumerPartitionAssignor` in the Java client.
pub trait Assignor: Send + Sync {
    /// The protocol name members advertise in JoinGroup, spelled as Kafka spells it.
    fn name(&self) -> &'static str;

    /// Partitions for every member of `members`, those that get nothing included.
    /// `partitions_per_topic` holds the partition count of each topic the cluster knows;
    /// subscribed topics missing from it (or without partitions) are left out.
    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &BTreeMap<String, Subscription>,
    ) -> Assignment;
}

/// Kafka's `RangeAssignor`: per topic, the subscribed members in member-id order each take a
/// contiguous range, the first `partitions % members` one partition more. Members subscribed to
/// the same topics thus get the same partition numbers of each, which co-partitioned joins need.
#[derive(Debug, Clone, Copy, Default)]
pub struct RangeAssignor;

/// Kafka's `RoundRobinAssignor`: every subscribed partition in (topic, partition) order is dealt
/// to the members in member-id order, passing over members not subscribed to its topic.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoundRobinAssignor;

/// Kafka's `CooperativeStickyAssignor`: balanced, sticky to what members already own, and
/// cooperative, so that no partition is ever consumed by two members at once: a partition moving
/// from one member to another is held back for one rebalance while its old owner revokes it.
#[derive(Debug, Clone, Copy, Default)]
pub struct CooperativeStickyAssignor;

/// The assignor a member asks for by its protocol name.
pub fn by_name(name: &str) -> Option<Box<dyn Assignor>> {
    match name {
        "range" => Some(Box::new(RangeAssignor)),
        "roundrobin" => Some(Box::new(RoundRobinAssignor)),
        "cooperative-sticky" => Some(Box::new(CooperativeStickyAssignor)),
        _ => None,
    }
}

impl Assignor for RangeAssignor {
    fn name(&self) -> &'static str {
        "range"
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &BTreeMap<String, Subscription>,
    ) -> Assignment {
        let mut assignment = empty_assignment(members);
        for topic in partitions_per_topic.keys() {
            let Some(count) = partition_count(partitions_per_topic, topic) else {
                continue;
            };
            // The map already yields members in id order, the order Kafka deals ranges in.
            let consumers: Vec<&String> = members
                .iter()
                .filter(|(_, subscription)| subscribes(subscription, topic))
                .map(|(id, _)| id)
                .collect();
            if consumers.is_empty() {
                continue;
            }
            let (per_member, extra) = (count / consumers.len(), count % consumers.len());
            let mut next = 0;
            for (index, id) in consumers.into_iter().enumerate() {
                let take = per_member + usize::from(index < extra);
                assignment
                    .entry(id.clone())
                    .or_default()
                    .extend(partitions(topic, next..next + take));
                next += take;
            }
        }
        assignment
    }
}

impl Assignor for RoundRobinAssignor {
    fn name(&self) -> &'static str {
        "roundrobin"
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &BTreeMap<String, Subscription>,
    ) -> Assignment {
        let mut assignment = empty_assignment(members);
        let ring: Vec<(&String, &Subscription)> = members.iter().collect();
        let subscribed: BTreeSet<&str> = members
            .values()
            .flat_map(|s| s.topics.iter().map(String::as_str))
            .collect();
        let mut turn = 0;
        for topic in subscribed {
            let Some(count) = partition_count(partitions_per_topic, topic) else {
                continue;
            };
            for partition in partitions(topic, 0..count) {
                // Someone subscribes to `topic`, since it came from a subscription, so this stops.
                while !subscribes(ring[turn].1, topic) {
                    turn = (turn + 1) % ring.len();
                }
                assignment.entry(ring[turn].0.clone()).or_default().push(partition);
                turn = (turn + 1) % ring.len();
            }
        }
        assignment
    }
}

impl Assignor for CooperativeStickyAssignor {
    fn name(&self) -> &'static str {
        "cooperative-sticky"
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &BTreeMap<String, Subscription>,
    ) -> Assignment {
        let topics: BTreeMap<&str, usize> = members
            .values()
            .flat_map(|s| &s.topics)
            .filter_map(|topic| Some((topic.as_str(), partition_count(partitions_per_topic, topic)?)))
            .collect();
        let owned = settle_ownership(&topics, members);
        let mut assignment = if all_subscriptions_equal(members) {
            constrained_assignment(&topics, owned)
        } else {
            general_assignment(&topics, members, owned)
        };
        hold_back_transfers(&mut assignment, members);
        assignment
            .into_iter()
            .map(|(id, mut partitions)| {
                partitions.sort();
                (id.to_owned(), partitions)
            })
            .collect()
    }
}

fn empty_assignment(members: &BTreeMap<String, Subscription>) -> Assignment {
    members.keys().map(|id| (id.clone(), Vec::new())).collect()
}

fn subscribes(subscription: &Subscription, topic: &str) -> bool {
    subscription.topics.iter().any(|t| t == topic)
}

/// The partition count of `topic`, if it has partitions to assign.
fn partition_count(partitions_per_topic: &BTreeMap<String, i32>, topic: &str) -> Option<usize> {
    let count = usize::try_from(*partitions_per_topic.get(topic)?).ok()?;
    (count > 0).then_some(count)
}

fn partitions(topic: &str, numbers: Range<usize>) -> impl Iterator<Item = TopicPartition> + '_ {
    // Partition counts come from i32s, so every number below one converts back losslessly.
    numbers.map(move |partition| TopicPartition::new(topic, partition as i32))
}

/// Each member's share of what it claims to own. Conflicting claims are settled as Kafka's
/// sticky assignors settle them: the claim from the newest generation wins, and a tie in that
/// generation voids the partition for every claimant. Claims on partitions that no longer exist
/// or that the member no longer subscribes to are dropped.
fn settle_ownership<'a>(
    topics: &BTreeMap<&str, usize>,
    members: &'a BTreeMap<String, Subscription>,
) -> BTreeMap<&'a str, Vec<TopicPartition>> {
    let mut claims: BTreeMap<&TopicPartition, BTreeMap<&str, &Subscription>> = BTreeMap::new();
    for (id, subscription) in members {
        for partition in &subscription.owned_partitions {
            let exists = topics
                .get(partition.topic.as_str())
                .is_some_and(|&count| usize::try_from(partition.partition).is_ok_and(|p| p < count));
            if exists {
                claims.entry(partition).or_default().insert(id, subscription);
            }
        }
    }
    let mut owned: BTreeMap<&str, Vec<TopicPartition>> = members.keys().map(|id| (id.as_str(), Vec::new())).collect();
    for (partition, claimants) in claims {
        let mut newest: Option<(i32, Option<(&str, &Subscription)>)> = None;
        for (id, subscription) in claimants {
            newest = match newest {
                Some((generation, _)) if generation > subscription.generation => newest,
                Some((generation, _)) if generation == subscription.generation => Some((generation, None)),
                _ => Some((subscription.generation, Some((id, subscription)))),
            };
        }
        if let Some((_, Some((id, subscription)))) = newest
            && subscribes(subscription, &partition.topic)
        {
            owned.entry(id).or_default().push(partition.clone());
        }
    }
    owned
}

fn all_subscriptions_equal(members: &BTreeMap<String, Subscription>) -> bool {
    let mut subscriptions = members
        .values()
        .map(|s| s.topics.iter().map(String::as_str).collect::<BTreeSet<_>>());
    match subscriptions.next() {
        Some(first) => subscriptions.all(|topics| topics == first),
        None => true,
    }
}

/// Kafka's `ConstrainedAssignmentBuilder`, for the usual case where every member subscribes to
/// the same topics: each member keeps up to its quota of what it owns (its lowest partition
/// numbers first), then the rest is dealt round robin to members below quota, and the last few
/// to members at the lower quota while members with one more are still due.
fn constrained_assignment<'a>(
    topics: &BTreeMap<&str, usize>,
    owned: BTreeMap<&'a str, Vec<TopicPartition>>,
) -> BTreeMap<&'a str, Vec<TopicPartition>> {
    let total: usize = topics.values().sum();
    let member_count = owned.len().max(1);
    let min_quota = total / member_count;
    let max_quota = total.div_ceil(member_count);
    let due_over_min = total % member_count;
    let mut over_min = 0;

    let mut assignment = BTreeMap::new();
    let mut under_min: Vec<&str> = Vec::new();
    let mut at_min: VecDeque<&str> = VecDeque::new();
    for (id, mut partitions) in owned {
        partitions.sort_by(|a, b| (a.partition, &a.topic).cmp(&(b.partition, &b.topic)));
        if partitions.len() < min_quota {
            under_min.push(id);
        } else if partitions.len() >= max_quota && over_min < due_over_min {
            partitions.truncate(max_quota);
            over_min += 1;
            if over_min == due_over_min {
                at_min.clear();
            }
        } else {
            partitions.truncate(min_quota);
            if over_min < due_over_min {
                at_min.push_back(id);
            }
        }
        assignment.insert(id, partitions);
    }

    let taken: BTreeSet<TopicPartition> = assignment.values().flatten().cloned().collect();
    let unassigned = topics
        .iter()
        .flat_map(|(topic, &count)| partitions(topic, 0..count))
        .filter(|partition| !taken.contains(partition));
    let mut turn = 0;
    for partition in unassigned {
        let (member, below_min) = if let Some(&member) = under_min.get(turn) {
            (member, true)
        } else if let Some(&member) = under_min.first() {
            turn = 0;
            (member, true)
        } else if let Some(member) = at_min.pop_front() {
            (member, false)
        } else {
            // The quotas add up to the partition count, so members run out only together with
            // partitions; should that arithmetic ever break, leaving the rest unassigned is what
            // a follow-up rebalance can repair.
            break;
        };
        let held = assignment.entry(member).or_default();
        held.push(partition);
        if below_min {
            if held.len() == min_quota {
                under_min.remove(turn);
                at_min.push_back(member);
            } else {
                turn += 1;
            }
        }
    }
    assignment
}

/// Kafka's `GeneralAssignmentBuilder`, for members with different subscriptions: everyone keeps
/// what it owns, new partitions go to the least loaded member that can take them (topics few
/// members subscribe to first), then partitions move from a member to one with at least two
/// fewer that could take them, until no such move is left. That end state is exactly Kafka's
/// `isBalanced`.
fn general_assignment<'a>(
    topics: &BTreeMap<&str, usize>,
    members: &'a BTreeMap<String, Subscription>,
    owned: BTreeMap<&'a str, Vec<TopicPartition>>,
) -> BTreeMap<&'a str, Vec<TopicPartition>> {
    let eligible: BTreeMap<&str, BTreeSet<&str>> = members
        .iter()
        .map(|(id, subscription)| {
            let topics = subscription
                .topics
                .iter()
                .map(String::as_str)
                .filter(|topic| topics.contains_key(topic))
                .collect();
            (id.as_str(), topics)
        })
        .collect();
    let mut assignment = owned;

    let taken: BTreeSet<TopicPartition> = assignment.values().flatten().cloned().collect();
    let mut topic_order: Vec<(&str, usize)> = topics.iter().map(|(topic, &count)| (*topic, count)).collect();
    topic_order.sort_by_key(|(topic, _)| (eligible.values().filter(|t| t.contains(topic)).count(), *topic));
    let unassigned: Vec<TopicPartition> = topic_order
        .iter()
        .flat_map(|(topic, count)| partitions(topic, 0..*count))
        .filter(|partition| !taken.contains(partition))
        .collect();
    for partition in unassigned {
        if let Some(member) = least_loaded(&assignment, &eligible, &partition.topic, None) {
            assignment.entry(member).or_default().push(partition);
        }
    }

    while let Some((from, partition, to)) = next_balancing_move(&assignment, &eligible, members) {
        if let Some(held) = assignment.get_mut(from) {
            held.retain(|p| *p != partition);
        }
        assignment.entry(to).or_default().push(partition);
    }
    assignment
}

/// The member with the fewest partitions (then the smallest id) that may take a partition of
/// `topic`, other than `except`.
fn least_loaded<'a>(
    assignment: &BTreeMap<&'a str, Vec<TopicPartition>>,
    eligible: &BTreeMap<&'a str, BTreeSet<&str>>,
    topic: &str,
    except: Option<&str>,
) -> Option<&'a str> {
    eligible
        .iter()
        .filter(|(id, topics)| Some(**id) != except && topics.contains(topic))
        .map(|(id, _)| (assignment.get(id).map_or(0, Vec::len), *id))
        .min()
        .map(|(_, id)| id)
}

/// A move that makes the assignment more even, from the most loaded member that has one.
/// Partitions the donor got only in this round go before ones it owned, since moving an owned
/// partition costs a revocation.
fn next_balancing_move<'a>(
    assignment: &BTreeMap<&'a str, Vec<TopicPartition>>,
    eligible: &BTreeMap<&'a str, BTreeSet<&str>>,
    members: &BTreeMap<String, Subscription>,
) -> Option<(&'a str, TopicPartition, &'a str)> {
    let mut donors: Vec<(&str, &Vec<TopicPartition>)> = assignment.iter().map(|(id, held)| (*id, held)).collect();
    donors.sort_by_key(|(id, held)| (Reverse(held.len()), *id));
    for (from, held) in donors {
        let owned_before = |partition: &TopicPartition| {
            members
                .get(from)
                .is_some_and(|s| s.owned_partitions.contains(partition))
        };
        let mut candidates: Vec<&TopicPartition> = held.iter().collect();
        candidates.sort_by_key(|partition| (owned_before(partition), Reverse(*partition)));
        for partition in candidates {
            if let Some(to) = least_loaded(assignment, eligible, &partition.topic, Some(from))
                && assignment.get(to).map_or(0, Vec::len) + 1 < held.len()
            {
                return Some((from, partition.clone(), to));
            }
        }
    }
    None
}

/// The cooperative protocol's rule (Kafka's `CooperativeStickyAssignor.adjustAssignment`): a
/// partition that another member still claims is not given to its new owner in this round. The
/// old owner, seeing it missing from its own assignment, revokes it and rejoins, and the
/// follow-up rebalance hands it over, so no partition is consumed by two members at once.
fn hold_back_transfers(assignment: &mut BTreeMap<&str, Vec<TopicPartition>>, members: &BTreeMap<String, Subscription>) {
    let mut claimants: BTreeMap<&TopicPartition, BTreeSet<&str>> = BTreeMap::new();
    for (id, subscription) in members {
        for partition in &subscription.owned_partitions {
            claimants.entry(partition).or_default().insert(id);
        }
    }
    for (member, held) in assignment.iter_mut() {
        held.retain(|partition| claimants.get(partition).is_none_or(|ids| ids.contains(member)));
    }
}

/// The JoinGroup metadata of a member using the consumer protocol, at the newest version.
/// `user_data` is the assignor's own opaque data, if it has any.
///
/// # Panics
///
/// If a topic name is longer than the protocol's 32,767-byte string limit, which no Kafka topic
/// can be (names are capped at 249 characters).
pub fn encode_subscription(subscription: &Subscription, user_data: Option<Bytes>) -> Bytes {
    // Sorted as Kafka sorts them, so that equal subscriptions have byte-identical metadata.
    let topics: BTreeSet<&str> = subscription.topics.iter().map(String::as_str).collect();
    let mut owned: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for partition in &subscription.owned_partitions {
        owned.entry(&partition.topic).or_default().push(partition.partition);
    }
    let owned = owned
        .into_iter()
        .map(|(topic, mut numbers)| {
            numbers.sort_unstable();
            OwnedPartitions::default()
                .with_topic(topic_name(topic))
                .with_partitions(numbers)
        })
        .collect();
    let message = ConsumerProtocolSubscription::default()
        .with_topics(
            topics
                .into_iter()
                .map(|t| StrBytes::from_string(t.to_owned()))
                .collect(),
        )
        .with_user_data(user_data)
        .with_owned_partitions(owned)
        .with_generation_id(subscription.generation);
    version_prefixed(&message)
}

/// A member's subscription from JoinGroup metadata of any consumer protocol version. Versions
/// before 2 carry no generation: such members get [`DEFAULT_GENERATION`].
pub fn decode_subscription(bytes: &[u8]) -> Result<Subscription> {
    let (version, mut body) = split_version(bytes).context("consumer protocol subscription")?;
    DeclaredLengths(body)
        .subscription(version)
        .context("consumer protocol subscription")?;
    let message = ConsumerProtocolSubscription::decode(&mut body, version).context("consumer protocol subscription")?;
    Ok(Subscription {
        topics: message.topics.iter().map(|topic| topic.as_str().to_owned()).collect(),
        owned_partitions: message
            .owned_partitions
            .iter()
            .flat_map(|owned| {
                let topic = owned.topic.0.as_str();
                owned.partitions.iter().map(move |&p| TopicPartition::new(topic, p))
            })
            .collect(),
        generation: message.generation_id,
    })
}

/// The SyncGroup assignment of one member, at the newest consumer protocol version.
///
/// # Panics
///
/// If a topic name is longer than the protocol's 32,767-byte string limit, which no Kafka topic
/// can be (names are capped at 249 characters).
pub fn encode_assignment(partitions: &[TopicPartition]) -> Bytes {
    // Grouped by topic in order of first appearance, as Kafka's ConsumerProtocol writes it.
    let mut topics: Vec<AssignedPartitions> = Vec::new();
    for partition in partitions {
        match topics.iter_mut().find(|t| t.topic.0.as_str() == partition.topic) {
            Some(topic) => topic.partitions.push(partition.partition),
            None => topics.push(
                AssignedPartitions::default()
                    .with_topic(topic_name(&partition.topic))
                    .with_partitions(vec![partition.partition]),
            ),
        }
    }
    version_prefixed(&ConsumerProtocolAssignment::default().with_assigned_partitions(topics))
}

/// A member's partitions from its SyncGroup assignment, of any consumer protocol version.
pub fn decode_assignment(bytes: &[u8]) -> Result<Vec<TopicPartition>> {
    let (version, mut body) = split_version(bytes).context("consumer protocol assignment")?;
    DeclaredLengths(body)
        .assignment()
        .context("consumer protocol assignment")?;
    let message = ConsumerProtocolAssignment::decode(&mut body, version).context("consumer protocol assignment")?;
    Ok(message
        .assigned_partitions
        .iter()
        .flat_map(|assigned| {
            let topic = assigned.topic.0.as_str();
            assigned.partitions.iter().map(move |&p| TopicPartition::new(topic, p))
        })
        .collect())
}

fn topic_name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_owned()))
}

/// The message behind its schema version, as Kafka's `MessageUtil.toVersionPrefixedByteBuffer`.
fn version_prefixed(message: &impl Encodable) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i16(CONSUMER_PROTOCOL_VERSION);
    // Only a string over 32,767 bytes or a list over i32::MAX entries fails to encode: see the
    // callers' `# Panics`.
    message
        .encode(&mut buf, CONSUMER_PROTOCOL_VERSION)
        .expect("a consumer protocol message within the protocol's size limits");
    buf.freeze()
}

/// The schema version in front of a consumer protocol message. A version newer than ours is read
/// as ours, as Kafka does: new versions only ever append fields.
fn split_version(bytes: &[u8]) -> Result<(i16, &[u8])> {
    let Some((prefix, body)) = bytes.split_first_chunk::<2>() else {
        bail!("{} bytes, too few for the version", bytes.len());
    };
    let version = i16::from_be_bytes(*prefix);
    if version < 0 {
        bail!("unsupported version {version}");
    }
    Ok((version.min(CONSUMER_PROTOCOL_VERSION), body))
}

/// kafka-protocol reserves room for an array from its declared length before it reads a single
/// element, so six garbage bytes declaring two billion topics would abort the process when that
/// allocation fails. Walking the layout first checks every declared array length against the
/// bytes left to hold it, before the real decoder sees the message.
struct DeclaredLengths<'a>(&'a [u8]);

impl DeclaredLengths<'_> {
    fn subscription(mut self, version: i16) -> Result<()> {
        self.array(Self::string)?;
        self.bytes()?;
        if version >= 1 {
            self.array(Self::topic_partitions)?;
        }
        // The generation (v2) and rack (v3) that may follow hold no array.
        Ok(())
    }

    fn assignment(mut self) -> Result<()> {
        // The user data that follows holds no array.
        self.array(Self::topic_partitions)
    }

    fn topic_partitions(&mut self) -> Result<()> {
        self.string()?;
        self.array(|this| this.skip(4))
    }

    fn string(&mut self) -> Result<()> {
        let length = i16::from_be_bytes(self.take()?);
        // A null or negative length is the decoder's to judge; it allocates nothing for it.
        self.skip(usize::try_from(length).unwrap_or(0))
    }

    fn bytes(&mut self) -> Result<()> {
        let length = i32::from_be_bytes(self.take()?);
        self.skip(usize::try_from(length).unwrap_or(0))
    }

    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Result<()>) -> Result<()> {
        let Ok(length) = usize::try_from(i32::from_be_bytes(self.take()?)) else {
            return Ok(());
        };
        // Every element takes at least one byte.
        if length > self.0.len() {
            bail!(
                "an array of {length} elements declared with {} bytes left",
                self.0.len()
            );
        }
        (0..length).try_for_each(|_| element(self))
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        let Some((head, rest)) = self.0.split_first_chunk::<N>() else {
            bail!("truncated: {N} bytes needed, {} left", self.0.len());
        };
        self.0 = rest;
        Ok(*head)
    }

    fn skip(&mut self, n: usize) -> Result<()> {
        let Some((_, rest)) = self.0.split_at_checked(n) else {
            bail!("truncated: {n} bytes needed, {} left", self.0.len());
        };
        self.0 = rest;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition::new(topic, partition)
    }

    fn tps(topic: &str, partitions: &[i32]) -> Vec<TopicPartition> {
        partitions.iter().map(|&p| tp(topic, p)).collect()
    }

    fn subscribed(topics: &[&str]) -> Subscription {
        Subscription {
            topics: topics.iter().map(|t| t.to_string()).collect(),
            owned_partitions: Vec::new(),
            generation: DEFAULT_GENERATION,
        }
    }

    fn owning(topics: &[&str], owned: Vec<TopicPartition>, generation: i32) -> Subscription {
        Subscription {
            owned_partitions: owned,
            generation,
            ..subscribed(topics)
        }
    }

    fn topics(counts: &[(&str, i32)]) -> BTreeMap<String, i32> {
        counts.iter().map(|(t, n)| (t.to_string(), *n)).collect()
    }

    fn group(members: Vec<(&str, Subscription)>) -> BTreeMap<String, Subscription> {
        members.into_iter().map(|(id, s)| (id.to_string(), s)).collect()
    }

    fn counts(assignment: &Assignment) -> Vec<usize> {
        assignment.values().map(Vec::len).collect()
    }

    #[test]
    fn assignors_are_found_by_their_kafka_protocol_names() {
        for name in ["range", "roundrobin", "cooperative-sticky"] {
            assert_eq!(by_name(name).map(|a| a.name()), Some(name));
        }
        assert!(by_name("sticky-ish").is_none());
    }

    #[test]
    fn range_gives_three_members_two_of_six_partitions_each() {
        let members = group(vec![
            ("m1", subscribed(&["t"])),
            ("m2", subscribed(&["t"])),
            ("m3", subscribed(&["t"])),
        ]);
        let assignment = RangeAssignor.assign(&topics(&[("t", 6)]), &members);
        assert_eq!(assignment["m1"], tps("t", &[0, 1]));
        assert_eq!(assignment["m2"], tps("t", &[2, 3]));
        assert_eq!(assignment["m3"], tps("t", &[4, 5]));
    }

    #[test]
    fn range_gives_the_extra_partition_to_the_first_members_by_id() {
        let members = group(vec![
            ("m3", subscribed(&["t"])),
            ("m1", subscribed(&["t"])),
            ("m2", subscribed(&["t"])),
        ]);
        let assignment = RangeAssignor.assign(&topics(&[("t", 7)]), &members);
        assert_eq!(assignment["m1"], tps("t", &[0, 1, 2]));
        assert_eq!(assignment["m2"], tps("t", &[3, 4]));
        assert_eq!(assignment["m3"], tps("t", &[5, 6]));
    }

    #[test]
    fn range_co_partitions_topics_and_skips_what_a_member_does_not_subscribe_to() {
        let members = group(vec![
            ("a", subscribed(&["orders", "payments"])),
            ("b", subscribed(&["orders", "payments", "missing"])),
            ("c", subscribed(&["missing"])),
        ]);
        let assignment = RangeAssignor.assign(&topics(&[("orders", 3), ("payments", 3), ("other", 2)]), &members);
        let mut a = tps("orders", &[0, 1]);
        a.extend(tps("payments", &[0, 1]));
        let mut b = tps("orders", &[2]);
        b.extend(tps("payments", &[2]));
        assert_eq!(assignment["a"], a);
        assert_eq!(assignment["b"], b);
        assert_eq!(assignment["c"], Vec::new(), "present, with nothing");
    }

    #[test]
    fn roundrobin_deals_all_partitions_of_two_topics_in_order() {
        let members = group(vec![("a", subscribed(&["t0", "t1"])), ("b", subscribed(&["t0", "t1"]))]);
        let assignment = RoundRobinAssignor.assign(&topics(&[("t0", 3), ("t1", 2)]), &members);
        let mut a = tps("t0", &[0, 2]);
        a.extend(tps("t1", &[1]));
        let mut b = tps("t0", &[1]);
        b.extend(tps("t1", &[0]));
        assert_eq!(assignment["a"], a);
        assert_eq!(assignment["b"], b);
    }

    /// The example of Kafka's `RoundRobinAssignor` documentation.
    #[test]
    fn roundrobin_passes_over_members_not_subscribed_to_a_topic() {
        let members = group(vec![
            ("C0", subscribed(&["t0"])),
            ("C1", subscribed(&["t0", "t1"])),
            ("C2", subscribed(&["t0", "t1", "t2"])),
        ]);
        let assignment = RoundRobinAssignor.assign(&topics(&[("t0", 1), ("t1", 2), ("t2", 3)]), &members);
        assert_eq!(assignment["C0"], tps("t0", &[0]));
        assert_eq!(assignment["C1"], tps("t1", &[0]));
        let mut c2 = tps("t1", &[1]);
        c2.extend(tps("t2", &[0, 1, 2]));
        assert_eq!(assignment["C2"], c2);
    }

    #[test]
    fn cooperative_sticky_spreads_a_fresh_group_evenly() {
        let members = group(vec![
            ("a", subscribed(&["t"])),
            ("b", subscribed(&["t"])),
            ("c", subscribed(&["t"])),
        ]);
        let assignment = CooperativeStickyAssignor.assign(&topics(&[("t", 7)]), &members);
        assert_eq!(counts(&assignment), [3, 2, 2]);
        let all: BTreeSet<&TopicPartition> = assignment.values().flatten().collect();
        assert_eq!(all.len(), 7);
    }

    #[test]
    fn cooperative_sticky_moves_nothing_but_what_a_joining_member_needs_and_hands_it_over_a_round_later() {
        let partitions = topics(&[("t", 6)]);
        let before = group(vec![
            ("a", owning(&["t"], tps("t", &[0, 1, 2]), 4)),
            ("b", owning(&["t"], tps("t", &[3, 4, 5]), 4)),
            ("c", subscribed(&["t"])),
        ]);
        let first = CooperativeStickyAssignor.assign(&partitions, &before);
        assert_eq!(first["a"], tps("t", &[0, 1]), "a keeps two of its own and revokes t-2");
        assert_eq!(first["b"], tps("t", &[3, 4]), "b keeps two of its own and revokes t-5");
        assert_eq!(
            first["c"],
            Vec::new(),
            "t-2 and t-5 are still owned: not handed over yet"
        );

        let after = group(vec![
            ("a", owning(&["t"], first["a"].clone(), 5)),
            ("b", owning(&["t"], first["b"].clone(), 5)),
            ("c", owning(&["t"], Vec::new(), 5)),
        ]);
        let second = CooperativeStickyAssignor.assign(&partitions, &after);
        assert_eq!(second["a"], first["a"]);
        assert_eq!(second["b"], first["b"]);
        assert_eq!(second["c"], tps("t", &[2, 5]), "revoked, so free to hand over");
    }

    #[test]
    fn cooperative_sticky_shares_out_a_leaving_members_partitions() {
        let members = group(vec![
            ("a", owning(&["t"], tps("t", &[0, 1]), 3)),
            ("b", owning(&["t"], tps("t", &[2, 3]), 3)),
        ]);
        let assignment = CooperativeStickyAssignor.assign(&topics(&[("t", 6)]), &members);
        assert_eq!(assignment["a"], tps("t", &[0, 1, 4]));
        assert_eq!(assignment["b"], tps("t", &[2, 3, 5]));
    }

    #[test]
    fn cooperative_sticky_leaves_members_beyond_the_partition_count_idle() {
        let members: BTreeMap<String, Subscription> = (1..=5).map(|i| (format!("m{i}"), subscribed(&["t"]))).collect();
        let assignment = CooperativeStickyAssignor.assign(&topics(&[("t", 3)]), &members);
        assert_eq!(counts(&assignment), [1, 1, 1, 0, 0]);
    }

    #[test]
    fn cooperative_sticky_believes_the_newest_generation_when_claims_conflict() {
        let members = group(vec![
            ("a", owning(&["t"], tps("t", &[0, 1]), 7)),
            ("b", owning(&["t"], tps("t", &[1, 2]), 6)),
        ]);
        let assignment = CooperativeStickyAssignor.assign(&topics(&[("t", 4)]), &members);
        assert_eq!(
            assignment["a"],
            tps("t", &[0, 1]),
            "t-1 stays with the newer generation"
        );
        assert_eq!(assignment["b"], tps("t", &[2, 3]));
    }

    #[test]
    fn cooperative_sticky_balances_members_with_different_subscriptions() {
        let partitions = topics(&[("t1", 2), ("t2", 2)]);
        let fresh = group(vec![("a", subscribed(&["t1", "t2"])), ("b", subscribed(&["t1"]))]);
        let assignment = CooperativeStickyAssignor.assign(&partitions, &fresh);
        assert_eq!(assignment["a"], tps("t2", &[0, 1]));
        assert_eq!(assignment["b"], tps("t1", &[0, 1]));

        let joined = group(vec![
            ("a", owning(&["t1", "t2"], tps("t2", &[0, 1]), 1)),
            ("b", owning(&["t1"], tps("t1", &[0, 1]), 1)),
            ("c", subscribed(&["t1"])),
        ]);
        let assignment = CooperativeStickyAssignor.assign(&partitions, &joined);
        assert_eq!(assignment["a"], tps("t2", &[0, 1]));
        assert_eq!(assignment["b"].len(), 1, "b gives up one partition for c");
        assert_eq!(assignment["c"], Vec::new(), "which c gets once b has revoked it");
    }

    #[test]
    fn cooperative_sticky_waits_for_a_member_to_revoke_a_topic_it_dropped() {
        let members = group(vec![
            ("a", owning(&["t2"], tps("t1", &[0]), 2)),
            ("b", owning(&["t1"], Vec::new(), 2)),
        ]);
        let assignment = CooperativeStickyAssignor.assign(&topics(&[("t1", 1), ("t2", 1)]), &members);
        assert_eq!(assignment["a"], tps("t2", &[0]));
        assert_eq!(assignment["b"], Vec::new(), "a still owns t1-0");
    }

    fn unique_topics() -> impl Strategy<Value = Vec<String>> {
        prop::sample::subsequence(vec!["t0".to_string(), "t1".into(), "t2".into()], 0..=3)
    }

    /// Up to five members, each claiming a few partitions (some of them nonexistent, some claimed
    /// by others too) in a generation of its own.
    fn claims() -> impl Strategy<Value = Vec<(Vec<TopicPartition>, i32)>> {
        let partition = (prop::sample::select(vec!["t0", "t1", "t2"]), 0..5i32).prop_map(|(t, p)| tp(t, p));
        prop::collection::vec((prop::collection::vec(partition, 0..6), 0..4i32), 1..6)
    }

    const PARTITIONS: [(&str, i32); 3] = [("t0", 3), ("t1", 5), ("t2", 1)];

    /// What must hold of any cooperative-sticky round: every member is in the answer; no
    /// partition goes to two members or to a member not subscribed to its topic; none is handed
    /// to a new owner while another member still claims it; and every other subscribed partition
    /// is assigned.
    fn check_round(members: &BTreeMap<String, Subscription>, assignment: &Assignment) -> Result<(), TestCaseError> {
        prop_assert_eq!(
            assignment.keys().collect::<Vec<_>>(),
            members.keys().collect::<Vec<_>>()
        );
        let claimed_by = |partition: &TopicPartition| {
            members
                .iter()
                .filter(|(_, s)| s.owned_partitions.contains(partition))
                .map(|(id, _)| id.as_str())
                .collect::<BTreeSet<_>>()
        };
        let mut seen = BTreeSet::new();
        for (id, held) in assignment {
            for partition in held {
                prop_assert!(seen.insert(partition.clone()), "{} assigned twice", partition);
                prop_assert!(subscribes(&members[id], &partition.topic));
                let claimants = claimed_by(partition);
                prop_assert!(
                    claimants.is_empty() || claimants.contains(id.as_str()),
                    "{} handed to {} while {:?} own it",
                    partition,
                    id,
                    claimants
                );
            }
        }
        for (topic, count) in PARTITIONS {
            if members.values().any(|s| subscribes(s, topic)) {
                for partition in (0..count).map(|p| tp(topic, p)) {
                    prop_assert!(
                        seen.contains(&partition) || !claimed_by(&partition).is_empty(),
                        "{} left unassigned though nobody owns it",
                        partition
                    );
                }
            }
        }
        Ok(())
    }

    proptest! {
        /// With one subscription shared by all, the round after the one that moved partitions
        /// assigns everything, evenly, and takes nothing away.
        #[test]
        fn cooperative_sticky_with_one_subscription_settles_in_two_rounds(shared in unique_topics(), claims in claims()) {
            let partitions = topics(&PARTITIONS);
            let members: BTreeMap<String, Subscription> = claims
                .into_iter()
                .enumerate()
                .map(|(i, (owned, generation))| (format!("m{i}"), owning(&[], owned, generation)))
                .map(|(id, s)| (id, Subscription { topics: shared.clone(), ..s }))
                .collect();
            let first = CooperativeStickyAssignor.assign(&partitions, &members);
            check_round(&members, &first)?;

            let settled: BTreeMap<String, Subscription> = first
                .iter()
                .map(|(id, held)| (id.clone(), Subscription { topics: shared.clone(), owned_partitions: held.clone(), generation: 9 }))
                .collect();
            let second = CooperativeStickyAssignor.assign(&partitions, &settled);
            let total: i32 = shared.iter().map(|t| partitions[t]).sum();
            prop_assert_eq!(second.values().map(Vec::len).sum::<usize>(), total as usize);
            let loads: Vec<usize> = second.values().map(Vec::len).collect();
            let (min, max) = (loads.iter().min(), loads.iter().max());
            prop_assert!(max.zip(min).is_none_or(|(max, min)| max - min <= 1), "{:?}", loads);
            for (id, held) in &first {
                prop_assert!(held.iter().all(|p| second[id].contains(p)), "{} lost a partition it kept", id);
            }
        }

        #[test]
        fn cooperative_sticky_with_different_subscriptions_never_shares_a_partition(
            subscriptions in prop::collection::vec(unique_topics(), 5),
            claims in claims(),
        ) {
            let members: BTreeMap<String, Subscription> = claims
                .into_iter()
                .zip(subscriptions)
                .enumerate()
                .map(|(i, ((owned, generation), topics))| {
                    (format!("m{i}"), Subscription { topics, owned_partitions: owned, generation })
                })
                .collect();
            let assignment = CooperativeStickyAssignor.assign(&topics(&PARTITIONS), &members);
            check_round(&members, &assignment)?;
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_subscription(&bytes);
            let _ = decode_assignment(&bytes);
        }
    }

    #[test]
    fn a_subscription_is_encoded_as_the_java_client_encodes_it() {
        let subscription = owning(&["t"], tps("t", &[0]), 5);
        let expected: &[u8] = &[
            0, 3, // version
            0, 0, 0, 1, 0, 1, b't', // topics
            0xff, 0xff, 0xff, 0xff, // no user data
            0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1, 0, 0, 0, 0, // owned partitions
            0, 0, 0, 5, // generation
            0xff, 0xff, // no rack
        ];
        assert_eq!(&encode_subscription(&subscription, None)[..], expected);
    }

    #[test]
    fn a_subscription_survives_a_round_trip_with_its_lists_sorted() {
        let subscription = Subscription {
            topics: vec!["views".into(), "clicks".into(), "views".into()],
            owned_partitions: vec![tp("views", 2), tp("clicks", 1), tp("views", 0)],
            generation: 12,
        };
        let decoded = decode_subscription(&encode_subscription(&subscription, Some(Bytes::from_static(b"ud"))))
            .expect("a subscription we encoded");
        assert_eq!(
            decoded,
            Subscription {
                topics: vec!["clicks".into(), "views".into()],
                owned_partitions: vec![tp("clicks", 1), tp("views", 0), tp("views", 2)],
                generation: 12,
            }
        );
    }

    #[test]
    fn a_version_0_subscription_has_no_owned_partitions_and_no_generation() {
        let v0: &[u8] = &[0, 0, 0, 0, 0, 1, 0, 1, b't', 0xff, 0xff, 0xff, 0xff];
        assert_eq!(decode_subscription(v0).expect("v0"), subscribed(&["t"]));
    }

    #[test]
    fn a_newer_version_is_read_as_ours_ignoring_the_fields_it_appends() {
        let mut newer = encode_subscription(&owning(&["t"], tps("t", &[1]), 3), None).to_vec();
        newer[1] = 4;
        newer.extend_from_slice(&[0, 0, 0, 42]);
        assert_eq!(
            decode_subscription(&newer).expect("v4"),
            owning(&["t"], tps("t", &[1]), 3)
        );
    }

    #[test]
    fn an_assignment_is_encoded_as_the_java_client_encodes_it_and_survives_a_round_trip() {
        let expected: &[u8] = &[
            0, 3, // version
            0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, // assigned partitions
            0xff, 0xff, 0xff, 0xff, // no user data
        ];
        assert_eq!(&encode_assignment(&tps("t", &[0, 1]))[..], expected);

        let partitions = vec![tp("views", 3), tp("clicks", 0), tp("views", 1)];
        let decoded = decode_assignment(&encode_assignment(&partitions)).expect("an assignment we encoded");
        assert_eq!(decoded, vec![tp("views", 3), tp("views", 1), tp("clicks", 0)]);
        assert_eq!(decode_assignment(&encode_assignment(&[])).expect("empty"), Vec::new());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode_subscription(&[]).is_err());
        assert!(decode_assignment(&[0]).is_err());
        assert!(
            decode_subscription(&[0xff, 0xff, 0, 0, 0, 0]).is_err(),
            "negative version"
        );
        assert!(
            decode_subscription(&[0, 3, 0, 0, 0, 1, 0, 2, 0xc3, 0x28]).is_err(),
            "not UTF-8"
        );

        let whole = encode_subscription(&owning(&["t"], tps("t", &[0]), 5), None);
        for cut in 0..whole.len() {
            assert!(decode_subscription(&whole[..cut]).is_err(), "cut at {cut}");
        }
        let whole = encode_assignment(&tps("t", &[0]));
        for cut in 0..whole.len() {
            assert!(decode_assignment(&whole[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_huge_declared_length_is_an_error_rather_than_a_huge_allocation() {
        let two_billion_topics: &[u8] = &[0, 3, 0x7f, 0xff, 0xff, 0xff];
        assert!(decode_subscription(two_billion_topics).is_err());
        let two_billion_partitions: &[u8] = &[0, 3, 0, 0, 0, 1, 0, 1, b't', 0x7f, 0xff, 0xff, 0xff];
        assert!(decode_assignment(two_billion_partitions).is_err());
    }
}
