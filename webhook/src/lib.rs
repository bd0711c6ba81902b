//! `promotion-webhook`: validating and mutating admission webhook for Sveltos ClusterPromotion.
//!
//! The binary is `main.rs` (parse the command line, call [`run`]); everything lives here so that
//! tests, the fuzz target and the benchmark drive the same code. The modules, and who uses them
//! (no two depend on each other, directly or through others: `tests/module_cycles.rs`):
//!
//! - [`cli`]: the command line; [`config`] turns `serve`'s flags, and the namespace the process
//!   runs in, into one checked `ServeConfig`.
//! - [`server`]: `serve` — runtime, both listeners, certificate reload, the shutdown sequence.
//!   Builds the routers of [`api`] around an [`evaluation::Evaluator`].
//! - [`api`]: HTTP only — routes, body limit, the errors that are not admission answers, probes.
//!   Hands the body bytes to the evaluator, a bounded number at a time, expensive reviews on a
//!   blocking thread ([`api::evaluations`]), and knows nothing of the AdmissionReview format.
//! - [`evaluation`]: AdmissionReview bytes in, answer bytes out, no I/O: the codec
//!   ([`evaluation::wire`]), the decisions of `promotion_shared` applied to the protocol, the
//!   texts of denials and warnings. Used by `api`, by [`fuzzing`] and by the load benchmark.
//! - [`metrics`]: Prometheus counters; `api`, `server` and `tls` record, `evaluation` names
//!   endpoints and verdicts with its types.
//! - [`tls`]: loading and reloading the serving pair (used by `server`); [`certs`]: the `certs`
//!   subcommand (used by [`run`]).
//! - [`connection_timer`]: the timer hyper's connections run on (used by `server`); it and
//!   `metrics` spread per-request writes over [`per_thread`] shards.
//! - [`logging`] and [`log_writer`]: structured logs, written in batches by one thread.
//! - [`fuzzing`]: the admission path with its invariants checked, for the cargo-fuzz target
//!   (`fuzz/`) and the bounded and regression runs in `tests/`.
//! - `testing` (cargo feature `testing`): starts the real binary for this crate's tests and
//!   benchmark and for the end-to-end tests; the server never uses it.

pub mod api;
pub mod certs;
pub mod cli;
pub mod config;
pub mod connection_timer;
pub mod evaluation;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod governance;
pub mod log_writer;
pub mod logging;
pub mod metrics;
pub mod per_thread;
pub mod server;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tls;

use std::process::ExitCode;

use cli::{Cli, Command};

/// Run a parsed command line; the exit code is 0 on success, 1 on any error (reported on
/// stderr).
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Certs(args) => match certs::run(&args) {
            Ok(written) => {
                println!("wrote {}", written.ca_cert.display());
                if let Some(ca_key) = &written.ca_key {
                    println!(
                        "wrote {} (keep it private; not needed by the server)",
                        ca_key.display()
                    );
                }
                println!("wrote {}", written.cert.display());
                println!("wrote {}", written.key.display());
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        },
        Command::Serve(args) => {
            let namespace = config::NamespaceSources::read(&args.service_account_namespace_file);
            let config = match config::ServeConfig::new(*args, &namespace) {
                Ok(config) => config,
                Err(e) => return fail(&e),
            };
            let _flush_on_exit = match logging::init(&config.log) {
                Ok(guard) => guard,
                Err(e) => return fail(&e),
            };
            match server::serve(config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!(error = %e, "promotion-webhook stopped");
                    fail(&e)
                }
            }
        }
    }
}

fn fail(error: &dyn std::error::Error) -> ExitCode {
    eprintln!("promotion-webhook: {error}");
    ExitCode::FAILURE
}
