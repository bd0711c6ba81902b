//! The ClusterPromotion CustomResourceDefinition: the one embedded in the binary (the copy in
//! `crates/crd-schema/crds/`, see its README for where it comes from and how to regenerate it) or one a
//! user passes (`lint --crd FILE`) to check against the Sveltos version their cluster runs.

use std::fmt;
use std::sync::OnceLock;

use serde_json::Value;

use super::{CrdSchema, FieldError};

/// The upstream CRD, verbatim.
pub const EMBEDDED_CRD: &str =
    include_str!("../crds/config.projectsveltos.io_clusterpromotions.yaml");

/// Where [`EMBEDDED_CRD`] comes from (shown by `lint --help`).
pub const EMBEDDED_SVELTOS: &str = "Sveltos addon-controller v1.14.0 (commit 60c63580)";

/// sha256 of [`EMBEDDED_CRD`]: a regenerated file fails a test until [`EMBEDDED_SVELTOS`] and
/// this are updated with it.
pub const EMBEDDED_CRD_SHA256: &str =
    "9553db592bbf0fab07c5e44a699377d3b8fdb40cb92e2dbb6bc8da605780f866";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrdError(String);

impl fmt::Display for CrdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CrdError {}

/// One version of the resource: its name, whether it is served, its schema, and whether writes
/// to the main resource drop `status` (a status subresource).
#[derive(Debug, Clone)]
pub struct CrdVersion {
    pub name: String,
    pub served: bool,
    pub status_subresource: bool,
    pub schema: CrdSchema,
}

/// What a create with strict field validation gets from the API server.
#[derive(Debug, Clone, PartialEq)]
pub enum CreateOutcome {
    /// 400 at decoding: the unknown fields, as `unknown field "spec.x"`.
    UnknownFields(Vec<String>),
    /// 422: the field errors, in the API server's order.
    Invalid(Vec<FieldError>),
    /// Stored: pruned and defaulted, without status when the version has a status subresource.
    Stored(Value),
}

impl CrdVersion {
    /// The object admission webhooks receive for a write of `object`: decoded as the API server
    /// decodes it, unknown fields pruned and defaults applied (and nothing validated yet).
    pub fn decoded(&self, object: &Value) -> Value {
        let mut decoded = object.clone();
        self.schema.prune(&mut decoded);
        self.schema.default(&mut decoded);
        decoded
    }

    /// The API server's create path for a custom resource: strict decoding (typed
    /// `ObjectMeta`, pruning), defaulting, status dropped, then `ObjectMeta` and schema
    /// validation (with CEL rules skipped after a blocking error).
    pub fn create(&self, object: &Value) -> CreateOutcome {
        let mut stored = object.clone();
        let mut unknown: Vec<String> = super::metadata::unknown_fields(&stored)
            .into_iter()
            .map(|u| u.path)
            .collect();
        unknown.extend(self.schema.prune(&mut stored));
        unknown.sort();
        if !unknown.is_empty() {
            return CreateOutcome::UnknownFields(
                unknown
                    .iter()
                    .map(|u| format!("unknown field {}", super::go_quote(u)))
                    .collect(),
            );
        }
        self.schema.default(&mut stored);
        if self.status_subresource {
            if let Some(map) = stored.as_object_mut() {
                map.remove("status");
            }
        }
        let mut errors: Vec<FieldError> = super::metadata::validate(&stored)
            .into_iter()
            .map(|v| v.error)
            .collect();
        errors.extend(self.schema.validate(&stored));
        if errors.is_empty() {
            CreateOutcome::Stored(stored)
        } else {
            CreateOutcome::Invalid(errors)
        }
    }
}

#[derive(Debug, Clone)]
pub struct Crd {
    pub group: String,
    pub kind: String,
    pub namespaced: bool,
    pub versions: Vec<CrdVersion>,
    /// Where it was read from, for messages (`embedded (…)` or a file name).
    pub source: String,
}

impl Crd {
    /// The embedded ClusterPromotion CRD, parsed once.
    pub fn embedded() -> &'static Crd {
        static CRD: OnceLock<Crd> = OnceLock::new();
        CRD.get_or_init(|| {
            // The embedded file is checked by this crate's tests, so it parses.
            Crd::parse(
                EMBEDDED_CRD,
                &format!("the embedded CRD ({EMBEDDED_SVELTOS})"),
            )
            .unwrap_or_else(|e| panic!("the embedded ClusterPromotion CRD: {e}"))
        })
    }

    /// The ClusterPromotion CRD among the YAML documents of `text` (a file may hold several
    /// CRDs, as Sveltos' release manifest does).
    pub fn parse(text: &str, source: &str) -> Result<Crd, CrdError> {
        let docs = promotion_manifest::parse_documents(text)
            .map_err(|e| CrdError(format!("{source}: not valid YAML: {e}")))?;
        let crds: Vec<&Value> = docs
            .iter()
            .map(|d| &d.value)
            .filter(|v| v.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
            .collect();
        if crds.is_empty() {
            return Err(CrdError(format!(
                "{source}: no CustomResourceDefinition in this file"
            )));
        }
        let kind_of = |v: &Value| {
            v.pointer("/spec/names/kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let Some(crd) = crds.iter().find(|c| kind_of(c) == crate::KIND) else {
            let kinds: Vec<String> = crds.iter().map(|c| kind_of(c)).collect();
            return Err(CrdError(format!(
                "{source}: no CRD for {} in this file (it defines {})",
                crate::KIND,
                kinds.join(", ")
            )));
        };
        Crd::from_value(crd, source)
    }

    pub fn from_value(crd: &Value, source: &str) -> Result<Crd, CrdError> {
        let text = |pointer: &str| crd.pointer(pointer).and_then(Value::as_str).unwrap_or("");
        let group = text("/spec/group").to_string();
        let kind = text("/spec/names/kind").to_string();
        // apiextensions.k8s.io/v1beta1 kept one schema and subresources for all versions.
        let shared_schema = crd.pointer("/spec/validation/openAPIV3Schema");
        let shared_status = crd.pointer("/spec/subresources/status").is_some();
        let mut versions = Vec::new();
        for v in crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = v
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let schema = v
                .pointer("/schema/openAPIV3Schema")
                .or(shared_schema)
                .ok_or_else(|| {
                    CrdError(format!("{source}: version {name} has no openAPIV3Schema"))
                })?;
            if !schema.is_object() {
                return Err(CrdError(format!(
                    "{source}: the openAPIV3Schema of version {name} is not an object"
                )));
            }
            versions.push(CrdVersion {
                served: v.get("served").and_then(Value::as_bool).unwrap_or(true),
                status_subresource: v.pointer("/subresources/status").is_some() || shared_status,
                schema: CrdSchema::new(schema.clone()),
                name,
            });
        }
        if versions.is_empty() {
            return Err(CrdError(format!("{source}: the CRD lists no versions")));
        }
        Ok(Crd {
            group,
            kind,
            namespaced: text("/spec/scope") == "Namespaced",
            versions,
            source: source.to_string(),
        })
    }

    /// The served version an `apiVersion` (`group/version`) names.
    pub fn version(&self, api_version: &str) -> Option<&CrdVersion> {
        let (group, version) = api_version.split_once('/')?;
        if group != self.group {
            return None;
        }
        self.versions.iter().find(|v| v.served && v.name == version)
    }

    /// The served versions, as `group/version`.
    pub fn api_versions(&self) -> Vec<String> {
        self.versions
            .iter()
            .filter(|v| v.served)
            .map(|v| format!("{}/{}", self.group, v.name))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn the_embedded_crd_is_the_documented_upstream_file() {
        let digest = Sha256::digest(EMBEDDED_CRD.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex, EMBEDDED_CRD_SHA256,
            "crates/crd-schema/crds/ changed: update EMBEDDED_SVELTOS and EMBEDDED_CRD_SHA256 (see crates/crd-schema/crds/README.md)"
        );
        let crd = Crd::embedded();
        assert_eq!(crd.group, "config.projectsveltos.io");
        assert_eq!(crd.kind, "ClusterPromotion");
        assert!(!crd.namespaced);
        let v1beta1 = crd
            .version("config.projectsveltos.io/v1beta1")
            .expect("v1beta1 served");
        assert!(v1beta1.status_subresource);
        assert!(crd.version("config.projectsveltos.io/v1").is_none());
        assert!(crd.version("other.io/v1beta1").is_none());
    }

    #[test]
    fn other_files_are_refused_with_a_reason() {
        let err = Crd::parse("a: [1", "x.yaml").unwrap_err();
        assert!(
            err.to_string().starts_with("x.yaml: not valid YAML"),
            "{err}"
        );
        let err = Crd::parse("kind: ConfigMap\n", "x.yaml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.yaml: no CustomResourceDefinition in this file"
        );
        let other = "kind: CustomResourceDefinition\nspec:\n  group: g\n  names: {kind: Widget}\n  versions: []\n";
        let err = Crd::parse(other, "x.yaml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.yaml: no CRD for ClusterPromotion in this file (it defines Widget)"
        );
        let no_schema = "kind: CustomResourceDefinition\nspec:\n  group: g\n  names: {kind: ClusterPromotion}\n  versions: [{name: v1}]\n";
        let err = Crd::parse(no_schema, "x.yaml").unwrap_err();
        assert_eq!(err.to_string(), "x.yaml: version v1 has no openAPIV3Schema");
    }
}
