//! One scenario body, two API servers. A [`Cluster`] is one scenario's view of a backend — the
//! stand-in ([`apiserver`](crate::apiserver), a private one per scenario) or the real
//! kube-apiserver ([`envtest`](crate::envtest), shared by the test binary) — with the same
//! users and RBAC, kubeconfigs and `kubectl` per user, objects written through the API (status
//! through `/status`, as Sveltos writes it), and the real webhook registered the way users
//! install it.
//!
//! Scenarios on a shared server must not see each other: every Cluster has a session id; its
//! namespace, the names of its cluster-scoped objects ([`Cluster::name`]) and its webhook
//! configurations (an `objectSelector` on the session label, see [`Cluster::adopt`]) carry it.
//!
//! ```no_run
//! use promotion_e2e::backend::{BackendKind, Cluster};
//! use promotion_e2e::envtest::User;
//! let cluster = Cluster::new(BackendKind::StandIn).expect("backend");
//! let out = cluster.kubectl(User::Viewer, &["get", "clusterpromotions"]).expect("kubectl");
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use promotion_shared::admission::SPEC_CHANGE_ANNOTATION;
use serde_json::{json, Value};

use crate::apiserver::matchconditions::MatchCondition;
use crate::apiserver::{
    AdmissionConfig, Attributes, Decision, Hook, StandIn, StandInHandle, StandInOptions, UserInfo,
};
use crate::bins::{self, Kubeconfig, Output};
use crate::envtest::objects::{Kind, ObjectError, Objects, CLUSTER_PROMOTION, NAMESPACE};
use crate::envtest::users::{self, Tokens, User};
use crate::envtest::webhook::{WebhookConfigurations, WebhookError, WebhookServer};
use crate::envtest::{block_on, Envtest, EnvtestError};
use crate::fixtures;

/// The label that ties objects to the scenario that made them.
pub const SESSION_LABEL: &str = "e2e.kubectl-promotion.dev/session";

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error(transparent)]
    Envtest(#[from] EnvtestError),
    #[error("starting the stand-in: {0}")]
    StandIn(#[from] crate::apiserver::StandInError),
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error(transparent)]
    Webhook(#[from] WebhookError),
    #[error(transparent)]
    Bin(#[from] bins::BinError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Unsupported(String),
    #[error("the API server did not put the webhook configurations in force within {0:?}: {1}")]
    WebhookNotInForce(Duration, String),
    #[error("fixtures: {0}")]
    Fixture(#[from] fixtures::FixtureError),
    #[error("writing {kind} {name}: {source}")]
    Seed {
        kind: String,
        name: String,
        #[source]
        source: Box<BackendError>,
    },
}

/// Which server a scenario runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    StandIn,
    Envtest,
}

impl BackendKind {
    pub const ALL: [BackendKind; 2] = [BackendKind::StandIn, BackendKind::Envtest];

    /// Short name for test names: `standin`, `envtest`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::StandIn => "standin",
            BackendKind::Envtest => "envtest",
        }
    }
}

/// What differs between the two servers: who the users are, and how webhooks are registered.
/// Everything else goes through the API with the same client code.
pub trait Backend: Send + Sync {
    fn kind(&self) -> BackendKind;
    /// `https://127.0.0.1:PORT`
    fn url(&self) -> &str;
    /// CA of the serving certificate (PEM).
    fn ca_pem(&self) -> &str;
    fn token(&self, user: User) -> &str;
    /// Object access as the admin.
    fn admin(&self) -> &Objects;
    /// Put both configurations in force for the objects of `session`; returns once the server
    /// uses them.
    fn register_webhooks(
        &self,
        configs: &WebhookConfigurations,
        session: &str,
    ) -> Result<(), BackendError>;
    fn unregister_webhooks(&self, configs: &WebhookConfigurations) -> Result<(), BackendError>;
}

/// A private stand-in with the users of [`users`] and an authorizer evaluating their RBAC rules.
pub struct StandInBackend {
    server: StandInHandle,
    tokens: Tokens,
    admin: Objects,
}

/// The stand-in's authorizer: the RBAC of the users table ([`users`]), evaluated as the RBAC
/// authorizer evaluates the ClusterRoles the real server gets from the same table.
pub fn users_table_rbac(a: &Attributes) -> Decision {
    let allowed = users::allows(&users::Request {
        groups: &a.user.groups,
        verb: &a.verb,
        api_group: &a.api_group,
        resource: &a.resource,
        subresource: &a.subresource,
        resource_request: a.resource_request,
    });
    if allowed {
        Decision::Allow
    } else {
        Decision::Deny(None)
    }
}

impl StandInBackend {
    pub fn start() -> Result<StandInBackend, BackendError> {
        let tokens = Tokens::generate();
        let mut options = StandInOptions::default();
        for user in User::ALL {
            options =
                options.with_token(tokens.of(user), UserInfo::new(user.name(), user.groups()));
        }
        let server = StandIn::start(options)?;
        server.set_authorizer(users_table_rbac);
        let admin = Objects::new(client(
            server.url(),
            server.ca_pem(),
            tokens.of(User::Admin),
        )?);
        Ok(StandInBackend {
            server,
            tokens,
            admin,
        })
    }

    pub fn handle(&self) -> &StandInHandle {
        &self.server
    }
}

impl Backend for StandInBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::StandIn
    }
    fn url(&self) -> &str {
        self.server.url()
    }
    fn ca_pem(&self) -> &str {
        self.server.ca_pem()
    }
    fn token(&self, user: User) -> &str {
        self.tokens.of(user)
    }
    fn admin(&self) -> &Objects {
        &self.admin
    }

    /// The stand-in models one mutating and one validating webhook sharing `failurePolicy`,
    /// `timeoutSeconds` and `matchConditions`; `objectSelector` is not modelled (each scenario
    /// has its own stand-in, so the selector changes nothing).
    /// The configuration objects are stored too, so clients read what is in force.
    fn register_webhooks(
        &self,
        configs: &WebhookConfigurations,
        _session: &str,
    ) -> Result<(), BackendError> {
        self.server
            .set_admission(Some(admission_config(configs)?))
            .map_err(BackendError::StandIn)?;
        for object in configs.objects() {
            self.server
                .store()
                .put(object.clone())
                .map_err(|e| BackendError::Unsupported(format!("storing {object}: {e}")))?;
        }
        Ok(())
    }

    fn unregister_webhooks(&self, configs: &WebhookConfigurations) -> Result<(), BackendError> {
        for object in configs.objects() {
            let plural = format!(
                "{}s",
                object["kind"].as_str().unwrap_or_default().to_lowercase()
            );
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            self.server.store().remove(&plural, None, name);
        }
        self.server
            .set_admission(None)
            .map_err(BackendError::StandIn)
    }
}

/// The stand-in's [`AdmissionConfig`] for the rendered configurations.
fn admission_config(configs: &WebhookConfigurations) -> Result<AdmissionConfig, BackendError> {
    let unsupported =
        |what: String| BackendError::Unsupported(format!("the stand-in cannot model {what}"));
    // The first webhook of each configuration is the main pair; the others call their own URLs
    // with their own failure policy and conditions, on the same rules.
    let split = |config: &Value| -> Result<(Value, Vec<Value>), BackendError> {
        match config["webhooks"].as_array().map(Vec::as_slice) {
            Some([first, rest @ ..]) => Ok((first.clone(), rest.to_vec())),
            _ => Err(unsupported(format!(
                "{} without webhooks",
                config["kind"].as_str().unwrap_or("a configuration")
            ))),
        }
    };
    let conditions = |webhook: &Value| -> Vec<MatchCondition> {
        webhook["matchConditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| MatchCondition {
                name: c["name"].as_str().unwrap_or_default().to_string(),
                expression: c["expression"].as_str().unwrap_or_default().to_string(),
            })
            .collect()
    };
    let ((mutating, more_mutating), (validating, more_validating)) =
        (split(&configs.mutating)?, split(&configs.validating)?);
    let mut more = Vec::new();
    for (is_mutating, hook) in more_mutating
        .into_iter()
        .map(|h| (true, h))
        .chain(more_validating.into_iter().map(|h| (false, h)))
    {
        if hook["rules"] != mutating["rules"]
            || hook["timeoutSeconds"] != mutating["timeoutSeconds"]
        {
            return Err(unsupported(
                "webhooks of one configuration that differ in rules or timeoutSeconds".into(),
            ));
        }
        more.push(Hook {
            mutating: is_mutating,
            name: hook["name"].as_str().unwrap_or_default().to_string(),
            url: hook["clientConfig"]["url"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            ignore_failures: hook["failurePolicy"] == "Ignore",
            match_conditions: conditions(&hook),
        });
    }
    let same = |field: &str| mutating[field] == validating[field];
    if !same("failurePolicy")
        || !same("timeoutSeconds")
        || !same("rules")
        || !same("matchConditions")
    {
        return Err(unsupported(
            "webhooks that differ in failurePolicy, timeoutSeconds, rules or matchConditions"
                .into(),
        ));
    }
    let bundle = mutating["clientConfig"]["caBundle"]
        .as_str()
        .unwrap_or_default();
    let ca = base64::engine::general_purpose::STANDARD
        .decode(bundle)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| unsupported("a caBundle that is not base64 PEM".into()))?;
    let mut config = AdmissionConfig::new(&ca);
    config.mutate_url = mutating["clientConfig"]["url"].as_str().map(String::from);
    config.validate_url = validating["clientConfig"]["url"].as_str().map(String::from);
    config.mutating_name = mutating["name"].as_str().unwrap_or_default().to_string();
    config.validating_name = validating["name"].as_str().unwrap_or_default().to_string();
    // The API's default when unset is 10 s.
    config.timeout = Duration::from_secs(mutating["timeoutSeconds"].as_u64().unwrap_or(10));
    config.ignore_failures = mutating["failurePolicy"] == "Ignore";
    let resources: Vec<String> = mutating["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["resources"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r.as_str().map(String::from))
        .collect();
    config.match_conditions = conditions(&mutating);
    config.more = more;
    config.include_status = resources.iter().any(|r| r.ends_with("/status"));
    config.resources = resources.into_iter().filter(|r| !r.contains('/')).collect();
    Ok(config)
}

/// The shared real server of this test binary.
pub struct EnvtestBackend {
    server: &'static Envtest,
}

impl EnvtestBackend {
    pub fn shared() -> Result<EnvtestBackend, BackendError> {
        Ok(EnvtestBackend {
            server: Envtest::shared()?,
        })
    }

    /// A private server of the caller's (leaked for the rest of the process, as the shared one
    /// lives in a static).
    pub fn on(server: &'static Envtest) -> EnvtestBackend {
        EnvtestBackend { server }
    }

    pub fn server(&self) -> &'static Envtest {
        self.server
    }
}

/// How long a new or changed webhook configuration may take to be used by the API server.
const WEBHOOK_PATIENCE: Duration = Duration::from_secs(30);

impl Backend for EnvtestBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Envtest
    }
    fn url(&self) -> &str {
        self.server.url()
    }
    fn ca_pem(&self) -> &str {
        self.server.ca_pem()
    }
    fn token(&self, user: User) -> &str {
        self.server.token(user)
    }
    fn admin(&self) -> &Objects {
        self.server.admin()
    }

    /// Writes both objects, then waits until dry-run creates of a session canary show the new
    /// configuration at work (the API server picks configurations up from a watch, a moment
    /// after the write).
    fn register_webhooks(
        &self,
        configs: &WebhookConfigurations,
        session: &str,
    ) -> Result<(), BackendError> {
        for object in configs.objects() {
            let object = object.clone();
            block_on({
                let admin = self.admin().clone();
                async move { admin.put(&object).await }
            })?;
        }
        let deadline = Instant::now() + WEBHOOK_PATIENCE;
        loop {
            match in_force(self.admin(), configs, session)? {
                None => return Ok(()),
                Some(why) if Instant::now() > deadline => {
                    return Err(BackendError::WebhookNotInForce(WEBHOOK_PATIENCE, why))
                }
                Some(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    fn unregister_webhooks(&self, configs: &WebhookConfigurations) -> Result<(), BackendError> {
        for (object, kind) in [
            (&configs.mutating, "MutatingWebhookConfiguration"),
            (&configs.validating, "ValidatingWebhookConfiguration"),
        ] {
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let kind = Kind {
                api_version: "admissionregistration.k8s.io/v1",
                kind,
            };
            let admin = self.admin().clone();
            block_on(async move { admin.delete(kind, None, &name).await })?;
        }
        Ok(())
    }
}

/// `None` when the API server admits the session's objects through `configs`; otherwise what
/// it does instead. Probed with dry-run creates of two canaries from the examples: a valid one
/// (the mutating webhook records the creator) and one with a Lua syntax error (the validating
/// webhook denies it). When the webhook does not answer, `Fail` shows as "failed calling
/// webhook" and `Ignore` as a plain admission.
fn in_force(
    admin: &Objects,
    configs: &WebhookConfigurations,
    session: &str,
) -> Result<Option<String>, BackendError> {
    let hook = |config: &Value| config["webhooks"][0].clone();
    let (mutating, validating) = (hook(&configs.mutating), hook(&configs.validating));
    let url = mutating["clientConfig"]["url"].as_str().unwrap_or_default();
    let reachable = url
        .strip_prefix("https://")
        .and_then(|rest| rest.split('/').next())
        .and_then(|addr| addr.parse::<std::net::SocketAddr>().ok())
        .is_some_and(|addr| {
            std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok()
        });
    let fail = mutating["failurePolicy"] != "Ignore";
    let canary = |file: &str| -> Result<Value, BackendError> {
        let mut promotion = fixtures::load_example(file)?.promotion;
        promotion["metadata"] = json!({
            "name": format!("webhook-canary-{session}"),
            "labels": {SESSION_LABEL: session},
        });
        Ok(promotion)
    };
    let dry_run = |object: Value| {
        let admin = admin.clone();
        block_on(async move { admin.dry_run_create(&object).await })
    };
    let name_of = |w: &Value| w["name"].as_str().unwrap_or_default().to_string();
    let valid = dry_run(canary("payment-four-stages.yaml")?);
    let calling_failed = |e: &ObjectError, w: &Value| {
        e.to_string()
            .contains(&format!("failed calling webhook \"{}\"", name_of(w)))
    };
    let mutated = match (&valid, reachable, fail) {
        (Ok(o), true, _) => o["metadata"]["annotations"][SPEC_CHANGE_ANNOTATION].is_string(),
        (Err(e), false, true) => calling_failed(e, &mutating),
        (Ok(_), false, false) => true,
        _ => false,
    };
    if !mutated {
        return Ok(Some(format!(
            "the valid canary got {}",
            match &valid {
                Ok(o) => format!("admitted with annotations {}", o["metadata"]["annotations"]),
                Err(e) => e.to_string(),
            }
        )));
    }
    if !reachable {
        return Ok(None);
    }
    let invalid = dry_run(canary("lua-syntax-error.yaml")?);
    let denied = matches!(&invalid, Err(e) if e.to_string().contains(&format!("admission webhook \"{}\" denied", name_of(&validating))));
    Ok((!denied).then(|| {
        format!(
            "the invalid canary got {}",
            match &invalid {
                Ok(_) => "admitted".to_string(),
                Err(e) => e.to_string(),
            }
        )
    }))
}

fn client(url: &str, ca_pem: &str, token: &str) -> Result<kube::Client, BackendError> {
    let dir = tempfile::tempdir().map_err(|source| BackendError::Io {
        what: "creating a temporary folder".into(),
        source,
    })?;
    let path = dir.path().join("kubeconfig");
    Kubeconfig::new("admin", url, token)
        .with_ca(ca_pem)
        .write(&path)
        .map_err(|source| BackendError::Io {
            what: format!("writing {}", path.display()),
            source,
        })?;
    Ok(crate::envtest::client_from_kubeconfig("admin", &path)?)
}

/// One scenario's view of a backend: users' kubeconfigs, `kubectl` with an isolated
/// environment, objects, webhooks. Dropping it removes its webhook configurations.
pub struct Cluster {
    backend: Box<dyn Backend>,
    session: String,
    dir: tempfile::TempDir,
    plugin_dir: PathBuf,
    webhooks: Mutex<Option<WebhookConfigurations>>,
    /// How long Sveltos takes between the steps of a deployment in this scenario (the
    /// addon-controller double's lag, [`crate::addon_double`]).
    addon_lag: std::time::Duration,
}

impl Cluster {
    /// A new scenario on `kind`: a fresh stand-in, or a session on the shared real server.
    /// Creates the session's namespace.
    pub fn new(kind: BackendKind) -> Result<Cluster, BackendError> {
        let backend: Box<dyn Backend> = match kind {
            BackendKind::StandIn => Box::new(StandInBackend::start()?),
            BackendKind::Envtest => Box::new(EnvtestBackend::shared()?),
        };
        Cluster::on(backend)
    }

    pub fn on(backend: Box<dyn Backend>) -> Result<Cluster, BackendError> {
        static SESSIONS: AtomicUsize = AtomicUsize::new(0);
        let session = format!("e{}", SESSIONS.fetch_add(1, Ordering::Relaxed) + 1);
        let io = |what: &str| {
            let what = what.to_string();
            move |source| BackendError::Io { what, source }
        };
        let dir = tempfile::Builder::new()
            .prefix(&format!("promotion-{}-{session}-", backend.kind().name()))
            .tempdir()
            .map_err(io("creating the scenario folder"))?;
        let plugin_dir = dir.path().join("bin");
        std::fs::create_dir_all(&plugin_dir).map_err(io("creating the plugin folder"))?;
        for user in User::ALL {
            let path = dir.path().join(user.kubeconfig_file());
            Kubeconfig::new(user.name(), backend.url(), backend.token(user))
                .with_ca(backend.ca_pem())
                .write(&path)
                .map_err(io("writing a kubeconfig"))?;
        }
        let cluster = Cluster {
            backend,
            session,
            dir,
            plugin_dir,
            webhooks: Mutex::new(None),
            addon_lag: std::time::Duration::ZERO,
        };
        cluster.put(&json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": cluster.namespace(), "labels": {SESSION_LABEL: cluster.session}},
        }))?;
        Ok(cluster)
    }

    pub fn kind(&self) -> BackendKind {
        self.backend.kind()
    }

    /// This scenario with Sveltos taking `lag` between the steps of each deployment (see
    /// [`crate::addon_double`]).
    pub fn with_addon_lag(mut self, lag: std::time::Duration) -> Cluster {
        self.addon_lag = lag;
        self
    }

    /// How long the addon-controller double waits between the steps of a deployment.
    pub fn addon_lag(&self) -> std::time::Duration {
        self.addon_lag
    }

    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    /// `e<N>`, unique in this test binary.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The scenario's own namespace (`scenario-<session>`).
    pub fn namespace(&self) -> String {
        format!("scenario-{}", self.session)
    }

    /// A cluster-scoped object name of this scenario: `<base>-<session>`.
    pub fn name(&self, base: &str) -> String {
        format!("{base}-{}", self.session)
    }

    /// `object` made this scenario's: a cluster-scoped object renamed with [`Cluster::name`], a
    /// namespaced one moved into [`Cluster::namespace`], both labelled with the session.
    pub fn adopt(&self, mut object: Value) -> Value {
        let namespace = self.namespace();
        let namespaced = object["metadata"].get("namespace").is_some();
        adopt_into(
            &mut object,
            &self.session,
            namespaced.then_some(namespace.as_str()),
            &|base| self.name(base),
        );
        object
    }

    /// `kubeconfig-<user>` in the scenario folder (one context, named after the user).
    pub fn kubeconfig(&self, user: User) -> PathBuf {
        self.dir.path().join(user.kubeconfig_file())
    }

    /// A kube-rs client as `user`, built in the caller's tokio runtime when there is one.
    pub fn client(&self, user: User) -> Result<kube::Client, BackendError> {
        Ok(crate::envtest::client_from_kubeconfig(
            user.name(),
            &self.kubeconfig(user),
        )?)
    }

    /// Object access as `user` (see [`Cluster::put`] for the admin's).
    pub fn objects_as(&self, user: User) -> Result<Objects, BackendError> {
        Ok(Objects::new(self.client(user)?))
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `program` with only `KUBECONFIG` (of `user`), `KUBECACHEDIR`, `HOME` and `PATH` (the
    /// plugin folder first) set, so nothing from the developer's shell leaks in.
    pub fn command(&self, user: User, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut paths = vec![self.plugin_dir.clone()];
        if let Some(existing) = std::env::var_os("PATH") {
            paths.extend(std::env::split_paths(&existing));
        }
        let path = std::env::join_paths(paths).unwrap_or_else(|_| OsString::from("/usr/bin:/bin"));
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("KUBECONFIG", self.kubeconfig(user))
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .env("HOME", self.dir.path())
            .env("PATH", path);
        cmd
    }

    /// The real `kubectl` as `user`.
    /// `kubectl` as `user`, its standard output when it exits 0, else the command, its exit
    /// status and what it printed.
    pub fn kubectl_ok(&self, user: User, args: &[&str]) -> Result<String, String> {
        let out = self
            .kubectl(user, args)
            .map_err(|e| format!("running kubectl: {e}"))?;
        if out.code != 0 {
            return Err(format!(
                "kubectl {}: exit {}\n{}{}",
                args.join(" "),
                out.code,
                out.stdout,
                out.stderr
            ));
        }
        Ok(out.stdout)
    }

    pub fn kubectl(&self, user: User, args: &[&str]) -> Result<Output, BackendError> {
        let mut cmd = self.command(user, "kubectl");
        cmd.args(args);
        Ok(bins::run(&mut cmd)?)
    }

    /// Link `kubectl-promotion` into the PATH folder, so `kubectl promotion` works.
    pub fn install_plugin(&self) -> Result<PathBuf, BackendError> {
        let plugin = bins::binary("kubectl-promotion")?;
        let link = self.plugin_dir.join("kubectl-promotion");
        if !link.exists() {
            std::os::unix::fs::symlink(&plugin, &link).map_err(|source| BackendError::Io {
                what: format!("linking {}", link.display()),
                source,
            })?;
        }
        Ok(link)
    }

    /// Write `manifest` (JSON is YAML) into the scenario folder; returns its path.
    pub fn write_manifest(&self, file: &str, manifest: &Value) -> Result<PathBuf, BackendError> {
        let path = self.dir.path().join(file);
        let text = serde_json::to_string_pretty(manifest).unwrap_or_default();
        std::fs::write(&path, text).map_err(|source| BackendError::Io {
            what: format!("writing {}", path.display()),
            source,
        })?;
        Ok(path)
    }

    fn admin_do<F, Fut, T>(&self, f: F) -> Result<T, BackendError>
    where
        F: FnOnce(Objects) -> Fut,
        Fut: std::future::Future<Output = Result<T, ObjectError>> + Send + 'static,
        T: Send + 'static,
    {
        Ok(block_on(f(self.backend.admin().clone()))?)
    }

    /// Create or replace `object` as the admin (admission included, as for any client); its
    /// `status`, if any, is then written through `/status` as Sveltos writes it.
    pub fn put(&self, object: &Value) -> Result<Value, BackendError> {
        let object = object.clone();
        self.admin_do(move |o| async move { o.put(&object).await })
    }

    /// Store fixture `objects` (namespaces left out, as the cluster has them), labelled with
    /// this session: owners first, since the server assigns uids and generated objects name
    /// their owners (and Events their objects) by uid, which are rewritten to the stored ones.
    pub fn seed(&self, objects: impl IntoIterator<Item = Value>) -> Result<(), BackendError> {
        const OWNERS_FIRST: [&str; 5] = [
            "SveltosCluster",
            "ClusterPromotion",
            "ClusterProfile",
            "ClusterSummary",
            "Event",
        ];
        let mut objects: Vec<Value> = objects
            .into_iter()
            .filter(|o| o["kind"] != "Namespace")
            .collect();
        objects.sort_by_key(|o| OWNERS_FIRST.iter().position(|k| o["kind"] == *k));
        let mut uids: std::collections::HashMap<String, String> = Default::default();
        for mut object in objects {
            let real_uid = |uid: &Value| uid.as_str().and_then(|u| uids.get(u)).cloned();
            for owner in object["metadata"]["ownerReferences"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                if let Some(uid) = real_uid(&owner["uid"]) {
                    owner["uid"] = json!(uid);
                }
            }
            if let Some(uid) = real_uid(&object["involvedObject"]["uid"]) {
                object["involvedObject"]["uid"] = json!(uid);
            }
            let meta = &mut object["metadata"];
            if !meta["labels"].is_object() {
                meta["labels"] = json!({});
            }
            meta["labels"][SESSION_LABEL] = json!(self.session());
            let fixture_uid = meta["uid"].as_str().map(String::from);
            let stored = self.put(&object).map_err(|source| BackendError::Seed {
                kind: object["kind"].as_str().unwrap_or_default().to_string(),
                name: object["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                source: Box::new(source),
            })?;
            if let (Some(fixture), Some(real)) = (fixture_uid, stored["metadata"]["uid"].as_str()) {
                uids.insert(fixture, real.to_string());
            }
        }
        Ok(())
    }

    /// Replace the status of a stored object through `/status`, as Sveltos writes it; the
    /// rest of the object (annotations the webhook wrote included) stays as stored.
    pub fn put_status(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
        status: &Value,
    ) -> Result<Value, BackendError> {
        let (namespace, name, status) = (
            namespace.map(String::from),
            name.to_string(),
            status.clone(),
        );
        self.admin_do(move |o| async move {
            o.put_status(kind, namespace.as_deref(), &name, &status)
                .await
        })
    }

    pub fn get(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Value>, BackendError> {
        let (namespace, name) = (namespace.map(String::from), name.to_string());
        self.admin_do(move |o| async move { o.get(kind, namespace.as_deref(), &name).await })
    }

    pub fn list(&self, kind: Kind, namespace: Option<&str>) -> Result<Vec<Value>, BackendError> {
        let namespace = namespace.map(String::from);
        self.admin_do(move |o| async move { o.list(kind, namespace.as_deref()).await })
    }

    /// `Ok(false)` when it did not exist.
    pub fn delete(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<bool, BackendError> {
        let (namespace, name) = (namespace.map(String::from), name.to_string());
        self.admin_do(move |o| async move { o.delete(kind, namespace.as_deref(), &name).await })
    }

    /// The stored ClusterPromotion `name` (already a full name, see [`Cluster::name`]).
    pub fn promotion(&self, name: &str) -> Result<Option<Value>, BackendError> {
        self.get(CLUSTER_PROMOTION, None, name)
    }

    /// Start the real `promotion-webhook` (see [`WebhookServer::start`]).
    pub fn start_webhook(&self, extra: &[&str]) -> Result<WebhookServer, BackendError> {
        Ok(WebhookServer::start(extra)?)
    }

    /// Register `configs` (from [`WebhookServer::configurations`]) for this scenario's objects,
    /// replacing what the scenario registered before; returns once they are in force.
    pub fn register_webhooks(&self, configs: WebhookConfigurations) -> Result<(), BackendError> {
        let name = format!("promotion-webhook-{}", self.session);
        let configs = configs.scoped(&name, SESSION_LABEL, &self.session);
        self.backend.register_webhooks(&configs, &self.session)?;
        *self.webhooks.lock().unwrap_or_else(|p| p.into_inner()) = Some(configs);
        Ok(())
    }

    pub fn unregister_webhooks(&self) -> Result<(), BackendError> {
        let taken = self
            .webhooks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        match taken {
            Some(configs) => self.backend.unregister_webhooks(&configs),
            None => Ok(()),
        }
    }
}

/// [`Cluster::adopt`]: `namespace` is `Some` for namespaced objects.
fn adopt_into(
    object: &mut Value,
    session: &str,
    namespace: Option<&str>,
    name: &dyn Fn(&str) -> String,
) {
    let meta = &mut object["metadata"];
    if let Some(namespace) = namespace {
        meta["namespace"] = json!(namespace);
    } else if let Some(base) = meta["name"].as_str() {
        meta["name"] = json!(name(base));
    }
    if !meta["labels"].is_object() {
        meta["labels"] = json!({});
    }
    meta["labels"][SESSION_LABEL] = json!(session);
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Best effort: a dead webhook left registered only ever matches this session's labels.
        let _ = self.unregister_webhooks();
        if self.kind() == BackendKind::Envtest {
            let namespace = self.namespace();
            let _ = self.delete(NAMESPACE, None, &namespace);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envtest::FailurePolicy;

    fn rendered() -> WebhookConfigurations {
        WebhookConfigurations::rendered("https://127.0.0.1:9443", "CA PEM").expect("render")
    }

    #[test]
    fn the_stand_in_gets_what_the_installed_configurations_say() {
        let config = admission_config(&rendered()).expect("convertible");
        assert_eq!(
            config.mutate_url.as_deref(),
            Some("https://127.0.0.1:9443/mutate")
        );
        assert_eq!(
            config.validate_url.as_deref(),
            Some("https://127.0.0.1:9443/validate")
        );
        assert_eq!(config.mutating_name, "mutate.kubectl-promotion.dev");
        assert_eq!(config.validating_name, "validate.kubectl-promotion.dev");
        assert_eq!(config.ca_pem, "CA PEM");
        assert_eq!(config.timeout, Duration::from_secs(5));
        assert!(!config.ignore_failures, "failurePolicy Fail as installed");
        assert_eq!(config.resources, vec!["clusterpromotions".to_string()]);
        assert!(!config.include_status);
        assert_eq!(
            config
                .match_conditions
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["spec-or-annotations-changed", "not-a-pause-alone"]
        );
        // The pause webhooks: same server, failing open, only for a pause alone.
        let more: Vec<(bool, &str, &str, bool, Vec<&str>)> = config
            .more
            .iter()
            .map(|h| {
                (
                    h.mutating,
                    h.name.as_str(),
                    h.url.as_str(),
                    h.ignore_failures,
                    h.match_conditions.iter().map(|c| c.name.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            more,
            [
                (
                    true,
                    "pause.mutate.kubectl-promotion.dev",
                    "https://127.0.0.1:9443/mutate",
                    true,
                    vec!["a-pause-alone"]
                ),
                (
                    false,
                    "pause.validate.kubectl-promotion.dev",
                    "https://127.0.0.1:9443/validate",
                    true,
                    vec!["a-pause-alone"]
                )
            ]
        );

        let ignore = admission_config(&rendered().with_failure_policy(FailurePolicy::Ignore))
            .expect("convertible");
        assert!(ignore.ignore_failures);
    }

    #[test]
    fn what_the_stand_in_cannot_model_is_refused_not_approximated() {
        let mut configs = rendered();
        configs.validating["webhooks"][0]["failurePolicy"] = json!("Ignore");
        let err = admission_config(&configs).expect_err("policies differ");
        assert!(err.to_string().contains("failurePolicy"), "{err}");
    }

    #[test]
    fn adopted_objects_carry_the_session() {
        // No server needed: naming is local.
        let session = "e7";
        let name = |base: &str| format!("{base}-{session}");
        let cluster_scoped = json!({"metadata": {"name": "gate"}});
        let namespaced = json!({"metadata": {"name": "cm", "namespace": "default"}});
        let adopt = |mut object: Value| {
            let namespaced = object["metadata"].get("namespace").is_some();
            adopt_into(
                &mut object,
                session,
                namespaced.then_some("scenario-e7"),
                &name,
            );
            object
        };
        let a = adopt(cluster_scoped);
        assert_eq!(a["metadata"]["name"], "gate-e7");
        assert_eq!(a["metadata"]["labels"][SESSION_LABEL], "e7");
        let b = adopt(namespaced);
        assert_eq!(b["metadata"]["name"], "cm");
        assert_eq!(b["metadata"]["namespace"], "scenario-e7");
        assert_eq!(b["metadata"]["labels"][SESSION_LABEL], "e7");
    }
}
