//! Live mode: for each cluster of a stage, reach the managed cluster through its kubeconfig
//! Secret, list what each check selects exactly as addon-controller's `fetchResources` does
//! (discovery, then LIST with the label and field selectors), and evaluate.

use std::collections::HashMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::ListParams;
use serde_json::Value;

use health_runtime::{self as engine, select, Check, Inputs, KindServed, Listing};
use promotion_shared::api_error::{classify, Failure};
use promotion_shared::model::stage_profile_name;

use super::managed::{self, Access, ClusterRef};
use super::render::{self, Section};
use super::{select_checks, HealthArgs};
use crate::cluster::kube_client::{chain, Kube};
use crate::cluster::resources::{PROFILE, PROFILES, SVELTOS_CLUSTER, SVELTOS_CLUSTERS};
use crate::commands::Ctx;
use crate::error::{Error, Request, Result};

pub async fn run(
    ctx: &Ctx,
    args: &HealthArgs,
    name: &str,
    stage: &str,
    inputs: &Inputs,
) -> Result<u8> {
    let kube = ctx.kube().await?;
    let promotion = kube.get_promotion(name).await?;
    let checks = select_checks(&promotion, args)?;
    let mut clusters = stage_clusters(&kube, &promotion, name, stage).await?;
    if let Some(wanted) = &args.managed_cluster {
        let (ns, n) = wanted
            .split_once('/')
            .filter(|(a, b)| !a.is_empty() && !b.is_empty())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--managed-cluster {wanted:?}: expected NAMESPACE/NAME"
                ))
            })?;
        let found = clusters
            .iter()
            .find(|c| c.namespace == ns && c.name == n)
            .cloned();
        clusters = vec![found.unwrap_or(ClusterRef {
            namespace: ns.into(),
            name: n.into(),
            capi: false,
        })];
    }
    if clusters.is_empty() {
        crate::commands::note(
            ctx,
            &format!(
                "stage {stage} matches no cluster (no ClusterProfile {} with matching clusters, and \
                 no SveltosCluster matches the stage selector): Sveltos runs no health check there",
                stage_profile_name(name, stage)
            ),
        );
    }
    let mut sections = Vec::new();
    for c in &clusters {
        sections.push(check_cluster(&kube, c, &checks, inputs).await);
    }
    render::print(ctx, args.output, &sections)
}

/// The stage's clusters: its ClusterProfile's `status.matchingClusters` when Sveltos has
/// created it, otherwise the SveltosClusters the stage selector matches (an empty selector
/// matches none, as in Sveltos).
async fn stage_clusters(
    kube: &Kube,
    promotion: &Value,
    name: &str,
    stage: &str,
) -> Result<Vec<ClusterRef>> {
    let profile = stage_profile_name(name, stage);
    let path = PROFILE.object_path(&profile);
    match managed::get(kube, &path, Request::named("get", PROFILES, &profile)).await {
        Ok(p) => {
            let refs: Vec<ClusterRef> = p
                .pointer("/status/matchingClusters")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|r| ClusterRef {
                    namespace: r
                        .get("namespace")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                    name: r.get("name").and_then(Value::as_str).unwrap_or("").into(),
                    capi: r.get("kind").and_then(Value::as_str) == Some("Cluster"),
                })
                .collect();
            if !refs.is_empty() {
                return Ok(refs);
            }
        }
        Err(Error::Api { .. }) | Err(Error::NotFound(_)) => {}
        Err(e) => return Err(e),
    }
    let selector: Option<LabelSelector> = promotion
        .pointer("/spec/stages")
        .and_then(Value::as_array)
        .and_then(|s| {
            s.iter()
                .find(|s| s.get("name").and_then(Value::as_str) == Some(stage))
        })
        .and_then(|s| s.get("clusterSelector"))
        .and_then(|s| serde_json::from_value(s.clone()).ok());
    let Some(selector) = selector.filter(|s| {
        s.match_labels.as_ref().is_some_and(|m| !m.is_empty())
            || s.match_expressions.as_ref().is_some_and(|m| !m.is_empty())
    }) else {
        return Ok(Vec::new());
    };
    let list = managed::get(
        kube,
        SVELTOS_CLUSTER.path,
        Request::new("list", SVELTOS_CLUSTERS),
    )
    .await?;
    let mut refs: Vec<ClusterRef> = list
        .get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| {
            let labels = c
                .pointer("/metadata/labels")
                .and_then(|l| serde_json::from_value(l.clone()).ok())
                .unwrap_or_default();
            promotion_shared::selector::matches(&selector, &labels)
        })
        .map(|c| ClusterRef {
            namespace: select::namespace_of(c).into(),
            name: select::name_of(c).into(),
            capi: false,
        })
        .collect();
    refs.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Ok(refs)
}

async fn check_cluster(kube: &Kube, c: &ClusterRef, checks: &[Check], inputs: &Inputs) -> Section {
    let mut section = Section {
        cluster: Some(c.label()),
        reports: Vec::new(),
        error: None,
        note: None,
    };
    if checks.is_empty() {
        return section;
    }
    let client = match managed::access(kube, c).await {
        Ok(Access::Client(client)) => client,
        Ok(Access::PullMode) => {
            section.note = Some(
                "pull mode: the sveltos-applier agent in the cluster runs these checks; Sveltos \
                 does not reach the cluster from the management cluster, and neither does this"
                    .into(),
            );
            return section;
        }
        Err(e) => {
            section.error = Some(e);
            return section;
        }
    };
    let mut discovery: HashMap<String, Option<Value>> = HashMap::new();
    for check in checks {
        let mut candidates = Vec::new();
        let mut served = KindServed::Yes(Listing::default());
        let needs_list = check.feature_deployed && !check.job_check && !check.kind.is_empty();
        if needs_list {
            match fetch(&client, check, &mut discovery).await {
                Ok(Some(listed)) => {
                    candidates = listed.items;
                    served = KindServed::Yes(listed.listing);
                }
                Ok(None) => served = KindServed::No,
                Err(e) => {
                    section.error = Some(format!("unreachable: {e}"));
                    return section;
                }
            }
        }
        section
            .reports
            .push(engine::run_check(check, &candidates, served, inputs));
    }
    section
}

/// The answer to Sveltos' LIST, and what else was read to explain an empty one.
struct Listed {
    items: Vec<Value>,
    listing: Listing,
}

/// `fetchResources`: `None` when the cluster does not serve the kind. When the answer is empty,
/// the kind is listed once more without Sveltos' selectors, so that the explanation of the miss
/// says what the cluster has instead of guessing.
async fn fetch(
    client: &kube::Client,
    check: &Check,
    discovery: &mut HashMap<String, Option<Value>>,
) -> std::result::Result<Option<Listed>, String> {
    let api_version = check.api_version();
    let base = if check.group.is_empty() {
        format!("/api/{}", check.version)
    } else {
        format!("/apis/{api_version}")
    };
    if !discovery.contains_key(&api_version) {
        let doc = match raw_get(client, &base).await {
            Ok(v) => Some(v),
            Err(kube::Error::Api(s)) if classify(&s) == Failure::NotFound => None,
            Err(e) => return Err(describe(&e)),
        };
        discovery.insert(api_version.clone(), doc);
    }
    let resource = discovery
        .get(&api_version)
        .and_then(Option::as_ref)
        .and_then(|d| d.get("resources"))
        .and_then(Value::as_array)
        .and_then(|rs| {
            rs.iter().find(|r| {
                r.get("kind").and_then(Value::as_str) == Some(check.kind.as_str())
                    && r.get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|n| !n.contains('/'))
            })
        });
    let Some(plural) = resource
        .and_then(|r| r.get("name").and_then(Value::as_str))
        .map(str::to_string)
    else {
        return Ok(None);
    };
    let namespaced = resource.and_then(|r| r.get("namespaced").and_then(Value::as_bool));
    let mut lp = ListParams::default();
    let labels = select::label_selector(&check.label_filters);
    if !labels.is_empty() {
        lp = lp.labels(&labels);
    }
    let fields = select::field_selector(check);
    if !fields.is_empty() {
        lp = lp.fields(&fields);
    }
    let url = format!("{base}/{plural}");
    let items = list(client, &url, &lp, &api_version, &check.kind).await?;
    let selects = lp.label_selector.is_some() || lp.field_selector.is_some();
    let unselected = match (items.is_empty(), selects) {
        (false, _) => None,
        // Without selectors, the empty answer is the whole kind.
        (true, false) => Some(Vec::new()),
        (true, true) => Some(
            list(
                client,
                &url,
                &ListParams::default(),
                &api_version,
                &check.kind,
            )
            .await?,
        ),
    };
    Ok(Some(Listed {
        items,
        listing: Listing {
            namespaced,
            unselected,
        },
    }))
}

/// One LIST, its items given the apiVersion and kind the unstructured decoder fills in.
async fn list(
    client: &kube::Client,
    url: &str,
    lp: &ListParams,
    api_version: &str,
    fallback_kind: &str,
) -> std::result::Result<Vec<Value>, String> {
    let req = kube::core::Request::new(url)
        .list(lp)
        .map_err(|e| e.to_string())?;
    let list: Value = client.request(req).await.map_err(|e| describe(&e))?;
    // List items carry no apiVersion/kind; the unstructured decoder fills them from the list.
    let kind = list
        .get("kind")
        .and_then(Value::as_str)
        .and_then(|k| k.strip_suffix("List"))
        .unwrap_or(fallback_kind)
        .to_string();
    let items = match list {
        Value::Object(mut m) => match m.remove("items") {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    Ok(items
        .into_iter()
        .map(|mut item| {
            if let Some(o) = item.as_object_mut() {
                o.entry("apiVersion")
                    .or_insert_with(|| Value::String(api_version.to_string()));
                o.entry("kind")
                    .or_insert_with(|| Value::String(kind.clone()));
            }
            item
        })
        .collect())
}

async fn raw_get(client: &kube::Client, path: &str) -> std::result::Result<Value, kube::Error> {
    let req = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| kube::Error::BuildRequest(kube::core::request::Error::BuildRequest(e)))?;
    client.request::<Value>(req).await
}

/// A managed cluster's error in one line.
fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) if classify(s) == Failure::Forbidden => {
            format!("forbidden (403): {}", s.message)
        }
        kube::Error::Api(s) if classify(s) == Failure::Unauthorized => {
            "unauthorized (401): the kubeconfig's credentials were rejected".into()
        }
        kube::Error::Api(s) => format!("{} ({})", s.message, s.code),
        other => chain(other),
    }
}
