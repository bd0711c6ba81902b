//! Crash injection for the crash-safety tests: stop the process before its N-th write of the
//! cluster, or just after the API server answered it (the write applied, its answer never acted
//! on). Compiled only with the cargo feature `fault-injection`, which the end-to-end tests'
//! build enables and release and container builds never do; even then inert unless
//! `PROMOTION_CONTROLLER_FAULT` names a point: `before:N` or `after:N` (N from 1, counting every
//! write of a promotion or a ClusterProfile in the order the process makes them; Events and the
//! Lease are not counted).
//!
//! The stop is `std::process::exit`: no destructor runs, no Lease is released, nothing more is
//! written — what a crash or a SIGKILL at that moment leaves behind.

/// The environment variable that names the point.
pub const FAULT_ENV: &str = "PROMOTION_CONTROLLER_FAULT";

/// The exit status of a stop at an injected fault (one no other exit of the process uses).
pub const FAULT_EXIT: i32 = 86;

#[cfg(feature = "fault-injection")]
mod armed {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    #[derive(Clone, Copy, PartialEq, Eq)]
    pub enum When {
        Before,
        After,
    }

    fn point() -> Option<(When, u64)> {
        static POINT: OnceLock<Option<(When, u64)>> = OnceLock::new();
        *POINT.get_or_init(|| {
            let text = std::env::var(super::FAULT_ENV).ok()?;
            let (when, n) = text.split_once(':')?;
            let when = match when {
                "before" => When::Before,
                "after" => When::After,
                _ => return None,
            };
            Some((when, n.parse().ok().filter(|n| *n > 0)?))
        })
    }

    static WRITES: AtomicU64 = AtomicU64::new(0);

    /// Count a write about to be sent, and stop if it is the one named `before:N`. Returns its
    /// position.
    pub fn before(what: &str) -> u64 {
        let n = WRITES.fetch_add(1, Ordering::SeqCst) + 1;
        // The positions a fault can name, as a fault-free run makes them.
        tracing::debug!(position = n, what, "write");
        if point() == Some((When::Before, n)) {
            stop(&format!("before write {n} ({what})"));
        }
        n
    }

    /// The write at `position` was answered: stop if it is the one named `after:N`.
    pub fn after(position: u64, what: &str) {
        if point() == Some((When::After, position)) {
            stop(&format!(
                "after write {position} ({what}), its answer unread"
            ));
        }
    }

    fn stop(at: &str) -> ! {
        tracing::error!(at, "fault injected: the process stops");
        std::process::exit(super::FAULT_EXIT);
    }

    /// What the start log says of the injection.
    pub fn armed() -> Option<String> {
        std::env::var(super::FAULT_ENV).ok()
    }
}

#[cfg(feature = "fault-injection")]
pub use armed::{after, armed, before};

/// Without the feature: nothing is counted and nothing stops.
#[cfg(not(feature = "fault-injection"))]
pub fn before(_what: &str) -> u64 {
    0
}

#[cfg(not(feature = "fault-injection"))]
pub fn after(_position: u64, _what: &str) {}

/// Without the feature a fault asked for is not injected: the start log says so.
#[cfg(not(feature = "fault-injection"))]
pub fn armed() -> Option<String> {
    None
}

/// Run `write` between the two injection points.
pub async fn guarded<T>(what: &str, write: impl std::future::Future<Output = T>) -> T {
    let position = before(what);
    let answer = write.await;
    after(position, what);
    answer
}
