//! `kubectl promotion health`: run a promotion's health checks (`ValidateHealth`) locally and
//! reach the verdict Sveltos would, with the reason.
//!
//! Offline (`-f PROMOTION --object FILE…`) against objects from files; live (`NAME --stage S`)
//! against every cluster of the stage, reached through its kubeconfig Secret as Sveltos reaches
//! it. Exit status: 0 every evaluated check healthy; 1 a check is unhealthy, fails or selects
//! nothing; 2 input or connection error.

mod inputs;
mod live;
mod managed;
mod render;

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use health_runtime::{self as engine, CheckReport, Inputs, KindServed};
use promotion_manifest::Reader;

use super::{manifests, Ctx};
use crate::error::{exit::health as exit, Error, Result};

pub const LONG_ABOUT: &str = "\
Run a ClusterPromotion's health checks (ValidateHealth: profileSpec.validateHealths and
preDeployChecks, and each stage's postDelayHealthChecks) locally and reach the verdict Sveltos
would, with the reason: the same object selection (group/version/kind, namespace, labelFilters),
the same Lua sequence (a sandboxed LuaJIT with Sveltos' preloads json, strings, runes, sprig and
its globals), the same CEL evaluation (rules OR'ed, a failing rule skipped), Lua AND CEL.

Offline, -f PROMOTION --object FILE_OR_DIR checks the objects in those files. Live, NAME --stage S
reaches every cluster of the stage through its kubeconfig Secret on the management cluster, as
Sveltos does, lists what each check selects and evaluates it; each cluster shows the error text
Sveltos would record. --stage narrows to what that stage runs; --check to named checks.

jobCheck is not run (it runs a Job in the cluster); a metric check needs --metrics NAME=FILE with
a Prometheus instant-query response for each of its metricQueries.";

pub const AFTER_HELP: &str = "\
Examples:
  # Offline: the cert-manager example's checks against Deployments and ClusterIssuers in files
  kubectl promotion health -f examples/cert-manager-lua-checks.yaml --object cluster-state/

  # Only what stage dev runs, only one check, as JSON
  kubectl promotion health -f rollout.yaml --object objs.yaml --stage dev \\
      --check cert-manager-resources-health -o json

  # Live: every cluster of stage staging, or one of them
  kubectl promotion health core-app-rollout --stage staging
  kubectl promotion health core-app-rollout --stage staging --managed-cluster staging/staging01

Exit status: 0 every evaluated check is healthy; 1 a check is unhealthy, fails, or selects
nothing; 2 an input or connection error (a cluster that cannot be reached is reported on one line
and the other clusters still run).";

#[derive(Args, Debug)]
#[command(
    about = "Run a promotion's health checks (Lua and CEL) exactly as Sveltos would",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct HealthArgs {
    /// ClusterPromotion on the cluster (live mode; needs --stage)
    #[arg(
        value_name = "NAME",
        required_unless_present = "filename",
        requires = "stage",
        conflicts_with = "filename"
    )]
    pub name: Option<String>,
    /// ClusterPromotion manifest (offline mode; "-" reads stdin)
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub filename: Option<PathBuf>,
    /// Objects to check (offline): YAML/JSON files or directories, searched recursively
    #[arg(long = "object", value_name = "FILE_OR_DIR", conflicts_with = "name")]
    pub objects: Vec<PathBuf>,
    /// Only the checks this stage runs: the profile's checks and its postDelayHealthChecks
    #[arg(long, value_name = "STAGE")]
    pub stage: Option<String>,
    /// Only the check with this name (repeat for several)
    #[arg(long = "check", value_name = "NAME")]
    pub checks: Vec<String>,
    /// Live mode: only this cluster of the stage (SveltosCluster or CAPI Cluster)
    #[arg(
        long = "managed-cluster",
        value_name = "NAMESPACE/NAME",
        requires = "name"
    )]
    pub managed_cluster: Option<String>,
    /// A metric query's result: a Prometheus instant-query response (JSON) for the query NAME
    #[arg(long = "metrics", value_name = "NAME=FILE")]
    pub metrics: Vec<String>,
    /// Output format: one JSON/YAML element per (check, object) pair
    #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
    pub output: Option<HealthFormat>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HealthFormat {
    Json,
    Yaml,
}

pub async fn run(ctx: &Ctx, args: &HealthArgs) -> Result<u8> {
    // Input and connection errors are exit 2 here (1 means "unhealthy"), so they are reported
    // by this command rather than by main's generic handler.
    match run_inner(ctx, args).await {
        Ok(code) => Ok(code),
        Err(e) => {
            crate::error::report(&e, ctx.err.color);
            Ok(exit::ERROR)
        }
    }
}

async fn run_inner(ctx: &Ctx, args: &HealthArgs) -> Result<u8> {
    let mut inputs = Inputs::default();
    for m in &args.metrics {
        let (name, value) = inputs::metric(m)?;
        inputs.metrics.insert(name, value);
    }
    if let Some(name) = &args.name {
        let stage = args
            .stage
            .as_deref()
            .ok_or_else(|| Error::Usage("live mode needs --stage STAGE".into()))?;
        return live::run(ctx, args, name, stage, &inputs).await;
    }
    let path = args.filename.as_ref().ok_or_else(|| {
        Error::Usage("health needs NAME --stage STAGE, or -f FILE --object FILE".into())
    })?;
    // One reader: `-f -` reads stdin, and a `--object -` after it is refused.
    let mut reader = Reader::new();
    let promotion = manifests::promotion(&mut reader, path)?;
    let checks = select_checks(&promotion, args)?;
    let objects = manifests::objects(&mut reader, &args.objects)?;
    let reports: Vec<CheckReport> = checks
        .iter()
        .map(|c| engine::run_check(c, &objects, KindServed::Unknown, &inputs))
        .collect();
    render::print(ctx, args.output, &[render::Section::offline(reports)])
}

/// The checks to run, narrowed by --stage and --check.
pub fn select_checks(
    promotion: &serde_json::Value,
    args: &HealthArgs,
) -> Result<Vec<engine::Check>> {
    let name = promotion
        .pointer("/metadata/name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    let mut checks = engine::checks(promotion, args.stage.as_deref())
        .map_err(|e| Error::Usage(format!("clusterpromotion {name:?}: {e}")))?;
    if !args.checks.is_empty() {
        let unknown: Vec<&String> = args
            .checks
            .iter()
            .filter(|c| !checks.iter().any(|k| &&k.name == c))
            .collect();
        if !unknown.is_empty() {
            let known: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
            return Err(Error::Usage(format!(
                "no check named {} in clusterpromotion {name:?}{} (checks: {})",
                unknown
                    .iter()
                    .map(|u| format!("{u:?}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                args.stage
                    .as_deref()
                    .map(|s| format!(" stage {s:?}"))
                    .unwrap_or_default(),
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            )));
        }
        checks.retain(|c| args.checks.contains(&c.name));
    }
    Ok(checks)
}
