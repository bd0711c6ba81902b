//! Every write the controller makes, each guarded so that two replicas acting at once (a Lease
//! cannot prevent that: a paused leader may still be running) can never double-promote or use one
//! approval twice:
//! - promotion writes are JSON patches whose first operation tests `metadata.resourceVersion` (or
//!   the one value the write removes), so a write based on an outdated read fails with a conflict
//!   and the next reconcile decides again from the new state;
//! - approvals are removed by index, after testing the stage's name and `approved: true` — never
//!   by rewriting `spec.stages` (upstream's merge patch of the whole list drops
//!   `automaticReset: false` elsewhere, D3);
//! - generated profiles are written by server-side apply with upstream's field manager
//!   `application/apply-patch`, so profiles the Enterprise controller created are taken over
//!   without orphaned field ownership, and deleted with a UID precondition.

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use serde_json::{json, Value};

use promotion_shared::model::FINALIZER;
use promotion_shared::promoting::{Promoting, PROMOTING_ANNOTATION};
use promotion_shared::status_writer::CONTROLLER_FIELD_MANAGER;

/// Upstream's server-side apply field manager for generated ClusterProfiles (sic).
pub const PROFILE_FIELD_MANAGER: &str = "application/apply-patch";

/// Why a write failed, as the reconcile reports and retries it.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The object changed since it was read (or the tested value is gone): decide again.
    #[error("{what}: the promotion changed since it was read; deciding again")]
    Conflict { what: String },
    /// An admission webhook refused the write or could not be called.
    #[error("{what}: {message}")]
    Admission { what: String, message: String },
    #[error("{what}: {message}")]
    Forbidden { what: String, message: String },
    #[error("{what}: {source}")]
    Api {
        what: String,
        #[source]
        source: kube::Error,
    },
}

impl WriteError {
    pub fn reason(&self) -> &'static str {
        match self {
            WriteError::Conflict { .. } => "conflict",
            WriteError::Admission { .. } => "admission",
            WriteError::Forbidden { .. } => "forbidden",
            WriteError::Api { .. } => "api",
        }
    }

    fn of(what: impl Into<String>, e: kube::Error) -> WriteError {
        let what = what.into();
        if let kube::Error::Api(status) = &e {
            let message = status.message.clone();
            let code = status.code;
            if code == 409 || (code == 422 && message.contains("test")) {
                return WriteError::Conflict { what };
            }
            if message.contains("admission webhook") || message.contains("failed calling webhook") {
                return WriteError::Admission { what, message };
            }
            if code == 403 {
                return WriteError::Forbidden { what, message };
            }
        }
        WriteError::Api { what, source: e }
    }
}

/// A JSON Pointer token (RFC 6901).
fn token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

fn json_patch(ops: Value) -> Patch<()> {
    // Built from literal operations above: always a valid patch document.
    Patch::Json(serde_json::from_value(ops).unwrap_or_default())
}

fn params() -> PatchParams {
    PatchParams {
        field_manager: Some(CONTROLLER_FIELD_MANAGER.into()),
        ..PatchParams::default()
    }
}

/// The `resourceVersion` a write is guarded by (`null` when absent: the guard then fails).
pub fn version_of(object: &Value) -> Value {
    object
        .pointer("/metadata/resourceVersion")
        .cloned()
        .unwrap_or(Value::Null)
}

pub fn version_of_object(object: &DynamicObject) -> Value {
    object
        .metadata
        .resource_version
        .clone()
        .map(Value::String)
        .unwrap_or(Value::Null)
}

pub struct Writer {
    pub promotions: Api<DynamicObject>,
    pub profiles: Api<DynamicObject>,
}

impl Writer {
    /// Add our finalizer, if the promotion is still as read. Returns the stored object.
    pub async fn add_finalizer(&self, promotion: &Value) -> Result<Value, WriteError> {
        let name = name_of(promotion);
        let mut ops = vec![test_version(promotion)];
        match promotion
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
        {
            Some(_) => {
                ops.push(json!({"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER}))
            }
            None => {
                ops.push(json!({"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]}))
            }
        }
        self.patch(name, Value::Array(ops), "adding the finalizer")
            .await
    }

    /// Remove our finalizer: the test on its exact position makes a concurrent change fail.
    pub async fn remove_finalizer(&self, promotion: &Value) -> Result<(), WriteError> {
        let name = name_of(promotion);
        let Some(index) = promotion
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .and_then(|f| f.iter().position(|x| x == FINALIZER))
        else {
            return Ok(());
        };
        let path = format!("/metadata/finalizers/{index}");
        let ops = json!([{"op": "test", "path": path, "value": FINALIZER},
                         {"op": "remove", "path": path}]);
        match self.patch(name, ops, "removing the finalizer").await {
            Ok(_) => Ok(()),
            // Already gone with the object: done.
            Err(WriteError::Api {
                source: kube::Error::Api(s),
                ..
            }) if s.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Use the approvals of `stages` (those that reset automatically) and record the committed
    /// step, in one patch that fails unless the promotion is still as read. Returns the stored
    /// object (its resourceVersion guards the status write that follows).
    pub async fn commit(
        &self,
        promotion: &Value,
        stages: &[(usize, String)],
        promoting: Option<&Promoting>,
    ) -> Result<Value, WriteError> {
        let name = name_of(promotion);
        let mut ops = vec![test_version(promotion)];
        for (index, stage) in stages {
            let manual = format!("/spec/stages/{index}/trigger/manual");
            ops.push(
                json!({"op": "test", "path": format!("/spec/stages/{index}/name"), "value": stage}),
            );
            ops.push(json!({"op": "test", "path": format!("{manual}/approved"), "value": true}));
            ops.push(json!({"op": "remove", "path": format!("{manual}/approved")}));
        }
        if let Some(p) = promoting {
            match promotion
                .pointer("/metadata/annotations")
                .and_then(Value::as_object)
            {
                Some(_) => ops.push(json!({"op": "add",
                    "path": format!("/metadata/annotations/{}", token(PROMOTING_ANNOTATION)),
                    "value": p.to_annotation()})),
                None => ops.push(json!({"op": "add", "path": "/metadata/annotations",
                    "value": {PROMOTING_ANNOTATION: p.to_annotation()}})),
            }
        }
        self.patch(name, Value::Array(ops), "using the approval")
            .await
    }

    /// Write the whole status, if the promotion is still at `version`.
    pub async fn status(
        &self,
        name: &str,
        version: &Value,
        status: &Value,
    ) -> Result<Value, WriteError> {
        let ops = json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": version},
            {"op": "add", "path": "/status", "value": status},
        ]);
        let stored = self
            .promotions
            .patch_status(name, &params(), &json_patch(ops))
            .await
            .map_err(|e| WriteError::of("writing the status", e))?;
        Ok(serde_json::to_value(stored).unwrap_or(Value::Null))
    }

    /// Remove the committed-step annotation, if it still reads `text`.
    pub async fn clear_promoting(&self, name: &str, text: &str) -> Result<(), WriteError> {
        let path = format!("/metadata/annotations/{}", token(PROMOTING_ANNOTATION));
        let ops = json!([{"op": "test", "path": path, "value": text},
                         {"op": "remove", "path": path}]);
        self.patch(name, ops, "clearing the committed step")
            .await
            .map(|_| ())
    }

    pub async fn apply_profile(&self, body: &Value) -> Result<(), WriteError> {
        let name = name_of(body);
        let pp = PatchParams::apply(PROFILE_FIELD_MANAGER).force();
        self.profiles
            .patch(name, &pp, &Patch::Apply(body))
            .await
            .map(|_| ())
            .map_err(|e| WriteError::of(format!("applying ClusterProfile {name}"), e))
    }

    /// Delete a profile, only the one that was read (its UID).
    pub async fn delete_profile(&self, name: &str, uid: Option<&str>) -> Result<(), WriteError> {
        let dp = DeleteParams {
            preconditions: uid.map(|u| Preconditions {
                uid: Some(u.to_string()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match self.profiles.delete(name, &dp).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(WriteError::of(format!("deleting ClusterProfile {name}"), e)),
        }
    }

    async fn patch(&self, name: &str, ops: Value, what: &str) -> Result<Value, WriteError> {
        let stored = self
            .promotions
            .patch(name, &params(), &json_patch(ops))
            .await
            .map_err(|e| WriteError::of(what, e))?;
        Ok(serde_json::to_value(stored).unwrap_or(Value::Null))
    }
}

fn test_version(promotion: &Value) -> Value {
    json!({"op": "test", "path": "/metadata/resourceVersion", "value": version_of(promotion)})
}

fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotation_keys_are_escaped_as_json_pointer_tokens() {
        assert_eq!(
            token(PROMOTING_ANNOTATION),
            "promotion-controller.kubectl-promotion.dev~1promoting"
        );
        assert_eq!(token("a~b/c"), "a~0b~1c");
    }
}
