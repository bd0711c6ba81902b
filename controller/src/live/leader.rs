//! Leader election on a `coordination.k8s.io/v1` Lease with kube-lease-manager: one replica
//! writes, the others keep their caches warm and take over when the Lease expires. Writes are
//! guarded on their own ([`super::writes`]); the Lease keeps replicas from doing the same work,
//! it is not what keeps them correct.

use kube::Client;
use std::sync::Arc;

use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::watch;

pub struct Election {
    pub namespace: String,
    pub lease_name: String,
    pub identity: String,
    pub duration_seconds: u64,
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

/// A campaign for the Lease: a task keeps renewing it (or trying to take it) and publishes
/// whether this replica leads.
pub struct Lease {
    manager: Arc<LeaseManager>,
    leading: watch::Receiver<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Lease {
    pub async fn campaign(client: Client, election: Election) -> Result<Lease, String> {
        let grace = (election.duration_seconds / 3).max(1);
        let where_ = format!("{}/{}", election.namespace, election.lease_name);
        let manager = LeaseManagerBuilder::new(client, &election.lease_name)
            .with_namespace(&election.namespace)
            .with_identity(&election.identity)
            .with_duration(election.duration_seconds)
            .with_grace(grace)
            .with_field_manager(promotion_shared::status_writer::CONTROLLER_FIELD_MANAGER)
            .build()
            .await
            .map_err(|e| format!("leader election on Lease {where_}: {e}"))?;
        let manager = Arc::new(manager);
        let (tx, leading) = watch::channel(false);
        let renewing = manager.clone();
        let task = tokio::spawn(async move {
            loop {
                match renewing.changed().await {
                    Ok(now) => {
                        let _ = tx.send(now);
                    }
                    Err(e) => {
                        // Not knowing is not leading: stop writing until the Lease says so.
                        let _ = tx.send(false);
                        tracing::warn!(error = %e, lease = %where_, "leader election failed; retrying");
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    }
                }
            }
        });
        Ok(Lease {
            manager,
            leading,
            task,
        })
    }

    pub fn leading(&self) -> watch::Receiver<bool> {
        self.leading.clone()
    }

    /// Stop renewing and hand the Lease over at once (a standby takes it without waiting for
    /// it to expire).
    pub async fn release(self) {
        self.task.abort();
        if let Err(e) = self.manager.release().await {
            tracing::warn!(error = %e, "releasing the Lease");
        }
    }
}
