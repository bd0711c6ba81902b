//! An aborted rollout as `describe`, `list` and `wait` show it: who aborted it, when, why, the
//! revision it is rolled back to, the revision the spec is still at, and what `retry` does.
//! Pure: `describe` reads the history and fills [`AbortView::spec_revision`].

use serde::Serialize;

use promotion_shared::abort::{AbortRecord, Aborted};
use promotion_shared::history::Revision;
use promotion_shared::rollout::RolloutId;

/// The abort of the current rollout, as the promotion's annotations say.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AbortView {
    #[serde(skip)]
    pub abort: Aborted,
    /// The revision the stages are set back to (a rollback).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollback_to: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The webhook's record of this very request: who and when (absent: it did not see it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<AbortRecord>,
    /// Why the request cannot be read (it holds the rollout all the same).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
    /// The revision of the spec's rollout in the history, when it is there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_revision: Option<i64>,
    /// The groups the published rules require for a retry (`rollback-groups`); empty: none,
    /// or not read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub retry_requires: Vec<String>,
}

impl AbortView {
    pub fn of(abort: Aborted) -> AbortView {
        AbortView {
            rollback_to: abort.rollback_to(),
            reason: abort.reason().map(String::from),
            record: abort.record.clone(),
            invalid: abort.request.as_ref().err().cloned(),
            spec_revision: None,
            retry_requires: Vec::new(),
            abort,
        }
    }

    /// " (only a member of group \"sre\" may retry)", when the rules restrict it.
    fn who_may_retry(&self) -> String {
        if self.retry_requires.is_empty() {
            return String::new();
        }
        format!(
            " (only a member of {} may retry, by the published rules)",
            promotion_shared::admission::group_list(&self.retry_requires)
        )
    }

    /// What the abort holds, for `describe`'s `Aborted:` line and `wait`: who, when, why, the
    /// revision the spec is still at, and what `retry` does.
    pub fn explain(&self, name: &str) -> String {
        let what = self.abort.describe();
        match self.rollback_to {
            Some(_) => {
                let spec = self
                    .spec_revision
                    .map(|m| format!(" (spec still at revision {m})"))
                    .unwrap_or_else(|| " (spec unchanged)".to_string());
                format!(
                    "{what}{spec}; `kubectl promotion retry {name}` starts the spec's rollout \
                     again from its first stage{}",
                    self.who_may_retry()
                )
            }
            None => format!(
                "{what}; no stage of this rollout starts and no approval is used until \
                 `kubectl promotion retry {name}`{}",
                self.who_may_retry()
            ),
        }
    }

    /// The next step: retry, and what it does.
    pub fn next_step(&self, name: &str) -> String {
        match self.rollback_to {
            Some(n) => format!(
                "kubectl promotion retry {name}   (starts the spec's rollout again from its first \
                 stage, through its gates; to stay on revision {n}, set the spec back to it)"
            ),
            None => {
                format!("kubectl promotion retry {name}   (the rollout resumes where it stopped)")
            }
        }
    }
}

/// The revision number of the rollout `current`, if the history has it.
pub fn spec_revision(revisions: &[Revision], current: &RolloutId) -> Option<i64> {
    revisions
        .iter()
        .filter(|r| {
            r.record
                .as_ref()
                .is_some_and(|rec| &rec.rollout() == current)
        })
        .map(|r| r.number)
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use promotion_shared::abort::AbortRequest;
    use promotion_shared::history::Record;

    fn view(rollback_to: Option<i64>, record: bool) -> AbortView {
        let request = AbortRequest {
            stages_hash: "s".into(),
            profile_spec_hash: "p".into(),
            rollback_to,
            reason: Some("bad chart".into()),
        };
        AbortView::of(Aborted {
            record: record.then(|| AbortRecord {
                aborted: true,
                user: "alice".into(),
                time: "2026-02-16T07:40:00Z".into(),
                request: Some(request.to_annotation()),
            }),
            request: Ok(request),
        })
    }

    #[test]
    fn an_abort_says_who_why_and_that_retry_resumes() {
        assert_eq!(
            view(None, true).explain("p"),
            "aborted by alice at 2026-02-16T07:40:00Z: \"bad chart\"; no stage of this rollout \
             starts and no approval is used until `kubectl promotion retry p`"
        );
        assert_eq!(
            view(None, false).next_step("p"),
            "kubectl promotion retry p   (the rollout resumes where it stopped)"
        );
    }

    #[test]
    fn published_rollback_groups_say_who_may_retry() {
        let mut v = view(None, true);
        v.retry_requires = vec!["sre".into()];
        assert!(
            v.explain("p")
                .ends_with("(only a member of group \"sre\" may retry, by the published rules)"),
            "{}",
            v.explain("p")
        );
    }

    #[test]
    fn a_rollback_says_where_the_spec_still_is() {
        let mut v = view(Some(2), false);
        assert_eq!(
            v.explain("p"),
            "rolled back to revision 2 (who is not recorded: the admission webhook did not see \
             the request): \"bad chart\" (spec unchanged); `kubectl promotion retry p` starts the \
             spec's rollout again from its first stage"
        );
        v.spec_revision = Some(4);
        assert!(
            v.explain("p")
                .contains("\"bad chart\" (spec still at revision 4); "),
            "{}",
            v.explain("p")
        );
    }

    #[test]
    fn the_spec_revision_is_the_newest_of_its_rollout() {
        let id = RolloutId {
            stages_hash: "s".into(),
            profile_spec_hash: "p".into(),
        };
        let revision = |number, profile: &str| Revision {
            name: format!("r{number}"),
            number,
            data: serde_json::Value::Null,
            record: Some(Record {
                stages_hash: "s".into(),
                profile_spec_hash: profile.into(),
                ..Record::default()
            }),
        };
        let revisions = [revision(1, "p"), revision(2, "q"), revision(3, "p")];
        assert_eq!(spec_revision(&revisions, &id), Some(3));
        assert_eq!(spec_revision(&revisions[1..2], &id), None);
    }
}
