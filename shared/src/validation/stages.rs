//! `spec.stages`: names, selectors and triggers.

use std::collections::HashMap;

use crate::tree::{Object, Tree};

use super::health::{check_health_list, check_policy_refs, Features};
use super::selector::check_selector;
use super::{
    check_duration, expect_array, expect_object, expect_str, names, parse_cron_standard, FieldPath,
    Finding,
};

pub fn check_stages(
    spec: &Object,
    spec_path: &FieldPath,
    promotion: Option<&str>,
    features: &Features,
    out: &mut Vec<Finding>,
) {
    let path = spec_path.key("stages");
    let Some(stages) = spec.get("stages") else {
        out.push(Finding::error(
            "required",
            &path,
            "stages is required: list at least one stage",
        ));
        return;
    };
    let Some(stages) = expect_array(stages, &path, out) else {
        return;
    };
    if stages.is_empty() {
        out.push(Finding::error(
            "stages-empty",
            &path,
            "a promotion needs at least one stage",
        ));
        return;
    }
    let mut first_seen: HashMap<&str, usize> = HashMap::new();
    for (i, stage) in stages.iter().enumerate() {
        let stage_path = path.index(i);
        let Some(stage) = expect_object(stage, &stage_path, out) else {
            continue;
        };
        if let Some(name) = check_stage_name(stage, &stage_path, promotion, out) {
            if let Some(first) = first_seen.get(name) {
                out.push(Finding::error(
                    "stage-name-duplicate",
                    stage_path.key("name"),
                    format!("stage name {name:?} is already used by spec.stages[{first}]; names must be unique"),
                ));
            } else {
                first_seen.insert(name, i);
            }
        }
        check_selector(
            stage.get("clusterSelector"),
            &stage_path.key("clusterSelector"),
            out,
        );
        if let Some(trigger) = stage.get("trigger") {
            let is_last = i + 1 == stages.len();
            check_trigger(trigger, &stage_path.key("trigger"), is_last, features, out);
        }
    }
}

fn check_stage_name<'a>(
    stage: &'a Object,
    stage_path: &FieldPath,
    promotion: Option<&str>,
    out: &mut Vec<Finding>,
) -> Option<&'a str> {
    let path = stage_path.key("name");
    let Some(name) = stage.get("name") else {
        out.push(Finding::error("required", &path, "stage name is required"));
        return None;
    };
    let name = expect_str(name, &path, out)?;
    if let Err(e) = names::dns1123_label(name) {
        out.push(Finding::error(
            "stage-name-invalid",
            &path,
            format!("stage name {name:?} {e}"),
        ));
        return Some(name);
    }
    if let Some(promotion) = promotion {
        let profile = crate::model::stage_profile_name(promotion, name);
        check_profile_label(
            &profile,
            "Sveltos names the stage's ClusterProfile",
            &path,
            out,
        );
        // The pre-verification profile exists only for a stage with a preHealthCheckDeployment;
        // its name goes into the same label on its ClusterSummaries.
        if has_pre_health_check_deployment(stage) {
            let verification = crate::model::preverification_profile_name(promotion, name);
            check_profile_label(
                &verification,
                "with preHealthCheckDeployment, Sveltos names a second ClusterProfile",
                &path,
                out,
            );
        }
    }
    Some(name)
}

/// A ClusterProfile Sveltos generates for the stage, named `profile`: Sveltos uses the name as a
/// label value, so it must be one. `named` says which profile it is.
fn check_profile_label(profile: &str, named: &str, path: &FieldPath, out: &mut Vec<Finding>) {
    if let Err(e) = names::label_value(profile) {
        out.push(Finding::error(
            "stage-name-too-long",
            path,
            format!(
                "{named} {profile:?} and uses it as a label value, which {e}; shorten the \
                 promotion or stage name"
            ),
        ));
    }
}

fn has_pre_health_check_deployment(stage: &Object) -> bool {
    let Some(Tree::Object(trigger)) = stage.get("trigger") else {
        return false;
    };
    ["auto", "manual"].iter().any(|kind| {
        matches!(
            trigger.get(kind).and_then(|t| match t {
                Tree::Object(o) => o.get("preHealthCheckDeployment"),
                _ => None,
            }),
            Some(Tree::Array(refs)) if !refs.is_empty()
        )
    })
}

fn check_trigger(
    value: &Tree,
    path: &FieldPath,
    is_last: bool,
    features: &Features,
    out: &mut Vec<Finding>,
) {
    let Some(trigger) = expect_object(value, path, out) else {
        return;
    };
    let auto = trigger.get("auto");
    let manual = trigger.get("manual");
    match (auto, manual) {
        (Some(_), Some(_)) => out.push(Finding::error(
            "trigger-both",
            path,
            "both `auto` and `manual` are set; a stage is promoted either automatically or by \
             approval, so keep one",
        )),
        (None, None) => out.push(Finding::error(
            "trigger-empty",
            path,
            "trigger has neither `auto` nor `manual`; set one, or remove `trigger` to promote as \
             soon as the stage is provisioned",
        )),
        (None, Some(_)) if is_last => out.push(Finding::warning(
            "trigger-last-stage-manual",
            path.key("manual"),
            "a manual trigger on the last stage promotes nothing: the pipeline stays \
             \"Paused: Awaiting Manual Approval\" until someone approves it",
        )),
        _ => {}
    }
    if let Some(auto) = auto {
        let p = path.key("auto");
        if let Some(auto) = expect_object(auto, &p, out) {
            check_common(auto, &p, features, out);
            if let Some(window) = auto.get("promotionWindow") {
                check_window(window, &p.key("promotionWindow"), out);
            }
        }
    }
    if let Some(manual) = manual {
        let p = path.key("manual");
        if let Some(manual) = expect_object(manual, &p, out) {
            check_common(manual, &p, features, out);
            for flag in ["approved", "automaticReset"] {
                match manual.get(flag) {
                    None | Some(Tree::Bool(_)) | Some(Tree::Null) => {}
                    Some(other) => out.push(Finding::error(
                        "wrong-type",
                        p.key(flag),
                        format!("must be true or false, not {}", super::type_name(other)),
                    )),
                }
            }
            if manual.is_empty() {
                out.push(empty_manual(&p));
            }
        }
    }
}

/// `manual: {}`: valid, and what an approval means is unchanged, but the API server fills in
/// `automaticReset: true`, and a manifest applied client-side and then with `kubectl apply
/// --server-side` (the switch that keeps a pending approval) fails every later server-side apply
/// with `Invalid value: "null"` on this field (Kubernetes' own behaviour for a defaulted empty
/// object after the migration; checked on a real kube-apiserver by the scenario
/// `an_empty_manual_trigger_is_linted_and_breaks_server_side_apply_as_documented`). `auto: {}`,
/// which gets no default, is not affected. The webhook never sees this: the API server defaults
/// the object before admission, so only lint, on the manifest, can say it.
fn empty_manual(path: &FieldPath) -> Finding {
    Finding::warning(
        "trigger-manual-empty",
        path,
        format!(
            "`manual: {{}}` is an empty object the API server fills with `automaticReset: \
             true`; once applied client-side, switching to `kubectl apply --server-side` makes \
             every later server-side apply fail ({path}: Invalid value: \"null\"); write \
             `manual: {{automaticReset: true}}`, which means the same (true is the default: \
             the approval is removed once used)"
        ),
    )
}

/// Fields shared by `auto` and `manual`.
fn check_common(trigger: &Object, path: &FieldPath, features: &Features, out: &mut Vec<Finding>) {
    if let Some(delay) = trigger.get("delay") {
        check_duration(delay, &path.key("delay"), out);
    }
    if let Some(refs) = trigger.get("preHealthCheckDeployment") {
        check_policy_refs(refs, &path.key("preHealthCheckDeployment"), out);
    }
    if let Some(checks) = trigger.get("postDelayHealthChecks") {
        check_health_list(checks, &path.key("postDelayHealthChecks"), features, out);
    }
}

fn check_window(value: &Tree, path: &FieldPath, out: &mut Vec<Finding>) {
    let Some(window) = expect_object(value, path, out) else {
        return;
    };
    for end in ["from", "to"] {
        let p = path.key(end);
        match window.get(end) {
            None => out.push(Finding::error(
                "required",
                &p,
                format!("{end} is required (a cron expression)"),
            )),
            Some(v) => {
                if let Some(spec) = expect_str(v, &p, out) {
                    if let Err(e) = parse_cron_standard(spec) {
                        out.push(Finding::error(
                            "cron-invalid",
                            &p,
                            format!("invalid cron expression {spec:?}: {e}"),
                        ));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::validation::{validate, Severity};
    use serde_json::{json, Value};

    /// The findings of `trigger-manual-empty` for a promotion whose first stage (of two) has
    /// `trigger`: path and severity.
    fn empty_manual_findings(trigger: Value) -> Vec<(String, Severity)> {
        let promotion = json!({
            "apiVersion": "config.projectsveltos.io/v1beta1",
            "kind": "ClusterPromotion",
            "metadata": {"name": "p"},
            "spec": {
                "profileSpec": {"helmCharts": [{"chartName": "kyverno/kyverno",
                    "repositoryURL": "https://kyverno.github.io/kyverno/",
                    "repositoryName": "kyverno", "chartVersion": "3.6.2",
                    "releaseName": "kyverno", "releaseNamespace": "kyverno",
                    "helmChartAction": "Install"}]},
                "stages": [
                    {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                     "trigger": trigger},
                    {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}
                ]
            }
        });
        validate(&promotion)
            .into_iter()
            .filter(|f| f.code == "trigger-manual-empty")
            .map(|f| (f.path, f.severity))
            .collect()
    }

    #[test]
    fn an_empty_manual_trigger_is_warned_about_with_the_fix_that_keeps_its_meaning() {
        let warned = [(
            "spec.stages[0].trigger.manual".to_string(),
            Severity::Warning,
        )];
        assert_eq!(empty_manual_findings(json!({"manual": {}})), warned);
        // What the fix and the other spellings get: nothing.
        for quiet in [
            json!({"manual": {"automaticReset": true}}),
            json!({"manual": {"automaticReset": false}}),
            json!({"manual": {"approved": false}}),
            json!({"manual": {"delay": "5m"}}),
            // No default inside `auto`: an empty one applies server-side after client-side.
            json!({"auto": {}}),
        ] {
            assert_eq!(empty_manual_findings(quiet.clone()), [], "{quiet}");
        }
        let finding = crate::validation::validate(&json!({"spec": {"stages": [
            {"name": "dev", "trigger": {"manual": {}}}, {"name": "prod"}]}}))
        .into_iter()
        .find(|f| f.code == "trigger-manual-empty")
        .expect("warned");
        assert_eq!(
            finding.message,
            "`manual: {}` is an empty object the API server fills with `automaticReset: true`; \
             once applied client-side, switching to `kubectl apply --server-side` makes every \
             later server-side apply fail (spec.stages[0].trigger.manual: Invalid value: \
             \"null\"); write `manual: {automaticReset: true}`, which means the same (true is \
             the default: the approval is removed once used)"
        );
    }
}
