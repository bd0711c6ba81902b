//! `kubectl promotion list -w` and `describe NAME -w` following a rollout over 2,000 clusters on
//! the stand-in API server, as the real binaries
//! (`cargo bench -p promotion-e2e --bench watch_fleet`; `-- --clusters N --rate R --idle S` for
//! another size, pace or idle period, `--watcher list|describe` for one of them, `--plugin PATH`
//! to measure another build of the plugin, e.g. an earlier commit's).
//!
//! The fleet: `--clusters` SveltosClusters in four waves (1 %, 24 %, 25 %, 50 %) of one
//! ClusterPromotion, `wave0` … `wave3`; `wave2` soaks 10 s. The bench plays promotion-controller
//! (its own decisions, [`decide`], write the status and the stage profiles) and addon-controller:
//! for each stage it creates the ClusterSummaries, reports them `Provisioning`, then
//! `Provisioned`, `--rate` writes a second (in `wave2`, three clusters fail first and recover at
//! the end). Every write carries `metadata.managedFields` stamped with the write's time, as the
//! API server stamps them. Once `wave2` is provisioned, nothing is written for `--idle` seconds
//! (the soak): what a watcher spends then is what it spends while nothing changes, catching up
//! with a backlog included.
//!
//! Each watcher runs in its own rollout (its own stand-in), next to the baseline consumer,
//! `kubectl get clustersummaries -A -w -o json` (plus `kubectl get clusterpromotions -w -o json`),
//! which prints every change it is sent. Reported per watcher:
//! - lag: from a write to the first line that shows it: stage transitions (a stage reached, its
//!   failure and recovery, the soak, completion; one the watcher coalesced with a later one is
//!   shown by the later one's line) and, for `describe -w`, cluster counts: for each
//!   `Provisioned` write, the first `clusters … → N/T` line with N at least the count that write
//!   made, and each count line behind the newest write it reports; p50 and p99, and as a ratio
//!   of the baseline's lag for the same writes;
//! - for `describe -w`, the time each count line is stamped with against the time of the newest
//!   write it reports (what the line claims, not when it was printed; both in whole seconds);
//! - CPU seconds (`/proc/<pid>/stat`, user + system) of the watcher and of the baseline during
//!   the rollout (until the watcher printed the final state) and during the idle period, and the
//!   time of one LIST of all ClusterSummaries through the same server;
//! - the lines printed, and where the transcript of each watcher's output is.
//!
//! Measured on 2 shared CPUs (2026-11-29), 2,000 clusters at 200 writes/s, before (2d1e77b) and
//! after the watch rework (40375e5, d2aeaee):
//!
//! | figure | `list -w` before | after | `describe -w` before | after |
//! |---|---|---|---|---|
//! | stage transitions, lag p50 / p99 | 60 ms / 23.5 s | 448 / 562 ms | 62 ms / 2.8 s | 333 / 639 ms |
//! | `Provisioned` writes shown by a count line | | | 500 of 2,000 | 2,000 of 2,000 |
//! | … lag p50 / p99 (each write until shown) | | | 16.2 / 21.8 s | 2.1 / 5.9 s |
//! | … each count line behind its newest write | | | 16.2 / 21.8 s | 280 / 340 ms |
//! | … its stamp against that write | | | +16 / +22 s | 0 / 0 s |
//! | count lines for the rollout | | | 500 | 5 |
//! | CPU during the rollout (baseline kubectl ≈ 2.7 s) | 24.1 s | 2.5 s | 27.3 s | 2.8 s |
//! | CPU in the 20 s nothing is written | 18.1 s (91 %) | 0.02 s | 19.6 s (98 %) | 0.02 s |
//!
//! Before, each stage's transition came quickly from the promotion's own watch while the
//! ClusterSummaries lagged: `describe -w` printed `wave1: clusters 477 → 478/480` 21 s after
//! wave1 was promoted, stamped with the time it printed it, never printed wave2's failures,
//! and exited at `complete` with 1,500 of the writes not shown. After, a count line is told
//! once its stage's burst is over (every 10 s while it goes on): the lag of each write until a
//! line shows it is that wait, by design; the line itself is never behind and carries the
//! write's time. A transition waits for the burst it comes in to be gathered (up to 500 ms).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use promotion_e2e::apiserver::{StandIn, StandInOptions};
use promotion_e2e::bench_support::{cpu_seconds, Flags};
use promotion_e2e::bins::{self, KubeEnv};
use promotion_shared::model::{CLUSTER_PROFILE_NAME_LABEL, PROMOTION_NAME_LABEL};
use promotion_shared::reconcile::{decide, Options, Snapshot};

const API: &str = "config.projectsveltos.io/v1beta1";
const PROMOTION: &str = "rollout";
const NAMESPACES: usize = 10;
const STAGES: usize = 4;
/// The stage that soaks, during which the idle period is measured.
const SOAKING: usize = 2;
/// Clusters of the soaking stage that fail first (retriable) and recover at its end.
const FAILING: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Watcher {
    List,
    Describe,
}

impl Watcher {
    fn args(self) -> Vec<&'static str> {
        match self {
            Watcher::List => vec!["list", "-w"],
            Watcher::Describe => vec!["describe", PROMOTION, "-w"],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Watcher::List => "list -w",
            Watcher::Describe => "describe -w",
        }
    }
}

struct Args {
    clusters: usize,
    /// Writes per second while the clusters deploy.
    rate: f64,
    idle: Duration,
    /// How long a watcher may take to show the final state after the last write.
    patience: Duration,
    plugin: Option<PathBuf>,
    watchers: Vec<Watcher>,
}

fn args() -> Args {
    let flags = Flags::from_env();
    let watchers = match flags.value("--watcher").as_deref() {
        Some("list") => vec![Watcher::List],
        Some("describe") => vec![Watcher::Describe],
        _ => vec![Watcher::List, Watcher::Describe],
    };
    Args {
        clusters: (flags.number("--clusters", 2000.0) as usize).max(STAGES * 4),
        rate: flags.number("--rate", 200.0).max(1.0),
        idle: Duration::from_secs_f64(flags.number("--idle", 20.0)),
        patience: Duration::from_secs_f64(flags.number("--patience", 900.0)),
        plugin: flags.value("--plugin").map(PathBuf::from),
        watchers,
    }
}

/// Clusters per wave: 1 %, 24 %, 25 %, the rest.
fn wave_sizes(clusters: usize) -> [usize; STAGES] {
    let a = (clusters / 100).max(2);
    let b = clusters * 24 / 100;
    let c = clusters / 4;
    [a, b, c, clusters - a - b - c]
}

fn stage_name(k: usize) -> String {
    format!("wave{k}")
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn cluster(i: usize, wave: usize) -> Value {
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
        "metadata": {"name": format!("c{i:05}"), "namespace": format!("fleet-{:02}", i % NAMESPACES),
                     "labels": {"wave": stage_name(wave), "env": "prod"}},
        "spec": {"kubeconfigName": format!("c{i:05}-sveltos-kubeconfig")},
        "status": {"ready": true, "connectionStatus": "Healthy"},
    })
}

fn promotion() -> Value {
    let stages: Vec<Value> = (0..STAGES)
        .map(|k| {
            let mut s = json!({"name": stage_name(k),
                               "clusterSelector": {"matchLabels": {"wave": stage_name(k)}}});
            if k == SOAKING {
                s["trigger"] = json!({"auto": {"delay": "10s"}});
            } else if k + 1 < STAGES {
                s["trigger"] = json!({"auto": {}});
            }
            s
        })
        .collect();
    json!({
        "apiVersion": API, "kind": "ClusterPromotion",
        "metadata": {"name": PROMOTION, "uid": "00000000-0000-4000-8000-000000000001",
                     "generation": 1,
                     "finalizers": ["config.projectsveltos.io/clusterpromotion"]},
        "spec": {
            "profileSpec": {"syncMode": "Continuous", "helmCharts": [{
                "repositoryURL": "https://kyverno.github.io/kyverno/", "repositoryName": "kyverno",
                "chartName": "kyverno/kyverno", "chartVersion": "3.6.2",
                "releaseName": "kyverno-latest", "releaseNamespace": "kyverno",
                "helmChartAction": "Install",
                "values": "admissionController:\n  replicas: 3\nbackgroundController:\n  enabled: true\n"}]},
            "stages": stages,
        },
    })
}

/// The managed fields a write leaves, as the API server stamps them: one entry for the main
/// resource and, once the status was written, one for the status subresource.
fn managed_fields(manager: &str, main: &str, status: Option<&str>) -> Value {
    let mut entries = vec![json!({
        "manager": manager, "operation": "Update", "apiVersion": API, "time": main,
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
    if let Some(t) = status {
        entries.push(json!({
            "manager": manager, "operation": "Update", "apiVersion": API, "time": t,
            "subresource": "status", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {".": {}, "f:dependencies": {}, "f:featureSummaries": {},
                                      "f:helmReleaseSummaries": {}}}
        }));
    }
    json!(entries)
}

/// The ClusterSummary addon-controller keeps for `cluster` and `profile`, reporting `state`
/// (`None`: no status yet).
fn summary(
    profile: &Value,
    cluster: &Value,
    state: Option<(&str, Option<&str>)>,
    at: &str,
) -> Value {
    let profile_name = profile["metadata"]["name"].as_str().unwrap_or_default();
    let name = cluster["metadata"]["name"].as_str().unwrap_or_default();
    let mut s = json!({
        "apiVersion": API, "kind": "ClusterSummary",
        "metadata": {
            "name": format!("{profile_name}-sveltos-{name}"),
            "namespace": cluster["metadata"]["namespace"],
            "labels": {CLUSTER_PROFILE_NAME_LABEL: profile_name, PROMOTION_NAME_LABEL: PROMOTION,
                       "projectsveltos.io/cluster-name": name,
                       "projectsveltos.io/cluster-type": "Sveltos"},
            "ownerReferences": [{"apiVersion": API, "kind": "ClusterProfile", "name": profile_name,
                                 "uid": profile["metadata"]["uid"]}],
            "managedFields": managed_fields("addon-controller", at, state.map(|_| at)),
        },
        "spec": {"clusterNamespace": cluster["metadata"]["namespace"], "clusterName": name,
                 "clusterType": "Sveltos", "clusterProfileSpec": profile["spec"]},
    });
    if let Some((status, message)) = state {
        let mut feature = json!({"featureID": "Helm", "status": status});
        match message {
            Some(m) => {
                feature["failureMessage"] = json!(m);
                feature["consecutiveFailures"] = json!(1);
            }
            None if status == "Provisioned" => feature["lastAppliedTime"] = json!(at),
            None => {}
        }
        s["status"] = json!({"featureSummaries": [feature], "dependencies": "no dependencies",
            "helmReleaseSummaries": [{"releaseName": "kyverno-latest",
                                      "releaseNamespace": "kyverno", "status": "Managing"}]});
    }
    s
}

/// A fixed shuffle (a linear congruential generator): the same order every run.
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut x = seed | 1;
    for i in (1..n).rev() {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        order.swap(i, (x >> 33) as usize % (i + 1));
    }
    order
}

/// Lines (or, for the baseline, objects) as they arrive, with when they arrived.
#[derive(Default)]
struct Log {
    entries: Mutex<Vec<(Instant, String)>>,
    more: Condvar,
    closed: Mutex<bool>,
}

impl Log {
    fn push(&self, line: String) {
        let mut e = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        e.push((Instant::now(), line));
        self.more.notify_all();
    }

    fn close(&self) {
        *self.closed.lock().unwrap_or_else(|p| p.into_inner()) = true;
        let _e = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        self.more.notify_all();
    }

    fn is_closed(&self) -> bool {
        *self.closed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait until an entry after `since` satisfies `pred`, or until `deadline`; the time it
    /// arrived.
    fn wait_for(
        &self,
        since: Instant,
        deadline: Instant,
        pred: impl Fn(&str) -> bool,
    ) -> Option<Instant> {
        let mut e = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some((t, _)) = e.iter().find(|(t, l)| *t >= since && pred(l)) {
                return Some(*t);
            }
            let now = Instant::now();
            if now >= deadline || self.is_closed() {
                return None;
            }
            e = self
                .more
                .wait_timeout(e, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn snapshot(&self) -> Vec<(Instant, String)> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

fn follow_lines(pipe: impl std::io::Read + Send + 'static, log: Arc<Log>) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => log.push(line.trim_end().to_string()),
            }
        }
        log.close();
    });
}

/// kubectl's `-o json` watch output, one object after another: each recorded as
/// `<kind> <namespace>/<name> <feature status>`.
fn follow_objects(pipe: impl std::io::Read + Send + 'static, log: Arc<Log>) {
    std::thread::spawn(move || {
        let stream =
            serde_json::Deserializer::from_reader(BufReader::new(pipe)).into_iter::<Value>();
        for object in stream {
            let Ok(o) = object else { break };
            let text = |p: &str| {
                o.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            log.push(format!(
                "{} {}/{} {}",
                text("/kind"),
                text("/metadata/namespace"),
                text("/metadata/name"),
                text("/status/featureSummaries/0/status")
            ));
        }
        log.close();
    });
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// p50 and p99 of `values` (seconds).
fn quantiles(mut values: Vec<f64>) -> (f64, f64, usize) {
    values.sort_by(f64::total_cmp);
    (
        percentile(&values, 50.0),
        percentile(&values, 99.0),
        values.len(),
    )
}

/// A write the watchers should show, and what showing it looks like.
struct Expect {
    what: String,
    at: Instant,
    /// How the watcher shows it.
    watcher: Box<dyn Fn(&str) -> bool + Send>,
}

/// A `Provisioned` write: the stage's count of provisioned clusters it made, and the summary.
struct Provisioned {
    stage: String,
    count: usize,
    at: Instant,
    wall: DateTime<Utc>,
    summary: String,
}

/// promotion-controller and addon-controller, played against the store.
struct Driver {
    store: promotion_e2e::apiserver::Store,
    promotion: Value,
    profiles: Vec<Value>,
    summaries: BTreeMap<String, Value>,
    fleet: Arc<[promotion_shared::fleet::Cluster]>,
    clusters: Vec<Vec<Value>>,
    rate: f64,
    /// When the next paced write is due.
    next: Instant,
    expects: Vec<Expect>,
    provisioned: Vec<Provisioned>,
    wake_at: Option<DateTime<Utc>>,
}

impl Driver {
    /// Now, in whole seconds as the API server stamps managed fields, and as text.
    fn now() -> (DateTime<Utc>, String) {
        Self::stamped(Utc::now())
    }

    /// `t` to the second, and as the status writes it.
    fn stamped(t: DateTime<Utc>) -> (DateTime<Utc>, String) {
        let t = rfc3339(t);
        let whole = DateTime::parse_from_rfc3339(&t)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        (whole, t)
    }

    /// Wait for the next write's turn (the pace), then write.
    fn paced(&mut self, object: Value) -> Instant {
        let now = Instant::now();
        if self.next > now {
            std::thread::sleep(self.next - now);
        }
        self.next = self.next.max(now) + Duration::from_secs_f64(1.0 / self.rate);
        let at = Instant::now();
        let key = format!(
            "{}/{}",
            object["metadata"]["namespace"].as_str().unwrap_or_default(),
            object["metadata"]["name"].as_str().unwrap_or_default()
        );
        self.store
            .put(object.clone())
            .expect("the summary is stored");
        self.summaries.insert(key, object);
        at
    }

    /// One reconcile of promotion-controller: its decision over what the store holds, written.
    fn reconcile(&mut self) -> Instant {
        self.reconcile_at(Utc::now())
    }

    /// One reconcile decided at `when` (the controller's clock when it runs it).
    fn reconcile_at(&mut self, when: DateTime<Utc>) -> Instant {
        let (now, stamp) = Self::stamped(when);
        let decision = decide(
            &Snapshot {
                promotion: self.promotion.clone(),
                profiles: self.profiles.clone(),
                summaries: self.summaries.values().cloned().collect(),
                fleet: Some(self.fleet.clone()),
                revisions: Vec::new(),
            },
            now,
            &Options::default(),
        );
        self.wake_at = decision.wake_at;
        for (n, mut profile) in decision.apply.into_iter().enumerate() {
            let name = profile["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let stage = (0..STAGES)
                .find(|k| name == format!("{PROMOTION}-{}", stage_name(*k)))
                .expect("a stage profile");
            profile["metadata"]["uid"] =
                json!(format!("10000000-0000-4000-8000-{:06}{n:06}", stage));
            // What Sveltos writes once it matched the clusters.
            profile["status"] = json!({"matchingClusters": self.clusters[stage].iter().map(|c| json!({
                "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
                "namespace": c["metadata"]["namespace"], "name": c["metadata"]["name"]})).collect::<Vec<_>>()});
            let stored = self.store.put(profile).expect("the profile is stored");
            self.profiles
                .retain(|p| p["metadata"]["name"] != stored["metadata"]["name"]);
            self.profiles.push(stored);
        }
        let at = Instant::now();
        if let Some(status) = decision.status {
            self.promotion["status"] = status;
            self.promotion["metadata"]["managedFields"] = json!([{
                "manager": "promotion-controller", "operation": "Update", "apiVersion": API,
                "time": stamp, "subresource": "status", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:status": {".": {}, "f:currentStageName": {}, "f:stages": {}}}}]);
            let mut p = self.promotion.clone();
            if let Some(m) = p["metadata"].as_object_mut() {
                m.remove("resourceVersion");
            }
            self.promotion = self.store.put(p).expect("the promotion is stored");
        }
        at
    }

    fn current_stage(&self) -> Option<usize> {
        let current = self.promotion["status"]["currentStageName"].as_str()?;
        (0..STAGES).find(|k| stage_name(*k) == current)
    }

    fn profile(&self, stage: usize) -> Value {
        let name = format!("{PROMOTION}-{}", stage_name(stage));
        self.profiles
            .iter()
            .find(|p| p["metadata"]["name"] == name.as_str())
            .cloned()
            .expect("the stage's profile was applied")
    }

    /// addon-controller reports `cluster` Provisioned, the stage's `count`th: written at
    /// `now` (wall clock, RFC 3339) and recorded for the watchers' lags.
    fn provisioned_one(
        &mut self,
        profile: &Value,
        cluster: &Value,
        stage: &str,
        count: usize,
        (wall, t): (DateTime<Utc>, &str),
    ) -> Instant {
        let s = summary(profile, cluster, Some(("Provisioned", None)), t);
        let key = format!(
            "{}/{}",
            s["metadata"]["namespace"].as_str().unwrap_or(""),
            s["metadata"]["name"].as_str().unwrap_or("")
        );
        let at = self.paced(s);
        self.provisioned.push(Provisioned {
            stage: stage.to_string(),
            count,
            at,
            wall,
            summary: key,
        });
        at
    }

    /// addon-controller deploys the stage: creates the ClusterSummaries, reports each
    /// Provisioning, then Provisioned (in the soaking stage, a few fail first and recover last).
    fn deploy(&mut self, stage: usize, watcher: Watcher) {
        let profile = self.profile(stage);
        let clusters = self.clusters[stage].clone();
        let name = stage_name(stage);
        for c in &clusters {
            let (_, t) = Self::now();
            self.paced(summary(&profile, c, None, &t));
        }
        for &i in &shuffled(clusters.len(), stage as u64 + 1) {
            let (_, t) = Self::now();
            self.paced(summary(
                &profile,
                &clusters[i],
                Some(("Provisioning", None)),
                &t,
            ));
        }
        let failing = if stage == SOAKING { FAILING } else { 0 };
        let order = shuffled(clusters.len(), stage as u64 + 7);
        let mut count = 0;
        for (n, &i) in order.iter().enumerate() {
            let (wall, t) = Self::now();
            if n < failing {
                let at = self.paced(summary(
                    &profile,
                    &clusters[i],
                    Some(("Failed", Some("helm install timed out"))),
                    &t,
                ));
                if n == 0 {
                    self.expects.push(Expect {
                        what: format!("{name}: a cluster fails"),
                        at,
                        watcher: match watcher {
                            Watcher::Describe => {
                                let stage = format!("stage {name}: ");
                                Box::new(move |l| l.contains(&stage) && l.contains("failing"))
                            }
                            Watcher::List => Box::new(|l| l.contains("degraded")),
                        },
                    });
                }
                continue;
            }
            count += 1;
            self.provisioned_one(&profile, &clusters[i], &name, count, (wall, &t));
        }
        for (n, &i) in order.iter().take(failing).enumerate() {
            let (wall, t) = Self::now();
            count += 1;
            let at = self.provisioned_one(&profile, &clusters[i], &name, count, (wall, &t));
            if n + 1 == failing {
                self.expects.push(Expect {
                    what: format!("{name}: the failures recover"),
                    at,
                    watcher: match watcher {
                        Watcher::Describe => {
                            let from = format!("stage {name}: failed");
                            Box::new(move |l| l.contains(&from))
                        }
                        Watcher::List => Box::new(|l| l.contains("progressing")),
                    },
                });
            }
        }
    }
}

/// What one rollout measured for one watcher.
/// A transition: what, the watcher's lag (and whether a later transition's line showed it),
/// the baseline's lag (seconds).
type Shown = (String, Option<(f64, bool)>, Option<f64>);

struct Report {
    watcher: Watcher,
    transitions: Vec<Shown>,
    counts: Vec<f64>,
    counts_baseline: Vec<f64>,
    count_lines: usize,
    stamp_errors: Vec<f64>,
    /// Each count line behind the newest write it reports.
    line_lags: Vec<f64>,
    /// `Provisioned` writes in all.
    provisioned: usize,
    cpu_rollout: (f64, f64),
    cpu_idle: (f64, f64),
    idle: Duration,
    rollout: Duration,
    caught_up: Option<Duration>,
    list_time: Duration,
    lines: usize,
    stderr: String,
}

/// The processes of a run, killed however the run ends (a failed run leaves none behind).
struct Processes(Vec<Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn spawn(mut cmd: Command) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

fn run(args: &Args, watcher: Watcher, plugin: &PathBuf) -> Report {
    let sizes = wave_sizes(args.clusters);
    let mut clusters: Vec<Vec<Value>> = vec![Vec::new(); STAGES];
    let mut i = 0;
    for (k, n) in sizes.iter().enumerate() {
        for _ in 0..*n {
            clusters[k].push(cluster(i, k));
            i += 1;
        }
    }
    let mut objects: Vec<Value> = (0..NAMESPACES)
        .map(|n| {
            json!({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": format!("fleet-{n:02}")}})
        })
        .collect();
    objects.extend(clusters.iter().flatten().cloned());
    objects.push(promotion());
    let server = StandIn::start(
        StandInOptions::default()
            .with_objects(objects)
            // As the real server: a bookmark about once a minute.
            .with_bookmark_interval(Duration::from_secs(60)),
    )
    .expect("the stand-in starts with the fleet");
    let env = KubeEnv::new(&server).expect("a client environment");
    let store = server.store();
    let fleet: Vec<Value> = clusters.iter().flatten().cloned().collect();
    let fleet = {
        let mut inventory = promotion_shared::fleet::Inventory::new();
        inventory
            .add_documents("bench", &fleet)
            .expect("the bench clusters are valid");
        inventory.into_clusters()
    };
    let mut driver = Driver {
        promotion: store
            .get("clusterpromotions", None, PROMOTION)
            .expect("the promotion is stored"),
        store,
        profiles: Vec::new(),
        summaries: BTreeMap::new(),
        fleet: fleet.into(),
        clusters,
        rate: args.rate,
        next: Instant::now(),
        expects: Vec::new(),
        provisioned: Vec::new(),
        wake_at: None,
    };

    let start = Instant::now();
    let out = Arc::new(Log::default());
    let err = Arc::new(Log::default());
    let mut cmd = env.command(plugin);
    cmd.args(watcher.args());
    let mut child = spawn(cmd);
    follow_lines(child.stdout.take().expect("stdout"), out.clone());
    follow_lines(child.stderr.take().expect("stderr"), err.clone());
    let pid = child.id();
    let base = Arc::new(Log::default());
    let mut processes = Processes(vec![child]);
    for kind in ["clustersummaries", "clusterpromotions"] {
        let mut cmd = env.command("kubectl");
        cmd.args(["get", kind, "-A", "-w", "-o", "json"]);
        let mut c = spawn(cmd);
        follow_objects(c.stdout.take().expect("stdout"), base.clone());
        processes.0.push(c);
    }
    let baseline: Vec<u32> = processes.0[1..].iter().map(Child::id).collect();
    let ready = start + Duration::from_secs(120);
    let first = match watcher {
        Watcher::List => PROMOTION,
        Watcher::Describe => "Stages:",
    };
    out.wait_for(start, ready, |l| l.contains(first))
        .unwrap_or_else(|| {
            panic!(
                "{} printed no first view:\n{:?}",
                watcher.name(),
                err.snapshot()
            )
        });
    // kubectl prints nothing for an empty list: its watch request is the sign it is ready.
    let watching = server.wait_for_request(
        |r| {
            r.path.ends_with("/clustersummaries")
                && r.query.contains("watch=true")
                && !r.query.contains("labelSelector")
        },
        ready,
    );
    assert!(watching, "kubectl never watched");

    let base_cpu = |b: &[u32]| b.iter().map(|pid| cpu_seconds(*pid)).sum::<f64>();
    let rollout_start = Instant::now();
    let cpu0 = (cpu_seconds(pid), base_cpu(&baseline));
    let mut idle_cpu = (0.0, 0.0);
    let mut idle_wall = Duration::ZERO;
    driver.next = Instant::now();
    let mut at = driver.reconcile();
    while let Some(stage) = driver.current_stage() {
        let name = stage_name(stage);
        driver.expects.push(Expect {
            what: format!("{name} reached"),
            at,
            watcher: match watcher {
                Watcher::Describe => {
                    let line = format!("stage {name}: not started →");
                    Box::new(move |l| l.contains(&line))
                }
                Watcher::List => {
                    let name = name.clone();
                    Box::new(move |l| l.split_whitespace().nth(2) == Some(name.as_str()))
                }
            },
        });
        driver.deploy(stage, watcher);
        at = driver.reconcile();
        if stage == SOAKING {
            // The table shows no soak (its row reads the same).
            if watcher == Watcher::Describe {
                driver.expects.push(Expect {
                    what: format!("{name} soaks"),
                    at,
                    watcher: Box::new(|l| l.contains("soaking")),
                });
            }
            // Idle: nothing is written while the stage soaks. What a watcher spends now is what
            // it spends while nothing changes (catching up with a backlog, if it has one).
            let idle_start = Instant::now();
            let c = (cpu_seconds(pid), base_cpu(&baseline));
            // The idle period is what is measured: nothing to wait for but time.
            std::thread::sleep(args.idle);
            idle_cpu = (cpu_seconds(pid) - c.0, base_cpu(&baseline) - c.1);
            idle_wall = idle_start.elapsed();
            // The controller wakes at the soak's end (the decision's `wakeAt`): the reconcile it
            // then runs is decided at that time, not after waiting for the clock to get there.
            let woken = driver
                .wake_at
                .map_or_else(Utc::now, |wake| wake.max(Utc::now()));
            driver.next = Instant::now();
            at = driver.reconcile_at(woken);
        }
        if driver.current_stage() == Some(stage) {
            break;
        }
    }
    let last_write = Instant::now();
    driver.expects.push(Expect {
        what: "complete".into(),
        at,
        watcher: match watcher {
            Watcher::Describe => Box::new(|l| l.contains("→ complete") && l.contains("pipeline")),
            Watcher::List => Box::new(|l| l.contains("complete")),
        },
    });
    let done = driver.expects.last().expect("complete");
    let caught = out.wait_for(done.at, last_write + args.patience, |l| (done.watcher)(l));
    let cpu1 = (cpu_seconds(pid), base_cpu(&baseline));
    let rollout = caught.unwrap_or_else(Instant::now) - rollout_start - idle_wall;
    drop(processes);

    // Baseline: one LIST of all ClusterSummaries, through the same server.
    let (_, list_time) = promotion_e2e::envtest::timed_summary_list(env.kubeconfig())
        .unwrap_or_else(|e| panic!("{e}"));

    let lines = out.snapshot();
    // What the watcher printed, with when (seconds into the rollout), to read after the run.
    let transcript = std::env::temp_dir().join(format!(
        "watch_fleet-{}.log",
        watcher.name().replace(' ', "")
    ));
    let text: String = lines
        .iter()
        .map(|(t, l)| {
            let offset = t
                .checked_duration_since(rollout_start)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            format!("{offset:9.3}  {l}\n")
        })
        .collect();
    match std::fs::write(&transcript, text) {
        Ok(()) => eprintln!("{}: transcript in {}", watcher.name(), transcript.display()),
        Err(e) => eprintln!("{}: transcript not written: {e}", watcher.name()),
    }
    let base_lines = base.snapshot();
    let secs = |from: Instant, to: Instant| to.saturating_duration_since(from).as_secs_f64();
    // A transition a watcher coalesced with a later one (a stage passed within one burst) is
    // shown by the later one's line. The baseline shows a transition when it prints the object
    // written then.
    let transitions: Vec<Shown> = driver
        .expects
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let shown = |e: &Expect| {
                lines
                    .iter()
                    .find(|(t, l)| *t >= e.at && (e.watcher)(l))
                    .map(|(t, _)| *t)
            };
            let plugin = shown(e).map(|t| (secs(e.at, t), false)).or_else(|| {
                driver.expects[i + 1..]
                    .iter()
                    .find_map(shown)
                    .map(|t| (secs(e.at, t), true))
            });
            let base = base_lines
                .iter()
                .find(|(t, _)| *t >= e.at)
                .map(|(t, _)| secs(e.at, *t));
            (e.what.clone(), plugin, base)
        })
        .collect();
    // Cluster counts: `stage X: clusters A → N/T provisioned` (or `A/T0 → N/T`).
    let count_line = regex::Regex::new(r"^(\S+)\s+stage (\S+): clusters \S+ → (\d+)/(\d+)")
        .expect("a valid pattern");
    let parsed: Vec<(Instant, Option<DateTime<Utc>>, String, usize)> = lines
        .iter()
        .filter_map(|(t, l)| {
            let c = count_line.captures(l)?;
            let stamp = DateTime::parse_from_rfc3339(&c[1])
                .ok()
                .map(|s| s.with_timezone(&Utc));
            Some((*t, stamp, c[2].to_string(), c[3].parse().ok()?))
        })
        .collect();
    let mut counts = Vec::new();
    let mut counts_baseline = Vec::new();
    let mut by_count: HashMap<(String, usize), &Provisioned> = HashMap::new();
    for p in &driver.provisioned {
        by_count.insert((p.stage.clone(), p.count), p);
        if watcher == Watcher::Describe {
            if let Some((t, ..)) = parsed
                .iter()
                .find(|(t, _, s, n)| *t >= p.at && *s == p.stage && *n >= p.count)
            {
                counts.push(secs(p.at, *t));
            }
        }
        if let Some((t, _)) = base_lines
            .iter()
            .find(|(t, l)| *t >= p.at && l.contains(&p.summary) && l.ends_with("Provisioned"))
        {
            counts_baseline.push(secs(p.at, *t));
        }
    }
    // What each count line's stamp says against the wall-clock time of the newest write it
    // reports (the one that made its count).
    let stamp_errors = parsed
        .iter()
        .filter_map(|(_, stamp, stage, n)| {
            let p = by_count.get(&(stage.clone(), *n))?;
            let stamp = (*stamp)?;
            Some((stamp - p.wall).num_milliseconds() as f64 / 1000.0)
        })
        .collect();
    // Each count line behind the newest write it reports (the one that made its count).
    let line_lags = parsed
        .iter()
        .filter_map(|(t, _, stage, n)| {
            let p = by_count.get(&(stage.clone(), *n))?;
            Some(secs(p.at, *t))
        })
        .collect();
    Report {
        watcher,
        transitions,
        counts,
        counts_baseline,
        count_lines: parsed.len(),
        stamp_errors,
        line_lags,
        provisioned: driver.provisioned.len(),
        cpu_rollout: (cpu1.0 - cpu0.0 - idle_cpu.0, cpu1.1 - cpu0.1 - idle_cpu.1),
        cpu_idle: idle_cpu,
        idle: idle_wall,
        rollout,
        caught_up: caught.map(|t| t.saturating_duration_since(last_write)),
        list_time,
        lines: lines.len(),
        stderr: err
            .snapshot()
            .into_iter()
            .map(|(_, l)| l)
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn print(args: &Args, r: &Report) {
    let name = r.watcher.name();
    let ms = |s: f64| format!("{:.0} ms", s * 1000.0);
    println!(
        "== {name}: {} clusters, {} writes/s",
        args.clusters, args.rate
    );
    match r.caught_up {
        Some(d) => println!(
            "caught up: final state shown {} after the last write",
            ms(d.as_secs_f64())
        ),
        None => println!(
            "NOT caught up: the final state was not shown within {:?} of the last write",
            args.patience
        ),
    }
    for (what, plugin, base) in &r.transitions {
        let shown = match plugin {
            Some((lag, false)) => format!("{:>10}", ms(*lag)),
            Some((lag, true)) => format!("{:>10} (in a later transition's line)", ms(*lag)),
            None => format!("{:>10}", "never"),
        };
        println!(
            "  transition {what:<28} shown after {shown} (baseline {})",
            base.map(ms).unwrap_or_else(|| "never".into())
        );
    }
    let plugin_t: Vec<f64> = r
        .transitions
        .iter()
        .filter_map(|t| t.1.map(|p| p.0))
        .collect();
    let base_t: Vec<f64> = r.transitions.iter().filter_map(|t| t.2).collect();
    let (p50, p99, n) = quantiles(plugin_t);
    let (b50, b99, _) = quantiles(base_t);
    println!(
        "lag, stage transitions ({n} of {}): p50 {} p99 {} (baseline p50 {} p99 {}; ratio p50 {:.1}x p99 {:.1}x)",
        r.transitions.len(),
        ms(p50),
        ms(p99),
        ms(b50),
        ms(b99),
        p50 / b50,
        p99 / b99
    );
    let (b50, b99, bn) = quantiles(r.counts_baseline.clone());
    if r.watcher == Watcher::Describe {
        let (p50, p99, n) = quantiles(r.counts.clone());
        println!(
            "lag, each Provisioned write until a count line shows it ({n} of {} writes shown, in {} count lines): p50 {} p99 {} (baseline p50 {} p99 {} over {bn}; ratio p50 {:.1}x p99 {:.1}x)",
            r.provisioned,
            r.count_lines,
            ms(p50),
            ms(p99),
            ms(b50),
            ms(b99),
            p50 / b50,
            p99 / b99
        );
        let (l50, l99, ln) = quantiles(r.line_lags.clone());
        println!(
            "lag, each count line behind the newest write it reports ({ln} lines): p50 {} p99 {}",
            ms(l50),
            ms(l99)
        );
        let (s50, s99, sn) = quantiles(r.stamp_errors.iter().map(|e| e.abs()).collect());
        let worst =
            r.stamp_errors
                .iter()
                .copied()
                .fold(0.0_f64, |a, b| if b.abs() > a.abs() { b } else { a });
        println!(
            "line stamps vs the time of the newest write they report ({sn} count lines): |error| p50 {} p99 {}, worst {:+.1} s",
            ms(s50),
            ms(s99),
            worst
        );
    } else {
        println!(
            "baseline lag for the Provisioned writes: p50 {} p99 {} over {bn}",
            ms(b50),
            ms(b99)
        );
    }
    println!(
        "CPU during the rollout ({:.1} s): watcher {:.2} s, baseline {:.2} s (ratio {:.2}x); {:.1}x the baseline LIST ({:.1?})",
        r.rollout.as_secs_f64(),
        r.cpu_rollout.0,
        r.cpu_rollout.1,
        r.cpu_rollout.0 / r.cpu_rollout.1,
        r.cpu_rollout.0 / r.list_time.as_secs_f64(),
        r.list_time
    );
    println!(
        "CPU while nothing is written ({:.1} s of the soak): watcher {:.2} s ({:.1} % of a core), baseline {:.2} s",
        r.idle.as_secs_f64(),
        r.cpu_idle.0,
        100.0 * r.cpu_idle.0 / r.idle.as_secs_f64().max(1e-9),
        r.cpu_idle.1
    );
    println!("lines printed: {}", r.lines);
    if !r.stderr.is_empty() {
        println!("stderr:\n{}", r.stderr);
    }
}

fn main() {
    let args = args();
    let plugin = match &args.plugin {
        Some(p) => p.clone(),
        None => bins::binary("kubectl-promotion").expect("kubectl-promotion builds"),
    };
    eprintln!(
        "watch_fleet: {} clusters in waves {:?}, {} writes/s, idle {:?}, plugin {}",
        args.clusters,
        wave_sizes(args.clusters),
        args.rate,
        args.idle,
        plugin.display()
    );
    for &w in &args.watchers {
        let report = run(&args, w, &plugin);
        print(&args, &report);
    }
}
