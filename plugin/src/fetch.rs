//! Reading what the view model needs from the cluster. The view (`view.rs`) is computed from
//! the [`Snapshot`] read here; it never reads the cluster itself.

use crate::error::Result;
use crate::kube_client::Kube;
use crate::view::{profile_names, typed, Snapshot};

/// Read a promotion and, concurrently, its profiles, their ClusterSummaries and its Events.
/// Only the promotion itself is required; the rest degrades to a warning.
pub async fn snapshot(kube: &Kube, name: &str) -> Result<Snapshot> {
    let object = kube.get_promotion(name).await?;
    let promotion = typed(&object)?;
    let uid = promotion.metadata.uid.clone();
    let profile_names = profile_names(&promotion);
    let (profiles, summaries, events) = tokio::join!(
        kube.list_stage_profiles(name),
        kube.list_summaries(&profile_names),
        kube.list_events(name, uid.as_deref()),
    );
    Ok(Snapshot {
        object,
        profiles: profiles.map_err(|e| e.to_string()),
        summaries: summaries.map_err(|e| e.to_string()),
        events: events.map_err(|e| e.to_string()),
    })
}
