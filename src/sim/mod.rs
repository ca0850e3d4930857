//! Deterministic simulation of a whole kdeck cluster, in the spirit of TigerBeetle's VOPR and
//! Jepsen's Kafka checker: one `u64` seed draws a cluster setup and a schedule of client
//! actions and faults, which run over the real engine and clients on tokio's paused clock (a
//! current-thread runtime, so simulated minutes cost real milliseconds). After every step a
//! separate [`checker::Checker`] samples the cluster and asserts what must always hold; after
//! the schedule every fault is healed and the cluster must settle within a bounded simulated
//! time, then sit idle doing a bounded amount of work.
//!
//! A failing seed is reproduced with `kdeck bench sim --seed S` (or `SIM_SEED=S cargo test
//! --test sim`); `--steps K` cuts its schedule short and `--shrink` searches for a shorter
//! schedule that still fails. The same seed always gives the same schedule; the outcome is
//! the same as far as the engine allows (see [`SimReport::fingerprint`]).

pub mod checker;
mod runner;
pub mod schedule;
// The Kafka-protocol clients; the workload does not use them yet.
mod wire;
mod workload;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use checker::{Allowance, Invariant, Violation};
pub use schedule::{Action, Schedule, Setup, Step};

/// A small, fast, seedable generator (SplitMix64): the schedule's only source of chance.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len() as u64) as usize)
    }
}

/// How to run one seed.
#[derive(Debug, Clone)]
pub struct SimOptions {
    pub seed: u64,
    /// Steps of the schedule before the heal phase.
    pub steps: usize,
    /// Steps left out of the schedule (by index), for shrinking a failing one by hand.
    pub skip: Vec<usize>,
    /// Where the temporary data directory goes (default: `/dev/shm` when there is one).
    pub dir: Option<PathBuf>,
    /// CPU time the runtime may burn without simulated time moving, while the runner waits,
    /// before it is taken to spin (tasks that never wait keep it busy, so the paused clock
    /// never advances): the spin is reported and the clock pushed on.
    pub stall_after: Duration,
    /// Prints a line per step (action and outcome) and per cluster event to stderr as the
    /// run goes.
    pub trace: bool,
    /// The schedule generator ([`schedule::GENERATOR`] unless replaying an old schedule).
    pub generator: u32,
}

impl SimOptions {
    pub fn new(seed: u64, steps: usize) -> Self {
        SimOptions {
            seed,
            steps,
            skip: Vec::new(),
            dir: None,
            stall_after: Duration::from_millis(500),
            trace: false,
            generator: schedule::GENERATOR,
        }
    }
}

/// The steps a seed runs by default: enough for several faults to overlap.
pub const DEFAULT_STEPS: usize = 60;

/// What one seed did and found.
#[derive(Debug, Clone)]
pub struct SimReport {
    pub seed: u64,
    pub schedule: Schedule,
    /// Steps run (schedule and heal).
    pub steps: usize,
    pub faults: u64,
    /// The faults that took effect, by kind ([`Action::fault_kind`](Action::fault_kind)).
    pub faults_by_kind: BTreeMap<&'static str, u64>,
    /// Leader elections the engine announced, by reason (`unclean`, `preferred`...).
    pub elections: BTreeMap<String, u64>,
    /// Simulated time the run took.
    pub simulated: Duration,
    pub violations: Vec<Violation>,
    /// Losses the rules allow (an unclean election, a power-lost replica elected), with the
    /// acknowledged records they took.
    pub allowed_losses: Vec<String>,
    pub acked_records: u64,
    pub consumed_records: u64,
    /// Commits the coordinator acknowledged to a consumer.
    pub acknowledged_commits: u64,
    /// How many records each allowance excused (see [`checker::Allowance`]).
    pub excused: BTreeMap<checker::Allowance, u64>,
    /// Committed records of compacted topics a cleaner removed (a later record of their key
    /// read back in their place).
    pub cleaned_records: u64,
    /// The transactional writers' transactions by fate (`committed`, `aborted`, `abandoned`,
    /// `unknown`), and `fenced`: those whose writer learned a newer instance fenced it.
    pub transactions: BTreeMap<&'static str, u64>,
    /// The clients spoke the Kafka protocol to the brokers.
    pub wire: bool,
    /// A digest of the final state (leaders, epochs, offsets, event count): two runs of a
    /// seed with equal fingerprints ended in the same state.
    pub fingerprint: u64,
}

impl SimReport {
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }
}

/// The commands that rerun one seed, for a violation report.
pub fn reproduce_commands(seed: u64, steps: usize) -> String {
    let cut = if steps == DEFAULT_STEPS {
        String::new()
    } else {
        format!(" --steps {steps}")
    };
    let env = if steps == DEFAULT_STEPS {
        String::new()
    } else {
        format!(" SIM_STEPS={steps}")
    };
    format!("cargo run --release -- bench sim --seed {seed}{cut}   or   SIM_SEED={seed}{env} cargo test --test sim")
}

/// Runs one seed to the end on its own paused-clock runtime (call it from a plain thread, not
/// from inside another runtime).
pub fn run_seed(options: &SimOptions) -> anyhow::Result<SimReport> {
    let schedule = Schedule::generate_with(options.seed, options.steps, options.generator);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()?;
    let report = runtime.block_on(runner::run(schedule, options.clone()));
    // Sender tasks of abandoned producers and the like die with the runtime.
    runtime.shutdown_background();
    report
}

/// Runs every seed of `seeds` on `jobs` threads, each on its own paused-clock runtime, and
/// hands each report to `done` as it comes (in completion order). Returns them by seed.
pub fn run_seeds(
    seeds: &[u64],
    options: impl Fn(u64) -> SimOptions + Sync,
    jobs: usize,
    mut done: impl FnMut(&SimReport),
) -> anyhow::Result<Vec<SimReport>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut reports = Vec::new();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, seeds.len().max(1)) {
            let tx = tx.clone();
            let (next, options) = (&next, &options);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&seed) = seeds.get(i) else { return };
                    if tx.send(run_seed(&options(seed))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        for report in rx {
            let report = report?;
            done(&report);
            reports.push(report);
        }
        anyhow::Ok(())
    })?;
    reports.sort_by_key(|r| r.seed);
    Ok(reports)
}

/// Looks for a shorter schedule that still breaks the same invariant: first the shortest
/// failing prefix, then single steps left out one at a time. Each try is a full run, so this
/// is slow; the outcome is only as stable as the seed is reproducible.
pub fn shrink(options: &SimOptions, invariant: Invariant, budget: usize) -> anyhow::Result<SimOptions> {
    let fails = |o: &SimOptions| -> anyhow::Result<bool> {
        Ok(run_seed(o)?.violations.iter().any(|v| v.invariant == invariant))
    };
    let mut best = options.clone();
    let mut tries = 0;
    let (mut lo, mut hi) = (0usize, best.steps);
    while lo < hi && tries < budget {
        let mid = (lo + hi) / 2;
        tries += 1;
        let candidate = SimOptions {
            steps: mid,
            ..best.clone()
        };
        if fails(&candidate)? {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    best.steps = hi;
    for index in (0..best.steps).rev() {
        if tries >= budget {
            break;
        }
        if best.skip.contains(&index) {
            continue;
        }
        tries += 1;
        let mut candidate = best.clone();
        candidate.skip.push(index);
        if fails(&candidate)? {
            best = candidate;
        }
    }
    best.skip.sort_unstable();
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_a_pure_function_of_its_seed() {
        let a: Vec<u64> = (0..5).scan(Rng::new(7), |r, _| Some(r.next_u64())).collect();
        let b: Vec<u64> = (0..5).scan(Rng::new(7), |r, _| Some(r.next_u64())).collect();
        let c: Vec<u64> = (0..5).scan(Rng::new(8), |r, _| Some(r.next_u64())).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut r = Rng::new(1);
        assert!((0..1000).all(|_| r.between(3, 5) >= 3 && r.between(3, 5) <= 5));
    }
}
