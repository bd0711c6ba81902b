//! kubectl-compatible connection flags and how they become a `kube::Config`.
//!
//! kubectl passes no flags or environment to plugins (since 1.12), so every flag of kubectl's
//! `genericclioptions` set that matters for a cluster-scoped resource is implemented here, with
//! kubectl's precedence: `--kubeconfig` (one file) over `KUBECONFIG` (several files, merged, first
//! one wins) over `~/.kube/config`, then the in-cluster service account; `--context`,
//! `--cluster` and `--user` pick entries; the remaining flags override what was loaded.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

use crate::duration;
use crate::error::{Error, Result};

const HEADING: &str = "Connection (as in kubectl)";

#[derive(Args, Clone, Debug, Default)]
pub struct ConnectionFlags {
    /// Path to the kubeconfig file to use (instead of KUBECONFIG or ~/.kube/config)
    #[arg(long, global = true, value_name = "PATH", help_heading = HEADING)]
    pub kubeconfig: Option<PathBuf>,
    /// The name of the kubeconfig context to use
    #[arg(long, global = true, value_name = "NAME", help_heading = HEADING)]
    pub context: Option<String>,
    /// The name of the kubeconfig cluster to use
    #[arg(long, global = true, value_name = "NAME", help_heading = HEADING)]
    pub cluster: Option<String>,
    /// The name of the kubeconfig user to use
    #[arg(long, global = true, value_name = "NAME", help_heading = HEADING)]
    pub user: Option<String>,
    /// Username to impersonate for the operation
    #[arg(long = "as", global = true, value_name = "USER", help_heading = HEADING)]
    pub as_user: Option<String>,
    /// Group to impersonate (repeat for several groups)
    #[arg(long = "as-group", global = true, value_name = "GROUP", help_heading = HEADING)]
    pub as_group: Vec<String>,
    /// UID to impersonate
    #[arg(long = "as-uid", global = true, value_name = "UID", help_heading = HEADING)]
    pub as_uid: Option<String>,
    /// Bearer token for authentication to the API server
    #[arg(long, global = true, value_name = "TOKEN", help_heading = HEADING)]
    pub token: Option<String>,
    /// The address and port of the Kubernetes API server
    #[arg(short = 's', long, global = true, value_name = "URL", help_heading = HEADING)]
    pub server: Option<String>,
    /// Time to wait for one server request (e.g. 30s, 1m); 0 waits forever
    #[arg(long, global = true, value_name = "DURATION", value_parser = duration::parse_flag,
          help_heading = HEADING)]
    pub request_timeout: Option<Duration>,
    /// Do not verify the server's certificate (insecure)
    #[arg(long, global = true, help_heading = HEADING)]
    pub insecure_skip_tls_verify: bool,
    /// Path to a CA bundle to verify the server's certificate with
    #[arg(long, global = true, value_name = "PATH", help_heading = HEADING)]
    pub certificate_authority: Option<PathBuf>,
    /// Path to a client certificate file for TLS
    #[arg(long, global = true, value_name = "PATH", help_heading = HEADING)]
    pub client_certificate: Option<PathBuf>,
    /// Path to a client key file for TLS
    #[arg(long, global = true, value_name = "PATH", help_heading = HEADING)]
    pub client_key: Option<PathBuf>,
    /// Server name to use for certificate validation
    #[arg(long, global = true, value_name = "NAME", help_heading = HEADING)]
    pub tls_server_name: Option<String>,
    /// Accepted for kubectl compatibility and ignored: ClusterPromotion is cluster-scoped
    #[arg(short = 'n', long, global = true, value_name = "NAMESPACE", help_heading = HEADING)]
    pub namespace: Option<String>,
    /// Accepted for kubectl compatibility and ignored: ClusterPromotion is cluster-scoped
    #[arg(short = 'A', long, global = true, help_heading = HEADING)]
    pub all_namespaces: bool,
    /// Log level, as kubectl's: 6 logs each request (method, URL, status, latency), 7 and above
    /// their headers too
    #[arg(short = 'v', long = "v", global = true, value_name = "LEVEL", default_value_t = 0,
          help_heading = HEADING)]
    pub v: u8,
}

/// The resolved connection, with what error messages need to name.
pub struct Connection {
    pub config: kube::Config,
    /// The API server URL, as shown in messages.
    pub server: String,
}

impl ConnectionFlags {
    /// Resolve the flags into a client configuration (kubeconfig files are read here; exec
    /// credential plugins run later, on the first request).
    pub async fn resolve(&self) -> Result<Connection> {
        let mut config = match self.load_kubeconfig()? {
            Some((kubeconfig, source)) => self.with_kubeconfig(kubeconfig, &source)?,
            None => self.without_kubeconfig()?,
        };
        self.apply_overrides(&mut config)?;
        // After `--server`: the environment's proxy depends on the final server URL.
        kube_connect::use_environment_proxy(&mut config, &kube_connect::ProxyEnv::from_env());
        let server = config.cluster_url.to_string();
        let server = server.trim_end_matches('/').to_string();
        Ok(Connection { config, server })
    }

    /// The kubeconfig to use and where it came from (for messages); `None` when there is none.
    pub fn load_kubeconfig(&self) -> Result<Option<(Kubeconfig, String)>> {
        if let Some(path) = &self.kubeconfig {
            // The file's own problem first, in kubectl's words (kube's error quotes the path
            // twice and keeps Rust's "(os error N)").
            if let Err(e) = std::fs::File::open(path) {
                return Err(Error::Kubeconfig(format!(
                    "--kubeconfig {}: {}",
                    path.display(),
                    promotion_manifest::io_reason(&e)
                )));
            }
            let kc = Kubeconfig::read_from(path).map_err(|e| {
                Error::Kubeconfig(format!("--kubeconfig {}: {}", path.display(), reason(&e)))
            })?;
            return Ok(Some((kc, path.display().to_string())));
        }
        if let Some(list) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
            return merge_kubeconfigs(&list).map(Some);
        }
        let Some(home) = std::env::home_dir() else {
            return Ok(None);
        };
        let path = home.join(".kube").join("config");
        if !path.exists() {
            return Ok(None);
        }
        let kc = Kubeconfig::read_from(&path)
            .map_err(|e| Error::Kubeconfig(format!("{}: {}", path.display(), reason(&e))))?;
        Ok(Some((kc, path.display().to_string())))
    }

    fn with_kubeconfig(&self, kc: Kubeconfig, source: &str) -> Result<kube::Config> {
        let no_context = kc.current_context.is_none() && self.context.is_none();
        if no_context && self.server.is_some() {
            // kubectl accepts `--server` (+ `--token`) with a kubeconfig that selects nothing.
            return self.without_kubeconfig();
        }
        if let Some(ctx) = &self.context {
            if !kc.contexts.iter().any(|c| &c.name == ctx) {
                let known: Vec<&str> = kc.contexts.iter().map(|c| c.name.as_str()).collect();
                return Err(Error::Kubeconfig(format!(
                    "context {ctx:?} not found in {source} (contexts: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            }
        }
        self.check_kubeconfig_files(&kc, source)?;
        let options = KubeConfigOptions {
            context: self.context.clone(),
            cluster: self.cluster.clone(),
            user: self.user.clone(),
        };
        match kube_connect::load(kc, &options) {
            Ok(c) => Ok(c),
            Err(KubeconfigError::MissingClusterUrl) if self.server.is_some() => {
                self.without_kubeconfig()
            }
            Err(e) => Err(Error::Kubeconfig(format!("{source}: {}", reason(&e)))),
        }
    }

    /// The files the selected cluster and user of `kc` name (`certificate-authority`,
    /// `client-certificate`, `client-key`), checked as the flags' files are: the path once, the
    /// kubeconfig field that names it and what is wrong, instead of kube's message, which
    /// quotes the path twice ('"/x/c"') and, for the client files, comes only when the client
    /// is built. A file a flag replaces is not read, and is not checked.
    fn check_kubeconfig_files(&self, kc: &Kubeconfig, source: &str) -> Result<()> {
        let Some(context) = self
            .context
            .as_ref()
            .or(kc.current_context.as_ref())
            .and_then(|name| kc.contexts.iter().find(|c| &c.name == name))
            .and_then(|c| c.context.as_ref())
        else {
            return Ok(());
        };
        let cluster_name = self.cluster.as_ref().unwrap_or(&context.cluster);
        let cluster = kc.clusters.iter().find(|c| &c.name == cluster_name);
        if let Some(cluster) = cluster.and_then(|c| c.cluster.as_ref()) {
            let ca = cluster
                .certificate_authority
                .as_ref()
                .filter(|_| cluster.certificate_authority_data.is_none())
                .filter(|_| self.certificate_authority.is_none());
            if let Some(ca) = ca {
                let field = format!("clusters[{cluster_name}].certificate-authority in {source}");
                let text = std::fs::read(ca).map_err(|e| {
                    Error::file(
                        ca,
                        format!("{field}: {}", promotion_manifest::io_reason(&e)),
                    )
                })?;
                if !String::from_utf8_lossy(&text).contains("-----BEGIN CERTIFICATE-----") {
                    return Err(Error::file(
                        ca,
                        format!("{field}: no PEM certificate in the file"),
                    ));
                }
            }
        }
        let user_name = self.user.as_ref().or(context.user.as_ref());
        let user = user_name
            .and_then(|name| kc.auth_infos.iter().find(|u| &u.name == name))
            .and_then(|u| Some((u.name.as_str(), u.auth_info.as_ref()?)));
        if let Some((name, user)) = user {
            for (key, path, has_data, replaced) in [
                (
                    "client-certificate",
                    &user.client_certificate,
                    user.client_certificate_data.is_some(),
                    self.client_certificate.is_some(),
                ),
                (
                    "client-key",
                    &user.client_key,
                    user.client_key_data.is_some(),
                    self.client_key.is_some(),
                ),
            ] {
                let Some(path) = path.as_ref().filter(|_| !has_data && !replaced) else {
                    continue;
                };
                std::fs::File::open(path).map_err(|e| {
                    Error::file(
                        path,
                        format!(
                            "users[{name}].{key} in {source}: {}",
                            promotion_manifest::io_reason(&e)
                        ),
                    )
                })?;
            }
        }
        Ok(())
    }

    fn without_kubeconfig(&self) -> Result<kube::Config> {
        if let Some(server) = &self.server {
            let uri = parse_server(server)?;
            return Ok(kube::Config::new(uri));
        }
        kube::Config::incluster().map_err(|_| {
            Error::Kubeconfig(
                "no kubeconfig found (looked at --kubeconfig, KUBECONFIG and ~/.kube/config) and \
                 not running in a cluster: pass --kubeconfig or --server"
                    .into(),
            )
        })
    }

    fn apply_overrides(&self, config: &mut kube::Config) -> Result<()> {
        if let Some(server) = &self.server {
            config.cluster_url = parse_server(server)?;
        }
        if let Some(token) = &self.token {
            let auth = &mut config.auth_info;
            auth.token = Some(token.clone().into());
            // An explicit token wins over every credential source of the kubeconfig user.
            auth.token_file = None;
            auth.exec = None;
            auth.auth_provider = None;
            auth.username = None;
            auth.password = None;
        }
        if let Some(user) = &self.as_user {
            config.auth_info.impersonate = Some(user.clone());
        }
        if !self.as_group.is_empty() {
            config.auth_info.impersonate_groups = Some(self.as_group.clone());
        }
        if let Some(uid) = &self.as_uid {
            config.auth_info.impersonate_uid = Some(uid.clone());
        }
        if self.insecure_skip_tls_verify {
            config.accept_invalid_certs = true;
        }
        if let Some(ca) = &self.certificate_authority {
            // Say what is wrong with the file: missing, unreadable, or holding no certificate
            // (an empty file such as /dev/null exists; it just has no PEM block).
            let text = std::fs::read(ca).map_err(|e| {
                Error::file(
                    ca.display(),
                    format!(
                        "--certificate-authority: {}",
                        promotion_manifest::io_reason(&e)
                    ),
                )
            })?;
            if !String::from_utf8_lossy(&text).contains("-----BEGIN CERTIFICATE-----") {
                return Err(Error::file(
                    ca.display(),
                    "--certificate-authority: no PEM certificate in the file",
                ));
            }
            config.root_cert_file = Some(ca.clone());
        }
        // kube's own message for a missing file quotes the path twice ('"/x/c"'): say it as
        // --certificate-authority is said.
        for (flag, path) in [
            ("--client-certificate", &self.client_certificate),
            ("--client-key", &self.client_key),
        ] {
            if let Some(path) = path {
                std::fs::metadata(path).map_err(|e| {
                    Error::file(
                        path.display(),
                        format!("{flag}: {}", promotion_manifest::io_reason(&e)),
                    )
                })?;
            }
        }
        if let Some(cert) = &self.client_certificate {
            config.auth_info.client_certificate = Some(cert.display().to_string());
            config.auth_info.client_certificate_data = None;
        }
        if let Some(key) = &self.client_key {
            config.auth_info.client_key = Some(key.display().to_string());
            config.auth_info.client_key_data = None;
        }
        if let Some(name) = &self.tls_server_name {
            config.tls_server_name = Some(name.clone());
        }
        if let Some(timeout) = self.request_timeout.filter(|t| !t.is_zero()) {
            config.connect_timeout = Some(timeout);
            config.read_timeout = Some(timeout);
            config.write_timeout = Some(timeout);
            config.reset_reader_on_write = true;
        }
        Ok(())
    }
}

/// `KUBECONFIG`'s files merged as client-go's loading rules merge them: in order, skipping
/// entries that are empty or name no file, the first file to define a cluster, user or context
/// (and the current context) winning. A file that exists but cannot be read or parsed is an
/// error naming it; a list naming no existing file at all is one too.
fn merge_kubeconfigs(list: &std::ffi::OsStr) -> Result<(Kubeconfig, String)> {
    let shown = list.to_string_lossy().into_owned();
    let mut merged: Option<Kubeconfig> = None;
    for path in std::env::split_paths(list) {
        if path.as_os_str().is_empty() || !path.exists() {
            continue;
        }
        let kc = Kubeconfig::read_from(&path)
            .map_err(|e| Error::Kubeconfig(format!("{}: {}", path.display(), reason(&e))))?;
        merged = Some(match merged {
            None => kc,
            Some(first) => first
                .merge(kc)
                .map_err(|e| Error::Kubeconfig(format!("KUBECONFIG={shown}: {}", reason(&e))))?,
        });
    }
    match merged {
        Some(kc) => Ok((kc, format!("KUBECONFIG={shown}"))),
        None => Err(Error::Kubeconfig(format!(
            "KUBECONFIG={shown} names no existing file"
        ))),
    }
}

fn parse_server(server: &str) -> Result<http::Uri> {
    // kubectl accepts `host:port` without a scheme and assumes https.
    let with_scheme = if server.contains("://") {
        server.to_string()
    } else {
        format!("https://{server}")
    };
    with_scheme
        .parse::<http::Uri>()
        .map_err(|e| Error::Usage(format!("--server {server:?}: not a URL ({e})")))
}

/// A kube error's message without its Debug noise, innermost cause last.
fn reason(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let msg = s.to_string();
        if !out.contains(&msg) {
            out.push_str(": ");
            out.push_str(&msg);
        }
        source = s.source();
    }
    out
}

/// Names of the contexts in the kubeconfig these flags select (for shell completion).
pub fn context_names(flags: &ConnectionFlags) -> Vec<String> {
    match flags.load_kubeconfig() {
        Ok(Some((kc, _))) => kc.contexts.into_iter().map(|c| c.name).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_entries_that_do_not_exist_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, context: &str, server: &str| {
            let path = dir.path().join(name);
            std::fs::write(
                &path,
                format!(
                    "apiVersion: v1\nkind: Config\ncurrent-context: {context}\n\
                     clusters:\n- name: {context}\n  cluster: {{server: {server}}}\n\
                     contexts:\n- name: {context}\n  context: {{cluster: {context}, user: u}}\n\
                     users:\n- name: u\n  user: {{token: t}}\n"
                ),
            )
            .unwrap();
            path
        };
        let a = write("a", "first", "https://a.example:6443");
        let b = write("b", "second", "https://b.example:6443");
        let missing = dir.path().join("missing");
        let list = std::env::join_paths([missing.clone(), a, b]).unwrap();
        let (kc, _) = merge_kubeconfigs(&list).unwrap();
        // The first existing file sets the current context; both contexts are there.
        assert_eq!(kc.current_context.as_deref(), Some("first"));
        assert_eq!(kc.contexts.len(), 2);
        let only_missing = std::env::join_paths([missing]).unwrap();
        assert!(merge_kubeconfigs(&only_missing)
            .unwrap_err()
            .to_string()
            .contains("names no existing file"));
    }

    #[test]
    fn server_without_scheme_is_https() {
        assert_eq!(
            parse_server("127.0.0.1:6443").unwrap().to_string(),
            "https://127.0.0.1:6443/"
        );
        assert!(parse_server("http://[::1").is_err());
    }
}
