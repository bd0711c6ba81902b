//! Headless Chromium for browser tests (the dashboard's): Debian's `chromium` driven through
//! `chromedriver` (WebDriver) with fantoccini.
//!
//! [`Browser::find`] locates both binaries or says how to get them ([`Skip`]): on a developer's
//! machine without them, browser tests pass after printing that hint; with `CI=true` they fail
//! instead, the way real-server tests do without `KUBEBUILDER_ASSETS` ([`crate::envtest::assets`]).
//!
//! [`Browser::start`] runs chromedriver on a free loopback port in a process group of its own and
//! opens one headless Chromium session with a fresh profile. Dropping the [`Browser`] kills the
//! group, so Chromium's processes go with chromedriver (also when a test panics); when the test
//! binary dies without dropping it (abort, Ctrl-C), the parent-death signal of
//! [`crate::envtest::process`] reaches a watchdog shell that kills the group (`WATCHDOG`).
//!
//! The [`Browser`]'s methods block, for plain `#[test]`s and libtest-mimic trials; [`Page`] has the
//! same methods as `async fn`s, for async tests. Both work from inside or outside a tokio runtime:
//! the WebDriver session lives on the harness's runtime ([`crate::envtest::block_on`]). Element
//! helpers take CSS selectors and wait (poll, up to [`Page::patience`]) for the element, since a
//! dashboard renders what it fetches after the page has loaded.
//!
//! ```no_run
//! use promotion_e2e::browser::Browser;
//! let binaries = match Browser::find() {
//!     Ok(binaries) => binaries,
//!     Err(skip) => return skip.skip_or_fail(),
//! };
//! let browser = Browser::start(&binaries).expect("a headless Chromium");
//! browser.goto("http://127.0.0.1:8080/").expect("the dashboard");
//! browser.click("button.approve").expect("approve");
//! browser.accept_dialog().expect("the confirm() of approve");
//! browser.wait_for_text("#status", "Approved").expect("the new status");
//! ```

use std::ffi::OsString;
use std::future::Future;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::error::CmdError;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use crate::envtest::process::{self, Supervised};

/// Names the Chromium binary (a path, or a name looked up on `PATH`).
pub const CHROMIUM_VAR: &str = "PROMOTION_E2E_CHROMIUM";
/// Names the chromedriver binary (a path, or a name looked up on `PATH`).
pub const CHROMEDRIVER_VAR: &str = "PROMOTION_E2E_CHROMEDRIVER";
/// What a developer reads when browser tests do not run.
pub const HOW_TO_ENABLE: &str = "install Debian's chromium and chromium-driver, or set \
     PROMOTION_E2E_CHROMIUM / PROMOTION_E2E_CHROMEDRIVER";

/// How long element, text and dialog waits poll by default ([`Page::set_patience`]). Generous:
/// the machines have 2 cores and tests share them with builds.
pub const PATIENCE: Duration = Duration::from_secs(15);
/// Between two looks at the page while waiting.
const POLL: Duration = Duration::from_millis(50);
/// Start-up bounds on a loaded 2-core machine (chromedriver answers in ~0.1 s, a session opens
/// in ~0.5 s when idle).
const DRIVER_PATIENCE: Duration = Duration::from_secs(30);
const SESSION_PATIENCE: Duration = Duration::from_secs(60);
/// How much of the page's text a timeout error quotes.
const PAGE_TEXT_LIMIT: usize = 2000;

/// Chromium's flags. Headless without a GPU; `--no-sandbox` since tests run as root (and in
/// containers without user namespaces); `/dev/shm` is small in containers. The machines' network
/// is closed and refuses Chromium's own connections (QUIC, component updates, sync, field
/// trials), which otherwise stall start-up or fill the log. `--no-proxy-server`: the pages under
/// test are on loopback, whatever proxy the environment names.
const CHROMIUM_ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-proxy-server",
    "--window-size=1280,900",
];

#[derive(thiserror::Error)]
pub enum BrowserError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "chromedriver did not become ready within {patience:?} ({why}); the end of its log:\n{tail}"
    )]
    DriverNotReady {
        patience: Duration,
        why: String,
        tail: String,
    },
    #[error(
        "starting a headless Chromium session: {error}; the end of chromedriver's log:\n{tail}"
    )]
    Session { error: String, tail: String },
    #[error("{what}: {source}")]
    Command {
        what: String,
        // Boxed: WebDriver's error is large, and every call returns this.
        #[source]
        source: Box<CmdError>,
    },
    /// A wait ran out of patience; the text names what was waited for and what the page showed.
    #[error("{0}")]
    Timeout(String),
    /// The page is not in a state the call needs.
    #[error("{0}")]
    Page(String),
}

/// As its text: tests `expect` these, and the text (the page, chromedriver's log) is what a
/// reader of a failure needs, with its line breaks.
impl std::fmt::Debug for BrowserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BrowserError {
    let what = what.into();
    move |source| BrowserError::Io { what, source }
}

fn cmd(what: impl Into<String>) -> impl FnOnce(CmdError) -> BrowserError {
    let what = what.into();
    move |source| BrowserError::Command {
        what,
        source: Box::new(source),
    }
}

/// The two programs a browser test runs.
#[derive(Clone, Debug)]
pub struct BrowserBinaries {
    pub chromium: PathBuf,
    pub chromedriver: PathBuf,
}

/// Why browser tests cannot run here. On a developer's machine they are skipped with
/// [`Skip::hint`]; under `CI=true` ([`Skip::must_fail`]) they fail with it.
#[derive(Clone, Debug)]
pub struct Skip {
    reason: String,
    ci: bool,
}

impl Skip {
    /// One line: what is missing and how to get it.
    pub fn hint(&self) -> String {
        format!("browser tests skipped: {} ({HOW_TO_ENABLE})", self.reason)
    }

    /// Whether this run is CI's (`CI=true`), where a missing browser is a failure.
    pub fn must_fail(&self) -> bool {
        self.ci
    }

    /// The end of a plain `#[test]` that cannot run: prints the hint to stderr and returns (the
    /// test passes), or under `CI=true` panics with it (the test fails).
    #[track_caller]
    pub fn skip_or_fail(self) {
        if self.ci {
            panic!("{self}");
        }
        eprintln!("{}", self.hint());
    }
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.ci {
            write!(
                f,
                "CI=true, so browser tests must run, but: {} ({HOW_TO_ENABLE})",
                self.reason
            )
        } else {
            f.write_str(&self.hint())
        }
    }
}

/// A cookie as the browser holds it (WebDriver's view, which includes HttpOnly ones).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrowserCookie {
    pub name: String,
    pub value: String,
    pub http_only: bool,
    pub secure: bool,
    /// `Strict`, `Lax` or `None`, when the cookie set one.
    pub same_site: Option<String>,
    pub path: Option<String>,
}

/// A headless Chromium session and the chromedriver serving it. Dropping it kills both.
pub struct Browser {
    page: Page,
    // Fields drop in order: the session handle, then the processes, then the profile folder.
    driver: Driver,
}

impl Browser {
    /// Chromium: `$PROMOTION_E2E_CHROMIUM`, else `/usr/bin/chromium`, else `chromium` or
    /// `chromium-browser` on `PATH`. chromedriver: `$PROMOTION_E2E_CHROMEDRIVER`, else
    /// `/usr/bin/chromedriver`, else `chromedriver` on `PATH`.
    pub fn find() -> Result<BrowserBinaries, Skip> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let chromium = locate(
            CHROMIUM_VAR,
            std::env::var_os(CHROMIUM_VAR),
            &candidates(
                &["/usr/bin/chromium"],
                &["chromium", "chromium-browser"],
                &path,
            ),
            &path,
        );
        let chromedriver = locate(
            CHROMEDRIVER_VAR,
            std::env::var_os(CHROMEDRIVER_VAR),
            &candidates(&["/usr/bin/chromedriver"], &["chromedriver"], &path),
            &path,
        );
        found(chromium, chromedriver, crate::envtest::assets::ci())
    }

    /// Start chromedriver and open a session (blocking). Usable from inside a tokio runtime.
    pub fn start(binaries: &BrowserBinaries) -> Result<Browser, BrowserError> {
        let mut attempt = 0;
        let driver = loop {
            attempt += 1;
            match Driver::start(binaries) {
                // The port is picked free and then handed over; another process may take it in
                // between. chromedriver then exits at once saying so.
                Err(BrowserError::DriverNotReady { tail, .. })
                    if attempt < 3 && tail.contains("Address already in use") => {}
                other => break other?,
            }
        };
        let capabilities = capabilities(binaries, &driver.profile);
        let url = driver.url.clone();
        // On the harness runtime, which lives as long as the process: fantoccini spawns the
        // session's task where the session is created, and it must outlive the caller's runtime.
        let connected = crate::envtest::block_on(async move {
            let mut builder =
                ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
            builder.capabilities(capabilities);
            tokio::time::timeout(SESSION_PATIENCE, builder.connect(&url)).await
        });
        let client = match connected {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => {
                return Err(BrowserError::Session {
                    error: e.to_string(),
                    tail: driver.log_tail(),
                })
            }
            Err(_) => {
                return Err(BrowserError::Session {
                    error: format!("no answer within {SESSION_PATIENCE:?}"),
                    tail: driver.log_tail(),
                })
            }
        };
        Ok(Browser {
            page: Page {
                client,
                patience: PATIENCE,
            },
            driver,
        })
    }

    /// [`Browser::start`] for async tests: the blocking start runs on tokio's blocking pool.
    pub async fn start_async(binaries: &BrowserBinaries) -> Result<Browser, BrowserError> {
        let binaries = binaries.clone();
        tokio::task::spawn_blocking(move || Browser::start(&binaries))
            .await
            .map_err(|e| BrowserError::Session {
                error: format!("the start-up task failed: {e}"),
                tail: String::new(),
            })?
    }

    /// The session's async handle (cheap to clone; valid while this [`Browser`] lives).
    pub fn page(&self) -> Page {
        self.page.clone()
    }

    /// How long waits poll before failing (default [`PATIENCE`]).
    pub fn set_patience(&mut self, patience: Duration) {
        self.page.patience = patience;
    }

    /// The process group of chromedriver and Chromium (killed on drop).
    pub fn process_group(&self) -> u32 {
        self.driver.process.pid()
    }

    fn run<T, F, Fut>(&self, call: F) -> Result<T, BrowserError>
    where
        F: FnOnce(Page) -> Fut,
        Fut: Future<Output = Result<T, BrowserError>> + Send + 'static,
        T: Send + 'static,
    {
        crate::envtest::block_on(call(self.page.clone()))
    }

    /// [`Page::goto`].
    pub fn goto(&self, url: &str) -> Result<(), BrowserError> {
        let url = url.to_string();
        self.run(|p| async move { p.goto(&url).await })
    }

    /// [`Page::current_url`].
    pub fn current_url(&self) -> Result<String, BrowserError> {
        self.run(|p| async move { p.current_url().await })
    }

    /// [`Page::wait_for`].
    pub fn wait_for(&self, selector: &str) -> Result<(), BrowserError> {
        let selector = selector.to_string();
        self.run(|p| async move { p.wait_for(&selector).await })
    }

    /// [`Page::wait_for_text`].
    pub fn wait_for_text(&self, selector: &str, text: &str) -> Result<String, BrowserError> {
        let (selector, text) = (selector.to_string(), text.to_string());
        self.run(|p| async move { p.wait_for_text(&selector, &text).await })
    }

    /// [`Page::text`].
    pub fn text(&self, selector: &str) -> Result<String, BrowserError> {
        let selector = selector.to_string();
        self.run(|p| async move { p.text(&selector).await })
    }

    /// [`Page::click`].
    pub fn click(&self, selector: &str) -> Result<(), BrowserError> {
        let selector = selector.to_string();
        self.run(|p| async move { p.click(&selector).await })
    }

    /// [`Page::fill`].
    pub fn fill(&self, selector: &str, value: &str) -> Result<(), BrowserError> {
        let (selector, value) = (selector.to_string(), value.to_string());
        self.run(|p| async move { p.fill(&selector, &value).await })
    }

    /// [`Page::accept_dialog`].
    pub fn accept_dialog(&self) -> Result<String, BrowserError> {
        self.run(|p| async move { p.accept_dialog().await })
    }

    /// [`Page::dismiss_dialog`].
    pub fn dismiss_dialog(&self) -> Result<String, BrowserError> {
        self.run(|p| async move { p.dismiss_dialog().await })
    }

    /// [`Page::answer_confirms`].
    pub fn answer_confirms(&self, answer: bool) -> Result<(), BrowserError> {
        self.run(move |p| async move { p.answer_confirms(answer).await })
    }

    /// [`Page::answered_confirms`].
    pub fn answered_confirms(&self) -> Result<Vec<String>, BrowserError> {
        self.run(|p| async move { p.answered_confirms().await })
    }

    /// [`Page::execute`].
    pub fn execute(&self, script: &str, args: Vec<Value>) -> Result<Value, BrowserError> {
        let script = script.to_string();
        self.run(|p| async move { p.execute(&script, args).await })
    }

    /// [`Page::screenshot`].
    pub fn screenshot(&self, path: &Path) -> Result<(), BrowserError> {
        let path = path.to_path_buf();
        self.run(|p| async move { p.screenshot(&path).await })
    }

    /// [`Page::cookies`].
    pub fn cookies(&self) -> Result<Vec<BrowserCookie>, BrowserError> {
        self.run(|p| async move { p.cookies().await })
    }
}

/// The async API of a [`Browser`]'s session. Element helpers take a CSS selector and wait up to
/// [`Page::patience`] for a matching element.
#[derive(Clone)]
pub struct Page {
    client: Client,
    patience: Duration,
}

impl Page {
    /// The fantoccini client, for what the helpers do not cover.
    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn patience(&self) -> Duration {
        self.patience
    }

    pub fn set_patience(&mut self, patience: Duration) {
        self.patience = patience;
    }

    /// Navigate and wait for the page's load event.
    pub async fn goto(&self, url: &str) -> Result<(), BrowserError> {
        self.client
            .goto(url)
            .await
            .map_err(cmd(format!("opening {url}")))
    }

    pub async fn current_url(&self) -> Result<String, BrowserError> {
        self.client
            .current_url()
            .await
            .map(String::from)
            .map_err(cmd("reading the current URL"))
    }

    /// Wait until some element matches `selector`.
    pub async fn wait_for(&self, selector: &str) -> Result<(), BrowserError> {
        self.first(selector).await.map(drop)
    }

    /// Wait until an element matching `selector` has `text` in its rendered text; returns that
    /// element's whole text. On timeout the error quotes the matching elements' texts and the
    /// page's.
    pub async fn wait_for_text(&self, selector: &str, text: &str) -> Result<String, BrowserError> {
        let deadline = Instant::now() + self.patience;
        loop {
            let mut seen = Vec::new();
            for element in self.find_all(selector).await? {
                match element.text().await {
                    Ok(t) if t.contains(text) => return Ok(t),
                    Ok(t) => seen.push(t),
                    // Re-rendered between the search and the read: look again.
                    Err(e) if e.is_stale_element_reference() => {}
                    Err(e) => return Err(cmd(format!("reading the text of `{selector}`"))(e)),
                }
            }
            if Instant::now() >= deadline {
                let matched = if seen.is_empty() {
                    "no element matches it".to_string()
                } else {
                    format!("the matching elements' texts: {seen:?}")
                };
                return Err(self
                    .timeout(format!(
                        "no element matching `{selector}` contains {text:?} after {:?} ({matched})",
                        self.patience
                    ))
                    .await);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The rendered text of the first element matching `selector` (waiting for one).
    pub async fn text(&self, selector: &str) -> Result<String, BrowserError> {
        self.with_first(selector, "reading the text of", |e| async move {
            e.text().await
        })
        .await
    }

    /// Click the first element matching `selector` (waiting for one).
    pub async fn click(&self, selector: &str) -> Result<(), BrowserError> {
        self.with_first(selector, "clicking", |e| async move { e.click().await })
            .await
    }

    /// Replace the value of the field matching `selector` (waiting for it) by typing `value`.
    pub async fn fill(&self, selector: &str, value: &str) -> Result<(), BrowserError> {
        let value = value.to_string();
        self.with_first(selector, "filling", |e| {
            let value = value.clone();
            async move {
                e.clear().await?;
                e.send_keys(&value).await
            }
        })
        .await
    }

    /// Wait for a `confirm()`/`alert()`/`prompt()` dialog and accept it (OK); returns its message.
    pub async fn accept_dialog(&self) -> Result<String, BrowserError> {
        let message = self.dialog().await?;
        self.client
            .accept_alert()
            .await
            .map_err(cmd(format!("accepting the dialog {message:?}")))?;
        Ok(message)
    }

    /// Wait for a dialog and dismiss it (Cancel: `confirm()` returns false); returns its message.
    pub async fn dismiss_dialog(&self) -> Result<String, BrowserError> {
        let message = self.dialog().await?;
        self.client
            .dismiss_alert()
            .await
            .map_err(cmd(format!("dismissing the dialog {message:?}")))?;
        Ok(message)
    }

    /// Replace `window.confirm` on the current page by a hook answering `answer` without a
    /// dialog, and recording each message ([`Page::answered_confirms`]). A navigation loads a
    /// fresh `window`: set it again after [`Page::goto`].
    pub async fn answer_confirms(&self, answer: bool) -> Result<(), BrowserError> {
        const HOOK: &str = "const answer = arguments[0];
            window.__promotionE2eConfirms = [];
            window.confirm = (message) => {
                window.__promotionE2eConfirms.push(String(message));
                return answer;
            };";
        self.execute(HOOK, vec![json!(answer)]).await.map(drop)
    }

    /// The messages the [`Page::answer_confirms`] hook answered, oldest first.
    pub async fn answered_confirms(&self) -> Result<Vec<String>, BrowserError> {
        let seen = self
            .execute("return window.__promotionE2eConfirms || null;", vec![])
            .await?;
        match seen {
            Value::Array(messages) => Ok(messages
                .into_iter()
                .map(|m| m.as_str().unwrap_or_default().to_string())
                .collect()),
            _ => Err(BrowserError::Page(
                "no confirm() hook on this page: call answer_confirms after loading it".into(),
            )),
        }
    }

    /// Run `script` as a function body (`arguments[i]` are `args`; `return` gives the result).
    pub async fn execute(&self, script: &str, args: Vec<Value>) -> Result<Value, BrowserError> {
        let first_line = script.trim().lines().next().unwrap_or_default();
        self.client
            .execute(script, args)
            .await
            .map_err(cmd(format!("running the script `{first_line}`…")))
    }

    /// A PNG of the viewport, written to `path`.
    pub async fn screenshot(&self, path: &Path) -> Result<(), BrowserError> {
        let png = self
            .client
            .screenshot()
            .await
            .map_err(cmd("taking a screenshot"))?;
        tokio::fs::write(path, png)
            .await
            .map_err(io(format!("writing the screenshot {}", path.display())))
    }

    /// The cookies the browser holds for the current page, HttpOnly ones included.
    pub async fn cookies(&self) -> Result<Vec<BrowserCookie>, BrowserError> {
        let cookies = self
            .client
            .get_all_cookies()
            .await
            .map_err(cmd("reading the cookies"))?;
        Ok(cookies
            .iter()
            .map(|c| BrowserCookie {
                name: c.name().to_string(),
                value: c.value().to_string(),
                http_only: c.http_only().unwrap_or(false),
                secure: c.secure().unwrap_or(false),
                same_site: c.same_site().map(|s| s.to_string()),
                path: c.path().map(str::to_string),
            })
            .collect())
    }

    async fn find_all(
        &self,
        selector: &str,
    ) -> Result<Vec<fantoccini::elements::Element>, BrowserError> {
        self.client
            .find_all(Locator::Css(selector))
            .await
            .map_err(cmd(format!("looking for `{selector}`")))
    }

    async fn first(&self, selector: &str) -> Result<fantoccini::elements::Element, BrowserError> {
        let deadline = Instant::now() + self.patience;
        loop {
            if let Some(element) = self.find_all(selector).await?.into_iter().next() {
                return Ok(element);
            }
            if Instant::now() >= deadline {
                return Err(self
                    .timeout(format!(
                        "no element matches `{selector}` after {:?}",
                        self.patience
                    ))
                    .await);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// `action` on the first element matching `selector`, found again if the page replaced it
    /// in between (a dashboard re-renders what it polls).
    async fn with_first<T, F, Fut>(
        &self,
        selector: &str,
        doing: &str,
        action: F,
    ) -> Result<T, BrowserError>
    where
        F: Fn(fantoccini::elements::Element) -> Fut,
        Fut: Future<Output = Result<T, CmdError>>,
    {
        let deadline = Instant::now() + self.patience;
        loop {
            let element = self.first(selector).await?;
            match action(element).await {
                Err(e) if e.is_stale_element_reference() && Instant::now() < deadline => {}
                other => return other.map_err(cmd(format!("{doing} `{selector}`"))),
            }
        }
    }

    /// Wait until a dialog is open; its message.
    async fn dialog(&self) -> Result<String, BrowserError> {
        let deadline = Instant::now() + self.patience;
        loop {
            match self.client.get_alert_text().await {
                Ok(message) => return Ok(message),
                Err(e) if e.is_no_such_alert() => {}
                Err(e) => return Err(cmd("looking for a dialog")(e)),
            }
            if Instant::now() >= deadline {
                return Err(self
                    .timeout(format!(
                        "no dialog (confirm, alert or prompt) opened within {:?}",
                        self.patience
                    ))
                    .await);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// A timeout error naming `what` was awaited, with where the browser is and what it shows.
    async fn timeout(&self, what: String) -> BrowserError {
        let url = match self.client.current_url().await {
            Ok(url) => url.to_string(),
            Err(e) => format!("(unknown: {e})"),
        };
        let text = match self
            .client
            .execute(
                "return document.body ? document.body.innerText : '';",
                vec![],
            )
            .await
        {
            Ok(Value::String(text)) => quote_page_text(&text),
            Ok(other) => format!("(not text: {other})"),
            Err(e) => format!("(unavailable: {e})"),
        };
        BrowserError::Timeout(format!("{what}; at {url} the page's text is:\n{text}"))
    }
}

fn quote_page_text(text: &str) -> String {
    match text.char_indices().nth(PAGE_TEXT_LIMIT) {
        Some((cut, _)) => format!(
            "{}… ({} characters in all)",
            &text[..cut],
            text.chars().count()
        ),
        None => text.to_string(),
    }
}

/// `goog:chromeOptions` for a headless session with its own profile; timeouts so that a page or
/// script that hangs fails the test instead of WebDriver's default 300 s.
fn capabilities(binaries: &BrowserBinaries, profile: &Path) -> serde_json::Map<String, Value> {
    let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| a.to_string()).collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("browserName".into(), json!("chrome"));
    capabilities.insert(
        "timeouts".into(),
        json!({"pageLoad": 30_000, "script": 30_000, "implicit": 0}),
    );
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({"binary": binaries.chromium.display().to_string(), "args": args}),
    );
    capabilities
}

/// chromedriver's shell: when the test binary dies without dropping the [`Browser`] (abort,
/// SIGKILL, Ctrl-C), the kernel sends the shell SIGTERM (its parent-death signal) and the trap
/// kills the whole group. The kernel alone would only stop the shell's direct child, and Chromium
/// outlives chromedriver. chromedriver runs in the background because `wait`, unlike a
/// foreground command, lets the trap run at once; the shell exits with chromedriver's status.
const WATCHDOG: &str = r#"trap 'kill -9 0' TERM; "$0" "$@" & wait $!"#;

/// chromedriver on a loopback port under [`WATCHDOG`], leading its own process group; the group
/// is killed on drop.
struct Driver {
    process: Supervised,
    url: String,
    log: PathBuf,
    profile: PathBuf,
    /// Holds `profile/` (Chromium's `--user-data-dir`) and chromedriver's log; removed after
    /// the kill.
    _dir: tempfile::TempDir,
}

impl Driver {
    fn start(binaries: &BrowserBinaries) -> Result<Driver, BrowserError> {
        let dir = tempfile::Builder::new()
            .prefix("promotion-browser-")
            .tempdir()
            .map_err(io("creating the browser's folder"))?;
        let (profile, log) = (
            dir.path().join("profile"),
            dir.path().join("chromedriver.log"),
        );
        std::fs::create_dir(&profile).map_err(io(format!("creating {}", profile.display())))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(io("finding a free loopback port"))?;
        let file =
            std::fs::File::create(&log).map_err(io(format!("creating {}", log.display())))?;
        let err = file
            .try_clone()
            .map_err(io(format!("opening {}", log.display())))?;
        let mut command = Command::new("/bin/sh");
        // `--enable-chrome-logs`: Chromium's own stderr goes to the log too, so a browser that
        // cannot start says why in the error.
        command
            .args(["-c", WATCHDOG])
            .arg(&binaries.chromedriver)
            .arg(format!("--port={port}"))
            .arg("--enable-chrome-logs")
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            // Its own group, which chromedriver and Chromium's processes join: one kill on drop
            // ends them all.
            .process_group(0);
        // The pages under test are on loopback; a proxy from the environment must not see them.
        for var in [
            "http_proxy",
            "https_proxy",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "all_proxy",
            "ALL_PROXY",
        ] {
            command.env_remove(var);
        }
        command
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("no_proxy", "127.0.0.1,localhost");
        let process = process::spawn_with_death_signal("chromedriver", command, libc::SIGTERM)
            .map_err(io(format!("starting {}", binaries.chromedriver.display())))?;
        // Made now so that a failed wait still kills and removes what was started.
        let mut driver = Driver {
            process,
            url: format!("http://127.0.0.1:{port}"),
            log,
            profile,
            _dir: dir,
        };
        driver.wait_ready(SocketAddr::from(([127, 0, 0, 1], port)))?;
        Ok(driver)
    }

    /// Poll `/status` until chromedriver says it takes new sessions.
    fn wait_ready(&mut self, addr: SocketAddr) -> Result<(), BrowserError> {
        let deadline = Instant::now() + DRIVER_PATIENCE;
        loop {
            if status_ready(addr) {
                return Ok(());
            }
            let why = if let Some(status) = self.process.exited() {
                format!("it exited: {status}")
            } else if Instant::now() >= deadline {
                "timed out".to_string()
            } else {
                std::thread::sleep(POLL);
                continue;
            };
            return Err(BrowserError::DriverNotReady {
                patience: DRIVER_PATIENCE,
                why,
                tail: self.log_tail(),
            });
        }
    }

    /// The last lines of chromedriver's log (Chromium's included).
    fn log_tail(&self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = std::fs::File::open(&self.log) {
            let _ = file.read_to_string(&mut text);
        }
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

/// `GET /status` says `"ready": true`. chromedriver keeps the connection open after its answer
/// despite `Connection: close`, so the body is read by its `Content-Length`, not to the end.
fn status_ready(addr: SocketAddr) -> bool {
    let answer = || -> std::io::Result<Vec<u8>> {
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        write!(
            stream,
            "GET /status HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )?;
        let mut received = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Ok(received);
            }
            received.extend_from_slice(&chunk[..n]);
            if let Some(body) = complete_body(&received) {
                return Ok(body.to_vec());
            }
        }
    };
    let Ok(body) = answer() else {
        return false;
    };
    serde_json::from_slice::<Value>(&body).is_ok_and(|s| s["value"]["ready"] == json!(true))
}

/// The body of a complete `200` response with a `Content-Length`, once all of it has arrived.
fn complete_body(response: &[u8]) -> Option<&[u8]> {
    let end = response.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&response[..end]).ok()?;
    if head.split_whitespace().nth(1) != Some("200") {
        return None;
    }
    let length: usize = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })?;
    response[end + 4..].get(..length)
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The group is the shell's PID. While any of its members lives the kernel does not hand
        // that number out again, so this reaches our processes or none (ESRCH).
        if let Ok(group) = libc::pid_t::try_from(self.process.pid()) {
            // SAFETY: killpg takes plain integers and touches no memory of ours.
            unsafe {
                libc::killpg(group, libc::SIGKILL);
            }
        }
        // Reap the shell (chromedriver and Chromium's processes are its descendants: once
        // orphaned, init reaps them).
        self.process.stop();
    }
}

/// Where to look, in order: the fixed paths, then each name on `PATH`.
fn candidates(paths: &[&str], names: &[&str], path_var: &OsString) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    for name in names {
        found.extend(std::env::split_paths(path_var).map(|dir| dir.join(name)));
    }
    found
}

/// The binary named by `var` when set (a path, or a name on `PATH`), else the first executable
/// candidate. `Err` says what is missing, for the hint.
fn locate(
    var: &str,
    value: Option<OsString>,
    candidates: &[PathBuf],
    path_var: &OsString,
) -> Result<PathBuf, String> {
    match value.filter(|v| !v.is_empty()) {
        Some(value) => {
            let named = PathBuf::from(&value);
            let resolved = if named.components().count() > 1 {
                // A relative path is taken from the workspace root, since `cargo test` runs each
                // test binary in its package's folder.
                Some(crate::bins::workspace_root().join(named))
            } else {
                std::env::split_paths(path_var)
                    .map(|dir| dir.join(&named))
                    .find(|p| executable(p))
            };
            resolved.filter(|p| executable(p)).ok_or_else(|| {
                format!(
                    "{var}={} is not an executable file",
                    value.to_string_lossy()
                )
            })
        }
        None => candidates
            .iter()
            .find(|p| executable(p))
            .cloned()
            .ok_or_else(String::new),
    }
}

fn executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Both binaries, or why not: `Err("")` from [`locate`] means "not found anywhere".
fn found(
    chromium: Result<PathBuf, String>,
    chromedriver: Result<PathBuf, String>,
    ci: bool,
) -> Result<BrowserBinaries, Skip> {
    let reason = match (chromium, chromedriver) {
        (Ok(chromium), Ok(chromedriver)) => {
            return Ok(BrowserBinaries {
                chromium,
                chromedriver,
            })
        }
        (Err(a), Err(b)) if a.is_empty() && b.is_empty() => "no chromium/chromedriver".to_string(),
        (chromium, chromedriver) => [("chromium", chromium), ("chromedriver", chromedriver)]
            .into_iter()
            .filter_map(|(name, r)| match r {
                Err(e) if e.is_empty() => Some(format!("no {name}")),
                Err(e) => Some(e),
                Ok(_) => None,
            })
            .collect::<Vec<_>>()
            .join(", "),
    };
    Err(Skip { reason, ci })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_executable(path: &Path, mode: u32) {
        std::fs::write(path, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    #[test]
    fn the_first_executable_candidate_is_taken() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (plain, exe) = (dir.path().join("plain"), dir.path().join("exe"));
        write_executable(&plain, 0o644);
        write_executable(&exe, 0o755);
        let none = OsString::new();
        let got = locate(
            "X",
            None,
            &[dir.path().join("missing"), plain, exe.clone()],
            &none,
        );
        assert_eq!(got, Ok(exe));
    }

    #[test]
    fn a_variable_names_a_path_or_a_name_on_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = dir.path().join("my-chromium");
        write_executable(&exe, 0o755);
        let path_var = std::env::join_paths([dir.path()]).expect("PATH");
        let by_path = locate("V", Some(exe.clone().into()), &[], &OsString::new());
        assert_eq!(by_path, Ok(exe.clone()));
        let by_name = locate("V", Some("my-chromium".into()), &[], &path_var);
        assert_eq!(by_name, Ok(exe));
        // A variable that names nothing is an error of its own, not a fall-back to the defaults.
        let wrong = locate(
            "V",
            Some("/nowhere/chromium".into()),
            &[dir.path().join("my-chromium")],
            &path_var,
        );
        assert_eq!(
            wrong,
            Err("V=/nowhere/chromium is not an executable file".into())
        );
    }

    #[test]
    fn nothing_found_skips_on_a_workstation_and_fails_in_ci() {
        let missing = || Err(String::new());
        let skip = found(missing(), missing(), false).expect_err("nothing found");
        assert!(!skip.must_fail());
        assert_eq!(
            skip.hint(),
            "browser tests skipped: no chromium/chromedriver (install Debian's chromium and \
             chromium-driver, or set PROMOTION_E2E_CHROMIUM / PROMOTION_E2E_CHROMEDRIVER)"
        );
        let in_ci = found(Ok("/usr/bin/chromium".into()), missing(), true).expect_err("no driver");
        assert!(in_ci.must_fail());
        assert!(in_ci.to_string().starts_with("CI=true"), "{in_ci}");
        assert!(in_ci.to_string().contains("no chromedriver ("), "{in_ci}");
        let result = std::panic::catch_unwind(|| in_ci.skip_or_fail());
        assert!(result.is_err(), "under CI a missing browser fails the test");
    }

    #[test]
    fn a_status_body_is_complete_by_its_length() {
        let head = "HTTP/1.1 200 OK\r\nContent-Length:11\r\nConnection:close\r\n\r\n";
        assert_eq!(
            complete_body(format!("{head}{{\"value\":1").as_bytes()),
            None
        );
        let whole = format!("{head}{{\"value\":1}}");
        assert_eq!(complete_body(whole.as_bytes()), Some(&b"{\"value\":1}"[..]));
        let refused = "HTTP/1.1 500 Internal\r\nContent-Length:2\r\n\r\n{}";
        assert_eq!(complete_body(refused.as_bytes()), None);
    }

    #[test]
    fn long_page_text_is_cut_on_a_character_boundary() {
        let text = "é".repeat(PAGE_TEXT_LIMIT + 5);
        let quoted = quote_page_text(&text);
        assert!(quoted.ends_with(&format!("… ({} characters in all)", PAGE_TEXT_LIMIT + 5)));
        assert_eq!(quote_page_text("short"), "short");
    }
}
