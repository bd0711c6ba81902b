//! The `ValidateHealth` checks of a ClusterPromotion, each with the API-server field path it was
//! read from, and which of them a stage runs.
//!
//! Read from the raw JSON (not the typed model) because the typed model keeps `labelFilters`,
//! `metricSource` and `metricQueries` untyped, and because a field of the wrong type must be an
//! error naming its path, not a silently skipped check.

use std::fmt;

use serde_json::{Map, Value};

/// The profile lists whose checks run when a stage deploys (delete checks only run on removal).
const PROFILE_LISTS: [&str; 2] = ["validateHealths", "preDeployChecks"];

/// libsveltos `LabelFilter.Operation`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operation {
    Equal,
    Different,
    Has,
    DoesNotHave,
    /// Anything else: Sveltos turns it into no requirement at all.
    Other(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelFilter {
    pub key: String,
    pub operation: Operation,
    pub value: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CelRule {
    pub name: String,
    pub rule: String,
}

/// One `ValidateHealth`, where it was found, and what it selects.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// The stage whose trigger declares it; `None` for `spec.profileSpec` checks.
    pub stage: Option<String>,
    /// `spec.stages[0].trigger.auto.postDelayHealthChecks[0]`.
    pub path: String,
    pub name: String,
    pub feature: String,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub namespace: String,
    pub label_filters: Vec<LabelFilter>,
    pub script: Option<String>,
    pub rules: Vec<CelRule>,
    pub job_check: bool,
    pub metric_source: bool,
    /// Names of `metricQueries` (the keys of the Lua global `metrics`).
    pub metric_queries: Vec<String>,
    /// Whether Sveltos runs this check at all: its feature's list in `profileSpec` is non-empty.
    pub feature_deployed: bool,
}

impl Check {
    /// `apps/v1` or `v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Sveltos fetches metrics only when both a source and queries are set.
    pub fn uses_metrics(&self) -> bool {
        self.metric_source && !self.metric_queries.is_empty()
    }
}

/// A check that cannot be read; the message names the field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// Every check the promotion runs when it deploys, in manifest order: `profileSpec`
/// (`validateHealths`, `preDeployChecks`), then each stage's `postDelayHealthChecks`. With
/// `stage`, only what that stage runs: the profile's checks and its own post-delay checks.
pub fn checks(promotion: &Value, stage: Option<&str>) -> Result<Vec<Check>, SpecError> {
    let spec = promotion
        .get("spec")
        .and_then(Value::as_object)
        .ok_or_else(|| SpecError("spec: must be an object".into()))?;
    let stages = match spec.get("stages") {
        Some(Value::Array(list)) => list.as_slice(),
        None => &[],
        Some(_) => return Err(SpecError("spec.stages: must be a list".into())),
    };
    let names: Vec<&str> = stages
        .iter()
        .map(|s| s.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    if let Some(wanted) = stage {
        if !names.contains(&wanted) {
            return Err(SpecError(format!(
                "stage {wanted:?} is not in spec.stages (stages: {})",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )));
        }
    }
    let profile = match spec.get("profileSpec") {
        Some(Value::Object(p)) => Some(p),
        None | Some(Value::Null) => None,
        Some(_) => return Err(SpecError("spec.profileSpec: must be an object".into())),
    };
    let deployed = Deployed::of(profile);
    let mut out = Vec::new();
    if let Some(profile) = profile {
        for list in PROFILE_LISTS {
            let path = format!("spec.profileSpec.{list}");
            read_list(profile.get(list), &path, None, &deployed, &mut out)?;
        }
    }
    for (i, s) in stages.iter().enumerate() {
        if stage.is_some_and(|wanted| wanted != names[i]) {
            continue;
        }
        let Some(trigger) = s.get("trigger").and_then(Value::as_object) else {
            continue;
        };
        for kind in ["auto", "manual"] {
            let Some(t) = trigger.get(kind).and_then(Value::as_object) else {
                continue;
            };
            let path = format!("spec.stages[{i}].trigger.{kind}.postDelayHealthChecks");
            read_list(
                t.get("postDelayHealthChecks"),
                &path,
                Some(names[i]),
                &deployed,
                &mut out,
            )?;
        }
    }
    Ok(out)
}

/// Which features the profile deploys; Sveltos reconciles (and so checks) only those.
struct Deployed {
    resources: bool,
    helm: bool,
    kustomize: bool,
}

impl Deployed {
    fn of(profile: Option<&Map<String, Value>>) -> Self {
        let non_empty = |key: &str| {
            profile
                .and_then(|p| p.get(key))
                .and_then(Value::as_array)
                .is_some_and(|l| !l.is_empty())
        };
        Deployed {
            resources: non_empty("policyRefs"),
            helm: non_empty("helmCharts"),
            kustomize: non_empty("kustomizationRefs"),
        }
    }

    fn runs(&self, feature: &str) -> bool {
        match feature {
            "Resources" => self.resources,
            "Helm" => self.helm,
            "Kustomize" => self.kustomize,
            _ => false,
        }
    }
}

/// The profile list a feature deploys (for messages).
pub fn feature_list(feature: &str) -> Option<&'static str> {
    match feature {
        "Resources" => Some("policyRefs"),
        "Helm" => Some("helmCharts"),
        "Kustomize" => Some("kustomizationRefs"),
        _ => None,
    }
}

fn read_list(
    value: Option<&Value>,
    path: &str,
    stage: Option<&str>,
    deployed: &Deployed,
    out: &mut Vec<Check>,
) -> Result<(), SpecError> {
    let list = match value {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(SpecError(format!("{path}: must be a list"))),
    };
    for (i, item) in list.iter().enumerate() {
        let item_path = format!("{path}[{i}]");
        let obj = item
            .as_object()
            .ok_or_else(|| SpecError(format!("{item_path}: must be an object")))?;
        out.push(read_check(obj, item_path, stage, deployed)?);
    }
    Ok(())
}

fn read_check(
    obj: &Map<String, Value>,
    path: String,
    stage: Option<&str>,
    deployed: &Deployed,
) -> Result<Check, SpecError> {
    let text = |key: &str| -> Result<String, SpecError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(SpecError(format!("{path}.{key}: must be a string"))),
        }
    };
    let name = text("name")?;
    if name.is_empty() {
        return Err(SpecError(format!("{path}.name: is required")));
    }
    let feature = text("featureID")?;
    let script = match obj.get("script") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(SpecError(format!("{path}.script: must be a string"))),
    };
    let mut rules = Vec::new();
    match obj.get("evaluateCEL") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for (i, r) in list.iter().enumerate() {
                let rule_path = format!("{path}.evaluateCEL[{i}]");
                let get = |key: &str| match r.get(key) {
                    Some(Value::String(s)) => Ok(s.clone()),
                    None | Some(Value::Null) => Ok(String::new()),
                    Some(_) => Err(SpecError(format!("{rule_path}.{key}: must be a string"))),
                };
                if !r.is_object() {
                    return Err(SpecError(format!("{rule_path}: must be an object")));
                }
                rules.push(CelRule {
                    name: get("name")?,
                    rule: get("rule")?,
                });
            }
        }
        Some(_) => return Err(SpecError(format!("{path}.evaluateCEL: must be a list"))),
    }
    let mut label_filters = Vec::new();
    match obj.get("labelFilters") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for (i, f) in list.iter().enumerate() {
                let fp = format!("{path}.labelFilters[{i}]");
                let get = |key: &str| match f.get(key) {
                    Some(Value::String(s)) => Ok(s.clone()),
                    None | Some(Value::Null) => Ok(String::new()),
                    Some(_) => Err(SpecError(format!("{fp}.{key}: must be a string"))),
                };
                if !f.is_object() {
                    return Err(SpecError(format!("{fp}: must be an object")));
                }
                let operation = match get("operation")?.as_str() {
                    "Equal" => Operation::Equal,
                    "Different" => Operation::Different,
                    "Has" => Operation::Has,
                    "DoesNotHave" => Operation::DoesNotHave,
                    other => Operation::Other(other.to_string()),
                };
                label_filters.push(LabelFilter {
                    key: get("key")?,
                    operation,
                    value: get("value")?,
                });
            }
        }
        Some(_) => return Err(SpecError(format!("{path}.labelFilters: must be a list"))),
    }
    let mut metric_queries = Vec::new();
    if let Some(list) = obj.get("metricQueries").and_then(Value::as_array) {
        for q in list {
            if let Some(n) = q.get("name").and_then(Value::as_str) {
                metric_queries.push(n.to_string());
            }
        }
    }
    Ok(Check {
        stage: stage.map(str::to_string),
        feature_deployed: deployed.runs(&feature),
        name,
        feature,
        group: text("group")?,
        version: text("version")?,
        kind: text("kind")?,
        namespace: text("namespace")?,
        label_filters,
        script,
        rules,
        job_check: obj.get("jobCheck").is_some_and(|v| !v.is_null()),
        metric_source: obj.get("metricSource").is_some_and(|v| !v.is_null()),
        metric_queries,
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn promotion() -> Value {
        json!({"spec": {
            "profileSpec": {
                "helmCharts": [{"chartName": "x"}],
                "validateHealths": [{"name": "a", "featureID": "Helm", "kind": "Deployment",
                    "group": "apps", "version": "v1", "script": "function evaluate() end"}],
                "preDeployChecks": [{"name": "b", "featureID": "Resources", "kind": "ConfigMap",
                    "version": "v1", "evaluateCEL": [{"name": "r", "rule": "true"}]}]
            },
            "stages": [
                {"name": "dev", "trigger": {"auto": {"postDelayHealthChecks": [
                    {"name": "c", "featureID": "Helm", "kind": "Job", "group": "batch", "version": "v1",
                     "labelFilters": [{"key": "app", "operation": "Equal", "value": "x"}]}]}}},
                {"name": "prod", "trigger": {"manual": {"postDelayHealthChecks": [
                    {"name": "d", "featureID": "Helm", "jobCheck": {"jobRef": {}}}]}}}
            ]
        }})
    }

    #[test]
    fn every_check_with_its_path_and_stage() {
        let all = checks(&promotion(), None).unwrap();
        let got: Vec<(&str, Option<&str>, &str)> = all
            .iter()
            .map(|c| (c.name.as_str(), c.stage.as_deref(), c.path.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", None, "spec.profileSpec.validateHealths[0]"),
                ("b", None, "spec.profileSpec.preDeployChecks[0]"),
                (
                    "c",
                    Some("dev"),
                    "spec.stages[0].trigger.auto.postDelayHealthChecks[0]"
                ),
                (
                    "d",
                    Some("prod"),
                    "spec.stages[1].trigger.manual.postDelayHealthChecks[0]"
                ),
            ]
        );
        assert!(all[0].feature_deployed);
        assert!(
            !all[1].feature_deployed,
            "no policyRefs: Resources never runs"
        );
        assert_eq!(all[2].label_filters[0].operation, Operation::Equal);
        assert!(all[3].job_check);
        assert_eq!(all[0].api_version(), "apps/v1");
        assert_eq!(all[1].api_version(), "v1");
    }

    #[test]
    fn a_stage_runs_the_profile_checks_and_its_own() {
        let dev: Vec<String> = checks(&promotion(), Some("dev"))
            .unwrap()
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(dev, ["a", "b", "c"]);
        let e = checks(&promotion(), Some("qa")).unwrap_err().to_string();
        assert!(e.contains("\"qa\"") && e.contains("dev, prod"), "{e}");
    }

    #[test]
    fn wrong_types_name_the_field() {
        let bad = json!({"spec": {"stages": [], "profileSpec": {"validateHealths": [{"name": "a", "script": 3}]}}});
        assert_eq!(
            checks(&bad, None).unwrap_err().to_string(),
            "spec.profileSpec.validateHealths[0].script: must be a string"
        );
        let bad = json!({"spec": {"profileSpec": {"validateHealths": [{"featureID": "Helm"}]}}});
        assert!(checks(&bad, None)
            .unwrap_err()
            .to_string()
            .contains("validateHealths[0].name"));
    }
}
