//! What promotion-controller does when a stage of the current rollout keeps failing: halt (the
//! default: the rollout waits where it is, as Sveltos does) or roll back on its own
//! ([`crate::abort`]).
//!
//! Opt-in per promotion, by annotations users set (the webhook and lint validate them):
//! - [`ON_FAILURE_ANNOTATION`]: `halt` (default) or `rollback`;
//! - [`FAILURE_GRACE_ANNOTATION`]: how long a stage may fail before the rollback, a Go duration
//!   (default 10m);
//! - [`FAILURE_THRESHOLD_ANNOTATION`]: how many of the stage's clusters must fail, a count (`2`)
//!   or a percentage of the stage's ClusterSummaries (`20%`); default 1. A cluster counts as
//!   failing when a feature of its ClusterSummary is `Failed` (Sveltos retries it) or
//!   `FailedNonRetriable`; a cluster that is not ready has no ClusterSummary work in progress
//!   and does not count.
//!
//! The controller notes when the stage started failing past the threshold in
//! [`FAILING_ANNOTATION`] (its own: only it may write it), so that the grace survives restarts
//! and leader changes; once the grace is over and it still fails, the controller sets the abort
//! request with a rollback to the newest completed revision ([`crate::history::rollback_target`]),
//! its reason naming the failure. With no completed revision to go back to it halts and says so.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::rollout::RolloutId;

/// `halt` or `rollback`.
pub const ON_FAILURE_ANNOTATION: &str = "promotion-controller.kubectl-promotion.dev/on-failure";
/// A Go duration; default [`DEFAULT_GRACE`].
pub const FAILURE_GRACE_ANNOTATION: &str =
    "promotion-controller.kubectl-promotion.dev/failure-grace";
/// A count (`2`) or a percentage (`20%`) of a stage's clusters; default 1.
pub const FAILURE_THRESHOLD_ANNOTATION: &str =
    "promotion-controller.kubectl-promotion.dev/failure-threshold";
/// The controller's note of a failing stage ([`Failing`]); only the controller writes it.
pub const FAILING_ANNOTATION: &str = "promotion-controller.kubectl-promotion.dev/failing";

pub const DEFAULT_GRACE: &str = "10m";

/// The reason of the Warning Event that says the controller asked for a rollback itself.
pub const AUTOMATIC_ROLLBACK: &str = "AutomaticRollback";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threshold {
    Clusters(u64),
    Percent(u64),
}

impl Threshold {
    /// Whether `failing` of `total` clusters reach it.
    pub fn reached(&self, failing: usize, total: usize) -> bool {
        let failing = failing as u64;
        match *self {
            Threshold::Clusters(n) => failing >= n.max(1),
            Threshold::Percent(p) => failing > 0 && failing * 100 >= p * total as u64,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Threshold::Clusters(1) => "1 cluster".to_string(),
            Threshold::Clusters(n) => format!("{n} clusters"),
            Threshold::Percent(p) => format!("{p}% of its clusters"),
        }
    }
}

/// A promotion's failure policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    pub rollback: bool,
    /// The grace, in nanoseconds, and as written.
    pub grace_ns: u64,
    pub grace: String,
    pub threshold: Threshold,
}

impl Policy {
    /// The policy of `promotion`'s annotations, or the first reason one cannot be read (with
    /// the annotation it concerns).
    pub fn of(promotion: &Value) -> Result<Policy, (&'static str, String)> {
        let annotation = |key: &str| {
            promotion
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
        };
        Policy::from_values(
            annotation(ON_FAILURE_ANNOTATION),
            annotation(FAILURE_GRACE_ANNOTATION),
            annotation(FAILURE_THRESHOLD_ANNOTATION),
        )
    }

    /// The policy of the three annotations' values.
    pub fn from_values(
        on_failure: Option<&str>,
        grace: Option<&str>,
        threshold: Option<&str>,
    ) -> Result<Policy, (&'static str, String)> {
        let rollback = match on_failure.unwrap_or("halt") {
            "halt" => false,
            "rollback" => true,
            other => {
                return Err((
                    ON_FAILURE_ANNOTATION,
                    format!("{other:?} is neither \"halt\" nor \"rollback\""),
                ))
            }
        };
        let grace = grace.unwrap_or(DEFAULT_GRACE);
        let grace_ns = go_text::duration::parse_go_duration(grace)
            .map_err(|e| (FAILURE_GRACE_ANNOTATION, e))
            .and_then(|ns| {
                u64::try_from(ns)
                    .map_err(|_| (FAILURE_GRACE_ANNOTATION, format!("{grace:?} is negative")))
            })?;
        let threshold = match threshold {
            None => Threshold::Clusters(1),
            Some(text) => parse_threshold(text).ok_or_else(|| {
                (
                    FAILURE_THRESHOLD_ANNOTATION,
                    format!(
                        "{text:?} is neither a number of clusters (at least 1) nor a percentage \
                         (1% to 100%)"
                    ),
                )
            })?,
        };
        Ok(Policy {
            rollback,
            grace_ns,
            grace: grace.to_string(),
            threshold,
        })
    }
}

fn parse_threshold(text: &str) -> Option<Threshold> {
    match text.strip_suffix('%') {
        Some(p) => p
            .parse::<u64>()
            .ok()
            .filter(|p| (1..=100).contains(p))
            .map(Threshold::Percent),
        None => text
            .parse::<u64>()
            .ok()
            .filter(|n| *n >= 1)
            .map(Threshold::Clusters),
    }
}

/// The controller's note: since when a stage of a rollout has failed past the threshold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failing {
    pub stages_hash: String,
    pub profile_spec_hash: String,
    pub stage: String,
    /// RFC 3339, UTC.
    pub since: String,
}

impl Failing {
    pub fn rollout(&self) -> RolloutId {
        RolloutId {
            stages_hash: self.stages_hash.clone(),
            profile_spec_hash: self.profile_spec_hash.clone(),
        }
    }

    /// The note on `promotion`, if it has a readable one.
    pub fn of(promotion: &Value) -> Option<Failing> {
        let text = promotion
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(FAILING_ANNOTATION))
            .and_then(Value::as_str)?;
        serde_json::from_str(text).ok()
    }

    pub fn to_annotation(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The promotion's UID when its decision reads the rollout history: while a rollback is asked
/// for, or may be due (a failing stage noted under `on-failure: rollback`).
pub fn history_needed(promotion: &Value) -> Option<&str> {
    let rollback = crate::abort::aborted(promotion)
        .and_then(|a| a.rollback_to())
        .is_some();
    let failing = Failing::of(promotion).is_some();
    if !rollback && !failing {
        return None;
    }
    promotion.pointer("/metadata/uid").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_reads_its_annotations_and_names_the_wrong_one() {
        let p = Policy::from_values(Some("rollback"), Some("90s"), Some("20%")).unwrap();
        assert!(p.rollback);
        assert_eq!(p.grace_ns, 90_000_000_000);
        assert_eq!(p.threshold, Threshold::Percent(20));
        let d = Policy::from_values(None, None, None).unwrap();
        assert!(!d.rollback);
        assert_eq!(d.threshold, Threshold::Clusters(1));
        assert_eq!(d.grace, "10m");
        let (key, why) = Policy::from_values(Some("revert"), None, None).unwrap_err();
        assert_eq!(key, ON_FAILURE_ANNOTATION);
        assert!(why.contains("\"revert\""), "{why}");
        for bad in ["0", "0%", "101%", "x"] {
            let (key, _) = Policy::from_values(None, None, Some(bad)).unwrap_err();
            assert_eq!(key, FAILURE_THRESHOLD_ANNOTATION, "{bad}");
        }
        let (key, _) = Policy::from_values(None, Some("soon"), None).unwrap_err();
        assert_eq!(key, FAILURE_GRACE_ANNOTATION);
    }

    #[test]
    fn a_threshold_counts_clusters_or_a_share_of_them() {
        assert!(Threshold::Clusters(1).reached(1, 10));
        assert!(!Threshold::Clusters(2).reached(1, 10));
        assert!(Threshold::Percent(20).reached(2, 10));
        assert!(!Threshold::Percent(20).reached(1, 10));
        assert!(!Threshold::Percent(20).reached(0, 0));
    }
}
