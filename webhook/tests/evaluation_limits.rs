//! Evaluations run a bounded number at a time, cheap and expensive alike, and expensive ones run
//! off the async workers so that `--request-timeout` bounds them: a request whose evaluation is
//! still running when the timeout fires is answered with the timeout error (408) while the
//! evaluation finishes in the background and then gives its slot back; requests beyond the slot
//! count wait for one and all complete. Cheap ones (small, their Lua and CEL judged before) are
//! answered on the async task, and still wait for a slot.
//!
//! In-process (the admission router over plain HTTP/1.1), because only the `testing` feature's
//! evaluation hook can hold an evaluation for as long as a test needs: the hook blocks at a
//! [`Gate`] until the test opens it, so "slow" is a condition the test controls, not a duration.
//! A held evaluation is always an expensive one (a script no review had before): a cheap one
//! would hold an async worker.

mod support;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use promotion_webhook::api::{admission_router, AppState};
use promotion_webhook::config::Limits;
use promotion_webhook::evaluation::Evaluator;
use promotion_webhook::metrics::Metrics;
use serde_json::Value;
use support::{example, metric, review, ALICE};

/// Only keeps a broken server from hanging the test; every wait ends on its condition long
/// before. An answer not within it means the request timeout did not bound the evaluation.
const BOUND: Duration = Duration::from_secs(60);

/// Evaluations reaching the hook wait here until the test opens the gate.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    open: bool,
    /// Evaluations that have reached the gate.
    entered: usize,
    /// Evaluations at the gate now, and the most there ever were at once.
    waiting: usize,
    most_waiting: usize,
}

impl Gate {
    fn hook(self: &Arc<Self>) -> Arc<dyn Fn() + Send + Sync> {
        let gate = self.clone();
        Arc::new(move || gate.pass())
    }

    fn pass(&self) {
        let mut state = self.state.lock().unwrap();
        state.entered += 1;
        state.waiting += 1;
        state.most_waiting = state.most_waiting.max(state.waiting);
        self.changed.notify_all();
        while !state.open {
            state = self.changed.wait(state).unwrap();
        }
        state.waiting -= 1;
    }

    fn open(&self) {
        self.state.lock().unwrap().open = true;
        self.changed.notify_all();
    }

    fn entered(&self) -> usize {
        self.state.lock().unwrap().entered
    }

    fn most_waiting(&self) -> usize {
        self.state.lock().unwrap().most_waiting
    }

    /// Wait (bounded) until `n` evaluations are held at the gate at once.
    async fn wait_for_waiting(self: &Arc<Self>, n: usize) {
        let gate = self.clone();
        let reached = tokio::task::spawn_blocking(move || {
            let state = gate.state.lock().unwrap();
            let (state, _) = gate
                .changed
                .wait_timeout_while(state, BOUND, |s| s.waiting < n)
                .unwrap();
            state.waiting
        })
        .await
        .unwrap();
        assert!(reached >= n, "only {reached} of {n} evaluations started");
    }
}

/// Opens the gate when dropped, also when an assertion fails: the test runtime waits for its
/// blocking threads when it shuts down, and held evaluations would hang it.
struct OpenOnDrop(Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

struct Served {
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The admission router over plain HTTP with these limits, every evaluation passing `gate`.
async fn serve(request_timeout: Duration, slots: usize, gate: &Arc<Gate>) -> Served {
    let metrics = Arc::new(Metrics::new());
    let limits = Limits {
        max_body_bytes: 3 * 1024 * 1024,
        request_timeout,
        header_read_timeout: Duration::from_secs(5),
        max_concurrent_evaluations: NonZeroUsize::new(slots).unwrap(),
    };
    let state = AppState::new(Evaluator::default(), metrics.clone(), limits)
        .with_evaluation_hook(gate.hook());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, admission_router(state)).await });
    Served {
        addr,
        metrics,
        server,
    }
}

/// A CREATE review with this uid of an example with a Lua health check, whose script is made
/// unique by `script`: expensive until a review with the same `script` has been evaluated.
fn with_script(uid: &str, script: &str) -> Vec<u8> {
    let mut object = example("cert-manager-lua-checks.yaml");
    let check = &mut object["spec"]["profileSpec"]["validateHealths"][0]["script"];
    let text = check.as_str().expect("a Lua script").to_string();
    *check = format!("-- {script}\n{text}").into();
    serde_json::to_vec(&review(uid, "CREATE", Some(&object), None, &ALICE)).unwrap()
}

/// An expensive review: a script no other review has.
fn expensive(uid: &str) -> Vec<u8> {
    with_script(uid, uid)
}

/// A CREATE review of an example without Lua or CEL: cheap from the start.
fn cheap(uid: &str) -> Vec<u8> {
    let object = example("both-triggers.yaml");
    serde_json::to_vec(&review(uid, "CREATE", Some(&object), None, &ALICE)).unwrap()
}

fn evaluations(metrics: &Metrics, thread: &str) -> f64 {
    let sample = format!("promotion_webhook_evaluations_total{{thread=\"{thread}\"}}");
    metric(&metrics.render(), &sample)
}

/// POST /validate on a fresh connection: status and JSON body.
async fn validate(addr: SocketAddr, body: Vec<u8>) -> (u16, Value) {
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut sender, connection) = http1::handshake(TokioIo::new(tcp)).await.unwrap();
        tokio::spawn(connection);
        let request = hyper::Request::post("/validate")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let json = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&body)));
        (status, json)
    };
    tokio::time::timeout(BOUND, exchange)
        .await
        .unwrap_or_else(|_| panic!("no answer within {BOUND:?}: the request timeout did not fire"))
}

fn assert_timeout(answer: &(u16, Value), timeout: Duration) {
    let (status, json) = answer;
    assert_eq!(*status, 408, "{json}");
    assert_eq!(json["error"]["reason"], "Timeout", "{json}");
    assert_eq!(
        json["error"]["message"],
        format!("request not completed within {timeout:?}"),
        "{json}"
    );
}

/// Wait (bounded) until no evaluation runs any more, per the metrics.
async fn wait_until_no_evaluation_runs(metrics: &Metrics) {
    let wait = async {
        while metric(&metrics.render(), "promotion_webhook_evaluations_running") != 0.0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(BOUND, wait)
        .await
        .expect("the evaluation never finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_evaluation_is_answered_with_the_timeout_error_and_finishes_in_the_background() {
    let gate = Arc::new(Gate::default());
    let _open = OpenOnDrop(gate.clone());
    let timeout = Duration::from_secs(2);
    let served = serve(timeout, 1, &gate).await;

    // Held at the gate: the evaluation is still running when the request timeout fires.
    let answer = validate(served.addr, expensive("slow")).await;
    assert_timeout(&answer, timeout);
    assert_eq!(gate.entered(), 1, "the evaluation must have started");
    let text = served.metrics.render();
    assert_eq!(
        metric(&text, "promotion_webhook_evaluations_running"),
        1.0,
        "{text}"
    );
    assert_eq!(
        metric(&text, "promotion_webhook_in_flight_requests"),
        0.0,
        "{text}"
    );

    // The only slot is still taken by the abandoned evaluation: the next request waits for it,
    // and that wait is bounded by the request timeout too.
    let answer = validate(served.addr, expensive("queued")).await;
    assert_timeout(&answer, timeout);
    assert_eq!(
        gate.entered(),
        1,
        "no slot was free for a second evaluation"
    );

    // Released, the abandoned evaluation finishes and gives its slot back.
    gate.open();
    wait_until_no_evaluation_runs(&served.metrics).await;
    let (status, json) = validate(served.addr, expensive("after")).await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(json["response"]["uid"], "after", "{json}");
    assert_eq!(gate.entered(), 2);

    let text = served.metrics.render();
    assert_eq!(
        metric(&text, "promotion_webhook_http_errors_total{code=\"408\"}"),
        2.0,
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            "promotion_webhook_admission_requests_total{endpoint=\"validate\",operation=\"unknown\",verdict=\"error\"}"
        ),
        2.0,
        "{text}"
    );
    assert_eq!(
        metric(&text, "promotion_webhook_in_flight_requests"),
        0.0,
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_beyond_the_evaluation_slots_wait_and_all_complete() {
    const SLOTS: usize = 2;
    const REQUESTS: usize = 8;
    let gate = Arc::new(Gate::default());
    let _open = OpenOnDrop(gate.clone());
    let served = serve(BOUND, SLOTS, &gate).await;

    let requests: Vec<_> = (0..REQUESTS)
        .map(|i| {
            let addr = served.addr;
            tokio::spawn(async move { (i, validate(addr, expensive(&format!("r{i}"))).await) })
        })
        .collect();
    // Every slot taken, the other requests waiting for one; then all may go.
    gate.wait_for_waiting(SLOTS).await;
    gate.open();
    for request in requests {
        let (i, (status, json)) = request.await.unwrap();
        assert_eq!(status, 200, "{json}");
        assert_eq!(json["response"]["uid"], format!("r{i}"), "{json}");
    }
    assert_eq!(gate.entered(), REQUESTS);
    assert_eq!(
        gate.most_waiting(),
        SLOTS,
        "never more evaluations at once than slots"
    );
    wait_until_no_evaluation_runs(&served.metrics).await;
    let text = served.metrics.render();
    let answered: f64 = text
        .lines()
        .filter(|l| {
            l.starts_with("promotion_webhook_admission_requests_total{endpoint=\"validate\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(answered, REQUESTS as f64, "{text}");
    assert!(!text.contains("verdict=\"error\""), "{text}");
    assert_eq!(
        evaluations(&served.metrics, "blocking"),
        REQUESTS as f64,
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cheap_review_waits_for_a_slot_like_an_expensive_one() {
    let gate = Arc::new(Gate::default());
    let _open = OpenOnDrop(gate.clone());
    let timeout = Duration::from_secs(2);
    let served = serve(timeout, 1, &gate).await;

    // The only slot is taken by an expensive evaluation held at the gate.
    let addr = served.addr;
    let held = tokio::spawn(async move { validate(addr, expensive("held")).await });
    gate.wait_for_waiting(1).await;

    // A cheap review would be answered on the spot, but the bound counts it too: it waits for
    // the slot until its request times out, and never starts.
    let answer = validate(served.addr, cheap("cheap-waits")).await;
    assert_timeout(&answer, timeout);
    assert_eq!(gate.entered(), 1, "the cheap review must not have started");
    assert_eq!(evaluations(&served.metrics, "async"), 0.0);

    // The held one has timed out meanwhile too; released, it finishes, the slot is free again
    // and the cheap review goes through, on the async task.
    assert_timeout(&held.await.unwrap(), timeout);
    gate.open();
    wait_until_no_evaluation_runs(&served.metrics).await;
    let (status, json) = validate(served.addr, cheap("cheap-runs")).await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(json["response"]["uid"], "cheap-runs", "{json}");
    assert_eq!(gate.entered(), 2);
    assert_eq!(evaluations(&served.metrics, "async"), 1.0);
    assert_eq!(evaluations(&served.metrics, "blocking"), 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judged_scripts_are_cheap_and_unseen_ones_or_large_bodies_go_to_a_blocking_thread() {
    let gate = Arc::new(Gate::default());
    gate.open();
    let served = serve(BOUND, 2, &gate).await;
    let answered = |(status, json): (u16, Value), uid: &str| {
        assert_eq!(status, 200, "{json}");
        assert_eq!(json["response"]["uid"], uid, "{json}");
    };

    // A script no review had: parsed on a blocking thread.
    answered(
        validate(served.addr, with_script("first", "s1")).await,
        "first",
    );
    assert_eq!(evaluations(&served.metrics, "blocking"), 1.0);
    // The same script again: the engine remembers its verdict, so the review is cheap.
    answered(
        validate(served.addr, with_script("again", "s1")).await,
        "again",
    );
    assert_eq!(evaluations(&served.metrics, "async"), 1.0);
    // Another script: expensive again.
    answered(
        validate(served.addr, with_script("other", "s2")).await,
        "other",
    );
    assert_eq!(evaluations(&served.metrics, "blocking"), 2.0);

    // A judged script in a body too large to decode on an async worker: a blocking thread.
    let mut large: Value = serde_json::from_slice(&with_script("large", "s1")).unwrap();
    let padding = "x".repeat(promotion_webhook::evaluation::INLINE_MAX_BODY_BYTES);
    large["request"]["object"]["metadata"]["annotations"] = serde_json::json!({"pad": padding});
    answered(
        validate(served.addr, serde_json::to_vec(&large).unwrap()).await,
        "large",
    );
    assert_eq!(evaluations(&served.metrics, "blocking"), 3.0);
    assert_eq!(evaluations(&served.metrics, "async"), 1.0);
    assert_eq!(gate.entered(), 4, "the hook runs on either thread");
}
