//! Every example in `examples/` gets exactly the verdict in `examples/VERDICTS.md`: the same
//! error and warning paths, nothing more, nothing less.

use promotion_examples::examples_dir;
use promotion_manifest::parse_documents;
use promotion_shared::validation::{validate, Finding};

fn findings(file: &str) -> Vec<Finding> {
    let text = std::fs::read_to_string(examples_dir().join(file)).expect("example exists");
    let docs = parse_documents(&text).expect("example parses");
    assert_eq!(docs.len(), 1, "{file} has one document");
    validate(&docs[0].value)
}

fn codes(file: &str) -> Vec<&'static str> {
    findings(file).into_iter().map(|f| f.code).collect()
}

/// Every example gets exactly the findings `examples/VERDICTS.md` lists: the same severities at
/// the same paths, nothing more, nothing less.
#[test]
fn every_example_gets_exactly_its_verdict() {
    for verdict in promotion_examples::verdicts() {
        let mut got: Vec<(String, String)> = findings(&verdict.file)
            .into_iter()
            .map(|f| (f.severity.to_string(), f.path))
            .collect();
        got.sort();
        let expected: Vec<(String, String)> = verdict
            .findings
            .iter()
            .map(|f| (f.severity.to_string(), f.path.clone()))
            .collect();
        assert_eq!(got, expected, "{}: {}", verdict.file, verdict.note);
        assert_eq!(
            got.iter().all(|(s, _)| s != "error"),
            verdict.valid,
            "{}",
            verdict.file
        );
    }
}

// What the table says in words, checked on the codes and messages.

#[test]
fn cert_manager_warns_that_healthy_is_never_set() {
    assert_eq!(codes("cert-manager-lua-checks.yaml"), ["lua-no-healthy"]);
}

#[test]
fn validation_job_self_is_rejected_for_self() {
    let f = findings("validation-job-self.yaml");
    assert_eq!(codes("validation-job-self.yaml"), ["cel-undeclared"]);
    assert!(f[0].message.contains("`self`"), "{}", f[0].message);
    assert!(f[0].message.contains("resource"), "{}", f[0].message);
}

#[test]
fn both_triggers_is_rejected_on_the_trigger() {
    assert_eq!(codes("both-triggers.yaml"), ["trigger-both"]);
}

#[test]
fn lua_syntax_error_reports_the_line_inside_the_script() {
    let f = findings("lua-syntax-error.yaml");
    assert_eq!(f[0].code, "lua-syntax");
    // `!=` is on the script's third line.
    assert_eq!(f[0].inner.map(|p| p.0), Some(3), "{:?}", f[0]);
}

#[test]
fn cel_syntax_error_reports_the_column() {
    let f = findings("cel-syntax-error.yaml");
    assert_eq!(codes("cel-syntax-error.yaml"), ["cel-syntax"]);
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
