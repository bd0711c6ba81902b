//! Label selectors: rendering in `kubectl` syntax and matching against labels.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// `env=prod,tier in (a,b),!legacy` — the form `kubectl get -l` accepts.
pub fn to_string(selector: &LabelSelector) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(labels) = &selector.match_labels {
        parts.extend(labels.iter().map(|(k, v)| format!("{k}={v}")));
    }
    for expr in selector.match_expressions.iter().flatten() {
        let values = expr.values.clone().unwrap_or_default().join(",");
        parts.push(match expr.operator.as_str() {
            "In" => format!("{} in ({values})", expr.key),
            "NotIn" => format!("{} notin ({values})", expr.key),
            "Exists" => expr.key.clone(),
            "DoesNotExist" => format!("!{}", expr.key),
            other => format!("{} {other} ({values})", expr.key),
        });
    }
    parts.join(",")
}

/// Sveltos semantics: an empty selector matches no cluster (unlike Kubernetes, where it matches
/// everything). An unknown operator matches nothing.
pub fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let has_labels = selector
        .match_labels
        .as_ref()
        .is_some_and(|m| !m.is_empty());
    let has_exprs = selector
        .match_expressions
        .as_ref()
        .is_some_and(|m| !m.is_empty());
    if !has_labels && !has_exprs {
        return false;
    }
    let labels_ok = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    labels_ok
        && selector.match_expressions.iter().flatten().all(|e| {
            let values = e.values.as_deref().unwrap_or(&[]);
            let current = labels.get(&e.key);
            match e.operator.as_str() {
                "In" => current.is_some_and(|c| values.contains(c)),
                "NotIn" => current.is_none_or(|c| !values.contains(c)),
                "Exists" => current.is_some(),
                "DoesNotExist" => current.is_none(),
                _ => false,
            }
        })
}
