//! `promotion-controller reconcile --dry-run` through the real binary: a promotion walked from
//! its first reconcile to its manual gate with snapshot files (each step's decision fed back as
//! Sveltos' objects would be), the output keys and formats, the errors, and a live read from the
//! stand-in API server by NAME.

mod plugin_common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use plugin_common::Env;
use promotion_e2e::bins::{self, Output};

fn controller() -> std::path::PathBuf {
    bins::binary("promotion-controller").unwrap_or_else(|e| panic!("{e}"))
}

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(controller());
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("starting promotion-controller");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("writing stdin");
    }
    let out = child.wait_with_output().expect("promotion-controller");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn promotion() -> Value {
    json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": "shop", "uid": "u-1", "finalizers": ["config.projectsveltos.io/clusterpromotion"]},
        "spec": {
            "profileSpec": {"syncMode": "Continuous", "tier": 100,
                "stopMatchingBehavior": "WithdrawPolicies",
                "helmCharts": [{"repositoryURL": "https://charts.example", "releaseName": "shop",
                                "releaseNamespace": "shop", "chartName": "shop/shop",
                                "chartVersion": "1.2.0", "helmChartAction": "Install"}]},
            "stages": [
                {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                 "trigger": {"auto": {"delay": "5m"}}},
                {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}},
                 "trigger": {"manual": {}}},
                {"name": "dr", "clusterSelector": {"matchLabels": {"env": "dr"}}},
            ]
        }
    })
}

fn sveltos_cluster(name: &str, env: &str) -> Value {
    json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
           "metadata": {"namespace": "fleet", "name": name, "labels": {"env": env}},
           "spec": {}, "status": {"ready": true}})
}

/// The profile as the API server stores it after the apply, with Sveltos' matching clusters.
fn stored_profile(body: &Value, clusters: &[&str]) -> Value {
    let mut p = body.clone();
    p["status"] = json!({"matchingClusters": clusters.iter().map(|c| json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
        "namespace": "fleet", "name": c})).collect::<Vec<_>>()});
    p
}

/// What addon-controller writes for a profile on a cluster, deployed.
fn summary(profile: &Value, cluster: &str) -> Value {
    let name = profile["metadata"]["name"].as_str().unwrap();
    let mut spec = profile["spec"].clone();
    spec.as_object_mut().unwrap().remove("clusterSelector");
    json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterSummary",
           "metadata": {"namespace": "fleet", "name": format!("{name}-sveltos-{cluster}"),
                        "labels": {"projectsveltos.io/cluster-profile-name": name}},
           "spec": {"clusterName": cluster, "clusterNamespace": "fleet", "clusterType": "Sveltos",
                    "clusterProfileSpec": spec},
           "status": {"featureSummaries": [{"featureID": "Helm", "status": "Provisioned"}]}})
}

fn write_list(dir: &Path, name: &str, items: &[Value]) -> String {
    let path = dir.join(name);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    std::fs::write(&path, serde_json::to_string_pretty(&list).unwrap()).unwrap();
    path.display().to_string()
}

/// `reconcile --dry-run -f FILE --now NOW -o json`, decoded.
fn dry_run(file: &str, now: &str) -> Value {
    decision(&[
        "reconcile",
        "--dry-run",
        "-f",
        file,
        "--now",
        now,
        "-o",
        "json",
    ])
}

fn decision(args: &[&str]) -> Value {
    let out = run(args, None);
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

#[test]
fn a_promotion_walked_from_its_first_reconcile_to_its_gate() {
    let dir = tempfile::tempdir().unwrap();
    let mut promo = promotion();
    let fleet = [
        sveltos_cluster("dev-1", "dev"),
        sveltos_cluster("prod-1", "prod"),
    ];

    // 1. First reconcile: dev's profile is applied, the status restarts the pipeline.
    let file = write_list(
        dir.path(),
        "1.json",
        &[promo.clone(), fleet[0].clone(), fleet[1].clone()],
    );
    let d = dry_run(&file, "2026-03-02T10:00:00Z");
    for key in [
        "apply",
        "delete",
        "status",
        "consumeApprovals",
        "events",
        "wakeAt",
        "explanation",
    ] {
        assert!(d.get(key).is_some(), "missing {key}: {d}");
    }
    assert_eq!(d["apply"][0]["metadata"]["name"], "shop-dev");
    assert_eq!(d["events"][0]["message"], "Provisioning stage dev");
    assert_eq!(d["wakeAt"], Value::Null);
    promo["status"] = d["status"].clone();
    let dev_profile = stored_profile(&d["apply"][0], &["dev-1"]);

    // 2. The profile exists, Sveltos has not created the ClusterSummary: not deployed (D4).
    let file = write_list(
        dir.path(),
        "2.json",
        &[
            promo.clone(),
            dev_profile.clone(),
            fleet[0].clone(),
            fleet[1].clone(),
        ],
    );
    let d = dry_run(&file, "2026-03-02T10:01:00Z");
    assert_eq!(
        d["explanation"],
        "dev is being deployed: ClusterSummary for SveltosCluster fleet/dev-1 is not created yet."
    );
    promo["status"] = d["status"].clone();

    // 2b. Sveltos fails to deploy dev: the explanation names the failing ClusterSummary.
    let mut failing = summary(&dev_profile, "dev-1");
    failing["status"]["featureSummaries"][0]["status"] = json!("Failed");
    failing["status"]["featureSummaries"][0]["failureMessage"] = json!("chart not found");
    let file = write_list(
        dir.path(),
        "2b.json",
        &[
            promo.clone(),
            dev_profile.clone(),
            failing,
            fleet[0].clone(),
            fleet[1].clone(),
        ],
    );
    let d = dry_run(&file, "2026-03-02T10:01:30Z");
    assert_eq!(
        d["explanation"],
        "dev is failing to deploy: 1 ClusterSummary shop-dev-sveltos-dev-1 (Failed: Sveltos \
         retries); ClusterSummary shop-dev-sveltos-dev-1 is not yet provisioned."
    );
    // And a Warning Event names the cluster and Sveltos' message, so alerting on Events works.
    assert_eq!(d["events"][0]["type"], "Warning", "{d}");
    assert_eq!(d["events"][0]["reason"], "StageFailing", "{d}");
    assert_eq!(
        d["events"][0]["message"],
        "Stage dev is failing: fleet/dev-1 Helm Failed: chart not found"
    );

    // 3. Deployed: dev soaks for 5 minutes and asks to be woken at the end.
    let items = [
        promo.clone(),
        dev_profile.clone(),
        summary(&dev_profile, "dev-1"),
        fleet[0].clone(),
        fleet[1].clone(),
    ];
    let file = write_list(dir.path(), "3.json", &items);
    let d = dry_run(&file, "2026-03-02T10:02:00Z");
    assert_eq!(d["events"][0]["message"], "Stage dev provisioned");
    assert_eq!(d["wakeAt"], "2026-03-02T10:07:00Z");
    assert_eq!(
        d["explanation"],
        "dev waits: soaking until 2026-03-02T10:07:00Z; nothing else blocks"
    );
    promo["status"] = d["status"].clone();

    // 4. After the soak: prod's profile is applied.
    let items = [
        promo.clone(),
        dev_profile.clone(),
        summary(&dev_profile, "dev-1"),
        fleet[0].clone(),
        fleet[1].clone(),
    ];
    let file = write_list(dir.path(), "4.json", &items);
    let d = dry_run(&file, "2026-03-02T10:07:00Z");
    assert_eq!(d["apply"][0]["metadata"]["name"], "shop-prod");
    assert_eq!(d["explanation"], "dev is done: promoting to prod");
    promo["status"] = d["status"].clone();
    let prod_profile = stored_profile(&d["apply"][0], &["prod-1"]);

    // 5. prod deployed: its manual gate waits for an approval, and nothing else blocks.
    let items = [
        promo.clone(),
        dev_profile.clone(),
        summary(&dev_profile, "dev-1"),
        prod_profile.clone(),
        summary(&prod_profile, "prod-1"),
        fleet[0].clone(),
        fleet[1].clone(),
    ];
    let file = write_list(dir.path(), "5.json", &items);
    let d = dry_run(&file, "2026-03-02T10:08:00Z");
    assert_eq!(
        d["explanation"],
        "prod waits: awaiting manual approval; nothing else blocks"
    );
    assert_eq!(d["consumeApprovals"], json!([]));
    promo["status"] = d["status"].clone();

    // 6. Approved: the approval is consumed by this reconcile, which promotes to dr.
    promo["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    let items = [
        promo.clone(),
        dev_profile.clone(),
        summary(&dev_profile, "dev-1"),
        prod_profile.clone(),
        summary(&prod_profile, "prod-1"),
        fleet[0].clone(),
        fleet[1].clone(),
    ];
    let file = write_list(dir.path(), "6.json", &items);
    let d = dry_run(&file, "2026-03-02T10:09:00Z");
    assert_eq!(d["consumeApprovals"], json!(["prod"]));
    assert_eq!(d["apply"][0]["metadata"]["name"], "shop-dr");

    // The same decision as YAML, read from standard input as several documents.
    let docs: Vec<String> = items
        .iter()
        .map(|i| serde_json::to_string(i).unwrap())
        .collect();
    let out = run(
        &[
            "reconcile",
            "--dry-run",
            "-f",
            "-",
            "--now",
            "2026-03-02T10:09:00Z",
        ],
        Some(&docs.join("\n---\n")),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let yaml: Value =
        serde_saphyr::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    assert_eq!(yaml["consumeApprovals"], json!(["prod"]));
    assert_eq!(yaml["explanation"], "prod is done: promoting to dr");
    assert_eq!(yaml["apply"], d["apply"]);
}

#[test]
fn mistakes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_list(dir.path(), "p.json", &[promotion()]);
    let out = run(&["reconcile", "-f", &file], None);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("reconcile needs --dry-run"),
        "{}",
        out.stderr
    );
    let out = run(
        &["reconcile", "--dry-run", "-f", &file, "--now", "yesterday"],
        None,
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("--now \"yesterday\": not an RFC 3339 time"),
        "{}",
        out.stderr
    );
    let out = run(
        &[
            "reconcile",
            "--dry-run",
            "-f",
            &file,
            "--window-time-zone",
            "Mars/Olympus",
        ],
        None,
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("not an IANA time zone name"),
        "{}",
        out.stderr
    );
    let missing = dir.path().join("missing.yaml").display().to_string();
    let out = run(&["reconcile", "--dry-run", "-f", &missing], None);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.starts_with(&format!("error: {missing}: ")),
        "{}",
        out.stderr
    );
    let mut other = promotion();
    other["metadata"]["name"] = json!("other");
    let two = write_list(dir.path(), "two.json", &[promotion(), other]);
    let out = run(&["reconcile", "--dry-run", "-f", &two], None);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("2 ClusterPromotions (shop, other); choose one with --promotion"),
        "{}",
        out.stderr
    );
    let out = run(
        &[
            "reconcile",
            "--dry-run",
            "-f",
            &two,
            "--promotion",
            "other",
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("\"other-dev\""), "{}", out.stdout);
}

#[test]
fn a_promotion_read_live_by_name() {
    let mut promo = promotion();
    promo["metadata"].as_object_mut().unwrap().remove("uid");
    let env = Env::start([promo, sveltos_cluster("dev-1", "dev")]);
    let mut cmd = env.kube.command(controller());
    cmd.args([
        "reconcile",
        "--dry-run",
        "shop",
        "--now",
        "2026-03-02T10:00:00Z",
        "-o",
        "json",
    ]);
    let out = bins::run(&mut cmd).expect("promotion-controller");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let d: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(d["apply"][0]["metadata"]["name"], "shop-dev");
    assert_eq!(
        d["apply"][0]["metadata"]["ownerReferences"][0]["name"],
        "shop"
    );
    assert_eq!(
        d["explanation"],
        "first reconcile of this spec: dev is provisioned with it first; nothing else blocks"
    );
    let mut cmd = env.kube.command(controller());
    cmd.args(["reconcile", "--dry-run", "nope"]);
    let out = bins::run(&mut cmd).expect("promotion-controller");
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("reading clusterpromotion nope"),
        "{}",
        out.stderr
    );
}

/// A snapshot without the stage's ClusterProfile, read after the soak, explains what is missing:
/// not health checks the promotion does not have (upstream's status words name them anyway).
#[test]
fn a_snapshot_without_profiles_does_not_blame_health_checks_that_do_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let mut promo = promotion();
    let file = write_list(dir.path(), "1.json", std::slice::from_ref(&promo));
    promo["status"] = dry_run(&file, "2026-03-02T10:00:00Z")["status"].clone();
    promo["status"]["stages"][0]["lastSuccessfulAppliedTime"] = json!("2026-03-02T10:01:00Z");
    let file = write_list(dir.path(), "2.json", std::slice::from_ref(&promo));
    let d = dry_run(&file, "2026-03-02T11:00:00Z");
    let explanation = d["explanation"].as_str().unwrap_or_default();
    assert_eq!(
        explanation,
        "dev waits: its deployment to be confirmed again after the soak (it has no health \
         checks): ClusterProfile shop-dev does not exist yet."
    );
    assert!(!explanation.contains("health checks to pass"), "{d}");
}

/// A kubeconfig that cannot be read is said in kubectl's words, the path once, as the plugin
/// says it (kube's own error quoted the path twice, once as Rust's Debug form).
#[test]
fn an_unreadable_kubeconfig_is_named_once_in_plain_words() {
    let missing = run(&["run", "--kubeconfig", "/nonexistent/kubeconfig"], None);
    assert_eq!(missing.code, 1, "{}", missing.stderr);
    assert_eq!(
        missing.stderr,
        "error: --kubeconfig /nonexistent/kubeconfig: no such file or directory\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("kubeconfig");
    std::fs::write(&bad, "garbage: [\n").unwrap();
    let out = run(&["run", "--kubeconfig", bad.to_str().unwrap()], None);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.starts_with(&format!(
            "error: --kubeconfig {}: failed to parse kubeconfig YAML",
            bad.display()
        )),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("\"/"), "{}", out.stderr);
}

/// An aborted rollout, and one being rolled back to a revision of the history (ControllerRevision
/// documents in the snapshot), are explained: what holds, and what is set back.
#[test]
fn an_aborted_and_a_rolled_back_promotion_are_explained() {
    use promotion_shared::abort::{AbortRequest, ABORT_ANNOTATION};
    use promotion_shared::history::{Record, PROMOTION_UID_LABEL, RECORD_ANNOTATION};
    use promotion_shared::rollout::identity_of;
    let dir = tempfile::tempdir().unwrap();
    let good = promotion();
    let mut bad = promotion();
    bad["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("1.3.0");
    let fleet = sveltos_cluster("dev-1", "dev");
    // The bad rollout's first reconcile: dev gets 1.3.0.
    let file = write_list(dir.path(), "1.json", &[bad.clone(), fleet.clone()]);
    let first = dry_run(&file, "2026-03-02T10:00:00Z");
    bad["status"] = first["status"].clone();
    let dev = stored_profile(&first["apply"][0], &["dev-1"]);
    let revision = |number: i64, p: &Value, completed: bool| {
        let id = identity_of(p).unwrap().id;
        let record = Record {
            stages_hash: id.stages_hash,
            profile_spec_hash: id.profile_spec_hash,
            started: "2026-03-01T00:00:00Z".into(),
            completed: completed.then(|| "2026-03-01T01:00:00Z".to_string()),
            ..Record::default()
        };
        json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
               "metadata": {"name": format!("shop-{number}"), "namespace": "kubectl-promotion-system",
                            "labels": {PROMOTION_UID_LABEL: "u-1"},
                            "annotations": {RECORD_ANNOTATION: serde_json::to_string(&record).unwrap()}},
               "revision": number,
               "data": {"profileSpec": p["spec"]["profileSpec"], "stages": p["spec"]["stages"]}})
    };
    let id = identity_of(&bad).unwrap().id;
    let request = |rollback_to: Option<i64>| AbortRequest {
        stages_hash: id.stages_hash.clone(),
        profile_spec_hash: id.profile_spec_hash.clone(),
        rollback_to,
        reason: Some("bad chart".into()),
    };
    let history = [revision(1, &good, true), revision(2, &bad, false)];

    // Aborted: nothing moves, and the decision says why.
    let mut aborted = bad.clone();
    aborted["metadata"]["annotations"] = json!({ABORT_ANNOTATION: request(None).to_annotation()});
    let file = write_list(
        dir.path(),
        "2.json",
        &[
            aborted,
            dev.clone(),
            fleet.clone(),
            history[0].clone(),
            history[1].clone(),
        ],
    );
    let d = dry_run(&file, "2026-03-02T10:01:00Z");
    assert_eq!(d["apply"], json!([]), "{d}");
    assert!(
        d["explanation"]
            .as_str()
            .is_some_and(|x| x.contains("the rollout is aborted") && x.ends_with("retried)")),
        "{d}"
    );

    // Rolled back to revision 1: dev gets 1.2.0 back at once.
    let mut rolling = bad.clone();
    rolling["metadata"]["annotations"] =
        json!({ABORT_ANNOTATION: request(Some(1)).to_annotation()});
    let file = write_list(
        dir.path(),
        "3.json",
        &[rolling, dev, fleet, history[0].clone(), history[1].clone()],
    );
    let d = dry_run(&file, "2026-03-02T10:01:00Z");
    assert_eq!(d["apply"][0]["metadata"]["name"], "shop-dev", "{d}");
    assert_eq!(
        d["apply"][0]["spec"]["helmCharts"][0]["chartVersion"],
        "1.2.0"
    );
    assert!(
        d["explanation"]
            .as_str()
            .is_some_and(|x| x.starts_with("rolling back to revision 1")),
        "{d}"
    );
}
