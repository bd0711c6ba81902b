//! `x-kubernetes-validations`: each rule evaluated with `self` bound to its node the way the
//! API server binds it ([`binding`]), failures worded as `schema/cel/validation.go` words them.
//! Transition rules (those reading `oldSelf`) run only on an update, and only where the stored
//! object has a value correlated with the node ([`correlate`]); `optionalOldSelf` is not
//! modelled.
//!
//! Evaluation uses the `cel` crate ([`eval`]), whose function library is smaller than
//! Kubernetes' (the Kubernetes extension libraries are missing). A rule that calls a function it
//! lacks cannot be judged; in [`RuleMode::Exhaustive`] that is a [`Keyword::RuleUnchecked`]
//! violation rather than an error, since the API server, which compiled the rule, would run it.

mod binding;
mod correlate;
mod eval;

use serde_json::Value;

use super::field_error::{go_quote, FieldError, FieldErrorKind};
use super::rule_reads::compile;
use super::structural::{Node, Rule};
use super::violation::{Keyword, RuleMode, Violation};
use super::SchemaPath;
use binding::{memo_key, object_to_self, to_self};
use correlate::correlated_item;
use eval::{evaluate, remembered, Outcome, RuleError};

/// Evaluate every rule at or below `schema`/`v` (pre-order, as the API server walks), skipping
/// nodes for which `clean` says no. `old` is the correlated value of the stored object on an
/// update (`None` on a create, and where nothing correlates).
pub fn run(
    schema: &Node,
    v: &Value,
    old: Option<&Value>,
    path: &SchemaPath,
    mode: RuleMode,
    clean: &dyn Fn(&str) -> bool,
    out: &mut Vec<Violation>,
) {
    if v.is_null() || !schema.rules_below {
        return;
    }
    if !schema.rules.is_empty() && clean(path.as_str()) {
        // With a stored value, transition rules run, and their outcomes depend on it too.
        let old_self = old
            .filter(|_| schema.rules.iter().any(|r| r.analysis.uses_old_self))
            .map(|o| to_self(o, schema));
        let key = match (v, &schema.rules_self_fields, &old_self) {
            (Value::Object(map), Some(fields), None) => {
                memo_key(map, schema, fields).map(|k| format!("{}\u{0}{k}", schema.rules_id))
            }
            _ => None,
        };
        // Built only when some outcome is not remembered, or a message needs it.
        let self_value = std::cell::OnceCell::new();
        let self_value = || {
            self_value.get_or_init(|| match (v, &schema.rules_self_fields) {
                (Value::Object(map), Some(fields)) => object_to_self(map, schema, Some(fields)),
                _ => to_self(v, schema),
            })
        };
        let outcomes = remembered(key, || {
            schema
                .rules
                .iter()
                .map(|rule| outcome(rule, self_value(), old_self.as_ref()))
                .collect()
        });
        let bound = Bound {
            self_value: &self_value,
            old_self: old_self.as_ref(),
        };
        for (rule, outcome) in schema.rules.iter().zip(outcomes.iter()) {
            if let Some(violation) = violation(rule, outcome, schema, v, &bound, path, mode) {
                out.push(violation);
            }
        }
    }
    match v {
        Value::Array(list) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for (i, item) in list.iter().enumerate() {
                    let old_item = old.and_then(|o| correlated_item(o, item, schema));
                    run(
                        item_schema,
                        item,
                        old_item,
                        &path.index(i),
                        mode,
                        clean,
                        out,
                    );
                }
            }
        }
        Value::Object(map) => {
            for (k, value) in map {
                let old_value = old.and_then(|o| o.get(k));
                if let Some(sub) = schema.property(k) {
                    run(sub, value, old_value, &path.child(k), mode, clean, out);
                } else if let Some(sub) = schema.additional() {
                    run(sub, value, old_value, &path.key(k), mode, clean, out);
                }
            }
        }
        _ => {}
    }
}

/// What a node's rules see: `self` (built on first use) and, on an update, `oldSelf`.
struct Bound<'a, 'b> {
    self_value: &'b dyn Fn() -> &'a cel::Value,
    old_self: Option<&'b cel::Value>,
}

/// The `"object"` of `Invalid value: "object"`: the node's schema type.
fn type_value(schema: &Node, v: &Value) -> String {
    if !schema.type_.is_empty() {
        return go_quote(&schema.type_);
    }
    go_quote(match v {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
    })
}

/// `ruleErrorString`: the message if the rule has one, else the rule.
fn rule_error_string(rule: &Rule) -> String {
    match rule.message.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => rule.rule.trim().to_string(),
    }
}

fn outcome(rule: &Rule, self_value: &cel::Value, old_self: Option<&cel::Value>) -> Outcome {
    // Transition rules need the stored value; without one (a create, or nothing correlated)
    // the API server skips them.
    if rule.analysis.uses_old_self && old_self.is_none() {
        return Outcome::Transition;
    }
    match compile(&rule.rule) {
        Err(e) => Outcome::NotCompiled(e),
        Ok(program) => match evaluate(&program, self_value, old_self) {
            Ok(value) => Outcome::Value(value),
            Err(e) => Outcome::Error(e),
        },
    }
}

fn violation(
    rule: &Rule,
    outcome: &Outcome,
    schema: &Node,
    v: &Value,
    bound: &Bound<'_, '_>,
    path: &SchemaPath,
    mode: RuleMode,
) -> Option<Violation> {
    let source = rule.rule.as_str();
    let value = type_value(schema, v);
    let invalid = |keyword, detail: String| {
        Some(Violation {
            keyword,
            error: FieldError::invalid(path.as_str(), value.clone(), detail),
            hint: None,
        })
    };
    match outcome {
        Outcome::Transition | Outcome::Value(cel::Value::Bool(true)) => None,
        Outcome::Value(cel::Value::Bool(false)) => Some(failed(rule, schema, v, bound, path)),
        Outcome::Value(other) => invalid(
            Keyword::Rule,
            format!(
                "rule did not evaluate to a bool ({other:?}) evaluating rule: {}",
                rule_error_string(rule)
            ),
        ),
        Outcome::NotCompiled(e) => match mode {
            RuleMode::Server => invalid(Keyword::Rule, format!("rule compile error: {e}")),
            RuleMode::Exhaustive => unchecked(path, &value, source, e),
        },
        Outcome::Error(RuleError::Unsupported(what)) if mode == RuleMode::Exhaustive => {
            unchecked(path, &value, source, what)
        }
        Outcome::Error(RuleError::Unsupported(what) | RuleError::Failed(what)) => invalid(
            Keyword::Rule,
            format!("{what} evaluating rule: {}", rule_error_string(rule)),
        ),
        Outcome::Error(RuleError::Overload(what)) => invalid(
            Keyword::Rule,
            format!(
                "'{what}': call arguments did not match a supported operator, function or macro \
                 signature for rule: {}",
                rule_error_string(rule)
            ),
        ),
    }
}

fn unchecked(path: &SchemaPath, value: &str, source: &str, why: &str) -> Option<Violation> {
    Some(Violation {
        keyword: Keyword::RuleUnchecked,
        error: FieldError::invalid(
            path.as_str(),
            value.to_string(),
            format!("rule {source:?} was not checked: {why}"),
        ),
        hint: Some(
            "lint's CEL evaluator lacks a function this rule uses; the API server still runs it"
                .into(),
        ),
    })
}

/// The field error of a rule that returned false: its `fieldPath`, its `messageExpression`
/// or `message` (or `failed rule: <rule>`), and its `reason`.
fn failed(
    rule: &Rule,
    schema: &Node,
    v: &Value,
    bound: &Bound<'_, '_>,
    path: &SchemaPath,
) -> Violation {
    let field = match rule.field_path.as_deref() {
        Some(fp) => normalized_field_path(path, schema, fp),
        None => path.clone(),
    };
    let detail = rule
        .message_expression
        .as_deref()
        .and_then(|expr| message_expression(expr, bound))
        .unwrap_or_else(|| match rule.message.as_deref().map(str::trim) {
            Some(m) if !m.is_empty() => m.to_string(),
            _ => format!("failed rule: {}", rule.rule.trim()),
        });
    let value = type_value(schema, v);
    let field = field.into_string();
    let error = match rule.reason.as_deref() {
        Some("FieldValueForbidden") => FieldError {
            kind: FieldErrorKind::Forbidden,
            field,
            value: String::new(),
            detail,
        },
        Some("FieldValueRequired") => FieldError::required(&field, &detail),
        Some("FieldValueDuplicate") => FieldError {
            kind: FieldErrorKind::Duplicate,
            field,
            value,
            detail: String::new(),
        },
        _ => FieldError::invalid(&field, value, detail),
    };
    Violation {
        keyword: Keyword::Rule,
        error,
        hint: None,
    }
}

/// `ValidFieldPath` then `Child`: `.a.b['c-d']` relative to the rule's node.
fn normalized_field_path(path: &SchemaPath, schema: &Node, field_path: &str) -> SchemaPath {
    let mut out = path.clone();
    let mut node = Some(schema);
    let mut rest = field_path.trim();
    while !rest.is_empty() {
        let name;
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            name = after[..end].to_string();
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']").unwrap_or(after.len());
            name = after[..end].replace("\\'", "'");
            rest = after.get(end + 2..).unwrap_or("");
        } else {
            // Not a path the API server would have accepted; report at the node itself.
            return path.clone();
        }
        let declared = node.and_then(|n| n.property(&name));
        let additional = node.and_then(Node::additional);
        out = if declared.is_some() || additional.is_none() {
            out.child(&name)
        } else {
            out.key(&name)
        };
        node = declared.or(additional);
    }
    out
}

/// A `messageExpression`'s message when it evaluates to a usable string.
fn message_expression(expr: &str, bound: &Bound<'_, '_>) -> Option<String> {
    let program = compile(expr).ok()?;
    match evaluate(&program, (bound.self_value)(), bound.old_self).ok()? {
        cel::Value::String(s) => {
            let trimmed = s.trim();
            (!trimmed.is_empty() && !trimmed.contains('\n') && trimmed.len() <= 5 * 1024)
                .then(|| trimmed.to_string())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::{Crd, CrdSchema, RuleMode};

    fn sveltos_cluster_schema() -> CrdSchema {
        let text = include_str!("../../crds/lib.projectsveltos.io_sveltosclusters.yaml");
        let docs = promotion_manifest::parse_documents(text).expect("the vendored CRD parses");
        let crd = Crd::from_value(&docs[0].value, "sveltosclusters").expect("a CRD");
        crd.versions.into_iter().next().expect("one version").schema
    }

    fn texts(errors: Vec<crate::FieldError>) -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn transition_rules_run_only_against_a_stored_value() {
        let schema = sveltos_cluster_schema();
        let cluster = |pull: bool| json!({"metadata": {"name": "c", "namespace": "n"}, "spec": {"pullMode": pull}});
        assert_eq!(texts(schema.validate(&cluster(true))), Vec::<String>::new());
        assert_eq!(
            texts(schema.validate_update(&cluster(true), &cluster(true))),
            Vec::<String>::new()
        );
        assert_eq!(
            texts(schema.validate_update(&cluster(false), &cluster(true))),
            ["spec.pullMode: Invalid value: \"boolean\": Value is immutable"]
        );
        // Nothing stored at that place: nothing to compare with.
        let old = json!({"metadata": {"name": "c", "namespace": "n"}, "spec": {}});
        assert_eq!(
            texts(schema.validate_update(&cluster(false), &old)),
            Vec::<String>::new()
        );
        // lint has no stored object: the rule does not run, as on a create.
        assert_eq!(
            schema.violations(&cluster(false), RuleMode::Exhaustive),
            Vec::new()
        );
    }

    fn correlation_schema() -> CrdSchema {
        let immutable = |message: &str| json!([{"rule": "self == oldSelf", "message": message}]);
        CrdSchema::new(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                        "x-kubernetes-validations": [{
                            "rule": "self.port == oldSelf.port",
                            "messageExpression": "'port was ' + string(oldSelf.port)"
                        }]
                    }
                },
                "tags": {
                    "type": "array",
                    "items": {"type": "string", "x-kubernetes-validations": immutable("tag")}
                },
                "labels": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "string", "x-kubernetes-validations": immutable("label")
                    }
                }
            }}}
        }))
    }

    fn spec(spec: Value) -> Value {
        json!({ "spec": spec })
    }

    #[test]
    fn the_stored_value_is_found_by_name_and_by_list_map_key() {
        let schema = correlation_schema();
        let old = spec(json!({
            "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
            "tags": ["a", "b"],
            "labels": {"team": "x"}
        }));
        // Reordered map-list items meet their own stored item; an atomic list's items and new
        // keys have nothing to compare with.
        let reordered = spec(json!({
            "ports": [{"name": "https", "port": 443}, {"name": "http", "port": 80},
                      {"name": "new", "port": 1}],
            "tags": ["c"],
            "labels": {"team": "x", "other": "y"}
        }));
        assert_eq!(
            texts(schema.validate_update(&reordered, &old)),
            Vec::<String>::new()
        );
        let changed = spec(json!({
            "ports": [{"name": "https", "port": 8443}, {"name": "http", "port": 80}],
            "labels": {"team": "z"}
        }));
        assert_eq!(
            texts(schema.validate_update(&changed, &old)),
            [
                "spec.ports[0]: Invalid value: \"object\": port was 443",
                "spec.labels[team]: Invalid value: \"string\": label"
            ]
        );
        // The same object against another stored one is judged afresh, not remembered.
        let other_old = spec(json!({"ports": [{"name": "https", "port": 8443}]}));
        assert_eq!(
            texts(schema.validate_update(&changed, &other_old)),
            Vec::<String>::new()
        );
        assert_eq!(texts(schema.validate(&changed)), Vec::<String>::new());
    }
}
