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

use promotion_manifest::Manifest;
use promotion_shared::model::is_cluster_promotion;

use crate::commands::lint::{exit_status, lint_bytes, Located};

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
    let (located, tally) = lint_bytes(FILE, bytes);
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
    if tally.not_yaml > 0 {
        assert_eq!(tally.not_yaml, 1, "{located:?}");
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
    if tally.not_yaml == 0 {
        check_paths(bytes, &located, tally.promotions);
    }
    Outcome {
        exit,
        promotions: tally.promotions,
        located,
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
    // lint_bytes read the file, so the reader decodes it.
    let manifest = Manifest::decode(FILE, bytes).expect("lint decoded it");
    let objects: Vec<&Value> = manifest
        .entries()
        .into_iter()
        .map(|e| e.value)
        .filter(|v| is_cluster_promotion(v))
        .collect();
    assert_eq!(objects.len(), promotions, "ClusterPromotions counted");
    for f in located {
        assert!(
            objects.iter().any(|o| names_a_field(o, &f.path)),
            "{:?} is not a field of any ClusterPromotion in the file (nor a missing field of one): {f:?}",
            f.path
        );
    }
}

/// Whether `path` (as the engine writes it, `a.b[2][key.with/odd]chars]`) names a field of
/// `value`: it exists, or it leaves an existing object by a key that object lacks and goes on
/// by plain keys only. A key in brackets is matched against the object's own keys, since the API server's
/// path syntax writes keys verbatim and a key may itself contain `]`.
fn names_a_field(value: &Value, path: &str) -> bool {
    // A path starts with a key, written verbatim as after a `.`: an unknown top-level field
    // `[pec` is written `[pec`.
    names_a_field_after(value, &format!(".{path}"))
}

/// [`names_a_field`] for the rest of a path, which starts with `.` or `[` (or is empty).
fn names_a_field_after(value: &Value, path: &str) -> bool {
    let rest = path.strip_prefix('.').unwrap_or(path);
    if rest.is_empty() {
        return true;
    }
    // After a `.`, a key is written verbatim, even one that starts with `[`.
    if let (true, Value::Object(map)) = (path.starts_with('.'), value) {
        let verbatim = map.iter().any(|(k, v)| {
            rest.strip_prefix(k.as_str()).is_some_and(|after| {
                (after.is_empty() || after.starts_with(['.', '['])) && names_a_field_after(v, after)
            })
        });
        if verbatim {
            return true;
        }
    }
    if let Some(inner) = rest.strip_prefix('[') {
        return match value {
            Value::Array(items) => inner.split_once(']').is_some_and(|(i, after)| {
                i.parse::<usize>()
                    .ok()
                    .and_then(|i| items.get(i))
                    .is_some_and(|item| names_a_field_after(item, after))
            }),
            Value::Object(map) => {
                let present = map.iter().any(|(k, v)| {
                    inner
                        .strip_prefix(k.as_str())
                        .and_then(|after| after.strip_prefix(']'))
                        .is_some_and(|after| names_a_field_after(v, after))
                });
                let missing = inner
                    .strip_suffix(']')
                    .is_some_and(|key| !map.contains_key(key));
                present || missing
            }
            _ => false,
        };
    }
    let Value::Object(map) = value else {
        // A field required below a `null` (`metadata:` with nothing under it) is missing too.
        return value.is_null() && !rest.contains('[');
    };
    // A key is written verbatim (an unknown field may hold `.` or `[`), so the object's own
    // keys are tried first; a key absent from the object ends at the next `.` or `[`.
    let present = map.iter().any(|(k, v)| {
        rest.strip_prefix(k.as_str()).is_some_and(|after| {
            (after.is_empty() || after.starts_with(['.', '['])) && names_a_field_after(v, after)
        })
    });
    // A missing field may sit below missing objects (`metadata.name` required when there is no
    // `metadata`): what is absent is plain keys only.
    let key = &rest[..rest.find(['.', '[']).unwrap_or(rest.len())];
    present || (!map.contains_key(key) && !rest.contains('['))
}

#[cfg(test)]
mod tests {
    use super::names_a_field;
    use serde_json::json;

    #[test]
    fn paths_name_fields_present_or_missing() {
        let doc = json!({"spec": {"stages": [{"m": {"a]]b": 1, "x.y": 2}, "cl[ster": 3, "n": null, "[o": 4}]}, "[pec": 5});
        for path in [
            "",
            "spec",
            "spec.stages[0]",
            "spec.stages[0].m[a]]b]",
            "spec.stages[0].m[x.y]",
            "spec.stages[0].missing",
            "spec.stages[0].cl[ster",
            "metadata.name",
            "spec.stages[0].n.name",
            "spec.stages[0].[o",
            "[pec",
            "spec.stages[0].m[not there]",
            "metadata",
        ] {
            assert!(names_a_field(&doc, path), "{path}");
        }
        for path in [
            "spec.stages[1]",
            "spec.stages[0].m[a]]b].deeper",
            "spec.nothing[0]",
            "spec.stages.x",
            "spec.stages[x]",
        ] {
            assert!(!names_a_field(&doc, path), "{path}");
        }
    }
}
