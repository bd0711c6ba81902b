//! Which objects a check evaluates, as addon-controller's `fetchResources` lists them: the
//! check's group/version/kind, `labelFilters` turned into a label selector (`k=v`, `k!=v`, `k`,
//! `!k`), and `namespace` as the field selector `metadata.namespace=<ns>`.

use serde_json::Value;

use super::spec::{Check, LabelFilter, Operation};

/// The label selector Sveltos sends (`addLabelFilters`); empty when there are no filters.
pub fn label_selector(filters: &[LabelFilter]) -> String {
    let mut out = String::new();
    for f in filters {
        // Sveltos adds the separator before looking at the operation, so an unknown operation
        // leaves an empty term behind; the API server ignores empty terms.
        if !out.is_empty() {
            out.push(',');
        }
        match f.operation {
            Operation::Equal => out.push_str(&format!("{}={}", f.key, f.value)),
            Operation::Different => out.push_str(&format!("{}!={}", f.key, f.value)),
            Operation::Has => out.push_str(&f.key),
            Operation::DoesNotHave => out.push_str(&format!("!{}", f.key)),
            Operation::Other(_) => {}
        }
    }
    out
}

/// The field selector Sveltos sends; empty when the check has no namespace.
pub fn field_selector(check: &Check) -> String {
    if check.namespace.is_empty() {
        String::new()
    } else {
        format!("metadata.namespace={}", check.namespace)
    }
}

/// Whether an object is one the check's LIST would return.
pub fn selects(check: &Check, object: &Value) -> bool {
    let api_version = object.get("apiVersion").and_then(Value::as_str);
    let kind = object.get("kind").and_then(Value::as_str);
    if api_version != Some(check.api_version().as_str()) || kind != Some(check.kind.as_str()) {
        return false;
    }
    if !check.namespace.is_empty() && namespace_of(object) != check.namespace {
        return false;
    }
    check
        .label_filters
        .iter()
        .all(|f| filter_matches(f, object.pointer("/metadata/labels")))
}

/// Same kind (group, version, kind) as the check, whatever the namespace and labels.
pub fn same_kind(check: &Check, object: &Value) -> bool {
    object.get("apiVersion").and_then(Value::as_str) == Some(check.api_version().as_str())
        && object.get("kind").and_then(Value::as_str) == Some(check.kind.as_str())
}

pub fn namespace_of(object: &Value) -> &str {
    object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Kubernetes label-selector semantics: `k!=v` also matches objects without the label.
fn filter_matches(filter: &LabelFilter, labels: Option<&Value>) -> bool {
    let label = labels
        .and_then(|l| l.get(&filter.key))
        .and_then(Value::as_str);
    match filter.operation {
        Operation::Equal => label == Some(filter.value.as_str()),
        Operation::Different => label != Some(filter.value.as_str()),
        Operation::Has => label.is_some(),
        Operation::DoesNotHave => label.is_none(),
        Operation::Other(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(filters: Vec<LabelFilter>, namespace: &str) -> Check {
        Check {
            stage: None,
            path: String::new(),
            name: "c".into(),
            feature: "Resources".into(),
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            namespace: namespace.into(),
            label_filters: filters,
            script: None,
            rules: vec![],
            job_check: false,
            metric_source: false,
            metric_queries: vec![],
            feature_deployed: true,
        }
    }

    fn f(key: &str, operation: Operation, value: &str) -> LabelFilter {
        LabelFilter {
            key: key.into(),
            operation,
            value: value.into(),
        }
    }

    fn deployment(ns: &str, labels: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "d", "namespace": ns, "labels": labels}})
    }

    #[test]
    fn selectors_are_written_as_sveltos_writes_them() {
        let filters = vec![
            f("app", Operation::Equal, "web"),
            f("tier", Operation::Different, "db"),
            f("team", Operation::Has, ""),
            f("legacy", Operation::DoesNotHave, ""),
        ];
        assert_eq!(label_selector(&filters), "app=web,tier!=db,team,!legacy");
        assert_eq!(label_selector(&[]), "");
        assert_eq!(
            field_selector(&check(vec![], "cert-manager")),
            "metadata.namespace=cert-manager"
        );
    }

    #[test]
    fn label_filters_follow_selector_semantics() {
        let c = check(
            vec![
                f("app", Operation::Equal, "web"),
                f("tier", Operation::Different, "db"),
                f("team", Operation::Has, ""),
                f("legacy", Operation::DoesNotHave, ""),
            ],
            "",
        );
        assert!(selects(
            &c,
            &deployment("a", json!({"app": "web", "team": "x"}))
        ));
        assert!(!selects(
            &c,
            &deployment("a", json!({"app": "web", "team": "x", "tier": "db"}))
        ));
        assert!(selects(
            &c,
            &deployment("a", json!({"app": "web", "team": "x", "tier": "fe"}))
        ));
        assert!(!selects(&c, &deployment("a", json!({"app": "web"}))));
        assert!(!selects(
            &c,
            &deployment("a", json!({"app": "web", "team": "x", "legacy": "1"}))
        ));
        assert!(!selects(
            &c,
            &deployment("a", json!({"app": "api", "team": "x"}))
        ));
    }

    #[test]
    fn namespace_and_kind_narrow_the_list() {
        let c = check(vec![], "cert-manager");
        assert!(selects(&c, &deployment("cert-manager", json!({}))));
        assert!(!selects(&c, &deployment("default", json!({}))));
        let mut wrong_version = deployment("cert-manager", json!({}));
        wrong_version["apiVersion"] = json!("apps/v1beta1");
        assert!(!selects(&c, &wrong_version));
        assert!(selects(
            &check(vec![], ""),
            &deployment("anywhere", json!({}))
        ));
    }
}
