//! Every input that once stopped `cargo fuzz run admission`, kept in `fuzz/regressions/` as the
//! raw bytes libFuzzer wrote, through the harness's invariants on stable `cargo test`; and what
//! each one must get now.

use std::path::{Path, PathBuf};

use promotion_webhook::evaluation::Evaluator;
use promotion_webhook::fuzzing::{admit_and_check, fixed_now};
use promotion_webhook::metrics::Endpoint;

fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions")
}

fn regression(file: &str) -> Vec<u8> {
    let path = regressions_dir().join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

#[test]
fn every_recorded_fuzz_finding_keeps_every_invariant() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(regressions_dir())
        .expect("fuzz/regressions")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no regression inputs found");
    for path in files {
        let bytes = std::fs::read(&path).expect("regression input");
        let outcome = std::panic::catch_unwind(|| admit_and_check(&bytes));
        assert!(outcome.is_ok(), "{} breaks an invariant", path.display());
    }
}

#[test]
fn invalid_utf8_in_a_field_nobody_reads_is_not_json() {
    let body = regression("invalid-utf8-in-skipped-field.json");
    let bad = body
        .iter()
        .position(|&b| b == 0xF4)
        .expect("the input holds the byte 0xF4");
    assert_eq!(
        std::str::from_utf8(&body).map_err(|e| e.valid_up_to()),
        Err(bad),
        "the 0xF4 is the only invalid UTF-8"
    );
    let evaluator = Evaluator::default();
    for endpoint in Endpoint::ALL {
        let err = evaluator
            .review(endpoint, &body, fixed_now())
            .err()
            .unwrap_or_else(|| panic!("{endpoint:?} answered a body that is not UTF-8"));
        assert!(
            err.0
                .starts_with("request body is not valid JSON: it is not UTF-8")
                && err.0.contains(&format!("offset {bad}")),
            "{err}"
        );
    }
    assert!(!admit_and_check(&body).decoded);
}

/// Go's `encoding/json` (and the API server's `sigs.k8s.io/json`) decodes the escape of a lone
/// UTF-16 surrogate to U+FFFD rather than refusing the document; the webhook answers such a
/// body as Go would, in a field it skips and in the object it reads.
#[test]
fn a_lone_surrogate_escape_is_decoded_as_go_decodes_it() {
    let body = regression("lone-surrogate-in-skipped-field.json");
    assert!(std::str::from_utf8(&body).is_ok(), "valid UTF-8");
    assert!(
        serde_json::from_slice::<serde_json::Value>(&body).is_err(),
        "serde_json refuses it"
    );
    let evaluator = Evaluator::default();
    for endpoint in Endpoint::ALL {
        let answer = evaluator
            .review(endpoint, &body, fixed_now())
            .unwrap_or_else(|e| panic!("{endpoint:?} refused the body: {e}"));
        let answer: serde_json::Value = serde_json::from_slice(&answer.body).expect("JSON");
        assert_eq!(
            answer["response"]["allowed"], true,
            "{endpoint:?}: {answer}"
        );
    }
    assert!(admit_and_check(&body).decoded);

    let seed = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/seeds/admission/both-triggers-create.json"),
    )
    .expect("seed");
    let in_object = seed.replacen(
        "\"metadata\":{",
        "\"metadata\":{\"labels\":{\"team\":\"a\\ud800b\"},",
        1,
    );
    assert_ne!(in_object, seed, "the seed has a metadata object");
    let answer = evaluator
        .review(Endpoint::Validate, in_object.as_bytes(), fixed_now())
        .unwrap_or_else(|e| panic!("refused a lone surrogate in a label: {e}"));
    let answer: serde_json::Value = serde_json::from_slice(&answer.body).expect("JSON");
    assert!(answer["response"]["uid"].is_string(), "{answer}");
}
