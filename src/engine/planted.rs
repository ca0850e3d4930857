//! Planted bugs (issue 24): classic replication mistakes, each a small switch at the place in
//! the engine where the real rule is enforced, so the simulation's checker can be shown to
//! catch them (`tests/planted.rs`). They exist only with the `planted-bugs` feature; without
//! it [`active`] is a constant `false` and every mutation compiles away.
//!
//! One bug at a time, process-wide: a planted bug affects every cluster in the process.

/// A mutation of the engine that breaks one replication rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Bug {
    HwPastLaggingIsr = 1,
    DivergenceIgnored,
    StaleEpochCache,
    LeaderEpochReused,
    IsrShrunkWithoutController,
    AcksAllOnAppend,
    SequenceOffByOne,
    OffsetCommitNotWritten,
    ConsumerReadsAboveHw,
    TruncationBelowHw,
}

impl Bug {
    pub const ALL: [Bug; 10] = [
        Bug::HwPastLaggingIsr,
        Bug::DivergenceIgnored,
        Bug::StaleEpochCache,
        Bug::LeaderEpochReused,
        Bug::IsrShrunkWithoutController,
        Bug::AcksAllOnAppend,
        Bug::SequenceOffByOne,
        Bug::OffsetCommitNotWritten,
        Bug::ConsumerReadsAboveHw,
        Bug::TruncationBelowHw,
    ];

    /// A stable kebab-case name, for tables and reports.
    pub fn name(self) -> &'static str {
        match self {
            Bug::HwPastLaggingIsr => "hw-past-lagging-isr",
            Bug::DivergenceIgnored => "divergence-ignored",
            Bug::StaleEpochCache => "stale-epoch-cache",
            Bug::LeaderEpochReused => "leader-epoch-reused",
            Bug::IsrShrunkWithoutController => "isr-shrunk-without-controller",
            Bug::AcksAllOnAppend => "acks-all-on-append",
            Bug::SequenceOffByOne => "sequence-off-by-one",
            Bug::OffsetCommitNotWritten => "offset-commit-not-written",
            Bug::ConsumerReadsAboveHw => "consumer-reads-above-hw",
            Bug::TruncationBelowHw => "truncation-below-hw",
        }
    }

    /// What the mutation does, in one line.
    pub fn description(self) -> &'static str {
        match self {
            Bug::HwPastLaggingIsr => "the leader's HW leaves the first lagging ISR follower out of its minimum",
            Bug::DivergenceIgnored => {
                "a follower never presents its last fetched epoch, so a divergent suffix is never truncated"
            }
            Bug::StaleEpochCache => "truncating a log leaves the leader-epoch cache as it was",
            Bug::LeaderEpochReused => "the controller moves a failed leader's partitions without bumping the epoch",
            Bug::IsrShrunkWithoutController => {
                "a leader drops a lagging follower from its own ISR and acts on it, without AlterPartition"
            }
            Bug::AcksAllOnAppend => "an acks=all produce is answered once the leader appended it",
            Bug::SequenceOffByOne => "a retry of an idempotent producer's newest batch passes as the next batch",
            Bug::OffsetCommitNotWritten => {
                "an OffsetCommit is answered from memory, never written to __consumer_offsets"
            }
            Bug::ConsumerReadsAboveHw => "a consumer's fetch reads up to the log end instead of the HW",
            Bug::TruncationBelowHw => "a replica becoming follower cuts its log to one below its HW",
        }
    }
}

impl std::fmt::Display for Bug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(feature = "planted-bugs")]
mod switch {
    use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

    use super::Bug;

    /// The planted bug's number (0: none).
    static PLANTED: AtomicU8 = AtomicU8::new(0);
    /// How often the planted bug's mutation was taken since it was planted.
    static HITS: AtomicU64 = AtomicU64::new(0);

    /// Plants `bug` (or none) for the whole process and resets the hit count.
    pub fn plant(bug: Option<Bug>) {
        PLANTED.store(bug.map_or(0, |b| b as u8), Ordering::SeqCst);
        HITS.store(0, Ordering::SeqCst);
    }

    /// Whether `bug` is planted; each `true` counts as a hit.
    #[inline]
    pub fn active(bug: Bug) -> bool {
        let planted = PLANTED.load(Ordering::Relaxed) == bug as u8;
        if planted {
            HITS.fetch_add(1, Ordering::Relaxed);
        }
        planted
    }

    /// How often the planted bug's mutation was taken (evidence that it is reached).
    pub fn hits() -> u64 {
        HITS.load(Ordering::SeqCst)
    }
}

#[cfg(feature = "planted-bugs")]
pub use switch::{active, hits, plant};

/// Without the `planted-bugs` feature no bug is ever active.
#[cfg(not(feature = "planted-bugs"))]
#[inline(always)]
pub const fn active(_bug: Bug) -> bool {
    false
}
