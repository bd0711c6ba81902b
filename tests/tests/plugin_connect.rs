//! Connection like kubectl (kubeconfig merging, context/user/token/server overrides,
//! impersonation, TLS, exec credential plugins), one-line errors with exit 1 for every failure
//! mode, shell completion through Cobra's `__complete` protocol, `version`, and the real
//! `kubectl` on PATH running the plugin.

mod plugin_common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use plugin_common::*;
use promotion_e2e::apiserver::{DenyRule, StandInOptions, UserInfo};
use promotion_e2e::bins::Kubeconfig;

const GATE: &str = "kyverno-rollout-man";

fn one_line_error(out: &Output, needle: &str) {
    assert_eq!(out.code, 1, "exit code: {}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "one line: {:?}", out.stderr);
    assert!(out.stderr.starts_with("error: "), "{}", out.stderr);
    assert!(
        out.stderr.contains(needle),
        "wanted {needle:?} in {}",
        out.stderr
    );
    assert_eq!(out.stdout, "");
}

#[test]
fn failure_modes_are_one_clear_line_and_exit_1() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));

    // 401: a token the server does not know.
    let bad = env
        .kube
        .kubeconfig_for(&env.server, "nope", "nobody")
        .unwrap();
    let out = env.run(&["describe", GATE, "--kubeconfig", bad.to_str().unwrap()]);
    one_line_error(&out, "unauthorized (401): the server at https://127.0.0.1:");

    // 403, naming the verb and the resource.
    env.server.deny(DenyRule {
        verb: Some("get".into()),
        resource: Some("clusterpromotions".into()),
        ..DenyRule::default()
    });
    let out = env.run(&["describe", GATE]);
    one_line_error(
        &out,
        "forbidden (403): you cannot get clusterpromotions.config.projectsveltos.io \"kyverno-rollout-man\"",
    );
    assert!(
        out.stderr
            .contains("User \\\"admin\\\" cannot get resource \\\"clusterpromotions\\\"")
            || out.stderr.contains("cannot get resource"),
        "{}",
        out.stderr
    );
    env.server.clear_denials();
    env.server.deny(DenyRule {
        verb: Some("patch".into()),
        resource: Some("clusterpromotions".into()),
        ..DenyRule::default()
    });
    one_line_error(
        &env.run(&["approve", GATE]),
        "forbidden (403): you cannot patch clusterpromotions.config.projectsveltos.io \"kyverno-rollout-man\"",
    );
    env.server.clear_denials();

    // Missing object.
    one_line_error(
        &env.run(&["describe", "nope"]),
        "clusterpromotion.config.projectsveltos.io \"nope\" not found",
    );

    // Unreachable server.
    let down = env.path("down");
    Kubeconfig::new("down", &format!("https://127.0.0.1:{}", closed_port()), "t")
        .with_ca(env.server.ca_pem())
        .write(&down)
        .unwrap();
    let out = env.run(&["list", "--kubeconfig", down.to_str().unwrap()]);
    one_line_error(
        &out,
        "unable to connect to the server at https://127.0.0.1:",
    );
    assert!(
        out.stderr.to_lowercase().contains("refused"),
        "{}",
        out.stderr
    );

    // A server certificate nobody vouches for.
    let no_ca = env.path("no-ca");
    Kubeconfig::new("noca", env.server.url(), env.server.token())
        .write(&no_ca)
        .unwrap();
    let out = env.run(&["list", "--kubeconfig", no_ca.to_str().unwrap()]);
    one_line_error(&out, "unable to connect to the server");
    assert!(out.stderr.contains("certificate"), "{}", out.stderr);
    // … unless verification is switched off, as with kubectl.
    env.run(&[
        "list",
        "--kubeconfig",
        no_ca.to_str().unwrap(),
        "--insecure-skip-tls-verify",
    ])
    .expect(0);
}

#[test]
fn missing_crd_asks_whether_sveltos_is_installed() {
    let env = Env::with_options(StandInOptions::default().without_promotion_crd());
    for args in [
        vec!["describe", GATE],
        vec!["list"],
        vec!["approve", GATE],
        vec!["wait", GATE, "--for=complete"],
    ] {
        one_line_error(&env.run(&args), "is Sveltos installed?");
    }
}

#[test]
fn kubeconfig_files_merge_and_flags_override() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    // First file: a broken context that is current. Second: the real one.
    let first = env.path("first");
    Kubeconfig::new(
        "broken",
        &format!("https://127.0.0.1:{}", closed_port()),
        "x",
    )
    .write(&first)
    .unwrap();
    let merged = format!("{}:{}", first.display(), env.kubeconfig().display());
    let run = |args: &[&str]| env.run_env(args, &[("KUBECONFIG", &merged)]);
    one_line_error(&run(&["list"]), "unable to connect");
    run(&["list", "--context", "standin"]).expect(0);
    // --cluster/--user pick entries across files.
    run(&["list", "--cluster", "standin", "--user", "admin"]).expect(0);
    let out = run(&["list", "--context", "nope"]);
    one_line_error(&out, "context \"nope\" not found");
    assert!(
        out.stderr.contains("contexts: broken, standin"),
        "{}",
        out.stderr
    );

    // --server overrides the context's server (its CA still applies) and --token its credentials.
    let wrong = env.path("wrong");
    Kubeconfig::new("w", &format!("https://127.0.0.1:{}", closed_port()), "bad")
        .with_ca(env.server.ca_pem())
        .write(&wrong)
        .unwrap();
    let kc = wrong.to_str().unwrap();
    one_line_error(
        &env.run(&["list", "--kubeconfig", kc, "-s", env.server.url()]),
        "unauthorized (401)",
    );
    env.run(&[
        "list",
        "--kubeconfig",
        kc,
        "--server",
        env.server.url(),
        "--token",
        env.server.token(),
    ])
    .expect(0);

    // No kubeconfig at all: --server, --token and --certificate-authority are enough.
    let ca = env.path("ca.pem");
    std::fs::write(&ca, env.server.ca_pem()).unwrap();
    let out = Command::new(plugin_bin())
        .args([
            "list",
            "-s",
            env.server.url(),
            "--token",
            env.server.token(),
            "--certificate-authority",
        ])
        .arg(&ca)
        .env_clear()
        .env("HOME", env.home())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(GATE));

    // -n and -A are accepted and ignored (cluster-scoped).
    env.run(&["list", "-n", "kube-system", "-A"]).expect(0);
    env.run(&["describe", GATE, "--namespace", "whatever"])
        .expect(0);
    // --request-timeout takes a Go duration.
    env.run(&["list", "--request-timeout", "30s"]).expect(0);
}

#[test]
fn impersonation_reaches_the_server() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    env.run(&[
        "list",
        "--as",
        "carol",
        "--as-group",
        "release-managers",
        "--as-group",
        "ops",
    ])
    .expect(0);
    let users: Vec<String> = env
        .requests("GET", "/clusterpromotions")
        .into_iter()
        .map(|r| r.user)
        .collect();
    assert!(users.iter().any(|u| u == "carol"), "{users:?}");
}

/// The request headers `-v 7` logged in `stderr` for the first request to `path`, as
/// `Name: value`. kubectl 1.32 logs them in one of two forms, both read here: klog lines (`GET
/// URL`, `Request Headers:`, then one indented line a header), which the plugin writes too, or
/// one structured entry (`"Request" verb="GET" url="URL" headers=<`, a tab-indented line a
/// header, ` >`).
fn logged_request_headers(stderr: &str, path: &str) -> Vec<String> {
    let lines: Vec<&str> = stderr.lines().collect();
    let text = |l: &str| {
        l.split_once("] ")
            .map(|(_, t)| t.to_string())
            .unwrap_or_default()
    };
    let Some(start) = lines.iter().position(|l| {
        let t = text(l);
        (t.starts_with("GET ") && !t.contains(" in ") || t.starts_with("\"Request\" verb=\"GET\""))
            && t.contains(path)
    }) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if text(lines[start]).ends_with("headers=<") {
        for l in &lines[start + 1..] {
            match l.strip_prefix('\t') {
                Some(header) => out.push(header.to_string()),
                None => break,
            }
        }
    } else if lines.get(start + 1).map(|l| text(l)).as_deref() == Some("Request Headers:") {
        for l in &lines[start + 2..] {
            match text(l).strip_prefix("    ") {
                Some(header) => out.push(header.to_string()),
                None => break,
            }
        }
    }
    out
}

/// `-v 7` shows the headers as they are sent — the credential (masked) and `--as` impersonation
/// that kube's lower layers add — in the words and case the real kubectl logs them.
#[test]
fn v7_logs_the_credential_and_impersonation_headers_as_kubectl_does() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    let args = ["--as", "carol", "--as-group", "release-managers", "-v", "7"];
    let mut ours = vec!["describe", "kyverno-rollout-man"];
    ours.extend(args);
    let plugin = env.run(&ours).expect(0);
    let mut theirs = vec!["get", "clusterpromotions", "kyverno-rollout-man"];
    theirs.extend(args);
    let kubectl = env.kubectl(&theirs);
    assert_eq!(kubectl.code, 0, "{kubectl}");
    let path = "/clusterpromotions/kyverno-rollout-man";
    let sent = logged_request_headers(&plugin.stderr, path);
    let kubectls = logged_request_headers(&kubectl.stderr, path);
    for header in [
        "Authorization: Bearer <masked>",
        "Impersonate-User: carol",
        "Impersonate-Group: release-managers",
    ] {
        assert!(
            sent.iter().any(|h| h == header),
            "{header} in {sent:?}\n{}",
            plugin.stderr
        );
        assert!(
            kubectls.iter().any(|h| h == header),
            "kubectl: {header} in {kubectls:?}\n{}",
            kubectl.stderr
        );
    }
}

fn executable(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn exec_credential_plugins_provide_the_token() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    env.server
        .add_token("from-exec", UserInfo::new("exec-user", &["ops"]));
    let helper = env.path("get-token");
    executable(
        &helper,
        "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"from-exec\"}}'\n",
    );
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(env.server.ca_pem());
    let kc = env.path("exec-kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: e\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never\ncontexts:\n- name: s\n  context:\n    cluster: s\n    user: e\ncurrent-context: s\n",
            env.server.url(),
            helper.display()
        ),
    )
    .unwrap();
    env.run(&["list", "--kubeconfig", kc.to_str().unwrap()])
        .expect(0);
    assert!(env
        .requests("GET", "/clusterpromotions")
        .iter()
        .any(|r| r.user == "exec-user"));

    executable(&helper, "#!/bin/sh\necho 'token expired' >&2\nexit 1\n");
    let out = env.run(&["list", "--kubeconfig", kc.to_str().unwrap()]);
    one_line_error(&out, "cannot get credentials for https://127.0.0.1:");
    assert!(
        out.stderr
            .ends_with("the exec credential plugin failed (exit status: 1): token expired\n"),
        "{}",
        out.stderr
    );
}

fn complete(env: &Env, words: &[&str]) -> (Vec<String>, String) {
    let mut args = vec!["__complete"];
    args.extend_from_slice(words);
    let out = env.run(&args).expect(0);
    let mut lines: Vec<String> = out.stdout.lines().map(String::from).collect();
    let directive = lines.pop().expect("directive line");
    assert!(
        out.stderr.starts_with("Completion ended with directive:"),
        "{}",
        out.stderr
    );
    (lines, directive)
}

#[test]
fn completion_speaks_cobras_protocol_with_names_from_the_cluster() {
    let mut world = example_world("kyverno-manual-gate.yaml");
    world.objects.push(example("payment-four-stages.yaml"));
    let env = Env::start(world);

    let (c, d) = complete(&env, &["describe", ""]);
    assert_eq!(d, ":4");
    assert_eq!(
        c,
        vec![
            "core-payment-processor-ci\tnot started",
            "kyverno-rollout-man\tawaiting approval"
        ]
    );
    let (c, _) = complete(&env, &["approve", "kyv"]);
    assert_eq!(c, vec!["kyverno-rollout-man\tawaiting approval"]);
    // Stage names of the promotion typed before; approve offers only approvable gates.
    let (c, _) = complete(&env, &["approve", GATE, "--stage", ""]);
    assert_eq!(c, vec!["staging\tawaiting approval"]);
    let (c, _) = complete(&env, &["diff", GATE, "--stage", ""]);
    assert_eq!(c, vec!["dev\tpromoted", "staging\tawaiting approval"]);
    let (c, _) = complete(&env, &["wait", GATE, "--for=st"]);
    assert_eq!(
        c,
        vec![
            "--for=stage=dev\tpromoted",
            "--for=stage=staging\tawaiting approval",
            "--for=stage=production\tnot started"
        ]
    );
    let (c, _) = complete(&env, &["lis"]);
    assert_eq!(
        c,
        vec!["list\tList ClusterPromotions with their current stage and state"]
    );
    let (c, _) = complete(&env, &["--context", "standin", "describe", "core"]);
    assert_eq!(c, vec!["core-payment-processor-ci\tnot started"]);
    let (c, _) = complete(&env, &["describe", "--context", ""]);
    assert_eq!(c, vec!["standin"]);
    let (_, d) = complete(&env, &["describe", "-f", ""]);
    assert_eq!(d, ":0", "file completion for -f");
    // No descriptions variant.
    let out = env.run(&["__completeNoDesc", "describe", ""]).expect(0);
    assert_eq!(
        out.stdout,
        "core-payment-processor-ci\nkyverno-rollout-man\n:4\n"
    );
    // A cluster that cannot be reached gives no candidates, quickly, and no error output on stdout.
    let out = env
        .run_env(
            &["__complete", "describe", ""],
            &[("KUBECONFIG", "/nonexistent")],
        )
        .expect(0);
    assert_eq!(out.stdout, ":4\n");
}

#[test]
fn completion_scripts_and_version() {
    let env = Env::start(vec![]);
    let bash = env.run(&["completion", "bash"]).expect(0).stdout;
    assert!(
        bash.contains("__completeNoDesc")
            && bash.contains(
                "complete -o bashdefault -F __kubectl_promotion_complete kubectl-promotion"
            )
    );
    // The script is valid bash.
    let script = env.path("completion.bash");
    std::fs::write(&script, &bash).unwrap();
    let status = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(env
        .run(&["completion", "zsh"])
        .expect(0)
        .stdout
        .starts_with("#compdef kubectl-promotion"));
    assert!(env
        .run(&["completion", "fish"])
        .expect(0)
        .stdout
        .contains("complete -c kubectl-promotion"));
    let shim = env.run(&["completion", "kubectl-shim"]).expect(0).stdout;
    assert!(
        shim.starts_with("#!/usr/bin/env sh")
            && shim.contains("exec kubectl-promotion __complete \"$@\"")
    );

    let v = env.run(&["version"]).expect(0).stdout;
    assert!(
        v.starts_with(&format!(
            "kubectl promotion v{} (commit ",
            env!("CARGO_PKG_VERSION")
        )),
        "{v}"
    );
    // `--version` prints the very same line.
    assert_eq!(env.run(&["--version"]).expect(0).stdout, v);
    let json: serde_json::Value =
        serde_json::from_str(&env.run(&["version", "-o", "json"]).expect(0).stdout).unwrap();
    assert_eq!(json["version"], env!("CARGO_PKG_VERSION"));
    assert!(json["target"].as_str().unwrap().contains("linux"));
    assert_eq!(
        env.run(&["version", "--short"]).expect(0).stdout,
        format!("v{}\n", env!("CARGO_PKG_VERSION"))
    );

    // Help names the program `kubectl promotion` and shows examples.
    let help = env.run(&["approve", "--help"]).expect(0).stdout;
    assert!(
        help.contains("Usage: kubectl promotion approve [OPTIONS] <NAME>"),
        "{help}"
    );
    assert!(help.contains("Examples:"));
    // Usage errors exit 1 (2 and 3 mean something else for diff and wait).
    let out = env.run(&["approve"]).expect(1);
    assert!(
        out.stderr.contains("Usage: kubectl promotion approve"),
        "{}",
        out.stderr
    );
    env.run(&[]).expect(0);
}

/// Put `kubectl-promotion` (and optionally its completion shim) on the PATH kubectl searches.
fn install_plugin(env: &Env, with_shim: bool) {
    env.kube.install_plugin().unwrap_or_else(|e| panic!("{e}"));
    if with_shim {
        let shim = env.run(&["completion", "kubectl-shim"]).expect(0).stdout;
        executable(
            &env.kube.bin_dir().join("kubectl_complete-promotion"),
            &shim,
        );
    }
}

#[test]
fn runs_as_a_kubectl_plugin() {
    let env = Env::start(example_world("kyverno-manual-gate.yaml"));
    install_plugin(&env, true);
    let list = env.kubectl(&["plugin", "list"]).expect(0);
    assert!(
        list.stdout.contains("/bin/kubectl-promotion"),
        "{}",
        list.stdout
    );
    let out = env.kubectl(&["promotion", "describe", GATE]).expect(0);
    assert!(
        out.stdout.contains("Phase:          awaiting approval"),
        "{}",
        out.stdout
    );
    let out = env
        .kubectl(&["promotion", "approve", GATE, "--reason", "via kubectl"])
        .expect(0);
    assert!(out.stdout.contains("approved (stage staging → production)"));
    // kubectl's own completion delegates to kubectl_complete-promotion.
    let out = env
        .kubectl(&["__complete", "promotion", "wait", ""])
        .expect(0);
    assert!(
        out.stdout.contains("kyverno-rollout-man"),
        "{}{}",
        out.stdout,
        out.stderr
    );
}

/// What is wrong with a file named by a connection flag is said in kubectl's words: the path
/// once, the reason, no Rust `(os error N)`; an empty CA file is not "no such file".
#[test]
fn connection_files_are_named_once_with_what_is_wrong() {
    let run = |args: &[&str]| {
        let out = Command::new(plugin_bin())
            .args(args)
            .env_clear()
            .env("HOME", "/nonexistent")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("kc");
    let (code, err) = run(&["list", "--kubeconfig", missing.to_str().unwrap()]);
    assert_ne!(code, Some(0));
    assert_eq!(
        err,
        format!(
            "error: --kubeconfig {}: no such file or directory\n",
            missing.display()
        )
    );
    let (code, err) = run(&[
        "list",
        "-s",
        "https://127.0.0.1:1",
        "--token",
        "t",
        "--certificate-authority",
        "/dev/null",
    ]);
    assert_ne!(code, Some(0));
    assert_eq!(
        err,
        "error: /dev/null: --certificate-authority: no PEM certificate in the file\n"
    );
    // The client certificate and key: the path once, not kube's '"/x/c"'.
    let cert = dir.path().join("c");
    let key = dir.path().join("k");
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let with_pair = [
        "list",
        "-s",
        "https://127.0.0.1:1",
        "--client-certificate",
        cert,
        "--client-key",
        key,
    ];
    let (code, err) = run(&with_pair);
    assert_ne!(code, Some(0));
    assert_eq!(
        err,
        format!("error: {cert}: --client-certificate: no such file or directory\n")
    );
    std::fs::write(cert, "").unwrap();
    let (_, err) = run(&with_pair);
    assert_eq!(
        err,
        format!("error: {key}: --client-key: no such file or directory\n")
    );
}

/// The files a kubeconfig names are said as the flags' are: the path once, the kubeconfig
/// field that names it (`users[NAME].client-certificate`, `clusters[NAME].certificate-authority`)
/// and what is wrong, not kube's '"/x/c"' nor its "(os error 2)".
#[test]
fn kubeconfig_files_are_named_once_with_their_field_and_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("x.crt");
    let key = dir.path().join("x.key");
    let ca = dir.path().join("ca.crt");
    let kubeconfig = dir.path().join("kc");
    let write = |ca_line: &str| {
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n\
                 clusters:\n- name: c1\n  cluster:\n    server: https://127.0.0.1:1\n{ca_line}\
                 users:\n- name: u1\n  user:\n    client-certificate: {}\n    client-key: {}\n\
                 contexts:\n- name: ctx\n  context: {{cluster: c1, user: u1}}\n",
                cert.display(),
                key.display()
            ),
        )
        .unwrap();
    };
    let run = || {
        let out = Command::new(plugin_bin())
            .args(["list", "--kubeconfig", kubeconfig.to_str().unwrap()])
            .env_clear()
            .env("HOME", "/nonexistent")
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let kc = kubeconfig.display();
    write("");
    assert_eq!(
        run(),
        format!(
            "error: {}: users[u1].client-certificate in {kc}: no such file or directory\n",
            cert.display()
        )
    );
    std::fs::write(&cert, "").unwrap();
    assert_eq!(
        run(),
        format!(
            "error: {}: users[u1].client-key in {kc}: no such file or directory\n",
            key.display()
        )
    );
    std::fs::write(&ca, "").unwrap();
    write(&format!("    certificate-authority: {}\n", ca.display()));
    assert_eq!(
        run(),
        format!(
            "error: {}: clusters[c1].certificate-authority in {kc}: no PEM certificate in the \
             file\n",
            ca.display()
        )
    );
}

/// Issue 25, polish: a connection that `--request-timeout` ends says what timed out and after
/// how long, not a bare "deadline has elapsed".
#[test]
fn a_connect_timeout_names_what_timed_out_and_the_timeout() {
    let env = Env::start(Vec::new());
    let url = hung_server();
    let kubeconfig = kubeconfig_for(&env, "hung", &url);
    let kubeconfig = kubeconfig.to_str().expect("utf-8 path");
    let out = Running::start(
        &env,
        &[
            "describe",
            GATE,
            "--request-timeout=1s",
            "--kubeconfig",
            kubeconfig,
        ],
    )
    .finish();
    one_line_error(
        &out,
        &format!("error: unable to connect to the server at {url}: no connection within 1s (--request-timeout)"),
    );
    assert!(
        !out.stderr.contains("deadline has elapsed"),
        "{}",
        out.stderr
    );
}
