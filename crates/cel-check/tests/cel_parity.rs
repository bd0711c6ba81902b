//! Differential corpus: CEL rules with the verdict cel-go gives them in Sveltos' environment
//! (`cel.NewEnv(cel.Variable("resource", cel.DynType))`; accepted when `Parse`, `Check` and
//! `Program` succeed and the checked type is `bool` or `dyn`), each taken from a source that
//! states it: `tests/fixtures/cel/*.json`, one file per source, the source named in each case.
//!
//! Every case runs through the checker (`check_rule`) at the field path a rule has inside a
//! ClusterPromotion. The checker must give cel-go's verdict and, where the source states them, cel-go's message (the first error,
//! as cel-go sorts them), its position, and the checked type. Known differences are listed in
//! [`EXCEPTIONS`], each with its reason; an exception that no longer applies fails too.

use std::path::PathBuf;

use serde::Deserialize;

use promotion_findings::{FieldPath, Finding};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    rule: String,
    go: Verdict,
    /// cel-go's message, or the part of it the source quotes.
    message: Option<String>,
    /// `line:column` of cel-go's first error.
    at: Option<String>,
    /// The checked output type, as cel-go formats it.
    #[serde(rename = "type")]
    output_type: Option<String>,
    source: String,
}

#[derive(Deserialize, PartialEq, Eq, Clone, Copy, Debug)]
#[serde(rename_all = "lowercase")]
enum Verdict {
    Accept,
    Reject,
}

/// A remaining difference from cel-go (plugin/docs/lint.md, "CEL health rules"). Unless `verdict` is
/// set, only the message, position or type may differ: the verdict must still agree.
struct Exception {
    rule: &'static str,
    verdict: bool,
    why: &'static str,
}

/// antlr4rust reports some mismatched tokens while syncing inside a loop, with the loop's whole
/// follow set, where Go's ANTLR runtime reports them at the rule that cannot go on.
const EXPECTED_SET: &str =
    "antlr4rust lists a different expected-token set than Go's ANTLR runtime";

const EXCEPTIONS: &[Exception] = &[
    Exception { rule: "TestAllTypes(){}", verdict: false, why: EXPECTED_SET },
    Exception { rule: "TestAllTypes{}()", verdict: false, why: EXPECTED_SET },
    Exception { rule: "1 + 2\n3 +", verdict: false, why: EXPECTED_SET },
    Exception { rule: "{a}", verdict: false, why: EXPECTED_SET },
    Exception { rule: "a.`b.c`()", verdict: false, why: EXPECTED_SET },
    Exception { rule: "(a){}", verdict: false, why: EXPECTED_SET },
    Exception { rule: "(a.b){}", verdict: false, why: EXPECTED_SET },
    Exception { rule: "(a).b{}", verdict: false, why: EXPECTED_SET },
    Exception { rule: "a.`b-c`{}", verdict: false, why: EXPECTED_SET },
    Exception {
        rule: "x{?.",
        verdict: false,
        why: "the cel crate checks the field name before the `?`, so only the second of cel-go's two errors is reported",
    },
];

const RULE_PATH: &str = "spec.profileSpec.validateHealths[0].evaluateCEL[0].rule";

fn judged(rule: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    cel_check::check_rule(rule, &FieldPath::root(RULE_PATH), &mut out);
    out
}

fn corpus() -> Vec<Case> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cel");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).expect("corpus file");
            serde_json::from_str::<Vec<Case>>(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()))
        })
        .collect()
}

enum Disagreement {
    Verdict(String),
    Detail(String),
}

/// What is wrong with the engine's findings for `case`, if anything.
fn disagreement(case: &Case, findings: &[Finding]) -> Option<Disagreement> {
    detail(case, findings).map(|d| {
        if d.starts_with("verdict") {
            Disagreement::Verdict(d)
        } else {
            Disagreement::Detail(d)
        }
    })
}

fn detail(case: &Case, findings: &[Finding]) -> Option<String> {
    let errors: Vec<&Finding> = findings.iter().filter(|f| f.is_error()).collect();
    let verdict = if errors.is_empty() {
        Verdict::Accept
    } else {
        Verdict::Reject
    };
    if verdict != case.go {
        return Some(format!(
            "verdict {verdict:?}, cel-go {:?}: {findings:?}",
            case.go
        ));
    }
    let first = errors.first()?;
    if let Some(message) = &case.message {
        if !first.message.contains(message.as_str()) {
            return Some(format!("message {:?}, cel-go {message:?}", first.message));
        }
    }
    if let Some(at) = &case.at {
        let got = first.inner.map(|(l, c)| format!("{l}:{c}"));
        if got.as_deref() != Some(at.as_str()) {
            return Some(format!("position {got:?}, cel-go {at}"));
        }
    }
    if let Some(t) = &case.output_type {
        if case.go == Verdict::Reject && !first.message.contains(&format!("'{t}'")) {
            return Some(format!("type: {:?}, cel-go '{t}'", first.message));
        }
    }
    None
}

#[test]
fn the_engine_judges_cel_rules_as_cel_go() {
    let cases = corpus();
    assert!(cases.len() > 150, "corpus has {} cases", cases.len());
    let mut failures = Vec::new();
    let mut excused = Vec::new();
    for case in &cases {
        let findings = judged(&case.rule);
        let exception = EXCEPTIONS.iter().find(|e| e.rule == case.rule);
        match (disagreement(case, &findings), exception) {
            (Some(Disagreement::Verdict(why)), Some(e)) if !e.verdict => {
                failures.push(format!("{:?} ({}): {why}", case.rule, case.source))
            }
            (Some(_), Some(_)) => excused.push(case.rule.as_str()),
            (Some(Disagreement::Verdict(why) | Disagreement::Detail(why)), None) => {
                failures.push(format!("{:?} ({}): {why}", case.rule, case.source))
            }
            (None, Some(_)) => failures.push(format!(
                "{:?} agrees with cel-go now: drop it from EXCEPTIONS",
                case.rule
            )),
            (None, None) => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases disagree with cel-go:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert_eq!(
        excused.len(),
        EXCEPTIONS.len(),
        "every exception is in the corpus"
    );
    for e in EXCEPTIONS {
        assert!(e.why.len() > 20, "{:?}: say why it is excused", e.rule);
    }
}

#[test]
fn the_sources_are_named() {
    for case in corpus() {
        assert!(
            case.source.contains("cel-go")
                || case.source.contains("cel-spec")
                || case.source.contains("lint-parity"),
            "{:?} has no source",
            case.rule
        );
        assert!(
            case.go == Verdict::Reject || case.message.is_none(),
            "{:?}: an accepted rule has no message",
            case.rule
        );
    }
}
