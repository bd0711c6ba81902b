//! Schema validation of a pruned and defaulted object, in the three phases the apiextensions
//! server runs (`customResourceStrategy.Validate`): the OpenAPI value validation of
//! kube-openapi (types, formats, enums, bounds, lengths, patterns, item and property counts,
//! `required`, `anyOf`/`allOf`/`oneOf`/`not`), then the `x-kubernetes-list-type` invariants,
//! then the `x-kubernetes-validations` CEL rules.
//!
//! Messages and field paths are the API server's, byte for byte. The OpenAPI phase writes a
//! map key as `.key` (kube-openapi's string paths); the CEL phase writes it as `[key]`
//! (`field.Path.Key`), as the real server does.

use go_text::fmt::float_v;
use serde_json::{Map, Value};

use super::cel_rules;
use super::field_error::{go_quote, go_value, FieldError, FieldErrorKind};
use super::formats;
use super::structural::Node;
use super::suggest::closest;
use super::violation::{Keyword, RuleMode, Violation};
use super::SchemaPath;

/// Validate the object (root schema `root`); violations in the API server's order. `old` is
/// the stored object on an update, which transition rules compare with.
pub fn validate(root: &Node, obj: &Value, old: Option<&Value>, mode: RuleMode) -> Vec<Violation> {
    let mut value_errors = Vec::new();
    let mut list_errors = Vec::new();
    if let (Value::Object(map), Some(_)) = (obj, root.properties.as_ref()) {
        for name in &root.required {
            if !map.contains_key(name) {
                value_errors.push(required_violation(name));
            }
        }
        for (k, v) in map {
            if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            if let Some(sub) = root.property(k) {
                let mut path = k.clone();
                validate_value(v, sub, &mut path, &mut value_errors);
                if sub.lists_below {
                    check_lists(v, sub, &SchemaPath::root(k), &mut list_errors);
                }
            }
        }
    }
    value_errors.append(&mut list_errors);
    let mut errors = value_errors;
    if root.rules_below {
        match mode {
            RuleMode::Server => {
                if errors.iter().any(Violation::is_blocking) {
                    errors.push(Violation::new(
                        Keyword::RulesSkipped,
                        FieldError::invalid(
                            "<nil>",
                            "\"null\"".into(),
                            "some validation rules were not checked because the object was \
                             invalid; correct the existing errors to complete validation",
                        ),
                    ));
                } else {
                    cel_rules::run(
                        root,
                        obj,
                        old,
                        &SchemaPath::default(),
                        mode,
                        &|_| true,
                        &mut errors,
                    );
                }
            }
            RuleMode::Exhaustive => {
                // A blocking error inside a node changes what its rules would see once fixed;
                // elsewhere it does not matter (the API server skips all rules instead).
                let flagged: Vec<String> = errors
                    .iter()
                    .filter(|v| v.is_blocking())
                    .map(|v| v.error.field.clone())
                    .collect();
                let clean = |path: &str| !flagged.iter().any(|f| covers(path, f));
                let root_path = SchemaPath::default();
                cel_rules::run(root, obj, old, &root_path, mode, &clean, &mut errors);
            }
        }
    }
    errors
}

/// Whether `field` lies at or under `path` (`path` empty is the root).
fn covers(path: &str, field: &str) -> bool {
    if path.is_empty() {
        return true;
    }
    match field.strip_prefix(path) {
        Some(rest) => rest.is_empty() || rest.starts_with('.') || rest.starts_with('['),
        None => false,
    }
}

fn required_violation(path: &str) -> Violation {
    Violation::new(Keyword::Required, FieldError::required(path, ""))
}

fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A JSON number the API server takes as an integer (`1.0` is one; `1.5` is not).
fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// The types a node accepts, as kube-openapi joins them in its message.
fn expected_types(schema: &Node) -> Option<String> {
    if schema.int_or_string {
        return Some("integer,string".into());
    }
    match schema.type_.as_str() {
        "" => None,
        t => Some(t.to_string()),
    }
}

fn type_matches(v: &Value, schema: &Node) -> bool {
    if v.is_null() {
        return schema.nullable;
    }
    if schema.int_or_string {
        return v.is_string() || is_integer(v);
    }
    match schema.type_.as_str() {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => is_integer(v),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    }
}

/// The value validations of one node (kube-openapi's validator list, in its order) plus the
/// recursion into properties and items. `path` is the node's field path, extended and
/// restored as the walk goes down (kube-openapi writes map keys as `.key` too).
fn validate_value(v: &Value, schema: &Node, path: &mut String, out: &mut Vec<Violation>) {
    if v.is_null() && schema.nullable {
        return;
    }
    value_keywords(v, schema, path, out);
    let len = path.len();
    match v {
        Value::Array(list) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for (i, item) in list.iter().enumerate() {
                    use std::fmt::Write;
                    // Writing to a String cannot fail.
                    let _ = write!(path, "[{i}]");
                    validate_value(item, item_schema, path, out);
                    path.truncate(len);
                }
            }
        }
        Value::Object(map) => {
            if let Some(max) = schema.max_properties {
                if map.len() as u64 > max {
                    out.push(too_many(Keyword::MaxProperties, path, map.len(), max));
                }
            }
            if let Some(min) = schema.min_properties {
                if (map.len() as u64) < min {
                    out.push(Violation::new(
                        Keyword::MinProperties,
                        FieldError::invalid(
                            path,
                            map.len().to_string(),
                            format!("{path} in body should have at least {min} properties"),
                        ),
                    ));
                }
            }
            for name in &schema.required {
                if !map.contains_key(name) {
                    out.push(required_violation(&format!("{path}.{name}")));
                }
            }
            for (k, value) in map {
                if let Some(sub) = schema.property(k).or(schema.additional()) {
                    path.push('.');
                    path.push_str(k);
                    validate_value(value, sub, path, out);
                    path.truncate(len);
                }
            }
        }
        _ => {}
    }
}

/// Type, combinators, string, format, number, array counts and enum: what applies to the value
/// itself (and to an `anyOf` branch).
fn value_keywords(v: &Value, schema: &Node, path: &str, out: &mut Vec<Violation>) {
    if !type_matches(v, schema) {
        if let Some(expected) = expected_types(schema) {
            let actual = json_type_name(v);
            out.push(
                Violation::new(
                    Keyword::Type,
                    FieldError {
                        kind: FieldErrorKind::TypeInvalid,
                        field: path.to_string(),
                        value: go_quote(actual),
                        detail: format!(
                            "{path} in body must be of type {expected}: {}",
                            go_quote(actual)
                        ),
                    },
                )
                .hint(type_hint(v, &expected)),
            );
        }
    }
    combinators(v, schema, path, out);
    if let Value::String(s) = v {
        string_keywords(s, schema, path, out);
        if let Some(format) = schema.format.as_deref() {
            if !formats::valid(format, s) {
                out.push(Violation::new(
                    Keyword::Format,
                    FieldError {
                        kind: FieldErrorKind::TypeInvalid,
                        field: path.to_string(),
                        value: go_quote(s),
                        detail: format!("{path} in body must be of type {format}: {}", go_quote(s)),
                    },
                ));
            }
        }
    }
    if let Value::Number(n) = v {
        if let Some(x) = n.as_f64() {
            number_keywords(v, x, schema, path, out);
        }
    }
    if let Value::Array(list) = v {
        array_counts(list, schema, path, out);
    }
    if let Some(allowed) = &schema.enumeration {
        if !allowed.contains(v) {
            let values: Vec<String> = allowed.iter().map(go_value).collect();
            let hint = v.as_str().and_then(|s| {
                closest(s, allowed.iter().filter_map(Value::as_str))
                    .map(|c| format!("did you mean {}?", go_quote(c)))
            });
            out.push(
                Violation::new(
                    Keyword::Enum,
                    FieldError {
                        kind: FieldErrorKind::NotSupported,
                        field: path.to_string(),
                        value: go_value(v),
                        detail: format!("supported values: {}", values.join(", ")),
                    },
                )
                .hint(hint),
            );
        }
    }
}

fn type_hint(v: &Value, expected: &str) -> Option<String> {
    let text = v.as_str()?;
    let unquoted = match expected {
        "boolean" => matches!(text, "true" | "false"),
        "integer" | "integer,string" => text.parse::<i64>().is_ok(),
        "number" => text.parse::<f64>().is_ok(),
        _ => false,
    };
    unquoted.then(|| format!("write {text} without quotes"))
}

fn string_keywords(s: &str, schema: &Node, path: &str, out: &mut Vec<Violation>) {
    let length = s.chars().count() as u64;
    if let Some(max) = schema.max_length {
        if length > max {
            out.push(
                Violation::new(
                    Keyword::MaxLength,
                    FieldError {
                        kind: FieldErrorKind::TooLong,
                        field: path.to_string(),
                        value: String::new(),
                        detail: format!("may not be more than {max} bytes"),
                    },
                )
                .hint(Some(format!("it has {length} characters"))),
            );
        }
    }
    if let Some(min) = schema.min_length {
        if length < min {
            out.push(Violation::new(
                Keyword::MinLength,
                FieldError::invalid(
                    path,
                    go_quote(s),
                    format!("{path} in body should be at least {min} chars long"),
                ),
            ));
        }
    }
    if let Some((pattern, re)) = &schema.pattern {
        // RE2 (Go `regexp`) syntax, which the `regex` crate implements.
        if re.as_ref().is_some_and(|re| !re.is_match(s)) {
            out.push(Violation::new(
                Keyword::Pattern,
                FieldError::invalid(
                    path,
                    go_quote(s),
                    format!("{path} in body should match '{pattern}'"),
                ),
            ));
        }
    }
}

fn number_keywords(v: &Value, x: f64, schema: &Node, path: &str, out: &mut Vec<Violation>) {
    let bad = |keyword, detail: String| {
        Violation::new(keyword, FieldError::invalid(path, go_value(v), detail))
    };
    if let Some(m) = schema.multiple_of {
        if m > 0.0 && (x / m).fract() != 0.0 {
            out.push(bad(
                Keyword::MultipleOf,
                format!("{path} in body should be a multiple of {}", float_v(m)),
            ));
        }
    }
    if let Some(max) = schema.maximum {
        let exclusive = schema.exclusive_maximum;
        if (exclusive && x >= max) || x > max {
            let relation = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            out.push(bad(
                Keyword::Maximum,
                format!("{path} in body should be {relation} {}", float_v(max)),
            ));
        }
    }
    if let Some(min) = schema.minimum {
        let exclusive = schema.exclusive_minimum;
        if (exclusive && x <= min) || x < min {
            let relation = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            out.push(bad(
                Keyword::Minimum,
                format!("{path} in body should be {relation} {}", float_v(min)),
            ));
        }
    }
}

fn too_many(keyword: Keyword, path: &str, actual: usize, max: u64) -> Violation {
    Violation::new(
        keyword,
        FieldError {
            kind: FieldErrorKind::TooMany,
            field: path.to_string(),
            value: actual.to_string(),
            detail: format!("must have at most {max} items"),
        },
    )
}

fn array_counts(list: &[Value], schema: &Node, path: &str, out: &mut Vec<Violation>) {
    if let Some(max) = schema.max_items {
        if list.len() as u64 > max {
            out.push(too_many(Keyword::MaxItems, path, list.len(), max));
        }
    }
    if let Some(min) = schema.min_items {
        if (list.len() as u64) < min {
            out.push(Violation::new(
                Keyword::MinItems,
                FieldError::invalid(
                    path,
                    list.len().to_string(),
                    format!("{path} in body should have at least {min} items"),
                ),
            ));
        }
    }
}

/// `anyOf`, `oneOf`, `allOf`, `not` (value validations only, as structural schemas allow).
fn combinators(v: &Value, schema: &Node, path: &str, out: &mut Vec<Violation>) {
    let branch_errors = |branch: &Node| {
        let mut errors = Vec::new();
        value_keywords(v, branch, path, &mut errors);
        if let Value::Object(map) = v {
            for name in &branch.required {
                if !map.contains_key(name) {
                    errors.push(required_violation(&format!("{path}.{name}")));
                }
            }
        }
        errors
    };
    let combinator = |detail: String| {
        Violation::new(
            Keyword::Combinator,
            FieldError::invalid("<nil>", "\"\"".into(), detail),
        )
    };
    if !schema.any_of.is_empty() {
        let results: Vec<Vec<Violation>> = schema.any_of.iter().map(branch_errors).collect();
        if results.iter().all(|r| !r.is_empty()) {
            out.push(combinator(format!(
                "{} must validate at least one schema (anyOf)",
                go_quote(path)
            )));
            if let Some(fewest) = results.into_iter().min_by_key(Vec::len) {
                out.extend(fewest);
            }
        }
    }
    if !schema.one_of.is_empty() {
        let results: Vec<Vec<Violation>> = schema.one_of.iter().map(branch_errors).collect();
        let passing = results.iter().filter(|r| r.is_empty()).count();
        if passing != 1 {
            out.push(combinator(format!(
                "{} must validate one and only one schema (oneOf)",
                go_quote(path)
            )));
            if passing == 0 {
                if let Some(fewest) = results.into_iter().min_by_key(Vec::len) {
                    out.extend(fewest);
                }
            }
        }
    }
    for branch in &schema.all_of {
        out.extend(branch_errors(branch));
    }
    if let Some(not) = schema.not.as_deref() {
        if branch_errors(not).is_empty() {
            out.push(combinator(format!(
                "{} must not validate the schema (not)",
                go_quote(path)
            )));
        }
    }
}

/// `x-kubernetes-list-type` invariants (`structurallisttype.ValidateListSetsAndMaps`), in a
/// walk of their own (only where such lists are): the API server reports them after all value
/// errors.
fn check_lists(v: &Value, schema: &Node, path: &SchemaPath, out: &mut Vec<Violation>) {
    match v {
        Value::Array(list) => {
            list_duplicates(list, schema, path, out);
            if let Some(item_schema) = schema.items.as_deref().filter(|i| i.lists_below) {
                for (i, item) in list.iter().enumerate() {
                    check_lists(item, item_schema, &path.index(i), out);
                }
            }
        }
        Value::Object(map) => {
            for (k, value) in map {
                if let Some(sub) = schema.property(k).filter(|s| s.lists_below) {
                    check_lists(value, sub, &path.child(k), out);
                } else if let Some(sub) = schema.additional().filter(|s| s.lists_below) {
                    check_lists(value, sub, &path.key(k), out);
                }
            }
        }
        _ => {}
    }
}

fn list_duplicates(list: &[Value], schema: &Node, path: &SchemaPath, out: &mut Vec<Violation>) {
    match schema.list_type.as_deref() {
        Some("map") => {
            let keys = &schema.list_map_keys;
            let mut seen: Vec<(Map<String, Value>, usize)> = Vec::new();
            for (i, item) in list.iter().enumerate() {
                let mut key = Map::new();
                for k in keys {
                    if let Some(v) = item.get(k) {
                        key.insert(k.clone(), v.clone());
                    }
                }
                match seen.iter().find(|(s, _)| *s == key) {
                    Some((_, first)) => {
                        let first_path = path.index(*first);
                        out.push(
                            Violation::new(
                                Keyword::Duplicate,
                                FieldError {
                                    kind: FieldErrorKind::Duplicate,
                                    field: path.index(i).into_string(),
                                    value: go_value(&Value::Object(key.clone())),
                                    detail: String::new(),
                                },
                            )
                            .hint(Some(format!(
                                "{} already uses this {}; each entry needs its own",
                                first_path.as_str(),
                                keys.join(" and ")
                            ))),
                        );
                    }
                    None => seen.push((key, i)),
                }
            }
        }
        Some("set") => {
            for (i, item) in list.iter().enumerate() {
                if let Some(first) = list[..i].iter().position(|other| other == item) {
                    out.push(
                        Violation::new(
                            Keyword::Duplicate,
                            FieldError {
                                kind: FieldErrorKind::Duplicate,
                                field: path.index(i).into_string(),
                                value: go_value(item),
                                detail: String::new(),
                            },
                        )
                        .hint(Some(format!(
                            "the same value is at {}; a set holds each value once",
                            path.index(first).as_str()
                        ))),
                    );
                }
            }
        }
        _ => {}
    }
}
