//! Arbitrary bytes as a manifest file through `kubectl promotion lint FILE`'s path, with the
//! invariants of `kubectl_promotion::fuzzing` (exit status, field paths, positions in the file).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(init: promotion_fuzz::init(), |data: &[u8]| {
    promotion_fuzz::run("lint", data, lint, None);
});

fn lint(data: &[u8]) {
    kubectl_promotion::fuzzing::lint::lint_and_check(data);
}
