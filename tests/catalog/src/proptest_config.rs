//! The one configuration every property test of the workspace runs with, so that `cargo test`
//! (and CI) generates the same cases on every run and a red run always points at the change that
//! caused it, while fresh cases stay one environment variable away.
//!
//! - By default the runner is seeded with [`SEED`]: the same cases, in the same order, every
//!   run, on every machine.
//! - `EXPLORE_PROPTEST=1` ([`EXPLORE_VAR`]) draws a fresh seed for each test instead and prints
//!   it (`PROPTEST_RNG_SEED=N replays …`, shown with the output of a failing test).
//! - `PROPTEST_RNG_SEED=N` (proptest's own variable) runs seed `N`, with or without
//!   `EXPLORE_PROPTEST`: it replays what an exploring run printed. proptest's other variables
//!   (`PROPTEST_CASES`, …) keep working as proptest documents them.
//! - Failures are never persisted: proptest would otherwise write `proptest-regressions/` files
//!   next to the sources and replay them first, so a run would depend on files left by an
//!   earlier one. A case worth keeping becomes an ordinary regression test.
//!
//! Use: `proptest! { #![proptest_config(promotion_examples::proptest_config::with_cases(400))] … }`
//! or `TestRunner::new(promotion_examples::proptest_config::config())`.

use std::hash::{BuildHasher, RandomState};
use std::time::SystemTime;

use proptest::test_runner::{contextualize_config, Config, RngSeed};

/// The seed of every property test unless [`EXPLORE_VAR`] or `PROPTEST_RNG_SEED` says otherwise.
pub const SEED: u64 = 0x6b75_6265_6374_6c21;

/// Set to anything but empty or `0`, each test draws a fresh seed. Not named `PROPTEST_…`:
/// proptest warns about every variable of that prefix it does not know.
pub const EXPLORE_VAR: &str = "EXPLORE_PROPTEST";

/// proptest's own variable for the seed; read by [`contextualize_config`].
const SEED_VAR: &str = "PROPTEST_RNG_SEED";

/// proptest's default number of cases (256 unless `PROPTEST_CASES` says otherwise), seeded as
/// this module describes.
pub fn config() -> Config {
    seeded(Config::default())
}

/// `cases` cases (unless `PROPTEST_CASES` says otherwise), seeded as this module describes.
pub fn with_cases(cases: u32) -> Config {
    seeded(Config {
        cases,
        ..Config::default()
    })
}

fn seeded(config: Config) -> Config {
    let seed = if exploring() && std::env::var_os(SEED_VAR).is_none() {
        // Not proptest's `RngSeed::Random`: that seed is never shown, so a failure found while
        // exploring could not be replayed.
        let seed = RandomState::new().hash_one(SystemTime::now());
        eprintln!(
            "proptest: {EXPLORE_VAR}: fresh seed; {SEED_VAR}={seed} replays this test's cases"
        );
        seed
    } else {
        SEED
    };
    // The proptest! macro contextualizes its config again; doing it here too gives a bare
    // `TestRunner::new` the same environment handling (PROPTEST_RNG_SEED, PROPTEST_CASES, …).
    contextualize_config(Config {
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..config
    })
}

fn exploring() -> bool {
    std::env::var_os(EXPLORE_VAR).is_some_and(|v| !v.is_empty() && v != "0")
}
