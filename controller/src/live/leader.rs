//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection` does it
//! (the algorithm controller-runtime's managers use), written here because the crate we used
//! (kube-lease-manager 0.13) only reports a *change* of leadership: a replica whose renewal failed
//! once published "not leading" and, still holding the Lease, never heard it was leading again.
//!
//! - **Acquire**: every `retry_period`, read the Lease; take it when it has no holder, is ours, or
//!   its record has not changed for `lease_duration` as *this* replica observed it (client-go's
//!   `observedTime`: expiry is judged on the local clock against when the record was last seen to
//!   change, never by comparing another machine's `renewTime` with ours).
//! - **Renew**: every `retry_period`, write `renewTime`; each attempt is bounded by what is left
//!   of `renew_deadline` since the last successful renewal. When none succeeds within
//!   `renew_deadline` (less than `lease_duration`), this replica stops leading *before* the Lease
//!   can expire for the others, then campaigns again — and, if the Lease is still its own (the API
//!   server was only away), leads again at once.
//! - **Release** on shutdown: the holder is cleared, so a standby takes over without waiting.
//!
//! Every write is an update guarded by the `resourceVersion` read, with a field manager of this
//! replica's own (`promotion-controller/<identity>`), so the Lease's managed fields and the API
//! server's audit log tell replicas apart. Writes are guarded on their own ([`super::writes`]); the
//! Lease keeps replicas from doing the same work, it is not what keeps them correct.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease as LeaseObject, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::Client;
use tokio::sync::watch;
use tracing::{info, warn};

use promotion_shared::api_error::{classify, Failure};

/// How a replica campaigns: client-go's `LeaderElectionConfig`.
#[derive(Clone, Debug)]
pub struct Election {
    pub namespace: String,
    pub lease_name: String,
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl Election {
    /// controller-runtime's defaults: 15 s, 10 s, 2 s.
    pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
    pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
    pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

    /// client-go's checks: the deadline must fall inside the Lease, and retries inside the
    /// deadline.
    pub fn validate(&self) -> Result<(), String> {
        if self.renew_deadline >= self.lease_duration {
            return Err(format!(
                "--leader-elect-renew-deadline ({:?}) must be shorter than the lease duration \
                 ({:?}): a leader must stop before its Lease can expire for the others",
                self.renew_deadline, self.lease_duration
            ));
        }
        if self.retry_period >= self.renew_deadline {
            return Err(format!(
                "--leader-elect-retry-period ({:?}) must be shorter than the renew deadline ({:?})",
                self.retry_period, self.renew_deadline
            ));
        }
        Ok(())
    }

    fn field_manager(&self) -> String {
        let mut manager = format!(
            "{}/{}",
            promotion_shared::status_writer::CONTROLLER_FIELD_MANAGER,
            self.identity
        );
        // The API server refuses a field manager over 128 characters.
        manager.truncate(128);
        manager
    }
}

/// This replica's identity: the pod name (`POD_NAME`, from the downward API) or the host name,
/// with the process id so that two processes on one host differ.
pub fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "promotion-controller".into());
    format!("{host}_{}", std::process::id())
}

/// What the campaign tells the rest of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leadership {
    /// This replica may act.
    pub leading: bool,
    /// The API server answered the last attempt (a renewal, or a standby's read): the replica
    /// can make progress. A standby that can read the Lease is healthy.
    pub reachable: bool,
}

/// A running campaign.
pub struct Lease {
    leadership: watch::Receiver<Leadership>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Lease {
    /// Start campaigning; the first answer comes from the loop, this only checks the settings.
    pub fn campaign(client: Client, election: Election) -> Result<Lease, String> {
        election.validate()?;
        let (tx, leadership) = watch::channel(Leadership {
            leading: false,
            reachable: true,
        });
        let (stop, stopping) = watch::channel(false);
        let api: Api<LeaseObject> = Api::namespaced(client, &election.namespace);
        let task = tokio::spawn(run(api, election, tx, stopping));
        Ok(Lease {
            leadership,
            stop,
            task,
        })
    }

    pub fn leadership(&self) -> watch::Receiver<Leadership> {
        self.leadership.clone()
    }

    /// Stop campaigning and, if leading, hand the Lease over at once (a standby takes it without
    /// waiting for it to expire); bounded by `within`.
    pub async fn release(self, within: Duration) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(within, self.task).await.is_err() {
            warn!(within = ?within, "the Lease was not released in time");
        }
    }
}

/// What this replica last saw of the Lease, and when (its own clock).
struct Observed {
    spec: Option<LeaseSpec>,
    at: Instant,
}

async fn run(
    api: Api<LeaseObject>,
    election: Election,
    tx: watch::Sender<Leadership>,
    mut stopping: watch::Receiver<bool>,
) {
    let mut observed: Option<Observed> = None;
    let mut last_renewal: Option<Instant> = None;
    let mut stopped = false;
    let where_ = format!("{}/{}", election.namespace, election.lease_name);
    while !stopped {
        let leading = tx.borrow().leading;
        // A renewal may take no longer than what is left of the deadline; an acquisition no
        // longer than a retry period (it is tried again right after).
        let budget = match (leading, last_renewal) {
            (true, Some(at)) => election.renew_deadline.saturating_sub(at.elapsed()),
            _ => election.retry_period,
        };
        let attempt = tokio::time::timeout(
            budget.max(Duration::from_millis(1)),
            try_acquire_or_renew(&api, &election, &mut observed),
        )
        .await;
        let outcome = match attempt {
            Ok(Ok(held)) => Ok(held),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Failed {
                answered: false,
                message: format!("no answer within {budget:?}"),
            }),
        };
        match outcome {
            Ok(true) => {
                last_renewal = Some(Instant::now());
                if !leading {
                    info!(lease = %where_, "leadership acquired");
                }
                publish(&tx, true, true);
            }
            Ok(false) => {
                if leading {
                    // Someone else holds it (our record was replaced): stop at once.
                    warn!(lease = %where_, "leadership lost: the Lease has another holder");
                    last_renewal = None;
                }
                publish(&tx, false, true);
            }
            Err(Failed { answered, message }) => {
                let expired = last_renewal.is_none_or(|at| at.elapsed() >= election.renew_deadline);
                if leading && expired {
                    warn!(lease = %where_, error = %message, deadline = ?election.renew_deadline,
                          "leadership lost: no renewal within the renew deadline; campaigning again");
                    last_renewal = None;
                    publish(&tx, false, answered);
                } else {
                    warn!(lease = %where_, error = %message, leading, "leader election failed; retrying");
                    publish(&tx, leading, answered);
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(election.retry_period) => {}
            _ = stopping.wait_for(|s| *s) => stopped = true,
        }
    }
    // Copied out: `publish` takes the channel's write lock, which a live `borrow` would hold.
    let last = *tx.borrow();
    if last.leading {
        publish(&tx, false, last.reachable);
        match release(&api, &election).await {
            Ok(()) => info!(lease = %where_, "Lease released"),
            Err(e) => warn!(lease = %where_, error = %e, "releasing the Lease"),
        }
    }
}

fn publish(tx: &watch::Sender<Leadership>, leading: bool, reachable: bool) {
    tx.send_if_modified(|l| {
        let next = Leadership { leading, reachable };
        let changed = *l != next;
        *l = next;
        changed
    });
}

/// Why an attempt failed, and whether the API server answered at all (an answer, even a
/// refusal, means it is reachable).
struct Failed {
    answered: bool,
    message: String,
}

fn failed(e: &kube::Error) -> Failed {
    match e {
        kube::Error::Api(s) => Failed {
            answered: true,
            message: format!("{} ({})", s.message, s.code),
        },
        other => Failed {
            answered: false,
            message: kube_connect::error_chain(other),
        },
    }
}

/// client-go's `tryAcquireOrRenew`: whether this replica holds the Lease afterwards.
async fn try_acquire_or_renew(
    api: &Api<LeaseObject>,
    election: &Election,
    observed: &mut Option<Observed>,
) -> Result<bool, Failed> {
    let now = MicroTime(Timestamp::now());
    let duration_seconds = i32::try_from(election.lease_duration.as_secs()).unwrap_or(i32::MAX);
    let mine = LeaseSpec {
        holder_identity: Some(election.identity.clone()),
        lease_duration_seconds: Some(duration_seconds),
        acquire_time: Some(now.clone()),
        renew_time: Some(now),
        lease_transitions: Some(0),
        ..LeaseSpec::default()
    };
    let pp = PostParams {
        field_manager: Some(election.field_manager()),
        ..PostParams::default()
    };
    let current = match api.get(&election.lease_name).await {
        Ok(lease) => lease,
        Err(kube::Error::Api(s)) if classify(&s) == Failure::NotFound => {
            let lease = LeaseObject {
                metadata: ObjectMeta {
                    name: Some(election.lease_name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(mine.clone()),
            };
            // Lost when another replica created it first.
            let created = api.create(&pp, &lease).await;
            return written(created, mine, observed, Failure::AlreadyExists);
        }
        Err(e) => return Err(failed(&e)),
    };
    let record = current.spec.clone().unwrap_or_default();
    if observed
        .as_ref()
        .is_none_or(|o| o.spec.as_ref() != Some(&record))
    {
        *observed = Some(Observed {
            spec: Some(record.clone()),
            at: Instant::now(),
        });
    }
    let holder = record.holder_identity.as_deref().filter(|h| !h.is_empty());
    let ours = holder == Some(election.identity.as_str());
    let duration = record
        .lease_duration_seconds
        .and_then(|s| u64::try_from(s).ok())
        .map(Duration::from_secs)
        .unwrap_or(election.lease_duration);
    let unexpired = observed.as_ref().is_some_and(|o| o.at.elapsed() < duration);
    if holder.is_some() && !ours && unexpired {
        return Ok(false);
    }
    let mut spec = mine;
    if ours {
        spec.acquire_time = record.acquire_time.clone();
        spec.lease_transitions = record.lease_transitions;
    } else {
        spec.lease_transitions = Some(record.lease_transitions.unwrap_or(0) + 1);
    }
    let mut next = current;
    next.spec = Some(spec.clone());
    // Lost when another replica wrote it since it was read.
    let replaced = api.replace(&election.lease_name, &pp, &next).await;
    written(replaced, spec, observed, Failure::Conflict)
}

/// The outcome of writing `spec`: held (and observed now), lost to another replica (the write
/// failed with `lost`), or failed.
fn written<T>(
    result: Result<T, kube::Error>,
    spec: LeaseSpec,
    observed: &mut Option<Observed>,
    lost: Failure,
) -> Result<bool, Failed> {
    match result {
        Ok(_) => {
            *observed = Some(Observed {
                spec: Some(spec),
                at: Instant::now(),
            });
            Ok(true)
        }
        Err(kube::Error::Api(s)) if classify(&s) == lost => Ok(false),
        Err(e) => Err(failed(&e)),
    }
}

/// Clear the holder, as client-go's `release` does, so that a standby acquires at once.
async fn release(api: &Api<LeaseObject>, election: &Election) -> Result<(), String> {
    let current = api
        .get(&election.lease_name)
        .await
        .map_err(|e| failed(&e).message)?;
    let record = current.spec.clone().unwrap_or_default();
    if record.holder_identity.as_deref() != Some(election.identity.as_str()) {
        return Ok(());
    }
    let mut next = current;
    next.spec = Some(LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        renew_time: Some(MicroTime(Timestamp::now())),
        ..record
    });
    let pp = PostParams {
        field_manager: Some(election.field_manager()),
        ..PostParams::default()
    };
    api.replace(&election.lease_name, &pp, &next)
        .await
        .map(|_| ())
        .map_err(|e| failed(&e).message)
}
