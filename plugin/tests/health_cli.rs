//! `kubectl promotion health` offline, through the real binary: the examples' Lua and CEL checks
//! against healthy and unhealthy objects (tests/fixtures/health), output shapes and exit codes.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kubectl-promotion"));
    c.env("NO_COLOR", "1");
    c
}

fn example(file: &str) -> PathBuf {
    promotion_examples::examples_dir().join(file)
}

fn fixture(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/health")
        .join(file)
}

fn health(promotion: &PathBuf, objects: &[&str], extra: &[&str]) -> Output {
    let mut c = bin();
    c.arg("health").arg("-f").arg(promotion);
    for o in objects {
        c.arg("--object").arg(fixture(o));
    }
    c.args(extra);
    c.output().expect("run kubectl-promotion")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> Vec<Value> {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

#[test]
fn cert_manager_deployments_healthy_and_unhealthy() {
    let p = example("cert-manager-lua-checks.yaml");
    let ok = health(
        &p,
        &["cert-manager-healthy.yaml"],
        &["--check", "deployment-health"],
    );
    assert_eq!(ok.status.code(), Some(0), "{}{}", stdout(&ok), stderr(&ok));
    assert!(stdout(&ok)
        .contains("healthy       Deployment cert-manager/cert-manager-webhook: Lua: healthy"));

    let bad = health(
        &p,
        &["cert-manager-unhealthy.yaml"],
        &["--check", "deployment-health"],
    );
    assert_eq!(bad.status.code(), Some(1), "{}", stdout(&bad));
    let out = stdout(&bad);
    assert!(
        out.contains("unhealthy     Deployment cert-manager/cert-manager-cainjector"),
        "{out}"
    );
    assert!(
        !out.contains("unrelated"),
        "a Deployment outside the namespace is not selected: {out}"
    );
    // The first failing object in list order, with Sveltos' exact wording and Go quoting.
    assert!(
        out.contains(
            "Sveltos records: health check 'deployment-health' for feature Helm failed: resource \
         Deployment cert-manager/cert-manager-cainjector is not healthy \"resource \
         cert-manager/cert-manager-cainjector is not healthy: available replicas not matching \
         requested replicas\""
        ),
        "{out}"
    );
}

#[test]
fn cert_manager_issuer_check_never_passes() {
    let p = example("cert-manager-lua-checks.yaml");
    // ClusterIssuer is cluster-scoped: the check's namespace filter selects nothing.
    let none = health(
        &p,
        &["cert-manager-healthy.yaml"],
        &["--stage", "dev", "--check", "cert-manager-resources-health"],
    );
    assert_eq!(none.status.code(), Some(1));
    let out = stdout(&none);
    assert!(
        out.contains("validateHealth: cert-manager-resources-health did not fetch any resource"),
        "{out}"
    );
    assert!(out.contains("cluster-scoped"), "{out}");
    // Even when the object is selected, the script sets `status`, never `healthy`.
    let ran = health(
        &p,
        &["cluster-issuer-namespaced.yaml"],
        &["--check", "cert-manager-resources-health"],
    );
    assert_eq!(ran.status.code(), Some(1));
    assert!(
        stdout(&ran).contains("is not healthy: ClusterIssuer is ready"),
        "{}",
        stdout(&ran)
    );
}

#[test]
fn validation_job_cel_rule() {
    let p = example("validation-job-cel.yaml");
    let done = health(&p, &["validation-job-complete.yaml"], &[]);
    assert_eq!(done.status.code(), Some(0), "{}", stdout(&done));
    assert!(stdout(&done).contains("rule success: true"));

    let failed = health(&p, &["validation-job-failed.yaml"], &[]);
    assert_eq!(failed.status.code(), Some(1));
    let out = stdout(&failed);
    assert!(out.contains("rule success: "), "{out}");
    assert!(out.contains(
        "Sveltos records: health check 'validation-job-succeeded' for feature Resources failed: \
         resource Job default/validate-core-app is not healthy\n"
    ), "{out}");

    let running = health(&p, &["validation-job-running.yaml"], &[]);
    assert_eq!(running.status.code(), Some(1));
    assert!(
        stdout(&running).contains("(Sveltos skips this rule)"),
        "{}",
        stdout(&running)
    );
}

#[test]
fn json_output_has_one_element_per_check_and_object() {
    let p = example("cert-manager-lua-checks.yaml");
    let o = health(
        &p,
        &["cert-manager-healthy.yaml", "cert-manager-unhealthy.yaml"],
        &["-o", "json"],
    );
    assert_eq!(o.status.code(), Some(1));
    let rows = json(&o);
    assert_eq!(
        rows.len(),
        5,
        "4 Deployments in cert-manager + the issuer check's empty selection"
    );
    let first = &rows[0];
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["stage", "check", "path", "feature", "object", "healthy", "message", "rules"]
    );
    assert_eq!(first["stage"], Value::Null);
    assert_eq!(first["path"], "spec.profileSpec.validateHealths[0]");
    assert_eq!(first["object"]["apiVersion"], "apps/v1");
    assert_eq!(first["object"]["namespace"], "cert-manager");
    let issuer = &rows[4];
    assert_eq!(issuer["stage"], "dev");
    assert_eq!(
        issuer["path"],
        "spec.stages[0].trigger.auto.postDelayHealthChecks[0]"
    );
    assert_eq!(issuer["object"], Value::Null);
    assert_eq!(issuer["healthy"], false);

    let p = example("validation-job-cel.yaml");
    let o = health(&p, &["validation-job-running.yaml"], &["-o", "json"]);
    let rule = &json(&o)[0]["rules"][0];
    assert_eq!(rule["name"], "success");
    assert_eq!(rule["result"], Value::Null);
    assert!(rule["error"]
        .as_str()
        .unwrap()
        .starts_with("failed to evaluate CEL expression"));
}

#[test]
fn examples_without_checks_and_with_broken_scripts() {
    for file in [
        "kyverno-rollout-auto.yaml",
        "kyverno-manual-gate.yaml",
        "kyverno-replicas-pr.yaml",
    ] {
        let o = health(&example(file), &["cert-manager-healthy.yaml"], &[]);
        assert_eq!(o.status.code(), Some(0), "{file}");
        assert!(
            stdout(&o).contains("no health checks"),
            "{file}: {}",
            stdout(&o)
        );
    }
    let o = health(
        &example("lua-syntax-error.yaml"),
        &["cert-manager-healthy.yaml"],
        &[],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains(
            "error         Deployment cert-manager/cert-manager: Lua: Sveltos' Lua (gopher-lua) \
             refuses the script, so it never runs: Lua syntax error at line 3, column 17: near \
             '!': Invalid token"
        ),
        "{}",
        stdout(&o)
    );
}

#[test]
fn metrics_and_job_checks() {
    let p = fixture("metrics-promotion.yaml");
    let o = health(&p, &[], &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "nothing evaluated is not a failure: {}",
        stdout(&o)
    );
    let out = stdout(&o);
    assert!(out.contains("--metrics errors=FILE"), "{out}");
    assert!(out.contains("jobCheck runs a Job"), "{out}");

    let low = format!("errors={}", fixture("errors-low.json").display());
    let o = health(&p, &[], &["--metrics", &low, "--check", "error-rate"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let high = format!("errors={}", fixture("errors-high.json").display());
    let o = health(&p, &[], &["--metrics", &high, "--check", "error-rate"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("metric health check failed: error rate 0.2"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn input_errors_exit_2() {
    let p = example("validation-job-cel.yaml");
    let o = health(&p, &["does-not-exist.yaml"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("does-not-exist.yaml"), "{}", stderr(&o));
    let o = health(&p, &["validation-job-complete.yaml"], &["--check", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("validation-job-succeeded"),
        "{}",
        stderr(&o)
    );
    let o = health(&p, &["validation-job-complete.yaml"], &["--stage", "qa"]);
    assert_eq!(o.status.code(), Some(2));
    let o = health(&p, &["validation-job-complete.yaml"], &["--metrics", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("NAME=FILE"));
}

/// Issue 25, polish: a whole number is "an integer", as the API server names it, and a decimal
/// "a number".
#[test]
fn a_whole_number_is_named_an_integer_as_the_api_server_names_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let objects = dir.path().join("objects.yaml");
    std::fs::write(&objects, "apiVersion: v1\nkind: List\nitems:\n- 5\n- 1.5\n")
        .expect("write objects");
    let out = health(
        &example("cert-manager-lua-checks.yaml"),
        &[],
        &["--object", objects.to_str().expect("utf-8 path")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("items[0]: expected a Kubernetes object, found an integer"),
        "{}",
        stderr(&out)
    );
    let decimal = dir.path().join("decimal.yaml");
    std::fs::write(&decimal, "1.5\n").expect("write decimal");
    let out = health(
        &example("cert-manager-lua-checks.yaml"),
        &[],
        &["--object", decimal.to_str().expect("utf-8 path")],
    );
    assert!(
        stderr(&out).contains("expected a Kubernetes object, found a number"),
        "{}",
        stderr(&out)
    );
}

/// A promotion in `dir` whose dev stage has one post-delay Lua check `name` running `script` on a
/// ConfigMap, and that ConfigMap as an object file: (manifest, object).
fn one_lua_check(
    dir: &std::path::Path,
    name: &str,
    script: &str,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let promotion = serde_json::json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": name},
        "spec": {
            "profileSpec": {"policyRefs": [{"kind": "ConfigMap", "name": "web", "namespace": "default"}]},
            "stages": [{"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                "trigger": {"auto": {"delay": "1m", "postDelayHealthChecks": [
                    {"name": name, "featureID": "Resources", "version": "v1",
                     "kind": "ConfigMap", "namespace": "apps", "script": script}]}}},
                {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}]
        }
    });
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, promotion.to_string()).unwrap();
    let object = dir.join("cm.yaml");
    std::fs::write(
        &object,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: apps}\n",
    )
    .unwrap();
    (path, object)
}

/// Issue 25, item 3: `lint` and `health` agree on a script gopher-lua compiles and LuaJIT
/// cannot (20,000 nested parentheses): `health` says it is the local runtime's limit instead of
/// printing LuaJIT's refusal as what Sveltos records.
#[test]
fn a_script_only_luajit_refuses_is_a_limit_of_the_local_run() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "function evaluate() return {{healthy = {}true{}}} end",
        "(".repeat(20_000),
        ")".repeat(20_000)
    );
    let (path, object) = one_lua_check(dir.path(), "deep", &script);

    let lint = bin().arg("lint").arg(&path).output().unwrap();
    assert_eq!(
        lint.status.code(),
        Some(0),
        "{}{}",
        stdout(&lint),
        stderr(&lint)
    );

    let mut c = bin();
    c.arg("health")
        .arg("-f")
        .arg(&path)
        .arg("--object")
        .arg(&object);
    let out = c.output().unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("the local LuaJIT runtime cannot run this script: ")
            && text.contains("too many syntax levels; Sveltos (gopher-lua) would run it"),
        "{text}{}",
        stderr(&out)
    );
    assert!(!text.contains("Sveltos records"), "{text}");
}

/// The opposite case: a script LuaJIT runs and gopher-lua refuses (`0x1p4`, a hex float, which
/// gopher-lua lexes as `0x1` then the name `p4`). `lint` and `health` agree that Sveltos fails
/// the check before `evaluate` runs: `health` reports gopher-lua's refusal, in the words `lint`
/// uses, never LuaJIT's verdict (here it would be healthy).
#[test]
fn a_script_only_gopher_lua_refuses_is_sveltos_refusal_not_a_local_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let script = "function evaluate()\n  local n = 0x1p4\n  return {healthy = n == 16}\nend\n";
    let (path, object) = one_lua_check(dir.path(), "hex", script);
    let reason = "Lua syntax error at line 3, column 8: near 'return': parse error";

    let lint = bin().arg("lint").arg(&path).output().unwrap();
    assert_eq!(lint.status.code(), Some(1));
    assert!(
        stdout(&lint).contains(&format!(
            "error[lua-syntax] spec.stages[0].trigger.auto.postDelayHealthChecks[0].script: {reason}"
        )),
        "{}",
        stdout(&lint)
    );

    let out = bin()
        .arg("health")
        .arg("-f")
        .arg(&path)
        .arg("--object")
        .arg(&object)
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("path:     spec.stages[0].trigger.auto.postDelayHealthChecks[0]"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "ConfigMap apps/web: Lua: Sveltos' Lua (gopher-lua) refuses the script, so it never \
             runs: {reason}"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Sveltos records: health check 'hex' for feature Resources failed: {reason}"
        )),
        "{text}"
    );
    assert!(!text.contains("healthy "), "{text}");
}
