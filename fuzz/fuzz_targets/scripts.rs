//! Arbitrary text as a Lua health script and a CEL rule through the checkers and (when the
//! checker can parse it) the health runner (input: text, optionally NUL and a JSON object), with the invariants of
//! `promotion_shared::fuzzing::scripts`; no input may take more than 100 ms of CPU time.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;

fuzz_target!(init: promotion_fuzz::init(), |data: &[u8]| {
    promotion_fuzz::run("scripts", data, check, Some(Duration::from_millis(100)));
});

fn check(data: &[u8]) {
    use promotion_shared::fuzzing::scripts::{check, Runner};
    check(data, Runner::IF_COMPILES);
}
