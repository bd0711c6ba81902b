//! `kubectl promotion dashboard` against the stand-in, as the real binary over HTTP: the token
//! swapped for an HttpOnly SameSite=Strict cookie, every request refused without it, the Host
//! allow-list, the Origin check on writes, the security headers; the fleet and promotion pages
//! from `describe`'s model; the event streams following changes, deletions and a lost
//! connection; the actions as the CLI commands (same patch, same refusals); --read-only; HTTPS
//! required beyond loopback; SIGTERM. The browser tests (`dashboard_browser`) drive the same
//! server from Chromium.

mod plugin_common;

use std::time::Duration;

use plugin_common::*;
use promotion_e2e::dashboard_client::{DashboardClient, Events};
use serde_json::{json, Value};

const GATE: &str = "kyverno-rollout-man";
const AUTO: &str = "kyverno-rollout-auto";
const PATIENCE: Duration = Duration::from_secs(60);

fn world() -> Vec<Value> {
    let mut world: Vec<Value> = example_world("kyverno-manual-gate.yaml")
        .into_iter()
        .collect();
    world.push(example("kyverno-rollout-auto.yaml"));
    world
}

/// The dashboard of `env`, running, and a client logged in with the printed address.
fn serve(env: &Env, extra: &[&str]) -> (Running, DashboardClient) {
    let mut args = vec!["dashboard", "--port", "0"];
    args.extend_from_slice(extra);
    let mut plugin = Running::start(env, &args);
    let line = plugin.expect_line(Stream::Stdout, "Dashboard: ");
    let url = line.trim().trim_start_matches("Dashboard: ").to_string();
    let mut client = DashboardClient::new(&url, None).expect("client");
    let login = client.login().expect("login");
    assert_eq!(login.status, 303, "{login:?}");
    (plugin, client)
}

fn update(env: &Env, name: &str, change: impl FnOnce(&mut Value)) {
    let mut p = env.promotion(name);
    change(&mut p);
    forget_version(&mut p);
    env.put(p);
}

/// The `since` the page's stream starts from.
fn stream_of(page: &str) -> String {
    let at = page.find("data-stream=\"").expect("a live page") + "data-stream=\"".len();
    page[at..].split('"').next().unwrap().replace("&amp;", "&")
}

fn card(events: &Events, name: &str, contains: &str) -> Value {
    let id = format!("p-{name}");
    let e = events
        .wait_for("card", PATIENCE, |e| {
            let v: Value = serde_json::from_str(&e.data).unwrap();
            v["id"] == id.as_str() && v["html"].as_str().unwrap().contains(contains)
        })
        .unwrap_or_else(|e| panic!("card of {name} with {contains:?}: {e}"));
    serde_json::from_str(&e.data).unwrap()
}

#[test]
fn the_printed_address_logs_in_once_and_every_request_needs_the_cookie() {
    let env = Env::start(world());
    let (mut plugin, mut client) = serve(&env, &[]);
    // The login answer: the cookie no script can read and no other site's request carries, and
    // a redirect that takes the token out of the address bar.
    let login = client.login().unwrap();
    let cookie = login.header("set-cookie").unwrap().to_string();
    assert!(cookie.starts_with("promotion-dashboard="), "{cookie}");
    assert!(
        cookie.ends_with("; Path=/; HttpOnly; SameSite=Strict"),
        "{cookie}"
    );
    assert_eq!(login.header("location"), Some("/"));

    let page = client.get("/").unwrap();
    assert_eq!(page.status, 200);
    for name in [GATE, AUTO] {
        assert!(
            page.body.contains(&format!("id=\"p-{name}\"")),
            "{name}: {}",
            page.body
        );
    }
    assert!(page.body.contains("awaiting approval"), "{}", page.body);
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.contains("frame-ancestors 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("cache-control"), Some("no-store"));

    // Without the cookie: nothing, the assets and the stream included.
    for path in [
        "/",
        "/assets/app.js",
        "/stream",
        &format!("/promotions/{GATE}"),
    ] {
        let r = client.send("GET", path, &[], "", false).unwrap();
        assert_eq!(r.status, 401, "{path}");
        assert!(r.body.contains("open the address"), "{path}: {}", r.body);
        assert!(r.header("content-security-policy").is_some(), "{path}");
    }
    // A wrong token in the address is refused, and says so.
    let wrong = client.send("GET", "/?token=guess", &[], "", false).unwrap();
    assert_eq!(wrong.status, 401);
    assert!(
        wrong.body.contains("not the dashboard&#39;s"),
        "{}",
        wrong.body
    );
    // DNS rebinding: the right cookie under another host name is refused.
    let rebound = client
        .send("GET", "/", &[("host", "attacker.example:80")], "", true)
        .unwrap();
    assert_eq!(rebound.status, 421, "{}", rebound.body);
    let assets = client.get("/assets/app.js").unwrap();
    assert_eq!(assets.status, 200);
    assert!(assets
        .header("content-type")
        .unwrap()
        .starts_with("text/javascript"));
    drop(client);
    // SIGTERM stops it cleanly.
    // SAFETY: signalling our own child.
    unsafe { libc::kill(plugin.pid() as i32, libc::SIGTERM) };
    plugin.expect_line(Stream::Stderr, "Ctrl-C stops it");
    let out = plugin.finish();
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn a_cross_site_write_is_refused_and_changes_nothing() {
    let env = Env::start(world());
    let (_plugin, client) = serve(&env, &[]);
    let before = env.promotion(GATE);
    let path = format!("/promotions/{GATE}/approve");
    let form = "stage=staging";
    let kind = ("content-type", "application/x-www-form-urlencoded");
    let evil = client
        .send(
            "POST",
            &path,
            &[("origin", "http://evil.example"), kind],
            form,
            true,
        )
        .unwrap();
    assert_eq!(evil.status, 403);
    assert!(
        evil.body.contains("cross-site request refused"),
        "{}",
        evil.body
    );
    let none = client.send("POST", &path, &[kind], form, true).unwrap();
    assert_eq!(none.status, 403, "{}", none.body);
    // The token in the address does not stand in for the cookie on a write.
    let origin = client.origin.clone();
    let token = client
        .cookie
        .clone()
        .unwrap()
        .replace("promotion-dashboard=", "");
    let by_url = client
        .send(
            "POST",
            &format!("{path}?token={token}"),
            &[("origin", origin.as_str()), kind],
            form,
            false,
        )
        .unwrap();
    assert_eq!(by_url.status, 401, "{}", by_url.body);
    // A name that would be a flag is no promotion.
    let flag = client.post_form("/promotions/--all/pause", "").unwrap();
    assert_eq!(flag.status, 400, "{}", flag.body);
    assert_eq!(env.promotion(GATE), before);
    assert!(env.requests("PATCH", "clusterpromotions").is_empty());
}

#[test]
fn an_approval_from_the_page_is_the_cli_approve_with_its_refusals() {
    let env = Env::start(world());
    let (_plugin, client) = serve(&env, &[]);
    let page = client.get(&format!("/promotions/{GATE}")).unwrap();
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Approve staging"), "{}", page.body);
    assert!(
        page.body
            .contains("data-confirm=\"Approve stage staging of"),
        "{}",
        page.body
    );

    // A refusal is the CLI's, word for word, and writes nothing.
    let cli = env.run(&["approve", GATE, "--stage", "dev"]).expect(1);
    let refused = client
        .post_form(&format!("/promotions/{GATE}/approve"), "stage=dev")
        .unwrap();
    assert_eq!(refused.status, 422, "{}", refused.body);
    let answer: Value = serde_json::from_str(&refused.body).unwrap();
    assert_eq!(answer["ok"], false);
    assert_eq!(
        answer["message"].as_str().unwrap(),
        cli.stderr.trim(),
        "the page says what the CLI says"
    );
    assert!(env.requests("PATCH", "clusterpromotions").is_empty());

    let done = client
        .post_form(
            &format!("/promotions/{GATE}/approve"),
            "stage=staging&reason=CAB-1234+signed+off",
        )
        .unwrap();
    assert_eq!(done.status, 200, "{}", done.body);
    let answer: Value = serde_json::from_str(&done.body).unwrap();
    assert_eq!(
        answer["message"],
        format!(
            "clusterpromotion.config.projectsveltos.io/{GATE} approved (stage staging → production)"
        )
        .as_str(),
        "{answer}"
    );
    // No webhook in this stand-in: the CLI's warning reaches the page.
    assert!(
        answer["notes"].as_str().unwrap().contains("not recorded")
            || answer["notes"].as_str().unwrap().contains("no record"),
        "{answer}"
    );
    let after = env.promotion(GATE);
    assert_eq!(
        after["spec"]["stages"][1]["trigger"]["manual"]["approved"],
        true
    );
    assert_eq!(
        after["metadata"]["annotations"]["kubectl-promotion.dev/approval-reason"],
        "CAB-1234 signed off"
    );
    // One guarded merge patch, as `approve` sends.
    let patches = env.requests("PATCH", "clusterpromotions");
    assert_eq!(patches.len(), 1, "{patches:?}");
}

#[test]
fn the_fleet_stream_follows_changes_deletions_and_a_lost_connection() {
    let env = Env::start(world());
    let (_plugin, client) = serve(&env, &[]);
    let page = client.get("/").unwrap();
    let events = client.events(&stream_of(&page.body)).unwrap();
    events
        .wait_for("status", PATIENCE, |e| e.data.contains("\"live\""))
        .unwrap();
    // A pause: the card is sent again, paused.
    update(&env, AUTO, |p| {
        p["metadata"]["annotations"]["promotion-controller.kubectl-promotion.dev/paused"] =
            json!("INC-1");
    });
    let c = card(&events, AUTO, "data-phase=\"paused\"");
    assert!(c["html"].as_str().unwrap().contains("INC-1"), "{c}");
    // A write that changes nothing a card shows sends nothing; the next card is the one that
    // changed, and no other is sent again.
    update(&env, GATE, |p| {
        p["metadata"]["annotations"]["example.com/unrelated"] = json!("x");
    });
    update(&env, GATE, |p| {
        p["metadata"]["labels"] = json!({"tier": "gold"});
    });
    let next = events
        .wait_for_any(PATIENCE, |e| e.event == "card")
        .unwrap();
    let next: Value = serde_json::from_str(&next.data).unwrap();
    assert_eq!(next["name"], GATE, "{next}");
    assert!(
        next["html"].as_str().unwrap().contains("tier=gold"),
        "{next}"
    );
    // A new promotion appears, a deleted one goes.
    let mut copy = env.promotion(AUTO);
    copy["metadata"] = json!({"name": "kyverno-rollout-copy", "labels": {"team": "platform"}});
    copy.as_object_mut().unwrap().remove("status");
    env.put(copy);
    let c = card(
        &events,
        "kyverno-rollout-copy",
        "data-labels=\"team=platform\"",
    );
    assert_eq!(c["name"], "kyverno-rollout-copy");
    env.server.store().remove("clusterpromotions", None, AUTO);
    // Removed by a `gone` for its card, or (after a change of the set, which the stream takes as
    // "anything may have changed") by a `keep` that no longer names it.
    let dropped = |e: &promotion_e2e::dashboard_client::SseEvent| match e.event.as_str() {
        "gone" => e.data.contains(&format!("p-{AUTO}")),
        "keep" => !e.data.contains(&format!("\"{AUTO}\"")),
        _ => false,
    };
    events.wait_for_any(PATIENCE, dropped).unwrap();
    // The API server's storage goes away: the page is told its data may be out of date.
    env.server.set_unavailable(true);
    let stale = events
        .wait_for("status", PATIENCE, |e| e.data.contains("\"stale\""))
        .unwrap();
    assert!(
        stale.data.contains("connection to the API server lost"),
        "{}",
        stale.data
    );
    env.server.set_unavailable(false);
    update(&env, GATE, |p| {
        p["spec"]["stages"][1]["trigger"]["manual"]["approved"] = json!(true);
    });
    events
        .wait_for("status", PATIENCE, |e| e.data.contains("\"live\""))
        .unwrap();
    let c = card(&events, GATE, "data-phase=");
    assert!(
        !c["html"].as_str().unwrap().contains("Awaiting approval:"),
        "{c}"
    );
}

#[test]
fn the_promotion_page_shows_what_describe_shows_and_follows_it() {
    let env = Env::start(world());
    let (_plugin, client) = serve(&env, &[]);
    let page = client.get(&format!("/promotions/{GATE}")).unwrap();
    assert_eq!(page.status, 200);
    for part in [
        "id=\"stages\"",
        "env=staging",
        "staging/staging01",
        "id=\"approvals\"",
        "id=\"history\"",
        "Timeline of kyverno-rollout-man",
        "Stage staging provisioned",
        "kubectl promotion approve kyverno-rollout-man --stage staging",
        "withdraws the add-on from every cluster",
    ] {
        assert!(
            page.body.contains(part),
            "{part:?} not on the page:\n{}",
            page.body
        );
    }
    let events = client.events(&stream_of(&page.body)).unwrap();
    update(&env, GATE, |p| {
        p["metadata"]["annotations"]["promotion-controller.kubectl-promotion.dev/paused"] =
            json!("INC-2");
    });
    let e = events
        .wait_for("page", PATIENCE, |e| e.data.contains("INC-2"))
        .unwrap();
    assert!(e.data.contains("Resume"), "{}", e.data);
    let missing = client.get("/promotions/nope").unwrap();
    assert_eq!(missing.status, 404);
    assert!(
        missing.body.contains("\\\"nope\\\" not found")
            || missing.body.contains("&quot;nope&quot; not found"),
        "{}",
        missing.body
    );
}

#[test]
fn read_only_shows_no_action_and_refuses_writes() {
    let env = Env::start(world());
    let (_plugin, client) = serve(&env, &["--read-only"]);
    let page = client.get(&format!("/promotions/{GATE}")).unwrap();
    assert!(!page.body.contains("class=\"action\""), "{}", page.body);
    assert!(page.body.contains("read-only"), "{}", page.body);
    let r = client
        .post_form(&format!("/promotions/{GATE}/pause"), "")
        .unwrap();
    assert_eq!(r.status, 403);
    assert!(r.body.contains("--read-only"), "{}", r.body);
    assert!(env.requests("PATCH", "clusterpromotions").is_empty());
}

#[test]
fn beyond_loopback_it_serves_only_https_and_warns() {
    let env = Env::start(world());
    let out = env
        .run(&["dashboard", "--address", "0.0.0.0", "--port", "0"])
        .expect(1);
    assert!(
        out.stderr
            .contains("--address 0.0.0.0: not a loopback address")
            && out.stderr.contains("--tls-cert-file"),
        "{}",
        out.stderr
    );
    let ca = promotion_e2e::apiserver::tls::TestCa::new("dashboard-test-ca").unwrap();
    let cert = ca.issue(&["localhost"]).unwrap();
    let (crt, key) = (env.path("tls.crt"), env.path("tls.key"));
    std::fs::write(&crt, &cert.cert_pem).unwrap();
    std::fs::write(&key, &cert.key_pem).unwrap();
    let mut plugin = Running::start(
        &env,
        &[
            "dashboard",
            "--address",
            "0.0.0.0",
            "--port",
            "0",
            "--host",
            "localhost",
            "--tls-cert-file",
            crt.to_str().unwrap(),
            "--tls-private-key-file",
            key.to_str().unwrap(),
        ],
    );
    let warning = plugin.expect_line(Stream::Stderr, "warning:");
    assert!(warning.contains("reachable from other hosts"), "{warning}");
    let line = plugin.expect_line(Stream::Stdout, "Dashboard: ");
    let url = line.trim().trim_start_matches("Dashboard: ");
    assert!(url.starts_with("https://localhost:"), "{url}");
    let mut client = DashboardClient::new(url, Some(ca.ca_pem())).unwrap();
    let login = client.login().unwrap();
    assert!(
        login.header("set-cookie").unwrap().ends_with("; Secure"),
        "{login:?}"
    );
    assert_eq!(client.get("/").unwrap().status, 200);
    // Not over plain HTTP.
    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap();
    let mut plain = DashboardClient::new(&format!("http://localhost:{port}/"), None).unwrap();
    assert!(plain.login().is_err() || plain.login().unwrap().status >= 400);
}

#[test]
fn a_stream_reopened_from_the_pages_state_brings_the_page_up_to_date() {
    let env = Env::start(world());
    let (_plugin, client) = serve(&env, &[]);
    let page = client.get("/").unwrap();
    let stream = stream_of(&page.body);
    // The page's stream opens, then the connection drops.
    let events = client.events(&stream).unwrap();
    events
        .wait_for("status", PATIENCE, |e| e.data.contains("\"live\""))
        .unwrap();
    drop(events);
    // Changes while the page had no stream (a dropped connection)…
    update(&env, AUTO, |p| {
        p["metadata"]["annotations"]["promotion-controller.kubectl-promotion.dev/paused"] =
            json!("INC-3");
    });
    let mut copy = env.promotion(AUTO);
    copy["metadata"] = json!({"name": "kyverno-rollout-new"});
    copy.as_object_mut().unwrap().remove("status");
    env.put(copy);
    // …are all sent when the browser reconnects with the page's state.
    let events = client.events(&stream).unwrap();
    card(&events, AUTO, "INC-3");
    card(&events, "kyverno-rollout-new", "data-name");
    events
        .wait_for("keep", PATIENCE, |e| e.data.contains("kyverno-rollout-new"))
        .unwrap();
}

#[test]
fn the_promotion_page_says_who_approved_and_who_changed_the_spec_as_describe_does() {
    let mut world = world();
    let gate = world
        .iter_mut()
        .find(|o| o["kind"] == "ClusterPromotion" && o["metadata"]["name"] == GATE)
        .unwrap();
    gate["metadata"]["annotations"] = json!({
        "audit.kubectl-promotion.dev/approvals":
            "{\"staging\":{\"user\":\"alice\",\"groups\":[\"release-managers\"],\"time\":\"2026-02-15T10:00:00Z\",\"reason\":\"CAB-1234\"}}",
        "audit.kubectl-promotion.dev/spec-change": "{\"user\":\"bob\",\"time\":\"2026-02-16T07:25:00Z\"}"
    });
    let env = Env::start(world);
    let described = env.run(&["describe", GATE]).expect(0).stdout;
    assert!(described.contains("Spec changed:   by bob at 2026-02-16T07:25:00Z"));
    let (_plugin, client) = serve(&env, &[]);
    let page = client.get(&format!("/promotions/{GATE}")).unwrap();
    for part in [
        "<dt>Spec changed</dt><dd>by bob at 2026-02-16T07:25:00Z</dd>",
        "<tr><td>staging</td><td>approved</td><td>alice</td><td><time>2026-02-15T10:00:00Z</time></td><td>CAB-1234</td></tr>",
    ] {
        assert!(page.body.contains(part), "{part:?} not on the page:\n{}", page.body);
    }
}

#[test]
fn open_hands_the_printed_address_to_the_platforms_opener() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::start(world());
    // A stand-in for xdg-open, first on PATH: it writes down what it was asked to open.
    let bin = env.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let opened = env.path("opened");
    let opener = bin.join("xdg-open");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\nprintf '%s' \"$1\" > '{}'\n", opened.display()),
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = env.cmd();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.args(["dashboard", "--port", "0", "--open"])
        .env("PATH", path);
    let dash = promotion_e2e::dashboard_client::DashboardProcess::start(cmd, PATIENCE).unwrap();
    eventually(PATIENCE, "the opener given the address", || {
        std::fs::read_to_string(&opened).is_ok_and(|s| s == dash.url)
    });
}
