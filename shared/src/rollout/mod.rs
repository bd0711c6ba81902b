//! What makes Sveltos start a new rollout, and the name of a rollout.
//!
//! addon-controller v1.13.0 (`needsPromotionRestart`) keeps two hashes in status and restarts the
//! pipeline from the first stage when either differs from the hash of the current spec:
//! - `stagesHash`: sha256 of `json.Marshal([]StageHashable{Name, ClusterSelector})`. Triggers are
//!   left out, so approving a gate or editing a delay never restarts anything;
//! - `profileSpecHash`: sha256 of `json.Marshal(ProfileSpec)` after sorting eight lists
//!   ([`sorting`]).
//!
//! Both are reproduced byte for byte ([`identity`]): Go's field order ([`go_types`]), `omitempty`,
//! map key order, duration normalisation and string escaping ([`marshal`]), from the object as
//! the API server stores it (CRD defaults applied). The pair is the rollout's identity
//! ([`RolloutId`]): a status, an approval or a ClusterProfile belongs to the rollout now in the
//! spec exactly when it carries the same pair.
//!
//! One definition, used by the webhook (which approvals a new rollout resets), `diff` (whether
//! applying a manifest restarts the pipeline), the live view (whether the status still describes
//! the previous rollout) and the reconcile decision.

mod go_types;
mod marshal;
mod sorting;

use base64::Engine;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::tree::{field, pointer, tree_of, Tree};

use marshal::Marshaler;
pub use marshal::Mismatch;

/// A rollout's name: the hashes Sveltos keeps in `status` for the spec it is rolling out
/// (base64 of sha256, 44 characters each).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutId {
    pub stages_hash: String,
    pub profile_spec_hash: String,
}

impl RolloutId {
    /// The pair recorded in a promotion's `status`, when both are there.
    pub fn in_status(object: &serde_json::Value) -> Option<RolloutId> {
        let status = object.get("status")?;
        let text = |key: &str| {
            status
                .get(key)
                .and_then(serde_json::Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        Some(RolloutId {
            stages_hash: text("stagesHash")?,
            profile_spec_hash: text("profileSpecHash")?,
        })
    }

    /// A short form for messages and records: the first 8 characters of each hash.
    pub fn short(&self) -> String {
        let cut = |s: &str| s.chars().take(8).collect::<String>();
        format!(
            "{}/{}",
            cut(&self.stages_hash),
            cut(&self.profile_spec_hash)
        )
    }
}

/// The identity of the rollout a ClusterPromotion's spec describes, with what could not be
/// hashed as Sveltos v1.13.0 hashes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    #[serde(flatten)]
    pub id: RolloutId,
    /// Members of `spec.profileSpec` or of a stage that Sveltos v1.13.0's Go types do not have
    /// (for example `validateHealths[].jobCheck`, added to libsveltos later): v1.13.0 drops them,
    /// so they are not in these hashes, but a newer Sveltos build may hash them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unhashed: Vec<String>,
}

/// The rollout identity of a ClusterPromotion object (as the API server stores it: apply the
/// CRD's defaults first to a file). `Err` names a value Go could not decode into its type.
pub fn identity(object: &Tree) -> Result<Identity, Mismatch> {
    let (stages, mut unhashed) = stages_json(object)?;
    let (profile, dropped) = profile_spec_json(object)?;
    unhashed.extend(dropped);
    Ok(Identity {
        id: RolloutId {
            stages_hash: digest(&stages),
            profile_spec_hash: digest(&profile),
        },
        unhashed,
    })
}

/// [`identity`] of a `serde_json` value.
pub fn identity_of(object: &serde_json::Value) -> Result<Identity, Mismatch> {
    identity(&tree_of(object))
}

/// `status.stagesHash` as Sveltos computes it for this object's spec, or `None` when the stages
/// are not shaped like the Go types (the API server would have refused such an object).
pub fn stages_hash(object: &Tree) -> Option<String> {
    stages_json(object).ok().map(|(json, _)| digest(&json))
}

/// `status.profileSpecHash` as Sveltos computes it for this object's spec, or `None` when the
/// profile spec is not shaped like the Go types.
pub fn profile_spec_hash(object: &Tree) -> Option<String> {
    profile_spec_json(object)
        .ok()
        .map(|(json, _)| digest(&json))
}

fn digest(json: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(Sha256::digest(json.as_bytes()))
}

/// `json.Marshal([]StageHashable)`: one `{name, clusterSelector}` per stage, in spec order.
pub fn stages_json(object: &Tree) -> Result<(String, Vec<String>), Mismatch> {
    let stages: &[Tree] = match pointer(object, "/spec/stages") {
        None | Some(Tree::Null) => &[],
        Some(Tree::Array(items)) => items,
        Some(_) => {
            return Err(Mismatch {
                path: "spec.stages".into(),
                expected: "a list",
            })
        }
    };
    let mut out = String::from("[");
    let mut dropped = Vec::new();
    for (i, stage) in stages.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let path = format!("spec.stages[{i}]");
        let mut m = Marshaler::new(&mut out, false);
        m.write_struct(Some(stage), go_types::STAGE_HASHABLE, &path, false)?;
        // A stage's other members (its trigger) are not dropped by Go, only not hashed.
        let selector = format!("{path}.clusterSelector.");
        m.dropped.retain(|p| p.starts_with(&selector));
        dropped.extend(m.dropped);
    }
    out.push(']');
    Ok((out, dropped))
}

/// `json.Marshal(sortedCopy(spec.profileSpec))`, and the members Go drops.
pub fn profile_spec_json(object: &Tree) -> Result<(String, Vec<String>), Mismatch> {
    marshal_profile_spec(object, true)
}

/// `json.Marshal` of `spec.profileSpec`, its lists sorted as Sveltos sorts them before hashing
/// when `sorted`, and the members Go drops.
fn marshal_profile_spec(object: &Tree, sorted: bool) -> Result<(String, Vec<String>), Mismatch> {
    let mut out = String::new();
    let mut m = Marshaler::new(&mut out, sorted);
    m.write_struct(
        pointer(object, "/spec/profileSpec"),
        go_types::PROFILE_SPEC,
        "spec.profileSpec",
        true,
    )?;
    let dropped = m.dropped;
    Ok((out, dropped))
}

/// Go types a value can be written as ([`go_value`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoTypeName {
    /// libsveltos `Selector` (a stage's `clusterSelector`).
    Selector,
    /// libsveltos `ValidateHealth`.
    ValidateHealth,
    /// `[]PolicyRef`.
    PolicyRefs,
}

/// `value` as Go writes it once decoded into the named type (declaration order, `omitempty`,
/// durations normalised), parsed back; `None` when Go could not decode it.
pub fn go_value(value: &serde_json::Value, ty: GoTypeName) -> Option<serde_json::Value> {
    let go = match ty {
        GoTypeName::Selector => go_types::Go::Struct(go_types::SELECTOR),
        GoTypeName::ValidateHealth => go_types::Go::Struct(go_types::VALIDATE_HEALTH),
        GoTypeName::PolicyRefs => go_types::Go::List(&go_types::Go::Struct(go_types::POLICY_REF)),
    };
    let mut out = String::new();
    let mut m = Marshaler::new(&mut out, false);
    m.write(Some(&tree_of(value)), &go, "").ok()?;
    serde_json::from_str(&out).ok()
}

/// `spec.profileSpec` as Go writes the typed value, lists in the user's order (what Sveltos puts
/// in a generated ClusterProfile's spec), parsed back; `None` when Go could not decode it.
pub fn go_profile_spec(object: &Tree) -> Option<serde_json::Value> {
    let (out, _) = marshal_profile_spec(object, false).ok()?;
    serde_json::from_str(&out).ok()
}

/// One member of `spec.profileSpec` as it enters the hash (sorted if Sveltos sorts it), or
/// `None` when Go leaves it out; used to name what changed.
fn profile_member_json(object: &Tree, name: &str) -> Option<String> {
    let spec = pointer(object, "/spec/profileSpec")?;
    let value = field(spec, name)?;
    let one = go_types::PROFILE_SPEC.iter().find(|f| f.name == name)?;
    let mut out = String::new();
    let mut m = Marshaler::new(&mut out, true);
    let single = serde_json_borrow::ObjectAsVec::from(vec![(name, value.clone())]);
    let fields = std::slice::from_ref(one);
    match m.write_struct(
        Some(&Tree::Object(single)),
        fields,
        "spec.profileSpec",
        true,
    ) {
        Ok(()) if out != "{}" => Some(out),
        Ok(()) => None,
        Err(e) => Some(format!("!{}", e.path)),
    }
}

/// The elements of one list member as they enter the hash, sorted as text: the same multiset in
/// another order compares equal.
fn element_texts(object: &Tree, name: &str) -> Option<Vec<String>> {
    let Tree::Array(items) = pointer(object, "/spec/profileSpec").and_then(|s| field(s, name))?
    else {
        return None;
    };
    let one = go_types::PROFILE_SPEC.iter().find(|f| f.name == name)?;
    let go_types::Go::List(elem) = &one.ty else {
        return None;
    };
    let mut texts: Vec<String> = items
        .iter()
        .map(|item| {
            let mut out = String::new();
            let mut m = Marshaler::new(&mut out, false);
            let _ = m.write(Some(item), elem, "");
            out
        })
        .collect();
    texts.sort();
    Some(texts)
}

/// Why a change starts a new rollout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Restart {
    /// `spec.profileSpec` hashes differently. `fields` names the top-level profileSpec members
    /// whose part of the hash differs (in Go's order), and `reordered` those among them whose
    /// only change is the order of a list Sveltos does not sort.
    ProfileSpec {
        fields: Vec<String>,
        reordered: Vec<String>,
    },
    /// Stage names, their order or their cluster selectors differ.
    Stages,
}

impl Restart {
    /// A few words for messages: "spec.profileSpec changes (helmCharts)".
    pub fn describe(&self) -> String {
        match self {
            Restart::ProfileSpec { fields, reordered } => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|f| {
                        if reordered.contains(f) {
                            format!("the order of {f}, which Sveltos does not sort")
                        } else {
                            f.clone()
                        }
                    })
                    .collect();
                if parts.is_empty() {
                    "spec.profileSpec changes".into()
                } else {
                    format!("spec.profileSpec changes ({})", parts.join(", "))
                }
            }
            Restart::Stages => "stage names, order or cluster selectors change".into(),
        }
    }
}

/// Whether replacing `old` by `new` (whole ClusterPromotion objects, as stored) starts a new
/// rollout, and why: their `profileSpecHash` or `stagesHash` differ. A profileSpec change is
/// reported before a stages change.
pub fn restart(old: &Tree, new: &Tree) -> Option<Restart> {
    let differ = match (profile_spec_json(old), profile_spec_json(new)) {
        (Ok((a, _)), Ok((b, _))) => a != b,
        // A value Go cannot decode (never stored by the API server): compare what was written.
        _ => !same_member(old, new, "/spec/profileSpec"),
    };
    if differ {
        return Some(profile_spec_restart(old, new));
    }
    stages_changed(old, new).then_some(Restart::Stages)
}

/// [`restart`] for `serde_json` values.
pub fn restart_of(old: &serde_json::Value, new: &serde_json::Value) -> Option<Restart> {
    restart(&tree_of(old), &tree_of(new))
}

/// Only the stage half of [`restart`]: names, order or selectors differ.
pub fn stages_changed(old: &Tree, new: &Tree) -> bool {
    match (stages_json(old), stages_json(new)) {
        (Ok((a, _)), Ok((b, _))) => a != b,
        _ => !same_member(old, new, "/spec/stages"),
    }
}

fn same_member(old: &Tree, new: &Tree, at: &str) -> bool {
    match (pointer(old, at), pointer(new, at)) {
        (Some(a), Some(b)) => crate::tree::same(a, b),
        (a, b) => a.is_none() && b.is_none(),
    }
}

fn profile_spec_restart(old: &Tree, new: &Tree) -> Restart {
    let mut fields = Vec::new();
    let mut reordered = Vec::new();
    for member in go_types::PROFILE_SPEC {
        let name = member.name;
        if profile_member_json(old, name) == profile_member_json(new, name) {
            continue;
        }
        let same_elements = element_texts(old, name)
            .zip(element_texts(new, name))
            .is_some_and(|(a, b)| a == b);
        if same_elements {
            reordered.push(name.to_string());
        }
        fields.push(name.to_string());
    }
    Restart::ProfileSpec { fields, reordered }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn promotion(profile: Value, stages: Value) -> Value {
        json!({"spec": {"profileSpec": profile, "stages": stages}})
    }

    fn restart_between(a: &Value, b: &Value) -> Option<Restart> {
        restart_of(a, b)
    }

    const STAGES: &str = r#"[{"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}}]"#;

    fn stages() -> Value {
        serde_json::from_str(STAGES).unwrap()
    }

    #[test]
    fn reordering_a_list_sveltos_sorts_is_not_a_new_rollout() {
        let charts = |order: [&str; 2]| {
            json!({"helmCharts": order.iter().map(|n| json!({
                "repositoryURL": "https://charts.example", "releaseNamespace": n, "releaseName": n,
                "chartName": n, "chartVersion": "1.0.0"
            })).collect::<Vec<_>>()})
        };
        let a = promotion(charts(["kyverno", "cert-manager"]), stages());
        let b = promotion(charts(["cert-manager", "kyverno"]), stages());
        assert_eq!(restart_between(&a, &b), None);
        let checks = |order: [&str; 2]| json!({"validateHealths": order.iter().map(|n| json!({"name": n, "featureID": "Helm"})).collect::<Vec<_>>()});
        assert_eq!(
            restart_between(
                &promotion(checks(["a", "b"]), stages()),
                &promotion(checks(["b", "a"]), stages())
            ),
            None
        );
    }

    #[test]
    fn reordering_a_list_sveltos_does_not_sort_is_a_new_rollout() {
        let checks = |order: [&str; 2]| json!({"preDeployChecks": order.iter().map(|n| json!({"name": n, "featureID": "Helm"})).collect::<Vec<_>>()});
        assert_eq!(
            restart_between(
                &promotion(checks(["a", "b"]), stages()),
                &promotion(checks(["b", "a"]), stages())
            ),
            Some(Restart::ProfileSpec {
                fields: vec!["preDeployChecks".into()],
                reordered: vec!["preDeployChecks".into()],
            })
        );
    }

    #[test]
    fn a_changed_value_is_a_new_rollout_and_names_the_field() {
        let a = promotion(json!({"tier": 100, "syncMode": "Continuous"}), stages());
        let b = promotion(json!({"syncMode": "Continuous", "tier": 90}), stages());
        let r = restart_between(&a, &b).unwrap();
        assert_eq!(r.describe(), "spec.profileSpec changes (tier)");
    }

    #[test]
    fn empty_members_are_absent_as_in_go() {
        let a = promotion(json!({"helmCharts": [], "dependsOn": null}), stages());
        let b = promotion(json!({}), stages());
        let c = json!({"spec": {"stages": stages()}});
        assert_eq!(restart_between(&a, &b), None);
        assert_eq!(restart_between(&b, &c), None);
    }

    #[test]
    fn stage_names_order_and_selectors_restart_but_triggers_do_not() {
        let base = promotion(
            json!({}),
            json!([{"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}},
                   {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}]),
        );
        let mut trigger = base.clone();
        trigger["spec"]["stages"][0]["trigger"] = json!({"manual": {"approved": true}});
        assert_eq!(restart_between(&base, &trigger), None);
        let mut swapped = base.clone();
        swapped["spec"]["stages"].as_array_mut().unwrap().swap(0, 1);
        assert_eq!(restart_between(&base, &swapped), Some(Restart::Stages));
        let mut selector = base.clone();
        selector["spec"]["stages"][1]["clusterSelector"] = json!({"matchLabels": {"env": "p"}});
        assert_eq!(restart_between(&base, &selector), Some(Restart::Stages));
    }

    #[test]
    fn stages_hash_is_go_json_sha256() {
        // Go: json.Marshal([]StageHashable{{Name: "dev", ClusterSelector: {MatchLabels:
        // {"env": "dev"}}}}) = [{"name":"dev","clusterSelector":{"matchLabels":{"env":"dev"}}}]
        let object = promotion(json!({}), stages());
        assert_eq!(
            stages_json(&tree_of(&object)).unwrap().0,
            r#"[{"name":"dev","clusterSelector":{"matchLabels":{"env":"dev"}}}]"#
        );
        let digest = Sha256::digest(
            r#"[{"name":"dev","clusterSelector":{"matchLabels":{"env":"dev"}}}]"#.as_bytes(),
        );
        assert_eq!(
            stages_hash(&tree_of(&object)).unwrap(),
            base64::engine::general_purpose::STANDARD.encode(digest)
        );
        let exprs = promotion(
            json!({}),
            json!([{"name": "a", "clusterSelector": {"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["x<y"]},
                {"key": "legacy", "operator": "DoesNotExist", "values": []}
            ], "matchLabels": {"b": "2", "a": "1"}}}, {"name": "b"}]),
        );
        assert_eq!(
            stages_json(&tree_of(&exprs)).unwrap().0,
            r#"[{"name":"a","clusterSelector":{"matchLabels":{"a":"1","b":"2"},"matchExpressions":[{"key":"tier","operator":"In","values":["x\u003cy"]},{"key":"legacy","operator":"DoesNotExist"}]}},{"name":"b","clusterSelector":{}}]"#
        );
    }

    #[test]
    fn stages_hash_equals_what_sveltos_wrote() {
        // examples/kyverno-rollout-auto.yaml: status.stagesHash as a real addon-controller wrote it.
        let object = promotion(
            json!({}),
            json!([
                {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                 "trigger": {"auto": {"delay": "2m"}}},
                {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}},
                 "trigger": {"auto": {"delay": "2m"}}},
                {"name": "production", "clusterSelector": {"matchLabels": {"env": "prod"}},
                 "trigger": {"auto": {"delay": "2m"}}}
            ]),
        );
        assert_eq!(
            stages_hash(&tree_of(&object)).as_deref(),
            Some("K+oVryzpxI5/sCfRe03pIwhkVZ00YPTFDNpRVYmpLOk=")
        );
    }

    #[test]
    fn drift_exclusions_sort_by_their_paths() {
        let a = promotion(
            json!({"driftExclusions": [{"paths": ["/b", "/a"]}, {"paths": ["/0"]}]}),
            stages(),
        );
        let b = promotion(
            json!({"driftExclusions": [{"paths": ["/0"]}, {"paths": ["/b", "/a"]}]}),
            stages(),
        );
        assert_eq!(restart_between(&a, &b), None);
    }
}
