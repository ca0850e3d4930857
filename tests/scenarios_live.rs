//! Every shipped scenario as a trainer presents it: before each step the trainer talks for
//! a while (a pause of 0 to 120 s on tokio's paused clock, drawn from a seed) and every
//! check must still pass. A step holds the cluster still once its checks are done (the
//! clock stops until the next step), so a story does not change with the pause; a step
//! that says `keep_running` lets the cluster run on and must tell the same story for any
//! pause too. The seeds and the pauses they drew are in each failure's message.

#[macro_use]
mod shipped;

use std::time::Duration;

use kdeck::config::KdeckConfig;
use kdeck::scenario::{self, headless};

/// The pause seeds every scenario runs with (each seed draws one pause per step).
const SEEDS: [u64; 3] = [0x5EED_0001, 0x5EED_0002, 0x5EED_0003];

/// splitmix64: a pause in 0..=120 s (whole and half seconds) per step.
fn pauses(seed: u64, steps: usize) -> Vec<Duration> {
    let mut state = seed;
    (0..steps)
        .map(|i| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            // The first seed's first pause after step 1 is the longest, the others spread.
            if i == 1 && seed == SEEDS[0] {
                Duration::from_secs(120)
            } else {
                Duration::from_millis((z % 241) * 500)
            }
        })
        .collect()
}

async fn presented(name: &str) {
    let found = scenario::find(name, None).unwrap_or_else(|e| panic!("{e:#}"));
    let config = KdeckConfig::default();
    for seed in SEEDS {
        let drawn = pauses(seed, found.steps.len());
        let mut pause = |step: usize| drawn.get(step).copied().unwrap_or_default();
        let summary = headless::run_paced(&found, &config, &mut pause, &mut |_| {})
            .await
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert!(
            summary.passed(),
            "{name} presented with pause seed {seed:#x} (pauses before each step: {:?}) failed:\n{}\n\ntrace:\n{}",
            drawn.iter().skip(1).map(|d| d.as_secs_f64()).collect::<Vec<_>>(),
            summary.failures().join("\n"),
            summary.trace.join("\n")
        );
    }
}

macro_rules! presented_tests {
    ($($test:ident => $name:literal),* $(,)?) => {
        $(
            #[tokio::test(start_paused = true)]
            async fn $test() {
                presented($name).await;
            }
        )*

        /// Each shipped scenario is presented above.
        #[test]
        fn every_shipped_scenario_is_presented() {
            let tested = [$($name),*];
            for (name, _) in scenario::SHIPPED {
                assert!(tested.contains(name), "scenario {name} has no test in tests/scenarios_live.rs");
            }
        }
    };
}

shipped!(presented_tests);

#[test]
fn the_pauses_cover_zero_to_two_minutes() {
    let all: Vec<Duration> = SEEDS.iter().flat_map(|s| pauses(*s, 6)).collect();
    assert!(all.iter().all(|d| *d <= Duration::from_secs(120)));
    assert!(all.contains(&Duration::from_secs(120)));
    assert!(all.iter().any(|d| *d < Duration::from_secs(30)));
}
