//! The checked configuration of `serve`, built from the command line.

use std::fmt;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
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
    /// Where `policy.controller_users` came from.
    pub controller_users_from: ControllerUsersFrom,
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
    /// Evaluations running at once, cheap ones on the async workers, expensive ones each on a
    /// blocking thread of the runtime.
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

/// The service account promotion-controller runs as (manifests/controller).
pub const CONTROLLER_SERVICE_ACCOUNT: &str = "promotion-controller";

/// The environment variable that names the namespace the webhook runs in; the manifests set it
/// from the pod's `metadata.namespace` (downward API).
pub const POD_NAMESPACE_ENV: &str = "POD_NAMESPACE";

/// What the process can learn at start about the namespace it runs in.
#[derive(Clone, Debug)]
pub struct NamespaceSources {
    /// `POD_NAMESPACE`, when set.
    pub pod_namespace: Option<String>,
    /// The service account's namespace file ([`crate::cli::SERVICE_ACCOUNT_NAMESPACE_FILE`]
    /// unless tests say otherwise) and its text, or why it could not be read.
    pub service_account_file: PathBuf,
    pub service_account_namespace: Result<String, String>,
}

impl NamespaceSources {
    /// Read `POD_NAMESPACE` and `service_account_file`.
    pub fn read(service_account_file: &Path) -> NamespaceSources {
        NamespaceSources {
            pod_namespace: std::env::var_os(POD_NAMESPACE_ENV)
                .map(|v| v.to_string_lossy().into_owned()),
            service_account_file: service_account_file.to_path_buf(),
            service_account_namespace: std::fs::read_to_string(service_account_file)
                .map_err(|e| e.to_string()),
        }
    }
}

/// Where the controller users in effect came from, as the start log says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControllerUsersFrom {
    Flag,
    PodNamespace,
    ServiceAccountFile(PathBuf),
}

impl fmt::Display for ControllerUsersFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControllerUsersFrom::Flag => f.write_str("--controller-user"),
            ControllerUsersFrom::PodNamespace => f.write_str(POD_NAMESPACE_ENV),
            ControllerUsersFrom::ServiceAccountFile(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The users who may write promotion-controller's committed-step annotation: `--controller-user`
/// when given, otherwise promotion-controller's service account in the namespace the webhook runs
/// in (`POD_NAMESPACE`, else the service-account namespace file; empty or blank values name no
/// namespace). Neither: an error saying what is missing and how to fix it.
pub fn controller_users(
    flag: &[String],
    sources: &NamespaceSources,
) -> Result<(Vec<String>, ControllerUsersFrom), ConfigError> {
    const FIX: &str = "pass --controller-user \
        system:serviceaccount:<namespace>:promotion-controller with the namespace \
        promotion-controller runs in, or set POD_NAMESPACE to it";
    if !flag.is_empty() {
        let users: Vec<String> = flag
            .iter()
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if users.len() != flag.len() {
            return Err(ConfigError(
                "--controller-user must not be empty (PROMOTION_WEBHOOK_CONTROLLER_USER takes a comma-separated list)".into(),
            ));
        }
        return Ok((users, ControllerUsersFrom::Flag));
    }
    let derived = |namespace: &str, from: ControllerUsersFrom| {
        if !is_namespace_name(namespace) {
            return Err(ConfigError(format!(
                "{from} names the namespace {namespace:?}, which is not a namespace name \
                 (lowercase letters, digits and '-', at most 63); {FIX}"
            )));
        }
        let user = format!("system:serviceaccount:{namespace}:{CONTROLLER_SERVICE_ACCOUNT}");
        Ok((vec![user], from))
    };
    let pod_namespace = sources.pod_namespace.as_deref().map(str::trim);
    if let Some(namespace) = pod_namespace.filter(|ns| !ns.is_empty()) {
        return derived(namespace, ControllerUsersFrom::PodNamespace);
    }
    let file = &sources.service_account_file;
    let file_namespace = sources.service_account_namespace.as_deref().map(str::trim);
    if let Some(namespace) = file_namespace.ok().filter(|ns| !ns.is_empty()) {
        return derived(
            namespace,
            ControllerUsersFrom::ServiceAccountFile(file.clone()),
        );
    }
    let pod = match pod_namespace {
        None => format!("{POD_NAMESPACE_ENV} is not set"),
        Some(_) => format!("{POD_NAMESPACE_ENV} is empty"),
    };
    let file = match file_namespace {
        Ok(_) => format!("{} is empty", file.display()),
        Err(why) => format!("{} cannot be read ({why})", file.display()),
    };
    Err(ConfigError(format!(
        "cannot tell which user promotion-controller runs as: --controller-user is not given, \
         {pod} and {file}; {FIX}"
    )))
}

/// A Kubernetes namespace name: an RFC 1123 label.
fn is_namespace_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let inner = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (1..=63).contains(&bytes.len())
        && bytes.iter().all(|b| inner(b) || *b == b'-')
        && bytes.first().is_some_and(inner)
        && bytes.last().is_some_and(inner)
}

/// The groups of a repeatable `--<flag>`, trimmed; an empty one is refused.
fn group_flag(flag: &str, values: &[String]) -> Result<Vec<String>, ConfigError> {
    let groups: Vec<String> = values
        .iter()
        .map(|g| g.trim().to_string())
        .filter(|g| !g.is_empty())
        .collect();
    if groups.len() != values.len() {
        let env = format!(
            "PROMOTION_WEBHOOK_{}",
            flag.to_uppercase().replace('-', "_")
        );
        return Err(ConfigError(format!(
            "--{flag} must not be empty ({env} takes a comma-separated list)"
        )));
    }
    Ok(groups)
}

impl ServeConfig {
    /// Check `args`; `namespace` is what the process found out about the namespace it runs in
    /// ([`NamespaceSources::read`]), used when `--controller-user` is not given.
    pub fn new(args: ServeArgs, namespace: &NamespaceSources) -> Result<Self, ConfigError> {
        let approver_groups = group_flag("approver-group", &args.approver_groups)?;
        let rollback_groups = group_flag("rollback-group", &args.rollback_groups)?;
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
        let (controller_users, controller_users_from) =
            controller_users(&args.controller_users, namespace)?;
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
                controller_users,
                rollback_groups,
            },
            controller_users_from,
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

    /// What a process finds about its namespace: `POD_NAMESPACE` and the service-account file.
    fn sources(pod_namespace: Option<&str>, file: Result<&str, &str>) -> NamespaceSources {
        NamespaceSources {
            pod_namespace: pod_namespace.map(String::from),
            service_account_file: PathBuf::from("/sa/namespace"),
            service_account_namespace: file.map(String::from).map_err(String::from),
        }
    }

    const NO_FILE: Result<&str, &str> = Err("No such file or directory (os error 2)");

    /// `args` in a pod whose POD_NAMESPACE is `kubectl-promotion-system`.
    fn parse(args: &[&str]) -> Result<ServeConfig, ConfigError> {
        match command_line(args).expect("parses").command {
            Command::Serve(args) => {
                ServeConfig::new(*args, &sources(Some("kubectl-promotion-system"), NO_FILE))
            }
            Command::Certs(_) => unreachable!("serve was given"),
        }
    }

    fn derive(
        flag: &[&str],
        sources: &NamespaceSources,
    ) -> Result<(Vec<String>, ControllerUsersFrom), String> {
        let flag: Vec<String> = flag.iter().map(|u| u.to_string()).collect();
        controller_users(&flag, sources).map_err(|e| e.to_string())
    }

    fn controller_in(namespace: &str) -> Vec<String> {
        vec![format!(
            "system:serviceaccount:{namespace}:promotion-controller"
        )]
    }

    #[test]
    fn the_controller_user_flag_wins() {
        let everything = sources(Some("pod-ns"), Ok("file-ns"));
        assert_eq!(
            derive(&["a", " b "], &everything),
            Ok((vec!["a".into(), "b".into()], ControllerUsersFrom::Flag))
        );
        let config = parse(&["--controller-user", "x,y", "--controller-user", "z"]).unwrap();
        assert_eq!(config.policy.controller_users, ["x", "y", "z"]);
        assert_eq!(config.controller_users_from, ControllerUsersFrom::Flag);
        for empty in [&[""][..], &["a", " "][..]] {
            let err = derive(empty, &everything).unwrap_err();
            assert!(err.contains("--controller-user must not be empty"), "{err}");
        }
    }

    #[test]
    fn without_the_flag_the_controller_user_is_in_the_pods_namespace() {
        assert_eq!(
            derive(&[], &sources(Some("other-ns"), Ok("file-ns"))),
            Ok((controller_in("other-ns"), ControllerUsersFrom::PodNamespace))
        );
        let from_file = Ok((
            controller_in("file-ns"),
            ControllerUsersFrom::ServiceAccountFile(PathBuf::from("/sa/namespace")),
        ));
        assert_eq!(derive(&[], &sources(None, Ok("file-ns"))), from_file);
        // Empty or blank values name no namespace: the next source is asked.
        assert_eq!(derive(&[], &sources(Some(""), Ok("file-ns\n"))), from_file);
        assert_eq!(derive(&[], &sources(Some(" \t"), Ok("file-ns"))), from_file);
        assert_eq!(
            derive(&[], &sources(Some(" other-ns\n"), NO_FILE)),
            Ok((controller_in("other-ns"), ControllerUsersFrom::PodNamespace))
        );
        let config = parse(&[]).unwrap();
        assert_eq!(
            config.policy.controller_users,
            controller_in("kubectl-promotion-system")
        );
        assert_eq!(config.controller_users_from.to_string(), "POD_NAMESPACE");
        assert_eq!(
            ControllerUsersFrom::ServiceAccountFile(PathBuf::from("/sa/namespace")).to_string(),
            "/sa/namespace"
        );
    }

    #[test]
    fn without_a_namespace_the_start_fails_with_the_fix() {
        let fix =
            "; pass --controller-user system:serviceaccount:<namespace>:promotion-controller \
                   with the namespace promotion-controller runs in, or set POD_NAMESPACE to it";
        let err = derive(&[], &sources(None, NO_FILE)).unwrap_err();
        assert_eq!(
            err,
            format!(
                "invalid configuration: cannot tell which user promotion-controller runs as: \
                 --controller-user is not given, POD_NAMESPACE is not set and /sa/namespace \
                 cannot be read (No such file or directory (os error 2)){fix}"
            )
        );
        let err = derive(&[], &sources(Some(" "), Ok("\n"))).unwrap_err();
        assert!(
            err.contains("POD_NAMESPACE is empty and /sa/namespace is empty;"),
            "{err}"
        );
        assert!(err.ends_with(fix), "{err}");
        for (sources, from) in [
            (sources(Some("Other_NS"), NO_FILE), "POD_NAMESPACE"),
            (sources(None, Ok("a:b")), "/sa/namespace"),
        ] {
            let err = derive(&[], &sources).unwrap_err();
            assert!(err.contains(from), "{err}");
            assert!(err.contains("which is not a namespace name"), "{err}");
            assert!(err.ends_with(fix), "{err}");
        }
    }

    #[test]
    fn namespace_names() {
        for good in ["a", "kubectl-promotion-system", "ns-1", &"a".repeat(63)] {
            assert!(is_namespace_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", "a:b", "a b", &"a".repeat(64)] {
            assert!(!is_namespace_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_service_account_file_flag_is_hidden() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        let serve = cli.find_subcommand_mut("serve").expect("serve");
        let help = serve.render_long_help().to_string();
        assert!(!help.contains("service-account-namespace-file"), "{help}");
        assert!(help.contains("--controller-user"), "{help}");
        let config = command_line(&["--service-account-namespace-file", "/x"]).unwrap();
        match config.command {
            Command::Serve(args) => {
                assert_eq!(args.service_account_namespace_file, PathBuf::from("/x"))
            }
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
