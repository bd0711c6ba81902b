//! `ValidateHealth` checks wherever they appear, and the rest of `profileSpec`.

use crate::tree::{field, Object, Tree};

use super::cache::{self, Language};
use super::{check_duration, expect_items, expect_object, expect_str, FieldPath, Finding};

pub const HEALTH_LISTS: [&str; 4] = [
    "validateHealths",
    "preDeployChecks",
    "preDeleteChecks",
    "postDeleteChecks",
];

/// Which feature lists of `profileSpec` are non-empty: a check is only run for a feature that
/// Sveltos reconciles, and it reconciles only non-empty lists.
#[derive(Clone, Copy, Debug, Default)]
pub struct Features {
    pub resources: bool,
    pub helm: bool,
    pub kustomize: bool,
}

impl Features {
    pub fn of(profile: Option<&Object>) -> Self {
        let non_empty = |key: &str| {
            profile
                .and_then(|p| p.get(key))
                .and_then(Tree::as_array)
                .is_some_and(|l| !l.is_empty())
        };
        Features {
            resources: non_empty("policyRefs"),
            helm: non_empty("helmCharts"),
            kustomize: non_empty("kustomizationRefs"),
        }
    }

    /// The profile list a feature ID deploys, and whether it is in use.
    fn list_for(&self, feature: &str) -> Option<(&'static str, bool)> {
        match feature {
            "Resources" => Some(("policyRefs", self.resources)),
            "Helm" => Some(("helmCharts", self.helm)),
            "Kustomize" => Some(("kustomizationRefs", self.kustomize)),
            _ => None,
        }
    }
}

pub fn check_profile(
    profile: &Object,
    path: &FieldPath,
    features: &Features,
    out: &mut Vec<Finding>,
) {
    if let Some(v) = profile.get("maxUpdate") {
        check_max_update(v, &path.key("maxUpdate"), out);
    }
    for list in HEALTH_LISTS {
        if let Some(v) = profile.get(list) {
            check_health_list(v, &path.key(list), features, out);
        }
    }
    for list in ["policyRefs", "kustomizationRefs"] {
        if let Some(v) = profile.get(list) {
            check_policy_refs(v, &path.key(list), out);
        }
    }
}

/// `^((100|[0-9]{1,2})%|[0-9]+)$` for strings; a non-negative integer otherwise.
fn check_max_update(v: &Tree, path: &FieldPath, out: &mut Vec<Finding>) {
    let ok = match v {
        Tree::Number(n) => n.as_u64().is_some(),
        Tree::Str(s) => match s.strip_suffix('%') {
            Some(pct) => {
                pct == "100"
                    || (!pct.is_empty()
                        && pct.len() <= 2
                        && pct.bytes().all(|b| b.is_ascii_digit()))
            }
            None => !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()),
        },
        _ => false,
    };
    if !ok {
        out.push(Finding::error(
            "max-update-invalid",
            path,
            format!(
                "maxUpdate {} must be a non-negative integer or a percentage from 0% to 100% \
                 (pattern ^((100|[0-9]{{1,2}})%|[0-9]+)$)",
                v
            ),
        ));
    }
}

/// `PolicyRef` lists (also `preHealthCheckDeployment`): the `remoteURL.interval` duration.
pub fn check_policy_refs(v: &Tree, path: &FieldPath, out: &mut Vec<Finding>) {
    for (item_path, item) in expect_items(v, path, out) {
        let Some(obj) = expect_object(item, &item_path, out) else {
            continue;
        };
        if let Some(interval) = obj.get("remoteURL").and_then(|r| field(r, "interval")) {
            check_duration(interval, &item_path.key("remoteURL").key("interval"), out);
        }
    }
}

pub fn check_health_list(v: &Tree, path: &FieldPath, features: &Features, out: &mut Vec<Finding>) {
    for (item_path, item) in expect_items(v, path, out) {
        if let Some(check) = expect_object(item, &item_path, out) {
            check_health(check, &item_path, features, out);
        }
    }
}

fn check_health(check: &Object, path: &FieldPath, features: &Features, out: &mut Vec<Finding>) {
    match check.get("name") {
        Some(v) => {
            if expect_str(v, &path.key("name"), out).is_some_and(str::is_empty) {
                out.push(Finding::error(
                    "required",
                    path.key("name"),
                    "name must not be empty",
                ));
            }
        }
        None => out.push(Finding::error(
            "required",
            path.key("name"),
            "name is required",
        )),
    }
    let feature_path = path.key("featureID");
    match check.get("featureID") {
        None => out.push(Finding::error(
            "required",
            &feature_path,
            "featureID is required (Resources, Helm or Kustomize)",
        )),
        Some(v) => {
            if let Some(feature) = expect_str(v, &feature_path, out) {
                match features.list_for(feature) {
                    None => out.push(Finding::error(
                        "health-feature-invalid",
                        &feature_path,
                        format!("featureID {feature:?} must be one of Resources, Helm, Kustomize"),
                    )),
                    Some((list, false)) => out.push(Finding::warning(
                        "health-feature-unused",
                        &feature_path,
                        format!(
                            "featureID {feature} but spec.profileSpec.{list} is empty: Sveltos \
                             only runs a check after deploying its feature, so this check never runs"
                        ),
                    )),
                    Some(_) => {}
                }
            }
        }
    }
    let has_script = check.contains_key("script");
    let has_cel = check.contains_key("evaluateCEL");
    if let Some(job) = check.get("jobCheck") {
        if has_script || has_cel {
            out.push(Finding::error(
                "health-jobcheck-exclusive",
                path,
                "jobCheck cannot be set together with script or evaluateCEL",
            ));
        }
        if let Some(timeout) = field(job, "timeout") {
            check_duration(timeout, &path.key("jobCheck").key("timeout"), out);
        }
    }
    if let Some(v) = check.get("script") {
        let script_path = path.key("script");
        if let Some(script) = expect_str(v, &script_path, out) {
            cache::judged(
                Language::Lua,
                script,
                &script_path,
                out,
                lua_check::check_script,
            );
        }
    }
    if let Some(v) = check.get("evaluateCEL") {
        let rules_path = path.key("evaluateCEL");
        for (rule_path, rule) in expect_items(v, &rules_path, out) {
            let Some(rule) = expect_object(rule, &rule_path, out) else {
                continue;
            };
            match rule.get("rule") {
                Some(v) => {
                    let p = rule_path.key("rule");
                    if let Some(text) = expect_str(v, &p, out) {
                        cache::judged(Language::Cel, text, &p, out, cel_check::check_rule);
                    }
                }
                None => out.push(Finding::error(
                    "required",
                    rule_path.key("rule"),
                    "rule is required",
                )),
            }
        }
    }
    let kind_empty = check
        .get("kind")
        .and_then(Tree::as_str)
        .is_none_or(str::is_empty);
    if kind_empty && !has_script && !check.contains_key("jobCheck") {
        out.push(Finding::error(
            "health-metrics-needs-script",
            path,
            "a check without kind evaluates metrics only, which requires a Lua script",
        ));
    }
}
