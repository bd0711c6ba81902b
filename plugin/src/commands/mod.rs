//! One module per command; each exposes `run` returning the process exit code.

pub mod abort;
pub mod approve;
pub mod complete;
pub mod completion;
pub mod dashboard;
pub mod describe;
pub mod diff;
pub mod health;
pub mod history;
pub mod lint;
pub mod list;
pub mod manifests;
pub mod pause;
pub mod plan;
pub mod undo;
pub mod version;
pub mod wait;

use std::io::Write;
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use crate::cluster::connection::ConnectionFlags;
use crate::cluster::kube_client::{InFlight, Kube};
use crate::error::{Error, Result};
use crate::render::Style;

/// Where a command's results go (its stdout): the process's, or memory, so that a command can
/// run in-process and its output be read back. Notes, warnings and errors go to stderr, which
/// is never captured.
pub enum Output {
    /// Each write takes the lock, writes and flushes, so that `describe -w` and `list -w`
    /// show every change as it comes. A closed pipe (`| head`) ends the process with SIGPIPE,
    /// as `main` restores the default disposition.
    Stdout,
    /// The process's stderr (for a command's notes and warnings).
    Stderr,
    Memory(Mutex<Vec<u8>>),
}

impl Output {
    /// An empty in-memory output.
    pub fn memory() -> Output {
        Output::Memory(Mutex::new(Vec::new()))
    }

    /// What was written to an in-memory output (nothing for stdout).
    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            Output::Stdout | Output::Stderr => Vec::new(),
            Output::Memory(m) => m.into_inner().unwrap_or_else(|p| p.into_inner()),
        }
    }

    fn write_all(&self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Output::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(bytes).and_then(|()| out.flush())
            }
            Output::Stderr => {
                let mut err = std::io::stderr().lock();
                err.write_all(bytes).and_then(|()| err.flush())
            }
            Output::Memory(m) => {
                // A panic while the buffer was held cannot leave it half-written: extending a
                // Vec either happens or not.
                let mut buf = m.lock().unwrap_or_else(|p| p.into_inner());
                buf.extend_from_slice(bytes);
                Ok(())
            }
        }
    }
}

/// What every command gets: how to connect, where results go, and how to decorate stdout and
/// stderr.
pub struct Ctx {
    pub connection: ConnectionFlags,
    pub out: Style,
    pub err: Style,
    /// stdout is a terminal (for in-place redraws).
    pub out_is_tty: bool,
    /// Where the command's results are written (see [`Ctx::write_out`]).
    pub stdout: Output,
    /// Where its notes and warnings go ([`note`], [`warn`]): the process's stderr, or memory
    /// when the dashboard runs a command for a browser, which shows them with the result.
    pub stderr: Output,
    /// When the command started: a `--timeout` counts from here.
    pub started: std::time::Instant,
    /// The requests of this command's clients still waiting for an answer.
    pub in_flight: InFlight,
}

impl Ctx {
    /// A context for running a command in-process: results into memory, no colour, not a
    /// terminal, the default connection flags.
    pub fn in_memory() -> Ctx {
        Ctx {
            connection: ConnectionFlags::default(),
            out: Style { color: false },
            err: Style { color: false },
            out_is_tty: false,
            stdout: Output::memory(),
            stderr: Output::Stderr,
            started: std::time::Instant::now(),
            in_flight: InFlight::default(),
        }
    }

    /// The instant `timeout` after the command started.
    pub fn deadline(&self, timeout: std::time::Duration) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.started) + timeout
    }

    /// Write results to the command's output.
    pub fn write_out(&self, text: &str) -> Result<()> {
        self.stdout
            .write_all(text.as_bytes())
            .map_err(|e| Error::Io(format!("writing output: {e}")))
    }

    pub async fn kube(&self) -> Result<Kube> {
        Ok(Kube::connect(&self.connection)
            .await?
            .tracked(self.in_flight.clone()))
    }

    pub fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// `--dry-run`, as kubectl spells it, for every command that writes a promotion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DryRun {
    None,
    Client,
    Server,
}

impl DryRun {
    /// What kubectl appends to its confirmation line: ` (dry run)`, ` (server dry run)`.
    pub fn suffix(self) -> &'static str {
        match self {
            DryRun::Client => " (dry run)",
            DryRun::Server => " (server dry run)",
            DryRun::None => "",
        }
    }
}

/// What one guarded write of a promotion must say when it goes wrong or goes unrecorded.
pub struct Guarded<'a> {
    /// "pausing", "rolling back": for the conflict's message.
    pub doing: &'a str,
    /// What a write the webhook did not record lacks: "the abort carries no record of who made
    /// it".
    pub unrecorded: &'a str,
    /// The command that shows whether a write whose answer never came was applied.
    pub check: &'a str,
}

/// One guarded merge patch of promotion `name` (read as `object`) by a command that reads,
/// decides and writes: with `--dry-run=client` shown and applied to `object` only; else sent (a
/// server dry run with `--dry-run=server`); once stored, a write the
/// admission webhook did not record (`recorded`) is warned about, naming why; a 409 Conflict is
/// counted as an attempt and answers `None` (read again, decide again); any other failure is
/// explained, with `says.check` to see whether it was applied. The one write path of `pause`,
/// `resume`, `abort`, `rollback`, `retry` and `undo`.
#[allow(clippy::too_many_arguments)]
pub async fn send_guarded(
    ctx: &Ctx,
    kube: &Kube,
    name: &str,
    object: &serde_json::Value,
    patch: serde_json::Value,
    dry_run: DryRun,
    attempt: &mut u32,
    recorded: impl Fn(&serde_json::Value) -> bool,
    says: &Guarded<'_>,
) -> Result<Option<serde_json::Value>> {
    use crate::cluster::admission_webhooks;
    use promotion_shared::api_error::{classify, Failure};
    if dry_run == DryRun::Client {
        let text = serde_json::to_string_pretty(&patch).map_err(|e| Error::Io(e.to_string()))?;
        note(
            ctx,
            &format!(
                "merge patch that would be sent to {name} (guarded by its resourceVersion):\n{text}"
            ),
        );
        let mut stored = object.clone();
        json_patch::merge(&mut stored, &patch);
        return Ok(Some(stored));
    }
    let write = promotion_shared::patch::Write {
        patch,
        shows: Vec::new(),
    };
    let labels = pause::labels(object);
    let what = crate::error::Request::named("patch", crate::cluster::resources::PROMOTIONS, name);
    match kube.write(name, &write, dry_run == DryRun::Server).await {
        Ok(stored) => {
            if dry_run == DryRun::None && !recorded(&stored) {
                let found = admission_webhooks::for_promotions(kube, &labels).await;
                warn(
                    ctx,
                    &format!(
                        "{name}: {}: {}",
                        says.unrecorded,
                        admission_webhooks::unrecorded_because(&found)
                    ),
                );
            }
            Ok(Some(stored))
        }
        Err(kube::Error::Api(s)) if classify(&s) == Failure::Conflict => {
            after_conflict(ctx, name, says.doing, attempt, &what, &s).await?;
            Ok(None)
        }
        Err(e) => {
            let check = (dry_run == DryRun::None).then(|| says.check.to_string());
            Err(admission_webhooks::write_error(kube, e, &what, &labels, check).await)
        }
    }
}

/// What a command that wrote one promotion prints, as kubectl does: the object as stored
/// (`-o json|yaml`, without managedFields), its name (`-o name`), or the confirmation line
/// `clusterpromotion.config.projectsveltos.io/NAME <done>`, the dry run said.
pub fn written(
    format: crate::render::printers::OutputFormat,
    name: &str,
    stored: &serde_json::Value,
    done: &str,
    dry_run: DryRun,
) -> Result<String> {
    use crate::render::output;
    use crate::render::printers::OutputFormat;
    Ok(match format {
        OutputFormat::Json => output::to_json(&output::without_managed_fields(stored))?,
        OutputFormat::Yaml => output::to_yaml(&output::without_managed_fields(stored))?,
        OutputFormat::Name => format!("{}\n", output::resource_name(name)),
        _ => format!(
            "{} {done}{}\n",
            output::resource_name(name),
            dry_run.suffix()
        ),
    })
}

/// How many times a command that reads, decides and writes a guarded patch tries after the
/// server's 409 Conflict (the object changed between the read and the write).
pub const MAX_ATTEMPTS: u32 = 5;

/// After a 409 Conflict on attempt `attempt` of writing `name` while `doing`: say so, wait a
/// little and count the attempt (the caller reads again and decides again), or give up with the
/// server's last words once [`MAX_ATTEMPTS`] were made. The one conflict rule of every command
/// that writes a promotion.
pub async fn after_conflict(
    ctx: &Ctx,
    name: &str,
    doing: &str,
    attempt: &mut u32,
    request: &crate::error::Request,
    status: &kube::core::Status,
) -> Result<()> {
    if *attempt >= MAX_ATTEMPTS {
        return Err(Error::Api {
            request: request.clone(),
            message: format!(
                "the object kept changing; gave up after {MAX_ATTEMPTS} attempts (last: {})",
                status.message
            ),
        });
    }
    note(
        ctx,
        &format!(
            "{name} changed while {doing} (resourceVersion conflict); reading it again (attempt \
             {}/{MAX_ATTEMPTS})",
            *attempt + 1
        ),
    );
    tokio::time::sleep(std::time::Duration::from_millis(50 * u64::from(*attempt))).await;
    *attempt += 1;
    Ok(())
}

/// Print a progress or warning line on stderr (stdout carries only results).
pub fn note(ctx: &Ctx, text: &str) {
    diagnose(ctx, &ctx.err.paint(text, crate::render::Tone::Dim));
}

pub fn warn(ctx: &Ctx, text: &str) {
    diagnose(
        ctx,
        &format!(
            "{} {text}",
            ctx.err.paint("warning:", crate::render::Tone::Waiting)
        ),
    );
}

/// One line on the command's stderr; a failed write of a diagnostic is not worth failing for
/// (stderr closed), as `eprintln!` would have panicked instead.
fn diagnose(ctx: &Ctx, line: &str) {
    let _ = ctx.stderr.write_all(format!("{line}\n").as_bytes());
}
