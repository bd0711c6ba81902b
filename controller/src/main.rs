//! `promotion-controller`: parse the command line, run the command, exit with its status.

use std::process::ExitCode;

/// The caches are many small JSON trees built on several threads: glibc's per-thread arenas
/// keep freed pages resident (the fleet bench measured its RSS both ways), mimalloc returns them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;

use promotion_controller::cli::{Cli, Command};
use promotion_controller::commands;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(async {
        match &cli.command {
            Command::Reconcile(args) => commands::reconcile::run(args).await,
            Command::Run(args) => commands::run::run(args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
