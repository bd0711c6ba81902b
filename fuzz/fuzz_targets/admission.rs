//! Arbitrary bytes as an AdmissionReview body through decode → validate → mutate, with the
//! invariants of `promotion_webhook::fuzzing` (no panic, well-formed answers, patches that apply,
//! idempotent mutation, audit records the validating side accepts).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(init: promotion_fuzz::init(), |data: &[u8]| {
    promotion_fuzz::run("admission", data, admit, None);
});

fn admit(data: &[u8]) {
    promotion_webhook::fuzzing::admit_and_check(data);
}
