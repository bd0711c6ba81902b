//! PATCH (`endpoints/handlers/patch.go`): the content type picks the patcher (415 for one the
//! resource does not take, e.g. strategic merge on a custom resource), the patch is applied to
//! the current object (422 with empty details when a JSON patch does not apply), and the result
//! goes down the update path; a conflict with another writer is retried as `GuaranteedUpdate`
//! does. A server-side apply of a missing object creates it.

use bytes::Bytes;
use serde_json::Value;

use super::responsewriters::{json_reply, Reply};
use super::rest::{FieldValidation, RequestScope, WriteBody, WriteOptions};
use crate::apiserver::events;
use crate::apiserver::status::{ApiError, FieldError};
use crate::apiserver::store::{self, rv_of, set_rv};
use crate::apiserver::strategy::prepare_for_create;

impl RequestScope<'_> {
    pub(super) async fn patch(&self, body: &Bytes) -> Result<Reply, ApiError> {
        self.require_name()?;
        let content_type = self
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let patch_type = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        let accepted = self.def().patch_types();
        if !accepted.contains(&patch_type.as_str()) {
            return Err(ApiError::unsupported_media_type(accepted));
        }
        let WriteOptions {
            dry_run,
            validation,
        } = self.write_options(WriteBody::Object)?;
        let apply = patch_type == "application/apply-patch+yaml";
        if apply && self.query.get("fieldManager").is_none_or(String::is_empty) {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                &[FieldError::required(
                    "fieldManager",
                    "is required for apply patch",
                )],
            ));
        }
        // GuaranteedUpdate: retry when another writer got in between.
        for _ in 0..5 {
            let mut warnings = Vec::new();
            let current = match self.lookup() {
                Some(c) => c,
                None if apply => return self.apply_create(body, dry_run, validation).await,
                None => return Err(self.not_found()),
            };
            let mut obj = (*current.value).clone();
            if self.events_view() {
                obj = events::to_events_v1(&obj);
            }
            apply_patch(&patch_type, &mut obj, body)?;
            if self.events_view() {
                obj = events::to_core(&obj);
            }
            let current_rv = rv_of(&current.value);
            let patched_rv = rv_of(&obj);
            if !patched_rv.is_empty() && patched_rv != current_rv {
                return Err(self.conflict());
            }
            set_rv(&mut obj, &current_rv);
            let name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if name != self.target.name.as_deref().unwrap_or_default() {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({name}) does not match the name on the URL ({})",
                    self.target.name.as_deref().unwrap_or_default()
                )));
            }
            self.check_identity(&mut obj)?;
            self.decode_schema(&mut obj, validation, &mut warnings)?;
            match self.write_update(obj, &current, dry_run, warnings).await {
                Ok((result, warnings)) => {
                    return Ok(json_reply(200, &self.present(&result), warnings))
                }
                Err(e) if e.code == 409 && e.reason() == "Conflict" && patched_rv.is_empty() => {
                    continue
                }
                Err(e) => return Err(e),
            }
        }
        Err(self.conflict())
    }

    /// Server-side apply of an object that does not exist yet: a create.
    async fn apply_create(
        &self,
        body: &Bytes,
        dry_run: bool,
        validation: FieldValidation,
    ) -> Result<Reply, ApiError> {
        let mut obj: Value = serde_saphyr::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        self.check_identity(&mut obj)?;
        let mut warnings = Vec::new();
        self.decode_schema(&mut obj, validation, &mut warnings)?;
        prepare_for_create(self.def(), &mut obj);
        let name = self.target.name.clone().unwrap_or_default();
        self.validate(&obj, &name, None, &warnings)?;
        let mut state = self.app.store.lock();
        let result = if dry_run {
            obj
        } else {
            store::commit(
                &mut state,
                self.app.store.broadcast(),
                self.def(),
                obj,
                false,
            )
        };
        Ok(json_reply(201, &self.present(&result), warnings))
    }
}

/// Apply a JSON patch / merge patch / (core types only) strategic merge patch / apply patch.
fn apply_patch(patch_type: &str, obj: &mut Value, body: &Bytes) -> Result<(), ApiError> {
    match patch_type {
        "application/json-patch+json" => {
            let raw: Value =
                serde_json::from_slice(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
            if !raw.is_array() {
                return Err(ApiError::bad_request(
                    "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
                ));
            }
            let patch: json_patch::Patch =
                serde_json::from_value(raw).map_err(|e| ApiError::bad_request(e.to_string()))?;
            if patch.0.len() > 10_000 {
                return Err(ApiError::new(
                    413,
                    "RequestEntityTooLarge",
                    format!(
                        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got {}",
                        patch.0.len()
                    ),
                    None,
                ));
            }
            json_patch::patch(obj, &patch).map_err(|_| ApiError::patch_not_applicable())
        }
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            let patch: Value =
                serde_json::from_slice(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
            if !patch.is_object() {
                return Err(ApiError::bad_request("Invalid JSON Patch"));
            }
            json_patch::merge(obj, &patch);
            Ok(())
        }
        "application/apply-patch+yaml" => {
            let patch: Value = serde_saphyr::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
            if !patch.is_object() {
                return Err(ApiError::bad_request("error decoding YAML: not an object"));
            }
            json_patch::merge(obj, &patch);
            Ok(())
        }
        _ => Err(ApiError::unsupported_media_type(&[patch_type])),
    }
}
