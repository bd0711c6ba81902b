//! Prometheus metrics, rendered in the text exposition format (0.0.4). The label sets are small
//! and fixed, so a few atomics and one mutex-guarded map are all that is needed.
//!
//! What every admission request counts lives in per-thread shards ([`Shard`], in a
//! [`Sharded`]), summed when rendered. Rare events (HTTP errors, panics,
//! certificate reloads) keep plain counters.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::per_thread::Sharded;

/// Which admission endpoint a request went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Endpoint {
    Validate,
    Mutate,
}

impl Endpoint {
    pub const ALL: [Endpoint; 2] = [Endpoint::Validate, Endpoint::Mutate];

    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Validate => "validate",
            Endpoint::Mutate => "mutate",
        }
    }
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    Allowed,
    /// Allowed with a JSON Patch.
    Patched,
    Denied,
    /// No AdmissionReview answer: an HTTP error (bad body, too large, timeout).
    Error,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allowed => "allowed",
            Verdict::Patched => "patched",
            Verdict::Denied => "denied",
            Verdict::Error => "error",
        }
    }
}

/// Where an evaluation ran (`api::evaluations`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Thread {
    /// On the request's async task: a cheap review.
    Async,
    /// On one of the runtime's blocking threads: an expensive one.
    Blocking,
}

impl Thread {
    pub const ALL: [Thread; 2] = [Thread::Async, Thread::Blocking];

    pub fn as_str(self) -> &'static str {
        match self {
            Thread::Async => "async",
            Thread::Blocking => "blocking",
        }
    }
}

/// Upper bounds in seconds. Fine at the low end, where this webhook lives (tens of µs), and
/// matching the API server's own webhook buckets (5 ms … 10 s) above.
const BUCKETS: [f64; 14] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.1, 0.5, 1.0, 2.5,
    10.0,
];

#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        // Cumulative buckets are computed at render time; store per-bucket counts.
        if let Some(i) = BUCKETS.iter().position(|&b| seconds <= b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

/// The operations a request is counted under, in the order they are rendered: the
/// AdmissionReview operations (`wire::operation_name`) and `unknown` for a request that had no
/// answer.
const OPERATIONS: [&str; 5] = ["CONNECT", "CREATE", "DELETE", "UPDATE", "unknown"];

const VERDICTS: [Verdict; 4] = [
    Verdict::Allowed,
    Verdict::Patched,
    Verdict::Denied,
    Verdict::Error,
];

/// What one thread counts per request.
#[derive(Default)]
struct Shard {
    requests: [[[AtomicU64; VERDICTS.len()]; OPERATIONS.len()]; Endpoint::ALL.len()],
    latency: [Histogram; 2],
    in_flight: AtomicI64,
    evaluations_running: AtomicI64,
    evaluations: [AtomicU64; 2],
}

#[derive(Default)]
pub struct Metrics {
    shards: Sharded<Shard>,
    http_errors: Mutex<BTreeMap<u16, u64>>,
    panics: AtomicU64,
    reloads_ok: AtomicU64,
    reloads_failed: AtomicU64,
    cert_not_after: AtomicI64,
}

impl Metrics {
    pub fn new() -> Self {
        Metrics::default()
    }

    fn shard(&self) -> &Shard {
        self.shards.mine()
    }

    /// The sum of one counter over all shards.
    fn total<T: Into<i128>>(&self, counter: impl Fn(&Shard) -> &dyn Load<T>) -> i128 {
        self.shards.iter().map(|s| counter(s).load().into()).sum()
    }

    /// `operation` is one of [`OPERATIONS`]; anything else is counted as `unknown`.
    pub fn record(
        &self,
        endpoint: Endpoint,
        operation: &'static str,
        verdict: Verdict,
        elapsed: Duration,
    ) {
        let shard = self.shard();
        let operation = OPERATIONS
            .iter()
            .position(|o| *o == operation)
            .unwrap_or(OPERATIONS.len() - 1);
        shard.requests[endpoint as usize][operation][verdict as usize]
            .fetch_add(1, Ordering::Relaxed);
        shard.latency[endpoint as usize].observe(elapsed);
    }

    pub fn record_http_error(&self, code: u16) {
        if let Ok(mut errors) = self.http_errors.lock() {
            *errors.entry(code).or_default() += 1;
        }
    }

    pub fn record_panic(&self) {
        self.panics.fetch_add(1, Ordering::Relaxed);
        self.record_http_error(500);
    }

    pub fn record_reload(&self, success: bool) {
        let counter = if success {
            &self.reloads_ok
        } else {
            &self.reloads_failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn set_cert_not_after(&self, unix_seconds: i64) {
        self.cert_not_after.store(unix_seconds, Ordering::Relaxed);
    }

    pub fn in_flight(&self) -> InFlight<'_> {
        let gauge = &self.shard().in_flight;
        gauge.fetch_add(1, Ordering::Relaxed);
        InFlight(gauge)
    }

    /// Counts one evaluation running on a blocking thread until the guard is dropped. Separate
    /// from [`Metrics::in_flight`]: an evaluation whose request timed out runs on after its
    /// request was answered.
    pub fn evaluation_running(&self) -> InFlight<'_> {
        let gauge = &self.shard().evaluations_running;
        gauge.fetch_add(1, Ordering::Relaxed);
        InFlight(gauge)
    }

    pub fn record_evaluation(&self, thread: Thread) {
        self.shard().evaluations[thread as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        self.render_requests(&mut out);
        self.render_latency(&mut out);
        family(
            &mut out,
            "promotion_webhook_in_flight_requests",
            "gauge",
            "Admission requests being handled.",
        );
        sample(
            &mut out,
            "promotion_webhook_in_flight_requests",
            "",
            self.total(|s| &s.in_flight),
        );
        family(
            &mut out,
            "promotion_webhook_evaluations_running",
            "gauge",
            "Admission evaluations running, including those whose request has timed out.",
        );
        sample(
            &mut out,
            "promotion_webhook_evaluations_running",
            "",
            self.total(|s| &s.evaluations_running),
        );
        family(
            &mut out,
            "promotion_webhook_evaluations_total",
            "counter",
            "Admission evaluations started, by where they ran: cheap ones on the request's async task, expensive ones (unseen Lua or CEL, large bodies) on a blocking thread.",
        );
        for thread in Thread::ALL {
            sample(
                &mut out,
                "promotion_webhook_evaluations_total",
                &format!("thread=\"{}\"", thread.as_str()),
                self.total(|s| &s.evaluations[thread as usize]),
            );
        }
        family(
            &mut out,
            "promotion_webhook_panics_total",
            "counter",
            "Handler panics caught and answered with 500.",
        );
        sample(
            &mut out,
            "promotion_webhook_panics_total",
            "",
            self.panics.load(Ordering::Relaxed),
        );
        family(
            &mut out,
            "promotion_webhook_http_errors_total",
            "counter",
            "Requests answered with an HTTP error instead of an AdmissionReview, by status code.",
        );
        if let Ok(errors) = self.http_errors.lock() {
            for (code, count) in errors.iter() {
                sample(
                    &mut out,
                    "promotion_webhook_http_errors_total",
                    &format!("code=\"{code}\""),
                    count,
                );
            }
        }
        family(
            &mut out,
            "promotion_webhook_certificate_reloads_total",
            "counter",
            "Serving certificate reloads after a change on disk, by result.",
        );
        for (result, counter) in [
            ("success", &self.reloads_ok),
            ("failure", &self.reloads_failed),
        ] {
            sample(
                &mut out,
                "promotion_webhook_certificate_reloads_total",
                &format!("result=\"{result}\""),
                counter.load(Ordering::Relaxed),
            );
        }
        family(
            &mut out,
            "promotion_webhook_certificate_not_after_timestamp_seconds",
            "gauge",
            "Expiry of the serving certificate in use (Unix time).",
        );
        sample(
            &mut out,
            "promotion_webhook_certificate_not_after_timestamp_seconds",
            "",
            self.cert_not_after.load(Ordering::Relaxed),
        );
        out
    }

    fn render_requests(&self, out: &mut String) {
        family(
            out,
            "promotion_webhook_admission_requests_total",
            "counter",
            "Admission requests by endpoint, operation and verdict.",
        );
        for endpoint in Endpoint::ALL {
            for (o, operation) in OPERATIONS.iter().enumerate() {
                for verdict in VERDICTS {
                    let count = self.total(|s| &s.requests[endpoint as usize][o][verdict as usize]);
                    // Only the label sets that were counted, as a map of them would hold.
                    if count == 0 {
                        continue;
                    }
                    let labels = format!(
                        "endpoint=\"{}\",operation=\"{}\",verdict=\"{}\"",
                        endpoint.as_str(),
                        operation,
                        verdict.as_str()
                    );
                    sample(
                        out,
                        "promotion_webhook_admission_requests_total",
                        &labels,
                        count,
                    );
                }
            }
        }
    }

    fn render_latency(&self, out: &mut String) {
        let name = "promotion_webhook_admission_duration_seconds";
        family(
            out,
            name,
            "histogram",
            "Time from receiving the request headers to the answer, by endpoint.",
        );
        for endpoint in Endpoint::ALL {
            let e = endpoint as usize;
            let label = endpoint.as_str();
            let mut cumulative = 0;
            for (bucket, bound) in BUCKETS.iter().enumerate() {
                cumulative += self.total(|s| &s.latency[e].buckets[bucket]);
                let _ = writeln!(
                    out,
                    "{name}_bucket{{endpoint=\"{label}\",le=\"{bound}\"}} {cumulative}"
                );
            }
            let count = self.total(|s| &s.latency[e].count);
            let _ = writeln!(
                out,
                "{name}_bucket{{endpoint=\"{label}\",le=\"+Inf\"}} {count}"
            );
            let sum = self.total(|s| &s.latency[e].sum_nanos) as f64 / 1e9;
            let _ = writeln!(out, "{name}_sum{{endpoint=\"{label}\"}} {sum}");
            let _ = writeln!(out, "{name}_count{{endpoint=\"{label}\"}} {count}");
        }
    }
}

/// A counter or gauge of a shard, read for rendering.
trait Load<T> {
    fn load(&self) -> T;
}

impl Load<u64> for AtomicU64 {
    fn load(&self) -> u64 {
        AtomicU64::load(self, Ordering::Relaxed)
    }
}

impl Load<i64> for AtomicI64 {
    fn load(&self) -> i64 {
        AtomicI64::load(self, Ordering::Relaxed)
    }
}

pub struct InFlight<'a>(&'a AtomicI64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn sample(out: &mut String, name: &str, labels: &str, value: impl std::fmt::Display) {
    if labels.is_empty() {
        let _ = writeln!(out, "{name} {value}");
    } else {
        let _ = writeln!(out, "{name}{{{labels}}} {value}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::per_thread::SHARDS;

    #[test]
    fn renders_counters_and_cumulative_histogram() {
        let metrics = Metrics::new();
        metrics.record(
            Endpoint::Validate,
            "CREATE",
            Verdict::Denied,
            Duration::from_micros(30),
        );
        metrics.record(
            Endpoint::Validate,
            "CREATE",
            Verdict::Denied,
            Duration::from_millis(3),
        );
        metrics.record_panic();
        metrics.record_reload(true);
        {
            let _guard = metrics.in_flight();
            assert!(metrics
                .render()
                .contains("promotion_webhook_in_flight_requests 1\n"));
        }
        metrics.record_evaluation(Thread::Blocking);
        {
            let _guard = metrics.evaluation_running();
            let text = metrics.render();
            assert!(text.contains("promotion_webhook_evaluations_running 1\n"));
            assert!(text.contains("promotion_webhook_in_flight_requests 0\n"));
        }
        let text = metrics.render();
        assert!(text.contains(
            "promotion_webhook_admission_requests_total{endpoint=\"validate\",operation=\"CREATE\",verdict=\"denied\"} 2\n"
        ));
        assert!(text.contains(
            "promotion_webhook_admission_duration_seconds_bucket{endpoint=\"validate\",le=\"0.00005\"} 1\n"
        ));
        assert!(text.contains(
            "promotion_webhook_admission_duration_seconds_bucket{endpoint=\"validate\",le=\"0.005\"} 2\n"
        ));
        assert!(text.contains(
            "promotion_webhook_admission_duration_seconds_count{endpoint=\"mutate\"} 0\n"
        ));
        assert!(text.contains("promotion_webhook_panics_total 1\n"));
        assert!(text.contains("promotion_webhook_http_errors_total{code=\"500\"} 1\n"));
        assert!(
            text.contains("promotion_webhook_certificate_reloads_total{result=\"success\"} 1\n")
        );
        assert!(text.contains("promotion_webhook_in_flight_requests 0\n"));
        assert!(text.contains("promotion_webhook_evaluations_running 0\n"));
        assert!(text.contains("promotion_webhook_evaluations_total{thread=\"async\"} 0\n"));
        assert!(text.contains("promotion_webhook_evaluations_total{thread=\"blocking\"} 1\n"));
    }

    #[test]
    fn counts_from_many_threads_are_summed_and_gauges_balance_across_threads() {
        let metrics = std::sync::Arc::new(Metrics::new());
        let threads: Vec<_> = (0..SHARDS + 3)
            .map(|_| {
                let metrics = metrics.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        metrics.record(
                            Endpoint::Mutate,
                            "UPDATE",
                            Verdict::Patched,
                            Duration::from_micros(80),
                        );
                        metrics.record_evaluation(Thread::Async);
                    }
                    // Raised here, lowered on another thread (a task that moved).
                    let raised = metrics.in_flight();
                    std::mem::forget(raised);
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let n = (SHARDS + 3) * 100;
        let text = metrics.render();
        assert!(text.contains(&format!(
            "promotion_webhook_admission_requests_total{{endpoint=\"mutate\",operation=\"UPDATE\",verdict=\"patched\"}} {n}\n"
        )));
        assert!(text.contains(&format!(
            "promotion_webhook_admission_duration_seconds_bucket{{endpoint=\"mutate\",le=\"0.0001\"}} {n}\n"
        )));
        assert!(text.contains(&format!(
            "promotion_webhook_evaluations_total{{thread=\"async\"}} {n}\n"
        )));
        assert!(text.contains(&format!(
            "promotion_webhook_in_flight_requests {}\n",
            SHARDS + 3
        )));
        for _ in 0..SHARDS + 3 {
            drop(InFlight(&metrics.shard().in_flight));
        }
        assert!(metrics
            .render()
            .contains("promotion_webhook_in_flight_requests 0\n"));
        // Only label sets that were counted are rendered.
        assert!(!text.contains("verdict=\"denied\""), "{text}");
    }
}
