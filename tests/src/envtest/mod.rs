//! A real kube-apiserver for tests, the way Kubernetes' envtest provides one: `etcd` and
//! `kube-apiserver` from `$KUBEBUILDER_ASSETS`, started on free loopback ports with a fresh CA,
//! serving certificate and service-account key, token users with RBAC ([`users`]), and the
//! Sveltos CRDs of `crates/crd-schema/crds/` installed and Established. Tests get a kubeconfig and a
//! kube-rs client per user.
//!
//! One server per test binary ([`Envtest::shared`]); tests isolate by namespace and object
//! names. Both processes are stopped by PID when the [`Envtest`] is dropped, at process exit
//! for the shared one, and by the kernel if the test binary dies abruptly ([`process`]).
//!
//! ```no_run
//! use promotion_e2e::envtest::{Envtest, User};
//! let server = Envtest::shared().expect("a real API server");
//! let kubeconfig = server.kubeconfig(User::Viewer);
//! // run `kubectl --kubeconfig <kubeconfig> get clusterpromotions` ...
//! ```

pub mod assets;
pub mod certs;
pub mod http;
pub mod objects;
pub mod process;
mod runtime;
pub mod users;
pub mod webhook;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use assets::{gate, Assets, Gate};
pub use objects::{Kind, ObjectError, Objects};
pub use runtime::block_on;
pub use users::User;
pub use webhook::{FailurePolicy, WebhookConfigurations, WebhookServer};

use process::Supervised;
use users::Tokens;

#[derive(Debug, thiserror::Error)]
pub enum EnvtestError {
    #[error(transparent)]
    Assets(#[from] assets::AssetsError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("generating certificates: {0}")]
    Certs(#[from] rcgen::Error),
    #[error("{name} did not become ready within {patience:?} ({why}); the end of its log ({log}):\n{tail}")]
    NotReady {
        name: &'static str,
        patience: Duration,
        why: String,
        log: PathBuf,
        tail: String,
    },
    #[error("kubeconfig of {user}: {source}")]
    Kubeconfig {
        user: &'static str,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("client for {user}: {source}")]
    Client {
        user: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error("{0}")]
    Setup(String),
    #[error("the real API server of this test binary did not start: {0}")]
    Earlier(String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> EnvtestError {
    let what = what.into();
    move |source| EnvtestError::Io { what, source }
}

/// Bounds for start-up on a loaded 2-core machine (it takes about 3 s when idle).
const ETCD_PATIENCE: Duration = Duration::from_secs(30);
const APISERVER_PATIENCE: Duration = Duration::from_secs(90);
const CRD_PATIENCE: Duration = Duration::from_secs(60);

/// What a private server is started with beyond the defaults.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Write the API server's audit log (`--audit-log-path`, JSON lines): every write to
    /// ClusterPromotions (status included) at `Metadata` level (who, which User-Agent, when, the
    /// answer's code), writes to Leases and ClusterProfiles at `Request` level (also the body:
    /// the holder written, the profile applied), nothing else. Read it with
    /// [`Envtest::audit_log`].
    pub audit_log: bool,
}

/// The audit policy of [`Options::audit_log`]: only the completed requests (`ResponseComplete`).
const AUDIT_POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: Request
    verbs: ["create", "update", "patch", "delete"]
    resources:
      - group: "coordination.k8s.io"
        resources: ["leases"]
      - group: "config.projectsveltos.io"
        resources: ["clusterprofiles"]
  - level: Metadata
    verbs: ["create", "update", "patch", "delete"]
    resources:
      - group: "config.projectsveltos.io"
        resources: ["clusterpromotions", "clusterpromotions/status"]
  - level: None
"#;

/// A running etcd + kube-apiserver pair.
pub struct Envtest {
    url: String,
    ca_pem: String,
    tokens: Tokens,
    kubeconfigs: Vec<(User, PathBuf)>,
    admin: Objects,
    startup: Duration,
    version: String,
    running: Mutex<Option<Running>>,
    launch: Launch,
    audit_log: Option<PathBuf>,
}

/// How each process was started: a restart runs the same command again, on the same ports and
/// the same data (etcd keeps its data folder; the API server appends to its logs).
struct Launch {
    etcd: (PathBuf, Vec<OsString>),
    apiserver: (PathBuf, Vec<OsString>),
    etcd_health: std::net::SocketAddr,
    dir: PathBuf,
}

impl Launch {
    fn command((program, args): &(PathBuf, Vec<OsString>)) -> Command {
        let mut command = Command::new(program);
        command.args(args);
        command
    }
}

/// What is stopped at the end; fields drop in order: the API server before its etcd, and the
/// data folder last.
struct Running {
    apiserver: Supervised,
    etcd: Supervised,
    _dir: tempfile::TempDir,
}

static SHARED: OnceLock<Result<Envtest, String>> = OnceLock::new();

impl Envtest {
    /// The test binary's server, started on first use (assets from `KUBEBUILDER_ASSETS`). A
    /// failed start is remembered: every later caller gets the same error at once.
    pub fn shared() -> Result<&'static Envtest, EnvtestError> {
        let started = SHARED.get_or_init(|| {
            let started = Assets::from_env()
                .map_err(EnvtestError::from)
                .and_then(|assets| Envtest::start(&assets))
                .map_err(|e| e.to_string());
            if started.is_ok() {
                stop_shared_at_exit();
            }
            started
        });
        started
            .as_ref()
            .map_err(|e| EnvtestError::Earlier(e.clone()))
    }

    /// The shared server if some test started it (for reporting; never starts one).
    pub fn shared_if_started() -> Option<&'static Envtest> {
        SHARED.get().and_then(|started| started.as_ref().ok())
    }

    /// Start a private server (stopped when dropped).
    pub fn start(assets: &Assets) -> Result<Envtest, EnvtestError> {
        Envtest::start_with(assets, &Options::default())
    }

    /// Start a private server with `options` (stopped when dropped).
    pub fn start_with(assets: &Assets, options: &Options) -> Result<Envtest, EnvtestError> {
        let began = Instant::now();
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Envtest::start_once(assets, options, began) {
                // Ports are picked free and then handed over; another process may take one
                // in between. That shows as an early exit with "address already in use".
                Err(EnvtestError::NotReady { tail, .. })
                    if attempt < 3 && tail.contains("address already in use") => {}
                other => return other,
            }
        }
    }

    fn start_once(
        assets: &Assets,
        options: &Options,
        began: Instant,
    ) -> Result<Envtest, EnvtestError> {
        let dir = tempfile::Builder::new()
            .prefix("promotion-envtest-")
            .tempdir_in(data_root())
            .map_err(io("creating the server's data folder"))?;
        let path = |name: &str| dir.path().join(name);
        let certs = certs::ServerCerts::generate()?;
        let tokens = Tokens::generate();
        for (file, text) in [
            ("ca.crt", &certs.ca_pem),
            ("serving.crt", &certs.serving_cert_pem),
            ("serving.key", &certs.serving_key_pem),
            ("sa.key", &certs.service_account_key_pem),
            ("sa.pub", &certs.service_account_pub_pem),
            ("tokens.csv", &tokens.csv()),
        ] {
            std::fs::write(path(file), text).map_err(io(format!("writing {file}")))?;
        }

        let (client_port, peer_port, secure_port) = (free_port()?, free_port()?, free_port()?);
        let etcd_url = format!("http://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let etcd_args: Vec<OsString> = [
            "--name".into(),
            "envtest".into(),
            "--data-dir".into(),
            path("etcd").into_os_string(),
        ]
        .into_iter()
        .chain(
            [
                "--listen-client-urls",
                &etcd_url,
                "--advertise-client-urls",
                &etcd_url,
                "--listen-peer-urls",
                &peer_url,
                "--initial-advertise-peer-urls",
                &peer_url,
                "--initial-cluster",
                &format!("envtest={peer_url}"),
                "--initial-cluster-state",
                "new",
                "--logger=zap",
            ]
            .map(OsString::from),
        )
        .collect();
        let etcd_launch = (assets.etcd.clone(), etcd_args);
        let etcd = Launch::command(&etcd_launch);
        let mut etcd = spawn_logged("etcd", etcd, &path("etcd.log"))?;
        let health = std::net::SocketAddr::from(([127, 0, 0, 1], client_port));
        wait_until("etcd", &mut etcd, &path("etcd.log"), ETCD_PATIENCE, || {
            etcd_healthy(health)
        })?;

        let mut apiserver_args: Vec<OsString> = [
            "--bind-address=127.0.0.1".to_string(),
            "--advertise-address=127.0.0.1".to_string(),
            format!("--secure-port={secure_port}"),
            format!("--etcd-servers={etcd_url}"),
            flag("--tls-cert-file", &path("serving.crt")),
            flag("--tls-private-key-file", &path("serving.key")),
            flag("--client-ca-file", &path("ca.crt")),
            "--authorization-mode=RBAC".to_string(),
            flag("--token-auth-file", &path("tokens.csv")),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_string(),
            flag("--service-account-key-file", &path("sa.pub")),
            flag("--service-account-signing-key-file", &path("sa.key")),
            "--service-cluster-ip-range=10.0.0.0/24".to_string(),
            // The `kubernetes` Endpoints object cannot hold a loopback address.
            "--endpoint-reconciler-type=none".to_string(),
        ]
        .map(OsString::from)
        .into_iter()
        .collect();
        let audit_log = options.audit_log.then(|| path("audit.log"));
        if let Some(log) = &audit_log {
            std::fs::write(path("audit-policy.yaml"), AUDIT_POLICY)
                .map_err(io("writing the audit policy"))?;
            for arg in [
                flag("--audit-policy-file", &path("audit-policy.yaml")),
                flag("--audit-log-path", log),
                "--audit-log-format=json".to_string(),
                "--audit-log-mode=blocking".to_string(),
            ] {
                apiserver_args.push(arg.into());
            }
        }
        let apiserver_launch = (assets.kube_apiserver.clone(), apiserver_args);
        let apiserver = Launch::command(&apiserver_launch);
        let mut apiserver = spawn_logged("kube-apiserver", apiserver, &path("kube-apiserver.log"))?;

        let url = format!("https://127.0.0.1:{secure_port}");
        let mut kubeconfigs = Vec::new();
        for user in User::ALL {
            let file = path(&user.kubeconfig_file());
            let name = format!("envtest-{}", user.name());
            crate::bins::Kubeconfig::new(&name, &url, tokens.of(user))
                .with_ca(&certs.ca_pem)
                .write(&file)
                .map_err(io(format!("writing {}", file.display())))?;
            kubeconfigs.push((user, file));
        }
        let admin_kubeconfig = kubeconfigs[0].1.clone();
        let admin = client_from_kubeconfig(User::Admin.name(), &admin_kubeconfig)?;
        wait_until(
            "kube-apiserver",
            &mut apiserver,
            &path("kube-apiserver.log"),
            APISERVER_PATIENCE,
            || apiserver_ready(&admin),
        )?;
        let client = admin.clone();
        let version = block_on(async move { client.apiserver_version().await })
            .map(|v| v.git_version)
            .unwrap_or_default();

        let server = Envtest {
            url,
            ca_pem: certs.ca_pem,
            tokens,
            kubeconfigs,
            admin: Objects::new(admin),
            startup: Duration::ZERO,
            version,
            launch: Launch {
                etcd: etcd_launch,
                apiserver: apiserver_launch,
                etcd_health: health,
                dir: dir.path().to_path_buf(),
            },
            audit_log,
            running: Mutex::new(Some(Running {
                apiserver,
                etcd,
                _dir: dir,
            })),
        };
        server.install_crds()?;
        for object in users::rbac_objects() {
            server.admin_do(move |o| async move { o.create(&object).await })?;
        }
        let mut server = server;
        server.startup = began.elapsed();
        Ok(server)
    }

    fn admin_do<F, Fut, T>(&self, f: F) -> Result<T, EnvtestError>
    where
        F: FnOnce(Objects) -> Fut,
        Fut: std::future::Future<Output = Result<T, ObjectError>> + Send + 'static,
        T: Send + 'static,
    {
        block_on(f(self.admin.clone())).map_err(EnvtestError::from)
    }

    /// `crates/crd-schema/crds/*.yaml`, created and waited for until Established.
    fn install_crds(&self) -> Result<(), EnvtestError> {
        let dir = crate::bins::workspace_root()
            .join("crates")
            .join("crd-schema")
            .join("crds");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(io(format!("reading {}", dir.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        let mut names = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file)
                .map_err(io(format!("reading {}", file.display())))?;
            let crd: Value = serde_saphyr::from_str(&text)
                .map_err(|e| EnvtestError::Setup(format!("{} is not YAML: {e}", file.display())))?;
            names.push(
                crd["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
            self.admin_do(move |o| async move { o.create(&crd).await })?;
        }
        let crd_kind = Kind {
            api_version: "apiextensions.k8s.io/v1",
            kind: "CustomResourceDefinition",
        };
        let deadline = Instant::now() + CRD_PATIENCE;
        for name in names {
            loop {
                let n = name.clone();
                let crd = self.admin_do(move |o| async move { o.get(crd_kind, None, &n).await })?;
                let established = crd.as_ref().is_some_and(|c| {
                    c["status"]["conditions"].as_array().is_some_and(|conds| {
                        conds
                            .iter()
                            .any(|c| c["type"] == "Established" && c["status"] == "True")
                    })
                });
                if established {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(EnvtestError::Setup(format!(
                        "CRD {name} not Established after {CRD_PATIENCE:?}: {}",
                        crd.map(|c| c["status"].to_string()).unwrap_or_default()
                    )));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    /// `https://127.0.0.1:PORT`
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The CA of the serving certificate (PEM).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    pub fn token(&self, user: User) -> &str {
        self.tokens.of(user)
    }

    /// A kubeconfig whose only context is `user` on this server.
    pub fn kubeconfig(&self, user: User) -> &Path {
        self.kubeconfigs
            .iter()
            .find(|(u, _)| *u == user)
            .map(|(_, p)| p.as_path())
            .unwrap_or_else(|| Path::new(""))
    }

    /// A kube-rs client for `user`. Built in the caller's tokio runtime when there is one,
    /// otherwise in the harness's.
    pub fn client(&self, user: User) -> Result<kube::Client, EnvtestError> {
        client_from_kubeconfig(user.name(), self.kubeconfig(user))
    }

    /// Object access as the admin.
    pub fn admin(&self) -> &Objects {
        &self.admin
    }

    /// `gitVersion` from `/version`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Wall time from the call to `start` until CRDs and RBAC were installed.
    pub fn startup(&self) -> Duration {
        self.startup
    }

    /// PIDs of kube-apiserver and etcd while they run.
    pub fn pids(&self) -> Option<(u32, u32)> {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.as_ref().map(|r| (r.apiserver.pid(), r.etcd.pid()))
    }

    /// The audit log, when the server was started with [`Options::audit_log`].
    pub fn audit_log(&self) -> Option<&Path> {
        self.audit_log.as_deref()
    }

    /// Kill kube-apiserver (SIGKILL, as a crashed or evicted control plane would go), leave it
    /// down for `down`, start it again on the same port and wait until it is ready. Returns how
    /// long it took to be ready again after the start.
    pub fn restart_apiserver(&self, down: Duration) -> Result<Duration, EnvtestError> {
        self.restart(false, down)
    }

    /// Kill etcd (SIGKILL), leave it down for `down`, start it again on its data folder and wait
    /// until both it and the API server (which reconnects by itself) are ready. Returns how long
    /// that took after the start.
    pub fn restart_etcd(&self, down: Duration) -> Result<Duration, EnvtestError> {
        self.restart(true, down)
    }

    fn restart(&self, etcd: bool, down: Duration) -> Result<Duration, EnvtestError> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let Some(running) = running.as_mut() else {
            return Err(EnvtestError::Setup("the server was stopped".into()));
        };
        let (name, process, launch) = if etcd {
            ("etcd", &mut running.etcd, &self.launch.etcd)
        } else {
            (
                "kube-apiserver",
                &mut running.apiserver,
                &self.launch.apiserver,
            )
        };
        process.stop();
        std::thread::sleep(down);
        let log = self.launch.dir.join(format!("{name}.log"));
        let started = Instant::now();
        *process = spawn_logged_append(name, Launch::command(launch), &log)?;
        if etcd {
            let health = self.launch.etcd_health;
            wait_until(name, process, &log, ETCD_PATIENCE, || etcd_healthy(health))?;
        }
        wait_until(
            "kube-apiserver",
            &mut running.apiserver,
            &self.launch.dir.join("kube-apiserver.log"),
            APISERVER_PATIENCE,
            || apiserver_ready(self.admin.client()),
        )?;
        Ok(started.elapsed())
    }

    /// Stop both processes (API server first) and remove the data folder. Idempotent.
    pub fn stop(&self) {
        // At process exit another thread may hold the lock forever: never wait for it there.
        let taken = match self.running.try_lock() {
            Ok(mut guard) => guard.take(),
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().take(),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        drop(taken);
    }
}

impl Drop for Envtest {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Statics are never dropped, so the shared server is stopped from an `atexit` handler (run by
/// `std::process::exit`, which test harnesses call, and when `main` returns).
fn stop_shared_at_exit() {
    extern "C" fn stop_shared() {
        if let Some(Ok(server)) = SHARED.get() {
            server.stop();
        }
    }
    // SAFETY: registers a plain function; it only touches a static that outlives it.
    unsafe {
        libc::atexit(stop_shared);
    }
}

/// etcd syncs every write and preallocates 64 MiB of WAL: on tmpfs that costs neither disk
/// space nor fsync time, and the data is thrown away anyway. Containers often get a 64 MiB
/// `/dev/shm`, too small: then the temp folder.
fn data_root() -> PathBuf {
    const NEEDED: u64 = 256 << 20;
    let shm = Path::new("/dev/shm");
    if free_bytes(shm).is_some_and(|free| free >= NEEDED) {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Space an unprivileged writer may use under `path` (`None` if it cannot be asked).
// The statvfs fields are u64 here but narrower on 32-bit targets.
#[allow(clippy::useless_conversion)]
fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a NUL-terminated path and a buffer of the right type; read only on success.
    let stats = unsafe {
        if libc::statvfs(c_path.as_ptr(), stats.as_mut_ptr()) != 0 {
            return None;
        }
        stats.assume_init()
    };
    let writable = unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } == 0;
    writable.then(|| u64::from(stats.f_bavail).saturating_mul(u64::from(stats.f_frsize)))
}

fn flag(name: &str, path: &Path) -> String {
    format!("{name}={}", path.display())
}

fn free_port() -> Result<u16, EnvtestError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(io("finding a free loopback port"))
}

fn etcd_healthy(health: std::net::SocketAddr) -> bool {
    matches!(http::get(health, "/health"), Ok((200, body)) if body.contains("\"health\":\"true\""))
}

/// `/readyz` answers `ok` (etcd reachable, informers synced, post-start hooks done).
fn apiserver_ready(client: &kube::Client) -> bool {
    let client = client.clone();
    block_on(async move {
        let request = hyper::Request::get("/readyz").body(Vec::new());
        match request {
            Ok(r) => client.request_text(r).await.is_ok_and(|t| t == "ok"),
            Err(_) => false,
        }
    })
}

fn spawn_logged(
    name: &'static str,
    command: Command,
    log: &Path,
) -> Result<Supervised, EnvtestError> {
    let file = std::fs::File::create(log).map_err(io(format!("creating {}", log.display())))?;
    spawn_to(name, command, file, log)
}

/// [`spawn_logged`] after a restart: the log goes on where the previous process stopped.
fn spawn_logged_append(
    name: &'static str,
    command: Command,
    log: &Path,
) -> Result<Supervised, EnvtestError> {
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
        .map_err(io(format!("opening {}", log.display())))?;
    spawn_to(name, command, file, log)
}

fn spawn_to(
    name: &'static str,
    mut command: Command,
    file: std::fs::File,
    log: &Path,
) -> Result<Supervised, EnvtestError> {
    let err = file
        .try_clone()
        .map_err(io(format!("opening {}", log.display())))?;
    // Webhook calls and loopback clients must never go through a proxy.
    for var in [
        "http_proxy",
        "https_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ] {
        command.env_remove(var);
    }
    command
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err);
    process::spawn(name, command).map_err(io(format!("starting {name}")))
}

fn wait_until(
    name: &'static str,
    process: &mut Supervised,
    log: &Path,
    patience: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<(), EnvtestError> {
    let deadline = Instant::now() + patience;
    loop {
        if ready() {
            return Ok(());
        }
        let why = if let Some(status) = process.exited() {
            format!("it exited: {status}")
        } else if Instant::now() > deadline {
            "timed out".to_string()
        } else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        return Err(EnvtestError::NotReady {
            name,
            patience,
            why,
            log: log.to_path_buf(),
            tail: tail(log, 30),
        });
    }
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A kube-rs client from a kubeconfig file (`who` names it in errors). Built in the caller's
/// tokio runtime when there is one, otherwise in the harness's.
pub fn client_from_kubeconfig(
    who: &'static str,
    kubeconfig: &Path,
) -> Result<kube::Client, EnvtestError> {
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let name = who;
    let parsed = Kubeconfig::read_from(kubeconfig)
        .map_err(|source| EnvtestError::Kubeconfig { user: name, source })?;
    let _runtime = runtime::enter();
    let config = block_on(async move {
        kube::Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default()).await
    })
    .map_err(|source| EnvtestError::Kubeconfig { user: name, source })?;
    kube::Client::try_from(config).map_err(|source| EnvtestError::Client { user: name, source })
}

/// A benchmark's baseline: one LIST of every ClusterSummary through the server of `kubeconfig`
/// (as admin): how many it returned and how long it took.
pub fn timed_summary_list(kubeconfig: &Path) -> Result<(usize, Duration), EnvtestError> {
    let client = client_from_kubeconfig("admin", kubeconfig)?;
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(
        client,
        &kube::api::ApiResource {
            group: "config.projectsveltos.io".into(),
            version: "v1beta1".into(),
            api_version: "config.projectsveltos.io/v1beta1".into(),
            kind: "ClusterSummary".into(),
            plural: "clustersummaries".into(),
        },
    );
    let (list, took) = block_on(async move {
        let began = std::time::Instant::now();
        let list = api.list(&Default::default()).await;
        (list, began.elapsed())
    });
    let list = list.map_err(|e| EnvtestError::Setup(format!("LIST clustersummaries: {e}")))?;
    Ok((list.items.len(), took))
}
