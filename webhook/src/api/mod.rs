//! HTTP only: the admission router (HTTPS) and the probes router (plain HTTP), the body limit,
//! and the errors that are not admission answers. A handler reads the body and hands the bytes to
//! [`crate::evaluation::Evaluator`], which decodes, decides and encodes, expensive reviews on a
//! blocking thread ([`evaluations`]); nothing here knows the AdmissionReview format or any
//! admission rule. Used
//! by [`crate::server`] (and by tests that put their own routes behind [`protect`]).

pub mod body;
mod draining;
pub mod error;
pub mod evaluations;
pub mod probes;

use std::any::Any;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, Response, Uri};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use tower_http::catch_panic::{CatchPanicLayer, ResponseForPanic};

use crate::config::Limits;
use crate::evaluation::Evaluator;
use crate::metrics::{Endpoint, Metrics, Verdict};
use error::ApiError;
use evaluations::Evaluations;

/// Everything the handlers share. It lives as long as the process, so it is held by a plain
/// reference: axum hands every request its own copy of the state (and each layer below keeps
/// one), and copies of a reference-counted state each touched a count shared by every core,
/// which on 2 cores cost a measurable part of a cheap review (admission_load, 16 connections).
/// Each state made is kept until the process ends: one per server, a few per test.
#[derive(Clone, Copy)]
pub struct AppState(&'static Shared);

pub struct Shared {
    pub evaluations: Evaluations,
    pub metrics: Arc<Metrics>,
    pub limits: Limits,
    draining: AtomicBool,
}

impl Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        self.0
    }
}

impl AppState {
    pub fn new(evaluator: Evaluator, metrics: Arc<Metrics>, limits: Limits) -> Self {
        let evaluations = Evaluations::new(
            evaluator,
            limits.max_concurrent_evaluations,
            metrics.clone(),
        );
        AppState(Box::leak(Box::new(Shared {
            evaluations,
            metrics,
            limits,
            draining: AtomicBool::new(false),
        })))
    }

    /// The same state with `hook` run before each evaluation, on the thread that evaluates
    /// (cargo feature `testing`): tests make evaluations slow or hold them with it. Called
    /// before serving: the copy does not share the draining flag with the original.
    #[cfg(feature = "testing")]
    pub fn with_evaluation_hook(self, hook: evaluations::EvaluationHook) -> Self {
        AppState(Box::leak(Box::new(Shared {
            evaluations: self.evaluations.clone().with_hook(hook),
            metrics: self.metrics.clone(),
            limits: self.limits,
            draining: AtomicBool::new(self.is_draining()),
        })))
    }

    /// From now on /readyz fails and HTTP/1 connections are closed after each response.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

/// Routes of the HTTPS admission listener (the webhook configurations' `clientConfig` paths).
pub const VALIDATE_PATH: &str = "/validate";
pub const MUTATE_PATH: &str = "/mutate";
/// Routes of the plain-HTTP listener (the Deployment's probes and the Prometheus scrape).
pub const METRICS_PATH: &str = "/metrics";
pub const LIVENESS_PATH: &str = "/healthz";
pub const READINESS_PATH: &str = "/readyz";

/// POST /validate and POST /mutate, with every protective layer.
pub fn admission_router(state: AppState) -> Router {
    let routes = Router::new()
        .route(VALIDATE_PATH, post(validate))
        .route(MUTATE_PATH, post(mutate))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state);
    protect(routes, state)
}

/// The layers every admission route gets, public so tests can put a route of their own behind
/// exactly the same stack.
pub fn protect(routes: Router, state: AppState) -> Router {
    routes
        .layer(draining::CloseWhileDrainingLayer::new(state))
        // Outermost, so that a panic anywhere below becomes a 500 and the connection lives on.
        .layer(CatchPanicLayer::custom(PanicResponse { state }))
}

async fn validate(State(state): State<AppState>, request: Request) -> Response<Body> {
    admit(state, Endpoint::Validate, request).await
}

async fn mutate(State(state): State<AppState>, request: Request) -> Response<Body> {
    admit(state, Endpoint::Mutate, request).await
}

async fn admit(state: AppState, endpoint: Endpoint, request: Request) -> Response<Body> {
    let started = Instant::now();
    let _in_flight = state.metrics.in_flight();
    let limits = state.limits;
    let declared_length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    // Everything the request timeout bounds: the body, the wait for an evaluation slot and the
    // evaluation (an expensive one on a blocking thread, so the timeout can fire while it runs;
    // it then finishes in the background; a cheap one takes at most about 100 µs).
    let work = async {
        let body =
            body::read_limited(request.into_body(), declared_length, limits.max_body_bytes).await?;
        state.evaluations.review(endpoint, body).await
    };
    // The deadline from the start already read, not from a second reading of the clock (a
    // timeout too long to add is no deadline, as `tokio::time::timeout` takes it).
    let outcome = match started.checked_add(limits.request_timeout) {
        Some(deadline) => tokio::time::timeout_at(deadline.into(), work).await,
        None => Ok(work.await),
    }
    .unwrap_or(Err(ApiError::Timeout(limits.request_timeout)));
    let elapsed = started.elapsed();
    match outcome {
        Ok(review) => {
            let summary = &review.summary;
            state
                .metrics
                .record(endpoint, summary.operation, summary.verdict(), elapsed);
            tracing::info!(
                endpoint = endpoint.as_str(),
                // As &str, not `%` (Display): recorded directly instead of formatted into a
                // temporary String first.
                uid = summary.uid.as_str(),
                operation = summary.operation,
                name = summary.name.as_str(),
                user = summary.user.as_str(),
                allowed = summary.allowed,
                code = summary.code,
                patched = summary.patched,
                dry_run = summary.dry_run,
                warnings = summary.warnings,
                duration_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
                "admission"
            );
            let mut response = Response::new(Body::from(review.body));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(error) => {
            state
                .metrics
                .record(endpoint, "unknown", Verdict::Error, elapsed);
            state.metrics.record_http_error(error.status().as_u16());
            tracing::warn!(
                endpoint = endpoint.as_str(),
                status = error.status().as_u16(),
                error = %error,
                duration_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
                "admission request failed"
            );
            error.into_response()
        }
    }
}

async fn not_found(State(state): State<AppState>, uri: Uri) -> Response<Body> {
    state.metrics.record_http_error(404);
    ApiError::NotFound(uri.path().to_string()).into_response()
}

async fn method_not_allowed(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
) -> Response<Body> {
    state.metrics.record_http_error(405);
    ApiError::MethodNotAllowed {
        method: method.to_string(),
        path: uri.path().to_string(),
    }
    .into_response()
}

#[derive(Clone)]
struct PanicResponse {
    state: AppState,
}

impl ResponseForPanic for PanicResponse {
    type ResponseBody = Body;

    fn response_for_panic(&mut self, panic: Box<dyn Any + Send + 'static>) -> Response<Body> {
        let detail = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic payload".to_string());
        self.state.metrics.record_panic();
        tracing::error!(panic = %detail, "request handler panicked");
        ApiError::Internal("the request handler failed; the server is still running".into())
            .into_response()
    }
}
