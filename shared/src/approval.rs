//! The rules of a manual gate's `approved` flag, as addon-controller applies them (v1.13.0
//! `canManualAdvance`, `advanceToNextStage`): one definition for the live view, `approve`, shell
//! completion and the webhook's mutation.
//!
//! - A stage with `trigger.manual` waits until `approved` is exactly `true`, then Sveltos promotes
//!   to the next stage, or completes the pipeline when it is the last stage (Sveltos evaluates the
//!   last stage's trigger too).
//! - Unless `automaticReset` is exactly `false` (the CRD defaults it to `true`), Sveltos removes
//!   `approved` in the reconcile that promotes.
//! - An approval has been *used* once the promotion it allowed has happened in the rollout it was
//!   given for: the status describes that rollout ([`same_rollout`]), and the next stage is in
//!   `status.stages`, or, for the last stage, its trigger is satisfied.

use crate::rollout::RolloutId;

/// Sveltos clears `approved` after promoting unless `automaticReset` is exactly `false`.
pub fn resets_automatically(automatic_reset: Option<bool>) -> bool {
    automatic_reset != Some(false)
}

/// What an approval allowed, once it has happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Used<'a> {
    /// The pipeline promoted to this stage.
    PromotedTo(&'a str),
    /// The gate was on the last stage, and the pipeline completed.
    Completed,
}

/// Whether the status describes the rollout an approval belongs to.
///
/// - `status`: the rollout identity the status carries (`stagesHash`, `profileSpecHash`);
/// - `approval`: the rollout the webhook recorded with the approval, when the record is the one
///   of the approval now set;
/// - `status_is_specs`: the status describes the rollout now in the spec.
///
/// A status without hashes (Sveltos builds that do not write them) cannot tell, and is taken as
/// the approval's rollout. An approval without a recorded rollout (given while the webhook was
/// not called, or recorded before the webhook recorded rollouts) is taken as given for the rollout
/// in the spec: a new rollout removes the previous one's approvals.
pub fn same_rollout(
    status: Option<&RolloutId>,
    approval: Option<&RolloutId>,
    status_is_specs: bool,
) -> bool {
    match (status, approval) {
        (None, _) => true,
        (Some(status), Some(approval)) => status == approval,
        (Some(_), None) => status_is_specs,
    }
}

/// Whether the approval on `stages[index]` (stage names in spec order) has been used, given
/// whether the status describes the approval's rollout ([`same_rollout`]), the names in
/// `status.stages` and the last stage's status description. A status of another rollout shows
/// where that rollout stood, not what this approval did.
pub fn used<'a>(
    stages: &[&'a str],
    index: usize,
    same_rollout: bool,
    reached: &[&str],
    last_description: Option<&str>,
) -> Option<Used<'a>> {
    if !same_rollout {
        return None;
    }
    match stages.get(index + 1) {
        Some(next) => reached.contains(next).then_some(Used::PromotedTo(next)),
        None if index < stages.len() => {
            let last_reached = reached.contains(&stages[index]);
            (last_reached && crate::status::trigger_satisfied(last_description))
                .then_some(Used::Completed)
        }
        None => None,
    }
}

/// A stage's gate can be opened by approving it: its trigger is manual, and not also auto
/// (the CRD rejects such a trigger). On the last stage, approving completes the pipeline.
pub fn approvable(has_manual: bool, has_auto: bool) -> bool {
    has_manual && !has_auto
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_follows_the_crd_default() {
        assert!(resets_automatically(None));
        assert!(resets_automatically(Some(true)));
        assert!(!resets_automatically(Some(false)));
    }

    #[test]
    fn an_approval_is_used_when_the_next_stage_is_reached_or_the_last_completes() {
        let stages = ["dev", "staging", "prod"];
        assert_eq!(
            used(&stages, 0, true, &["dev", "staging"], None),
            Some(Used::PromotedTo("staging"))
        );
        assert_eq!(used(&stages, 1, true, &["dev", "staging"], None), None);
        let done = Some("Successfully provisioned (2026-02-16T07:38:02Z)");
        assert_eq!(
            used(&stages, 2, true, &["dev", "staging", "prod"], done),
            Some(Used::Completed)
        );
        let waiting = Some("Paused: Awaiting Manual Approval (2026-02-16T07:38:02Z)");
        assert_eq!(
            used(&stages, 2, true, &["dev", "staging", "prod"], waiting),
            None
        );
        assert_eq!(used(&stages, 2, true, &["dev", "staging"], done), None);
        assert_eq!(used(&stages, 7, true, &[], None), None);
    }

    #[test]
    fn a_status_of_another_rollout_never_shows_an_approval_used() {
        let stages = ["dev", "staging", "prod"];
        assert_eq!(
            used(&stages, 1, false, &["dev", "staging", "prod"], None),
            None
        );
        let id = |p: &str| RolloutId {
            stages_hash: "s".into(),
            profile_spec_hash: p.into(),
        };
        let (old, new) = (id("old"), id("new"));
        // The record decides when there is one; the spec's rollout when there is none.
        assert!(same_rollout(Some(&old), Some(&old), false));
        assert!(!same_rollout(Some(&old), Some(&new), true));
        assert!(same_rollout(Some(&old), None, true));
        assert!(!same_rollout(Some(&old), None, false));
        // No hashes in the status: today's rule.
        assert!(same_rollout(None, Some(&new), false));
    }
}
