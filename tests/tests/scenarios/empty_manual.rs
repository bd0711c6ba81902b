//! `manual: {}` in a stage's trigger (issue "Every screen true…", item 17), with the real
//! plugin, kubectl, webhook and API server.
//!
//! - `lint` warns on it, at the field, with the fix, and not on the fix
//!   (`manual: {automaticReset: true}`, which means the same: `true` is the default);
//! - the API server fills the default in before admission, so the webhook never sees the empty
//!   object (only lint can say it);
//! - on a real kube-apiserver, the manifest applied client-side and then with `kubectl apply
//!   --server-side` (the switch docs/install.md advises to keep a pending approval) fails every
//!   later server-side apply with `Invalid value: "null"` on the field; applying the fix
//!   server-side works again, every time. The stand-in merges an apply patch as a plain merge
//!   patch, so that part runs on the real server only.

use promotion_e2e::backend::{BackendKind, Cluster};
use promotion_e2e::envtest::User;
use serde_json::{json, Value};

use super::support::{
    assert_contains, example, kubectl, manual_gate, name_of, read_back, register_webhook, Expect,
};

/// The manual-gate example as kept in git (no status, no finalizer, no `approved`), with
/// staging's trigger `manual: manual`.
fn manifest(cluster: &Cluster, manual: Value) -> Value {
    let mut promotion = cluster.adopt(example("kyverno-manual-gate.yaml"));
    if let Some(map) = promotion.as_object_mut() {
        map.remove("status");
    }
    if let Some(metadata) = promotion["metadata"].as_object_mut() {
        metadata.remove("finalizers");
    }
    promotion["spec"]["stages"][1]["trigger"]["manual"] = manual;
    promotion
}

/// `kubectl ARGS -f FILE` as the admin, FILE holding `manifest`.
fn kubectl_file(
    cluster: &Cluster,
    args: &[&str],
    file: &str,
    manifest: &Value,
) -> promotion_e2e::bins::Output {
    let path = cluster
        .write_manifest(file, manifest)
        .or_fail(cluster, "writing the manifest");
    let path = path.to_string_lossy();
    let mut all = args.to_vec();
    all.extend(["-f", &path]);
    kubectl(cluster, User::Admin, &all)
}

const CODE: &str = "warning[trigger-manual-empty] spec.stages[1].trigger.manual: `manual: {}` is \
                    an empty object the API server fills with `automaticReset: true`; once \
                    applied client-side, switching to `kubectl apply --server-side` makes every \
                    later server-side apply fail (spec.stages[1].trigger.manual: Invalid value: \
                    \"null\"); write `manual: {automaticReset: true}`, which means the same \
                    (true is the default: the approval is removed once used)";

pub fn an_empty_manual_trigger_is_linted_and_breaks_server_side_apply_as_documented(
    cluster: &Cluster,
) {
    let backend = cluster.kind().name();
    let _webhook = register_webhook(cluster);
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    let empty = manifest(cluster, json!({}));
    let fixed = manifest(cluster, json!({"automaticReset": true}));
    let name = name_of(&empty);

    // lint: a warning (exit 0; --strict fails on it), and nothing on the fix.
    for (args, code) in [(&["lint"][..], 0), (&["lint", "--strict"][..], 1)] {
        let out = kubectl_file(
            cluster,
            &[&["promotion"][..], args].concat(),
            "empty.yaml",
            &empty,
        );
        assert_eq!(out.code, code, "[{backend}] {args:?}: {out}");
        assert_contains(&out.stdout, &[CODE], &format!("[{backend}] {args:?}"));
    }
    let out = kubectl_file(
        cluster,
        &["promotion", "lint", "--strict"],
        "fixed.yaml",
        &fixed,
    );
    assert_eq!(out.code, 0, "[{backend}] the fix: {out}");
    assert!(
        !out.stdout.contains("trigger-manual-empty"),
        "[{backend}] {out}"
    );

    // Client-side apply: the API server defaults the object before the webhook sees it.
    let out = kubectl_file(cluster, &["apply"], "empty.yaml", &empty);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (0, ""),
        "[{backend}] client-side apply: {out}"
    );
    assert_eq!(
        manual_gate(&read_back(cluster, &name), "staging"),
        &json!({"automaticReset": true}),
        "[{backend}] defaulted"
    );

    if cluster.kind() != BackendKind::Envtest {
        return;
    }
    // The switch to server-side apply: kubectl's migration of the client-side ownership fails
    // (it says so, and goes on) ...
    let out = kubectl_file(cluster, &["apply", "--server-side"], "empty.yaml", &empty);
    assert_eq!(out.code, 0, "[{backend}] first server-side apply: {out}");
    assert_contains(
        &out.stderr,
        &["failed to re-apply configuration after performing Server-Side Apply migration"],
        &format!("[{backend}] first server-side apply"),
    );
    // ... and every later server-side apply fails, forced or not.
    for args in [
        &["apply", "--server-side"][..],
        &["apply", "--server-side", "--force-conflicts"][..],
    ] {
        let out = kubectl_file(cluster, args, "empty.yaml", &empty);
        assert_eq!(out.code, 1, "[{backend}] {args:?}: {out}");
        assert_contains(
            &out.stderr,
            &["spec.stages[1].trigger.manual: Invalid value: \"null\""],
            &format!("[{backend}] {args:?}"),
        );
    }
    // The fix applies, and keeps applying.
    for attempt in 1..=2 {
        let out = kubectl_file(cluster, &["apply", "--server-side"], "fixed.yaml", &fixed);
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (0, ""),
            "[{backend}] the fix, server-side, #{attempt}: {out}"
        );
    }
}
