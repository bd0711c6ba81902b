//! Everything `kubectl-promotion` and `promotion-webhook` both need: the ClusterPromotion model,
//! the validation engine, stage-state derivation, patches and diff. No I/O.

pub mod model;
pub mod observe;
pub mod pipeline;
pub mod selector;
pub mod validation;
