//! `labelSelector` (equality- and set-based, `k8s.io/apimachinery/pkg/labels`) and
//! `fieldSelector` (`k8s.io/apimachinery/pkg/fields`) query parameters.

use serde_json::Value;

use super::status::ApiError;

#[derive(Clone, Debug, PartialEq)]
enum Op {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

#[derive(Clone, Debug, PartialEq)]
struct Requirement {
    key: String,
    op: Op,
}

/// A parsed label selector; empty selects everything (Kubernetes semantics, not Sveltos').
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

fn parse_error(detail: &str) -> ApiError {
    ApiError::bad_request(format!("unable to parse requirement: {detail}"))
}

/// Split on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 317
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn parse_values(rest: &str, key: &str) -> Result<Vec<String>, ApiError> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| parse_error(&format!("found '{rest}', expected: '(' for key {key}")))?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect())
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut requirements = Vec::new();
        let s = s.trim();
        if s.is_empty() {
            return Ok(LabelSelector::default());
        }
        for part in split_top_level(s) {
            let part = part.trim();
            if part.is_empty() {
                return Err(parse_error("found '', expected: identifier"));
            }
            let req = if let Some(key) = part.strip_prefix('!') {
                Requirement {
                    key: key.trim().to_string(),
                    op: Op::DoesNotExist,
                }
            } else if let Some((k, v)) = part.split_once("!=") {
                Requirement {
                    key: k.trim().to_string(),
                    op: Op::NotEq(v.trim().to_string()),
                }
            } else if let Some((k, v)) = part.split_once("==") {
                Requirement {
                    key: k.trim().to_string(),
                    op: Op::Eq(v.trim().to_string()),
                }
            } else if let Some((k, v)) = part.split_once('=') {
                Requirement {
                    key: k.trim().to_string(),
                    op: Op::Eq(v.trim().to_string()),
                }
            } else if let Some(idx) = find_word(part, "notin") {
                let key = part[..idx].trim().to_string();
                let values = parse_values(&part[idx + 5..], &key)?;
                Requirement {
                    key,
                    op: Op::NotIn(values),
                }
            } else if let Some(idx) = find_word(part, "in") {
                let key = part[..idx].trim().to_string();
                let values = parse_values(&part[idx + 2..], &key)?;
                Requirement {
                    key,
                    op: Op::In(values),
                }
            } else if let Some((k, v)) = part.split_once('>') {
                let n = v.trim().parse().map_err(|_| {
                    parse_error("for 'Gt', 'Lt' operators, the value must be an integer")
                })?;
                Requirement {
                    key: k.trim().to_string(),
                    op: Op::Gt(n),
                }
            } else if let Some((k, v)) = part.split_once('<') {
                let n = v.trim().parse().map_err(|_| {
                    parse_error("for 'Gt', 'Lt' operators, the value must be an integer")
                })?;
                Requirement {
                    key: k.trim().to_string(),
                    op: Op::Lt(n),
                }
            } else {
                Requirement {
                    key: part.to_string(),
                    op: Op::Exists,
                }
            };
            if !valid_key(&req.key) {
                return Err(parse_error(&format!("invalid label key {:?}", req.key)));
            }
            requirements.push(req);
        }
        Ok(LabelSelector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.requirements.iter().all(|r| {
            let current = get(&r.key);
            match &r.op {
                Op::Eq(v) => current == Some(v.as_str()),
                Op::NotEq(v) => current != Some(v.as_str()),
                Op::In(vs) => current.is_some_and(|c| vs.iter().any(|v| v == c)),
                Op::NotIn(vs) => current.is_none_or(|c| !vs.iter().any(|v| v == c)),
                Op::Exists => current.is_some(),
                Op::DoesNotExist => current.is_none(),
                Op::Gt(n) => current
                    .and_then(|c| c.parse::<i64>().ok())
                    .is_some_and(|c| c > *n),
                Op::Lt(n) => current
                    .and_then(|c| c.parse::<i64>().ok())
                    .is_some_and(|c| c < *n),
            }
        })
    }
}

/// Position of `word` in `s` as a separate token (surrounded by whitespace or parenthesis).
fn find_word(s: &str, word: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut from = 0;
    while let Some(pos) = s[from..].find(word) {
        let idx = from + pos;
        let before_ok = idx > 0 && bytes[idx - 1].is_ascii_whitespace();
        let after = idx + word.len();
        let after_ok =
            after < bytes.len() && (bytes[after].is_ascii_whitespace() || bytes[after] == b'(');
        if before_ok && after_ok {
            return Some(idx);
        }
        from = idx + word.len();
    }
    None
}

/// A parsed field selector: `a=b`, `a==b`, `a!=b`, comma separated.
#[derive(Clone, Debug, Default)]
pub struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// `supported` maps a selector field to a JSON pointer into the stored object.
    pub fn parse(
        s: &str,
        supported: &dyn Fn(&str) -> Option<&'static str>,
    ) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            let Some(pointer) = supported(field) else {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            };
            terms.push((pointer.to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|(pointer, equal, value)| {
            let current = match obj.pointer(pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (current == *value) == *equal
        })
    }
}

/// Field selectors the real server supports, mapped to where the value lives in the stored
/// object. Events are stored in their core/v1 form, so events.k8s.io names map onto it.
pub fn field_pointer(storage: &str, field: &str) -> Option<&'static str> {
    match field {
        "metadata.name" => return Some("/metadata/name"),
        "metadata.namespace" => return Some("/metadata/namespace"),
        _ => {}
    }
    if storage != "events" {
        return None;
    }
    Some(match field {
        "involvedObject.kind" | "regarding.kind" => "/involvedObject/kind",
        "involvedObject.namespace" | "regarding.namespace" => "/involvedObject/namespace",
        "involvedObject.name" | "regarding.name" => "/involvedObject/name",
        "involvedObject.uid" | "regarding.uid" => "/involvedObject/uid",
        "involvedObject.apiVersion" | "regarding.apiVersion" => "/involvedObject/apiVersion",
        "involvedObject.resourceVersion" | "regarding.resourceVersion" => {
            "/involvedObject/resourceVersion"
        }
        "involvedObject.fieldPath" | "regarding.fieldPath" => "/involvedObject/fieldPath",
        "reason" => "/reason",
        "reportingComponent" | "reportingController" => "/reportingComponent",
        "source" | "deprecatedSource" => "/source/component",
        "type" => "/type",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}})
    }

    #[test]
    fn set_based_and_equality_selectors() {
        let o = obj(json!({"env": "prod", "tier": "web"}));
        for (sel, expect) in [
            ("env=prod", true),
            ("env==prod,tier=web", true),
            ("env!=prod", false),
            ("env in (prod, staging)", true),
            ("env notin (prod)", false),
            ("tier", true),
            ("!tier", false),
            ("!legacy", true),
            ("env in (dev),tier", false),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&o),
                expect,
                "{sel}"
            );
        }
    }

    #[test]
    fn bad_selectors_are_bad_requests() {
        let err = LabelSelector::parse("env in prod").unwrap_err();
        assert_eq!(err.code, 400);
        let err = FieldSelector::parse("spec.x=1", &|f| field_pointer("events", f)).unwrap_err();
        assert_eq!(err.message(), "field label not supported: spec.x");
    }
}
