//! A webhook's `matchConditions`, decided the way kube-apiserver's
//! `admission/plugin/webhook/matchconditions/matcher.go` decides them: each CEL expression sees
//! `object`, `oldObject` and `request` (the AdmissionRequest); any condition that is `false`
//! skips the webhook; otherwise an evaluation error follows the `failurePolicy` (`Fail`: the
//! request is refused with a 403, `Ignore`: the webhook is skipped); all `true` calls it.
//!
//! `authorizer` is not bound (the stand-in has no CEL authorizer library): an expression that
//! uses it fails to evaluate, and the failure policy applies.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

/// One `matchConditions[]` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchCondition {
    pub name: String,
    pub expression: String,
}

/// What the conditions decide for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchResult {
    /// Call the webhook.
    Matches,
    /// Skip it: this condition is false (or, under `Ignore`, one could not be evaluated).
    Skip,
    /// Refuse the request (`Fail` and an evaluation error): the errors, joined as Go's
    /// `utilerrors.NewAggregate` prints them.
    Error(String),
}

/// Decide for `request` (an AdmissionRequest as JSON, with `object` and `oldObject`).
pub fn evaluate(
    conditions: &[MatchCondition],
    request: &Value,
    ignore_failures: bool,
) -> MatchResult {
    let mut errors = Vec::new();
    for condition in conditions {
        match evaluate_one(&condition.expression, request) {
            Ok(true) => {}
            // A false condition skips the webhook whatever else failed.
            Ok(false) => return MatchResult::Skip,
            Err(e) => errors.push(format!(
                "expression '{}' resulted in error: {e}",
                condition.expression
            )),
        }
    }
    match errors.as_slice() {
        [] => MatchResult::Matches,
        _ if ignore_failures => MatchResult::Skip,
        [one] => MatchResult::Error(one.clone()),
        many => MatchResult::Error(format!("[{}]", many.join(", "))),
    }
}

fn evaluate_one(expression: &str, request: &Value) -> Result<bool, String> {
    thread_local! {
        static PROGRAMS: RefCell<HashMap<String, Result<Rc<cel::Program>, String>>> =
            RefCell::new(HashMap::new());
    }
    let program = PROGRAMS.with(|cache| {
        cache
            .borrow_mut()
            .entry(expression.to_string())
            .or_insert_with(|| {
                cel::Program::compile(expression)
                    .map(Rc::new)
                    .map_err(|e| format!("compilation failed: {e}"))
            })
            .clone()
    })?;
    let mut context = cel::Context::default();
    for (variable, value) in [
        ("object", &request["object"]),
        ("oldObject", &request["oldObject"]),
        ("request", request),
    ] {
        let value = cel::to_value(value).map_err(|e| e.to_string())?;
        context.add_variable_from_value(variable, value);
    }
    match program.execute(&context) {
        Ok(cel::Value::Bool(b)) => Ok(b),
        Ok(other) => Err(format!("expected a bool, got {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The condition `manifests/base/*webhookconfiguration.yaml` install.
    fn installed() -> Vec<MatchCondition> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../manifests/base/validatingwebhookconfiguration.yaml");
        let text = std::fs::read_to_string(&path).expect("the installed manifest");
        let config: Value = serde_saphyr::from_str(&text).expect("YAML");
        config["webhooks"][0]["matchConditions"]
            .as_array()
            .expect("matchConditions")
            .iter()
            .map(|c| MatchCondition {
                name: c["name"].as_str().unwrap_or_default().into(),
                expression: c["expression"].as_str().unwrap_or_default().into(),
            })
            .collect()
    }

    fn request(operation: &str, object: Value, old: Value) -> Value {
        json!({"operation": operation, "object": object, "oldObject": old})
    }

    #[test]
    fn the_installed_condition_skips_updates_that_leave_spec_and_annotations_alone() {
        let conditions = installed();
        let base = json!({"metadata": {"name": "p", "labels": {"a": "1"}, "annotations": {"x": "1"}}, "spec": {"stages": [{"name": "dev"}]}});
        let decide = |op: &str, object: &Value, old: &Value| {
            evaluate(
                &conditions,
                &request(op, object.clone(), old.clone()),
                false,
            )
        };

        assert_eq!(decide("CREATE", &base, &Value::Null), MatchResult::Matches);

        let mut labelled = base.clone();
        labelled["metadata"]["labels"]["team"] = json!("platform");
        labelled["metadata"]["finalizers"] = json!(["f"]);
        assert_eq!(decide("UPDATE", &labelled, &base), MatchResult::Skip);

        let mut annotated = base.clone();
        annotated["metadata"]["annotations"]["y"] = json!("2");
        assert_eq!(decide("UPDATE", &annotated, &base), MatchResult::Matches);

        let mut changed = base.clone();
        changed["spec"]["stages"][0]["name"] = json!("qa");
        assert_eq!(decide("UPDATE", &changed, &base), MatchResult::Matches);

        // Objects without spec or annotations compare as empty maps.
        let bare = json!({"metadata": {"name": "p"}});
        assert_eq!(decide("UPDATE", &bare, &bare), MatchResult::Skip);
        let mut with_spec = bare.clone();
        with_spec["spec"] = json!({"stages": []});
        assert_eq!(decide("UPDATE", &with_spec, &bare), MatchResult::Matches);
    }

    #[test]
    fn false_wins_then_errors_follow_the_failure_policy() {
        let broken = MatchCondition {
            name: "broken".into(),
            expression: "object.nope.deeper == 1".into(),
        };
        let never = MatchCondition {
            name: "never".into(),
            expression: "false".into(),
        };
        let req = request("CREATE", json!({"metadata": {}}), Value::Null);
        assert_eq!(
            evaluate(&[broken.clone(), never], &req, false),
            MatchResult::Skip
        );
        assert!(matches!(
            evaluate(std::slice::from_ref(&broken), &req, false),
            MatchResult::Error(e) if e.starts_with("expression 'object.nope.deeper == 1' resulted in error: ")
        ));
        assert_eq!(evaluate(&[broken], &req, true), MatchResult::Skip);
        assert_eq!(evaluate(&[], &req, false), MatchResult::Matches);
    }
}
