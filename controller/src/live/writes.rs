//! Every write the controller makes, each guarded so that two replicas acting at once (a Lease
//! cannot prevent that: a paused leader may still be running) can never double-promote or use one
//! approval twice:
//! - promotion writes are the merge patches of [`promotion_shared::patch`], each carrying the
//!   `resourceVersion` of the object it was computed from, so a write based on an outdated read
//!   fails with a 409 conflict and the next reconcile decides again from the new state;
//! - approvals are removed from the stage list as read, at the indices the decision names — the
//!   list is written back whole but only as read (upstream's typed rewrite of the list dropped
//!   `automaticReset: false` elsewhere, D3);
//! - generated profiles are written by server-side apply with upstream's field manager
//!   `application/apply-patch`, so profiles the Enterprise controller created are taken over
//!   without orphaned field ownership, and deleted with a UID precondition.
//!
//! A failure is read with [`promotion_shared::api_error::classify`], the reading the plugin uses.

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use serde_json::Value;

use super::fault;
use promotion_shared::api_error::{classify, Failure};
use promotion_shared::patch::{self, PatchError};
use promotion_shared::promoting::{Promoting, PROMOTING_ANNOTATION};
use promotion_shared::status_writer::CONTROLLER_FIELD_MANAGER;

/// Upstream's server-side apply field manager for generated ClusterProfiles (sic).
pub const PROFILE_FIELD_MANAGER: &str = "application/apply-patch";

/// Why a write failed, as the reconcile reports and retries it.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The API server answered with a failure: `failure` is what it means, `message` its words.
    #[error("{what}: {message}")]
    Refused {
        what: String,
        failure: Failure,
        message: String,
    },
    /// No answer (connection refused, reset, timed out): whether it was applied is unknown.
    #[error("{what}: no answer from the API server ({reason})")]
    Unanswered { what: String, reason: String },
    /// The write could not be built from the object read: nothing was sent.
    #[error("{what}: {source}")]
    Unbuildable {
        what: String,
        #[source]
        source: PatchError,
    },
    /// The object to write is not the controller's to write (a hand-made ClusterProfile with a
    /// generated profile's name): nothing was sent.
    #[error("{what}: {why}")]
    Fenced { what: String, why: String },
}

impl WriteError {
    /// The failure's name, for the error metric: `conflict`, `denied`, `forbidden`, …,
    /// `unanswered`, `unbuildable`.
    pub fn reason(&self) -> &'static str {
        match self {
            WriteError::Refused { failure, .. } => failure.label(),
            WriteError::Unanswered { .. } => "unanswered",
            WriteError::Unbuildable { .. } => "unbuildable",
            WriteError::Fenced { .. } => "fenced",
        }
    }

    /// What the answer means, when the server gave one.
    pub fn failure(&self) -> Option<Failure> {
        match self {
            WriteError::Refused { failure, .. } => Some(*failure),
            _ => None,
        }
    }

    pub(crate) fn of(what: impl Into<String>, e: kube::Error) -> WriteError {
        let what = what.into();
        match e {
            kube::Error::Api(status) => WriteError::Refused {
                what,
                failure: classify(&status),
                message: if status.message.is_empty() {
                    format!("{} ({})", status.reason, status.code)
                } else {
                    status.message.clone()
                },
            },
            other => WriteError::Unanswered {
                what,
                reason: kube_connect::error_chain(&other),
            },
        }
    }
}

fn params() -> PatchParams {
    PatchParams {
        field_manager: Some(CONTROLLER_FIELD_MANAGER.into()),
        ..PatchParams::default()
    }
}

/// What a profile write is guarded by.
pub enum ProfileFence {
    /// The profile as the cache holds it: the version the decision read.
    Read { resource_version: String },
    /// Not in the cache (the promotion's profile watch has not seen one of that name).
    Unseen { promotion: String },
}

pub struct Writer {
    pub promotions: Api<DynamicObject>,
    pub profiles: Api<DynamicObject>,
}

/// A patch built from the object read, or the reason it cannot be.
fn built(what: &str, patch: Result<Value, PatchError>) -> Result<Value, WriteError> {
    patch.map_err(|source| WriteError::Unbuildable {
        what: what.to_string(),
        source,
    })
}

impl Writer {
    /// The promotion as stored now (`None`: it is gone), read directly rather than from a
    /// cache, to decide again after a conflict.
    pub async fn read(&self, name: &str) -> Result<Option<Value>, WriteError> {
        match self.promotions.get(name).await {
            Ok(object) => Ok(Some(to_value(&object))),
            Err(kube::Error::Api(s)) if classify(&s) == Failure::NotFound => Ok(None),
            Err(e) => Err(WriteError::of(
                format!("reading clusterpromotion {name}"),
                e,
            )),
        }
    }

    /// Add our finalizer, if the promotion is still as read. Returns the stored object.
    pub async fn add_finalizer(&self, promotion: &Value) -> Result<Value, WriteError> {
        let what = "adding the finalizer";
        let body = built(what, patch::finalizer(promotion, true))?;
        self.patch(promotion, &body, what).await
    }

    /// Remove our finalizer, if the promotion is still as read.
    pub async fn remove_finalizer(&self, promotion: &Value) -> Result<(), WriteError> {
        let what = "removing the finalizer";
        let body = built(what, patch::finalizer(promotion, false))?;
        match self.patch(promotion, &body, what).await {
            Ok(_) => Ok(()),
            // Already gone with the object: done.
            Err(e) if e.failure() == Some(Failure::NotFound) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Use the approvals at `stages` (indices in `spec.stages`) and record the committed step,
    /// in one write that fails unless the promotion is still as read. Returns the stored object.
    pub async fn commit(
        &self,
        promotion: &Value,
        stages: &[usize],
        promoting: Option<&Promoting>,
    ) -> Result<Value, WriteError> {
        let what = "using the approval";
        let body = built(what, patch::commit(promotion, stages, promoting))?;
        self.patch(promotion, &body, what).await
    }

    /// Write the whole status, if the promotion is still as read. Returns the stored object.
    pub async fn status(&self, promotion: &Value, status: &Value) -> Result<Value, WriteError> {
        let what = "writing the status";
        let body = built(what, patch::status(promotion, status))?;
        let stored = fault::guarded(
            what,
            self.promotions
                .patch_status(name_of(promotion), &params(), &Patch::Merge(&body)),
        )
        .await
        .map_err(|e| WriteError::of(what, e))?;
        Ok(to_value(&stored))
    }

    /// Set and remove the controller's annotations (an automatic rollback, its note of a failing
    /// stage), if the promotion is still as read.
    pub async fn annotations(
        &self,
        promotion: &Value,
        edits: &std::collections::BTreeMap<String, Option<String>>,
    ) -> Result<Value, WriteError> {
        let what = "writing the annotations";
        let body = built(what, patch::annotations(promotion, edits))?;
        self.patch(promotion, &body, what).await
    }

    /// Remove the committed-step annotation, if the promotion is still as read.
    pub async fn clear_promoting(&self, promotion: &Value) -> Result<Value, WriteError> {
        let what = "clearing the committed step";
        let body = built(
            what,
            patch::remove_annotation(promotion, PROMOTING_ANNOTATION),
        )?;
        self.patch(promotion, &body, what).await
    }

    pub async fn apply_profile(
        &self,
        body: &Value,
        fence: &ProfileFence,
    ) -> Result<(), WriteError> {
        let name = name_of(body);
        let what = format!("applying ClusterProfile {name}");
        let mut body = body.clone();
        match fence {
            // Applied only over the version the decision read: a profile changed since is
            // decided again, not overwritten.
            ProfileFence::Read { resource_version } => {
                body["metadata"]["resourceVersion"] = Value::from(resource_version.as_str());
            }
            // Not in the cache, whose watch sees only profiles labelled as a promotion's: a
            // profile of that name may still exist, made by hand or by another tool. Read it;
            // a forced apply would take it over.
            ProfileFence::Unseen { promotion } => {
                if let Some(existing) = self.read_profile(name).await? {
                    if !promotion_shared::model::generated_for(&existing, promotion) {
                        return Err(WriteError::Fenced {
                            what,
                            why: format!(
                                "a ClusterProfile of that name exists and was not generated for \
                                 promotion {promotion} (no label {}={promotion}): it is not taken \
                                 over; rename or delete it",
                                promotion_shared::model::PROMOTION_NAME_LABEL
                            ),
                        });
                    }
                }
            }
        }
        let pp = PatchParams::apply(PROFILE_FIELD_MANAGER).force();
        fault::guarded(&what, self.profiles.patch(name, &pp, &Patch::Apply(&body)))
            .await
            .map(|_| ())
            .map_err(|e| WriteError::of(what, e))
    }

    /// A profile as stored now, read directly (`None`: there is none).
    async fn read_profile(&self, name: &str) -> Result<Option<Value>, WriteError> {
        match self.profiles.get(name).await {
            Ok(object) => Ok(Some(to_value(&object))),
            Err(kube::Error::Api(s)) if classify(&s) == Failure::NotFound => Ok(None),
            Err(e) => Err(WriteError::of(format!("reading ClusterProfile {name}"), e)),
        }
    }

    /// Delete a profile, only the one that was read, as it was read (its UID and
    /// resourceVersion): one changed since is decided again.
    pub async fn delete_profile(
        &self,
        name: &str,
        uid: &str,
        resource_version: &str,
    ) -> Result<(), WriteError> {
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.to_string()),
                resource_version: Some(resource_version.to_string()),
            }),
            ..DeleteParams::default()
        };
        match fault::guarded("deleting a ClusterProfile", self.profiles.delete(name, &dp)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if classify(&s) == Failure::NotFound => Ok(()),
            Err(e) => Err(WriteError::of(format!("deleting ClusterProfile {name}"), e)),
        }
    }

    async fn patch(
        &self,
        promotion: &Value,
        body: &Value,
        what: &str,
    ) -> Result<Value, WriteError> {
        let stored = fault::guarded(
            what,
            self.promotions
                .patch(name_of(promotion), &params(), &Patch::Merge(body)),
        )
        .await
        .map_err(|e| WriteError::of(what, e))?;
        Ok(to_value(&stored))
    }
}

/// An object the API server returned, as the decision reads objects.
fn to_value(object: &DynamicObject) -> Value {
    // A DynamicObject is JSON it was decoded from: serializing it back cannot fail.
    serde_json::to_value(object).unwrap_or(Value::Null)
}

fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}
