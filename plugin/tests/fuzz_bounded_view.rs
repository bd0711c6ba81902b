//! A bounded run of the `view` fuzz target inside the test suite: thousands of promotions with
//! their ClusterProfiles, ClusterSummaries and Events, generated from random choices or made from
//! the examples (as they are, or with JSON edits), through `describe` and `list` with the
//! invariants of `kubectl_promotion::fuzzing::view`. Prints how many inputs reached which case and
//! fails when the generator stops reaching one. Deterministic (seeded); `FUZZ_SEED` and
//! `FUZZ_ITERATIONS` widen a local run. Also replays the committed seeds and the `view`
//! regressions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kubectl_promotion::fuzzing::view::describe_and_check;
use kubectl_promotion::fuzzing::view::input::Form;
use promotion_shared::fuzzing::generate::{mutate, settings, Rng};
use promotion_shared::pipeline::Phase;
use serde_json::Value;

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "\"\"",
    "{}",
    "[]",
    "\"name\": \"dev\"",
    "\"status\": {}",
    "\"stages\": []",
    "\"currentStageName\": \"staging\"",
    "\"stagesHash\": \"x\"",
    "\"failureMessage\": \"license is required to manage ClusterPromotion\"",
    "\"currentStatusDescription\": \"Successfully provisioned (2026-02-16T07:38:02Z)\"",
    "\"currentStatusDescription\": \"Paused: Awaiting Manual Approval\"",
    "\"lastSuccessfulAppliedTime\": \"2026-02-16T07:27:41Z\"",
    "\"approved\": true",
    "\"manual\": {}",
    "\\u0000",
    "\\ud800",
    "é",
];

fn examples() -> Vec<Value> {
    let dir = promotion_examples::examples_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|f| serde_saphyr::from_slice::<Value>(&std::fs::read(f).ok()?).ok())
        .collect()
}

fn random_bytes(rng: &mut Rng, most: usize) -> Vec<u8> {
    (0..rng.below(most + 1))
        .map(|_| rng.next_u64() as u8)
        .collect()
}

/// One input: choices alone, or an example (perhaps edited) followed by NUL and choices.
fn input(rng: &mut Rng, examples: &[Vec<u8>]) -> Vec<u8> {
    match rng.below(10) {
        0..=5 => {
            let mut bytes = random_bytes(rng, 300);
            if bytes.first() == Some(&b'{') {
                bytes[0] = b'}';
            }
            bytes
        }
        n => {
            let example = rng.pick(examples);
            let mut bytes = if n == 9 {
                mutate(rng, example, TOKENS)
            } else {
                example.clone()
            };
            bytes.push(0);
            bytes.extend(random_bytes(rng, 120));
            bytes
        }
    }
}

#[derive(Default)]
struct Tally {
    counts: BTreeMap<&'static str, usize>,
    phases: BTreeMap<String, usize>,
}

impl Tally {
    fn add(&mut self, what: &'static str, yes: bool) {
        *self.counts.entry(what).or_default() += usize::from(yes);
    }

    fn get(&self, what: &str) -> usize {
        self.counts.get(what).copied().unwrap_or(0)
    }
}

#[test]
fn thousands_of_promotions_break_no_invariant() {
    let (seed, iterations) = settings(0x5c11_9700_0000_0016, 3_000);
    let examples: Vec<Vec<u8>> = examples()
        .iter()
        .map(|v| serde_json::to_vec(v).expect("JSON"))
        .collect();
    assert!(examples.len() >= 10, "{} examples", examples.len());
    let mut rng = Rng::new(seed);
    let mut tally = Tally::default();
    for i in 0..iterations {
        let bytes = input(&mut rng, &examples);
        let o = std::panic::catch_unwind(|| describe_and_check(&bytes)).unwrap_or_else(|_| {
            let kept = std::env::temp_dir().join(format!("fuzz-bounded-view-{seed:x}-{i}"));
            let _ = std::fs::write(&kept, &bytes);
            panic!(
                "input {i} (seed {seed:#x}, kept in {}) broke an invariant",
                kept.display()
            )
        });
        tally.add("generated", o.form == Some(Form::Generated));
        tally.add("from an example", o.form == Some(Form::Object));
        tally.add("not JSON", o.form.is_none());
        tally.add("refused (not the model)", o.form.is_some() && !o.built);
        tally.add("described", o.built);
        tally.add("with a status", o.has_status);
        tally.add(
            "status as Sveltos writes it",
            o.has_status && o.sveltos_shaped,
        );
        tally.add(
            "status Sveltos never writes",
            o.has_status && !o.sveltos_shaped,
        );
        tally.add("duplicate stage names", o.duplicate_names);
        let stale = o.stale.as_deref().unwrap_or_default();
        tally.add("stale: stagesHash", stale.starts_with("the stage names"));
        tally.add(
            "stale: stage profile",
            stale.starts_with("spec.profileSpec changed"),
        );
        tally.add(
            "stale: spec-change record",
            stale.contains("started a new rollout"),
        );
        tally.add("with clusters", o.clusters > 0);
        tally.add("with a failed cluster", o.failed_clusters > 0);
        tally.add("a profile name taken", o.taken_profiles > 0);
        tally.add("awaiting approval", o.awaiting_approval);
        tally.add("with warnings", o.warnings > 0);
        tally.add("oracle: the frontier's state decided", o.oracle_frontier);
        tally.add("oracle: the phase of a status decided", o.oracle_phase);
        if let Some(phase) = &o.phase {
            *tally.phases.entry(format!("{phase:?}")).or_default() += 1;
        }
    }
    eprintln!("{iterations} inputs (seed {seed:#x}):");
    for (what, n) in &tally.counts {
        eprintln!("  {n:>6}  {what}");
    }
    eprintln!("  phases: {:?}", tally.phases);

    // Every case the view distinguishes must be reached by a fair share of the inputs.
    let share = iterations / 200;
    for what in tally.counts.keys() {
        assert!(tally.get(what) > share, "{what}: {}", tally.get(what));
    }
    for phase in [
        Phase::NotStarted,
        Phase::Stale,
        Phase::Progressing,
        Phase::Degraded,
        Phase::AwaitingApproval,
        Phase::Complete,
        Phase::Failed,
        Phase::Blocked,
        Phase::Paused,
    ] {
        let n = tally
            .phases
            .get(&format!("{phase:?}"))
            .copied()
            .unwrap_or(0);
        assert!(n > share, "phase {phase:?}: {n}");
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// The committed seeds of the target (`fuzz/make-seeds.py`): the examples, and the states of
/// `examples/STATES.md` with the cluster objects `describe` reads, each in the phase its name
/// says.
#[test]
fn every_seed_is_described_in_its_state() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/view");
    let expected: &[(&str, Phase, Option<&str>)] = &[
        ("soaking", Phase::Progressing, None),
        ("complete", Phase::Complete, None),
        ("running-health-checks", Phase::Progressing, None),
        ("waiting-for-window", Phase::Progressing, None),
        ("stale-stages-hash", Phase::Stale, Some("the stage names")),
        ("awaiting-approval", Phase::AwaitingApproval, None),
        ("approved-pending", Phase::Progressing, None),
        ("approval-consumed", Phase::Progressing, None),
        (
            "stale-stage-profile",
            Phase::Stale,
            Some("spec.profileSpec changed"),
        ),
        (
            "stale-spec-change-record",
            Phase::Stale,
            Some("carol started a new rollout"),
        ),
        ("repeated-stage-name", Phase::AwaitingApproval, None),
        ("provisioning", Phase::Progressing, None),
        ("failed-retrying", Phase::Degraded, None),
        ("failed-for-good", Phase::Failed, None),
        ("blocked-licence", Phase::Blocked, None),
        ("profile-name-taken", Phase::Failed, None),
    ];
    let seeds = files(&dir);
    assert!(seeds.len() >= expected.len() + 11, "{} seeds", seeds.len());
    for file in seeds {
        let bytes = std::fs::read(&file).expect("seed");
        let o = describe_and_check(&bytes);
        let name = file.file_stem().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("choices-") {
            continue;
        }
        assert!(o.built, "{name}: not described");
        if name.starts_with("example-") {
            assert_eq!(o.form, Some(Form::Object), "{name}");
            continue;
        }
        let Some((_, phase, stale)) = expected.iter().find(|(n, _, _)| *n == name) else {
            panic!("{name}: a seed without an expected state here");
        };
        assert_eq!(o.form, Some(Form::Envelope), "{name}");
        assert_eq!(o.phase.as_ref(), Some(phase), "{name}");
        match stale {
            Some(why) => assert!(
                o.stale.as_deref().is_some_and(|s| s.contains(why)),
                "{name}: {:?}",
                o.stale
            ),
            None => assert_eq!(o.stale, None, "{name}"),
        }
        assert_eq!(o.duplicate_names, name == "repeated-stage-name", "{name}");
        assert_eq!(o.taken_profiles > 0, name == "profile-name-taken", "{name}");
        assert_eq!(o.failed_clusters > 0, name.starts_with("failed-"), "{name}");
    }
}

/// Every input that once stopped the `view` target or its bounded run
/// (`fuzz/regressions/view-*`, raw bytes as the target reads them).
#[test]
fn every_view_regression_keeps_the_invariants() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions");
    let inputs: Vec<PathBuf> = files(&dir)
        .into_iter()
        .filter(|f| {
            f.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("view-"))
        })
        .collect();
    assert!(!inputs.is_empty());
    for file in inputs {
        let o = describe_and_check(&std::fs::read(&file).expect("regression input"));
        assert!(o.built, "{}", file.display());
    }
}
