//! `promotion-webhook`: validating and mutating admission webhook for Sveltos ClusterPromotion.
//!
//! The binary is `main.rs`; everything lives here so that tests, the fuzz target and the
//! benchmark drive the same code.

pub mod api;
pub mod certs;
pub mod cli;
pub mod config;
pub mod evaluation;
pub mod fuzzing;
pub mod log_writer;
pub mod logging;
pub mod metrics;
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
            let config = match config::ServeConfig::try_from(args) {
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
