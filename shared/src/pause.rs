//! Pausing a promotion: the emergency brake of a live rollout.
//!
//! A user pauses a promotion by setting the annotation [`PAUSED_ANNOTATION`] (its value is the
//! reason, possibly empty) and resumes it by removing it — `kubectl promotion pause|resume`, or
//! `kubectl annotate`, or a GitOps tool. While it is there promotion-controller starts no stage,
//! passes no gate and uses no approval: a spec change starts nothing, a stage whose soak ends or
//! whose approval arrives stays where it is, the last stage is not marked complete. What Sveltos
//! is deploying continues (the stage profiles already applied stay), deployment and soak keep
//! being recorded, and deletion proceeds.
//!
//! The promotion webhook records who paused or resumed, when and why in
//! [`PAUSE_RECORD_ANNOTATION`] (an audit record: only the webhook writes it). The brake must not
//! depend on the webhook: requests that change nothing but the pause annotation go to the
//! webhooks with `failurePolicy: Ignore` (see `manifests/base`), so a pause goes through while
//! the webhook is down, unrecorded; [`Paused::record`] is then `None` and the views say so.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

/// Set by users: the promotion is paused; the value is the reason (may be empty).
pub const PAUSED_ANNOTATION: &str = "promotion-controller.kubectl-promotion.dev/paused";

/// JSON [`PauseRecord`] of the last request that paused, re-paused or resumed the promotion,
/// written by the mutating webhook only.
pub const PAUSE_RECORD_ANNOTATION: &str = "audit.kubectl-promotion.dev/pause";

/// Who paused (or resumed) the promotion, when, and why.
#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseRecord {
    /// `true`: the request paused the promotion (or changed the reason); `false`: resumed it.
    pub paused: bool,
    pub user: String,
    /// RFC 3339, second resolution, UTC.
    pub time: String,
    /// The pause annotation's value the request wrote (absent on a resume and for an empty
    /// reason).
    pub reason: Option<String>,
}

/// A paused promotion, as its annotations say.
#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Paused {
    /// The annotation's value (`None` when empty).
    pub reason: Option<String>,
    /// The webhook's record of this very pause; `None` when the webhook did not see it (it was
    /// down, not installed, or the annotation was written before it was).
    pub record: Option<PauseRecord>,
}

impl Paused {
    /// "by alice at T" / "(who paused it is not recorded)", for messages.
    pub fn by(&self) -> String {
        match &self.record {
            Some(r) => format!("by {} at {}", r.user, r.time),
            None => "(who paused it is not recorded: the admission webhook did not see the pause)"
                .to_string(),
        }
    }

    /// "paused by alice at T: \"bad chart\"", for explanations.
    pub fn describe(&self) -> String {
        match &self.reason {
            Some(reason) => format!("paused {}: {reason:?}", self.by()),
            None => format!("paused {}", self.by()),
        }
    }
}

/// The pause of `promotion`, if it is paused.
pub fn paused(promotion: &Value) -> Option<Paused> {
    let annotations = promotion.pointer("/metadata/annotations")?.as_object()?;
    let value = annotations.get(PAUSED_ANNOTATION)?.as_str()?;
    let record = annotations
        .get(PAUSE_RECORD_ANNOTATION)
        .and_then(Value::as_str);
    Some(of(value, record))
}

/// The pause of a decoded promotion (`metadata.annotations`), if it is paused.
pub fn paused_meta(
    metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<Paused> {
    let annotations = metadata.annotations.as_ref()?;
    let value = annotations.get(PAUSED_ANNOTATION)?;
    Some(of(
        value,
        annotations.get(PAUSE_RECORD_ANNOTATION).map(String::as_str),
    ))
}

/// A pause with the annotation's `value`, and the record `record` (its text) if it is this
/// pause's.
fn of(value: &str, record: Option<&str>) -> Paused {
    let reason = (!value.is_empty()).then(|| value.to_string());
    let record = record
        .and_then(|text| serde_json::from_str::<PauseRecord>(text).ok())
        .filter(|r| r.paused && r.reason == reason);
    Paused { reason, record }
}

/// The webhook's last pause record of `promotion`, or why it cannot be read.
pub fn pause_record(promotion: &Value) -> Result<Option<PauseRecord>, String> {
    match promotion
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(PAUSE_RECORD_ANNOTATION))
        .and_then(Value::as_str)
    {
        None => Ok(None),
        Some(text) => serde_json::from_str(text).map(Some).map_err(|e| {
            format!("annotation {PAUSE_RECORD_ANNOTATION} is not a pause record: {e}")
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn promotion(annotations: Value) -> Value {
        json!({"metadata": {"name": "p", "annotations": annotations}})
    }

    #[test]
    fn the_annotation_pauses_and_the_record_says_who_only_when_it_is_this_pause() {
        assert_eq!(paused(&promotion(json!({}))), None);
        let record = |paused: bool, reason: Option<&str>| {
            serde_json::to_string(&PauseRecord {
                paused,
                user: "alice".into(),
                time: "2026-02-16T07:40:00Z".into(),
                reason: reason.map(String::from),
            })
            .unwrap()
        };
        let p = paused(&promotion(json!({
            PAUSED_ANNOTATION: "bad chart",
            PAUSE_RECORD_ANNOTATION: record(true, Some("bad chart")),
        })))
        .unwrap();
        assert_eq!(p.reason.as_deref(), Some("bad chart"));
        assert_eq!(
            p.describe(),
            "paused by alice at 2026-02-16T07:40:00Z: \"bad chart\""
        );
        // A record of a resume, or of another reason, is not this pause's.
        for stale in [record(false, None), record(true, Some("other"))] {
            let p = paused(&promotion(json!({
                PAUSED_ANNOTATION: "bad chart",
                PAUSE_RECORD_ANNOTATION: stale,
            })))
            .unwrap();
            assert_eq!(p.record, None);
            assert!(p.describe().contains("not recorded"), "{}", p.describe());
        }
        let p = paused(&promotion(json!({PAUSED_ANNOTATION: ""}))).unwrap();
        assert_eq!(p.reason, None);
    }
}
