//! Shared by the `plugin_*` end-to-end tests: a stand-in API server loaded with a fixtures world,
//! and the real `kubectl-promotion` (and `kubectl`) run against it in an isolated environment.
//! Building the binary, the client environment and the objects all come from `promotion_e2e`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use promotion_e2e::apiserver::{RecordedRequest, StandIn, StandInHandle, StandInOptions};
pub use promotion_e2e::bins::Output;
use promotion_e2e::bins::{self, KubeEnv};
use promotion_e2e::fixtures::{self, feature_summary, World, WorldBuilder};
use serde_json::{json, Value};

/// The `kubectl-promotion` binary of this workspace, freshly built.
pub fn plugin_bin() -> PathBuf {
    bins::binary("kubectl-promotion").unwrap_or_else(|e| panic!("{e}"))
}

/// A stand-in API server and an isolated client environment (kubeconfig, HOME, PATH) for it.
pub struct Env {
    pub server: StandInHandle,
    pub kube: KubeEnv,
}

impl Env {
    pub fn start(objects: impl IntoIterator<Item = Value>) -> Env {
        Env::with_options(StandInOptions::default().with_objects(objects))
    }

    pub fn with_options(options: StandInOptions) -> Env {
        let server = StandIn::start(options).unwrap_or_else(|e| panic!("stand-in: {e}"));
        let kube = KubeEnv::new(&server).unwrap_or_else(|e| panic!("client environment: {e}"));
        Env { server, kube }
    }

    /// The plugin, with nothing from the developer's environment but this env's settings.
    pub fn cmd(&self) -> Command {
        self.kube.command(plugin_bin())
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.kube.plugin(args).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = self.cmd();
        c.args(args).envs(env.iter().copied());
        bins::run(&mut c).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The real `kubectl`, which finds the plugin once [`KubeEnv::install_plugin`] ran.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kube.kubectl(args).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn kubeconfig(&self) -> &Path {
        self.kube.kubeconfig()
    }

    /// `HOME` of the commands run here.
    pub fn home(&self) -> &Path {
        self.kube.dir()
    }

    /// A file name in this env's private directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.kube.dir().join(name)
    }

    pub fn stored(&self, name: &str) -> Option<Value> {
        self.server.store().get("clusterpromotions", None, name)
    }

    pub fn promotion(&self, name: &str) -> Value {
        self.stored(name)
            .unwrap_or_else(|| panic!("clusterpromotion {name} not in the store"))
    }

    pub fn put(&self, obj: Value) -> Value {
        self.server.store().put(obj).expect("store put")
    }

    /// Play Sveltos: the features of one ClusterSummary now report `features`
    /// (`(featureID, status, failureMessage)`).
    pub fn set_features(
        &self,
        namespace: &str,
        summary: &str,
        features: &[(&str, &str, Option<&str>)],
    ) {
        let mut s = self
            .server
            .store()
            .get("clustersummaries", Some(namespace), summary)
            .unwrap_or_else(|| panic!("clustersummary {namespace}/{summary} not in the store"));
        set_features(&mut s, features);
        forget_version(&mut s);
        self.put(s);
    }

    /// Requests with this method whose path mentions `fragment`.
    pub fn requests(&self, method: &str, fragment: &str) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.method == method && r.path.contains(fragment))
            .collect()
    }
}

/// Replace the `status.featureSummaries` of a ClusterSummary object.
pub fn set_features(summary: &mut Value, features: &[(&str, &str, Option<&str>)]) {
    let applied = json!("2026-02-16T07:20:00Z");
    summary["status"]["featureSummaries"] = features
        .iter()
        .map(|(id, status, message)| feature_summary(id, status, *message, &applied))
        .collect();
}

/// Play the controller at the gate fixture's staging: the approval is used (`approved` removed,
/// as automaticReset does) and the pipeline reaches `next` at 08:00.
pub fn use_approval_and_reach(p: &mut Value, next: &str) {
    if let Some(manual) = p["spec"]["stages"][1]["trigger"]["manual"].as_object_mut() {
        manual.remove("approved");
    }
    if let Some(stages) = p["status"]["stages"].as_array_mut() {
        stages.push(json!({"name": next, "lastUpdateReconciledTime": "2026-02-16T08:00:00Z"}));
    }
    p["status"]["currentStageName"] = json!(next);
}

/// Drop `metadata.resourceVersion`, so that [`Env::put`] replaces the object unconditionally.
/// Another writer runs `change` on the stored promotion `name` whenever a PATCH of it arrives,
/// before the server applies it (the authorizer runs first), as many times as `times`: each of
/// those writes conflicts. Returns how many PATCHes of it arrived.
pub fn interfere(
    env: &Env,
    name: &'static str,
    times: usize,
    change: impl Fn(&mut Value) + Send + Sync + 'static,
) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let store = env.server.store();
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    env.server
        .set_authorizer(move |a: &promotion_e2e::apiserver::Attributes| {
            if a.verb == "patch"
                && a.resource == "clusterpromotions"
                && a.name == name
                && seen.fetch_add(1, Ordering::SeqCst) < times
            {
                if let Some(mut p) = store.get("clusterpromotions", None, name) {
                    change(&mut p);
                    forget_version(&mut p);
                    store.put(p).expect("concurrent write");
                }
            }
            promotion_e2e::apiserver::Decision::Allow
        });
    count
}

pub fn forget_version(object: &mut Value) {
    if let Some(meta) = object["metadata"].as_object_mut() {
        meta.remove("resourceVersion");
    }
}

/// Poll `f` until it returns true (bounded; panics with `what` after `limit`).
pub fn eventually(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

/// An example manifest from `examples/`, as JSON.
/// An example as a cluster would hold it: its status hashes are the ones Sveltos writes for its
/// spec ([`fixtures::hash_status_as_sveltos`]).
pub fn example(file: &str) -> Value {
    let mut promotion = fixtures::load_example(file)
        .unwrap_or_else(|e| panic!("{e}"))
        .promotion;
    fixtures::hash_status_as_sveltos(&mut promotion);
    promotion
}

pub fn example_path(file: &str) -> PathBuf {
    fixtures::examples_dir().join(file)
}

/// The example's promotion plus what Sveltos made for the stages in its status (STATES.md).
pub fn example_world(file: &str) -> World {
    fixtures::example_world(file).unwrap_or_else(|e| panic!("{e}"))
}

/// A world of these promotions (file name, manifest), clusters derived from their selectors.
pub fn world_of(builder: WorldBuilder, promotions: Vec<(&str, Value)>) -> World {
    let mut builder = builder;
    for (file, promotion) in promotions {
        builder
            .add(fixtures::Example {
                file: file.to_string(),
                promotion,
            })
            .unwrap_or_else(|e| panic!("{e}"));
    }
    builder.build()
}

/// The auto rollout soaking at production, with two clusters per environment so that one of
/// a stage's clusters can fail alone.
pub fn auto_rollout_two_clusters_each() -> World {
    let file = "kyverno-rollout-auto.yaml";
    world_of(
        WorldBuilder::new().clusters_per_label_set(2),
        vec![(file, example(file))],
    )
}

/// A 127.0.0.1 port that nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    port
}

/// How long a running plugin may take to print an expected line or to exit: far more than it
/// needs, only there so that a broken plugin fails the test instead of hanging it.
pub const PATIENCE: Duration = Duration::from_secs(120);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// The plugin, running, with its stdout and stderr read line by line as they are written.
pub struct Running {
    child: Child,
    lines: Receiver<(Stream, String)>,
    readers: Vec<JoinHandle<()>>,
    /// What the plugin printed on stdout so far (everything, once [`Running::finish`] ran).
    pub stdout: String,
    /// What the plugin printed on stderr so far.
    pub stderr: String,
    /// Lines read while waiting for a line of the other stream, not yet looked at: the two
    /// streams interleave as they will, and a line must not be lost because it came first.
    unread: std::collections::VecDeque<(Stream, String)>,
}

impl Running {
    pub fn start(env: &Env, args: &[&str]) -> Running {
        let mut child = env
            .cmd()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kubectl-promotion");
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let readers = vec![
            bins::forward_lines(Stream::Stdout, stdout, tx.clone()),
            bins::forward_lines(Stream::Stderr, stderr, tx),
        ];
        Running {
            child,
            lines,
            readers,
            stdout: String::new(),
            stderr: String::new(),
            unread: std::collections::VecDeque::new(),
        }
    }

    /// The plugin's process id (to pause it, say).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn keep(&mut self, stream: Stream, line: &str) {
        match stream {
            Stream::Stdout => self.stdout.push_str(line),
            Stream::Stderr => self.stderr.push_str(line),
        }
    }

    /// Read until a line of `stream` contains `needle`; fails the test (showing everything read)
    /// when the plugin closes its output first or [`PATIENCE`] runs out.
    pub fn expect_line(&mut self, stream: Stream, needle: &str) -> String {
        // Lines of this stream read earlier (while another was awaited) come first, in order.
        while let Some(i) = self.unread.iter().position(|(from, _)| *from == stream) {
            if let Some((_, line)) = self.unread.remove(i) {
                if line.contains(needle) {
                    return line;
                }
            }
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((from, line)) => {
                    self.keep(from, &line);
                    if from != stream {
                        self.unread.push_back((from, line));
                    } else if line.contains(needle) {
                        return line;
                    }
                }
                Err(e) => {
                    let why = match e {
                        RecvTimeoutError::Timeout => format!("nothing after {PATIENCE:?}"),
                        RecvTimeoutError::Disconnected => "the plugin closed its output".into(),
                    };
                    panic!(
                        "waiting for {needle:?} on {stream:?}: {why}\n--- stdout\n{}--- stderr\n{}",
                        self.stdout, self.stderr
                    );
                }
            }
        }
    }

    /// Everything the plugin printed, once it exited (killed after [`PATIENCE`]: a failure).
    pub fn finish(mut self) -> Output {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((from, line)) => self.keep(from, &line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    panic!(
                        "the plugin did not exit within {PATIENCE:?}\n--- stdout\n{}--- stderr\n{}",
                        self.stdout, self.stderr
                    );
                }
            }
        }
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        // Both pipes are closed: the process has exited or is about to.
        let status = self.child.wait().expect("wait for kubectl-promotion");
        Output {
            code: status.code().unwrap_or(-1),
            stdout: std::mem::take(&mut self.stdout),
            stderr: std::mem::take(&mut self.stderr),
        }
    }
}

impl Drop for Running {
    /// A test that failed midway leaves no plugin running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// An API server that hangs: it accepts connections on 127.0.0.1 and never says a word (not
/// even the TLS handshake), as a server whose process is stuck. Returns its `https://` URL; the
/// listener lives until the test process ends.
pub fn hung_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("https://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        // Held, never read or written: the client waits for an answer that does not come.
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    url
}

/// A kubeconfig in `env`'s directory for the server at `url` (no CA, any token).
pub fn kubeconfig_for(env: &Env, file: &str, url: &str) -> PathBuf {
    let path = env.path(file);
    promotion_e2e::bins::Kubeconfig::new("other", url, "token")
        .write(&path)
        .expect("write kubeconfig");
    path
}
