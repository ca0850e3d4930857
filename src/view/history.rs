//! What one snapshot of a cluster cannot tell and a view needs: bounded histories for the
//! sparklines, rates from successive counter samples, when a row last changed (for the brief
//! flash of changed cells) and lag totals. Both sources keep one [`Trends`] and feed it;
//! whatever the cluster no longer has is forgotten, so topics and groups created and deleted
//! by the thousand over days leave nothing behind.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;

use chrono::{DateTime, Utc};

use super::{BrokerId, ClusterView, GroupRow};

/// Samples kept for sparklines and trends.
pub const HISTORY: usize = 60;

/// The newest [`HISTORY`] samples of one series, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History(VecDeque<u64>);

impl History {
    pub fn push(&mut self, sample: u64) {
        if self.0.len() == HISTORY {
            self.0.pop_front();
        }
        self.0.push_back(sample);
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> Vec<u64> {
        self.0.iter().copied().collect()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One [`History`] per key (a broker, a group).
#[derive(Debug, Clone)]
pub struct Histories<K>(HashMap<K, History>);

impl<K> Default for Histories<K> {
    fn default() -> Self {
        Histories(HashMap::new())
    }
}

impl<K: Eq + Hash> Histories<K> {
    /// Appends `sample` to `key`'s history and returns its samples, oldest first.
    pub fn push(&mut self, key: K, sample: u64) -> Vec<u64> {
        let history = self.0.entry(key).or_default();
        history.push(sample);
        history.samples()
    }

    /// `key`'s samples, oldest first (none when it has no history yet).
    pub fn samples(&self, key: &K) -> Vec<u64> {
        self.0.get(key).map(History::samples).unwrap_or_default()
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&K) -> bool) {
        self.0.retain(|k, _| keep(k));
    }

    pub fn insert(&mut self, key: K, history: History) {
        self.0.insert(key, history);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The least time between two samples a rate is taken over: shorter, and one refresh's
/// jitter would swing it.
pub const RATE_INTERVAL_SECS: f64 = 1.0;

/// How fast a counter grew from `before` to `after` over `seconds`, per second. A counter
/// that went back (a restarted broker, a truncated log) grew by nothing.
pub fn per_second(before: u64, after: u64, seconds: f64) -> f64 {
    if seconds <= 0.0 {
        return 0.0;
    }
    after.saturating_sub(before) as f64 / seconds
}

/// Rates of several counters sampled together (bytes in of every broker, end offsets of
/// every partition): each round of samples at least [`RATE_INTERVAL_SECS`] after the last
/// taken one gives every counter seen in both its rate; rounds in between change nothing.
#[derive(Debug, Clone)]
pub struct CounterRates<K> {
    last: HashMap<K, u64>,
    last_at: Option<DateTime<Utc>>,
    rates: HashMap<K, f64>,
}

impl<K> Default for CounterRates<K> {
    fn default() -> Self {
        CounterRates {
            last: HashMap::new(),
            last_at: None,
            rates: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash + Clone> CounterRates<K> {
    /// Feeds the counters' values at `now`. True when this round gave new rates (the
    /// moment to add a sample to a history).
    pub fn sample(&mut self, counts: impl IntoIterator<Item = (K, u64)>, now: DateTime<Utc>) -> bool {
        let counts: Vec<(K, u64)> = counts.into_iter().collect();
        let Some(last_at) = self.last_at else {
            self.last = counts.into_iter().collect();
            self.last_at = Some(now);
            return false;
        };
        let seconds = (now - last_at).num_milliseconds() as f64 / 1000.0;
        if seconds < RATE_INTERVAL_SECS {
            return false;
        }
        self.rates = counts
            .iter()
            .filter_map(|(key, count)| Some((key.clone(), per_second(*self.last.get(key)?, *count, seconds))))
            .collect();
        // A counter missing from this round (a leader that did not answer) keeps its last
        // value for the next.
        self.last.extend(counts);
        self.last_at = Some(now);
        true
    }

    /// The rate of `key` from the last round that gave one; 0 before.
    pub fn rate(&self, key: &K) -> f64 {
        self.rates.get(key).copied().unwrap_or(0.0)
    }

    /// Forgets counters that are gone (a deleted topic's partitions).
    pub fn retain(&mut self, mut keep: impl FnMut(&K) -> bool) {
        self.last.retain(|k, _| keep(k));
        self.rates.retain(|k, _| keep(k));
    }

    pub fn len(&self) -> usize {
        self.last.len()
    }

    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }
}

/// When each row last changed.
#[derive(Debug, Clone)]
pub struct ChangeTimes<K>(HashMap<K, DateTime<Utc>>);

impl<K> Default for ChangeTimes<K> {
    fn default() -> Self {
        ChangeTimes(HashMap::new())
    }
}

impl<K: Eq + Hash> ChangeTimes<K> {
    pub fn mark(&mut self, key: K, at: DateTime<Utc>) {
        self.0.insert(key, at);
    }

    pub fn get(&self, key: &K) -> Option<DateTime<Utc>> {
        self.0.get(key).copied()
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&K) -> bool) {
        self.0.retain(|k, _| keep(k));
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A partition, as the view-model keys it.
pub type PartitionKey = (String, i32);

/// A group's total lag: the sum of its partitions' known lags.
pub fn total_lag(group: &GroupRow) -> i64 {
    group.offsets.iter().filter_map(|o| o.lag).sum()
}

/// The sum of every group's lag on `topic`; `None` when no group reads it.
pub fn topic_lag(groups: &[GroupRow], topic: &str) -> Option<i64> {
    let lags: Vec<i64> = groups
        .iter()
        .flat_map(|g| g.offsets.iter())
        .filter(|o| o.topic == topic)
        .filter_map(|o| o.lag)
        .collect();
    (!lags.is_empty()).then(|| lags.iter().sum())
}

/// Everything a source keeps between snapshots besides the timeline: change times, the
/// produce history of each broker and the lag history of each group.
#[derive(Debug, Clone, Default)]
pub struct Trends {
    pub broker_changed: ChangeTimes<BrokerId>,
    pub partition_changed: ChangeTimes<PartitionKey>,
    pub produce_history: Histories<BrokerId>,
    pub lag_history: Histories<String>,
}

impl Trends {
    /// Sets `group`'s total lag from its offsets and adds it to the group's lag history.
    pub fn sample_lag(&mut self, group: &mut GroupRow) {
        group.total_lag = total_lag(group);
        group.lag_history = self
            .lag_history
            .push(group.group_id.clone(), group.total_lag.max(0) as u64);
    }

    /// Drops the change times and histories of partitions and groups `view` no longer has.
    pub fn forget_what_is_gone(&mut self, view: &ClusterView) {
        let partitions: HashSet<(&str, i32)> = view
            .partitions
            .iter()
            .map(|p| (p.topic.as_str(), p.partition))
            .collect();
        self.partition_changed
            .retain(|(topic, partition)| partitions.contains(&(topic.as_str(), *partition)));
        let groups: HashSet<&str> = view.groups.iter().map(|g| g.group_id.as_str()).collect();
        self.lag_history.retain(|group| groups.contains(group.as_str()));
    }

    /// Writes each broker's and partition's last change time into `view`.
    pub fn stamp_changes(&self, view: &mut ClusterView) {
        for b in &mut view.brokers {
            b.changed_at = self.broker_changed.get(&b.id);
        }
        for p in &mut view.partitions {
            p.changed_at = self.partition_changed.get(&(p.topic.clone(), p.partition));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{GroupOffsetRow, PartitionRow, SourceKind};

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::milliseconds(1_800_000_000_000 + ms)
    }

    #[test]
    fn a_history_keeps_only_the_newest_samples() {
        let mut history = History::default();
        for n in 0..1_000 {
            history.push(n);
        }
        assert_eq!(history.len(), HISTORY);
        assert_eq!(history.samples().first(), Some(&(1_000 - HISTORY as u64)));
        assert_eq!(history.samples().last(), Some(&999));
    }

    #[test]
    fn the_rate_of_two_counter_samples_is_their_difference_per_second() {
        assert_eq!(per_second(100, 300, 2.0), 100.0);
        assert_eq!(
            per_second(300, 100, 2.0),
            0.0,
            "a counter that went back grew by nothing"
        );
        assert_eq!(per_second(0, 10, 0.0), 0.0);
    }

    #[test]
    fn rates_come_from_rounds_at_least_a_second_apart() {
        let mut rates = CounterRates::default();
        assert!(
            !rates.sample([(1, 1_000u64), (2, 0)], at(0)),
            "the first round is the baseline"
        );
        assert_eq!(rates.rate(&1), 0.0);
        assert!(
            !rates.sample([(1, 1_500u64), (2, 10)], at(500)),
            "half a second is too soon"
        );
        assert_eq!(rates.rate(&1), 0.0);
        assert!(rates.sample([(1, 3_000u64), (2, 20)], at(2_000)));
        assert_eq!((rates.rate(&1), rates.rate(&2)), (1_000.0, 10.0));
        // Broker 2 did not answer: it keeps its last count and has no rate this round.
        assert!(rates.sample([(1, 4_000u64)], at(3_000)));
        assert_eq!((rates.rate(&1), rates.rate(&2)), (1_000.0, 0.0));
        assert!(rates.sample([(1, 4_000u64), (2, 40)], at(4_000)));
        assert_eq!(rates.rate(&2), 20.0);
        rates.retain(|k| *k == 1);
        assert_eq!((rates.len(), rates.rate(&2)), (1, 0.0), "a forgotten counter is gone");
    }

    fn partition(topic: &str, partition: i32) -> PartitionRow {
        PartitionRow {
            topic: topic.into(),
            partition,
            leader: Some(0),
            leader_epoch: 0,
            replicas: Vec::new(),
            isr: vec![0],
            preferred_leader: 0,
            high_watermark: None,
            last_stable_offset: None,
            log_start_offset: None,
            under_replicated: false,
            min_insync_replicas: None,
            adding: Vec::new(),
            removing: Vec::new(),
            changed_at: None,
        }
    }

    fn group(id: &str, lags: &[Option<i64>]) -> GroupRow {
        GroupRow {
            group_id: id.into(),
            state: "Stable".into(),
            protocol: "range".into(),
            generation: 1,
            coordinator: 0,
            members: Vec::new(),
            offsets: lags
                .iter()
                .enumerate()
                .map(|(p, lag)| GroupOffsetRow {
                    topic: "orders".into(),
                    partition: p as i32,
                    committed: 0,
                    end: None,
                    lag: *lag,
                })
                .collect(),
            total_lag: 0,
            lag_history: Vec::new(),
        }
    }

    #[test]
    fn lag_totals_add_the_known_lags() {
        let billing = group("billing", &[Some(3), None, Some(4)]);
        assert_eq!(total_lag(&billing), 7);
        let audit = group("audit", &[Some(1)]);
        assert_eq!(topic_lag(&[billing.clone(), audit], "orders"), Some(8));
        assert_eq!(topic_lag(&[billing], "clicks"), None, "no group reads it");
        let mut trends = Trends::default();
        let mut row = group("billing", &[Some(2)]);
        trends.sample_lag(&mut row);
        trends.sample_lag(&mut row);
        assert_eq!((row.total_lag, row.lag_history.clone()), (2, vec![2, 2]));
    }

    #[test]
    fn what_the_cluster_no_longer_has_leaves_nothing_behind() {
        let mut trends = Trends::default();
        for i in 0..20 {
            trends.partition_changed.mark((format!("run-{i}"), 0), at(0));
            trends.lag_history.push(format!("group-{i}"), 1);
        }
        trends.broker_changed.mark(1, at(5));
        let mut view = ClusterView::empty("c", SourceKind::Embedded);
        view.partitions = vec![partition("run-3", 0), partition("kept", 1)];
        view.groups = vec![group("group-7", &[])];
        trends.forget_what_is_gone(&view);
        assert_eq!(trends.partition_changed.len(), 1);
        assert_eq!(trends.lag_history.len(), 1);
        trends.stamp_changes(&mut view);
        assert_eq!(view.partitions[0].changed_at, Some(at(0)));
        assert_eq!(view.partitions[1].changed_at, None);
    }
}
