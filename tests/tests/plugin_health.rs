//! `kubectl promotion health NAME --stage S` against a stand-in fleet: one stand-in API server is
//! the management cluster (the promotion, SveltosClusters and their kubeconfig Secrets), a second
//! one is a managed cluster serving the objects the checks select. Each cluster is reached
//! through its Secret as Sveltos reaches it; a forbidden Secret and an unreachable cluster are one
//! line each and the other clusters still run.

mod plugin_common;

use base64::Engine;
use plugin_common::*;
use promotion_e2e::apiserver::{DenyRule, StandIn, StandInHandle, StandInOptions};
use serde_json::{json, Value};

const SCRIPT: &str = "function evaluate()\n  if obj.data and obj.data.ready == \"true\" then\n    return {healthy = true}\n  end\n  return {healthy = false, message = \"not ready\"}\nend\n";

fn promotion() -> Value {
    json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": "web-rollout"},
        "spec": {
            "profileSpec": {
                "policyRefs": [{"kind": "ConfigMap", "name": "web", "namespace": "default"}]
            },
            "stages": [
                {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                 "trigger": {"auto": {"delay": "1m", "postDelayHealthChecks": [
                    {"name": "web-config-ready", "featureID": "Resources", "version": "v1",
                     "kind": "ConfigMap", "namespace": "apps",
                     "labelFilters": [{"key": "app", "operation": "Equal", "value": "web"}],
                     "script": SCRIPT,
                     "evaluateCEL": [{"name": "has-data", "rule": "has(resource.data)"}]},
                    {"name": "widgets", "featureID": "Resources", "group": "example.com",
                     "version": "v1", "kind": "Widget"}
                 ]}}},
                {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}
            ]
        }
    })
}

fn config_map(name: &str, labels: Value, ready: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "apps", "labels": labels},
           "data": {"ready": ready}})
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

fn sveltos_cluster(name: &str, env: &str) -> Value {
    json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
           "metadata": {"name": name, "namespace": "dev", "labels": {"env": env}},
           "spec": {}})
}

fn kubeconfig_secret(name: &str, kubeconfig: &[u8]) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD.encode(kubeconfig);
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": format!("{name}-sveltos-kubeconfig"), "namespace": "dev"},
           "data": {"kubeconfig": b64}})
}

/// The managed cluster: one ready and one not-ready ConfigMap the check selects, and objects it
/// must not select (other labels, other namespace).
fn managed(ready: &str) -> StandInHandle {
    StandIn::start(StandInOptions::default().with_objects([
        namespace("apps"),
        namespace("other"),
        config_map("web", json!({"app": "web"}), ready),
        config_map("api", json!({"app": "api"}), "false"),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "web", "namespace": "other", "labels": {"app": "web"}},
               "data": {"ready": "false"}}),
    ]))
    .unwrap_or_else(|e| panic!("managed stand-in: {e}"))
}

fn fleet(managed: &StandInHandle) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let kc = std::fs::read(managed.write_kubeconfig(dir.path()).unwrap()).unwrap();
    let unreachable = String::from_utf8(kc.clone())
        .unwrap()
        .replace(managed.url(), "https://127.0.0.1:1");
    let env = Env::start([
        namespace("dev"),
        promotion(),
        sveltos_cluster("dev01", "dev"),
        sveltos_cluster("dev02", "dev"),
        sveltos_cluster("dev03", "dev"),
        sveltos_cluster("prod01", "prod"),
        kubeconfig_secret("dev01", &kc),
        kubeconfig_secret("dev02", &kc),
        kubeconfig_secret("dev03", unreachable.as_bytes()),
    ]);
    env.server.deny(DenyRule {
        verb: Some("get".into()),
        resource: Some("secrets".into()),
        name: Some("dev02-sveltos-kubeconfig".into()),
        ..DenyRule::default()
    });
    env
}

#[test]
fn every_cluster_of_the_stage_is_checked_and_failures_are_one_line() {
    let cluster = managed("true");
    let env = fleet(&cluster);
    let out = env.run(&["health", "web-rollout", "--stage", "dev"]);
    assert_eq!(
        out.code, 2,
        "a cluster could not be checked: {}{}",
        out.stdout, out.stderr
    );
    let text = &out.stdout;
    assert!(
        text.contains("Cluster dev/dev01 (SveltosCluster)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "healthy       ConfigMap apps/web: Lua: healthy; CEL: rule \"has-data\" returned true"
        ),
        "{text}"
    );
    assert!(
        !text.contains("apps/api") && !text.contains("other/web"),
        "{text}"
    );
    assert!(
        text.contains("the cluster does not serve example.com/v1 Widget: Sveltos skips the check, so it passes"),
        "{text}"
    );
    let line = |cluster: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("Cluster dev/{cluster}")))
            .unwrap_or_else(|| panic!("no line for {cluster}: {text}"))
            .to_string()
    };
    let forbidden = line("dev02");
    assert!(
        forbidden.contains("cannot read its kubeconfig Secret dev/dev02-sveltos-kubeconfig"),
        "{forbidden}"
    );
    assert!(forbidden.contains("forbidden (403)"), "{forbidden}");
    let unreachable = line("dev03");
    assert!(unreachable.contains("unreachable"), "{unreachable}");
    assert!(
        !text.contains("prod01"),
        "prod01 is not in stage dev: {text}"
    );
    // What was read on the management cluster: the Secrets, nothing written.
    assert!(env.requests("PATCH", "").is_empty() && env.requests("PUT", "").is_empty());
}

#[test]
fn one_cluster_unhealthy_with_the_error_sveltos_records() {
    let cluster = managed("false");
    let env = fleet(&cluster);
    let out = env.run(&[
        "health",
        "web-rollout",
        "--stage",
        "dev",
        "--managed-cluster",
        "dev/dev01",
    ]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains(
        "Sveltos records: health check 'web-config-ready' for feature Resources failed: resource \
         ConfigMap apps/web is not healthy \"resource apps/web is not healthy: not ready\""
    ), "{}", out.stdout);
    assert!(!out.stdout.contains("dev02"), "{}", out.stdout);

    let out = env.run(&[
        "health",
        "web-rollout",
        "--stage",
        "dev",
        "--managed-cluster",
        "dev/dev01",
        "--check",
        "web-config-ready",
        "-o",
        "json",
    ]);
    let rows: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["cluster"], "dev/dev01 (SveltosCluster)");
    assert_eq!(rows[0]["stage"], "dev");
    assert_eq!(rows[0]["object"]["name"], "web");
    assert_eq!(rows[0]["healthy"], false);
    assert_eq!(rows[0]["rules"][0]["result"], true);
}

#[test]
fn a_stage_without_clusters_and_a_missing_promotion() {
    let cluster = managed("true");
    let env = fleet(&cluster);
    let out = env.run(&["health", "web-rollout", "--stage", "prod"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let out = env.run(&["health", "nope", "--stage", "dev"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("\"nope\" not found"), "{}", out.stderr);
}

#[test]
fn the_stage_profile_names_the_clusters_once_sveltos_created_it() {
    let cluster = managed("true");
    let env = fleet(&cluster);
    env.put(json!({
        "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
        "metadata": {"name": "web-rollout-dev",
                     "labels": {"config.projectsveltos.io/promotionname": "web-rollout"}},
        "spec": {"clusterSelector": {"matchLabels": {"env": "dev"}}},
        "status": {"matchingClusters": [
            {"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
             "namespace": "dev", "name": "dev01"}]}
    }));
    let out = env.run(&["health", "web-rollout", "--stage", "dev"]);
    assert_eq!(
        out.code, 0,
        "only dev01 is in the profile's status: {}{}",
        out.stdout, out.stderr
    );
    assert!(out.stdout.contains("Cluster dev/dev01"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("dev02") && !out.stdout.contains("dev03"),
        "{}",
        out.stdout
    );
}

/// A managed cluster's kubeconfig `proxy-url` is honoured as kubectl honours it (issue 25,
/// item 12), and at `-v 6` the requests to the managed cluster are logged like those to the
/// management cluster (issue 25, polish).
#[test]
fn managed_clusters_are_reached_through_their_proxy_and_logged_at_v6() {
    let cluster = managed("true");
    let proxy = promotion_e2e::proxy::ForwardProxy::start().expect("proxy");
    let dir = tempfile::tempdir().unwrap();
    let kc = std::fs::read_to_string(cluster.write_kubeconfig(dir.path()).unwrap()).unwrap();
    let server_line = format!("    server: {}\n", cluster.url());
    assert!(kc.contains(&server_line), "{kc}");
    let with_proxy = kc.replace(
        &server_line,
        &format!("{server_line}    proxy-url: {}\n", proxy.http_url()),
    );
    let env = Env::start([
        namespace("dev"),
        promotion(),
        sveltos_cluster("dev01", "dev"),
        kubeconfig_secret("dev01", with_proxy.as_bytes()),
    ]);
    let out = env.run(&["health", "web-rollout", "--stage", "dev", "-v", "6"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let managed_port = cluster
        .url()
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_string();
    let tunnels = proxy.tunnels();
    assert!(
        !tunnels.is_empty()
            && tunnels
                .iter()
                .all(|t| t.target == format!("127.0.0.1:{managed_port}")),
        "{tunnels:?}"
    );
    // The management cluster's requests and the managed cluster's, in kubectl's words.
    let logged = |url: &str| {
        out.stderr
            .lines()
            .any(|l| l.contains(&format!("] GET {url}")) && l.contains(" 200 OK in "))
    };
    assert!(
        logged(&format!(
            "{}/apis/config.projectsveltos.io/v1beta1/clusterpromotions/web-rollout",
            env.server.url()
        )),
        "{}",
        out.stderr
    );
    assert!(
        logged(&format!(
            "{}/api/v1/configmaps?fieldSelector=metadata.namespace%3Dapps&labelSelector=app%3Dweb",
            cluster.url()
        )),
        "{}",
        out.stderr
    );
}

/// Issue 25, item 2: a live miss is explained by what the managed cluster has (read without
/// Sveltos' selectors), never by a guess about the kind's scope.
#[test]
fn a_live_miss_is_explained_by_what_the_cluster_has() {
    let cluster = managed("true");
    let dir = tempfile::tempdir().unwrap();
    let kc = std::fs::read(cluster.write_kubeconfig(dir.path()).unwrap()).unwrap();
    let mut p = promotion();
    p["spec"]["stages"][0]["trigger"]["auto"]["postDelayHealthChecks"][0]["namespace"] =
        json!("nothere");
    let env = Env::start([
        namespace("dev"),
        p,
        sveltos_cluster("dev01", "dev"),
        kubeconfig_secret("dev01", &kc),
    ]);
    let out = env.run(&[
        "health",
        "web-rollout",
        "--stage",
        "dev",
        "--check",
        "web-config-ready",
    ]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains(
            "validateHealth: web-config-ready did not fetch any resource (3 ConfigMap objects \
             exist in the cluster, in namespaces apps, other, none in namespace nothere)"
        ),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("cluster-scoped"), "{}", out.stdout);
}

/// `-v 7` prints no empty `Request Headers:` section (issue 25, polish): every section title is
/// followed by at least one header line.
#[test]
fn v7_prints_no_empty_header_section() {
    let cluster = managed("true");
    let env = fleet(&cluster);
    let out = env.run(&[
        "health",
        "web-rollout",
        "--stage",
        "dev",
        "--managed-cluster",
        "dev/dev01",
        "-v",
        "7",
    ]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(
        lines.iter().any(|l| l.ends_with("] Response Headers:")),
        "{}",
        out.stderr
    );
    for (i, l) in lines.iter().enumerate() {
        if l.ends_with(" Headers:") {
            let next = lines.get(i + 1).copied().unwrap_or_default();
            assert!(
                next.split("] ")
                    .nth(1)
                    .is_some_and(|t| t.starts_with("    ")),
                "empty section at line {i}: {}",
                out.stderr
            );
        }
    }
}
