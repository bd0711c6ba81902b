//! Whether a review is cheap enough to answer on the request's own async task.
//!
//! Answering costs two very different amounts. Parsing a Lua script or a CEL rule the engine has
//! not judged before is the expensive part: measured on the 2-core benchmark machine, a 2.5 KB
//! review with unseen CEL rules took 0.45–0.9 ms, a 16 KB one up to 8.7 ms, a 256 KB one 0.26 s.
//! Everything else, texts the engine's verdict memo already holds included, is about 5 µs per KB
//! of body (the benchmarked 2.4 KB CREATE: 12–20 µs). Handing a review to a blocking thread and
//! back cost 25–50 µs more server CPU per request in admission_load (context switches and
//! wake-ups): several times the work of the common case (the API server sends the same scripts
//! with every write of a promotion).
//!
//! So a review is answered in place when its body is at most [`INLINE_MAX_BODY_BYTES`] and every
//! Lua or CEL text the engine would parse has been judged here before; anything else goes to a
//! blocking thread (`api::evaluations`). The classification only decides where a review runs,
//! never its answer: a wrong guess costs time, not correctness.

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::{PoisonError, RwLock};

use foldhash::quality::RandomState;

use promotion_shared::tree::Tree;

/// Bodies up to this size may be answered on the async task: decoding and judging such a body
/// with only judged texts took at most about 100 µs (measured), the most an async task should
/// run between two awaits. Typical reviews are well below: 2.4 KB for a CREATE, 12.9 KB for an
/// UPDATE by `kubectl apply` with `managedFields`.
pub const INLINE_MAX_BODY_BYTES: usize = 16 * 1024;

/// The engine's verdict memo keeps texts up to this size (`promotion_shared::validation`'s
/// cache); a longer one is parsed on every review, so it is never cheap.
const MEMO_MAX_TEXT_BYTES: usize = 8 * 1024;

/// Remembered texts; the record starts over when full. Kept small (hashes only, 8 bytes each):
/// it only has to cover the scripts of the promotions being written right now.
const MAX_REMEMBERED: usize = 16 * 1024;

/// Lua and CEL texts this evaluator has had the engine judge, as hashes (foldhash, seeded per
/// process: every script of every review is hashed here, and SipHash cost several times more
/// per byte; a collision only makes a review look cheap, see below).
///
/// The engine's memo can forget a text this record still holds (it starts over when its own
/// budget is full, and a hash can collide): that review is then parsed on the async task, once.
/// It is still at most [`INLINE_MAX_BODY_BYTES`] of body, so the stall stays bounded (measured:
/// under 9 ms for 16 KB of unseen CEL).
#[derive(Debug, Default)]
pub struct JudgedTexts {
    hashes: RwLock<HashSet<u64>>,
    hasher: RandomState,
}

impl JudgedTexts {
    /// Whether the engine has judged every Lua script and CEL rule of `object` (a review with none
    /// has nothing expensive to parse).
    pub fn all_judged(&self, object: &Tree) -> bool {
        let hashes = self.hashes.read().unwrap_or_else(PoisonError::into_inner);
        let mut all = true;
        texts(object, &mut |text| {
            all = text.len() <= MEMO_MAX_TEXT_BYTES && hashes.contains(&self.hasher.hash_one(text));
            all
        });
        all
    }

    /// Note that the engine has just judged the texts of `object`.
    pub fn remember(&self, object: &Tree) {
        let mut hashes = self.hashes.write().unwrap_or_else(PoisonError::into_inner);
        texts(object, &mut |text| {
            if text.len() <= MEMO_MAX_TEXT_BYTES {
                if hashes.len() >= MAX_REMEMBERED {
                    hashes.clear();
                }
                hashes.insert(self.hasher.hash_one(text));
            }
            true
        });
    }
}

/// Calls `visit` with every string under a key `script` (health checks' Lua) or `rule` (their
/// `evaluateCEL` rules) anywhere in `object`, until it returns false. Anywhere, not only where
/// the engine looks: a text counted that the engine skips only makes a review look expensive.
fn texts(object: &Tree, visit: &mut impl FnMut(&str) -> bool) {
    let mut pending = vec![object];
    while let Some(node) = pending.pop() {
        match node {
            Tree::Object(map) => {
                for (key, value) in map.iter() {
                    if let (Tree::Str(text), "script" | "rule") = (value, key) {
                        if !visit(text) {
                            return;
                        }
                    } else if matches!(value, Tree::Object(_) | Tree::Array(_)) {
                        pending.push(value);
                    }
                }
            }
            Tree::Array(items) => pending.extend(items.iter()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tree(value: &serde_json::Value) -> Tree<'_> {
        promotion_shared::tree::tree_of(value)
    }

    #[test]
    fn cheap_once_every_script_and_rule_was_judged() {
        let judged = JudgedTexts::default();
        let object = json!({"spec": {"profileSpec": {"validateHealths": [
            {"name": "a", "script": "function evaluate() return {healthy = true} end"},
            {"name": "b", "evaluateCEL": [{"name": "r", "rule": "resource.status.ready"}]}
        ]}}});
        assert!(!judged.all_judged(&tree(&object)));
        judged.remember(&tree(&object));
        assert!(judged.all_judged(&tree(&object)));

        let mut changed = object.clone();
        changed["spec"]["profileSpec"]["validateHealths"][1]["evaluateCEL"][0]["rule"] =
            json!("resource.status.ready == true");
        assert!(!judged.all_judged(&tree(&changed)), "a new rule is unseen");

        // Nothing to parse: cheap without any record.
        let plain = json!({"spec": {"stages": [{"name": "dev"}], "script": 5}});
        assert!(JudgedTexts::default().all_judged(&tree(&plain)));
    }

    #[test]
    fn a_text_too_long_for_the_engines_memo_is_never_cheap() {
        let judged = JudgedTexts::default();
        let long = "-- x\n".repeat(MEMO_MAX_TEXT_BYTES / 5 + 1);
        let object = json!({"checks": [{"script": long}]});
        judged.remember(&tree(&object));
        assert!(!judged.all_judged(&tree(&object)));
    }
}
