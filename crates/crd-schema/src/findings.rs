//! The schema pass of `lint`: everything `kubectl apply` (with its default strict field
//! validation) would refuse, as findings with stable codes, the API server's own words, and a
//! hint on how to fix it.
//!
//! Unlike the API server, which stops at the first decoding error and skips CEL rules after a
//! blocking error, one pass reports it all: unknown fields, then (on the object as the server
//! would store it: pruned and defaulted) metadata, values, list invariants and every rule whose
//! node is otherwise valid.

use serde_json::Value;

use promotion_findings::{Finding, Severity};

use super::metadata;
use super::suggest::closest;
use super::violation::{Keyword, RuleMode, Violation};
use super::{Crd, UnknownField};

/// The code lint reports a violation under.
fn code(v: &Violation) -> &'static str {
    match v.keyword {
        Keyword::Type => "wrong-type",
        Keyword::Format => "schema-format",
        Keyword::Required => "required",
        Keyword::Enum => "schema-enum",
        Keyword::Minimum | Keyword::Maximum | Keyword::MultipleOf => "schema-range",
        Keyword::MinLength | Keyword::MaxLength => "schema-length",
        Keyword::Pattern => "schema-pattern",
        Keyword::MinItems | Keyword::MaxItems => "schema-items",
        Keyword::MinProperties | Keyword::MaxProperties => "schema-properties",
        Keyword::Combinator => "schema-combinator",
        Keyword::Duplicate => "schema-duplicate",
        Keyword::Rule | Keyword::RulesSkipped => "schema-rule",
        Keyword::RuleUnchecked => "schema-rule-unchecked",
        Keyword::Metadata if v.error.field == "metadata.name" => "name-invalid",
        Keyword::Metadata => "metadata-invalid",
    }
}

fn with_hint(text: String, hint: Option<&str>) -> String {
    match hint {
        Some(h) if !h.is_empty() => format!("{text} ({h})"),
        _ => text,
    }
}

/// The schema findings of one document, each with the API server's own text (so that
/// [`SchemaFindings::merge`] can combine it with the engine's explanation).
#[derive(Clone, Debug, Default)]
pub struct SchemaFindings {
    items: Vec<(Finding, String)>,
}

impl SchemaFindings {
    fn push(&mut self, finding: Finding, server: String) {
        self.items.push((finding, server));
    }

    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.items.iter().map(|(f, _)| f)
    }

    pub fn into_findings(self) -> Vec<Finding> {
        self.items.into_iter().map(|(f, _)| f).collect()
    }

    /// One finding per problem: where the engine (the Sveltos rules) reports an error the
    /// schema pass reports too — the same field, or for a list-map duplicate its key field —
    /// the two become one finding at the API server's field, with the engine's more specific
    /// code and message after the API server's words. Where both use the same code the schema
    /// finding stands alone.
    pub fn merge(self, engine: Vec<Finding>) -> Vec<Finding> {
        let mut merged = self.items;
        let mut rest = Vec::new();
        for e in engine {
            if !e.is_error() {
                rest.push(e);
                continue;
            }
            let target = merged.iter_mut().find(|(s, _)| {
                s.is_error()
                    && (s.path == e.path
                        || (s.code == "schema-duplicate" && is_key_of(&s.path, &e.path)))
            });
            match target {
                Some((s, _)) if s.code == e.code => {}
                Some((s, server)) => {
                    // The engine sometimes says exactly what the API server says.
                    let explanation =
                        (!server.contains(e.message.as_str())).then_some(e.message.as_str());
                    s.message = with_hint(server.clone(), explanation);
                    s.code = e.code;
                    s.inner = e.inner;
                }
                None => rest.push(e),
            }
        }
        let mut out: Vec<Finding> = merged.into_iter().map(|(f, _)| f).collect();
        out.extend(rest);
        out
    }
}

/// Lint's schema findings for one ClusterPromotion document.
pub fn check(crd: &Crd, object: &Value) -> SchemaFindings {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let Some(version) = crd.version(api_version) else {
        let text = format!(
            "no matches for kind {:?} in version {api_version:?}",
            crd.kind
        );
        let mut out = SchemaFindings::default();
        out.push(
            Finding::error(
                "schema-version",
                "apiVersion",
                with_hint(
                    text.clone(),
                    Some(&format!("the CRD serves {}", crd.api_versions().join(", "))),
                ),
            ),
            text,
        );
        return out;
    };
    let mut out = SchemaFindings::default();
    let mut stored = object.clone();
    let mut unknown = metadata::unknown_fields(&stored);
    unknown.extend(version.schema.prune_unknown(&mut stored));
    for u in &unknown {
        let (finding, server) = unknown_finding(u);
        out.push(finding, server);
    }
    version.schema.default(&mut stored);
    if version.status_subresource {
        // Writes to the main resource drop status before validation.
        if let Some(map) = stored.as_object_mut() {
            map.remove("status");
        }
    }
    let mut violations = metadata::validate(&stored);
    violations.extend(version.schema.violations(&stored, RuleMode::Exhaustive));
    let mut seen: Vec<(String, Keyword)> = Vec::new();
    for v in &violations {
        let location = location(v);
        if v.keyword == Keyword::Combinator
            && violations
                .iter()
                .any(|o| o.keyword != Keyword::Combinator && o.error.field == location)
        {
            // `anyOf` failures restate the type error at the same field.
            continue;
        }
        if seen.contains(&(location.clone(), v.keyword)) {
            continue;
        }
        seen.push((location.clone(), v.keyword));
        let severity = if v.keyword == Keyword::RuleUnchecked {
            Severity::Warning
        } else {
            Severity::Error
        };
        let server = v.error.body();
        let message = with_hint(server.clone(), v.hint.as_deref());
        out.push(
            Finding {
                severity,
                code: code(v),
                path: location,
                message,
                inner: None,
            },
            server,
        );
    }
    if let Some(ns) = metadata::namespace(object) {
        let text = format!(
            "{} is cluster-scoped: the API server ignores namespace {ns:?}; remove it",
            crd.kind
        );
        out.push(
            Finding::warning(
                "metadata-namespace-ignored",
                "metadata.namespace",
                text.clone(),
            ),
            text,
        );
    }
    out
}

/// Where a violation is: its field, or for a `<nil>` error (`anyOf`) the field it names.
fn location(v: &Violation) -> String {
    if v.error.field != "<nil>" {
        return v.error.field.clone();
    }
    // `"spec.x" must validate at least one schema (anyOf)`
    v.error
        .detail
        .strip_prefix('"')
        .and_then(|rest| rest.split_once('"'))
        .map(|(field, _)| field.to_string())
        .unwrap_or_default()
}

fn unknown_finding(u: &UnknownField) -> (Finding, String) {
    let suggestion = closest(&u.key, u.declared.iter().map(String::as_str));
    let mut hint = match suggestion {
        Some(s) => format!("did you mean {s:?}? "),
        None => String::new(),
    };
    hint.push_str(
        "kubectl apply refuses it; a client that does not ask for strict field validation has \
         it dropped silently",
    );
    let server = format!("unknown field {}", super::go_quote(&u.path));
    let finding = Finding::error(
        "schema-unknown-field",
        u.path.clone(),
        with_hint(server.clone(), Some(&hint)),
    );
    (finding, server)
}

/// `spec.stages[2].name` is a field of the list item `spec.stages[2]`.
fn is_key_of(item: &str, field: &str) -> bool {
    field
        .strip_prefix(item)
        .and_then(|r| r.strip_prefix('.'))
        .is_some_and(|k| !k.is_empty() && !k.contains(['.', '[']))
}
