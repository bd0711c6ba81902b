//! What `describe` says about writes the webhook did not see, or saw from Sveltos (issue 23,
//! items 4, 5 and 6), through the real webhook, plugin and API server.
//!
//! - A spec change made while the webhook was not called (an outage under `failurePolicy:
//!   Ignore`) keeps the previous rollout's approval, which the webhook would have reset: the
//!   spec-change record then names another rollout than the spec's, and `describe` says the
//!   change was made by someone the webhook did not see, and that the approval was not given for
//!   this rollout (rather than "pending").
//! - Sveltos' merge patch of the whole `spec.stages` leaves out a `false` `automaticReset` (Go
//!   omits a false bool), which the API server defaults back to `true`; the webhook then resets
//!   that stage's used persistent approval. It records the flip, who wrote it and the approval it
//!   cost, and `describe` shows them.
//! - An approval given without the webhook, used and removed later while the webhook is up: the
//!   webhook marks the stage's earlier record, and the history credits nobody.

use promotion_e2e::backend::Cluster;
use promotion_e2e::envtest::objects::CLUSTER_PROMOTION;
use promotion_e2e::envtest::User;
use promotion_shared::admission::{approval_records, reset_flip_records};
use serde_json::{json, Value};

use super::bound::{awaiting, describe_json, store, Gate};
use super::support::{assert_contains, kubectl, manual_gate, read_back, register_webhook, Expect};

fn patch(cluster: &Cluster, user: User, name: &str, kind: &str, body: &str) -> String {
    let out = kubectl(
        cluster,
        user,
        &[
            "patch",
            "clusterpromotion",
            name,
            &format!("--type={kind}"),
            "-p",
            body,
        ],
    );
    assert_eq!(
        out.code,
        0,
        "[{}] patch {body}: {out}",
        cluster.kind().name()
    );
    out.stderr
}

fn describe(cluster: &Cluster, name: &str) -> String {
    let out = kubectl(cluster, User::Viewer, &["promotion", "describe", name]);
    assert_eq!(out.code, 0, "[{}] describe: {out}", cluster.kind().name());
    out.stdout
}

/// The line of `text` that starts (after indentation) with `label`.
fn line<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{text}"))
}

pub fn a_spec_change_the_webhook_did_not_see_is_named_so(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let mut gate = Gate::new(cluster).approved(cluster, "CAB-3.6.2");
    let name = gate.name.clone();
    let record = approval_records(&read_back(cluster, &name)).expect("records")["staging"].clone();

    // The outage: the chart changes unseen, and the approval for 3.6.2 stays.
    gate.webhook_down_under_ignore(cluster);
    patch(
        cluster,
        User::Admin,
        &name,
        "json",
        r#"[{"op": "replace", "path": "/spec/profileSpec/helmCharts/0/chartVersion", "value": "3.7.0"}]"#,
    );
    assert_eq!(
        manual_gate(&read_back(cluster, &name), "staging")["approved"],
        true,
        "[{backend}] nothing reset it"
    );

    let text = describe(cluster, &name);
    let spec_line = line(&text, "Spec changed:");
    assert_contains(
        spec_line,
        &[
            "by someone the webhook did not see",
            "started an earlier rollout",
        ],
        &format!("[{backend}] describe"),
    );
    assert!(
        !spec_line.contains("started the current rollout"),
        "[{backend}] {spec_line}"
    );
    let approval_line = line(&text, "Last approval:");
    assert_contains(
        approval_line,
        &[
            "approved without a record for this rollout (who: unknown)",
            &format!(
                "the last recorded approval, by release-manager at {}, was for an earlier rollout",
                record.time
            ),
            &format!("kubectl promotion approve {name} --stage staging --revoke"),
        ],
        &format!("[{backend}] describe"),
    );
    assert!(
        !approval_line.contains("(pending"),
        "[{backend}] not pending for this rollout: {approval_line}"
    );
    let json = describe_json(cluster, &name);
    assert_eq!(json["specChangeUnseen"], true, "[{backend}]");
    assert_eq!(
        json["stages"][1]["approvalForEarlierRollout"]["user"], "release-manager",
        "[{backend}]"
    );
}

/// The stages of `stored` as Sveltos' Go code re-serialises them when it clears the approval of
/// `promoted` (§13.4): `approved` absent there, and every `automaticReset: false` left out (a
/// false Go bool with omitempty).
fn as_go_writes_them(stored: &Value, promoted: &str) -> Value {
    let mut stages = stored["spec"]["stages"].clone();
    for stage in stages.as_array_mut().into_iter().flatten() {
        let is_promoted = stage["name"] == promoted;
        // (Indexing a JSON value mutably would add the path it reads.)
        if let Some(manual) = stage
            .pointer_mut("/trigger/manual")
            .and_then(Value::as_object_mut)
        {
            if manual.get("automaticReset") == Some(&Value::Bool(false)) {
                manual.remove("automaticReset");
            }
            if is_promoted {
                manual.remove("approved");
            }
        }
    }
    json!({"spec": {"stages": stages}})
}

pub fn sveltos_flipping_automatic_reset_is_shown_with_the_approval_it_cost(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let _webhook = register_webhook(cluster);
    cluster
        .install_plugin()
        .or_fail(cluster, "installing the plugin");
    let name = store(cluster);
    // dev gets a persistent manual gate, approved (and recorded) ahead of the pipeline.
    patch(
        cluster,
        User::ReleaseManager,
        &name,
        "json",
        r#"[{"op": "replace", "path": "/spec/stages/0/trigger", "value": {"manual": {"automaticReset": false, "approved": true}}}]"#,
    );
    let given = approval_records(&read_back(cluster, &name)).expect("records")["dev"].clone();
    // Sveltos promoted past dev (the persistent approval stays) and waits at staging.
    cluster
        .put_status(CLUSTER_PROMOTION, None, &name, &awaiting())
        .or_fail(cluster, "writing the status");
    let out = kubectl(
        cluster,
        User::ReleaseManager,
        &["promotion", "approve", &name, "--stage", "staging"],
    );
    assert_eq!(out.code, 0, "[{backend}] approving staging: {out}");

    // Sveltos promotes staging → production and clears staging's approval with a merge patch of
    // the whole spec.stages, as the addon-controller's identity (here: admin).
    let body = as_go_writes_them(&read_back(cluster, &name), "staging").to_string();
    let warnings = patch(cluster, User::Admin, &name, "merge", &body);
    assert_contains(
        &warnings,
        &["automaticReset of stage \"dev\" is true again"],
        &format!("[{backend}] Sveltos' patch"),
    );
    let stored = read_back(cluster, &name);
    assert_eq!(
        (
            &manual_gate(&stored, "dev")["automaticReset"],
            &manual_gate(&stored, "dev")["approved"]
        ),
        (&Value::Bool(true), &Value::Null),
        "[{backend}] the flip cost the persistent approval"
    );
    let flip = reset_flip_records(&stored).expect("flip records")["dev"].clone();
    assert_eq!(
        (
            flip.user.as_str(),
            flip.approval_removed,
            flip.approval.as_ref().map(|a| a.time.as_str())
        ),
        ("admin", true, Some(given.time.as_str())),
        "[{backend}] {flip:?}"
    );

    let text = describe(cluster, &name);
    assert_contains(
        line(&text, "Auto reset:"),
        &[
            &format!("automaticReset false → true by admin at {}", flip.time),
            &format!(
                "that write removed the approval given by release-manager at {}",
                given.time
            ),
        ],
        &format!("[{backend}] describe"),
    );
    let json = describe_json(cluster, &name);
    assert_eq!(
        json["stages"][0]["automaticResetFlip"]["user"], "admin",
        "[{backend}]"
    );
}

pub fn an_unrecorded_approval_used_and_removed_is_credited_to_nobody(cluster: &Cluster) {
    let backend = cluster.kind().name();
    let mut gate = Gate::new(cluster).approved(cluster, "first");
    let name = gate.name.clone();
    let remove = r#"[{"op": "remove", "path": "/spec/stages/1/trigger/manual/approved"}]"#;
    patch(cluster, User::Admin, &name, "json", remove);

    // Approved while the webhook is down: no record.
    gate.webhook_down_under_ignore(cluster);
    let out = kubectl(cluster, User::Admin, &["promotion", "approve", &name]);
    assert_eq!(out.code, 0, "[{backend}] approving unseen: {out}");

    // The webhook is back; Sveltos uses the approval and removes it.
    let _webhook = register_webhook(cluster);
    patch(cluster, User::Admin, &name, "json", remove);
    let stored = read_back(cluster, &name);
    let record = approval_records(&stored).expect("records")["staging"].clone();
    assert!(
        record.superseded && record.reason.as_deref() == Some("first"),
        "[{backend}] the earlier record is marked, not rewritten: {record:?}"
    );

    // Who took the unrecorded approval away is recorded all the same (issue "Every screen
    // true…", item 17).
    let removal = record
        .removed
        .as_ref()
        .unwrap_or_else(|| panic!("[{backend}] the removal is recorded: {record:?}"));
    let text = describe(cluster, &name);
    let approval_line = line(&text, "Last approval:");
    assert_eq!(
        approval_line.trim(),
        format!(
            "Last approval:  approved without a record (who: unknown) (removed by admin's update \
             at {}, which left approved out)",
            removal.time
        ),
        "[{backend}]"
    );
    assert!(
        !text.contains("release-manager at"),
        "[{backend}] nobody is credited:\n{text}"
    );
}
