//! Sveltos' rollout identity, byte for byte: `stagesHash` and `profileSpecHash` as a real
//! addon-controller wrote them (`docs/reference/promotion-controller.md` §7.6), and the
//! worked examples of §7.2–7.3, from manifests with the CRD's defaults applied as the API server
//! applies them.

use std::path::PathBuf;

use serde_json::{json, Value};

use crd_schema::Crd;
use promotion_manifest::parse_documents;
use promotion_shared::rollout::{identity_of, profile_spec_json, stages_json};
use promotion_shared::tree::tree_of;

/// The object the API server stores for a manifest: pruned and defaulted by the CRD.
fn stored(object: &Value) -> Value {
    let crd = Crd::embedded();
    crd.version("config.projectsveltos.io/v1beta1")
        .expect("v1beta1 is served")
        .decoded(object)
}

fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hashes")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("fixture");
    stored(&parse_documents(&text).expect("YAML").remove(0).value)
}

fn promotion(profile_spec: Option<Value>, stages: Value) -> Value {
    let mut spec = json!({"stages": stages});
    if let Some(p) = profile_spec {
        spec["profileSpec"] = p;
    }
    stored(&json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": "p"},
        "spec": spec,
    }))
}

fn three_stages(prod_label: &str) -> Value {
    json!([
        {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}},
        {"name": "staging", "clusterSelector": {"matchLabels": {"env": "staging"}}},
        {"name": "production", "clusterSelector": {"matchLabels": {"env": prod_label}}},
    ])
}

#[test]
fn oracle_1_the_docs_stages_hash() {
    // sveltos docs v1.13.0 example_rollout_and_progressive_rollout.md:269 (§7.2's worked example).
    let object = promotion(None, three_stages("production"));
    assert_eq!(
        stages_json(&tree_of(&object)).unwrap().0,
        r#"[{"name":"dev","clusterSelector":{"matchLabels":{"env":"dev"}}},{"name":"staging","clusterSelector":{"matchLabels":{"env":"staging"}}},{"name":"production","clusterSelector":{"matchLabels":{"env":"production"}}}]"#
    );
    assert_eq!(
        identity_of(&object).unwrap().id.stages_hash,
        "9IEZq/BvODcdF+6Ogxjvm+ayNbh/GejSU4RJijXK50s="
    );
}

#[test]
fn a_stage_without_selector_hashes_an_empty_selector() {
    let object = promotion(None, json!([{"name": "a"}]));
    assert_eq!(
        stages_json(&tree_of(&object)).unwrap().0,
        r#"[{"name":"a","clusterSelector":{}}]"#
    );
    assert_eq!(
        identity_of(&object).unwrap().id.stages_hash,
        "7cAQkbS9jiF5zIGMEs69dfMXxhL/9Ahm4eVsCno8r6w="
    );
}

#[test]
fn oracle_2_blog_part_1() {
    // Blog pt1:223,241: the manifest of blog-post-resources pt1, as the API server stored it.
    let object = fixture("pt1-clusterpromotion_kyverno_352.yaml");
    assert_eq!(
        profile_spec_json(&tree_of(&object)).unwrap().0,
        r#"{"syncMode":"Continuous","tier":100,"stopMatchingBehavior":"WithdrawPolicies","helmCharts":[{"repositoryURL":"https://kyverno.github.io/kyverno/","repositoryName":"kyverno","chartName":"kyverno/kyverno","chartVersion":"3.5.2","releaseName":"kyverno-latest","releaseNamespace":"kyverno","helmChartAction":"Install"}]}"#
    );
    let id = identity_of(&object).unwrap();
    assert_eq!(
        id.id.profile_spec_hash,
        "733VG+o3aBR450lx7xW7VEDjNQr4syJT5pukWmJo3c4="
    );
    assert_eq!(
        id.id.stages_hash,
        "K+oVryzpxI5/sCfRe03pIwhkVZ00YPTFDNpRVYmpLOk="
    );
    assert!(id.unhashed.is_empty(), "{:?}", id.unhashed);
}

#[test]
fn oracle_3_blog_part_1_with_values() {
    // Blog pt1:440: chart 3.5.2 plus `values: "admissionController:\n  replicas: true\n"`.
    let mut object = fixture("pt1-clusterpromotion_kyverno_352.yaml");
    object["spec"]["profileSpec"]["helmCharts"][0]["values"] =
        json!("admissionController:\n  replicas: true\n");
    assert_eq!(
        identity_of(&object).unwrap().id.profile_spec_hash,
        "6bQqMGgvUsn49NrDUXOToaAbOyuScngRTiqW8G05HIc="
    );
}

#[test]
fn oracle_4_blog_part_2() {
    // Blog pt2:262,270: maxUpdate, a Lua validateHealth and a policyRef the CRD defaults.
    let object = fixture("pt2-clusterpromotion_kyverno_352.yaml");
    let id = identity_of(&object).unwrap();
    assert_eq!(
        id.id.profile_spec_hash,
        "qEFJ6XqIDof4c2469X7mL/6I46T7CYkDQybFDz+N16k="
    );
    assert_eq!(
        id.id.stages_hash,
        "foMYJWnosKajuOrHqn+5p6JBGd38H+XC3O9Vn8EXbzk="
    );
}

#[test]
fn absent_and_empty_profile_specs() {
    // §7.3 step 5: no profileSpec is Go's zero value, `{}`; an empty one gets the CRD defaults.
    let absent = promotion(None, three_stages("prod"));
    assert_eq!(profile_spec_json(&tree_of(&absent)).unwrap().0, "{}");
    assert_eq!(
        identity_of(&absent).unwrap().id.profile_spec_hash,
        "RBNvo1WzZ4oRRq0W9+hknpT7T8If536DEMBg9hyq/4o="
    );
    let empty = promotion(Some(json!({})), three_stages("prod"));
    assert_eq!(
        profile_spec_json(&tree_of(&empty)).unwrap().0,
        r#"{"syncMode":"Continuous","tier":100,"stopMatchingBehavior":"WithdrawPolicies"}"#
    );
    assert_eq!(
        identity_of(&empty).unwrap().id.profile_spec_hash,
        "ErYPnKi0EFeQL3ln5aO4pkrzOT8DVpkO7KUdpCOjmTY="
    );
}

#[test]
fn go_rules_the_hash_follows() {
    // §7.4: durations normalised, pointers written at their zero value, structs never omitted,
    // maps sorted, fields without omitempty written as zero values, IntOrString kept as given.
    let object = promotion(
        Some(json!({
            "maxUpdate": 5,
            "maxConsecutiveFailures": 0,
            "helmCharts": [{
                "repositoryURL": "https://x", "releaseName": "r", "releaseNamespace": "n",
                "options": {"timeout": "90s", "labels": {"b": "2", "a": "1"},
                            "installOptions": {"createNamespace": false}}
            }],
            "driftExclusions": [{"paths": []}, {}],
            "policyRefs": [{"name": "cm", "kind": "ConfigMap",
                            "remoteURL": {"url": "https://u", "interval": "0.5m"}}]
        })),
        json!([{"name": "dev"}]),
    );
    let json = profile_spec_json(&tree_of(&object)).unwrap().0;
    assert!(json.contains(r#""maxUpdate":5"#), "{json}");
    assert!(json.contains(r#""maxConsecutiveFailures":0"#), "{json}");
    assert!(
        json.contains(r#""options":{"timeout":"1m30s","labels":{"a":"1","b":"2"},"installOptions":{"createNamespace":false,"replace":true},"upgradeOptions":{},"uninstallOptions":{}}"#),
        "{json}"
    );
    // The CRD defaults `installOptions.replace` to true. driftExclusions sort by their joined
    // paths: both keys are empty here, so the stable sort keeps the order written; a nil list
    // is `null`, an empty one `[]` (`paths` has no omitempty).
    assert!(
        json.contains(r#""driftExclusions":[{"paths":[]},{"paths":null}]"#),
        "{json}"
    );
    assert!(json.contains(r#""interval":"30s""#), "{json}");
}

#[test]
fn members_go_does_not_decode_are_named() {
    let object = promotion(
        Some(
            json!({"validateHealths": [{"name": "h", "featureID": "Helm",
            "jobCheck": {"name": "j"}}]}),
        ),
        json!([{"name": "dev"}]),
    );
    let id = identity_of(&object).unwrap();
    assert_eq!(
        id.unhashed,
        vec!["spec.profileSpec.validateHealths[0].jobCheck".to_string()]
    );
}
