//! Whether a ClusterPromotion's status describes its current spec, or still the previous
//! rollout's: after a change that starts a new rollout ([`crate::rollout`]), Sveltos restarts the
//! pipeline on its next reconcile (`resetStageStatuses`, then the first stage again), and until
//! then `status.stages` shows where the *previous* rollout stood. Reporting that status as the
//! current rollout's is the one mistake a live view must never make: `wait --for=complete` would
//! succeed at once, and a gate shown as awaiting approval belongs to the old rollout.
//!
//! Sveltos names the rollout its status belongs to by two hashes ([`crate::rollout::RolloutId`]),
//! which this project computes exactly. So:
//! 1. When the status carries both hashes, they decide alone: equal to the spec's is current, any
//!    difference is stale, full stop.
//! 2. Without them (Sveltos builds that do not write them), two weaker signals are read:
//!    - the first stage's generated ClusterProfile: on every restart Sveltos applies the current
//!      `profileSpec` to it before it writes the status (`handlePromotionRestart`), so a profile
//!      spec that hashes differently from the current `profileSpec` (less the stage selector and
//!      the post-delay checks Sveltos appends) means the change has not been picked up, and an
//!      equal one that it has;
//!    - the admission webhook's record of the change that started the current rollout, against
//!      the time Sveltos (re)started the first stage (`status.stages[0].lastUpdateReconciledTime`):
//!      a change recorded after that restart has not been picked up.
//!
//!    A signal that says "stale" wins over one that says "current"; where no signal can tell,
//!    the status is taken as the current rollout's (what a Sveltos build without hashes shows).

use chrono::DateTime;
use serde::Serialize;
use serde_json::Value;

use crate::admission::spec_change_record;
use crate::diff::{appended_check_names, comparable_profile_spec};
use crate::model::ClusterPromotion;
use crate::rollout::{identity, profile_spec_json, RolloutId};
use crate::tree::tree_of;

/// Which signal decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StaleSignal {
    /// `status.stagesHash` differs from the spec's.
    StagesHash,
    /// `status.profileSpecHash` differs from the spec's.
    ProfileSpecHash,
    /// The first stage's ClusterProfile still has another `profileSpec`.
    StageProfile,
    /// The webhook recorded a change after Sveltos last restarted the pipeline.
    SpecChangeRecord,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "freshness")]
pub enum Freshness {
    /// The status belongs to the current spec, or there is no status to be stale.
    Current,
    /// Sveltos has not picked up the latest change that starts a new rollout.
    Stale { reason: String, signal: StaleSignal },
}

impl Freshness {
    pub fn is_stale(&self) -> bool {
        matches!(self, Freshness::Stale { .. })
    }
}

/// How fresh `object`'s status is. `first_stage_profile` is the ClusterProfile Sveltos generated
/// for the first stage, when it was read and belongs to this promotion.
pub fn freshness(
    object: &Value,
    promotion: &ClusterPromotion,
    first_stage_profile: Option<&Value>,
) -> Freshness {
    let Some(first_status) = promotion.stage_statuses().first() else {
        return Freshness::Current;
    };
    let tree = tree_of(object);
    let spec_id = identity(&tree).ok().map(|i| i.id);
    if let (Some(recorded), Some(current)) = (RolloutId::in_status(object), spec_id.as_ref()) {
        return by_hashes(&recorded, current);
    }
    // A status with only stagesHash (or a spec that cannot be hashed): a differing stagesHash
    // is still conclusive.
    if let (Some(recorded), Some(current)) = (
        promotion
            .status
            .as_ref()
            .and_then(|s| s.stages_hash.as_deref()),
        spec_id.as_ref(),
    ) {
        if recorded != current.stages_hash {
            return stale_stages();
        }
    }
    if let (Some(profile), Some(stage)) = (first_stage_profile, promotion.spec.stages.first()) {
        let spec = profile.get("spec").cloned().unwrap_or(Value::Null);
        let appended = appended_check_names(stage, promotion.spec.profile_spec.as_ref());
        let deployed = with_defaults(comparable_profile_spec(&spec, &appended));
        let wanted = with_defaults(
            object
                .pointer("/spec/profileSpec")
                .cloned()
                .unwrap_or(Value::Null),
        );
        let hashed = |spec: Value| {
            profile_spec_json(&tree_of(
                &serde_json::json!({"spec": {"profileSpec": spec}}),
            ))
            .map(|(json, _)| json)
            .ok()
        };
        if hashed(deployed) != hashed(wanted) {
            return Freshness::Stale {
                reason: format!(
                    "spec.profileSpec changed, and the first stage's ClusterProfile still has \
                     the previous spec ({})",
                    profile
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                ),
                signal: StaleSignal::StageProfile,
            };
        }
    }
    let changed = spec_change_record(object).ok().flatten();
    let restarted = first_status.last_update_reconciled_time.as_deref();
    if let (Some(changed), Some(restarted)) = (changed, restarted) {
        if let (Ok(changed_at), Ok(restarted_at)) = (
            DateTime::parse_from_rfc3339(&changed.time),
            DateTime::parse_from_rfc3339(restarted),
        ) {
            if changed_at > restarted_at {
                return Freshness::Stale {
                    reason: format!(
                        "{} started a new rollout at {}, after Sveltos last started the \
                         pipeline ({restarted})",
                        changed.user, changed.time
                    ),
                    signal: StaleSignal::SpecChangeRecord,
                };
            }
        }
    }
    Freshness::Current
}

fn by_hashes(recorded: &RolloutId, current: &RolloutId) -> Freshness {
    if recorded.stages_hash != current.stages_hash {
        return stale_stages();
    }
    if recorded.profile_spec_hash != current.profile_spec_hash {
        return Freshness::Stale {
            reason: "spec.profileSpec changed (status.profileSpecHash is the previous spec's)"
                .into(),
            signal: StaleSignal::ProfileSpecHash,
        };
    }
    Freshness::Current
}

fn stale_stages() -> Freshness {
    Freshness::Stale {
        reason: "the stage names, their order or their cluster selectors changed".into(),
        signal: StaleSignal::StagesHash,
    }
}

/// A profile spec with the CRD's defaults, nested ones included, applied as the API server
/// applies them to a ClusterPromotion's `profileSpec` (ClusterProfile's `spec` has the same Go
/// types and the same defaults). Always applied to an object that is there: a promotion without
/// `profileSpec` has none, while its generated profile has them all.
pub(crate) fn with_defaults(spec: Value) -> Value {
    let spec = match spec {
        Value::Object(map) => Value::Object(map),
        _ => Value::Object(serde_json::Map::new()),
    };
    let object = serde_json::json!({
        "apiVersion": crate::model::API_VERSION,
        "kind": crate::model::KIND,
        "metadata": {"name": "defaults"},
        "spec": {"profileSpec": spec, "stages": []},
    });
    match crd_schema::Crd::embedded().version(crate::model::API_VERSION) {
        Some(version) => version
            .decoded(&object)
            .pointer("/spec/profileSpec")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({})),
        None => object["spec"]["profileSpec"].clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::SPEC_CHANGE_ANNOTATION;
    use crate::rollout::stages_hash;
    use serde_json::json;

    fn promotion(chart: &str, stages_hash: Option<&str>) -> Value {
        let mut status = json!({"stages": [
            {"name": "dev", "lastUpdateReconciledTime": "2026-02-16T07:00:00Z",
             "lastSuccessfulAppliedTime": "2026-02-16T07:02:00Z"},
        ]});
        if let Some(h) = stages_hash {
            status["stagesHash"] = json!(h);
        }
        json!({
            "metadata": {"name": "p"},
            "spec": {
                "profileSpec": {"helmCharts": [{"releaseName": "k", "releaseNamespace": "k",
                                                "chartVersion": chart}]},
                "stages": [
                    {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                     "trigger": {"auto": {"postDelayHealthChecks": [{"name": "pods"}]}}},
                    {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}
                ]
            },
            "status": status
        })
    }

    fn profile(chart: &str) -> Value {
        json!({"metadata": {"name": "p-dev"}, "spec": {
            "clusterSelector": {"matchLabels": {"env": "dev"}},
            "helmCharts": [{"chartVersion": chart, "releaseNamespace": "k", "releaseName": "k"}],
            "validateHealths": [{"name": "pods"}]
        }})
    }

    fn judge(object: &Value, profile: Option<&Value>) -> Freshness {
        let typed: ClusterPromotion = serde_json::from_value(object.clone()).unwrap();
        freshness(object, &typed, profile)
    }

    #[test]
    fn the_first_stage_profile_tells_whether_profile_spec_was_picked_up() {
        let object = promotion("3.7.0", None);
        assert_eq!(judge(&object, Some(&profile("3.7.0"))), Freshness::Current);
        let stale = judge(&object, Some(&profile("3.6.2")));
        assert!(
            matches!(
                stale,
                Freshness::Stale {
                    signal: StaleSignal::StageProfile,
                    ..
                }
            ),
            "{stale:?}"
        );
    }

    #[test]
    fn a_stages_hash_that_differs_is_a_stage_change_not_picked_up() {
        let object = promotion("3.7.0", Some("not-the-hash"));
        assert!(matches!(
            judge(&object, Some(&profile("3.7.0"))),
            Freshness::Stale {
                signal: StaleSignal::StagesHash,
                ..
            }
        ));
        let current = stages_hash(&tree_of(&object)).unwrap();
        let object = promotion("3.7.0", Some(&current));
        assert_eq!(judge(&object, Some(&profile("3.7.0"))), Freshness::Current);
    }

    #[test]
    fn without_the_profile_the_webhook_record_is_compared_with_the_restart() {
        let mut object = promotion("3.7.0", None);
        object["metadata"]["annotations"] = json!({SPEC_CHANGE_ANNOTATION:
            r#"{"user":"carol","time":"2026-02-16T08:00:00Z"}"#});
        assert!(matches!(
            judge(&object, None),
            Freshness::Stale {
                signal: StaleSignal::SpecChangeRecord,
                ..
            }
        ));
        object["metadata"]["annotations"] = json!({SPEC_CHANGE_ANNOTATION:
            r#"{"user":"carol","time":"2026-02-16T06:59:00Z"}"#});
        assert_eq!(judge(&object, None), Freshness::Current);
    }

    #[test]
    fn crd_defaults_on_one_side_only_are_no_difference() {
        let mut object = promotion("3.7.0", None);
        object["spec"]
            .as_object_mut()
            .unwrap()
            .remove("profileSpec");
        let generated = json!({"metadata": {"name": "p-dev"}, "spec": {
            "clusterSelector": {"matchLabels": {"env": "dev"}}, "syncMode": "Continuous",
            "tier": 100, "continueOnConflict": false, "continueOnError": false,
            "reloader": false, "stopMatchingBehavior": "WithdrawPolicies"
        }});
        assert_eq!(judge(&object, Some(&generated)), Freshness::Current);
    }

    #[test]
    fn no_status_is_never_stale() {
        let mut object = promotion("3.7.0", Some("x"));
        object["status"] = json!({});
        assert_eq!(judge(&object, Some(&profile("1"))), Freshness::Current);
    }
}
