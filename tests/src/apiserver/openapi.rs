//! OpenAPI v3 discovery (`/openapi/v3` and one document per group/version). kubectl reads it to
//! decide whether the server validates fields itself (`fieldValidation` on PATCH of the kind) and
//! whether a kind takes strategic merge patches (not for custom resources).

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::resources::ResourceDef;

fn gv_key(d: &ResourceDef) -> String {
    if d.group.is_empty() {
        format!("api/{}", d.version)
    } else {
        format!("apis/{}/{}", d.group, d.version)
    }
}

/// `io.projectsveltos.config.v1beta1.ClusterPromotion`-style component names.
fn schema_name(d: &ResourceDef) -> String {
    if d.group.is_empty() {
        format!("io.k8s.api.core.{}.{}", d.version, d.kind)
    } else {
        let reversed: Vec<&str> = d.group.split('.').rev().collect();
        format!("{}.{}.{}", reversed.join("."), d.version, d.kind)
    }
}

fn hash_of(key: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    format!("{:016X}", h.finish())
}

fn query_param(name: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
}

fn document(defs: &[Arc<ResourceDef>], key: &str) -> Option<Value> {
    let members: Vec<&Arc<ResourceDef>> = defs.iter().filter(|d| gv_key(d) == key).collect();
    if members.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for d in members {
        let gvk = json!([{"group": d.group, "version": d.version, "kind": d.kind}]);
        let reference = json!({"$ref": format!("#/components/schemas/{}", schema_name(d))});
        let content = |types: &[&str]| {
            let mut m = Map::new();
            for t in types {
                m.insert((*t).to_string(), json!({"schema": reference}));
            }
            Value::Object(m)
        };
        let ok = json!({"200": {"description": "OK", "content": content(&["application/json", "application/yaml"])}});
        let write_params = json!([
            query_param("dryRun"),
            query_param("fieldManager"),
            query_param("fieldValidation")
        ]);
        let item = json!({
            "get": {"operationId": format!("read{}", d.kind), "responses": ok, "x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk[0]},
            "put": {"operationId": format!("replace{}", d.kind), "parameters": write_params,
                    "requestBody": {"content": content(&["application/json", "application/yaml"])},
                    "responses": ok, "x-kubernetes-action": "put", "x-kubernetes-group-version-kind": gvk[0]},
            "patch": {"operationId": format!("patch{}", d.kind), "parameters": write_params,
                      "requestBody": {"content": content(d.patch_types())},
                      "responses": ok, "x-kubernetes-action": "patch", "x-kubernetes-group-version-kind": gvk[0]},
            "delete": {"operationId": format!("delete{}", d.kind), "responses": ok, "x-kubernetes-action": "delete", "x-kubernetes-group-version-kind": gvk[0]},
            "parameters": [{"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}]
        });
        let base = if d.group.is_empty() {
            format!("/api/{}", d.version)
        } else {
            format!("/apis/{}/{}", d.group, d.version)
        };
        let collection = if d.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}", d.plural)
        } else {
            format!("{base}/{}", d.plural)
        };
        paths.insert(format!("{collection}/{{name}}"), item);
        paths.insert(
            collection,
            json!({
                "get": {"operationId": format!("list{}", d.kind), "responses": ok, "x-kubernetes-action": "list", "x-kubernetes-group-version-kind": gvk[0]},
                "post": {"operationId": format!("create{}", d.kind), "parameters": write_params,
                         "requestBody": {"content": content(&["application/json", "application/yaml"])},
                         "responses": ok, "x-kubernetes-action": "post", "x-kubernetes-group-version-kind": gvk[0]}
            }),
        );
        let mut schema = d.schema.as_ref().map(|s| s.root().clone()).unwrap_or_else(
            || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        );
        schema["x-kubernetes-group-version-kind"] = gvk;
        schemas.insert(schema_name(d), schema);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": paths,
        "components": {"schemas": schemas}
    }))
}

/// `/openapi/...` requests: `rest` is the path after `openapi`.
pub fn serve(
    defs: &[Arc<ResourceDef>],
    rest: &[&str],
    _query: &std::collections::BTreeMap<String, String>,
) -> Option<Value> {
    match rest {
        ["v3"] => {
            let mut paths = Map::new();
            for d in defs {
                let key = gv_key(d);
                if !paths.contains_key(&key) {
                    let url = format!("/openapi/v3/{key}?hash={}", hash_of(&key));
                    paths.insert(key, json!({"serverRelativeURL": url}));
                }
            }
            Some(json!({"paths": paths}))
        }
        ["v3", tail @ ..] => document(defs, &tail.join("/")),
        _ => None,
    }
}
