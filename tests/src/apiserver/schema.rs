//! What the apiextensions server does with a CRD's structural schema on every write: prune unknown
//! fields (reporting them for `fieldValidation`), apply `default`s, then validate types, required
//! fields, enums, bounds, list-map keys and `x-kubernetes-validations` CEL rules.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::status::{go_quote, go_value, FieldError, FieldErrorKind};

#[derive(Debug)]
pub struct CrdSchema {
    root: Value,
}

/// A `field.Path` being built while walking (`spec.stages[1].trigger`).
#[derive(Clone, Debug, Default)]
struct FieldPath(String);

impl FieldPath {
    fn child(&self, name: &str) -> FieldPath {
        if self.0.is_empty() {
            FieldPath(name.to_string())
        } else {
            FieldPath(format!("{}.{name}", self.0))
        }
    }
    fn index(&self, i: usize) -> FieldPath {
        FieldPath(format!("{}[{i}]", self.0))
    }
    fn key(&self, k: &str) -> FieldPath {
        FieldPath(format!("{}[{k}]", self.0))
    }
}

fn schema_type(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("")
}

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// `additionalProperties` as a schema (`true` means anything goes).
fn additional(schema: &Value) -> Option<&Value> {
    match schema.get("additionalProperties") {
        Some(Value::Object(_)) => schema.get("additionalProperties"),
        _ => None,
    }
}

impl CrdSchema {
    pub fn new(root: Value) -> Self {
        CrdSchema { root }
    }

    pub fn root(&self) -> &Value {
        &self.root
    }

    /// Prune fields the schema does not declare; returns their paths (`spec.foo`), which the
    /// real server reports as `unknown field "spec.foo"` under `fieldValidation=Strict|Warn`.
    /// `metadata`, `apiVersion` and `kind` at the root are left to the generic machinery.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        let mut unknown = Vec::new();
        if let (Value::Object(map), Some(props)) = (obj, properties(&self.root)) {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                match props.get(&k) {
                    Some(sub) => {
                        if let Some(v) = map.get_mut(&k) {
                            if v.is_null() && !flag(sub, "nullable") {
                                map.remove(&k);
                                continue;
                            }
                            prune_value(v, sub, &FieldPath(k.clone()), &mut unknown);
                        }
                    }
                    None => {
                        if !flag(&self.root, "x-kubernetes-preserve-unknown-fields") {
                            map.remove(&k);
                            unknown.push(k);
                        }
                    }
                }
            }
        }
        unknown
    }

    /// Structural defaulting (`structuraldefaulting.Default`): absent (or non-nullable null)
    /// properties with a `default` get it, recursively, including inside defaulted values.
    pub fn default(&self, obj: &mut Value) {
        if let (Value::Object(map), Some(props)) = (obj, properties(&self.root)) {
            for (k, sub) in props {
                if k == "metadata" {
                    continue;
                }
                if let Some(d) = sub.get("default") {
                    if !map.contains_key(k) {
                        map.insert(k.clone(), d.clone());
                    }
                }
                if let Some(v) = map.get_mut(k) {
                    default_value(v, sub);
                }
            }
        }
    }

    /// Schema validation; field errors in the order the walk meets them. `old` is the stored
    /// object of an update: transition rules (those using `oldSelf`) run only where the old
    /// object has a correlated value, as the API server runs them.
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let (Value::Object(map), Some(props)) = (obj, properties(&self.root)) {
            for name in required(&self.root) {
                if !map.contains_key(name) {
                    errors.push(FieldError::required(name, ""));
                }
            }
            for (k, v) in map {
                if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(sub) = props.get(k) {
                    let old = old.and_then(|o| o.get(k));
                    validate_value(v, old, sub, &FieldPath(k.clone()), &mut errors);
                }
            }
            run_rules(obj, old, &self.root, &FieldPath::default(), &mut errors);
        }
        errors
    }
}

fn required(schema: &Value) -> impl Iterator<Item = &str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn prune_value(v: &mut Value, schema: &Value, path: &FieldPath, unknown: &mut Vec<String>) {
    let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
    match v {
        Value::Object(map) => {
            if flag(schema, "x-kubernetes-embedded-resource") {
                // apiVersion/kind/metadata of an embedded object are always kept.
            }
            let props = properties(schema);
            let extra = additional(schema);
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let sub = props.and_then(|p| p.get(&k)).or(extra);
                match sub {
                    Some(sub) => {
                        let child = if props.is_some_and(|p| p.contains_key(&k)) {
                            path.child(&k)
                        } else {
                            path.key(&k)
                        };
                        if let Some(value) = map.get_mut(&k) {
                            if value.is_null() && !flag(sub, "nullable") {
                                map.remove(&k);
                                continue;
                            }
                            prune_value(value, sub, &child, unknown);
                        }
                    }
                    None => {
                        let embedded_meta = flag(schema, "x-kubernetes-embedded-resource")
                            && matches!(k.as_str(), "apiVersion" | "kind" | "metadata");
                        let any_map =
                            schema.get("additionalProperties") == Some(&Value::Bool(true));
                        if !preserve && !embedded_meta && !any_map {
                            map.remove(&k);
                            unknown.push(path.child(&k).0);
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_value(item, item_schema, &path.index(i), unknown);
                }
            }
        }
        _ => {}
    }
}

fn default_value(v: &mut Value, schema: &Value) {
    match v {
        Value::Object(map) => {
            if let Some(props) = properties(schema) {
                for (k, sub) in props {
                    if let Some(d) = sub.get("default") {
                        let absent = match map.get(k) {
                            None => true,
                            Some(Value::Null) => !flag(sub, "nullable"),
                            Some(_) => false,
                        };
                        if absent {
                            map.insert(k.clone(), d.clone());
                        }
                    }
                }
                for (k, sub) in props {
                    if let Some(value) = map.get_mut(k) {
                        default_value(value, sub);
                    }
                }
            } else if let Some(extra) = additional(schema) {
                for value in map.values_mut() {
                    default_value(value, extra);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    default_value(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

fn type_matches(v: &Value, schema: &Value) -> bool {
    if flag(schema, "x-kubernetes-int-or-string") {
        return v.is_string() || v.is_i64() || v.is_u64();
    }
    if v.is_null() {
        return flag(schema, "nullable");
    }
    match schema_type(schema) {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    }
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

/// `old`: the value at the same place in the stored object, where it correlates (object
/// properties, and items of `x-kubernetes-list-type: map` lists by their keys).
fn validate_value(
    v: &Value,
    old: Option<&Value>,
    schema: &Value,
    path: &FieldPath,
    errors: &mut Vec<FieldError>,
) {
    if !type_matches(v, schema) {
        let actual = json_type_name(v);
        errors.push(FieldError::invalid(
            &path.0,
            go_quote(actual),
            format!(
                "{} in body must be of type {}: {}",
                path.0,
                schema_type(schema),
                go_quote(actual)
            ),
        ));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(v) {
            let values: Vec<String> = allowed.iter().map(go_value).collect();
            errors.push(FieldError {
                kind: FieldErrorKind::NotSupported,
                field: path.0.clone(),
                value: go_value(v),
                detail: format!("supported values: {}", values.join(", ")),
            });
        }
    }
    match v {
        Value::String(s) => {
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
                if (s.chars().count() as u64) < min {
                    errors.push(FieldError::invalid(
                        &path.0,
                        go_quote(s),
                        format!("{} in body should be at least {min} chars long", path.0),
                    ));
                }
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
                if (s.chars().count() as u64) > max {
                    errors.push(FieldError {
                        kind: FieldErrorKind::TooMany,
                        field: path.0.clone(),
                        value: String::new(),
                        detail: format!("may not be more than {max} bytes"),
                    });
                }
            }
            if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
                if !pattern_matches(pattern, s) {
                    errors.push(FieldError::invalid(
                        &path.0,
                        go_quote(s),
                        format!("{} in body should match '{pattern}'", path.0),
                    ));
                }
            }
        }
        Value::Number(n) => {
            if let (Some(min), Some(x)) =
                (schema.get("minimum").and_then(Value::as_f64), n.as_f64())
            {
                if x < min {
                    errors.push(FieldError::invalid(
                        &path.0,
                        n.to_string(),
                        format!(
                            "{} in body should be greater than or equal to {min}",
                            path.0
                        ),
                    ));
                }
            }
            if let (Some(max), Some(x)) =
                (schema.get("maximum").and_then(Value::as_f64), n.as_f64())
            {
                if x > max {
                    errors.push(FieldError::invalid(
                        &path.0,
                        n.to_string(),
                        format!("{} in body should be less than or equal to {max}", path.0),
                    ));
                }
            }
        }
        Value::Array(items) => {
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
                if (items.len() as u64) < min {
                    errors.push(FieldError::invalid(
                        &path.0,
                        items.len().to_string(),
                        format!("{} in body should have at least {min} items", path.0),
                    ));
                }
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
                if (items.len() as u64) > max {
                    errors.push(FieldError {
                        kind: FieldErrorKind::TooMany,
                        field: path.0.clone(),
                        value: String::new(),
                        detail: format!("must have at most {max} items"),
                    });
                }
            }
            check_list_type(items, schema, path, errors);
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    let old_item = old.and_then(|o| correlated_item(o, item, schema));
                    validate_value(item, old_item, item_schema, &path.index(i), errors);
                }
            }
        }
        Value::Object(map) => {
            for name in required(schema) {
                if !map.contains_key(name) {
                    errors.push(FieldError::required(&path.child(name).0, ""));
                }
            }
            let props = properties(schema);
            let extra = additional(schema);
            for (k, value) in map {
                let old_value = old.and_then(|o| o.get(k));
                if let Some(sub) = props.and_then(|p| p.get(k)) {
                    validate_value(value, old_value, sub, &path.child(k), errors);
                } else if let Some(sub) = extra {
                    validate_value(value, old_value, sub, &path.key(k), errors);
                }
            }
        }
        _ => {}
    }
    run_rules(v, old, schema, path, errors);
}

/// The item of the old list that `item` correlates with: same map keys in a `map` list; items
/// of other lists do not correlate.
fn correlated_item<'a>(old: &'a Value, item: &Value, schema: &Value) -> Option<&'a Value> {
    if schema.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map") {
        return None;
    }
    let keys: Vec<&str> = schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    old.as_array()?
        .iter()
        .find(|candidate| keys.iter().all(|k| candidate.get(*k) == item.get(*k)))
}

/// Whether a rule compares with the stored value (a transition rule).
fn uses_old_self(source: &str) -> bool {
    source.match_indices("oldSelf").any(|(at, _)| {
        let before = source[..at].chars().next_back();
        let after = source[at + "oldSelf".len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

fn check_list_type(
    items: &[Value],
    schema: &Value,
    path: &FieldPath,
    errors: &mut Vec<FieldError>,
) {
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("map") => {
            let keys: Vec<&str> = schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|k| k.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut seen: Vec<Map<String, Value>> = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let mut key = Map::new();
                for k in &keys {
                    if let Some(v) = item.get(*k) {
                        key.insert((*k).to_string(), v.clone());
                    }
                }
                if seen.contains(&key) {
                    errors.push(FieldError {
                        kind: FieldErrorKind::Duplicate,
                        field: path.index(i).0,
                        value: go_value(&Value::Object(key.clone())),
                        detail: String::new(),
                    });
                } else {
                    seen.push(key);
                }
            }
        }
        Some("set") => {
            for (i, item) in items.iter().enumerate() {
                if items[..i].contains(item) {
                    errors.push(FieldError {
                        kind: FieldErrorKind::Duplicate,
                        field: path.index(i).0,
                        value: go_value(item),
                        detail: String::new(),
                    });
                }
            }
        }
        _ => {}
    }
}

fn pattern_matches(pattern: &str, s: &str) -> bool {
    thread_local! {
        static PATTERNS: RefCell<HashMap<String, Option<regex::Regex>>> = RefCell::new(HashMap::new());
    }
    PATTERNS.with(|cache| {
        let mut cache = cache.borrow_mut();
        let re = cache
            .entry(pattern.to_string())
            .or_insert_with(|| regex::Regex::new(pattern).ok());
        re.as_ref().is_none_or(|re| re.is_match(s))
    })
}

/// `x-kubernetes-validations` at this node, evaluated with `self` bound to the value and, for
/// transition rules, `oldSelf` to the correlated stored value (without one, they do not run;
/// `optionalOldSelf` is not modelled).
fn run_rules(
    v: &Value,
    old: Option<&Value>,
    schema: &Value,
    path: &FieldPath,
    errors: &mut Vec<FieldError>,
) {
    let Some(rules) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    else {
        return;
    };
    let type_name = if schema_type(schema).is_empty() {
        json_type_name(v)
    } else {
        schema_type(schema)
    };
    for rule in rules {
        let Some(source) = rule.get("rule").and_then(Value::as_str) else {
            continue;
        };
        let message = rule
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("failed rule: {source}"));
        let field = match rule.get("fieldPath").and_then(Value::as_str) {
            Some(fp) => {
                let fp = fp.trim_start_matches('.');
                path.child(fp).0
            }
            None => path.0.clone(),
        };
        let old_self = if uses_old_self(source) {
            match old {
                Some(old) => Some(old),
                None => continue,
            }
        } else {
            None
        };
        match evaluate_rule(source, v, old_self) {
            Ok(true) => {}
            Ok(false) => errors.push(FieldError::invalid(&field, go_quote(type_name), message)),
            Err(e) => errors.push(FieldError::invalid(
                &field,
                go_quote(type_name),
                format!("rule evaluation error: {e}"),
            )),
        }
    }
}

fn evaluate_rule(
    source: &str,
    self_value: &Value,
    old_self: Option<&Value>,
) -> Result<bool, String> {
    thread_local! {
        static PROGRAMS: RefCell<HashMap<String, Result<Rc<cel::Program>, String>>> =
            RefCell::new(HashMap::new());
    }
    let program = PROGRAMS.with(|cache| {
        cache
            .borrow_mut()
            .entry(source.to_string())
            .or_insert_with(|| {
                cel::Program::compile(source)
                    .map(Rc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
    })?;
    let value = cel::to_value(self_value).map_err(|e| e.to_string())?;
    let mut context = cel::Context::default();
    context.add_variable_from_value("self", value);
    if let Some(old) = old_self {
        let old = cel::to_value(old).map_err(|e| e.to_string())?;
        context.add_variable_from_value("oldSelf", old);
    }
    match program.execute(&context) {
        Ok(cel::Value::Bool(b)) => Ok(b),
        Ok(other) => Err(format!("rule did not evaluate to a bool: {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn promotion_schema() -> CrdSchema {
        let defs = crate::apiserver::resources::registry(true);
        let def = defs
            .iter()
            .find(|d| d.plural == "clusterpromotions")
            .expect("clusterpromotions registered");
        CrdSchema::new(def.schema.as_ref().expect("schema").root().clone())
    }

    #[test]
    fn defaults_manual_trigger_and_profile_spec() {
        let schema = promotion_schema();
        let mut obj = json!({
            "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterPromotion",
            "metadata": {"name": "p"},
            "spec": {"profileSpec": {}, "stages": [{"name": "a", "trigger": {"manual": {}}}, {"name": "b"}]}
        });
        schema.default(&mut obj);
        assert_eq!(
            obj.pointer("/spec/stages/0/trigger/manual/automaticReset"),
            Some(&json!(true))
        );
        assert_eq!(
            obj.pointer("/spec/profileSpec/syncMode"),
            Some(&json!("Continuous"))
        );
        assert_eq!(obj.pointer("/spec/profileSpec/tier"), Some(&json!(100)));
        assert_eq!(obj.pointer("/spec/stages/1/trigger"), None);
    }

    #[test]
    fn both_triggers_fail_the_crd_rule_with_its_message() {
        let schema = promotion_schema();
        let obj = json!({
            "spec": {"stages": [{"name": "a", "trigger": {"manual": {}, "auto": {}}}]}
        });
        let errors = schema.validate(&obj, None);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(
            errors[0].to_string(),
            "spec.stages[0].trigger: Invalid value: \"object\": A trigger must have either a 'manual' or 'auto' field, but not both."
        );
    }

    #[test]
    fn transition_rules_run_only_against_a_stored_value() {
        let defs = crate::apiserver::resources::registry(true);
        let def = defs
            .iter()
            .find(|d| d.plural == "sveltosclusters")
            .expect("sveltosclusters registered");
        let schema = def.schema.as_ref().expect("schema");
        let cluster = |pull: bool| json!({"metadata": {"name": "c", "namespace": "n"}, "spec": {"pullMode": pull}});
        assert!(schema.validate(&cluster(true), None).is_empty(), "create");
        assert!(schema
            .validate(&cluster(true), Some(&cluster(true)))
            .is_empty());
        let errors = schema.validate(&cluster(false), Some(&cluster(true)));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].field, "spec.pullMode");
        assert!(uses_old_self("self == oldSelf"));
        assert!(!uses_old_self("self.oldSelfish == 1"));
    }

    #[test]
    fn duplicate_stage_names_and_unknown_fields() {
        let schema = promotion_schema();
        let mut obj = json!({
            "spec": {"bogus": 1, "stages": [{"name": "a"}, {"name": "a", "extra": true}]}
        });
        let unknown = schema.prune(&mut obj);
        assert_eq!(
            unknown,
            vec!["spec.bogus".to_string(), "spec.stages[1].extra".to_string()]
        );
        let errors = schema.validate(&obj, None);
        assert_eq!(
            errors[0].to_string(),
            "spec.stages[1]: Duplicate value: map[string]interface {}{\"name\":\"a\"}"
        );
    }
}
