//! Whatever a health script contains, the Lua checker answers with findings: no panic (the
//! engine would turn one into an `internal` finding), no stack overflow (which would abort).

use std::path::PathBuf;
use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::{json, Value};

use promotion_shared::validation::{validate, Finding};

const SCRIPT_PATH: &str = "spec.profileSpec.validateHealths[0].script";
const LUA_CODES: [&str; 5] = [
    "lua-syntax",
    "lua-no-evaluate",
    "lua-no-healthy",
    "lua-too-deep",
    "lua-too-large",
];

fn promotion(script: &str) -> Value {
    json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": "lua"},
        "spec": {
            "profileSpec": {
                "helmCharts": [{"repositoryURL": "https://charts.example.com", "repositoryName": "x",
                                "chartName": "x/y", "chartVersion": "1.0.0", "releaseName": "y",
                                "releaseNamespace": "y"}],
                "validateHealths": [{"name": "h", "featureID": "Helm", "group": "apps",
                                     "version": "v1", "kind": "Deployment", "script": script}]
            },
            "stages": [{"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}}]
        }
    })
}

/// The script's findings, after checking that nothing else went wrong.
fn judge(script: &str) -> Vec<Finding> {
    let findings = validate(&promotion(script));
    assert!(
        findings.iter().all(|f| f.code != "internal"),
        "{script:?}: {findings:?}"
    );
    let lua: Vec<Finding> = findings
        .into_iter()
        .filter(|f| f.path == SCRIPT_PATH)
        .collect();
    for f in &lua {
        assert!(LUA_CODES.contains(&f.code), "{script:?}: {f:?}");
        if f.code == "lua-syntax" {
            assert!(
                f.message.starts_with("Lua syntax error at line ")
                    || f.message.starts_with("Lua compile error at line "),
                "{f:?}"
            );
            assert!(f.inner.is_some(), "{f:?}");
        }
    }
    lua
}

fn corpus_scripts() -> &'static [String] {
    static SCRIPTS: OnceLock<Vec<String>> = OnceLock::new();
    SCRIPTS.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../crates/lua-check/tests/fixtures/lua");
        let text = std::fs::read_to_string(dir.join("gopher-lua-verdicts.jsonl")).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|case| match case["file"].as_str() {
                Some(f) => std::fs::read_to_string(dir.join(f)).unwrap(),
                None => case["script"].as_str().unwrap_or_default().to_string(),
            })
            .collect()
    })
}

const TOKENS: &[&str] = &[
    "function", "evaluate", "local", "end", "if", "then", "else", "elseif", "for", "in", "do",
    "while", "repeat", "until", "return", "break", "goto", "and", "or", "not", "nil", "true",
    "false", "x", "obj", "hs", "healthy", "=", "==", "~=", "<", ">=", "+", "-", "*", "/", "%", "^",
    "#", "..", "...", ".", ":", "::", ",", ";", "(", ")", "{", "}", "[", "]", "1", "0x1F", "1e",
    ".5", "'s'", "\"s\\n\"", "[[long]]", "--c\n", "--[[c]]", "\n", "!", "`", "~", "[=[", "'", "\"",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec((0..TOKENS.len(), any::<bool>()), 0..120).prop_map(|picks| {
        picks
            .into_iter()
            .map(|(i, space)| format!("{}{}", TOKENS[i], if space { " " } else { "" }))
            .collect()
    })
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize, usize),
    Duplicate(usize, usize),
    Insert(usize, usize),
    Swap(usize, usize),
}

fn mutate(script: &str, mutations: &[Mutation]) -> String {
    let mut bytes = script.as_bytes().to_vec();
    for m in mutations {
        let len = bytes.len().max(1);
        match *m {
            Mutation::Delete(at, n) => {
                let at = at % len;
                let end = (at + n % 16).min(bytes.len());
                bytes.drain(at.min(end)..end);
            }
            Mutation::Duplicate(at, n) => {
                let at = at % len;
                let end = (at + n % 32).min(bytes.len());
                let piece = bytes[at.min(end)..end].to_vec();
                bytes.splice(at.min(end)..at.min(end), piece);
            }
            Mutation::Insert(at, token) => {
                let at = (at % len).min(bytes.len());
                let t = TOKENS[token % TOKENS.len()].as_bytes().to_vec();
                bytes.splice(at..at, t);
            }
            Mutation::Swap(a, b) => {
                let n = bytes.len();
                if n > 1 {
                    bytes.swap(a % n, b % n);
                }
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, n)| Mutation::Duplicate(a, n)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, t)| Mutation::Insert(a, t)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
    ]
}

proptest! {
    #![proptest_config(promotion_examples::proptest_config::with_cases(2000))]

    #[test]
    fn random_bytes_are_judged(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        judge(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn token_soup_is_judged(script in token_soup()) {
        judge(&script);
    }

    #[test]
    fn mutated_corpus_scripts_are_judged(
        pick in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let script = pick.get(corpus_scripts());
        judge(&mutate(script, &mutations));
    }
}

#[test]
fn every_corpus_script_is_judged() {
    for script in corpus_scripts() {
        judge(script);
    }
}

#[test]
fn the_backquote_script_that_stopped_the_fuzzer_is_a_finding() {
    // Copied from the fuzzing session's crash inputs (it made full_moon's lexer panic).
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/lua-check/tests/fixtures/lua/fuzz/lua-backquote-parser-panic.json");
    let review: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let object = &review["request"]["object"];
    let script = object["spec"]["profileSpec"]["validateHealths"][0]["script"]
        .as_str()
        .unwrap();
    assert!(script.contains('`'));
    let findings = validate(object);
    assert!(
        findings.iter().all(|f| f.code != "internal"),
        "{findings:?}"
    );
    let lua: Vec<&Finding> = findings.iter().filter(|f| f.path == SCRIPT_PATH).collect();
    assert_eq!(lua[0].code, "lua-syntax");
    assert_eq!(
        lua[0].message,
        "Lua syntax error at line 1, column 17: near 'evaluate': parse error"
    );
    // The backquote's line does not start with a statement keyword, so it belongs with the
    // first error: gopher-lua stops at line 1, and nothing later is independent of it.
    assert_eq!(lua.len(), 1, "{lua:?}");
}
