//! A bounded fuzz run inside the normal test suite: thousands of AdmissionReviews mutated from
//! the examples (structure-aware edits of the JSON, then byte-level damage to some) through
//! decode → validate → mutate, with the invariants of `promotion_webhook::fuzzing` checked on
//! each. Deterministic (seeded); `FUZZ_SEED` and `FUZZ_ITERATIONS` widen a local run.

mod support;

use promotion_webhook::fuzzing::admit_and_check;
use serde_json::{json, Map, Value};
use support::{examples, review, ALICE, BOB};

/// xorshift64*: small, seeded, good enough to pick edits.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const STRINGS: &[&str] = &[
    "",
    "true",
    "staging",
    "production",
    "dev",
    "5m",
    "1h30m",
    "-1s",
    "2d",
    "*/5 * * * *",
    "@daily",
    "not a cron",
    "resource.status.phase == 'Running'",
    "self.status.succeeded >= 1",
    "resource.status.phase == ",
    "((((((((((((((((((((((((1))))))))))))))))))))))))",
    "'unterminated",
    "function evaluate() return {healthy = true} end",
    "function evaluate() local x = ",
    "goto continue ::continue::",
    "audit.kubectl-promotion.dev/approvals",
    "{\"staging\":{\"user\":\"alice\",\"groups\":[],\"time\":\"2026-03-01T12:00:00Z\"}}",
    "{\"user\":\"alice\",\"time\":\"2026-03-01T12:00:00Z\"}",
    "{not json",
    "ünïcödé ✓ \u{0}",
    "In",
    "NotIn",
    "Exists",
    "Bogus",
];

const KEYS: &[&str] = &[
    "approved",
    "automaticReset",
    "manual",
    "auto",
    "trigger",
    "name",
    "stages",
    "profileSpec",
    "annotations",
    "kubectl-promotion.dev/approval-reason",
    "audit.kubectl-promotion.dev/approvals",
    "audit.kubectl-promotion.dev/spec-change",
    "audit.kubectl-promotion.dev/other",
    "deletionTimestamp",
    "script",
    "evaluateCEL",
    "rule",
    "delay",
    "promotionWindow",
    "matchExpressions",
    "status",
];

fn random_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 3 { 5 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => json!(rng.next() as i64 % 1000),
        3 => json!(rng.next() as f64 / 7.0),
        4 => json!(*rng.pick(STRINGS)),
        5 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        6 => {
            let mut map = Map::new();
            for _ in 0..rng.below(4) {
                map.insert(rng.pick(KEYS).to_string(), random_value(rng, depth + 1));
            }
            Value::Object(map)
        }
        _ => json!({"manual": {"approved": true}}),
    }
}

/// Every node of the tree by JSON pointer.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let token = k.replace('~', "~0").replace('/', "~1");
                pointers(v, format!("{at}/{token}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                pointers(v, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn edit(rng: &mut Rng, doc: &mut Value) {
    let mut all = Vec::new();
    pointers(doc, String::new(), &mut all);
    let target = rng.pick(&all).clone();
    let Some(node) = doc.pointer_mut(&target) else {
        return;
    };
    match rng.below(7) {
        0 => *node = random_value(rng, 0),
        1 => {
            if let Value::Object(map) = node {
                if !map.is_empty() {
                    let key = map
                        .keys()
                        .nth(rng.below(map.len()))
                        .cloned()
                        .unwrap_or_default();
                    map.remove(&key);
                }
            }
        }
        2 => {
            if let Value::Object(map) = node {
                map.insert(rng.pick(KEYS).to_string(), random_value(rng, 0));
            }
        }
        3 => {
            if let Value::Array(items) = node {
                if !items.is_empty() {
                    let copy = items[rng.below(items.len())].clone();
                    items.insert(rng.below(items.len() + 1), copy);
                }
            }
        }
        4 => {
            if let Value::Array(items) = node {
                if items.len() > 1 {
                    let (a, b) = (rng.below(items.len()), rng.below(items.len()));
                    items.swap(a, b);
                }
            }
        }
        5 => *node = json!(*rng.pick(STRINGS)),
        _ => {
            // Flip an approval somewhere near the gates, where the interesting logic is.
            if let Some(stages) = doc
                .pointer_mut("/request/object/spec/stages")
                .and_then(Value::as_array_mut)
            {
                if !stages.is_empty() {
                    let i = rng.below(stages.len());
                    let trigger = json!({"manual": {"approved": rng.chance(70), "automaticReset": rng.chance(80)}});
                    if let Some(stage) = stages[i].as_object_mut() {
                        stage.insert("trigger".into(), trigger);
                    }
                }
            }
        }
    }
}

fn damage(rng: &mut Rng, bytes: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        if bytes.is_empty() {
            return;
        }
        let at = rng.below(bytes.len());
        match rng.below(4) {
            0 => bytes[at] = rng.next() as u8,
            1 => bytes.truncate(at),
            2 => {
                bytes.remove(at);
            }
            _ => bytes.insert(at, *rng.pick(b"{}[]\",:0\\")),
        }
    }
}

fn seed_review(rng: &mut Rng, corpus: &[(String, Value)], i: usize) -> Value {
    let (_, object) = &corpus[i % corpus.len()];
    let (_, other) = rng.pick(corpus);
    let user = if rng.chance(50) { &ALICE } else { &BOB };
    let uid = format!("fuzz-{i}");
    match rng.below(6) {
        0 => review(&uid, "CREATE", Some(object), None, user),
        1 => review(&uid, "DELETE", None, Some(object), user),
        2 => review(&uid, "UPDATE", Some(object), Some(other), user),
        _ => {
            // UPDATE of the same object: where consumed approvals and audit records matter.
            let mut old = object.clone();
            if rng.chance(50) {
                old["metadata"]["annotations"] = json!({
                    "audit.kubectl-promotion.dev/spec-change": "{\"user\":\"alice\",\"time\":\"2026-02-01T00:00:00Z\"}"
                });
            }
            review(&uid, "UPDATE", Some(object), Some(&old), user)
        }
    }
}

#[test]
fn thousands_of_mutated_reviews_break_no_invariant() {
    let seed: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_cafe_f00d_0001);
    let iterations: usize = std::env::var("FUZZ_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3_000);
    let corpus = examples();
    let mut rng = Rng(seed);
    let (mut decoded, mut denied, mut patched) = (0, 0, 0);
    for i in 0..iterations {
        let mut doc = seed_review(&mut rng, &corpus, i);
        for _ in 0..rng.below(6) {
            edit(&mut rng, &mut doc);
        }
        let mut bytes = serde_json::to_vec(&doc).unwrap();
        if rng.chance(15) {
            damage(&mut rng, &mut bytes);
        }
        let outcome = std::panic::catch_unwind(|| admit_and_check(&bytes)).unwrap_or_else(|_| {
            panic!(
                "input {i} (seed {seed:#x}) broke an invariant:\n{}",
                String::from_utf8_lossy(&bytes)
            )
        });
        decoded += usize::from(outcome.decoded);
        denied += usize::from(outcome.denied);
        patched += usize::from(outcome.patched);
    }
    // The run must actually reach the interesting paths, not only fail to decode.
    assert!(
        decoded > iterations / 2,
        "decoded {decoded} of {iterations}"
    );
    assert!(denied > iterations / 20, "denied {denied}");
    assert!(patched > iterations / 20, "patched {patched}");
    eprintln!("{iterations} inputs: {decoded} decoded, {denied} denied, {patched} patched");
}
