//! Whether a promotion is managed by a GitOps tool, read from the object as stored: the marks
//! Argo CD and Flux leave on what they apply. A tool that syncs the promotion writes its spec
//! back to what git holds on its next sync (Argo CD's self-heal, Flux's drift correction), so a
//! spec change made in the cluster — `kubectl promotion undo` — does not last there: the change
//! belongs in git.
//!
//! The marks, as each tool writes them:
//! - Argo CD, server-side apply: field manager `argocd-controller` (`common.ArgoCDSSAManager`
//!   in argoproj/argo-cd `common/common.go`: "the default argocd manager name used by
//!   server-side apply syncs");
//! - Argo CD, client-side apply (its default before 3.x): the kubectl library's default manager,
//!   the binary's name `argocd-application-controller` (argoproj/argo-cd issue #20815 shows both
//!   names on objects of one sync);
//! - Argo CD's resource tracking: the annotation `argocd.argoproj.io/tracking-id`
//!   (`app:group/Kind:namespace/name`; annotation tracking, the default since 3.0) or the label
//!   `app.kubernetes.io/instance` (label tracking, the default `application.instanceLabelKey`
//!   before; Helm charts set that label too, so it is named as such);
//! - Flux: field managers `kustomize-controller` (its `controllerName`, the server-side apply
//!   owner, fluxcd/kustomize-controller `main.go`) and `helm-controller`; the labels
//!   `kustomize.toolkit.fluxcd.io/name` and `…/namespace` (kustomize-controller's
//!   `kubectl get -l` inventory labels) and `helm.toolkit.fluxcd.io/name` and `…/namespace`
//!   (helm-controller's post-renderer).
//!
//! A field manager counts only when its entry owns fields of `spec`: a manager that wrote only
//! metadata does not sync the spec back.

use serde::Serialize;
use serde_json::Value;

/// The GitOps tools recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Tool {
    #[serde(rename = "Argo CD")]
    ArgoCd,
    Flux,
}

impl Tool {
    pub fn name(self) -> &'static str {
        match self {
            Tool::ArgoCd => "Argo CD",
            Tool::Flux => "Flux",
        }
    }
}

/// A tool that manages the object, and the marks that say so, in words
/// ("managedFields manager \"argocd-controller\" owns spec fields").
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Managed {
    pub tool: Tool,
    pub marks: Vec<String>,
}

impl Managed {
    /// "Argo CD (annotation argocd.argoproj.io/tracking-id \"apps:…\")".
    pub fn describe(&self) -> String {
        format!("{} ({})", self.tool.name(), self.marks.join("; "))
    }
}

pub const ARGO_TRACKING_ANNOTATION: &str = "argocd.argoproj.io/tracking-id";
pub const ARGO_INSTANCE_LABEL: &str = "app.kubernetes.io/instance";

/// Field managers, by tool.
const MANAGERS: &[(&str, Tool)] = &[
    ("argocd-controller", Tool::ArgoCd),
    ("argocd-application-controller", Tool::ArgoCd),
    ("kustomize-controller", Tool::Flux),
    ("helm-controller", Tool::Flux),
];

/// Labels, by tool (the Argo CD instance label has its own words).
const LABELS: &[(&str, Tool)] = &[
    ("kustomize.toolkit.fluxcd.io/name", Tool::Flux),
    ("kustomize.toolkit.fluxcd.io/namespace", Tool::Flux),
    ("helm.toolkit.fluxcd.io/name", Tool::Flux),
    ("helm.toolkit.fluxcd.io/namespace", Tool::Flux),
];

/// The GitOps tools that manage `object` (as the API server returns it, with
/// `metadata.managedFields`), Argo CD first; empty when none is recognised.
pub fn managed_by(object: &Value) -> Vec<Managed> {
    let mut found: Vec<Managed> = Vec::new();
    let mut mark = |tool: Tool, text: String| match found.iter_mut().find(|m| m.tool == tool) {
        Some(m) => {
            if !m.marks.contains(&text) {
                m.marks.push(text);
            }
        }
        None => found.push(Managed {
            tool,
            marks: vec![text],
        }),
    };
    let entries = object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for entry in entries {
        let Some(manager) = entry.get("manager").and_then(Value::as_str) else {
            continue;
        };
        let Some((_, tool)) = MANAGERS.iter().find(|(m, _)| *m == manager) else {
            continue;
        };
        if entry.pointer("/fieldsV1/f:spec").is_some() {
            mark(
                *tool,
                format!("managedFields manager {manager:?} owns spec fields"),
            );
        }
    }
    let text = |at: &str, key: &str| {
        object
            .pointer(at)
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .map(String::from)
    };
    if let Some(id) = text("/metadata/annotations", ARGO_TRACKING_ANNOTATION) {
        mark(
            Tool::ArgoCd,
            format!("annotation {ARGO_TRACKING_ANNOTATION} {id:?}"),
        );
    }
    if let Some(app) = text("/metadata/labels", ARGO_INSTANCE_LABEL) {
        mark(
            Tool::ArgoCd,
            format!(
                "label {ARGO_INSTANCE_LABEL}={app} (Argo CD's tracking label; Helm charts set it \
                 too)"
            ),
        );
    }
    for (label, tool) in LABELS {
        if let Some(value) = text("/metadata/labels", label) {
            mark(*tool, format!("label {label}={value}"));
        }
    }
    found.sort_by_key(|m| m.tool as u8);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, operation: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": operation, "apiVersion":
               "config.projectsveltos.io/v1beta1", "time": "2026-02-16T07:00:00Z",
               "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    fn promotion(managed: Vec<Value>, labels: Value, annotations: Value) -> Value {
        json!({"metadata": {"name": "kyverno-rollout", "managedFields": managed,
                            "labels": labels, "annotations": annotations},
               "spec": {"profileSpec": {}, "stages": []}})
    }

    fn spec_fields() -> Value {
        json!({"f:spec": {"f:profileSpec": {"f:helmCharts": {}}, "f:stages": {}}})
    }

    #[test]
    fn argo_cd_server_side_apply_and_its_tracking_annotation() {
        let p = promotion(
            vec![entry("argocd-controller", "Apply", spec_fields())],
            json!({}),
            json!({ARGO_TRACKING_ANNOTATION:
                   "platform:config.projectsveltos.io/ClusterPromotion:/kyverno-rollout"}),
        );
        let found = managed_by(&p);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].describe(),
            "Argo CD (managedFields manager \"argocd-controller\" owns spec fields; annotation \
             argocd.argoproj.io/tracking-id \
             \"platform:config.projectsveltos.io/ClusterPromotion:/kyverno-rollout\")"
        );
    }

    #[test]
    fn argo_cd_client_side_apply_and_label_tracking() {
        let p = promotion(
            vec![entry(
                "argocd-application-controller",
                "Update",
                spec_fields(),
            )],
            json!({ARGO_INSTANCE_LABEL: "platform"}),
            json!({}),
        );
        let found = managed_by(&p);
        assert_eq!(found[0].tool, Tool::ArgoCd);
        assert_eq!(
            found[0].marks,
            [
                "managedFields manager \"argocd-application-controller\" owns spec fields",
                "label app.kubernetes.io/instance=platform (Argo CD's tracking label; Helm charts \
                 set it too)"
            ]
        );
        // The label alone is enough.
        let p = promotion(vec![], json!({ARGO_INSTANCE_LABEL: "platform"}), json!({}));
        assert_eq!(managed_by(&p)[0].tool, Tool::ArgoCd);
    }

    #[test]
    fn flux_kustomize_and_helm_controllers_and_their_labels() {
        let p = promotion(
            vec![entry("kustomize-controller", "Apply", spec_fields())],
            json!({"kustomize.toolkit.fluxcd.io/name": "apps",
                   "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}),
            json!({}),
        );
        let found = managed_by(&p);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].describe(),
            "Flux (managedFields manager \"kustomize-controller\" owns spec fields; label \
             kustomize.toolkit.fluxcd.io/name=apps; label \
             kustomize.toolkit.fluxcd.io/namespace=flux-system)"
        );
        let p = promotion(
            vec![entry("helm-controller", "Update", spec_fields())],
            json!({}),
            json!({}),
        );
        assert_eq!(managed_by(&p)[0].tool, Tool::Flux);
        let p = promotion(
            vec![],
            json!({"helm.toolkit.fluxcd.io/name": "promotions",
                   "helm.toolkit.fluxcd.io/namespace": "flux-system"}),
            json!({}),
        );
        assert_eq!(
            managed_by(&p)[0].marks,
            [
                "label helm.toolkit.fluxcd.io/name=promotions",
                "label helm.toolkit.fluxcd.io/namespace=flux-system"
            ]
        );
    }

    #[test]
    fn both_tools_are_named_argo_cd_first() {
        let p = promotion(
            vec![
                entry("kustomize-controller", "Apply", spec_fields()),
                entry("argocd-controller", "Apply", spec_fields()),
            ],
            json!({}),
            json!({}),
        );
        let tools: Vec<Tool> = managed_by(&p).iter().map(|m| m.tool).collect();
        assert_eq!(tools, [Tool::ArgoCd, Tool::Flux]);
    }

    #[test]
    fn people_controllers_and_metadata_only_managers_are_not_gitops() {
        let p = promotion(
            vec![
                entry("kubectl-client-side-apply", "Update", spec_fields()),
                entry("kubectl-promotion", "Update", spec_fields()),
                entry(
                    "promotion-controller",
                    "Update",
                    json!({"f:status": {"f:stages": {}}}),
                ),
                // Argo CD that only labelled it does not sync its spec.
                entry(
                    "argocd-controller",
                    "Apply",
                    json!({"f:metadata": {"f:labels": {}}}),
                ),
            ],
            json!({"team": "platform", "app.kubernetes.io/name": "kyverno"}),
            json!({"kubectl.kubernetes.io/last-applied-configuration": "{}"}),
        );
        assert_eq!(managed_by(&p), []);
        assert_eq!(managed_by(&json!({})), []);
        assert_eq!(managed_by(&json!({"metadata": {"managedFields": "x"}})), []);
    }
}
