//! What every fuzz target shares: the panic hook, the thread inputs run on, and the timing of
//! each input.
//!
//! - libFuzzer's hook (libfuzzer-sys) aborts on every panic, including the ones the code expects
//!   and catches (the `cel` crate's parser); [`init`] puts
//!   `cel_check::panics::let_caught_panics_unwind` in front of it, so only those unwind.
//! - Inputs run on one worker thread with `VALIDATION_STACK_BYTES` of stack, the stack the
//!   webhook's workers and lint's thread validate on. There the engine never needs `stacker` to
//!   switch to a fresh stack, exactly as in production, and AddressSanitizer sees one ordinary
//!   thread stack: unwinding a panic on a stack ASan does not know leaves stale poison behind and
//!   gives false `stack-use-after-scope` reports (README.md, "AddressSanitizer and stacker").
//! - Each input's CPU time on that thread is measured; the slowest is reported (and written to
//!   `$PROMOTION_FUZZ_SLOWEST_DIR/<target>` when that is set), and a target with a time limit
//!   fails on an input over it.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use promotion_shared::validation::VALIDATION_STACK_BYTES;

/// Call from the targets' `init:` block, after libfuzzer-sys has installed its hook.
pub fn init() {
    cel_check::panics::let_caught_panics_unwind();
}

type Job = (fn(&[u8]), Vec<u8>);

struct Worker {
    jobs: Sender<Job>,
    done: Receiver<Duration>,
}

fn worker() -> &'static Mutex<Worker> {
    static WORKER: OnceLock<Mutex<Worker>> = OnceLock::new();
    WORKER.get_or_init(|| {
        let (jobs, incoming) = channel::<Job>();
        let (finished, done) = channel();
        std::thread::Builder::new()
            .name("validation".into())
            .stack_size(VALIDATION_STACK_BYTES)
            .spawn(move || {
                for (body, input) in incoming {
                    let start = thread_cpu_time();
                    body(&input);
                    let _ = finished.send(thread_cpu_time().saturating_sub(start));
                }
            })
            .expect("spawning the validation thread");
        Mutex::new(Worker { jobs, done })
    })
}

/// CPU time of the calling thread: what an input costs, whatever else the machine runs.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_THREAD_CPUTIME_ID exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Run `body` on the worker; returns its CPU time. A panic on the worker reaches libFuzzer's
/// hook, which reports the input and aborts.
fn on_worker(body: fn(&[u8]), data: &[u8]) -> Duration {
    let worker = worker().lock().unwrap_or_else(|e| e.into_inner());
    worker
        .jobs
        .send((body, data.to_vec()))
        .expect("the validation thread is running");
    worker.done.recv().expect("the validation thread answers")
}

/// Run one input of `target` through `body` on the worker, keeping track of the slowest input.
/// With `limit`, an input that still takes longer when run again (caches warm) fails the run.
pub fn run(target: &str, data: &[u8], body: fn(&[u8]), limit: Option<Duration>) {
    static SLOWEST: Mutex<Duration> = Mutex::new(Duration::ZERO);
    let first = on_worker(body, data);
    let slowest = *SLOWEST.lock().unwrap_or_else(|e| e.into_inner());
    if first <= slowest && limit.is_none_or(|l| first <= l) {
        return;
    }
    // A first run pays for lazy initialisation and cold caches; the second says what the input
    // costs.
    let warm = first.min(on_worker(body, data));
    if let Some(limit) = limit {
        assert!(
            warm <= limit,
            "input took {:.1} ms of CPU time, more than the {} ms allowed",
            warm.as_secs_f64() * 1e3,
            limit.as_millis()
        );
    }
    let mut slowest = SLOWEST.lock().unwrap_or_else(|e| e.into_inner());
    if warm > *slowest {
        *slowest = warm;
        eprintln!(
            "#slowest {target}: {:.2} ms ({} bytes)",
            warm.as_secs_f64() * 1e3,
            data.len()
        );
        if let Some(dir) = std::env::var_os("PROMOTION_FUZZ_SLOWEST_DIR") {
            let _ = std::fs::write(std::path::Path::new(&dir).join(target), data);
        }
    }
}
