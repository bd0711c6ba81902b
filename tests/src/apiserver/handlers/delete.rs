//! DELETE and deletecollection (`endpoints/handlers/delete.go`): preconditions on uid and
//! resourceVersion (409), finalizers (the object gets a `deletionTimestamp` and stays until they
//! are gone), a namespace taking its objects with it, and the `Status` / list answers.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{json, Value};

use super::responsewriters::{json_reply, Reply};
use super::rest::{RequestScope, WriteBody};
use crate::apiserver::resources::ResourceDef;
use crate::apiserver::status::ApiError;
use crate::apiserver::store::{self, now_rfc3339, rv_of, Stored};

impl RequestScope<'_> {
    pub(super) fn delete(&self, body: &Bytes) -> Result<Reply, ApiError> {
        let dry_run = self.write_options(WriteBody::DeleteOptions)?.dry_run;
        let options: Value = if body.is_empty() {
            json!({})
        } else {
            serde_json::from_slice(body).unwrap_or(json!({}))
        };
        let mut state = self.app.store.lock();
        let current = state
            .objects
            .get(self.def().storage)
            .and_then(|m| m.get(&self.key()))
            .cloned()
            .ok_or_else(|| self.not_found())?;
        if let Some(want) = options
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
        {
            let have = rv_of(&current.value);
            if want != have {
                return Err(ApiError::conflict_with(
                    self.def().group,
                    self.def().plural,
                    self.target.name.as_deref().unwrap_or_default(),
                    &format!("Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {have}"),
                ));
            }
        }
        if let Some(want) = options
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
        {
            let have = current
                .value
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if want != have {
                return Err(ApiError::conflict_with(
                    self.def().group,
                    self.def().plural,
                    self.target.name.as_deref().unwrap_or_default(),
                    &format!("Precondition failed: UID in precondition: {want}, UID in object meta: {have}"),
                ));
            }
        }
        let has_finalizers = current
            .value
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if has_finalizers {
            let mut obj = (*current.value).clone();
            if obj.pointer("/metadata/deletionTimestamp").is_none() {
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
                    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
                }
                if !dry_run {
                    obj = store::commit(
                        &mut state,
                        self.app.store.broadcast(),
                        self.def(),
                        obj,
                        true,
                    );
                }
            }
            return Ok(json_reply(200, &self.present(&obj), vec![]));
        }
        if !dry_run {
            store::commit_delete(
                &mut state,
                self.app.store.broadcast(),
                self.def(),
                &self.key(),
            );
            if self.def().plural == "namespaces" && self.def().group.is_empty() {
                let ns = self.target.name.clone().unwrap_or_default();
                let namespaced: Vec<Arc<ResourceDef>> = self
                    .app
                    .store
                    .registry()
                    .iter()
                    .filter(|d| d.namespaced)
                    .cloned()
                    .collect();
                for d in namespaced {
                    let keys: Vec<store::Key> = state
                        .objects
                        .get(d.storage)
                        .map(|m| m.keys().filter(|(n, _)| *n == ns).cloned().collect())
                        .unwrap_or_default();
                    for k in keys {
                        store::commit_delete(&mut state, self.app.store.broadcast(), &d, &k);
                    }
                }
            }
        }
        let mut details = json!({
            "name": self.target.name.clone().unwrap_or_default(),
            "kind": self.def().plural,
            "uid": current.value.pointer("/metadata/uid").cloned().unwrap_or(json!(""))
        });
        if !self.def().group.is_empty() {
            details["group"] = json!(self.def().group);
        }
        let status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details
        });
        Ok(json_reply(200, &status, vec![]))
    }

    pub(super) fn delete_collection(&self) -> Result<Reply, ApiError> {
        let dry_run = self.write_options(WriteBody::DeleteOptions)?.dry_run;
        let (labels, fields) = self.selectors()?;
        let mut state = self.app.store.lock();
        let keys: Vec<(store::Key, Stored)> = state
            .objects
            .get(self.def().storage)
            .map(|m| {
                m.iter()
                    .filter(|((ns, _), s)| {
                        self.target.namespace.as_deref().is_none_or(|n| n == ns)
                            && labels.matches(&s.value)
                            && fields.matches(&s.value)
                    })
                    .map(|(k, s)| (k.clone(), s.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let mut items = Vec::new();
        for (k, s) in keys {
            items.push(self.present(&s.value));
            if !dry_run {
                store::commit_delete(&mut state, self.app.store.broadcast(), self.def(), &k);
            }
        }
        let list = json!({
            "kind": self.def().list_kind(),
            "apiVersion": self.def().api_version(),
            "metadata": {"resourceVersion": state.rv.to_string()},
            "items": items
        });
        Ok(json_reply(200, &list, vec![]))
    }
}
