//! Starting the real `promotion-webhook` binary from tests and benchmarks (cargo feature
//! `testing`; the server never uses it).
//!
//! One way to do it for every caller: the webhook crate's integration tests
//! (`webhook/tests/support`), its load benchmark (`webhook/benches/admission_load.rs`) and the
//! end-to-end tests (`tests/tests/webhook_e2e.rs`, through the `promotion-e2e` crate's
//! dev-dependency). Each passes the binary it wants run: `CARGO_BIN_EXE_promotion-webhook` inside
//! this crate, `promotion_e2e::bins::binary` outside it.
//!
//! - [`generate_certs`]: a CA and serving pair from the binary's own `certs` subcommand, valid for
//!   `localhost` and `127.0.0.1`;
//! - [`Launch`] → [`Webhook`]: `serve` on 127.0.0.1 with ports chosen by the OS (read back from
//!   the `listening` log line), its JSON log collected, killed when dropped;
//! - waits end on evidence — a log line ([`Webhook::wait_for_log`]), a probe answer
//!   ([`Webhook::wait_ready`]), the process exiting ([`Webhook::wait_exit`]) — within a deadline,
//!   never after a fixed sleep.

mod certs;
mod log;
mod process;

pub use certs::{generate_certs, CertFiles};
pub use process::{Launch, Webhook, NAMESPACE};

use std::path::PathBuf;
use std::time::Duration;

/// Why a test webhook could not be started, reached or stopped.
#[derive(Debug, thiserror::Error)]
pub enum TestingError {
    #[error("cannot run {command}: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}):\n{stderr}")]
    Failed {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("cannot create a temporary directory: {0}")]
    TempDir(std::io::Error),
    #[error("cannot read {path}: {source}", path = .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no {what} within {timeout:?}; log so far:\n{log}")]
    Timeout {
        what: String,
        timeout: Duration,
        log: String,
    },
    #[error("promotion-webhook closed its log before {what}; log:\n{log}")]
    LogEnded { what: String, log: String },
    #[error("the `listening` log line has no {field} address: {line}")]
    NoAddress { field: &'static str, line: String },
    #[error("cannot signal process {pid}: {reason}")]
    Signal { pid: u32, reason: String },
    #[error("cannot query process {pid}: {source}")]
    Wait { pid: u32, source: std::io::Error },
}
