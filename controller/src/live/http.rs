//! `/metrics` (Prometheus text) and `/healthz` `/readyz` over plain HTTP, each on its own
//! listener as kube-controller-manager and controller-runtime serve them.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;

use tokio::sync::watch;

use super::leader::Leadership;
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

/// `/healthz`: the process serves — an API server outage does not fail it (a control-plane
/// upgrade would otherwise restart every replica). `/readyz`: every required watch has listed
/// once (a standby replica is ready: its caches are warm for a takeover) and the API server
/// answers this replica's leader election; otherwise it says why it cannot make progress.
pub fn serve_health(
    listener: TcpListener,
    stores: Arc<Stores>,
    leadership: watch::Receiver<Leadership>,
) {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .with_state((stores, leadership));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
}

async fn ready(
    State((stores, leadership)): State<(Arc<Stores>, watch::Receiver<Leadership>)>,
) -> impl IntoResponse {
    let unlisted = stores.unlisted();
    if !unlisted.is_empty() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("caches not listed yet: {unlisted:?}"),
        );
    }
    if !leadership.borrow().reachable {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "cannot make progress: the API server does not answer this replica's leader election"
                .to_string(),
        );
    }
    (StatusCode::OK, "ok".to_string())
}
