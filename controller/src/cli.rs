//! The command line of `promotion-controller`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "promotion-controller",
    version,
    about = "The open-source stage reconciler for Sveltos ClusterPromotions"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decide one reconcile of a promotion and print it, without writing anything.
    ///
    /// Prints what one reconcile would do: the ClusterProfiles to apply (full bodies) or delete,
    /// the status to write, the approvals it would consume, its Events, when it would look again
    /// (wakeAt) and, in one sentence, why (explanation). Exit 0 when the decision was made; 1 when
    /// the snapshot or the cluster could not be read; 2 for a usage error.
    Reconcile(ReconcileArgs),
    /// Run the reconciler against the cluster until stopped (SIGTERM or Ctrl-C).
    ///
    /// Watches ClusterPromotions, their ClusterProfiles and ClusterSummaries, SveltosClusters and
    /// (once their CRD exists) CAPI Clusters, and carries out each reconcile's decision with
    /// guarded writes. Exit 0 after a graceful shutdown; 1 when it cannot start (connection,
    /// listeners); 2 for a usage error.
    Run(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,

    /// Take part in leader election on a Lease: only the holder writes; the others keep their
    /// caches warm and take over when the Lease expires.
    #[arg(long)]
    pub leader_elect: bool,

    /// The namespace of the leader-election Lease (default: the service account's namespace
    /// in-cluster, else the kubeconfig context's, else `default`).
    #[arg(long, value_name = "NS")]
    pub leader_elect_namespace: Option<String>,

    /// The name of the leader-election Lease.
    #[arg(long, value_name = "NAME", default_value = "promotion-controller")]
    pub leader_elect_lease_name: String,

    /// How long a leader's Lease lasts without renewal, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 15, hide = true)]
    pub leader_elect_lease_duration: u64,

    /// How long the leader keeps acting without a successful renewal before it stops (default:
    /// two thirds of the lease duration, 10s for the default 15).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, hide = true)]
    pub leader_elect_renew_deadline: Option<std::time::Duration>,

    /// How often a replica tries to take or renew the Lease (default: the lease duration / 7.5,
    /// 2s for the default 15).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, hide = true)]
    pub leader_elect_retry_period: Option<std::time::Duration>,

    /// How long SIGTERM waits for running reconciles before it stops them and exits.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub shutdown_timeout: std::time::Duration,

    /// Where `/metrics` (Prometheus text format) is served.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8080")]
    pub metrics_listen: String,

    /// Where `/healthz` and `/readyz` are served.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8081")]
    pub health_listen: String,

    /// Reconcile only the promotions whose labels match this selector (to split promotions
    /// between installations), e.g. `team=payments` or `tier in (1,2)`.
    #[arg(long, value_name = "LABELSELECTOR")]
    pub selector: Option<String>,

    /// Reconcile promotions whose status another field manager wrote last (another
    /// reconciler, a person's edit) instead of leaving them alone.
    #[arg(long)]
    pub take_over: bool,

    /// The time zone promotion windows are evaluated in (IANA name); see `reconcile --help`.
    #[arg(long, value_name = "TZ", default_value = "UTC")]
    pub window_time_zone: String,

    /// Look at every promotion again after this long even when nothing changed (a safety net:
    /// reconciles are driven by watches and by the decision's own deadlines).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub resync_period: std::time::Duration,

    /// The namespace of the rollout history, one ControllerRevision per rollout (default: the
    /// service account's namespace in-cluster, else the kubeconfig context's, as the Lease's).
    #[arg(long, value_name = "NS")]
    pub history_namespace: Option<String>,

    /// Revisions kept per promotion, as a Deployment's revisionHistoryLimit (the current one, one
    /// a stage still runs and the last complete one are kept beyond it).
    #[arg(long, value_name = "N", default_value_t = promotion_shared::history::DEFAULT_LIMIT,
          value_parser = history_limit)]
    pub revision_history_limit: usize,

    /// How many promotions are reconciled at once.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub concurrent_reconciles: u16,

    /// Log format: `json` (one object per line) or `text`.
    #[arg(long, value_enum, default_value = "json")]
    pub log_format: LogFormat,

    /// Log filter (tracing's EnvFilter syntax), e.g. `info` or `promotion_controller=debug`.
    #[arg(long, value_name = "FILTER", default_value = "info")]
    pub log_level: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Json,
    Text,
}

/// At least one revision: the current one is always kept.
fn history_limit(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{text:?} is not a whole number of at least 1")),
    }
}

/// A Go duration (`90s`, `10m`, `1h30m`), as Kubernetes controllers take them.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let ns = go_text::duration::parse_go_duration(text)?;
    let ns = u64::try_from(ns).map_err(|_| format!("{text:?} is negative"))?;
    if ns == 0 {
        return Err(format!("{text:?} must be longer than zero"));
    }
    Ok(std::time::Duration::from_nanos(ns))
}

#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// Decide only; nothing is written. Required: the controller's `run` carries decisions out.
    #[arg(long)]
    pub dry_run: bool,

    /// A snapshot: what `kubectl get -o yaml` prints (one document, a List, or several
    /// documents) holding the ClusterPromotion, its ClusterProfiles, their ClusterSummaries and
    /// the SveltosClusters / CAPI Clusters, and its ControllerRevisions (the rollout history,
    /// read while a rollback is requested). `-` reads standard input.
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "SNAPSHOT",
        conflicts_with = "name"
    )]
    pub filename: Option<PathBuf>,

    /// The ClusterPromotion to read from the cluster (with its profiles, summaries and fleet).
    #[arg(value_name = "NAME", required_unless_present = "filename")]
    pub name: Option<String>,

    /// With -f: which promotion of the snapshot, when it holds several.
    #[arg(long, value_name = "NAME")]
    pub promotion: Option<String>,

    /// The time to decide at (RFC 3339); default: now.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,

    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    pub output: Format,

    /// The time zone promotion windows are evaluated in (IANA name). Upstream evaluates them in
    /// the controller process's local zone, UTC in Sveltos' image; UTC by default here too, so a
    /// window means the same wherever the controller runs.
    #[arg(long, value_name = "TZ", default_value = "UTC")]
    pub window_time_zone: String,

    /// The kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,

    /// With NAME: where the rollout history is (as `run --history-namespace`), read when the
    /// promotion asks for a rollback (default: the kubeconfig context's namespace).
    #[arg(long, value_name = "NS")]
    pub history_namespace: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Json,
    Yaml,
}
