//! Discovery documents: `/version`, legacy `/api`, `/apis`, `/apis/<group>[/<version>]`, and
//! aggregated discovery (`apidiscovery.k8s.io/v2`), which kubectl ≥ 1.26 asks for first and
//! recognises only by the response Content-Type parameters.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::resources::{ResourceDef, STATUS_VERBS};

pub const AGGREGATED_V2_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Does the Accept header ask for `as=APIGroupDiscoveryList` in `v=v2`? (v2beta1 is no longer
/// served by 1.33, so only v2 is honoured.)
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|media| {
        let params: Vec<&str> = media.split(';').map(str::trim).collect();
        params.contains(&"g=apidiscovery.k8s.io")
            && params.contains(&"v=v2")
            && params.contains(&"as=APIGroupDiscoveryList")
    })
}

pub fn version(git_version: &str) -> Value {
    let trimmed = git_version.trim_start_matches('v');
    let mut parts = trimmed.split('.');
    let major = parts.next().unwrap_or("1");
    let minor = parts.next().unwrap_or("33");
    json!({
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": minor,
        "gitVersion": git_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

/// Groups (other than core) in first-seen order, each with its versions.
fn groups(defs: &[Arc<ResourceDef>]) -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for d in defs.iter().filter(|d| !d.group.is_empty()) {
        match out.iter_mut().find(|(g, _)| *g == d.group) {
            Some((_, versions)) => {
                if !versions.contains(&d.version) {
                    versions.push(d.version);
                }
            }
            None => out.push((d.group, vec![d.version])),
        }
    }
    out
}

fn api_group(group: &str, versions: &[&str]) -> Value {
    let gvs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({
        "name": group,
        "versions": gvs,
        "preferredVersion": gvs.first().cloned().unwrap_or(Value::Null)
    })
}

pub fn api_group_list(defs: &[Arc<ResourceDef>]) -> Value {
    let groups: Vec<Value> = groups(defs)
        .iter()
        .map(|(g, vs)| api_group(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn api_group_doc(defs: &[Arc<ResourceDef>], group: &str) -> Option<Value> {
    groups(defs)
        .into_iter()
        .find(|(g, _)| *g == group)
        .map(|(g, vs)| {
            let mut doc = api_group(g, &vs);
            doc["kind"] = json!("APIGroup");
            doc["apiVersion"] = json!("v1");
            doc
        })
}

fn storage_version_hash(d: &ResourceDef) -> String {
    // Opaque to clients; stable per type like the real one.
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (d.group, d.version, d.plural).hash(&mut h);
    let bytes = h.finish().to_be_bytes();
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bytes)
        .chars()
        .take(11)
        .collect()
}

/// `APIResourceList` for one group/version; `None` when nothing is served there.
pub fn api_resource_list(defs: &[Arc<ResourceDef>], group: &str, version: &str) -> Option<Value> {
    let members: Vec<&Arc<ResourceDef>> = defs
        .iter()
        .filter(|d| d.group == group && d.version == version)
        .collect();
    if members.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for d in &members {
        let mut r = json!({
            "name": d.plural,
            "singularName": d.singular,
            "namespaced": d.namespaced,
            "kind": d.kind,
            "verbs": d.verbs,
        });
        if !d.short_names.is_empty() {
            r["shortNames"] = json!(d.short_names);
        }
        r["storageVersionHash"] = json!(storage_version_hash(d));
        resources.push(r);
        if d.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", d.plural),
                "singularName": "",
                "namespaced": d.namespaced,
                "kind": d.kind,
                "verbs": STATUS_VERBS,
            }));
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources
    }))
}

fn resource_discovery(d: &ResourceDef) -> Value {
    let mut r = json!({
        "resource": d.plural,
        "responseKind": {"group": d.group, "version": d.version, "kind": d.kind},
        "scope": if d.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": d.singular,
        "verbs": d.verbs,
    });
    if !d.short_names.is_empty() {
        r["shortNames"] = json!(d.short_names);
    }
    if d.status_subresource {
        r["subresources"] = json!([{
            "subresource": "status",
            "responseKind": {"group": d.group, "version": d.version, "kind": d.kind},
            "verbs": STATUS_VERBS
        }]);
    }
    r
}

/// `APIGroupDiscoveryList` (v2) for `/api` (`core: true`) or `/apis`.
pub fn aggregated(defs: &[Arc<ResourceDef>], core: bool) -> Value {
    type Versions<'a> = Vec<(&'a str, Vec<Value>)>;
    let mut by_group: BTreeMap<usize, (&str, Versions)> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for d in defs.iter().filter(|d| d.group.is_empty() == core) {
        let idx = match order.iter().position(|g| *g == d.group) {
            Some(i) => i,
            None => {
                order.push(d.group);
                order.len() - 1
            }
        };
        let entry = by_group.entry(idx).or_insert((d.group, Vec::new()));
        match entry.1.iter_mut().find(|(v, _)| *v == d.version) {
            Some((_, resources)) => resources.push(resource_discovery(d)),
            None => entry.1.push((d.version, vec![resource_discovery(d)])),
        }
    }
    let items: Vec<Value> = by_group
        .into_values()
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .into_iter()
                .map(|(v, resources)| {
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let mut metadata = json!({"creationTimestamp": null});
            if !group.is_empty() {
                metadata["name"] = json!(group);
            }
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items
    })
}
