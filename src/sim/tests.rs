//! Many seeds of the replication simulation, and the seeds that once failed.
use super::cluster::{Sim, SimConfig};

/// Runs one seed; on failure prints the tail of its trace and panics with the seed.
fn run_seed(seed: u64, config: SimConfig) -> usize {
    let mut sim = Sim::new(seed, config);
    if let Err(e) = sim.run() {
        let start = sim.trace.len().saturating_sub(60);
        for line in &sim.trace[start..] {
            eprintln!("{line}");
        }
        panic!("seed {seed}: {e}");
    }
    sim.checker.acked_count()
}

/// `STRATA_SIM_SEEDS` seeds (default 200) from `STRATA_SIM_FIRST_SEED` (default 0).
#[test]
fn replication_survives_faults_over_many_seeds() {
    let seeds: u64 = std::env::var("STRATA_SIM_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let first: u64 = std::env::var("STRATA_SIM_FIRST_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut acked = 0;
    for seed in first..first + seeds {
        acked += run_seed(seed, SimConfig::default());
    }
    assert!(
        acked > seeds as usize,
        "the runs acknowledged almost nothing: {acked}"
    );
}

#[test]
fn without_faults_everything_produced_is_acknowledged_and_replicated() {
    let config = SimConfig {
        fault_probability: 0.0,
        drop_probability: 0.0,
        ..SimConfig::default()
    };
    let acked = run_seed(7, config);
    assert!(acked > 50, "only {acked} batches acknowledged");
}

/// Prints what one seed did (run with `--ignored --nocapture` to look at a run).
#[test]
#[ignore]
fn show_one_run() {
    let seed = std::env::var("STRATA_SIM_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut sim = Sim::new(seed, SimConfig::default());
    let result = sim.run();
    for line in &sim.trace {
        if !line.contains(" acked ") {
            eprintln!("{line}");
        }
    }
    eprintln!(
        "acked batches {}, result {result:?}",
        sim.checker.acked_count()
    );
}
