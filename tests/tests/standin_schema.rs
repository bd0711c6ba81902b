//! Property: lint's schema pass and the stand-in API server (kube-apiserver's behaviour, checked
//! against the real one by the `lint_agreement` scenario) agree on every ClusterPromotion:
//! every object lint accepts, the stand-in accepts (`create`, `dryRun=All`,
//! `fieldValidation=Strict` as kubectl sends it), and every object the stand-in accepts, lint
//! accepts. Objects are a valid promotion with one to three random edits: values of every type
//! at existing fields (enum members and near misses, bounds, patterns, lengths), unknown keys,
//! removed keys, renamed stages, metadata.

use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::{json, Value};

use crd_schema::{check, Crd};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use promotion_e2e::apiserver::{StandIn, StandInHandle, StandInOptions};

fn base() -> Value {
    json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": "web", "labels": {"team": "web"}},
        "spec": {
            "profileSpec": {
                "syncMode": "Continuous",
                "tier": 100,
                "maxUpdate": "10%",
                "helmCharts": [{
                    "repositoryURL": "https://kyverno.github.io/kyverno/",
                    "repositoryName": "kyverno",
                    "chartName": "kyverno/kyverno",
                    "chartVersion": "3.6.2",
                    "releaseName": "kyverno-latest",
                    "releaseNamespace": "kyverno",
                    "helmChartAction": "Install"
                }],
                "policyRefs": [{"kind": "ConfigMap", "name": "policies", "namespace": "default"}],
                "kustomizationRefs": [{
                    "remoteURL": {"url": "https://example.com/k"},
                    "targetNamespace": "apps"
                }]
            },
            "stages": [
                {
                    "name": "dev",
                    "clusterSelector": {"matchLabels": {"env": "dev"}},
                    "trigger": {"auto": {
                        "delay": "5m",
                        "promotionWindow": {"from": "0 9 * * 1-5", "to": "0 17 * * 1-5"},
                        "postDelayHealthChecks": [{
                            "name": "ready", "featureID": "Helm", "kind": "Deployment",
                            "labelFilters": [{"key": "app", "operation": "Equal", "value": "x"}],
                            "script": "function evaluate() return {healthy = true} end"
                        }]
                    }}
                },
                {
                    "name": "staging",
                    "clusterSelector": {"matchLabels": {"env": "staging"}},
                    "trigger": {"manual": {"approved": false}}
                },
                {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}
            ]
        }
    })
}

/// JSON Pointers of every node of the base object (the places an edit can touch).
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                pointers(
                    child,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn values() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("Continuous")),
        Just(json!("Continous")),
        Just(json!("OneTime")),
        Just(json!("Install")),
        Just(json!("Uninstall")),
        Just(json!("ConfigMap")),
        Just(json!("Deployment")),
        Just(json!("Helm")),
        Just(json!("Resource")),
        Just(json!("Equal")),
        Just(json!("")),
        Just(json!("x")),
        Just(json!("dev")),
        Just(json!("150%")),
        Just(json!("100%")),
        Just(json!("https://example.com/x")),
        Just(json!("ftp://example.com/x")),
        Just(json!("n".repeat(64))),
        Just(json!("true")),
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(-1)),
        Just(json!(100)),
        Just(json!(1.5)),
        Just(json!(true)),
        Just(json!(false)),
        Just(Value::Null),
        Just(json!({})),
        Just(json!([])),
        Just(json!({"auto": {}})),
        Just(json!({"manual": {}, "auto": {}})),
        Just(json!([{"name": "dev"}])),
        Just(json!({"a": "b"})),
    ]
}

#[derive(Debug, Clone)]
enum Edit {
    Set(usize, Value),
    AddKey(usize, String, Value),
    Remove(usize),
}

fn edits(n_pointers: usize) -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        (0..n_pointers, values()).prop_map(|(p, v)| Edit::Set(p, v)),
        (
            0..n_pointers,
            prop_oneof![
                Just("dealy".to_string()),
                Just("extra".to_string()),
                Just("trigger".to_string()),
                Just("name".to_string()),
                Just("namespace".to_string())
            ],
            values()
        )
            .prop_map(|(p, k, v)| Edit::AddKey(p, k, v)),
        (0..n_pointers).prop_map(Edit::Remove),
    ];
    prop::collection::vec(edit, 1..=3)
}

fn apply(object: &mut Value, all: &[String], edits: &[Edit]) {
    for edit in edits {
        match edit {
            Edit::Set(p, v) => {
                if let Some(node) = object.pointer_mut(&all[*p]) {
                    *node = v.clone();
                }
            }
            Edit::AddKey(p, k, v) => {
                if let Some(Value::Object(map)) = object.pointer_mut(&all[*p]) {
                    map.insert(k.clone(), v.clone());
                }
            }
            Edit::Remove(p) => {
                let pointer = &all[*p];
                if let Some((parent, key)) = pointer.rsplit_once('/') {
                    let key = key.replace("~1", "/").replace("~0", "~");
                    match object.pointer_mut(parent) {
                        Some(Value::Object(map)) => {
                            map.remove(&key);
                        }
                        Some(Value::Array(items)) => {
                            if let Ok(i) = key.parse::<usize>() {
                                if i < items.len() {
                                    items.remove(i);
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

async fn client(server: &StandInHandle, dir: &std::path::Path) -> Client {
    let path = server.write_kubeconfig(dir).expect("kubeconfig");
    let kubeconfig = Kubeconfig::read_from(&path).expect("kubeconfig parses");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config");
    Client::try_from(config).expect("client")
}

/// The stand-in's answer to a strict dry-run create: `Ok` when accepted, the message otherwise.
async fn create(client: &Client, object: &Value) -> Result<(), String> {
    let request = hyper::Request::builder()
        .method("POST")
        .uri("/apis/config.projectsveltos.io/v1beta1/clusterpromotions?dryRun=All&fieldValidation=Strict")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(object).expect("JSON"))
        .expect("request");
    match client.request_text(request).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) => Err(format!("{} {}", status.code, status.message)),
        Err(other) => panic!("the stand-in did not answer: {other}"),
    }
}

#[test]
fn lint_and_the_stand_in_accept_the_same_objects() {
    let server = StandIn::start(StandInOptions::default()).expect("stand-in starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = runtime.block_on(client(&server, dir.path()));
    let crd = Crd::embedded();
    let base = base();
    assert!(
        runtime.block_on(create(&client, &base)).is_ok(),
        "the base is valid"
    );

    let mut all = Vec::new();
    pointers(&base, String::new(), &mut all);
    // apiVersion and kind decide whether a document is a ClusterPromotion at all: not edited.
    let all = all
        .into_iter()
        .filter(|p| !matches!(p.as_str(), "" | "/apiVersion" | "/kind"))
        .collect::<Vec<_>>();
    let mut runner = TestRunner::new(promotion_examples::proptest_config::with_cases(600));
    let (accepted, refused) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    runner
        .run(&edits(all.len()), |edits| {
            let mut object = base.clone();
            apply(&mut object, &all, &edits);
            let findings: Vec<String> = check(crd, &object)
                .into_findings()
                .into_iter()
                .filter(|f| f.is_error())
                .map(|f| f.to_string())
                .collect();
            let server = runtime.block_on(create(&client, &object));
            match (&server, findings.is_empty()) {
                (Ok(()), true) => accepted.set(accepted.get() + 1),
                (Err(_), false) => refused.set(refused.get() + 1),
                _ => {}
            }
            prop_assert_eq!(
                server.is_ok(),
                findings.is_empty(),
                "stand-in: {:?}\nlint: {:#?}\nobject: {}",
                server,
                findings,
                object
            );
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // Both verdicts were exercised.
    let (accepted, refused) = (accepted.get(), refused.get());
    assert!(
        accepted > 10 && refused > 10,
        "accepted {accepted}, refused {refused}"
    );
}
