//! `describe`, `list`, `diff --stage` and `wait` on the states of `examples/STATES.md`: the
//! promotions, their statuses and what Sveltos generates around them (ClusterProfiles,
//! ClusterSummaries, SveltosClusters, Events; `promotion_e2e::fixtures`) are written through the
//! API as Sveltos would write them, then each stage's state and the pipeline phase are read from
//! the computed models (`-o json`, plugin/docs/output.md) and `wait`'s exit codes. Only what
//! STATES.md states is expected; the human-readable wording is not.

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::User;
use promotion_e2e::fixtures::{self, Example, WorldBuilder};
use serde_json::{json, Value};

use super::support::{kubectl, Expect};

/// The examples STATES.md describes, with the base name each gets here (two files define
/// `kyverno-rollout-auto`).
const EXAMPLES: [(&str, &str); 4] = [
    ("kyverno-rollout-auto.yaml", "kyverno-rollout-auto"),
    ("kyverno-manual-gate.yaml", "kyverno-rollout-man"),
    ("kyverno-failed-dev.yaml", "kyverno-failed-dev"),
    ("payment-four-stages.yaml", "core-payment-processor-ci"),
];

/// One cluster per `env` the examples select, in the scenario's namespace.
const ENVS: [&str; 6] = ["dev", "staging", "prod", "development", "uat", "production"];

struct Names {
    auto: String,
    gate: String,
    failed: String,
    payment: String,
}

/// Write the world of the four examples; returns their names on this backend.
fn write_world(cluster: &Cluster) -> Names {
    let namespace = cluster.namespace();
    let clusters = ENVS
        .iter()
        .map(|env| fixtures::Cluster::new(&namespace, &format!("{env}01"), &[("env", env)]))
        .collect();
    let mut builder = WorldBuilder::new().with_clusters(clusters);
    let mut names = Vec::new();
    for (file, base) in EXAMPLES {
        let mut promotion = fixtures::load_example(file)
            .unwrap_or_else(|e| panic!("{e}"))
            .promotion;
        let name = cluster.name(base);
        promotion["metadata"]["name"] = json!(name);
        builder
            .add(Example {
                file: file.to_string(),
                promotion,
            })
            .unwrap_or_else(|e| panic!("{e}"));
        names.push(name);
    }
    cluster
        .seed(builder.build())
        .or_fail(cluster, "storing the examples");
    let [auto, gate, failed, payment] = <[String; 4]>::try_from(names).expect("four examples");
    Names {
        auto,
        gate,
        failed,
        payment,
    }
}

fn json_of(cluster: &Cluster, args: &[&str]) -> Value {
    let out = kubectl(cluster, User::Viewer, args);
    assert_eq!(out.code, 0, "[{}] {args:?}: {out}", cluster.kind().name());
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "[{}] {args:?} is not JSON ({e}): {out}",
            cluster.kind().name()
        )
    })
}

/// `(name, state)` of every stage of a description.
fn states(description: &Value) -> Vec<(String, String)> {
    description["stages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().to_string(),
                s["state"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

pub fn describe_list_diff_and_wait_follow_the_documented_states(cluster: &Cluster) {
    let backend = cluster.kind().name();
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    let names = write_world(cluster);
    let describe = |name: &str| json_of(cluster, &["promotion", "describe", name, "-o", "json"]);

    // kyverno-rollout-auto: dev and staging promoted, production provisioned and soaking.
    let d = describe(&names.auto);
    assert_eq!(
        states(&d),
        pairs(&[
            ("dev", "promoted"),
            ("staging", "promoted"),
            ("production", "soaking")
        ]),
        "[{backend}] {d}"
    );
    assert_eq!(
        d["stages"][2]["until"], "2026-02-16T06:36:24Z",
        "[{backend}] {d}"
    );
    assert_eq!(d["phase"], "progressing", "[{backend}] {d}");
    assert_eq!(d["online"], true, "[{backend}] {d}");

    // kyverno-manual-gate: staging awaits approval, which unblocks staging → production.
    let d = describe(&names.gate);
    assert_eq!(
        states(&d),
        pairs(&[
            ("dev", "promoted"),
            ("staging", "awaitingApproval"),
            ("production", "notStarted")
        ]),
        "[{backend}] {d}"
    );
    assert_eq!(
        (&d["phase"], &d["awaitingApproval"]),
        (&json!("awaitingApproval"), &json!("staging")),
        "[{backend}] {d}"
    );
    assert_eq!(
        (
            &d["stages"][1]["approveUnblocks"],
            &d["stages"][1]["approval"]
        ),
        (&json!("staging → production"), &json!("notApproved")),
        "[{backend}] {d}"
    );

    // kyverno-failed-dev: failed once the ClusterSummaries are read, with the feature's message
    // (STATES.md gives no phase: a feature `Failed` is one Sveltos retries).
    let d = describe(&names.failed);
    assert_eq!(
        states(&d),
        pairs(&[
            ("dev", "failed"),
            ("staging", "notStarted"),
            ("production", "notStarted")
        ]),
        "[{backend}] {d}"
    );
    let message = d["stages"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("cannot unmarshal bool into Go struct field DeploymentSpec.spec.replicas"),
        "[{backend}] the failure names the feature's error: {d}"
    );
    // … and provisioning from the promotion alone (`describe -f`, nothing read).
    let manifest = cluster
        .get(
            promotion_e2e::envtest::objects::CLUSTER_PROMOTION,
            None,
            &names.failed,
        )
        .or_fail(cluster, "reading the failed promotion")
        .unwrap_or_default();
    let path = cluster
        .write_manifest("failed.yaml", &manifest)
        .or_fail(cluster, "writing the manifest");
    let d = json_of(
        cluster,
        &[
            "promotion",
            "describe",
            "-f",
            &path.to_string_lossy(),
            "-o",
            "json",
        ],
    );
    assert_eq!(
        (&d["online"], &d["stages"][0]["state"]),
        (&json!(false), &json!("provisioning")),
        "[{backend}] {d}"
    );

    // payment-four-stages: no status, so nothing started, and a note says why.
    let d = describe(&names.payment);
    assert_eq!(
        states(&d),
        pairs(&[
            ("development", "notStarted"),
            ("uat", "notStarted"),
            ("staging", "notStarted"),
            ("production", "notStarted")
        ]),
        "[{backend}] {d}"
    );
    assert_eq!(d["phase"], "notStarted", "[{backend}] {d}");
    assert!(d["note"].is_string(), "[{backend}] {d}");

    // list -o json: the same phases, one item per promotion.
    let list = json_of(cluster, &["promotion", "list", "-o", "json"]);
    let item = |name: &str| {
        list["items"]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("[{backend}] {name} not listed: {list}"))
    };
    let summary = |name: &str| {
        let i = item(name);
        (
            i["phase"].as_str().unwrap_or_default().to_string(),
            i["reachedStages"].as_u64(),
            i["stages"].as_u64(),
        )
    };
    assert_eq!(
        summary(&names.auto),
        ("progressing".into(), Some(3), Some(3)),
        "[{backend}] {list}"
    );
    assert_eq!(
        summary(&names.gate),
        ("awaitingApproval".into(), Some(2), Some(3)),
        "[{backend}] {list}"
    );
    assert_eq!(
        (
            &item(&names.gate)["awaitingApproval"],
            &item(&names.gate)["approveUnblocks"]
        ),
        (&json!("staging"), &json!("staging → production")),
        "[{backend}] {list}"
    );
    let failed = item(&names.failed);
    assert_eq!(
        (failed["reachedStages"].as_u64(), failed["stages"].as_u64()),
        (Some(1), Some(3)),
        "[{backend}] {list}"
    );
    assert_eq!(
        summary(&names.payment),
        ("notStarted".into(), Some(0), Some(4)),
        "[{backend}] {list}"
    );

    // wait: 0 reached, 2 failed first (a failure Sveltos retries only with --fail-fast), 3 timed
    // out.
    for (name, condition, extra, code) in [
        (&names.gate, "approval", "--timeout=0", 0),
        (&names.gate, "stage=staging", "--timeout=0", 0),
        (&names.gate, "complete", "--timeout=1s", 3),
        (&names.auto, "stage=production", "--timeout=0", 0),
        (&names.auto, "complete", "--timeout=1s", 3),
        (&names.failed, "complete", "--fail-fast", 2),
        (&names.failed, "stage=staging", "--fail-fast", 2),
        (&names.payment, "stage=uat", "--timeout=1s", 3),
    ] {
        let condition = format!("--for={condition}");
        let out = kubectl(
            cluster,
            User::Viewer,
            &["promotion", "wait", name, &condition, extra],
        );
        assert_eq!(
            out.code, code,
            "[{backend}] wait {name} {condition} {extra}: {out}"
        );
    }

    // diff --stage: dev and staging run the same spec; production has none yet.
    let out = kubectl(
        cluster,
        User::Viewer,
        &["promotion", "diff", &names.gate, "--stage", "dev"],
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, ""),
        "[{backend}] nothing changes when dev is promoted: {out}"
    );
    let out = kubectl(
        cluster,
        User::Viewer,
        &["promotion", "diff", &names.gate, "--stage", "staging"],
    );
    assert_eq!(out.code, 1, "[{backend}] production gets everything: {out}");
    assert!(
        out.stdout.contains("kyverno/kyverno") && out.stdout.contains("3.6.2"),
        "[{backend}] the chart production receives: {out}"
    );
}
