//! The registry's part of a write, as `pkg/registry/rest` (`BeforeCreate`, `BeforeUpdate`) and
//! the type strategies (`customresource/strategy.go`, `core/namespace/strategy.go`) do it: names
//! from `generateName`, the system fields of `ObjectMeta`, status and generation handling, and
//! validation (name format, CRD schema) into a 422.

use serde_json::{json, Value};

use super::events;
use super::names::{dns1123_subdomain_problem, is_dns1123_label, is_dns1123_subdomain};
use super::resources::ResourceDef;
use super::status::{go_quote, ApiError, FieldError};
use super::store::{now_rfc3339, rv_of, set_rv};

/// `names.SimpleNameGenerator`: `generateName` plus five random characters, when no name is set.
pub(crate) fn generate_name(obj: &mut Value) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let has_name = meta
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if has_name {
        return;
    }
    if let Some(prefix) = meta
        .get("generateName")
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let bytes = uuid::Uuid::new_v4().into_bytes();
        let suffix: String = bytes
            .iter()
            .take(5)
            .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
            .collect();
        meta.insert("name".into(), json!(format!("{prefix}{suffix}")));
    }
}

/// DNS-1123 checks as `ValidateObjectMeta` does (subdomain; label for namespaces).
fn name_problem(def: &ResourceDef, name: &str) -> Option<String> {
    if def.plural == "namespaces" && def.group.is_empty() {
        if !is_dns1123_label(name) {
            return Some("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".into());
        }
        return None;
    }
    if !is_dns1123_subdomain(name) {
        return Some(dns1123_subdomain_problem().into());
    }
    None
}

/// Name format, then the type's own rules (the CRD schema with its CEL rules; Events): the 422
/// `BeforeCreate` (`old` is `None`) and `BeforeUpdate` (`old` is the stored object) return.
pub(crate) fn validate(
    def: &ResourceDef,
    obj: &Value,
    name: &str,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    if def.is_crd {
        // `ValidateObjectMetaAccessor` with `NameIsDNSSubdomain`, labels and annotations.
        errors.extend(crd_schema::validate_metadata(obj));
    } else if name.is_empty() {
        errors.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else if let Some(problem) = name_problem(def, name) {
        errors.push(FieldError::invalid(
            "metadata.name",
            go_quote(name),
            problem,
        ));
    }
    if let Some(schema) = &def.schema {
        errors.extend(match old {
            Some(old) => schema.validate_update(obj, old),
            None => schema.validate(obj),
        });
    }
    if def.storage == "events" {
        errors.extend(events::validate(
            obj,
            def.group == "events.k8s.io",
            old.is_none(),
        ));
    }
    if errors.is_empty() {
        return Ok(());
    }
    let (group, kind) = if def.is_crd {
        (def.group, def.kind)
    } else {
        ("", def.kind)
    };
    Err(ApiError::invalid(group, kind, name, &errors))
}

/// `PrepareForCreate` + `FillObjectMetaSystemFields`.
pub(crate) fn prepare_for_create(def: &ResourceDef, obj: &mut Value) {
    if def.is_crd && def.status_subresource {
        if let Some(map) = obj.as_object_mut() {
            map.remove("status");
        }
    }
    if def.plural == "namespaces" && def.group.is_empty() {
        obj["status"] = json!({"phase": "Active"});
        if obj.get("spec").is_none() {
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
        }
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        meta.remove("resourceVersion");
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        meta.remove("managedFields");
        if def.is_crd {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        if def.plural == "namespaces" && def.group.is_empty() {
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            labels["kubernetes.io/metadata.name"] = json!(name);
        }
    }
}

fn without_meta_and_status(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(map) = v.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    v
}

/// `PrepareForUpdate` of the main resource or of the status subresource.
pub(crate) fn prepare_for_update(
    def: &ResourceDef,
    subresource: &str,
    obj: &mut Value,
    old: &Value,
) {
    if subresource == "status" {
        let status = obj.get("status").cloned();
        let rv = rv_of(obj);
        let mut next = old.clone();
        if let Some(map) = next.as_object_mut() {
            match status {
                Some(s) => {
                    map.insert("status".into(), s);
                }
                None => {
                    map.remove("status");
                }
            }
        }
        set_rv(&mut next, &rv);
        *obj = next;
        return;
    }
    if def.status_subresource {
        if let Some(map) = obj.as_object_mut() {
            match old.get("status") {
                Some(s) => {
                    map.insert("status".into(), s.clone());
                }
                None => {
                    map.remove("status");
                }
            }
        }
    }
    let spec_changed = without_meta_and_status(obj) != without_meta_and_status(old);
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            match old.pointer(&format!("/metadata/{field}")) {
                Some(v) => {
                    meta.insert(field.into(), v.clone());
                }
                None => {
                    meta.remove(field);
                }
            }
        }
        meta.remove("managedFields");
        if def.is_crd {
            let generation = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            meta.insert(
                "generation".into(),
                json!(if spec_changed {
                    generation + 1
                } else {
                    generation
                }),
            );
        }
    }
}
