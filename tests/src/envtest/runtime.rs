//! One tokio runtime for the blocking API of the harness and the backends: tests are plain
//! threads running `kubectl`, and kube-rs needs a runtime for its connections.

use std::future::Future;
use std::sync::OnceLock;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("envtest-client")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("envtest: cannot build a tokio runtime: {e}"))
    })
}

/// Run `future` on the harness runtime and wait for it. Unlike `Runtime::block_on` this also
/// works when called from inside another runtime (an async test): it only parks this thread.
pub fn block_on<F>(future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime().spawn(async move {
        let _ = tx.send(future.await);
    });
    match rx.recv() {
        Ok(output) => output,
        // The task panicked: the runtime dropped it with the sender.
        Err(_) => panic!("envtest: a client task panicked (see its message above)"),
    }
}

/// Enter the harness runtime for building clients when the caller has none, so their
/// background tasks live as long as the process.
pub fn enter() -> Option<tokio::runtime::EnterGuard<'static>> {
    tokio::runtime::Handle::try_current()
        .is_err()
        .then(|| runtime().enter())
}
