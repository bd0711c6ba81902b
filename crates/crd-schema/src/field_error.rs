//! `field.Error` of `k8s.io/apimachinery/pkg/util/validation/field`: what the API server puts in
//! a 422's message and `details.causes`, rendered the way Go renders it.

use serde_json::Value;

/// `field.ErrorType`s the schema validation produces, with the reason Go puts in
/// `StatusCause.reason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    Required,
    Invalid,
    /// `field.TypeInvalid`: rendered as `Invalid value`, but blocks CEL rules.
    TypeInvalid,
    NotSupported,
    Duplicate,
    TooMany,
    TooLong,
    Forbidden,
}

impl FieldErrorKind {
    pub fn reason(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::TypeInvalid => "FieldValueTypeInvalid",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
            FieldErrorKind::TooMany => "FieldValueTooMany",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
        }
    }
}

/// A `field.Error`: `spec.stages[1].trigger: Invalid value: "object": <detail>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub kind: FieldErrorKind,
    pub field: String,
    /// The bad value already rendered the way Go's `field.Error` does (`"x"`, `0`,
    /// `"object"`); empty when the kind shows no value.
    pub value: String,
    pub detail: String,
}

impl FieldError {
    pub fn required(field: &str, detail: &str) -> Self {
        FieldError {
            kind: FieldErrorKind::Required,
            field: field.into(),
            value: String::new(),
            detail: detail.into(),
        }
    }

    pub fn invalid(field: &str, value: String, detail: impl Into<String>) -> Self {
        FieldError {
            kind: FieldErrorKind::Invalid,
            field: field.into(),
            value,
            detail: detail.into(),
        }
    }

    /// Go `field.ErrorBody()`.
    pub fn body(&self) -> String {
        let mut s = match self.kind {
            FieldErrorKind::Required => "Required value".to_string(),
            FieldErrorKind::Invalid | FieldErrorKind::TypeInvalid => {
                format!("Invalid value: {}", self.value)
            }
            FieldErrorKind::NotSupported => format!("Unsupported value: {}", self.value),
            FieldErrorKind::Duplicate => format!("Duplicate value: {}", self.value),
            FieldErrorKind::TooMany if self.value.is_empty() => "Too many".to_string(),
            FieldErrorKind::TooMany => format!("Too many: {}", self.value),
            FieldErrorKind::TooLong => "Too long".to_string(),
            FieldErrorKind::Forbidden => "Forbidden".to_string(),
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// Go `%q` for the strings the API server quotes (names, fields, values): `strconv.Quote`.
pub use go_text::strconv::quote as go_quote;

/// Render a JSON value the way `field.Error` prints its bad value: strings with `%q`, numbers
/// and booleans with `%v` (int64 or float64, as the API server decodes them), lists and objects
/// with `%#v` (`[]interface {}{"a", 1}`, `map[string]interface {}{"k":"v"}`, keys sorted).
pub fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_text::fmt::number_v(n),
        Value::Array(_) | Value::Object(_) => go_text::fmt::go_syntax(v),
    }
}
