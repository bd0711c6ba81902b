//! What every checker of this project reports, and where: a [`Finding`] (severity, stable code,
//! message, position inside an embedded script) at a [`FieldPath`] written as the Kubernetes API
//! server writes field paths (`spec.stages[1].trigger.auto.delay`), and the stack the recursive
//! parsers run on ([`on_parser_stack`]).
//!
//! The engine crates (Lua, CEL, CRD schema) and the domain crate `promotion-shared` all speak
//! these types, so a finding crosses crates without conversion.

mod finding;
mod path;
mod stack;

pub use finding::{Finding, Severity};
pub use path::{segments, FieldPath, Segment};
pub use stack::{on_parser_stack, VALIDATION_STACK_BYTES};
