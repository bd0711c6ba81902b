//! `-v=N`: every request to the API server logged on stderr as kubectl logs it, in klog's line
//! format. `-v=6`: method, URL, status and latency (`GET https://… 200 OK in 3 milliseconds`);
//! `-v=7` and above: also the request headers as they go out (a bearer token masked, as kubectl
//! masks it) and the response headers. Response bodies are not logged (kubectl's `-v=8`):
//! reading them here would hold back watch streams.
//!
//! kube's builder adds this layer above its own, which set the credentials, `--as`
//! impersonation and the kubeconfig's extra headers later: what this layer sees is not yet what
//! is sent. So the headers are shown as kube's very layers ([`ConfigExt::auth_layer`],
//! [`ConfigExt::extra_headers_layer`], built from the same `Config`) make them, run on a copy of
//! each request.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use http::{HeaderMap, Request, Response};
use kube::client::{Body, ConfigExt};
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Layer, Service, ServiceBuilder, ServiceExt};

/// The first level at which requests are logged.
pub const REQUESTS: u8 = 6;
/// The first level at which headers are logged too.
pub const HEADERS: u8 = 7;

/// kube's header-setting layers over a service that answers with the request's headers.
type HeaderProbe = BoxCloneSyncService<Request<Body>, HeaderMap, BoxError>;

#[derive(Clone)]
pub struct RequestLog {
    level: u8,
    server: String,
    /// From [`HEADERS`] on: the headers kube's lower layers add.
    probe: Option<HeaderProbe>,
}

impl RequestLog {
    /// `None` below [`REQUESTS`]: nothing to log, no layer. `config` is the one the client is
    /// built from.
    pub fn new(level: u8, server: &str, config: &kube::Config) -> kube::Result<Option<RequestLog>> {
        if level < REQUESTS {
            return Ok(None);
        }
        let probe = if level >= HEADERS {
            let echo = tower::service_fn(|req: Request<Body>| async move {
                let mut answer = Response::new(());
                *answer.headers_mut() = req.headers().clone();
                Ok::<_, BoxError>(answer)
            });
            let service = ServiceBuilder::new()
                .option_layer(config.auth_layer()?)
                .layer(config.extra_headers_layer()?)
                .service(echo)
                .map_response(|answer: Response<()>| answer.headers().clone());
            Some(BoxCloneSyncService::new(service))
        } else {
            None
        };
        Ok(Some(RequestLog {
            level,
            server: server.trim_end_matches('/').to_string(),
            probe,
        }))
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
        // The copy the probe runs on: method, URI and the headers set so far, no body.
        let copy = self.log.probe.clone().map(|probe| {
            let mut copy = Request::new(Body::empty());
            *copy.method_mut() = req.method().clone();
            *copy.uri_mut() = req.uri().clone();
            *copy.headers_mut() = req.headers().clone();
            (probe, copy)
        });
        let set_so_far = req.headers().clone();
        let level = self.log.level;
        let started = Instant::now();
        let fut = self.inner.call(req);
        Box::pin(async move {
            if level >= HEADERS {
                line(&format!("{method} {url}"));
                let sent = match copy {
                    // Credentials that cannot be had fail the request itself, which says why.
                    Some((probe, copy)) => probe.oneshot(copy).await.unwrap_or(set_so_far),
                    None => set_so_far,
                };
                headers("Request Headers", &sent);
            }
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
    // A request without credentials or extra headers has none: an empty section says nothing.
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
        line(&format!("    {}: {shown}", canonical(name.as_str())));
    }
}

/// Go's canonical form of a header name (`textproto.CanonicalMIMEHeaderKey`), as kubectl prints
/// it: `Impersonate-User`, where the http crate keeps names in lower case.
fn canonical(name: &str) -> String {
    let mut upper = true;
    name.chars()
        .map(|c| {
            let shown = if upper { c.to_ascii_uppercase() } else { c };
            upper = c == '-';
            shown
        })
        .collect()
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
        let config = kube::Config::new("https://x".parse().unwrap());
        assert!(RequestLog::new(5, "https://x", &config).unwrap().is_none());
        assert_eq!(canonical("impersonate-user"), "Impersonate-User");
        assert_eq!(canonical("authorization"), "Authorization");
        assert!(RequestLog::new(6, "https://x/", &config).unwrap().is_some());
    }
}
