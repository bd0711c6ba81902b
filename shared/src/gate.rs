//! Which manual gate `approve` opens, and every reason it refuses: one decision over the derived
//! [`Pipeline`], shared by `kubectl promotion approve`, the view's "Next step" and the shell
//! completion of stage names, so that what is proposed, completed and accepted never disagree.
//!
//! The decision is data: a [`Gate`] (one `spec.stages` index, which the approval patch then
//! targets without looking the stage up again) or a [`Refusal`] carrying what its message needs.
//! Wording is the caller's.

use crate::approval;
use crate::pipeline::{Approval, Phase, Pipeline, StageState, StageView, TriggerKind, TriggerView};

/// A manual gate `approve` may open, resolved to one stage of the spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gate {
    /// Its index in `spec.stages`.
    pub index: usize,
    /// Its name (the first stage of that name: Sveltos reads a stage's status by name).
    pub stage: String,
    /// The stage approving promotes to; `None` for a gate on the last stage, which completes the
    /// pipeline (Sveltos evaluates the last stage's trigger too).
    pub next: Option<String>,
    /// `approved: true` already: approving again changes nothing.
    pub already_approved: bool,
    /// The pipeline has not reached the stage (or already went past it) in this rollout, or the
    /// status is the previous rollout's.
    pub ahead_of_time: bool,
    /// Where the gate's `approved` flag stands: for an approved gate, pending or used.
    pub approval: Approval,
}

impl Gate {
    /// `staging → production`, or `production → complete`.
    pub fn transition(&self) -> String {
        transition(&self.stage, self.next.as_deref())
    }
}

/// What approving the gate of `stage` unblocks: `staging → production`, or for a gate on the last
/// stage `production → complete`.
pub fn transition(stage: &str, next: Option<&str>) -> String {
    match next {
        Some(next) => format!("{stage} → {next}"),
        None => format!("{stage} → complete"),
    }
}

/// What the pipeline is doing, for refusals that say why there is nothing to approve now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Activity {
    /// The status is empty; why, in plain words ([`Pipeline::note`]).
    EmptyStatus(String),
    /// The phase, at the last stage reached ([`Pipeline::frontier`]) and that stage's state.
    AtStage {
        phase: Phase,
        stage: String,
        state: StageState,
    },
    /// The phase, with no stage reached.
    Phase(Phase),
}

/// The manual gates of a promotion as `approve` names them in a refusal: the ones it can open
/// ([`approvable`]), and the ones the current rollout already went past, which only the next
/// rollout can use — so that "no stage has a manual trigger" is said only when none has.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Approvable {
    pub open: Vec<String>,
    pub passed: Vec<String>,
}

/// Why `approve` will not approve, with what its message names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The promotion is being deleted: no stage starts and no approval is used any more.
    Deleting { since: String },
    /// Sveltos has not picked up the latest change: the stage states are the previous rollout's,
    /// and approving now would approve the new rollout's gate ahead of time.
    Stale {
        reason: String,
        requested: Option<String>,
        /// Who has not picked the change up ([`Pipeline::reconciler`]).
        reconciler: String,
    },
    /// No stage was named and no gate waits.
    NothingAwaiting {
        activity: Activity,
        approvable: Approvable,
    },
    /// The named stage is not in the spec.
    UnknownStage {
        requested: String,
        stages: Vec<String>,
        approvable: Approvable,
    },
    /// The stage's trigger is auto: it promotes by itself.
    AutoTrigger {
        stage: String,
        next: Option<String>,
        /// Boxed: the largest part of any refusal, and only this one carries it.
        trigger: Box<TriggerView>,
        approvable: Approvable,
    },
    /// The stage has no trigger: it promotes as soon as it is provisioned.
    NoTrigger {
        stage: String,
        next: Option<String>,
        approvable: Approvable,
    },
    /// Both auto and manual: Sveltos rejects such a stage.
    BothTriggers { stage: String },
    /// The pipeline has not reached the stage; approving it needs `--pre-approve`.
    NotReached { stage: String, activity: Activity },
    /// The pipeline already went past the stage in the rollout now in the spec. With
    /// `automaticReset: false` (`persists`) an approval now carries over to later rollouts and
    /// needs `--pre-approve`; otherwise it would count as used at once and the next rollout
    /// removes it, so it is refused even with `--pre-approve`: the next rollout needs its own.
    AlreadyPromoted {
        stage: String,
        next: Option<String>,
        persists: bool,
    },
}

/// Why `approve --revoke` will not withdraw an approval: the stage is unknown or not a manual
/// gate (the [`Refusal`] `approve` gives), or it has no approval to withdraw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RevokeRefusal {
    Gate(Refusal),
    /// `approved` is not `true`.
    NotApproved {
        stage: String,
    },
    /// The approval already did what it allowed in its rollout (its `transition`).
    Used {
        stage: String,
        transition: String,
    },
}

/// The gate whose approval `approve --stage NAME --revoke` withdraws: a manual gate whose
/// approval is set and not used yet, or persists (`automaticReset: false`: it also opens the
/// gate of every later rollout, so withdrawing it still means something). Unlike approving, a stale status does not stop it: an
/// approval can always be taken back before it is used.
pub fn revoke_target(pipeline: &Pipeline, requested: &str) -> Result<Gate, RevokeRefusal> {
    let view = pipeline.stage(requested).ok_or_else(|| {
        RevokeRefusal::Gate(Refusal::UnknownStage {
            requested: requested.to_string(),
            stages: pipeline.stages.iter().map(|s| s.name.clone()).collect(),
            approvable: approvable_names(pipeline),
        })
    })?;
    let (stage, next) = (view.name.clone(), view.next_stage.clone());
    let refused = match view.trigger.kind {
        TriggerKind::Manual => None,
        TriggerKind::Auto => Some(Refusal::AutoTrigger {
            stage: stage.clone(),
            next: next.clone(),
            trigger: Box::new(view.trigger.clone()),
            approvable: approvable_names(pipeline),
        }),
        TriggerKind::None => Some(Refusal::NoTrigger {
            stage: stage.clone(),
            next: next.clone(),
            approvable: approvable_names(pipeline),
        }),
        TriggerKind::Both => Some(Refusal::BothTriggers {
            stage: stage.clone(),
        }),
    };
    if let Some(refusal) = refused {
        return Err(RevokeRefusal::Gate(refusal));
    }
    let persists = !approval::resets_automatically(view.trigger.automatic_reset);
    let withdrawable = match view.approval {
        Approval::Pending => true,
        Approval::Consumed => persists,
        Approval::NotApproved | Approval::NotRequired => false,
    };
    match view.approval {
        _ if withdrawable => Ok(Gate {
            index: view.index,
            stage,
            next,
            already_approved: true,
            ahead_of_time: false,
            approval: view.approval,
        }),
        Approval::Pending | Approval::Consumed => Err(RevokeRefusal::Used {
            transition: transition(&stage, next.as_deref()),
            stage,
        }),
        Approval::NotApproved | Approval::NotRequired => Err(RevokeRefusal::NotApproved { stage }),
    }
}

/// The stages whose gate `approve --stage NAME` can open (some only with `--pre-approve`), in
/// spec order: a manual trigger without an auto one, on the first stage of its name, and not a
/// stage the current rollout has passed whose approval would reset ([`Refusal::AlreadyPromoted`]).
pub fn approvable(pipeline: &Pipeline) -> Vec<&StageView> {
    gates(pipeline)
        .filter(|s| !passed_for_good(pipeline, s))
        .collect()
}

/// The stages with a manual gate, each name once (Sveltos reads a name's status from its first
/// stage).
fn gates(pipeline: &Pipeline) -> impl Iterator<Item = &StageView> {
    pipeline
        .stages
        .iter()
        .filter(|s| is_gate(&s.trigger.kind) && is_first_of_name(pipeline, s))
}

/// The current rollout went past the stage, which is not approved, and an approval would reset:
/// one given now would count as used at once, and the next rollout removes it.
fn passed_for_good(pipeline: &Pipeline, stage: &StageView) -> bool {
    pipeline.stale.is_none()
        && passed_in_this_rollout(stage)
        && stage.trigger.approved != Some(true)
        && approval::resets_automatically(stage.trigger.automatic_reset)
}

/// The rollout went past the stage, or committed to (its approval used, the status not written
/// yet: [`crate::model::ClusterPromotion::committed_step`]).
fn passed_in_this_rollout(stage: &StageView) -> bool {
    stage.state == StageState::Promoted
        || (stage.state == StageState::ApprovedPending && stage.approval == Approval::Consumed)
}

/// [`approval::approvable`], read from the derived trigger kind.
fn is_gate(kind: &TriggerKind) -> bool {
    let manual = matches!(kind, TriggerKind::Manual | TriggerKind::Both);
    let auto = matches!(kind, TriggerKind::Auto | TriggerKind::Both);
    approval::approvable(manual, auto)
}

/// Decide the gate to approve: the named stage, or without a name the stage awaiting approval
/// (else the one approved and not yet used, which makes approving again a no-op). Refuses a
/// stale status, an unknown stage, a stage that is not a manual gate, and (without
/// `pre_approve`) a stage the pipeline is not at.
pub fn approval_target(
    pipeline: &Pipeline,
    requested: Option<&str>,
    pre_approve: bool,
) -> Result<Gate, Refusal> {
    if let Some(since) = &pipeline.deleting {
        return Err(Refusal::Deleting {
            since: since.clone(),
        });
    }
    if let (Some(reason), false) = (&pipeline.stale, pre_approve) {
        return Err(Refusal::Stale {
            reason: reason.clone(),
            requested: requested.map(String::from),
            reconciler: pipeline.reconciler.clone(),
        });
    }
    let view = match requested {
        // The first stage of the name: the one whose status Sveltos reads and whose index the
        // patch pins (a later stage of the same name is never reached).
        Some(name) => pipeline.stage(name).ok_or_else(|| Refusal::UnknownStage {
            requested: name.to_string(),
            stages: pipeline.stages.iter().map(|s| s.name.clone()).collect(),
            approvable: approvable_names(pipeline),
        })?,
        None => pipeline
            .awaiting_approval()
            .or_else(|| {
                pipeline
                    .stages
                    .iter()
                    .find(|s| s.state == StageState::ApprovedPending && !passed_in_this_rollout(s))
            })
            .ok_or_else(|| Refusal::NothingAwaiting {
                activity: activity(pipeline),
                approvable: approvable_names(pipeline),
            })?,
    };
    let stage = view.name.clone();
    let next = view.next_stage.clone();
    match view.trigger.kind {
        TriggerKind::Manual => {}
        TriggerKind::Auto => {
            return Err(Refusal::AutoTrigger {
                stage,
                next,
                trigger: Box::new(view.trigger.clone()),
                approvable: approvable_names(pipeline),
            })
        }
        TriggerKind::None => {
            return Err(Refusal::NoTrigger {
                stage,
                next,
                approvable: approvable_names(pipeline),
            })
        }
        TriggerKind::Both => return Err(Refusal::BothTriggers { stage }),
    }
    let already_approved = view.trigger.approved == Some(true);
    let ahead_of_time = pipeline.stale.is_some()
        || view.state == StageState::NotStarted
        || passed_in_this_rollout(view);
    let passed = pipeline.stale.is_none() && passed_in_this_rollout(view);
    let persists = !approval::resets_automatically(view.trigger.automatic_reset);
    if passed_for_good(pipeline, view) {
        return Err(Refusal::AlreadyPromoted {
            stage,
            next,
            persists,
        });
    }
    if ahead_of_time && !already_approved && !pre_approve {
        return Err(if passed {
            Refusal::AlreadyPromoted {
                stage,
                next,
                persists,
            }
        } else {
            Refusal::NotReached {
                stage,
                activity: activity(pipeline),
            }
        });
    }
    Ok(Gate {
        index: view.index,
        stage,
        next,
        already_approved,
        ahead_of_time,
        approval: view.approval,
    })
}

fn approvable_names(pipeline: &Pipeline) -> Approvable {
    let (passed, open): (Vec<&StageView>, Vec<&StageView>) =
        gates(pipeline).partition(|s| passed_for_good(pipeline, s));
    let names = |v: Vec<&StageView>| v.into_iter().map(|s| s.name.clone()).collect();
    Approvable {
        open: names(open),
        passed: names(passed),
    }
}

fn is_first_of_name(pipeline: &Pipeline, stage: &StageView) -> bool {
    pipeline.stage(&stage.name).map(|s| s.index) == Some(stage.index)
}

fn activity(pipeline: &Pipeline) -> Activity {
    if let Some(note) = &pipeline.note {
        return Activity::EmptyStatus(note.clone());
    }
    match pipeline.frontier() {
        Some(f) => Activity::AtStage {
            phase: pipeline.phase.clone(),
            stage: f.name.clone(),
            state: f.state.clone(),
        },
        None => Activity::Phase(pipeline.phase.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freshness::Freshness;
    use crate::model::ClusterPromotion;
    use crate::pipeline::derive;
    use serde_json::{json, Value};

    const AWAITING: &str = "Paused: Awaiting Manual Approval (2026-02-16T07:38:02Z)";
    const PROMOTED: &str = "Successfully provisioned (2026-02-16T07:38:02Z)";

    fn pipeline(stages: Value, status: Value) -> Pipeline {
        let p: ClusterPromotion = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"stages": stages},
            "status": status
        }))
        .unwrap();
        derive(&p, None, &Freshness::Current)
    }

    /// dev (auto) → staging (manual, `approved` as given) → qa (manual) → production (manual),
    /// waiting at staging's gate.
    fn gates(approved: Option<bool>) -> Pipeline {
        let mut manual = json!({});
        if let Some(a) = approved {
            manual["approved"] = json!(a);
        }
        pipeline(
            json!([
                {"name": "dev", "trigger": {"auto": {"delay": "2m"}}},
                {"name": "staging", "trigger": {"manual": manual}},
                {"name": "qa", "trigger": {"manual": {}}},
                {"name": "production", "trigger": {"manual": {}}}
            ]),
            json!({"stages": [
                {"name": "dev", "lastSuccessfulAppliedTime": "t"},
                {"name": "staging", "lastSuccessfulAppliedTime": "t",
                 "currentStatusDescription": AWAITING}
            ]}),
        )
    }

    /// dev → prod (manual), both deployed, prod's status saying `description`.
    fn gate_on_the_last_stage(description: &str) -> Pipeline {
        pipeline(
            json!([{"name": "dev"}, {"name": "prod", "trigger": {"manual": {}}}]),
            json!({"stages": [
                {"name": "dev", "lastSuccessfulAppliedTime": "t"},
                {"name": "prod", "lastSuccessfulAppliedTime": "t",
                 "currentStatusDescription": description}
            ]}),
        )
    }

    /// The refusal of `stage`, which has no trigger (`next` follows it), with nothing
    /// approvable.
    fn no_trigger(stage: &str, next: &str) -> Result<Gate, Refusal> {
        Err(Refusal::NoTrigger {
            stage: stage.into(),
            next: Some(next.into()),
            approvable: Approvable::default(),
        })
    }

    /// Gates that can all be approved, none passed.
    fn open(v: &[&str]) -> Approvable {
        Approvable {
            open: names(v),
            passed: vec![],
        }
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn without_a_name_the_gate_awaiting_approval_is_chosen() {
        let g = approval_target(&gates(Some(false)), None, false).unwrap();
        assert_eq!(
            g,
            Gate {
                index: 1,
                stage: "staging".into(),
                next: Some("qa".into()),
                already_approved: false,
                ahead_of_time: false,
                approval: Approval::NotApproved,
            }
        );
        assert_eq!(g.transition(), "staging → qa");
    }

    #[test]
    fn without_a_name_an_approved_pending_gate_is_a_no_op_target() {
        let g = approval_target(&gates(Some(true)), None, false).unwrap();
        assert_eq!((g.index, g.stage.as_str()), (1, "staging"));
        assert!(g.already_approved && !g.ahead_of_time);
        assert_eq!(g.approval, Approval::Pending);
    }

    #[test]
    fn a_named_gate_awaiting_approval_is_chosen() {
        let g = approval_target(&gates(None), Some("staging"), false).unwrap();
        assert_eq!((g.index, g.next.as_deref()), (1, Some("qa")));
        assert!(!g.already_approved && !g.ahead_of_time);
    }

    #[test]
    fn nothing_awaiting_says_what_the_pipeline_does_and_what_can_be_approved() {
        let p = pipeline(
            json!([{"name": "dev", "trigger": {"manual": {}}}, {"name": "prod"}]),
            json!({"stages": [{"name": "dev"}]}),
        );
        assert_eq!(
            approval_target(&p, None, false),
            Err(Refusal::NothingAwaiting {
                activity: Activity::AtStage {
                    phase: Phase::Progressing,
                    stage: "dev".into(),
                    state: StageState::Provisioning,
                },
                approvable: open(&["dev"]),
            })
        );
    }

    #[test]
    fn nothing_awaiting_with_an_empty_status_gives_its_reason() {
        let p = pipeline(
            json!([{"name": "dev", "trigger": {"manual": {}}}]),
            json!({}),
        );
        let Err(Refusal::NothingAwaiting {
            activity: Activity::EmptyStatus(why),
            ..
        }) = approval_target(&p, None, false)
        else {
            panic!("an empty status is named as such");
        };
        assert!(why.starts_with("not reconciled yet"), "{why}");
    }

    #[test]
    fn a_complete_pipeline_has_nothing_awaiting() {
        let p = gate_on_the_last_stage(PROMOTED);
        assert_eq!(p.phase, Phase::Complete);
        assert_eq!(
            approval_target(&p, None, false),
            Err(Refusal::NothingAwaiting {
                activity: Activity::AtStage {
                    phase: Phase::Complete,
                    stage: "prod".into(),
                    state: StageState::Complete,
                },
                approvable: open(&["prod"]),
            })
        );
    }

    #[test]
    fn an_unknown_stage_lists_every_stage_and_the_approvable_ones() {
        assert_eq!(
            approval_target(&gates(None), Some("uat"), true),
            Err(Refusal::UnknownStage {
                requested: "uat".into(),
                stages: names(&["dev", "staging", "qa", "production"]),
                approvable: open(&["staging", "qa", "production"]),
            })
        );
    }

    #[test]
    fn stages_that_are_not_manual_gates_are_refused_even_with_pre_approve() {
        let p = gates(None);
        let Err(Refusal::AutoTrigger {
            stage,
            next,
            trigger,
            approvable,
        }) = approval_target(&p, Some("dev"), true)
        else {
            panic!("an auto trigger is refused");
        };
        assert_eq!((stage.as_str(), next.as_deref()), ("dev", Some("staging")));
        assert_eq!(trigger.summary(), "auto: delay 2m");
        assert_eq!(approvable, open(&["staging", "qa", "production"]));

        let p = pipeline(
            json!([
                {"name": "a"},
                {"name": "b", "trigger": {"auto": {}, "manual": {}}}
            ]),
            json!({"stages": [{"name": "a"}]}),
        );
        assert_eq!(approval_target(&p, Some("a"), true), no_trigger("a", "b"));
        assert_eq!(
            approval_target(&p, Some("b"), true),
            Err(Refusal::BothTriggers { stage: "b".into() })
        );
    }

    #[test]
    fn a_stage_not_reached_yet_needs_pre_approve() {
        let p = gates(None);
        assert_eq!(
            approval_target(&p, Some("qa"), false),
            Err(Refusal::NotReached {
                stage: "qa".into(),
                activity: Activity::AtStage {
                    phase: Phase::AwaitingApproval,
                    stage: "staging".into(),
                    state: StageState::AwaitingApproval,
                },
            })
        );
        let g = approval_target(&p, Some("qa"), true).unwrap();
        assert_eq!((g.index, g.next.as_deref()), (2, Some("production")));
        assert!(g.ahead_of_time && !g.already_approved);
    }

    #[test]
    fn a_pre_approved_stage_not_reached_yet_is_already_approved_without_the_flag() {
        let mut p = gates(None);
        p.stages[2].trigger.approved = Some(true);
        let g = approval_target(&p, Some("qa"), false).unwrap();
        assert!(g.already_approved && g.ahead_of_time);
    }

    #[test]
    fn a_stage_the_rollout_passed_is_refused_unless_its_approval_persists() {
        let passed = |manual: Value| {
            pipeline(
                json!([
                    {"name": "dev", "trigger": {"manual": manual}},
                    {"name": "prod"}
                ]),
                json!({"stages": [{"name": "dev"}, {"name": "prod"}]}),
            )
        };
        // The refusal of dev, which the rollout has passed, its approval persisting or not.
        let promoted = |persists| -> Result<Gate, Refusal> {
            Err(Refusal::AlreadyPromoted {
                stage: "dev".into(),
                next: Some("prod".into()),
                persists,
            })
        };
        // An approval that resets would be used at once and removed by the next rollout:
        // --pre-approve does not help.
        let p = passed(json!({}));
        for pre_approve in [false, true] {
            assert_eq!(
                approval_target(&p, Some("dev"), pre_approve),
                promoted(false)
            );
        }
        // automaticReset: false keeps it for later rollouts: that takes --pre-approve.
        let p = passed(json!({"automaticReset": false}));
        assert_eq!(approval_target(&p, Some("dev"), false), promoted(true));
        let g = approval_target(&p, Some("dev"), true).unwrap();
        assert!(g.ahead_of_time);
    }

    #[test]
    fn the_last_stage_is_a_gate_that_completes_the_pipeline() {
        let p = gate_on_the_last_stage(AWAITING);
        let g = approval_target(&p, None, false).unwrap();
        assert_eq!(
            (g.index, g.stage.as_str(), g.next.as_deref()),
            (1, "prod", None)
        );
        assert_eq!(g.transition(), "prod → complete");
        assert_eq!(approval_target(&p, Some("prod"), false), Ok(g));
    }

    #[test]
    fn a_stale_status_is_refused_unless_pre_approved() {
        let mut p = gates(None);
        p.stale = Some("spec.profileSpec changed".into());
        p.phase = Phase::Stale;
        assert_eq!(
            approval_target(&p, None, false),
            Err(Refusal::Stale {
                reason: "spec.profileSpec changed".into(),
                requested: None,
                reconciler: "the reconciler".into(),
            })
        );
        assert_eq!(
            approval_target(&p, Some("staging"), false),
            Err(Refusal::Stale {
                reason: "spec.profileSpec changed".into(),
                requested: Some("staging".into()),
                reconciler: "the reconciler".into(),
            })
        );
        // The gate of a stale status is never "the one waiting", even with --pre-approve.
        assert!(matches!(
            approval_target(&p, None, true),
            Err(Refusal::NothingAwaiting { .. })
        ));
        let g = approval_target(&p, Some("staging"), true).unwrap();
        assert!(g.ahead_of_time && !g.already_approved);
    }

    #[test]
    fn a_repeated_stage_name_resolves_to_its_first_stage() {
        // The API server refuses two stages of one name; a manifest can still have them, and
        // Sveltos reads a name's status from the first, so the later one is never approvable.
        let p = pipeline(
            json!([
                {"name": "dev", "trigger": {"manual": {}}},
                {"name": "staging", "trigger": {"manual": {}}},
                {"name": "dev", "trigger": {"manual": {}}}
            ]),
            json!({"stages": [
                {"name": "dev", "lastSuccessfulAppliedTime": "t",
                 "currentStatusDescription": AWAITING}
            ]}),
        );
        let g = approval_target(&p, Some("dev"), false).unwrap();
        assert_eq!((g.index, g.next.as_deref()), (0, Some("staging")));
        assert_eq!(approval_target(&p, None, false), Ok(g));
        let listed: Vec<usize> = approvable(&p).iter().map(|s| s.index).collect();
        assert_eq!(listed, vec![0, 1]);

        // The first of the name decides, even when only a later one is a manual gate.
        let p = pipeline(
            json!([
                {"name": "dev"},
                {"name": "staging"},
                {"name": "dev", "trigger": {"manual": {}}}
            ]),
            json!({"stages": [{"name": "dev"}]}),
        );
        assert_eq!(
            approval_target(&p, Some("dev"), true),
            no_trigger("dev", "staging")
        );
    }

    #[test]
    fn only_an_approval_not_used_yet_can_be_revoked() {
        let g = revoke_target(&gates(Some(true)), "staging").unwrap();
        assert_eq!((g.index, g.approval), (1, Approval::Pending));
        assert_eq!(
            revoke_target(&gates(None), "staging"),
            Err(RevokeRefusal::NotApproved {
                stage: "staging".into()
            })
        );
        assert!(matches!(
            revoke_target(&gates(None), "dev"),
            Err(RevokeRefusal::Gate(Refusal::AutoTrigger { .. }))
        ));
        assert!(matches!(
            revoke_target(&gates(None), "uat"),
            Err(RevokeRefusal::Gate(Refusal::UnknownStage { .. }))
        ));
        let used = |manual: Value| {
            pipeline(
                json!([{"name": "dev", "trigger": {"manual": manual}}, {"name": "prod"}]),
                json!({"stages": [{"name": "dev"}, {"name": "prod"}]}),
            )
        };
        // A persistent approval opens every later rollout's gate: it can be withdrawn.
        let persistent = used(json!({"approved": true, "automaticReset": false}));
        assert!(revoke_target(&persistent, "dev").is_ok());
        assert_eq!(
            revoke_target(&used(json!({"approved": true})), "dev"),
            Err(RevokeRefusal::Used {
                stage: "dev".into(),
                transition: "dev → prod".into(),
            })
        );
    }

    #[test]
    fn approvable_is_what_a_named_approval_with_pre_approve_accepts() {
        let passed = pipeline(
            json!([
                {"name": "dev", "trigger": {"manual": {}}},
                {"name": "qa", "trigger": {"manual": {"automaticReset": false}}},
                {"name": "prod", "trigger": {"manual": {}}}
            ]),
            json!({"stages": [{"name": "dev"}, {"name": "qa"}, {"name": "prod"}]}),
        );
        for p in [gates(None), gates(Some(true)), passed] {
            for s in &p.stages {
                let accepted =
                    approval_target(&p, Some(&s.name), true).is_ok_and(|g| g.index == s.index);
                let listed = approvable(&p).iter().any(|a| a.index == s.index);
                assert_eq!(accepted, listed, "{}", s.name);
            }
        }
    }
}
