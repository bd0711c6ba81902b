//! The browser harness itself ([`promotion_e2e::browser`]) against a page served here: a field,
//! a button whose click asks `confirm()` and then rewrites a status line from a script, and an
//! HttpOnly cookie. Chromium must see the script's change, answer the dialog both ways (WebDriver
//! and the JS hook), report the cookie as HttpOnly, name the selector, the text and the page in a
//! wait that times out, take a PNG screenshot, and leave no process behind.
//!
//! Without chromium and chromedriver the test prints the hint and passes, except under `CI=true`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::json;

use promotion_e2e::browser::{Browser, BrowserError};

const PAGE: &str = r#"<!doctype html>
<html>
<head><meta charset="utf-8"><title>harness</title></head>
<body>
  <h1>Browser harness</h1>
  <label>Cluster <input id="cluster" name="cluster" value="staging"></label>
  <button id="promote">Promote</button>
  <p id="status">idle</p>
  <script>
    document.getElementById("promote").addEventListener("click", () => {
      const cluster = document.getElementById("cluster").value;
      const ok = confirm("Promote to " + cluster + "?");
      document.getElementById("status").textContent = ok ? "promoted " + cluster : "cancelled";
    });
  </script>
</body>
</html>"#;

async fn page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::SET_COOKIE,
                "harness-session=s3cret; Path=/; HttpOnly; SameSite=Strict",
            ),
        ],
        PAGE,
    )
}

/// The page on a loopback port, served from a runtime of its own for the test's length.
fn serve() -> (tokio::runtime::Runtime, SocketAddr) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime for the page server");
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("binding a loopback port");
    let addr = listener.local_addr().expect("the page server's address");
    let app = axum::Router::new().route("/", get(page));
    runtime.spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            eprintln!("the page server stopped: {e}");
        }
    });
    (runtime, addr)
}

#[test]
fn chromium_drives_a_page_with_a_script_a_confirm_and_a_cookie() {
    let binaries = match Browser::find() {
        Ok(binaries) => binaries,
        Err(skip) => return skip.skip_or_fail(),
    };
    let (_server, addr) = serve();
    let url = format!("http://{addr}/");

    let began = Instant::now();
    let mut browser = Browser::start(&binaries).expect("a headless Chromium session");
    let started = began.elapsed();

    browser.goto(&url).expect("the page");
    assert_eq!(browser.current_url().expect("the URL"), url);
    assert_eq!(
        browser.wait_for_text("#status", "idle").expect("status"),
        "idle"
    );
    assert_eq!(
        browser
            .execute("return document.title;", vec![])
            .expect("a script"),
        json!("harness")
    );

    // The WebDriver way: the click opens a real dialog, answered OK and then Cancel.
    browser.fill("#cluster", "production").expect("typing");
    browser.click("#promote").expect("clicking");
    assert_eq!(
        browser.accept_dialog().expect("the confirm"),
        "Promote to production?"
    );
    browser
        .wait_for_text("#status", "promoted production")
        .expect("the script's change after OK");
    browser.click("#promote").expect("clicking again");
    browser.dismiss_dialog().expect("the confirm again");
    browser
        .wait_for_text("#status", "cancelled")
        .expect("the script's change after Cancel");

    // The JS hook: no dialog, the answer given beforehand, the message recorded.
    browser.answer_confirms(true).expect("the hook");
    browser.click("#promote").expect("clicking with the hook");
    browser
        .wait_for_text("#status", "promoted production")
        .expect("the hook's answer");
    assert_eq!(
        browser.answered_confirms().expect("the hook's record"),
        ["Promote to production?"]
    );

    let cookies = browser.cookies().expect("the cookies");
    let session = cookies
        .iter()
        .find(|c| c.name == "harness-session")
        .unwrap_or_else(|| panic!("no harness-session cookie in {cookies:?}"));
    assert!(session.http_only, "{session:?}");
    assert_eq!(session.value, "s3cret");
    assert_eq!(session.same_site.as_deref(), Some("Strict"));
    // HttpOnly: the page's own scripts cannot read it.
    let visible = browser
        .execute("return document.cookie;", vec![])
        .expect("document.cookie");
    assert_eq!(visible, json!(""));

    // A wait that cannot succeed says what it waited for and what the page showed.
    browser.set_patience(Duration::from_millis(300));
    match browser.wait_for_text("#status", "rolled back") {
        Err(BrowserError::Timeout(text)) => {
            for expected in [
                "`#status`",
                "\"rolled back\"",
                "promoted production",
                "Browser harness",
                &url,
            ] {
                assert!(text.contains(expected), "{expected} missing from: {text}");
            }
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    match browser.click("#nothing-here") {
        Err(BrowserError::Timeout(text)) => assert!(text.contains("`#nothing-here`"), "{text}"),
        other => panic!("expected a timeout, got {other:?}"),
    }

    let shots = tempfile::tempdir().expect("a folder for the screenshot");
    let shot = shots.path().join("harness.png");
    browser.screenshot(&shot).expect("a screenshot");
    let png = std::fs::read(&shot).expect("reading the screenshot");
    assert!(png.len() > 1000, "a {}-byte screenshot", png.len());
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");

    // Dropping the browser ends chromedriver and every Chromium process of its group.
    let group = browser.process_group();
    assert!(
        !live_members(group).is_empty(),
        "no process in group {group}"
    );
    drop(browser);
    if let Err(left) = until_group_gone(group, Duration::from_secs(10)) {
        panic!("left running in group {group}: {left:?}");
    }
    eprintln!(
        "browser harness: session started in {started:?}, whole test {:?}",
        began.elapsed()
    );
}

/// The async API from inside a tokio runtime: the same session reached through [`Page`].
#[tokio::test(flavor = "current_thread")]
async fn the_async_page_api_works_inside_a_runtime() {
    let binaries = match Browser::find() {
        Ok(binaries) => binaries,
        Err(skip) => return skip.skip_or_fail(),
    };
    let (server, addr) = tokio::task::spawn_blocking(serve)
        .await
        .expect("starting the page server");
    let browser = Browser::start_async(&binaries)
        .await
        .expect("a headless Chromium session");
    let page = browser.page();
    page.goto(&format!("http://{addr}/"))
        .await
        .expect("the page");
    page.answer_confirms(false).await.expect("the hook");
    page.click("#promote").await.expect("clicking");
    let status = page
        .wait_for_text("#status", "cancelled")
        .await
        .expect("the hook's answer");
    assert_eq!(status, "cancelled");
    assert_eq!(
        page.text("h1").await.expect("the heading"),
        "Browser harness"
    );
    drop(browser);
    // A runtime cannot be dropped inside another one.
    tokio::task::spawn_blocking(move || drop(server))
        .await
        .expect("stopping the page server");
}

/// Not a check of its own: the body of the next test's child copy of this test binary, which
/// starts a browser, reports its process group and dies without running destructors.
#[test]
fn helper_for_an_aborted_test_binary() {
    if std::env::var_os("BROWSER_ABORT_HELPER").is_none() {
        return;
    }
    let binaries = Browser::find().expect("the parent found a browser");
    let browser = Browser::start(&binaries).expect("a headless Chromium session");
    browser.goto("about:blank").expect("a page");
    println!("GROUP={}", browser.process_group());
    std::process::abort();
}

/// An aborted test binary runs no destructor: the watchdog shell must end Chromium.
#[test]
fn an_aborted_test_binary_leaves_no_browser_behind() {
    if let Err(skip) = Browser::find() {
        return skip.skip_or_fail();
    }
    let exe = std::env::current_exe().expect("the test binary");
    // The helper's browser folder (profile, log) outlives it: it goes with this one.
    let tmp = tempfile::tempdir().expect("a TMPDIR for the helper");
    // Its stdout is read to the end, so Chromium's processes must not hold it (they write to
    // chromedriver's log), or this would wait for them.
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "helper_for_an_aborted_test_binary",
            "--nocapture",
        ])
        .env("BROWSER_ABORT_HELPER", "1")
        .env("TMPDIR", tmp.path())
        .output()
        .expect("running the helper");
    assert!(!out.status.success(), "the helper aborts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let group: u32 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("GROUP="))
        .and_then(|g| g.trim().parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "no GROUP line in:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    if let Err(left) = until_group_gone(group, Duration::from_secs(10)) {
        panic!("left running after the abort in group {group}: {left:?}");
    }
}

/// Wait until no process of `group` runs, by waiting for each one's exit (a pidfd becomes
/// readable when its process exits), within `patience`; else the ones left.
fn until_group_gone(group: u32, patience: Duration) -> Result<(), Vec<String>> {
    let deadline = Instant::now() + patience;
    loop {
        let left = live_members(group);
        let Some(first) = left.first() else {
            return Ok(());
        };
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(left);
        }
        let pid: libc::pid_t = first
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor (or -1), which
        // is closed below; poll reads one pollfd we own.
        unsafe {
            let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as libc::c_int;
            if fd < 0 {
                // Gone between the listing and now.
                continue;
            }
            let mut wanted = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = remaining.as_millis().min(i32::MAX as u128) as libc::c_int;
            libc::poll(&mut wanted, 1, ms);
            libc::close(fd);
        }
    }
}

/// Processes (not zombies) whose process group is `group`, from /proc.
fn live_members(group: u32) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.first() != Some(&"Z") && fields.get(2) == Some(&group.to_string().as_str())
        })
        .map(|stat| stat.split(')').next().unwrap_or_default().to_string() + ")")
        .collect()
}
