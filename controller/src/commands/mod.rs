//! One module per command.

pub mod reconcile;
pub mod run;
