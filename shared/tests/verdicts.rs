//! Every example in `examples/` gets exactly the verdict in `examples/VERDICTS.md`: the same
//! error and warning paths, nothing more, nothing less.

use std::path::PathBuf;

use promotion_shared::source::parse_documents;
use promotion_shared::validation::{validate, Finding, Severity};

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn findings(file: &str) -> Vec<Finding> {
    let text = std::fs::read_to_string(examples_dir().join(file)).expect("example exists");
    let docs = parse_documents(&text).expect("example parses");
    assert_eq!(docs.len(), 1, "{file} has one document");
    validate(&docs[0].value)
}

fn summary(file: &str) -> Vec<(Severity, String, &'static str)> {
    let mut s: Vec<_> = findings(file)
        .into_iter()
        .map(|f| (f.severity, f.path, f.code))
        .collect();
    s.sort();
    s
}

#[test]
fn valid_examples_have_no_findings() {
    for file in [
        "kyverno-rollout-auto.yaml",
        "kyverno-manual-gate.yaml",
        "kyverno-failed-dev.yaml",
        "payment-four-stages.yaml",
        "kyverno-replicas-pr.yaml",
        "validation-job-cel.yaml",
    ] {
        assert_eq!(findings(file), vec![], "{file}");
    }
}

#[test]
fn cert_manager_warns_that_healthy_is_never_set() {
    assert_eq!(
        summary("cert-manager-lua-checks.yaml"),
        vec![(
            Severity::Warning,
            "spec.stages[0].trigger.auto.postDelayHealthChecks[0].script".into(),
            "lua-no-healthy"
        )]
    );
}

#[test]
fn validation_job_self_is_rejected_for_self() {
    let f = findings("validation-job-self.yaml");
    assert_eq!(
        summary("validation-job-self.yaml"),
        vec![(
            Severity::Error,
            "spec.stages[0].trigger.auto.postDelayHealthChecks[0].evaluateCEL[0].rule".into(),
            "cel-undeclared"
        )]
    );
    assert!(f[0].message.contains("`self`"), "{}", f[0].message);
    assert!(f[0].message.contains("resource"), "{}", f[0].message);
}

#[test]
fn both_triggers_is_rejected_on_the_trigger() {
    assert_eq!(
        summary("both-triggers.yaml"),
        vec![(
            Severity::Error,
            "spec.stages[1].trigger".into(),
            "trigger-both"
        )]
    );
}

#[test]
fn lua_syntax_error_reports_the_line_inside_the_script() {
    let f = findings("lua-syntax-error.yaml");
    assert_eq!(
        summary("lua-syntax-error.yaml"),
        vec![(
            Severity::Error,
            "spec.profileSpec.validateHealths[0].script".into(),
            "lua-syntax"
        )]
    );
    // `!=` is on the script's third line.
    assert_eq!(f[0].inner.map(|p| p.0), Some(3), "{:?}", f[0]);
}

#[test]
fn cel_syntax_error_reports_the_column() {
    let f = findings("cel-syntax-error.yaml");
    assert_eq!(
        summary("cel-syntax-error.yaml"),
        vec![(
            Severity::Error,
            "spec.profileSpec.validateHealths[0].evaluateCEL[0].rule".into(),
            "cel-syntax"
        )]
    );
    assert!(f[0].inner.is_some());
    assert!(f[0].message.contains("column"), "{}", f[0].message);
}

#[test]
fn an_object_with_several_errors_gets_all_of_them() {
    let text = std::fs::read_to_string(examples_dir().join("both-triggers.yaml")).unwrap();
    let mut doc = parse_documents(&text).unwrap().remove(0).value;
    doc["spec"]["stages"][0]["trigger"]["auto"]["delay"] = "1d".into();
    doc["spec"]["stages"][2]["name"] = "Production".into();
    let mut paths: Vec<_> = validate(&doc)
        .into_iter()
        .filter(|f| f.is_error())
        .map(|f| f.path)
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "spec.stages[0].trigger.auto.delay",
            "spec.stages[1].trigger",
            "spec.stages[2].name"
        ]
    );
}
