//! `kubectl promotion lint FILE` over arbitrary bytes, with its invariants checked: the entry
//! point of the cargo-fuzz target `lint` (`fuzz/`) and of the bounded run in
//! `tests/fuzz_bounded_lint.rs`. Not used by the binary.
//!
//! The bytes go through [`lint_bytes`], what `lint` runs on each file once it has read it.
//! Invariants (a violation panics with a description, which is what fuzzers report):
//! - linting never panics, and no object falls into the engine's safety net (`internal`);
//! - the exit status (as `lint` computes it from the findings and the tally) is 0, 1 or 2, and it
//!   is 2 exactly when the file is not UTF-8 or not YAML, which is then its only finding;
//! - every finding's field path exists in one of the file's ClusterPromotions, or names a missing
//!   field whose parent exists;
//! - every reported line and column lies inside the file.

use serde_json::Value;

use promotion_shared::model::is_cluster_promotion;
use promotion_shared::source::parse_documents;
use promotion_shared::validation::{segments, Segment, Severity};

use crate::commands::lint::{lint_bytes, Located, Tally};

pub const FILE: &str = "fuzz.yaml";

/// What happened to one input, for the statistics of the bounded run.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Exit status without `--strict`.
    pub exit: u8,
    pub promotions: usize,
    pub located: Vec<Located>,
}

/// Lint `bytes` as one file and check every invariant.
pub fn lint_and_check(bytes: &[u8]) -> Outcome {
    let mut located = Vec::new();
    let mut tally = Tally::default();
    lint_bytes(FILE, bytes, &mut located, &mut tally);
    let exit = exit_status(&tally, &located, false);
    let strict = exit_status(&tally, &located, true);
    assert!(
        exit <= 2 && strict <= 2 && strict >= exit,
        "{exit} {strict}"
    );

    let unreadable: Vec<&Located> = located
        .iter()
        .filter(|f| matches!(f.code, "invalid-utf8" | "yaml"))
        .collect();
    if tally.unreadable > 0 {
        assert_eq!(tally.unreadable, 1, "{located:?}");
        assert_eq!(unreadable.len(), 1, "{located:?}");
        assert_eq!(
            located.len(),
            1,
            "findings besides the read error: {located:?}"
        );
        assert_eq!(tally.promotions, 0);
    } else {
        assert!(unreadable.is_empty(), "{unreadable:?}");
    }

    for f in &located {
        assert_eq!(f.file, FILE);
        assert_ne!(
            f.code, "internal",
            "the engine's safety net caught a panic: {f:?}"
        );
        assert!(!f.message.is_empty(), "{f:?}");
        assert!(
            position_inside(bytes, f.line, f.column),
            "{}:{} is outside the file: {f:?}\n{}",
            f.line,
            f.column,
            String::from_utf8_lossy(bytes)
        );
    }
    if tally.unreadable == 0 {
        check_paths(bytes, &located, tally.promotions);
    }
    Outcome {
        exit,
        promotions: tally.promotions,
        located,
    }
}

/// The exit status `lint` gives a run with these findings (`commands::lint::run`).
pub fn exit_status(tally: &Tally, located: &[Located], strict: bool) -> u8 {
    let errors = located
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = located.len() - errors;
    if tally.unreadable > 0 {
        2
    } else if errors > 0 || (strict && warnings > 0) {
        1
    } else {
        0
    }
}

/// Whether 1-based `line` and `column` address a byte of `bytes` or the end of a line or of the
/// file. Columns count bytes here, the larger of the units positions use.
fn position_inside(bytes: &[u8], line: usize, column: usize) -> bool {
    line >= 1
        && column >= 1
        && bytes
            .split(|&b| b == b'\n')
            .nth(line - 1)
            .is_some_and(|l| column <= l.len() + 1)
}

fn check_paths(bytes: &[u8], located: &[Located], promotions: usize) {
    // lint_bytes read the file, so it is UTF-8 and YAML.
    let text = std::str::from_utf8(bytes).expect("lint read it as UTF-8");
    let docs = parse_documents(text).expect("lint parsed it");
    let mut objects: Vec<&Value> = Vec::new();
    for doc in &docs {
        let v = &doc.value;
        if is_cluster_promotion(v) {
            objects.push(v);
        } else if v.get("kind").and_then(Value::as_str) == Some("List") {
            let items = v.get("items").and_then(Value::as_array);
            objects.extend(
                items
                    .into_iter()
                    .flatten()
                    .filter(|i| is_cluster_promotion(i)),
            );
        }
    }
    assert_eq!(objects.len(), promotions, "ClusterPromotions counted");
    for f in located {
        assert!(
            objects.iter().any(|o| names_a_field(o, &f.path)),
            "{:?} is not a field of any ClusterPromotion in the file (nor a missing field of one): {f:?}",
            f.path
        );
    }
}

/// `path` exists in `object`, or all of it but its last key does and that key is missing.
fn names_a_field(object: &Value, path: &str) -> bool {
    let segs = segments(path);
    let Some((last, parent)) = segs.split_last() else {
        return true;
    };
    let Some(parent) = parent.iter().try_fold(object, step) else {
        return false;
    };
    match (last, parent) {
        // Present, or missing from an object: either way a field of it.
        (Segment::Key(_), Value::Object(_)) => true,
        (Segment::Index(i), Value::Array(items)) => *i < items.len(),
        _ => false,
    }
}

fn step<'a>(value: &'a Value, seg: &Segment) -> Option<&'a Value> {
    match (seg, value) {
        (Segment::Key(k), Value::Object(map)) => map.get(k),
        (Segment::Index(i), Value::Array(items)) => items.get(*i),
        _ => None,
    }
}
