//! Kafka's default partitioner: keyed records go where murmur2 of the key says
//! ([`crate::kafka::partitioner`], shared with the external-cluster client), records without
//! a key use the uniform sticky partitioner of KIP-794 (Kafka 3.3+), which fills one batch per
//! partition before moving on.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

pub use crate::kafka::partitioner::{UNKNOWN_PARTITION, partition_for_key};

/// FNV-1a for the producer's per-topic maps, which are looked up for every record: topic names
/// are short and chosen by the application, so a fast hash fits better than SipHash's flood
/// resistance.
pub(crate) struct Fnv1a(u64);

/// The hasher of the producer's per-topic maps.
pub(crate) type TopicHasher = BuildHasherDefault<Fnv1a>;

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Uniform sticky partitioning for records without a key (KIP-794): stay on one partition per
/// topic until about `batch_size` bytes went to it, so batches fill up instead of every record
/// opening a batch of its own, then jump to another partition chosen uniformly at random.
///
/// Only partitions with a leader are chosen while there are any; a sticky partition that loses
/// its leader is left at once rather than piling records up behind it.
#[derive(Debug)]
pub struct StickyPartitioner {
    batch_size: usize,
    rng: XorShift64,
    sticky: HashMap<String, StickyPartition, TopicHasher>,
}

#[derive(Debug)]
struct StickyPartition {
    partition: i32,
    produced_bytes: usize,
}

impl StickyPartitioner {
    /// `seed` drives the choice of the next partition, so a run can be replayed exactly.
    /// A `batch_size` of 0 behaves as 1: a new partition for every record.
    pub fn new(batch_size: usize, seed: u64) -> Self {
        StickyPartitioner {
            batch_size: batch_size.max(1),
            rng: XorShift64::new(seed),
            sticky: HashMap::default(),
        }
    }

    /// The partition for the next key-less record of `topic`, whose serialized size is
    /// `record_bytes`. `available` lists the partitions that have a leader; when it is empty every
    /// partition in `0..num_partitions` is a candidate. With no candidate at all the answer is
    /// [`UNKNOWN_PARTITION`].
    pub fn partition(&mut self, topic: &str, available: &[i32], num_partitions: i32, record_bytes: usize) -> i32 {
        let candidates = Candidates {
            available,
            num_partitions,
        };
        // One lookup for the common case, a record staying on its topic's sticky partition.
        if let Some(state) = self.sticky.get_mut(topic)
            && state.produced_bytes < self.batch_size
            && candidates.contains(state.partition)
        {
            state.produced_bytes = state.produced_bytes.saturating_add(record_bytes);
            return state.partition;
        }
        // The switch is made here, on the record after the batch filled, rather than right
        // after the filling record as Java does, so that it sees the freshest leaders.
        let previous = self.sticky.get(topic).map(|state| state.partition);
        let Some(partition) = candidates.pick(&mut self.rng, previous) else {
            return UNKNOWN_PARTITION;
        };
        let state = StickyPartition {
            partition,
            produced_bytes: record_bytes,
        };
        match self.sticky.get_mut(topic) {
            Some(existing) => *existing = state,
            None => {
                self.sticky.insert(topic.to_owned(), state);
            }
        }
        partition
    }
}

/// The partitions a key-less record may go to.
struct Candidates<'a> {
    available: &'a [i32],
    num_partitions: i32,
}

impl Candidates<'_> {
    fn len(&self) -> usize {
        if self.available.is_empty() {
            usize::try_from(self.num_partitions).unwrap_or(0)
        } else {
            self.available.len()
        }
    }

    fn at(&self, index: usize) -> i32 {
        if self.available.is_empty() {
            // `index < len()`, which came from an i32, so it converts back losslessly.
            index as i32
        } else {
            self.available[index]
        }
    }

    fn contains(&self, partition: i32) -> bool {
        (0..self.len()).any(|i| self.at(i) == partition)
    }

    /// A candidate drawn uniformly, never `previous` while there is any other: switching back to
    /// the partition just filled would only make its batch bigger.
    fn pick(&self, rng: &mut XorShift64, previous: Option<i32>) -> Option<i32> {
        let len = self.len();
        if len == 0 {
            return None;
        }
        let skipped = previous.and_then(|p| (0..len).find(|&i| self.at(i) == p));
        let index = match skipped {
            Some(skipped) if len > 1 => {
                let drawn = rng.below(len - 1);
                if drawn >= skipped { drawn + 1 } else { drawn }
            }
            _ => rng.below(len),
        };
        Some(self.at(index))
    }
}

/// Marsaglia's xorshift64: plenty for spreading batches, and reproducible from a seed.
#[derive(Debug)]
struct XorShift64(u64);

impl XorShift64 {
    fn new(seed: u64) -> Self {
        // A splitmix64 step so that nearby seeds start far apart; zero is xorshift's one fixed
        // point, so it must never be the state.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        XorShift64((z ^ (z >> 31)).max(1))
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in `0..n` for `n > 0`; the modulo bias is negligible for partition counts.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn it_sticks_to_one_partition_until_a_batch_is_full_then_moves() {
        let mut partitioner = StickyPartitioner::new(100, 7);
        let all = [0, 1, 2, 3, 4, 5];
        let first = partitioner.partition("clicks", &all, 6, 10);
        for _ in 1..10 {
            assert_eq!(partitioner.partition("clicks", &all, 6, 10), first);
        }
        let second = partitioner.partition("clicks", &all, 6, 10);
        assert_ne!(second, first, "100 bytes went to {first}: time to move");
        for _ in 1..10 {
            assert_eq!(partitioner.partition("clicks", &all, 6, 10), second);
        }
    }

    #[test]
    fn each_topic_has_its_own_sticky_partition_and_byte_count() {
        let mut partitioner = StickyPartitioner::new(100, 3);
        let all = [0, 1, 2, 3];
        let views = partitioner.partition("page-views", &all, 4, 60);
        let clicks = partitioner.partition("clicks", &all, 4, 90);
        assert_eq!(partitioner.partition("clicks", &all, 4, 5), clicks);
        assert_eq!(
            partitioner.partition("page-views", &all, 4, 40),
            views,
            "only 60 of 100 bytes so far"
        );
        assert_ne!(
            partitioner.partition("page-views", &all, 4, 1),
            views,
            "page-views filled its batch"
        );
        assert_eq!(
            partitioner.partition("clicks", &all, 4, 1),
            clicks,
            "clicks has 95 bytes, not 100"
        );
    }

    #[test]
    fn only_partitions_with_a_leader_are_chosen() {
        let mut partitioner = StickyPartitioner::new(1, 11);
        let available = [1, 4];
        let chosen: Vec<i32> = (0..200).map(|_| partitioner.partition("t", &available, 6, 1)).collect();
        assert!(chosen.iter().all(|p| available.contains(p)), "{chosen:?}");
        assert!(
            chosen.windows(2).all(|w| w[0] != w[1]),
            "with two candidates every switch goes to the other one: {chosen:?}"
        );
    }

    #[test]
    fn over_many_switches_every_available_partition_is_used() {
        let mut partitioner = StickyPartitioner::new(1, 42);
        let available = [0, 2, 3, 5];
        let used: BTreeSet<i32> = (0..1000)
            .map(|_| partitioner.partition("t", &available, 6, 1))
            .collect();
        assert_eq!(used, BTreeSet::from(available));
    }

    #[test]
    fn without_leader_information_every_partition_is_a_candidate() {
        let mut partitioner = StickyPartitioner::new(1, 5);
        let used: BTreeSet<i32> = (0..1000).map(|_| partitioner.partition("t", &[], 4, 1)).collect();
        assert_eq!(used, BTreeSet::from([0, 1, 2, 3]));
        assert_eq!(partitioner.partition("empty", &[], 0, 1), UNKNOWN_PARTITION);
    }

    #[test]
    fn a_sticky_partition_that_loses_its_leader_is_left_at_once() {
        let mut partitioner = StickyPartitioner::new(1_000_000, 9);
        let first = partitioner.partition("t", &[0, 1, 2], 3, 1);
        let still_led: Vec<i32> = [0, 1, 2].into_iter().filter(|&p| p != first).collect();
        let next = partitioner.partition("t", &still_led, 3, 1);
        assert!(still_led.contains(&next));
        assert_eq!(
            partitioner.partition("t", &[0, 1, 2], 3, 1),
            next,
            "and it sticks to the new one"
        );
    }

    #[test]
    fn the_same_seed_replays_the_same_partitions() {
        let run = |seed| {
            let mut partitioner = StickyPartitioner::new(1, seed);
            (0..50)
                .map(|_| partitioner.partition("t", &[], 12, 1))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }
}
