//! Panics this crate expects and catches, told apart from every other panic.
//!
//! One dependency is known to panic on some inputs: the `cel` crate's ANTLR parser and
//! interpreter. Its calls run inside [`catch_expected`], which turns such a panic into an error
//! the caller reports. Nothing else in the crate may panic, and the catch-all around a whole
//! validation (`validation::validate_tree`) is a safety net for bugs, not a place where panics
//! are expected.
//!
//! A panic hook runs before unwinding starts, so it cannot see whether the panic will be caught.
//! [`is_caught`] tells it: true exactly while the panicking thread is inside
//! [`catch_expected`]. libFuzzer's hook (libfuzzer-sys) aborts on every panic, caught or not;
//! [`let_caught_panics_unwind`] puts a hook in front of it that lets the expected ones unwind to
//! their `catch_expected`, so the fuzz targets keep running through them while any other panic
//! still reaches libFuzzer's hook and fails the run.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    /// How many [`catch_expected`] frames are on this thread's stack.
    static CATCHING: Cell<u32> = const { Cell::new(0) };
}

/// Run `f`, catching a panic raised inside it. Wrap only calls into code known to panic on
/// some inputs, and give the caller an error for that case.
pub fn catch_expected<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    /// Leaves the count as it was however `f` ends.
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            CATCHING.with(|c| c.set(c.get().saturating_sub(1)));
        }
    }
    CATCHING.with(|c| c.set(c.get().saturating_add(1)));
    let _leave = Leave;
    catch_unwind(AssertUnwindSafe(f))
}

/// Whether a panic raised now on this thread will be caught by [`catch_expected`]. Meant for
/// panic hooks.
pub fn is_caught() -> bool {
    CATCHING.with(|c| c.get() > 0)
}

/// Chain a panic hook in front of the current one: a panic that [`catch_expected`] will catch
/// unwinds silently; every other panic goes to the current hook (under libFuzzer, the hook
/// that reports the crash and aborts). Call it after the hook to keep has been installed.
pub fn let_caught_panics_unwind() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !is_caught() {
            previous(info);
        }
    }));
}
