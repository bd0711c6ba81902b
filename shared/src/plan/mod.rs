//! A rollout's plan before it runs: which clusters each stage of a ClusterPromotion will reach,
//! which of them are paused or not ready, and the hazards (a stage that matches nothing, a
//! likely label typo, clusters in several stages), computed from the promotion and a cluster
//! [fleet](crate::fleet) with the matching Sveltos does (`crate::selector`).
//!
//! Cost: one selector evaluation per stage and cluster, plus hashing each cluster's stage set;
//! "did you mean" runs only for stages that match nothing.

pub mod hazards;
pub mod suggest;

use std::collections::BTreeMap;

use serde::Serialize;

pub use hazards::{Hazard, HazardCode};
pub use suggest::Suggestion;

use crate::fleet::{Cluster, ClusterType};
use crate::model::ClusterPromotion;
use crate::selector::{Selector, SelectorError};

/// The plan of a promotion against a fleet (`-o json|yaml` of `kubectl promotion plan`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub stages: Vec<StagePlan>,
    /// Clusters of the inventory that no stage reaches.
    pub unreached: usize,
    pub hazards: Vec<Hazard>,
    /// Clusters in the inventory.
    pub inventory: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StagePlan {
    pub name: String,
    /// The stage's `clusterSelector` in `kubectl -l` syntax (empty when there is none).
    pub selector: String,
    /// Why the selector matches no cluster whatever the fleet (empty or invalid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector_error: Option<String>,
    pub count: usize,
    pub paused: usize,
    pub not_ready: usize,
    pub clusters: Vec<PlannedCluster>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedCluster {
    #[serde(rename = "type")]
    pub cluster_type: ClusterType,
    pub namespace: String,
    pub name: String,
    pub paused: bool,
    pub ready: bool,
    /// The cluster's labels the selector looked at.
    pub matched_labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// Earlier stages that already reach this cluster (it receives the change at the first).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reached_earlier_by: Vec<String>,
}

/// Per stage, how many clusters it will reach: what `describe` shows for a stage not started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StageReach {
    pub name: String,
    pub clusters: usize,
    pub paused: usize,
    pub not_ready: usize,
}

/// Which stages match which clusters; clusters in `(namespace, name, type)` order.
struct Matching {
    selectors: Vec<Result<Selector, SelectorError>>,
    order: Vec<usize>,
    members: Vec<Vec<usize>>,
    stages_of: Vec<Vec<usize>>,
}

fn matching(promotion: &ClusterPromotion, clusters: &[Cluster]) -> Matching {
    let selectors: Vec<Result<Selector, SelectorError>> = promotion
        .spec
        .stages
        .iter()
        .map(|s| Selector::compile(s.cluster_selector.as_ref()))
        .collect();
    let mut order: Vec<usize> = (0..clusters.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&clusters[a], &clusters[b]);
        (&a.namespace, &a.name, a.cluster_type).cmp(&(&b.namespace, &b.name, b.cluster_type))
    });
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); selectors.len()];
    let mut stages_of: Vec<Vec<usize>> = vec![Vec::new(); clusters.len()];
    for (s, selector) in selectors.iter().enumerate() {
        let Ok(selector) = selector else { continue };
        for &c in &order {
            if selector.matches(&clusters[c].labels) {
                members[s].push(c);
                stages_of[c].push(s);
            }
        }
    }
    Matching {
        selectors,
        order,
        members,
        stages_of,
    }
}

/// The plan of `promotion` against `clusters`.
pub fn plan(promotion: &ClusterPromotion, clusters: &[Cluster]) -> Plan {
    let m = matching(promotion, clusters);
    let names: Vec<&str> = promotion
        .spec
        .stages
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    let stages = promotion
        .spec
        .stages
        .iter()
        .enumerate()
        .map(|(s, stage)| {
            let selector = &m.selectors[s];
            let planned: Vec<PlannedCluster> = m.members[s]
                .iter()
                .map(|&c| {
                    let cluster = &clusters[c];
                    PlannedCluster {
                        cluster_type: cluster.cluster_type,
                        namespace: cluster.namespace.clone(),
                        name: cluster.name.clone(),
                        paused: cluster.paused,
                        ready: cluster.ready,
                        matched_labels: selector
                            .as_ref()
                            .map(|sel| sel.matched_labels(&cluster.labels))
                            .unwrap_or_default(),
                        shard: cluster.shard.clone(),
                        reached_earlier_by: m.stages_of[c]
                            .iter()
                            .take_while(|&&other| other < s)
                            .map(|&other| names[other].to_string())
                            .collect(),
                    }
                })
                .collect();
            StagePlan {
                name: stage.name.clone(),
                selector: stage
                    .cluster_selector
                    .as_ref()
                    .map(crate::selector::to_string)
                    .unwrap_or_default(),
                selector_error: selector.as_ref().err().map(ToString::to_string),
                count: planned.len(),
                paused: planned.iter().filter(|c| c.paused).count(),
                not_ready: planned.iter().filter(|c| !c.ready).count(),
                clusters: planned,
            }
        })
        .collect();
    let hazards = hazards::find(&hazards::Facts {
        promotion,
        clusters,
        selectors: &m.selectors,
        members: &m.members,
        stages_of: &m.stages_of,
        order: &m.order,
    });
    Plan {
        stages,
        unreached: m.stages_of.iter().filter(|s| s.is_empty()).count(),
        hazards,
        inventory: clusters.len(),
    }
}

/// Per stage, the number of clusters it will reach (and how many of them are paused or not
/// ready), from the same matching as [`plan`].
pub fn reach(promotion: &ClusterPromotion, clusters: &[Cluster]) -> Vec<StageReach> {
    let m = matching(promotion, clusters);
    promotion
        .spec
        .stages
        .iter()
        .zip(&m.members)
        .map(|(stage, members)| StageReach {
            name: stage.name.clone(),
            clusters: members.len(),
            paused: members.iter().filter(|&&c| clusters[c].paused).count(),
            not_ready: members.iter().filter(|&&c| !clusters[c].ready).count(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
