//! `kubectl promotion dashboard` in a real browser (headless Chromium through WebDriver,
//! [`promotion_e2e::browser`]), on the stand-in and on the real kube-apiserver, with
//! promotion-controller running and the addon-controller double deploying when the scenario
//! says: the fleet page follows a rollout live (no reload), an approval given from the promotion
//! page is used by the controller, a refused action shows its reason, and a cross-site POST from
//! another page is rejected.
//!
//! With `PROMOTION_E2E_SCREENSHOTS=DIR`, the real-API-server run of the first scenario also
//! saves the fleet (beside every example's promotion) and the promotion page as PNG there
//! (`scripts/dashboard-screenshots.sh`).
//!
//! Needs Chromium and chromedriver (`.ci/run` installs Debian's) and, for the real API server,
//! `KUBEBUILDER_ASSETS`; without them, and without `CI=true`, the scenarios are ignored.

use std::path::PathBuf;
use std::time::Duration;

use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::{json, Value};

use promotion_e2e::addon_double::AddonController;
use promotion_e2e::backend::{BackendKind, Cluster, SESSION_LABEL};
use promotion_e2e::bins;
use promotion_e2e::browser::{Browser, BrowserBinaries};
use promotion_e2e::controller_process::{eventually, ControllerProcess};
use promotion_e2e::dashboard_client::DashboardProcess;
use promotion_e2e::envtest::objects::{CLUSTER_PROFILE, CLUSTER_PROMOTION, SVELTOS_CLUSTER};
use promotion_e2e::envtest::{self, Gate, User};

const WAIT: Duration = Duration::from_secs(60);

type Scenario = fn(&Cluster, &BrowserBinaries) -> Result<(), String>;

const SCENARIOS: &[(&str, Scenario)] = &[
    (
        "the_fleet_page_follows_a_rollout_live_and_an_approval_from_the_page_is_used",
        follow_and_approve,
    ),
    (
        "a_refused_action_shows_its_reason_and_a_cross_site_post_is_rejected",
        refusals,
    ),
];

fn main() {
    let args = Arguments::from_args();
    let browser = Browser::find();
    if let Err(skip) = &browser {
        if !skip.must_fail() {
            eprintln!("{}", skip.hint());
        }
    }
    let envtest_gate = envtest::gate();
    if let Gate::Skip(reason) = &envtest_gate {
        eprintln!("dashboard scenarios on the real API server ignored: {reason}");
    }
    let mut trials = Vec::new();
    for kind in BackendKind::ALL {
        for &(name, scenario) in SCENARIOS {
            let ignored = match (&browser, kind) {
                (Err(skip), _) => !skip.must_fail(),
                (Ok(_), BackendKind::Envtest) => matches!(envtest_gate, Gate::Skip(_)),
                (Ok(_), BackendKind::StandIn) => false,
            };
            let browser = browser.clone();
            trials.push(
                Trial::test(format!("{}::{name}", kind.name()), move || {
                    let binaries = browser.map_err(|skip| Failed::from(skip.to_string()))?;
                    let cluster = Cluster::new(kind).map_err(|e| Failed::from(e.to_string()))?;
                    scenario(&cluster, &binaries).map_err(Failed::from)
                })
                .with_ignored_flag(ignored),
            );
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

fn e<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |err| format!("{what}: {err}")
}

fn controller(cluster: &Cluster) -> Result<ControllerProcess, String> {
    let selector = format!("{SESSION_LABEL}={}", cluster.session());
    ControllerProcess::start(
        &cluster.kubeconfig(User::Admin),
        &["--selector", &selector, "--resync-period", "1h"],
    )
    .map_err(e("controller"))
}

/// The dashboard as `user`, showing this scenario's promotions.
fn dashboard(cluster: &Cluster, user: User, extra: &[&str]) -> Result<DashboardProcess, String> {
    let selector = format!("{SESSION_LABEL}={}", cluster.session());
    let mut args = vec!["-l", selector.as_str()];
    args.extend_from_slice(extra);
    dashboard_of(cluster, user, Some(&args))
}

/// The dashboard as `user` with `args` (`None`: every promotion of the server).
fn dashboard_of(
    cluster: &Cluster,
    user: User,
    args: Option<&[&str]>,
) -> Result<DashboardProcess, String> {
    let plugin = bins::binary("kubectl-promotion").map_err(e("the plugin"))?;
    let mut cmd = cluster.command(user, plugin);
    cmd.args(["dashboard", "--port", "0"]);
    cmd.args(args.unwrap_or_default());
    DashboardProcess::start(cmd, WAIT)
}

fn until_profile(cluster: &Cluster, profile: &str) -> Result<(), String> {
    eventually(&format!("ClusterProfile {profile}"), WAIT, || {
        matches!(cluster.get(CLUSTER_PROFILE, None, profile), Ok(Some(_))).then_some(())
    })
}

fn stored(cluster: &Cluster, name: &str) -> Result<Value, String> {
    cluster
        .promotion(name)
        .map_err(e("reading the promotion"))?
        .ok_or_else(|| format!("promotion {name} is gone"))
}

/// A stage box of the card (fleet page) or of the page's pipeline.
fn stage_box(scope: &str, stage: &str) -> String {
    format!("{scope} .pipeline li[data-stage=\"{stage}\"]")
}

fn follow_and_approve(cluster: &Cluster, binaries: &BrowserBinaries) -> Result<(), String> {
    promotion_e2e::rollout::stage_clusters(cluster).map_err(e("SveltosClusters"))?;
    // Before the controller starts: the examples are never its to run.
    let shots = screenshots(cluster)?;
    let addon = AddonController::new(cluster);
    let _ctl = controller(cluster)?;
    let dash = match &shots {
        Some(_) => dashboard_of(cluster, User::ReleaseManager, None)?,
        None => dashboard(cluster, User::ReleaseManager, &[])?,
    };
    let browser = Browser::start(binaries).map_err(e("Chromium"))?;
    browser
        .goto(&dash.url)
        .map_err(e("opening the dashboard"))?;
    // The token left the address once it became a cookie no script can read.
    let url = browser.current_url().map_err(e("url"))?;
    if url.contains("token=") {
        return Err(format!("the token is still in the address: {url}"));
    }
    let cookies = browser.cookies().map_err(e("cookies"))?;
    if !cookies
        .iter()
        .any(|c| c.name == "promotion-dashboard" && c.http_only)
    {
        return Err(format!("no HttpOnly dashboard cookie: {cookies:?}"));
    }
    browser
        .wait_for_text("#live", "live")
        .map_err(e("the live line"))?;
    // A mark on the page's window: still there at the end means nothing reloaded it.
    browser
        .execute("window.__notReloaded = true;", vec![])
        .map_err(e("marking the window"))?;

    // The promotion is created after the page loaded: its card appears, then follows the rollout.
    // In the screenshots, first among the examples' promotions.
    let base = if shots.is_some() {
        "api-gateway"
    } else {
        "dash"
    };
    let promotion = promotion_e2e::rollout::promotion(cluster, base, None);
    let name = promotion["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    cluster
        .put(&promotion)
        .map_err(e("creating the promotion"))?;
    let card = format!("#p-{name}");
    browser
        .wait_for(&card)
        .map_err(e("the new promotion's card"))?;
    until_profile(cluster, &format!("{name}-dev"))?;
    addon.sync(true).map_err(e("addon double"))?;
    browser
        .wait_for_text(&stage_box(&card, "dev"), "promoted")
        .map_err(|err| {
            let status = stored(cluster, &name).map(|p| p["status"].clone());
            format!("dev promoted on the fleet page: {err}\nthe stored status: {status:?}")
        })?;
    until_profile(cluster, &format!("{name}-staging"))?;
    addon.sync(true).map_err(e("addon double"))?;
    browser
        .wait_for_text(&stage_box(&card, "staging"), "awaiting approval")
        .map_err(e("staging awaiting approval on the fleet page"))?;
    browser
        .wait_for_text(&format!("{card} .gate"), "staging → prod")
        .map_err(e("the gate on the card"))?;
    // The filter hides what does not match, and says how many are shown.
    if let Some(dir) = &shots {
        browser
            .screenshot(&dir.join("dashboard-fleet.png"))
            .map_err(e("screenshot"))?;
    }
    browser
        .fill("#q", "no-such-promotion")
        .map_err(e("filter"))?;
    browser
        .wait_for_text("#shown", "0 of")
        .map_err(e("the filter's count"))?;
    browser.fill("#q", &name).map_err(e("filter"))?;
    browser
        .wait_for_text("#shown", "1 of")
        .map_err(e("the filter's count"))?;
    let kept = browser
        .execute("return window.__notReloaded === true;", vec![])
        .map_err(e("reading the mark"))?;
    if kept != json!(true) {
        return Err("the fleet page was reloaded: its updates must come live".into());
    }

    // The promotion page: approve staging, with a reason, after the confirmation.
    browser
        .click(&format!("{card} h2 a"))
        .map_err(e("opening the promotion"))?;
    let approve = "#action-approve-staging";
    browser
        .wait_for(&format!("{approve} button"))
        .map_err(e("the approve button"))?;
    if let Some(dir) = &shots {
        browser
            .screenshot(&dir.join("dashboard-promotion.png"))
            .map_err(e("screenshot"))?;
    }
    browser
        .fill(&format!("{approve}-reason"), "CAB-42 signed off")
        .map_err(e("the reason"))?;
    browser.answer_confirms(true).map_err(e("confirm hook"))?;
    browser
        .click(&format!("{approve} button"))
        .map_err(e("approve"))?;
    let result = browser
        .wait_for_text("#result", "approved")
        .map_err(e("the approval's answer"))?;
    if !result.contains("stage staging → prod") {
        return Err(format!("the answer: {result}"));
    }
    let asked = browser.answered_confirms().map_err(e("confirms"))?;
    if !asked
        .iter()
        .any(|m| m.starts_with(&format!("Approve stage staging of {name}?")))
    {
        return Err(format!("the confirmation asked: {asked:?}"));
    }
    let p = stored(cluster, &name)?;
    if p["metadata"]["annotations"]["kubectl-promotion.dev/approval-reason"] != "CAB-42 signed off"
    {
        return Err(format!("the reason was not sent: {}", p["metadata"]));
    }
    // promotion-controller uses the approval; the page shows prod reached, then complete.
    until_profile(cluster, &format!("{name}-prod"))?;
    browser
        .wait_for(&format!("{}.current", stage_box("#content", "prod")))
        .map_err(e("prod the current stage on the promotion page"))?;
    addon.sync(true).map_err(e("addon double"))?;
    browser
        .wait_for_text("#phase", "complete")
        .map_err(e("complete on the promotion page"))?;
    let p = stored(cluster, &name)?;
    if p.pointer("/status/currentStageName") != Some(&json!("prod")) {
        return Err(format!("the stored status: {}", p["status"]));
    }
    Ok(())
}

/// With `PROMOTION_E2E_SCREENSHOTS` set, on the real API server (which writes the managed
/// fields that say who reconciles): the folder to save pages in.
fn screenshots(cluster: &Cluster) -> Result<Option<PathBuf>, String> {
    let Some(dir) = std::env::var_os("PROMOTION_E2E_SCREENSHOTS") else {
        return Ok(None);
    };
    if cluster.kind() != BackendKind::Envtest {
        return Ok(None);
    }
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).map_err(e("the screenshots' folder"))?;
    // The fleet beside the live rollout: every example's promotion, in the state its fixture
    // holds (the controller, limited to this session, leaves them alone; the dashboard, on this
    // scenario's own stand-in, shows them all).
    let (world, _) = promotion_e2e::fixtures::default_world().map_err(e("the examples"))?;
    let namespaces: std::collections::BTreeSet<String> = world
        .objects
        .iter()
        .filter_map(|o| o.pointer("/metadata/namespace").and_then(Value::as_str))
        .map(String::from)
        .collect();
    for ns in namespaces {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        cluster
            .put(&namespace)
            .map_err(e("a namespace of the examples"))?;
    }
    let examples: Vec<(String, Option<String>)> = world
        .objects
        .iter()
        .filter(|o| o["kind"] == "ClusterPromotion" || o["kind"] == "SveltosCluster")
        .map(|o| {
            let meta = &o["metadata"];
            let name = meta["name"].as_str().unwrap_or_default().to_string();
            (name, meta["namespace"].as_str().map(String::from))
        })
        .collect();
    cluster
        .seed(world.objects)
        .map_err(e("seeding the examples"))?;
    // Seeding labels them into the session: taken out again, the examples' promotions are not
    // the controller's to run and their clusters are in none of the rollout's stages.
    for kind in [CLUSTER_PROMOTION, SVELTOS_CLUSTER] {
        for mut o in cluster
            .list(kind, None)
            .map_err(e("listing the examples"))?
        {
            let meta = &o["metadata"];
            let key = (
                meta["name"].as_str().unwrap_or_default().to_string(),
                meta["namespace"].as_str().map(String::from),
            );
            if examples.contains(&key) {
                if let Some(labels) = o["metadata"]["labels"].as_object_mut() {
                    labels.remove(SESSION_LABEL);
                }
                cluster
                    .put(&o)
                    .map_err(e("an example out of the session"))?;
            }
        }
    }
    Ok(Some(dir))
}

/// Stage the promotion at staging's gate, as the release manager will find it.
fn at_the_gate(cluster: &Cluster, addon: &AddonController, base: &str) -> Result<String, String> {
    let promotion = promotion_e2e::rollout::promotion(cluster, base, None);
    let name = promotion["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    cluster
        .put(&promotion)
        .map_err(e("creating the promotion"))?;
    until_profile(cluster, &format!("{name}-dev"))?;
    addon.sync(true).map_err(e("addon double"))?;
    until_profile(cluster, &format!("{name}-staging"))?;
    addon.sync(true).map_err(e("addon double"))?;
    eventually("staging awaiting approval", WAIT, || {
        let p = stored(cluster, &name).ok()?;
        let stages = p.pointer("/status/stages")?.as_array()?.clone();
        stages
            .iter()
            .any(|s| {
                s["name"] == "staging"
                    && s["currentStatusDescription"]
                        .as_str()
                        .is_some_and(|d| d.starts_with("Paused: Awaiting Manual Approval"))
            })
            .then_some(())
    })?;
    Ok(name)
}

fn refusals(cluster: &Cluster, binaries: &BrowserBinaries) -> Result<(), String> {
    promotion_e2e::rollout::stage_clusters(cluster).map_err(e("SveltosClusters"))?;
    let addon = AddonController::new(cluster);
    let _ctl = controller(cluster)?;
    let name = at_the_gate(cluster, &addon, "refused")?;
    let browser = Browser::start(binaries).map_err(e("Chromium"))?;

    // A viewer sees the approve button disabled, with why: RBAC.
    let viewer = dashboard(cluster, User::Viewer, &[])?;
    let page = viewer
        .url
        .replace("/?token", &format!("/promotions/{name}?token"));
    browser.goto(&page).map_err(e("the viewer's page"))?;
    let approve = "#action-approve-staging";
    let why = browser
        .wait_for_text(
            &format!("{approve} .refused"),
            "RBAC: no patch on clusterpromotions",
        )
        .map_err(e("the refusal shown before pressing"))?;
    let disabled = browser
        .execute(
            "return document.querySelector(arguments[0]).disabled;",
            vec![json!(format!("{approve} button"))],
        )
        .map_err(e("the button's state"))?;
    if disabled != json!(true) {
        return Err(format!(
            "the approve button is enabled for a viewer ({why})"
        ));
    }
    // Sent anyway (the form submitted by a script, in one step: a live update may replace the
    // form at any time): the API server refuses, and the page says so.
    browser.answer_confirms(true).map_err(e("confirm hook"))?;
    browser
        .execute(
            "document.querySelector(arguments[0]).requestSubmit();",
            vec![json!(approve)],
        )
        .map_err(e("sending the form"))?;
    browser
        .wait_for_text("#result", "forbidden (403)")
        .map_err(|err| {
            format!(
                "the server's refusal on the page: {err}\n--- the dashboard's stderr\n{}",
                viewer.stderr()
            )
        })?;
    drop(viewer);

    // Another site's page posts an approval to the release manager's dashboard, in the same
    // browser that holds its cookie: refused, and nothing is written.
    let dash = dashboard(cluster, User::ReleaseManager, &[])?;
    browser.goto(&dash.url).map_err(e("the dashboard"))?;
    browser
        .wait_for(&format!("#p-{name}"))
        .map_err(e("the card"))?;
    let origin = dash.url.split("/?").next().unwrap_or_default().to_string();
    let evil = evil_site(&format!("{origin}/promotions/{name}/approve"))?;
    browser.goto(&evil.url).map_err(e("the other site"))?;
    let refused = browser
        .wait_for_text("#error", "refused")
        .map_err(e("the dashboard's answer to the other site"))?;
    if !refused.contains("cross-site request refused") {
        return Err(format!("refused, but for another reason: {refused}"));
    }
    let p = stored(cluster, &name)?;
    if p.pointer("/spec/stages/1/trigger/manual/approved") == Some(&json!(true)) {
        return Err("the cross-site POST approved the stage".into());
    }
    // The dashboard stops: its open page says it is disconnected.
    browser.goto(&dash.url).map_err(e("the dashboard again"))?;
    browser
        .wait_for_text("#live", "live")
        .map_err(e("the live line"))?;
    drop(dash);
    browser
        .wait_for_text("#live", "disconnected from the dashboard")
        .map_err(e("the page told the dashboard is gone"))?;
    Ok(())
}

/// A page of another origin (another port) whose form posts an approval to `target` as soon as
/// it loads.
struct EvilSite {
    url: String,
    _stop: tokio::sync::oneshot::Sender<()>,
    _thread: std::thread::JoinHandle<()>,
}

fn evil_site(target: &str) -> Result<EvilSite, String> {
    let page = format!(
        "<!DOCTYPE html><html><body><form id=\"f\" method=\"post\" action=\"{target}\">\
         <input name=\"stage\" value=\"staging\"></form>\
         <script>document.getElementById('f').submit();</script></body></html>"
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(e("binding"))?;
    let addr = listener.local_addr().map_err(e("address"))?;
    listener.set_nonblocking(true).map_err(e("listener"))?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            let app = axum::Router::new().route(
                "/",
                axum::routing::get(move || {
                    let page = page.clone();
                    async move { axum::response::Html(page) }
                }),
            );
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
    });
    Ok(EvilSite {
        url: format!("http://{addr}/"),
        _stop: stop,
        _thread: thread,
    })
}
