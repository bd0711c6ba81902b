//! The HTTP side: the routes, the guard every request passes ([`super::security`]), the pages,
//! the event streams that keep them live, and the actions.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures::Stream;
use serde_json::json;
use tokio::sync::watch;

use super::live::Live;
use super::model::ActionKind;
use super::read::{self, Asked};
use super::security::{Access, Guard};
use super::{actions, html};
use crate::cluster::connection::ConnectionFlags;
use crate::cluster::kube_client::Kube;

/// What every handler shares.
pub struct App {
    pub kube: Kube,
    pub connection: ConnectionFlags,
    pub guard: Guard,
    pub live: watch::Receiver<Live>,
    pub read_only: bool,
    /// Shown in each page's header: the API server and the user's identity.
    pub context: String,
}

const APP_JS: &str = include_str!("assets/app.js");
const STYLE_CSS: &str = include_str!("assets/style.css");

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(fleet_page))
        .route("/stream", get(fleet_stream))
        .route("/promotions/{name}", get(promotion_page))
        .route("/promotions/{name}/stream", get(promotion_stream))
        .route("/promotions/{name}/{action}", post(action))
        .route(
            "/assets/app.js",
            get(|| async { asset(APP_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/assets/style.css",
            get(|| async { asset(STYLE_CSS, "text/css; charset=utf-8") }),
        )
        .fallback(|| async { refused(404, "no such page") })
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

fn asset(text: &'static str, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], text).into_response()
}

fn refused(status: u16, reason: &str) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN);
    (
        code,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        html::error_page(status, reason),
    )
        .into_response()
}

fn html_page(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

/// Every request: the Host, the token (swapped for the cookie), the Origin of a write; every
/// answer: the security headers.
async fn guard(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let decided = (|| {
        app.guard.check_host(text(header::HOST))?;
        let access = app
            .guard
            .check_token(text(header::COOKIE), req.uri().query())?;
        if req.method() != Method::GET {
            app.guard.check_origin(text(header::ORIGIN))?;
        }
        Ok::<Access, super::security::Refusal>(access)
    })();
    let mut response = match decided {
        Err(r) => refused(r.status, &r.reason),
        Ok(Access::Exchange) if req.method() == Method::GET => {
            let path = req.uri().path();
            let to = match super::security::without_token(req.uri().query()) {
                Some(q) => format!("{path}?{q}"),
                None => path.to_string(),
            };
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::SEE_OTHER;
            if let Ok(v) = HeaderValue::from_str(&to) {
                r.headers_mut().insert(header::LOCATION, v);
            }
            if let Ok(v) = HeaderValue::from_str(&app.guard.set_cookie()) {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            r
        }
        // A write carries the cookie, never the URL's token.
        Ok(Access::Exchange) => refused(401, "a write must carry the dashboard's cookie"),
        Ok(Access::Granted) => next.run(req).await,
    };
    for (k, v) in super::security::HEADERS {
        response
            .headers_mut()
            .insert(*k, HeaderValue::from_static(v));
    }
    response
}

/// The latest state, once the first lists are complete (or the follow ended).
async fn current(app: &App) -> Live {
    let mut rx = app.live.clone();
    // Bound before returning: the match's borrow of `rx` must end before `rx` is dropped.
    let live = match rx
        .wait_for(|l| l.fleet.is_some() || l.ended.is_some())
        .await
    {
        Ok(l) => l.clone(),
        Err(_) => app.live.borrow().clone(),
    };
    live
}

async fn fleet_page(State(app): State<Arc<App>>) -> Response {
    let live = current(&app).await;
    if live.fleet.is_none() {
        return refused(
            503,
            &format!(
                "the promotions cannot be followed: {}",
                live.ended.as_deref().unwrap_or("no state yet")
            ),
        );
    }
    let cards = read::cards(&app.kube, &live, None).await;
    html_page(html::fleet_page(&cards, &app.context, live.seq))
}

async fn promotion_page(State(app): State<Arc<App>>, Path(name): Path<String>) -> Response {
    let live = current(&app).await;
    let mut asked = Asked::new();
    match read::promotion_page(&app.kube, &live, &name, app.read_only, &mut asked).await {
        Some(page) => html_page(html::promotion_page(&page, &app.context, live.seq)),
        None => refused(
            404,
            &format!("clusterpromotion.config.projectsveltos.io {name:?} not found"),
        ),
    }
}

#[derive(serde::Deserialize)]
struct Since {
    /// The state the page was rendered from.
    since: Option<u64>,
}

/// What the live line says: following, the connection lost (data as of when), or ended; its
/// state and text. A stream sends it again when it changes.
fn status(live: &Live) -> (&'static str, String) {
    match (&live.ended, &live.lost) {
        (Some(why), _) => (
            "ended",
            format!("not following any more: {why}; restart the dashboard"),
        ),
        (None, Some((why, since))) => (
            "stale",
            format!(
                "connection to the API server lost at {}: {why}; retrying — what is shown may \
                 be out of date",
                since.format("%H:%M:%S UTC")
            ),
        ),
        (None, None) => (
            "live",
            match live.as_of() {
                Some(t) => format!("live · last change {}", t.format("%H:%M:%S UTC")),
                None => "live".to_string(),
            },
        ),
    }
}

fn status_event((state, text): &(&'static str, String)) -> Event {
    Event::default()
        .event("status")
        .data(json!({ "state": state, "text": text }).to_string())
}

type Events = Sse<
    axum::response::sse::KeepAliveStream<
        std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>>,
    >,
>;

fn sse(stream: impl Stream<Item = Event> + Send + 'static) -> Events {
    use futures::StreamExt;
    let boxed: std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>> =
        Box::pin(stream.map(Ok::<Event, Infallible>));
    Sse::new(boxed).keep_alive(
        KeepAlive::new()
            .interval(Duration::from_secs(15))
            .text("keep-alive"),
    )
}

/// What one page's stream sends for a new state of the fleet.
trait PageStream: Send + 'static {
    /// The events for `live` (a state with a fleet); `gap`: the page may have missed states
    /// (it was rendered from an older one, or the stream skipped some), so everything it shows
    /// must be judged again, not only what changed since the state before.
    fn update(
        &mut self,
        app: &App,
        live: &Live,
        gap: bool,
    ) -> impl std::future::Future<Output = Vec<Event>> + Send;
}

/// The stream of a page rendered from state `since`: the live line whenever it changes, and
/// what `page` sends for each new state.
fn follow(app: Arc<App>, since: Option<u64>, page: impl PageStream) -> Events {
    struct S<P> {
        app: Arc<App>,
        rx: watch::Receiver<Live>,
        seq: Option<u64>,
        status: Option<(&'static str, String)>,
        queue: std::collections::VecDeque<Event>,
        page: P,
    }
    let start = S {
        rx: app.live.clone(),
        app,
        seq: since,
        status: None,
        queue: Default::default(),
        page,
    };
    sse(futures::stream::unfold(start, |mut s| async move {
        loop {
            if let Some(e) = s.queue.pop_front() {
                return Some((e, s));
            }
            let live = s.rx.borrow_and_update().clone();
            let now = status(&live);
            if s.status.as_ref() != Some(&now) {
                s.queue.push_back(status_event(&now));
                s.status = Some(now);
            }
            if live.fleet.is_some() && s.seq != Some(live.seq) {
                let gap = s.seq.is_none_or(|n| n + 1 != live.seq)
                    || live.fleet.as_ref().is_some_and(|f| f.changes.everything);
                let events = s.page.update(&s.app, &live, gap).await;
                s.queue.extend(events);
                s.seq = Some(live.seq);
            }
            if !s.queue.is_empty() {
                continue;
            }
            if s.rx.changed().await.is_err() {
                return None;
            }
        }
    }))
}

fn names_of(fleet: &crate::cluster::watch::Fleet) -> Vec<String> {
    fleet
        .objects
        .iter()
        .filter_map(|o| o.pointer("/metadata/name").and_then(|v| v.as_str()))
        .map(String::from)
        .collect()
}

/// The fleet page's stream: a card whenever what it shows changes, `gone` for a promotion
/// deleted, `keep` (the promotions there are) after a gap.
struct FleetStream {
    /// The card last sent of each promotion.
    sent: BTreeMap<String, String>,
}

impl PageStream for FleetStream {
    async fn update(&mut self, app: &App, live: &Live, gap: bool) -> Vec<Event> {
        let Some(fleet) = live.fleet.as_ref() else {
            return Vec::new();
        };
        let present = names_of(fleet);
        let names: Vec<String> = present
            .iter()
            .filter(|n| gap || fleet.affects(n))
            .cloned()
            .collect();
        let mut events = Vec::new();
        for c in read::cards(&app.kube, live, Some(&names)).await {
            let text = html::card(&c);
            if self.sent.get(&c.name) != Some(&text) {
                events.push(
                    Event::default().event("card").data(
                        json!({ "id": html::card_id(&c.name), "name": c.name, "html": text })
                            .to_string(),
                    ),
                );
                self.sent.insert(c.name.clone(), text);
            }
        }
        let gone: Vec<String> = self
            .sent
            .keys()
            .filter(|n| !present.contains(n))
            .cloned()
            .collect();
        for n in &gone {
            self.sent.remove(n);
        }
        if gap {
            // The page may show promotions this stream never sent: it drops every card not
            // named here.
            events.push(
                Event::default()
                    .event("keep")
                    .data(json!({ "names": present }).to_string()),
            );
        } else {
            events.extend(gone.iter().map(|n| {
                Event::default()
                    .event("gone")
                    .data(json!({ "id": html::card_id(n) }).to_string())
            }));
        }
        events
    }
}

async fn fleet_stream(State(app): State<Arc<App>>, Query(since): Query<Since>) -> Events {
    let page = FleetStream {
        sent: BTreeMap::new(),
    };
    follow(app, since.since, page)
}

/// The promotion page's stream: the page's live part whenever it changes.
struct PromotionStream {
    name: String,
    /// The live part last sent.
    sent: Option<String>,
    asked: Asked,
}

impl PageStream for PromotionStream {
    async fn update(&mut self, app: &App, live: &Live, gap: bool) -> Vec<Event> {
        if !gap && !live.fleet.as_ref().is_some_and(|f| f.affects(&self.name)) {
            return Vec::new();
        }
        let page =
            read::promotion_page(&app.kube, live, &self.name, app.read_only, &mut self.asked).await;
        let text = match &page {
            Some(p) => html::promotion_body(p),
            None => format!(
                "<p class=\"bad\" id=\"deleted\">clusterpromotion {} is gone: it was \
                 deleted.</p>",
                html::esc(&self.name)
            ),
        };
        if self.sent.as_ref() == Some(&text) {
            return Vec::new();
        }
        self.sent = Some(text.clone());
        vec![Event::default()
            .event("page")
            .data(json!({ "html": text }).to_string())]
    }
}

async fn promotion_stream(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    Query(since): Query<Since>,
) -> Events {
    let page = PromotionStream {
        name,
        sent: None,
        asked: Asked::new(),
    };
    follow(app, since.since, page)
}

/// An action from the promotion page: the CLI command of the same name, run as the caller.
async fn action(
    State(app): State<Arc<App>>,
    Path((name, action)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if app.read_only {
        return refused(
            403,
            "the dashboard runs with --read-only: it changes nothing",
        );
    }
    let Some(kind) = ActionKind::of_path(&action) else {
        return refused(404, &format!("no action {action:?}"));
    };
    let kind_ok = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if !kind_ok {
        return answer(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            false,
            "send the action's form (application/x-www-form-urlencoded)",
            "",
        );
    }
    let argv = match actions::Form::parse(&body).and_then(|f| actions::argv(kind, &name, &f)) {
        Ok(argv) => argv,
        Err(why) => return answer(StatusCode::BAD_REQUEST, false, &why, ""),
    };
    let outcome = actions::run(&app.connection, argv).await;
    let status = if outcome.ok {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    answer(status, outcome.ok, &outcome.message, &outcome.notes)
}

fn answer(status: StatusCode, ok: bool, message: &str, notes: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        json!({ "ok": ok, "message": message, "notes": notes }).to_string(),
    )
        .into_response()
}
