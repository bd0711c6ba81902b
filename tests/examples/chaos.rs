//! The chaos suite's long run ([`promotion_e2e::chaos`]) and its report:
//!
//! ```text
//! KUBEBUILDER_ASSETS=… cargo run -p promotion-e2e --example chaos -- --minutes 30 --report chaos.md
//! ```
//!
//! Overlapping faults for `--minutes`, then every promotion must complete, then each kind of
//! fault alone `--isolated` times to time the recovery. Exit 0 when no invariant was violated,
//! 1 when one was, 2 when the run could not be carried out.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use promotion_e2e::chaos::{self, Config};

#[derive(Parser)]
struct Args {
    /// The seed of the fault schedule.
    #[arg(long, default_value_t = 20_261_128)]
    seed: u64,
    #[arg(long, default_value_t = 50)]
    promotions: usize,
    /// How long faults are injected.
    #[arg(long, default_value_t = 30)]
    minutes: u64,
    /// Mean time between two fault starts, in milliseconds.
    #[arg(long, default_value_t = 3500)]
    mean_gap_ms: u64,
    /// Longest a fault lasts, in seconds.
    #[arg(long, default_value_t = 20)]
    longest_fault: u64,
    /// The addon-controller double's lag between the steps of a deployment, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    addon_lag_ms: u64,
    /// `--leader-elect-lease-duration` of the replicas (the default 15 s).
    #[arg(long, default_value_t = 15)]
    lease_seconds: u64,
    /// Repetitions of each fault kind alone.
    #[arg(long, default_value_t = 3)]
    isolated: usize,
    /// How long an isolated fault lasts, in seconds.
    #[arg(long, default_value_t = 8)]
    isolated_fault: u64,
    /// Write the Markdown report here too.
    #[arg(long)]
    report: Option<PathBuf>,
}

fn main() {
    let args = Args::parse();
    let config = Config {
        seed: args.seed,
        promotions: args.promotions,
        chaos_for: Duration::from_secs(args.minutes * 60),
        mean_gap: Duration::from_millis(args.mean_gap_ms),
        longest_fault: Duration::from_secs(args.longest_fault),
        addon_lag: Duration::from_millis(args.addon_lag_ms),
        lease_seconds: args.lease_seconds,
        settle_within: Duration::from_secs(300),
        isolated_repeats: args.isolated,
        isolated_fault: Duration::from_secs(args.isolated_fault),
        verbose: true,
    };
    let report = match chaos::run(&config) {
        Ok(report) => report,
        Err(err) => {
            eprintln!("chaos: the run could not be carried out: {err}");
            std::process::exit(2);
        }
    };
    let text = report.markdown();
    println!("{text}");
    if let Some(path) = &args.report {
        if let Err(err) = std::fs::write(path, &text) {
            eprintln!("chaos: writing {}: {err}", path.display());
            std::process::exit(2);
        }
    }
    std::process::exit(i32::from(!report.violations.is_empty()));
}
