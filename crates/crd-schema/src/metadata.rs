//! `metadata` of a custom resource: decoded into the typed `ObjectMeta` (so unknown fields and
//! wrong types fail at decode, as for any built-in type), then `ValidateObjectMetaAccessor`
//! with `NameIsDNSSubdomain`, and `ValidateLabels`/`ValidateAnnotations` — in the API server's
//! words (`k8s.io/apimachinery/pkg/util/validation`).

use serde_json::Value;

use super::field_error::{go_quote, FieldError, FieldErrorKind};
use super::prune::UnknownField;
use super::violation::{Keyword, Violation};

/// `ObjectMeta`'s JSON fields.
pub const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and \
                                  must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
                                     alphanumeric characters, '-' or '.', and must start and end \
                                     with an alphanumeric character";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric \
                               characters, '-', '_' or '.', and must start and end with an \
                               alphanumeric character";
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Unknown `metadata` fields (strict decoding), with the fields a user may have meant.
pub fn unknown_fields(obj: &Value) -> Vec<UnknownField> {
    let Some(Value::Object(meta)) = obj.get("metadata") else {
        return Vec::new();
    };
    meta.keys()
        .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
        .map(|k| UnknownField {
            path: format!("metadata.{k}"),
            key: k.clone(),
            declared: OBJECT_META_FIELDS.iter().map(|f| f.to_string()).collect(),
        })
        .collect()
}

/// Decoding and validation errors of `metadata`, for a cluster-scoped object.
pub fn validate(obj: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let meta = match obj.get("metadata") {
        None | Some(Value::Null) => {
            out.push(required(
                "metadata.name",
                "name or generateName is required",
            ));
            return out;
        }
        Some(Value::Object(meta)) => meta,
        Some(other) => {
            out.push(wrong_type("metadata", "object", other));
            return out;
        }
    };
    for key in ["name", "generateName", "namespace"] {
        if let Some(v) = meta.get(key).filter(|v| !v.is_string() && !v.is_null()) {
            out.push(wrong_type(&format!("metadata.{key}"), "string", v));
        }
    }
    let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
    let generate_name = meta
        .get("generateName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() && generate_name.is_empty() {
        out.push(required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else if !name.is_empty() {
        for msg in dns1123_subdomain(name) {
            out.push(invalid("metadata.name", name, msg));
        }
    }
    if let Some(labels) = string_map(meta.get("labels"), "metadata.labels", &mut out) {
        for (k, v) in labels {
            for msg in qualified_name(k) {
                out.push(invalid("metadata.labels", k, msg));
            }
            for msg in label_value(v) {
                out.push(invalid("metadata.labels", v, msg));
            }
        }
    }
    if let Some(annotations) = string_map(meta.get("annotations"), "metadata.annotations", &mut out)
    {
        let mut total = 0;
        for (k, v) in &annotations {
            for msg in qualified_name(&k.to_lowercase()) {
                out.push(invalid("metadata.annotations", k, msg));
            }
            total += k.len() + v.len();
        }
        if total > TOTAL_ANNOTATION_SIZE_LIMIT {
            out.push(Violation {
                keyword: Keyword::Metadata,
                error: FieldError {
                    kind: FieldErrorKind::TooLong,
                    field: "metadata.annotations".into(),
                    value: String::new(),
                    detail: format!("may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"),
                },
                hint: Some(format!("the annotations take {total} bytes")),
            });
        }
    }
    out
}

/// Whether the object names a namespace, which a cluster-scoped object ignores.
pub fn namespace(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty())
}

fn string_map<'a>(
    v: Option<&'a Value>,
    path: &str,
    out: &mut Vec<Violation>,
) -> Option<Vec<(&'a String, &'a str)>> {
    match v? {
        Value::Null => None,
        Value::Object(map) => {
            let mut entries = Vec::with_capacity(map.len());
            for (k, v) in map {
                match v {
                    Value::String(s) => entries.push((k, s.as_str())),
                    other => out.push(wrong_type(&format!("{path}.{k}"), "string", other)),
                }
            }
            Some(entries)
        }
        other => {
            out.push(wrong_type(path, "object", other));
            None
        }
    }
}

fn required(field: &str, detail: &str) -> Violation {
    Violation {
        keyword: Keyword::Required,
        error: FieldError::required(field, detail),
        hint: None,
    }
}

fn invalid(field: &str, value: &str, msg: String) -> Violation {
    Violation {
        keyword: Keyword::Metadata,
        error: FieldError::invalid(field, go_quote(value), msg),
        hint: None,
    }
}

/// What decoding into `ObjectMeta` reports for a wrong type (kubectl refuses it before sending).
fn wrong_type(field: &str, expected: &str, v: &Value) -> Violation {
    let actual = match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    Violation {
        keyword: Keyword::Type,
        error: FieldError {
            kind: FieldErrorKind::TypeInvalid,
            field: field.to_string(),
            value: go_quote(actual),
            detail: format!("{field} must be of type {expected}: {}", go_quote(actual)),
        },
        hint: (expected == "string").then(|| "quote the value".to_string()),
    }
}

/// `validation.RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut s = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        s.push_str(&format!("'{e}', "));
    }
    s.push_str(&format!("regex used for validation is '{fmt}')"));
    s
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && is_alnum(b[0])
        && is_alnum(b[b.len() - 1])
        && b.iter()
            .all(|&c| is_alnum(c) || matches!(c, b'-' | b'_' | b'.'))
}

fn dns1123_label_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let ok = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty() && ok(b[0]) && ok(b[b.len() - 1]) && b.iter().all(|&c| ok(c) || c == b'-')
}

/// `IsDNS1123Subdomain`.
pub fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !s.split('.').all(dns1123_label_ok) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsQualifiedName`.
fn qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. \
                 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`.
fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !s.is_empty() && !matches_qualified_name_part(s) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            &format!("({QUALIFIED_NAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(obj: Value) -> Vec<String> {
        validate(&obj).iter().map(|v| v.error.to_string()).collect()
    }

    #[test]
    fn names_labels_and_annotations_in_the_api_servers_words() {
        assert_eq!(
            messages(json!({"metadata": {"name": "Web_Rollout"}})),
            ["metadata.name: Invalid value: \"Web_Rollout\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]
        );
        assert_eq!(
            messages(json!({"metadata": {"name": "w", "labels": {"-bad": "x"}}})),
            ["metadata.labels: Invalid value: \"-bad\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]
        );
        assert_eq!(
            messages(json!({"metadata": {"name": "w", "labels": {"a": "bad value!"}}})),
            ["metadata.labels: Invalid value: \"bad value!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]
        );
        assert_eq!(
            messages(json!({"metadata": {"name": "w", "annotations": {"a/b/c": "x"}}})),
            ["metadata.annotations: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
        );
        assert_eq!(
            messages(json!({"metadata": {"name": "a".repeat(254)}})),
            [format!(
                "metadata.name: Invalid value: \"{}\": must be no more than 253 characters",
                "a".repeat(254)
            )]
        );
        assert_eq!(
            messages(json!({"metadata": {}})),
            ["metadata.name: Required value: name or generateName is required"]
        );
    }

    #[test]
    fn valid_metadata_passes() {
        assert!(messages(json!({"metadata": {
            "name": "web.rollout-1",
            "labels": {"app.kubernetes.io/name": "web", "empty": ""},
            "annotations": {"Example.com/Note": "anything at all"}
        }}))
        .is_empty());
        assert!(messages(json!({"metadata": {"generateName": "web-"}})).is_empty());
    }

    #[test]
    fn unknown_metadata_fields_are_listed() {
        let unknown = unknown_fields(&json!({"metadata": {"nmae": "x", "name": "y"}}));
        assert_eq!(unknown.len(), 1);
        assert_eq!(unknown[0].path, "metadata.nmae");
    }
}
