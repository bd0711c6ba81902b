use serde_json::json;

use super::*;
use crate::history::{Record, StageRecord};

fn id(stages: &str, profile: &str) -> RolloutId {
    RolloutId {
        stages_hash: stages.into(),
        profile_spec_hash: profile.into(),
    }
}

fn revision(number: i64, rollout: &RolloutId, reached: &[&str], completed: bool) -> Revision {
    Revision {
        name: format!("p-{number}"),
        number,
        data: json!({}),
        record: Some(Record {
            stages_hash: rollout.stages_hash.clone(),
            profile_spec_hash: rollout.profile_spec_hash.clone(),
            started: "2026-11-01T00:00:00Z".into(),
            stages: reached
                .iter()
                .map(|s| StageRecord {
                    name: s.to_string(),
                    reached: "2026-11-01T00:00:00Z".into(),
                    deployed: Some("2026-11-01T00:01:00Z".into()),
                })
                .collect(),
            completed: completed.then(|| "2026-11-01T01:00:00Z".to_string()),
            ..Record::default()
        }),
    }
}

#[test]
fn the_default_target_is_the_newest_complete_revision_of_the_same_stages() {
    let current = id("s", "p4");
    let revisions = vec![
        revision(1, &id("s", "p1"), &["dev", "prod"], true),
        revision(2, &id("s", "p2"), &["dev", "prod"], true),
        revision(3, &id("s", "p3"), &["dev"], false),
        revision(4, &current, &["dev"], false),
        revision(5, &id("other", "p5"), &["dev", "prod"], true),
    ];
    assert_eq!(
        rollback_target(&revisions, &current, None).unwrap().number,
        2
    );
    assert_eq!(
        rollback_target(&revisions, &current, Some(1))
            .unwrap()
            .number,
        1
    );
}

#[test]
fn each_refusal_says_why() {
    let current = id("s", "p4");
    let revisions = vec![
        revision(2, &id("s", "p2"), &["dev"], false),
        revision(4, &current, &["dev"], false),
        revision(5, &id("other", "p5"), &["dev", "prod"], true),
    ];
    let refused = |to| rollback_target(&revisions, &current, to).unwrap_err();
    assert!(
        refused(None).contains("no earlier rollout"),
        "{}",
        refused(None)
    );
    assert!(refused(Some(9)).contains("not in this promotion's history (kept: 2, 4, 5)"));
    assert!(refused(Some(4)).contains("is the current rollout"));
    assert!(refused(Some(5)).contains("other stages"));
    assert!(refused(Some(2)).contains("never completed (it reached dev)"));
    let unreadable = vec![Revision {
        record: None,
        ..revision(1, &id("s", "p1"), &[], true)
    }];
    assert!(rollback_target(&unreadable, &current, Some(1))
        .unwrap_err()
        .contains("cannot be read"));
}

#[test]
fn the_request_belongs_to_its_rollout_and_the_record_says_who_only_when_it_is_this_request() {
    let request = AbortRequest {
        stages_hash: "s".into(),
        profile_spec_hash: "p".into(),
        rollback_to: Some(3),
        reason: Some("bad chart".into()),
    };
    let text = request.to_annotation();
    let record = |value: &str| {
        serde_json::to_string(&AbortRecord {
            aborted: true,
            user: "alice".into(),
            time: "2026-11-29T09:00:00Z".into(),
            request: Some(value.into()),
        })
        .unwrap()
    };
    let promotion = |value: &str, rec: String| {
        json!({"metadata": {"annotations": {
            ABORT_ANNOTATION: value,
            ABORT_RECORD_ANNOTATION: rec,
        }}})
    };
    let a = aborted(&promotion(&text, record(&text))).unwrap();
    assert!(a.applies_to(&id("s", "p")));
    assert!(!a.applies_to(&id("s", "other")));
    assert_eq!(a.rollback_to(), Some(3));
    assert_eq!(
        a.describe(),
        "rolled back to revision 3 by alice at 2026-11-29T09:00:00Z: \"bad chart\""
    );
    // A record of another request is not this one's.
    let a = aborted(&promotion(&text, record("{}"))).unwrap();
    assert!(a.describe().contains("not recorded"), "{}", a.describe());
    // An unreadable request holds whatever rollout is current, and says why.
    let a = aborted(&promotion("stop", record("stop"))).unwrap();
    assert!(a.applies_to(&id("any", "thing")));
    assert!(
        a.describe().contains("is not an abort request"),
        "{}",
        a.describe()
    );
    assert!(
        AbortRequest::parse(r#"{"stagesHash":"s","profileSpecHash":"p","rollbackTo":0}"#)
            .unwrap_err()
            .contains("rollbackTo 0 is not a revision")
    );
    assert_eq!(aborted(&json!({"metadata": {}})), None);
}
