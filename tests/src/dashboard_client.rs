//! A blocking HTTP client for `kubectl promotion dashboard`, as a browser talks to it: the
//! printed address (with its token) first, then the cookie it sets, the Host header of the
//! address, and the event streams read event by event. Over HTTPS with a given CA for a
//! dashboard served beyond loopback. Used by the dashboard's end-to-end tests and benchmark.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as Hyper;

type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

/// One answer, whole.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One server-sent event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
    /// When it was read (for latency figures).
    pub at: Instant,
}

/// A dashboard, reached at the address it printed.
pub struct DashboardClient {
    rt: tokio::runtime::Runtime,
    http: Hyper<Connector, Full<Bytes>>,
    /// `http://127.0.0.1:PORT` (or https).
    pub origin: String,
    /// `127.0.0.1:PORT`: the Host header of every request.
    pub host: String,
    /// The path and query of the printed address (`/?token=…`).
    login_path: String,
    /// `promotion-dashboard=TOKEN`, once the login answered with it.
    pub cookie: Option<String>,
}

impl DashboardClient {
    /// For the address `url` the dashboard printed; `ca_pem` when it serves HTTPS.
    pub fn new(url: &str, ca_pem: Option<&str>) -> Result<DashboardClient, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| format!("not an address: {url:?}"))?;
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| format!("runtime: {e}"))?;
        let mut roots = rustls::RootCertStore::empty();
        if let Some(pem) = ca_pem {
            use rustls_pki_types::pem::PemObject;
            for cert in rustls_pki_types::CertificateDer::pem_slice_iter(pem.as_bytes()) {
                let cert = cert.map_err(|e| format!("CA PEM: {e}"))?;
                roots.add(cert).map_err(|e| format!("CA: {e}"))?;
            }
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        let http = Hyper::builder(hyper_util::rt::TokioExecutor::new()).build(connector);
        Ok(DashboardClient {
            rt,
            http,
            origin: format!("{scheme}://{host}"),
            host: host.to_string(),
            login_path: path.to_string(),
            cookie: None,
        })
    }

    /// GET the printed address, as a browser opening it: keeps the cookie it sets.
    pub fn login(&mut self) -> Result<Response, String> {
        let path = self.login_path.clone();
        let r = self.send("GET", &path, &[], "", false)?;
        if let Some(set) = r.header("set-cookie") {
            self.cookie = set.split(';').next().map(str::to_string);
        }
        Ok(r)
    }

    /// GET `path` with the cookie and the address's Host.
    pub fn get(&self, path: &str) -> Result<Response, String> {
        self.send("GET", path, &[], "", true)
    }

    /// POST an action's form from the dashboard's own page (its Origin).
    pub fn post_form(&self, path: &str, form: &str) -> Result<Response, String> {
        let origin = self.origin.clone();
        self.send(
            "POST",
            path,
            &[
                ("origin", origin.as_str()),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
            form,
            true,
        )
    }

    /// Any request: `headers` are added (a `host` among them replaces the address's);
    /// `with_cookie` sends the cookie.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
        with_cookie: bool,
    ) -> Result<Response, String> {
        let req = self.request(method, path, headers, body, with_cookie)?;
        let http = self.http.clone();
        self.rt.block_on(async move {
            let resp = tokio::time::timeout(Duration::from_secs(120), http.request(req))
                .await
                .map_err(|_| format!("{method} {path}: no answer in 120 s"))?
                .map_err(|e| format!("{method} {path}: {e}"))?;
            let status = resp.status().as_u16();
            let headers = resp
                .headers()
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_string(),
                        v.to_str().unwrap_or_default().to_string(),
                    )
                })
                .collect();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("{method} {path}: body: {e}"))?
                .to_bytes();
            Ok(Response {
                status,
                headers,
                body: String::from_utf8_lossy(&body).into_owned(),
            })
        })
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
        with_cookie: bool,
    ) -> Result<Request<Full<Bytes>>, String> {
        let mut b = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.origin));
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            b = b.header("host", &self.host);
        }
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        if with_cookie {
            if let Some(c) = &self.cookie {
                b = b.header("cookie", c);
            }
        }
        b.body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| format!("request: {e}"))
    }

    /// Open the event stream at `path`; its events are read in the background.
    pub fn events(&self, path: &str) -> Result<Events, String> {
        let req = self.request("GET", path, &[("accept", "text/event-stream")], "", true)?;
        let http = self.http.clone();
        let (tx, rx) = mpsc::channel();
        let opened = self.rt.block_on(async {
            let resp = http
                .request(req)
                .await
                .map_err(|e| format!("GET {path}: {e}"))?;
            Ok::<_, String>(resp)
        })?;
        let status = opened.status().as_u16();
        if status != 200 {
            return Err(format!("GET {path}: status {status}"));
        }
        let task = self.rt.spawn(async move {
            let mut body = opened.into_body();
            let mut buf = String::new();
            while let Some(frame) = body.frame().await {
                let Ok(frame) = frame else { return };
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                buf.push_str(&String::from_utf8_lossy(&data));
                // Events end with a blank line.
                while let Some(end) = buf.find("\n\n") {
                    let block: String = buf.drain(..end + 2).collect();
                    let mut event = String::from("message");
                    let mut data = Vec::new();
                    for line in block.lines() {
                        if let Some(v) = line.strip_prefix("event:") {
                            event = v.trim_start().to_string();
                        } else if let Some(v) = line.strip_prefix("data:") {
                            data.push(v.strip_prefix(' ').unwrap_or(v).to_string());
                        }
                    }
                    if data.is_empty() {
                        continue; // a comment: the keep-alive
                    }
                    let sent = tx.send(SseEvent {
                        event,
                        data: data.join("\n"),
                        at: Instant::now(),
                    });
                    if sent.is_err() {
                        return;
                    }
                }
            }
        });
        Ok(Events { rx, task })
    }
}

/// An open event stream.
pub struct Events {
    rx: Receiver<SseEvent>,
    task: tokio::task::JoinHandle<()>,
}

impl Events {
    /// The next event of kind `event` for which `matches` holds, within `patience`; the events
    /// passed over are returned with the error, to say what came instead.
    pub fn wait_for(
        &self,
        event: &str,
        patience: Duration,
        matches: impl Fn(&SseEvent) -> bool,
    ) -> Result<SseEvent, String> {
        self.wait_for_any(patience, |e| e.event == event && matches(e))
            .map_err(|why| format!("waiting for a {event:?} event: {why}"))
    }

    /// The next event of any kind for which `matches` holds, within `patience`.
    pub fn wait_for_any(
        &self,
        patience: Duration,
        matches: impl Fn(&SseEvent) -> bool,
    ) -> Result<SseEvent, String> {
        let deadline = Instant::now() + patience;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(e) if matches(&e) => return Ok(e),
                Ok(e) => seen.push(format!("{}: {:.300}", e.event, e.data)),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "no matching event within {patience:?}; seen instead:\n{}",
                        seen.join("\n")
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!(
                        "the stream ended before a matching event; seen:\n{}",
                        seen.join("\n")
                    ))
                }
            }
        }
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `kubectl promotion dashboard`, running: its printed address, and what it says on stderr.
pub struct DashboardProcess {
    child: std::process::Child,
    /// The address it printed (`http://127.0.0.1:PORT/?token=…`).
    pub url: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl DashboardProcess {
    /// Start `command` (the plugin with `dashboard …` arguments, its environment set) and wait
    /// for the address it prints, up to `patience`.
    pub fn start(
        mut command: std::process::Command,
        patience: Duration,
    ) -> Result<DashboardProcess, String> {
        use std::io::{BufRead, BufReader, Read};
        use std::process::Stdio;
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting the dashboard: {e}"))?;
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        if let Some(mut err) = child.stderr.take() {
            let kept = stderr.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut k) = kept.lock() {
                        k.push_str(&String::from_utf8_lossy(&buf[..n]));
                    }
                }
            });
        }
        let out = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + patience;
        let url = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(url) = line.strip_prefix("Dashboard: ") {
                        break url.trim().to_string();
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let said = stderr.lock().map(|s| s.clone()).unwrap_or_default();
                    return Err(format!(
                        "the dashboard printed no address within {patience:?}; stderr:\n{said}"
                    ));
                }
            }
        };
        Ok(DashboardProcess { child, url, stderr })
    }

    /// What it printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for DashboardProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
