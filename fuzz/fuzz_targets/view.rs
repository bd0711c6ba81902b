//! One promotion's objects (a ClusterPromotion with any status, its ClusterProfiles,
//! ClusterSummaries and Events: generated from choices, or given as JSON) through `describe`'s
//! view and `list`'s row, with the invariants of `kubectl_promotion::fuzzing::view`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(init: promotion_fuzz::init(), |data: &[u8]| {
    promotion_fuzz::run("view", data, view, None);
});

fn view(data: &[u8]) {
    kubectl_promotion::fuzzing::view::describe_and_check(data);
}
