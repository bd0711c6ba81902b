//! `promotion-controller run`: the decision of [`promotion_shared::reconcile`] carried out live,
//! driven by watches and by each decision's own deadline.
//!
//! - the kinds read and written: [`promotion_shared::api_resources`], the plugin's table too;
//! - [`stores`]: what the watches have seen (reflector stores), cut down to what the decision
//!   reads ([`kept`]: the typed forms of ClusterSummaries and clusters), with the side indexes a
//!   reconcile asks through;
//! - [`watches`]: profiles, summaries and clusters, each change mapped to its promotion;
//! - [`reconciler`]: one reconcile — snapshot, decision, ordered writes;
//! - [`writes`]: the guarded writes; [`fault`]: the crash injection the crash-safety tests use
//!   (a cargo feature, off in every release build);
//! - [`leader`]: leader election on a Lease;
//! - [`events`]: Events about promotions, series continued across replicas;
//! - [`history`]: the rollout history, one ControllerRevision per rollout;
//! - [`metrics`], [`http`]: Prometheus metrics, `/healthz` and `/readyz`;
//! - [`admission_probe`]: at start, whether the webhooks accept this controller's writes.

pub mod admission_probe;
pub mod events;
pub mod fault;
pub mod history;
pub mod http;
pub mod kept;
pub mod leader;
pub mod metrics;
pub mod reconciler;
pub mod stores;
pub mod watches;
pub mod writes;
