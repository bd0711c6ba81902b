//! The seed policy of `promotion_examples::proptest_config`, observed in separate processes:
//! this test binary runs [`the_cases_of_one_run`] again with exactly the environment each check
//! is about. Two default runs generate the same cases; each `EXPLORE_PROPTEST=1` run generates
//! other cases and prints their seeds; `PROPTEST_RNG_SEED` set to a printed seed generates that
//! run's cases again.

use std::cell::RefCell;
use std::process::Command;

use promotion_examples::proptest_config::{config, with_cases, EXPLORE_VAR};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

/// Every variable the policy or proptest's own seeding reads: the children start without them.
const VARIABLES: &[&str] = &[
    EXPLORE_VAR,
    "PROPTEST_RNG_SEED",
    "PROPTEST_CASES",
    "PROPTEST_RNG_ALGORITHM",
];

/// The cases a runner configured by `with_cases` generates, run the way `proptest!` runs them.
fn generated() -> Vec<u64> {
    let seen = RefCell::new(Vec::new());
    TestRunner::new(with_cases(16))
        .run(&any::<u64>(), |v| {
            seen.borrow_mut().push(v);
            Ok(())
        })
        .expect("no case can fail");
    seen.into_inner()
}

/// Two runners in one process, in this process's environment: the same cases, unless each
/// draws a fresh seed. Prints both, for [`runs_repeat_by_default_and_explore_on_request`].
#[test]
fn the_cases_of_one_run() {
    let (first, second) = (generated(), generated());
    println!("first: {first:?}");
    println!("second: {second:?}");
    assert!(!first.is_empty());
    let set = |var| std::env::var_os(var).is_some_and(|v| !v.is_empty());
    let fresh = std::env::var_os(EXPLORE_VAR).is_some_and(|v| !v.is_empty() && v != "0")
        && !set("PROPTEST_RNG_SEED");
    if fresh {
        assert_ne!(first, second, "each exploring runner draws its own seed");
    } else {
        assert_eq!(first, second, "a fixed seed generates the same cases");
    }
}

/// What one run of [`the_cases_of_one_run`] generated, and the seeds it printed.
#[derive(Debug)]
struct Run {
    first: String,
    second: String,
    seeds: Vec<String>,
}

fn run(vars: &[(&str, &str)]) -> Run {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    cmd.args(["the_cases_of_one_run", "--exact", "--nocapture"]);
    for var in VARIABLES {
        cmd.env_remove(var);
    }
    cmd.envs(vars.iter().copied());
    let out = cmd.output().expect("run the test binary again");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "{vars:?}: {}\n--- stdout\n{stdout}--- stderr\n{stderr}",
        out.status
    );
    let line = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("{vars:?}: no {prefix:?} line in\n{stdout}"))
            .to_string()
    };
    let seeds = stderr
        .lines()
        .filter_map(|l| l.split_once("PROPTEST_RNG_SEED=")?.1.split(' ').next())
        .map(str::to_string)
        .collect();
    Run {
        first: line("first: "),
        second: line("second: "),
        seeds,
    }
}

#[test]
fn runs_repeat_by_default_and_explore_on_request() {
    let default = run(&[]);
    let again = run(&[]);
    assert_eq!(default.first, again.first, "two default runs");
    assert_eq!(default.first, default.second);
    assert!(default.seeds.is_empty(), "no seed printed: {default:?}");
    // `0` and empty do not explore.
    assert_eq!(run(&[(EXPLORE_VAR, "0")]).first, default.first);
    assert_eq!(run(&[(EXPLORE_VAR, "")]).first, default.first);

    let explored = run(&[(EXPLORE_VAR, "1")]);
    let explored_again = run(&[(EXPLORE_VAR, "1")]);
    assert_ne!(
        explored.first, default.first,
        "exploring leaves the default cases"
    );
    assert_ne!(
        explored.first, explored_again.first,
        "each exploring run is new"
    );
    assert_eq!(explored.seeds.len(), 2, "one seed per runner: {explored:?}");

    // The printed seed replays the runner that printed it, with or without EXPLORE_PROPTEST.
    let replayed = run(&[("PROPTEST_RNG_SEED", &explored.seeds[0])]);
    assert_eq!(replayed.first, explored.first);
    assert_eq!(replayed.second, explored.first);
    let replayed = run(&[
        (EXPLORE_VAR, "1"),
        ("PROPTEST_RNG_SEED", &explored.seeds[1]),
    ]);
    assert_eq!(replayed.first, explored.second);
    assert!(replayed.seeds.is_empty(), "nothing drawn: {replayed:?}");
}

/// proptest's default config writes `*.proptest-regressions` files next to the sources and
/// replays them first; the policy's never does, whatever the environment.
#[test]
fn failures_are_not_persisted() {
    assert!(config().failure_persistence.is_none());
    assert!(with_cases(3).failure_persistence.is_none());
}
