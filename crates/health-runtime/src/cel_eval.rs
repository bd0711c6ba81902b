//! CEL health rules, evaluated the way libsveltos' `EvaluateRules` does: one variable,
//! `resource`, bound to the object as Kubernetes' unstructured decoder builds it (whole JSON
//! numbers are `int`, others `double`), no extension libraries, a rule must return a bool, the
//! rules are OR'ed, and a rule that fails is logged and skipped.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::spec::CelRule;

/// One rule's result: `result` is `None` when the rule failed (`error` says why); Sveltos skips
/// such a rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RuleResult {
    pub name: String,
    pub result: Option<bool>,
    pub error: Option<String>,
}

/// All rules' results and the OR of them (true when there are no rules, as Sveltos treats an
/// absent `evaluateCEL`).
pub fn evaluate(rules: &[CelRule], object: &Value) -> (bool, Vec<RuleResult>) {
    if rules.is_empty() {
        return (true, Vec::new());
    }
    let resource = to_cel(object);
    let results: Vec<RuleResult> = rules
        .iter()
        .map(|r| {
            let (result, error) = match evaluate_rule(&r.rule, &resource) {
                Ok(b) => (Some(b), None),
                Err(e) => (None, Some(e)),
            };
            RuleResult {
                name: r.name.clone(),
                result,
                error,
            }
        })
        .collect();
    let healthy = results.iter().any(|r| r.result == Some(true));
    (healthy, results)
}

thread_local! {
    /// The standard environment, built once per thread (Sveltos builds one per rule; the result
    /// is the same, only slower).
    static ENV: Arc<cel::Env> = Arc::new(cel::Env::stdlib());
}

/// libsveltos `evaluateRule`, with its error wording.
pub fn evaluate_rule(rule: &str, resource: &cel::Value) -> Result<bool, String> {
    let run = || {
        // The crate's parser and interpreter panic on some inputs (see `cel_check::panics`).
        cel_check::panics::catch_expected(|| {
            let env = ENV.with(Arc::clone);
            // The checker's parser settings (cel-go's), with the standard macros expanded.
            let expr = cel_check::as_cel_go(env.parser())
                .parse(rule)
                .map_err(|e| format!("failed to parse CEL expression: {e}"))?;
            let mut context = cel::Context::with_env(env);
            context.add_variable_from_value("resource", resource.clone());
            let value = cel::Value::resolve(&expr, &context).map_err(|e| match e {
                cel::ExecutionError::UndeclaredReference(name) => format!(
                    "failed to check CEL expression: undeclared reference to '{name}' (the only \
                     variable is `resource`)"
                ),
                other => format!("failed to evaluate CEL expression: {other}"),
            })?;
            match value {
                cel::Value::Bool(b) => Ok(b),
                other => Err(format!(
                    "expected boolean result, got: {}",
                    cel_type_name(&other)
                )),
            }
        })
    };
    match promotion_findings::on_parser_stack(run) {
        Ok(r) => r,
        Err(_) => Err("failed to parse CEL expression: the parser gave up on this input".into()),
    }
}

/// cel-go's names for the types a rule can return.
fn cel_type_name(v: &cel::Value) -> &'static str {
    match v {
        cel::Value::List(_) => "list",
        cel::Value::Map(_) => "map",
        cel::Value::Int(_) => "int",
        cel::Value::UInt(_) => "uint",
        cel::Value::Float(_) => "double",
        cel::Value::String(_) => "string",
        cel::Value::Bytes(_) => "bytes",
        cel::Value::Bool(_) => "bool",
        cel::Value::Null => "null_type",
        cel::Value::Duration(_) => "google.protobuf.Duration",
        cel::Value::Timestamp(_) => "google.protobuf.Timestamp",
        _ => "type",
    }
}

/// The object as cel-go sees `resource.Object`: Kubernetes decodes a JSON number that parses as
/// an int64 to int64 (CEL `int`) and any other number to float64 (CEL `double`).
pub fn to_cel(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => cel::Value::Int(i),
            None => cel::Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: HashMap<String, cel::Value> =
                m.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            cel::Value::Map(map.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(name: &str, rule: &str) -> CelRule {
        CelRule {
            name: name.into(),
            rule: rule.into(),
        }
    }

    #[test]
    fn rules_are_ored_and_failing_rules_skipped() {
        let job = json!({"status": {"succeeded": 1}});
        let (healthy, results) = evaluate(
            &[
                rule("broken", "resource.status.missing.deeper == 1"),
                rule("syntax", "resource.status.succeeded >="),
                rule("no", "resource.status.succeeded > 5"),
                rule("yes", "resource.status.succeeded >= 1"),
            ],
            &job,
        );
        assert!(healthy);
        assert_eq!(results[0].result, None);
        assert!(results[0]
            .error
            .as_deref()
            .unwrap()
            .starts_with("failed to evaluate"));
        assert!(results[1]
            .error
            .as_deref()
            .unwrap()
            .starts_with("failed to parse"));
        assert_eq!(results[2].result, Some(false));
        assert_eq!(results[3].result, Some(true));
        let (healthy, _) = evaluate(&[rule("only-broken", "self.x")], &job);
        assert!(!healthy, "a skipped rule never makes a check healthy");
    }

    #[test]
    fn json_integers_are_cel_ints() {
        let obj = json!({"spec": {"replicas": 3, "ratio": 0.5}});
        let check = |r: &str| evaluate_rule(r, &to_cel(&obj));
        assert_eq!(check("type(resource.spec.replicas) == int"), Ok(true));
        assert_eq!(check("resource.spec.replicas * 2 == 6"), Ok(true));
        assert_eq!(check("type(resource.spec.ratio) == double"), Ok(true));
    }

    #[test]
    fn a_non_boolean_result_is_an_error() {
        let e = evaluate_rule("1 + 2", &to_cel(&json!({}))).unwrap_err();
        assert_eq!(e, "expected boolean result, got: int");
        let e = evaluate_rule("self.ok", &to_cel(&json!({}))).unwrap_err();
        assert!(e.contains("undeclared reference to 'self'"), "{e}");
    }

    #[test]
    fn no_rules_is_healthy() {
        assert_eq!(evaluate(&[], &json!({})), (true, vec![]));
    }
}
