//! Arbitrary text through the Go duration and robfig/cron parsers, alone and as the fields the
//! engine judges, with the invariants of `promotion_shared::fuzzing::schedules`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(init: promotion_fuzz::init(), |data: &[u8]| {
    promotion_fuzz::run("schedules", data, check, None);
});

fn check(data: &[u8]) {
    promotion_shared::fuzzing::schedules::check(data);
}
