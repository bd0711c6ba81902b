//! Objects as JSON through the API, for both backends: create, create-or-replace with the status
//! written through the `/status` subresource (as Sveltos writes it), get, list, delete. Types are
//! found by discovery from `apiVersion` and `kind`, so any installed CRD works.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, ApiResource, Scope};
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    #[error("{what}: {source}")]
    Api {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("object without {0}: {1}")]
    Malformed(&'static str, String),
    #[error("{what}: the server's answer is not an object of that kind: {source}")]
    Decode {
        what: String,
        #[source]
        source: serde_json::Error,
    },
}

impl ObjectError {
    /// The HTTP status of an API error (`None` for transport and local errors).
    pub fn code(&self) -> Option<u16> {
        match self {
            ObjectError::Api {
                source: kube::Error::Api(status),
                ..
            } => Some(status.code),
            _ => None,
        }
    }
}

/// A type as the API serves it.
#[derive(Clone, Debug)]
struct Served {
    resource: ApiResource,
    namespaced: bool,
    has_status: bool,
}

/// Object access for one client (one user).
#[derive(Clone)]
pub struct Objects {
    client: kube::Client,
    served: Arc<Mutex<HashMap<(String, String), Served>>>,
}

/// A type named the way manifests name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    pub api_version: &'static str,
    pub kind: &'static str,
}

pub const CLUSTER_PROMOTION: Kind = Kind {
    api_version: "config.projectsveltos.io/v1beta1",
    kind: "ClusterPromotion",
};
pub const CLUSTER_PROFILE: Kind = Kind {
    api_version: "config.projectsveltos.io/v1beta1",
    kind: "ClusterProfile",
};
pub const CLUSTER_SUMMARY: Kind = Kind {
    api_version: "config.projectsveltos.io/v1beta1",
    kind: "ClusterSummary",
};
pub const SVELTOS_CLUSTER: Kind = Kind {
    api_version: "lib.projectsveltos.io/v1beta1",
    kind: "SveltosCluster",
};
pub const EVENT: Kind = Kind {
    api_version: "v1",
    kind: "Event",
};
/// The same Events through the `events.k8s.io` group (RBAC treats it as another resource).
pub const EVENTS_K8S_IO_EVENT: Kind = Kind {
    api_version: "events.k8s.io/v1",
    kind: "Event",
};
pub const NAMESPACE: Kind = Kind {
    api_version: "v1",
    kind: "Namespace",
};

/// A freshly created CRD is served a moment after it is Established; discovery may lag.
const DISCOVERY_PATIENCE: Duration = Duration::from_secs(20);

impl Objects {
    pub fn new(client: kube::Client) -> Objects {
        Objects {
            client,
            served: Arc::default(),
        }
    }

    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    async fn served(&self, api_version: &str, kind: &str) -> Result<Served, ObjectError> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(s) = self
            .served
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(s.clone());
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let deadline = Instant::now() + DISCOVERY_PATIENCE;
        let (resource, caps): (ApiResource, ApiCapabilities) = loop {
            match kube::discovery::pinned_kind(&self.client, &gvk).await {
                Ok(found) => break found,
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(source) => {
                    return Err(ObjectError::Api {
                        what: format!("discovering {kind} in {api_version}"),
                        source,
                    })
                }
            }
        };
        let served = Served {
            namespaced: caps.scope == Scope::Namespaced,
            has_status: caps.subresources.iter().any(|(r, _)| r.plural == "status"),
            resource,
        };
        self.served
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, served.clone());
        Ok(served)
    }

    fn api(&self, served: &Served, namespace: Option<&str>) -> Api<DynamicObject> {
        match (served.namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &served.resource),
            _ => Api::all_with(self.client.clone(), &served.resource),
        }
    }

    /// Create `object` (status, if any, written afterwards through `/status`).
    pub async fn create(&self, object: &Value) -> Result<Value, ObjectError> {
        let (served, name, namespace) = self.identify(object).await?;
        let what = describe("creating", object, &name);
        let api = self.api(&served, namespace.as_deref());
        let created = api
            .create(&PostParams::default(), &to_dynamic(object, &what)?)
            .await
            .map_err(|source| ObjectError::Api {
                what: what.clone(),
                source,
            })?;
        self.write_status(&served, &api, object, created, &name)
            .await
    }

    /// What creating `object` would store (`dryRun=All`: admission runs, nothing is stored).
    pub async fn dry_run_create(&self, object: &Value) -> Result<Value, ObjectError> {
        let (served, name, namespace) = self.identify(object).await?;
        let what = describe("creating (dry run)", object, &name);
        let params = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        let created = self
            .api(&served, namespace.as_deref())
            .create(&params, &to_dynamic(object, &what)?)
            .await
            .map_err(|source| ObjectError::Api { what, source })?;
        from_dynamic(created, &name)
    }

    /// Create `object`, or replace the stored one whatever its resourceVersion; then write its
    /// status, if any, through `/status`. Returns what the server stored.
    pub async fn put(&self, object: &Value) -> Result<Value, ObjectError> {
        let (served, name, namespace) = self.identify(object).await?;
        let api = self.api(&served, namespace.as_deref());
        let mut object = object.clone();
        if let Some(meta) = object["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
        let what = describe("creating", &object, &name);
        let stored = match api
            .create(&PostParams::default(), &to_dynamic(&object, &what)?)
            .await
        {
            Ok(created) => created,
            Err(kube::Error::Api(status)) if status.code == 409 => {
                self.replace(&api, &object, &name).await?
            }
            Err(source) => return Err(ObjectError::Api { what, source }),
        };
        self.write_status(&served, &api, &object, stored, &name)
            .await
    }

    async fn replace(
        &self,
        api: &Api<DynamicObject>,
        object: &Value,
        name: &str,
    ) -> Result<DynamicObject, ObjectError> {
        let what = describe("replacing", object, name);
        // Another writer may slip in between the read and the write: retry on 409.
        for _ in 0..5 {
            let current = api.get(name).await.map_err(|source| ObjectError::Api {
                what: what.clone(),
                source,
            })?;
            let mut next = to_dynamic(object, &what)?;
            next.metadata.resource_version = current.metadata.resource_version;
            match api.replace(name, &PostParams::default(), &next).await {
                Ok(replaced) => return Ok(replaced),
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(source) => return Err(ObjectError::Api { what, source }),
            }
        }
        Err(ObjectError::Malformed(
            "a stable resourceVersion",
            format!("{what}: still conflicting after 5 attempts"),
        ))
    }

    async fn write_status(
        &self,
        served: &Served,
        api: &Api<DynamicObject>,
        object: &Value,
        stored: DynamicObject,
        name: &str,
    ) -> Result<Value, ObjectError> {
        let status = object.get("status").filter(|s| !s.is_null());
        let (true, Some(status)) = (served.has_status, status) else {
            return from_dynamic(stored, name);
        };
        let what = describe("writing the status of", object, name);
        let mut body = stored;
        body.data["status"] = status.clone();
        let written = api
            .replace_status(name, &PostParams::default(), &body)
            .await
            .map_err(|source| ObjectError::Api { what, source })?;
        from_dynamic(written, name)
    }

    /// Replace the status of the stored object through `/status` (as Sveltos writes it),
    /// leaving everything else as stored; re-read and retried when another writer slips in.
    pub async fn put_status(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
        status: &Value,
    ) -> Result<Value, ObjectError> {
        let served = self.served(kind.api_version, kind.kind).await?;
        let api = self.api(&served, namespace);
        let what = format!("writing the status of {} {name}", kind.kind);
        for _ in 0..5 {
            let mut current = api.get(name).await.map_err(|source| ObjectError::Api {
                what: what.clone(),
                source,
            })?;
            current.data["status"] = status.clone();
            match api
                .replace_status(name, &PostParams::default(), &current)
                .await
            {
                Ok(written) => return from_dynamic(written, name),
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(source) => return Err(ObjectError::Api { what, source }),
            }
        }
        Err(ObjectError::Malformed(
            "a stable resourceVersion",
            format!("{what}: still conflicting after 5 attempts"),
        ))
    }

    pub async fn get(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Value>, ObjectError> {
        let served = self.served(kind.api_version, kind.kind).await?;
        let found = self
            .api(&served, namespace)
            .get_opt(name)
            .await
            .map_err(|source| ObjectError::Api {
                what: format!("reading {} {name}", kind.kind),
                source,
            })?;
        found.map(|o| from_dynamic(o, name)).transpose()
    }

    pub async fn list(
        &self,
        kind: Kind,
        namespace: Option<&str>,
    ) -> Result<Vec<Value>, ObjectError> {
        let served = self.served(kind.api_version, kind.kind).await?;
        let list = self
            .api(&served, namespace)
            .list(&ListParams::default())
            .await
            .map_err(|source| ObjectError::Api {
                what: format!("listing {}", kind.kind),
                source,
            })?;
        list.items
            .into_iter()
            .map(|o| from_dynamic(o, kind.kind))
            .collect()
    }

    /// Delete; `Ok(false)` when there was nothing to delete.
    pub async fn delete(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<bool, ObjectError> {
        let served = self.served(kind.api_version, kind.kind).await?;
        match self
            .api(&served, namespace)
            .delete(name, &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
            Err(source) => Err(ObjectError::Api {
                what: format!("deleting {} {name}", kind.kind),
                source,
            }),
        }
    }

    async fn identify(
        &self,
        object: &Value,
    ) -> Result<(Served, String, Option<String>), ObjectError> {
        let field = |path: &'static str, v: &Value| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| ObjectError::Malformed(path, compact(object)))
        };
        let api_version = field("apiVersion", &object["apiVersion"])?;
        let kind = field("kind", &object["kind"])?;
        let name = field("metadata.name", &object["metadata"]["name"])?;
        let served = self.served(&api_version, &kind).await?;
        let namespace = object["metadata"]["namespace"].as_str().map(str::to_string);
        if served.namespaced && namespace.is_none() {
            return Err(ObjectError::Malformed(
                "metadata.namespace",
                compact(object),
            ));
        }
        Ok((served, name, namespace))
    }
}

fn describe(action: &str, object: &Value, name: &str) -> String {
    let kind = object["kind"].as_str().unwrap_or("object");
    match object["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{action} {kind} {ns}/{name}"),
        None => format!("{action} {kind} {name}"),
    }
}

fn compact(object: &Value) -> String {
    let text = object.to_string();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn to_dynamic(object: &Value, what: &str) -> Result<DynamicObject, ObjectError> {
    serde_json::from_value(object.clone()).map_err(|source| ObjectError::Decode {
        what: what.to_string(),
        source,
    })
}

fn from_dynamic(object: DynamicObject, name: &str) -> Result<Value, ObjectError> {
    serde_json::to_value(object).map_err(|source| ObjectError::Decode {
        what: format!("reading {name}"),
        source,
    })
}
