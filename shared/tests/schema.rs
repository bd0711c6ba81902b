//! The structural-schema validator against answers recorded from a real kube-apiserver (v1.32,
//! `kubectl apply --dry-run=server`):
//! - `fixtures/schema/widget-crd.yaml`, a CRD with one of each keyword: for each, a value the
//!   server accepts and one it refuses, with its exact message;
//! - `fixtures/mistakes/*.yaml`, ClusterPromotions with the mistakes people make, each with the
//!   server's answer (`# server:`) and what lint reports (`# lint:`): the server's answer is
//!   reproduced line for line, and lint fails exactly where the server does, on the same fields.
//!
//! Also: every example and an object populated from the whole CRD pass the schema.

use std::path::PathBuf;

use crd_schema::{Crd, CreateOutcome, RuleMode};
use promotion_manifest::parse_documents;
use promotion_shared::validation::lint;
use serde_json::{json, Value};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn widget_crd() -> Crd {
    let text = std::fs::read_to_string(fixtures().join("schema/widget-crd.yaml")).unwrap();
    let docs = parse_documents(&text).unwrap();
    Crd::from_value(&docs[0].value, "widget-crd.yaml").unwrap()
}

/// The server's answer to creating a Widget with this spec, as lines.
fn widget(spec: Value) -> Vec<String> {
    let crd = widget_crd();
    let object = json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec
    });
    answer(crd.versions[0].create(&object))
}

fn answer(outcome: CreateOutcome) -> Vec<String> {
    match outcome {
        CreateOutcome::Stored(_) => vec!["accepted".to_string()],
        CreateOutcome::UnknownFields(u) => u,
        CreateOutcome::Invalid(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

const SKIPPED: &str = "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

#[test]
fn type_format_and_nullable() {
    assert_eq!(widget(json!({"count": 1})), ["accepted"]);
    assert_eq!(
        widget(json!({"count": 1.0})),
        ["accepted"],
        "1.0 is an integer"
    );
    assert_eq!(
        widget(json!({"count": 1, "nullableField": null, "free": {"x": {"y": 1}}})),
        ["accepted"]
    );
    assert_eq!(
        widget(json!({"count": 1.5})),
        [
            "spec.count: Invalid value: \"number\": spec.count in body must be of type integer: \"number\"",
            "spec.count: Invalid value: 1.5: spec.count in body should be a multiple of 1",
            SKIPPED
        ]
    );
    assert_eq!(
        widget(json!({"count": 1, "when": "2026-02-16T07:29:41Z"})),
        ["accepted"]
    );
    assert_eq!(
        widget(json!({"count": 1, "when": "yesterday"})),
        [
            "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\"",
            SKIPPED
        ]
    );
}

#[test]
fn numeric_bounds() {
    assert_eq!(widget(json!({"count": 5, "ratio": 0.5})), ["accepted"]);
    assert_eq!(
        widget(json!({"count": 100, "ratio": 0})),
        [
            "spec.count: Invalid value: 100: spec.count in body should be less than 100",
            "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0",
            // Not blocking: the rules still run.
            "spec.count: Invalid value: \"object\": count too big",
        ]
    );
}

#[test]
fn item_and_property_counts() {
    assert_eq!(
        widget(json!({"count": 1, "tags": ["a", "b"]})),
        ["accepted"]
    );
    assert_eq!(
        widget(json!({"count": 1, "tags": ["a", "b", "c"]})),
        ["spec.tags: Too many: 3: must have at most 2 items", SKIPPED]
    );
    assert_eq!(
        widget(json!({"count": 1, "labels": {"a": "x"}})),
        ["accepted"]
    );
    assert_eq!(
        widget(json!({"count": 1, "labels": {"a": "x", "b": true, "c": "z"}})),
        [
            "spec.labels: Too many: 3: must have at most 2 items",
            "spec.labels.b: Invalid value: \"boolean\": spec.labels.b in body must be of type string: \"boolean\"",
            SKIPPED
        ]
    );
    assert_eq!(
        widget(json!({"count": 1, "labels": {}})),
        ["spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties"]
    );
}

#[test]
fn list_sets_and_maps() {
    assert_eq!(
        widget(json!({"count": 1, "tags": ["a", "a"]})),
        ["spec.tags[1]: Duplicate value: \"a\""]
    );
    assert_eq!(
        widget(json!({"count": 1, "ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}]})),
        ["accepted"]
    );
    // Defaulting runs first: the first port gets protocol TCP and the second duplicates it.
    assert_eq!(
        widget(json!({"count": 1, "ports": [
            {"port": 80}, {"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}
        ]})),
        ["spec.ports[1]: Duplicate value: map[string]interface {}{\"port\":80, \"protocol\":\"TCP\"}"]
    );
    assert_eq!(
        widget(json!({"count": 1, "ports": [{"protocol": "TCP"}, {"protocol": "TCP"}]})),
        [
            "spec.ports[0].port: Required value",
            "spec.ports[1].port: Required value",
            "spec.ports[1]: Duplicate value: map[string]interface {}{\"protocol\":\"TCP\"}",
            SKIPPED
        ]
    );
    assert_eq!(
        widget(json!({"count": 11, "ratio": "x", "tags": ["a", "a"]})),
        [
            "spec.ratio: Invalid value: \"string\": spec.ratio in body must be of type number: \"string\"",
            "spec.tags[1]: Duplicate value: \"a\"",
            SKIPPED
        ]
    );
}

#[test]
fn cel_rules_with_field_path_message_expression_and_reason() {
    assert_eq!(
        widget(json!({"count": 11})),
        ["spec.count: Invalid value: \"object\": count too big"]
    );
    assert_eq!(
        widget(json!({"count": 7})),
        ["spec: Invalid value: \"object\": count is unlucky"]
    );
    assert_eq!(
        widget(json!({"count": 8})),
        ["spec: Forbidden: eight is forbidden"]
    );
    assert_eq!(
        widget(json!({"count": 9})),
        ["spec: Invalid value: \"object\": failed rule: self.count != 9"]
    );
}

#[test]
fn cel_rules_see_escaped_property_names_and_raw_map_keys() {
    assert_eq!(
        widget(json!({"count": 1, "labels": {"a-b": "y"}, "dashed": {"my-key": "y"}})),
        ["accepted"]
    );
    assert_eq!(
        widget(json!({"count": 1, "labels": {"a-b": "x"}, "dashed": {"my-key": "x"}})),
        [
            "spec: Invalid value: \"object\": a-b must not be x",
            "spec: Invalid value: \"object\": dashed my-key must not be x"
        ]
    );
}

#[test]
fn exhaustive_mode_runs_the_rules_a_blocking_error_elsewhere_would_skip() {
    let crd = Crd::embedded();
    let schema = &crd
        .version("config.projectsveltos.io/v1beta1")
        .unwrap()
        .schema;
    let object = json!({"spec": {
        "profileSpec": {"syncMode": "Continous"},
        "stages": [{"name": "a", "trigger": {}}]
    }});
    let messages = |mode| -> Vec<String> {
        schema
            .violations(&object, mode)
            .iter()
            .map(|v| v.error.to_string())
            .collect()
    };
    let enum_error = "spec.profileSpec.syncMode: Unsupported value: \"Continous\": supported values: \"OneTime\", \"Continuous\", \"ContinuousWithDriftDetection\", \"DryRun\"";
    let rule_error = "spec.stages[0].trigger: Invalid value: \"object\": A trigger must have either a 'manual' or 'auto' field, but not both.";
    assert_eq!(messages(RuleMode::Server), [enum_error, SKIPPED]);
    assert_eq!(messages(RuleMode::Exhaustive), [enum_error, rule_error]);

    // A rule over a node with a blocking error inside is not run: its verdict would be about a
    // value the user still has to fix.
    let crd = widget_crd();
    let schema = &crd.versions[0].schema;
    let object = json!({"spec": {"count": 11, "tags": ["a", "b", "c"]}});
    let all: Vec<String> = schema
        .violations(&object, RuleMode::Exhaustive)
        .iter()
        .map(|v| v.error.to_string())
        .collect();
    assert_eq!(all, ["spec.tags: Too many: 3: must have at most 2 items"]);
    // A non-blocking one does not stop them, as on the API server.
    let object = json!({"spec": {"count": 11, "labels": {}}});
    let all: Vec<String> = schema
        .violations(&object, RuleMode::Exhaustive)
        .iter()
        .map(|v| v.error.to_string())
        .collect();
    assert_eq!(
        all,
        [
            "spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties",
            "spec.count: Invalid value: \"object\": count too big"
        ]
    );
}

/// One recorded mistake.
struct Mistake {
    file: String,
    object: Value,
    server: Vec<String>,
    lint: Vec<(String, String, String)>,
}

fn mistakes() -> Vec<Mistake> {
    let dir = fixtures().join("mistakes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let tagged = |tag: &str| -> Vec<String> {
                text.lines()
                    .filter_map(|l| l.strip_prefix(tag))
                    .map(str::to_string)
                    .collect()
            };
            let lint = tagged("# lint: ")
                .iter()
                .map(|l| {
                    let mut parts = l.splitn(3, ' ');
                    let mut next = || parts.next().unwrap_or_default().to_string();
                    (next(), next(), next())
                })
                .collect();
            Mistake {
                file: path.file_name().unwrap().to_string_lossy().into_owned(),
                object: parse_documents(&text).unwrap().remove(0).value,
                server: tagged("# server: "),
                lint,
            }
        })
        .collect()
}

#[test]
fn the_recorded_server_answers_are_reproduced_line_for_line() {
    let crd = Crd::embedded();
    let version = crd.version("config.projectsveltos.io/v1beta1").unwrap();
    let all = mistakes();
    assert!(all.len() >= 24, "the mistake corpus is complete");
    for m in all {
        assert_eq!(answer(version.create(&m.object)), m.server, "{}", m.file);
    }
}

#[test]
fn lint_fails_exactly_where_the_server_does_on_the_same_fields() {
    let crd = Crd::embedded();
    for m in mistakes() {
        let findings = lint(crd, &m.object);
        let got: Vec<(String, String, String)> = findings
            .iter()
            .map(|f| (f.severity.to_string(), f.code.to_string(), f.path.clone()))
            .collect();
        let mut sorted_got = got.clone();
        sorted_got.sort();
        let mut expected = m.lint.clone();
        expected.sort();
        assert_eq!(sorted_got, expected, "{}", m.file);

        let accepted = m.server == ["accepted"];
        let errors: Vec<&str> = findings
            .iter()
            .filter(|f| f.is_error())
            .map(|f| f.path.as_str())
            .collect();
        assert_eq!(errors.is_empty(), accepted, "{}: {errors:?}", m.file);
        for line in &m.server {
            let field = match line.strip_prefix("unknown field ") {
                Some(quoted) => quoted.trim_matches('"'),
                None => line.split(": ").next().unwrap_or_default(),
            };
            if field == "<nil>" || line == "accepted" {
                continue;
            }
            assert!(
                errors.contains(&field),
                "{}: the server names {field}, lint reports {errors:?}",
                m.file
            );
        }
    }
}

#[test]
fn every_example_passes_the_schema_or_fails_only_where_its_verdict_says() {
    let crd = Crd::embedded();
    for verdict in promotion_examples::verdicts() {
        let docs = parse_documents(&verdict.manifest()).unwrap();
        let found = crd_schema::check(crd, &docs[0].value).into_findings();
        for f in &found {
            assert!(
                verdict.errors().contains(&f.path.as_str()),
                "{}: the schema reports {f}, which VERDICTS.md does not list",
                verdict.file
            );
        }
    }
}

/// A value for every field the CRD declares, chosen to satisfy its keywords: the first enum
/// member, the minimum, a string matching the pattern.
fn populate(schema: &Value, depth: usize) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return json!("10%");
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let mut out = serde_json::Map::new();
            if depth < 14 {
                for (k, sub) in schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    out.insert(k.clone(), populate(sub, depth + 1));
                }
            }
            if let Some(extra) = schema.get("additionalProperties").filter(|e| e.is_object()) {
                out.insert("some-key".into(), populate(extra, depth + 1));
            }
            Value::Object(out)
        }
        Some("array") => json!([populate(
            schema.get("items").unwrap_or(&json!({})),
            depth + 1
        )]),
        Some("string") => {
            match (
                schema.get("format").and_then(Value::as_str),
                schema.get("pattern").and_then(Value::as_str),
            ) {
                (Some("date-time"), _) => json!("2026-02-16T07:29:41Z"),
                (Some("byte"), _) => json!("aGVsbG8="),
                (_, Some("^(https?|oci)://")) => json!("https://example.com/charts"),
                (_, Some(other)) => panic!("no sample for pattern {other}"),
                _ => json!("s"),
            }
        }
        Some("integer") => json!(schema.get("minimum").and_then(Value::as_i64).unwrap_or(7)),
        Some("number") => json!(1.5),
        Some("boolean") => json!(true),
        _ => json!({"free": "form"}),
    }
}

/// Resolve what the CRD's CEL rules forbid in a fully populated object: one trigger kind, one
/// of `kind`/`remoteURL`, and no `jobCheck` beside a script.
fn satisfy_rules(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.contains_key("manual") && map.contains_key("auto") {
                map.remove("manual");
            }
            if map.contains_key("remoteURL") && map.contains_key("kind") {
                map.remove("remoteURL");
            }
            if map.contains_key("jobCheck") && map.contains_key("script") {
                map.remove("jobCheck");
            }
            map.values_mut().for_each(satisfy_rules);
        }
        Value::Array(items) => items.iter_mut().for_each(satisfy_rules),
        _ => {}
    }
}

#[test]
fn an_object_populated_from_the_whole_crd_passes() {
    let crd = Crd::embedded();
    let version = crd.version("config.projectsveltos.io/v1beta1").unwrap();
    let mut object = populate(version.schema.root(), 0);
    satisfy_rules(&mut object);
    object["apiVersion"] = json!("config.projectsveltos.io/v1beta1");
    object["kind"] = json!("ClusterPromotion");
    object["metadata"] = json!({"name": "full", "labels": {"a": "b"}, "annotations": {"c": "d"}});
    // Sanity: the walk reached deep fields.
    assert!(object
        .pointer("/spec/stages/0/trigger/auto/postDelayHealthChecks/0/labelFilters/0/operation")
        .is_some());
    match version.create(&object) {
        CreateOutcome::Stored(_) => {}
        other => panic!("{other:?}"),
    }
    let schema_errors: Vec<String> = crd_schema::check(crd, &object)
        .into_findings()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(schema_errors.is_empty(), "{schema_errors:#?}");
}

#[test]
fn the_stand_in_defaults() {
    let crd = Crd::embedded();
    let schema = &crd
        .version("config.projectsveltos.io/v1beta1")
        .unwrap()
        .schema;
    let mut obj = json!({
        "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterPromotion",
        "metadata": {"name": "p"},
        "spec": {"profileSpec": {}, "stages": [{"name": "a", "trigger": {"manual": {}}}, {"name": "b"}]}
    });
    schema.default(&mut obj);
    assert_eq!(
        obj.pointer("/spec/stages/0/trigger/manual/automaticReset"),
        Some(&json!(true))
    );
    assert_eq!(
        obj.pointer("/spec/profileSpec/syncMode"),
        Some(&json!("Continuous"))
    );
    assert_eq!(obj.pointer("/spec/profileSpec/tier"), Some(&json!(100)));
    assert_eq!(obj.pointer("/spec/stages/1/trigger"), None);
}
