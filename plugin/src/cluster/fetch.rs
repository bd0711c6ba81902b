//! Reading what the view model needs from the cluster. The view (`view.rs`) is computed from
//! the [`Snapshot`] read here; it never reads the cluster itself.
//!
//! Only the promotion itself is required. The rest is read concurrently over the client's one
//! connection, and what cannot be read becomes a line in the view saying why (forbidden, CRD not
//! installed), never a silent gap and never "offline": offline means `describe -f`.

use promotion_shared::model::ClusterPromotion;
use serde_json::Value;

use crate::cluster::kube_client::Kube;
use crate::error::Result;
use crate::view::{profile_names, profile_owner, typed, Owners, Snapshot};

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
    let owners = owners(kube, &[&promotion], profiles.as_deref().unwrap_or_default()).await;
    Ok(Snapshot {
        object,
        profiles: profiles.map_err(|e| e.read_failure()),
        summaries: summaries.map_err(|e| e.read_failure()),
        events: events.map_err(|e| e.read_failure()),
        owners,
    })
}

/// What the stage states need and nothing more (no Events): for `approve` and `wait`.
pub async fn state(kube: &Kube, name: &str) -> Result<Snapshot> {
    let object = kube.get_promotion(name).await?;
    let promotion = typed(&object)?;
    let stage_profiles = profile_names(&promotion);
    let (profiles, summaries) = tokio::join!(
        kube.list_promotion_profiles(),
        kube.list_summaries(&stage_profiles),
    );
    let owners = owners(kube, &[&promotion], profiles.as_deref().unwrap_or_default()).await;
    Ok(Snapshot {
        object,
        profiles: profiles.map_err(|e| e.read_failure()),
        summaries: summaries.map_err(|e| e.read_failure()),
        events: Err(String::new()),
        owners,
    })
}

/// Whether the ClusterPromotions exist that own, under another name, a ClusterProfile generated
/// for a stage of one of `promotions` (`a` + `b-c` and `a-b` + `c` both generate `a-b-c`): a
/// profile whose owner is gone is a leftover to delete, one whose owner exists a collision. Only
/// those owners are read, one GET each, concurrently; one that cannot be read stays unknown.
pub async fn owners(kube: &Kube, promotions: &[&ClusterPromotion], profiles: &[Value]) -> Owners {
    let mut names = std::collections::BTreeSet::new();
    for promotion in promotions {
        let generated = profile_names(promotion);
        for profile in profiles {
            let generated_here = profile
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_some_and(|n| generated.iter().any(|g| g == n));
            if let Some((owner, _)) = profile_owner(profile).filter(|_| generated_here) {
                if owner != promotion.name() {
                    names.insert(owner.to_string());
                }
            }
        }
    }
    let reads = futures::future::join_all(names.iter().map(|n| kube.find_promotion(n))).await;
    let found = names
        .into_iter()
        .zip(reads)
        .filter_map(|(name, read)| {
            let uid = read.ok()?.map(|o| {
                o.pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            });
            Some((name, uid))
        })
        .collect();
    Owners {
        found,
        complete: false,
    }
}
