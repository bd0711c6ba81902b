//! `describe NAME` / `describe -f FILE` / `describe NAME --watch`.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use promotion_shared::pipeline::{Phase, StageState};
use serde_json::Value;

use super::Ctx;
use crate::error::{exit, Error, Result};
use crate::fetch;
use crate::kube_client::Kube;
use crate::output::{self, ModelFormat};
use crate::render::{self, describe::Options};
use crate::view::{self, Description, Snapshot};
use crate::watch::Follower;

#[derive(Args, Debug)]
#[command(
    about = "Show a ClusterPromotion's pipeline: stages, clusters, approvals and events",
    long_about = "\
Show a ClusterPromotion's pipeline at a glance: one block per stage in order with its derived
state (not started, provisioning, provisioned, soaking until T, running health checks, waiting
for window until T, awaiting approval, approved and pending, promoted, failed), selector, trigger,
the matching clusters with their per-feature status (from the generated ClusterProfile
<promotion>-<stage> and its ClusterSummaries), times and messages; then who approved what and
who last changed the spec (the admission webhook's audit annotations), and the object's Events.

With -f, describes a manifest offline (no cluster needed; cluster status is then unknown).
With -o json|yaml, prints the computed model instead (field reference: plugin/docs/output.md).",
    after_help = "\
Examples:
  kubectl promotion describe kyverno-rollout
  kubectl promotion describe kyverno-rollout --all-clusters
  kubectl promotion describe -f rollout.yaml            # offline, no cluster
  kubectl promotion describe kyverno-rollout -o json | jq '.stages[] | {name, state}'
  kubectl promotion describe kyverno-rollout -w         # follow until complete or failed

Exit status: 0; 1 on error. With -w: 0 when the pipeline completes, 2 when it fails."
)]
pub struct DescribeArgs {
    /// ClusterPromotion name (omit with -f)
    #[arg(value_name = "NAME", required_unless_present = "filename")]
    pub name: Option<String>,
    /// Describe the ClusterPromotion in this manifest offline ("-" reads stdin)
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        conflicts_with = "watch"
    )]
    pub filename: Option<PathBuf>,
    /// Output format: the computed model as json or yaml (default: human-readable)
    #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
    pub output: Option<ModelFormat>,
    /// Keep watching: redraw in place on a terminal, print changes otherwise; ends when the
    /// pipeline completes or fails
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// List every cluster of every stage (default: the ones not provisioned, then a count)
    #[arg(long)]
    pub all_clusters: bool,
}

pub async fn run(ctx: &Ctx, args: &DescribeArgs) -> Result<u8> {
    if let Some(path) = &args.filename {
        let object = output::read_promotion(path)?;
        let in_file = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(name) = args.name.as_deref().filter(|n| *n != in_file) {
            return Err(Error::Usage(format!(
                "NAME {name:?} does not match the ClusterPromotion {in_file:?} in {}",
                path.display()
            )));
        }
        let d = Description::build(&Snapshot::offline(object))?;
        print(ctx, args, &d)?;
        return Ok(exit::OK);
    }
    let name = args
        .name
        .as_deref()
        .ok_or_else(|| Error::Usage("describe needs NAME or -f FILE".into()))?;
    let kube = ctx.kube().await?;
    if args.watch {
        return watch(ctx, args, &kube, name).await;
    }
    let snap = fetch::snapshot(&kube, name).await?;
    let d = Description::build(&snap)?;
    print(ctx, args, &d)?;
    Ok(exit::OK)
}

fn print(ctx: &Ctx, args: &DescribeArgs, d: &Description) -> Result<()> {
    let text = match args.output {
        Some(ModelFormat::Json) => output::to_json(d)?,
        Some(ModelFormat::Yaml) => output::to_yaml(d)?,
        None => render::describe::render(
            d,
            &ctx.out,
            &Options {
                all_clusters: args.all_clusters,
                now: ctx.now(),
            },
        ),
    };
    write_out(&text)
}

fn write_out(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| Error::Io(format!("writing output: {e}")))
}

/// Follow the pipeline. On a terminal the view is redrawn in place; otherwise the first view is
/// printed whole and then one line per change, so a log stays readable. Ends with exit 0 when
/// the pipeline completes and 2 when it fails.
async fn watch(ctx: &Ctx, args: &DescribeArgs, kube: &Kube, name: &str) -> Result<u8> {
    let redraw = ctx.out_is_tty && args.output.is_none();
    let mut follower = Follower::start(kube, name).await?;
    let mut profiles = kube
        .list_stage_profiles(name)
        .await
        .map_err(|e| e.to_string());
    let mut reached = usize::MAX;
    let mut previous: Option<Description> = None;
    loop {
        let state = follower.next().await?;
        let promotion = view::typed(&state.object)?;
        // A newly reached stage has a new ClusterProfile: read them again.
        if promotion.stage_statuses().len() != reached {
            reached = promotion.stage_statuses().len();
            if previous.is_some() {
                profiles = kube
                    .list_stage_profiles(name)
                    .await
                    .map_err(|e| e.to_string());
            }
        }
        let events = if redraw {
            kube.list_events(name, promotion.metadata.uid.as_deref())
                .await
                .map_err(|e| e.to_string())
        } else {
            Err(String::new())
        };
        let d = Description::build(&state.snapshot(profiles.clone(), events))?;
        if redraw {
            // Home, clear screen, draw: what `watch` and Argo Rollouts do.
            write_out("\x1b[H\x1b[2J")?;
            print(ctx, args, &d)?;
        } else if args.output.is_some() {
            if previous.as_ref() != Some(&d) {
                print(ctx, args, &d)?;
            }
        } else {
            match &previous {
                None => print(ctx, args, &d)?,
                Some(prev) => write_out(&changes(prev, &d, ctx))?,
            }
        }
        let done = match d.phase {
            Phase::Complete => Some(exit::OK),
            Phase::Failed => Some(exit::PIPELINE_FAILED),
            _ => None,
        };
        previous = Some(d);
        if let Some(code) = done {
            return Ok(code);
        }
    }
}

/// One line per stage whose state changed (and one for the phase), timestamped.
pub fn changes(prev: &Description, now: &Description, ctx: &Ctx) -> String {
    let stamp = ctx.now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let mut out = String::new();
    for stage in &now.stages {
        let before = prev
            .stages
            .iter()
            .find(|s| s.view.name == stage.view.name)
            .map(|s| &s.view.state);
        if before == Some(&stage.view.state) {
            continue;
        }
        let from = before.map(StageState::label).unwrap_or_else(|| "-".into());
        let mut line = format!(
            "{stamp}  stage {}: {from} → {}",
            stage.view.name,
            ctx.out.state(&stage.view.state)
        );
        if let StageState::Failed { message, .. } = &stage.view.state {
            line.push_str(&format!(" ({message})"));
        }
        out.push_str(&line);
        out.push('\n');
    }
    if prev.phase != now.phase {
        out.push_str(&format!(
            "{stamp}  pipeline {}: {} → {}\n",
            now.name,
            prev.phase.label(),
            ctx.out.phase(&now.phase)
        ));
    }
    out
}
