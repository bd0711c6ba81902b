//! The chaos suite: promotion-controller, two replicas with leader election, rolling promotions
//! through an auto and a manual stage on a private real kube-apiserver (with its audit log),
//! with the real webhook and the addon-controller double, while faults chosen by a seeded
//! generator are injected, overlapping ([`faults`]). Then, faults stopped, every promotion must
//! complete; then, optionally, each kind of fault alone, to time the recovery.
//!
//! Invariants, over the whole run:
//! - no stage recorded deployed before the double's log says it deployed the current spec, and
//!   no manual gate passed without an approval given for that rollout ([`audit`]: from what the
//!   API server applied and when);
//! - two replicas never both write within one Lease term ([`audit`]);
//! - every promotion completes its last rollout once the faults stop (a liveness deadline).
//!
//! The driver plays the users: the release manager approves a gate once per rollout (through the
//! plugin), and, while the workload runs, a promotion that completed gets the next chart version.
//! Before approving, a user may pause, abort or roll back the rollout at its gate, and resume or
//! retry it a moment later ([`steer`]).
//! Chart versions name rollouts: `1.<n>.0` is the promotion's n-th.

pub mod audit;
pub mod faults;
pub mod report;
pub mod steer;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, Utc};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{json, Value};

use promotion_shared::api_resources::PROMOTION;
use promotion_shared::rollout::identity_of;
use promotion_shared::status::descriptions;

use crate::addon_double::AddonController;
use crate::backend::{Cluster, EnvtestBackend, SESSION_LABEL};
use crate::bins::Kubeconfig;
use crate::controller_process::{eventually, ControllerProcess};
use crate::envtest::objects::CLUSTER_PROFILE;
use crate::envtest::{block_on, Assets, Envtest, Options, User, WebhookServer};
use crate::fault_proxy::FaultProxy;
use crate::rollout;

pub use faults::Kind;
pub use report::Report;

/// The stages every promotion of the suite has: dev (auto), staging (manual), prod (auto).
pub const STAGES: [&str; 3] = ["dev", "staging", "prod"];
const MANUAL: &str = "staging";
/// The install's namespace, where the Lease is (the controller's RBAC allows only there).
pub const LEASE_NAMESPACE: &str = "kubectl-promotion-system";
pub const LEASE_NAME: &str = "promotion-controller";

/// One run's shape.
#[derive(Clone, Debug)]
pub struct Config {
    pub seed: u64,
    pub promotions: usize,
    /// How long faults are injected while the promotions roll.
    pub chaos_for: Duration,
    /// Mean time between two fault starts (exponentially distributed).
    pub mean_gap: Duration,
    /// Longest a fault lasts (each lasts a uniform draw from one second to this).
    pub longest_fault: Duration,
    /// The addon-controller double's lag between the steps of a deployment.
    pub addon_lag: Duration,
    /// `--leader-elect-lease-duration` (seconds); renew deadline and retry period follow it.
    pub lease_seconds: u64,
    /// How long, once faults stop, every promotion may take to complete.
    pub settle_within: Duration,
    /// Repetitions of each kind of fault alone, to time the recovery (0: none).
    pub isolated_repeats: usize,
    /// How long an isolated fault lasts.
    pub isolated_fault: Duration,
    /// Progress lines on stderr.
    pub verbose: bool,
}

/// Everything the run acts on.
pub struct World<'c> {
    pub server: &'static Envtest,
    pub cluster: &'c Cluster,
    pub addon: AddonController<'c>,
    pub replicas: Vec<Mutex<Replica>>,
    pub webhook: Mutex<Option<WebhookServer>>,
    pub names: Vec<String>,
    /// The admin's client, for merge patches.
    admin: kube::Client,
    plugin: PathBuf,
    /// (promotion, chart) → the driver's approvals of that rollout.
    approvals: Mutex<BTreeMap<(String, String), Approval>>,
    /// The users' pauses, aborts and rollbacks.
    pub steering: Mutex<steer::Steering>,
    seed: u64,
    /// Rollouts seen complete.
    pub completed: AtomicUsize,
    /// While set, a completed promotion gets the next chart version.
    rolling: AtomicBool,
    stop: AtomicBool,
    verbose: bool,
}

/// The driver's approvals of one rollout.
#[derive(Clone, Copy)]
struct Approval {
    /// When the first was sent (refused or unanswered ones included: the server may have
    /// applied one whose answer was lost); the oracle's bound.
    first_sent: SystemTime,
    /// Whether one was answered as given; until then the next tick tries again.
    given: bool,
    /// The run of the rollout it was given for ([`steer::Steering::run`]).
    run: u32,
}

/// One promotion-controller replica, behind a fault proxy of its own.
pub struct Replica {
    pub name: String,
    pub proxy: FaultProxy,
    kubeconfig: PathBuf,
    args: Vec<String>,
    pub process: Option<ControllerProcess>,
    /// How many times it was (re)started.
    pub starts: usize,
}

impl Replica {
    /// The identity it campaigns with (and sends in its User-Agent): `POD_NAME` and its PID.
    pub fn identity(&self) -> Option<String> {
        self.process
            .as_ref()
            .map(|p| format!("{}_{}", self.name, p.pid()))
    }

    pub fn start(&mut self) -> Result<(), String> {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let process =
            ControllerProcess::start_with_env(&self.kubeconfig, &args, &[("POD_NAME", &self.name)])
                .map_err(|e| format!("starting {}: {e}", self.name))?;
        self.process = Some(process);
        self.starts += 1;
        Ok(())
    }

    pub fn kill(&mut self) {
        if let Some(mut p) = self.process.take() {
            p.kill();
        }
    }
}

fn e<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |err| format!("{what}: {err}")
}

pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The chart version of a promotion's n-th rollout.
pub fn chart(n: usize) -> String {
    format!("1.{n}.0")
}

fn version_of(chart: &str) -> usize {
    chart
        .split('.')
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A private server with its audit log, and a session on it with the double's lag.
fn server(config: &Config) -> Result<(&'static Envtest, Cluster), String> {
    let assets = Assets::from_env().map_err(e("the real API server"))?;
    let server = Envtest::start_with(&assets, &Options { audit_log: true })
        .map_err(e("starting kube-apiserver"))?;
    // Lives as long as the process, as the shared server does; stopped at the end of `run`.
    let server: &'static Envtest = Box::leak(Box::new(server));
    let cluster = Cluster::on(Box::new(EnvtestBackend::on(server)))
        .map_err(e("the session"))?
        .with_addon_lag(config.addon_lag);
    Ok((server, cluster))
}

impl<'c> World<'c> {
    /// The install's RBAC, the webhook (`Fail`), the stage clusters, two controller replicas and
    /// `config.promotions` promotions at `1.0.0`, on `cluster`.
    pub fn new(
        server: &'static Envtest,
        cluster: &'c Cluster,
        config: &Config,
    ) -> Result<World<'c>, String> {
        let plugin = cluster.install_plugin().map_err(e("the plugin"))?;
        rollout::install_manifest(cluster, "controller/rbac.yaml", |_| Ok(()))?;
        rollout::stage_clusters(cluster).map_err(e("the stage clusters"))?;
        let webhook = start_webhook(cluster, crate::envtest::FailurePolicy::Fail)?;
        let apiserver: std::net::SocketAddr = server
            .url()
            .trim_start_matches("https://")
            .parse()
            .map_err(e("the API server's address"))?;
        let selector = format!("{SESSION_LABEL}={}", cluster.session());
        let lease_seconds = config.lease_seconds.to_string();
        let mut replicas = Vec::new();
        for name in ["replica-a", "replica-b"] {
            let proxy = FaultProxy::start(apiserver).map_err(e("the fault proxy"))?;
            let kubeconfig = cluster.dir().join(format!("kubeconfig-{name}"));
            Kubeconfig::new(
                User::Controller.name(),
                &proxy.url(),
                server.token(User::Controller),
            )
            .with_ca(server.ca_pem())
            .write(&kubeconfig)
            .map_err(e("writing a replica's kubeconfig"))?;
            let args = [
                "--leader-elect",
                "--leader-elect-namespace",
                LEASE_NAMESPACE,
                "--leader-elect-lease-duration",
                &lease_seconds,
                "--selector",
                &selector,
                "--history-namespace",
                LEASE_NAMESPACE,
                "--log-level",
                "info",
            ]
            .map(String::from)
            .to_vec();
            let mut replica = Replica {
                name: name.to_string(),
                proxy,
                kubeconfig,
                args,
                process: None,
                starts: 0,
            };
            replica.start()?;
            replicas.push(Mutex::new(replica));
        }
        let admin = server
            .client(User::Admin)
            .map_err(e("the admin's client"))?;
        let mut names = Vec::new();
        for i in 0..config.promotions {
            let mut p = rollout::promotion(cluster, &format!("p{i}"), Some(json!({"auto": {}})));
            p["spec"]["profileSpec"]["helmCharts"][0]["chartVersion"] = json!(chart(0));
            names.push(
                p["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
            cluster.put(&p).map_err(e("creating a promotion"))?;
        }
        let addon = AddonController::new(cluster);
        Ok(World {
            server,
            cluster,
            addon,
            replicas,
            webhook: Mutex::new(Some(webhook)),
            names,
            admin,
            plugin,
            approvals: Mutex::new(BTreeMap::new()),
            steering: Mutex::new(steer::Steering::default()),
            seed: config.seed,
            completed: AtomicUsize::new(0),
            rolling: AtomicBool::new(true),
            stop: AtomicBool::new(false),
            verbose: config.verbose,
        })
    }

    fn say(&self, line: impl std::fmt::Display) {
        if self.verbose {
            eprintln!("chaos: {line}");
        }
    }

    /// The stored promotions of the run (none while the server cannot answer).
    fn promotions(&self) -> Vec<Value> {
        self.names
            .iter()
            .filter_map(|n| self.cluster.promotion(n).ok().flatten())
            .collect()
    }

    /// The chart version each stage profile of the run carries now.
    fn profile_charts(&self) -> Option<BTreeMap<String, String>> {
        let profiles = self.cluster.list(CLUSTER_PROFILE, None).ok()?;
        Some(
            profiles
                .iter()
                .filter_map(|p| {
                    Some((
                        p.pointer("/metadata/name")?.as_str()?.to_string(),
                        p.pointer("/spec/helmCharts/0/chartVersion")?
                            .as_str()?
                            .to_string(),
                    ))
                })
                .collect(),
        )
    }

    /// The addon-controller double, pass after pass, until the run stops (an API error ends a
    /// pass; the next one starts over).
    fn play_sveltos(&self) {
        while !self.stop.load(Ordering::SeqCst) {
            if self.addon.sync(true).is_err() {
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }

    /// The users, tick after tick, until the run stops.
    fn play_users(&self) {
        while !self.stop.load(Ordering::SeqCst) {
            self.tick();
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn tick(&self) {
        let Some(charts) = self.profile_charts() else {
            return;
        };
        for p in self.promotions() {
            let name = p["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let wanted = spec_chart(&p);
            if self.steer(&p, &name, &wanted) {
                continue;
            }
            if awaiting_approval(&p) && !self.approved(&name, &wanted) {
                self.approve(&name, &wanted);
            }
            if rollout_done(&p, &charts)
                && self.rolling.load(Ordering::SeqCst)
                && self.next_rollout(&name, &wanted).is_ok()
            {
                self.completed.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    /// Whether a user's move holds the rollout of `chart` now (a pause, an abort, a rollback
    /// not yet undone): making or undoing it through the plugin when it is time.
    fn steer(&self, p: &Value, name: &str, chart: &str) -> bool {
        let at_gate = awaiting_approval(p) && !self.approved(name, chart);
        let first = version_of(chart) == 0;
        let step = lock(&self.steering).next(self.seed, p, name, chart, at_gate, first);
        match step {
            steer::Step::Free => false,
            steer::Step::Hold => true,
            steer::Step::Run(made, args, making) => {
                // As the admin: a rollback reads the history in the controller's namespace.
                let done = self
                    .cluster
                    .command(User::Admin, &self.plugin)
                    .args(&args)
                    .output()
                    .is_ok_and(|o| o.status.success());
                let mut steering = lock(&self.steering);
                match (making, done) {
                    (true, true) => {
                        steering.made(name, chart, made);
                        self.say(format_args!("{name}: {} at {chart}", made.name()));
                    }
                    (false, true) => {
                        steering.undone(name, chart);
                        self.say(format_args!("{name}: {} at {chart} undone", made.name()));
                    }
                    // Tried again at the next tick, judged from what is stored then.
                    (_, false) => {}
                }
                true
            }
        }
    }

    fn approved(&self, name: &str, chart: &str) -> bool {
        let run = lock(&self.steering).run(name, chart);
        lock(&self.approvals)
            .get(&(name.to_string(), chart.to_string()))
            .is_some_and(|a| a.given && a.run == run)
    }

    /// The release manager approves staging for the rollout of `chart`, through the plugin. The
    /// time is taken before sending (the oracle's bound); a refused approval is tried again at
    /// the next tick.
    fn approve(&self, name: &str, chart: &str) {
        let key = (name.to_string(), chart.to_string());
        let sent = SystemTime::now();
        let given = self
            .cluster
            .command(User::ReleaseManager, &self.plugin)
            .args(["approve", name, "--stage", MANUAL, "--reason", "chaos"])
            .output()
            .is_ok_and(|o| o.status.success());
        let run = lock(&self.steering).run(name, chart);
        let mut approvals = lock(&self.approvals);
        let approval = approvals.entry(key).or_insert(Approval {
            first_sent: sent,
            given: false,
            run,
        });
        // A new run of the rollout (a retry after a rollback) needs its own approval.
        if approval.run != run {
            approval.run = run;
            approval.given = false;
        }
        approval.given |= given;
    }

    /// When an approval was first sent for `name` at `chart` (given or only attempted).
    pub fn approval_sent(&self, name: &str, chart: &str) -> Option<DateTime<Utc>> {
        lock(&self.approvals)
            .get(&(name.to_string(), chart.to_string()))
            .map(|a| DateTime::<Utc>::from(a.first_sent))
    }

    /// Start the next rollout of `name`: the next chart version (a merge patch; the stages and
    /// their approvals stay as stored).
    pub fn next_rollout(&self, name: &str, current: &str) -> Result<String, String> {
        let next = chart(version_of(current) + 1);
        let mut charts = rollout::promotion(self.cluster, "x", None)["spec"]["profileSpec"]
            ["helmCharts"]
            .clone();
        charts[0]["chartVersion"] = json!(next);
        self.merge_patch(
            name,
            &json!({"spec": {"profileSpec": {"helmCharts": charts}}}),
        )?;
        self.say(format_args!("{name}: rollout {next} started"));
        Ok(next)
    }

    /// A JSON merge patch of the promotion `name`, as the admin.
    pub fn merge_patch(&self, name: &str, patch: &Value) -> Result<(), String> {
        let api: Api<DynamicObject> = Api::all_with(self.admin.clone(), &PROMOTION.api_resource());
        let (name, patch) = (name.to_string(), patch.clone());
        block_on(async move {
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(|_| ())
        })
        .map_err(|err| err.to_string())
    }

    /// When the double first sent `Provisioned` for `profile` with a spec of `chart`.
    pub fn deployed_at(&self, profile: &str, chart: &str) -> Option<DateTime<Utc>> {
        self.addon
            .deployed()
            .iter()
            .filter(|d| d.profile == profile && d.chart == chart)
            .map(|d| DateTime::<Utc>::from(d.sent_at))
            .min()
    }

    /// Whether every promotion completed the rollout its spec names.
    fn all_complete(&self) -> Result<(), Vec<String>> {
        let charts = self.profile_charts().unwrap_or_default();
        let promotions = self.promotions();
        let mut pending: Vec<String> = Vec::new();
        for name in &self.names {
            let Some(p) = promotions
                .iter()
                .find(|p| p["metadata"]["name"] == json!(name))
            else {
                pending.push(format!("{name}: not readable"));
                continue;
            };
            if !rollout_done(p, &charts) {
                pending.push(format!(
                    "{name} at {}: stage {:?}, {:?}",
                    spec_chart(p),
                    current_stage(p),
                    description(p, current_stage(p))
                ));
            }
        }
        if pending.is_empty() {
            Ok(())
        } else {
            Err(pending)
        }
    }

    /// The audit-log oracles over the whole run.
    fn audit(&self, report: &mut Report) -> Result<(), String> {
        let path = self
            .server
            .audit_log()
            .ok_or("the server keeps no audit log")?;
        let text = std::fs::read_to_string(path).map_err(e("reading the audit log"))?;
        let (events, torn) = audit::parse(&text);
        report.audit_events = events.len();
        report.audit_torn = torn;
        let terms = audit::one_writer_per_term(&events, LEASE_NAMESPACE, LEASE_NAME);
        report.writes_checked = terms.writes;
        report.handovers = terms.handovers;
        report.conflicts = terms.conflicts;
        report.violations.extend(terms.violations);
        let pipelines: Vec<audit::Pipeline<'_>> = self
            .names
            .iter()
            .map(|name| audit::Pipeline {
                name,
                stages: &STAGES,
                manual: MANUAL,
            })
            .collect();
        let seen = audit::promoted_only_when_deployed_and_approved(
            &events,
            &pipelines,
            |profile, chart| self.deployed_at(profile, chart),
            |name, chart| self.approval_sent(name, chart),
        );
        report.stage_writes_checked = seen.writes;
        report.violations.extend(seen.violations);
        Ok(())
    }
}

fn start_webhook(
    cluster: &Cluster,
    policy: crate::envtest::FailurePolicy,
) -> Result<WebhookServer, String> {
    let webhook = cluster
        .start_webhook(&[])
        .map_err(e("starting the webhook"))?;
    let configs = webhook
        .configurations()
        .map_err(e("rendering the webhook configurations"))?
        .with_failure_policy(policy);
    cluster
        .register_webhooks(configs)
        .map_err(e("registering the webhook"))?;
    Ok(webhook)
}

fn spec_chart(p: &Value) -> String {
    p.pointer("/spec/profileSpec/helmCharts/0/chartVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn current_stage(p: &Value) -> &str {
    p.pointer("/status/currentStageName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn description<'p>(p: &'p Value, stage: &str) -> &'p str {
    p.pointer("/status/stages")
        .and_then(Value::as_array)
        .and_then(|l| l.iter().find(|s| s["name"] == json!(stage)))
        .and_then(|s| s.get("currentStatusDescription"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The status describes the rollout the spec names (Sveltos' `profileSpecHash`).
fn current_rollout(p: &Value) -> bool {
    let status = p.pointer("/status/profileSpecHash").and_then(Value::as_str);
    identity_of(p).is_ok_and(|i| Some(i.id.profile_spec_hash.as_str()) == status)
}

fn awaiting_approval(p: &Value) -> bool {
    current_rollout(p)
        && current_stage(p) == MANUAL
        && description(p, MANUAL).starts_with(descriptions::AWAITING_APPROVAL)
}

/// The rollout the spec names is complete: the status says so, and prod's profile carries the
/// spec's chart (the status alone may still describe the previous rollout's last stage).
fn rollout_done(p: &Value, charts: &BTreeMap<String, String>) -> bool {
    let name = p["metadata"]["name"].as_str().unwrap_or_default();
    complete(p) && charts.get(&format!("{name}-{}", STAGES[2])) == Some(&spec_chart(p))
}

fn complete(p: &Value) -> bool {
    current_rollout(p)
        && current_stage(p) == STAGES[2]
        && description(p, STAGES[2]).starts_with(descriptions::PROMOTED)
}

/// Run the suite: build the world, roll with faults for `config.chaos_for`, let everything
/// complete, time isolated faults, and check the audit log. `Err` only when the run itself could
/// not be carried out; invariant violations are in the report.
pub fn run(config: &Config) -> Result<Report, String> {
    let began = Instant::now();
    let (server, cluster) = server(config)?;
    let world = World::new(server, &cluster, config)?;
    let mut report = Report::new(config);
    world.say(format_args!(
        "{} promotions, 2 replicas, seed {}, server {} ready in {:.1?}",
        config.promotions,
        config.seed,
        world.server.version(),
        began.elapsed()
    ));
    let outcome = std::thread::scope(|scope| {
        scope.spawn(|| world.play_sveltos());
        scope.spawn(|| world.play_users());
        let result = phases(&world, config, &mut report);
        world.stop.store(true, Ordering::SeqCst);
        result
    });
    report.rollouts_completed = world.completed.load(Ordering::SeqCst);
    report.approvals = lock(&world.approvals).values().filter(|a| a.given).count();
    report.moves_made = lock(&world.steering).made.clone();
    report.moves_undone = lock(&world.steering).undone.clone();
    report.replica_starts = world.replicas.iter().map(|r| lock(r).starts).sum();
    for replica in &world.replicas {
        lock(replica).kill();
    }
    world.audit(&mut report)?;
    report.took = began.elapsed();
    world.server.stop();
    outcome?;
    Ok(report)
}

fn phases(world: &World<'_>, config: &Config, report: &mut Report) -> Result<(), String> {
    // 1. Overlapping faults while the promotions roll.
    let mut schedule = faults::Schedule::new(config);
    let chaos_end = Instant::now() + config.chaos_for;
    std::thread::scope(|scope| -> Result<(), String> {
        while Instant::now() < chaos_end {
            std::thread::sleep(schedule.gap());
            if Instant::now() >= chaos_end {
                break;
            }
            // A fault whose target is busy with another is drawn again (a few times), so that
            // the rate of faults stays what was asked for.
            let claimed = (0..8).find_map(|_| {
                let (kind, duration, seed) = schedule.draw();
                faults::claim(kind).map(|guard| (kind, duration, seed, guard))
            });
            if let Some((kind, duration, seed, guard)) = claimed {
                world.say(format_args!("fault {kind} for {duration:.1?}"));
                report.count(kind);
                scope.spawn(move || {
                    let _claimed = guard;
                    let _in_flight = faults::InFlight::enter();
                    if let Err(err) = faults::inject(world, kind, duration, seed) {
                        world.say(format_args!("fault {kind}: {err}"));
                    }
                });
            }
            report.max_overlap = report.max_overlap.max(faults::InFlight::now());
        }
        Ok(())
    })?;
    world.rolling.store(false, Ordering::SeqCst);
    faults::heal_everything(world)?;

    // 2. Liveness: every promotion completes its last rollout.
    let settled = Instant::now();
    let mut pending = Vec::new();
    let complete = eventually("every promotion complete", config.settle_within, || {
        world.all_complete().map_err(|p| pending = p).ok()
    });
    if complete.is_err() {
        report.violations.push(format!(
            "{} promotion(s) not complete {:?} after the faults stopped: {}",
            pending.len(),
            config.settle_within,
            pending.join("; ")
        ));
        return Ok(());
    }
    report.settled_in = Some(settled.elapsed());
    world.say(format_args!(
        "all complete {:.1?} after the faults stopped",
        settled.elapsed()
    ));

    // 3. Each kind alone: the time from its end until the controller acted on a change made
    // while it lasted.
    for round in 0..config.isolated_repeats {
        for (i, kind) in faults::Kind::ALL.iter().copied().enumerate() {
            let probe = &world.names[(round * faults::Kind::ALL.len() + i) % world.names.len()];
            if let Some(took) = faults::isolated(world, kind, probe, config)? {
                world.say(format_args!("isolated {kind}: recovered in {took:.1?}"));
                report.recoveries.entry(kind.name()).or_default().push(took);
            } else {
                report.violations.push(format!(
                    "isolated {kind}: the controller did not act on {probe} within {:?}",
                    config.settle_within
                ));
            }
        }
    }
    Ok(())
}
