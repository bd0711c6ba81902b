//! `-v=N`: every request to the API server logged on stderr as kubectl logs it, in klog's line
//! format. `-v=6`: method, URL, status and latency (`GET https://… 200 OK in 3 milliseconds`);
//! `-v=7` and above: also the request headers the plugin set (a bearer token masked, as kubectl
//! masks it; the section is left out when there are none) and the response headers. Response bodies are not logged (kubectl's `-v=8`): reading them here
//! would hold back watch streams.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use http::{HeaderMap, Request, Response};
use tower::{Layer, Service};

/// The first level at which requests are logged.
pub const REQUESTS: u8 = 6;
/// The first level at which headers are logged too.
pub const HEADERS: u8 = 7;

#[derive(Clone)]
pub struct RequestLog {
    level: u8,
    server: String,
}

impl RequestLog {
    /// `None` below [`REQUESTS`]: nothing to log, no layer.
    pub fn new(level: u8, server: &str) -> Option<RequestLog> {
        (level >= REQUESTS).then(|| RequestLog {
            level,
            server: server.trim_end_matches('/').to_string(),
        })
    }
}

impl<S> Layer<S> for RequestLog {
    type Service = Logged<S>;

    fn layer(&self, inner: S) -> Logged<S> {
        Logged {
            inner,
            log: self.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Logged<S> {
    inner: S,
    log: RequestLog,
}

type Boxed<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, B, RB> Service<Request<B>> for Logged<S>
where
    S: Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display + 'static,
    RB: 'static,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = Boxed<Response<RB>, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let method = req.method().clone();
        let url = tidy_query(&if req.uri().scheme().is_some() {
            req.uri().to_string()
        } else {
            format!("{}{}", self.log.server, req.uri())
        });
        if self.log.level >= HEADERS {
            line(&format!("{method} {url}"));
            headers("Request Headers", req.headers());
        }
        let level = self.log.level;
        let started = Instant::now();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let result = fut.await;
            let ms = started.elapsed().as_millis();
            match &result {
                Ok(res) => {
                    let status = res.status();
                    let reason = status.canonical_reason().unwrap_or("");
                    line(&format!(
                        "{method} {url} {} {reason} in {ms} milliseconds",
                        status.as_u16()
                    ));
                    if level >= HEADERS {
                        headers("Response Headers", res.headers());
                    }
                }
                Err(e) => line(&format!("{method} {url}  in {ms} milliseconds: {e}")),
            }
            result
        })
    }
}

/// One klog line: `I1124 09:05:01.123456   12345 request_log.rs] text`.
fn line(text: &str) {
    let now = chrono::Utc::now();
    eprintln!(
        "I{} {:>7} request_log.rs] {text}",
        now.format("%m%d %H:%M:%S%.6f"),
        std::process::id()
    );
}

fn headers(title: &str, map: &HeaderMap) {
    // This layer sits above kube's own (credentials, impersonation), which add their headers
    // later: a request may have none yet, and an empty section says nothing.
    if map.is_empty() {
        return;
    }
    line(&format!("{title}:"));
    for (name, value) in map {
        let shown = if name == http::header::AUTHORIZATION {
            mask(value.to_str().unwrap_or(""))
        } else {
            String::from_utf8_lossy(value.as_bytes()).into_owned()
        };
        line(&format!("    {name}: {shown}"));
    }
}

/// kubectl's `maskValue`: the scheme stays, the credential becomes `<masked>`.
fn mask(value: &str) -> String {
    match value.split_once(' ') {
        Some((scheme, _)) => format!("{scheme} <masked>"),
        None => "<masked>".to_string(),
    }
}

/// kube writes a list's query as `?&labelSelector=…`, or a bare `?` when there is none; kubectl
/// logs `?labelSelector=…` and no `?` at all.
fn tidy_query(url: &str) -> String {
    let url = url.replacen("?&", "?", 1);
    url.strip_suffix('?').map(str::to_string).unwrap_or(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_masked_and_low_levels_log_nothing() {
        assert_eq!(mask("Bearer abc.def"), "Bearer <masked>");
        assert_eq!(mask("secret"), "<masked>");
        assert!(RequestLog::new(5, "https://x").is_none());
        assert!(RequestLog::new(6, "https://x/").is_some());
    }
}
