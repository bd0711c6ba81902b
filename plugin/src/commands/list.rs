//! `list` (alias `get`): every ClusterPromotion with its stage, state and pending gate.

use std::collections::BTreeMap;

use clap::Args;

use serde::Serialize;

use promotion_shared::model::{ClusterPromotion, ProfileRole};
use promotion_shared::pipeline::{self, Phase};

use super::{warn, Ctx};
use crate::cluster::fetch;
use crate::cluster::kube_client::Kube;
use crate::cluster::watch::{FleetFollower, Update};
use crate::duration;
use crate::error::{exit::plain as exit, Error, Result};
use crate::render::output;
use crate::render::printers::{FormatArg, OutputFormat, PrintOptions, Target, LIST_FORMATS};
use crate::render::{table, Style};
use crate::view::{self, SnapshotRef, API_VERSION};

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
  kubectl promotion list --watch
  kubectl promotion list -o json | jq '.items[] | select(.phase == \"awaitingApproval\") | .name'
  kubectl promotion list -o jsonpath='{range .items[*]}{.name}{\"\\t\"}{.phase}{\"\\n\"}{end}'
  kubectl promotion list -o custom-columns=NAME:.name,GATE:.approveUnblocks"
)]
pub struct ListArgs {
    /// Label selector to filter ClusterPromotions (e.g. team=platform,env!=dev)
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Output format: json, yaml, name, wide, or a kubectl template (jsonpath=…, jsonpath-file=…,
    /// jsonpath-as-json=…, custom-columns=…, custom-columns-file=…) over the rows as -o json
    /// prints them
    #[arg(short = 'o', long = "output", value_name = "FORMAT",
          value_parser = FormatArg(LIST_FORMATS))]
    pub output: Option<String>,
    /// Do not print the header row
    #[arg(long)]
    pub no_headers: bool,
    /// With a jsonpath template, print nothing for a missing field instead of failing
    /// (custom-columns print <none> for it either way, as kubectl does)
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set, value_name = "BOOL")]
    pub allow_missing_template_keys: bool,
    /// After listing, keep watching: print a promotion's row again each time it changes (its
    /// phase, stage, gate or message), as `kubectl get --watch` does
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// Like --watch, without the initial listing
    #[arg(long)]
    pub watch_only: bool,
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
    let format = OutputFormat::of_flag(args.output.as_deref(), LIST_FORMATS)?;
    let kube = ctx.kube().await?;
    if args.watch || args.watch_only {
        return watch(ctx, args, &format, &kube).await;
    }
    let (rows, warnings) = rows(&kube, args.selector.as_deref()).await?;
    for w in &warnings {
        warn(ctx, w);
    }
    let text = render(&rows, &format, options(args), &ctx.out, ctx.now())?;
    if rows.is_empty() && matches!(format, OutputFormat::Default | OutputFormat::Wide) {
        eprintln!("No resources found");
    }
    ctx.write_out(&text)?;
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
    // Unfiltered, the list is every promotion, so an owner not in it is gone.
    let owners = match selector {
        None => view::Owners::of_all(&objects),
        Some(_) => {
            let all: Vec<&ClusterPromotion> = promotions.iter().collect();
            fetch::owners(kube, &all, profiles.as_deref().unwrap_or_default()).await
        }
    };
    let mut warnings = Vec::new();
    // The reason stays with the read: the view tells a read that failed from `describe -f`
    // (nothing read), so a phase that needs the clusters is "unknown", not a guess.
    let profiles = profiles.map_err(|e| {
        let why = e.read_failure();
        warnings.push(format!(
            "ClusterProfiles: {why}: STATE cannot tell a change not picked up yet from one that is"
        ));
        why
    });
    let summaries = summaries.map_err(|e| {
        let why = e.read_failure();
        warnings.push(format!(
            "ClusterSummaries: {why}: STATE cannot show clusters that failed"
        ));
        why
    });
    let mut rows = Vec::new();
    for object in &objects {
        let snap = SnapshotRef {
            object,
            profiles: view::shared(&profiles),
            summaries: view::shared(&summaries),
            events: Err(""),
            owners: &owners,
        };
        rows.push(row(&view::Description::build_shared(snap)?));
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((rows, warnings))
}

/// Rows as the promotions change, like `kubectl get --watch`: the table first (unless
/// `--watch-only`), then each changed row, aligned with the table while it fits; a deleted
/// promotion's last row says `deleted`. Structured formats print each changed row as an object.
/// Runs until interrupted; a lost connection is said on stderr and retried. The follower hands
/// out a state once per burst of events ([`FleetFollower`]), and nothing while nothing changes.
async fn watch(ctx: &Ctx, args: &ListArgs, format: &OutputFormat, kube: &Kube) -> Result<u8> {
    let mut follower = FleetFollower::start(kube, args.selector.as_deref()).await?;
    let wide = *format == OutputFormat::Wide;
    let headers = headers(wide);
    let mut columns = table::Columns::new(&headers, args.no_headers);
    let mut header_printed = args.no_headers;
    let mut shown: BTreeMap<String, Row> = BTreeMap::new();
    // What each table row printed last, its times as timestamps (a clock ticking is no change):
    // a row is printed again only when its text would change, not when a column the table does
    // not show did.
    let table = matches!(format, OutputFormat::Wide | OutputFormat::Default);
    let printed_as = |r: &Row| {
        cells(
            r,
            wide,
            &Style { color: false },
            chrono::DateTime::UNIX_EPOCH,
        )
    };
    let mut printed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut first = true;
    let mut lost = false;
    loop {
        let fleet = match follower.next().await? {
            Update::Changed(fleet) => fleet,
            Update::ConnectionLost(reason) => {
                warn(ctx, &format!("connection lost, retrying… ({reason})"));
                lost = true;
                continue;
            }
        };
        // The watches are back (after a restart of the API server, say): what follows is
        // current again, and the user watching the warning above should know. A resumed watch
        // yields nothing by itself, so this is said with the first change or re-list after it.
        if std::mem::take(&mut lost) {
            super::note(ctx, "reconnected: watching again");
        }
        // Only the rows whose promotion, profiles or clusters changed are computed again: a
        // ClusterSummary event of one rollout leaves the other promotions' rows as they were.
        let mut now: BTreeMap<String, Row> = BTreeMap::new();
        for object in &fleet.objects {
            let name = object
                .pointer("/metadata/name")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default();
            let r = match shown.get(name) {
                Some(r) if !fleet.affects(name) => r.clone(),
                _ => row(&view::Description::build_shared(fleet.snapshot(object))?),
            };
            now.insert(r.name.clone(), r);
        }
        let mut changed: Vec<(Row, bool)> = now
            .values()
            .filter(|r| shown.get(&r.name) != Some(r))
            .map(|r| (r.clone(), false))
            .collect();
        changed.extend(
            shown
                .values()
                .filter(|r| !now.contains_key(&r.name))
                .map(|r| (r.clone(), true)),
        );
        changed.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        if table {
            changed.retain(|(r, deleted)| *deleted || printed.get(&r.name) != Some(&printed_as(r)));
        }
        shown = now;
        let print_these = !(first && args.watch_only);
        if first && shown.is_empty() && print_these {
            eprintln!("No resources found");
        }
        first = false;
        for (r, deleted) in &changed {
            if *deleted {
                printed.remove(&r.name);
            } else {
                printed.insert(r.name.clone(), printed_as(r));
            }
        }
        if changed.is_empty() || !print_these {
            continue;
        }
        let text = match format {
            OutputFormat::Json => changed
                .iter()
                .map(|(r, _)| output::to_json(r))
                .collect::<Result<String>>()?,
            OutputFormat::Yaml => changed
                .iter()
                .map(|(r, _)| output::to_yaml(r).map(|y| format!("---\n{y}")))
                .collect::<Result<String>>()?,
            OutputFormat::Name => changed
                .iter()
                .map(|(r, _)| output::resource_name(&r.name) + "\n")
                .collect(),
            // As `kubectl get -w` prints each changed object through the template.
            OutputFormat::JsonPath { .. } | OutputFormat::CustomColumns(_) => {
                let mut text = String::new();
                for (r, _) in &changed {
                    let row = serde_json::to_value(r).map_err(|e| Error::Io(e.to_string()))?;
                    let once = PrintOptions {
                        no_headers: header_printed,
                        ..options(args)
                    };
                    header_printed = true;
                    text.push_str(
                        &format
                            .print(Target::Object(&row), once)?
                            .unwrap_or_default(),
                    );
                }
                text
            }
            OutputFormat::Wide | OutputFormat::Default => {
                let cells: Vec<Vec<String>> = changed
                    .iter()
                    .map(|(r, deleted)| {
                        let mut c = cells(r, wide, &ctx.out, ctx.now());
                        if *deleted {
                            c[3] = "deleted".into();
                        }
                        c
                    })
                    .collect();
                columns.fit(&cells);
                let mut text = String::new();
                if !header_printed {
                    let h: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
                    text.push_str(&columns.line(&h));
                    header_printed = true;
                }
                for c in &cells {
                    text.push_str(&columns.line(c));
                }
                text
            }
        };
        ctx.write_out(&text)?;
    }
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
        .map(|why| {
            format!(
                "{} has not picked up the latest change yet: {why}",
                d.reconciler
            )
        })
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
    // The pause first: it is why nothing moves, whatever the frontier stage says.
    let message = match d.paused.as_ref().filter(|_| d.deleting.is_none()) {
        Some(p) => Some(match message {
            Some(m) => format!("{}; {m}", p.pause.describe()),
            None => p.pause.describe(),
        }),
        None => message,
    };
    // An abort holds the rollout over a pause: said first.
    let message = match d.aborted.as_ref().filter(|_| d.deleting.is_none()) {
        Some(a) => Some(match message {
            Some(m) => format!("{}; {m}", a.abort.describe()),
            None => a.abort.describe(),
        }),
        None => message,
    };
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

fn options(args: &ListArgs) -> PrintOptions {
    PrintOptions {
        allow_missing_template_keys: args.allow_missing_template_keys,
        no_headers: args.no_headers,
    }
}

pub fn render(
    rows: &[Row],
    format: &OutputFormat,
    options: PrintOptions,
    style: &Style,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<String> {
    match format {
        OutputFormat::Json => output::to_json(&list(rows)),
        OutputFormat::Yaml => output::to_yaml(&list(rows)),
        OutputFormat::Name => Ok(rows
            .iter()
            .map(|r| output::resource_name(&r.name) + "\n")
            .collect()),
        OutputFormat::JsonPath { .. } | OutputFormat::CustomColumns(_) => {
            let items = rows
                .iter()
                .map(serde_json::to_value)
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| Error::Io(e.to_string()))?;
            Ok(format
                .print(Target::List(items.into()), options)?
                .unwrap_or_default())
        }
        OutputFormat::Wide | OutputFormat::Default => {
            let wide = *format == OutputFormat::Wide;
            if rows.is_empty() {
                return Ok(String::new());
            }
            let cells: Vec<Vec<String>> = rows.iter().map(|r| cells(r, wide, style, now)).collect();
            Ok(table::render(&headers(wide), &cells, options.no_headers))
        }
    }
}

fn headers(wide: bool) -> Vec<&'static str> {
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
    headers
}

fn cells(r: &Row, wide: bool, style: &Style, now: chrono::DateTime<chrono::Utc>) -> Vec<String> {
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
    use crate::view::Snapshot;
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
            owners: Default::default(),
        };
        row(&view::Description::build(&snap).unwrap())
    }

    fn text(r: &[Row], output: &str, no_headers: bool) -> String {
        let format = OutputFormat::of_flag(Some(output), LIST_FORMATS).unwrap();
        let options = PrintOptions {
            no_headers,
            ..PrintOptions::default()
        };
        render(r, &format, options, &Style::plain(), now()).unwrap()
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
        let text = text(&[r], "", false);
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
        let rows = std::slice::from_ref(&r);
        assert_eq!(
            text(rows, "name", false),
            "clusterpromotion.config.projectsveltos.io/p\n"
        );
        let json: serde_json::Value = serde_json::from_str(&text(rows, "json", false)).unwrap();
        assert_eq!(json["kind"], "PromotionList");
        assert_eq!(json["items"][0]["phase"], "notStarted");
        assert_eq!(
            text(rows, "jsonpath={.items[*].phase}", false),
            "notStarted"
        );
        assert_eq!(
            text(
                rows,
                "custom-columns=NAME:.name,STATE:.phase,GATE:.approveUnblocks",
                false
            ),
            "NAME   STATE        GATE\np      notStarted   <none>\n"
        );
        let wide = text(rows, "wide", true);
        assert!(wide.starts_with("p   0/3   -   not started   -   120m   -   not reconciled yet"));
    }
}
