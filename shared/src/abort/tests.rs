use serde_json::json;

use super::*;

fn id(stages: &str, profile: &str) -> RolloutId {
    RolloutId {
        stages_hash: stages.into(),
        profile_spec_hash: profile.into(),
    }
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
