//! The chaos suite's short run ([`promotion_e2e::chaos`]): two promotion-controller replicas on a
//! private real kube-apiserver roll eight promotions through an auto and a manual stage while
//! seeded faults of every kind overlap for 90 seconds, while users pause, abort and roll back
//! rollouts at their gates and resume or retry them; then every promotion must complete, and the
//! audit log must show no stage promoted before the double deployed it, no gate passed without
//! its rollout's approval, and no write outside its replica's Lease term.
//!
//! Only invariants and generous liveness deadlines are asserted (no timing). The long run, with
//! the recovery times, is `cargo run -p promotion-e2e --example chaos` (see `tests/README.md`).
//! `PROMOTION_CHAOS_SEED` replays another seed.
//!
//! Needs `KUBEBUILDER_ASSETS` (see `scenarios.rs`); without it (and without `CI=true`) the run is
//! reported as ignored.

use std::time::Duration;

use libtest_mimic::{Arguments, Failed, Trial};

use promotion_e2e::chaos::{self, Config};
use promotion_e2e::envtest::{self, Gate};

/// The seed CI runs with (any other: `PROMOTION_CHAOS_SEED`).
const SEED: u64 = 20_261_128;

fn main() {
    let args = Arguments::from_args();
    let gate = envtest::gate();
    if let Gate::Skip(reason) = &gate {
        eprintln!("chaos run ignored: {reason}");
    }
    let seed = match std::env::var("PROMOTION_CHAOS_SEED") {
        Ok(text) => match text.parse() {
            Ok(seed) => seed,
            Err(_) => {
                eprintln!("PROMOTION_CHAOS_SEED={text:?}: not a number");
                std::process::exit(2);
            }
        },
        Err(_) => SEED,
    };
    let trial = Trial::test(
        "envtest::overlapping_faults_break_no_invariant_and_every_promotion_completes",
        move || short_run(seed),
    )
    .with_ignored_flag(matches!(gate, Gate::Skip(_)));
    libtest_mimic::run(&args, vec![trial]).exit();
}

fn short_run(seed: u64) -> Result<(), Failed> {
    let config = Config {
        seed,
        promotions: 8,
        chaos_for: Duration::from_secs(90),
        mean_gap: Duration::from_secs(3),
        longest_fault: Duration::from_secs(10),
        addon_lag: Duration::from_millis(200),
        lease_seconds: 6,
        settle_within: Duration::from_secs(180),
        isolated_repeats: 0,
        isolated_fault: Duration::from_secs(5),
        verbose: true,
    };
    let report = chaos::run(&config).map_err(Failed::from)?;
    eprintln!("{}", report.markdown());
    if !report.violations.is_empty() {
        return Err(format!(
            "seed {seed}: {} invariant violation(s):\n{}",
            report.violations.len(),
            report.violations.join("\n")
        )
        .into());
    }
    // The run must have exercised what it claims to: faults of several kinds, rollouts carried
    // through them, and writes the oracles could check.
    let kinds = report.faults.len();
    let moved = |m: &str| report.moves_made.get(m).copied().unwrap_or(0);
    if moved("pause") == 0 || moved("abort") == 0 || moved("rollback") == 0 {
        return Err(format!(
            "seed {seed}: the users' moves did not include each of pause, abort and rollback: \
             {:?}",
            report.moves_made
        )
        .into());
    }
    if kinds < 5 || report.rollouts_completed == 0 || report.stage_writes_checked == 0 {
        return Err(format!(
            "seed {seed}: the run proved little: {kinds} kinds of fault, {} rollouts completed, \
             {} stage writes checked",
            report.rollouts_completed, report.stage_writes_checked
        )
        .into());
    }
    Ok(())
}
