//! The one error type of the plugin, and every exit code it uses.
//!
//! Each failure is one line on stderr (`error: …`). The wording names what was being done, the
//! object, and what to try, so that it reads on its own in a CI log.

use std::fmt;

/// Exit codes, one table per command. A command's code returns only the constants of its
/// table, and its `--help` states every entry in the same words ("Exit status: …"; checked by
/// `cli::tests::help_states_every_exit_status`). `diff` and `wait` follow `kubectl diff` /
/// `kubectl wait`-style conventions, so a script can tell "differences" or "failed" apart from
/// "the tool broke"; usage errors exit as the command's errors do.
pub mod exit {
    /// An exit status, and the phrase of the command's `--help` that states it (the code and
    /// when it is returned, in the help's own words).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Status {
        pub code: u8,
        pub help: &'static str,
    }

    pub const OK: u8 = 0;
    /// Any error (and usage errors, as kubectl does), for a command without a table of its own.
    pub const FAILURE: u8 = 1;

    /// `version`, `completion` and `list`: their help states no exit status.
    pub mod plain {
        pub const OK: u8 = super::OK;
        pub const FAILURE: u8 = super::FAILURE;
    }

    pub mod describe {
        use super::Status;
        pub const OK: u8 = 0;
        pub const FAILURE: u8 = 1;
        /// With `--watch`: the pipeline failed for good, or Sveltos refused it.
        pub const PIPELINE_FAILED: u8 = 2;
        pub const STATUSES: &[Status] = &[
            Status {
                code: OK,
                help: "Exit status: 0;",
            },
            Status {
                code: FAILURE,
                help: "1 on error",
            },
            Status {
                code: OK,
                help: "0 when the pipeline completes",
            },
            Status {
                code: PIPELINE_FAILED,
                help: "2 when it fails for good or Sveltos refuses it",
            },
        ];
    }

    pub mod approve {
        use super::Status;
        pub const OK: u8 = 0;
        pub const FAILURE: u8 = 1;
        /// With `--wait`, as `wait`.
        pub const PIPELINE_FAILED: u8 = super::wait::PIPELINE_FAILED;
        pub const TIMEOUT: u8 = super::wait::TIMEOUT;
        pub const STATUSES: &[Status] = &[
            Status {
                code: OK,
                help: "0 approved (or already approved)",
            },
            Status {
                code: FAILURE,
                help: "1 refused or error",
            },
            Status {
                code: PIPELINE_FAILED,
                help: "2 if the pipeline fails",
            },
            Status {
                code: TIMEOUT,
                help: "3 if the next stage has not started within --timeout",
            },
        ];
    }

    /// `pause`: each promotion is tried; 1 when any was refused or failed.
    pub mod pause {
        use super::Status;
        pub const OK: u8 = 0;
        pub const FAILURE: u8 = 1;
        pub const STATUSES: &[Status] = &[
            Status {
                code: OK,
                help: "0 every promotion was paused (or already was)",
            },
            Status {
                code: FAILURE,
                help: "1 if one was refused or failed",
            },
        ];
    }

    /// `resume`, as `pause`.
    pub mod resume {
        use super::Status;
        pub const OK: u8 = 0;
        pub const FAILURE: u8 = 1;
        pub const STATUSES: &[Status] = &[
            Status {
                code: OK,
                help: "0 every promotion was resumed (or was not paused)",
            },
            Status {
                code: FAILURE,
                help: "1 if one was refused or failed",
            },
        ];
    }

    /// `abort`: 1 when refused or failed.
    pub mod abort {
        use super::Status;
        pub const OK: u8 = 0;
        pub const FAILURE: u8 = 1;
        pub const STATUSES: &[Status] = &[
            Status {
                code: OK,
                help: "0 aborted",
            },
            Status {
                code: FAILURE,
                help: "1 refused or error",
            },
        ];
    }

    /// `rollback`, as `abort`.
    pub mod rollback {
        use super::Status;
        pub const OK: u8 = 0;
        pub const FAILURE: u8 = 1;
        pub const STATUSES: &[Status] = &[
            Status {
                code: OK,
                help: "0 rolled back",
            },
            Status {
                code: FAILURE,
                help: "1 refused or error",
            },
        ];
    }

    /// `retry`, as `abort`.
    pub mod retry {
        use super::Status;
        pub const OK: u8 = 0;
        pub const FAILURE: u8 = 1;
        pub const STATUSES: &[Status] = &[
            Status {
                code: OK,
                help: "0 retried",
            },
            Status {
                code: FAILURE,
                help: "1 refused or error",
            },
        ];
    }

    /// `undo`: 2 when a GitOps tool manages the promotion and nothing was written.
    pub mod undo {
        use super::Status;
        pub const OK: u8 = 0;
        pub const FAILURE: u8 = 1;
        pub const GITOPS: u8 = 2;
        pub const STATUSES: &[Status] = &[
            Status {
                code: OK,
                help: "0 undone",
            },
            Status {
                code: FAILURE,
                help: "1 refused or error",
            },
            Status {
                code: GITOPS,
                help: "2 a GitOps tool manages the promotion and nothing was written",
            },
        ];
    }

    pub mod diff {
        use super::Status;
        pub const OK: u8 = 0;
        pub const DIFFERENCES: u8 = 1;
        /// kubectl-diff reserves everything above 1 for errors.
        pub const DIFF_ERROR: u8 = 2;
        pub const STATUSES: &[Status] = &[
            Status {
                code: OK,
                help: "0: no differences",
            },
            Status {
                code: DIFFERENCES,
                help: "1: differences",
            },
            Status {
                code: DIFF_ERROR,
                help: ">1: error",
            },
        ];
    }

    pub mod wait {
        use super::Status;
        pub const OK: u8 = 0;
        pub const FAILURE: u8 = 1;
        /// The pipeline failed before the condition.
        pub const PIPELINE_FAILED: u8 = 2;
        /// The timeout elapsed first.
        pub const TIMEOUT: u8 = 3;
        pub const STATUSES: &[Status] = &[
            Status {
                code: OK,
                help: "0 the condition holds",
            },
            Status {
                code: PIPELINE_FAILED,
                help: "2 the pipeline failed first",
            },
            Status {
                code: TIMEOUT,
                help: "3 the timeout elapsed",
            },
            Status {
                code: FAILURE,
                help: "1 any other error",
            },
        ];
    }

    pub mod health {
        use super::Status;
        pub const OK: u8 = 0;
        pub const UNHEALTHY: u8 = 1;
        /// Reported by the command itself rather than by main (1 means "unhealthy" here).
        pub const ERROR: u8 = 2;
        pub const STATUSES: &[Status] = &[
            Status {
                code: OK,
                help: "0 every evaluated check is healthy",
            },
            Status {
                code: UNHEALTHY,
                help: "1 a check is unhealthy, fails, or selects nothing",
            },
            Status {
                code: ERROR,
                help: "2 an input or connection error",
            },
        ];
    }

    pub mod plan {
        use super::Status;
        pub const OK: u8 = 0;
        /// `--strict` only.
        pub const HAZARDS: u8 = 1;
        /// Input, connection and usage errors.
        pub const ERROR: u8 = 2;
        pub const STATUSES: &[Status] = &[
            Status {
                code: OK,
                help: "Exit status: 0;",
            },
            Status {
                code: HAZARDS,
                help: "1 with --strict when there are hazards",
            },
            Status {
                code: ERROR,
                help: "2 on input or connection errors",
            },
        ];
    }

    /// `lint`'s codes are computed by `commands::lint::exit_status`; its help states none (its
    /// module documentation does).
    pub mod lint {
        use super::Status;
        pub const OK: u8 = 0;
        /// Errors, or warnings with `--strict`.
        pub const FINDINGS: u8 = 1;
        /// No ClusterPromotion in the inputs (kubectl apply's "no objects passed" is 1 too).
        pub const NOTHING_CHECKED: u8 = 1;
        /// Some input could not be read or is not YAML, or `--crd` is not a usable CRD.
        pub const INPUT_ERROR: u8 = 2;
        pub const STATUSES: &[Status] = &[
            Status {
                code: OK,
                help: "0 no errors",
            },
            Status {
                code: FINDINGS,
                help:
                    "1 errors (or warnings with `--strict`), or no ClusterPromotion in the inputs",
            },
            Status {
                code: INPUT_ERROR,
                help: "2 some input could not be read or is not YAML",
            },
        ];
    }
}

/// What was being attempted when the API server answered, for messages like
/// `cannot patch clusterpromotions.config.projectsveltos.io "x"`.
#[derive(Clone, Debug)]
pub struct Request {
    pub verb: &'static str,
    pub resource: &'static str,
    pub name: Option<String>,
}

impl Request {
    pub fn new(verb: &'static str, resource: &'static str) -> Self {
        Request {
            verb,
            resource,
            name: None,
        }
    }

    pub fn named(verb: &'static str, resource: &'static str, name: &str) -> Self {
        Request {
            verb,
            resource,
            name: Some(name.to_string()),
        }
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.verb, self.resource)?;
        if let Some(n) = &self.name {
            write!(f, " {n:?}")?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad flags or arguments that clap cannot catch (mutually dependent values).
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Kubeconfig(String),
    #[error("unable to connect to the server at {server}: {reason}")]
    Unreachable { server: String, reason: String },
    /// A read the server received and did not answer.
    #[error("cannot {request}: the request {sent}")]
    NoAnswer {
        request: Request,
        /// `was sent to URL and not answered within 2s (--request-timeout)`, or the failure.
        sent: String,
    },
    /// A write the server received and did not answer: it may or may not have been stored.
    #[error(
        "the request to {request} {sent}: whether the server stored it is unknown; check with \
         {check}"
    )]
    WriteUnknown {
        request: Request,
        /// As in [`Error::NoAnswer`].
        sent: String,
        check: String,
    },
    /// A command's `--timeout` ran out before it finished (exit 3 for `wait` and `approve`).
    #[error("timed out after {after} (--timeout) {doing}{}", detail_after(.pending))]
    TimedOut {
        after: String,
        /// What the command was doing: `waiting for complete`.
        doing: String,
        /// What it was still waiting on, in words.
        pending: Option<String>,
    },
    #[error(
        "unauthorized (401): the server at {server} rejected the credentials (check --token, \
         the user in your kubeconfig, or log in again)"
    )]
    Unauthorized { server: String },
    #[error("forbidden (403): you cannot {request}{}", detail(.message))]
    Forbidden { request: Request, message: String },
    /// An admission webhook (ours or another) refused the write; not an RBAC problem.
    #[error("admission webhook {webhook} denied the request to {request}: {message}")]
    AdmissionDenied {
        request: Request,
        webhook: String,
        message: String,
    },
    #[error(
        "the server does not serve clusterpromotions.config.projectsveltos.io/v1beta1: is Sveltos \
         installed? (no ClusterPromotion CRD on {server})"
    )]
    CrdMissing { server: String },
    #[error("clusterpromotion.config.projectsveltos.io {0:?} not found")]
    NotFound(String),
    /// A list of another resource the server does not serve (its CRD is missing).
    #[error("the server does not serve {resource}: its CRD is not installed")]
    NotServed { resource: &'static str },
    /// The server refused the request for another reason (422, 409 after retries, 5xx).
    #[error("cannot {request}: {message}")]
    Api { request: Request, message: String },
    /// A server-side dry run of a manifest that the API server or a webhook refuses.
    #[error(
        "{by} rejects ClusterPromotion {name:?} from {file}: {}; `kubectl promotion lint {file}` \
         finds such mistakes without a cluster",
        causes.join("; ")
    )]
    Rejected {
        name: String,
        file: String,
        by: String,
        causes: Vec<String>,
    },
    /// A command that decided not to act (approve refusals); the message says why and what to do.
    #[error("{0}")]
    Refused(String),
    #[error("{path}: {reason}")]
    File { path: String, reason: String },
    /// An object from the server that the plugin cannot interpret.
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Io(String),
}

fn detail_after(pending: &Option<String>) -> String {
    match pending {
        Some(p) => format!(": {p}"),
        None => String::new(),
    }
}

fn detail(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(" (server said: {message})")
    }
}

impl Error {
    /// Why a part of the view could not be read, in a few words: `forbidden: list
    /// clustersummaries.config.projectsveltos.io`, `its CRD is not installed`, or the error.
    pub fn unreadable(&self) -> String {
        match self {
            Error::Forbidden { request, .. } => {
                format!(
                    "not readable (forbidden: {} {})",
                    request.verb, request.resource
                )
            }
            Error::NotServed { resource } => {
                format!("not readable ({resource} is not served: its CRD is not installed)")
            }
            other => format!("not readable ({other})"),
        }
    }

    /// Why a read that a view goes on without failed, naming who was refused what as the server
    /// said it: `forbidden (User "viewer" cannot list resource "clustersummaries" in API group
    /// "config.projectsveltos.io" at the cluster scope)`, `not served (its CRD is not
    /// installed)`, or the error.
    pub fn read_failure(&self) -> String {
        match self {
            Error::Forbidden { request, message } => {
                let said = message
                    .split_once(" is forbidden: ")
                    .map_or(message.as_str(), |(_, why)| why);
                if said.is_empty() {
                    format!("forbidden (you cannot {request})")
                } else {
                    format!("forbidden ({said})")
                }
            }
            Error::NotServed { resource } => {
                format!("not served ({resource}: its CRD is not installed)")
            }
            other => other.to_string(),
        }
    }

    pub fn file(path: impl fmt::Display, reason: impl fmt::Display) -> Self {
        Error::File {
            path: path.to_string(),
            reason: reason.to_string(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Print one error line; `error:` in red when stderr is a colour terminal.
pub fn report(err: &Error, color: bool) {
    use owo_colors::OwoColorize;
    if color {
        eprintln!("{} {err}", "error:".red().bold());
    } else {
        eprintln!("error: {err}");
    }
}
