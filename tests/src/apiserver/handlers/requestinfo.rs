//! `RequestInfoFactory` (`endpoints/request/requestinfo.go`): which resource, object,
//! subresource and verb a URL and method address, and the authorizer attributes that follow.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::Method;

use super::responsewriters::method_not_allowed;
use crate::apiserver::auth::{Attributes, UserInfo};
use crate::apiserver::resources::ResourceDef;
use crate::apiserver::status::ApiError;
use crate::apiserver::store::Store;

/// A request's query parameters (the last value of a repeated key).
pub(super) type Query = BTreeMap<String, String>;

pub(super) fn parse_query(q: Option<&str>) -> Query {
    form_urlencoded::parse(q.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

pub(super) fn truthy(q: &Query, key: &str) -> bool {
    matches!(q.get(key).map(String::as_str), Some("true" | "1"))
}

/// `/api/v1/<rest>` or `/apis/<group>/<version>/<rest>` with a non-empty rest.
pub(super) struct ResourcePath<'a> {
    group: &'a str,
    version: &'a str,
    rest: Vec<&'a str>,
}

/// The resource part of `path`, or `None` for a non-resource path (discovery, `/version`, …).
pub(super) fn resource_path(path: &str) -> Option<ResourcePath<'_>> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["api", "v1", rest @ ..] if !rest.is_empty() => Some(ResourcePath {
            group: "",
            version: "v1",
            rest: rest.to_vec(),
        }),
        ["apis", g, v, rest @ ..] if !rest.is_empty() => Some(ResourcePath {
            group: g,
            version: v,
            rest: rest.to_vec(),
        }),
        _ => None,
    }
}

/// The verbs of `RequestInfo.Verb`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    /// GET is get, list or watch; DELETE is delete or deletecollection; others are 405.
    pub(super) fn of(method: &Method, query: &Query, named: bool) -> Result<Verb, ApiError> {
        Ok(match *method {
            Method::GET | Method::HEAD => {
                if truthy(query, "watch") {
                    Verb::Watch
                } else if named {
                    Verb::Get
                } else {
                    Verb::List
                }
            }
            Method::POST => Verb::Create,
            Method::PUT => Verb::Update,
            Method::PATCH => Verb::Patch,
            Method::DELETE if named => Verb::Delete,
            Method::DELETE => Verb::DeleteCollection,
            _ => return Err(method_not_allowed()),
        })
    }

    pub(super) fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

/// What a resource request addresses.
pub(super) struct RequestInfo {
    pub def: Arc<ResourceDef>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: String,
}

impl RequestInfo {
    /// `[namespaces/<ns>/]<resource>[/<name>[/<subresource>]]`; anything the registry does not
    /// serve is Go's plain `404 page not found`.
    pub(super) fn resolve(store: &Store, path: &ResourcePath<'_>) -> Result<Self, ApiError> {
        let mut parts: Vec<&str> = path.rest.clone();
        let mut namespace = None;
        if parts.first() == Some(&"namespaces") && parts.len() > 1 {
            let sub_of_namespace = parts.len() > 2 && matches!(parts[2], "status" | "finalize");
            if parts.len() > 2 && !sub_of_namespace {
                namespace = Some(parts[1].to_string());
                parts.drain(..2);
            }
        }
        let def = store
            .registry()
            .iter()
            .find(|d| {
                d.group == path.group
                    && d.version == path.version
                    && Some(&d.plural) == parts.first()
            })
            .cloned()
            .ok_or_else(ApiError::page_not_found)?;
        let name = parts.get(1).map(|s| s.to_string());
        let subresource = parts.get(2).map(|s| s.to_string()).unwrap_or_default();
        if parts.len() > 3 {
            return Err(ApiError::page_not_found());
        }
        if !(subresource.is_empty() || subresource == "status" && def.status_subresource) {
            return Err(ApiError::page_not_found());
        }
        if !def.namespaced && namespace.is_some() {
            return Err(ApiError::page_not_found());
        }
        if def.namespaced && namespace.is_none() && name.is_some() {
            return Err(ApiError::page_not_found());
        }
        Ok(RequestInfo {
            def,
            namespace,
            name,
            subresource,
        })
    }

    /// What the authorizer is asked about this request (`GetAuthorizerAttributes`).
    pub(super) fn attributes(&self, user: UserInfo, verb: Verb, path: &str) -> Attributes {
        Attributes {
            user,
            verb: verb.as_str().to_string(),
            api_group: self.def.group.to_string(),
            api_version: self.def.version.to_string(),
            resource: self.def.plural.to_string(),
            subresource: self.subresource.clone(),
            namespace: self.namespace.clone().unwrap_or_default(),
            name: self.name.clone().unwrap_or_default(),
            resource_request: true,
            path: path.to_string(),
        }
    }
}
