//! The rollout history as `history` shows it: one row per revision, oldest first, each saying
//! what changed against the revision before it in the words `describe`'s `Runs:` line uses
//! ([`promotion_shared::revision::change`]). Pure: the command reads the revisions.

use serde::Serialize;
use serde_json::Value;

use promotion_shared::history::{Record, Revision};
use promotion_shared::revision::{change, Deploys};

/// One revision, as a row and as an item of `-o json|yaml`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryRow {
    pub revision: i64,
    /// When it started (`None`: its record is missing or unreadable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// Who started it, by the webhook's record of the spec change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_by: Option<String>,
    /// `in progress`, `complete`, `superseded by N`, or `unknown`.
    pub outcome: String,
    /// The stages it reached, in order.
    pub reached: Vec<String>,
    /// The spec change that started it set the spec back to this revision (`kubectl promotion
    /// undo`), by the webhook's record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored_revision: Option<i64>,
    /// What changed against the revision before it (the first: what it deploys), after "undo
    /// of N: " for an undo.
    pub change: String,
}

impl HistoryRow {
    pub fn cells(&self) -> Vec<String> {
        let or_dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_string());
        vec![
            self.revision.to_string(),
            or_dash(&self.started),
            or_dash(&self.started_by),
            self.outcome.clone(),
            if self.reached.is_empty() {
                "-".to_string()
            } else {
                self.reached.join(",")
            },
            self.change.clone(),
        ]
    }
}

/// The rows of `revisions` (sorted by number).
pub fn rows(revisions: &[Revision]) -> Vec<HistoryRow> {
    let mut previous: Option<&Revision> = None;
    let mut out = Vec::new();
    for r in revisions {
        let record = r.record.as_ref();
        let change = match previous {
            None => first_change(r.number, r.profile_spec()),
            Some(p) => {
                let words = change(p.profile_spec(), r.profile_spec());
                if words.is_empty() {
                    "stages only (same profileSpec)".to_string()
                } else {
                    words
                }
            }
        };
        let restored_revision = record.and_then(|rec| rec.restored_revision);
        let change = match restored_revision {
            Some(n) => format!("undo of {n}: {change}"),
            None => change,
        };
        out.push(HistoryRow {
            revision: r.number,
            started: record.map(|rec| rec.started.clone()),
            started_by: record.and_then(|rec| rec.started_by.clone()),
            outcome: record.map_or_else(|| "unknown".to_string(), Record::outcome),
            reached: record
                .map(|rec| rec.stages.iter().map(|s| s.name.clone()).collect())
                .unwrap_or_default(),
            restored_revision,
            change,
        });
        previous = Some(r);
    }
    out
}

/// What the oldest revision kept deploys, in a few words: the first rollout's configuration,
/// or (when earlier revisions were pruned) what there is nothing left to compare it with.
fn first_change(number: i64, spec: Option<&Value>) -> String {
    let d = Deploys::of(spec);
    let mut parts: Vec<String> = d.helm_charts.clone();
    parts.extend(d.policy_refs.iter().cloned());
    parts.extend(d.kustomization_refs.iter().cloned());
    let deploys = if parts.is_empty() {
        "its profileSpec".to_string()
    } else {
        parts.join(", ")
    };
    if number == 1 {
        format!("first rollout: {deploys}")
    } else {
        format!("{deploys} (earlier revisions pruned)")
    }
}

/// A revision whole, for `history --revision N`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Whole<'a> {
    pub revision: i64,
    pub name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<&'a Record>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_spec: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages: Option<&'a Value>,
}

pub fn whole(r: &Revision) -> Whole<'_> {
    Whole {
        revision: r.number,
        name: &r.name,
        record: r.record.as_ref(),
        profile_spec: r.profile_spec(),
        stages: r.data.get("stages"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn revision(number: i64, version: &str, record: Option<Record>) -> Revision {
        Revision {
            name: format!("kyverno-{number}"),
            number,
            data: json!({"profileSpec": {"helmCharts": [{"releaseNamespace": "kyverno",
                "releaseName": "kyverno", "chartName": "kyverno/kyverno",
                "chartVersion": version}]}, "stages": []}),
            record,
        }
    }

    #[test]
    fn each_row_says_what_changed_since_the_revision_before() {
        let record = |by: Option<&str>, superseded: Option<i64>| Record {
            started: "2026-03-02T09:00:00Z".into(),
            started_by: by.map(String::from),
            superseded_by: superseded,
            stages: vec![promotion_shared::history::StageRecord {
                name: "dev".into(),
                reached: "2026-03-02T09:00:00Z".into(),
                deployed: None,
            }],
            ..Record::default()
        };
        let rows = rows(&[
            revision(1, "3.6.2", Some(record(Some("alice"), Some(2)))),
            revision(2, "3.6.3", Some(record(None, None))),
            revision(3, "3.6.3", None),
        ]);
        let cells: Vec<Vec<String>> = rows.iter().map(HistoryRow::cells).collect();
        assert_eq!(
            cells[0],
            [
                "1",
                "2026-03-02T09:00:00Z",
                "alice",
                "superseded by 2",
                "dev",
                &format!(
                    "first rollout: {}",
                    Deploys::of(revision(1, "3.6.2", None).profile_spec()).helm_charts[0]
                )
            ]
        );
        assert_eq!(cells[1][2], "-");
        assert_eq!(cells[1][3], "in progress");
        assert_eq!(cells[1][5], "kyverno/kyverno 3.6.2 → 3.6.3");
        assert_eq!(
            cells[2],
            [
                "3",
                "-",
                "-",
                "unknown",
                "-",
                "stages only (same profileSpec)"
            ]
        );
    }

    #[test]
    fn an_undo_says_which_revision_it_restored() {
        let undo = Record {
            started: "2026-03-02T10:00:00Z".into(),
            started_by: Some("dora".into()),
            restored_revision: Some(1),
            ..Record::default()
        };
        let rows = rows(&[revision(2, "3.6.3", None), revision(3, "3.6.2", Some(undo))]);
        assert_eq!(rows[1].cells()[2], "dora");
        assert_eq!(
            rows[1].cells()[5],
            "undo of 1: kyverno/kyverno 3.6.3 → 3.6.2"
        );
        assert_eq!(rows[0].restored_revision, None);
        let json = serde_json::to_value(&rows).unwrap();
        assert_eq!(json[1]["restoredRevision"], 1);
        assert!(json[0].get("restoredRevision").is_none(), "{json}");
    }
}
