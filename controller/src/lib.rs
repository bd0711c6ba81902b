//! The open-source ClusterPromotion reconciler: the decision is `promotion_shared::reconcile`
//! (pure, tested without a cluster); this crate reads its inputs (a snapshot file or the live
//! cluster) and carries it out.
//!
//! - [`cli`]: the command line;
//! - [`snapshot`]: a [`promotion_shared::reconcile::Snapshot`] from manifests or from the cluster;
//! - [`live`]: the live reconciler of `run` (watches into reflector stores, guarded writes, Lease,
//!   metrics);
//! - [`commands`]: one module per command (`reconcile --dry-run`, `run`).

pub mod cli;
pub mod commands;
pub mod error;
pub mod live;
pub mod snapshot;
