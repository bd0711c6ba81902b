//! POST (`endpoints/handlers/create.go`): decode, prune and default, `generateName`, the
//! namespace must exist, mutating admission, `BeforeCreate` (strategy, validation), validating
//! admission, then the create (409 `AlreadyExists` when the name is taken). `dryRun=All` runs all
//! of it and stores nothing.

use bytes::Bytes;
use serde_json::Value;

use super::responsewriters::method_not_allowed;
use super::responsewriters::{json_reply, Reply};
use super::rest::{FieldValidation, RequestScope, WriteBody, WriteOptions};
use crate::apiserver::admission::AdmissionRequest;
use crate::apiserver::status::ApiError;
use crate::apiserver::store;
use crate::apiserver::strategy::{generate_name, prepare_for_create};
use crate::apiserver::{auth, authorization};

impl RequestScope<'_> {
    pub(super) async fn create(&self, body: &Bytes) -> Result<Reply, ApiError> {
        if self.target.name.is_some() || !self.target.subresource.is_empty() {
            return Err(method_not_allowed());
        }
        let WriteOptions {
            dry_run,
            validation,
        } = self.write_options(WriteBody::Object)?;
        let mut warnings = Vec::new();
        let mut obj = self.decode_body(body)?;
        self.check_identity(&mut obj)?;
        self.decode_schema(&mut obj, validation, &mut warnings)?;
        generate_name(&mut obj);
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if self.def().namespaced {
            let ns = self.target.namespace.clone().unwrap_or_default();
            if self.app.store.get("namespaces", None, &ns).is_none() {
                return Err(ApiError::not_found("", "namespaces", &ns));
            }
        }
        let options = self.admission_options("CreateOptions", dry_run);
        if let Some(adm) = self.admission() {
            let req = AdmissionRequest {
                def: self.def(),
                subresource: "",
                operation: "CREATE",
                name: &name,
                namespace: self.target.namespace.as_deref().unwrap_or_default(),
                user: &self.user,
                object: &obj,
                old_object: None,
                dry_run,
                options: options.clone(),
            };
            obj = adm.mutate(&req, &mut warnings).await?;
            self.decode_schema(&mut obj, FieldValidation::Ignore, &mut Vec::new())?;
        }
        prepare_for_create(self.def(), &mut obj);
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        self.validate(&obj, &name, None, &warnings)?;
        if let Some(adm) = self.admission() {
            let req = AdmissionRequest {
                def: self.def(),
                subresource: "",
                operation: "CREATE",
                name: &name,
                namespace: self.target.namespace.as_deref().unwrap_or_default(),
                user: &self.user,
                object: &obj,
                old_object: None,
                dry_run,
                options,
            };
            adm.validate(&req, &mut warnings).await?;
        }
        let key = (
            self.target.namespace.clone().unwrap_or_default(),
            name.clone(),
        );
        let result = {
            let mut state = self.app.store.lock();
            let exists = state
                .objects
                .get(self.def().storage)
                .is_some_and(|m| m.contains_key(&key));
            if exists {
                return Err(
                    ApiError::already_exists(self.def().group, self.def().plural, &name)
                        .with_warnings(warnings),
                );
            }
            if dry_run {
                obj
            } else {
                store::commit(
                    &mut state,
                    self.app.store.broadcast(),
                    self.def(),
                    obj,
                    false,
                )
            }
        };
        Ok(json_reply(201, &self.present(&result), warnings))
    }

    /// A review (`SelfSubjectAccessReview`, `SelfSubjectReview`) is answered for the requester,
    /// never stored.
    pub(super) fn review(&self, body: &Bytes) -> Result<Reply, ApiError> {
        if self.target.name.is_some() {
            return Err(method_not_allowed());
        }
        let review = self.decode_body(body)?;
        if self.def().kind == "SelfSubjectReview" {
            return Ok(json_reply(
                201,
                &auth::self_subject_review(&self.user),
                Vec::new(),
            ));
        }
        let answer = authorization::self_subject_access_review(&review, &self.user, &|a| {
            self.app.decide(a)
        })?;
        Ok(json_reply(201, &answer, Vec::new()))
    }
}
