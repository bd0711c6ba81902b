//! Seeds for the bounded fuzz runs: the scripts, rules, durations and cron expressions of the
//! examples and of the parity corpora (tests/fixtures), the same material the fuzz targets' seed
//! directories hold.

use std::path::{Path, PathBuf};

use promotion_manifest::parse_documents;
use serde_json::Value;

/// The engines' parity corpora, beside the engine crates they test.
fn engine_fixtures(engine: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates")
        .join(engine)
        .join("tests/fixtures")
}

/// Every string under a key named `key` in the example manifests.
pub fn example_strings(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let dir = promotion_examples::examples_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("example");
        for doc in parse_documents(&text).expect("examples are YAML") {
            collect(&doc.value, key, &mut out);
        }
    }
    out
}

fn collect(value: &Value, key: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match v {
                    Value::String(s) if k == key => out.push(s.clone()),
                    _ => collect(v, key, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, key, out)),
        _ => {}
    }
}

/// The Lua scripts of the gopher-lua verdict corpus.
pub fn lua_scripts() -> Vec<String> {
    let dir = engine_fixtures("lua-check").join("lua");
    let corpus = std::fs::read_to_string(dir.join("gopher-lua-verdicts.jsonl")).expect("corpus");
    corpus
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|case| match (&case["script"], &case["file"]) {
            (Value::String(s), _) => Some(s.clone()),
            (_, Value::String(f)) => std::fs::read_to_string(dir.join(f)).ok(),
            _ => None,
        })
        .collect()
}

/// The CEL rules of the cel-go, cel-spec and lint-parity corpora.
pub fn cel_rules() -> Vec<String> {
    let mut out = Vec::new();
    for name in [
        "lint-parity",
        "cel-go-parser",
        "cel-go-checker",
        "cel-spec-conformance",
    ] {
        let path = engine_fixtures("cel-check")
            .join("cel")
            .join(format!("{name}.json"));
        let cases: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(path).expect("corpus")).expect("JSON");
        out.extend(
            cases
                .iter()
                .filter_map(|c| c["rule"].as_str().map(str::to_string)),
        );
    }
    out
}
