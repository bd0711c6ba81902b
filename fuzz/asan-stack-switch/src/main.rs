//! Safe Rust only: a panic caught on a stack that stacker switched to, then ordinary calls.
use std::hint::black_box;

#[inline(never)]
fn deep(n: usize, fail: bool) -> usize {
    let mut buf = [n as u8; 64];
    black_box(&mut buf);
    if n == 0 {
        if fail {
            panic!("caught below");
        }
        return 0;
    }
    // Locals whose scope ends before the call: ASan marks them use-after-scope on exit.
    let sum = {
        let inner = [n as u8; 32];
        black_box(&inner).iter().map(|&b| b as usize).sum::<usize>()
    };
    deep(n - 1, fail) + sum + buf[0] as usize
}

struct Shown(usize);

impl std::fmt::Display for Shown {
    // Called by core::fmt (not instrumented) with a Formatter that lives in core's frame.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:>4}|{:<3}", self.0, self.0 % 7)
    }
}

#[inline(never)]
fn work(n: usize) -> usize {
    let mut total = 0;
    for i in 0..n {
        let local = [i as u8; 128];
        total += black_box(&local)[0] as usize;
        total += black_box(format!("{} {}", Shown(i), Shown(n))).len();
        total += if i > 0 { work_rec(i % 50) } else { 0 };
    }
    total
}

#[inline(never)]
fn work_rec(n: usize) -> usize {
    let local = [n as u8; 48];
    black_box(&local);
    if n == 0 { 0 } else { work_rec(n - 1) + local[0] as usize }
}

/// Stack sizes as the engine's (`VALIDATION_STACK_BYTES`, `PARSER_RED_ZONE`).
const STACK: usize = 64 << 20;
const RED_ZONE: usize = 48 << 20;

/// A caught panic, then more work, on whatever stack this runs on.
fn round(panic: bool) -> usize {
    let r = std::panic::catch_unwind(|| deep(200, panic));
    assert_eq!(r.is_err(), panic);
    work(60)
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    // The panics are expected; their messages would only hide ASan's report.
    std::panic::set_hook(Box::new(|_| {}));
    let rounds = 2000;
    match mode.as_str() {
        // As `validate_tree` runs on a small stack: stacker switches to a fresh one.
        "" | "no-panic" => {
            for _ in 0..rounds {
                black_box(stacker::maybe_grow(RED_ZONE, STACK, || round(mode.is_empty())));
            }
        }
        "no-switch" => {
            for _ in 0..rounds {
                black_box(round(true));
            }
        }
        // As the fuzz targets run inputs: on a thread big enough that stacker never switches.
        "big-thread" => std::thread::Builder::new()
            .stack_size(STACK)
            .spawn(move || {
                for _ in 0..rounds {
                    black_box(stacker::maybe_grow(RED_ZONE, STACK, || round(true)));
                }
            })
            .expect("thread")
            .join()
            .expect("no panic escapes"),
        other => {
            eprintln!("unknown mode {other:?}: none, no-panic, no-switch or big-thread");
            std::process::exit(2);
        }
    }
    println!("{rounds} rounds ({mode:?}), no report");
}
