//! The simulation's checker against planted bugs (issue 24): a checker that passes every seed
//! proves little until it is seen to fail. Each bug of `kdeck::engine::planted` (a classic
//! replication mistake) is planted in turn and seeds run from 0 until one breaks an
//! invariant; every bug must be caught within [`SEEDS`] seeds. A control runs first: with no
//! bug planted the same seeds pass.
//!
//! Needs the `planted-bugs` feature:
//! `cargo test --release --features planted-bugs --test planted -- --nocapture` prints a table
//! of each bug, the seeds it took to catch and the first violation. `PLANTED_BUG=<name>` runs
//! only that bug.
//!
//! Everything runs in one test: the planted bug is process-wide, so two tests running at once
//! would plant over each other.

use std::time::{Duration, Instant};

use kdeck::engine::planted::{self, Bug};
use kdeck::sim::{self, DEFAULT_STEPS, Invariant, SimOptions, SimReport};

/// Every planted bug must break an invariant within this many seeds.
const SEEDS: u64 = 200;
/// Seeds the control runs with no bug planted.
const CONTROL_SEEDS: u64 = 20;

/// How one bug fared.
struct Outcome {
    bug: Bug,
    /// The lowest seed that broke an invariant, with its report.
    caught: Option<SimReport>,
    seeds_run: u64,
    hits: u64,
    took: Duration,
}

fn jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs seeds 0, 1, ... in chunks until a chunk has a failing seed (or `limit` seeds ran);
/// returns the lowest failing seed's report and how many seeds ran.
fn first_failure(limit: u64) -> (Option<SimReport>, u64) {
    let jobs = jobs();
    // A few seeds per thread, so a slow seed does not leave the other threads idle for long.
    let chunk = 4 * jobs as u64;
    let mut start = 0;
    while start < limit {
        let seeds: Vec<u64> = (start..(start + chunk).min(limit)).collect();
        let reports = sim::run_seeds(&seeds, |seed| SimOptions::new(seed, DEFAULT_STEPS), jobs, |_| {})
            .expect("the simulation runs");
        start += seeds.len() as u64;
        if let Some(failed) = reports.into_iter().find(|r| !r.passed()) {
            return (Some(failed), start);
        }
    }
    (None, start)
}

fn invariants(report: &SimReport) -> Vec<Invariant> {
    let mut all: Vec<Invariant> = report.violations.iter().map(|v| v.invariant).collect();
    all.sort();
    all.dedup();
    all
}

fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        format!("{}...", flat.chars().take(max).collect::<String>())
    }
}

fn print_table(outcomes: &[Outcome]) {
    eprintln!();
    eprintln!(
        "{:<30} {:>9} {:>9} {:>9} {:>6}  first violation",
        "planted bug", "caught by", "seeds run", "hits", "secs"
    );
    for o in outcomes {
        let (seed, first) = match &o.caught {
            Some(r) => (
                format!("seed {}", r.seed),
                r.violations
                    .first()
                    .map(|v| format!("[{:?}] {}", v.invariant, one_line(&v.to_string(), 160)))
                    .unwrap_or_default(),
            ),
            None => ("never".to_string(), format!("none in {} seeds", o.seeds_run)),
        };
        eprintln!(
            "{:<30} {:>9} {:>9} {:>9} {:>6.1}  {first}",
            o.bug.name(),
            seed,
            o.seeds_run,
            o.hits,
            o.took.as_secs_f64()
        );
    }
    eprintln!();
    for o in outcomes {
        eprintln!("{}: {}", o.bug.name(), o.bug.description());
        if std::env::var("PLANTED_VERBOSE").is_ok_and(|v| v == "1")
            && let Some(r) = &o.caught
        {
            for v in &r.violations {
                eprintln!("    {v}");
            }
        }
        if let Some(r) = &o.caught {
            eprintln!(
                "  seed {} broke {:?}; rerun: PLANTED_BUG={} cargo test --release --features planted-bugs --test planted -- --nocapture",
                r.seed,
                invariants(r),
                o.bug.name()
            );
        }
    }
}

/// `PLANTED_SURVEY=1`: every seed under every bug, and per invariant the seeds that broke
/// it (how strong the evidence is: a bug caught only by Liveness is caught only by its
/// symptoms).
fn survey(bugs: &[Bug]) {
    let seeds: Vec<u64> = (0..SEEDS).collect();
    for &bug in bugs {
        planted::plant(Some(bug));
        let reports = sim::run_seeds(&seeds, |seed| SimOptions::new(seed, DEFAULT_STEPS), jobs(), |_| {})
            .expect("the simulation runs");
        planted::plant(None);
        let mut by_invariant: std::collections::BTreeMap<Invariant, Vec<u64>> = Default::default();
        for r in &reports {
            for i in invariants(r) {
                by_invariant.entry(i).or_default().push(r.seed);
            }
        }
        let failing = reports.iter().filter(|r| !r.passed()).count();
        eprintln!("{}: {failing} of {} seeds fail", bug.name(), seeds.len());
        for (invariant, seeds) in by_invariant {
            let first: Vec<String> = seeds.iter().take(8).map(u64::to_string).collect();
            eprintln!("  {invariant:?}: {} seeds (first {})", seeds.len(), first.join(", "));
        }
    }
}

#[test]
fn the_checker_catches_every_planted_bug() {
    let only = std::env::var("PLANTED_BUG").ok();
    if let Some(name) = &only {
        assert!(
            Bug::ALL.iter().any(|b| b.name() == name),
            "PLANTED_BUG={name} is none of {:?}",
            Bug::ALL.map(Bug::name)
        );
    }

    let bugs: Vec<Bug> = Bug::ALL
        .into_iter()
        .filter(|b| only.as_deref().is_none_or(|n| n == b.name()))
        .collect();
    if std::env::var("PLANTED_SURVEY").is_ok_and(|v| v == "1") {
        survey(&bugs);
        return;
    }

    planted::plant(None);
    let started = Instant::now();
    let (control, _) = first_failure(CONTROL_SEEDS);
    if let Some(r) = &control {
        panic!(
            "with no bug planted seed {} fails: {}",
            r.seed,
            r.violations.first().map(ToString::to_string).unwrap_or_default()
        );
    }
    eprintln!(
        "control: seeds 0..{CONTROL_SEEDS} pass with no bug planted ({:.1}s)",
        started.elapsed().as_secs_f64()
    );

    let mut outcomes = Vec::new();
    for bug in bugs {
        let started = Instant::now();
        planted::plant(Some(bug));
        let (caught, seeds_run) = first_failure(SEEDS);
        let hits = planted::hits();
        planted::plant(None);
        let outcome = Outcome {
            bug,
            caught,
            seeds_run,
            hits,
            took: started.elapsed(),
        };
        eprintln!(
            "{}: {} after {} seeds, {} hits, {:.1}s",
            bug.name(),
            outcome
                .caught
                .as_ref()
                .map_or("not caught".to_string(), |r| format!("caught by seed {}", r.seed)),
            outcome.seeds_run,
            outcome.hits,
            outcome.took.as_secs_f64()
        );
        outcomes.push(outcome);
    }
    print_table(&outcomes);
    eprintln!("total {:.1}s", started.elapsed().as_secs_f64());

    let missed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.caught.is_none())
        .map(|o| o.bug.name())
        .collect();
    assert!(
        missed.is_empty(),
        "planted bugs the checker missed in {SEEDS} seeds: {missed:?}"
    );
    let unreached: Vec<&str> = outcomes.iter().filter(|o| o.hits == 0).map(|o| o.bug.name()).collect();
    assert!(
        unreached.is_empty(),
        "planted bugs whose mutation was never taken: {unreached:?}"
    );
}
