//! Test support for end-to-end tests: the stand-in Kubernetes API server, fixtures generated from
//! the example manifests, helpers to find and run the workspace's binaries, and headless Chromium
//! for browser tests.

pub mod addon_double;
pub mod apiserver;
pub mod backend;
pub mod bench_support;
pub mod bins;
pub mod browser;
pub mod chaos;
pub mod controller_process;
pub mod dashboard_client;
pub mod envtest;
pub mod fault_proxy;
pub mod fixtures;
pub mod proxy;
pub mod rollout;
