//! Command line. Every flag can also come from the environment as `PROMOTION_WEBHOOK_<FLAG>`
//! (upper case, dashes as underscores); repeatable flags take a comma-separated list there.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "promotion-webhook",
    version,
    about = "Validating and mutating admission webhook for Sveltos ClusterPromotion"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve POST /validate and POST /mutate over HTTPS, and /metrics, /healthz, /readyz over
    /// plain HTTP.
    Serve(Box<ServeArgs>),
    /// Write a development CA (ca.crt, ca.key) and a serving certificate (tls.crt, tls.key).
    Certs(CertsArgs),
}

/// Where Kubernetes mounts the namespace of a pod's service account (when it mounts the
/// account's token).
pub const SERVICE_ACCOUNT_NAMESPACE_FILE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// HTTPS address for the admission endpoints.
    #[arg(long, env = "PROMOTION_WEBHOOK_LISTEN", default_value = "0.0.0.0:8443")]
    pub listen: SocketAddr,

    /// PEM certificate chain (serving certificate first). Reloaded when it changes on disk.
    #[arg(long, env = "PROMOTION_WEBHOOK_TLS_CERT_FILE")]
    pub tls_cert_file: PathBuf,

    /// PEM private key of the serving certificate (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "PROMOTION_WEBHOOK_TLS_KEY_FILE")]
    pub tls_key_file: PathBuf,

    /// Plain-HTTP address for /metrics, /healthz and /readyz.
    #[arg(
        long,
        env = "PROMOTION_WEBHOOK_METRICS_LISTEN",
        default_value = "0.0.0.0:8080"
    )]
    pub metrics_listen: SocketAddr,

    #[arg(long, env = "PROMOTION_WEBHOOK_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Log filter in `tracing` syntax, e.g. `info` or `info,promotion_webhook=debug`.
    #[arg(long, env = "PROMOTION_WEBHOOK_LOG_LEVEL", default_value = "info")]
    pub log_level: String,

    /// Only members of this group may turn a stage's `approved` on (repeatable; any listed
    /// group suffices). Unset: no restriction.
    #[arg(
        long = "approver-group",
        env = "PROMOTION_WEBHOOK_APPROVER_GROUP",
        value_name = "GROUP",
        value_delimiter = ','
    )]
    pub approver_groups: Vec<String>,

    /// Only members of this group may abort, roll back or retry a rollout (set, change or
    /// remove the annotation promotion-controller.kubectl-promotion.dev/abort; repeatable; any
    /// listed group suffices). Unset: no restriction. Pausing is never restricted: it is the
    /// emergency brake.
    #[arg(
        long = "rollback-group",
        env = "PROMOTION_WEBHOOK_ROLLBACK_GROUP",
        value_name = "GROUP",
        value_delimiter = ','
    )]
    pub rollback_groups: Vec<String>,

    /// The user promotion-controller runs as (repeatable): only it may write the annotations
    /// promotion-controller.kubectl-promotion.dev/promoting and …/used-approvals, which record an
    /// approval the controller has used and whose it was. Default: system:serviceaccount:<namespace>:promotion-controller in
    /// the namespace the webhook runs in, read from the environment variable POD_NAMESPACE (the
    /// manifests set it from the pod's metadata.namespace), else from the pod's service-account
    /// namespace file; with neither, the server does not start.
    #[arg(
        long = "controller-user",
        env = "PROMOTION_WEBHOOK_CONTROLLER_USER",
        value_name = "USER",
        value_delimiter = ','
    )]
    pub controller_users: Vec<String>,

    /// Where the namespace of the pod's service account is read when POD_NAMESPACE is not set.
    /// Hidden: tests point it elsewhere, a pod never needs to.
    #[arg(
        long,
        hide = true,
        value_name = "FILE",
        default_value = SERVICE_ACCOUNT_NAMESPACE_FILE
    )]
    pub service_account_namespace_file: PathBuf,

    /// The user who last changed spec.profileSpec may not approve that rollout (four eyes).
    #[arg(long, env = "PROMOTION_WEBHOOK_FORBID_SELF_APPROVAL")]
    pub forbid_self_approval: bool,

    /// Read the approver rules from this folder instead of --approver-group and
    /// --forbid-self-approval (and --rollback-group): the ConfigMap
    /// kubectl-promotion-system/promotion-governance mounted as a volume (keys approver-groups,
    /// forbid-self-approval and rollback-groups), which
    /// `kubectl promotion describe` reads too to say who may approve. Re-read every
    /// --cert-reload-interval; a change that does not parse keeps the rules in use.
    #[arg(
        long,
        env = "PROMOTION_WEBHOOK_GOVERNANCE_DIR",
        value_name = "DIR",
        conflicts_with_all = ["approver_groups", "forbid_self_approval", "rollback_groups"]
    )]
    pub governance_dir: Option<PathBuf>,

    /// How often the certificate and key files are checked for changes.
    #[arg(long, env = "PROMOTION_WEBHOOK_CERT_RELOAD_INTERVAL", default_value = "5s", value_parser = parse_duration)]
    pub cert_reload_interval: Duration,

    /// Time allowed for reading a request body, waiting for an evaluation slot and evaluating
    /// the review; longer gets 408 (an evaluation still running then finishes in the background,
    /// keeping its slot until it does).
    #[arg(long, env = "PROMOTION_WEBHOOK_REQUEST_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// How many admission reviews may be evaluated at once (1 to 512), expensive ones (unseen Lua
    /// or CEL, large bodies) each on a thread of its own; further requests wait for a slot within
    /// --request-timeout. Default: the number of CPUs available to the process.
    #[arg(
        long,
        env = "PROMOTION_WEBHOOK_MAX_CONCURRENT_EVALUATIONS",
        value_name = "N"
    )]
    pub max_concurrent_evaluations: Option<usize>,

    /// Time allowed for a TLS handshake and for a client to send the request headers.
    #[arg(long, env = "PROMOTION_WEBHOOK_HEADER_READ_TIMEOUT", default_value = "5s", value_parser = parse_duration)]
    pub header_read_timeout: Duration,

    /// After SIGTERM: how long to keep serving (with /readyz failing, and HTTP/1 connections
    /// closed after each response) so that endpoints stop routing here before the listener
    /// closes.
    #[arg(long, env = "PROMOTION_WEBHOOK_SHUTDOWN_DELAY", default_value = "5s", value_parser = parse_duration)]
    pub shutdown_delay: Duration,

    /// After the shutdown delay: how long in-flight requests may take to finish.
    #[arg(long, env = "PROMOTION_WEBHOOK_SHUTDOWN_GRACE_PERIOD", default_value = "20s", value_parser = parse_duration)]
    pub shutdown_grace_period: Duration,

    /// Largest accepted request body in bytes (the API server's own limit is 3 MiB); larger
    /// gets 413.
    #[arg(long, env = "PROMOTION_WEBHOOK_MAX_BODY_BYTES", default_value_t = 3 * 1024 * 1024)]
    pub max_body_bytes: usize,
}

#[derive(Debug, Args)]
pub struct CertsArgs {
    /// DNS name for the serving certificate (repeatable), e.g. `promotion-webhook.sveltos.svc`.
    #[arg(
        long = "dns",
        env = "PROMOTION_WEBHOOK_DNS",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub dns: Vec<String>,

    /// IP address for the serving certificate (repeatable).
    #[arg(
        long = "ip",
        env = "PROMOTION_WEBHOOK_IP",
        value_name = "IP",
        value_delimiter = ','
    )]
    pub ip: Vec<IpAddr>,

    /// Directory to write ca.crt, ca.key, tls.crt and tls.key into (created if missing).
    #[arg(long, env = "PROMOTION_WEBHOOK_OUT", value_name = "DIR")]
    pub out: PathBuf,

    /// Sign with this existing CA certificate instead of creating a CA (needs --ca-key).
    #[arg(long, env = "PROMOTION_WEBHOOK_CA_CERT", requires = "ca_key")]
    pub ca_cert: Option<PathBuf>,

    /// Private key of --ca-cert.
    #[arg(long, env = "PROMOTION_WEBHOOK_CA_KEY", requires = "ca_cert")]
    pub ca_key: Option<PathBuf>,

    /// Replace an existing ca.key in --out with a new CA. Without it, `certs` refuses, so that
    /// re-running an install step never rotates the CA by accident.
    #[arg(long, env = "PROMOTION_WEBHOOK_FORCE")]
    pub force: bool,

    /// Validity of the serving certificate in days (a new CA gets ten times as long).
    #[arg(long, env = "PROMOTION_WEBHOOK_VALID_DAYS", default_value_t = 365, value_parser = clap::value_parser!(u32).range(1..=3650))]
    pub valid_days: u32,
}

/// Go duration syntax (`500ms`, `5s`, `1m30s`), parsed by the same code that checks `delay` in
/// manifests, so flags and manifests accept the same spellings.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    promotion_shared::validation::parse_std_duration(text)
        .map_err(|e| format!("invalid duration {text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        for bad in ["", "5", "s", "-1s", "5d", "99999999999999999999h"] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.contains("invalid duration"), "{bad}: {err}");
        }
    }
}
