//! A `kube::Config` built from a kubeconfig the way client-go builds its `rest.Config`, with the
//! proxy client-go would use: the cluster's `proxy-url` when it has one (http, https or socks5),
//! otherwise the environment's (`HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`, see [`proxy`]).
//!
//! kube 5's own loader cannot be used for the proxy: it takes `HTTPS_PROXY` for every server
//! (also `http://` and loopback ones), matches `NO_PROXY` against the proxy's URL instead of the
//! server's, applies `NO_PROXY` to a kubeconfig `proxy-url` too, and fails on `NO_PROXY` entries
//! Go ignores (`a,,b`, a trailing comma). So [`load`] picks the kubeconfig's entries as kube
//! does, without reading the environment, and [`use_environment_proxy`] decides the rest once
//! the server URL is final (after `--server`).
//!
//! The plugin calls [`load`] and [`use_environment_proxy`]; a program with a kubeconfig and no
//! flags can call [`from_kubeconfig`], which does both.

pub mod proxy;

use kube::config::{
    ExecAuthCluster, KubeConfigOptions, Kubeconfig, KubeconfigError, LoadDataError,
};

pub use proxy::ProxyEnv;

/// The kubeconfig's context, cluster and user (picked by `options`, as kube's loader picks
/// them, with kube's errors), and the cluster's `proxy-url` as [`kube::Config::proxy_url`]
/// (`None` when it has none: then [`use_environment_proxy`] decides).
pub fn load(
    kubeconfig: Kubeconfig,
    options: &KubeConfigOptions,
) -> Result<kube::Config, KubeconfigError> {
    let context_name = options
        .context
        .as_ref()
        .or(kubeconfig.current_context.as_ref())
        .ok_or(KubeconfigError::CurrentContextNotSet)?;
    let context = kubeconfig
        .contexts
        .iter()
        .find(|c| &c.name == context_name)
        .and_then(|c| c.context.clone())
        .ok_or_else(|| KubeconfigError::LoadContext(context_name.clone()))?;
    let cluster_name = options.cluster.as_ref().unwrap_or(&context.cluster);
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| &c.name == cluster_name)
        .and_then(|c| c.cluster.clone())
        .ok_or_else(|| KubeconfigError::LoadClusterOfContext(cluster_name.clone()))?;
    // client-go does not fail on a missing user; kube does not either.
    let mut user = options
        .user
        .as_ref()
        .or(context.user.as_ref())
        .and_then(|name| kubeconfig.auth_infos.iter().find(|u| &u.name == name))
        .and_then(|u| u.auth_info.clone())
        .unwrap_or_default();
    if let Some(exec) = &mut user.exec {
        if exec.provide_cluster_info {
            exec.cluster = Some(ExecAuthCluster::try_from(&cluster)?);
        }
    }

    let server = cluster
        .server
        .clone()
        .ok_or(KubeconfigError::MissingClusterUrl)?
        .parse::<http::Uri>()
        .map_err(KubeconfigError::ParseClusterUrl)?;
    let mut config = kube::Config::new(server);
    config.default_namespace = context
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_string());
    config.accept_invalid_certs = cluster.insecure_skip_tls_verify.unwrap_or(false);
    config.disable_compression = cluster.disable_compression.unwrap_or(false);
    config.root_cert = ca_bundle(&cluster)?;
    config.tls_server_name = cluster.tls_server_name.clone();
    config.proxy_url = match cluster.proxy_url.as_deref().filter(|p| !p.is_empty()) {
        Some(p) => Some(p.parse().map_err(KubeconfigError::ParseProxyUrl)?),
        None => None,
    };
    config.auth_info = user;
    Ok(config)
}

/// The DER certificates of `certificate-authority-data` (or the `certificate-authority` file),
/// as kube reads them.
fn ca_bundle(cluster: &kube::config::Cluster) -> Result<Option<Vec<Vec<u8>>>, KubeconfigError> {
    if cluster.certificate_authority.is_none() && cluster.certificate_authority_data.is_none() {
        return Ok(None);
    }
    let pem_bytes = match &cluster.certificate_authority_data {
        Some(data) => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|e| {
                    KubeconfigError::LoadCertificateAuthority(LoadDataError::DecodeBase64(e))
                })?
        }
        None => {
            let path = cluster.certificate_authority.clone().unwrap_or_default();
            std::fs::read(&path).map_err(|e| {
                KubeconfigError::LoadCertificateAuthority(LoadDataError::ReadFile(e, path.into()))
            })?
        }
    };
    let certs = pem::parse_many(&pem_bytes)
        .map_err(KubeconfigError::ParseCertificates)?
        .into_iter()
        .filter(|p| p.tag() == "CERTIFICATE")
        .map(pem::Pem::into_contents)
        .collect();
    Ok(Some(certs))
}

/// Give `config` the environment's proxy for its server when it has no proxy of its own (no
/// kubeconfig `proxy-url`): client-go's `http.ProxyFromEnvironment` with `NO_PROXY`'s CIDRs.
/// Call it once the server URL is final.
pub fn use_environment_proxy(config: &mut kube::Config, env: &ProxyEnv) {
    if config.proxy_url.is_none() {
        config.proxy_url = env.proxy_for(&config.cluster_url);
    }
}

/// [`load`], then [`use_environment_proxy`] with this process's environment.
pub fn from_kubeconfig(
    kubeconfig: Kubeconfig,
    options: &KubeConfigOptions,
) -> Result<kube::Config, KubeconfigError> {
    let mut config = load(kubeconfig, options)?;
    use_environment_proxy(&mut config, &ProxyEnv::from_env());
    Ok(config)
}

/// An error's message followed by its causes, without repeats, in words (never a `Debug` dump):
/// how the plugin and the controller say why a request got no answer.
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = vec![err.to_string()];
    let mut source = err.source();
    while let Some(s) = source {
        let msg = s.to_string();
        if !parts.iter().any(|p| p.contains(&msg)) {
            parts.push(msg);
        }
        source = s.source();
    }
    // The innermost causes say what actually happened ("connection refused"); outer layers
    // ("client error (Connect)") add little.
    let useful: Vec<&String> = parts
        .iter()
        .filter(|p| !p.starts_with("client error") && !p.starts_with("error trying to connect"))
        .collect();
    if useful.is_empty() {
        parts.join(": ")
    } else {
        useful
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(cluster_extra: &str) -> Kubeconfig {
        Kubeconfig::from_yaml(&format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
             clusters:\n- name: c\n  cluster:\n    server: https://api.example.com:6443\n{cluster_extra}\
             contexts:\n- name: c\n  context: {{cluster: c, user: u, namespace: ns}}\n\
             users:\n- name: u\n  user: {{token: t}}\n"
        ))
        .unwrap()
    }

    #[test]
    fn kubeconfig_proxy_url_wins_over_the_environment() {
        let env = ProxyEnv {
            https_proxy: "http://env-proxy:3128".into(),
            no_proxy: "api.example.com".into(),
            ..ProxyEnv::default()
        };
        let mut config = load(
            kubeconfig("    proxy-url: socks5://bastion:1080\n"),
            &KubeConfigOptions::default(),
        )
        .unwrap();
        use_environment_proxy(&mut config, &env);
        // NO_PROXY names the server, and still the kubeconfig's proxy is used, as in client-go.
        assert_eq!(
            config.proxy_url.map(|u| u.to_string()).as_deref(),
            Some("socks5://bastion:1080/")
        );
        assert_eq!(config.default_namespace, "ns");
    }

    #[test]
    fn without_proxy_url_the_environment_decides() {
        let env = ProxyEnv {
            https_proxy: "http://env-proxy:3128".into(),
            ..ProxyEnv::default()
        };
        let mut config = load(kubeconfig(""), &KubeConfigOptions::default()).unwrap();
        assert_eq!(config.proxy_url, None);
        use_environment_proxy(&mut config, &env);
        assert_eq!(
            config.proxy_url.map(|u| u.to_string()).as_deref(),
            Some("http://env-proxy:3128/")
        );
    }

    #[test]
    fn loader_errors_are_kubes() {
        let kc = kubeconfig("");
        let err = load(
            kc,
            &KubeConfigOptions {
                context: Some("nope".into()),
                ..KubeConfigOptions::default()
            },
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "failed to load current context: nope");
        let err = load(
            kubeconfig("    certificate-authority-data: '!!'\n"),
            &KubeConfigOptions::default(),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("failed to load certificate authority"),
            "{err}"
        );
    }
}
