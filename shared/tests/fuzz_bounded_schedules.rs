//! A bounded run of the `schedules` fuzz target inside the test suite: thousands of texts mutated
//! from the durations and cron expressions of the examples and of lint-parity.md, through the Go
//! duration and robfig/cron parsers and the engine, with the invariants of
//! `promotion_shared::fuzzing::schedules`. Deterministic (seeded); `FUZZ_SEED` and
//! `FUZZ_ITERATIONS` widen a local run.

mod support;

use promotion_shared::fuzzing::generate::{mutate, settings, Rng};
use promotion_shared::fuzzing::schedules::check;
use support::seeds;

/// Durations and cron expressions from `docs/reference/lint-parity.md` (D1, C1–C3) and the
/// edges of both grammars.
const PARITY: &[&str] = &[
    "-5m",
    "-1ns",
    "-.5s",
    "-2562047h47m16.854775808s",
    "2562047h47m16.854775807s",
    "2562047h47m16.854775808s",
    "-0",
    "0",
    "1.5h",
    ".5s",
    "1.h",
    "300µs",
    "300μs",
    "5us",
    "9223372036854775807ns",
    "9223372036854775808ns",
    "0.0000000001s",
    "1h2m3s4ms5us6ns",
    "1d",
    ", * * * *",
    "1,,2 * * * *",
    "0 9 * * 1,",
    "0 9 * * ,1",
    "0 0 * * *,",
    "@every  5m",
    "@every 5m ",
    "@every 1h ",
    "@every 5m\n",
    "*/4294967296 * * * *",
    "5/4294967296 * * * *",
    "*/9223372036854775807 * * * *",
    "*/4294967295 * * * *",
    "0 9 * * 1-5",
    "*/15 * * * *",
    "0 17 * * mon-fri",
    "0 0 1 jan,jul *",
    "? * * * ?",
    "@daily",
    "@yearly",
    "@every 1h30m",
    "0 9-17/2 * * *",
    "61 * * * *",
    "5-1 * * * *",
    "1-2-3 * * * *",
];

const TOKENS: &[&str] = &[
    "0",
    "1",
    "9",
    "59",
    "60",
    "23",
    "31",
    "12",
    "7",
    "4294967296",
    "9223372036854775807",
    "-",
    "+",
    ".",
    "ns",
    "us",
    "µs",
    "μs",
    "ms",
    "s",
    "m",
    "h",
    "d",
    "@every ",
    "@",
    "*",
    "?",
    "/",
    ",",
    " ",
    "\t",
    "\n",
    "jan",
    "DEC",
    "sun",
    "Sat",
    "٣",
    "\u{0}",
];

fn seeds() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = PARITY.iter().map(|s| s.as_bytes().to_vec()).collect();
    for key in ["delay", "timeout", "interval", "from", "to"] {
        out.extend(
            seeds::example_strings(key)
                .into_iter()
                .map(String::into_bytes),
        );
    }
    out
}

#[test]
fn thousands_of_mutated_durations_and_crons_break_no_invariant() {
    let (seed, iterations) = settings(0x5c4e_d01e_0000_0001, 4_000);
    let corpus = seeds();
    let mut rng = Rng::new(seed);
    let (mut durations, mut crons) = (0, 0);
    for i in 0..iterations {
        let text = rng.pick(&corpus).clone();
        let input = match rng.chance(10) {
            true => text,
            false => mutate(&mut rng, &text, TOKENS),
        };
        let outcome = std::panic::catch_unwind(|| check(&input)).unwrap_or_else(|_| {
            panic!(
                "input {i} (seed {seed:#x}) broke an invariant: {:?}",
                String::from_utf8_lossy(&input)
            )
        });
        durations += usize::from(outcome.duration);
        crons += usize::from(outcome.cron);
    }
    eprintln!("{iterations} inputs: {durations} durations accepted, {crons} cron expressions");
    // Both verdicts of both parsers, not only rejections.
    let share = iterations / 50;
    assert!(
        durations > share && iterations - durations > share,
        "{durations}"
    );
    assert!(crons > share && iterations - crons > share, "{crons}");
}
