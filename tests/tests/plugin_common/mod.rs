//! Shared by the `plugin_*` end-to-end tests: build and run the real `kubectl-promotion` binary
//! against the stand-in API server, and fixtures for the example manifests (the promotion, the
//! ClusterProfiles Sveltos generates for its reached stages, their ClusterSummaries, Events).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use promotion_e2e::apiserver::{StandIn, StandInHandle, StandInOptions};
use serde_json::{json, Value};

/// The workspace root (this crate lives in `<root>/tests`).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The `kubectl-promotion` binary, built (once per test process) with the profile this test was
/// built with, so the tests never run a stale binary.
pub fn plugin_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("KUBECTL_PROMOTION_BIN") {
            return PathBuf::from(p);
        }
        // target/<profile>/deps/<test-binary>
        let exe = std::env::current_exe().expect("current_exe");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("test binary lives in target/<profile>/deps")
            .to_path_buf();
        let release = profile_dir.file_name().is_some_and(|n| n == "release");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args([
            "build",
            "--quiet",
            "-p",
            "kubectl-promotion",
            "--bin",
            "kubectl-promotion",
        ])
        .current_dir(workspace());
        if release {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo build for kubectl-promotion");
        assert!(status.success(), "building kubectl-promotion failed");
        let bin = profile_dir.join("kubectl-promotion");
        assert!(bin.exists(), "{} missing after build", bin.display());
        bin
    })
    .clone()
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Panic with both streams when the exit code is not `code`.
    pub fn expect(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "exit code {} (wanted {code})\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }
}

/// A stand-in API server, a kubeconfig for it, and a private HOME.
pub struct Env {
    pub server: StandInHandle,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

impl Env {
    pub fn start(objects: Vec<Value>) -> Env {
        Env::with_options(StandInOptions::default().with_objects(objects))
    }

    pub fn with_options(options: StandInOptions) -> Env {
        let server = StandIn::start(options).expect("stand-in starts");
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = server.write_kubeconfig(dir.path()).expect("kubeconfig");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        Env {
            server,
            dir,
            kubeconfig,
        }
    }

    /// The plugin with a clean environment: only this env's kubeconfig, no colour settings
    /// inherited from the developer's shell.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(plugin_bin());
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path().join("home"))
            .env("KUBECONFIG", &self.kubeconfig)
            .stdin(Stdio::null());
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(
            self.cmd()
                .args(args)
                .output()
                .expect("run kubectl-promotion"),
        )
    }

    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut c = self.cmd();
        c.args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        Run::from(c.output().expect("run kubectl-promotion"))
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn promotion(&self, name: &str) -> Value {
        self.server
            .store()
            .get("clusterpromotions", None, name)
            .unwrap_or_else(|| panic!("clusterpromotion {name} not in the store"))
    }

    pub fn put(&self, obj: Value) -> Value {
        self.server.store().put(obj).expect("store put")
    }

    /// Requests with this method whose path mentions `fragment`.
    pub fn requests(
        &self,
        method: &str,
        fragment: &str,
    ) -> Vec<promotion_e2e::apiserver::RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.method == method && r.path.contains(fragment))
            .collect()
    }
}

/// Poll `f` until it returns true (bounded; panics with `what` after `limit`).
pub fn eventually(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

/// An example manifest from `examples/`, as JSON.
pub fn example(file: &str) -> Value {
    let path = workspace().join("examples").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn example_path(file: &str) -> PathBuf {
    workspace().join("examples").join(file)
}

fn name_of(p: &Value) -> String {
    p["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The ClusterProfile Sveltos generates for `stage` (v1.13.0 `reconcileStageProfile`).
pub fn profile(promotion: &Value, stage: &str, clusters: &[(&str, &str)]) -> Value {
    let name = name_of(promotion);
    let stage_spec = promotion["spec"]["stages"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == stage))
        .cloned()
        .unwrap_or(Value::Null);
    let mut spec = promotion["spec"]["profileSpec"].clone();
    spec["clusterSelector"] = stage_spec["clusterSelector"].clone();
    json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterProfile",
        "metadata": {
            "name": format!("{name}-{stage}"),
            "labels": {"config.projectsveltos.io/promotionname": name},
            "annotations": {"config.projectsveltos.io/stagename": stage}
        },
        "spec": spec,
        "status": {"matchingClusters": clusters.iter().map(|(ns, c)| json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "namespace": ns, "name": c
        })).collect::<Vec<_>>()}
    })
}

/// A ClusterSummary of `<promotion>-<stage>` for one cluster, with per-feature statuses.
pub fn summary(
    promotion: &Value,
    stage: &str,
    (namespace, cluster): (&str, &str),
    features: &[(&str, &str, Option<&str>)],
) -> Value {
    let name = name_of(promotion);
    let profile = format!("{name}-{stage}");
    let mut cps = promotion["spec"]["profileSpec"].clone();
    let _ = cps.as_object_mut().map(|o| o.remove("clusterSelector"));
    json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterSummary",
        "metadata": {
            "name": format!("{profile}-sveltos-{cluster}"),
            "namespace": namespace,
            "labels": {
                "projectsveltos.io/cluster-profile-name": profile,
                "projectsveltos.io/cluster-name": cluster,
                "projectsveltos.io/cluster-type": "Sveltos",
                "config.projectsveltos.io/promotionname": name
            }
        },
        "spec": {
            "clusterNamespace": namespace,
            "clusterName": cluster,
            "clusterType": "Sveltos",
            "clusterProfileSpec": cps
        },
        "status": {"featureSummaries": features.iter().map(|(id, status, msg)| {
            let mut f = json!({"featureID": id, "status": status,
                               "lastAppliedTime": "2026-02-16T07:20:00Z"});
            if let Some(m) = msg {
                f["failureMessage"] = json!(m);
            }
            f
        }).collect::<Vec<_>>()}
    })
}

pub fn sveltos_cluster(namespace: &str, name: &str, env: &str) -> Value {
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1",
        "kind": "SveltosCluster",
        "metadata": {"name": name, "namespace": namespace, "labels": {"env": env}},
        "spec": {},
        "status": {"ready": true, "connectionStatus": "Healthy"}
    })
}

/// A core/v1 Event about a ClusterPromotion, as client-go records them (namespace `default`).
pub fn event(promotion: &str, n: usize, reason: &str, message: &str, time: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": format!("{promotion}.{n:x}"), "namespace": "default"},
        "involvedObject": {"apiVersion": "config.projectsveltos.io/v1beta1",
                           "kind": "ClusterPromotion", "name": promotion},
        "reason": reason,
        "message": message,
        "type": "Normal",
        "count": 1,
        "firstTimestamp": time,
        "lastTimestamp": time,
        "source": {"component": "addon-controller"}
    })
}

const PROVISIONED: &[(&str, &str, Option<&str>)] = &[("Helm", "Provisioned", None)];

/// One namespace per environment, one or two clusters each.
pub const CLUSTERS: &[(&str, &str, &str)] = &[
    ("dev", "dev01", "dev"),
    ("staging", "staging01", "staging"),
    ("prod", "prod01", "prod"),
    ("prod", "prod02", "prod"),
];

fn clusters_of(env: &str) -> Vec<(&'static str, &'static str)> {
    CLUSTERS
        .iter()
        .filter(|(_, _, e)| *e == env)
        .map(|(ns, c, _)| (*ns, *c))
        .collect()
}

fn env_of_stage(stage: &str) -> &str {
    match stage {
        "production" => "prod",
        s => s,
    }
}

/// The example's promotion plus what Sveltos would have created for the stages in its status:
/// per STATES.md, everything provisioned except the failed-dev example, whose dev cluster
/// reports the Helm feature `Failed`.
pub fn example_world(file: &str) -> Vec<Value> {
    let p = example(file);
    let mut objects = vec![p.clone()];
    for (ns, c, env) in CLUSTERS {
        objects.push(sveltos_cluster(ns, c, env));
    }
    let reached: Vec<String> = p["status"]["stages"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|s| s["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let failed = file == "kyverno-failed-dev.yaml";
    for stage in &reached {
        let clusters = clusters_of(env_of_stage(stage));
        objects.push(profile(&p, stage, &clusters));
        for cl in clusters {
            let features: &[(&str, &str, Option<&str>)] = if failed {
                &[(
                    "Helm",
                    "Failed",
                    Some("chart kyverno: values: admissionController.replicas: invalid type: expected integer, got boolean"),
                )]
            } else {
                PROVISIONED
            };
            objects.push(summary(&p, stage, cl, features));
        }
    }
    let name = name_of(&p);
    for (i, stage) in reached.iter().enumerate() {
        objects.push(event(
            &name,
            2 * i,
            "Sveltos",
            &format!("Provisioning stage {stage}"),
            "2026-02-16T07:25:37Z",
        ));
        if !failed {
            objects.push(event(
                &name,
                2 * i + 1,
                "Sveltos",
                &format!("Stage {stage} provisioned"),
                "2026-02-16T07:27:41Z",
            ));
        }
    }
    objects
}

/// A kubeconfig at `path` for `server` with the given token and no CA (for TLS tests) or with it.
pub fn write_kubeconfig(
    path: &Path,
    server: &str,
    token: &str,
    ca_pem: Option<&str>,
    context: &str,
) {
    use base64::Engine;
    let ca = match ca_pem {
        Some(pem) => format!(
            "    certificate-authority-data: {}\n",
            base64::engine::general_purpose::STANDARD.encode(pem)
        ),
        None => String::new(),
    };
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {context}\n  cluster:\n    server: {server}\n{ca}users:\n- name: {context}\n  user:\n    token: {token}\ncontexts:\n- name: {context}\n  context:\n    cluster: {context}\n    user: {context}\ncurrent-context: {context}\n"
    );
    std::fs::write(path, text).expect("write kubeconfig");
}

/// A 127.0.0.1 port that nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    port
}
