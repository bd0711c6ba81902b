//! Running admission evaluations, a bounded number at a time, the expensive ones off the async
//! workers.
//!
//! [`Evaluator::review`] is synchronous CPU work (decoding, the validation engine's Lua and CEL
//! parsing, encoding). Every evaluation first takes one of `max_concurrent_evaluations`
//! semaphore permits; waiting for it is an ordinary await, bounded by the caller's request
//! timeout. Then:
//!
//! - A cheap review ([`Evaluator::decode_if_cheap`]: a small body whose Lua and CEL texts the
//!   engine has judged before, which is almost every review) is answered right here, on the
//!   request's task. It takes tens of µs, at most about 100 µs; handing it to a blocking thread
//!   and back cost as much again in context switches, and measured on 2 cores it cut the
//!   webhook's throughput to 0.44–0.77x of a server that only parses the review (admission_load,
//!   against 0.74–0.86x answered here).
//! - An expensive one (unseen Lua or CEL, a large body) runs on the runtime's blocking threads
//!   (`spawn_blocking`, as kubewarden's policy-server runs policies): on an async worker it would
//!   stall every connection that worker serves, and no timeout around it could fire before it
//!   returned. The permit moves into the blocking task and is released when the evaluation
//!   returns, also when its request has already been answered with a timeout: evaluations that
//!   outlive their requests still count against the limit, and slow requests cannot pile up
//!   threads without bound.
//!
//! Threads of the blocking pool get the runtime's thread stack size, which `server` sets to the
//! validation engine's `VALIDATION_STACK_BYTES`, so parses run on the thread's own stack.

use std::num::NonZeroUsize;
use std::sync::Arc;

use bytes::Bytes;
use chrono::Utc;
use tokio::sync::Semaphore;

use super::error::ApiError;
use crate::evaluation::{Evaluator, Review};
use crate::metrics::{Endpoint, Metrics, Thread};

/// Runs before each evaluation, holding the permit, on the thread that evaluates (tests only: it
/// makes an evaluation as slow as a test needs, deterministically). A cheap review runs it on
/// the async task, so tests hold only expensive ones.
#[cfg(feature = "testing")]
pub type EvaluationHook = Arc<dyn Fn() + Send + Sync>;

/// The evaluator with its permits; shared by all requests.
#[derive(Clone)]
pub struct Evaluations {
    evaluator: Arc<Evaluator>,
    permits: Arc<Semaphore>,
    metrics: Arc<Metrics>,
    #[cfg(feature = "testing")]
    hook: Option<EvaluationHook>,
}

impl Evaluations {
    pub fn new(evaluator: Evaluator, limit: NonZeroUsize, metrics: Arc<Metrics>) -> Self {
        Evaluations {
            evaluator: Arc::new(evaluator),
            permits: Arc::new(Semaphore::new(limit.get())),
            metrics,
            #[cfg(feature = "testing")]
            hook: None,
        }
    }

    /// The same evaluations with `hook` run before each one (cargo feature `testing`).
    #[cfg(feature = "testing")]
    pub fn with_hook(self, hook: EvaluationHook) -> Self {
        Evaluations {
            hook: Some(hook),
            ..self
        }
    }

    /// Answer one AdmissionReview body once a permit is free: in place if cheap, otherwise on a
    /// blocking thread. Dropping the returned future (a timeout) stops the wait for a permit, or
    /// detaches a running blocking evaluation, which then finishes and releases its permit by
    /// itself.
    pub async fn review(&self, endpoint: Endpoint, body: Bytes) -> Result<Review, ApiError> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            // Only a closed semaphore fails, and nothing closes this one.
            .map_err(|_| ApiError::Internal("no evaluation slots".into()))?;
        match self.evaluator.decode_if_cheap(endpoint, &body) {
            Ok(Some(cheap)) => {
                let _running = self.metrics.evaluation_running();
                // Dropped before the gauge's guard, as on a blocking thread below.
                let _permit = permit;
                self.metrics.record_evaluation(Thread::Async);
                #[cfg(feature = "testing")]
                if let Some(hook) = &self.hook {
                    hook();
                }
                return Ok(self.evaluator.answer_cheap(cheap, Utc::now()));
            }
            Err(e) => return Err(ApiError::BadRequest(e.0)),
            Ok(None) => {}
        }
        self.metrics.record_evaluation(Thread::Blocking);
        let evaluator = self.evaluator.clone();
        let metrics = self.metrics.clone();
        #[cfg(feature = "testing")]
        let hook = self.hook.clone();
        let task = tokio::task::spawn_blocking(move || {
            let _running = metrics.evaluation_running();
            // Declared after the gauge's guard, so dropped before it: once the gauge shows no
            // evaluation running, every permit is back.
            let _permit = permit;
            #[cfg(feature = "testing")]
            if let Some(hook) = hook {
                hook();
            }
            // Stamped when the evaluation starts, not when the request arrived: audit records
            // say when the change was admitted.
            evaluator.review(endpoint, &body, Utc::now())
        });
        match task.await {
            Ok(review) => review.map_err(|e| ApiError::BadRequest(e.0)),
            // As if the evaluation had panicked on this task: the panic layer above answers 500,
            // counts and logs it, as it did when evaluations ran inline.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(ApiError::Internal(
                "the evaluation was cancelled: the server is stopping".into(),
            )),
        }
    }
}
