//! Reading what the view model needs from the cluster. The view (`view.rs`) is computed from
//! the [`Snapshot`] read here; it never reads the cluster itself.
//!
//! Only the promotion itself is required. The rest is read concurrently over the client's one
//! connection, and what cannot be read becomes a line in the view saying why (forbidden, CRD not
//! installed), never a silent gap and never "offline": offline means `describe -f`.

use crate::cluster::kube_client::Kube;
use crate::error::Result;
use crate::view::{profile_names, typed, Snapshot};

/// Read a promotion, then, concurrently, the ClusterProfiles Sveltos generated (for every
/// promotion: a profile whose generated name collides with another promotion's must be told
/// apart), the ClusterSummaries of this promotion's stage profiles, and its Events.
pub async fn snapshot(kube: &Kube, name: &str) -> Result<Snapshot> {
    let object = kube.get_promotion(name).await?;
    let promotion = typed(&object)?;
    let uid = promotion.metadata.uid.clone();
    let stage_profiles = profile_names(&promotion);
    let (profiles, summaries, events) = tokio::join!(
        kube.list_promotion_profiles(),
        kube.list_summaries(&stage_profiles),
        kube.list_events(name, uid.as_deref()),
    );
    Ok(Snapshot {
        object,
        profiles: profiles.map_err(|e| e.read_failure()),
        summaries: summaries.map_err(|e| e.read_failure()),
        events: events.map_err(|e| e.read_failure()),
    })
}

/// What the stage states need and nothing more (no Events): for `approve` and `wait`.
pub async fn state(kube: &Kube, name: &str) -> Result<Snapshot> {
    let object = kube.get_promotion(name).await?;
    let stage_profiles = profile_names(&typed(&object)?);
    let (profiles, summaries) = tokio::join!(
        kube.list_promotion_profiles(),
        kube.list_summaries(&stage_profiles),
    );
    Ok(Snapshot {
        object,
        profiles: profiles.map_err(|e| e.read_failure()),
        summaries: summaries.map_err(|e| e.read_failure()),
        events: Err(String::new()),
    })
}
