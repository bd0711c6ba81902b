//! `/metrics` (Prometheus text) and `/healthz` `/readyz` over plain HTTP, each on its own
//! listener as kube-controller-manager and controller-runtime serve them.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;

use super::metrics::Metrics;
use super::stores::Stores;

pub async fn bind(addr: &str, what: &str) -> Result<TcpListener, String> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--{what}-listen {addr}: {e}"))
}

pub fn serve_metrics(listener: TcpListener, metrics: Arc<Metrics>) {
    let app = Router::new()
        .route("/metrics", get(render))
        .with_state(metrics);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
}

async fn render(State(metrics): State<Arc<Metrics>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics.render(),
    )
}

/// `/healthz`: the process serves. `/readyz`: every required watch has listed once (a standby
/// replica is ready: its caches are warm for a takeover).
pub fn serve_health(listener: TcpListener, stores: Arc<Stores>) {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .with_state(stores);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
}

async fn ready(State(stores): State<Arc<Stores>>) -> impl IntoResponse {
    if stores.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not listed yet")
    }
}
