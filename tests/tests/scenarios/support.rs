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

/// A way the stand-in answers differently from kube-apiserver, found by these scenarios and not
/// fixed yet (the stand-in has its own owner). Listed so that the scenario still checks the real
/// server exactly, and notices when the stand-in is fixed.
pub struct Difference {
    pub what: &'static str,
}

/// A refused connection to a webhook, in the `failed calling webhook` message.
pub const DIAL_ERROR_TEXT: Difference = Difference {
    what: "kube-apiserver reports a refused webhook connection as Go's `dial tcp ADDR: connect: \
           connection refused`; the stand-in as hyper's `client error (Connect): tcp connect \
           error: Connection refused (os error 111)`",
};

/// The webhook configurations' `matchConditions`.
pub const MATCH_CONDITIONS: Difference = Difference {
    what: "kube-apiserver evaluates the webhooks' matchConditions (an update that changes neither \
           spec nor annotations skips the webhook, so labelling works while it is down); the \
           stand-in does not model matchConditions and calls the webhook for every update",
};

/// `holds` is what kube-apiserver does. Asserted on the real server; on the stand-in the known
/// `difference` must still show, so a fixed stand-in fails here until the entry is removed.
#[track_caller]
pub fn as_kube_apiserver_does(
    cluster: &Cluster,
    holds: bool,
    difference: &Difference,
    context: &str,
) {
    match cluster.kind() {
        promotion_e2e::backend::BackendKind::Envtest => assert!(holds, "{context}"),
        promotion_e2e::backend::BackendKind::StandIn => assert!(
            !holds,
            "the stand-in no longer differs ({}); remove this Difference: {context}",
            difference.what
        ),
    }
}
