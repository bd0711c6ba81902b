//! The rollout history kept up to date: after each reconcile whose writes succeeded, the
//! promotion as stored is compared with what was last recorded for it, and when the status moved
//! on its revisions are read and [`promotion_shared::history::plan`]'s writes carried out.
//!
//! History follows the status, never leads it: a revision records a stage reached or deployed
//! only once the status says so. A failed history write is logged and retried at the promotion's
//! next reconcile (nothing is remembered as recorded until every write succeeded); it never
//! fails the reconcile, which has already done what the rollout needs. Revisions are owned by
//! their promotion, so the garbage collector deletes them with it.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{SecondsFormat, Utc};
use k8s_openapi::api::apps::v1::ControllerRevision;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{json, Value};
use tracing::{debug, warn};

use promotion_shared::admission::SPEC_CHANGE_ANNOTATION;
use promotion_shared::history::{self, Revision, Write, RECORD_ANNOTATION};

pub struct History {
    api: Api<ControllerRevision>,
    namespace: String,
    limit: usize,
    /// Per promotion UID, what the history was last brought up to date with.
    recorded: Mutex<HashMap<String, String>>,
}

impl History {
    pub fn new(client: kube::Client, namespace: &str, limit: usize) -> History {
        History {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            limit,
            recorded: Mutex::new(HashMap::new()),
        }
    }

    fn remembered(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.recorded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forget what was recorded (on gaining the Lease: another replica may have written since).
    pub fn forget(&self) {
        self.remembered().clear();
    }

    /// Bring the history of `promotion` (as stored after the reconcile's writes) up to date.
    pub async fn sync(&self, promotion: &Value, profiles: &[Value]) {
        let Some(uid) = promotion.pointer("/metadata/uid").and_then(Value::as_str) else {
            return;
        };
        if promotion.pointer("/metadata/deletionTimestamp").is_some() {
            return;
        }
        // What the history depends on: the status, who changed the spec, and an abort.
        let annotation = |key: &str| {
            promotion
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(key))
        };
        let key = json!([
            promotion.get("status"),
            annotation(SPEC_CHANGE_ANNOTATION),
            annotation(promotion_shared::abort::ABORT_ANNOTATION),
            annotation(promotion_shared::abort::ABORT_RECORD_ANNOTATION),
        ])
        .to_string();
        if self.remembered().get(uid) == Some(&key) {
            return;
        }
        match self.carry_out(promotion, profiles, uid).await {
            Ok(()) => {
                let mut remembered = self.remembered();
                if remembered.len() > 100_000 {
                    remembered.clear();
                }
                remembered.insert(uid.to_string(), key);
            }
            Err(e) => {
                warn!(error = %e, "cannot record the rollout history: retried at the next reconcile")
            }
        }
    }

    /// The revisions of the promotion with UID `uid`.
    pub async fn revisions(&self, uid: &str) -> Result<Vec<Revision>, kube::Error> {
        crate::snapshot::revisions_of(&self.api, uid).await
    }

    async fn carry_out(
        &self,
        promotion: &Value,
        profiles: &[Value],
        uid: &str,
    ) -> Result<(), kube::Error> {
        let revisions = self.revisions(uid).await?;
        let now = Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true);
        // Seen for the first time: what its stage profiles run, besides its spec's rollout.
        let adopted = if revisions.is_empty() {
            promotion_shared::reconcile::adoption::adopted(promotion, profiles, &now)
        } else {
            Vec::new()
        };
        for write in history::plan(
            promotion,
            &revisions,
            adopted,
            self.limit,
            &self.namespace,
            &now,
        ) {
            match write {
                Write::Create(mut object) => {
                    object["metadata"]["ownerReferences"] = json!([{
                        "apiVersion": "config.projectsveltos.io/v1beta1",
                        "kind": "ClusterPromotion",
                        "name": promotion.pointer("/metadata/name"),
                        "uid": uid,
                    }]);
                    let revision: ControllerRevision =
                        serde_json::from_value(object).map_err(kube::Error::SerdeError)?;
                    match self.api.create(&PostParams::default(), &revision).await {
                        Ok(_) => debug!(revision = ?revision.metadata.name, "revision recorded"),
                        // Another replica, or an earlier attempt, created it.
                        Err(kube::Error::Api(s)) if s.code == 409 => {}
                        Err(e) => return Err(e),
                    }
                }
                Write::Record {
                    name,
                    record,
                    number,
                } => {
                    let mut patch = json!({"metadata": {"annotations": {
                        RECORD_ANNOTATION: serde_json::to_string(&record).unwrap_or_default(),
                    }}});
                    if let Some(n) = number {
                        patch["revision"] = json!(n);
                    }
                    self.api
                        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await?;
                }
                Write::Delete { name } => {
                    match self.api.delete(&name, &DeleteParams::default()).await {
                        Ok(_) => debug!(revision = %name, "revision pruned"),
                        Err(kube::Error::Api(s)) if s.code == 404 => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(())
    }
}
