//! `x-kubernetes-validations`: each rule evaluated with `self` bound to its node the way the
//! API server binds it (`UnstructuredToVal`): declared properties by their escaped CEL names
//! (`my-key` as `my__dash__key`), `integer` nodes as `int`, `number` nodes as `double`, map keys
//! as written. Failures are worded as `schema/cel/validation.go` words them.
//!
//! Evaluation uses the `cel` crate, whose function library is smaller than Kubernetes' (the
//! Kubernetes extension libraries are missing). A rule that calls a function it lacks cannot be
//! judged; in [`RuleMode::Exhaustive`] that is a [`Keyword::RuleUnchecked`] violation rather
//! than an error, since the API server, which compiled the rule, would run it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use serde_json::Value;

use super::field_error::{go_quote, FieldError, FieldErrorKind};
use super::structural::{additional, items, properties, rules, schema_type};
use super::validate::{Keyword, RuleMode, Violation};
use super::SchemaPath;

/// Evaluate every rule at or below `schema`/`v` (pre-order, as the API server walks), skipping
/// nodes for which `clean` says no.
pub fn run(
    schema: &Value,
    v: &Value,
    path: &SchemaPath,
    mode: RuleMode,
    clean: &dyn Fn(&str) -> bool,
    out: &mut Vec<Violation>,
) {
    if v.is_null() {
        return;
    }
    let node_rules = rules(schema);
    if !node_rules.is_empty() && clean(path.as_str()) {
        let self_value = to_self(v, schema);
        for rule in node_rules {
            if let Some(violation) = check_rule(rule, schema, v, &self_value, path, mode) {
                out.push(violation);
            }
        }
    }
    match v {
        Value::Array(list) => {
            if let Some(item_schema) = items(schema) {
                for (i, item) in list.iter().enumerate() {
                    run(item_schema, item, &path.index(i), mode, clean, out);
                }
            }
        }
        Value::Object(map) => {
            let props = properties(schema);
            let extra = additional(schema);
            for (k, value) in map {
                if let Some(sub) = props.and_then(|p| p.get(k)) {
                    run(sub, value, &path.child(k), mode, clean, out);
                } else if let Some(sub) = extra {
                    run(sub, value, &path.key(k), mode, clean, out);
                }
            }
        }
        _ => {}
    }
}

/// The `"object"` of `Invalid value: "object"`: the node's schema type.
fn type_value(schema: &Value, v: &Value) -> String {
    let t = schema_type(schema);
    if !t.is_empty() {
        return go_quote(t);
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

fn text<'a>(rule: &'a Value, key: &str) -> Option<&'a str> {
    rule.get(key).and_then(Value::as_str)
}

/// `ruleErrorString`: the message if the rule has one, else the rule.
fn rule_error_string(rule: &Value) -> String {
    match text(rule, "message").map(str::trim) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => text(rule, "rule").unwrap_or_default().trim().to_string(),
    }
}

fn check_rule(
    rule: &Value,
    schema: &Value,
    v: &Value,
    self_value: &cel::Value,
    path: &SchemaPath,
    mode: RuleMode,
) -> Option<Violation> {
    let source = text(rule, "rule")?;
    let value = type_value(schema, v);
    let invalid = |keyword, detail: String| {
        Some(Violation {
            keyword,
            error: FieldError::invalid(path.as_str(), value.clone(), detail),
            hint: None,
        })
    };
    let program = match compile(source) {
        Ok(p) => p,
        Err(e) => {
            return match mode {
                RuleMode::Server => invalid(Keyword::Rule, format!("rule compile error: {e}")),
                RuleMode::Exhaustive => unchecked(path, &value, source, &e),
            };
        }
    };
    // Transition rules need the stored object; on create the API server skips them.
    if program.references().has_variable("oldSelf") {
        return None;
    }
    match evaluate(&program, self_value) {
        Ok(cel::Value::Bool(true)) => None,
        Ok(cel::Value::Bool(false)) => Some(failed(rule, schema, v, self_value, path)),
        Ok(other) => invalid(
            Keyword::Rule,
            format!(
                "rule did not evaluate to a bool ({other:?}) evaluating rule: {}",
                rule_error_string(rule)
            ),
        ),
        Err(RuleError::Unsupported(what)) if mode == RuleMode::Exhaustive => {
            unchecked(path, &value, source, &what)
        }
        Err(RuleError::Unsupported(what)) | Err(RuleError::Failed(what)) => invalid(
            Keyword::Rule,
            format!("{what} evaluating rule: {}", rule_error_string(rule)),
        ),
        Err(RuleError::Overload(what)) => invalid(
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
    rule: &Value,
    schema: &Value,
    v: &Value,
    self_value: &cel::Value,
    path: &SchemaPath,
) -> Violation {
    let field = match text(rule, "fieldPath") {
        Some(fp) => normalized_field_path(path, schema, fp),
        None => path.clone(),
    };
    let detail = text(rule, "messageExpression")
        .and_then(|expr| message_expression(expr, self_value))
        .unwrap_or_else(|| match text(rule, "message").map(str::trim) {
            Some(m) if !m.is_empty() => m.to_string(),
            _ => format!(
                "failed rule: {}",
                text(rule, "rule").unwrap_or_default().trim()
            ),
        });
    let value = type_value(schema, v);
    let field = field.into_string();
    let error = match text(rule, "reason") {
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
fn normalized_field_path(path: &SchemaPath, schema: &Value, field_path: &str) -> SchemaPath {
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
        let declared = node.and_then(properties).and_then(|p| p.get(&name));
        out = if declared.is_some() || node.and_then(additional).is_none() {
            out.child(&name)
        } else {
            out.key(&name)
        };
        node = declared.or_else(|| node.and_then(additional));
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

enum RuleError {
    /// A function or variable the `cel` crate does not provide.
    Unsupported(String),
    /// `no such overload` at run time.
    Overload(String),
    /// Any other evaluation error (`no such key: x`), in cel-go's words where they differ.
    Failed(String),
}

thread_local! {
    static PROGRAMS: RefCell<HashMap<String, Result<Rc<cel::Program>, String>>> =
        RefCell::new(HashMap::new());
    static ENV: Arc<cel::Env> = Arc::new(cel::Env::stdlib());
}

fn compile(source: &str) -> Result<Rc<cel::Program>, String> {
    PROGRAMS.with(|cache| {
        if let Some(done) = cache.borrow().get(source) {
            return done.clone();
        }
        let compiled = crate::validation::on_parser_stack(|| {
            std::panic::catch_unwind(|| cel::Program::compile(source))
        });
        let result = match compiled {
            Ok(Ok(p)) => Ok(Rc::new(p)),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("the CEL parser failed on this rule".to_string()),
        };
        cache
            .borrow_mut()
            .insert(source.to_string(), result.clone());
        result
    })
}

fn evaluate(program: &cel::Program, self_value: &cel::Value) -> Result<cel::Value, RuleError> {
    let run = || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut context = cel::Context::with_env(ENV.with(Arc::clone));
            context.add_variable_from_value("self", self_value.clone());
            program.execute(&context)
        }))
    };
    match crate::validation::on_parser_stack(run) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(classify(e)),
        Err(_) => Err(RuleError::Unsupported(
            "the CEL evaluator failed on this rule".into(),
        )),
    }
}

fn classify(e: cel::ExecutionError) -> RuleError {
    use cel::ExecutionError as E;
    match e {
        E::NoSuchKey(key) => RuleError::Failed(format!("no such key: {key}")),
        E::UndeclaredReference(name) => {
            RuleError::Unsupported(format!("undeclared reference to '{name}'"))
        }
        E::NotSupportedAsMethod { method, .. } => {
            RuleError::Unsupported(format!("undeclared reference to '{method}'"))
        }
        E::NoSuchOverload(_) => RuleError::Overload("no such overload".into()),
        E::DivisionByZero(_) => RuleError::Failed("division by zero".into()),
        E::RemainderByZero(_) => RuleError::Failed("modulus by zero".into()),
        E::Overflow(..) => RuleError::Failed("integer overflow".into()),
        other => RuleError::Failed(other.to_string()),
    }
}

/// `UnstructuredToVal`: the node as CEL sees it.
pub fn to_self(v: &Value, schema: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => {
            let integer = n.as_i64();
            match (schema_type(schema), integer) {
                ("number", _) | (_, None) => cel::Value::Float(n.as_f64().unwrap_or(0.0)),
                (_, Some(i)) => cel::Value::Int(i),
            }
        }
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(list) => {
            let item_schema = items(schema).unwrap_or(&Value::Null);
            cel::Value::List(Arc::new(
                list.iter().map(|item| to_self(item, item_schema)).collect(),
            ))
        }
        Value::Object(map) => {
            let props = properties(schema);
            let extra = additional(schema);
            let mut out: HashMap<String, cel::Value> = HashMap::with_capacity(map.len());
            for (k, value) in map {
                if let Some(sub) = props.and_then(|p| p.get(k)) {
                    // Unescapable names are not visible to rules.
                    if let Some(name) = escape(k) {
                        out.insert(name, to_self(value, sub));
                    }
                } else {
                    let sub = extra.unwrap_or(&Value::Null);
                    out.insert(k.clone(), to_self(value, sub));
                }
            }
            cel::Value::Map(out.into())
        }
    }
}

const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// `cel.Escape` (apiserver/pkg/cel/escaping.go): how a property name is spelt in a rule;
/// `None` for a name rules cannot reach.
pub fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '.' | '-' | '/'));
    let rest_ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'));
    if !first_ok || !rest_ok {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_property_names_as_the_api_server() {
        assert_eq!(escape("delay").as_deref(), Some("delay"));
        assert_eq!(escape("my-key").as_deref(), Some("my__dash__key"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("x__y").as_deref(), Some("x__underscores__y"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("1abc"), None);
        assert_eq!(escape("a b"), None);
    }
}
