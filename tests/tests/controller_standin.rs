//! `promotion-controller run` against the stand-in API server, for what only the stand-in can
//! stage at will: a writer that gets in between the controller's read and its write.

mod plugin_common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use plugin_common::*;
use promotion_e2e::apiserver::{Attributes, Decision};
use promotion_e2e::controller_process::ControllerProcess;
use serde_json::{json, Value};

const NAME: &str = "core-payment-processor-ci";

/// A conflict (the promotion changed between the controller's read and its first write) is
/// decided again at once from the promotion read directly — not from the watch cache, which may
/// not hold the newer version yet and would only conflict again.
#[test]
fn a_conflict_is_decided_again_from_a_direct_read() {
    let env = Env::start(vec![example("payment-four-stages.yaml")]);
    // Once, before the controller's first write of the promotion is applied: another writer
    // labels it.
    let store = env.server.store();
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    env.server.set_authorizer(move |a: &Attributes| {
        if a.verb == "patch"
            && a.resource == "clusterpromotions"
            && count.fetch_add(1, Ordering::SeqCst) == 0
        {
            if let Some(mut p) = store.get("clusterpromotions", None, NAME) {
                p["metadata"]["labels"] = json!({"changed": "meanwhile"});
                forget_version(&mut p);
                store.put(p).expect("concurrent write");
            }
        }
        Decision::Allow
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
