//! The abort request annotation, as the webhook and lint check it.

use serde_json::{json, Value};

use super::*;
use crate::abort::{AbortRequest, ABORT_ANNOTATION};

fn promotion(annotations: Value) -> Value {
    json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": "p", "annotations": annotations},
        "spec": {
            "profileSpec": {"helmCharts": [{"repositoryURL": "https://charts",
                "releaseName": "k", "releaseNamespace": "k", "chartName": "k/k",
                "chartVersion": "1.0.0", "helmChartAction": "Install"}]},
            "stages": [{"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}}],
        }
    })
}

fn codes(findings: &[Finding]) -> Vec<&str> {
    findings
        .iter()
        .filter(|f| f.is_error())
        .map(|f| f.code)
        .collect()
}

#[test]
fn an_unreadable_request_is_named_with_its_path() {
    let f = validate(&promotion(json!({ABORT_ANNOTATION: "stop now"})));
    assert_eq!(codes(&f), ["abort-invalid"]);
    assert_eq!(
        f[0].path.to_string(),
        format!("metadata.annotations[{ABORT_ANNOTATION}]")
    );
}

#[test]
fn a_request_for_another_rollout_is_refused_only_when_this_update_makes_it() {
    let stored = promotion(json!({}));
    let id = crate::rollout::identity_of(&stored).unwrap().id;
    let request = |profile_spec_hash: &str| AbortRequest {
        stages_hash: id.stages_hash.clone(),
        profile_spec_hash: profile_spec_hash.to_string(),
        rollback_to: None,
        reason: None,
    };
    let current =
        promotion(json!({ABORT_ANNOTATION: request(&id.profile_spec_hash).to_annotation()}));
    assert!(codes(&validate_update(&stored, &current)).is_empty());
    let stale = promotion(json!({ABORT_ANNOTATION: request("other").to_annotation()}));
    let f = validate_update(&stored, &stale);
    assert_eq!(codes(&f), ["abort-stale"]);
    assert!(
        f[0].message.contains("the spec changed since"),
        "{}",
        f[0].message
    );
    // Kept as it was by a later update (a spec change makes it another rollout's): allowed.
    assert!(codes(&validate_update(&stale, &stale)).is_empty());
}

#[test]
fn a_failure_policy_that_cannot_be_read_is_named_with_its_annotation() {
    use crate::on_failure::*;
    assert!(codes(&validate(&promotion(json!({
        ON_FAILURE_ANNOTATION: "rollback", FAILURE_GRACE_ANNOTATION: "90s",
        FAILURE_THRESHOLD_ANNOTATION: "20%"}))))
    .is_empty());
    let f = validate(&promotion(json!({FAILURE_THRESHOLD_ANNOTATION: "0"})));
    assert_eq!(codes(&f), ["on-failure-invalid"]);
    assert_eq!(
        f[0].path.to_string(),
        format!("metadata.annotations[{FAILURE_THRESHOLD_ANNOTATION}]")
    );
}
