//! Small helpers shared by the scenarios.

use promotion_e2e::backend::Cluster;
use promotion_e2e::bins::Output;
use promotion_e2e::envtest::User;
use serde_json::Value;

/// `kubectl` as `user`; panics only when it cannot be run at all.
pub fn kubectl(cluster: &Cluster, user: User, args: &[&str]) -> Output {
    cluster
        .kubectl(user, args)
        .unwrap_or_else(|e| panic!("[{}] kubectl {args:?}: {e}", cluster.kind().name()))
}

/// A promotion example from `examples/`, as JSON.
pub fn example(file: &str) -> Value {
    promotion_e2e::fixtures::load_example(file)
        .unwrap_or_else(|e| panic!("{e}"))
        .promotion
}

#[track_caller]
pub fn assert_contains(haystack: &str, needles: &[&str], context: &str) {
    for needle in needles {
        assert!(
            haystack.contains(needle),
            "{context}: wanted {needle:?} in:\n{haystack}"
        );
    }
}

/// Unwrap a backend result, naming the backend in the panic.
pub trait Expect<T> {
    fn or_fail(self, cluster: &Cluster, what: &str) -> T;
}

impl<T, E: std::fmt::Display> Expect<T> for Result<T, E> {
    #[track_caller]
    fn or_fail(self, cluster: &Cluster, what: &str) -> T {
        self.unwrap_or_else(|e| panic!("[{}] {what}: {e}", cluster.kind().name()))
    }
}
