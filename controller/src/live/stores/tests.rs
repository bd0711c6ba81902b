use super::*;
use serde_json::json;

fn stores() -> (Arc<Stores>, Feeds) {
    Stores::new(&promotion_shared::api_resources::PROFILE.api_resource())
}

fn summary(ns: &str, name: &str, profile: &str) -> KeptSummary {
    serde_json::from_value(
        json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterSummary",
               "metadata": {"namespace": ns, "name": name, "uid": "u", "resourceVersion": "7",
                            "labels": {CLUSTER_PROFILE_NAME_LABEL: profile, "other": "x"}},
               "spec": {"clusterNamespace": ns, "clusterName": "c", "clusterType": "Sveltos",
                        "clusterProfileSpec": {"helmCharts": [{"values": "big"}]}},
               "status": {"featureSummaries": [{"featureID": "Helm", "status": "Provisioned",
                                                "hash": "h"}]}}),
    )
    .unwrap()
}

fn profile(name: &str, promotion: &str) -> DynamicObject {
    let mut o: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
               "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "3",
                            "labels": {PROMOTION_NAME_LABEL: promotion}},
               "spec": {}}),
    )
    .unwrap();
    project_profile(&mut o);
    o
}

fn cluster(name: &str, env: &str, ready: bool) -> KeptSveltosCluster {
    serde_json::from_value(
        json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
               "metadata": {"namespace": "ns", "name": name, "labels": {"env": env}},
               "spec": {"kubeconfigName": "k"},
               "status": {"ready": ready, "lastReconciledTokenRequestAt": "t"}}),
    )
    .unwrap()
}

/// Feed `events` through the feed as one watch task does, handing each change to `on`.
fn feed<K>(feed: &mut Feed<K>, events: Vec<Event<K>>, mut on: impl FnMut(Change<K>))
where
    K: Resource + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash,
{
    for e in events {
        feed.apply(e, &mut on);
    }
}

/// A whole list, as a watch delivers it (`Init`, each object, `InitDone`).
fn listed<K>(objects: Vec<K>) -> Vec<Event<K>> {
    std::iter::once(Event::Init)
        .chain(objects.into_iter().map(Event::InitApply))
        .chain(std::iter::once(Event::InitDone))
        .collect()
}

#[test]
fn summaries_are_indexed_by_profile_and_a_relist_drops_what_is_gone() {
    let (stores, mut feeds) = stores();
    let mut affected = Vec::new();
    feed(
        &mut feeds.profiles,
        listed(vec![profile("p-dev", "p")]),
        |_| {},
    );
    feed(
        &mut feeds.summaries,
        listed(vec![
            summary("a", "s1", "p-dev"),
            summary("b", "s2", "p-dev"),
        ]),
        |c| affected.extend(stores.summary_changed(&c)),
    );
    assert_eq!(stores.summaries_of(&["p-dev".into()]).len(), 2);
    assert_eq!(stores.promotion_of_profile("p-dev").as_deref(), Some("p"));
    // A relist that no longer holds s2.
    feed(
        &mut feeds.summaries,
        listed(vec![summary("a", "s1", "p-dev")]),
        |c| affected.extend(stores.summary_changed(&c)),
    );
    let left = stores.summaries_of(&["p-dev".into()]);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["metadata"]["name"], "s1");
    // A summary moved to another profile leaves the first one's index, and names both.
    let mut moved = Vec::new();
    feed(
        &mut feeds.summaries,
        vec![Event::Apply(summary("a", "s1", "p-prod"))],
        |c| moved.extend(stores.summary_changed(&c)),
    );
    assert_eq!(moved, ["p-dev", "p-prod"]);
    assert!(stores.summaries_of(&["p-dev".into()]).is_empty());
    assert_eq!(stores.summaries_of(&["p-prod".into()]).len(), 1);
    feed(
        &mut feeds.summaries,
        vec![Event::Delete(summary("a", "s1", "p-prod"))],
        |c| moved.extend(stores.summary_changed(&c)),
    );
    assert!(stores.summaries_of(&["p-prod".into()]).is_empty());
}

#[test]
fn the_fleet_is_rebuilt_only_after_a_change_that_matters() {
    let (stores, mut feeds) = stores();
    let mut changes = Vec::new();
    feed(
        &mut feeds.sveltos_clusters,
        listed(vec![cluster("c1", "dev", true)]),
        |c| changes.push(stores.cluster_changed(&c)),
    );
    let first = stores.fleet();
    assert_eq!(first.len(), 1);
    assert!(first[0].ready && first[0].labels["env"] == "dev");
    // A status heartbeat the fleet does not read: no rebuild.
    feed(
        &mut feeds.sveltos_clusters,
        vec![Event::Apply(cluster("c1", "dev", true))],
        |c| changes.push(stores.cluster_changed(&c)),
    );
    assert!(Arc::ptr_eq(&first, &stores.fleet()));
    // Readiness and labels are read: rebuilt.
    feed(
        &mut feeds.sveltos_clusters,
        vec![Event::Apply(cluster("c1", "prod", false))],
        |c| changes.push(stores.cluster_changed(&c)),
    );
    assert_eq!(changes, [true, false, true]);
    let second = stores.fleet();
    assert!(!second[0].ready && second[0].labels["env"] == "prod");
    feed(
        &mut feeds.sveltos_clusters,
        vec![Event::Delete(cluster("c1", "prod", false))],
        |c| changes.push(stores.cluster_changed(&c)),
    );
    assert!(stores.fleet().is_empty());
}

#[test]
fn profiles_name_their_promotion_and_keep_their_uid() {
    let (stores, mut feeds) = stores();
    let mut promotions = Vec::new();
    feed(
        &mut feeds.profiles,
        vec![
            Event::Init,
            Event::InitDone,
            Event::Apply(profile("x-dev", "x")),
        ],
        |c| promotions.extend(Stores::profile_changed(&c)),
    );
    assert_eq!(promotions, ["x"]);
    assert_eq!(
        stores.profile_version("x-dev"),
        Some(("uid-x-dev".to_string(), "3".to_string()))
    );
    assert_eq!(stores.profiles_of("x").len(), 1);
    assert!(stores.profiles_of("y").is_empty());
}

/// Every reconcile that starts before the lists are done waits for them; each must be woken
/// (kube-runtime's `Store::wait_until_ready` wakes only the last of many waiters).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_waiter_is_woken_once_the_required_watches_have_listed() {
    let (stores, mut feeds) = stores();
    let waiters: Vec<_> = (0..50)
        .map(|_| {
            let stores = stores.clone();
            tokio::spawn(async move { stores.ready().await })
        })
        .collect();
    tokio::task::yield_now().await;
    assert!(!stores.is_ready());
    feed(&mut feeds.profiles, listed(vec![]), |_| {});
    feed(&mut feeds.summaries, listed(vec![]), |_| {});
    feed(&mut feeds.sveltos_clusters, listed(vec![]), |_| {});
    // Until the CAPI CRD is known to be absent, or its Clusters are listed, the fleet may be
    // missing clusters.
    assert_eq!(stores.unlisted(), [Source::CapiClusters]);
    stores.capi_absent();
    assert!(stores.is_ready());
    for w in waiters {
        tokio::time::timeout(std::time::Duration::from_secs(10), w)
            .await
            .expect("every waiter wakes")
            .expect("no panic");
    }
}

/// A reconcile woken by the stores' readiness reads the ClusterSummaries' index: the list
/// counts as done only once its change (which builds the index) has been handled. Published
/// before, a reconcile woken at once read no summaries, and waited for the resync.
#[test]
fn the_stores_are_ready_only_once_the_listed_summaries_are_indexed() {
    let (stores, mut feeds) = stores();
    feed(&mut feeds.profiles, listed(vec![]), |_| {});
    feed(&mut feeds.sveltos_clusters, listed(vec![]), |_| {});
    stores.capi_absent();
    let mut seen_while_indexing = None;
    feed(
        &mut feeds.summaries,
        listed(vec![summary("a", "s1", "p-dev")]),
        |c| {
            if let Change::Listed = c {
                seen_while_indexing = Some(stores.is_ready());
            }
            stores.summary_changed(&c);
        },
    );
    assert_eq!(seen_while_indexing, Some(false));
    assert!(stores.is_ready());
    assert_eq!(stores.summaries_of(&["p-dev".to_string()]).len(), 1);
}

/// A CAPI Cluster CRD installed later makes reconciles wait again until its Clusters are
/// listed; one there from the start, until its first list.
#[test]
fn a_fleet_with_capi_clusters_not_yet_listed_is_not_ready() {
    let (stores, mut feeds) = stores();
    feed(&mut feeds.profiles, listed(vec![]), |_| {});
    feed(&mut feeds.summaries, listed(vec![]), |_| {});
    feed(&mut feeds.sveltos_clusters, listed(vec![]), |_| {});
    stores.capi_absent();
    assert!(stores.is_ready());
    stores.capi_installed();
    assert_eq!(stores.unlisted(), [Source::CapiClusters]);
    feed(&mut feeds.capi_clusters, listed(vec![]), |_| {});
    assert!(stores.is_ready());
}

/// The decision reads a profile's matched clusters and the clusters Sveltos failed to create a
/// ClusterSummary for; nothing else of its status is kept.
#[test]
fn a_profile_keeps_its_matched_and_failed_clusters() {
    let mut o: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
        "metadata": {"name": "p-dev", "managedFields": [{"manager": "m"}],
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}",
                                     "keep": "me"}},
        "spec": {},
        "status": {"matchingClusters": [{"name": "c1"}], "failedClusters": [{"failureMessage": "x"}],
                   "updatingClusters": {"hash": "h"}},
    }))
    .unwrap();
    project_profile(&mut o);
    assert_eq!(
        o.data["status"],
        json!({"matchingClusters": [{"name": "c1"}], "failedClusters": [{"failureMessage": "x"}]})
    );
    assert!(o.metadata.managed_fields.is_none());
    assert_eq!(
        o.metadata.annotations.unwrap().keys().collect::<Vec<_>>(),
        ["keep"]
    );
}
