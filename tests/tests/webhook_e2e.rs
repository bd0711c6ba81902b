//! The whole path across the crates: the real `kubectl` and `kubectl promotion` talk to the
//! stand-in API server, which calls the real `promotion-webhook serve` (mutating and validating)
//! over HTTPS, verified against the CA that the webhook's own `certs` command wrote.
//!
//! Proves: every example gets its VERDICTS.md verdict at `kubectl apply`; an approval through
//! the plugin is recorded (who, groups, reason) and shown by `describe`; a new rollout resets a
//! pending approval, as `diff` predicts; clients cannot write audit records; approver groups
//! decide who may approve; only promotion-controller in the namespace the webhook runs in may
//! write its committed-step and used-approvals annotations, and without a namespace the webhook
//! does not start.

mod plugin_common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use plugin_common::{example, example_world, forget_version, Env};
use promotion_e2e::apiserver::{AdmissionConfig, StandInOptions, UserInfo};
use promotion_e2e::bins::{self, Output};
use promotion_e2e::fixtures::{self, World};
use promotion_shared::admission::used_approvals::{self, USED_APPROVALS_ANNOTATION};
use promotion_shared::admission::{
    APPROVALS_ANNOTATION, APPROVAL_REASON_ANNOTATION, SPEC_CHANGE_ANNOTATION,
};
use promotion_shared::promoting::{Promoting, PROMOTING_ANNOTATION};
use promotion_webhook::testing;
use serde_json::{json, Value};

const GATE: &str = "kyverno-rollout-man";
const GATE_FILE: &str = "kyverno-manual-gate.yaml";

// ---------------------------------------------------------------------------------------------
// The webhook process

/// A running `promotion-webhook serve` on 127.0.0.1 (ports chosen by the OS), started by the
/// webhook crate's own test helper and killed when dropped.
struct Webhook(testing::Webhook);

impl Webhook {
    /// Certificates from `promotion-webhook certs`, then `serve` with `extra` flags; returns once
    /// /readyz answers 200. It runs in the namespace of the default install
    /// (`POD_NAMESPACE` [`testing::NAMESPACE`]), as [`testing::Launch`] starts it.
    fn start(extra: &[&str]) -> Webhook {
        Webhook::start_with(extra, &[])
    }

    /// [`Webhook::start`] with `env` set for the process (replacing `POD_NAMESPACE`, say).
    fn start_with(extra: &[&str], env: &[(&str, &str)]) -> Webhook {
        let bin = bins::binary("promotion-webhook").unwrap_or_else(|e| panic!("{e}"));
        let mut launch = testing::Launch::new(bin).args(extra);
        for (key, value) in env {
            launch = launch.env(key, value);
        }
        let webhook = launch.start().unwrap_or_else(|e| panic!("{e}"));
        webhook
            .wait_ready(Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("{e}"));
        Webhook(webhook)
    }

    /// The API server's webhook configuration for this instance (both webhooks, failurePolicy
    /// Fail, the generated CA as caBundle).
    fn admission(&self) -> AdmissionConfig {
        let mut config = AdmissionConfig::new(&self.0.ca_pem);
        config.mutate_url = Some(format!("https://{}/mutate", self.0.https));
        config.validate_url = Some(format!("https://{}/validate", self.0.https));
        config
    }

    /// `promotion_webhook_admission_requests_total` for one series (0 before its first count).
    fn admissions(&self, endpoint: &str, operation: &str, verdict: &str) -> u64 {
        let (code, body) = self.0.get("/metrics").expect("GET /metrics");
        assert_eq!(code, 200, "{body}");
        let labels = [
            format!("endpoint=\"{endpoint}\""),
            format!("operation=\"{operation}\""),
            format!("verdict=\"{verdict}\""),
        ];
        body.lines()
            .filter(|l| l.starts_with("promotion_webhook_admission_requests_total{"))
            .find(|l| labels.iter().all(|label| l.contains(label.as_str())))
            .map(|line| {
                let value = line.rsplit(' ').next().unwrap_or_default();
                value
                    .parse::<f64>()
                    .unwrap_or_else(|_| panic!("no counter value in {line:?}"))
                    as u64
            })
            .unwrap_or(0)
    }
}

// ---------------------------------------------------------------------------------------------
// The cluster: the stand-in API server calling the webhook, and a client environment

/// A stand-in that calls `webhook`, knows `users` by token, and has `kubectl promotion`.
fn cluster(objects: Vec<Value>, webhook: &Webhook, users: &[(&str, UserInfo)]) -> Env {
    let mut options = StandInOptions::default()
        .with_objects(objects)
        .with_admission(webhook.admission());
    for (token, user) in users {
        options = options.with_token(token, user.clone());
    }
    let env = Env::with_options(options);
    env.kube.install_plugin().unwrap_or_else(|e| panic!("{e}"));
    env
}

/// `kubectl` as the user of another kubeconfig.
fn kubectl_as(env: &Env, kubeconfig: &Path, args: &[&str]) -> Output {
    let mut cmd = env.kube.command("kubectl");
    cmd.env("KUBECONFIG", kubeconfig).args(args);
    bins::run(&mut cmd).unwrap_or_else(|e| panic!("{e}"))
}

/// Write a manifest into the client's directory; returns its path as an argument.
fn write(env: &Env, file: &str, manifest: &Value) -> String {
    let path = env.path(file);
    let text = serde_json::to_string_pretty(manifest).expect("JSON");
    std::fs::write(&path, text).expect("write manifest");
    path.to_string_lossy().into_owned()
}

/// The manual gate as Sveltos left it: dev promoted, staging provisioned and awaiting approval.
fn gate_world() -> World {
    example_world(GATE_FILE)
}

fn annotation(promotion: &Value, key: &str) -> Option<String> {
    promotion["metadata"]["annotations"][key]
        .as_str()
        .map(String::from)
}

/// The parsed `audit.kubectl-promotion.dev/approvals` record of `stage`.
fn approval_record(promotion: &Value, stage: &str) -> Option<Value> {
    let raw = annotation(promotion, APPROVALS_ANNOTATION)?;
    let records: Value = serde_json::from_str(&raw)
        .unwrap_or_else(|e| panic!("{APPROVALS_ANNOTATION} is not JSON ({e}): {raw}"));
    records.get(stage).cloned()
}

fn staging_trigger(promotion: &Value) -> &Value {
    &promotion["spec"]["stages"][1]["trigger"]["manual"]
}

#[track_caller]
fn assert_contains(haystack: &str, needles: &[&str]) {
    for needle in needles {
        assert!(
            haystack.contains(needle),
            "wanted {needle:?} in:\n{haystack}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Verdicts at `kubectl apply`

enum Verdict {
    Valid,
    /// Admitted; kubectl prints the webhook's warning about `path`.
    Warning {
        path: &'static str,
        says: &'static str,
    },
    /// Denied by the validating webhook, naming `path`.
    Error {
        path: &'static str,
        says: &'static str,
    },
    /// Denied before the webhook is asked: the CRD's own rule.
    CrdError {
        path: &'static str,
        says: &'static str,
    },
}

/// examples/VERDICTS.md, file by file.
const VERDICTS: &[(&str, Verdict)] = &[
    (
        "both-triggers.yaml",
        Verdict::CrdError {
            path: "spec.stages[1].trigger",
            says: "A trigger must have either a 'manual' or 'auto' field, but not both",
        },
    ),
    (
        "cel-syntax-error.yaml",
        Verdict::Error {
            path: "spec.profileSpec.validateHealths[0].evaluateCEL[0].rule",
            says: "CEL syntax error at line 1, column",
        },
    ),
    (
        "cert-manager-lua-checks.yaml",
        Verdict::Warning {
            path: "spec.stages[0].trigger.auto.postDelayHealthChecks[0].script",
            says: "`healthy`",
        },
    ),
    ("kyverno-failed-dev.yaml", Verdict::Valid),
    ("kyverno-manual-gate.yaml", Verdict::Valid),
    ("kyverno-replicas-pr.yaml", Verdict::Valid),
    ("kyverno-rollout-auto.yaml", Verdict::Valid),
    (
        "lua-syntax-error.yaml",
        Verdict::Error {
            path: "spec.profileSpec.validateHealths[0].script",
            says: "Lua syntax error at line",
        },
    ),
    ("payment-four-stages.yaml", Verdict::Valid),
    ("validation-job-cel.yaml", Verdict::Valid),
    (
        "validation-job-self.yaml",
        Verdict::Error {
            path: "spec.stages[0].trigger.auto.postDelayHealthChecks[0].evaluateCEL[0].rule",
            says: "undeclared reference to `self`",
        },
    ),
];

#[test]
fn every_example_gets_its_verdict_at_kubectl_apply() {
    let webhook = Webhook::start(&[]);
    let env = cluster(Vec::new(), &webhook, &[]);
    let examples = fixtures::load_examples().unwrap_or_else(|e| panic!("{e}"));
    let files: BTreeSet<&str> = examples.iter().map(|e| e.file.as_str()).collect();
    let judged: BTreeSet<&str> = VERDICTS.iter().map(|(file, _)| *file).collect();
    assert_eq!(
        files, judged,
        "examples/ and VERDICTS.md list the same files"
    );

    let mut names_seen = BTreeSet::new();
    for example in &examples {
        let file = fixtures::examples_dir().join(&example.file);
        let name = example.name();
        let denied_before = webhook.admissions("validate", "CREATE", "denied");
        let out = env.kubectl(&["apply", "-f", &file.to_string_lossy()]);
        let denied_now = webhook.admissions("validate", "CREATE", "denied");
        let context = format!("{}: {out}", example.file);
        let verdict = VERDICTS
            .iter()
            .find(|(file, _)| *file == example.file)
            .map(|(_, v)| v)
            .expect("judged above");
        match verdict {
            Verdict::Valid | Verdict::Warning { .. } => {
                assert_eq!(out.code, 0, "{context}");
                // Two examples define the same promotion: the second one updates it.
                let action = if names_seen.insert(name.to_string()) {
                    "created"
                } else {
                    "configured"
                };
                assert_eq!(
                    out.stdout,
                    format!("clusterpromotion.config.projectsveltos.io/{name} {action}\n"),
                    "{context}"
                );
                let stored = env.promotion(name);
                assert_eq!(
                    stored["spec"],
                    with_values_of(&stored["spec"], &example.promotion["spec"]),
                    "the manifest's values are stored: {context}"
                );
                // The mutating webhook recorded who created or changed the rollout.
                let spec_change = annotation(&stored, SPEC_CHANGE_ANNOTATION)
                    .unwrap_or_else(|| panic!("{context}: no {SPEC_CHANGE_ANNOTATION}"));
                let record: Value = serde_json::from_str(&spec_change).expect("JSON record");
                assert_eq!(record["user"], "admin", "{context}");
                assert_eq!(denied_now, denied_before, "{context}");
                match verdict {
                    Verdict::Warning { path, says } => {
                        assert_contains(&out.stderr, &[&format!("Warning: {path}: "), says])
                    }
                    _ => assert!(!out.stderr.contains("Warning:"), "{context}"),
                }
            }
            Verdict::Error { path, says } | Verdict::CrdError { path, says } => {
                let by_webhook = matches!(verdict, Verdict::Error { .. });
                let finding = if by_webhook {
                    format!("{path}: {says}")
                } else {
                    format!("{path}: Invalid value: \"object\": {says}")
                };
                assert_eq!(out.code, 1, "{context}");
                assert_contains(
                    &out.stderr,
                    &[
                        &format!("The ClusterPromotion \"{name}\" is invalid: "),
                        &finding,
                    ],
                );
                assert!(env.stored(name).is_none(), "{context}");
                // Schema validation runs first: the validating webhook never sees what the CRD
                // rejects, and denies the rest.
                assert_eq!(
                    denied_now,
                    denied_before + u64::from(by_webhook),
                    "denials counted by the webhook: {context}"
                );
            }
        }
    }
}

/// `stored` with every value `manifest` sets written over it: equal to `stored` exactly when
/// the server kept all of the manifest (defaults it added are not a difference).
fn with_values_of(stored: &Value, manifest: &Value) -> Value {
    let mut expected = stored.clone();
    overlay(&mut expected, manifest);
    expected
}

fn overlay(target: &mut Value, manifest: &Value) {
    match (target, manifest) {
        (Value::Object(t), Value::Object(m)) => {
            for (k, v) in m {
                overlay(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (Value::Array(t), Value::Array(m)) if t.len() == m.len() => {
            for (t, m) in t.iter_mut().zip(m) {
                overlay(t, m);
            }
        }
        (t, m) => *t = m.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// Approvals

#[test]
fn approve_records_the_requester_and_the_reason_and_describe_shows_them() {
    let webhook = Webhook::start(&[]);
    let env = cluster(gate_world().objects, &webhook, &[]);
    let before = chrono::Utc::now() - chrono::Duration::seconds(1);

    let out = env.kubectl(&[
        "promotion",
        "approve",
        GATE,
        "--reason",
        "CAB-1234 signed off",
    ]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        out.stdout,
        format!("clusterpromotion.config.projectsveltos.io/{GATE} approved (stage staging → production)\n")
    );

    let stored = env.promotion(GATE);
    assert_eq!(staging_trigger(&stored)["approved"], json!(true));
    // The reason travelled as a request annotation; the webhook moved it into the record.
    assert_eq!(annotation(&stored, APPROVAL_REASON_ANNOTATION), None);
    let record = approval_record(&stored, "staging").expect("an approval record for staging");
    assert_eq!(record["user"], "admin", "{record}");
    assert_eq!(
        record["groups"],
        json!(["system:masters", "system:authenticated"]),
        "{record}"
    );
    assert_eq!(record["reason"], "CAB-1234 signed off", "{record}");
    let time = record["time"].as_str().expect("time");
    let at = chrono::DateTime::parse_from_rfc3339(time).expect("RFC 3339 time");
    assert!(
        at >= before,
        "recorded at {time}, the approval ran after {before}"
    );
    assert!(
        approval_record(&stored, "dev").is_none(),
        "only the approved stage"
    );

    let described = env.kubectl(&["promotion", "describe", GATE]);
    assert_eq!(described.code, 0, "{described}");
    assert_contains(
        &described.stdout,
        &[
            "Pipeline:       dev [promoted] → staging [approved and pending] → production [not started]",
            &format!("Last approval:  admin at {time}: \"CAB-1234 signed off\""),
            &format!("staging   approved   admin   {time}   CAB-1234 signed off"),
        ],
    );

    // The manifest kept in git says `approved: false`: applying it takes the approval away, and
    // kubectl says whose it was.
    let mut manifest = example(GATE_FILE);
    manifest.as_object_mut().expect("object").remove("status");
    let file = write(&env, "from-git.json", &manifest);
    let applied = env.kubectl(&["apply", "-f", &file]);
    assert_eq!(applied.code, 0, "{applied}");
    let warning = format!(
        "Warning: approval of stage \"staging\" (given by admin at {time}: \"CAB-1234 signed off\") removed by this update\n"
    );
    assert_eq!(applied.stderr.matches(&warning).count(), 1, "{applied}");
    assert_eq!(
        staging_trigger(&env.promotion(GATE))["approved"],
        json!(false)
    );
}

#[test]
fn a_new_rollout_resets_the_pending_approval_as_diff_predicts() {
    let webhook = Webhook::start(&[]);
    let env = cluster(gate_world().objects, &webhook, &[]);
    let approved = env.kubectl(&["promotion", "approve", GATE, "--reason", "3.6.2 ok"]);
    assert_eq!(approved.code, 0, "{approved}");
    let record = approval_record(&env.promotion(GATE), "staging").expect("record");

    // The operator's manifest: still approved, with a new chart version.
    let mut manifest = example(GATE_FILE);
    manifest.as_object_mut().expect("object").remove("status");
    manifest["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!("3.7.0");
    manifest["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    let file = write(&env, "new-rollout.json", &manifest);

    // diff runs the update as a server-side dry run, through the real mutating webhook, and
    // predicts the reset itself in the webhook's own words; both must agree, and nothing is
    // stored.
    let reset = format!(
        "approval of stage \"staging\" (given by {} at {}: \"3.6.2 ok\") reset: spec.profileSpec \
         changed, the new rollout needs a new approval",
        record["user"].as_str().expect("user"),
        record["time"].as_str().expect("time")
    );
    let diff = env.kubectl(&["promotion", "diff", "-f", &file]);
    assert_eq!(diff.code, 1, "{diff}");
    assert_contains(&diff.stderr, &[&format!("• {reset}\n")]);
    assert_contains(
        &diff.stdout,
        &[
            "-      chartVersion: \"3.6.2\"\n+      chartVersion: \"3.7.0\"",
            "-        approved: true\n",
        ],
    );
    let unchanged = env.promotion(GATE);
    assert_eq!(staging_trigger(&unchanged)["approved"], json!(true));
    assert_eq!(
        unchanged["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"],
        "3.6.2"
    );

    let applied = env.kubectl(&["apply", "-f", &file]);
    assert_eq!(applied.code, 0, "{applied}");
    assert_eq!(
        applied.stdout,
        format!("clusterpromotion.config.projectsveltos.io/{GATE} configured\n")
    );
    assert_contains(&applied.stderr, &[&format!("Warning: {reset}\n")]);
    let stored = env.promotion(GATE);
    assert_eq!(
        stored["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"],
        "3.7.0"
    );
    assert_eq!(
        staging_trigger(&stored),
        &json!({"automaticReset": true}),
        "approved is removed, as Sveltos does"
    );
    // Who approved last stays on record, marked with the reset and who made the change that
    // caused it; who changed the rollout is recorded.
    let mut kept = approval_record(&stored, "staging").expect("the record stays");
    let removed = kept
        .as_object_mut()
        .and_then(|r| r.remove("removed"))
        .expect("marked removed");
    assert_eq!(Some(kept), Some(record));
    assert_eq!(
        (&removed["user"], &removed["how"], &removed["detail"]),
        (
            &json!("admin"),
            &json!("reset"),
            &json!("reset: spec.profileSpec changed, the new rollout needs a new approval")
        ),
        "{removed}"
    );
    let spec_change: Value = serde_json::from_str(
        &annotation(&stored, SPEC_CHANGE_ANNOTATION).expect("spec-change record"),
    )
    .expect("JSON");
    assert_eq!(spec_change["user"], "admin");

    let described = env.kubectl(&["promotion", "describe", GATE]);
    assert_contains(&described.stdout, &["staging [awaiting approval]"]);
}

#[test]
fn clients_cannot_write_audit_records() {
    let webhook = Webhook::start(&[]);
    let env = cluster(gate_world().objects, &webhook, &[]);
    let path = format!("metadata.annotations[{APPROVALS_ANNOTATION}]");
    let forged = json!({"staging": {"user": "alice", "groups": ["release-managers"],
                                   "time": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()}})
    .to_string();

    // A record without an approval.
    let annotate = env.kubectl(&[
        "annotate",
        "clusterpromotion",
        GATE,
        &format!("{APPROVALS_ANNOTATION}={forged}"),
    ]);
    assert_eq!(annotate.code, 1, "{annotate}");
    assert_contains(
        &annotate.stderr,
        &[
            "Error from server (Forbidden): admission webhook",
            "denied the request",
            &path,
        ],
    );

    // An approval whose record names someone else than the requester.
    let patch = json!({
        "metadata": {"annotations": {APPROVALS_ANNOTATION: forged}},
        "spec": {"stages": [
            example(GATE_FILE)["spec"]["stages"][0].clone(),
            {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}},
             "trigger": {"manual": {"approved": true, "automaticReset": true}}},
            example(GATE_FILE)["spec"]["stages"][2].clone(),
        ]}
    });
    let patched = env.kubectl(&[
        "patch",
        "clusterpromotion",
        GATE,
        "--type=merge",
        "-p",
        &patch.to_string(),
    ]);
    assert_eq!(patched.code, 1, "{patched}");
    assert_contains(&patched.stderr, &["Error from server (Forbidden)", &path]);
    let stored = env.promotion(GATE);
    assert_eq!(annotation(&stored, APPROVALS_ANNOTATION), None);
    assert_eq!(staging_trigger(&stored)["approved"], json!(false));

    // The same approval without the forged record is admitted, and recorded for its requester.
    let approve = env.kubectl(&[
        "patch",
        "clusterpromotion",
        GATE,
        "--type=json",
        "-p",
        r#"[{"op": "replace", "path": "/spec/stages/1/trigger/manual/approved", "value": true}]"#,
    ]);
    assert_eq!(approve.code, 0, "{approve}");
    let record = approval_record(&env.promotion(GATE), "staging").expect("record");
    assert_eq!(record["user"], "admin");
    assert!(record.get("reason").is_none(), "{record}");

    // Once there, records cannot be removed either.
    let remove = env.kubectl(&[
        "annotate",
        "clusterpromotion",
        GATE,
        &format!("{APPROVALS_ANNOTATION}-"),
    ]);
    assert_eq!(remove.code, 1, "{remove}");
    assert_contains(&remove.stderr, &["Error from server (Forbidden)", &path]);
    assert!(approval_record(&env.promotion(GATE), "staging").is_some());
}

#[test]
fn published_approver_rules_are_enforced_and_reloaded_without_a_restart() {
    // The ConfigMap kubectl-promotion-system/promotion-governance as the kubelet mounts it.
    let rules = tempfile::tempdir().unwrap();
    let write = |key: &str, value: &str| std::fs::write(rules.path().join(key), value).unwrap();
    write("approver-groups", "release-managers");
    write("forbid-self-approval", "false");
    let dir = rules.path().to_str().unwrap();
    let webhook = Webhook::start(&["--governance-dir", dir, "--cert-reload-interval", "100ms"]);
    let users = [("token-dave", UserInfo::new("dave", &["developers"]))];
    let env = cluster(gate_world().objects, &webhook, &users);
    let dave = env
        .kube
        .kubeconfig_for(&env.server, "token-dave", "dave")
        .unwrap();
    let approve = ["promotion", "approve", GATE];
    let refused = |out: &Output| {
        assert_eq!(out.code, 1, "{out}");
        assert_contains(&out.stderr, &["\"dave\"", "\"release-managers\""]);
    };
    refused(&kubectl_as(&env, &dave, &approve));

    // A misspelt key is not applied: the rules in use stay, and the log says why.
    write("approver-group", "developers");
    webhook
        .0
        .wait_for_log("the refused reload", Duration::from_secs(30), |l| {
            l["message"] == "approver rules not reloaded; keeping the ones in use"
        })
        .unwrap_or_else(|e| panic!("{e}"));
    refused(&kubectl_as(&env, &dave, &approve));

    // The edit done right takes effect without a restart.
    std::fs::remove_file(rules.path().join("approver-group")).unwrap();
    write("approver-groups", "developers");
    webhook
        .0
        .wait_for_log("the reload", Duration::from_secs(30), |l| {
            l["message"] == "approver rules reloaded" && l["approver_groups"] == "[\"developers\"]"
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let allowed = kubectl_as(&env, &dave, &approve);
    assert_eq!(allowed.code, 0, "{allowed}");
    assert_eq!(
        approval_record(&env.promotion(GATE), "staging").expect("record")["user"],
        "dave"
    );
}

#[test]
fn approver_rules_that_do_not_parse_stop_the_start_with_the_reason() {
    let rules = tempfile::tempdir().unwrap();
    std::fs::write(rules.path().join("forbid-self-approval"), "yes").unwrap();
    let bin = bins::binary("promotion-webhook").unwrap_or_else(|e| panic!("{e}"));
    let out = bins::run(
        std::process::Command::new(bin)
            .args([
                "serve",
                "--tls-cert-file",
                "/nonexistent/c",
                "--tls-key-file",
                "/nonexistent/k",
            ])
            .arg("--governance-dir")
            .arg(rules.path())
            .env("POD_NAMESPACE", testing::NAMESPACE),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(out.code, 0, "{out}");
    assert_contains(
        &out.stderr,
        &[&format!(
            "approver rules in {}: key \"forbid-self-approval\": \"yes\" is not \"true\" or \"false\"",
            rules.path().display()
        )],
    );
}

#[test]
fn approver_groups_decide_who_may_approve() {
    let open = Webhook::start(&[]);
    let governed = Webhook::start(&["--approver-group", "release-managers"]);
    let users = [
        ("token-dave", UserInfo::new("dave", &["developers"])),
        ("token-carol", UserInfo::new("carol", &["release-managers"])),
    ];
    let env = cluster(gate_world().objects, &governed, &users);
    let dave = env
        .kube
        .kubeconfig_for(&env.server, "token-dave", "dave")
        .unwrap();
    let carol = env
        .kube
        .kubeconfig_for(&env.server, "token-carol", "carol")
        .unwrap();
    let approve = ["promotion", "approve", GATE, "--reason", "looks fine"];

    let denied = kubectl_as(&env, &dave, &approve);
    assert_eq!(denied.code, 1, "{denied}");
    assert_eq!(denied.stdout, "", "{denied}");
    assert!(denied.stderr.starts_with("error: "), "{denied}");
    assert_eq!(denied.stderr.lines().count(), 1, "one line: {denied}");
    assert_contains(
        &denied.stderr,
        &[
            "spec.stages[1].trigger.manual.approved",
            "\"dave\"",
            "\"staging\"",
            "\"release-managers\"",
        ],
    );
    // The same through impersonation: the webhook judges the impersonated user.
    let impersonated = env.kubectl(&[
        "promotion",
        "approve",
        GATE,
        "--as",
        "mallory",
        "--as-group",
        "developers",
    ]);
    assert_eq!(impersonated.code, 1, "{impersonated}");
    assert_contains(
        &impersonated.stderr,
        &["\"mallory\"", "\"release-managers\""],
    );
    let stored = env.promotion(GATE);
    assert_eq!(staging_trigger(&stored)["approved"], json!(false));
    assert_eq!(annotation(&stored, APPROVALS_ANNOTATION), None);

    // The refusal comes from the flag: the other instance, without it, lets dave approve.
    env.server
        .set_admission(Some(open.admission()))
        .unwrap_or_else(|e| panic!("{e}"));
    let allowed = kubectl_as(&env, &dave, &approve);
    assert_eq!(allowed.code, 0, "{allowed}");
    assert_eq!(
        approval_record(&env.promotion(GATE), "staging").expect("record")["user"],
        "dave"
    );

    // Play Sveltos consuming that approval, and go back to the governed webhook.
    let mut consumed = env.promotion(GATE);
    consumed["spec"]["stages"][1]["trigger"]["manual"] =
        json!({"approved": false, "automaticReset": true});
    forget_version(&mut consumed);
    env.put(consumed);
    env.server
        .set_admission(Some(governed.admission()))
        .unwrap_or_else(|e| panic!("{e}"));

    let member = kubectl_as(&env, &carol, &approve);
    assert_eq!(member.code, 0, "{member}");
    assert_contains(&member.stdout, &["approved (stage staging → production)"]);
    let record = approval_record(&env.promotion(GATE), "staging").expect("record");
    assert_eq!(record["user"], "carol", "{record}");
    assert_eq!(
        record["groups"],
        json!(["release-managers", "system:authenticated"]),
        "{record}"
    );
    assert_eq!(record["reason"], "looks fine", "{record}");
}

// ---------------------------------------------------------------------------------------------
// promotion-controller's committed-step annotation

/// promotion-controller's service account in `namespace`.
fn controller_in(namespace: &str) -> String {
    format!("system:serviceaccount:{namespace}:promotion-controller")
}

#[test]
fn the_controller_user_is_promotion_controller_in_the_namespace_the_webhook_runs_in() {
    // An install under another namespace: the manifests give the pod POD_NAMESPACE, and no
    // --controller-user.
    let webhook = Webhook::start_with(&[], &[("POD_NAMESPACE", "other-ns")]);
    let controller = controller_in("other-ns");
    let listening = webhook
        .0
        .wait_for_log("the `listening` line", Duration::from_secs(30), |l| {
            l["message"] == "listening"
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        listening["controller_users"],
        format!("[{controller:?}]"),
        "{listening}"
    );
    assert_eq!(listening["controller_users_from"], "POD_NAMESPACE");

    let env = cluster(gate_world().objects, &webhook, &[]);
    let committed = json!({"stage": "staging", "stagesHash": "s", "profileSpecHash": "p"});
    let annotate = |user: &str| {
        env.kubectl(&[
            "annotate",
            "clusterpromotion",
            GATE,
            &format!("{PROMOTING_ANNOTATION}={committed}"),
            "--as",
            user,
        ])
    };

    // The default install's controller user is nobody special here.
    let elsewhere = controller_in("kubectl-promotion-system");
    let refused = annotate(&elsewhere);
    assert_eq!(refused.code, 1, "{refused}");
    assert_contains(
        &refused.stderr,
        &[
            "Error from server (Forbidden)",
            &format!("metadata.annotations[{PROMOTING_ANNOTATION}]"),
            &format!("user {elsewhere:?} may not change this annotation"),
            &format!("only the controller may write it ({controller:?})"),
        ],
    );
    assert_eq!(annotation(&env.promotion(GATE), PROMOTING_ANNOTATION), None);

    let admitted = annotate(&controller);
    assert_eq!(admitted.code, 0, "{admitted}");
    assert_eq!(
        annotation(&env.promotion(GATE), PROMOTING_ANNOTATION),
        Some(committed.to_string())
    );
}

/// The controller's commit of an approval it uses writes whose approval it was
/// (`used-approvals`) in the same patch as the committed step: admitted from the controller, and
/// that annotation refused to anyone else, whether written, edited or removed.
#[test]
fn only_the_controller_records_whose_approval_it_used() {
    let webhook = Webhook::start(&[]);
    let env = cluster(gate_world().objects, &webhook, &[]);
    let controller = controller_in(testing::NAMESPACE);
    let approved = env.kubectl(&[
        "promotion",
        "approve",
        GATE,
        "--stage",
        "staging",
        "--reason",
        "dev soaked",
    ]);
    assert_eq!(approved.code, 0, "{approved}");

    // The controller's own write, as `promotion-controller run` builds it.
    let stored = env.promotion(GATE);
    let rollout = promotion_shared::rollout::identity_of(&stored)
        .expect("the spec hashes")
        .id;
    let step = Promoting {
        stage: "staging".into(),
        rollout,
    };
    let commit = promotion_shared::patch::commit(&stored, &[1], Some(&step))
        .expect("the commit patch")
        .to_string();
    let patch = |user: &str, body: &str| {
        env.kubectl(&[
            "patch",
            "clusterpromotion",
            GATE,
            "--type",
            "merge",
            "-p",
            body,
            "--as",
            user,
        ])
    };
    let forged = patch("release-manager", &commit);
    assert_eq!(forged.code, 1, "{forged}");
    assert_contains(
        &forged.stderr,
        &[
            "Error from server (Forbidden)",
            &format!("metadata.annotations[{USED_APPROVALS_ANNOTATION}]"),
            "user \"release-manager\" may not change this annotation: it records whose approval \
             promotion-controller used to pass each gate",
            &format!("only the controller may write it ({controller:?})"),
        ],
    );
    assert_eq!(
        annotation(&env.promotion(GATE), USED_APPROVALS_ANNOTATION),
        None
    );

    let admitted = patch(&controller, &commit);
    assert_eq!(admitted.code, 0, "{admitted}");
    let committed = env.promotion(GATE);
    let used = used_approvals::recorded(&committed).expect("the used approvals");
    let record = used["staging"].approval.as_ref().expect("the record used");
    assert_eq!(
        (record.user.as_str(), record.reason.as_deref()),
        ("admin", Some("dev soaked"))
    );
    assert_eq!(staging_trigger(&committed).get("approved"), None);

    // Anyone else's edit or removal of it is refused; the record stays as the controller wrote
    // it.
    let text = annotation(&committed, USED_APPROVALS_ANNOTATION).expect("the annotation");
    let someone =
        json!({"staging": {"approval": {"user": "mallory", "time": "2026-03-01T12:00:00Z"}}});
    for change in [
        format!("{USED_APPROVALS_ANNOTATION}={someone}"),
        format!("{USED_APPROVALS_ANNOTATION}-"),
    ] {
        let out = env.kubectl(&[
            "annotate",
            "--overwrite",
            "clusterpromotion",
            GATE,
            &change,
            "--as",
            "release-manager",
        ]);
        assert_eq!(out.code, 1, "{change}: {out}");
        assert_contains(
            &out.stderr,
            &["Error from server (Forbidden)", "used-approvals"],
        );
        assert_eq!(
            annotation(&env.promotion(GATE), USED_APPROVALS_ANNOTATION).as_deref(),
            Some(text.as_str())
        );
    }
}

#[test]
fn without_pod_namespace_the_service_account_namespace_file_names_the_controller() {
    // A blank POD_NAMESPACE names no namespace: the file does.
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("namespace");
    std::fs::write(&file, "file-ns\n").expect("write the namespace file");
    let file = file.to_str().expect("UTF-8 path");
    let webhook = Webhook::start_with(
        &["--service-account-namespace-file", file],
        &[("POD_NAMESPACE", " ")],
    );
    let listening = webhook
        .0
        .wait_for_log("the `listening` line", Duration::from_secs(30), |l| {
            l["message"] == "listening"
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        listening["controller_users"],
        format!("[{:?}]", controller_in("file-ns")),
        "{listening}"
    );
    assert_eq!(listening["controller_users_from"], file, "{listening}");
}

#[test]
fn without_a_namespace_or_a_controller_user_the_start_fails_with_the_fix() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("namespace");
    let bin = bins::binary("promotion-webhook").unwrap_or_else(|e| panic!("{e}"));
    let out = bins::run(
        std::process::Command::new(bin)
            .args([
                "serve",
                "--tls-cert-file",
                "/nonexistent/c",
                "--tls-key-file",
                "/nonexistent/k",
            ])
            .arg("--service-account-namespace-file")
            .arg(&missing)
            .env_remove("POD_NAMESPACE")
            .env_remove("PROMOTION_WEBHOOK_CONTROLLER_USER"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(out.stderr.lines().count(), 1, "one line: {out}");
    assert_contains(
        &out.stderr,
        &[
            "promotion-webhook: invalid configuration: cannot tell which user \
             promotion-controller runs as: --controller-user is not given, POD_NAMESPACE is not set",
            &format!("{} cannot be read", missing.display()),
            "; pass --controller-user system:serviceaccount:<namespace>:promotion-controller with \
             the namespace promotion-controller runs in, or set POD_NAMESPACE to it",
        ],
    );
}
