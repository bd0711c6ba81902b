//! Every example in `examples/` through the real binary over verified HTTPS: the verdicts of
//! `examples/VERDICTS.md` for CREATE, dryRun and UPDATE, and the requests the webhook must never
//! block (DELETE, deletion in progress, other kinds, subresources).

mod support;

use serde_json::{json, Value};
use support::{cause_fields, example, examples, review, warnings, Server, ALICE};

use promotion_examples::Verdict;

fn verdict(file: &str) -> Verdict {
    promotion_examples::verdict(file)
}

/// The response is exactly the example's verdict: admitted with exactly its warnings, or
/// rejected with exactly its errors as the causes (one cause per error, no more).
fn assert_verdict(file: &str, response: &Value, expected: &Verdict) {
    if expected.valid {
        assert_eq!(
            response["allowed"], true,
            "{file} must be admitted: {response}"
        );
        assert!(response.get("status").is_none(), "{file}: {response}");
        let got = warnings(response);
        let paths = expected.warnings();
        assert_eq!(got.len(), paths.len(), "{file}: warnings {got:?}");
        for path in paths {
            assert!(
                got.iter().any(|w| w.starts_with(&format!("{path}: "))),
                "{file}: no warning at {path}: {got:?}"
            );
        }
    } else {
        assert_eq!(
            response["allowed"], false,
            "{file} must be rejected: {response}"
        );
        let status = &response["status"];
        assert_eq!(status["code"], 422, "{file}: {status}");
        assert_eq!(status["reason"], "Invalid", "{file}: {status}");
        assert_eq!(status["status"], "Failure", "{file}: {status}");
        let message = status["message"].as_str().unwrap_or_default();
        let mut fields = cause_fields(response);
        fields.sort();
        assert_eq!(fields, expected.errors(), "{file}: causes");
        for path in expected.errors() {
            assert!(
                message.contains(path),
                "{file}: message lacks {path}: {message}"
            );
        }
        assert!(
            message.starts_with("ClusterPromotion.config.projectsveltos.io \""),
            "{message}"
        );
        assert!(response.get("patch").is_none());
    }
}

#[tokio::test]
async fn the_table_covers_every_example() {
    let mut files: Vec<String> = examples().into_iter().map(|(f, _)| f).collect();
    files.sort();
    let mut judged: Vec<String> = promotion_examples::verdicts()
        .into_iter()
        .map(|v| v.file)
        .collect();
    judged.sort();
    assert_eq!(files, judged);
}

#[tokio::test]
async fn create_gets_the_verdicts_of_the_table() {
    let server = Server::start();
    for (i, (file, object)) in examples().iter().enumerate() {
        let request = review(&format!("create-{i}"), "CREATE", Some(object), None, &ALICE);
        let response = server.review("/validate", &request).await;
        assert_verdict(file, &response, &verdict(file));
    }
}

#[tokio::test]
async fn dry_run_gets_the_same_answer() {
    let server = Server::start();
    for (i, (file, object)) in examples().iter().enumerate() {
        let uid = format!("dry-{i}");
        let mut request = review(&uid, "CREATE", Some(object), None, &ALICE);
        let wet = server.review("/validate", &request).await;
        request["request"]["dryRun"] = json!(true);
        let dry = server.review("/validate", &request).await;
        assert_eq!(wet, dry, "{file}");
        assert_verdict(file, &dry, &verdict(file));
    }
}

/// Replace every Lua script and CEL rule with a different, valid one.
fn with_other_code(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let replaced = match (k.as_str(), v) {
                        ("script", Value::String(_)) => {
                            json!("function evaluate()\n  return {healthy = true}\nend\n")
                        }
                        ("rule", Value::String(_)) => json!("resource.status.succeeded >= 1"),
                        _ => with_other_code(v),
                    };
                    (k.clone(), replaced)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(with_other_code).collect()),
        other => other.clone(),
    }
}

#[tokio::test]
async fn update_that_changes_code_gets_the_verdicts_of_the_table() {
    let server = Server::start();
    for (i, (file, object)) in examples().iter().enumerate() {
        let old = with_other_code(object);
        let request = review(
            &format!("upd-{i}"),
            "UPDATE",
            Some(object),
            Some(&old),
            &ALICE,
        );
        let response = server.review("/validate", &request).await;
        assert_verdict(file, &response, &verdict(file));
    }
}

#[tokio::test]
async fn update_that_keeps_broken_code_is_ratcheted_to_warnings() {
    // A stored object whose scripts a newer webhook finds broken must stay updatable (e.g. to
    // remove a finalizer): unchanged code is reported as a warning, not an error.
    let server = Server::start();
    for file in [
        "lua-syntax-error.yaml",
        "cel-syntax-error.yaml",
        "validation-job-self.yaml",
    ] {
        let old = example(file);
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"team": "payments"});
        let request = review(file, "UPDATE", Some(&new), Some(&old), &ALICE);
        let response = server.review("/validate", &request).await;
        assert_eq!(response["allowed"], true, "{file}: {response}");
        let expected = verdict(file);
        assert!(!expected.valid, "{file} is an error example");
        let got = warnings(&response);
        for path in expected.errors() {
            assert!(
                got.iter().any(|w| w.starts_with(&format!("{path}: "))),
                "{file}: {got:?}"
            );
        }
    }
    // A structural error is not code and is still rejected.
    let old = example("both-triggers.yaml");
    let mut new = old.clone();
    new["metadata"]["labels"] = json!({"team": "payments"});
    let response = server
        .review(
            "/validate",
            &review("bt", "UPDATE", Some(&new), Some(&old), &ALICE),
        )
        .await;
    assert_verdict(
        "both-triggers.yaml",
        &response,
        &verdict("both-triggers.yaml"),
    );
}

#[tokio::test]
async fn delete_is_always_allowed() {
    let server = Server::start();
    for (i, (file, object)) in examples().iter().enumerate() {
        let request = review(&format!("del-{i}"), "DELETE", None, Some(object), &ALICE);
        for path in ["/validate", "/mutate"] {
            let response = server.review(path, &request).await;
            assert_eq!(response["allowed"], true, "{file} {path}: {response}");
            assert!(response.get("status").is_none(), "{file}: {response}");
            assert!(response.get("warnings").is_none(), "{file}: {response}");
            assert!(response.get("patch").is_none(), "{file}: {response}");
        }
    }
}

#[tokio::test]
async fn objects_being_deleted_are_not_judged() {
    let server = Server::start();
    for file in ["both-triggers.yaml", "lua-syntax-error.yaml"] {
        let old = with_other_code(&example(file));
        let mut new = example(file);
        new["metadata"]["deletionTimestamp"] = json!("2026-03-01T12:00:00Z");
        new["metadata"]["finalizers"] = json!([]);
        let request = review(file, "UPDATE", Some(&new), Some(&old), &ALICE);
        let response = server.review("/validate", &request).await;
        assert_eq!(response["allowed"], true, "{file}: {response}");
    }
}

#[tokio::test]
async fn other_kinds_subresources_and_connect_pass() {
    let server = Server::start();
    let broken = example("both-triggers.yaml");

    let mut status_write = review("s", "UPDATE", Some(&broken), Some(&broken), &ALICE);
    status_write["request"]["subResource"] = json!("status");
    let mut config_map = review("c", "CREATE", Some(&broken), None, &ALICE);
    config_map["request"]["resource"] =
        json!({"group": "", "version": "v1", "resource": "configmaps"});
    config_map["request"]["kind"] = json!({"group": "", "version": "v1", "kind": "ConfigMap"});
    let mut connect = review("x", "CONNECT", None, None, &ALICE);
    connect["request"]["object"] = json!({"kind": "PodExecOptions"});

    for (what, request) in [
        ("status subresource", status_write),
        ("other resource", config_map),
        ("CONNECT", connect),
    ] {
        for path in ["/validate", "/mutate"] {
            let response = server.review(path, &request).await;
            assert_eq!(response["allowed"], true, "{what} {path}: {response}");
            assert!(response.get("patch").is_none(), "{what}: {response}");
        }
    }
}

#[tokio::test]
async fn create_without_object_is_a_bad_request() {
    let server = Server::start();
    let request = review("n", "CREATE", None, None, &ALICE);
    for path in ["/validate", "/mutate"] {
        let response = server.review(path, &request).await;
        assert_eq!(response["allowed"], false);
        assert_eq!(response["status"]["code"], 400);
        assert!(response["status"]["message"]
            .as_str()
            .unwrap()
            .contains("request.object is missing"));
    }
    let update = review(
        "u",
        "UPDATE",
        Some(&example("both-triggers.yaml")),
        None,
        &ALICE,
    );
    let response = server.review("/validate", &update).await;
    assert!(response["status"]["message"]
        .as_str()
        .unwrap()
        .contains("oldObject"));
}
