//! The one follow of the fleet behind every page and event stream: the same watches as
//! `list -w` and `describe -w` ([`FleetFollower`]), started once, whose latest state every
//! page reads and every stream is woken by. The follower gathers a burst of events into one
//! state, so the pages are recomputed a few times a second at most during a rollout, and not at
//! all while nothing changes.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio::sync::watch;

use promotion_shared::model::CLUSTER_PROFILE_NAME_LABEL;

use crate::cluster::watch::{Fleet, FleetFollower, Update};

/// What the pages know of the fleet now.
#[derive(Clone, Default)]
pub struct Live {
    /// The latest state; `None` until the first lists are complete.
    pub fleet: Option<Arc<Fleet>>,
    /// Where each promotion's ClusterSummaries are in `fleet.summaries`
    /// ([`group_by_promotion`]).
    pub summaries_of: Arc<BTreeMap<String, Vec<usize>>>,
    /// Counts the states handed out: a stream that sees a gap re-renders everything, since
    /// `fleet.changes` only says what changed since the state before.
    pub seq: u64,
    /// The connection to the API server is lost (the follower retries): why, and since when.
    /// The data shown is as of the last state.
    pub lost: Option<(String, DateTime<Utc>)>,
    /// The follow ended for good (401, 403, the CRD gone): why. The pages say so.
    pub ended: Option<String>,
}

impl Live {
    /// When the data shown was last known to be current.
    pub fn as_of(&self) -> Option<DateTime<Utc>> {
        self.fleet.as_ref().and_then(|f| f.changes.latest())
    }
}

/// Follow the fleet in the background; the receiver sees each new state.
pub fn follow(mut follower: FleetFollower) -> watch::Receiver<Live> {
    let (tx, rx) = watch::channel(Live::default());
    tokio::spawn(async move {
        loop {
            let update = follower.next().await;
            let mut stop = false;
            tx.send_modify(|live| match update {
                Ok(Update::Changed(fleet)) => {
                    live.summaries_of = Arc::new(group_by_promotion(&fleet));
                    live.fleet = Some(Arc::new(fleet));
                    live.seq += 1;
                    live.lost = None;
                }
                Ok(Update::ConnectionLost(reason)) => {
                    if live.lost.is_none() {
                        live.lost = Some((reason, Utc::now()));
                    }
                }
                Err(e) => {
                    live.ended = Some(e.to_string());
                    stop = true;
                }
            });
            // Every page is gone with the receivers: nobody to follow for.
            if stop || tx.is_closed() {
                return;
            }
        }
    });
    rx
}

/// Where each promotion's ClusterSummaries (those of its stage profiles, by their
/// `cluster-profile-name` label) are in the fleet's list: a page then describes each promotion
/// from its own summaries. Without this every description walks every summary, and the fleet
/// page costs promotions × summaries (3.4 s at 200 × 20,000, `dashboard_fleet`). Positions
/// only: the state's summaries are shared with the follower and are not copied here.
pub fn group_by_promotion(fleet: &Fleet) -> BTreeMap<String, Vec<usize>> {
    let owner: BTreeMap<&str, &str> = fleet
        .stage_profiles
        .iter()
        .flat_map(|(promotion, profiles)| {
            profiles
                .iter()
                .map(move |p| (p.as_str(), promotion.as_str()))
        })
        .collect();
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let Ok(summaries) = fleet.summaries.as_ref() else {
        return groups;
    };
    for (i, s) in summaries.iter().enumerate() {
        let promotion = s
            .pointer("/metadata/labels")
            .and_then(|l| l.get(CLUSTER_PROFILE_NAME_LABEL))
            .and_then(Value::as_str)
            .and_then(|profile| owner.get(profile));
        if let Some(p) = promotion {
            groups.entry(p.to_string()).or_default().push(i);
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summary(name: &str, profile: &str) -> Value {
        json!({"metadata": {"name": name, "labels": {CLUSTER_PROFILE_NAME_LABEL: profile}}})
    }

    #[test]
    fn each_promotions_summaries_are_found() {
        let fleet = Fleet {
            objects: Vec::new(),
            profiles: Ok(Arc::new(Vec::new())),
            summaries: Ok(Arc::new(vec![
                summary("s1", "b-dev"),
                summary("s2", "other"),
                summary("s3", "a-prod"),
                summary("s4", "b-prod"),
                summary("s5", "a-dev"),
            ])),
            owners: Default::default(),
            stage_profiles: BTreeMap::from([
                (
                    "a".to_string(),
                    vec!["a-dev".to_string(), "a-prod".to_string()],
                ),
                (
                    "b".to_string(),
                    vec!["b-dev".to_string(), "b-prod".to_string()],
                ),
            ]),
            changes: Default::default(),
        };
        let groups = group_by_promotion(&fleet);
        assert_eq!(groups["a"], [2, 4]);
        assert_eq!(groups["b"], [0, 3]);
        // The summary of no followed promotion is nobody's.
        assert_eq!(groups.len(), 2);
    }
}
