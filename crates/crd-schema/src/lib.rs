//! The CRD's structural schema, applied the way the apiextensions server applies it on every
//! write: prune unknown fields ([`prune`]), apply `default`s ([`defaults`]), then validate
//! ([`validate`]: OpenAPI keywords, list-type invariants, `x-kubernetes-validations` CEL rules
//! in [`cel_rules`]) and `metadata` ([`metadata`]).
//!
//! One implementation, two users: the stand-in API server of the end-to-end tests answers with
//! [`CrdSchema::prune`], [`CrdSchema::default`], [`CrdSchema::validate`] and, on updates,
//! [`CrdSchema::validate_update`] (the API server's own behaviour, rules skipped after blocking
//! errors, transition rules only against a stored value); `kubectl promotion lint` calls
//! [`check`], which reports everything in one pass as [`Finding`](promotion_findings::Finding)s
//! with codes and hints ([`findings`]).
//!
//! The ClusterPromotion CRD the project ships with is embedded ([`Crd::embedded`]); another
//! Sveltos version's CRD can be read with [`Crd::parse`].

mod cel_rules;
mod crd;
mod defaults;
mod field_error;
mod findings;
mod formats;
mod metadata;
mod prune;
mod rule_reads;
mod structural;
mod suggest;
mod validate;
mod violation;

/// The kind whose CRD this crate embeds and [`Crd::parse`] looks for.
pub const KIND: &str = "ClusterPromotion";

pub use crd::{
    Crd, CrdError, CrdVersion, CreateOutcome, EMBEDDED_CRD, EMBEDDED_CRD_SHA256, EMBEDDED_SVELTOS,
};
pub use field_error::{go_quote, go_value, FieldError, FieldErrorKind};
pub use findings::{check, SchemaFindings};
pub use metadata::OBJECT_META_FIELDS;
pub use prune::UnknownField;
pub use suggest::closest;
pub use violation::{Keyword, RuleMode, Violation};

use serde_json::Value;

/// `metadata` fields `ObjectMeta` does not have (`metadata.nmae`), which strict decoding
/// reports with the schema's unknown fields.
pub fn unknown_metadata_fields(obj: &Value) -> Vec<String> {
    metadata::unknown_fields(obj)
        .into_iter()
        .map(|u| u.path)
        .collect()
}

/// `ValidateObjectMeta` for a cluster-scoped custom resource: name, labels, annotations.
pub fn validate_metadata(obj: &Value) -> Vec<FieldError> {
    metadata::validate(obj)
        .into_iter()
        .map(|v| v.error)
        .collect()
}

/// One version's `openAPIV3Schema`, as written and as read into a typed tree.
#[derive(Debug, Clone)]
pub struct CrdSchema {
    root: Value,
    node: structural::Node,
}

impl CrdSchema {
    pub fn new(root: Value) -> Self {
        let node = structural::Node::compile(&root);
        CrdSchema { root, node }
    }

    pub fn root(&self) -> &Value {
        &self.root
    }

    /// Prune fields the schema does not declare; returns their paths (`spec.foo`), which the
    /// API server reports as `unknown field "spec.foo"` under `fieldValidation=Strict|Warn`.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        self.prune_unknown(obj)
            .into_iter()
            .map(|u| u.path)
            .collect()
    }

    /// [`CrdSchema::prune`], with what the schema declares where each unknown field was found.
    pub fn prune_unknown(&self, obj: &mut Value) -> Vec<UnknownField> {
        prune::prune(&self.node, obj)
    }

    /// Structural defaulting, recursively, including inside defaulted values.
    pub fn default(&self, obj: &mut Value) {
        defaults::default_root(&self.node, obj);
    }

    /// Validation of a create as the API server answers it: value errors, then list-type
    /// duplicates, then CEL rules unless an earlier error blocks them. Transition rules (those
    /// reading `oldSelf`) do not run: there is no stored object.
    pub fn validate(&self, obj: &Value) -> Vec<FieldError> {
        Self::errors(validate::validate(&self.node, obj, None, RuleMode::Server))
    }

    /// Validation of an update of the stored object `old`: as [`CrdSchema::validate`], and
    /// transition rules run with `oldSelf` bound to the stored value where one correlates with
    /// their node (object properties and map entries by name, `x-kubernetes-list-type: map`
    /// items by their keys).
    pub fn validate_update(&self, obj: &Value, old: &Value) -> Vec<FieldError> {
        Self::errors(validate::validate(
            &self.node,
            obj,
            Some(old),
            RuleMode::Server,
        ))
    }

    fn errors(violations: Vec<Violation>) -> Vec<FieldError> {
        violations.into_iter().map(|v| v.error).collect()
    }

    /// Every violation of a new object (no stored one: transition rules do not run) with its
    /// keyword and hint.
    pub fn violations(&self, obj: &Value, mode: RuleMode) -> Vec<Violation> {
        validate::validate(&self.node, obj, None, mode)
    }
}

/// A `field.Path` being built while walking (`spec.stages[1].trigger`): properties are
/// children (`.name`), map keys and list indices are subscripts (`[key]`, `[1]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SchemaPath(String);

impl SchemaPath {
    pub(crate) fn root(name: &str) -> Self {
        SchemaPath(name.to_string())
    }

    pub(crate) fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            SchemaPath(name.to_string())
        } else {
            SchemaPath(format!("{}.{name}", self.0))
        }
    }

    pub(crate) fn index(&self, i: usize) -> Self {
        SchemaPath(format!("{}[{i}]", self.0))
    }

    pub(crate) fn key(&self, k: &str) -> Self {
        SchemaPath(format!("{}[{k}]", self.0))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    pub(crate) fn into_string(self) -> String {
        self.0
    }
}
