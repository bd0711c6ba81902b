//! Non-resource paths: `/version`, `/healthz` & co, discovery (`/api`, `/apis`, group and
//! group-version documents, aggregated or legacy as asked) and `/openapi/v3`. Authorized as
//! non-resource requests (`User "x" cannot get path "/version"`), GET only.

use std::sync::Arc;

use axum::http::Method;

use super::requestinfo::Query;
use super::responsewriters::method_not_allowed;
use super::responsewriters::{aggregated_reply, json_reply, Reply};
use super::{read, AppState};
use crate::apiserver::auth::{self, Attributes, Decision, UserInfo};
use crate::apiserver::discovery;
use crate::apiserver::openapi;
use crate::apiserver::status::ApiError;

pub(super) fn serve(
    app: &Arc<AppState>,
    method: &Method,
    path: &str,
    query: &Query,
    accept: &str,
    user: UserInfo,
) -> Result<Reply, ApiError> {
    let a = Attributes {
        user,
        verb: method.as_str().to_lowercase(),
        api_group: String::new(),
        api_version: String::new(),
        resource: String::new(),
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
        resource_request: false,
        path: path.to_string(),
    };
    if let Decision::Deny(reason) = app.decide(&a) {
        return Err(auth::forbidden(&a, reason.as_deref()));
    }
    if method != Method::GET {
        return Err(method_not_allowed());
    }
    let defs = app.store.registry();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["version"] => Ok(json_reply(
            200,
            &discovery::version(&app.git_version),
            vec![],
        )),
        ["healthz"] | ["readyz"] | ["livez"] => Ok(Reply::Text("ok")),
        ["api"] => {
            if discovery::wants_aggregated(accept) {
                Ok(aggregated_reply(&discovery::aggregated(defs, true)))
            } else {
                let addr = read(&app.server_address).clone();
                Ok(json_reply(200, &discovery::api_versions(&addr), vec![]))
            }
        }
        ["apis"] => {
            if discovery::wants_aggregated(accept) {
                Ok(aggregated_reply(&discovery::aggregated(defs, false)))
            } else {
                Ok(json_reply(200, &discovery::api_group_list(defs), vec![]))
            }
        }
        ["api", "v1"] => discovery::api_resource_list(defs, "", "v1")
            .map(|v| json_reply(200, &v, vec![]))
            .ok_or_else(ApiError::page_not_found),
        ["apis", group] => discovery::api_group_doc(defs, group)
            .map(|v| json_reply(200, &v, vec![]))
            .ok_or_else(ApiError::page_not_found),
        ["apis", group, version] => discovery::api_resource_list(defs, group, version)
            .map(|v| json_reply(200, &v, vec![]))
            .ok_or_else(ApiError::page_not_found),
        ["openapi", rest @ ..] => openapi::serve(defs, rest, query)
            .map(|v| json_reply(200, &v, vec![]))
            .ok_or_else(ApiError::page_not_found),
        _ => Err(ApiError::page_not_found()),
    }
}
