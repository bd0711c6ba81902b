//! PUT (`endpoints/handlers/update.go`) and the update path PATCH ends in: the body must name
//! the object of the URL and carry the current resourceVersion (409 `Conflict` otherwise); then
//! mutating admission, `BeforeUpdate` (strategy: status subresource, generation; validation),
//! validating admission, and a commit guarded by the resourceVersion read at the start. An
//! object with a `deletionTimestamp` whose last finalizer goes is deleted.

use bytes::Bytes;
use serde_json::Value;

use super::responsewriters::{json_reply, Reply};
use super::rest::{FieldValidation, RequestScope, WriteBody, WriteOptions};
use crate::apiserver::admission::AdmissionRequest;
use crate::apiserver::status::{ApiError, FieldError};
use crate::apiserver::store::{self, rv_of, Stored};
use crate::apiserver::strategy::prepare_for_update;

impl RequestScope<'_> {
    pub(super) async fn update(&self, body: &Bytes) -> Result<Reply, ApiError> {
        self.require_name()?;
        let WriteOptions {
            dry_run,
            validation,
        } = self.write_options(WriteBody::Object)?;
        let mut warnings = Vec::new();
        let mut obj = self.decode_body(body)?;
        self.check_identity(&mut obj)?;
        let name = self.target.name.clone().unwrap_or_default();
        let body_name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        self.decode_schema(&mut obj, validation, &mut warnings)?;
        let current = self.lookup().ok_or_else(|| self.not_found())?;
        let requested_rv = obj
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if requested_rv.is_empty() {
            // Custom resources and the types served here do not allow unconditional updates.
            let errors = [FieldError::invalid(
                "metadata.resourceVersion",
                "0x0".into(),
                "must be specified for an update",
            )];
            return Err(ApiError::invalid(
                self.def().group,
                self.def().plural,
                &name,
                &errors,
            ));
        }
        let current_rv = rv_of(&current.value);
        if requested_rv != current_rv {
            return Err(self.conflict().with_warnings(warnings));
        }
        let result = self
            .write_update(obj, &current, dry_run, warnings.clone())
            .await?;
        Ok(json_reply(200, &self.present(&result.0), result.1))
    }

    /// The update path shared by PUT and PATCH: mutating admission, strategy (status handling,
    /// generation), validation, validating admission, then commit guarded by resourceVersion.
    /// A PATCH reaches admission as an update with `UpdateOptions` (`patchToUpdateOptions`).
    pub(super) async fn write_update(
        &self,
        mut obj: Value,
        current: &Stored,
        dry_run: bool,
        mut warnings: Vec<String>,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let name = self.target.name.clone().unwrap_or_default();
        let options = self.admission_options("UpdateOptions", dry_run);
        let namespace = self.target.namespace.clone().unwrap_or_default();
        if let Some(adm) = self.admission() {
            let req = AdmissionRequest {
                def: self.def(),
                subresource: &self.target.subresource,
                operation: "UPDATE",
                name: &name,
                namespace: &namespace,
                user: &self.user,
                object: &obj,
                old_object: Some(&current.value),
                dry_run,
                options: options.clone(),
            };
            obj = adm.mutate(&req, &mut warnings).await?;
            self.decode_schema(&mut obj, FieldValidation::Ignore, &mut Vec::new())?;
        }
        prepare_for_update(
            self.def(),
            &self.target.subresource,
            &mut obj,
            &current.value,
        );
        self.validate(&obj, &name, Some(&current.value), &warnings)?;
        if let Some(adm) = self.admission() {
            let req = AdmissionRequest {
                def: self.def(),
                subresource: &self.target.subresource,
                operation: "UPDATE",
                name: &name,
                namespace: &namespace,
                user: &self.user,
                object: &obj,
                old_object: Some(&current.value),
                dry_run,
                options,
            };
            adm.validate(&req, &mut warnings).await?;
        }
        let expected = rv_of(&current.value);
        let mut state = self.app.store.lock();
        let latest = state
            .objects
            .get(self.def().storage)
            .and_then(|m| m.get(&self.key()))
            .cloned()
            .ok_or_else(|| self.not_found())?;
        if rv_of(&latest.value) != expected {
            return Err(self.conflict().with_warnings(warnings));
        }
        if dry_run {
            return Ok((obj, warnings));
        }
        let finishing = obj.pointer("/metadata/deletionTimestamp").is_some()
            && obj
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
        let committed = store::commit(
            &mut state,
            self.app.store.broadcast(),
            self.def(),
            obj,
            true,
        );
        if finishing {
            store::commit_delete(
                &mut state,
                self.app.store.broadcast(),
                self.def(),
                &self.key(),
            );
        }
        Ok((committed, warnings))
    }
}
