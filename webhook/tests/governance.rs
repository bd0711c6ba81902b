//! Approval governance (`--approver-group`, `--forbid-self-approval`) through the real binary,
//! configured by flags and by environment variables.

mod support;

use serde_json::{json, Value};
use support::{cause_fields, chain, example, Options, Server, User, ALICE, BOB, EVE};

const REASON: &str = "kubectl-promotion.dev/approval-reason";

fn strict() -> Options {
    Options::default().args(&[
        "--approver-group",
        "release-managers",
        "--forbid-self-approval",
    ])
}

/// kyverno-manual-gate, not approved, stored after `author` changed its profileSpec through the
/// webhook (so the audit record names them).
async fn stored_after_change_by(server: &Server, author: &User<'_>) -> Value {
    let mut original = example("kyverno-manual-gate.yaml");
    original["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(false);
    let mut changed = original.clone();
    changed["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.7.0");
    let result = chain(server, "change", &changed, Some(&original), author).await;
    assert!(result.allowed(), "{}", result.denial());
    result.object
}

fn approve(stored: &Value, reason: &str) -> Value {
    let mut new = stored.clone();
    new["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    new["metadata"]["annotations"][REASON] = json!(reason);
    new
}

fn assert_forbidden(denial: &Value, needle: &str) {
    assert_eq!(denial["allowed"], false, "{denial}");
    assert_eq!(denial["status"]["code"], 403, "{denial}");
    assert_eq!(denial["status"]["reason"], "Forbidden");
    let message = denial["status"]["message"].as_str().unwrap();
    assert!(message.contains(needle), "{message}");
    assert!(
        cause_fields(denial).contains(&"spec.stages[1].trigger.manual.approved".to_string()),
        "{denial}"
    );
}

#[tokio::test]
async fn another_member_of_the_approver_group_may_approve() {
    let server = Server::start_with(strict());
    let stored = stored_after_change_by(&server, &ALICE).await;
    let result = chain(
        &server,
        "ok",
        &approve(&stored, "looks good"),
        Some(&stored),
        &BOB,
    )
    .await;
    assert!(result.allowed(), "{}", result.denial());
    let records: Value = serde_json::from_str(
        result.object["metadata"]["annotations"]["audit.kubectl-promotion.dev/approvals"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(records["staging"]["user"], "bob");
    assert_eq!(records["staging"]["reason"], "looks good");
}

#[tokio::test]
async fn non_members_may_not_approve() {
    let server = Server::start_with(strict());
    let stored = stored_after_change_by(&server, &ALICE).await;
    let result = chain(
        &server,
        "eve",
        &approve(&stored, "trust me"),
        Some(&stored),
        &EVE,
    )
    .await;
    assert!(!result.allowed());
    assert_forbidden(result.denial(), "group \"release-managers\"");
}

#[tokio::test]
async fn the_author_of_a_change_may_not_approve_it() {
    let server = Server::start_with(strict());
    let stored = stored_after_change_by(&server, &ALICE).await;
    let result = chain(
        &server,
        "self",
        &approve(&stored, "mine"),
        Some(&stored),
        &ALICE,
    )
    .await;
    assert_forbidden(result.denial(), "four eyes");

    // Changing the rollout and approving it in one request is the same thing.
    let mut both = approve(&stored, "sneaky");
    both["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.8.0");
    let result = chain(&server, "both", &both, Some(&stored), &BOB).await;
    assert_forbidden(result.denial(), "four eyes");
}

#[tokio::test]
async fn governance_can_come_from_the_environment() {
    let server = Server::start_with(
        Options::default()
            .env("PROMOTION_WEBHOOK_APPROVER_GROUP", "ops,release-managers")
            .env("PROMOTION_WEBHOOK_FORBID_SELF_APPROVAL", "true"),
    );
    let stored = stored_after_change_by(&server, &ALICE).await;
    let result = chain(&server, "eve", &approve(&stored, "x"), Some(&stored), &EVE).await;
    assert_forbidden(
        result.denial(),
        "one of the groups \"ops\", \"release-managers\"",
    );
    let result = chain(
        &server,
        "self",
        &approve(&stored, "x"),
        Some(&stored),
        &ALICE,
    )
    .await;
    assert_forbidden(result.denial(), "four eyes");
    let result = chain(&server, "bob", &approve(&stored, "x"), Some(&stored), &BOB).await;
    assert!(result.allowed(), "{}", result.denial());
}

#[tokio::test]
async fn without_configuration_anyone_may_approve() {
    let server = Server::start();
    let stored = stored_after_change_by(&server, &EVE).await;
    let result = chain(&server, "eve", &approve(&stored, "x"), Some(&stored), &EVE).await;
    assert!(result.allowed(), "{}", result.denial());
}
