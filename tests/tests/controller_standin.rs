//! `promotion-controller run` against the stand-in API server, for what only the stand-in can
//! stage at will: a writer that gets in between the controller's read and its write.

mod plugin_common;

use std::time::Duration;

use plugin_common::*;
use promotion_e2e::controller_process::ControllerProcess;
use serde_json::{json, Value};

const NAME: &str = "core-payment-processor-ci";

/// A conflict (the promotion changed between the controller's read and its first write) is
/// decided again at once from the promotion read directly — not from the watch cache, which may
/// not hold the newer version yet and would only conflict again.
#[test]
fn a_conflict_is_decided_again_from_a_direct_read() {
    // The controller's start-up admission check dry-runs a write on the first promotion listed;
    // this one sorts first, so the check never takes the one conflict meant for a real write.
    let mut probed = example("payment-four-stages.yaml");
    probed["metadata"]["name"] = json!("a-promotion-the-admission-check-tries");
    let env = Env::start(vec![probed, example("payment-four-stages.yaml")]);
    // Once, before the controller's first write of the promotion is applied: another writer
    // labels it.
    interfere(&env, NAME, 1, |p| {
        p["metadata"]["labels"] = json!({"changed": "meanwhile"});
    });
    let mut ctl = ControllerProcess::start(env.kubeconfig(), &["--resync-period", "1h"])
        .unwrap_or_else(|e| panic!("{e}"));
    eventually(Duration::from_secs(60), "the first stage started", || {
        let p = env.promotion(NAME);
        p.pointer("/status/currentStageName") == Some(&json!("development"))
            && p.pointer("/metadata/labels/changed") == Some(&json!("meanwhile"))
    });
    let requests = env.server.requests();
    let conflict = requests
        .iter()
        .position(|r| r.method == "PATCH" && r.path.ends_with(NAME) && r.status == 409)
        .unwrap_or_else(|| panic!("no conflicting write; log:\n{}", ctl.log()));
    let reread = requests[conflict..]
        .iter()
        .any(|r| r.method == "GET" && r.path.ends_with(&format!("/clusterpromotions/{NAME}")));
    assert!(
        reread,
        "no direct read after the conflict: {:?}",
        requests[conflict..]
            .iter()
            .map(|r| format!("{} {}?{} → {}", r.method, r.path, r.query, r.status))
            .collect::<Vec<_>>()
    );
    let log = ctl.log();
    assert!(
        log.lines().any(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v["message"] == "conflict: reading the promotion and deciding again")
        }),
        "{log}"
    );
}

/// `--log-format text` writes colour only to a terminal: logs collected from a pipe (a file, a
/// log shipper) carry no escape codes.
#[test]
fn text_logs_into_a_pipe_carry_no_colour_codes() {
    use std::io::BufRead;
    let env = Env::start(vec![example("payment-four-stages.yaml")]);
    let binary =
        promotion_e2e::bins::binary("promotion-controller").unwrap_or_else(|e| panic!("{e}"));
    let mut child = std::process::Command::new(binary)
        .args(["run", "--log-format", "text", "--resync-period", "1h"])
        .arg("--kubeconfig")
        .arg(env.kubeconfig())
        .args([
            "--metrics-listen",
            "127.0.0.1:0",
            "--health-listen",
            "127.0.0.1:0",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starting promotion-controller");
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Up to the first profile applied: the start-up lines and a reconcile's.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut lines = Vec::new();
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        let Ok(line) = rx.recv_timeout(left) else {
            break;
        };
        let done = line.contains("ClusterProfile applied");
        lines.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let log = lines.join("\n");
    assert!(log.contains("listening"), "{log}");
    assert!(log.contains("ClusterProfile applied"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "escape codes in a piped log:\n{log:?}"
    );
}
