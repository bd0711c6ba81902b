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
}

#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// Decide only; nothing is written. Required: the controller's `run` carries decisions out.
    #[arg(long)]
    pub dry_run: bool,

    /// A snapshot: what `kubectl get -o yaml` prints (one document, a List, or several
    /// documents) holding the ClusterPromotion, its ClusterProfiles, their ClusterSummaries and
    /// the SveltosClusters / CAPI Clusters. `-` reads standard input.
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Json,
    Yaml,
}
