//! `kdeck bench sim`: runs seeds of the deterministic simulation (see [`crate::sim`]) and
//! prints, per failing seed, its violations and the command that reproduces it, then one
//! summary line: seeds run, steps, faults injected, violations found.

use std::time::Instant;

use anyhow::{Result, bail};

use crate::cli::SimBenchArgs;
use crate::out::outln;
use crate::sim::{self, SimOptions, SimReport};

pub fn run(args: &SimBenchArgs) -> Result<()> {
    let first = args.seed.unwrap_or(0);
    let count = args.seeds.unwrap_or(if args.seed.is_some() { 1 } else { 100 });
    let seeds: Vec<u64> = (first..first.saturating_add(count)).collect();
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let options = |seed| SimOptions {
        skip: args.skip.clone(),
        dir: args.dir.clone(),
        trace: args.trace,
        ..SimOptions::new(seed, args.steps)
    };
    if args.trace {
        for &seed in &seeds {
            crate::out::text(&sim::Schedule::generate(seed, args.steps).to_string());
        }
    }
    let started = Instant::now();
    let reports = sim::run_seeds(&seeds, options, jobs, |r| print_seed(r, args))?;
    let elapsed = started.elapsed();
    let failing: Vec<&SimReport> = reports.iter().filter(|r| !r.passed()).collect();
    let simulated: f64 = reports.iter().map(|r| r.simulated.as_secs_f64()).sum();
    outln!(
        "sim: {} seeds run, {} steps, {} faults injected, {} violations found in {} seeds, {} acks=all records checked, {} consumed records checked, {} acknowledged commits checked, {simulated:.0} s simulated in {:.1} s",
        reports.len(),
        reports.iter().map(|r| r.steps).sum::<usize>(),
        reports.iter().map(|r| r.faults).sum::<u64>(),
        reports.iter().map(|r| r.violations.len()).sum::<usize>(),
        failing.len(),
        reports.iter().map(|r| r.acked_records).sum::<u64>(),
        reports.iter().map(|r| r.consumed_records).sum::<u64>(),
        reports.iter().map(|r| r.acknowledged_commits).sum::<u64>(),
        elapsed.as_secs_f64(),
    );
    outln!("sim: faults by kind: {}", faults_by_kind(&reports));
    outln!("sim: records excused, by allowance: {}", excused_by_allowance(&reports));
    outln!(
        "sim: {} of {} seeds ran their clients through the Kafka protocol",
        reports.iter().filter(|r| r.wire).count(),
        reports.len()
    );
    outln!(
        "sim: {} of {} seeds had a compacted topic; {} committed records were cleaned away (a later record of their key read back)",
        reports
            .iter()
            .filter(|r| r.schedule.setup.topics.iter().any(|t| t.compacted))
            .count(),
        reports.len(),
        reports.iter().map(|r| r.cleaned_records).sum::<u64>()
    );
    outln!("sim: elections by reason: {}", elections_by_reason(&reports));
    if !failing.is_empty() {
        let list: Vec<String> = failing.iter().map(|r| r.seed.to_string()).collect();
        outln!("sim: failing seeds: {}", list.join(", "));
    }
    if args.check_determinism {
        check_determinism(&reports, &seeds, &options, jobs)?;
    }
    if args.shrink {
        for r in &failing {
            shrink(r, &options)?;
        }
    }
    if failing.is_empty() {
        Ok(())
    } else {
        bail!("{} of {} seeds broke an invariant", failing.len(), reports.len())
    }
}

fn print_seed(report: &SimReport, args: &SimBenchArgs) {
    if args.trace {
        for line in &report.allowed_losses {
            outln!("seed {}: allowed loss: {line}", report.seed);
        }
    }
    if report.passed() {
        if args.trace || args.seeds.is_none() && args.seed.is_some() {
            outln!(
                "sim seed {}: passed, {} steps, {} faults, {:.0} s simulated, fingerprint {:016x}",
                report.seed,
                report.steps,
                report.faults,
                report.simulated.as_secs_f64(),
                report.fingerprint
            );
        }
        return;
    }
    outln!(
        "sim seed {}: FAILED, {} violations, {} steps, {} faults, {:.0} s simulated, fingerprint {:016x}",
        report.seed,
        report.violations.len(),
        report.steps,
        report.faults,
        report.simulated.as_secs_f64(),
        report.fingerprint
    );
    for v in &report.violations {
        outln!("  {v}");
    }
    let skip = if args.skip.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = args.skip.iter().map(ToString::to_string).collect();
        format!(" --skip {}", list.join(","))
    };
    outln!(
        "  reproduce: {}{skip} (add --trace for the schedule and every event)",
        sim::reproduce_commands(report.seed, args.steps)
    );
}

/// Runs every seed again and compares the final state, to measure how reproducible a seed is.
fn check_determinism(
    first: &[SimReport],
    seeds: &[u64],
    options: &(impl Fn(u64) -> SimOptions + Sync),
    jobs: usize,
) -> Result<()> {
    let again = sim::run_seeds(seeds, options, jobs, |_| {})?;
    let same_outcome = first
        .iter()
        .zip(&again)
        .filter(|(a, b)| {
            a.passed() == b.passed()
                && a.violations
                    .iter()
                    .map(|v| v.invariant)
                    .eq(b.violations.iter().map(|v| v.invariant))
        })
        .count();
    let same_state = first
        .iter()
        .zip(&again)
        .filter(|(a, b)| a.fingerprint == b.fingerprint)
        .count();
    outln!(
        "sim determinism: {} seeds run twice: {same_outcome} with the same verdict and violations, {same_state} with the same final state",
        seeds.len()
    );
    let differing: Vec<String> = first
        .iter()
        .zip(&again)
        .filter(|(a, b)| a.fingerprint != b.fingerprint)
        .map(|(a, _)| a.seed.to_string())
        .collect();
    if !differing.is_empty() {
        outln!(
            "sim determinism: seeds ending in another state the second time: {}",
            differing.join(", ")
        );
    }
    for (a, b) in first.iter().zip(&again).filter(|(a, b)| a.passed() != b.passed()) {
        outln!(
            "sim determinism: seed {} {} the first time and {} the second",
            a.seed,
            verdict(a),
            verdict(b)
        );
    }
    Ok(())
}

fn verdict(r: &SimReport) -> &'static str {
    if r.passed() { "passed" } else { "failed" }
}

fn shrink(report: &SimReport, options: &impl Fn(u64) -> SimOptions) -> Result<()> {
    let Some(first) = report.violations.first() else {
        return Ok(());
    };
    let start = options(report.seed);
    let shrunk = sim::shrink(&start, first.invariant, 40)?;
    let skip: Vec<String> = shrunk.skip.iter().map(ToString::to_string).collect();
    outln!(
        "sim seed {}: still breaks \"{}\" with --steps {}{}",
        report.seed,
        first.invariant,
        shrunk.steps,
        if skip.is_empty() {
            String::new()
        } else {
            format!(" --skip {}", skip.join(","))
        }
    );
    Ok(())
}

/// Every fault kind the schedules can draw with how often it took effect over `reports`,
/// zeros included: a kind that never ran is a gap in what the sweep tried.
pub fn faults_by_kind(reports: &[SimReport]) -> String {
    sim::Action::FAULT_KINDS
        .iter()
        .map(|kind| {
            let n: u64 = reports.iter().filter_map(|r| r.faults_by_kind.get(kind)).sum();
            format!("{kind} {n}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Leader elections over `reports`, by the engine's reason.
pub fn elections_by_reason(reports: &[SimReport]) -> String {
    let mut total: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for r in reports {
        for (reason, n) in &r.elections {
            *total.entry(reason.as_str()).or_insert(0) += n;
        }
    }
    total
        .iter()
        .map(|(reason, n)| format!("{reason} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Records each allowance excused over `reports`, zeros included.
pub fn excused_by_allowance(reports: &[SimReport]) -> String {
    sim::Allowance::ALL
        .iter()
        .map(|a| {
            let n: u64 = reports.iter().filter_map(|r| r.excused.get(a)).sum();
            format!("{} {n}", a.name())
        })
        .collect::<Vec<_>>()
        .join(", ")
}
