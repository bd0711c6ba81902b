//! Running admission evaluations off the async workers, a bounded number at a time.
//!
//! [`Evaluator::review`] is synchronous CPU work (decoding, the validation engine's Lua and CEL
//! parsing, encoding). Called on an async worker it would stall every connection that worker
//! serves, and no timeout around it could fire before it returned. So each review runs on the
//! runtime's blocking threads (`spawn_blocking`, as kubewarden's policy-server runs policies),
//! after taking one of `max_concurrent_evaluations` semaphore permits. Waiting for the permit and
//! for the result are ordinary awaits, so the caller's request timeout bounds both. The permit
//! moves into the blocking task and is released when the evaluation returns, also when its
//! request has already been answered with a timeout: evaluations that outlive their requests
//! still count against the limit, and slow requests cannot pile up threads without bound.
//!
//! Threads of the blocking pool get the runtime's thread stack size, which `server` sets to the
//! validation engine's `VALIDATION_STACK_BYTES`, so parses run on the thread's own stack.

use std::num::NonZeroUsize;
use std::sync::Arc;

use chrono::Utc;
use tokio::sync::Semaphore;

use super::error::ApiError;
use crate::evaluation::{Evaluator, Review};
use crate::metrics::{Endpoint, Metrics};

/// Runs on the blocking thread before each evaluation, holding the permit (tests only: it makes
/// an evaluation as slow as a test needs, deterministically).
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

    /// Answer one AdmissionReview body on a blocking thread once a permit is free. Dropping the
    /// returned future (a timeout) stops the wait for a permit, or detaches a running evaluation,
    /// which then finishes and releases its permit by itself.
    pub async fn review(&self, endpoint: Endpoint, body: Vec<u8>) -> Result<Review, ApiError> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            // Only a closed semaphore fails, and nothing closes this one.
            .map_err(|_| ApiError::Internal("no evaluation slots".into()))?;
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
