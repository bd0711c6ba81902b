//! The faults of the chaos suite, each injected and then undone by [`inject`], and the seeded
//! schedule that picks them. Faults of different kinds overlap; two faults on the same thing
//! (the control plane, one replica's network, the webhook, the Lease's RBAC) do not.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};

use crate::controller_process::eventually;
use crate::envtest::{FailurePolicy, Kind as ObjectKind};

use super::{lock, start_webhook, World, LEASE_NAME, LEASE_NAMESPACE, STAGES};

/// A kind of fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// kube-apiserver killed (SIGKILL), down for a while, started again on the same port.
    ApiserverRestart,
    /// etcd killed, down for a while, started again on its data.
    EtcdRestart,
    /// The replica holding the Lease SIGKILLed, started again after a while.
    LeaderKill,
    /// One replica cut off from the API server (connections closed, new ones refused).
    Partition,
    /// One replica's requests held unanswered (renewals included), then reset.
    Hang,
    /// One replica's traffic slowed down (100–800 ms per exchange, both ways).
    Delay,
    /// Lease writes refused (403): the leader-election RoleBinding removed, then restored.
    LeaseDenied,
    /// Another writer touching the promotions (an annotation) every 100 ms: conflicts.
    CompetingWriter,
    /// The webhook down, its configurations on `failurePolicy: Fail`.
    WebhookDownFail,
    /// The webhook down, its configurations on `failurePolicy: Ignore`.
    WebhookDownIgnore,
    /// One promotion's current stage failing to deploy (`Failed`), then deploying again.
    SummariesFailed,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::ApiserverRestart,
        Kind::EtcdRestart,
        Kind::LeaderKill,
        Kind::Partition,
        Kind::Hang,
        Kind::Delay,
        Kind::LeaseDenied,
        Kind::CompetingWriter,
        Kind::WebhookDownFail,
        Kind::WebhookDownIgnore,
        Kind::SummariesFailed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::ApiserverRestart => "kube-apiserver restart",
            Kind::EtcdRestart => "etcd restart",
            Kind::LeaderKill => "leader SIGKILLed",
            Kind::Partition => "replica cut off",
            Kind::Hang => "replica's requests hang",
            Kind::Delay => "replica's traffic delayed",
            Kind::LeaseDenied => "Lease renewals refused",
            Kind::CompetingWriter => "competing writer",
            Kind::WebhookDownFail => "webhook down (Fail)",
            Kind::WebhookDownIgnore => "webhook down (Ignore)",
            Kind::SummariesFailed => "ClusterSummaries Failed",
        }
    }

    /// What it occupies: two faults on the same thing do not overlap.
    fn resource(self) -> usize {
        match self {
            Kind::ApiserverRestart | Kind::EtcdRestart => 0,
            // Any replica: the fault picks one, or the leader.
            Kind::LeaderKill | Kind::Partition | Kind::Hang | Kind::Delay => 1,
            Kind::LeaseDenied => 2,
            Kind::CompetingWriter => 3,
            Kind::WebhookDownFail | Kind::WebhookDownIgnore => 4,
            Kind::SummariesFailed => 5,
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

static BUSY: [AtomicBool; 6] = [const { AtomicBool::new(false) }; 6];
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// A claim on a fault's resource, released when dropped.
pub struct Claim(usize);

impl Drop for Claim {
    fn drop(&mut self) {
        BUSY[self.0].store(false, Ordering::SeqCst);
    }
}

/// Claim `kind`'s resource, or `None` while another fault holds it.
pub fn claim(kind: Kind) -> Option<Claim> {
    let r = kind.resource();
    BUSY[r]
        .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
        .ok()
        .map(|_| Claim(r))
}

/// Counts the faults in progress.
pub struct InFlight;

impl InFlight {
    pub fn enter() -> InFlight {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        InFlight
    }

    pub fn now() -> usize {
        IN_FLIGHT.load(Ordering::SeqCst)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The seeded choice of faults: which, how long, and the gaps between them.
pub struct Schedule {
    rng: Xoshiro256PlusPlus,
    mean_gap: Duration,
    longest: Duration,
}

impl Schedule {
    pub fn new(config: &super::Config) -> Schedule {
        Schedule {
            rng: Xoshiro256PlusPlus::seed_from_u64(config.seed),
            mean_gap: config.mean_gap,
            longest: config.longest_fault.max(Duration::from_secs(1)),
        }
    }

    /// The next fault: its kind, how long it lasts, and a seed for its own choices.
    pub fn draw(&mut self) -> (Kind, Duration, u64) {
        let kind = Kind::ALL[self.rng.random_range(0..Kind::ALL.len())];
        let millis = self
            .rng
            .random_range(1000..=self.longest.as_millis().max(1000) as u64);
        (kind, Duration::from_millis(millis), self.rng.random())
    }

    /// The wait before the next fault starts: exponential with the configured mean.
    pub fn gap(&mut self) -> Duration {
        let u: f64 = self.rng.random_range(f64::EPSILON..1.0);
        self.mean_gap.mul_f64(-u.ln()).min(self.mean_gap * 5)
    }
}

const LEASE: ObjectKind = ObjectKind {
    api_version: "coordination.k8s.io/v1",
    kind: "Lease",
};
const ROLE_BINDING: ObjectKind = ObjectKind {
    api_version: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
};
const ELECTION_BINDING: &str = "promotion-controller-leader-election";

/// Retry `f` until it succeeds or `patience` passes (the server may be restarting); the error
/// names the last failure.
fn retrying<T>(
    what: &str,
    patience: Duration,
    mut f: impl FnMut() -> Result<T, String>,
) -> Result<T, String> {
    let mut last = String::new();
    eventually(what, patience, || f().map_err(|err| last = err).ok())
        .map_err(|timeout| format!("{timeout}: {last}"))
}

const PATIENCE: Duration = Duration::from_secs(120);

/// Inject `kind` for `lasting`, then undo it. `seed` makes its own choices (which replica,
/// which promotion, how slow).
pub fn inject(world: &World<'_>, kind: Kind, lasting: Duration, seed: u64) -> Result<(), String> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let replica = rng.random_range(0..world.replicas.len());
    match kind {
        Kind::ApiserverRestart | Kind::EtcdRestart => {
            // Down for at most 3 s: longer, and every replica's renew deadline passes — a
            // different fault (a control-plane outage), which the partition plays.
            let down = lasting.min(Duration::from_secs(3));
            let restarted = if kind == Kind::EtcdRestart {
                world.server.restart_etcd(down)
            } else {
                world.server.restart_apiserver(down)
            };
            restarted.map(|_| ()).map_err(|e| e.to_string())
        }
        Kind::LeaderKill => {
            let holder = lease_holder(world);
            let index = world
                .replicas
                .iter()
                .position(|r| {
                    let identity = lock(r).identity();
                    identity.is_some() && identity == holder
                })
                .unwrap_or(replica);
            lock(&world.replicas[index]).kill();
            std::thread::sleep(lasting);
            lock(&world.replicas[index]).start()
        }
        Kind::Partition | Kind::Hang | Kind::Delay => {
            let by = Duration::from_millis(rng.random_range(100..=800));
            {
                let proxy = &lock(&world.replicas[replica]).proxy;
                match kind {
                    Kind::Partition => proxy.cut(),
                    Kind::Hang => proxy.hang(),
                    _ => proxy.delay(by),
                }
            }
            std::thread::sleep(lasting);
            lock(&world.replicas[replica]).proxy.heal();
            Ok(())
        }
        Kind::LeaseDenied => {
            let binding = retrying("reading the leader-election binding", PATIENCE, || {
                get(world, ROLE_BINDING, Some(LEASE_NAMESPACE), ELECTION_BINDING)?
                    .ok_or_else(|| "missing".to_string())
            })?;
            retrying("removing the leader-election binding", PATIENCE, || {
                delete(world, ROLE_BINDING, Some(LEASE_NAMESPACE), ELECTION_BINDING)
            })?;
            std::thread::sleep(lasting);
            restore_binding(world, &binding)
        }
        Kind::CompetingWriter => {
            let end = Instant::now() + lasting;
            let mut n = 0u64;
            while Instant::now() < end {
                let name = &world.names[rng.random_range(0..world.names.len())];
                n += 1;
                let _ = world.annotate(name, "chaos.kubectl-promotion.dev/touched", &n.to_string());
                std::thread::sleep(Duration::from_millis(100));
            }
            Ok(())
        }
        Kind::WebhookDownFail | Kind::WebhookDownIgnore => {
            let policy = if kind == Kind::WebhookDownFail {
                FailurePolicy::Fail
            } else {
                FailurePolicy::Ignore
            };
            let mut webhook = lock(&world.webhook);
            if let Some(running) = webhook.as_ref() {
                let configs = running
                    .configurations()
                    .map_err(|e| e.to_string())?
                    .with_failure_policy(policy);
                retrying("registering the webhook", PATIENCE, || {
                    world
                        .cluster
                        .register_webhooks(configs.clone())
                        .map_err(|e| e.to_string())
                })?;
            }
            if let Some(mut running) = webhook.take() {
                running.stop();
            }
            std::thread::sleep(lasting);
            let started = retrying("starting the webhook again", PATIENCE, || {
                start_webhook(world.cluster, FailurePolicy::Fail)
            })?;
            *webhook = Some(started);
            Ok(())
        }
        Kind::SummariesFailed => {
            let name = &world.names[rng.random_range(0..world.names.len())];
            let stage = world
                .cluster
                .promotion(name)
                .ok()
                .flatten()
                .map(|p| super::current_stage(&p).to_string())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| STAGES[0].to_string());
            let profile = format!("{name}-{stage}");
            world.addon.fail(&profile, true);
            std::thread::sleep(lasting);
            world.addon.fail(&profile, false);
            Ok(())
        }
    }
}

fn restore_binding(world: &World<'_>, binding: &Value) -> Result<(), String> {
    let mut binding = binding.clone();
    if let Some(meta) = binding["metadata"].as_object_mut() {
        for k in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "managedFields",
        ] {
            meta.remove(k);
        }
    }
    retrying("restoring the leader-election binding", PATIENCE, || {
        world
            .cluster
            .put(&binding)
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
}

fn get(
    world: &World<'_>,
    kind: ObjectKind,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<Value>, String> {
    world
        .cluster
        .get(kind, namespace, name)
        .map_err(|e| e.to_string())
}

fn delete(
    world: &World<'_>,
    kind: ObjectKind,
    namespace: Option<&str>,
    name: &str,
) -> Result<(), String> {
    world
        .cluster
        .delete(kind, namespace, name)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The Lease's holder now (`None` when it has none or cannot be read).
fn lease_holder(world: &World<'_>) -> Option<String> {
    get(world, LEASE, Some(LEASE_NAMESPACE), LEASE_NAME)
        .ok()
        .flatten()
        .and_then(|l| {
            l.pointer("/spec/holderIdentity")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
}

/// After the last fault: every replica running and reachable, the webhook up under `Fail`, the
/// Lease's RBAC in place, no deployment failing.
pub fn heal_everything(world: &World<'_>) -> Result<(), String> {
    for replica in &world.replicas {
        let mut r = lock(replica);
        r.proxy.heal();
        if r.process.as_mut().is_none_or(|p| p.exited().is_some()) {
            r.start()?;
        }
    }
    if lock(&world.webhook).is_none() {
        *lock(&world.webhook) = Some(retrying("starting the webhook", PATIENCE, || {
            start_webhook(world.cluster, FailurePolicy::Fail)
        })?);
    }
    let present = retrying("reading the leader-election binding", PATIENCE, || {
        get(world, ROLE_BINDING, Some(LEASE_NAMESPACE), ELECTION_BINDING)
    })?;
    if present.is_none() {
        return Err("the leader-election binding was not restored".into());
    }
    for name in &world.names {
        for stage in STAGES {
            world.addon.fail(&format!("{name}-{stage}"), false);
        }
    }
    Ok(())
}

/// `kind` alone, for `config.isolated_fault`, with a change to `probe` (its next rollout) made
/// when it starts: how long after its end the controller acted on it — applied the new chart
/// to the first stage's profile, or for failing deployments (of the probe's first stage), to the
/// second. Zero when it acted while the fault lasted. `None` when it did not act within
/// `config.settle_within`.
pub fn isolated(
    world: &World<'_>,
    kind: Kind,
    probe: &str,
    config: &super::Config,
) -> Result<Option<Duration>, String> {
    // The probe must be idle (its rollout complete) so that the change is the only thing to do.
    let idle = eventually("the probe idle", config.settle_within, || {
        let p = world.cluster.promotion(probe).ok().flatten()?;
        super::complete(&p).then(|| super::spec_chart(&p))
    });
    let Ok(current) = idle else {
        return Ok(None);
    };
    let watched = if kind == Kind::SummariesFailed {
        world.addon.fail(&format!("{probe}-{}", STAGES[0]), true);
        STAGES[1]
    } else {
        STAGES[0]
    };
    let next = retrying("starting the probe's rollout", PATIENCE, || {
        world.next_rollout(probe, &current)
    })?;
    let _claim = claim(kind);
    match kind {
        Kind::SummariesFailed => {
            std::thread::sleep(config.isolated_fault);
            world.addon.fail(&format!("{probe}-{}", STAGES[0]), false);
        }
        _ => inject(world, kind, config.isolated_fault, 0)?,
    }
    let ended = Instant::now();
    let profile = format!("{probe}-{watched}");
    let acted = eventually("the controller's reaction", config.settle_within, || {
        let stored = world
            .cluster
            .get(crate::envtest::objects::CLUSTER_PROFILE, None, &profile)
            .ok()??;
        (stored.pointer("/spec/helmCharts/0/chartVersion") == Some(&json!(next))).then_some(())
    });
    Ok(acted.ok().map(|()| ended.elapsed()))
}

impl World<'_> {
    /// Another writer: one annotation merged into a promotion, as the admin.
    pub fn annotate(&self, name: &str, key: &str, value: &str) -> Result<(), String> {
        self.merge_patch(name, &json!({"metadata": {"annotations": {key: value}}}))
    }
}
