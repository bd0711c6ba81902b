//! The ClusterProfiles a promotion generates, as full server-side-apply bodies
//! (addon-controller v1.13.0 `reconcileStageProfile` and `reconcilePreHealthCheckDeployment`,
//! `docs/reference/promotion-controller.md` §9): the stage's profile deploys `profileSpec`
//! to the stage's clusters; the pre-verification profile deploys `preHealthCheckDeployment`.
//!
//! The spec is written as Go writes the typed value (members in declaration order, `omitempty`,
//! durations normalised), so an apply by this project and one by Sveltos claim the same fields.
//! Lists keep the user's order: only the hash sorts them.

use serde_json::{json, Map, Value};

use crate::model::{
    preverification_profile_name, stage_profile_name, ClusterPromotion, Stage, ValidateHealth,
    API_VERSION, KIND, PRESERVED_FOR_ANNOTATION, PROMOTION_NAME_LABEL, STAGE_NAME_ANNOTATION,
    VERIFICATION_LABEL,
};
use crate::rollout::{go_profile_spec, go_value, GoTypeName};
use crate::tree::tree_of;

/// `apiVersion` and `kind` of a ClusterProfile.
pub const PROFILE_API_VERSION: &str = crate::api_resources::PROFILE.api_version;
pub const PROFILE_KIND: &str = crate::api_resources::PROFILE.kind;

/// A stage profile is owned by the promotion (so the garbage collector deletes it with the
/// promotion) unless `preserveClusterProfilesOnDelete` is set: then it carries no owner reference
/// at all, only an annotation naming the promotion's UID, so that nothing — not our controller,
/// not open-source addon-controller ≥ v1.14 removing the shared finalizer at once, not
/// `--cascade=foreground`, not an uninstalled controller — can let the garbage collector take it.
/// Pre-verification profiles are always owned: they verify a rollout that ends with the promotion.
fn metadata(promotion: &ClusterPromotion, name: &str, stage: &str, verification: bool) -> Value {
    let mut labels = Map::new();
    labels.insert(PROMOTION_NAME_LABEL.into(), promotion.name().into());
    if verification {
        labels.insert(VERIFICATION_LABEL.into(), "true".into());
    }
    let mut annotations = Map::new();
    annotations.insert(STAGE_NAME_ANNOTATION.into(), stage.into());
    let preserved =
        !verification && promotion.spec.preserve_cluster_profiles_on_delete == Some(true);
    let mut metadata = json!({"name": name, "labels": labels});
    if preserved {
        if let Some(uid) = &promotion.metadata.uid {
            annotations.insert(PRESERVED_FOR_ANNOTATION.into(), uid.clone().into());
        }
    } else {
        let mut owner = json!({"apiVersion": API_VERSION, "kind": KIND, "name": promotion.name()});
        if let Some(uid) = &promotion.metadata.uid {
            owner["uid"] = uid.clone().into();
        }
        metadata["ownerReferences"] = json!([owner]);
    }
    metadata["annotations"] = Value::Object(annotations);
    metadata
}

fn selector(stage: &Stage) -> Value {
    let raw = stage
        .cluster_selector
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or(Value::Null);
    go_value(&raw, GoTypeName::Selector).unwrap_or_else(|| json!({}))
}

/// The stage's ClusterProfile: `clusterSelector` from the stage, then every `profileSpec` member,
/// plus `post_delay` checks appended to `validateHealths` once the stage has reached them
/// (upstream appends them with an Update; here they are part of the one body).
pub fn stage_profile(
    promotion: &ClusterPromotion,
    stored: &Value,
    stage: &Stage,
    post_delay: &[ValidateHealth],
) -> Value {
    let mut spec = Map::new();
    spec.insert("clusterSelector".into(), selector(stage));
    if let Some(Value::Object(profile)) = go_profile_spec(&tree_of(stored)) {
        spec.extend(profile);
    }
    if !post_delay.is_empty() {
        let mut checks: Vec<Value> = spec
            .get("validateHealths")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for check in post_delay {
            let raw = serde_json::to_value(check).unwrap_or(Value::Null);
            let written = go_value(&raw, GoTypeName::ValidateHealth).unwrap_or(raw);
            // Appended unless the very same check is there (upstream compares names only: D11).
            if !checks.contains(&written) {
                checks.push(written);
            }
        }
        spec.insert("validateHealths".into(), Value::Array(checks));
    }
    let name = stage_profile_name(promotion.name(), &stage.name);
    json!({
        "apiVersion": PROFILE_API_VERSION,
        "kind": PROFILE_KIND,
        "metadata": metadata(promotion, &name, &stage.name, false),
        "spec": spec,
    })
}

/// The stage's pre-verification ClusterProfile: the stage selector, `syncMode: Continuous`,
/// `tier`, `continueOnConflict` and `continueOnError` from `profileSpec`, and
/// `preHealthCheckDeployment` as `policyRefs`. `None` when the stage has none.
pub fn preverification_profile(
    promotion: &ClusterPromotion,
    stored: &Value,
    stage: &Stage,
) -> Option<Value> {
    let trigger = stage.trigger.as_ref()?;
    let refs = trigger
        .auto
        .as_ref()
        .and_then(|a| a.pre_health_check_deployment.as_ref())
        .or_else(|| {
            trigger
                .manual
                .as_ref()
                .and_then(|m| m.pre_health_check_deployment.as_ref())
        })
        .filter(|r| !r.is_empty())?;
    let mut spec = Map::new();
    spec.insert("clusterSelector".into(), selector(stage));
    spec.insert("syncMode".into(), "Continuous".into());
    if let Some(Value::Object(profile)) = go_profile_spec(&tree_of(stored)) {
        for key in ["tier", "continueOnConflict", "continueOnError"] {
            if let Some(v) = profile.get(key) {
                spec.insert(key.into(), v.clone());
            }
        }
    }
    let refs = Value::Array(refs.clone());
    spec.insert(
        "policyRefs".into(),
        go_value(&refs, GoTypeName::PolicyRefs).unwrap_or(refs),
    );
    let name = preverification_profile_name(promotion.name(), &stage.name);
    Some(json!({
        "apiVersion": PROFILE_API_VERSION,
        "kind": PROFILE_KIND,
        "metadata": metadata(promotion, &name, &stage.name, true),
        "spec": spec,
    }))
}
