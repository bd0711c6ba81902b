//! WATCH: a chunked stream of `{"type":…,"object":…}` lines. Starts with synthetic ADDED events
//! (no resourceVersion, "0", or `sendInitialEvents=true`) or replays the history after the given
//! resourceVersion (an ERROR 410 "too old resource version" when it was compacted away), then
//! follows new changes, with BOOKMARKs when asked for, until `timeoutSeconds`, the client leaving,
//! or a test dropping every watch.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc, watch};

use super::events;
use super::resources::ResourceDef;
use super::selectors::{FieldSelector, LabelSelector};
use super::status::ApiError;
use super::store::{Change, ChangeKind, Store, Stored};
use super::table;

pub struct WatchRequest {
    pub def: Arc<ResourceDef>,
    pub namespace: Option<String>,
    /// A watch on a single object (`fieldSelector=metadata.name=x` is also common).
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub resource_version: Option<String>,
    pub bookmarks: bool,
    pub send_initial_events: bool,
    pub timeout: Option<Duration>,
    pub as_table: bool,
    pub include_object: String,
    pub bookmark_interval: Duration,
}

pub type BodyStream = futures_util::stream::BoxStream<'static, Result<Bytes, Infallible>>;

/// Serialization of one watched object in the representation the client asked for.
struct View {
    def: Arc<ResourceDef>,
    as_table: bool,
    include_object: String,
    headers_sent: bool,
}

impl View {
    fn object_bytes(&mut self, stored: &Stored) -> Bytes {
        let events_v1 = self.def.group == "events.k8s.io";
        if !self.as_table && !events_v1 {
            return stored.json.clone();
        }
        let obj = if events_v1 {
            events::to_events_v1(&stored.value)
        } else {
            (*stored.value).clone()
        };
        if !self.as_table {
            return Bytes::from(serde_json::to_vec(&obj).unwrap_or_default());
        }
        let mut t = json!({
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""))},
            "rows": [table::row(&self.def, &obj, &self.include_object)]
        });
        if !self.headers_sent {
            t["columnDefinitions"] = json!(table::column_definitions(&self.def));
            self.headers_sent = true;
        } else {
            t["columnDefinitions"] = Value::Null;
        }
        Bytes::from(serde_json::to_vec(&t).unwrap_or_default())
    }

    fn event(&mut self, kind: &str, stored: &Stored) -> Bytes {
        let object = self.object_bytes(stored);
        let mut buf = BytesMut::with_capacity(object.len() + 32);
        buf.put_slice(b"{\"type\":\"");
        buf.put_slice(kind.as_bytes());
        buf.put_slice(b"\",\"object\":");
        buf.put_slice(&object);
        buf.put_slice(b"}\n");
        buf.freeze()
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
        if initial_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = json!({
            "type": "BOOKMARK",
            "object": {"kind": self.def.kind, "apiVersion": self.def.api_version(), "metadata": metadata}
        });
        let mut v = serde_json::to_vec(&obj).unwrap_or_default();
        v.push(b'\n');
        Bytes::from(v)
    }
}

fn selected(req: &WatchRequest, value: &Value) -> bool {
    req.labels.matches(value) && req.fields.matches(value)
}

fn in_scope(req: &WatchRequest, change: &Change) -> bool {
    change.storage == req.def.storage
        && req
            .namespace
            .as_deref()
            .is_none_or(|ns| ns == change.namespace)
}

/// What a change looks like through this watch's selectors.
fn translate(req: &WatchRequest, change: &Change) -> Option<ChangeKind> {
    if !in_scope(req, change) {
        return None;
    }
    let now = selected(req, &change.object.value);
    let before = change
        .previous
        .as_ref()
        .is_some_and(|p| selected(req, &p.value));
    match change.kind {
        ChangeKind::Added => now.then_some(ChangeKind::Added),
        ChangeKind::Deleted => (now || before).then_some(ChangeKind::Deleted),
        ChangeKind::Modified => match (before, now) {
            (true, true) => Some(ChangeKind::Modified),
            (false, true) => Some(ChangeKind::Added),
            (true, false) => Some(ChangeKind::Deleted),
            (false, false) => None,
        },
    }
}

/// Start a watch; the returned stream is the response body.
pub fn start(
    store: &Store,
    req: WatchRequest,
    mut drop_signal: watch::Receiver<u64>,
) -> Result<BodyStream, ApiError> {
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let mut view = View {
        def: req.def.clone(),
        as_table: req.as_table,
        include_object: req.include_object.clone(),
        headers_sent: false,
    };
    let mut initial: Vec<Bytes> = Vec::new();
    let mut expired: Option<Bytes> = None;
    let mut subscription: broadcast::Receiver<Arc<Change>>;
    let start_rv;
    {
        let state = store.lock();
        start_rv = state.rv;
        subscription = store.subscribe();
        let requested = match req.resource_version.as_deref() {
            None | Some("") | Some("0") => None,
            Some(s) => Some(s.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!(
                    "resourceVersion: Invalid value: {s:?}: must be a non-negative integer"
                ))
            })?),
        };
        let synthetic = requested.is_none() || req.send_initial_events;
        if synthetic {
            if let Some(objects) = state.objects.get(req.def.storage) {
                for ((ns, _), stored) in objects {
                    if req.namespace.as_deref().is_some_and(|n| n != ns) {
                        continue;
                    }
                    if selected(&req, &stored.value) {
                        initial.push(view.event("ADDED", stored));
                    }
                }
            }
            if req.send_initial_events && req.bookmarks {
                initial.push(view.bookmark(start_rv, true));
            }
        } else if let Some(from) = requested {
            if from < state.compacted {
                let status = ApiError::expired(format!(
                    "too old resource version: {from} ({})",
                    state.compacted + 1
                ));
                let mut line =
                    serde_json::to_vec(&json!({"type": "ERROR", "object": *status.status}))
                        .unwrap_or_default();
                line.push(b'\n');
                expired = Some(Bytes::from(line));
            } else {
                for change in state.history.iter().filter(|c| c.rv > from) {
                    if let Some(kind) = translate(&req, change) {
                        initial.push(view.event(kind.as_str(), &change.object));
                    }
                }
            }
        }
    }

    let interval = req.bookmark_interval;
    let timeout = req.timeout;
    let store = store.clone();
    tokio::spawn(async move {
        if let Some(line) = expired {
            let _ = tx.send(line).await;
            return;
        }
        for line in initial {
            if tx.send(line).await.is_err() {
                return;
            }
        }
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending::<()>().await,
                }
            };
            // Biased: once a test drops the watches, nothing more is sent on them.
            tokio::select! {
                biased;
                _ = drop_signal.changed() => return,
                change = subscription.recv() => match change {
                    Ok(change) => {
                        if change.rv <= start_rv {
                            continue;
                        }
                        if let Some(kind) = translate(&req, &change) {
                            if tx.send(view.event(kind.as_str(), &change.object)).await.is_err() {
                                return;
                            }
                        }
                    }
                    // A watcher that falls behind is closed, as the real watch cache does; the
                    // client re-watches from its last resourceVersion.
                    Err(_) => return,
                },
                _ = ticker.tick(), if req.bookmarks => {
                    let rv = store.resource_version();
                    if tx.send(view.bookmark(rv, false)).await.is_err() {
                        return;
                    }
                }
                _ = sleep => return,
                _ = tx.closed() => return,
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<Bytes, Infallible>(b), rx))
    });
    Ok(Box::pin(stream))
}
