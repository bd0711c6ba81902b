//! Load benchmark (not a test): admission latency and throughput of the real `promotion-webhook`
//! binary over TLS keep-alive on loopback, against a floor server measured in the same run, plus
//! memory.
//!
//! - Request: POST /validate with a CREATE AdmissionReview of examples/cert-manager-lua-checks
//!   (health checks with Lua scripts, one warning in the answer).
//! - Floor: bare axum-server + rustls (same certificate, same TLS settings, its own process, same
//!   runtime) that reads the body and answers a fixed `allowed: true`.
//! - Parse-only references: the floor plus building the body's JSON tree (`tree`: a
//!   `serde_json::Value`; `borrowed`: a `serde_json_borrow::Value`) and echoing the review's uid;
//!   they show how much of the floor's throughput any webhook that reads the object can keep.
//!   `tree` is the parse floor the webhook's headline ratio is taken against.
//! - Clients: 1 and 16 HTTP/1.1 keep-alive connections, each sending requests back to back;
//!   client, webhook and floor share this machine's cores, so only ratios are meaningful.
//! - Memory: VmRSS of the webhook process idle (after start) and the peak sampled under load.
//!
//! - Rounds: floor, reference and webhook runs alternate, 5 rounds per connection count, the
//!   webhook and the parse floor next to each other and taking turns at going first; ratios are
//!   taken within a round (both sides saw the same neighbours) and reported as medians over
//!   rounds, with every round's webhook/parse-floor throughput ratio listed.
//!
//! Run: `cargo bench -p promotion-webhook --bench admission_load` (about 3 minutes).
//! Instructions per request instead of time, deterministic: `scripts/webhook-instructions.sh`.
//! `ADMISSION_LOAD_SECONDS` changes the measuring time per run (default 4),
//! `ADMISSION_LOAD_ROUNDS` the number of rounds (default 5).

#[path = "../tests/support/client.rs"]
mod client;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use promotion_webhook::testing::{generate_certs, CertFiles, Launch};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use client::{connect, tls_config};
use serde_json::{json, Value};

/// The allocator the webhook binary uses, so in-process numbers and the floor match it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WEBHOOK: &str = env!("CARGO_BIN_EXE_promotion-webhook");
const FLOOR_ENV: &str = "ADMISSION_LOAD_FLOOR_SERVER";
/// Set for the reference servers that also parse each body: `tree` or `borrowed`.
const PARSE_ENV: &str = "ADMISSION_LOAD_FLOOR_PARSES";
const FLOOR_ANSWER: &str = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"fixed","allowed":true}}"#;

/// The parse-only references' answer: allowed, with the review's uid (JSON-escaped).
fn echo_answer(uid: Option<&str>) -> String {
    format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{{"uid":{},"allowed":true}}}}"#,
        Value::from(uid.unwrap_or_default())
    )
}

fn main() {
    // The floor server is this same executable, started as a child with FLOOR_ENV set.
    if let Ok(files) = std::env::var(FLOOR_ENV) {
        floor_server(&files);
        return;
    }
    if let Some(path) = std::env::var_os("ADMISSION_LOAD_WRITE_BODY") {
        // For scripts/webhook-instructions.sh: the benchmarked request, to send with curl.
        std::fs::write(&path, request_body().0).expect("write the request body");
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        // `cargo bench -- --list` probing: nothing to list.
        return;
    }
    // `cargo bench` passes --bench; `cargo test --benches` does not: then only check that the
    // machinery works, briefly.
    let measuring = std::env::args().any(|a| a == "--bench");
    let millis: u64 = match std::env::var("ADMISSION_LOAD_SECONDS") {
        Ok(s) => s.parse::<u64>().map(|s| s * 1000).unwrap_or(4000),
        Err(_) if measuring => 4000,
        Err(_) => 200,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if std::env::var_os("ADMISSION_LOAD_IN_PROCESS_ONLY").is_some() {
        // For profilers: only the in-process part, nothing else running.
        let (body, object) = request_body();
        in_process_on_validation_stack(&body, &object).print();
        return;
    }
    let rounds = std::env::var("ADMISSION_LOAD_ROUNDS")
        .ok()
        .and_then(|r| r.parse::<usize>().ok())
        .filter(|&r| r > 0)
        .unwrap_or(if measuring { 5 } else { 1 });
    runtime.block_on(bench(Duration::from_millis(millis), rounds));
}

/// The floor: reads the whole body, answers a constant.
fn floor_server(files: &str) {
    use axum::routing::post;
    let (cert, key) = files.split_once('\n').expect("cert\\nkey");
    let tls = promotion_webhook::config::TlsFiles {
        cert: PathBuf::from(cert),
        key: PathBuf::from(key),
        reload_interval: Duration::from_secs(3600),
    };
    let loaded = promotion_webhook::tls::load(&tls).expect("floor certificate");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        println!("listening {}", listener.local_addr().expect("addr"));
        let parses = std::env::var(PARSE_ENV).ok();
        let app = axum::Router::new().route(
            "/validate",
            post(move |body: axum::body::Bytes| async move {
                // The least a webhook that reads the object does: build a JSON tree of it, and
                // answer the review it holds (its uid).
                let answer = match parses.as_deref() {
                    Some("tree") => {
                        let tree = serde_json::from_slice::<Value>(&body).expect("JSON body");
                        echo_answer(tree["request"]["uid"].as_str())
                    }
                    Some(_) => {
                        let tree = serde_json::from_slice::<serde_json_borrow::Value>(&body)
                            .expect("JSON body");
                        echo_answer(tree.get("request").get("uid").as_str())
                    }
                    None => FLOOR_ANSWER.to_string(),
                };
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    answer,
                )
            }),
        );
        let config = axum_server::tls_rustls::RustlsConfig::from_config(loaded.config);
        axum_server::from_tcp_rustls(listener, config)
            .expect("server")
            .serve(app.into_make_service())
            .await
            .expect("serve");
    });
}

/// A server under load: the webhook, or a floor/reference server (a child of this executable).
struct Target {
    name: &'static str,
    process: Process,
    addr: SocketAddr,
}

enum Process {
    Webhook(promotion_webhook::testing::Webhook),
    Floor(Child),
}

impl Target {
    fn pid(&self) -> u32 {
        match &self.process {
            Process::Webhook(webhook) => webhook.pid(),
            Process::Floor(child) => child.id(),
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        // The webhook is killed by its own Drop.
        if let Process::Floor(child) = &mut self.process {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The webhook on the benchmark's certificate; its access log (one line per admission) is
/// drained unparsed, the way a container runtime ships it off, so it costs no client CPU here.
fn start_webhook(certs: &CertFiles, ca_pem: &str) -> Target {
    let webhook = Launch::new(WEBHOOK)
        .tls(&certs.cert, &certs.key, ca_pem)
        .discard_access_log()
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    Target {
        name: "webhook",
        addr: webhook.https,
        process: Process::Webhook(webhook),
    }
}

/// The floor, or with `parses` a parse-only reference server (`tree` or `borrowed`).
fn start_floor(certs: &CertFiles, parses: Option<&'static str>) -> Target {
    let files = format!("{}\n{}", certs.cert.display(), certs.key.display());
    let mut command = Command::new(std::env::current_exe().expect("own path"));
    command.env(FLOOR_ENV, files);
    if let Some(tree) = parses {
        command.env(PARSE_ENV, tree);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .expect("start floor server");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("floor address");
    let addr = line
        .trim()
        .strip_prefix("listening ")
        .expect("listening line")
        .parse()
        .expect("address");
    Target {
        name: parses.unwrap_or("floor"),
        process: Process::Floor(child),
        addr,
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// User + system CPU time of a process so far, in µs (from /proc, clock-tick resolution).
fn cpu_micros(pid: u32) -> u64 {
    let ticks_per_second = 100; // USER_HZ, fixed on Linux
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            // Fields after the parenthesised command name; utime and stime are the 14th and 15th.
            let rest = stat.rsplit_once(')')?.1;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let utime: u64 = fields.get(11)?.parse().ok()?;
            let stime: u64 = fields.get(12)?.parse().ok()?;
            Some((utime + stime) * 1_000_000 / ticks_per_second)
        })
        .unwrap_or(0)
}

struct RunResult {
    requests: usize,
    errors: usize,
    seconds: f64,
    latencies_us: Vec<u64>,
    peak_rss_kib: u64,
    /// The server's CPU time for the run.
    server_cpu_us: u64,
}

impl RunResult {
    fn throughput(&self) -> f64 {
        self.requests as f64 / self.seconds
    }

    fn cpu_per_request(&self) -> f64 {
        self.server_cpu_us as f64 / self.requests.max(1) as f64
    }

    fn percentile(&self, p: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return f64::NAN;
        }
        let index = ((self.latencies_us.len() - 1) as f64 * p).round() as usize;
        self.latencies_us[index] as f64
    }
}

async fn run(
    target: &Target,
    ca: &[u8],
    body: &[u8],
    connections: usize,
    duration: Duration,
) -> RunResult {
    let config = tls_config(ca, &[b"http/1.1"], None);
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(AtomicU64::new(0));
    let mut conns = Vec::new();
    for _ in 0..connections {
        let (conn, _) = connect(target.addr, config.clone(), "localhost")
            .await
            .expect("connect");
        conns.push(conn);
    }
    let pid = target.pid();
    let cpu_before = cpu_micros(pid);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for mut conn in conns {
        let (stop, errors, body) = (stop.clone(), errors.clone(), body.to_vec());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(100_000);
            while !stop.load(Ordering::Relaxed) {
                let sent = Instant::now();
                match conn.post("/validate", body.clone()).await {
                    Ok(response) if response.status == 200 => {
                        latencies.push(sent.elapsed().as_micros() as u64)
                    }
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            latencies
        }));
    }
    let mut peak = 0;
    while started.elapsed() < duration {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(rss_kib(pid));
    }
    stop.store(true, Ordering::Relaxed);
    let mut latencies_us = Vec::new();
    for task in tasks {
        latencies_us.extend(task.await.expect("client task"));
    }
    let seconds = started.elapsed().as_secs_f64();
    let server_cpu_us = cpu_micros(pid).saturating_sub(cpu_before);
    latencies_us.sort_unstable();
    RunResult {
        requests: latencies_us.len(),
        errors: errors.load(Ordering::Relaxed) as usize,
        seconds,
        latencies_us,
        peak_rss_kib: peak,
        server_cpu_us,
    }
}

/// Mean µs per call of `f`, after a warm-up.
fn time_micros(rounds: u32, mut f: impl FnMut()) -> f64 {
    for _ in 0..rounds / 10 {
        f();
    }
    let started = Instant::now();
    for _ in 0..rounds {
        f();
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(rounds)
}

/// In-process cost of one review, µs.
struct InProcess {
    /// `Evaluator::review`: what a blocking thread runs (and the first review of these scripts).
    total: f64,
    /// `decode_if_cheap` + `answer_cheap`: how the server answers the benchmarked review once
    /// its scripts were judged, on the async task.
    cheap: f64,
    decode: f64,
    engine: f64,
}

impl InProcess {
    fn print(&self) {
        println!(
            "in-process /validate: {:.1} µs/request on the cheap path (Evaluator::review: {:.1} µs; decoding {:.1} µs, validation engine {:.1} µs)",
            self.cheap, self.total, self.decode, self.engine
        );
    }
}

/// In-process cost of one review: both ways the server answers it, decoding alone, the
/// validation engine alone.
fn in_process(body: &[u8], object: &Value) -> InProcess {
    let evaluator = promotion_webhook::evaluation::Evaluator::default();
    let now = chrono::Utc::now();
    let endpoint = promotion_webhook::metrics::Endpoint::Validate;
    let total = time_micros(2_000, || {
        std::hint::black_box(evaluator.review(endpoint, body, now).expect("decodes"));
    });
    // Cheap from now on: `review` above has had the engine judge its scripts.
    let cheap = time_micros(2_000, || {
        let cheap = evaluator
            .decode_if_cheap(endpoint, body)
            .expect("decodes")
            .expect("cheap once its scripts were judged");
        std::hint::black_box(evaluator.answer_cheap(cheap, now));
    });
    // Decoding: the envelope and the object as a tree (what the engine reads).
    let decode = time_micros(2_000, || {
        std::hint::black_box(promotion_webhook::evaluation::wire::decode(body).expect("decodes"));
    });
    // The engine alone, on the tree the webhook parses the object into.
    let text = serde_json::to_string(object).expect("object");
    let tree: promotion_shared::tree::Tree = serde_json::from_str(&text).expect("tree");
    let engine = time_micros(2_000, || {
        std::hint::black_box(promotion_shared::validation::validate_tree(&tree));
    });
    InProcess {
        total,
        cheap,
        decode,
        engine,
    }
}

/// The benchmarked request: a CREATE AdmissionReview of cert-manager-lua-checks.
fn request_body() -> (Vec<u8>, Value) {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let object: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(examples.join("cert-manager-lua-checks.yaml")).expect("example"),
    )
    .expect("YAML");
    let body = review_body("bench", "CREATE", &object, None);

    (body, object)
}

/// An UPDATE of the same promotion as `kubectl apply` and the controllers leave it: both objects
/// carry the last-applied annotation and server-side-apply `managedFields` (a `fieldsV1` map per
/// manager mirroring the fields it owns), and the old one a status.
fn update_body(object: &Value) -> Vec<u8> {
    fn fields_of(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (format!("f:{k}"), fields_of(v)))
                    .chain([(".".to_string(), json!({}))])
                    .collect(),
            ),
            Value::Array(items) => Value::Object(
                items
                    .iter()
                    .filter_map(|item| {
                        let name = item.get("name")?;
                        Some((format!("k:{}", json!({ "name": name })), fields_of(item)))
                    })
                    .collect(),
            ),
            _ => json!({}),
        }
    }
    let mut new = object.clone();
    let applied = serde_json::to_string(object).expect("object");
    new["metadata"]["annotations"] =
        json!({ "kubectl.kubernetes.io/last-applied-configuration": applied });
    new["metadata"]["resourceVersion"] = json!("48213");
    new["metadata"]["generation"] = json!(3);
    new["metadata"]["uid"] = json!("6c1f5a52-3f0e-4a51-9d0c-0c2b4f3c9e11");
    let status = json!({"currentStageName": "staging", "stages": [
        {"name": "dev", "lastStatusCheckTime": "2026-11-20T10:00:00Z", "lastSuccessfulAppliedTime": "2026-11-20T10:02:00Z"},
        {"name": "staging", "lastStatusCheckTime": "2026-11-20T10:05:00Z"}]});
    new["metadata"]["managedFields"] = json!([
        {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "config.projectsveltos.io/v1beta1",
         "time": "2026-11-20T09:58:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}},
                      "f:spec": fields_of(&object["spec"])}},
        {"manager": "controller", "operation": "Update", "apiVersion": "config.projectsveltos.io/v1beta1",
         "time": "2026-11-20T10:05:00Z", "fieldsType": "FieldsV1", "subresource": "status",
         "fieldsV1": {"f:status": fields_of(&status)}}
    ]);
    let mut old = new.clone();
    old["status"] = status;
    old["metadata"]["resourceVersion"] = json!("48170");
    review_body("bench-update", "UPDATE", &new, Some(&old))
}

/// An AdmissionReview of `object` (and `old`) as the API server sends it for this CRD.
fn review_body(uid: &str, operation: &str, object: &Value, old: Option<&Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "config.projectsveltos.io", "version": "v1beta1", "kind": "ClusterPromotion"},
            "resource": {"group": "config.projectsveltos.io", "version": "v1beta1", "resource": "clusterpromotions"},
            "name": "cert-manager-rollout-auto",
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": object,
            "oldObject": old,
            "dryRun": false
        }
    }))
    .expect("body")
}

/// Decoding the review against building a serde_json tree of all of it: how much skipping
/// `managedFields` saves on a body that has them and costs on one that has none. Also the part of
/// decoding that is the UTF-8 check of the whole body (`wire::decode` refuses a body that is not
/// UTF-8 even where no field is read).
struct Decoding {
    decode: f64,
    full_tree: f64,
    utf8_check: f64,
}

fn decoding_against_full_tree(body: &[u8]) -> Decoding {
    let decode = time_micros(2_000, || {
        std::hint::black_box(promotion_webhook::evaluation::wire::decode(body).expect("decodes"));
    });
    let full_tree = time_micros(2_000, || {
        std::hint::black_box(serde_json::from_slice::<Value>(body).expect("JSON"));
    });
    let utf8_check = time_micros(20_000, || {
        std::hint::black_box(std::str::from_utf8(std::hint::black_box(body)).is_ok());
    });
    Decoding {
        decode,
        full_tree,
        utf8_check,
    }
}

fn in_process_on_validation_stack(body: &[u8], object: &Value) -> InProcess {
    // On a thread with the stack the server's workers get, as the engine expects.
    let (body, object) = (body.to_vec(), object.clone());
    std::thread::Builder::new()
        .stack_size(promotion_shared::validation::VALIDATION_STACK_BYTES)
        .spawn(move || in_process(&body, &object))
        .expect("thread")
        .join()
        .expect("in-process measurement")
}

async fn bench(duration: Duration, rounds: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let certs =
        generate_certs(Path::new(WEBHOOK), dir.path(), &[]).unwrap_or_else(|e| panic!("{e}"));
    let ca_pem = certs.ca_pem().unwrap_or_else(|e| panic!("{e}"));
    let ca = ca_pem.as_bytes();

    let (body, object) = request_body();

    let webhook = start_webhook(&certs, &ca_pem);
    let floor = start_floor(&certs, None);
    let tree = start_floor(&certs, Some("tree"));
    let borrowed = start_floor(&certs, Some("borrowed"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle_webhook = rss_kib(webhook.pid());
    let idle_floor = rss_kib(floor.pid());

    println!(
        "admission_load: body {} bytes, {:.1}s per run, {} cores",
        body.len(),
        duration.as_secs_f64(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    in_process_on_validation_stack(&body, &object).print();
    let update = update_body(&object);
    for (label, bytes) in [("CREATE", &body), ("UPDATE with managedFields", &update)] {
        let d = decoding_against_full_tree(bytes);
        println!(
            "in-process decoding, {label} ({} bytes): {:.1} µs; a serde_json tree of the whole body: {:.1} µs ({:.2}x); of which the UTF-8 check: {:.2} µs ({:.1}% of decoding)",
            bytes.len(),
            d.decode,
            d.full_tree,
            d.decode / d.full_tree,
            d.utf8_check,
            100.0 * d.utf8_check / d.decode
        );
    }
    // Warm both up (TLS session setup, allocator, lazy statics).
    for target in [&floor, &tree, &borrowed, &webhook] {
        run(target, ca, &body, 4, Duration::from_millis(500)).await;
    }
    // Other tenants of this machine come and go: floor and webhook runs alternate, several
    // rounds, and each figure is the median over rounds (ratios are taken within a round, so
    // both sides of a ratio saw the same neighbours).
    println!(
        "{:<8} {:>5} {:>6} {:>10} {:>10} {:>10} {:>12} {:>8} {:>10}",
        "target", "conns", "round", "req/s", "p50 µs", "p99 µs", "CPU µs/req", "errors", "peak RSS"
    );
    let mut load_rss = 0;
    let mut summaries = Vec::new();
    for connections in [1, 16] {
        let (mut ratios, mut tree_ratios, mut borrowed_ratios, mut parse_floor_ratios) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for round in 1..=rounds {
            let f = run(&floor, ca, &body, connections, duration).await;
            let b = run(&borrowed, ca, &body, connections, duration).await;
            // The headline pair runs back to back, and which of the two goes first alternates,
            // so that neither is systematically the one that meets a neighbour's burst.
            let (t, w) = if round % 2 == 1 {
                let t = run(&tree, ca, &body, connections, duration).await;
                (t, run(&webhook, ca, &body, connections, duration).await)
            } else {
                let w = run(&webhook, ca, &body, connections, duration).await;
                (run(&tree, ca, &body, connections, duration).await, w)
            };
            let all = [(floor.name, &f), (tree.name, &t), (borrowed.name, &b)];
            for (name, r) in all.into_iter().chain([(webhook.name, &w)]) {
                println!(
                    "{:<8} {:>5} {:>6} {:>10.0} {:>10.0} {:>10.0} {:>12.1} {:>8} {:>6.1} MiB",
                    name,
                    connections,
                    round,
                    r.throughput(),
                    r.percentile(0.50),
                    r.percentile(0.99),
                    r.cpu_per_request(),
                    r.errors,
                    r.peak_rss_kib as f64 / 1024.0
                );
            }
            load_rss = load_rss.max(w.peak_rss_kib);
            ratios.push(Ratios::of(&w, &f));
            tree_ratios.push(Ratios::of(&t, &f));
            borrowed_ratios.push(Ratios::of(&b, &f));
            parse_floor_ratios.push(Ratios::of(&w, &t));
        }
        summaries.push(Summary {
            connections,
            webhook: Ratios::median(&ratios),
            references: [
                Ratios::median(&tree_ratios),
                Ratios::median(&borrowed_ratios),
            ],
            against_parse_floor: Ratios::median(&parse_floor_ratios),
            rounds_against_parse_floor: parse_floor_ratios.iter().map(|r| r.throughput).collect(),
        });
    }
    println!();
    println!(
        "RSS idle: webhook {:.1} MiB (floor {:.1} MiB); webhook under load (peak): {:.1} MiB",
        idle_webhook as f64 / 1024.0,
        idle_floor as f64 / 1024.0,
        load_rss as f64 / 1024.0
    );
    println!("median over {rounds} rounds, webhook/floor:");
    for Summary {
        connections,
        webhook: r,
        ..
    } in &summaries
    {
        println!(
            "  {connections:>2} conn: throughput {:.2}x (target >= 0.70), p99 {:.2}x (target <= 1.50), p50 {:.2}x, server CPU per request {:.2}x",
            r.throughput, r.p99, r.p50, r.cpu
        );
    }
    // What the floor leaves for admission work: servers that only build the request's JSON
    // tree and answer a constant, with the tree the engine reads (serde_json::Value) and with a
    // borrowed one (serde_json_borrow::Value: strings and keys point into the body).
    for (index, label) in ["tree", "borrowed"].into_iter().enumerate() {
        println!("median over {rounds} rounds, parse-only reference `{label}`/floor:");
        for Summary {
            connections,
            references,
            ..
        } in &summaries
        {
            let p = &references[index];
            println!(
                "  {connections:>2} conn: throughput {:.2}x, p99 {:.2}x, p50 {:.2}x, server CPU per request {:.2}x",
                p.throughput, p.p99, p.p50, p.cpu
            );
        }
    }
    // The headline: the webhook against a server that parses the review and echoes its uid,
    // the least any webhook does; every round's ratio is listed so the spread is visible.
    println!("median over {rounds} rounds, webhook/parse floor (`tree`):");
    for s in &summaries {
        let r = &s.against_parse_floor;
        let each: Vec<String> = s
            .rounds_against_parse_floor
            .iter()
            .map(|x| format!("{x:.2}"))
            .collect();
        println!(
            "  {:>2} conn: throughput {:.2}x (rounds: {}), p99 {:.2}x, p50 {:.2}x, server CPU per request {:.2}x",
            s.connections,
            r.throughput,
            each.join(" "),
            r.p99,
            r.p50,
            r.cpu
        );
    }
    println!(
        "idle RSS {:.1} MiB (target < 20 MiB)",
        idle_webhook as f64 / 1024.0
    );
}

/// One connection count's medians over rounds.
struct Summary {
    connections: usize,
    /// Webhook/floor.
    webhook: Ratios,
    /// `tree`/floor and `borrowed`/floor.
    references: [Ratios; 2],
    /// Webhook/`tree`, and its throughput ratio in each round.
    against_parse_floor: Ratios,
    rounds_against_parse_floor: Vec<f64>,
}

struct Ratios {
    throughput: f64,
    p99: f64,
    p50: f64,
    cpu: f64,
}

impl Ratios {
    fn of(target: &RunResult, floor: &RunResult) -> Ratios {
        Ratios {
            throughput: target.throughput() / floor.throughput(),
            p99: target.percentile(0.99) / floor.percentile(0.99),
            p50: target.percentile(0.50) / floor.percentile(0.50),
            cpu: target.cpu_per_request() / floor.cpu_per_request(),
        }
    }

    fn median(all: &[Ratios]) -> Ratios {
        let median = |f: fn(&Ratios) -> f64| {
            let mut values: Vec<f64> = all.iter().map(f).collect();
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        Ratios {
            throughput: median(|r| r.throughput),
            p99: median(|r| r.p99),
            p50: median(|r| r.p50),
            cpu: median(|r| r.cpu),
        }
    }
}
