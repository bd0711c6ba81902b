//! `plan NAME` / `plan -f PROMOTION.yaml [--clusters FILE_OR_DIR]`: which clusters each stage
//! will reach, which of them are paused or not ready, and the hazards, before the rollout runs.
//! The computation is `promotion_shared::plan`; this module reads the inputs and renders.
//!
//! Exit status: 0; 1 with `--strict` when there are hazards; 2 on input or connection errors
//! (usage errors included), so a CI step can tell "the rollout is risky" from "plan broke".

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;
use serde_json::Value;

use promotion_manifest::Reader;
use promotion_shared::fleet::{self, ClusterType, Inventory};
use promotion_shared::model::ClusterPromotion;
use promotion_shared::plan::{self, Plan, PlannedCluster, StagePlan};

use super::{manifests, note, Ctx};
use crate::error::{self, exit::plan as exit, Error, Result};
use crate::render::output::{self, ModelFormat};
use crate::render::timeline;
use crate::render::{self, table, Style, Tone};
use crate::view::API_VERSION;

/// Rows shown per stage without `--all-clusters`.
const ROWS_PER_STAGE: usize = 20;

#[derive(Args, Debug)]
#[command(
    about = "Show which clusters each stage will reach, and the hazards, before the rollout runs",
    long_about = "\
Show, stage by stage, the clusters a ClusterPromotion will reach (matched the way Sveltos matches
a stage's clusterSelector against SveltosCluster and Cluster API Cluster labels; an empty
selector matches no cluster), which of them are paused or not ready, and the hazards:

  stage-matches-no-cluster    the stage passes at once and the pipeline moves on
  selector-typo               a label key or value the fleet spells differently (did you mean …?)
  cluster-in-several-stages   a cluster receives the change at the first stage that selects it
  cluster-paused              Sveltos deploys nothing to a paused cluster: the stage waits
  cluster-not-ready           Sveltos skips a cluster that is not ready

The fleet comes from the management cluster (SveltosClusters, and Cluster API Clusters when
their CRD is served), or with --clusters from files as
`kubectl get sveltosclusters,clusters.cluster.x-k8s.io -A -o yaml` writes them (a List or
several documents; a directory reads every *.yaml, *.yml and *.json in it).
With -o json|yaml, prints the plan (field reference: plugin/docs/plan.md).",
    after_help = "\
Examples:
  kubectl promotion plan kyverno-rollout
  kubectl promotion plan -f rollout.yaml                      # the fleet from the cluster
  kubectl get sveltosclusters,clusters.cluster.x-k8s.io -A -o yaml > fleet.yaml
  kubectl promotion plan -f rollout.yaml --clusters fleet.yaml --strict   # in CI, no cluster
  kubectl promotion plan kyverno-rollout -o json | jq '.stages[] | {name, count}'

Exit status: 0; 1 with --strict when there are hazards; 2 on input or connection errors."
)]
pub struct PlanArgs {
    /// ClusterPromotion name (omit with -f)
    #[arg(value_name = "NAME", required_unless_present = "filename")]
    pub name: Option<String>,
    /// Plan the ClusterPromotion in this manifest instead ("-" reads stdin)
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub filename: Option<PathBuf>,
    /// Read the fleet from this file or directory instead of the cluster ("-" reads stdin)
    #[arg(long, value_name = "FILE_OR_DIR")]
    pub clusters: Option<PathBuf>,
    /// Output format: the plan as json or yaml (default: a table per stage)
    #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
    pub output: Option<ModelFormat>,
    /// Exit 1 when there are hazards
    #[arg(long)]
    pub strict: bool,
    /// List every cluster of every stage (default: up to 20 per stage, problems first)
    #[arg(long)]
    pub all_clusters: bool,
    /// Print when each stage would start, soak, wait for its window or an approval, and
    /// complete: the reconcile decision on a simulated clock, assuming every cluster deploys at
    /// once and every health check passes. For a paused promotion the timeline stops at the
    /// pause: no estimate past it
    #[arg(long)]
    pub timeline: bool,
    /// With --timeline: approve STAGE at TIME (RFC 3339, or +DURATION after the start);
    /// repeatable
    #[arg(long = "approve-at", value_name = "STAGE=TIME", requires = "timeline")]
    pub approve_at: Vec<String>,
    /// With --timeline: when the simulated clock starts (RFC 3339; default: now)
    #[arg(long, value_name = "RFC3339", requires = "timeline")]
    pub start: Option<String>,
    /// The time zone promotion windows are evaluated in (IANA name). UTC by default, as
    /// promotion-controller's --window-time-zone: Sveltos evaluates them in its process's zone,
    /// UTC in its image
    #[arg(long, value_name = "TZ", default_value = "UTC")]
    pub window_time_zone: String,
    /// Read the fleet from the cluster in pages of this many objects; 0 reads each type in one
    /// request (as `kubectl get --chunk-size`)
    #[arg(long, value_name = "N", default_value_t = crate::cluster::inventory::DEFAULT_PAGE_SIZE)]
    pub chunk_size: u32,
}

/// `-o json|yaml`: the plan with its identity (field reference: plugin/docs/plan.md).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanDocument<'a> {
    api_version: &'static str,
    kind: &'static str,
    name: &'a str,
    #[serde(flatten)]
    plan: &'a Plan,
}

pub async fn run(ctx: &Ctx, args: &PlanArgs) -> Result<u8> {
    match plan_and_print(ctx, args).await {
        Ok(code) => Ok(code),
        Err(e) => {
            error::report(&e, ctx.err.color);
            Ok(exit::ERROR)
        }
    }
}

async fn plan_and_print(ctx: &Ctx, args: &PlanArgs) -> Result<u8> {
    let stdin = Path::new("-");
    if args.filename.as_deref() == Some(stdin) && args.clusters.as_deref() == Some(stdin) {
        return Err(Error::Usage(
            "-f - and --clusters - cannot both read stdin".into(),
        ));
    }
    // One reader for both inputs: stdin is read once.
    let mut reader = Reader::new();
    let kube = if args.filename.is_none() || args.clusters.is_none() {
        Some(ctx.kube().await?)
    } else {
        None
    };
    let object = match (&args.filename, &kube) {
        (Some(path), _) => {
            let object = manifests::promotion(&mut reader, path)?;
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
            object
        }
        (None, Some(kube)) => {
            let name = args
                .name
                .as_deref()
                .ok_or_else(|| Error::Usage("plan needs NAME or -f FILE".into()))?;
            kube.get_promotion(name).await?
        }
        (None, None) => return Err(Error::Usage("plan needs NAME or -f FILE".into())),
    };
    let promotion = ClusterPromotion::decode(&object).map_err(|e| match &args.filename {
        Some(path) => Error::file(
            display(path),
            format!("not a ClusterPromotion the plan can read: {e}"),
        ),
        None => Error::Api {
            request: crate::error::Request::new("decode", crate::cluster::resources::PROMOTIONS),
            message: format!("the object does not match the ClusterPromotion schema: {e}"),
        },
    })?;
    let inventory = match (&args.clusters, &kube) {
        (Some(path), _) => manifests::inventory(&mut reader, path)?,
        (None, Some(kube)) => crate::cluster::inventory::list_fleet(kube, args.chunk_size).await?,
        (None, None) => Inventory::new(),
    };
    if inventory.deleting() > 0 {
        note(
            ctx,
            &format!(
                "{} being deleted left out (Sveltos matches only clusters that are not)",
                count(inventory.deleting(), "cluster", "clusters")
            ),
        );
    }
    if inventory.is_empty() {
        let source = match &args.clusters {
            Some(path) => display(path),
            None => "the cluster".to_string(),
        };
        super::warn(
            ctx,
            &format!(
                "no SveltosCluster or Cluster API Cluster in {source}: every stage matches no \
                 cluster"
            ),
        );
    }
    let clusters = inventory.into_clusters();
    if args.timeline {
        return timeline_and_print(ctx, args, &object, promotion.name(), &clusters);
    }
    let plan = plan::plan(&promotion, &clusters);
    let text = match args.output {
        Some(ModelFormat::Json) => output::to_json(&document(promotion.name(), &plan))?,
        Some(ModelFormat::Yaml) => output::to_yaml(&document(promotion.name(), &plan))?,
        None => render(
            promotion.name(),
            &plan,
            &Fleet::of(&clusters),
            &ctx.out,
            args.all_clusters,
        ),
    };
    ctx.write_out(&text)?;
    Ok(if args.strict && !plan.hazards.is_empty() {
        exit::HAZARDS
    } else {
        exit::OK
    })
}

/// `--timeline`: the rollout simulated from `--start`, on the object as the API server stores it
/// (a manifest gets the CRD's defaults first, as the hashes and generated profiles need).
fn timeline_and_print(
    ctx: &Ctx,
    args: &PlanArgs,
    object: &Value,
    name: &str,
    clusters: &[fleet::Cluster],
) -> Result<u8> {
    let zone: chrono_tz::Tz = args.window_time_zone.parse().map_err(|_| {
        Error::Usage(format!(
            "--window-time-zone {:?}: not an IANA time zone name (for example UTC, Europe/Paris)",
            args.window_time_zone
        ))
    })?;
    let start = match &args.start {
        Some(text) => chrono::DateTime::parse_from_rfc3339(text)
            .map_err(|e| Error::Usage(format!("--start {text:?}: not an RFC 3339 time: {e}")))?
            .with_timezone(&chrono::Utc),
        None => chrono::Utc::now(),
    };
    let mut approvals = args
        .approve_at
        .iter()
        .map(|a| timeline::parse_approval(a, start))
        .collect::<Result<Vec<_>>>()?;
    let stored = crate::view::as_stored(object);
    let (paused, aborted) = timeline::holds(&stored);
    if aborted.is_some() && !approvals.is_empty() {
        super::warn(
            ctx,
            &format!(
                "--approve-at is not simulated: {name}'s rollout is aborted, and no approval is \
                 used until it is retried"
            ),
        );
        approvals.clear();
    }
    if paused.is_some() && !approvals.is_empty() {
        // A paused promotion uses no approval: the simulation would stand still at the gate.
        super::warn(
            ctx,
            &format!(
                "--approve-at is not simulated: {name} is paused, and no approval is used until \
                 it is resumed"
            ),
        );
        approvals.clear();
    }
    let computed = timeline::compute(&stored, clusters, start, &approvals, zone)?;
    let document = || timeline::document(name, zone, &computed, paused.as_ref(), aborted.as_ref());
    let text = match args.output {
        Some(ModelFormat::Json) => output::to_json(&document())?,
        Some(ModelFormat::Yaml) => output::to_yaml(&document())?,
        None => timeline::render(
            name,
            &computed,
            zone,
            &ctx.out,
            paused.as_ref(),
            aborted.as_ref(),
        ),
    };
    ctx.write_out(&text)?;
    Ok(exit::OK)
}

fn document<'a>(name: &'a str, plan: &'a Plan) -> PlanDocument<'a> {
    PlanDocument {
        api_version: API_VERSION,
        kind: "PromotionPlan",
        name,
        plan,
    }
}

fn display(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// How many clusters of each type the inventory holds (for the header line).
struct Fleet {
    sveltos: usize,
    capi: usize,
}

impl Fleet {
    fn of(clusters: &[fleet::Cluster]) -> Fleet {
        let capi = clusters
            .iter()
            .filter(|c| c.cluster_type == ClusterType::Capi)
            .count();
        Fleet {
            sveltos: clusters.len() - capi,
            capi,
        }
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The human form: a header, one block per stage with its clusters, then the hazards.
fn render(name: &str, plan: &Plan, fleet: &Fleet, style: &Style, all_clusters: bool) -> String {
    let mut out = format!(
        "ClusterPromotion {}: {}, {} in the inventory ({}, {})\n",
        style.paint(name, Tone::Strong),
        count(plan.stages.len(), "stage", "stages"),
        count(plan.inventory, "cluster", "clusters"),
        count(fleet.sveltos, "SveltosCluster", "SveltosClusters"),
        count(fleet.capi, "Cluster API Cluster", "Cluster API Clusters"),
    );
    for (i, stage) in plan.stages.iter().enumerate() {
        out.push('\n');
        out.push_str(&stage_block(i, stage, style, all_clusters));
    }
    out.push('\n');
    if plan.unreached > 0 {
        out.push_str(&format!(
            "{} reached by no stage.\n",
            if plan.unreached == 1 {
                "1 cluster of the inventory is".to_string()
            } else {
                format!("{} clusters of the inventory are", plan.unreached)
            }
        ));
    }
    if plan.unreached > 0 {
        out.push('\n');
    }
    if plan.hazards.is_empty() {
        out.push_str("No hazards.\n");
    } else {
        out.push_str(&format!(
            "{}:\n",
            count(plan.hazards.len(), "hazard", "hazards")
        ));
        for h in &plan.hazards {
            out.push_str(&format!(
                "  {} {}\n",
                style.paint(&format!("warning[{}]", h.code), Tone::Waiting),
                h.message
            ));
        }
    }
    out
}

fn stage_block(index: usize, stage: &StagePlan, style: &Style, all_clusters: bool) -> String {
    let selector = match (&stage.selector_error, stage.selector.is_empty()) {
        (Some(_), true) => "(no selector: matches no cluster)".to_string(),
        (Some(err), false) => format!("{}   (invalid: {err})", stage.selector),
        (None, _) => stage.selector.clone(),
    };
    let mut reach = if stage.count == 0 {
        style.paint("no cluster", Tone::Bad)
    } else {
        count(stage.count, "cluster", "clusters")
    };
    if let Some(skipped) = render::skipped_clusters(stage.paused, stage.not_ready) {
        reach.push_str(&format!(": {}", style.paint(&skipped, Tone::Waiting)));
    }
    let mut out = format!(
        "{}. {}   {selector}   → {reach}\n",
        index + 1,
        style.paint(&stage.name, Tone::Strong)
    );
    if stage.clusters.is_empty() {
        return out;
    }
    let shown = rows_to_show(&stage.clusters, all_clusters);
    let with_shard = stage.clusters.iter().any(|c| c.shard.is_some());
    let with_note = stage
        .clusters
        .iter()
        .any(|c| !c.reached_earlier_by.is_empty());
    let mut headers = vec!["CLUSTER", "TYPE", "MATCHED", "STATUS"];
    if with_shard {
        headers.push("SHARD");
    }
    if with_note {
        headers.push("NOTE");
    }
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|c| {
            let mut row = vec![
                format!("{}/{}", c.namespace, c.name),
                c.cluster_type.to_string(),
                c.matched_labels
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(","),
                status(c, style),
            ];
            if with_shard {
                row.push(c.shard.clone().unwrap_or_else(|| "-".into()));
            }
            if with_note {
                row.push(if c.reached_earlier_by.is_empty() {
                    String::new()
                } else {
                    format!("reached at {}", c.reached_earlier_by[0])
                });
            }
            row
        })
        .collect();
    for line in table::render(&headers, &rows, false).lines() {
        out.push_str("   ");
        out.push_str(line);
        out.push('\n');
    }
    let hidden = stage.clusters.len() - shown.len();
    if hidden > 0 {
        out.push_str(&format!(
            "   … and {hidden} more (--all-clusters lists every cluster)\n"
        ));
    }
    out
}

fn status(c: &PlannedCluster, style: &Style) -> String {
    match (c.paused, c.ready) {
        (false, true) => style.paint("ready", Tone::Good),
        (false, false) => style.paint("not ready", Tone::Waiting),
        (true, true) => style.paint("paused", Tone::Waiting),
        (true, false) => style.paint("paused, not ready", Tone::Waiting),
    }
}

fn needs_attention(c: &PlannedCluster) -> bool {
    c.paused || !c.ready || !c.reached_earlier_by.is_empty()
}

/// Every cluster, or at most [`ROWS_PER_STAGE`]: those that need attention first, then the
/// others, shown in plan order.
fn rows_to_show(clusters: &[PlannedCluster], all: bool) -> Vec<&PlannedCluster> {
    if all || clusters.len() <= ROWS_PER_STAGE {
        return clusters.iter().collect();
    }
    let flagged = clusters.iter().filter(|c| needs_attention(c)).count();
    let mut room_for_others = ROWS_PER_STAGE.saturating_sub(flagged);
    let mut room_for_flagged = ROWS_PER_STAGE;
    clusters
        .iter()
        .filter(|c| {
            if needs_attention(c) {
                let keep = room_for_flagged > 0;
                room_for_flagged = room_for_flagged.saturating_sub(1);
                keep
            } else {
                let keep = room_for_others > 0;
                room_for_others = room_for_others.saturating_sub(1);
                keep
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use promotion_shared::fleet::Cluster;
    use promotion_shared::model::ClusterPromotion;
    use serde_json::json;

    fn fleet() -> Vec<Cluster> {
        let mut out: Vec<Cluster> = (0..30)
            .map(|i| Cluster {
                cluster_type: ClusterType::Sveltos,
                namespace: "prod".into(),
                name: format!("c{i:02}"),
                labels: [("env".to_string(), "prod".to_string())].into(),
                paused: i == 25,
                ready: i != 27,
                shard: None,
            })
            .collect();
        out.push(Cluster {
            cluster_type: ClusterType::Capi,
            namespace: "dev".into(),
            name: "d1".into(),
            labels: [("env".to_string(), "dev".to_string())].into(),
            paused: false,
            ready: true,
            shard: Some("s1".into()),
        });
        out
    }

    fn promotion(prod: &str) -> ClusterPromotion {
        serde_json::from_value(json!({
            "metadata": {"name": "rollout"},
            "spec": {"stages": [
                {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}},
                {"name": "production", "clusterSelector": {"matchLabels": {"env": prod}}},
                {"name": "audit"}
            ]}
        }))
        .unwrap()
    }

    #[test]
    fn table_per_stage_with_problems_first_when_truncated() {
        let clusters = fleet();
        let p = plan::plan(&promotion("prod"), &clusters);
        let text = render("rollout", &p, &Fleet::of(&clusters), &Style::plain(), false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "ClusterPromotion rollout: 3 stages, 31 clusters in the inventory (30 SveltosClusters, 1 Cluster API Cluster)"
        );
        assert_eq!(lines[2], "1. dev   env=dev   → 1 cluster");
        assert_eq!(lines[3], "   CLUSTER   TYPE   MATCHED   STATUS   SHARD");
        assert_eq!(lines[4], "   dev/d1    Capi   env=dev   ready    s1");
        assert!(text.contains("2. production   env=prod   → 30 clusters: 1 paused, 1 not ready\n"));
        assert!(
            text.contains("   prod/c25   Sveltos   env=prod   paused\n"),
            "{text}"
        );
        assert!(text.contains("   prod/c27   Sveltos   env=prod   not ready\n"));
        assert!(
            !text.contains("prod/c20 "),
            "only 18 unflagged rows fit: {text}"
        );
        assert!(text.contains("   … and 10 more (--all-clusters lists every cluster)\n"));
        assert!(text.contains("3. audit   (no selector: matches no cluster)   → no cluster\n"));
        assert!(text.contains("\n\n3 hazards:\n  warning[cluster-paused] 1 of stage production's"));
        assert!(text
            .contains("\n  warning[stage-matches-no-cluster] stage audit has no clusterSelector"));
        let all = render("rollout", &p, &Fleet::of(&clusters), &Style::plain(), true);
        assert!(all.contains("prod/c29"));
        assert!(!all.contains("more (--all-clusters"));
    }

    #[test]
    fn json_document_has_identity_and_the_plan() {
        let clusters = fleet();
        let p = plan::plan(&promotion("production"), &clusters);
        let v: Value =
            serde_json::from_str(&output::to_json(&document("rollout", &p)).unwrap()).unwrap();
        assert_eq!(v["apiVersion"], API_VERSION);
        assert_eq!(v["kind"], "PromotionPlan");
        assert_eq!(v["name"], "rollout");
        assert_eq!(v["stages"][1]["count"], 0);
        assert_eq!(v["unreached"], 30);
        assert_eq!(v["hazards"][1]["code"], "selector-typo");
        assert_eq!(v["hazards"][1]["suggestion"]["with"], "env=prod");
    }
}
