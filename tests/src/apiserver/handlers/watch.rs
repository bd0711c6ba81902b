//! WATCH (`endpoints/handlers/watch.go`, reached from `ListResource` with `watch=true`): the
//! request's selectors, starting resourceVersion, bookmarks, initial events and timeout, handed
//! to the stream in [`crate::apiserver::watch`]. A watch on a named object is a watch of the
//! collection with `metadata.name=<name>`.

use std::time::Duration;

use super::requestinfo::truthy;
use super::responsewriters::Reply;
use super::rest::RequestScope;
use crate::apiserver::selectors::{field_pointer, FieldSelector};
use crate::apiserver::status::ApiError;
use crate::apiserver::table;
use crate::apiserver::watch::{self, WatchRequest};

impl RequestScope<'_> {
    pub(super) fn watch(&self) -> Result<Reply, ApiError> {
        let (labels, mut fields) = self.selectors()?;
        if let Some(name) = &self.target.name {
            let storage = self.def().storage;
            fields = FieldSelector::parse(&format!("metadata.name={name}"), &|f| {
                field_pointer(storage, f)
            })?;
        }
        let req = WatchRequest {
            def: self.target.def.clone(),
            namespace: self.target.namespace.clone(),
            labels,
            fields,
            resource_version: self.query.get("resourceVersion").cloned(),
            bookmarks: truthy(&self.query, "allowWatchBookmarks"),
            send_initial_events: truthy(&self.query, "sendInitialEvents"),
            timeout: self
                .query
                .get("timeoutSeconds")
                .and_then(|t| t.parse::<u64>().ok())
                .filter(|t| *t > 0)
                .map(Duration::from_secs),
            as_table: table::wants_table(&self.accept),
            include_object: self.include_object(),
            bookmark_interval: self.app.bookmark_interval,
        };
        let stream = watch::start(&self.app.store, req, self.app.drop_watches.subscribe())?;
        Ok(Reply::Stream(stream))
    }
}
