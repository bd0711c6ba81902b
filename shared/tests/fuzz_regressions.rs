//! The inputs that once stopped `cargo fuzz run admission` (kept byte for byte in
//! `fuzz/regressions/`), through the engine and the `scripts` harness on stable `cargo test`.
//! The admission path runs them in webhook/tests/fuzz_regressions.rs, lint in
//! plugin/tests/fuzz_bounded_lint.rs.

use std::path::{Path, PathBuf};

use promotion_shared::fuzzing::scripts::{check, Runner};
use promotion_shared::validation::{validate, validate_update, Finding};
use serde_json::Value;

fn regression(file: &str) -> Vec<u8> {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/regressions")
        .join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn object_of(file: &str) -> Value {
    let review: Value = serde_json::from_slice(&regression(file)).expect("JSON");
    review["request"]["object"].clone()
}

fn scripts_of(object: &Value) -> Vec<String> {
    let profile = &object["spec"]["profileSpec"]["validateHealths"];
    let stage = &object["spec"]["stages"][0]["trigger"]["auto"]["postDelayHealthChecks"];
    [profile, stage]
        .iter()
        .filter_map(|checks| checks.as_array())
        .flatten()
        .filter_map(|c| c["script"].as_str().map(str::to_string))
        .collect()
}

fn lua_findings(findings: &[Finding]) -> Vec<&Finding> {
    findings
        .iter()
        .filter(|f| f.code.starts_with("lua-"))
        .collect()
}

#[test]
fn the_backquote_that_made_full_moon_panic_is_a_syntax_error() {
    let object = object_of("lua-backquote-parser-panic.json");
    let scripts = scripts_of(&object);
    assert!(scripts[0].contains('`'), "{scripts:?}");
    let findings = validate(&object);
    assert!(
        findings.iter().all(|f| f.code != "internal"),
        "{findings:?}"
    );
    let lua = lua_findings(&findings);
    assert_eq!(lua[0].code, "lua-syntax", "{lua:?}");
    assert_eq!(lua[0].path, "spec.profileSpec.validateHealths[0].script");
    for script in &scripts {
        check(script.as_bytes(), Runner::ALWAYS);
    }
}

#[test]
fn the_input_of_the_asan_report_validates_on_any_stack() {
    // ASan's report was a false positive of stack switching (fuzz/README.md): the input itself
    // is two broken scripts and a misspelt selector, and must get the same findings whether the
    // validation runs on a thread that needs a fresh stack for parsing or one that does not.
    let object = object_of("asan-stack-switch.json");
    let here = validate(&object);
    let big = std::thread::Builder::new()
        .stack_size(promotion_shared::validation::VALIDATION_STACK_BYTES)
        .spawn(move || validate(&object_of("asan-stack-switch.json")))
        .expect("thread")
        .join()
        .expect("validation");
    assert_eq!(here, big);
    assert!(here.iter().all(|f| f.code != "internal"), "{here:?}");
    let lua = lua_findings(&here);
    assert_eq!(lua.len(), 2, "{lua:?}");
    assert!(lua.iter().all(|f| f.code == "lua-syntax"), "{lua:?}");
    // UPDATE of the same object ratchets the unchanged scripts to warnings.
    let object = object_of("asan-stack-switch.json");
    let update = validate_update(&object, &object);
    assert!(
        lua_findings(&update).iter().all(|f| !f.is_error()),
        "{update:?}"
    );
    for script in scripts_of(&object) {
        check(script.as_bytes(), Runner::ALWAYS);
    }
}

#[test]
fn the_body_that_is_not_utf8_holds_one_invalid_byte() {
    // The webhook answers it 400 (webhook/tests/fuzz_regressions.rs); here, that the kept input
    // is still the one libFuzzer wrote: valid UTF-8 but for one 0xF4 in `request.kind.kind`.
    let body = regression("invalid-utf8-in-skipped-field.json");
    let bad = body.iter().position(|&b| b == 0xF4).expect("the byte 0xF4");
    assert_eq!(
        std::str::from_utf8(&body).map_err(|e| e.valid_up_to()),
        Err(bad)
    );
    let mut fixed = body.clone();
    fixed.remove(bad);
    let review: Value = serde_json::from_slice(&fixed).expect("JSON without it");
    assert_eq!(review["request"]["kind"]["kind"], "ClusterPromotion");
}
