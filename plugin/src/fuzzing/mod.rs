//! The plugin's input surfaces as functions over arbitrary bytes, with their invariants checked:
//! the entry points of the cargo-fuzz targets `lint` and `view` (`fuzz/`) and of the bounded runs
//! in `tests/fuzz_bounded_*.rs`. Not used by the binary.
//!
//! A violated invariant panics with a description, which is what fuzzers report; an input the
//! code rejects with an error is not a violation.

pub mod choices;
pub mod lint;
pub mod view;
