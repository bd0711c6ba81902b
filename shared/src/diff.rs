//! Semantic difference between the ClusterProfile specs Sveltos generated for two stages.
//!
//! The stage profiles are copies of `spec.profileSpec` with two stage-specific additions that are
//! not part of "what the stage receives": the stage's `clusterSelector`, and the trigger's
//! `postDelayHealthChecks`, which Sveltos appends to the profile's `validateHealths` once the
//! stage's delay has passed. [`comparable_profile_spec`] removes both, and [`semantic_diff`]
//! compares the rest, matching list elements by identity (a Helm release, a referenced object, a
//! health check name) rather than by position, so a reordered list is not reported as a change.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;
use serde_with::skip_serializing_none;

use crate::model::{ProfileSpec, Stage};

/// Names of the health checks Sveltos appends to `stage`'s profile: the trigger's
/// `postDelayHealthChecks`, except those `profileSpec.validateHealths` already carries under
/// the same name (Sveltos decides "already included" by name only, so those are not appended).
pub fn appended_check_names(stage: &Stage, profile_spec: Option<&ProfileSpec>) -> BTreeSet<String> {
    let declared: BTreeSet<&str> = profile_spec
        .and_then(|p| p.validate_healths.as_ref())
        .map(|v| v.iter().map(|h| h.name.as_str()).collect())
        .unwrap_or_default();
    let checks = stage
        .auto()
        .and_then(|a| a.post_delay_health_checks.as_ref())
        .or_else(|| {
            stage
                .manual()
                .and_then(|m| m.post_delay_health_checks.as_ref())
        });
    checks
        .into_iter()
        .flatten()
        .map(|h| h.name.clone())
        .filter(|n| !declared.contains(n.as_str()))
        .collect()
}

/// A stage ClusterProfile spec without what differs between stages by construction: the
/// `clusterSelector` and the `validateHealths` entries named in `appended`.
pub fn comparable_profile_spec(spec: &Value, appended: &BTreeSet<String>) -> Value {
    let Some(map) = spec.as_object() else {
        return spec.clone();
    };
    let mut out = map.clone();
    out.remove("clusterSelector");
    if let Some(Value::Array(checks)) = out.get_mut("validateHealths") {
        checks.retain(|c| {
            c.get("name")
                .and_then(Value::as_str)
                .is_none_or(|n| !appended.contains(n))
        });
        if checks.is_empty() {
            out.remove("validateHealths");
        }
    }
    Value::Object(out)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ChangeKind {
    Added,
    Removed,
    Changed,
}

/// One difference. `path` is readable rather than a JSON Pointer: list elements are named by
/// their identity, e.g. `helmCharts[kyverno/kyverno-latest].chartVersion`.
#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub path: String,
    pub kind: ChangeKind,
    pub from: Option<Value>,
    pub to: Option<Value>,
}

/// Every difference between `from` and `to`, in document order of `from` then new members.
pub fn semantic_diff(from: &Value, to: &Value) -> Vec<Change> {
    let mut changes = Vec::new();
    walk("", from, to, &mut changes);
    changes
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(path: &str, from: &Value, to: &Value, out: &mut Vec<Change>) {
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                let p = join(path, k);
                match b.get(k) {
                    Some(vb) => walk(&p, va, vb, out),
                    None => out.push(removed(p, va)),
                }
            }
            for (k, vb) in b {
                if !a.contains_key(k) {
                    out.push(added(join(path, k), vb));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => walk_list(path, a, b, out),
        _ if from == to => {}
        _ => out.push(Change {
            path: path.to_string(),
            kind: ChangeKind::Changed,
            from: Some(from.clone()),
            to: Some(to.clone()),
        }),
    }
}

fn added(path: String, v: &Value) -> Change {
    Change {
        path,
        kind: ChangeKind::Added,
        from: None,
        to: Some(v.clone()),
    }
}

fn removed(path: String, v: &Value) -> Change {
    Change {
        path,
        kind: ChangeKind::Removed,
        from: Some(v.clone()),
        to: None,
    }
}

/// How Sveltos feature lists identify their elements, most specific first.
const IDENTITIES: [&[&str]; 4] = [
    &["releaseNamespace", "releaseName"],
    &["kind", "namespace", "name"],
    &["kind", "name"],
    &["name"],
];

fn identity(v: &Value, fields: &[&str]) -> Option<String> {
    let parts: Option<Vec<&str>> = fields
        .iter()
        .map(|f| v.get(*f).and_then(Value::as_str))
        .collect();
    parts.map(|p| p.join("/"))
}

/// List elements with their identity key.
type Keyed<'a> = Vec<(String, &'a Value)>;

/// Keys for every element of both lists under one identity scheme, if one is unique on both sides.
fn keyed<'a>(a: &'a [Value], b: &'a [Value]) -> Option<(Keyed<'a>, Keyed<'a>)> {
    IDENTITIES.iter().find_map(|fields| {
        let ka: Option<Vec<_>> = a
            .iter()
            .map(|v| identity(v, fields).map(|k| (k, v)))
            .collect();
        let kb: Option<Vec<_>> = b
            .iter()
            .map(|v| identity(v, fields).map(|k| (k, v)))
            .collect();
        let (ka, kb) = (ka?, kb?);
        let unique = |l: &[(String, &Value)]| {
            l.iter().map(|(k, _)| k).collect::<BTreeSet<_>>().len() == l.len()
        };
        (unique(&ka) && unique(&kb)).then_some((ka, kb))
    })
}

fn walk_list(path: &str, a: &[Value], b: &[Value], out: &mut Vec<Change>) {
    if let Some((ka, kb)) = keyed(a, b) {
        let by_key: BTreeMap<&str, &Value> = kb.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let in_a: BTreeSet<&str> = ka.iter().map(|(k, _)| k.as_str()).collect();
        for (k, va) in &ka {
            let p = format!("{path}[{k}]");
            match by_key.get(k.as_str()) {
                Some(vb) => walk(&p, va, vb, out),
                None => out.push(removed(p, va)),
            }
        }
        for (k, vb) in &kb {
            if !in_a.contains(k.as_str()) {
                out.push(added(format!("{path}[{k}]"), vb));
            }
        }
        return;
    }
    for i in 0..a.len().max(b.len()) {
        let p = format!("{path}[{i}]");
        match (a.get(i), b.get(i)) {
            (Some(va), Some(vb)) => walk(&p, va, vb, out),
            (Some(va), None) => out.push(removed(p, va)),
            (None, Some(vb)) => out.push(added(p, vb)),
            (None, None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stage(yaml_like: Value) -> Stage {
        serde_json::from_value(yaml_like).unwrap()
    }

    #[test]
    fn selector_and_appended_checks_are_not_differences() {
        let st = stage(json!({
            "name": "staging",
            "trigger": {"auto": {"postDelayHealthChecks": [{"name": "job-done"}]}}
        }));
        let appended = appended_check_names(&st, None);
        assert_eq!(appended, BTreeSet::from(["job-done".to_string()]));
        let staging = json!({
            "clusterSelector": {"matchLabels": {"env": "staging"}},
            "syncMode": "Continuous",
            "validateHealths": [{"name": "job-done", "kind": "Job"}]
        });
        let production = json!({
            "clusterSelector": {"matchLabels": {"env": "prod"}},
            "syncMode": "Continuous"
        });
        let a = comparable_profile_spec(&staging, &appended);
        let b = comparable_profile_spec(&production, &BTreeSet::new());
        assert!(semantic_diff(&a, &b).is_empty());
    }

    #[test]
    fn declared_checks_with_the_same_name_stay() {
        let st = stage(json!({
            "name": "s",
            "trigger": {"manual": {"postDelayHealthChecks": [{"name": "ready"}, {"name": "x"}]}}
        }));
        let ps: ProfileSpec =
            serde_json::from_value(json!({"validateHealths": [{"name": "ready"}]})).unwrap();
        assert_eq!(
            appended_check_names(&st, Some(&ps)),
            BTreeSet::from(["x".to_string()])
        );
    }

    #[test]
    fn helm_charts_are_matched_by_release_not_position() {
        let a = json!({"helmCharts": [
            {"releaseNamespace": "kyverno", "releaseName": "k", "chartVersion": "3.6.2"},
            {"releaseNamespace": "cm", "releaseName": "cert-manager", "chartVersion": "1.0"}
        ]});
        let b = json!({"helmCharts": [
            {"releaseNamespace": "cm", "releaseName": "cert-manager", "chartVersion": "1.0"},
            {"releaseNamespace": "kyverno", "releaseName": "k", "chartVersion": "3.7.0"}
        ]});
        assert_eq!(
            semantic_diff(&a, &b),
            vec![Change {
                path: "helmCharts[kyverno/k].chartVersion".into(),
                kind: ChangeKind::Changed,
                from: Some(json!("3.6.2")),
                to: Some(json!("3.7.0")),
            }]
        );
    }

    #[test]
    fn added_and_removed_members_and_elements() {
        let a = json!({"policyRefs": [{"kind": "ConfigMap", "namespace": "d", "name": "a"}],
                       "tier": 100});
        let b = json!({"policyRefs": [{"kind": "ConfigMap", "namespace": "d", "name": "b"}],
                       "syncMode": "Continuous"});
        let kinds: Vec<(String, ChangeKind)> = semantic_diff(&a, &b)
            .into_iter()
            .map(|c| (c.path, c.kind))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("policyRefs[ConfigMap/d/a]".into(), ChangeKind::Removed),
                ("policyRefs[ConfigMap/d/b]".into(), ChangeKind::Added),
                ("tier".into(), ChangeKind::Removed),
                ("syncMode".into(), ChangeKind::Added),
            ]
        );
    }

    #[test]
    fn lists_without_identity_compare_by_index() {
        let a = json!({"l": [1, 2]});
        let b = json!({"l": [1, 3, 4]});
        let paths: Vec<String> = semantic_diff(&a, &b).into_iter().map(|c| c.path).collect();
        assert_eq!(paths, vec!["l[1]", "l[2]"]);
    }

    #[test]
    fn non_object_spec_is_kept_as_is() {
        assert_eq!(
            comparable_profile_spec(&json!(null), &BTreeSet::new()),
            json!(null)
        );
    }
}
