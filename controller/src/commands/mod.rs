//! One module per command.

pub mod reconcile;
