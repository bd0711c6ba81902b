//! Reaching a managed cluster the way libsveltos' `clusterproxy` does: from the management
//! cluster, the kubeconfig Secret of a SveltosCluster (`spec.kubeconfigName`, default
//! `<name>-sveltos-kubeconfig`, key `spec.kubeconfigKeyName` or the Secret's only key) or of a
//! CAPI Cluster (`<name>-kubeconfig`, key `value`), then a client built from that kubeconfig.

use std::time::Duration;

use base64::Engine;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;

use crate::cluster::kube_client::{chain, Kube};
use crate::cluster::request_log::RequestLog;
use crate::cluster::resources::{SECRET, SECRETS, SVELTOS_CLUSTER, SVELTOS_CLUSTERS};
use crate::error::Request;

/// A cluster of a stage, as ClusterProfile `status.matchingClusters` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterRef {
    pub namespace: String,
    pub name: String,
    pub capi: bool,
}

impl ClusterRef {
    pub fn label(&self) -> String {
        format!(
            "{}/{} ({})",
            self.namespace,
            self.name,
            if self.capi {
                "CAPI Cluster"
            } else {
                "SveltosCluster"
            }
        )
    }
}

/// How to reach a managed cluster, or why it cannot be reached from here.
pub enum Access {
    Client(kube::Client),
    /// Pull mode: the agent in the cluster evaluates the checks; Sveltos does not reach it.
    PullMode,
}

/// GET a path on the management cluster, mapping failures to the plugin's one-line errors.
pub async fn get(kube: &Kube, path: &str, what: Request) -> crate::error::Result<Value> {
    let req = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| crate::error::Error::Io(e.to_string()))?;
    kube.client()
        .request::<Value>(req)
        .await
        .map_err(|e| kube.error(e, &what))
}

/// The SveltosCluster object, when the cluster is one.
pub async fn sveltos_cluster(kube: &Kube, c: &ClusterRef) -> crate::error::Result<Value> {
    get(
        kube,
        &SVELTOS_CLUSTER.namespaced_object_path(&c.namespace, &c.name),
        Request::named("get", SVELTOS_CLUSTERS, &c.name),
    )
    .await
}

/// The Secret name and key Sveltos reads for a cluster.
pub fn secret_for(c: &ClusterRef, sveltos_cluster: Option<&Value>) -> (String, Option<String>) {
    if c.capi {
        return (format!("{}-kubeconfig", c.name), Some("value".into()));
    }
    let spec = sveltos_cluster.and_then(|s| s.get("spec"));
    let name = spec
        .and_then(|s| s.get("kubeconfigName"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| format!("{}-sveltos-kubeconfig", c.name));
    let key = spec
        .and_then(|s| s.get("kubeconfigKeyName"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    (name, key)
}

/// A client for the managed cluster, or the one-line reason there is none.
pub async fn access(kube: &Kube, c: &ClusterRef) -> Result<Access, String> {
    let cluster = if c.capi {
        None
    } else {
        let obj = sveltos_cluster(kube, c).await.map_err(|e| e.to_string())?;
        if obj.pointer("/spec/pullMode").and_then(Value::as_bool) == Some(true) {
            return Ok(Access::PullMode);
        }
        Some(obj)
    };
    let (secret_name, key) = secret_for(c, cluster.as_ref());
    let secret = get(
        kube,
        &SECRET.namespaced_object_path(&c.namespace, &secret_name),
        Request::named("get", SECRETS, &secret_name),
    )
    .await
    .map_err(|e| {
        format!(
            "cannot read its kubeconfig Secret {}/{secret_name}: {e}",
            c.namespace
        )
    })?;
    let content = kubeconfig_bytes(&secret, key.as_deref())
        .map_err(|e| format!("Secret {}/{secret_name}: {e}", c.namespace))?;
    client_from(&content, kube.verbosity())
        .map_err(|e| format!("kubeconfig in Secret {}/{secret_name}: {e}", c.namespace))
        .map(Access::Client)
}

/// libsveltos `getSecretData`: the named key, or (no key named) the only key there is.
pub fn kubeconfig_bytes(secret: &Value, key: Option<&str>) -> Result<Vec<u8>, String> {
    let data = secret
        .get("data")
        .and_then(Value::as_object)
        .filter(|d| !d.is_empty())
        .ok_or_else(|| "data section is empty".to_string())?;
    let encoded = match key {
        Some(k) => data
            .get(k)
            .ok_or_else(|| format!("data section does not contain key: {k}"))?,
        None if data.len() == 1 => data.values().next().unwrap_or(&Value::Null),
        None => {
            // Sveltos takes whichever key Go's map iteration yields first; that is random, so
            // name the ambiguity instead of guessing differently on every run.
            let keys: Vec<&str> = data.keys().map(String::as_str).collect();
            return Err(format!(
                "{} keys ({}) and no spec.kubeconfigKeyName: Sveltos would read an arbitrary one",
                keys.len(),
                keys.join(", ")
            ));
        }
    };
    let text = encoded.as_str().unwrap_or("");
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("not base64: {e}"))
}

/// A client for a kubeconfig's current context, with timeouts so an unreachable cluster fails
/// fast and the other clusters still run; its requests are logged at `-v` as the management
/// cluster's are.
pub fn client_from(content: &[u8], verbosity: u8) -> Result<kube::Client, String> {
    let text = std::str::from_utf8(content).map_err(|_| "not UTF-8 text".to_string())?;
    let kc = Kubeconfig::from_yaml(text).map_err(|e| format!("not a kubeconfig: {}", chain(&e)))?;
    // The proxy as for the management cluster: the kubeconfig's proxy-url, else the
    // environment's for this server.
    let mut config =
        kube_connect::from_kubeconfig(kc, &KubeConfigOptions::default()).map_err(|e| chain(&e))?;
    config.connect_timeout = Some(Duration::from_secs(10));
    config.read_timeout = Some(Duration::from_secs(30));
    let server = config.cluster_url.to_string();
    let log = RequestLog::new(verbosity, &server, &config).map_err(|e| chain(&e))?;
    let builder = kube::client::ClientBuilder::try_from(config).map_err(|e| chain(&e))?;
    Ok(match log {
        Some(log) => builder.with_layer(&log).build(),
        None => builder.build(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sveltos(name: &str) -> ClusterRef {
        ClusterRef {
            namespace: "dev".into(),
            name: name.into(),
            capi: false,
        }
    }

    #[test]
    fn secret_names_follow_clusterproxy() {
        assert_eq!(
            secret_for(&sveltos("dev01"), None),
            ("dev01-sveltos-kubeconfig".into(), None)
        );
        let custom = json!({"spec": {"kubeconfigName": "kc", "kubeconfigKeyName": "config"}});
        assert_eq!(
            secret_for(&sveltos("dev01"), Some(&custom)),
            ("kc".into(), Some("config".into()))
        );
        let capi = ClusterRef {
            capi: true,
            ..sveltos("c1")
        };
        assert_eq!(
            secret_for(&capi, None),
            ("c1-kubeconfig".into(), Some("value".into()))
        );
    }

    #[test]
    fn kubeconfig_keys() {
        let one = json!({"data": {"kubeconfig": "YQ=="}});
        assert_eq!(kubeconfig_bytes(&one, None).unwrap(), b"a");
        let two = json!({"data": {"a": "YQ==", "b": "Yg=="}});
        assert_eq!(kubeconfig_bytes(&two, Some("b")).unwrap(), b"b");
        assert!(kubeconfig_bytes(&two, None)
            .unwrap_err()
            .contains("arbitrary"));
        assert_eq!(
            kubeconfig_bytes(&two, Some("c")).unwrap_err(),
            "data section does not contain key: c"
        );
        assert_eq!(
            kubeconfig_bytes(&json!({}), None).unwrap_err(),
            "data section is empty"
        );
    }
}
