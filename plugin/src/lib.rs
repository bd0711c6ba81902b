//! The `kubectl promotion` plugin as a library: the binary (`main.rs`) parses the command line
//! and runs a command; the fuzz targets and benchmarks drive the same modules.
//!
//! By role: `cluster` talks to the API server, `view` computes what a promotion's state means,
//! `render` (with `jsonpath`) prints it, and `commands` puts them together, one module per
//! command.

pub mod cli;
pub mod cluster;
pub mod commands;
pub mod duration;
pub mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod jsonpath;
pub mod render;
pub mod view;
