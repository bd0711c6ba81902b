//! `history NAME [--revision N] [-o json|yaml]`: the rollouts promotion-controller recorded for
//! a promotion (`promotion_shared::history`), as `kubectl rollout history` lists a Deployment's.
//! The revisions are ControllerRevisions in the controller's namespace, found by the promotion's
//! UID; this module reads them and words them, the view model
//! ([`crate::view::history`]) decides what each row says.

use clap::Args;

use promotion_shared::history::{Revision, DEFAULT_NAMESPACE};

use super::Ctx;
use crate::error::{exit::plain as exit, Error, Result};
use crate::render::output;
use crate::render::printers::{FormatArg, OutputFormat, MODEL_FORMATS};
use crate::render::table;
use crate::view::history::{rows, whole, HistoryRow};

#[derive(Args, Debug)]
#[command(
    about = "List the rollouts of a promotion, or show one",
    long_about = "\
List the rollouts promotion-controller recorded for a ClusterPromotion, oldest first: one
revision per rollout (each distinct stages and profileSpec), with when and by whom it started
(the admission webhook's record of the spec change), how it ended (complete, superseded by a
later revision, or in progress), the stages it reached and what changed against the revision
before it (after \"undo of N:\" for a rollout `kubectl promotion undo` started, by the
webhook's record). --revision N prints that revision whole: its record and the profileSpec
and stages it rolled.

The revisions are ControllerRevisions in promotion-controller's namespace (--history-namespace,
as the controller's flag of the same name), kept up to --revision-history-limit per promotion.",
    after_help = "\
Examples:
  kubectl promotion history kyverno-rollout
  kubectl promotion history kyverno-rollout --revision 3
  kubectl promotion history kyverno-rollout -o yaml"
)]
pub struct HistoryArgs {
    /// ClusterPromotion name
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Print this revision whole
    #[arg(long, value_name = "N")]
    pub revision: Option<i64>,
    /// Output format: json or yaml (the rows, or with --revision the revision)
    #[arg(short = 'o', long = "output", value_name = "FORMAT",
          value_parser = FormatArg(MODEL_FORMATS))]
    pub output: Option<String>,
    /// Where promotion-controller keeps the history
    #[arg(long, value_name = "NS", default_value = DEFAULT_NAMESPACE)]
    pub history_namespace: String,
}

const HEADERS: [&str; 6] = ["REVISION", "STARTED", "BY", "OUTCOME", "REACHED", "CHANGE"];

pub async fn run(ctx: &Ctx, args: &HistoryArgs) -> Result<u8> {
    let format = OutputFormat::of_flag(args.output.as_deref(), MODEL_FORMATS)?;
    let kube = ctx.kube().await?;
    let promotion = kube.get_promotion(&args.name).await?;
    let revisions = revisions_of(&kube, &args.history_namespace, &promotion).await?;
    if let Some(n) = args.revision {
        let Some(revision) = revisions.iter().find(|r| r.number == n) else {
            let known: Vec<String> = revisions.iter().map(|r| r.number.to_string()).collect();
            return Err(Error::Usage(format!(
                "ClusterPromotion {:?} has no revision {n} (recorded: {})",
                args.name,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        };
        let text = match format {
            OutputFormat::Json => output::to_json(&whole(revision))?,
            _ => output::to_yaml(&whole(revision))?,
        };
        ctx.write_out(&text)?;
        return Ok(exit::OK);
    }
    let rows = rows(&revisions);
    let text = match format {
        OutputFormat::Json => output::to_json(&rows)?,
        OutputFormat::Yaml => output::to_yaml(&rows)?,
        _ => {
            if rows.is_empty() {
                eprintln!(
                    "No rollout history recorded for ClusterPromotion {:?} in namespace {:?}: \
                     promotion-controller records one revision per rollout there (is it \
                     running, with --history-namespace {}?)",
                    args.name, args.history_namespace, args.history_namespace
                );
                return Ok(exit::OK);
            }
            table::render(
                &HEADERS,
                &rows.iter().map(HistoryRow::cells).collect::<Vec<_>>(),
                false,
            )
        }
    };
    ctx.write_out(&text)?;
    Ok(exit::OK)
}

/// The revisions of the promotion `object` in `namespace`, oldest first, as `history` reads them.
pub(crate) async fn revisions_of(
    kube: &crate::cluster::kube_client::Kube,
    namespace: &str,
    object: &serde_json::Value,
) -> Result<Vec<Revision>> {
    let uid = object
        .pointer("/metadata/uid")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    let mut revisions: Vec<Revision> = kube
        .list_revisions(namespace, Some(uid))
        .await?
        .iter()
        .filter_map(Revision::decode)
        .collect();
    revisions.sort_by_key(|r| r.number);
    Ok(revisions)
}
