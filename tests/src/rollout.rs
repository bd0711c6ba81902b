//! The rollout the controller's real-server scenarios play: three ready SveltosClusters of the
//! scenario (labelled `env: dev|staging|prod`) and a promotion of one Helm chart through dev
//! (auto), staging (manual) and prod.

use serde_json::{json, Value};

use crate::backend::{BackendError, Cluster, SESSION_LABEL};

/// One ready SveltosCluster per stage, `<env>-1` in the scenario's namespace.
pub fn stage_clusters(cluster: &Cluster) -> Result<(), BackendError> {
    for env in ["dev", "staging", "prod"] {
        cluster.put(&json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": format!("{env}-1"), "namespace": cluster.namespace(),
                         "labels": {"env": env, SESSION_LABEL: cluster.session()}},
            "spec": {},
            "status": {"ready": true},
        }))?;
    }
    Ok(())
}

/// The promotion `<base>` of this scenario: kyverno 3.6.2 through dev (auto), staging (manual)
/// and prod, whose trigger is `prod_trigger` (none: the stage has no trigger).
pub fn promotion(cluster: &Cluster, base: &str, prod_trigger: Option<Value>) -> Value {
    let session = cluster.session();
    let selector = |env: &str| json!({"matchLabels": {"env": env, SESSION_LABEL: session}});
    let mut prod = json!({"name": "prod", "clusterSelector": selector("prod")});
    if let Some(trigger) = prod_trigger {
        prod["trigger"] = trigger;
    }
    cluster.adopt(json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": base},
        "spec": {
            "profileSpec": {
                "syncMode": "Continuous",
                "helmCharts": [{
                    "repositoryURL": "https://kyverno.github.io/kyverno/",
                    "repositoryName": "kyverno", "chartName": "kyverno/kyverno",
                    "chartVersion": "3.6.2", "releaseName": "kyverno-latest",
                    "releaseNamespace": "kyverno", "helmChartAction": "Install"}],
            },
            "stages": [
                {"name": "dev", "clusterSelector": selector("dev"), "trigger": {"auto": {}}},
                {"name": "staging", "clusterSelector": selector("staging"),
                 "trigger": {"manual": {}}},
                prod,
            ],
        },
    }))
}

/// The objects of `manifests/<file>`, each passed through `edit`, stored as the admin, after the
/// install's namespace `kubectl-promotion-system`.
pub fn install_manifest(
    cluster: &Cluster,
    file: &str,
    mut edit: impl FnMut(&mut Value) -> Result<(), String>,
) -> Result<(), String> {
    cluster
        .put(&json!({"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": "kubectl-promotion-system"}}))
        .map_err(|e| format!("creating the install namespace: {e}"))?;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../manifests")
        .join(file);
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let objects: Vec<Value> = serde_saphyr::from_multiple(&text)
        .map_err(|e| format!("parsing {}: {e}", path.display()))?;
    for mut object in objects {
        edit(&mut object)?;
        cluster
            .put(&object)
            .map_err(|err| format!("applying manifests/{file}: {err}"))?;
    }
    Ok(())
}
