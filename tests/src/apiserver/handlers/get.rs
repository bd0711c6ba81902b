//! GET and LIST (`endpoints/handlers/get.go`): one object, or a selection with label and field
//! selectors, `limit`/`continue` pages and list `resourceVersion`, as JSON or as a `Table`. A
//! LIST is the concatenation of the bytes each object was serialized to when written.

use base64::Engine;
use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::responsewriters::{json_reply, Reply};
use super::rest::RequestScope;
use crate::apiserver::status::{go_quote, ApiError};
use crate::apiserver::store::{self, Stored};
use crate::apiserver::table;

/// The continue token: base64 JSON like the real one (`{"v":…,"rv":…,"start":…}`).
fn encode_continue(rv: u64, ns: &str, name: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{ns}/{name}\u{0}")});
    base64::engine::general_purpose::URL_SAFE.encode(token.to_string())
}

fn decode_continue(token: &str) -> Result<(u64, String, String), ApiError> {
    let bad = || ApiError::bad_request(format!("continue key is not valid: {token}"));
    let raw = base64::engine::general_purpose::URL_SAFE
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(bad)?
        .trim_end_matches('\u{0}');
    let (ns, name) = start.split_once('/').ok_or_else(bad)?;
    Ok((rv, ns.to_string(), name.to_string()))
}

impl RequestScope<'_> {
    pub(super) fn get(&self) -> Result<Reply, ApiError> {
        let stored = self.lookup().ok_or_else(|| self.not_found())?;
        if table::wants_table(&self.accept) {
            let obj = self.present(&stored.value);
            let t = json!({
                "kind": "Table",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""))},
                "columnDefinitions": table::column_definitions(self.def()),
                "rows": [table::row(self.def(), &obj, &self.include_object())]
            });
            return Ok(json_reply(200, &t, vec![]));
        }
        if self.events_view() {
            return Ok(json_reply(200, &self.present(&stored.value), vec![]));
        }
        Ok(Reply::Json {
            code: 200,
            body: stored.json,
            content_type: "application/json",
            warnings: vec![],
        })
    }

    pub(super) fn list(&self) -> Result<Reply, ApiError> {
        let (labels, fields) = self.selectors()?;
        let limit: usize = self
            .query
            .get("limit")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let continuing = match self.query.get("continue").filter(|c| !c.is_empty()) {
            Some(token) => Some(decode_continue(token)?),
            None => None,
        };
        let mut items: Vec<Stored> = Vec::new();
        let mut next: Option<(String, String)> = None;
        let mut remaining = 0u64;
        let list_rv;
        {
            let state = self.app.store.lock();
            if let Some((rv, _, _)) = &continuing {
                if *rv <= state.compacted {
                    return Err(ApiError::expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."));
                }
            }
            if let (Some(rv), Some("Exact")) = (
                self.query
                    .get("resourceVersion")
                    .and_then(|r| r.parse::<u64>().ok()),
                self.query.get("resourceVersionMatch").map(String::as_str),
            ) {
                if rv <= state.compacted {
                    return Err(ApiError::expired(format!(
                        "too old resource version: {rv} ({})",
                        state.compacted + 1
                    )));
                }
            }
            list_rv = continuing.as_ref().map(|c| c.0).unwrap_or(state.rv);
            if let Some(objects) = state.objects.get(self.def().storage) {
                let range: Box<dyn Iterator<Item = (&store::Key, &Stored)>> = match &continuing {
                    Some((_, ns, name)) => Box::new(objects.range((
                        std::ops::Bound::Excluded((ns.clone(), name.clone())),
                        std::ops::Bound::Unbounded,
                    ))),
                    None => Box::new(objects.iter()),
                };
                let ns_filter = self.target.namespace.as_deref();
                for ((ns, name), stored) in range {
                    if ns_filter.is_some_and(|f| f != ns) {
                        continue;
                    }
                    if !labels.matches(&stored.value) || !fields.matches(&stored.value) {
                        continue;
                    }
                    if limit > 0 && items.len() >= limit {
                        if next.is_none() {
                            next = Some((ns.clone(), name.clone()));
                        }
                        remaining += 1;
                        continue;
                    }
                    items.push(stored.clone());
                }
            }
        }
        let continue_token = next.as_ref().map(|_| {
            let last = items.last().map(|s| {
                (
                    s.value
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    s.value
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                )
            });
            let (ns, name) = last.unwrap_or_default();
            encode_continue(list_rv, &ns, &name)
        });
        let mut metadata = Map::new();
        if let Some(c) = &continue_token {
            metadata.insert("continue".into(), json!(c));
        }
        metadata.insert("resourceVersion".into(), json!(list_rv.to_string()));
        if continue_token.is_some() && labels.is_empty() && fields.is_empty() {
            metadata.insert("remainingItemCount".into(), json!(remaining));
        }
        if table::wants_table(&self.accept) {
            let include = self.include_object();
            let rows: Vec<Value> = items
                .iter()
                .map(|s| table::row(self.def(), &self.present(&s.value), &include))
                .collect();
            let t = json!({
                "kind": "Table",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": Value::Object(metadata),
                "columnDefinitions": table::column_definitions(self.def()),
                "rows": rows
            });
            return Ok(json_reply(200, &t, vec![]));
        }
        // Serialize once: the items are concatenated from their stored bytes.
        let mut out: Vec<u8> =
            Vec::with_capacity(items.iter().map(|s| s.json.len() + 1).sum::<usize>() + 256);
        out.extend_from_slice(b"{\"kind\":");
        out.extend_from_slice(go_quote(&self.def().list_kind()).as_bytes());
        out.extend_from_slice(b",\"apiVersion\":");
        out.extend_from_slice(go_quote(&self.def().api_version()).as_bytes());
        out.extend_from_slice(b",\"metadata\":");
        out.extend_from_slice(&serde_json::to_vec(&Value::Object(metadata)).unwrap_or_default());
        out.extend_from_slice(b",\"items\":[");
        for (i, s) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            if self.events_view() {
                out.extend_from_slice(
                    &serde_json::to_vec(&self.present(&s.value)).unwrap_or_default(),
                );
            } else {
                out.extend_from_slice(&s.json);
            }
        }
        out.extend_from_slice(b"]}");
        Ok(Reply::Json {
            code: 200,
            body: Bytes::from(out),
            content_type: "application/json",
            warnings: vec![],
        })
    }
}
