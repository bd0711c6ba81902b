//! Properties of the admission logic over generated gate states: the plan applies, planning
//! again is a no-op, the integrity check accepts the plan's own output, and an approval this
//! request turns on is never reset.

use chrono::{TimeDelta, TimeZone, Utc};
use proptest::prelude::*;
use serde_json::{json, Value};

use promotion_shared::admission::{
    check_audit_integrity, newly_approved_stages, plan_mutation, UserInfo,
    APPROVAL_REASON_ANNOTATION,
};

fn flag() -> impl Strategy<Value = Option<bool>> {
    prop_oneof![Just(None), Just(Some(false)), Just(Some(true))]
}

#[derive(Clone, Debug)]
struct Gate {
    approved: Option<bool>,
    reset: Option<bool>,
}

fn gate() -> impl Strategy<Value = Gate> {
    (flag(), flag()).prop_map(|(approved, reset)| Gate { approved, reset })
}

fn object(gates: &[Gate], reached: usize, chart: u8, annotations: Option<Value>) -> Value {
    let stages: Vec<Value> = gates
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let mut manual = json!({});
            if let Some(a) = g.approved {
                manual["approved"] = json!(a);
            }
            if let Some(r) = g.reset {
                manual["automaticReset"] = json!(r);
            }
            json!({"name": format!("s{i}"), "trigger": {"manual": manual}})
        })
        .collect();
    let status: Vec<Value> = (0..reached.min(gates.len()))
        .map(|i| json!({"name": format!("s{i}")}))
        .collect();
    let mut metadata = json!({"name": "p"});
    if let Some(a) = annotations {
        metadata["annotations"] = a;
    }
    json!({
        "metadata": metadata,
        "spec": {"profileSpec": {"tier": chart}, "stages": stages},
        "status": {"stages": status}
    })
}

proptest! {
    #![proptest_config(promotion_examples::proptest_config::config())]

    #[test]
    fn plans_apply_are_idempotent_and_pass_integrity(
        old_gates in prop::collection::vec(gate(), 1..5),
        new_flags in prop::collection::vec(flag(), 1..5),
        reached in 0usize..6,
        old_chart in 0u8..2,
        new_chart in 0u8..2,
        create in any::<bool>(),
        reason in prop::option::of("[a-z ]{0,20}"),
        with_annotations in any::<bool>(),
        later in 0i64..200,
    ) {
        let now = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
        let user = UserInfo {
            username: Some("alice".into()),
            groups: Some(vec!["ops".into()]),
            ..UserInfo::default()
        };
        let new_gates: Vec<Gate> = old_gates
            .iter()
            .zip(new_flags.iter().chain(std::iter::repeat(&None)))
            .map(|(g, a)| Gate { approved: *a, reset: g.reset })
            .collect();
        let old = object(&old_gates, reached, old_chart, None);
        let mut annotations = with_annotations.then(|| json!({"other": "x"}));
        if let Some(r) = &reason {
            annotations.get_or_insert_with(|| json!({}))[APPROVAL_REASON_ANNOTATION] = json!(r);
        }
        let new = object(&new_gates, reached, new_chart, annotations);
        let old = (!create).then_some(&old);

        prop_assert!(check_audit_integrity(old, &new, &user, now).is_empty());
        let plan = plan_mutation(old, &new, &user, now);
        let mut mutated = new.clone();
        json_patch::patch(&mut mutated, &plan.patch.0).expect("the plan applies");

        let approving = newly_approved_stages(old, &new);
        prop_assert_eq!(&plan.recorded_approvals, &approving);
        for reset in &plan.reset_approvals {
            prop_assert!(!approving.contains(&reset.stage));
        }
        let again = plan_mutation(old, &mutated, &user, now + TimeDelta::seconds(later));
        prop_assert!(again.is_empty(), "second plan: {:?}", again.patch);
        prop_assert!(check_audit_integrity(old, &mutated, &user, now + TimeDelta::seconds(later)).is_empty());
        prop_assert!(mutated["metadata"]["annotations"].get(APPROVAL_REASON_ANNOTATION).is_none());
    }
}
