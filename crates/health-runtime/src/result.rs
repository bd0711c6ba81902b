//! What the runner reports: one [`Evaluation`] per (check, object) pair, and per check the error
//! text Sveltos would record for it.

use serde::Serialize;
use serde_json::Value;

use super::cel_eval::RuleResult;
use super::spec::Check;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ObjectRef {
    pub fn of(object: &Value) -> Self {
        let text = |p: &str| {
            object
                .pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        ObjectRef {
            api_version: text("/apiVersion"),
            kind: text("/kind"),
            namespace: text("/metadata/namespace"),
            name: text("/metadata/name"),
        }
    }

    /// `Kind ns/name`, as Sveltos' messages write it.
    pub fn display(&self) -> String {
        format!("{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// How one check (or one of its objects) came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    Healthy,
    Unhealthy,
    /// Sveltos would report an error (script error, unreadable result, nothing selected).
    Error,
    /// The local runner stopped the script (memory, instructions, time).
    Stopped,
    /// Not run here, with the reason in the message (jobCheck, missing metrics, unused feature).
    NotEvaluated,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Healthy => "healthy",
            Status::Unhealthy => "unhealthy",
            Status::Error => "error",
            Status::Stopped => "stopped",
            Status::NotEvaluated => "not evaluated",
        }
    }

    /// Whether this makes the run fail (exit 1).
    pub fn fails(self) -> bool {
        matches!(self, Status::Unhealthy | Status::Error | Status::Stopped)
    }
}

/// One (check, object) pair; `object` is `None` when the check selected nothing, evaluates
/// metrics only, or was not evaluated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Evaluation {
    pub stage: Option<String>,
    pub check: String,
    pub path: String,
    pub feature: String,
    pub object: Option<ObjectRef>,
    /// `None` when the check was not evaluated.
    pub healthy: Option<bool>,
    pub message: String,
    pub rules: Vec<RuleResult>,
    #[serde(skip)]
    pub status: Status,
    /// The error Sveltos returns for this object (before the `health check '…'` wrapper).
    #[serde(skip)]
    pub sveltos_error: Option<String>,
}

impl Evaluation {
    pub fn new(check: &Check, object: Option<ObjectRef>, status: Status, message: String) -> Self {
        Evaluation {
            stage: check.stage.clone(),
            check: check.name.clone(),
            path: check.path.clone(),
            feature: check.feature.clone(),
            object,
            healthy: match status {
                Status::Healthy => Some(true),
                Status::NotEvaluated => None,
                _ => Some(false),
            },
            message,
            rules: Vec::new(),
            status,
            sveltos_error: None,
        }
    }
}

/// A check and its evaluations.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckReport {
    pub check: Check,
    pub evaluations: Vec<Evaluation>,
}

impl CheckReport {
    /// The worst status among the evaluations.
    pub fn status(&self) -> Status {
        let order = [
            Status::Error,
            Status::Stopped,
            Status::Unhealthy,
            Status::NotEvaluated,
            Status::Healthy,
        ];
        order
            .into_iter()
            .find(|s| self.evaluations.iter().any(|e| e.status == *s))
            .unwrap_or(Status::NotEvaluated)
    }

    /// What Sveltos records in the ClusterSummary's `failureMessage` for this check: the first
    /// failing object in list order (namespace, then name), wrapped as `HealthCheckError`.
    pub fn sveltos_error(&self) -> Option<String> {
        let inner = self
            .evaluations
            .iter()
            .find_map(|e| e.sveltos_error.as_deref())?;
        Some(format!(
            "health check '{}' for feature {} failed: {inner}",
            self.check.name, self.check.feature
        ))
    }
}
