//! Whatever arrives — arbitrary JSON, mutated examples, arbitrary text as YAML — the engine
//! and lint's CRD schema pass answer with findings and never panic or overflow the stack.

use std::path::PathBuf;

use proptest::prelude::*;
use serde_json::{json, Value};

use crd_schema::Crd;
use promotion_manifest::parse_documents;
use promotion_shared::validation::lint;
use promotion_shared::validation::{validate, validate_update};

fn example_values() -> Vec<Value> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.extend(parse_documents(&text).unwrap().into_iter().map(|d| d.value));
        }
    }
    assert!(out.len() >= 11);
    out
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,40}".prop_map(Value::String),
        prop_oneof![
            Just("function evaluate() return {healthy = true} end"),
            Just("resource.status.phase == 'Running'"),
            Just("self.x"),
            Just("(((("),
            Just("5m"),
            Just("0 9 * * 1-5"),
            Just("In"),
            Just("auto"),
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    let keys = prop_oneof![
        Just("spec".to_string()),
        Just("stages".to_string()),
        Just("name".to_string()),
        Just("trigger".to_string()),
        Just("auto".to_string()),
        Just("manual".to_string()),
        Just("delay".to_string()),
        Just("clusterSelector".to_string()),
        Just("matchExpressions".to_string()),
        Just("matchLabels".to_string()),
        Just("profileSpec".to_string()),
        Just("validateHealths".to_string()),
        Just("postDelayHealthChecks".to_string()),
        Just("script".to_string()),
        Just("evaluateCEL".to_string()),
        Just("rule".to_string()),
        Just("promotionWindow".to_string()),
        Just("metadata".to_string()),
        "[a-zA-Z]{1,8}",
    ];
    leaf.prop_recursive(6, 64, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(keys.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Replace the node at a random position in `v` with `replacement`.
fn graft(v: &mut Value, mut choice: usize, replacement: Value) {
    let mut node = v;
    loop {
        let children = match node {
            Value::Object(m) => m.len(),
            Value::Array(a) => a.len(),
            _ => 0,
        };
        if children == 0 || choice.is_multiple_of(4) {
            *node = replacement;
            return;
        }
        let pick = choice % children;
        choice /= 3;
        node = match node {
            Value::Object(m) => m.values_mut().nth(pick).unwrap(),
            Value::Array(a) => &mut a[pick],
            _ => unreachable!(),
        };
    }
}

proptest! {
    #![proptest_config(promotion_examples::proptest_config::with_cases(400))]

    #[test]
    fn arbitrary_json_never_panics(v in arb_json()) {
        let _ = validate(&v);
        let wrapped = json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterPromotion",
            "metadata": {"name": "x"}, "spec": v});
        let _ = validate(&wrapped);
        let _ = lint(Crd::embedded(), &wrapped);
    }

    #[test]
    fn mutated_examples_never_panic(idx in 0usize..11, choice in any::<usize>(), graft_in in arb_json()) {
        let examples = example_values();
        let original = examples[idx % examples.len()].clone();
        let mut v = original.clone();
        graft(&mut v, choice, graft_in);
        let _ = validate(&v);
        let _ = validate_update(&original, &v);
        let _ = lint(Crd::embedded(), &v);
    }

    #[test]
    fn arbitrary_text_as_yaml_never_panics(text in "(?s).{0,400}") {
        if let Ok(docs) = parse_documents(&text) {
            for d in docs {
                let _ = validate(&d.value);
                let _ = d.locate("spec.stages[0].trigger", Some((2, 3)));
            }
        }
    }
}

/// Inputs at the size and nesting limits, each with the one finding it must get at the field
/// it was put in (`None`: the input is valid and gets no finding there).
fn adversarial_cases() -> Vec<(&'static str, Value, &'static str, Option<&'static str>)> {
    let base = example_values()
        .into_iter()
        .find(|v| v["metadata"]["name"] == "cel-broken")
        .expect("examples/cel-syntax-error.yaml");
    let rule_path = "spec.profileSpec.validateHealths[0].evaluateCEL[0].rule";
    let script_path = "spec.profileSpec.validateHealths[0].script";
    let with_rule = |rule: String| {
        let mut v = base.clone();
        v["spec"]["profileSpec"]["validateHealths"][0]["evaluateCEL"][0]["rule"] =
            Value::String(rule);
        v
    };
    let with_script = |script: String| {
        let mut v = base.clone();
        let check = &mut v["spec"]["profileSpec"]["validateHealths"][0];
        check.as_object_mut().unwrap().remove("evaluateCEL");
        check["script"] = Value::String(script);
        v
    };
    vec![
        (
            "a CEL rule over the size cap",
            with_rule("resource.a == 1 && ".repeat(60_000) + "true"),
            rule_path,
            Some("cel-too-large"),
        ),
        (
            "10,000 nested parentheses in CEL",
            with_rule(format!("{}true{}", "(".repeat(10_000), ")".repeat(10_000))),
            rule_path,
            Some("cel-too-large"),
        ),
        (
            "4,000 nested parentheses in CEL (under the size cap)",
            with_rule(format!("{}true{}", "(".repeat(4_000), ")".repeat(4_000))),
            rule_path,
            Some("cel-syntax"),
        ),
        (
            "30,000 nested # in Lua",
            with_script(format!(
                "function evaluate() return {}{{healthy=true}} end",
                "#".repeat(30_000)
            )),
            script_path,
            Some("lua-too-deep"),
        ),
        (
            "150 right-associative concatenations in Lua (valid)",
            with_script(format!(
                "function evaluate() return {{healthy = 1 {} }} end",
                ".. 1 ".repeat(150)
            )),
            script_path,
            None,
        ),
        (
            "300 right-associative concatenations in Lua (over the checker's depth cap)",
            with_script(format!(
                "function evaluate() return {{healthy = 1 {} }} end",
                ".. 1 ".repeat(300)
            )),
            script_path,
            Some("lua-too-deep"),
        ),
        (
            "a Lua script over the size cap",
            with_script(format!(
                "function evaluate() return {{healthy = true}} end\n{}",
                "-- padding\n".repeat(7_000)
            )),
            script_path,
            Some("lua-too-large"),
        ),
    ]
}

fn check_adversarial() {
    for (what, object, path, expected) in adversarial_cases() {
        let at_path: Vec<&'static str> = validate(&object)
            .into_iter()
            .filter(|f| f.path == path)
            .map(|f| f.code)
            .collect();
        assert_eq!(at_path, expected.into_iter().collect::<Vec<_>>(), "{what}");
    }
}

#[test]
fn adversarial_sizes_are_findings() {
    check_adversarial();
}

#[test]
fn deep_yaml_is_refused_not_crashed() {
    let deep = format!("spec: {}1{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(parse_documents(&deep).is_err());
    let deep_map = "a:\n".to_string()
        + &(1..5000)
            .map(|i| format!("{}a:\n", " ".repeat(i)))
            .collect::<String>();
    assert!(parse_documents(&deep_map).is_err());
}

#[test]
fn validation_runs_on_a_small_stack_thread() {
    // Tokio workers have 2 MiB; the engine must not rely on the caller's stack, even for the
    // deepest inputs it accepts or refuses.
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(check_adversarial)
        .unwrap();
    if let Err(panic) = handle.join() {
        std::panic::resume_unwind(panic);
    }
}
