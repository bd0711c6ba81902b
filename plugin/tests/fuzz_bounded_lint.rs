//! A bounded run of the `lint` fuzz target inside the test suite: thousands of manifest files
//! mutated from the examples (YAML edits, then byte damage to some), through the path of
//! `kubectl promotion lint FILE` with the invariants of `kubectl_promotion::fuzzing::lint`; and a sample
//! of them through the real binary, which must exit and report exactly as the harness saw.
//! Deterministic (seeded); `FUZZ_SEED` and `FUZZ_ITERATIONS` widen a local run.

use std::path::PathBuf;
use std::process::Command;

use kubectl_promotion::fuzzing::lint::{lint_and_check, Outcome};
use promotion_shared::fuzzing::generate::{mutate, settings, Rng};
use serde_json::Value;

const TOKENS: &[&str] = &[
    "\n",
    "\n  ",
    "\n- ",
    ": ",
    "- ",
    "---\n",
    "...\n",
    "{",
    "}",
    "[",
    "]",
    ", ",
    "'",
    "\"",
    "|\n",
    ">-\n",
    "&a ",
    "*a",
    "<<: *a\n",
    "!!str ",
    "!!binary ",
    "? ",
    "#",
    "\t",
    "null",
    "~",
    "yes",
    "0x1F",
    "1e3",
    ".inf",
    "-",
    "kind: List\nitems:\n",
    "apiVersion: v1\n",
    "stages:\n",
    "trigger:\n",
    "auto:\n",
    "manual:\n",
    "approved: true",
    "delay: 1d",
    "name: Dev",
    "matchLabels: {env: dev}",
    "script: |\n",
    "rule: ",
    "evaluateCEL:\n",
    "self.x",
    "\u{feff}",
    "\r\n",
    "\\u00e9",
    "\\n",
    "ä",
];

fn examples() -> Vec<Vec<u8>> {
    let dir = promotion_examples::examples_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut out: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(f).expect("example"))
        .collect();
    // The same objects as JSON, and two in one List.
    let docs: Vec<Value> = out
        .iter()
        .filter_map(|bytes| serde_saphyr::from_slice::<Value>(bytes).ok())
        .collect();
    out.extend(
        docs.iter()
            .map(|d| serde_json::to_vec_pretty(d).expect("JSON")),
    );
    if docs.len() >= 2 {
        let list =
            serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [docs[0], docs[1]]});
        out.push(serde_json::to_vec(&list).expect("JSON"));
    }
    out
}

#[test]
fn thousands_of_mutated_manifests_break_no_invariant() {
    let (seed, iterations) = settings(0x5c11_9700_0000_0001, 2_000);
    let corpus = examples();
    assert!(corpus.len() >= 20, "{} seeds", corpus.len());
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut exits = [0usize; 3];
    let mut through_binary = 0;
    for i in 0..iterations {
        let seed_text = rng.pick(&corpus).clone();
        let input = match rng.chance(10) {
            true => seed_text,
            false => mutate(&mut rng, &seed_text, TOKENS),
        };
        let outcome = std::panic::catch_unwind(|| lint_and_check(&input)).unwrap_or_else(|_| {
            let kept = std::env::temp_dir().join(format!("fuzz-bounded-lint-{seed:x}-{i}.yaml"));
            let _ = std::fs::write(&kept, &input);
            panic!(
                "input {i} (seed {seed:#x}, kept in {}) broke an invariant:\n{}",
                kept.display(),
                String::from_utf8_lossy(&input)
            )
        });
        exits[usize::from(outcome.exit)] += 1;
        if i % 40 == 0 {
            same_through_the_binary(&dir.path().join("fuzz.yaml"), &input, &outcome);
            through_binary += 1;
        }
    }
    eprintln!(
        "{iterations} inputs: exit 0/1/2 {exits:?}; {through_binary} also through the binary"
    );
    // Clean files, files with findings and files that are not YAML: all three must be reached.
    let share = iterations / 50;
    assert!(exits.iter().all(|&n| n > share), "{exits:?}");
}

/// `kubectl-promotion lint -o json FILE` exits and reports what the harness saw.
fn same_through_the_binary(file: &std::path::Path, input: &[u8], outcome: &Outcome) {
    std::fs::write(file, input).expect("writing the input");
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-promotion"))
        .args(["lint", "-o", "json"])
        .arg(file)
        .output()
        .expect("running kubectl-promotion");
    let shown = String::from_utf8_lossy(input);
    assert_eq!(
        out.status.code(),
        Some(i32::from(outcome.exit)),
        "exit status of the binary for:\n{shown}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reported: Vec<Value> = serde_json::from_slice(&out.stdout).expect("-o json is JSON");
    let expected: Vec<Value> = outcome
        .located
        .iter()
        .map(|f| {
            let mut v = serde_json::to_value(f).expect("serializable");
            v["file"] = Value::String(file.display().to_string());
            v
        })
        .collect();
    assert_eq!(reported, expected, "findings of the binary for:\n{shown}");
}

/// Every input that once stopped a fuzz target (`fuzz/regressions/`), as a file given to lint:
/// the AdmissionReviews of `admission` and the manifests (`*.yaml`) of `lint`.
#[test]
fn every_regression_input_keeps_the_lint_invariants() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fuzz/regressions")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json" || e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    for file in files {
        let bytes = std::fs::read(&file).expect("regression input");
        let outcome = lint_and_check(&bytes);
        if file.extension().is_some_and(|e| e == "json") {
            // An AdmissionReview is not a ClusterPromotion: nothing checked (1, as kubectl's
            // "no objects passed") with no finding, or not YAML at all (2: invalid UTF-8, a lone
            // surrogate escape).
            assert!(
                outcome.located.is_empty() || outcome.exit == 2,
                "{}: {:?}",
                file.display(),
                outcome.located
            );
            assert_ne!(outcome.exit, 0, "{}", file.display());
            assert_eq!(outcome.promotions, 0);
        }
    }
}
