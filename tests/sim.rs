//! The deterministic simulation (see `kdeck::sim`) as a test: many seeds, each a random
//! schedule of client work and faults over the real engine on tokio's paused clock, with
//! every invariant checked after every step. The test fails on any violation and names the
//! seeds, their first violations and the command that reruns each one.
//!
//! `SIM_SEEDS=N` runs seeds 0..N (default 200), `SIM_SEED=S` runs only seed S, `SIM_STEPS=K`
//! cuts each schedule to K steps, `SIM_TRACE=1` prints every step and event as it runs (to
//! stderr, with `-- --nocapture`) and each schedule.

use kdeck::sim::{self, DEFAULT_STEPS, SimOptions, SimReport};

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    match text.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name}={text:?} is not a number"),
    }
}

fn describe(report: &SimReport, steps: usize) -> String {
    let mut out = format!(
        "seed {}: {} violations after {} steps and {} faults; first: {}\n  reproduce: {}",
        report.seed,
        report.violations.len(),
        report.steps,
        report.faults,
        report.violations.first().map(ToString::to_string).unwrap_or_default(),
        sim::reproduce_commands(report.seed, steps)
    );
    for v in report.violations.iter().skip(1).take(4) {
        out.push_str(&format!("\n  then {v}"));
    }
    out
}

#[test]
#[ignore = "not yet green: on 2026-12-01, 50 of 200 seeds still report group generations and committed offsets going back across a coordinator failover, groups not settling after heals and 4 acks=all losses (seeds 81, 185) still being triaged (issue 13); run with --ignored or `kdeck bench sim`"]
fn every_seed_keeps_every_invariant_through_faults_and_heals() {
    let steps = env_number("SIM_STEPS").map_or(DEFAULT_STEPS, |n| n as usize);
    let trace = std::env::var("SIM_TRACE").is_ok_and(|v| v == "1");
    let seeds: Vec<u64> = match env_number("SIM_SEED") {
        Some(seed) => vec![seed],
        None => (0..env_number("SIM_SEEDS").unwrap_or(200)).collect(),
    };
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    if trace {
        for &seed in &seeds {
            eprint!("{}", sim::Schedule::generate(seed, steps));
        }
    }
    let reports = sim::run_seeds(
        &seeds,
        |seed| SimOptions {
            trace,
            ..SimOptions::new(seed, steps)
        },
        jobs,
        |r| {
            if trace {
                for line in &r.allowed_losses {
                    eprintln!("seed {}: allowed loss: {line}", r.seed);
                }
            }
        },
    )
    .expect("the simulation runs");
    let failures: Vec<String> = reports
        .iter()
        .filter(|r| !r.passed())
        .map(|r| describe(r, steps))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} seeds broke an invariant:\n{}",
        failures.len(),
        reports.len(),
        failures.join("\n")
    );
}
