//! `list` (alias `get`): every ClusterPromotion with its stage, state and pending gate.

use std::io::Write;

use clap::Args;

use serde::Serialize;
use serde_json::Value;

use promotion_shared::model::{ClusterPromotion, ProfileRole};
use promotion_shared::pipeline::{self, Phase};

use super::{warn, Ctx};
use crate::duration;
use crate::error::{exit, Error, Result};
use crate::output::{self, ListFormat};
use crate::render::{table, Style};
use crate::view::{self, API_VERSION};

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
    let objects = kube.list_promotions(args.selector.as_deref()).await?;
    let mut promotions: Vec<ClusterPromotion> =
        objects.iter().map(view::typed).collect::<Result<_>>()?;
    promotions.sort_by(|a, b| a.name().cmp(b.name()));

    // Failure is only visible in the frontier stage's ClusterSummaries: read those (one request
    // for all promotions), so that STATE agrees with `describe`.
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
    let summaries = match kube.list_summaries(&frontier).await {
        Ok(s) => Some(s),
        Err(e) => {
            warn(ctx, &format!("{e}; STATE cannot show clusters that failed"));
            None
        }
    };
    let rows: Vec<Row> = promotions
        .iter()
        .map(|p| row(p, summaries.as_deref()))
        .collect();
    let text = render(&rows, args, &ctx.out, ctx.now())?;
    if rows.is_empty() && args.output.is_none_or(|o| o == ListFormat::Wide) {
        eprintln!("No resources found");
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .map_err(|e| Error::Io(format!("writing output: {e}")))?;
    Ok(exit::OK)
}

pub fn row(p: &ClusterPromotion, summaries: Option<&[Value]>) -> Row {
    let obs = summaries.map(|s| view::observations(p, &[], s));
    let pl = pipeline::derive(
        p,
        obs.as_ref(),
        &promotion_shared::freshness::Freshness::Current,
    );
    let frontier = pl.frontier();
    let awaiting = pl.awaiting_approval();
    let message = match &pl.note {
        Some(n) => Some(n.clone()),
        None => frontier.and_then(|f| match &f.state {
            pipeline::StageState::Failed { message, .. } => Some(message.clone()),
            _ => f
                .current_status_description
                .clone()
                .or_else(|| f.failure_message.clone()),
        }),
    };
    Row {
        name: p.name().to_string(),
        stages: p.spec.stages.len(),
        reached_stages: p.stage_statuses().len(),
        current_stage: pl.current_stage.clone(),
        phase: pl.phase.clone(),
        awaiting_approval: awaiting.map(|s| s.name.clone()),
        approve_unblocks: awaiting.and_then(view::transition),
        creation_timestamp: p
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        last_promotion_time: p
            .status
            .as_ref()
            .and_then(|s| s.last_promotion_time.clone()),
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

    fn promotion(status: Value) -> ClusterPromotion {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "creationTimestamp": "2026-02-16T07:00:00Z"},
            "spec": {"stages": [
                {"name": "dev", "trigger": {"auto": {}}},
                {"name": "staging", "trigger": {"manual": {}}},
                {"name": "prod"}
            ]},
            "status": status
        }))
        .unwrap()
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
        let p = promotion(json!({"currentStageName": "staging", "stages": [
            {"name": "dev", "lastSuccessfulAppliedTime": "2026-02-16T07:27:41Z"},
            {"name": "staging", "lastSuccessfulAppliedTime": "2026-02-16T07:34:02Z",
             "currentStatusDescription": "Paused: Awaiting Manual Approval (2026-02-16T07:38:02Z)"}]}));
        let r = row(&p, Some(&[]));
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
        let r = row(&promotion(json!({})), None);
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
        let json: Value = serde_json::from_str(
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
