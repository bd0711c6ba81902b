//! The one rules engine of kubectl-promotion, without I/O. Every binary links it:
//! - `kubectl-promotion` (the plugin) uses the model, the validation engine (`lint`), the
//!   stage-state derivation (`describe`, `list`, `wait`, completion), the approval rules and
//!   patch (`approve`), the rollout rule and semantic diff (`diff`), and the admission logic to
//!   predict what the webhook will do (`diff`);
//! - `promotion-webhook` uses the validation engine and the admission logic (mutation, audit
//!   integrity, governance), which read the approval and rollout rules from here too;
//! - `promotion-controller` uses the reconcile decision ([`reconcile`]), the fleet and the
//!   patches.
//!
//! The CRD's structural schema (pruning, defaults, validation, CEL rules) is the `crd-schema`
//! crate's, shared by `lint` and the end-to-end tests' stand-in API server.
//!
//! Each Sveltos rule is defined once: [`rollout`] (what starts a new rollout), [`approval`]
//! (when an approval resets and when it has been used), [`gate`] (which gate `approve` opens,
//! and why it refuses), [`model`] (the typed ClusterPromotion and its decoder, generated profile
//! names, ownership, what a ClusterPromotion document is), [`fleet`] (the clusters a stage can
//! match), [`status`] (Sveltos' status texts). Each way of talking to the API server is defined
//! once too: [`patch`] builds every write of a promotion (a merge patch guarded by the
//! `resourceVersion` read), [`api_error`] reads every failed answer.

pub mod abort;
pub mod admission;
pub mod api_error;
pub mod api_resources;
pub mod approval;
pub mod cluster_summary;
pub mod cron;
pub mod diff;
pub mod fleet;
pub mod freshness;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod gate;
pub mod gitops;
pub mod history;
pub mod model;
pub mod on_failure;
pub mod patch;
pub mod pause;
pub mod pipeline;
pub mod plan;
pub mod promoting;
pub mod reconcile;
pub mod revision;
pub mod rollout;
pub mod selector;
pub mod status;
pub mod status_writer;
pub mod tree;
pub mod validation;
pub mod window;
