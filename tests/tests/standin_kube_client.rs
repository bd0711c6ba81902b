//! The stand-in API server, driven by the kube-rs client the plugin uses: discovery, paginated and
//! selected lists, typed errors, watch with bookmarks, dropped watches and expired
//! resourceVersions.

use std::time::Duration;

use futures_util::StreamExt;
use kube::api::{
    Api, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::{Discovery, Scope};
use kube::runtime::watcher;
use kube::{Client, Config};
use promotion_e2e::apiserver::{DenyRule, StandIn, StandInHandle, StandInOptions};
use promotion_e2e::fixtures;
use promotion_shared::model::ClusterPromotion;
use serde_json::json;

/// Bound for waiting on a stream; a test that hits it fails (no timing is asserted).
const PATIENCE: Duration = Duration::from_secs(30);

fn server(world: fixtures::World) -> StandInHandle {
    StandIn::start(
        StandInOptions::default()
            .with_objects(world.objects)
            .with_bookmark_interval(Duration::from_millis(200)),
    )
    .expect("stand-in starts")
}

async fn client(server: &StandInHandle, impersonate: Option<&str>) -> Client {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = server.write_kubeconfig(dir.path()).expect("kubeconfig");
    let kubeconfig = Kubeconfig::read_from(&path).expect("kubeconfig parses");
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config");
    if let Some(user) = impersonate {
        config.auth_info.impersonate = Some(user.to_string());
        config.auth_info.impersonate_groups = Some(vec!["approvers".into()]);
    }
    Client::try_from(config).expect("client")
}

fn example(file: &str) -> fixtures::World {
    fixtures::example_world(file).expect("example world")
}

async fn label(api: &Api<ClusterPromotion>, name: &str, value: &str) -> ClusterPromotion {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"step": value}}})),
    )
    .await
    .expect("patch")
}

#[tokio::test]
async fn watch_streams_changes_and_bookmarks() {
    let server = server(example("kyverno-manual-gate.yaml"));
    let api: Api<ClusterPromotion> = Api::all(client(&server, None).await);
    let list = api.list(&ListParams::default()).await.expect("list");
    let rv = list
        .metadata
        .resource_version
        .expect("list resourceVersion");

    let mut stream = api
        .watch(&WatchParams::default().timeout(60), &rv)
        .await
        .expect("watch")
        .boxed();
    let patched = label(&api, "kyverno-rollout-man", "one").await;
    let patched_rv: u64 = patched
        .metadata
        .resource_version
        .as_deref()
        .and_then(|r| r.parse().ok())
        .expect("numeric rv");

    let (mut modified, mut bookmark_rv) = (false, 0u64);
    let waited = tokio::time::timeout(PATIENCE, async {
        while let Some(ev) = stream.next().await {
            match ev.expect("watch event") {
                WatchEvent::Modified(p) => {
                    assert_eq!(
                        p.metadata
                            .labels
                            .unwrap_or_default()
                            .get("step")
                            .map(String::as_str),
                        Some("one")
                    );
                    modified = true;
                }
                WatchEvent::Bookmark(b) if modified => {
                    bookmark_rv = b.metadata.resource_version.parse().expect("bookmark rv");
                    break;
                }
                WatchEvent::Bookmark(_) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
    })
    .await;
    assert!(waited.is_ok(), "no MODIFIED + BOOKMARK within {PATIENCE:?}");
    assert!(bookmark_rv >= patched_rv);
}

#[tokio::test]
async fn watcher_rewatches_after_the_server_drops_all_watches() {
    let server = server(example("kyverno-manual-gate.yaml"));
    let api: Api<ClusterPromotion> = Api::all(client(&server, None).await);
    let mut events = watcher(api.clone(), watcher::Config::default()).boxed();

    let init = tokio::time::timeout(PATIENCE, async {
        while let Some(ev) = events.next().await {
            if matches!(ev.expect("watcher event"), watcher::Event::InitDone) {
                return;
            }
        }
    })
    .await;
    assert!(init.is_ok(), "initial list never finished");

    // Round 0 only proves the first watch is established (the watcher starts it lazily).
    for round in 0..4 {
        if round > 0 {
            server.drop_watches();
        }
        let value = format!("round-{round}");
        label(&api, "kyverno-rollout-man", &value).await;
        let seen = tokio::time::timeout(PATIENCE, async {
            while let Some(ev) = events.next().await {
                if let Ok(watcher::Event::Apply(p)) = ev {
                    if p.metadata.labels.unwrap_or_default().get("step") == Some(&value) {
                        return;
                    }
                }
            }
        })
        .await;
        assert!(
            seen.is_ok(),
            "change after dropped watch {round} never arrived"
        );
    }
    let watches = server
        .requests()
        .into_iter()
        .filter(|r| r.query.contains("watch=true"))
        .count();
    assert!(
        watches >= 4,
        "expected a re-watch per drop, saw {watches} watch requests"
    );
}

#[tokio::test]
async fn expired_resource_version_is_410_and_the_watcher_relists() {
    let server = server(example("kyverno-manual-gate.yaml"));
    let api: Api<ClusterPromotion> = Api::all(client(&server, None).await);
    let old = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv");
    label(&api, "kyverno-rollout-man", "after").await;
    server.compact();

    let mut stream = api
        .watch(&WatchParams::default(), &old)
        .await
        .expect("watch request accepted")
        .boxed();
    match stream.next().await {
        Some(Ok(WatchEvent::Error(status))) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
            assert!(
                status
                    .message
                    .starts_with(&format!("too old resource version: {old} (")),
                "{status:?}"
            );
        }
        other => panic!("expected an ERROR 410 event, got {other:?}"),
    }

    // The runtime watcher recovers from a 410 by listing again: keep it from re-watching while
    // the history it would resume from is compacted away.
    let mut events = watcher(api.clone(), watcher::Config::default()).boxed();
    let first = tokio::time::timeout(PATIENCE, async {
        while let Some(ev) = events.next().await {
            if let Ok(watcher::Event::InitDone) = ev {
                return;
            }
        }
    })
    .await;
    assert!(first.is_ok(), "initial list never finished");
    server.deny(DenyRule {
        verb: Some("watch".into()),
        ..DenyRule::default()
    });
    server.drop_watches();
    let denied = tokio::time::timeout(PATIENCE, async {
        loop {
            // Drive the watcher so it retries (and gets 403s).
            let _ = tokio::time::timeout(Duration::from_millis(100), events.next()).await;
            if server.requests().iter().any(|r| r.status == 403) {
                return;
            }
        }
    })
    .await;
    assert!(denied.is_ok(), "the watcher never retried its watch");
    label(&api, "kyverno-rollout-man", "again").await;
    server.compact();
    server.clear_denials();
    let relisted = tokio::time::timeout(PATIENCE, async {
        while let Some(ev) = events.next().await {
            if let Ok(watcher::Event::Init) = ev {
                return;
            }
        }
    })
    .await;
    assert!(relisted.is_ok(), "watcher did not relist after 410");
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.query.contains("watch=true") && r.status == 200),
        "a watch was served after the denial was lifted"
    );
}

#[tokio::test]
async fn discovery_pagination_and_set_based_selectors() {
    let server = server(fixtures::generate(4, 10));
    let client = client(&server, None).await;

    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .expect("discovery");
    let (promotions, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.kind == "ClusterPromotion")
        .expect("ClusterPromotion discovered");
    assert_eq!(promotions.plural, "clusterpromotions");
    assert_eq!(caps.scope, Scope::Cluster);
    assert!(
        caps.subresources.iter().any(|(r, _)| r.plural == "status"),
        "{caps:?}"
    );
    let (summaries, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.kind == "ClusterSummary")
        .expect("ClusterSummary discovered");
    assert_eq!(caps.scope, Scope::Namespaced);

    let api: Api<DynamicObject> = Api::all_with(client.clone(), &summaries);
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(3);
    let first = api.list(&params).await.expect("page");
    assert_eq!(first.items.len(), 3);
    assert_eq!(first.metadata.remaining_item_count, Some(7));
    let mut page = first;
    loop {
        names.extend(page.items.iter().filter_map(|o| o.metadata.name.clone()));
        match page.metadata.continue_.clone().filter(|c| !c.is_empty()) {
            Some(token) => {
                params = params.continue_token(&token);
                page = api.list(&params).await.expect("next page");
            }
            None => break,
        }
    }
    assert_eq!(names.len(), 10);
    let mut sorted = names.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), 10, "pages overlap: {names:?}");

    let selected = api
        .list(&ListParams::default().labels(
            "projectsveltos.io/cluster-profile-name in (bench-rollout-stage-00,bench-rollout-stage-01),projectsveltos.io/cluster-type=Sveltos",
        ))
        .await
        .expect("selected list");
    assert_eq!(selected.items.len(), 6);
    let none = api
        .list(&ListParams::default().labels("!projectsveltos.io/cluster-profile-name"))
        .await
        .expect("list");
    assert!(none.items.is_empty());
}

#[tokio::test]
async fn errors_are_typed_statuses() {
    let server = server(example("kyverno-manual-gate.yaml"));
    let api: Api<ClusterPromotion> = Api::all(client(&server, None).await);

    let missing = api.get("nope").await.expect_err("missing");
    match missing {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 404);
            assert_eq!(s.reason, "NotFound");
            assert_eq!(
                s.message,
                r#"clusterpromotions.config.projectsveltos.io "nope" not found"#
            );
        }
        other => panic!("{other:?}"),
    }

    let mut stale = api.get("kyverno-rollout-man").await.expect("get");
    label(&api, "kyverno-rollout-man", "newer").await;
    stale.spec.preserve_cluster_profiles_on_delete = Some(true);
    match api
        .replace("kyverno-rollout-man", &PostParams::default(), &stale)
        .await
    {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 409);
            assert_eq!(s.reason, "Conflict");
        }
        other => panic!("expected a conflict, got {other:?}"),
    }

    let bare = StandIn::start(StandInOptions::default().without_promotion_crd()).expect("starts");
    let api: Api<ClusterPromotion> = Api::all(client(&bare, None).await);
    match api.get("kyverno-rollout-man").await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 404);
            assert_eq!(s.message, "404 page not found");
        }
        other => panic!("expected 404, got {other:?}"),
    }
}

#[tokio::test]
async fn impersonation_headers_change_the_user() {
    let server = server(example("kyverno-manual-gate.yaml"));
    let api: Api<ClusterPromotion> = Api::all(client(&server, Some("bob")).await);
    api.get("kyverno-rollout-man").await.expect("get as bob");
    let last = server.requests().pop().expect("recorded");
    assert_eq!(last.user, "bob");
    assert_eq!(last.groups, ["approvers", "system:authenticated"]);
}
