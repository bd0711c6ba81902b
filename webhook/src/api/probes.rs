//! The plain-HTTP side: /metrics, /healthz (liveness), /readyz (readiness, fails from SIGTERM
//! on so endpoints stop routing here before the listener closes).

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use super::{AppState, LIVENESS_PATH, METRICS_PATH, READINESS_PATH};

pub fn probes_router(state: AppState) -> Router {
    Router::new()
        .route(METRICS_PATH, get(metrics))
        .route(LIVENESS_PATH, get(healthz))
        .route(READINESS_PATH, get(readyz))
        .with_state(state)
}

async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(),
    )
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(state): State<AppState>) -> (StatusCode, &'static str) {
    if state.is_draining() {
        (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
    } else {
        (StatusCode::OK, "ok\n")
    }
}
