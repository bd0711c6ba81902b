//! The history of a promotion adopted mid-rollout: what its stage profiles run, as revisions
//! ([`crate::history`]). Here, not in `history`, because it builds the stage profiles a rollout
//! would apply ([`super::bodies`]) and compares them as the reconcile does ([`super::same_spec`]).

use serde_json::{json, Value};

use crate::history::{revision_name, Record, Revision, StageRecord};
use crate::rollout::{identity_of, RolloutId};

/// The configurations a promotion seen for the first time runs on its stages other than its
/// spec's rollout `current`: one revision each (numbered before the current one, the furthest
/// stage's first, as it is the oldest), its `data` the profileSpec the stage profile holds (its
/// cluster selector and the stage's post-delay checks taken out) with the promotion's stages,
/// recorded as reached by those stages and superseded by the current rollout. Whether they
/// completed is unknown: none is a default rollback target.
pub fn adopted(promotion: &Value, profiles: &[Value], now: &str) -> Vec<Revision> {
    let Some(current) = RolloutId::in_status(promotion) else {
        return Vec::new();
    };
    let (Some(name), Some(uid)) = (
        promotion.pointer("/metadata/name").and_then(Value::as_str),
        promotion.pointer("/metadata/uid").and_then(Value::as_str),
    ) else {
        return Vec::new();
    };
    let Ok(typed) = crate::model::ClusterPromotion::decode(promotion) else {
        return Vec::new();
    };
    // (rollout, profileSpec, stages running it), the furthest stage's first.
    let mut found: Vec<(RolloutId, Value, Vec<String>)> = Vec::new();
    for stage in typed.spec.stages.iter().rev() {
        let profile_name = crate::model::stage_profile_name(name, &stage.name);
        let Some(have) = profiles
            .iter()
            .find(|p| p.pointer("/metadata/name").and_then(Value::as_str) == Some(&profile_name))
        else {
            continue;
        };
        let want = super::bodies::stage_profile(&typed, promotion, stage, &[]);
        let with_checks = stage
            .trigger
            .as_ref()
            .map(|t| {
                t.auto
                    .as_ref()
                    .and_then(|a| a.post_delay_health_checks.clone())
                    .or_else(|| {
                        t.manual
                            .as_ref()
                            .and_then(|m| m.post_delay_health_checks.clone())
                    })
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        let want_checked = super::bodies::stage_profile(&typed, promotion, stage, &with_checks);
        if super::same_spec(have, &want) || super::same_spec(have, &want_checked) {
            continue;
        }
        let Some(profile_spec) = profile_spec_of(have, &with_checks) else {
            continue;
        };
        let mut run = promotion.clone();
        run["spec"]["profileSpec"] = profile_spec.clone();
        let Ok(id) = identity_of(&run).map(|i| i.id) else {
            continue;
        };
        if id == current {
            continue;
        }
        match found.iter_mut().find(|(r, _, _)| *r == id) {
            Some((_, _, stages)) => stages.push(stage.name.clone()),
            None => found.push((id, profile_spec, vec![stage.name.clone()])),
        }
    }
    found
        .into_iter()
        .enumerate()
        .map(|(i, (id, profile_spec, stages))| {
            let number = i as i64 + 1;
            let record = Record {
                stages_hash: id.stages_hash.clone(),
                profile_spec_hash: id.profile_spec_hash.clone(),
                started: now.to_string(),
                stages: stages
                    .iter()
                    .rev()
                    .map(|s| StageRecord {
                        name: s.clone(),
                        reached: now.to_string(),
                        deployed: None,
                    })
                    .collect(),
                superseded_by: Some(number + 1),
                superseded: Some(now.to_string()),
                ..Record::default()
            };
            Revision {
                name: revision_name(name, uid, &id),
                number,
                data: json!({
                    "profileSpec": profile_spec,
                    "stages": promotion.pointer("/spec/stages").cloned().unwrap_or(Value::Null),
                }),
                record: Some(record),
            }
        })
        .collect()
}

/// The profileSpec a stage profile holds: its spec without the cluster selector, and without
/// the stage's post-delay checks the controller appended to its health checks.
fn profile_spec_of(profile: &Value, post_delay: &[crate::model::ValidateHealth]) -> Option<Value> {
    let mut spec = profile.get("spec")?.as_object()?.clone();
    spec.remove("clusterSelector");
    if !post_delay.is_empty() {
        let appended: Vec<Value> = post_delay
            .iter()
            .filter_map(|c| serde_json::to_value(c).ok())
            .collect();
        if let Some(checks) = spec
            .get_mut("validateHealths")
            .and_then(Value::as_array_mut)
        {
            checks.retain(|c| {
                !appended.iter().any(|a| {
                    a.get("name") == c.get("name") && a.get("featureID") == c.get("featureID")
                })
            });
            if checks.is_empty() {
                spec.remove("validateHealths");
            }
        }
    }
    Some(Value::Object(spec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::plan;
    use crate::history::tests::{apply, numbers, promotion, NOW};

    /// A promotion adopted mid-rollout: its spec's rollout is at dev, but prod's profile still runs
    /// an earlier chart. Its history starts with a revision for what prod runs, superseded by the
    /// spec's; a stage running the spec's configuration adds none.
    #[test]
    fn an_adopted_promotion_gets_a_revision_for_what_its_profiles_run() {
        let stage_profile = |p: &Value, i: usize| {
            let typed = crate::model::ClusterPromotion::decode(p).unwrap();
            crate::reconcile::bodies::stage_profile(&typed, p, &typed.spec.stages[i], &[])
        };
        let earlier = promotion("3.6.2", &["dev", "prod"], true);
        let p = promotion("3.7.0", &["dev"], false);
        let profiles = vec![stage_profile(&p, 0), stage_profile(&earlier, 1)];
        let mut revisions = Vec::new();
        let writes = plan(&p, &revisions, adopted(&p, &profiles, NOW), 10, "ns", NOW);
        apply(&mut revisions, &writes);
        assert_eq!(numbers(&revisions), [1, 2]);
        let one = revisions.iter().find(|r| r.number == 1).unwrap();
        assert_eq!(
            one.data["profileSpec"]["helmCharts"][0]["chartVersion"],
            json!("3.6.2")
        );
        let record = one.record.clone().unwrap();
        assert_eq!(record.outcome(), "superseded by 2");
        assert_eq!(record.stages[0].name, "prod");
        assert_eq!(
            record.rollout(),
            identity_of(&earlier).unwrap().id,
            "the same rollout as the spec that made it"
        );
        // Every stage on the spec's configuration: only its revision.
        let mut only = Vec::new();
        apply(
            &mut only,
            &plan(
                &p,
                &[],
                adopted(&p, &[stage_profile(&p, 0)], NOW),
                10,
                "ns",
                NOW,
            ),
        );
        assert_eq!(numbers(&only), [1]);
    }
}
