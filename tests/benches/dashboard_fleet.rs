//! `kubectl promotion dashboard` serving a fleet of 200 ClusterPromotions over 20,000 clusters
//! (one ClusterSummary each) on the stand-in API server, as the real binary
//! (`cargo bench -p promotion-e2e --bench dashboard_fleet`; `-- --promotions N --clusters N
//! --rounds N` for another size or number of updates, `--busy-rounds N`, `--idle S` for the idle
//! period, `--warm N` for the warm page loads, `--baseline-runs N` for the kubectl runs,
//! `--plugin PATH` to measure another build of the plugin, e.g. an earlier commit's).
//!
//! The fleet: each promotion owns `clusters / promotions` SveltosClusters (100 by default), a
//! tenth in its `canary` stage and the rest in its `main` stage (disjoint selectors, so one
//! ClusterSummary per cluster). The seeded state is the one promotion-controller's own decisions
//! write: canary provisioned and promoted, main's ClusterProfile applied (with the
//! `matchingClusters` Sveltos reports) and its ClusterSummaries part provisioned (promotion `i`
//! has `7i mod 90` of 90), the rest `Provisioning`; every tenth promotion has one `Failed`.
//! Every object carries its own uid and, as the API server stamps them, managed fields.
//! Reported, all from one run against one stand-in:
//! - first render: from starting `kubectl-promotion dashboard --port 0` to the first complete
//!   answer of `GET /` (start-up, the first LIST and watches of the promotions, their
//!   ClusterProfiles and ClusterSummaries, the token exchange and the render), and when the
//!   address was printed on the way; the process's RSS and CPU seconds at that point;
//! - `GET /` on the warm server: median (and min–max) of `--warm` loads;
//! - update delivery: with `/stream?since=N` open (N from the page, as the page's script opens
//!   it), one `Provisioning` ClusterSummary of a promotion's `main` stage turns `Provisioned`
//!   (written through the stand-in's store, as a watch sees an addon-controller write): the
//!   time until the `card` event for that promotion arrives showing the new count, p50 and p99
//!   (nearest rank: with 20 rounds the p99 is the slowest) over `--rounds` promotions spread
//!   over the fleet; the cards sent for other promotions (none expected), and the process's CPU
//!   per update;
//! - the same update written while another browser loads the fleet page (`--busy-rounds`, 5):
//!   the dashboard serves everything on one thread, so what a page load costs delays the
//!   event streams too;
//! - idle: CPU seconds of the process over `--idle` seconds (10) with the stream open and
//!   nothing written;
//! - the baseline, in the same run against the same stand-in: the real
//!   `kubectl get clusterpromotions,clustersummaries -A -o json`, wall time from start to exit
//!   with its output read (median of `--baseline-runs`, after one untimed run that fills
//!   kubectl's discovery cache), and its CPU seconds and peak RSS (`wait4`). Each time is also
//!   given as a ratio of the baseline's median; RSS and CPU as a ratio of kubectl's.
//!
//! Measured on 2 CPUs shared with other engineers' builds (2026-11-29, the plugin of de920c7),
//! defaults (200 promotions × 20,000 clusters, 20 rounds, 5 busy rounds), release
//! build; three earlier runs the same day agree within 15 %:
//!
//! | figure | absolute | × baseline |
//! |---|---|---|
//! | baseline: `kubectl get clusterpromotions,clustersummaries -A -o json`, median of 5 (62 MB of JSON; cold 10.5 s) | 10.6 s | 1.00 |
//! | start → address printed | 29 ms | 0.003 |
//! | first render: start → first `GET /` complete (200 cards, 271 KiB) | 4.37 s | 0.41 |
//! | `GET /` warm, median of 7 (3.32–3.42 s) | 3.39 s | 0.32 |
//! | update → its `card` event, p50 / p99 (20 rounds) | 185 / 414 ms | 0.017 / 0.039 |
//! | update → its `card` event while another browser loads `GET /` (median of 5; that load: 3.8 s) | 4.22 s | 0.40 |
//! | RSS after the first render (kubectl's peak: 1,411 MiB) | 315 MiB | 0.22 |
//! | RSS after the updates (peak) | 424 MiB (437 MiB) | 0.31 |
//! | CPU until the first render (kubectl's per run: 9.9 s) | 4.34 s | 0.44 |
//! | CPU per update | 0.097 s | 0.010 |
//! | CPU idle, 10 s with a stream open | 0.00 s | |
//!
//! An update's card comes 185 ms after the write, 100 ms of it the follower's gathering of a
//! burst (`QUIET`, by design); no card is sent for another promotion, nothing while idle. The
//! p99 is the first update after start (410–460 ms in every run; the state's new copy of the
//! ClusterSummaries is the first to touch fresh memory, RSS 315 → 424 MiB). A page is what
//! does not scale: every `GET /` builds every card, and each card's observations walk all
//! 20,000 ClusterSummaries (promotions × summaries: 52 ms at 20 × 2,000, 3.4 s here; 99 % of
//! its CPU in `Description::build_shared`, 73 % in `Value::pointer` over the summaries'
//! labels). The plugin runs on a current-thread runtime, so while a page is built nothing else
//! is served: an update written meanwhile reaches the open streams only after it (4.2 s). Of
//! the 0.1 s of CPU per update, about three quarters is the follower copying all 20,000 kept
//! ClusterSummaries into the new state (`Kept::read`) and freeing the previous copy.

//!
//! After grouping each promotion's ClusterSummaries once per state and serving on a
//! multi-thread runtime (573eee7), in one run on the same machine:
//!
//! | figure | absolute | × baseline |
//! |---|---|---|
//! | baseline: `kubectl get …` median of 5 | 10.5 s | 1.00 |
//! | first render | 1.76 s | 0.17 |
//! | `GET /` warm, median of 7 (477–549 ms) | 525 ms | 0.05 |
//! | update → its `card` event, p50 / p99 | 206 / 516 ms | 0.020 / 0.049 |
//! | … while another browser loads `GET /` (median of 5) | 768 ms | 0.07 |
//! | RSS after the first render (end, peak) | 336 MiB (446, 471 MiB) | 0.24 |
//! | CPU until the first render | 1.64 s | 0.17 |
//! | CPU per update | 0.128 s | 0.013 |
//! | CPU idle, 10 s with a stream open | 0.00 s | |

use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use http_body_util::{BodyExt, Empty};
use hyper::header;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

use promotion_e2e::apiserver::{StandIn, StandInOptions, Store};
use promotion_e2e::bench_support::{cpu_seconds, rss_mib, Flags};
use promotion_e2e::bins::{self, KubeEnv};
use promotion_shared::model::{CLUSTER_PROFILE_NAME_LABEL, PROMOTION_NAME_LABEL};
use promotion_shared::reconcile::{decide, Options, Snapshot};

const API: &str = "config.projectsveltos.io/v1beta1";
const NAMESPACES: usize = 10;
/// How long the dashboard may take for anything it is waited for (start-up, an answer, an
/// event) before the bench gives up.
const PATIENCE: Duration = Duration::from_secs(300);

struct Args {
    promotions: usize,
    clusters: usize,
    rounds: usize,
    idle: Duration,
    /// Updates written while another page load is under way.
    busy_rounds: usize,
    warm: usize,
    baseline_runs: usize,
    plugin: Option<PathBuf>,
}

fn args() -> Args {
    let flags = Flags::from_env();
    let promotions = (flags.number("--promotions", 200.0) as usize).max(1);
    Args {
        promotions,
        // At least one canary and two main clusters per promotion (one left to provision).
        clusters: (flags.number("--clusters", 20_000.0) as usize).max(promotions * 3),
        rounds: (flags.number("--rounds", 20.0) as usize).max(1),
        busy_rounds: flags.number("--busy-rounds", 5.0) as usize,
        idle: Duration::from_secs_f64(flags.number("--idle", 10.0)),
        warm: (flags.number("--warm", 7.0) as usize).max(1),
        baseline_runs: (flags.number("--baseline-runs", 5.0) as usize).max(1),
        plugin: flags.value("--plugin").map(PathBuf::from),
    }
}

/// The shape of the fleet: clusters per promotion, and how they split into the stages.
#[derive(Clone, Copy)]
struct Shape {
    per_promotion: usize,
    canary: usize,
}

impl Shape {
    fn of(args: &Args) -> Shape {
        let per_promotion = args.clusters / args.promotions;
        Shape {
            per_promotion,
            canary: (per_promotion / 10).max(1),
        }
    }

    fn main(self) -> usize {
        self.per_promotion - self.canary
    }

    /// How many of promotion `i`'s main clusters are provisioned in the seeded state (always
    /// fewer than all: every promotion has one left to provision).
    fn provisioned(self, i: usize) -> usize {
        (i * 7) % self.main()
    }

    /// Whether promotion `i` has one failed main cluster (after the provisioned ones).
    fn failing(self, i: usize) -> bool {
        i % 10 == 9 && self.provisioned(i) + 2 <= self.main()
    }
}

fn promotion_name(i: usize) -> String {
    format!("p{i:03}")
}

fn uid(kind: u32, i: usize, k: usize) -> String {
    format!("{kind:08x}-0000-4000-8000-{i:06}{k:06}")
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn promotion(i: usize) -> Value {
    let group = format!("g{i}");
    json!({
        "apiVersion": API, "kind": "ClusterPromotion",
        "metadata": {"name": promotion_name(i), "uid": uid(1, i, 0), "generation": 1,
                     "labels": {"team": format!("team-{}", i % 5)},
                     "finalizers": ["config.projectsveltos.io/clusterpromotion"]},
        "spec": {
            "profileSpec": {"syncMode": "Continuous", "helmCharts": [{
                "repositoryURL": "https://kyverno.github.io/kyverno/", "repositoryName": "kyverno",
                "chartName": "kyverno/kyverno", "chartVersion": "3.6.2",
                "releaseName": "kyverno-latest", "releaseNamespace": "kyverno",
                "helmChartAction": "Install",
                "values": "admissionController:\n  replicas: 3\nbackgroundController:\n  enabled: true\n"}]},
            "stages": [
                {"name": "canary", "clusterSelector": {"matchLabels": {"group": group, "ring": "canary"}},
                 "trigger": {"auto": {}}},
                {"name": "main", "clusterSelector": {"matchLabels": {"group": group, "ring": "main"}}},
            ],
        },
    })
}

/// Cluster `k` of promotion `i` (`g` its number in the fleet).
fn cluster(shape: Shape, i: usize, k: usize) -> Value {
    let g = i * shape.per_promotion + k;
    let ring = if k < shape.canary { "canary" } else { "main" };
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
        "metadata": {"name": format!("c{g:05}"), "namespace": format!("fleet-{:02}", g % NAMESPACES),
                     "uid": uid(4, i, k),
                     "labels": {"group": format!("g{i}"), "ring": ring, "env": "prod"}},
        "spec": {"kubeconfigName": format!("c{g:05}-sveltos-kubeconfig")},
        "status": {"ready": true, "connectionStatus": "Healthy"},
    })
}

/// The managed fields addon-controller's writes leave on a ClusterSummary, stamped `at`.
fn managed_fields(at: &str, status: bool) -> Value {
    let mut entries = vec![json!({
        "manager": "addon-controller", "operation": "Update", "apiVersion": API, "time": at,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:projectsveltos.io/cluster-name": {},
                                                 "f:projectsveltos.io/cluster-profile-name": {},
                                                 "f:projectsveltos.io/cluster-type": {}},
                                    "f:ownerReferences": {".": {}, "k:{\"uid\":\"x\"}": {}}},
                     "f:spec": {".": {}, "f:clusterName": {}, "f:clusterNamespace": {},
                                "f:clusterProfileSpec": {".": {}, "f:helmCharts": {},
                                                         "f:syncMode": {}},
                                "f:clusterType": {}}}
    })];
    if status {
        entries.push(json!({
            "manager": "addon-controller", "operation": "Update", "apiVersion": API, "time": at,
            "subresource": "status", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {".": {}, "f:dependencies": {}, "f:featureSummaries": {},
                                      "f:helmReleaseSummaries": {}}}
        }));
    }
    json!(entries)
}

/// The ClusterSummary addon-controller keeps for `cluster` (the `k`th of promotion `i`) and
/// `profile`, reporting `state`, written at `at`.
fn summary(
    profile: &Value,
    cluster: &Value,
    (i, k): (usize, usize),
    state: &str,
    at: &str,
) -> Value {
    let profile_name = profile["metadata"]["name"].as_str().unwrap_or_default();
    let name = cluster["metadata"]["name"].as_str().unwrap_or_default();
    let mut feature = json!({"featureID": "Helm", "status": state});
    match state {
        "Failed" => {
            feature["failureMessage"] = json!("helm install timed out");
            feature["consecutiveFailures"] = json!(1);
        }
        "Provisioned" => feature["lastAppliedTime"] = json!(at),
        _ => {}
    }
    json!({
        "apiVersion": API, "kind": "ClusterSummary",
        "metadata": {
            "name": format!("{profile_name}-sveltos-{name}"),
            "namespace": cluster["metadata"]["namespace"],
            "uid": uid(3, i, k),
            "labels": {CLUSTER_PROFILE_NAME_LABEL: profile_name, PROMOTION_NAME_LABEL: promotion_name(i),
                       "projectsveltos.io/cluster-name": name,
                       "projectsveltos.io/cluster-type": "Sveltos"},
            "ownerReferences": [{"apiVersion": API, "kind": "ClusterProfile", "name": profile_name,
                                 "uid": profile["metadata"]["uid"]}],
            "managedFields": managed_fields(at, true),
        },
        "spec": {"clusterNamespace": cluster["metadata"]["namespace"], "clusterName": name,
                 "clusterType": "Sveltos", "clusterProfileSpec": profile["spec"]},
        "status": {"featureSummaries": [feature], "dependencies": "no dependencies",
                   "helmReleaseSummaries": [{"releaseName": "kyverno-latest",
                                             "releaseNamespace": "kyverno", "status": "Managing"}]},
    })
}

/// A stage profile as Sveltos keeps it once it matched `clusters`.
fn matched(mut profile: Value, clusters: &[Value], uid: String) -> Value {
    profile["metadata"]["uid"] = json!(uid);
    profile["status"] = json!({"matchingClusters": clusters.iter().map(|c| json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
        "namespace": c["metadata"]["namespace"], "name": c["metadata"]["name"]})).collect::<Vec<_>>()});
    profile
}

/// What a round turns `Provisioned`: one promotion's main cluster still `Provisioning`.
struct Pending {
    profile: Value,
    /// Its main clusters still `Provisioning` (with their number in the promotion), in order.
    clusters: Vec<(usize, Value)>,
    /// Its main clusters provisioned so far.
    provisioned: usize,
}

/// The seeded world, and for each promotion what is left to provision.
fn world(args: &Args, shape: Shape) -> (Vec<Value>, Vec<Pending>) {
    let now = Utc::now();
    let stamp = rfc3339(now);
    let mut objects: Vec<Value> = (0..NAMESPACES)
        .map(|n| {
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": format!("fleet-{n:02}"), "uid": uid(5, n, 0)}})
        })
        .collect();
    let mut pending = Vec::with_capacity(args.promotions);
    for i in 0..args.promotions {
        let mut p = promotion(i);
        let clusters: Vec<Value> = (0..shape.per_promotion)
            .map(|k| cluster(shape, i, k))
            .collect();
        let fleet: std::sync::Arc<[promotion_shared::fleet::Cluster]> = {
            let mut inventory = promotion_shared::fleet::Inventory::new();
            inventory
                .add_documents("bench", &clusters)
                .expect("the bench clusters are valid");
            inventory.into_clusters().into()
        };
        let (canary_clusters, main_clusters) = clusters.split_at(shape.canary);
        let restart = decide(
            &Snapshot {
                promotion: p.clone(),
                fleet: Some(fleet.clone()),
                ..Snapshot::default()
            },
            now,
            &Options::default(),
        );
        p["status"] = restart.status.clone().unwrap_or(Value::Null);
        let canary = matched(restart.apply[0].clone(), canary_clusters, uid(2, i, 0));
        let canary_summaries: Vec<Value> = canary_clusters
            .iter()
            .enumerate()
            .map(|(k, c)| summary(&canary, c, (i, k), "Provisioned", &stamp))
            .collect();
        // Canary deployed: provisioned, and (an auto trigger without delay) promoted at once.
        let promote = decide(
            &Snapshot {
                promotion: p.clone(),
                profiles: vec![canary.clone()],
                summaries: canary_summaries.clone(),
                fleet: Some(fleet),
                ..Snapshot::default()
            },
            now,
            &Options::default(),
        );
        p["status"] = promote.status.clone().unwrap_or(Value::Null);
        assert_eq!(p["status"]["currentStageName"], "main", "seeded at main");
        p["metadata"]["managedFields"] = json!([{
            "manager": "promotion-controller", "operation": "Update", "apiVersion": API,
            "time": stamp, "subresource": "status", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {".": {}, "f:currentStageName": {}, "f:stages": {}}}}]);
        let main = matched(promote.apply[0].clone(), main_clusters, uid(2, i, 1));
        let done = shape.provisioned(i);
        let failing = shape.failing(i);
        let mut left = Vec::new();
        for (m, c) in main_clusters.iter().enumerate() {
            let k = shape.canary + m;
            let state = if m < done {
                "Provisioned"
            } else if failing && m == done {
                "Failed"
            } else {
                left.push((k, c.clone()));
                "Provisioning"
            };
            objects.push(summary(&main, c, (i, k), state, &stamp));
        }
        pending.push(Pending {
            profile: main.clone(),
            clusters: left,
            provisioned: done,
        });
        objects.extend(clusters);
        objects.extend(canary_summaries);
        objects.push(p);
        objects.push(canary);
        objects.push(main);
    }
    (objects, pending)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One run of the baseline: wall time from start to exit with all of stdout read, the bytes
/// printed, and (from `wait4`) the process's CPU seconds and peak RSS in MiB.
struct KubectlRun {
    wall: Duration,
    stdout: Vec<u8>,
    cpu: f64,
    peak_mib: f64,
}

// kubectl is reaped by `wait4` (for its own resource usage), which clippy does not see.
#[allow(clippy::zombie_processes)]
fn kubectl_get(env: &KubeEnv) -> KubectlRun {
    let mut cmd = env.command("kubectl");
    cmd.args([
        "get",
        "clusterpromotions,clustersummaries",
        "-A",
        "-o",
        "json",
    ]);
    let began = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let mut err = child.stderr.take().expect("stderr");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        text
    });
    let mut stdout = Vec::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_end(&mut stdout)
        .expect("kubectl's output");
    // Waited for here, not by `Child::wait`, for the child's own resource usage.
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our child's, not yet waited for; both pointers are to live locals.
    let waited = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let wall = began.elapsed();
    assert_eq!(waited, child.id() as libc::pid_t, "wait4 on kubectl");
    let stderr = errors.join().unwrap_or_default();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "kubectl get failed ({status}): {stderr}"
    );
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    KubectlRun {
        wall,
        stdout,
        cpu: seconds(usage.ru_utime) + seconds(usage.ru_stime),
        // ru_maxrss is in KiB on Linux.
        peak_mib: usage.ru_maxrss as f64 / 1024.0,
    }
}

/// The dashboard process, killed however the run ends; its output lines as they come.
struct Dashboard {
    child: Child,
    lines: mpsc::Receiver<(Out, String)>,
    stderr: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Out {
    Stdout,
    Stderr,
}

impl Dashboard {
    fn start(mut cmd: Command) -> Dashboard {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        let (tx, lines) = mpsc::channel();
        bins::forward_lines(
            Out::Stdout,
            child.stdout.take().expect("stdout"),
            tx.clone(),
        );
        bins::forward_lines(Out::Stderr, child.stderr.take().expect("stderr"), tx);
        Dashboard {
            child,
            lines,
            stderr: Vec::new(),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The first stdout line starting with `prefix` (the rest of it).
    fn wait_for_line(&mut self, prefix: &str, deadline: Instant) -> String {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((Out::Stdout, line)) => {
                    if let Some(rest) = line.trim_end().strip_prefix(prefix) {
                        return rest.to_string();
                    }
                }
                Ok((Out::Stderr, line)) => self.stderr.push(line.trim_end().to_string()),
                Err(_) => panic!(
                    "the dashboard printed no {prefix:?} line; stderr:\n{}",
                    self.stderr()
                ),
            }
        }
    }

    fn stderr(&mut self) -> String {
        while let Ok((_, line)) = self.lines.try_recv() {
            self.stderr.push(line.trim_end().to_string());
        }
        self.stderr.join("\n")
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One server-sent event, with when its last bytes arrived.
#[derive(Debug)]
struct Sse {
    at: Instant,
    event: String,
    data: String,
}

/// An HTTP client for the dashboard: its Host and, once exchanged, its cookie on every request.
#[derive(Clone)]
struct Browser {
    client: Client<HttpConnector, Empty<Bytes>>,
    addr: SocketAddr,
    cookie: Option<String>,
}

struct Answer {
    status: u16,
    headers: hyper::HeaderMap,
    body: String,
}

impl Browser {
    fn new(addr: SocketAddr) -> Browser {
        Browser {
            client: Client::builder(TokioExecutor::new()).build_http(),
            addr,
            cookie: None,
        }
    }

    fn request(&self, path: &str) -> hyper::Request<Empty<Bytes>> {
        let mut req = hyper::Request::get(format!("http://{}{path}", self.addr))
            .header(header::HOST, self.addr.to_string());
        if let Some(c) = &self.cookie {
            req = req.header(header::COOKIE, c);
        }
        req.body(Empty::new()).expect("a valid request")
    }

    async fn get(&self, path: &str) -> Answer {
        let response = tokio::time::timeout(PATIENCE, self.client.request(self.request(path)))
            .await
            .unwrap_or_else(|_| panic!("GET {path}: no answer within {PATIENCE:?}"))
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response
            .into_body()
            .collect()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: reading the body: {e}"))
            .to_bytes();
        Answer {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    /// Swap the printed address's token for the cookie, as a browser following the redirect.
    async fn exchange(&mut self, path_and_query: &str) {
        let answer = self.get(path_and_query).await;
        assert_eq!(
            answer.status, 303,
            "the token exchange answered {}: {}",
            answer.status, answer.body
        );
        let set = answer
            .headers
            .get(header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
            .expect("the exchange sets the cookie");
        self.cookie = Some(set.split(';').next().unwrap_or_default().trim().to_string());
        let location = answer.headers.get(header::LOCATION).map(|v| v.as_bytes());
        assert_eq!(location, Some(&b"/"[..]), "the exchange redirects to /");
    }

    /// Open an event stream: each event is sent on the channel as it arrives.
    async fn stream(&self, path: &str) -> tokio::sync::mpsc::UnboundedReceiver<Sse> {
        let response = tokio::time::timeout(PATIENCE, self.client.request(self.request(path)))
            .await
            .unwrap_or_else(|_| panic!("GET {path}: no answer within {PATIENCE:?}"))
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        assert_eq!(response.status().as_u16(), 200, "GET {path}");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let mut body = response.into_body();
        tokio::spawn(async move {
            let mut buffer: Vec<u8> = Vec::new();
            while let Some(frame) = body.frame().await {
                let Ok(frame) = frame else { return };
                let at = Instant::now();
                let Some(data) = frame.data_ref() else {
                    continue;
                };
                buffer.extend_from_slice(data);
                // Events end with a blank line.
                while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
                    let block: Vec<u8> = buffer.drain(..end + 2).collect();
                    let text = String::from_utf8_lossy(&block);
                    let mut event = String::from("message");
                    let mut data: Vec<&str> = Vec::new();
                    for line in text.lines() {
                        if let Some(v) = line.strip_prefix("event:") {
                            event = v.trim_start().to_string();
                        } else if let Some(v) = line.strip_prefix("data:") {
                            data.push(v.strip_prefix(' ').unwrap_or(v));
                        }
                        // `:` lines are comments (the keep-alives).
                    }
                    if data.is_empty() {
                        continue;
                    }
                    let sse = Sse {
                        at,
                        event,
                        data: data.join("\n"),
                    };
                    if tx.send(sse).is_err() {
                        return;
                    }
                }
            }
        });
        rx
    }
}

/// The `N` of the page's `data-stream="/stream?since=N"`.
fn stream_of(page: &str) -> String {
    let start = page
        .find("data-stream=\"")
        .map(|i| i + "data-stream=\"".len())
        .expect("the page names its event stream");
    let end = page[start..].find('"').expect("a closed attribute") + start;
    page[start..end].replace("&amp;", "&")
}

fn cards_in(page: &str) -> usize {
    page.matches("class=\"card\"").count()
}

fn clusters_text(provisioned: usize, total: usize, failed: bool) -> String {
    format!(
        "<span class=\"clusters\">{provisioned}/{total} provisioned{}</span>",
        if failed { ", 1 failed" } else { "" }
    )
}

/// What one update measured.
struct Round {
    promotion: String,
    took: Duration,
    /// Cards for other promotions that came while waiting.
    others: usize,
    /// In a busy round, how long the page load made at the same time took.
    page: Option<Duration>,
}

fn main() {
    let args = args();
    let shape = Shape::of(&args);
    let summaries = args.promotions * shape.per_promotion;
    let plugin = match &args.plugin {
        Some(p) => p.clone(),
        // Built before any clock starts: start-up is the process's, not cargo's.
        None => bins::binary("kubectl-promotion").expect("kubectl-promotion builds"),
    };
    eprintln!(
        "dashboard_fleet: {} promotions × {} clusters ({} canary + {} main each), {summaries} \
         ClusterSummaries, {} rounds, plugin {}",
        args.promotions,
        shape.per_promotion * args.promotions,
        shape.canary,
        shape.main(),
        args.rounds,
        plugin.display()
    );
    let (objects, mut pending) = world(&args, shape);
    let server = StandIn::start(
        StandInOptions::default()
            .with_objects(objects)
            // As the real server: a bookmark about once a minute.
            .with_bookmark_interval(Duration::from_secs(60)),
    )
    .expect("the stand-in starts with the fleet");
    let env = KubeEnv::new(&server).expect("a client environment");
    let store = server.store();

    // Baseline: kubectl reading what the fleet page shows, as JSON. One untimed run first fills
    // kubectl's discovery cache (as on a machine where it has run before).
    let first = kubectl_get(&env);
    let listed: Value = serde_json::from_slice(&first.stdout).expect("kubectl printed JSON");
    let items = listed["items"].as_array().map_or(0, Vec::len);
    assert_eq!(
        items,
        args.promotions + summaries,
        "kubectl lists every promotion and summary"
    );
    let mut runs: Vec<KubectlRun> = (0..args.baseline_runs).map(|_| kubectl_get(&env)).collect();
    runs.sort_by_key(|r| r.wall);
    let baseline = runs[runs.len() / 2].wall;
    let mut cpus: Vec<f64> = runs.iter().map(|r| r.cpu).collect();
    cpus.sort_by(f64::total_cmp);
    let kubectl_cpu = cpus[cpus.len() / 2];
    let kubectl_peak = runs.iter().map(|r| r.peak_mib).fold(0.0, f64::max);
    eprintln!(
        "baseline: kubectl get -o json: cold {:.0?}, median {baseline:.0?} of {} runs, {} bytes",
        first.wall,
        runs.len(),
        first.stdout.len()
    );
    drop(runs);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");

    // First render: from the start of the process to the first complete answer of `GET /`.
    let started = Instant::now();
    let mut cmd = env.command(&plugin);
    cmd.args(["dashboard", "--port", "0"]);
    let mut dashboard = Dashboard::start(cmd);
    let pid = dashboard.pid();
    let url = dashboard.wait_for_line("Dashboard: ", started + PATIENCE);
    let printed = started.elapsed();
    let rest = url
        .strip_prefix("http://")
        .expect("the dashboard serves HTTP on loopback");
    let (authority, path) = rest.split_at(rest.find('/').expect("a path"));
    let addr: SocketAddr = authority.parse().expect("an IP address and port");
    let mut browser = Browser::new(addr);
    let page = runtime.block_on(async {
        browser.exchange(path).await;
        browser.get("/").await
    });
    let first_render = started.elapsed();
    let (rss, peak) = rss_mib(pid);
    let render_cpu = cpu_seconds(pid);
    assert_eq!(page.status, 200, "GET /: {}", page.body);
    assert_eq!(
        cards_in(&page.body),
        args.promotions,
        "one card per promotion; stderr:\n{}",
        dashboard.stderr()
    );
    // The page shows what was seeded (a sample: the first promotion, and one that fails).
    for i in [0, 9.min(args.promotions - 1)] {
        let card_start = page
            .body
            .find(&format!("id=\"p-{}\"", promotion_name(i)))
            .expect("the promotion's card");
        let card = &page.body[card_start..];
        let card = &card[..card.find("</li>\n").unwrap_or(card.len())];
        let want = clusters_text(shape.provisioned(i), shape.main(), shape.failing(i));
        assert!(
            card.contains(&want),
            "card of {}: {want} in\n{card}",
            promotion_name(i)
        );
    }
    eprintln!(
        "first render: address printed after {printed:.0?}, page after {first_render:.0?} ({} bytes)",
        page.body.len()
    );

    // Warm loads of the fleet page.
    let mut warm: Vec<Duration> = Vec::with_capacity(args.warm);
    let mut last = page;
    for _ in 0..args.warm {
        let began = Instant::now();
        last = runtime.block_on(browser.get("/"));
        warm.push(began.elapsed());
        assert_eq!(last.status, 200);
    }
    warm.sort();
    let warm_median = warm[warm.len() / 2];
    eprintln!("GET / warm: {warm:.0?}");

    // Update delivery: the stream the page opens, then one ClusterSummary at a time.
    let stream = stream_of(&last.body);
    let mut events = runtime.block_on(browser.stream(&stream));
    let opened = runtime.block_on(async {
        loop {
            match tokio::time::timeout(PATIENCE, events.recv()).await {
                Ok(Some(e)) if e.event == "status" => return e,
                Ok(Some(_)) => continue,
                _ => panic!("the stream sent no status"),
            }
        }
    });
    eprintln!("stream {stream} open: {}", opened.data);
    let cpu_before_rounds = cpu_seconds(pid);
    let total = args.rounds + args.busy_rounds;
    let mut rounds: Vec<Round> = Vec::with_capacity(args.rounds);
    let mut busy: Vec<Round> = Vec::with_capacity(args.busy_rounds);
    let mut cpu_rounds = 0.0;
    for r in 0..total {
        if r == args.rounds {
            cpu_rounds = cpu_seconds(pid) - cpu_before_rounds;
        }
        // Promotions spread over the fleet, each once while there are enough; one with nothing
        // left to provision is skipped.
        let candidate = if total <= args.promotions {
            r * args.promotions / total
        } else {
            r % args.promotions
        };
        let Some(i) = (0..args.promotions)
            .map(|d| (candidate + d) % args.promotions)
            .find(|i| !pending[*i].clusters.is_empty())
        else {
            eprintln!("every cluster is provisioned: {r} rounds");
            break;
        };
        let p = &mut pending[i];
        let (k, c) = p.clusters.remove(0);
        p.provisioned += 1;
        let name = promotion_name(i);
        let want = clusters_text(p.provisioned, shape.main(), shape.failing(i));
        let object = summary(&p.profile, &c, (i, k), "Provisioned", &rfc3339(Utc::now()));
        // Drop what came before the write (nothing is expected).
        while events.try_recv().is_ok() {}
        // A busy round: another browser loads the fleet page as the write lands (its request
        // reaches the dashboard well within the follower's 100 ms gathering of the write).
        let load = (r >= args.rounds).then(|| {
            let other = browser.clone();
            runtime.spawn(async move {
                let began = Instant::now();
                let answer = other.get("/").await;
                assert_eq!(answer.status, 200, "GET / during an update");
                began.elapsed()
            })
        });
        let began = Instant::now();
        store_put(&store, object);
        let (took, others) = runtime.block_on(async {
            let mut others = 0;
            loop {
                let e = match tokio::time::timeout(PATIENCE, events.recv()).await {
                    Ok(Some(e)) => e,
                    _ => panic!("no card for {name} within {PATIENCE:?}"),
                };
                if e.event != "card" {
                    continue;
                }
                let card: Value = serde_json::from_str(&e.data).expect("a card event is JSON");
                if card["name"] != name.as_str() {
                    others += 1;
                    continue;
                }
                let html = card["html"].as_str().unwrap_or_default();
                if html.contains(&want) {
                    return (e.at.saturating_duration_since(began), others);
                }
            }
        });
        let page = load.map(|l| runtime.block_on(l).expect("the page load ends"));
        let round = Round {
            promotion: name,
            took,
            others,
            page,
        };
        match page {
            None => {
                eprintln!("round {r}: {} → {took:.0?}", round.promotion);
                rounds.push(round);
            }
            Some(page) => {
                eprintln!(
                    "busy round {r}: {} → {took:.0?} (GET / took {page:.0?})",
                    round.promotion
                );
                busy.push(round);
            }
        }
    }
    if args.busy_rounds == 0 {
        cpu_rounds = cpu_seconds(pid) - cpu_before_rounds;
    }

    // Idle: the stream open, nothing written; what the process spends now is what it spends
    // while nothing changes.
    let idle_start = Instant::now();
    let cpu0 = cpu_seconds(pid);
    // The idle period is what is measured: nothing to wait for but time.
    std::thread::sleep(args.idle);
    let idle_cpu = cpu_seconds(pid) - cpu0;
    let idle_wall = idle_start.elapsed();
    let mut idle_events = 0;
    while let Ok(e) = events.try_recv() {
        if e.event == "card" {
            idle_events += 1;
        }
    }
    let (rss_end, peak_end) = rss_mib(pid);
    let stderr = dashboard.stderr();
    drop(events);
    drop(dashboard);

    let mut took: Vec<Duration> = rounds.iter().map(|r| r.took).collect();
    took.sort();
    let p50 = percentile(&took, 50.0);
    let p99 = percentile(&took, 99.0);
    let others: usize = rounds.iter().chain(&busy).map(|r| r.others).sum();
    let slowest = rounds.iter().max_by_key(|r| r.took);

    let ms = |d: Duration| format!("{:.0} ms", d.as_secs_f64() * 1000.0);
    let x = |d: Duration| format!("{:.2}x", d.as_secs_f64() / baseline.as_secs_f64());
    println!(
        "== dashboard_fleet: {} promotions × {} clusters ({summaries} ClusterSummaries)",
        args.promotions,
        shape.per_promotion * args.promotions
    );
    println!("| figure | absolute | × baseline |");
    println!("|---|---|---|");
    println!(
        "| baseline: kubectl get clusterpromotions,clustersummaries -A -o json (median of {}; cold {}) | {} | 1.00x |",
        args.baseline_runs,
        ms(first.wall),
        ms(baseline)
    );
    println!(
        "| start → address printed | {} | {} |",
        ms(printed),
        x(printed)
    );
    println!(
        "| first render: start → first GET / complete ({} cards, {} KiB) | {} | {} |",
        cards_in(&last.body),
        last.body.len() / 1024,
        ms(first_render),
        x(first_render)
    );
    println!(
        "| GET / warm (median of {}; min {}, max {}) | {} | {} |",
        warm.len(),
        ms(warm[0]),
        ms(warm[warm.len() - 1]),
        ms(warm_median),
        x(warm_median)
    );
    println!(
        "| update → its card event, p50 ({} rounds) | {} | {} |",
        rounds.len(),
        ms(p50),
        x(p50)
    );
    println!(
        "| update → its card event, p99 (slowest: {}) | {} | {} |",
        slowest.map(|r| r.promotion.as_str()).unwrap_or("-"),
        ms(p99),
        x(p99)
    );
    if !busy.is_empty() {
        let mut b: Vec<Duration> = busy.iter().map(|r| r.took).collect();
        b.sort();
        let mut pages: Vec<Duration> = busy.iter().filter_map(|r| r.page).collect();
        pages.sort();
        let b50 = percentile(&b, 50.0);
        println!(
            "| update → its card event while another GET / is served, median of {} (that GET / took {}) | {} | {} |",
            b.len(),
            ms(percentile(&pages, 50.0)),
            ms(b50),
            x(b50)
        );
    }
    println!(
        "| RSS after the first render (peak) vs kubectl's peak RSS {:.0} MiB | {rss:.0} MiB ({peak:.0} MiB) | {:.2}x |",
        kubectl_peak,
        peak / kubectl_peak.max(1e-9)
    );
    println!(
        "| CPU until the first render vs kubectl's CPU per run {kubectl_cpu:.2} s | {render_cpu:.2} s | {:.2}x |",
        render_cpu / kubectl_cpu.max(1e-9)
    );
    println!(
        "| CPU per update ({cpu_rounds:.2} s over {} rounds) | {:.3} s | {:.2}x |",
        rounds.len(),
        cpu_rounds / rounds.len().max(1) as f64,
        cpu_rounds / rounds.len().max(1) as f64 / kubectl_cpu.max(1e-9)
    );
    println!(
        "| CPU idle, {:.1} s with a stream open | {idle_cpu:.2} s ({:.1} % of a core) | |",
        idle_wall.as_secs_f64(),
        100.0 * idle_cpu / idle_wall.as_secs_f64().max(1e-9)
    );
    println!(
        "cards for other promotions during the rounds: {others}; cards while idle: {idle_events}; \
         RSS at the end {rss_end:.0} MiB (peak {peak_end:.0} MiB)"
    );
    if !stderr.is_empty() {
        println!("dashboard stderr:\n{stderr}");
    }
}

fn store_put(store: &Store, object: Value) {
    store.put(object).expect("the summary is stored");
}
