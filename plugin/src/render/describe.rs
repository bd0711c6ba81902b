//! The human `describe` view: a header, the pipeline on one line, one block per stage, then
//! approvals, the last spec change, Events and anything that could not be read.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use promotion_shared::admission::used_approvals::UsedApproval;
use promotion_shared::admission::{ApprovalRecord, RemovalHow, RemovalRecord, ResetFlipRecord};
use promotion_shared::cluster_summary::ClusterState;
use promotion_shared::pipeline::{Approval, Phase, StageState, StageView, TriggerKind};
use promotion_shared::status_writer::CONTROLLER_FIELD_MANAGER;

use super::{table, Style, Tone};
use crate::duration;
use crate::view::{Description, Running, StageDetail, WillReach};

/// How many clusters a stage lists before summarising (unless `--all-clusters`).
pub const CLUSTER_LIST_LIMIT: usize = 10;

pub struct Options {
    pub all_clusters: bool,
    pub now: DateTime<Utc>,
}

const LABEL_WIDTH: usize = 15;

fn field(out: &mut String, indent: usize, label: &str, value: &str) {
    let label = format!("{label}:");
    let _ = writeln!(
        out,
        "{:indent$}{label:<width$} {value}",
        "",
        indent = indent,
        width = LABEL_WIDTH
    );
}

fn when(t: Option<&str>, now: DateTime<Utc>) -> Option<String> {
    let t = t?;
    let parsed = DateTime::parse_from_rfc3339(t).ok()?;
    let delta = now.signed_duration_since(parsed);
    Some(if delta.num_seconds() >= 0 {
        format!("{t} ({} ago)", duration::human(delta))
    } else {
        format!("{t} (in {})", duration::human(-delta))
    })
}

pub fn render(d: &Description, style: &Style, opts: &Options) -> String {
    let mut out = String::new();
    field(&mut out, 0, "Name", &style.paint(&d.name, Tone::Strong));
    let mut phase = style.phase(&d.phase);
    if let Some(why) = crate::view::unknown_because(d) {
        phase.push_str(&format!(" ({why}: see Warnings)"));
    }
    if let Some(b) = &d.reconciler_blocked {
        phase.push_str(&style.paint(
            &format!(" — promotion-controller {}: see Next step", b.kind),
            Tone::Bad,
        ));
    }
    field(&mut out, 0, "Phase", &phase);
    if let Some(paused) = &d.paused {
        let mut line = paused.explain(&d.name);
        if d.deleting.is_some() {
            line.push_str(" (the deletion proceeds regardless)");
        }
        // Set by hand or by a tool: another writer of the status does not read the annotation.
        if d.foreign_status_writer {
            line.push_str(
                " (but only promotion-controller honours the pause, and it does not run this \
                 promotion: see Reconciled by)",
            );
        }
        field(&mut out, 0, "Paused", &style.paint(&line, Tone::Waiting));
    }
    if let Some(aborted) = &d.aborted {
        let mut line = aborted.explain(&d.name);
        if d.foreign_status_writer {
            line.push_str(
                " (but only promotion-controller honours the abort, and it does not run this \
                 promotion: see Reconciled by)",
            );
        }
        field(&mut out, 0, "Aborted", &style.paint(&line, Tone::Waiting));
    }
    let reconciler_tone = if d.foreign_status_writer {
        Tone::Waiting
    } else {
        Tone::Plain
    };
    field(
        &mut out,
        0,
        "Reconciled by",
        &style.paint(&d.reconciled_by, reconciler_tone),
    );
    if let Some(stage) = &d.current_stage {
        field(&mut out, 0, "Current stage", stage);
    }
    if let Some(t) = when(d.last_promotion_time.as_deref(), opts.now) {
        // `lastPromotionTime` is set when a stage is started, the first one included (§11.2):
        // until a second stage is reached it is when the rollout started, not a promotion.
        let reached = d
            .stages
            .iter()
            .filter(|s| s.view.state != StageState::NotStarted)
            .count();
        let label = if reached > 1 {
            "Last promotion"
        } else {
            "Rollout start"
        };
        field(&mut out, 0, label, &t);
    }
    if let Some(note) = &d.note {
        field(
            &mut out,
            0,
            "Status",
            &style.paint(&format!("empty: {note}"), Tone::Waiting),
        );
    }
    if let Some(why) = &d.stale {
        field(
            &mut out,
            0,
            "Status",
            &style.paint(
                &format!(
                    "{} has not picked up this change yet: the status below is from the \
                     previous rollout ({why})",
                    d.reconciler
                ),
                Tone::Waiting,
            ),
        );
    }
    if let Some(next) = &d.next_step {
        let tone = match d.phase {
            Phase::Failed | Phase::Blocked => Tone::Bad,
            _ => Tone::Waiting,
        };
        field(&mut out, 0, "Next step", &style.paint(next, tone));
    }
    deploys(&mut out, d);
    if d.deleting.is_none() {
        field(&mut out, 0, "On delete", &d.on_delete);
    }
    field(&mut out, 0, "Pipeline", &pipeline_line(d, style));
    out.push('\n');

    let _ = writeln!(out, "Stages:");
    for stage in &d.stages {
        stage_block(&mut out, d, stage, style, opts);
    }

    approvals(&mut out, d, style);
    events(&mut out, d, opts.now);
    if !d.warnings.is_empty() {
        let _ = writeln!(out, "\nWarnings:");
        for w in &d.warnings {
            let _ = writeln!(out, "  {}", style.paint(w, Tone::Waiting));
        }
    }
    out
}

fn deploys(out: &mut String, d: &Description) {
    let mut items: Vec<String> = Vec::new();
    items.extend(d.deploys.helm_charts.iter().map(|c| format!("helm {c}")));
    items.extend(
        d.deploys
            .policy_refs
            .iter()
            .map(|r| format!("policyRef {r}")),
    );
    items.extend(
        d.deploys
            .kustomization_refs
            .iter()
            .map(|r| format!("kustomizationRef {r}")),
    );
    if let Some(m) = &d.deploys.sync_mode {
        items.push(format!("syncMode {m}"));
    }
    if items.is_empty() {
        items.push("nothing (spec.profileSpec is empty)".into());
    }
    for (i, item) in items.iter().enumerate() {
        if i == 0 {
            field(out, 0, "Deploys", item);
        } else {
            let _ = writeln!(out, "{:w$} {item}", "", w = LABEL_WIDTH);
        }
    }
}

/// `dev ✔ → staging ॥ → production ○` (decorated) or
/// `dev [promoted] → staging [awaiting approval] → production [not started]` (plain).
pub fn pipeline_line(d: &Description, style: &Style) -> String {
    let parts: Vec<String> = d
        .stages
        .iter()
        .map(|s| {
            if style.color {
                format!("{}{}", style.symbol(&s.view.state), s.view.name)
            } else {
                format!("{} [{}]", s.view.name, s.view.state.label())
            }
        })
        .collect();
    if d.stages.is_empty() {
        return "no stages".into();
    }
    parts.join(" → ")
}

fn stage_block(
    out: &mut String,
    d: &Description,
    stage: &StageDetail,
    style: &Style,
    opts: &Options,
) {
    let v = &stage.view;
    let _ = writeln!(
        out,
        "  {}. {}{}  {}",
        v.index + 1,
        style.symbol(&v.state),
        style.paint(&v.name, Tone::Strong),
        style.state(&v.state)
    );
    let ind = 5;
    let selector = if v.selector.is_empty() {
        "(empty: matches no cluster)".to_string()
    } else {
        v.selector.clone()
    };
    field(out, ind, "Selector", &selector);
    if let Some(runs) = &stage.runs {
        field(out, ind, "Runs", &running(runs, style));
    }
    let trigger = if v.next_stage.is_none() && v.trigger.kind == TriggerKind::None {
        "none (last stage)".to_string()
    } else {
        v.trigger.summary()
    };
    field(out, ind, "Trigger", &trigger);
    let pending = format!(" (pending: {} promotes on its next pass)", d.reconciler);
    // An approval gone says who took it away when the webhook marked its record.
    let gone = match &stage.approval_removed {
        Some(removal) => format!(" ({})", removal_words(removal)),
        None => " (no longer in effect)".to_string(),
    };
    let state = match v.approval {
        Approval::Pending => pending.as_str(),
        Approval::Consumed => " (used)",
        Approval::NotApproved | Approval::NotRequired => gone.as_str(),
    };
    let manual = v.trigger.kind == TriggerKind::Manual;
    if let (Some(used), true) = (&stage.used_approval, manual) {
        field(out, ind, "Used approval", &used_approval(used, v));
    }
    if let (Some(given), true) = (&stage.approval_for_earlier_rollout, manual) {
        // Not "pending": it was not given for this rollout, though Sveltos will use it.
        let text = format!(
            "approved without a record for this rollout (who: unknown): the last recorded \
             approval, by {} at {}, was for an earlier rollout, and the spec changed without the \
             webhook; Sveltos will still use it (to withdraw it: kubectl promotion approve {} \
             --stage {} --revoke)",
            given.user, given.time, d.name, v.name
        );
        field(
            out,
            ind,
            "Last approval",
            &style.paint(&text, Tone::Waiting),
        );
    } else if stage.used_approval.is_some() && !stage.approval_not_used {
        // The last approval is the one used, said above.
    } else if manual && stage.approval_unrecorded {
        let state = if stage.approval_not_used {
            NOT_USED
        } else {
            state
        };
        let text = format!("approved without a record (who: unknown){state}");
        field(out, ind, "Last approval", &text);
    } else if let (Some(rec), true) = (
        &stage.approval_record,
        v.trigger.kind == TriggerKind::Manual,
    ) {
        let mut text = if rec.revoked {
            format!("revoked by {} at {}", rec.user, rec.time)
        } else {
            format!("{} at {}", rec.user, rec.time)
        };
        if let Some(r) = &rec.reason {
            text.push_str(&format!(": {r:?}"));
        }
        if rec.revoked {
            text.push_str(&format!(" ({})", withdrawn(rec)));
        }
        if !rec.revoked {
            text.push_str(if stage.approval_not_used {
                NOT_USED
            } else {
                state
            });
        }
        field(out, ind, "Last approval", &text);
    }
    if stage.revocable {
        field(out, ind, "Revoke", &d.revoke_advice(stage));
    }
    if let Some(flip) = &stage.automatic_reset_flip {
        field(out, ind, "Auto reset", &reset_flip(flip));
    }
    if let Some(ahead) =
        pre_approved(v, &d.reconciler).filter(|_| stage.approval_for_earlier_rollout.is_none())
    {
        field(out, ind, "Approval", &style.paint(&ahead, Tone::Active));
    }
    if let Some(taken) = &stage.cluster_profile_taken {
        field(out, ind, "ClusterProfile", &style.paint(taken, Tone::Bad));
    }
    clusters(out, d, stage, style, opts);
    if let Some(r) = &stage.will_reach {
        field(out, ind, "Will reach", &will_reach(r, &d.reconciler, style));
    }
    if let Some(wait) = wait_line(v, &d.reconciler, opts.now) {
        // The last stage deployed waits for nothing: the window only delays "complete".
        let label = match v.state {
            StageState::CompletesWhenWindowOpens { .. } => "Completes",
            _ => "Waits",
        };
        field(out, ind, label, &wait);
    }
    for (label, t) in [
        ("Reconciled", v.last_update_reconciled_time.as_deref()),
        ("Provisioned", v.last_successful_applied_time.as_deref()),
        ("Checked", v.last_status_check_time.as_deref()),
    ] {
        if let Some(t) = when(t, opts.now) {
            field(out, ind, label, &t);
        }
    }
    if let Some(desc) = &v.current_status_description {
        field(out, ind, "Status", desc);
    }
    if let Some(msg) = &v.failure_message {
        let failed = matches!(
            v.state,
            StageState::Failed { .. } | StageState::Blocked { .. }
        );
        let tone = if failed { Tone::Bad } else { Tone::Waiting };
        field(out, ind, "Message", &style.paint(msg, tone));
    }
    if let StageState::Failed { message, .. } | StageState::Blocked { message } = &v.state {
        if v.failure_message.as_deref() != Some(message.as_str()) {
            field(out, ind, "Failure", &style.paint(message, Tone::Bad));
        }
    }
    if let Some(t) = &stage.approve_unblocks {
        field(out, ind, "Approve", &d.approve_advice(&v.name, t));
    }
    out.push('\n');
}

/// After an approval given once the gate had been passed with another.
const NOT_USED: &str = " (not used: given after the used approval above had opened this gate, it \
                        opens nothing in this rollout)";

/// The approval promotion-controller used to pass a stage's gate, and what it opened.
fn used_approval(used: &UsedApproval, v: &StageView) -> String {
    let opened = format!(
        " (used: opened {} in this rollout)",
        crate::view::transition(v)
    );
    match &used.approval {
        Some(rec) => {
            let reason = rec
                .reason
                .as_ref()
                .map(|r| format!(": {r:?}"))
                .unwrap_or_default();
            format!("{} at {}{reason}{opened}", rec.user, rec.time)
        }
        None => format!("approved without a record (who: unknown){opened}"),
    }
}

/// `automaticReset` turned back to true: by whom, and what it cost.
fn reset_flip(flip: &ResetFlipRecord) -> String {
    let cost = match (&flip.approval, flip.approval_removed) {
        (Some(given), _) => format!(
            "; that write removed the approval given by {} at {}",
            given.user, given.time
        ),
        (None, true) => "; that write removed an approval without a record (who: unknown)".into(),
        (None, false) => String::new(),
    };
    format!(
        "automaticReset false → true by {} at {} (a write of the whole spec.stages that leaves \
         it out; Sveltos' own reset does so, upstream defect D3){cost}",
        flip.user, flip.time
    )
}

/// The configuration a stage's ClusterProfile deploys: the spec's, or another rollout's (what,
/// and what changes to reach the spec).
fn running(runs: &Running, style: &Style) -> String {
    let revision = runs
        .revision
        .map(|n| format!(", revision {n}"))
        .unwrap_or_default();
    match (runs.spec, &runs.deploys) {
        (Some(true), _) => format!("spec.profileSpec (this rollout's configuration{revision})"),
        (_, deploys) => {
            let what = deploys
                .as_ref()
                .map(|d| {
                    d.helm_charts
                        .iter()
                        .map(|c| format!("helm {c}"))
                        .chain(d.policy_refs.iter().cloned())
                        .chain(
                            d.kustomization_refs
                                .iter()
                                .map(|k| format!("kustomize {k}")),
                        )
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .filter(|w| !w.is_empty())
                .unwrap_or_else(|| "nothing".into());
            let head = match (runs.spec, runs.revision) {
                (Some(_), Some(n)) => format!("another rollout's configuration (revision {n})"),
                (Some(_), None) => "another rollout's configuration".to_string(),
                (None, _) => "a configuration that cannot be compared with the spec".to_string(),
            };
            let to = runs
                .to_spec
                .as_ref()
                .map(|c| format!(" (to the spec: {c})"))
                .unwrap_or_default();
            style.paint(&format!("{head}: {what}{to}"), Tone::Waiting)
        }
    }
}

/// What a stage not started will reach, as `plan` counts it.
fn will_reach(r: &WillReach, reconciler: &str, style: &Style) -> String {
    if r.clusters == 0 {
        return style.paint(
            &format!(
                "no cluster of the fleet ({reconciler} will count the stage as deployed at once; \
                 see kubectl promotion plan)"
            ),
            Tone::Waiting,
        );
    }
    let mut text = plural(r.clusters, "cluster");
    if let Some(skipped) = super::skipped_clusters(r.paused, r.not_ready) {
        text.push_str(&format!(" ({skipped}: Sveltos skips them)"));
    }
    text
}

/// For an approval given ahead of the pipeline: when it will be used.
fn pre_approved(v: &StageView, reconciler: &str) -> Option<String> {
    if v.approval != Approval::Pending || v.state != StageState::NotStarted {
        return None;
    }
    let onward = match &v.next_stage {
        Some(next) => format!("promotes to {next}"),
        None => "completes the pipeline".into(),
    };
    let delay = v
        .trigger
        .delay
        .as_ref()
        .map(|d| format!(" and its delay of {d} has passed"))
        .unwrap_or_default();
    Some(format!(
        "approved ahead of time: when the pipeline reaches this stage, {reconciler} {onward} as \
         soon as its clusters are provisioned{delay}"
    ))
}

/// When a soak or a closed promotion window ends, relative to now: "(in 26m)", or past it
/// "(overdue by 2m: addon-controller re-checks every 2m)". promotion-controller wakes the
/// stage at that very time, so for it an overdue wait says where to look.
fn wait_line(v: &StageView, reconciler: &str, now: DateTime<Utc>) -> Option<String> {
    let (what, until) = match &v.state {
        StageState::Soaking { until: Some(t) } => ("soak ends", t),
        StageState::WaitingForWindow { until: Some(t) } => ("promotion window opens", t),
        StageState::CompletesWhenWindowOpens { until: Some(t) } => ("promotion window opens", t),
        _ => return None,
    };
    let at = DateTime::parse_from_rfc3339(until).ok()?;
    let delta = at.with_timezone(&Utc).signed_duration_since(now);
    Some(if delta.num_seconds() > 0 {
        format!("{what} at {until} (in {})", duration::human(delta))
    } else if reconciler == CONTROLLER_FIELD_MANAGER {
        format!(
            "{what} at {until} (overdue by {}: promotion-controller acts at that time; if this \
             lasts, check that it runs: its Lease and its logs)",
            duration::human(-delta)
        )
    } else {
        format!(
            "{what} at {until} (overdue by {}: {reconciler} re-checks every {})",
            duration::human(-delta),
            RECHECK_EVERY
        )
    })
}

/// addon-controller's `normalStageRequeueAfter`: how often it looks at a stage in progress.
const RECHECK_EVERY: &str = "2m";

fn clusters(out: &mut String, d: &Description, stage: &StageDetail, style: &Style, opts: &Options) {
    let ind = 5;
    let v = &stage.view;
    let Some(list) = v.clusters.as_deref() else {
        let same_name = d.stages[..v.index.min(d.stages.len())]
            .iter()
            .find(|s| s.view.name == v.name);
        let text = if let Some(first) = same_name {
            format!(
                "shown under stage {} (the same name; see Warnings)",
                first.view.index + 1
            )
        } else if !d.online {
            "not read (offline)".to_string()
        } else {
            match (
                &stage.cluster_profile,
                stage.cluster_profile_taken.is_some(),
            ) {
                (None, true) => "unknown (the stage's ClusterProfile name is taken)".to_string(),
                (None, false) if d.warnings.iter().any(|w| w.starts_with("ClusterProfiles")) => {
                    "unknown (ClusterProfiles not readable: see Warnings)".to_string()
                }
                (None, false) => "none yet (no ClusterProfile for this stage)".to_string(),
                (Some(p), _) => {
                    format!("unknown (ClusterSummaries of {p} not readable: see Warnings)")
                }
            }
        };
        field(out, ind, "Clusters", &style.paint(&text, Tone::Dim));
        return;
    };
    let counts = stage.cluster_counts.clone().unwrap_or_default();
    let profile = stage.cluster_profile.as_deref().unwrap_or("");
    let mut summary = if counts.total == 0 {
        "no matching clusters".to_string()
    } else {
        let mut parts = vec![format!("{} provisioned", counts.provisioned)];
        let in_progress = counts.pending - counts.without_summary - counts.previous_spec;
        if in_progress > 0 {
            parts.push(format!("{in_progress} in progress"));
        }
        if counts.previous_spec > 0 {
            parts.push(format!(
                "{} still on the previous spec",
                counts.previous_spec
            ));
        }
        if counts.without_summary > 0 {
            parts.push(format!(
                "{} with no ClusterSummary yet",
                counts.without_summary
            ));
        }
        if counts.failed > 0 {
            parts.push(style.paint(&format!("{} failed", counts.failed), Tone::Bad));
        }
        format!("{}: {}", plural(counts.total, "cluster"), parts.join(", "))
    };
    if let Some(m) = stage.matching_clusters.filter(|m| *m != counts.total) {
        summary.push_str(&format!(" ({m} matching per the ClusterProfile)"));
    }
    if !profile.is_empty() {
        summary.push_str(&style.paint(&format!("   [ClusterProfile {profile}]"), Tone::Dim));
    }
    if stage.clusters_from_previous_rollout {
        summary.push_str(" (from an earlier rollout)");
    }
    field(out, ind, "Clusters", &summary);

    // Failed first, then in progress, then provisioned: the ones that need a look come first.
    let mut ordered: Vec<&ClusterState> = list.iter().collect();
    ordered.sort_by_key(|c| {
        if c.failure().is_some() {
            0
        } else if !c.is_provisioned() {
            1
        } else {
            2
        }
    });
    let limit = if opts.all_clusters || list.len() <= CLUSTER_LIST_LIMIT {
        list.len()
    } else {
        ordered
            .iter()
            .take_while(|c| !c.is_provisioned())
            .count()
            .min(CLUSTER_LIST_LIMIT)
    };
    let rows: Vec<Vec<String>> = ordered[..limit]
        .iter()
        .map(|c| cluster_row(c, style))
        .collect();
    for line in table::render(&["", "", ""], &rows, true).lines() {
        let _ = writeln!(out, "{:w$}{line}", "", w = ind + 2);
    }
    let hidden = list.len() - limit;
    // "… and N more" after no cluster at all reads as a list gone missing: say what they are.
    let rest = if limit == 0 {
        format!("all {hidden} provisioned, not listed (--all-clusters lists every cluster)")
    } else {
        format!("… and {hidden} more provisioned (--all-clusters lists every cluster)")
    };
    if hidden > 0 {
        let _ = writeln!(
            out,
            "{:w$}{}",
            "",
            style.paint(&rest, Tone::Dim),
            w = ind + 2
        );
    }
}

fn cluster_row(c: &ClusterState, style: &Style) -> Vec<String> {
    let (mark, tone) = if c.failure().is_some() {
        ("✖", Tone::Bad)
    } else if c.is_provisioned() {
        ("✔", Tone::Good)
    } else {
        ("◌", Tone::Active)
    };
    let name = format!("{}/{}", c.namespace, c.name);
    let name = if style.color {
        format!("{} {name}", style.paint(mark, tone))
    } else {
        name
    };
    let features = if c.summary_name.is_none() {
        "no ClusterSummary yet (Sveltos has not started on this cluster)".to_string()
    } else if c.previous_spec {
        "still on the previous spec (Sveltos is updating it)".to_string()
    } else if c.features.is_empty() {
        "no feature reported yet".to_string()
    } else {
        c.features
            .iter()
            .map(|f| {
                let tone = match f.status.as_str() {
                    "Provisioned" => Tone::Good,
                    "Failed" | "FailedNonRetriable" => Tone::Bad,
                    _ => Tone::Active,
                };
                format!("{} {}", f.feature_id, style.paint(&f.status, tone))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let message = c
        .features
        .iter()
        .find_map(|f| f.failure_message.clone())
        .or_else(|| c.failure_message.clone())
        .unwrap_or_default();
    vec![name, features, style.paint(&message, Tone::Bad)]
}

/// Who approved what: per stage, oldest first, each approval, revocation and removal the
/// webhook's records keep, one row each (a revocation's record keeps the approval it withdrew).
fn approvals(out: &mut String, d: &Description, style: &Style) {
    let before = out.len();
    if !d.approvals.is_empty() {
        let _ = writeln!(out, "Approvals:");
        let rows: Vec<Vec<String>> = d
            .approvals
            .iter()
            .flat_map(|a| approval_rows(&a.stage, &a.record))
            .collect();
        for line in table::render(&["STAGE", "ACTION", "BY", "AT", "REASON"], &rows, false).lines()
        {
            let _ = writeln!(out, "  {line}");
        }
    } else if d
        .stages
        .iter()
        .any(|s| s.view.trigger.kind == TriggerKind::Manual)
    {
        field(
            out,
            0,
            "Approvals",
            &style.paint(
                "none recorded (the admission webhook records who approved)",
                Tone::Dim,
            ),
        );
    }
    if let Some(c) = &d.last_spec_change {
        field(
            out,
            0,
            "Spec changed",
            &if d.spec_change_unseen {
                // The record is of an older change: the current rollout's author is unknown.
                style.paint(
                    &format!(
                        "by someone the webhook did not see (the last change it recorded, by {} \
                         at {}, started an earlier rollout)",
                        c.user, c.time
                    ),
                    Tone::Waiting,
                )
            } else {
                format!("by {} at {} (started the current rollout)", c.user, c.time)
            },
        );
    }
    if out.len() > before {
        out.push('\n');
    }
}

/// The rows of one stage's record in the Approvals table.
fn approval_rows(stage: &str, record: &ApprovalRecord) -> Vec<Vec<String>> {
    let row = |action: &str, by: &str, at: &str, reason: Option<&str>| {
        vec![
            stage.to_string(),
            action.to_string(),
            by.to_string(),
            at.to_string(),
            reason.unwrap_or("-").to_string(),
        ]
    };
    let mut rows = Vec::new();
    if let Some(given) = record.revoked_approval.as_deref() {
        rows.push(row(
            "approved",
            &given.user,
            &given.time,
            given.reason.as_deref(),
        ));
    }
    let action = if record.revoked {
        "revoked"
    } else {
        "approved"
    };
    rows.push(row(
        action,
        &record.user,
        &record.time,
        record.reason.as_deref(),
    ));
    if record.superseded {
        // The approval in effect after this one had no record: who gave it is unknown.
        rows.push(row(
            "approved",
            "(unknown)",
            "-",
            Some("given without the webhook: no record"),
        ));
    }
    if let Some(removal) = &record.removed {
        let how = match removal.how {
            RemovalHow::Update => "the update left approved out".to_string(),
            RemovalHow::StageRemoved => "the update removed the stage".to_string(),
            RemovalHow::Reset => format!("reset by the webhook: {}", reset_detail(removal)),
        };
        rows.push(row("removed", &removal.user, &removal.time, Some(&how)));
    }
    rows
}

/// What a revocation withdrew, after "revoked by …": "release-manager's approval given at …".
fn withdrawn(revocation: &ApprovalRecord) -> String {
    match revocation.revoked_approval.as_deref() {
        Some(given) => {
            let reason = given
                .reason
                .as_ref()
                .map(|r| format!(": {r:?}"))
                .unwrap_or_default();
            format!(
                "withdrew {}'s approval given at {}{reason}",
                given.user, given.time
            )
        }
        // No record of its own, or a revocation recorded before the approval was kept with it.
        None => "withdrew an approval whose giver is not recorded".to_string(),
    }
}

/// Who took an approval away, when and how, in a few words: "removed by carol's update at T,
/// which left approved out".
fn removal_words(removal: &RemovalRecord) -> String {
    let (user, time) = (&removal.user, &removal.time);
    match removal.how {
        RemovalHow::Update => {
            format!("removed by {user}'s update at {time}, which left approved out")
        }
        RemovalHow::StageRemoved => {
            format!("removed by {user}'s update at {time}, which removed the stage")
        }
        RemovalHow::Reset => format!(
            "reset by the webhook on {user}'s update at {time}: {}",
            reset_detail(removal)
        ),
    }
}

/// Why the webhook reset an approval, without the verb its warning starts with.
fn reset_detail(removal: &RemovalRecord) -> &str {
    let detail = removal.detail.as_deref().unwrap_or("why was not recorded");
    detail
        .strip_prefix("removed: ")
        .or_else(|| detail.strip_prefix("reset: "))
        .unwrap_or(detail)
}

fn events(out: &mut String, d: &Description, now: DateTime<Utc>) {
    let Some(events) = &d.events else {
        return;
    };
    if events.is_empty() {
        field(out, 0, "Events", "<none>");
        return;
    }
    let _ = writeln!(out, "Events:");
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| {
            let age = duration::age(e.time.as_deref(), now);
            let age = if e.count > 1 {
                format!("{age} (x{})", e.count)
            } else {
                age
            };
            vec![
                e.kind.clone(),
                e.reason.clone(),
                age,
                e.source.clone().unwrap_or_else(|| "-".into()),
                e.message.clone(),
            ]
        })
        .collect();
    for line in table::render(&["TYPE", "REASON", "AGE", "FROM", "MESSAGE"], &rows, false).lines() {
        let _ = writeln!(out, "  {line}");
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::Snapshot;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-02-16T08:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn description(status: serde_json::Value, summaries: Vec<serde_json::Value>) -> Description {
        let object = json!({
            "metadata": {"name": "p"},
            "spec": {"profileSpec": {"helmCharts": [{"chartName": "c", "chartVersion": "1",
                        "releaseName": "r", "releaseNamespace": "n"}]},
                     "stages": [
                {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                 "trigger": {"auto": {"delay": "2m"}}},
                {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}},
                 "trigger": {"manual": {}}},
                {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}
            ]},
            "status": status,
        });
        Description::build(&Snapshot {
            profiles: Ok(vec![crate::view::fixtures::profile(&object, "dev", &[])]),
            object,
            summaries: Ok(summaries),
            events: Ok(vec![]),
            owners: Default::default(),
        })
        .unwrap()
    }

    fn summary(cluster: &str, status: &str, msg: Option<&str>) -> serde_json::Value {
        json!({
            "metadata": {"name": format!("p-dev-sveltos-{cluster}"), "namespace": "dev",
                         "labels": {"projectsveltos.io/cluster-profile-name": "p-dev"}},
            "spec": {"clusterNamespace": "dev", "clusterName": cluster, "clusterType": "Sveltos"},
            "status": {"featureSummaries": [
                {"featureID": "Helm", "status": status, "failureMessage": msg}]}
        })
    }

    fn opts() -> Options {
        Options {
            all_clusters: false,
            now: now(),
        }
    }

    #[test]
    fn plain_view_reads_at_a_glance() {
        let d = description(
            json!({"currentStageName": "staging", "stages": [
                {"name": "dev", "lastSuccessfulAppliedTime": "2026-02-16T07:27:41Z"},
                {"name": "staging", "lastSuccessfulAppliedTime": "2026-02-16T07:34:02Z",
                 "currentStatusDescription": "Paused: Awaiting Manual Approval (2026-02-16T07:38:02Z)"}
            ]}),
            vec![summary("dev01", "Provisioned", None)],
        );
        let text = render(&d, &Style::plain(), &opts());
        assert!(!text.contains('\u{1b}'));
        assert!(text.contains(
            "Pipeline:       dev [promoted] → staging [awaiting approval] → prod [not started]"
        ));
        assert!(text.contains("  2. staging  awaiting approval"));
        assert!(text
            .contains("kubectl promotion approve p --stage staging   (unblocks staging → prod)"));
        assert!(text.contains("Clusters:       1 cluster: 1 provisioned"));
        assert!(text.contains("dev/dev01   Helm Provisioned"));
        assert!(text.contains("Provisioned:    2026-02-16T07:27:41Z (32m ago)"));
        assert!(text.contains("Trigger:        none (last stage)"));
        assert!(text.contains("Deploys:        helm c 1 as n/r"));
        assert!(text.contains("Events:         <none>"));
    }

    #[test]
    fn failed_clusters_come_first_and_many_are_summarised() {
        let mut summaries: Vec<_> = (0..30)
            .map(|i| summary(&format!("ok{i:02}"), "Provisioned", None))
            .collect();
        summaries.push(summary(
            "bad",
            "FailedNonRetriable",
            Some("replicas: invalid type"),
        ));
        let d = description(json!({"stages": [{"name": "dev"}]}), summaries);
        let text = render(&d, &Style::plain(), &opts());
        assert!(text.contains("  1. dev  failed"));
        assert!(text.contains("31 clusters: 30 provisioned, 1 failed"));
        let bad = text.find("dev/bad").unwrap();
        assert!(text[bad..]
            .lines()
            .next()
            .unwrap()
            .contains("replicas: invalid type"));
        assert!(text.contains("… and 30 more provisioned (--all-clusters lists every cluster)"));
        assert!(!text.contains("dev/ok00"));
        let all = render(
            &d,
            &Style::plain(),
            &Options {
                all_clusters: true,
                now: now(),
            },
        );
        assert!(all.contains("dev/ok29"));
        assert!(text.contains("Phase:          failed"));
    }

    #[test]
    fn empty_status_is_explained() {
        let d = description(json!({}), vec![]);
        let text = render(&d, &Style::plain(), &opts());
        assert!(text.contains("Status:         empty: not reconciled yet"));
        assert!(text.contains("Phase:          not started"));
    }

    #[test]
    fn coloured_view_uses_symbols() {
        let d = description(
            json!({"stages": [{"name": "dev", "lastSuccessfulAppliedTime": "2026-02-16T07:27:41Z",
                              "currentStatusDescription": "Successfully provisioned (2026-02-16T07:29:41Z)"},
                             {"name": "staging"}]}),
            vec![],
        );
        let text = render(&d, &Style { color: true }, &opts());
        assert!(text.contains('\u{1b}'));
        assert!(text.contains('✔'));
        assert!(text.contains('○'));
    }
}
