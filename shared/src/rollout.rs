//! What makes Sveltos start a new rollout: restart a ClusterPromotion's pipeline from the first
//! stage, reset `status.stages`, and (through our webhook) invalidate the approvals given for the
//! previous rollout.
//!
//! addon-controller's `needsPromotionRestart` (v1.13.0, `controllers/clusterpromotion_controller.go`)
//! keeps two hashes in status and restarts when either differs from the hash of the current spec:
//! - `stagesHash`: sha256 of `json.Marshal([]StageHashable{Name, ClusterSelector})`. Triggers are
//!   left out, so approving a gate or editing a delay never restarts anything. Reproduced exactly
//!   by [`stages_hash`]: Go's encoder is simple enough for these two fields.
//! - `profileSpecHash`: sha256 of `json.Marshal(ProfileSpec)` after sorting eight lists by their
//!   identity (`getProfileSpecHash` and `controllers/sort.go`). Reproducing Go's encoding of the
//!   whole ProfileSpec type would mean porting every nested Go type's field order, so the
//!   comparison here is semantic instead: the same sorting, then JSON equality with Go's
//!   `omitempty` in mind ([`profile_spec_equivalent`]).
//!
//! One definition, used by the webhook (which approvals a new rollout resets), `diff` (whether
//! applying a manifest restarts the pipeline) and the live view (whether the status still
//! describes the previous rollout).

use base64::Engine;
use go_text::json::GoJson;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::tree::{field, pointer, same, tree_of, Tree};

/// The `profileSpec` lists Sveltos sorts before hashing, with the members that order them
/// (`controllers/sort.go`). A list not named here is hashed in the order written, so reordering it
/// starts a new rollout.
const SORTED_LISTS: [(&str, SortKey); 8] = [
    (
        "helmCharts",
        SortKey::Fields(&["repositoryURL", "releaseNamespace", "releaseName"]),
    ),
    (
        "kustomizationRefs",
        SortKey::Fields(&["kind", "namespace", "name"]),
    ),
    (
        "policyRefs",
        SortKey::Fields(&["kind", "namespace", "name"]),
    ),
    ("dependsOn", SortKey::Itself),
    ("templateResourceRefs", SortKey::Fields(&["identifier"])),
    ("validateHealths", SortKey::Fields(&["name"])),
    ("patches", SortKey::Fields(&["patch"])),
    ("driftExclusions", SortKey::DriftExclusion),
];

#[derive(Clone, Copy)]
enum SortKey {
    /// Compare these string members in turn (a missing member is Go's zero value, "").
    Fields(&'static [&'static str]),
    /// The element is a string.
    Itself,
    /// `getSortedDriftExclusions`: the sorted `paths` joined by NUL, then the target's fields.
    DriftExclusion,
}

impl SortKey {
    fn key(self, element: &Tree) -> Vec<u8> {
        let text = |v: Option<&Tree>| v.and_then(Tree::as_str).unwrap_or("").as_bytes().to_vec();
        match self {
            SortKey::Itself => text(Some(element)),
            SortKey::Fields(fields) => {
                // Go compares field by field; joining with a byte below every character that
                // can appear keeps the same order.
                let mut key = Vec::new();
                for (i, f) in fields.iter().enumerate() {
                    if i > 0 {
                        key.push(0);
                    }
                    key.extend(text(field(element, f)));
                }
                key
            }
            SortKey::DriftExclusion => {
                let mut paths: Vec<&str> = field(element, "paths")
                    .and_then(Tree::as_array)
                    .map(|p| p.iter().filter_map(Tree::as_str).collect())
                    .unwrap_or_default();
                paths.sort_unstable();
                let mut key = paths.join("\u{0}").into_bytes();
                if let Some(target) = field(element, "target").filter(|t| t.is_object()) {
                    key.push(1);
                    let parts: Vec<Vec<u8>> = ["group", "version", "kind", "namespace", "name"]
                        .iter()
                        .map(|f| text(field(target, f)))
                        .collect();
                    key.extend(parts.join(&0u8));
                }
                key
            }
        }
    }
}

/// Why a change starts a new rollout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Restart {
    /// `spec.profileSpec` differs as Sveltos hashes it. `fields` names the top-level profileSpec
    /// members that differ (in the new object's order, then removed ones), and `reordered` those
    /// among them whose only change is the order of a list Sveltos does not sort.
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

/// Whether replacing `old` by `new` (whole ClusterPromotion objects) starts a new rollout, and
/// why. A profileSpec change is reported before a stages change.
pub fn restart(old: &Tree, new: &Tree) -> Option<Restart> {
    let (a, b) = (profile_spec(old), profile_spec(new));
    if !profile_spec_equivalent(a, b) {
        return Some(profile_spec_restart(a, b));
    }
    (stages_json(old) != stages_json(new)).then_some(Restart::Stages)
}

/// [`restart`] for `serde_json` values.
pub fn restart_of(old: &serde_json::Value, new: &serde_json::Value) -> Option<Restart> {
    restart(&tree_of(old), &tree_of(new))
}

/// Only the stage half of [`restart`]: names, order or selectors differ.
pub fn stages_changed(old: &Tree, new: &Tree) -> bool {
    stages_json(old) != stages_json(new)
}

fn profile_spec<'a, 'ctx>(object: &'a Tree<'ctx>) -> Option<&'a Tree<'ctx>> {
    pointer(object, "/spec/profileSpec")
}

/// Two `spec.profileSpec` values hash alike in Sveltos: the sorted lists compared in Sveltos'
/// order, everything else as written, and Go's `omitempty` honoured (a member that is null, an
/// empty list or an empty object is the same as an absent one).
pub fn profile_spec_equivalent(a: Option<&Tree>, b: Option<&Tree>) -> bool {
    let (a, b) = (members(a), members(b));
    a.len() == b.len()
        && a.iter().all(|(key, va)| {
            b.iter()
                .find(|(k, _)| k == key)
                .is_some_and(|(_, vb)| member_equivalent(key, va, vb))
        })
}

fn profile_spec_restart(a: Option<&Tree>, b: Option<&Tree>) -> Restart {
    let (a, b) = (members(a), members(b));
    let mut fields = Vec::new();
    let mut reordered = Vec::new();
    for (key, vb) in &b {
        match a.iter().find(|(k, _)| k == key) {
            Some((_, va)) if member_equivalent(key, va, vb) => {}
            Some((_, va)) => {
                if same_elements(va, vb) {
                    reordered.push(key.to_string());
                }
                fields.push(key.to_string());
            }
            None => fields.push(key.to_string()),
        }
    }
    for (key, _) in &a {
        if !b.iter().any(|(k, _)| k == key) {
            fields.push(key.to_string());
        }
    }
    Restart::ProfileSpec { fields, reordered }
}

/// The members of an object that Go's encoder would write: null, `[]` and `{}` are left out.
fn members<'a, 'ctx>(object: Option<&'a Tree<'ctx>>) -> Vec<(&'a str, &'a Tree<'ctx>)> {
    match object {
        Some(Tree::Object(map)) => map.iter().filter(|(_, v)| !is_empty(v)).collect(),
        _ => Vec::new(),
    }
}

fn is_empty(value: &Tree) -> bool {
    match value {
        Tree::Null => true,
        Tree::Array(items) => items.is_empty(),
        Tree::Object(map) => map.is_empty(),
        _ => false,
    }
}

fn member_equivalent(key: &str, a: &Tree, b: &Tree) -> bool {
    match SORTED_LISTS.iter().find(|(name, _)| *name == key) {
        Some((_, sort)) => match (a, b) {
            (Tree::Array(x), Tree::Array(y)) => {
                x.len() == y.len()
                    && sorted(x, *sort)
                        .into_iter()
                        .zip(sorted(y, *sort))
                        .all(|(v, w)| same(v, w))
            }
            _ => same(a, b),
        },
        None => same(a, b),
    }
}

/// The elements in Sveltos' order. Go's `sort.Sort` is an insertion sort (stable) for lists of up
/// to 12 elements, which covers real profiles; a stable sort is the faithful choice there.
fn sorted<'a, 'ctx>(items: &'a [Tree<'ctx>], sort: SortKey) -> Vec<&'a Tree<'ctx>> {
    let mut keyed: Vec<(Vec<u8>, &Tree)> = items.iter().map(|v| (sort.key(v), v)).collect();
    keyed.sort_by(|x, y| x.0.cmp(&y.0));
    keyed.into_iter().map(|(_, v)| v).collect()
}

/// The same elements in another order (for saying "only the order changes").
fn same_elements(a: &Tree, b: &Tree) -> bool {
    let (Tree::Array(x), Tree::Array(y)) = (a, b) else {
        return false;
    };
    if x.len() != y.len() {
        return false;
    }
    let mut unused: Vec<&Tree> = y.iter().collect();
    x.iter()
        .all(|v| match unused.iter().position(|w| same(v, w)) {
            Some(i) => {
                unused.swap_remove(i);
                true
            }
            None => false,
        })
}

/// `json.Marshal([]StageHashable)` as Go writes it, or `None` when the stages are not shaped
/// like the Go types (the API server would have rejected such an object).
fn stages_json(object: &Tree) -> Option<String> {
    let stages = pointer(object, "/spec/stages")?.as_array()?;
    let mut w = GoJson::new();
    w.begin_array();
    for stage in stages {
        w.begin_object();
        w.field("name").string(field(stage, "name")?.as_str()?);
        w.field("clusterSelector");
        selector_json(&mut w, field(stage, "clusterSelector"))?;
        w.end_object();
    }
    w.end_array();
    Some(w.finish())
}

/// `metav1.LabelSelector` (inlined in libsveltos' `Selector`): `matchLabels` (a Go map: sorted
/// keys), then `matchExpressions`, each omitted when empty.
fn selector_json(w: &mut GoJson, selector: Option<&Tree>) -> Option<()> {
    let selector = match selector {
        None | Some(Tree::Null) => None,
        Some(s @ Tree::Object(_)) => Some(s),
        Some(_) => return None,
    };
    w.begin_object();
    if let Some(labels) = selector.and_then(|s| field(s, "matchLabels")) {
        let mut pairs: Vec<(&str, &str)> = match labels {
            Tree::Object(map) => map
                .iter()
                .map(|(k, v)| Some((k, v.as_str()?)))
                .collect::<Option<_>>()?,
            Tree::Null => Vec::new(),
            _ => return None,
        };
        if !pairs.is_empty() {
            pairs.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            w.field("matchLabels").begin_object();
            for (k, v) in pairs {
                w.field(k).string(v);
            }
            w.end_object();
        }
    }
    if let Some(exprs) = selector.and_then(|s| field(s, "matchExpressions")) {
        let exprs: &[Tree] = match exprs {
            Tree::Array(items) => items,
            Tree::Null => &[],
            _ => return None,
        };
        if !exprs.is_empty() {
            w.field("matchExpressions").begin_array();
            for e in exprs {
                w.begin_object();
                w.field("key")
                    .string(field(e, "key").and_then(Tree::as_str).unwrap_or(""));
                w.field("operator")
                    .string(field(e, "operator").and_then(Tree::as_str).unwrap_or(""));
                let values: Vec<&str> = match field(e, "values") {
                    Some(Tree::Array(v)) => v.iter().map(Tree::as_str).collect::<Option<_>>()?,
                    None | Some(Tree::Null) => Vec::new(),
                    Some(_) => return None,
                };
                if !values.is_empty() {
                    w.field("values").begin_array();
                    for v in values {
                        w.string(v);
                    }
                    w.end_array();
                }
                w.end_object();
            }
            w.end_array();
        }
    }
    w.end_object();
    Some(())
}

/// `status.stagesHash` as Sveltos computes it for this object's spec (base64 of the sha256), or
/// `None` when the stages are not shaped like the Go types.
pub fn stages_hash(object: &Tree) -> Option<String> {
    let json = stages_json(object)?;
    let digest = Sha256::digest(json.as_bytes());
    Some(base64::engine::general_purpose::STANDARD.encode(digest))
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
            stages_json(&tree_of(&object)).unwrap(),
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
            stages_json(&tree_of(&exprs)).unwrap(),
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
