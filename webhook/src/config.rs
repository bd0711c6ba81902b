//! The checked configuration of `serve`, built from the command line.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use promotion_shared::admission::GovernancePolicy;

use crate::cli::{LogFormat, ServeArgs};

#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub metrics_listen: SocketAddr,
    pub tls: TlsFiles,
    pub log: LogConfig,
    /// The approver rules from the flags; replaced at start by those in `governance_dir`.
    pub policy: GovernancePolicy,
    /// `--governance-dir`: the published rules, read at start and re-read with the certificate.
    pub governance_dir: Option<PathBuf>,
    pub limits: Limits,
    pub shutdown: Shutdown,
}

#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub reload_interval: Duration,
}

#[derive(Clone, Debug)]
pub struct LogConfig {
    pub format: LogFormat,
    pub filter: String,
}

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_body_bytes: usize,
    /// Bounds reading the body, waiting for an evaluation slot and the evaluation.
    pub request_timeout: Duration,
    pub header_read_timeout: Duration,
    /// Evaluations running at once, each on a blocking thread of the runtime.
    pub max_concurrent_evaluations: NonZeroUsize,
}

/// The most `--max-concurrent-evaluations` accepts: evaluations run on the runtime's blocking
/// threads, of which tokio starts at most this many (its default, which `server` keeps); more
/// slots would only queue inside tokio.
pub const MAX_CONCURRENT_EVALUATIONS: usize = 512;

/// `--max-concurrent-evaluations` when not given: one evaluation per CPU the process may use
/// (the standard library reads the cgroup CPU quota), as evaluation is CPU work.
pub fn default_concurrent_evaluations() -> NonZeroUsize {
    let cpus = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    NonZeroUsize::new(cpus.min(MAX_CONCURRENT_EVALUATIONS)).unwrap_or(NonZeroUsize::MIN)
}

#[derive(Clone, Copy, Debug)]
pub struct Shutdown {
    pub delay: Duration,
    pub grace_period: Duration,
}

#[derive(Debug, thiserror::Error)]
#[error("invalid configuration: {0}")]
pub struct ConfigError(String);

impl TryFrom<ServeArgs> for ServeConfig {
    type Error = ConfigError;

    fn try_from(args: ServeArgs) -> Result<Self, ConfigError> {
        let approver_groups: Vec<String> = args
            .approver_groups
            .iter()
            .map(|g| g.trim().to_string())
            .filter(|g| !g.is_empty())
            .collect();
        if approver_groups.len() != args.approver_groups.len() {
            return Err(ConfigError(
                "--approver-group must not be empty (PROMOTION_WEBHOOK_APPROVER_GROUP takes a comma-separated list)".into(),
            ));
        }
        for (flag, value) in [
            ("--cert-reload-interval", args.cert_reload_interval),
            ("--request-timeout", args.request_timeout),
            ("--header-read-timeout", args.header_read_timeout),
        ] {
            if value.is_zero() {
                return Err(ConfigError(format!("{flag} must be longer than zero")));
            }
        }
        if args.max_body_bytes < 1024 {
            return Err(ConfigError(format!(
                "--max-body-bytes {} is too small for any AdmissionReview (minimum 1024)",
                args.max_body_bytes
            )));
        }
        let max_concurrent_evaluations = match args.max_concurrent_evaluations {
            None => default_concurrent_evaluations(),
            Some(n) => NonZeroUsize::new(n)
                .filter(|n| n.get() <= MAX_CONCURRENT_EVALUATIONS)
                .ok_or_else(|| {
                    ConfigError(format!(
                        "--max-concurrent-evaluations {n} is out of range (1 to {MAX_CONCURRENT_EVALUATIONS})"
                    ))
                })?,
        };
        Ok(ServeConfig {
            listen: args.listen,
            metrics_listen: args.metrics_listen,
            tls: TlsFiles {
                cert: args.tls_cert_file,
                key: args.tls_key_file,
                reload_interval: args.cert_reload_interval,
            },
            log: LogConfig {
                format: args.log_format,
                filter: args.log_level,
            },
            policy: GovernancePolicy {
                approver_groups,
                forbid_self_approval: args.forbid_self_approval,
                controller_users: args.controller_users,
            },
            governance_dir: args.governance_dir,
            limits: Limits {
                max_body_bytes: args.max_body_bytes,
                request_timeout: args.request_timeout,
                header_read_timeout: args.header_read_timeout,
                max_concurrent_evaluations,
            },
            shutdown: Shutdown {
                delay: args.shutdown_delay,
                grace_period: args.shutdown_grace_period,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    /// `promotion-webhook serve` with the two required flags and `args`, as clap parses it.
    fn command_line(args: &[&str]) -> Result<Cli, clap::Error> {
        let mut argv = vec![
            "promotion-webhook",
            "serve",
            "--tls-cert-file",
            "c",
            "--tls-key-file",
            "k",
        ];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv)
    }

    fn parse(args: &[&str]) -> Result<ServeConfig, ConfigError> {
        match command_line(args).expect("parses").command {
            Command::Serve(args) => ServeConfig::try_from(args),
            Command::Certs(_) => unreachable!("serve was given"),
        }
    }

    #[test]
    fn governance_flags() {
        let config = parse(&[
            "--approver-group",
            "a",
            "--approver-group",
            "b,c",
            "--forbid-self-approval",
        ])
        .unwrap();
        assert_eq!(config.policy.approver_groups, ["a", "b", "c"]);
        assert!(config.policy.forbid_self_approval);
        assert!(!parse(&[]).unwrap().policy.is_enforcing());
    }

    #[test]
    fn the_published_rules_replace_the_flags_not_join_them() {
        let config = parse(&["--governance-dir", "/etc/governance"]).unwrap();
        assert_eq!(
            config.governance_dir,
            Some(PathBuf::from("/etc/governance"))
        );
        let err = command_line(&[
            "--governance-dir",
            "/etc/governance",
            "--approver-group",
            "a",
        ])
        .unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict);
    }

    #[test]
    fn rejects_nonsense() {
        let err = parse(&["--approver-group", ""]).unwrap_err();
        assert!(err.to_string().contains("--approver-group"));
        let err = parse(&["--request-timeout", "0s"]).unwrap_err();
        assert!(err.to_string().contains("--request-timeout"));
        let err = parse(&["--max-body-bytes", "10"]).unwrap_err();
        assert!(err.to_string().contains("--max-body-bytes"));
        for out_of_range in ["0", "513"] {
            let err = parse(&["--max-concurrent-evaluations", out_of_range]).unwrap_err();
            assert!(
                err.to_string().contains("--max-concurrent-evaluations"),
                "{err}"
            );
        }
    }

    #[test]
    fn concurrent_evaluations() {
        let limits = |args: &[&str]| parse(args).unwrap().limits.max_concurrent_evaluations;
        assert_eq!(limits(&[]), default_concurrent_evaluations());
        assert_eq!(limits(&["--max-concurrent-evaluations", "3"]).get(), 3);
        assert_eq!(
            limits(&["--max-concurrent-evaluations", "512"]).get(),
            MAX_CONCURRENT_EVALUATIONS
        );
    }
}
