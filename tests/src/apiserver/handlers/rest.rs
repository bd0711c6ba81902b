//! `RequestScope` (`endpoints/handlers/rest.go`): the resolved request every verb handler works
//! on, and what they share — the served representation (events.k8s.io is a view of core
//! events), lookups and the standard errors, selectors, and for writes one preamble (`dryRun`,
//! `fieldValidation`), body decoding, decode-time pruning and defaulting, and admission.

use std::sync::Arc;

use axum::http::HeaderMap;
use bytes::Bytes;
use serde_json::{json, Value};

use super::requestinfo::{Query, RequestInfo};
use super::responsewriters::method_not_allowed;
use super::{read, AppState};
use crate::apiserver::admission::AdmissionClient;
use crate::apiserver::auth::UserInfo;
use crate::apiserver::events;
use crate::apiserver::protobuf;
use crate::apiserver::resources::ResourceDef;
use crate::apiserver::selectors::{field_pointer, FieldSelector, LabelSelector};
use crate::apiserver::status::{go_quote, ApiError};
use crate::apiserver::store::{self, Stored};
use crate::apiserver::strategy;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

/// What a write carries: an object (create, update, patch), to which `fieldValidation`
/// applies, or `DeleteOptions` (delete, deletecollection), which have no such field.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteBody {
    Object,
    DeleteOptions,
}

/// The options a write validates before reading its body.
pub(super) struct WriteOptions {
    pub dry_run: bool,
    /// `Ignore` for [`WriteBody::DeleteOptions`].
    pub validation: FieldValidation,
}

pub(super) struct RequestScope<'a> {
    pub app: &'a Arc<AppState>,
    pub target: RequestInfo,
    pub query: Query,
    pub accept: String,
    pub headers: &'a HeaderMap,
    pub user: UserInfo,
}

impl RequestScope<'_> {
    pub(super) fn def(&self) -> &ResourceDef {
        &self.target.def
    }

    pub(super) fn events_view(&self) -> bool {
        self.def().group == "events.k8s.io"
    }

    /// Present a stored object in the served representation.
    pub(super) fn present(&self, v: &Value) -> Value {
        if self.events_view() {
            events::to_events_v1(v)
        } else {
            v.clone()
        }
    }

    pub(super) fn include_object(&self) -> String {
        self.query
            .get("includeObject")
            .cloned()
            .unwrap_or_else(|| "Metadata".into())
    }

    pub(super) fn key(&self) -> store::Key {
        (
            self.target.namespace.clone().unwrap_or_default(),
            self.target.name.clone().unwrap_or_default(),
        )
    }

    pub(super) fn not_found(&self) -> ApiError {
        ApiError::not_found(
            self.def().group,
            self.def().plural,
            self.target.name.as_deref().unwrap_or_default(),
        )
    }

    pub(super) fn conflict(&self) -> ApiError {
        ApiError::conflict(
            self.def().group,
            self.def().plural,
            self.target.name.as_deref().unwrap_or_default(),
        )
    }

    pub(super) fn lookup(&self) -> Option<Stored> {
        let state = self.app.store.lock();
        state
            .objects
            .get(self.def().storage)
            .and_then(|m| m.get(&self.key()))
            .cloned()
    }

    pub(super) fn selectors(&self) -> Result<(LabelSelector, FieldSelector), ApiError> {
        let labels = LabelSelector::parse(
            self.query
                .get("labelSelector")
                .map(String::as_str)
                .unwrap_or_default(),
        )?;
        let storage = self.def().storage;
        let fields = FieldSelector::parse(
            self.query
                .get("fieldSelector")
                .map(String::as_str)
                .unwrap_or_default(),
            &|f| field_pointer(storage, f),
        )?;
        Ok((labels, fields))
    }

    /// Update and patch address one object; on a collection they are 405.
    pub(super) fn require_name(&self) -> Result<(), ApiError> {
        match self.target.name {
            Some(_) => Ok(()),
            None => Err(method_not_allowed()),
        }
    }

    /// The preamble of every write (`Validate{Create,Update,Patch,Delete}Options`): `dryRun`
    /// is `All` or absent, and for an object body `fieldValidation` is Ignore, Warn or Strict.
    pub(super) fn write_options(&self, body: WriteBody) -> Result<WriteOptions, ApiError> {
        let dry_run = match self.query.get("dryRun").map(String::as_str) {
            None | Some("") => false,
            Some("All") => true,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "dryRun: Unsupported value: {}: supported values: \"All\"",
                    go_quote(other)
                )))
            }
        };
        let validation = match body {
            WriteBody::DeleteOptions => FieldValidation::Ignore,
            WriteBody::Object => match self.query.get("fieldValidation").map(String::as_str) {
                None | Some("") | Some("Warn") => FieldValidation::Warn,
                Some("Ignore") => FieldValidation::Ignore,
                Some("Strict") => FieldValidation::Strict,
                Some(other) => return Err(ApiError::bad_request(format!(
                    "fieldValidation: Unsupported value: {}: supported values: \"Ignore\", \"Warn\", \"Strict\"",
                    go_quote(other)
                ))),
            },
        };
        Ok(WriteOptions {
            dry_run,
            validation,
        })
    }

    /// The `options` object of an AdmissionReview (`CreateOptions` / `UpdateOptions`).
    pub(super) fn admission_options(&self, kind: &str, dry_run: bool) -> Value {
        let mut o = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
        if dry_run {
            o["dryRun"] = json!(["All"]);
        }
        if let Some(fm) = self.query.get("fieldManager") {
            o["fieldManager"] = json!(fm);
        }
        if let Some(fv) = self.query.get("fieldValidation") {
            o["fieldValidation"] = json!(fv);
        }
        o
    }

    /// The request body as an object (JSON or YAML), in core form for events.k8s.io.
    pub(super) fn decode_body(&self, body: &Bytes) -> Result<Value, ApiError> {
        let content_type = self
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json");
        let base = content_type.split(';').next().unwrap_or_default().trim();
        let value: Value = match base {
            "application/yaml" => serde_saphyr::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
            protobuf::CONTENT_TYPE => {
                protobuf::decode(body).map_err(|e| ApiError::bad_request(e.to_string()))?
            }
            "application/json" | "" | "*/*" => serde_json::from_slice(body).map_err(|e| {
                ApiError::bad_request(format!(
                    "Object 'Kind' is missing in '{}': {e}",
                    String::from_utf8_lossy(body)
                ))
            })?,
            _ => {
                return Err(ApiError::unsupported_media_type(&[
                    "application/json",
                    "application/yaml",
                ]))
            }
        };
        if !value.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request is not an object",
            ));
        }
        Ok(if self.events_view() {
            events::to_core(&value)
        } else {
            value
        })
    }

    /// Fill in / check `apiVersion`, `kind` and the namespace against the URL.
    pub(super) fn check_identity(&self, obj: &mut Value) -> Result<(), ApiError> {
        let def = self.def();
        let api_version = if self.events_view() {
            "v1".to_string()
        } else {
            def.api_version()
        };
        let map = obj
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("the body of the request is not an object"))?;
        let have_kind = map
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !have_kind.is_empty() && have_kind != def.kind {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({have_kind}) does not match the expected kind ({})",
                def.kind
            )));
        }
        let have_av = map
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !have_av.is_empty() && have_av != api_version && !self.events_view() {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({have_av}) does not match the expected API version ({api_version})"
            )));
        }
        map.insert("kind".into(), json!(def.kind));
        map.insert("apiVersion".into(), json!(api_version));
        let meta = map
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
        // Go decodes metadata into ObjectMeta, whose namespace is a string (kubectl refuses
        // such a manifest before sending it, with the same words).
        if let Some(v) = meta
            .get("namespace")
            .filter(|v| !v.is_string() && !v.is_null())
        {
            let kind = match v {
                Value::Object(_) => "object",
                Value::Array(_) => "array",
                Value::Bool(_) => "bool",
                _ => "number",
            };
            return Err(ApiError::bad_request(format!(
                "json: cannot unmarshal {kind} into Go struct field ObjectMeta.metadata.namespace \
                 of type string"
            )));
        }
        if def.namespaced {
            let url_ns = self.target.namespace.clone().unwrap_or_default();
            match meta.get("namespace").and_then(Value::as_str) {
                Some(ns) if !ns.is_empty() && ns != url_ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ))
                }
                _ => {
                    meta.insert("namespace".into(), json!(url_ns));
                }
            }
        } else {
            meta.remove("namespace");
        }
        Ok(())
    }

    /// Decode-time schema handling: prune (reporting unknown fields per `fieldValidation`) and
    /// default.
    pub(super) fn decode_schema(
        &self,
        obj: &mut Value,
        validation: FieldValidation,
        warnings: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        let Some(schema) = &self.def().schema else {
            return Ok(());
        };
        let mut unknown = crd_schema::unknown_metadata_fields(obj);
        unknown.extend(schema.prune(obj));
        unknown.sort();
        if !unknown.is_empty() {
            match validation {
                FieldValidation::Strict => {
                    let list: Vec<String> = unknown
                        .iter()
                        .map(|u| format!("unknown field {}", go_quote(u)))
                        .collect();
                    return Err(ApiError::bad_request(format!(
                        "{} in version {} cannot be handled as a {}: strict decoding error: {}",
                        self.def().kind,
                        go_quote(self.def().version),
                        self.def().kind,
                        list.join(", ")
                    )));
                }
                FieldValidation::Warn => {
                    warnings.extend(
                        unknown
                            .iter()
                            .map(|u| format!("unknown field {}", go_quote(u))),
                    );
                }
                FieldValidation::Ignore => {}
            }
        }
        schema.default(obj);
        Ok(())
    }

    /// The webhooks, when they intercept this resource.
    pub(super) fn admission(&self) -> Option<Arc<AdmissionClient>> {
        read(&self.app.admission)
            .clone()
            .filter(|a| a.config().intercepts(self.def(), &self.target.subresource))
    }

    /// [`strategy::validate`], carrying the warnings gathered so far.
    pub(super) fn validate(
        &self,
        obj: &Value,
        name: &str,
        old: Option<&Value>,
        warnings: &[String],
    ) -> Result<(), ApiError> {
        strategy::validate(self.def(), obj, name, old)
            .map_err(|e| e.with_warnings(warnings.to_vec()))
    }
}
