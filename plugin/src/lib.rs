//! The `kubectl promotion` plugin as a library: the binary (`main.rs`) parses the command line
//! and runs a command; the fuzz targets and benchmarks drive the same modules.

pub mod admission_webhooks;
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod connection;
pub mod duration;
pub mod error;
pub mod events;
pub mod fetch;
pub mod fuzzing;
pub mod inventory;
pub mod jsonpath;
pub mod kube_client;
pub mod output;
pub mod printers;
pub mod render;
pub mod request_log;
pub mod summary_list;
pub mod view;
pub mod watch;
