//! The one rules engine of kubectl-promotion, without I/O. Both binaries link it:
//! - `kubectl-promotion` (the plugin) uses the model, the validation engine (`lint`), the
//!   stage-state derivation (`describe`, `list`, `wait`, completion), the approval rules and
//!   patch (`approve`), the rollout rule and semantic diff (`diff`), and the admission logic to
//!   predict what the webhook will do (`diff`);
//! - `promotion-webhook` uses the validation engine and the admission logic (mutation, audit
//!   integrity, governance), which read the approval and rollout rules from here too.
//!
//! The CRD's structural schema ([`schema`]: pruning, defaults, validation, CEL rules) serves
//! `lint` and the end-to-end tests' stand-in API server alike.
//!
//! Each Sveltos rule is defined once: [`rollout`] (what starts a new rollout), [`approval`]
//! (when an approval resets and when it has been used), [`gate`] (which gate `approve` opens,
//! and why it refuses), [`model`] (generated profile names, ownership, what a ClusterPromotion
//! document is), [`status`] (Sveltos' status texts).

pub mod admission;
pub mod api_resources;
pub mod approval;
pub mod cluster_summary;
pub mod cron;
pub mod diff;
pub mod freshness;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod gate;
pub mod model;
pub mod patch;
pub mod pipeline;
pub mod plan;
pub mod promoting;
pub mod reconcile;
pub mod rollout;
pub mod selector;
pub mod status;
pub mod status_writer;
pub mod tree;
pub mod validation;
pub mod window;
