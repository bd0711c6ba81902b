//! The one follow of the fleet behind every page and event stream: the same watches as
//! `list -w` and `describe -w` ([`FleetFollower`]), started once, whose latest state every
//! page reads and every stream is woken by. The follower gathers a burst of events into one
//! state, so the pages are recomputed a few times a second at most during a rollout, and not at
//! all while nothing changes.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio::sync::watch;

use promotion_shared::model::CLUSTER_PROFILE_NAME_LABEL;

use crate::cluster::watch::{Fleet, FleetFollower, Update};

/// What the pages know of the fleet now.
#[derive(Clone, Default)]
pub struct Live {
    /// The latest state; `None` until the first lists are complete. Its ClusterSummaries are
    /// grouped by promotion ([`group_by_promotion`]).
    pub fleet: Option<Arc<Fleet>>,
    /// Where each promotion's ClusterSummaries are in `fleet.summaries`.
    pub summaries_of: Arc<BTreeMap<String, Range<usize>>>,
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
                Ok(Update::Changed(mut fleet)) => {
                    live.summaries_of = Arc::new(group_by_promotion(&mut fleet));
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

/// Sort the fleet's ClusterSummaries so that each promotion's (those of its stage profiles, by
/// their `cluster-profile-name` label) are together, and say where: a page then describes each
/// promotion from its own summaries. Without this every description walks every summary, and
/// the fleet page costs promotions × summaries (3.4 s at 200 × 20,000, `dashboard_fleet`).
/// The state's copy is sorted in place: nothing is copied while it is not shared.
pub fn group_by_promotion(fleet: &mut Fleet) -> BTreeMap<String, Range<usize>> {
    let owner: BTreeMap<&str, &str> = fleet
        .stage_profiles
        .iter()
        .flat_map(|(promotion, profiles)| {
            profiles
                .iter()
                .map(move |p| (p.as_str(), promotion.as_str()))
        })
        .collect();
    let Ok(summaries) = fleet.summaries.as_mut() else {
        return BTreeMap::new();
    };
    let key = |s: &Value| -> Option<String> {
        let profile = s
            .pointer("/metadata/labels")
            .and_then(|l| l.get(CLUSTER_PROFILE_NAME_LABEL))
            .and_then(Value::as_str)?;
        owner.get(profile).map(|p| p.to_string())
    };
    let list = Arc::make_mut(summaries);
    // Summaries of no followed promotion last (`None` sorts first, so the key is flipped).
    list.sort_by_cached_key(|s| match key(s) {
        Some(p) => (false, p),
        None => (true, String::new()),
    });
    let mut ranges: BTreeMap<String, Range<usize>> = BTreeMap::new();
    for (i, s) in list.iter().enumerate() {
        let Some(p) = key(s) else { break };
        ranges.entry(p).or_insert(i..i).end = i + 1;
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summary(name: &str, profile: &str) -> Value {
        json!({"metadata": {"name": name, "labels": {CLUSTER_PROFILE_NAME_LABEL: profile}}})
    }

    #[test]
    fn each_promotions_summaries_are_together_and_found() {
        let mut fleet = Fleet {
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
        let ranges = group_by_promotion(&mut fleet);
        let list = fleet.summaries.as_ref().unwrap();
        let names = |p: &str| -> Vec<&str> {
            let mut n: Vec<&str> = list[ranges[p].clone()]
                .iter()
                .map(|s| s["metadata"]["name"].as_str().unwrap())
                .collect();
            n.sort();
            n
        };
        assert_eq!(names("a"), ["s3", "s5"]);
        assert_eq!(names("b"), ["s1", "s4"]);
        // The summary of no followed promotion is kept, after them.
        assert_eq!(list.len(), 5);
        assert_eq!(list[4]["metadata"]["name"], "s2");
    }
}
