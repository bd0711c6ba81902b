//! The stack every checker's parse runs on.
//!
//! Parsers for Lua and CEL recurse; adversarial input must not overflow the caller's stack
//! (tokio workers have 2 MiB). Inputs are size- and nesting-capped so that the deepest parse
//! fits in [`VALIDATION_STACK_BYTES`] even in a debug build (measured: 1,024 nested Lua
//! parentheses need about 32 MiB unoptimized, 8 MiB optimized).

/// Threads that validate often should be created with this stack size: then no parse needs a
/// fresh stack, and pages stay warm between calls.
pub const VALIDATION_STACK_BYTES: usize = 64 * 1024 * 1024;
/// Below this much remaining stack a parse moves to a fresh [`VALIDATION_STACK_BYTES`] stack
/// (reserved, not committed: pages are touched only as deep as a parse goes).
const PARSER_RED_ZONE: usize = 48 * 1024 * 1024;

/// Run a recursive parser with enough stack for any size-capped input.
pub fn on_parser_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(PARSER_RED_ZONE, VALIDATION_STACK_BYTES, f)
}
