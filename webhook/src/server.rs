//! `serve`: both listeners, certificate reload, and the shutdown sequence.
//!
//! Shutdown on SIGTERM (or SIGINT), following what the API server needs (kubernetes#127335: it
//! keeps using open keep-alive connections to terminating webhook pods):
//! 1. /readyz fails at once and every HTTP/1 response carries `Connection: close`;
//! 2. serving goes on for `--shutdown-delay`, while endpoints stop routing here;
//! 3. the listener closes, in-flight requests get `--shutdown-grace-period` to finish, HTTP/2
//!    connections get a GOAWAY;
//! 4. the process exits 0.

use std::future::IntoFuture;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum_server::tls_rustls::RustlsConfig;
use axum_server::Handle;

use crate::api::{self, probes, AppState};
use crate::config::ServeConfig;
use crate::connection_timer::ConnectionTimer;
use crate::evaluation::Evaluator;
use crate::governance::{self, GovernanceDirError, GovernanceReloader};
use crate::metrics::Metrics;
use crate::tls::{self, Reloader, TlsError};

/// The validation engine's parsers recurse (bounded by input caps); on a thread with less stack
/// than this every validation would map a fresh stack (tens of µs and page faults per request).
/// Evaluations run on both kinds of runtime thread (`api::evaluations`: cheap ones on the async
/// workers, expensive ones on the blocking threads), and tokio has one stack size for both.
/// Reserved address space only: pages are committed as deep as a parse actually goes.
const THREAD_STACK_BYTES: usize = promotion_shared::validation::VALIDATION_STACK_BYTES;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("serving certificate: {0}")]
    Tls(#[from] TlsError),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
    #[error("cannot start the runtime or its threads: {0}")]
    Runtime(io::Error),
    #[error("cannot install signal handlers: {0}")]
    Signals(io::Error),
    #[error("HTTPS server failed: {0}")]
    Serve(io::Error),
    #[error(transparent)]
    Governance(#[from] GovernanceDirError),
}

pub fn serve(config: ServeConfig) -> Result<(), ServeError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(THREAD_STACK_BYTES)
        .build()
        .map_err(ServeError::Runtime)?
        .block_on(run(config))
}

async fn run(config: ServeConfig) -> Result<(), ServeError> {
    let published = match &config.governance_dir {
        Some(dir) => Some((dir.clone(), governance::read_dir(dir)?)),
        None => None,
    };
    let loaded = tls::load(&config.tls)?;
    let metrics = Arc::new(Metrics::new());
    let rustls = RustlsConfig::from_config(loaded.config.clone());
    let stop_reload = Arc::new(AtomicBool::new(false));
    let reloader = Reloader::new(rustls.clone(), config.tls.clone(), metrics.clone(), &loaded)
        .spawn(stop_reload.clone())
        .map_err(ServeError::Runtime)?;

    let evaluator = Evaluator::new(config.policy.clone());
    let governance_reloader = match published {
        Some((dir, rules)) => {
            evaluator.set_policy(rules.policy(config.policy.controller_users.clone()));
            let reloader = GovernanceReloader::new(
                dir,
                config.policy.controller_users.clone(),
                evaluator.clone(),
                rules,
            );
            Some(
                reloader
                    .spawn(config.tls.reload_interval, stop_reload.clone())
                    .map_err(ServeError::Runtime)?,
            )
        }
        None => None,
    };
    let policy = evaluator.policy();
    let state = AppState::new(evaluator, metrics.clone(), config.limits);

    let https_listener = bind(config.listen)?;
    let https_addr = local_addr(&https_listener, config.listen)?;
    let probes_listener = bind(config.metrics_listen)?;
    let probes_addr = local_addr(&probes_listener, config.metrics_listen)?;
    let probes_listener =
        tokio::net::TcpListener::from_std(probes_listener).map_err(|source| ServeError::Bind {
            addr: config.metrics_listen,
            source,
        })?;

    let handle: Handle<SocketAddr> = Handle::new();
    let mut server = axum_server::from_tcp_rustls(https_listener, rustls)
        .map_err(|source| ServeError::Bind {
            addr: config.listen,
            source,
        })?
        .map(|acceptor| acceptor.handshake_timeout(config.limits.header_read_timeout))
        .handle(handle.clone());
    // One timer for both protocols; see connection_timer for why not tokio's.
    let timer = ConnectionTimer::start().map_err(ServeError::Runtime)?;
    server
        .http_builder()
        .http1()
        .timer(timer.clone())
        .header_read_timeout(config.limits.header_read_timeout);
    server
        .http_builder()
        .http2()
        .timer(timer)
        .keep_alive_interval(Some(Duration::from_secs(30)));
    let https = tokio::spawn(server.serve(api::admission_router(state).into_make_service()));

    let (stop_probes, probes_stopped) = tokio::sync::oneshot::channel::<()>();
    let probes = tokio::spawn(
        axum::serve(probes_listener, probes::probes_router(state))
            .with_graceful_shutdown(async {
                let _ = probes_stopped.await;
            })
            .into_future(),
    );

    tracing::info!(
        https = %https_addr,
        metrics = %probes_addr,
        approver_groups = ?policy.approver_groups,
        forbid_self_approval = policy.forbid_self_approval,
        controller_users = ?policy.controller_users,
        controller_users_from = %config.controller_users_from,
        governance_dir = ?config.governance_dir,
        max_concurrent_evaluations = config.limits.max_concurrent_evaluations.get(),
        "listening"
    );

    wait_for_signal().await?;
    state.start_draining();
    tracing::info!(
        delay_ms = millis(config.shutdown.delay),
        grace_period_ms = millis(config.shutdown.grace_period),
        "shutdown signal received; /readyz fails from now on"
    );
    tokio::time::sleep(config.shutdown.delay).await;
    tracing::info!(
        connections = handle.connection_count(),
        "closing the listener and draining connections"
    );
    handle.graceful_shutdown(Some(config.shutdown.grace_period));
    let served = https.await;

    stop_reload.store(true, Ordering::Relaxed);
    let _ = stop_probes.send(());
    let _ = probes.await;
    drop(reloader);
    drop(governance_reloader);

    match served {
        Ok(Ok(())) => {
            tracing::info!("shutdown complete");
            Ok(())
        }
        Ok(Err(e)) => Err(ServeError::Serve(e)),
        Err(e) => Err(ServeError::Serve(io::Error::other(e))),
    }
}

fn bind(addr: SocketAddr) -> Result<std::net::TcpListener, ServeError> {
    let error = |source| ServeError::Bind { addr, source };
    let listener = std::net::TcpListener::bind(addr).map_err(error)?;
    listener.set_nonblocking(true).map_err(error)?;
    Ok(listener)
}

fn local_addr(
    listener: &std::net::TcpListener,
    addr: SocketAddr,
) -> Result<SocketAddr, ServeError> {
    listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })
}

async fn wait_for_signal() -> Result<(), ServeError> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate()).map_err(ServeError::Signals)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(ServeError::Signals)?;
    tokio::select! {
        _ = terminate.recv() => {},
        _ = interrupt.recv() => {},
    }
    Ok(())
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
