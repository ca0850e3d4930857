//! Replication quotas (KIP-73): a broker's leader and follower replication throttles, as
//! Kafka's `ReplicationQuotaManager`. Each quota has a bound in bytes/s (the broker's
//! `leader.replication.throttled.rate` or `follower.replication.throttled.rate`, none:
//! unbounded), the set of partitions it throttles (from the topics'
//! `*.replication.throttled.replicas` lists naming this broker), and a rate measured over a
//! window of one-second samples on the cluster's clock. Replication traffic of throttled
//! partitions is recorded whether or not it was held back; only out-of-sync replicas are
//! held back, and only while the measured rate is above the bound.

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use super::{BrokerId, TopicPartition};

/// Kafka's `replication.quota.window.size.seconds`.
const SAMPLE_WINDOW: Duration = Duration::from_secs(1);
/// Kafka's `replication.quota.window.num`.
const SAMPLES: u32 = 11;

/// The replicas a topic's `leader.replication.throttled.replicas` or
/// `follower.replication.throttled.replicas` names: every one (`*`) or `partition:broker`
/// pairs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ThrottledReplicas {
    #[default]
    None,
    All,
    Listed(BTreeSet<(i32, BrokerId)>),
}

impl ThrottledReplicas {
    /// Parses Kafka's format (`0:101,0:102,1:101` or `*`; empty: none), or says what is wrong.
    pub fn parse(text: &str) -> Result<ThrottledReplicas, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(ThrottledReplicas::None);
        }
        if text == "*" {
            return Ok(ThrottledReplicas::All);
        }
        let mut pairs = BTreeSet::new();
        for item in text.split(',').map(str::trim) {
            let pair = item
                .split_once(':')
                .and_then(|(p, b)| Some((p.trim().parse::<i32>().ok()?, b.trim().parse::<BrokerId>().ok()?)))
                .filter(|(p, b)| *p >= 0 && *b >= 0);
            match pair {
                Some(pair) => pairs.insert(pair),
                None => {
                    return Err(format!(
                        "{item:?} is not a replica: a throttled replicas list is `*` or `partition:broker` pairs separated by commas"
                    ));
                }
            };
        }
        Ok(ThrottledReplicas::Listed(pairs))
    }

    /// Whether the replica of `partition` on `broker` is listed.
    pub fn includes(&self, partition: i32, broker: BrokerId) -> bool {
        match self {
            ThrottledReplicas::None => false,
            ThrottledReplicas::All => true,
            ThrottledReplicas::Listed(pairs) => pairs.contains(&(partition, broker)),
        }
    }
}

#[derive(Debug, Default)]
struct QuotaState {
    /// Bytes per second; `None`: unbounded (Kafka's default, `Long.MAX_VALUE`).
    bound: Option<u64>,
    throttled: BTreeSet<TopicPartition>,
    /// Oldest first: each sample's start and the bytes recorded in it.
    samples: VecDeque<(Instant, u64)>,
}

impl QuotaState {
    fn purge(&mut self, now: Instant) {
        while self
            .samples
            .front()
            .is_some_and(|(start, _)| now.saturating_duration_since(*start) >= SAMPLE_WINDOW * SAMPLES)
        {
            self.samples.pop_front();
        }
    }

    /// Kafka's `Rate`: the bytes of the live samples over the time they span, counted as at
    /// least all but one sample window long (so a young quota does not see a burst as a
    /// huge rate).
    fn rate(&mut self, now: Instant) -> f64 {
        self.purge(now);
        let total: u64 = self.samples.iter().map(|(_, b)| b).sum();
        let oldest = self.samples.front().map_or(now, |(start, _)| *start);
        let mut elapsed = now.saturating_duration_since(oldest);
        let full = elapsed.as_millis() / SAMPLE_WINDOW.as_millis();
        let min_full = u128::from(SAMPLES - 1);
        if full < min_full {
            elapsed += SAMPLE_WINDOW * (min_full - full) as u32;
        }
        total as f64 / elapsed.as_secs_f64()
    }
}

/// One direction's replication quota of one broker.
#[derive(Debug, Default)]
pub struct ReplicationQuota {
    state: Mutex<QuotaState>,
}

impl ReplicationQuota {
    fn lock(&self) -> MutexGuard<'_, QuotaState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The bound and the throttled partitions from the latest metadata.
    pub fn configure(&self, bound: Option<u64>, throttled: BTreeSet<TopicPartition>) {
        let mut s = self.lock();
        s.bound = bound;
        s.throttled = throttled;
    }

    /// Kafka's `isThrottled`: whether the partition's replication counts against this quota.
    pub fn is_throttled(&self, tp: &TopicPartition) -> bool {
        self.lock().throttled.contains(tp)
    }

    /// Kafka's `isQuotaExceeded`: the measured rate is above the bound.
    pub fn is_exceeded(&self, now: Instant) -> bool {
        let mut s = self.lock();
        match s.bound {
            None => false,
            Some(bound) => s.rate(now) > bound as f64,
        }
    }

    /// Counts replicated bytes of a throttled partition.
    pub fn record(&self, now: Instant, bytes: u64) {
        let mut s = self.lock();
        s.purge(now);
        let fresh = s
            .samples
            .back()
            .is_none_or(|(start, _)| now.saturating_duration_since(*start) >= SAMPLE_WINDOW);
        if fresh {
            s.samples.push_back((now, 0));
            if s.samples.len() > SAMPLES as usize {
                s.samples.pop_front();
            }
        }
        if let Some((_, b)) = s.samples.back_mut() {
            *b += bytes;
        }
    }

    /// Kafka's `shouldLeaderThrottle` / `shouldFollowerThrottle`: an out-of-sync replica of a
    /// throttled partition waits while the quota is exceeded; an in-sync one never does.
    pub fn should_throttle(&self, tp: &TopicPartition, in_sync: bool, now: Instant) -> bool {
        !in_sync && self.is_throttled(tp) && self.is_exceeded(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttled_replica_lists_parse_as_kafka_writes_them() {
        assert_eq!(ThrottledReplicas::parse(""), Ok(ThrottledReplicas::None));
        assert_eq!(ThrottledReplicas::parse(" * "), Ok(ThrottledReplicas::All));
        let listed = ThrottledReplicas::parse("0:1, 1:2").expect("valid");
        assert!(listed.includes(0, 1) && listed.includes(1, 2));
        assert!(!listed.includes(0, 2));
        assert!(ThrottledReplicas::parse("0-1").is_err());
        assert!(ThrottledReplicas::parse("0:x").is_err());
        assert!(ThrottledReplicas::parse("0:1,").is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn the_quota_is_exceeded_only_above_its_bound_over_the_window() {
        let quota = ReplicationQuota::default();
        let tp = TopicPartition::new("t", 0);
        quota.configure(Some(1000), [tp.clone()].into());
        let now = Instant::now();
        // A young quota counts its window as ten seconds long.
        quota.record(now, 9_000);
        assert!(!quota.is_exceeded(now));
        quota.record(now, 2_000);
        assert!(quota.is_exceeded(now));
        assert!(quota.should_throttle(&tp, false, now));
        assert!(
            !quota.should_throttle(&tp, true, now),
            "in-sync replicas are never throttled"
        );
        assert!(!quota.should_throttle(&TopicPartition::new("t", 1), false, now));
        // Eleven seconds later the samples have left the window.
        assert!(!quota.is_exceeded(now + Duration::from_secs(11)));
        quota.configure(None, BTreeSet::new());
        quota.record(now, 1 << 30);
        assert!(!quota.is_exceeded(now), "no bound, never exceeded");
    }
}
