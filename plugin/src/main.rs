//! `kubectl-promotion`: the `kubectl promotion` plugin for Sveltos ClusterPromotion.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};

use kubectl_promotion::cli::{Cli, Command};
use kubectl_promotion::commands::{self, Ctx, Output};
use kubectl_promotion::error::{self, exit};
use kubectl_promotion::render::Style;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so a write to a closed pipe (`| head`) would panic in `println!`.
    // Restore the default every Unix CLI has: the process ends quietly.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to the default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args: Vec<String> = std::env::args().collect();
    // Completion requests bypass argument parsing: their words are whatever the user typed.
    if let Some(kind) = args.get(1).filter(|a| a.starts_with("__complete")) {
        let descriptions = kind == "__complete";
        let words = args[2..].to_vec();
        return ExitCode::from(block_on(async {
            commands::complete::run(&Cli::command(), &words, descriptions).await
        }));
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => exit::OK,
                // Bare `kubectl promotion`: help is the answer, not an error.
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand if args.len() <= 1 => exit::OK,
                // kubectl exits 1 on usage errors; 2 and 3 mean something else for diff and wait.
                _ if matches!(args.get(1).map(String::as_str), Some("diff")) => {
                    exit::diff::DIFF_ERROR
                }
                _ if matches!(args.get(1).map(String::as_str), Some("plan")) => exit::plan::ERROR,
                _ => exit::FAILURE,
            });
        }
    };
    let ctx = Ctx {
        out: Style::detect(cli.color, cli.no_color, false),
        err: Style::detect(cli.color, cli.no_color, true),
        out_is_tty: std::io::stdout().is_terminal(),
        connection: cli.connection.clone(),
        stdout: Output::Stdout,
        stderr: Output::Stderr,
        started: std::time::Instant::now(),
        in_flight: Default::default(),
    };
    let is_diff = matches!(cli.command, Command::Diff(_));
    let result = match &cli.command {
        Command::Version(a) => commands::version::run(&ctx, a),
        Command::Completion(a) => commands::completion::run(&ctx, a),
        Command::Lint(a) => Ok(commands::lint::run(&ctx, a)),
        Command::Describe(a) => block_on(commands::describe::run(&ctx, a)),
        Command::List(a) => block_on(commands::list::run(&ctx, a)),
        // With --wait, --timeout bounds the whole command, the approval included.
        Command::Approve(a) if a.wait => block_on(commands::wait::within(
            &ctx,
            a.timeout,
            format!("approving {} and waiting for what it unblocks", a.name),
            commands::approve::run(&ctx, a),
        )),
        Command::Approve(a) => block_on(commands::approve::run(&ctx, a)),
        Command::History(a) => block_on(commands::history::run(&ctx, a)),
        Command::Pause(a) => block_on(commands::pause::run_pause(&ctx, a)),
        Command::Resume(a) => block_on(commands::pause::run_resume(&ctx, a)),
        Command::Abort(a) => block_on(commands::abort::run_abort(&ctx, a)),
        Command::Rollback(a) => block_on(commands::abort::run_rollback(&ctx, a)),
        Command::Retry(a) => block_on(commands::abort::run_retry(&ctx, a)),
        Command::Undo(a) => block_on(commands::undo::run(&ctx, a)),
        Command::Diff(a) => block_on(commands::diff::run(&ctx, a)),
        Command::Wait(a) => block_on(commands::wait::run(&ctx, a)),
        Command::Health(a) => block_on(commands::health::run(&ctx, a)),
        Command::Plan(a) => block_on(commands::plan::run(&ctx, a)),
        // A server: a page being built must not hold up the event streams and other requests.
        Command::Dashboard(a) => block_on_threads(commands::dashboard::run(&ctx, a)),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            error::report(&e, ctx.err.color);
            ExitCode::from(match e {
                _ if is_diff => exit::diff::DIFF_ERROR,
                // Only `wait` and `approve --wait` have a --timeout; both exit 3 when it runs out.
                error::Error::TimedOut { .. } => exit::wait::TIMEOUT,
                _ => exit::FAILURE,
            })
        }
    }
}

/// One thread is plenty for a CLI that mostly waits on the network.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    run_on(tokio::runtime::Builder::new_current_thread(), f)
}

/// A worker thread per core, for `dashboard`.
fn block_on_threads<F: std::future::Future>(f: F) -> F::Output {
    run_on(tokio::runtime::Builder::new_multi_thread(), f)
}

fn run_on<F: std::future::Future>(mut builder: tokio::runtime::Builder, f: F) -> F::Output {
    match builder.enable_all().build() {
        Ok(rt) => rt.block_on(f),
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(exit::FAILURE.into());
        }
    }
}
