//! A stand-in Kubernetes API server for end-to-end tests: HTTPS on 127.0.0.1 with a throwaway
//! CA, bearer tokens, discovery, CRUD + PATCH + WATCH with the real server's semantics and error
//! bodies, CRD defaulting/validation, and optional admission webhooks. It runs on its own tokio
//! runtime and thread, so blocking tests (spawning `kubectl`) can use it directly.
//!
//! ```no_run
//! use promotion_e2e::apiserver::{StandIn, StandInOptions};
//! let server = StandIn::start(StandInOptions::default()).expect("stand-in starts");
//! let dir = tempfile::tempdir().unwrap();
//! let kubeconfig = server.write_kubeconfig(dir.path()).unwrap();
//! // run `kubectl --kubeconfig <kubeconfig> get clusterpromotions` ...
//! ```

pub mod admission;
pub mod auth;
mod authorization;
mod discovery;
mod events;
mod handlers;
mod impersonation;
pub mod matchconditions;
mod names;
mod openapi;
mod protobuf;
pub mod resources;
mod selectors;
pub mod status;
pub mod store;
mod strategy;
mod table;
pub mod tls;
mod watch;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

pub use admission::{AdmissionConfig, Hook};
pub use auth::{Attributes, Decision, DenyRule, UserInfo};
pub use handlers::RecordedRequest;
pub use status::ApiError;
pub use store::Store;

use handlers::AppState;

/// How to start the stand-in.
#[derive(Clone)]
pub struct StandInOptions {
    /// Serve `clusterpromotions.config.projectsveltos.io` (default true). Without it its paths
    /// answer `404 page not found` and discovery does not list it, as on a cluster without the
    /// CRD.
    pub install_promotion_crd: bool,
    /// Call admission webhooks for ClusterPromotion writes.
    pub admission: Option<AdmissionConfig>,
    /// Extra bearer tokens and the users they authenticate as.
    pub tokens: Vec<(String, UserInfo)>,
    /// Objects present at start (written through [`Store::put`]).
    pub objects: Vec<Value>,
    /// How often watches that asked for bookmarks get one (the real server: about a minute).
    pub bookmark_interval: Duration,
    /// Changes kept for watches to resume from; older resourceVersions get 410 Gone.
    pub history_limit: usize,
    /// What `/version` reports.
    pub git_version: String,
}

impl Default for StandInOptions {
    fn default() -> Self {
        StandInOptions {
            install_promotion_crd: true,
            admission: None,
            tokens: Vec::new(),
            objects: Vec::new(),
            bookmark_interval: Duration::from_secs(1),
            history_limit: 100_000,
            git_version: "v1.33.1".into(),
        }
    }
}

impl StandInOptions {
    pub fn without_promotion_crd(mut self) -> Self {
        self.install_promotion_crd = false;
        self
    }

    pub fn with_objects(mut self, objects: impl IntoIterator<Item = Value>) -> Self {
        self.objects.extend(objects);
        self
    }

    pub fn with_admission(mut self, admission: AdmissionConfig) -> Self {
        self.admission = Some(admission);
        self
    }

    pub fn with_token(mut self, token: &str, user: UserInfo) -> Self {
        self.tokens.push((token.to_string(), user));
        self
    }

    pub fn with_bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StandInError {
    #[error("TLS setup: {0}")]
    Tls(#[from] tls::TlsError),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("seeding object {index}: {error}")]
    Seed { index: usize, error: ApiError },
    #[error("the server thread ended before it was listening")]
    NotListening,
}

pub struct StandIn;

impl StandIn {
    /// Start a server on 127.0.0.1 (random port) on a dedicated thread and tokio runtime.
    pub fn start(options: StandInOptions) -> Result<StandInHandle, StandInError> {
        let registry = resources::registry(options.install_promotion_crd);
        let crds = resources::installed_crds(&registry);
        let store = Store::new(registry, options.history_limit.max(1));
        for crd in crds {
            store
                .put(crd)
                .map_err(|error| StandInError::Seed { index: 0, error })?;
        }
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            store
                .put(json!({
                    "apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}},
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"}
                }))
                .map_err(|error| StandInError::Seed { index: 0, error })?;
        }
        for (index, obj) in options.objects.iter().enumerate() {
            store
                .put(obj.clone())
                .map_err(|error| StandInError::Seed { index, error })?;
        }

        let ca = tls::TestCa::new("stand-in-apiserver-ca")?;
        let serving = ca.issue(&["127.0.0.1", "localhost"])?;
        let server_config = Arc::new(tls::server_config(&serving)?);

        let admin_token = uuid::Uuid::new_v4().simple().to_string();
        let mut tokens = BTreeMap::new();
        tokens.insert(
            admin_token.clone(),
            UserInfo::new("admin", &["system:masters"]),
        );
        for (t, u) in &options.tokens {
            tokens.insert(t.clone(), u.clone());
        }
        let admission = match &options.admission {
            Some(cfg) => Some(Arc::new(admission::AdmissionClient::new(cfg.clone())?)),
            None => None,
        };
        let (drop_watches, _) = tokio::sync::watch::channel(0u64);
        let app = Arc::new(AppState {
            store: store.clone(),
            tokens: RwLock::new(tokens),
            authorizer: RwLock::new(None),
            deny_rules: RwLock::new(Vec::new()),
            hangs: RwLock::new(Vec::new()),
            unavailable: std::sync::atomic::AtomicBool::new(false),
            admission: RwLock::new(admission),
            drop_watches,
            bookmark_interval: options.bookmark_interval,
            git_version: options.git_version.clone(),
            server_address: RwLock::new(String::new()),
            requests: Mutex::new(Vec::new()),
            request_recorded: std::sync::Condvar::new(),
        });

        let server_handle = axum_server::Handle::<SocketAddr>::new();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel::<SocketAddr>();
        let thread_app = app.clone();
        let thread_handle = server_handle.clone();
        let thread = std::thread::Builder::new()
            .name("standin-apiserver".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("standin-apiserver-worker")
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(_) => return,
                };
                runtime.block_on(async move {
                    let router = axum::Router::new()
                        .fallback(handlers::handle)
                        .with_state(thread_app);
                    let rustls = axum_server::tls_rustls::RustlsConfig::from_config(server_config);
                    let notify = thread_handle.clone();
                    tokio::spawn(async move {
                        if let Some(addr) = notify.listening().await {
                            let _ = addr_tx.send(addr);
                        }
                    });
                    let bind: SocketAddr = ([127, 0, 0, 1], 0).into();
                    let _ = axum_server::bind_rustls(bind, rustls)
                        .handle(thread_handle)
                        .serve(router.into_make_service())
                        .await;
                });
            })?;
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| StandInError::NotListening)?;
        *app.server_address
            .write()
            .unwrap_or_else(|p| p.into_inner()) = addr.to_string();
        Ok(StandInHandle {
            url: format!("https://{addr}"),
            ca_pem: ca.ca_pem().to_string(),
            ca,
            token: admin_token,
            app,
            server: server_handle,
            thread: Some(thread),
        })
    }
}

/// A running stand-in. Dropping it shuts the server down.
pub struct StandInHandle {
    url: String,
    ca_pem: String,
    ca: tls::TestCa,
    token: String,
    app: Arc<AppState>,
    server: axum_server::Handle<SocketAddr>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StandInHandle {
    /// `https://127.0.0.1:PORT`
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The CA that signed the serving certificate (PEM).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The same CA, to issue certificates for test webhooks trusted by the same bundle.
    pub fn ca(&self) -> &tls::TestCa {
        &self.ca
    }

    /// Bearer token of the built-in `admin` user (groups `system:masters`).
    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn store(&self) -> Store {
        self.app.store.clone()
    }

    /// Accept another bearer token as `user`.
    pub fn add_token(&self, token: &str, user: UserInfo) {
        self.app
            .tokens
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.to_string(), user);
    }

    /// Decide every request (after the deny rules): return `Decision::Deny` for a 403.
    pub fn set_authorizer(
        &self,
        authorizer: impl Fn(&Attributes) -> Decision + Send + Sync + 'static,
    ) {
        *self
            .app
            .authorizer
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(authorizer));
    }

    /// Make matching requests fail with the real server's 403.
    pub fn deny(&self, rule: DenyRule) {
        self.app
            .deny_rules
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(rule);
    }

    /// Accept the requests that match `rule` (after authorization) and never answer them, as a
    /// server whose webhook or storage hangs. They are not recorded in [`Self::requests`], which
    /// lists answered requests.
    pub fn hang(&self, rule: impl Fn(&Attributes) -> bool + Send + Sync + 'static) {
        self.app
            .hangs
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::new(rule));
    }

    pub fn clear_denials(&self) {
        self.app
            .deny_rules
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        *self
            .app
            .authorizer
            .write()
            .unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Install, replace or remove the admission webhooks.
    pub fn set_admission(&self, config: Option<AdmissionConfig>) -> Result<(), StandInError> {
        let client = match config {
            Some(c) => Some(Arc::new(admission::AdmissionClient::new(c)?)),
            None => None,
        };
        *self
            .app
            .admission
            .write()
            .unwrap_or_else(|p| p.into_inner()) = client;
        Ok(())
    }

    /// A restart of the server's storage, as clients see it: with `true` every open watch ends
    /// and every request is answered 500 `etcdserver: leader changed`, until `false`.
    pub fn set_unavailable(&self, unavailable: bool) {
        self.app
            .unavailable
            .store(unavailable, std::sync::atomic::Ordering::SeqCst);
        if unavailable {
            self.drop_watches();
        }
    }

    /// End every open watch stream (cleanly, as when the server's watch timeout fires), so
    /// clients must re-watch.
    pub fn drop_watches(&self) {
        self.app.drop_watches.send_modify(|g| *g += 1);
    }

    /// Make every resourceVersion seen so far too old (watches from them get 410 Gone).
    pub fn compact(&self) {
        self.app.store.compact();
    }

    /// Requests served so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.app
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Block until a recorded request matches `pred` (true) or `deadline` passes (false).
    pub fn wait_for_request(
        &self,
        pred: impl Fn(&RecordedRequest) -> bool,
        deadline: std::time::Instant,
    ) -> bool {
        let Ok(mut log) = self.app.requests.lock() else {
            return false;
        };
        loop {
            if log.iter().any(&pred) {
                return true;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            log = match self.app.request_recorded.wait_timeout(log, left) {
                Ok((log, _)) => log,
                Err(_) => return false,
            };
        }
    }

    pub fn clear_requests(&self) {
        if let Ok(mut r) = self.app.requests.lock() {
            r.clear();
        }
    }

    /// Write `dir/kubeconfig` for the admin token and return its path.
    pub fn write_kubeconfig(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join("kubeconfig");
        self.write_kubeconfig_for(&path, &self.token, "admin")?;
        Ok(path)
    }

    /// Write a kubeconfig at `path` whose current context uses `token` (user entry `user_name`).
    pub fn write_kubeconfig_for(
        &self,
        path: &Path,
        token: &str,
        user_name: &str,
    ) -> std::io::Result<()> {
        let ca = base64::engine::general_purpose::STANDARD.encode(self.ca_pem.as_bytes());
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: standin\n  cluster:\n    server: {url}\n    certificate-authority-data: {ca}\nusers:\n- name: {user_name}\n  user:\n    token: {token}\ncontexts:\n- name: standin\n  context:\n    cluster: standin\n    user: {user_name}\ncurrent-context: standin\npreferences: {{}}\n",
            url = self.url,
        );
        std::fs::write(path, text)
    }

    /// Stop the server and wait for its thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.drop_watches();
        self.server.shutdown();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for StandInHandle {
    fn drop(&mut self) {
        self.stop();
    }
}
