//! `list` (alias `get`): every ClusterPromotion with its stage, state and pending gate.

use std::io::Write;

use clap::Args;

use serde::Serialize;

use promotion_shared::model::{ClusterPromotion, ProfileRole};
use promotion_shared::pipeline::{self, Phase};

use super::{warn, Ctx};
use crate::duration;
use crate::error::{exit, Error, Result};
use crate::kube_client::Kube;
use crate::output::{self, ListFormat};
use crate::render::{table, Style};
use crate::view::{self, Snapshot, API_VERSION};

#[derive(Args, Debug)]
#[command(
    visible_alias = "get",
    about = "List ClusterPromotions with their current stage and state",
    after_help = "\
Columns: NAME, STAGES (reached/total), CURRENT (stage), STATE (pipeline phase),
AWAITING-APPROVAL (the gate to approve, as stage → next), AGE. -o wide adds the frontier
stage's message and the last promotion time.

Examples:
  kubectl promotion list
  kubectl promotion get -l team=platform -o wide
  kubectl promotion list -o name | xargs -n1 kubectl promotion describe
  kubectl promotion list -o json | jq '.items[] | select(.phase == \"awaitingApproval\") | .name'"
)]
pub struct ListArgs {
    /// Label selector to filter ClusterPromotions (e.g. team=platform,env!=dev)
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Output format
    #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
    pub output: Option<ListFormat>,
    /// Do not print the header row
    #[arg(long)]
    pub no_headers: bool,
}

/// One row, and one item of `-o json|yaml` (field reference: plugin/docs/output.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub name: String,
    pub stages: usize,
    pub reached_stages: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_stage: Option<String>,
    pub phase: Phase,
    /// The stage whose gate waits for approval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub awaiting_approval: Option<String>,
    /// `stage → next`, the transition approving it unblocks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approve_unblocks: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_promotion_time: Option<String>,
    /// The frontier stage's status description or failure (or why the status is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RowList<'a> {
    api_version: &'static str,
    kind: &'static str,
    items: &'a [Row],
}

pub async fn run(ctx: &Ctx, args: &ListArgs) -> Result<u8> {
    let kube = ctx.kube().await?;
    let (rows, warnings) = rows(&kube, args.selector.as_deref()).await?;
    for w in &warnings {
        warn(ctx, w);
    }
    let text = render(&rows, args, &ctx.out, ctx.now())?;
    if rows.is_empty() && args.output.is_none_or(|o| o == ListFormat::Wide) {
        eprintln!("No resources found");
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .map_err(|e| Error::Io(format!("writing output: {e}")))?;
    Ok(exit::OK)
}

/// Every ClusterPromotion (matching `selector`) as a row, by name, computed by the same view
/// model as `describe` from the same kinds of objects: the promotions, the ClusterProfiles
/// Sveltos generated (the first stage's tells whether a change was picked up) and the
/// ClusterSummaries of each frontier stage (a stage's state depends on no other clusters). Also
/// what could not be read, for a warning.
pub async fn rows(kube: &Kube, selector: Option<&str>) -> Result<(Vec<Row>, Vec<String>)> {
    let objects = kube.list_promotions(selector).await?;
    let promotions: Vec<ClusterPromotion> =
        objects.iter().map(view::typed).collect::<Result<_>>()?;
    let frontier: Vec<String> = promotions
        .iter()
        .filter_map(|p| {
            let stage = &p.stage_statuses().last()?.name;
            p.generated_profiles()
                .into_iter()
                .find(|g| &g.stage == stage && g.role == ProfileRole::Stage)
                .map(|g| g.name)
        })
        .collect();
    let (profiles, summaries) = tokio::join!(
        kube.list_promotion_profiles(),
        kube.list_summaries(&frontier)
    );
    let mut warnings = Vec::new();
    let profiles = profiles.map_err(|e| {
        warnings.push(format!(
            "ClusterProfiles {}: STATE cannot tell a change Sveltos has not picked up yet",
            e.unreadable()
        ));
        String::new()
    });
    let summaries = summaries.map_err(|e| {
        warnings.push(format!(
            "ClusterSummaries {}: STATE cannot show clusters that failed",
            e.unreadable()
        ));
        String::new()
    });
    let mut rows = Vec::new();
    for object in objects {
        let snap = Snapshot {
            object,
            profiles: profiles.clone(),
            summaries: summaries.clone(),
            events: Err(String::new()),
        };
        rows.push(row(&view::Description::build(&snap)?));
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((rows, warnings))
}

/// The row of a promotion, from its description.
pub fn row(d: &view::Description) -> Row {
    let frontier = d
        .stages
        .iter()
        .rev()
        .find(|s| s.view.state != pipeline::StageState::NotStarted);
    let message = d
        .stale
        .as_ref()
        .map(|why| format!("Sveltos has not picked up the latest change yet: {why}"))
        .or_else(|| d.note.clone())
        .or_else(|| {
            frontier.and_then(|f| match &f.view.state {
                pipeline::StageState::Failed { message, .. }
                | pipeline::StageState::Blocked { message } => Some(message.clone()),
                _ => f
                    .view
                    .current_status_description
                    .clone()
                    .or_else(|| f.view.failure_message.clone()),
            })
        });
    let awaiting = d.stages.iter().find(|s| s.approve_unblocks.is_some());
    Row {
        name: d.name.clone(),
        stages: d.stages.len(),
        reached_stages: d
            .stages
            .iter()
            .filter(|s| s.view.state != pipeline::StageState::NotStarted)
            .count(),
        current_stage: d.current_stage.clone(),
        phase: d.phase.clone(),
        awaiting_approval: awaiting.map(|s| s.view.name.clone()),
        approve_unblocks: awaiting.and_then(|s| s.approve_unblocks.clone()),
        creation_timestamp: d.creation_timestamp.clone(),
        last_promotion_time: d.last_promotion_time.clone(),
        message,
    }
}

pub fn render(
    rows: &[Row],
    args: &ListArgs,
    style: &Style,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<String> {
    match args.output {
        Some(ListFormat::Json) => output::to_json(&list(rows)),
        Some(ListFormat::Yaml) => output::to_yaml(&list(rows)),
        Some(ListFormat::Name) => Ok(rows
            .iter()
            .map(|r| output::resource_name(&r.name) + "\n")
            .collect()),
        Some(ListFormat::Wide) | None => {
            let wide = args.output == Some(ListFormat::Wide);
            let mut headers = vec![
                "NAME",
                "STAGES",
                "CURRENT",
                "STATE",
                "AWAITING-APPROVAL",
                "AGE",
            ];
            if wide {
                headers.extend(["LAST-PROMOTION", "MESSAGE"]);
            }
            if rows.is_empty() {
                return Ok(String::new());
            }
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|r| {
                    let mut c = vec![
                        r.name.clone(),
                        format!("{}/{}", r.reached_stages, r.stages),
                        r.current_stage.clone().unwrap_or_else(|| "-".into()),
                        style.phase(&r.phase),
                        r.approve_unblocks.clone().unwrap_or_else(|| "-".into()),
                        duration::age(r.creation_timestamp.as_deref(), now),
                    ];
                    if wide {
                        c.push(duration::age(r.last_promotion_time.as_deref(), now));
                        c.push(r.message.clone().unwrap_or_else(|| "-".into()));
                    }
                    c
                })
                .collect();
            Ok(table::render(&headers, &cells, args.no_headers))
        }
    }
}

fn list(rows: &[Row]) -> RowList<'_> {
    RowList {
        api_version: API_VERSION,
        kind: "PromotionList",
        items: rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The row of a promotion with `status`, read with no cluster data (as when the
    /// ClusterProfiles and ClusterSummaries are not readable), or with an empty cluster view.
    fn row_of(status: serde_json::Value, online: bool) -> Row {
        let object = json!({
            "metadata": {"name": "p", "creationTimestamp": "2026-02-16T07:00:00Z"},
            "spec": {"stages": [
                {"name": "dev", "trigger": {"auto": {}}},
                {"name": "staging", "trigger": {"manual": {}}},
                {"name": "prod"}
            ]},
            "status": status
        });
        let cluster_data = || {
            if online {
                Ok(vec![])
            } else {
                Err(String::new())
            }
        };
        let snap = Snapshot {
            object,
            profiles: cluster_data(),
            summaries: cluster_data(),
            events: Err(String::new()),
        };
        row(&view::Description::build(&snap).unwrap())
    }

    fn args(output: Option<ListFormat>, no_headers: bool) -> ListArgs {
        ListArgs {
            selector: None,
            output,
            no_headers,
        }
    }

    fn now() -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::parse_from_rfc3339("2026-02-16T09:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc)
    }

    #[test]
    fn awaiting_approval_row() {
        let r = row_of(
            json!({"currentStageName": "staging", "stages": [
            {"name": "dev", "lastSuccessfulAppliedTime": "2026-02-16T07:27:41Z"},
            {"name": "staging", "lastSuccessfulAppliedTime": "2026-02-16T07:34:02Z",
             "currentStatusDescription": "Paused: Awaiting Manual Approval (2026-02-16T07:38:02Z)"}]}),
            true,
        );
        let text = render(&[r], &args(None, false), &Style::plain(), now()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "NAME   STAGES   CURRENT   STATE               AWAITING-APPROVAL   AGE"
        );
        assert_eq!(
            lines[1],
            "p      2/3      staging   awaiting approval   staging → prod      120m"
        );
    }

    #[test]
    fn formats() {
        let r = row_of(json!({}), false);
        assert_eq!(r.phase, Phase::NotStarted);
        assert!(r
            .message
            .as_deref()
            .unwrap()
            .starts_with("not reconciled yet"));
        let name = render(
            std::slice::from_ref(&r),
            &args(Some(ListFormat::Name), false),
            &Style::plain(),
            now(),
        )
        .unwrap();
        assert_eq!(name, "clusterpromotion.config.projectsveltos.io/p\n");
        let json: serde_json::Value = serde_json::from_str(
            &render(
                std::slice::from_ref(&r),
                &args(Some(ListFormat::Json), false),
                &Style::plain(),
                now(),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(json["kind"], "PromotionList");
        assert_eq!(json["items"][0]["phase"], "notStarted");
        let wide = render(
            std::slice::from_ref(&r),
            &args(Some(ListFormat::Wide), true),
            &Style::plain(),
            now(),
        )
        .unwrap();
        assert!(wide.starts_with("p   0/3   -   not started   -   120m   -   not reconciled yet"));
    }
}
