//! `kubectl promotion dashboard`: every pipeline of the fleet, live, in the browser, served on
//! loopback by this process, which talks to the API server as the user (their kubeconfig, their
//! RBAC): no credential reaches the browser, which holds only this server's own token.
//!
//! The pages are rendered here from `describe`'s model ([`model`], [`html`]); one follow of the
//! fleet ([`live`]) feeds every page and its event stream ([`server`]); an action is the CLI
//! command of the same name run in this process ([`actions`]); [`security`] says what protects
//! it.

mod actions;
mod html;
mod live;
mod model;
mod read;
mod security;
mod server;
mod tls;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use super::{note, warn, Ctx};
use crate::cluster::watch::FleetFollower;
use crate::error::{exit, Error, Result};

#[derive(Args, Debug)]
#[command(
    about = "Serve a live web dashboard of every ClusterPromotion, with approve and steer",
    long_about = "\
Serve a live web dashboard of every ClusterPromotion on this machine's loopback address.

The fleet page shows each promotion as a pipeline (stage boxes in the states `describe` uses,
clusters per stage, the gate, the phase and the next step), filtered by name, label or phase.
A promotion's page shows its stages and clusters, approvals and their record, the revisions,
the timeline of `plan --timeline` and its Events. Both stay live through the same watches as
`describe -w`, and say when the connection to the API server is lost.

The server talks to the API server as you, with your kubeconfig and RBAC; the browser never
sees a credential. Approve, revoke, pause, resume, abort, roll back and retry run the CLI
command of the same name, with its refusals; a button RBAC or the published rules would refuse
is shown disabled with the reason. --read-only hides them all.

Every request needs the token in the printed address (then an HttpOnly, SameSite=Strict
cookie); writes must come from the dashboard's own page (Origin check); requests under another
host name are refused (DNS rebinding); the pages cannot be framed. Serving a non-loopback
address needs --tls-cert-file and --tls-private-key-file, and prints a warning: whoever holds
the address acts as you.",
    after_help = "\
Examples:
  kubectl promotion dashboard
  kubectl promotion dashboard --open --port 3200
  kubectl promotion dashboard --read-only -l team=platform
  kubectl promotion dashboard --address 0.0.0.0 --tls-cert-file tls.crt --tls-private-key-file tls.key

Exit status: 0 stopped by Ctrl-C or SIGTERM; 1 error (cannot bind, cannot read the promotions)."
)]
pub struct DashboardArgs {
    /// Address to serve on: loopback unless --tls-cert-file is given
    #[arg(long, value_name = "IP", default_value = "127.0.0.1")]
    pub address: IpAddr,
    /// Port to serve on (0: any free port)
    #[arg(long, value_name = "PORT", default_value_t = 3100)]
    pub port: u16,
    /// Open the dashboard in the default browser
    #[arg(long)]
    pub open: bool,
    /// Show no action: the dashboard changes nothing
    #[arg(long)]
    pub read_only: bool,
    /// Only the ClusterPromotions matching this label selector (e.g. team=platform)
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Serve HTTPS with this certificate (PEM; needed for a non-loopback --address)
    #[arg(long, value_name = "FILE", requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The certificate's private key (PEM)
    #[arg(long, value_name = "FILE", requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Another host name the dashboard is reached by (with a non-loopback --address)
    #[arg(long = "host", value_name = "NAME")]
    pub hosts: Vec<String>,
}

pub async fn run(ctx: &Ctx, args: &DashboardArgs) -> Result<u8> {
    let tls = match (&args.tls_cert_file, &args.tls_private_key_file) {
        (Some(cert), Some(key)) => Some(tls::load(cert, key)?),
        _ => None,
    };
    if !args.address.is_loopback() && tls.is_none() {
        return Err(Error::Usage(format!(
            "--address {}: not a loopback address. The dashboard acts with your credentials, \
             so it serves other hosts only over HTTPS: add --tls-cert-file and \
             --tls-private-key-file",
            args.address
        )));
    }
    let kube = ctx.kube().await?;
    // The first LIST fails fast (unreachable, forbidden, CRD missing) instead of serving pages
    // that can only say so.
    let follower = FleetFollower::start(&kube, args.selector.as_deref()).await?;
    let listener =
        std::net::TcpListener::bind(SocketAddr::new(args.address, args.port)).map_err(|e| {
            Error::Io(format!(
                "cannot serve on {}:{}: {e}",
                args.address, args.port
            ))
        })?;
    let bound = listener
        .local_addr()
        .map_err(|e| Error::Io(format!("cannot read the address served: {e}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::Io(format!("cannot serve on {bound}: {e}")))?;
    let token = security::new_token().map_err(|e| Error::Io(format!("no random token: {e}")))?;
    let guard = security::Guard::new(token, bound, tls.is_some(), &args.hosts);
    let identity = match kube.who_am_i().await {
        Ok(u) => u.username.map(|n| format!(" as {n}")).unwrap_or_default(),
        Err(_) => String::new(),
    };
    let app = Arc::new(server::App {
        context: format!(
            "{}{identity}{}",
            kube.server(),
            if args.read_only { " · read-only" } else { "" }
        ),
        kube,
        connection: ctx.connection.clone(),
        guard: guard.clone(),
        live: live::follow(follower),
        read_only: args.read_only,
    });
    // The address to open: a name the user said it is reached by, else the bound literal (for
    // every address, loopback's).
    let host = match (args.hosts.first(), bound.ip()) {
        (Some(name), _) => format!("{name}:{}", bound.port()),
        (None, ip) if ip.is_unspecified() => format!("127.0.0.1:{}", bound.port()),
        (None, IpAddr::V6(ip)) => format!("[{ip}]:{}", bound.port()),
        (None, IpAddr::V4(ip)) => format!("{ip}:{}", bound.port()),
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!(
        "{scheme}://{host}/?{}={}",
        security::TOKEN_PARAM,
        guard.token()
    );
    if !bound.ip().is_loopback() {
        warn(
            ctx,
            &format!(
                "serving on {bound}, reachable from other hosts: whoever has this address acts \
                 as you{identity}"
            ),
        );
    }
    ctx.write_out(&format!("Dashboard: {url}\n"))?;
    note(
        ctx,
        &format!(
            "serving {}{identity}; Ctrl-C stops it",
            app.context.split(" as ").next().unwrap_or_default()
        ),
    );
    if args.open {
        if let Err(why) = open_browser(&url) {
            warn(
                ctx,
                &format!("cannot open a browser ({why}): open the address above"),
            );
        }
    }
    let router = server::router(app);
    let handle = axum_server::Handle::new();
    let stopping = handle.clone();
    tokio::spawn(async move {
        stop_signal().await;
        stopping.graceful_shutdown(Some(std::time::Duration::from_secs(2)));
    });
    let served = match tls {
        Some(config) => {
            axum_server::from_tcp_rustls(listener, config)
                .map_err(|e| Error::Io(format!("cannot serve on {bound}: {e}")))?
                .handle(handle)
                .serve(router.into_make_service())
                .await
        }
        None => {
            axum_server::from_tcp(listener)
                .map_err(|e| Error::Io(format!("cannot serve on {bound}: {e}")))?
                .handle(handle)
                .serve(router.into_make_service())
                .await
        }
    };
    served.map_err(|e| Error::Io(format!("serving on {bound}: {e}")))?;
    Ok(exit::OK)
}

/// Ctrl-C, or SIGTERM (a service manager, `kill`).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
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

/// The platform's opener: `open` on macOS, `xdg-open` elsewhere on Unix, `start` on Windows.
fn open_browser(url: &str) -> std::result::Result<(), String> {
    let mut cmd = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut c = std::process::Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    cmd.arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(|_| ())
        .map_err(|e| e.to_string())
}
