//! What a page reads: the fleet's latest state from the one follow ([`super::live`]), and for a
//! promotion page what `describe` reads besides (its Events, the controller's Lease, the
//! revisions, the caller's rights, the fleet for the timeline), turned into view models.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::live::Live;
use super::model::{self, Card, PromotionPage, Rights};
use crate::cluster::inventory;
use crate::cluster::kube_client::Kube;
use crate::cluster::watch::{latest_write, Fleet};
use crate::commands::describe;
use crate::view::{self, Description, SnapshotRef};

fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The promotion named `name` in `fleet`.
pub fn find<'a>(fleet: &'a Fleet, name: &str) -> Option<&'a Value> {
    fleet.objects.iter().find(|o| name_of(o) == name)
}

/// Promotion `name`'s own ClusterSummaries ([`super::live::group_by_promotion`]), or why none
/// can be read.
pub fn own_summaries(live: &Live, fleet: &Fleet, name: &str) -> Result<Vec<Value>, String> {
    let all = fleet.summaries.as_ref().map_err(String::clone)?;
    Ok(live
        .summaries_of
        .get(name)
        .map(|at| at.iter().filter_map(|&i| all.get(i).cloned()).collect())
        .unwrap_or_default())
}

/// What the view model needs for promotion `object`, with `summaries` its own.
pub fn snapshot<'a>(
    fleet: &'a Fleet,
    object: &'a Value,
    summaries: &'a Result<Vec<Value>, String>,
) -> SnapshotRef<'a> {
    SnapshotRef {
        summaries: view::shared(summaries),
        ..fleet.snapshot(object)
    }
}

/// The descriptions of `names` (all when `None`), by name, as `list` builds them.
pub fn descriptions(
    live: &Live,
    fleet: &Fleet,
    names: Option<&[String]>,
) -> BTreeMap<String, (Description, Value)> {
    fleet
        .objects
        .iter()
        .filter(|o| names.is_none_or(|n| n.iter().any(|x| x == name_of(o))))
        .filter_map(|o| {
            let own = own_summaries(live, fleet, name_of(o));
            let d = Description::build_shared(snapshot(fleet, o, &own)).ok()?;
            Some((name_of(o).to_string(), (d, o.clone())))
        })
        .collect()
}

/// The cards of `names` (all when `None`), with whether promotion-controller can act (its
/// Lease, read once).
pub async fn cards(kube: &Kube, live: &Live, names: Option<&[String]>) -> Vec<Card> {
    let Some(fleet) = live.fleet.as_ref() else {
        return Vec::new();
    };
    let built = descriptions(live, fleet, names);
    let (mut ds, objects): (Vec<Description>, Vec<Value>) = built.into_values().unzip();
    describe::judge_the_reconciler(kube, &mut ds).await;
    ds.iter()
        .zip(&objects)
        .map(|(d, o)| Card::of(d, o, latest_write(o).map(|t| t.to_rfc3339())))
        .collect()
}

/// Asked once per page or stream: rarely changes while a page is open.
pub struct Asked {
    pub rights: Option<Rights>,
    /// The fleet the timeline and the stages not started are computed over.
    pub clusters: Option<Result<Vec<promotion_shared::fleet::Cluster>, String>>,
}

impl Asked {
    pub fn new() -> Asked {
        Asked {
            rights: None,
            clusters: None,
        }
    }
}

/// Everything the promotion page shows for `name`, or `None` when it does not exist.
pub async fn promotion_page(
    kube: &Kube,
    live: &Live,
    name: &str,
    read_only: bool,
    asked: &mut Asked,
) -> Option<PromotionPage> {
    let fleet: Arc<Fleet> = live.fleet.clone()?;
    let object = find(&fleet, name)?.clone();
    let uid = object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .map(String::from);
    let events = kube
        .list_events(name, uid.as_deref())
        .await
        .map_err(|e| e.read_failure());
    let own = own_summaries(live, &fleet, name);
    let snap = SnapshotRef {
        events: view::shared(&events),
        ..snapshot(&fleet, &object, &own)
    };
    let d = match Description::build_shared(snap) {
        Ok(d) => d,
        Err(e) => {
            // Not a promotion the model can read: the page says why, as describe would fail.
            let mut d = Description::build_shared(snapshot(&fleet, &object, &own)).ok()?;
            d.warnings.push(e.to_string());
            d
        }
    };
    let profiles = fleet
        .profiles
        .as_ref()
        .map(|p| p.to_vec())
        .unwrap_or_default();
    let mut one = [d];
    describe::add_cluster_facts(
        kube,
        &mut one,
        std::slice::from_ref(&object),
        std::slice::from_ref(&profiles),
        false,
    )
    .await;
    let [mut d] = one;
    // What the caller may do, asked once per page (RBAC and the published rules change far more
    // rarely than the pipeline), judged as `describe` judges it.
    if asked.rights.is_none() {
        asked.rights = Some(Rights {
            rbac: describe::may_patch(kube, name).await,
            caller: describe::caller_facts(kube).await,
        });
    }
    if let Some(rights) = asked
        .rights
        .as_ref()
        .filter(|_| describe::judges_the_caller(&d))
    {
        describe::judge(&mut d, &object, &rights.rbac, &rights.caller);
    }
    if asked.clusters.is_none() {
        asked.clusters = Some(
            inventory::list_fleet(kube, inventory::DEFAULT_PAGE_SIZE)
                .await
                .map(|f| f.clusters().to_vec())
                .map_err(|e| e.read_failure()),
        );
    }
    // What the stages not started will reach, over the fleet read once for the timeline too.
    if let (Some(Ok(clusters)), Ok(promotion)) = (&asked.clusters, view::typed(&object)) {
        if d.has_stage_not_started() {
            d.set_reach(&promotion, clusters);
        }
    }
    let history = history(kube, &object).await;
    let timeline = match asked.clusters.as_ref() {
        Some(Ok(clusters)) => timeline(&object, name, clusters),
        Some(Err(why)) => Err(format!("the fleet is not readable: {why}")),
        None => Err("the fleet was not read".into()),
    };
    let actions = match (&asked.rights, read_only) {
        (Some(rights), false) => model::actions(&d, rights),
        _ => Vec::new(),
    };
    let card = Card::of(&d, &object, latest_write(&object).map(|t| t.to_rfc3339()));
    Some(PromotionPage {
        card,
        description: d,
        history,
        timeline,
        actions,
        read_only,
    })
}

async fn history(
    kube: &Kube,
    object: &Value,
) -> Result<Vec<crate::view::history::HistoryRow>, String> {
    let revisions = crate::commands::history::revisions_of(
        kube,
        promotion_shared::history::DEFAULT_NAMESPACE,
        object,
    )
    .await
    .map_err(|e| e.read_failure())?;
    Ok(crate::view::history::rows(&revisions))
}

/// `plan --timeline` from now, in UTC, as text.
fn timeline(
    object: &Value,
    name: &str,
    clusters: &[promotion_shared::fleet::Cluster],
) -> Result<String, String> {
    use crate::render::timeline;
    let stored = view::as_stored(object);
    let (paused, aborted) = timeline::holds(&stored);
    let zone = chrono_tz::UTC;
    let computed = timeline::compute(&stored, clusters, chrono::Utc::now(), &[], zone)
        .map_err(|e| e.to_string())?;
    Ok(timeline::render(
        name,
        &computed,
        zone,
        &crate::render::Style { color: false },
        paused.as_ref(),
        aborted.as_ref(),
    ))
}
