//! A manual gate on the last stage: Sveltos evaluates the trigger there too and, once approved,
//! completes the pipeline (there is nothing to promote to). `approve` approves it and says the
//! pipeline completes; `approve --wait` on the stage already approved changes nothing and
//! waits until Sveltos has acted on it, here until the pipeline is complete.
//!
//! Sveltos is played only once the waiter has said it follows the promotion (its first
//! progress note), never after a pause: playing it earlier would let the waiter read the
//! consumed approval and approve again.

use std::process::{Child, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::objects::CLUSTER_PROMOTION;
use promotion_e2e::envtest::User;
use serde_json::{json, Value};

use super::support::{
    example, kubectl, manual_gate, name_of, read_back, reconciled_now, register_webhook, Expect,
};

/// kyverno-manual-gate.yaml without its production stage: the staging gate is the last stage,
/// and Sveltos paused there awaiting approval.
fn gate_on_the_last_stage(cluster: &Cluster) -> Value {
    let mut promotion = cluster.adopt(example("kyverno-manual-gate.yaml"));
    let stages = promotion["spec"]["stages"]
        .as_array_mut()
        .expect("the example has stages");
    stages.retain(|s| s["name"] != "production");
    assert_eq!(stages.last().map(|s| &s["name"]), Some(&json!("staging")));
    promotion["status"] = reconciled_now(&promotion["status"]);
    promotion
}

pub fn a_gate_on_the_last_stage_is_approved_and_approve_wait_sees_it_complete(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let _webhook = register_webhook(cluster);
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    let promotion = gate_on_the_last_stage(cluster);
    let name = name_of(&promotion);
    cluster
        .put(&promotion)
        .or_fail(cluster, "storing the promotion and its status");

    // Proposed to who may give it (a viewer is told it cannot: issue 25, item 7).
    let out = kubectl(
        cluster,
        User::ReleaseManager,
        &["promotion", "describe", &name],
    );
    assert_eq!(out.code, 0, "[{backend}] describe: {out}");
    assert!(
        out.stdout.contains(&format!(
            "Next step:      kubectl promotion approve {name} --stage staging   (staging → \
             complete)"
        )),
        "[{backend}] describe proposes approving the last stage: {out}"
    );
    let out = kubectl(cluster, User::Viewer, &["promotion", "describe", &name]);
    assert!(
        out.stdout
            .contains("Next step:      you cannot approve (RBAC: no patch on"),
        "[{backend}] describe tells a viewer it cannot approve: {out}"
    );

    let out = kubectl(
        cluster,
        User::ReleaseManager,
        &["promotion", "approve", &name],
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            0,
            format!(
                "clusterpromotion.config.projectsveltos.io/{name} approved (stage staging → \
                 complete)\n"
            )
            .as_str()
        ),
        "[{backend}] approving the last stage: {out}"
    );
    assert_eq!(
        manual_gate(&read_back(cluster, &name), "staging")["approved"],
        true,
        "[{backend}]"
    );

    // Already approved: approve --wait writes nothing and follows the pipeline.
    let resource_version = read_back(cluster, &name)["metadata"]["resourceVersion"].clone();
    let mut waiter = cluster.command(User::ReleaseManager, "kubectl");
    waiter
        .args(["promotion", "approve", &name, "--wait", "--timeout", "60s"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut waiter = Waiter::start(waiter.spawn().or_fail(cluster, "starting approve --wait"));

    // Play Sveltos once the waiter follows the promotion: its first "waiting for complete: …"
    // note comes after the initial list of its watches, which then go on from that list's
    // resourceVersion, so every change made from here on reaches it.
    waiter.expect_stderr_line(backend, "waiting for complete: ");
    let mut consumed = read_back(cluster, &name);
    assert_eq!(
        consumed["metadata"]["resourceVersion"], resource_version,
        "[{backend}] approve --wait on an approved stage wrote nothing"
    );
    // Sveltos clears `approved` (automaticReset) with a merge patch of spec.stages.
    if let Some(manual) = consumed["spec"]["stages"][1]["trigger"]["manual"].as_object_mut() {
        manual.remove("approved");
    }
    let patch = json!({"spec": {"stages": consumed["spec"]["stages"]}}).to_string();
    let out = kubectl(
        cluster,
        User::Admin,
        &[
            "patch",
            "clusterpromotion",
            &name,
            "--type",
            "merge",
            "-p",
            &patch,
        ],
    );
    assert_eq!(
        out.code, 0,
        "[{backend}] consuming the approval as Sveltos does: {out}"
    );
    let stored = read_back(cluster, &name);
    assert!(
        manual_gate(&stored, "staging").get("approved").is_none(),
        "[{backend}] consumed: {stored}"
    );
    let mut status = stored["status"].clone();
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    status["stages"][1]["currentStatusDescription"] =
        json!(format!("Successfully provisioned ({now})"));
    status["stages"][1]["lastStatusCheckTime"] = json!(now);
    cluster
        .put_status(CLUSTER_PROMOTION, None, &name, &status)
        .or_fail(cluster, "completing the pipeline as Sveltos does");

    let started = Instant::now();
    let (code, stdout, stderr) = waiter.finish(backend);
    let context = format!(
        "[{backend}] approve --wait (ended {:?} after the status): {stdout}{stderr}",
        started.elapsed()
    );
    assert_eq!(code, Some(0), "{context}");
    // Who acts is named after the status writer (here the test's own client, whose field
    // manager differs between the stand-in and the real API server).
    let first = stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!(
            "clusterpromotion.config.projectsveltos.io/{name} unchanged: stage staging is \
             already approved; "
        )) && first.ends_with(" acts on it on its next pass (staging → complete)"),
        "{context}"
    );
    assert!(stdout.ends_with(&format!("{name} complete\n")), "{context}");
    assert!(
        stderr.contains("waiting up to 60s for the pipeline to complete"),
        "{context}"
    );
}

/// How long the waiter may take to print an expected line or to exit: far more than it needs,
/// only there so that a broken plugin fails the scenario instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(120);

/// `approve --wait`, running, its stdout and stderr read line by line as they are written.
struct Waiter {
    child: Child,
    lines: Receiver<(bool, String)>,
    readers: Vec<JoinHandle<()>>,
    stdout: String,
    stderr: String,
}

impl Waiter {
    fn start(mut child: Child) -> Waiter {
        let (tx, lines) = mpsc::channel();
        let mut readers = Vec::new();
        if let Some(pipe) = child.stdout.take() {
            readers.push(promotion_e2e::bins::forward_lines(false, pipe, tx.clone()));
        }
        if let Some(pipe) = child.stderr.take() {
            readers.push(promotion_e2e::bins::forward_lines(true, pipe, tx));
        }
        Waiter {
            child,
            lines,
            readers,
            stdout: String::new(),
            stderr: String::new(),
        }
    }

    fn keep(&mut self, is_stderr: bool, line: &str) {
        if is_stderr {
            self.stderr.push_str(line);
        } else {
            self.stdout.push_str(line);
        }
    }

    /// Read until a stderr line contains `needle`; fails the scenario, showing everything
    /// read, when the waiter closes its output first or [`PATIENCE`] runs out.
    #[track_caller]
    fn expect_stderr_line(&mut self, backend: &str, needle: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((is_stderr, line)) => {
                    self.keep(is_stderr, &line);
                    if is_stderr && line.contains(needle) {
                        return;
                    }
                }
                Err(e) => {
                    let why = match e {
                        RecvTimeoutError::Timeout => format!("nothing after {PATIENCE:?}"),
                        RecvTimeoutError::Disconnected => "it closed its output".into(),
                    };
                    panic!(
                        "[{backend}] approve --wait never printed {needle:?} on stderr: \
                         {why}\n--- stdout\n{}--- stderr\n{}",
                        self.stdout, self.stderr
                    );
                }
            }
        }
    }

    /// Exit code, stdout and stderr once the waiter exited (killed after [`PATIENCE`]: a
    /// failure).
    #[track_caller]
    fn finish(mut self, backend: &str) -> (Option<i32>, String, String) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((is_stderr, line)) => self.keep(is_stderr, &line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!(
                    "[{backend}] approve --wait did not exit within {PATIENCE:?}\n--- \
                     stdout\n{}--- stderr\n{}",
                    self.stdout, self.stderr
                ),
            }
        }
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        // Both pipes are closed: the process has exited or is about to.
        let code = self
            .child
            .wait()
            .unwrap_or_else(|e| panic!("[{backend}] waiting for approve --wait: {e}"))
            .code();
        (
            code,
            std::mem::take(&mut self.stdout),
            std::mem::take(&mut self.stderr),
        )
    }
}

impl Drop for Waiter {
    /// A scenario that failed midway leaves no waiter running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
