//! Cluster access: everything that talks to the API server. Connecting (`connection`: the
//! kubeconfig and kubectl's flags; `request_log`: `-v=N`), the calls themselves as raw JSON
//! (`kube_client`, and `resources`, the one table of the API resources), reading a promotion
//! with what surrounds it (`fetch`, `summary_list`, `inventory`,
//! `admission_webhooks`) and following it through watch events (`watch`).

pub mod admission_webhooks;
pub mod connection;
pub mod fetch;
pub mod inventory;
pub mod kube_client;
pub mod request_log;
pub mod resources;
pub mod summary_list;
pub mod watch;
