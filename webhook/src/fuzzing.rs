//! The admission path as one function over arbitrary bytes, with its invariants checked: the
//! entry point of the cargo-fuzz target (`fuzz/`) and of the bounded run in the test suite. Not
//! used by the server.
//!
//! Invariants (a violation panics with a description, which is what fuzzers report):
//! - answering never panics, whatever the bytes;
//! - an answer is an `admission.k8s.io/v1` AdmissionReview echoing the request's uid;
//! - a patch comes only with `allowed: true`, as base64 with `patchType: JSONPatch`, and applies
//!   to the request object;
//! - the mutation is idempotent: mutating its own output again yields no patch;
//! - the validating side accepts the audit records the mutation wrote (no 403 for them).

use base64::Engine;
use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;

use crate::evaluation::{wire, Evaluator};
use crate::metrics::Endpoint;

/// Fixed, so a fuzz finding reproduces.
pub fn fixed_now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0)
        .single()
        .unwrap_or_default()
}

/// What happened to one input, for coverage statistics of the bounded run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub decoded: bool,
    pub denied: bool,
    pub patched: bool,
}

/// Run `body` through both endpoints (no governance policy configured) and check every
/// invariant.
pub fn admit_and_check(body: &[u8]) -> Outcome {
    let evaluator = &Evaluator::default();
    let now = fixed_now();
    let mut outcome = Outcome::default();
    for endpoint in Endpoint::ALL {
        let Ok(review) = evaluator.review(endpoint, body, now) else {
            continue;
        };
        outcome.decoded = true;
        let decodable = wire::go_surrogates(body);
        let request = wire::decode(&decodable).expect("the evaluator decoded it");
        let answer = parse_answer(&review.body, &request.uid);
        let response = &answer["response"];
        if response["allowed"] != true {
            outcome.denied = true;
        }
        if endpoint == Endpoint::Mutate {
            if let Some(patch) = patch_of(response) {
                outcome.patched = true;
                check_patch(evaluator, body, patch, now);
            }
        }
    }
    outcome
}

fn parse_answer(body: &[u8], uid: &str) -> Value {
    let answer: Value = serde_json::from_slice(body).expect("the answer is JSON");
    assert_eq!(answer["apiVersion"], "admission.k8s.io/v1", "{answer}");
    assert_eq!(answer["kind"], "AdmissionReview", "{answer}");
    assert_eq!(answer["response"]["uid"], uid, "uid not echoed");
    let response = &answer["response"];
    assert!(response["allowed"].is_boolean(), "{answer}");
    if response["allowed"] == false {
        let code = response["status"]["code"].as_u64().unwrap_or(0);
        assert!(code >= 400, "a denial needs a code >= 400: {answer}");
        assert!(response.get("patch").is_none(), "denial with a patch");
    }
    answer
}

fn patch_of(response: &Value) -> Option<json_patch::Patch> {
    let encoded = response.get("patch")?;
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.as_str().expect("patch is a base64 string"))
        .expect("patch is base64");
    Some(serde_json::from_slice(&bytes).expect("patch is a JSON Patch"))
}

fn check_patch(evaluator: &Evaluator, body: &[u8], patch: json_patch::Patch, now: DateTime<Utc>) {
    // The evaluator decoded this body (its lone surrogates as U+FFFD, as Go does), so it is
    // JSON with a request object.
    let mut review: Value =
        serde_json::from_slice(&wire::go_surrogates(body)).expect("the evaluator decoded it");
    let uid = review["request"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    json_patch::patch(&mut review["request"]["object"], &patch.0)
        .unwrap_or_else(|e| panic!("patch {patch:?} does not apply: {e}"));
    let body = serde_json::to_vec(&review).expect("serializable");

    let second = evaluator
        .review(Endpoint::Mutate, &body, now)
        .expect("the mutated review decodes");
    let answer = parse_answer(&second.body, &uid);
    assert_eq!(
        answer["response"]["allowed"], true,
        "mutating the mutation's output was denied: {answer}"
    );
    assert!(
        answer["response"].get("patch").is_none(),
        "mutation is not idempotent: {answer}"
    );

    let validated = evaluator
        .review(Endpoint::Validate, &body, now)
        .expect("the mutated review decodes");
    let answer = parse_answer(&validated.body, &uid);
    assert_ne!(
        answer["response"]["status"]["code"], 403,
        "validation refuses the mutation's own audit records: {answer}"
    );
}
