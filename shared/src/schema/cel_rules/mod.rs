//! `x-kubernetes-validations`: each rule evaluated with `self` bound to its node the way the
//! API server binds it ([`binding`]), failures worded as `schema/cel/validation.go` words them.
//!
//! Evaluation uses the `cel` crate ([`eval`]), whose function library is smaller than
//! Kubernetes' (the Kubernetes extension libraries are missing). A rule that calls a function it
//! lacks cannot be judged; in [`RuleMode::Exhaustive`] that is a [`Keyword::RuleUnchecked`]
//! violation rather than an error, since the API server, which compiled the rule, would run it.

mod binding;
mod eval;

use serde_json::Value;

use super::field_error::{go_quote, FieldError, FieldErrorKind};
use super::rule_reads::compile;
use super::structural::{Node, Rule};
use super::violation::{Keyword, RuleMode, Violation};
use super::SchemaPath;
use binding::{memo_key, object_to_self, to_self};
use eval::{evaluate, remembered, Outcome, RuleError};

/// Evaluate every rule at or below `schema`/`v` (pre-order, as the API server walks), skipping
/// nodes for which `clean` says no.
pub fn run(
    schema: &Node,
    v: &Value,
    path: &SchemaPath,
    mode: RuleMode,
    clean: &dyn Fn(&str) -> bool,
    out: &mut Vec<Violation>,
) {
    if v.is_null() || !schema.rules_below {
        return;
    }
    if !schema.rules.is_empty() && clean(path.as_str()) {
        let key = match (v, &schema.rules_self_fields) {
            (Value::Object(map), Some(fields)) => {
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
                .map(|rule| outcome(rule, self_value()))
                .collect()
        });
        for (rule, outcome) in schema.rules.iter().zip(outcomes.iter()) {
            if let Some(violation) = violation(rule, outcome, schema, v, &self_value, path, mode) {
                out.push(violation);
            }
        }
    }
    match v {
        Value::Array(list) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for (i, item) in list.iter().enumerate() {
                    run(item_schema, item, &path.index(i), mode, clean, out);
                }
            }
        }
        Value::Object(map) => {
            for (k, value) in map {
                if let Some(sub) = schema.property(k) {
                    run(sub, value, &path.child(k), mode, clean, out);
                } else if let Some(sub) = schema.additional() {
                    run(sub, value, &path.key(k), mode, clean, out);
                }
            }
        }
        _ => {}
    }
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

fn outcome(rule: &Rule, self_value: &cel::Value) -> Outcome {
    // Transition rules need the stored object; on create the API server skips them.
    if rule.analysis.uses_old_self {
        return Outcome::Transition;
    }
    match compile(&rule.rule) {
        Err(e) => Outcome::NotCompiled(e),
        Ok(program) => match evaluate(&program, self_value) {
            Ok(value) => Outcome::Value(value),
            Err(e) => Outcome::Error(e),
        },
    }
}

fn violation<'a>(
    rule: &Rule,
    outcome: &Outcome,
    schema: &Node,
    v: &Value,
    self_value: &dyn Fn() -> &'a cel::Value,
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
        Outcome::Value(cel::Value::Bool(false)) => {
            Some(failed(rule, schema, v, self_value(), path))
        }
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
    self_value: &cel::Value,
    path: &SchemaPath,
) -> Violation {
    let field = match rule.field_path.as_deref() {
        Some(fp) => normalized_field_path(path, schema, fp),
        None => path.clone(),
    };
    let detail = rule
        .message_expression
        .as_deref()
        .and_then(|expr| message_expression(expr, self_value))
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
fn message_expression(expr: &str, self_value: &cel::Value) -> Option<String> {
    let program = compile(expr).ok()?;
    match evaluate(&program, self_value).ok()? {
        cel::Value::String(s) => {
            let trimmed = s.trim();
            (!trimmed.is_empty() && !trimmed.contains('\n') && trimmed.len() <= 5 * 1024)
                .then(|| trimmed.to_string())
        }
        _ => None,
    }
}
