//! `promotion-controller run`: connect as kubectl does, serve health and metrics, campaign for
//! the Lease (with `--leader-elect`), start the watches and the reconciler, and stop gracefully
//! on SIGTERM or Ctrl-C (in-flight reconciles finish; the Lease is released).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{Config as ControllerConfig, Controller};
use kube::runtime::{predicates, reflector, watcher, Predicate, WatchStreamExt};
use tokio::sync::watch;
use tracing::{info, warn};

use promotion_shared::api_resources::{PROFILE, PROMOTION};
use promotion_shared::reconcile::Options;

use crate::cli::{LogFormat, RunArgs};
use crate::error::{Error, Result};
use crate::live::events::Events;
use crate::live::history::History;
use crate::live::leader::{self, Election, Leadership};
use crate::live::metrics::Metrics;
use crate::live::reconciler::{self, Context};
use crate::live::stores::Stores;
use crate::live::watches::{self, Triggers};
use crate::live::writes::Writer;
use crate::live::{fault, http};
use crate::snapshot;

fn init_logging(args: &RunArgs) -> Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(&args.log_level)
        .map_err(|e| Error::Usage(format!("--log-level {:?}: {e}", args.log_level)))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = match args.log_format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
        // Colour only on a terminal: piped into a file or a log shipper, escape codes are noise.
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
    };
    installed.map_err(|e| Error::Cluster(format!("installing the logger: {e}")))
}

pub async fn run(args: &RunArgs) -> Result<()> {
    let window_zone: chrono_tz::Tz = args.window_time_zone.parse().map_err(|_| {
        Error::Usage(format!(
            "--window-time-zone {:?}: not an IANA time zone name (for example UTC, Europe/Paris)",
            args.window_time_zone
        ))
    })?;
    init_logging(args)?;
    // The Lease's holder and the User-Agent of every request: the audit log names the replica.
    let identity = leader::identity();
    let client = snapshot::client(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
        Some(&identity),
    )
    .await?;
    let metrics_listener = http::bind(&args.metrics_listen, "metrics")
        .await
        .map_err(Error::Cluster)?;
    let health_listener = http::bind(&args.health_listen, "health")
        .await
        .map_err(Error::Cluster)?;
    if let Ok(asked) = std::env::var(fault::FAULT_ENV) {
        match fault::armed() {
            Some(point) => warn!(point = %point, "fault injection armed: the process stops there"),
            None => {
                warn!(asked = %asked, "{} is set, but this build has no fault injection: ignored", fault::FAULT_ENV)
            }
        }
    }
    info!(
        metrics = %metrics_listener.local_addr().map(|a| a.to_string()).unwrap_or_default(),
        health = %health_listener.local_addr().map(|a| a.to_string()).unwrap_or_default(),
        "listening"
    );
    // Said once at start, beside it: the controller runs either way (a refusal is also
    // reported per promotion, as `WriteBlocked`, and may be fixed while it runs), and an API
    // server slow to answer must not delay the watches.
    let probe_client = client.clone();
    let probe_selector = args.selector.clone();
    tokio::spawn(async move {
        crate::live::admission_probe::check(&probe_client, probe_selector.as_deref()).await;
    });
    let (stores, feeds) = Stores::new(&PROFILE.api_resource());
    let metrics = Arc::new(Metrics::default());
    http::serve_metrics(metrics_listener, metrics.clone());

    let (leader_tx, leader_rx, lease) = if args.leader_elect {
        let lease_duration = std::time::Duration::from_secs(args.leader_elect_lease_duration);
        let election = Election {
            // In a cluster, the service account's namespace; outside, the kubeconfig context's
            // (`default` when it names none), as kubectl picks a namespace.
            namespace: args
                .leader_elect_namespace
                .clone()
                .unwrap_or_else(|| client.default_namespace().to_string()),
            lease_name: args.leader_elect_lease_name.clone(),
            identity: identity.clone(),
            lease_duration,
            // controller-runtime's 15 s / 10 s / 2 s, in proportion to the lease duration.
            renew_deadline: args
                .leader_elect_renew_deadline
                .unwrap_or(lease_duration * 2 / 3),
            retry_period: args
                .leader_elect_retry_period
                .unwrap_or(lease_duration * 2 / 15),
        };
        info!(lease = %election.lease_name, namespace = %election.namespace,
              identity = %election.identity, "campaigning for leadership");
        let lease = leader::Lease::campaign(client.clone(), election).map_err(Error::Usage)?;
        (None, lease.leadership(), Some(lease))
    } else {
        let (tx, rx) = watch::channel(Leadership {
            leading: true,
            reachable: true,
        });
        (Some(tx), rx, None)
    };

    http::serve_health(health_listener, stores.clone(), leader_rx.clone());

    let ar = PROMOTION.api_resource();
    let promotions: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let mut config = watcher::Config::default();
    if let Some(selector) = &args.selector {
        config = config.labels(selector);
    }
    let writer = reflector::store::Writer::new(ar.clone());
    let reader = writer.as_reader();
    // Upstream's event filter (`GenerationChanged`, `LabelChanged`, `AnnotationChanged`):
    // generation, labels or annotations (deletion bumps the generation). Status-only changes —
    // our own writes above all — do not trigger a reconcile; the watches of profiles, summaries
    // and clusters, and each decision's deadline, do.
    let worthy = predicates::generation
        .combine(predicates::labels)
        .combine(predicates::annotations);
    let trigger = watcher::watcher(promotions.clone(), config)
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(worthy, Default::default());

    let ctx = Arc::new(Context {
        writer: Writer {
            promotions,
            profiles: Api::all_with(client.clone(), &PROFILE.api_resource()),
        },
        stores: stores.clone(),
        metrics: metrics.clone(),
        events: Events::new(client.clone(), std::env::var("POD_NAME").ok()),
        history: History::new(
            client.clone(),
            &args
                .history_namespace
                .clone()
                .unwrap_or_else(|| client.default_namespace().to_string()),
            args.revision_history_limit,
        ),
        options: Options { window_zone },
        take_over: args.take_over,
        resync: args.resync_period,
        leader: leader_rx.clone(),
        warned_foreign: Mutex::new(HashSet::new()),
        asked: Mutex::new(Default::default()),
        selected: reader.clone(),
        failures: Mutex::new(Default::default()),
    });

    let (one_tx, one_rx) = futures::channel::mpsc::unbounded();
    let (all_tx, all_rx) = futures::channel::mpsc::unbounded();
    watches::spawn_all(
        &client,
        stores.clone(),
        feeds,
        Triggers {
            one: one_tx,
            all: all_tx.clone(),
            ctx: ctx.clone(),
        },
    );
    // Gaining the Lease: look at every promotion (a standby kept no queue).
    // Gaining the Lease: look at every promotion (a standby kept no queue). Only changes of
    // leadership are logged; reachability goes to readiness and the metrics.
    let mut leading = leader_rx.clone();
    let metrics_for_leader = metrics.clone();
    let events_ctx = ctx.clone();
    tokio::spawn(async move {
        let mut was: Option<bool> = None;
        loop {
            let now = *leading.borrow_and_update();
            metrics_for_leader.set_leader(now.leading);
            metrics_for_leader.set_reachable(now.reachable);
            if was != Some(now.leading) {
                if now.leading {
                    info!("leading: reconciling every promotion");
                    // Another replica may have counted Event series meanwhile.
                    events_ctx.events.forget();
                    events_ctx.history.forget();
                    let _ = all_tx.unbounded_send(());
                } else {
                    info!("not leading: standing by");
                }
                was = Some(now.leading);
            }
            if leading.changed().await.is_err() {
                return;
            }
        }
    });

    info!(
        selector = args.selector.as_deref().unwrap_or(""),
        take_over = args.take_over,
        "promotion-controller started"
    );
    // SIGTERM or Ctrl-C: no new reconciles; running ones get --shutdown-timeout, then stop
    // (a watch that keeps failing or a write that hangs must not keep the process alive).
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    let stopping = {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let controller = Controller::for_stream_with(trigger, reader, ar)
        .with_config(ControllerConfig::default().concurrency(args.concurrent_reconciles))
        .reconcile_on(one_rx)
        .reconcile_all_on(all_rx)
        .graceful_shutdown_on(stopping)
        .run(reconciler::reconcile, reconciler::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                match e {
                    kube::runtime::controller::Error::ReconcilerFailed(..) => {}
                    // A profile or summary of a promotion outside --selector (or already gone).
                    kube::runtime::controller::Error::ObjectNotFound(..) => {}
                    other => warn!(error = %other, "controller"),
                }
            }
        });
    let deadline = {
        let mut rx = stop_rx.clone();
        let timeout = args.shutdown_timeout;
        async move {
            let _ = rx.wait_for(|s| *s).await;
            tokio::time::sleep(timeout).await;
        }
    };
    tokio::select! {
        _ = controller => info!("shutting down"),
        _ = deadline => warn!(timeout = ?args.shutdown_timeout,
            "shutting down: reconciles still running after the shutdown timeout are stopped"),
    }
    drop(leader_tx);
    if let Some(lease) = lease {
        lease.release(std::time::Duration::from_secs(5)).await;
    }
    Ok(())
}

/// SIGTERM (what the kubelet sends) or Ctrl-C.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
