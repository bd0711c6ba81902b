//! Stage-state derivation: the one place that turns a ClusterPromotion (and, when available, the
//! ClusterSummaries of its generated ClusterProfiles) into "where does each stage stand".
//! The plugin's `describe`, `list`, `wait`, `approve` and shell completion all read this model;
//! none re-derives it. (The webhook does not need stage states: its rules read the gates directly,
//! through the same [`crate::approval`] rules.)

use std::collections::BTreeMap;

use serde::Serialize;
use serde_with::skip_serializing_none;

use crate::cluster_summary::{failure_summary, ClusterState};
use crate::freshness::Freshness;
use crate::model::{ClusterPromotion, Stage, StageStatus, FINALIZER};
use crate::selector;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum StageState {
    /// Not in `status.stages` of the current rollout.
    NotStarted,
    /// Reached; clusters not all provisioned yet.
    Provisioning,
    /// All matching clusters provisioned; the trigger has not been evaluated yet.
    Provisioned,
    /// Provisioned and waiting out the trigger's `delay`.
    Soaking { until: Option<String> },
    /// Post-delay health checks added to the stage profile and not yet passing.
    RunningHealthChecks,
    /// The auto trigger's promotion window is closed.
    WaitingForWindow { until: Option<String> },
    /// The last stage is deployed and its auto trigger's promotion window is closed: the window
    /// delays only marking the pipeline complete (there is no next stage to hold back), so the
    /// stage does not wait for anything.
    CompletesWhenWindowOpens { until: Option<String> },
    /// Manual trigger without `approved: true`.
    AwaitingApproval,
    /// `approved: true` and the next stage not reached yet: the controller promotes on its next pass.
    ApprovedPending,
    /// The next stage has been reached.
    Promoted,
    /// Last stage, trigger satisfied: the pipeline is complete.
    Complete,
    /// A cluster of this stage reports a failed feature. `retriable`: every failure is `Failed`,
    /// which Sveltos retries (the pipeline is degraded, not lost); otherwise one is
    /// `FailedNonRetriable` and Sveltos has given up until the profile or the cluster changes.
    Failed { message: String, retriable: bool },
    /// Sveltos refuses to run the promotion at all (no licence for it).
    Blocked { message: String },
}

impl StageState {
    /// Short, stable words for tables and `wait` output.
    pub fn label(&self) -> String {
        match self {
            StageState::NotStarted => "not started".into(),
            StageState::Provisioning => "provisioning".into(),
            StageState::Provisioned => "provisioned".into(),
            StageState::Soaking { until: Some(t) } => format!("soaking until {t}"),
            StageState::Soaking { until: None } => "soaking".into(),
            StageState::RunningHealthChecks => "running health checks".into(),
            StageState::WaitingForWindow { until: Some(t) } => {
                format!("waiting for window until {t}")
            }
            StageState::WaitingForWindow { until: None } => "waiting for window".into(),
            StageState::CompletesWhenWindowOpens { until: Some(t) } => {
                format!("deployed; marked complete when the window opens at {t}")
            }
            StageState::CompletesWhenWindowOpens { until: None } => {
                "deployed; marked complete when the window opens".into()
            }
            StageState::AwaitingApproval => "awaiting approval".into(),
            StageState::ApprovedPending => "approved and pending".into(),
            StageState::Promoted => "promoted".into(),
            StageState::Complete => "complete".into(),
            StageState::Failed {
                retriable: true, ..
            } => "failed (Sveltos retries)".into(),
            StageState::Failed { .. } => "failed".into(),
            StageState::Blocked { .. } => "blocked".into(),
        }
    }

    pub fn is_active(&self) -> bool {
        !matches!(
            self,
            StageState::NotStarted | StageState::Promoted | StageState::Complete
        )
    }
}

/// Where a manual gate's `approved` flag stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Approval {
    /// The stage has no manual trigger.
    NotRequired,
    /// `approved` absent or false.
    NotApproved,
    /// `approved: true` and the next stage not reached: it will be used on the next pass.
    Pending,
    /// `approved: true` and the next stage already reached: it has been used.
    Consumed,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TriggerKind {
    None,
    Auto,
    Manual,
    /// Both set: invalid, kept visible rather than guessed.
    Both,
}

#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TriggerView {
    pub kind: TriggerKind,
    pub delay: Option<String>,
    pub post_delay_health_checks: usize,
    pub pre_health_check_deployments: usize,
    pub promotion_window: Option<WindowView>,
    pub approved: Option<bool>,
    pub automatic_reset: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WindowView {
    pub from: String,
    pub to: String,
}

impl TriggerView {
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        let head = match self.kind {
            TriggerKind::None => return "none (promotes as soon as provisioned)".into(),
            TriggerKind::Both => "invalid (both auto and manual)",
            TriggerKind::Auto => "auto",
            TriggerKind::Manual => "manual",
        };
        if let Some(d) = &self.delay {
            parts.push(format!("delay {d}"));
        }
        if self.pre_health_check_deployments > 0 {
            parts.push(format!(
                "{} pre-check deployment(s)",
                self.pre_health_check_deployments
            ));
        }
        if self.post_delay_health_checks > 0 {
            parts.push(format!(
                "{} post-delay health check(s)",
                self.post_delay_health_checks
            ));
        }
        if let Some(w) = &self.promotion_window {
            parts.push(format!("window {} → {}", w.from, w.to));
        }
        if self.kind == TriggerKind::Manual {
            parts.push(match self.approved {
                Some(true) => "approved".into(),
                Some(false) => "approved: false".into(),
                None => "not approved".into(),
            });
            if self.automatic_reset == Some(false) {
                parts.push("automaticReset: false (approval persists)".into());
            }
        }
        if parts.is_empty() {
            head.into()
        } else {
            format!("{head}: {}", parts.join(", "))
        }
    }
}

#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StageView {
    pub index: usize,
    pub name: String,
    #[serde(flatten)]
    pub state: StageState,
    pub selector: String,
    pub trigger: TriggerView,
    pub approval: Approval,
    pub next_stage: Option<String>,
    pub last_update_reconciled_time: Option<String>,
    pub last_successful_applied_time: Option<String>,
    pub last_status_check_time: Option<String>,
    pub failure_message: Option<String>,
    pub current_status_description: Option<String>,
    /// `None` when the clusters were not looked up (offline `describe -f`).
    pub clusters: Option<Vec<ClusterState>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Phase {
    NotStarted,
    /// Sveltos has not picked up the latest change: the status is the previous rollout's.
    Stale,
    Progressing,
    /// A cluster's feature failed and Sveltos retries it.
    Degraded,
    AwaitingApproval,
    Complete,
    /// A cluster's feature failed for good (`FailedNonRetriable`).
    Failed,
    /// Sveltos refuses to run this promotion (licence).
    Blocked,
    /// `metadata.deletionTimestamp` is set: the reconciler is withdrawing (or, with
    /// `preserveClusterProfilesOnDelete`, keeping) the stage profiles and then removes its
    /// finalizer. No stage starts and no approval is used any more, whatever the stages say.
    Deleting,
    /// The promotion is paused ([`crate::pause`]): no stage starts and no approval is used until
    /// it is resumed; what Sveltos deploys continues.
    Paused,
    /// The current rollout is aborted ([`crate::abort`]): it stays where it is until retried.
    Aborted,
    /// The current rollout is aborted and its stages are being set back to an earlier revision.
    RollingBack,
    /// The stages run the revision they were rolled back to, deployed; the spec is still the
    /// aborted rollout's.
    RolledBack,
    /// What decides the phase could not be read (the clusters of a stage still provisioning,
    /// when ClusterSummaries are forbidden): set by a reader, never by [`derive`].
    Unknown,
}

impl Phase {
    pub fn label(&self) -> &'static str {
        match self {
            Phase::NotStarted => "not started",
            Phase::Stale => "change not picked up yet",
            Phase::Progressing => "progressing",
            Phase::Degraded => "degraded",
            Phase::AwaitingApproval => "awaiting approval",
            Phase::Complete => "complete",
            Phase::Failed => "failed",
            Phase::Blocked => "blocked",
            Phase::Deleting => "being deleted",
            Phase::Paused => "paused",
            Phase::Aborted => "aborted",
            Phase::RollingBack => "rolling back",
            Phase::RolledBack => "rolled back",
            Phase::Unknown => "unknown",
        }
    }

    /// Nothing will change without someone acting: complete, failed for good, or blocked.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            Phase::Complete | Phase::Failed | Phase::Blocked | Phase::Deleting
        )
    }
}

#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pipeline {
    pub name: String,
    pub phase: Phase,
    pub current_stage: Option<String>,
    /// Plain-words reason when the status is empty.
    pub note: Option<String>,
    /// Set when Sveltos has not picked up the latest change (`phase: stale`): why we know. The
    /// stage states then describe the previous rollout.
    pub stale: Option<String>,
    /// `metadata.deletionTimestamp`, when the promotion is being deleted (phase `deleting`).
    pub deleting: Option<String>,
    /// Set while the promotion is paused (phase `paused`, unless it is being deleted or
    /// aborted).
    pub paused: Option<crate::pause::Paused>,
    /// Set while the current rollout is aborted ([`crate::abort`]; phase `aborted`, `rolling
    /// back` or `rolled back`, unless it is being deleted).
    pub aborted: Option<crate::abort::Aborted>,
    /// Who runs the promotion, for messages that say who acts
    /// ([`crate::status_writer::reconciler_name`]).
    pub reconciler: String,
    pub stages: Vec<StageView>,
}

impl Pipeline {
    /// Mark the reached stages named `name` failed for good, for a reason found outside the
    /// status (the stage's ClusterProfile is not this promotion's), and derive the phase again,
    /// so that every reader of the pipeline sees the same verdict.
    pub fn fail_stage(&mut self, name: &str, message: &str) {
        for view in self
            .stages
            .iter_mut()
            // A licence refusal stays what it is: Sveltos runs nothing of this promotion.
            .filter(|v| v.name == name && v.state != StageState::NotStarted)
            .filter(|v| !matches!(v.state, StageState::Blocked { .. }))
        {
            view.state = StageState::Failed {
                message: message.to_string(),
                retriable: false,
            };
        }
        if self.deleting.is_none() && self.paused.is_none() && self.aborted.is_none() {
            self.phase = phase_of(&self.stages, self.note.is_none(), self.stale.is_some());
        }
    }

    pub fn stage(&self, name: &str) -> Option<&StageView> {
        self.stages.iter().find(|s| s.name == name)
    }

    /// The stage (if any) whose manual gate blocks the current rollout right now. Never one of
    /// a stale status: approving it would pre-approve the new rollout's gate.
    pub fn awaiting_approval(&self) -> Option<&StageView> {
        if self.stale.is_some() || self.deleting.is_some() {
            return None;
        }
        self.stages
            .iter()
            .find(|s| s.state == StageState::AwaitingApproval)
    }

    /// The stage the pipeline is working on: the last reached one.
    pub fn frontier(&self) -> Option<&StageView> {
        self.stages
            .iter()
            .rev()
            .find(|s| s.state != StageState::NotStarted)
    }

    /// The stage that failed (for good or retrying) or is blocked, if any.
    pub fn failed(&self) -> Option<&StageView> {
        self.stages.iter().find(|s| {
            matches!(
                s.state,
                StageState::Failed { .. } | StageState::Blocked { .. }
            )
        })
    }
}

/// Cluster observations per stage name, as read from the stage's ClusterSummaries.
pub type Observations = BTreeMap<String, Vec<ClusterState>>;

/// Derive the pipeline view. `observations` holds the clusters of the stages that were looked
/// up (a stage missing from it is judged from the promotion alone); `freshness` says whether the
/// status belongs to the current spec ([`crate::freshness`]).
pub fn derive(
    promotion: &ClusterPromotion,
    observations: Option<&Observations>,
    freshness: &Freshness,
) -> Pipeline {
    let stages = &promotion.spec.stages;
    let views: Vec<StageView> = stages
        .iter()
        .enumerate()
        .map(|(i, stage)| {
            let clusters = observations
                .filter(|_| first_of_name(stages, i))
                .and_then(|o| o.get(&stage.name))
                .cloned();
            stage_view(promotion, i, stage, clusters, !freshness.is_stale())
        })
        .collect();

    let has_status = !promotion.stage_statuses().is_empty();
    let reconciler = reconciler_of(promotion);
    let note = (!has_status).then(|| empty_status_reason(promotion, &reconciler));
    let stale = match freshness {
        Freshness::Stale { reason, .. } => Some(reason.clone()),
        Freshness::Current => None,
    };
    let deleting = promotion
        .metadata
        .deletion_timestamp
        .as_ref()
        .map(|t| t.0.to_string());
    let paused = crate::pause::paused_meta(&promotion.metadata);
    let aborted = crate::abort::aborted_meta(&promotion.metadata)
        .filter(|a| rollout_of(promotion).is_none_or(|id| a.applies_to(&id)));
    let phase = match (&deleting, &aborted, &paused) {
        (Some(_), _, _) => Phase::Deleting,
        (None, Some(a), _) => aborted_phase(promotion, a),
        (None, None, Some(_)) => Phase::Paused,
        (None, None, None) => phase_of(&views, has_status, stale.is_some()),
    };
    Pipeline {
        name: promotion.name().to_string(),
        phase,
        current_stage: promotion
            .status
            .as_ref()
            .and_then(|s| s.current_stage_name.clone()),
        note,
        stale,
        deleting,
        paused,
        aborted,
        reconciler,
        stages: views,
    }
}

/// The rollout the promotion's spec describes (`None`: its spec cannot be hashed).
fn rollout_of(promotion: &ClusterPromotion) -> Option<crate::rollout::RolloutId> {
    let value = serde_json::to_value(promotion).ok()?;
    crate::rollout::identity_of(&value).ok().map(|i| i.id)
}

/// The phase of an aborted rollout: `aborted`; with a rollback, `rolled back` once the
/// controller has said of every stage it lists that it runs the revision, deployed
/// ([`crate::status::descriptions::ROLLED_BACK`]), `rolling back` until then.
fn aborted_phase(promotion: &ClusterPromotion, aborted: &crate::abort::Aborted) -> Phase {
    let Some(n) = aborted.rollback_to() else {
        return Phase::Aborted;
    };
    let stages = promotion.stage_statuses();
    if crate::abort::all_rolled_back(
        stages
            .iter()
            .map(|s| s.current_status_description.as_deref()),
        n,
    ) {
        Phase::RolledBack
    } else {
        Phase::RollingBack
    }
}

/// The pipeline's phase from its stage states: the one rule, for [`derive`] and for
/// [`Pipeline::fail_stage`].
fn phase_of(views: &[StageView], has_status: bool, stale: bool) -> Phase {
    let any = |f: fn(&StageState) -> bool| views.iter().any(|v| f(&v.state));
    if !has_status {
        Phase::NotStarted
    } else if any(|s| matches!(s, StageState::Blocked { .. })) {
        Phase::Blocked
    } else if stale {
        Phase::Stale
    } else if any(|s| {
        matches!(
            s,
            StageState::Failed {
                retriable: false,
                ..
            }
        )
    }) {
        Phase::Failed
    } else if views
        .last()
        .is_some_and(|v| v.state == StageState::Complete)
    {
        Phase::Complete
    } else if any(|s| matches!(s, StageState::Failed { .. })) {
        Phase::Degraded
    } else if any(|s| *s == StageState::AwaitingApproval) {
        Phase::AwaitingApproval
    } else {
        Phase::Progressing
    }
}

/// [`crate::status_writer::reconciler_name`] of the typed promotion: only its managed fields
/// and status decide.
fn reconciler_of(promotion: &ClusterPromotion) -> String {
    let object = serde_json::json!({
        "metadata": {"managedFields": promotion.metadata.managed_fields},
        "status": promotion.status,
    });
    crate::status_writer::reconciler_name(&object)
}

/// Why the status is empty. Sveltos' finalizer added by promotion-controller is its first write
/// to a new promotion: the status follows within the reconcile, so that is "starting", not "no
/// reconciler". The finalizer added by another writer, and no status: a Sveltos build without
/// the reconciler. Neither: nothing has taken the promotion on — one piece of advice covering
/// both reconcilers.
fn empty_status_reason(promotion: &ClusterPromotion, reconciler: &str) -> String {
    let has_finalizer = promotion
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == FINALIZER));
    if has_finalizer && reconciler == crate::status_writer::CONTROLLER_FIELD_MANAGER {
        "promotion-controller took this promotion on (it added its finalizer) and writes its \
         first status next"
            .into()
    } else if has_finalizer {
        "Sveltos added its finalizer but never wrote a status: this Sveltos build has no \
         ClusterPromotion reconciler (open-source Sveltos since v1.14 runs none): install \
         promotion-controller (`kubectl apply -k manifests/` of kubectl-promotion, see \
         docs/controller.md), or use Sveltos Enterprise"
            .into()
    } else {
        "not reconciled yet: no reconciler has taken this promotion on (on open-source Sveltos, \
         is promotion-controller installed and running? see docs/controller.md; with Sveltos \
         Enterprise, is the addon-controller running?)"
            .into()
    }
}

/// Whether `stages[index]` is the first stage of its name. Sveltos finds a stage's status, its
/// ClusterProfile and so its clusters by the stage's name, so they all belong to the first stage
/// of a name, and a later stage of the same name is never reached. (The API server refuses two
/// stages of one name; a manifest read offline can still have them.)
pub fn first_of_name(stages: &[Stage], index: usize) -> bool {
    stages
        .get(index)
        .is_some_and(|s| !stages[..index].iter().any(|e| e.name == s.name))
}

fn stage_view(
    promotion: &ClusterPromotion,
    index: usize,
    stage: &Stage,
    clusters: Option<Vec<ClusterState>>,
    status_is_specs: bool,
) -> StageView {
    let stages = &promotion.spec.stages;
    let status = first_of_name(stages, index)
        .then(|| promotion.stage_status(&stage.name))
        .flatten();
    let next = stages.get(index + 1);
    let is_last = next.is_none();
    let next_reached =
        next.is_some_and(|n| first_of_name(stages, index + 1) && promotion.stage_reached(&n.name));
    // Used: the next stage reached, or the last stage completed (which needs it reached).
    let used = promotion.approval_used(index, status_is_specs).is_some()
        && (next_reached || (is_last && status.is_some()));
    let manual = stage.manual();
    // The approval was used and the step committed; the status write has not landed yet.
    let committed = manual.is_some()
        && !next_reached
        && promotion.committed_step().as_deref() == Some(stage.name.as_str());
    let approval = match manual {
        None => Approval::NotRequired,
        Some(_) if committed => Approval::Consumed,
        Some(m) if !m.is_approved() => Approval::NotApproved,
        Some(_) if used => Approval::Consumed,
        Some(_) => Approval::Pending,
    };
    let state = match status {
        None => StageState::NotStarted,
        Some(_) if next_reached => StageState::Promoted,
        Some(_) if committed => StageState::ApprovedPending,
        Some(st) => frontier_state(stage, st, is_last, clusters.as_deref()),
    };
    StageView {
        index,
        name: stage.name.clone(),
        state,
        selector: stage
            .cluster_selector
            .as_ref()
            .map(selector::to_string)
            .unwrap_or_default(),
        trigger: trigger_view(stage),
        approval,
        next_stage: next.map(|n| n.name.clone()),
        last_update_reconciled_time: status.and_then(|s| s.last_update_reconciled_time.clone()),
        last_successful_applied_time: status.and_then(|s| s.last_successful_applied_time.clone()),
        last_status_check_time: status.and_then(|s| s.last_status_check_time.clone()),
        failure_message: status.and_then(|s| s.failure_message.clone()),
        current_status_description: status.and_then(|s| s.current_status_description.clone()),
        clusters,
    }
}

/// State of a reached stage whose successor has not been reached.
fn frontier_state(
    stage: &Stage,
    status: &StageStatus,
    is_last: bool,
    clusters: Option<&[ClusterState]>,
) -> StageState {
    use crate::status::descriptions::*;
    use crate::status::failures::LICENSE_REQUIRED;
    if let Some(msg) = status.failure_message.as_deref() {
        if msg.starts_with(LICENSE_REQUIRED) {
            return StageState::Blocked {
                message: format!(
                    "Sveltos refuses to run this ClusterPromotion: {msg} (without a licence, \
                     only the first two ClusterPromotions by creation time are managed)"
                ),
            };
        }
    }
    if let Some((retriable, message)) = clusters.and_then(failure_summary) {
        return StageState::Failed { message, retriable };
    }
    if status.last_successful_applied_time.is_none() {
        return StageState::Provisioning;
    }
    let description = status
        .current_status_description
        .as_deref()
        .map(crate::status::strip_timestamp)
        .unwrap_or("");
    let manual = stage.manual();
    let approved = manual.is_some_and(|m| m.is_approved());
    if let Some(rest) = description.strip_prefix(SOAKING) {
        return StageState::Soaking {
            until: non_empty(rest),
        };
    }
    if description.starts_with(RUNNING_CHECKS) || description.starts_with(AWAITING_CHECKS) {
        return StageState::RunningHealthChecks;
    }
    if let Some(rest) = description.strip_prefix(WINDOW_CLOSED) {
        let until = non_empty(rest.trim_end_matches('.').trim_end_matches(')'));
        return if is_last {
            StageState::CompletesWhenWindowOpens { until }
        } else {
            StageState::WaitingForWindow { until }
        };
    }
    if description.starts_with(PROMOTED) && is_last {
        return StageState::Complete;
    }
    if manual.is_some() {
        return if approved {
            StageState::ApprovedPending
        } else if description.starts_with(AWAITING_APPROVAL) {
            StageState::AwaitingApproval
        } else {
            StageState::Provisioned
        };
    }
    if is_last && stage.trigger.is_none() {
        // No trigger: the controller completes as soon as the stage is provisioned.
        return StageState::Complete;
    }
    StageState::Provisioned
}

fn non_empty(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

fn trigger_view(stage: &Stage) -> TriggerView {
    let trigger = stage.trigger.as_ref();
    let auto = trigger.and_then(|t| t.auto.as_ref());
    let manual = trigger.and_then(|t| t.manual.as_ref());
    let kind = match (auto.is_some(), manual.is_some()) {
        (false, false) => TriggerKind::None,
        (true, false) => TriggerKind::Auto,
        (false, true) => TriggerKind::Manual,
        (true, true) => TriggerKind::Both,
    };
    let len = |v: Option<usize>| v.unwrap_or(0);
    match (auto, manual) {
        (Some(a), None) | (Some(a), Some(_)) => TriggerView {
            kind,
            delay: a.delay.clone(),
            post_delay_health_checks: len(a.post_delay_health_checks.as_ref().map(Vec::len)),
            pre_health_check_deployments: len(a.pre_health_check_deployment.as_ref().map(Vec::len)),
            promotion_window: a.promotion_window.as_ref().map(|w| WindowView {
                from: w.from.clone(),
                to: w.to.clone(),
            }),
            approved: manual.and_then(|m| m.approved),
            automatic_reset: manual.and_then(|m| m.automatic_reset),
        },
        (None, Some(m)) => TriggerView {
            kind,
            delay: m.delay.clone(),
            post_delay_health_checks: len(m.post_delay_health_checks.as_ref().map(Vec::len)),
            pre_health_check_deployments: len(m.pre_health_check_deployment.as_ref().map(Vec::len)),
            promotion_window: None,
            approved: m.approved,
            automatic_reset: m.automatic_reset,
        },
        (None, None) => TriggerView {
            kind,
            delay: None,
            post_delay_health_checks: 0,
            pre_health_check_deployments: 0,
            promotion_window: None,
            approved: None,
            automatic_reset: None,
        },
    }
}
