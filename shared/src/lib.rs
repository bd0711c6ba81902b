//! Everything `kubectl-promotion` and `promotion-webhook` both need: the ClusterPromotion model,
//! the validation engine, stage-state derivation, patches and diff. No I/O.

pub mod admission;
pub mod diff;
pub mod model;
pub mod observe;
pub mod patch;
pub mod pipeline;
pub mod plan;
pub mod selector;
pub mod source;
pub mod tree;
pub mod validation;
