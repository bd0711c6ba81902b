//! Aborting a rollout, and rolling it back in one step.
//!
//! A user aborts the current rollout by setting [`ABORT_ANNOTATION`] to an [`AbortRequest`]
//! naming that rollout (the spec's `stagesHash` and `profileSpecHash`) — `kubectl promotion
//! abort|rollback`. While the request names the current rollout, promotion-controller starts no
//! stage of it, passes no gate and uses no approval, as for a pause; unlike a pause it belongs to
//! that rollout: a spec change starts the next rollout as usual. With `rollbackTo: N` the
//! controller also applies revision N's stage profiles ([`crate::history`]) **at once** to every
//! stage whose profile differs from them, without walking the gates: revision N completed, so
//! every stage ran it and it was verified there ([`crate::history::rollback_target`]). `spec` is left alone:
//! writing it back would restart the pipeline (Sveltos' rule) and fight a GitOps tool.
//!
//! Removing the annotation (`kubectl promotion retry`) resumes the rollout: an abort where it
//! stopped; a rollback from its first stage, since the stages it had reached run revision N now.
//!
//! The webhook records who set, changed or removed the request ([`ABORT_RECORD_ANNOTATION`], as
//! for a pause) and refuses a request that is not for the current rollout.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use crate::rollout::RolloutId;

/// Set by users: the rollout it names is aborted (and rolled back, with `rollbackTo`).
pub const ABORT_ANNOTATION: &str = "promotion-controller.kubectl-promotion.dev/abort";

/// JSON [`AbortRecord`] of the last request that set, changed or removed [`ABORT_ANNOTATION`],
/// written by the mutating webhook only.
pub const ABORT_RECORD_ANNOTATION: &str = "audit.kubectl-promotion.dev/abort";

/// The value of [`ABORT_ANNOTATION`].
#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AbortRequest {
    /// The rollout aborted: the spec's hashes when the request was made.
    pub stages_hash: String,
    pub profile_spec_hash: String,
    /// The revision whose profiles the stages get back.
    pub rollback_to: Option<i64>,
    pub reason: Option<String>,
}

impl AbortRequest {
    pub fn rollout(&self) -> RolloutId {
        RolloutId {
            stages_hash: self.stages_hash.clone(),
            profile_spec_hash: self.profile_spec_hash.clone(),
        }
    }

    /// The annotation's value.
    pub fn to_annotation(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The annotation's value parsed, or why it cannot be.
    pub fn parse(value: &str) -> Result<AbortRequest, String> {
        let request: AbortRequest = serde_json::from_str(value).map_err(|e| {
            format!(
                "{ABORT_ANNOTATION} is not an abort request \
                 ({{\"stagesHash\", \"profileSpecHash\", \"rollbackTo\", \"reason\"}}): {e}"
            )
        })?;
        if let Some(n) = request.rollback_to.filter(|n| *n < 1) {
            return Err(format!(
                "{ABORT_ANNOTATION}: rollbackTo {n} is not a revision (revisions count from 1)"
            ));
        }
        Ok(request)
    }
}

/// Who set, changed or removed the abort request, when, and what it left.
#[skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbortRecord {
    /// `true`: the request set or changed it; `false`: removed it (a retry).
    pub aborted: bool,
    pub user: String,
    /// RFC 3339, second resolution, UTC.
    pub time: String,
    /// The annotation's value the request left.
    pub request: Option<String>,
}

/// An aborted rollout, as the promotion's annotations say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Aborted {
    /// The request, or why it cannot be read (an unreadable request holds whatever rollout is
    /// current: a brake is not released by a typo).
    pub request: Result<AbortRequest, String>,
    /// The webhook's record of this very request (`None`: it did not see it).
    pub record: Option<AbortRecord>,
}

impl Aborted {
    /// Whether it aborts `rollout`.
    pub fn applies_to(&self, rollout: &RolloutId) -> bool {
        match &self.request {
            Ok(r) => &r.rollout() == rollout,
            Err(_) => true,
        }
    }

    pub fn rollback_to(&self) -> Option<i64> {
        self.request.as_ref().ok().and_then(|r| r.rollback_to)
    }

    pub fn reason(&self) -> Option<&str> {
        self.request.as_ref().ok().and_then(|r| r.reason.as_deref())
    }

    /// "by alice at T" / "(who is not recorded: …)".
    pub fn by(&self) -> String {
        match &self.record {
            Some(r) => format!("by {} at {}", r.user, r.time),
            None => {
                "(who is not recorded: the admission webhook did not see the request)".to_string()
            }
        }
    }

    /// "aborted by alice at T: \"bad chart\"", "rolled back to revision 3 by …".
    pub fn describe(&self) -> String {
        let what = match (&self.request, self.rollback_to()) {
            (Err(e), _) => return format!("aborted: {e}"),
            (Ok(_), Some(n)) => format!("rolled back to revision {n}"),
            (Ok(_), None) => "aborted".to_string(),
        };
        match self.reason() {
            Some(reason) => format!("{what} {}: {reason:?}", self.by()),
            None => format!("{what} {}", self.by()),
        }
    }
}

/// The abort request of `promotion`, if it has one (of any rollout: see
/// [`Aborted::applies_to`]).
pub fn aborted(promotion: &Value) -> Option<Aborted> {
    let annotations = promotion.pointer("/metadata/annotations")?.as_object()?;
    let value = annotations.get(ABORT_ANNOTATION)?.as_str()?;
    Some(of(
        value,
        annotations
            .get(ABORT_RECORD_ANNOTATION)
            .and_then(Value::as_str),
    ))
}

/// The abort request of a decoded promotion (`metadata.annotations`), if it has one.
pub fn aborted_meta(
    metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<Aborted> {
    let annotations = metadata.annotations.as_ref()?;
    let value = annotations.get(ABORT_ANNOTATION)?;
    Some(of(
        value,
        annotations.get(ABORT_RECORD_ANNOTATION).map(String::as_str),
    ))
}

fn of(value: &str, record: Option<&str>) -> Aborted {
    let record = record
        .and_then(|text| serde_json::from_str::<AbortRecord>(text).ok())
        .filter(|r| r.aborted && r.request.as_deref() == Some(value));
    Aborted {
        request: AbortRequest::parse(value),
        record,
    }
}

/// Whether the stage descriptions of a status (`currentStatusDescription`, each stage it lists)
/// say that every stage runs revision `n`, deployed: the controller's word that the rollback is
/// done ([`crate::status::descriptions::ROLLED_BACK`]).
pub fn all_rolled_back<'a>(
    descriptions: impl IntoIterator<Item = Option<&'a str>>,
    n: i64,
) -> bool {
    let done = format!("{}{n}", crate::status::descriptions::ROLLED_BACK);
    let mut any = false;
    for description in descriptions {
        any = true;
        if description.map(crate::status::strip_timestamp) != Some(done.as_str()) {
            return false;
        }
    }
    any
}

#[cfg(test)]
mod tests;
