//! The promotion step a reconciler has committed to, kept on the promotion itself so that a crash
//! between writes neither loses an approval nor uses it twice.
//!
//! A manual gate's approval and the status that records the promotion live in two places the API
//! server writes separately (`spec` and the `status` subresource). Upstream removes `approved` in
//! one patch and writes the status in another (D2): a failure between them loses the approval. Our
//! controller removes `approved` and writes this annotation in **one** guarded patch of the main
//! resource — that patch is the commit point — then writes the status, then removes the
//! annotation. A reconcile that finds the annotation for the stage it is gating, in the same
//! rollout, passes the gate without an approval: the approval was used for exactly this step.
//!
//! Only the controller may write it: the webhook refuses anyone else's change to it
//! (`crate::admission`), since it opens a gate.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::rollout::RolloutId;

/// `metadata.annotations` key of the committed step.
pub const PROMOTING_ANNOTATION: &str = "promotion-controller.kubectl-promotion.dev/promoting";

/// "The approval of `stage` was used to promote from it, in rollout `rollout`."
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Promoting {
    pub stage: String,
    #[serde(flatten)]
    pub rollout: RolloutId,
}

impl Promoting {
    /// The annotation's value.
    pub fn to_annotation(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The committed step recorded on `promotion`, if any, and the raw annotation text (the guard of
/// the write that removes it). A value that is not ours is `(None, Some(text))`: removed, never
/// honoured.
pub fn recorded(promotion: &Value) -> (Option<Promoting>, Option<String>) {
    let text = promotion
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(PROMOTING_ANNOTATION))
        .and_then(Value::as_str)
        .map(str::to_string);
    let parsed = text
        .as_deref()
        .and_then(|t| serde_json::from_str::<Promoting>(t).ok());
    (parsed, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_the_annotation() {
        let p = Promoting {
            stage: "staging".into(),
            rollout: RolloutId {
                stages_hash: "s".into(),
                profile_spec_hash: "p".into(),
            },
        };
        let object = serde_json::json!({"metadata": {"annotations": {
            PROMOTING_ANNOTATION: p.to_annotation()}}});
        assert_eq!(recorded(&object).0, Some(p));
        let garbage = serde_json::json!({"metadata": {"annotations": {
            PROMOTING_ANNOTATION: "staging"}}});
        assert_eq!(recorded(&garbage), (None, Some("staging".into())));
    }
}
