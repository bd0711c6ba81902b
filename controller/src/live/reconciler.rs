//! One live reconcile: the snapshot from the caches, the decision
//! ([`promotion_shared::reconcile::decide`]), and its writes in the order that makes every crash
//! point safe:
//!
//! 1. the finalizer;
//! 2. the commit: approvals used and the committed step, in one guarded patch of the promotion;
//! 3. the status, guarded by the version the commit produced (or the one read);
//! 4. the committed step cleared;
//! 5. profiles deleted, then applied (a stage's profile is applied only after the status that
//!    records the promotion to it is stored: a failed status write never leaves a stage deployed
//!    that the status does not show; a profile missing after a crash is repaired, D10);
//! 6. the finalizer removed (deletion).
//!
//! A crash between any two of them leaves a state the next reconcile completes: after 2 the
//! committed step passes the gate without the (already used) approval; after 3 the committed step
//! is cleared and the profiles applied; after 4–5 the repair applies what is missing.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::Resource;
use serde_json::Value;
use tokio::sync::watch;
use tracing::{debug, info, warn, Instrument};

use promotion_shared::api_error::Failure;
use promotion_shared::on_failure::AUTOMATIC_ROLLBACK;
use promotion_shared::reconcile::{decide, Decision, FinalizerChange, Options, Snapshot};
use promotion_shared::status_writer::{status_writer, take_over_requested, StatusWriter};

use super::events::Events;
use super::history::History;
use super::leader::Leadership;
use super::metrics::Metrics;
use super::stores::Stores;
use super::writes::{ProfileFence, WriteError, Writer};
use promotion_shared::api_resources::PROMOTION;

pub struct Context {
    pub writer: Writer,
    pub stores: Arc<Stores>,
    pub metrics: Arc<Metrics>,
    /// Events about promotions, each message a series that a new leader continues.
    pub events: Events,
    /// The rollout history, recorded after each reconcile.
    pub history: History,
    pub options: Options,
    pub take_over: bool,
    pub resync: Duration,
    /// Whether this replica may write (always, without leader election), and whether the API
    /// server answers its Lease.
    pub leader: watch::Receiver<Leadership>,
    /// (promotion, manager) pairs already reported as foreign: one Warning each, not one per
    /// reconcile.
    pub warned_foreign: Mutex<HashSet<(String, String)>>,
    /// When a watch event first asked for each promotion's next reconcile (for the lag metric).
    pub asked: Mutex<HashMap<String, Instant>>,
    /// The promotions this controller reconciles (within `--selector`), as its reflector holds
    /// them: only their reconciles are timed, since no other name is ever reconciled to take
    /// its entry out of `asked`.
    pub selected: Store<DynamicObject>,
    /// Consecutive failed reconciles of each promotion, for the retry backoff (cleared by a
    /// reconcile that succeeds).
    pub failures: Mutex<HashMap<String, u32>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Write(#[from] WriteError),
}

impl Context {
    /// A watch event asks for `promotion`'s reconcile (the lag metric starts here).
    pub fn asked_for(&self, promotion: &str) {
        let key = ObjectRef::<DynamicObject>::new_with(promotion, PROMOTION.api_resource());
        if self.selected.get(&key).is_none() {
            return;
        }
        let mut asked = self
            .asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        asked
            .entry(promotion.to_string())
            .or_insert_with(Instant::now);
    }

    fn take_asked(&self, promotion: &str) -> Option<Instant> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(promotion)
    }

    /// Publish one of the decision's Events.
    async fn publish_event(
        &self,
        object: &DynamicObject,
        event: &promotion_shared::reconcile::Event,
    ) {
        self.publish(
            object,
            event.event_type,
            event.reason,
            event.message.clone(),
        )
        .await;
    }

    async fn publish(&self, object: &DynamicObject, type_: &str, reason: &str, note: String) {
        let reference = object.object_ref(&PROMOTION.api_resource());
        self.events
            .publish(&reference, type_, reason, "ClusterPromotion", &note)
            .await;
    }
}

pub async fn reconcile(
    object: Arc<DynamicObject>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let name = object.metadata.name.clone().unwrap_or_default();
    // Every log line of the reconcile names the promotion (and, where it concerns one, the
    // stage).
    let span = tracing::info_span!("reconcile", promotion = %name);
    // Only while leading: a replica that loses the Lease stops mid-reconcile, its next write
    // included (the new leader decides again from what is stored).
    let mut leadership = ctx.leader.clone();
    if !leadership.borrow().leading {
        ctx.metrics.reconciled("skipped");
        return Ok(Action::await_change());
    }
    let lost = async move {
        let _ = leadership.wait_for(|l| !l.leading).await;
    };
    tokio::select! {
        result = reconcile_one(object, ctx.clone(), name).instrument(span) => result,
        _ = lost => {
            ctx.metrics.reconciled("skipped");
            info!("leadership lost: reconcile stopped");
            Ok(Action::await_change())
        }
    }
}

async fn reconcile_one(
    object: Arc<DynamicObject>,
    ctx: Arc<Context>,
    name: String,
) -> Result<Action, ReconcileError> {
    if let Some(asked) = ctx.take_asked(&name) {
        ctx.metrics.lag(asked.elapsed().as_secs_f64());
    }
    ctx.stores.ready().await;
    // The one conversion of the promotion: the decision decodes it once, the writes read it.
    let promotion = serde_json::to_value(object.as_ref()).unwrap_or(Value::Null);
    if let Some(manager) = foreign_writer(&promotion, ctx.take_over) {
        ctx.metrics.foreign(&manager);
        ctx.metrics.reconciled("skipped");
        let first = ctx
            .warned_foreign
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert((name.clone(), manager.clone()));
        if first {
            warn!(manager = %manager, "status last written by another field manager: left alone");
            ctx.publish(
                &object,
                "Warning",
                "ForeignStatusWriter",
                format!(
                    "status last written by {manager:?}; promotion-controller leaves this \
                     promotion alone (annotate it {}=\"true\" or run with --take-over to take it \
                     over)",
                    promotion_shared::status_writer::TAKE_OVER_ANNOTATION
                ),
            )
            .await;
        }
        return Ok(Action::requeue(ctx.resync));
    }
    let mut promotion = promotion;
    let mut attempt = 1;
    loop {
        let mut snapshot = snapshot(&ctx.stores, promotion, &name);
        if let Some(uid) = promotion_shared::on_failure::history_needed(&snapshot.promotion) {
            snapshot.revisions = ctx
                .history
                .revisions(uid)
                .await
                // Nothing is decided until the revision can be read (a forbidden read blocks
                // the rollback and is reported as one).
                .map_err(|e| {
                    WriteError::of("reading the rollout history for the requested rollback", e)
                })?;
        }
        let now = Utc::now();
        let decision = decide(&snapshot, now, &ctx.options);
        debug!(
            explanation = %decision.explanation,
            phase = decision.phase.as_ref().map_or("", |p| p.label()),
            "decided"
        );
        match carry_out(&ctx, &object, &snapshot.promotion, &decision).await {
            Ok(stored) => {
                ctx.history.sync(&stored, &snapshot.profiles).await;
                ctx.failures
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(&name);
                ctx.metrics.reconciled("ok");
                record_phase(&ctx, &name, &decision);
                observe(&ctx, &snapshot.promotion, &decision, now);
                return Ok(Action::requeue(requeue_after(
                    decision.wake_at,
                    Utc::now(),
                    ctx.resync,
                )));
            }
            // Another writer got in first: decide again from what is stored now, read directly
            // (the watch cache may not have the newer version yet, and deciding from it would
            // only conflict again).
            Err(e) if e.failure() == Some(Failure::Conflict) && attempt < CONFLICT_ATTEMPTS => {
                ctx.metrics.error(e.reason());
                debug!(error = %e, attempt, "conflict: reading the promotion and deciding again");
                attempt += 1;
                promotion = match ctx.writer.read(&name).await {
                    Ok(Some(fresh)) => fresh,
                    // Deleted meanwhile: nothing left to do.
                    Ok(None) => return Ok(Action::await_change()),
                    Err(e) => return Err(e.into()),
                };
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// How many times one reconcile decides again after a conflict before it gives up and is
/// retried later.
const CONFLICT_ATTEMPTS: u32 = 3;

/// When to look again: at the decision's deadline (a soak's end, a window's opening), at once
/// if it passed while the reconcile ran, and never later than the resync period.
fn requeue_after(
    wake_at: Option<chrono::DateTime<Utc>>,
    now: chrono::DateTime<Utc>,
    resync: Duration,
) -> Duration {
    match wake_at {
        Some(t) => (t - now).to_std().unwrap_or(Duration::ZERO).min(resync),
        None => resync,
    }
}

/// The status writer that is not us, unless taking over is allowed.
fn foreign_writer(promotion: &Value, take_over: bool) -> Option<String> {
    if take_over || take_over_requested(promotion) {
        return None;
    }
    match status_writer(promotion) {
        StatusWriter::Other { manager, .. } => Some(manager),
        StatusWriter::Unknown | StatusWriter::Nobody | StatusWriter::Us { .. } => None,
    }
}

fn snapshot(stores: &Stores, promotion: Value, name: &str) -> Snapshot {
    let stage_profiles = promotion_shared::model::stage_profile_names(&promotion, name);
    Snapshot {
        profiles: stores.profiles_of(name),
        summaries: stores.summaries_of(&stage_profiles),
        fleet: Some(stores.fleet()),
        promotion,
        revisions: Vec::new(),
    }
}

/// Each write is computed from the promotion as the previous one stored it (and guarded by its
/// resourceVersion): a write never builds on a copy older than the last write.
async fn carry_out(
    ctx: &Context,
    object: &DynamicObject,
    promotion: &Value,
    d: &Decision,
) -> Result<Value, WriteError> {
    let mut stored: Option<Value> = None;
    if d.finalizer == Some(FinalizerChange::Add) {
        stored = Some(ctx.writer.add_finalizer(promotion).await?);
        info!("finalizer added");
    }
    if !d.clear_approvals.is_empty() || d.promoting.is_some() {
        let latest = stored.as_ref().unwrap_or(promotion);
        stored = Some(
            ctx.writer
                .commit(latest, &d.clear_approvals, d.promoting.as_ref())
                .await?,
        );
        for stage in &d.consume_approvals {
            info!(stage = %stage, "approval used");
        }
    }
    if !d.annotations.is_empty() {
        let latest = stored.as_ref().unwrap_or(promotion);
        stored = Some(ctx.writer.annotations(latest, &d.annotations).await?);
        for (key, value) in &d.annotations {
            info!(annotation = %key, set = value.is_some(), "annotation written");
        }
        // The rollback is asked for now: said and counted now (the next reconcile carries it
        // out, and does not ask again), whatever happens to the writes below.
        for event in d.events.iter().filter(|e| e.reason == AUTOMATIC_ROLLBACK) {
            ctx.metrics.automatic_rollback();
            ctx.publish_event(object, event).await;
        }
    }
    if let Some(status) = &d.status {
        let latest = stored.as_ref().unwrap_or(promotion);
        stored = Some(ctx.writer.status(latest, status).await?);
        debug!("status written");
    }
    // The Events tell what the status now says: published once it is written, so a later write
    // that fails does not lose them.
    for event in d.events.iter().filter(|e| e.reason != AUTOMATIC_ROLLBACK) {
        ctx.publish_event(object, event).await;
    }
    // The committed step (written above, or found from an earlier reconcile) is done.
    if d.promoting.is_some() || d.clear_promoting.is_some() {
        let latest = stored.as_ref().unwrap_or(promotion);
        stored = Some(ctx.writer.clear_promoting(latest).await?);
    }
    for key in &d.delete {
        // The decision deletes only profiles it read; one the cache no longer holds is gone
        // (its watch event asks for the next reconcile).
        let Some((uid, version)) = ctx.stores.profile_version(&key.name) else {
            continue;
        };
        ctx.writer.delete_profile(&key.name, &uid, &version).await?;
        info!(profile = %key.name, "ClusterProfile deleted");
    }
    for body in &d.apply {
        let profile = body
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let fence = match ctx.stores.profile_version(profile) {
            Some((_, resource_version)) => ProfileFence::Read { resource_version },
            None => ProfileFence::Unseen {
                promotion: object.metadata.name.clone().unwrap_or_default(),
            },
        };
        ctx.writer.apply_profile(body, &fence).await?;
        info!(profile = %profile, "ClusterProfile applied");
    }
    if d.finalizer == Some(FinalizerChange::Remove) {
        let latest = stored.as_ref().unwrap_or(promotion);
        ctx.writer.remove_finalizer(latest).await?;
        info!("finalizer removed");
    }
    Ok(stored.unwrap_or_else(|| promotion.clone()))
}

/// The promotion's phase for the metric: the decision's (which read the ClusterSummaries), or
/// `deleting` until the finalizer goes.
fn record_phase(ctx: &Context, name: &str, d: &Decision) {
    let phase = match &d.phase {
        Some(phase) => Some(phase.label()),
        None if d.finalizer == Some(FinalizerChange::Remove) => None,
        None => Some("deleting"),
    };
    ctx.metrics.phase(name, phase);
}

/// Stage durations and approval waits, observed when a stage is promoted.
fn observe(ctx: &Context, promotion: &Value, d: &Decision, now: chrono::DateTime<Utc>) {
    let Some(status) = &d.status else { return };
    let before = promotion
        .pointer("/status/stages")
        .and_then(Value::as_array)
        .map(Vec::len)
        .unwrap_or(0);
    let after = status
        .get("stages")
        .and_then(Value::as_array)
        .map(Vec::len)
        .unwrap_or(0);
    if after <= before || before == 0 {
        return;
    }
    // The stage promoted from is the one before the new entry.
    let Some(promoted) = status.pointer(&format!("/stages/{}", after - 2)) else {
        return;
    };
    let since = |key: &str| {
        promoted
            .get(key)
            .and_then(Value::as_str)
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| (now - t.with_timezone(&Utc)).num_milliseconds() as f64 / 1000.0)
    };
    if let Some(s) = since("lastUpdateReconciledTime") {
        ctx.metrics.stage_promoted(s.max(0.0));
    }
    if !d.consume_approvals.is_empty() {
        if let Some(s) = since("lastSuccessfulAppliedTime") {
            ctx.metrics.approval_used(s.max(0.0));
        }
    }
}

/// Retry: a conflict at once (the cache catches up within the watch's latency), anything else
/// after upstream's `normalRequeueAfter` (10 s). A write the API server refused or could not
/// take (an admission webhook's denial, RBAC, a webhook it cannot call under
/// `failurePolicy: Fail`, …) is reported as a Warning Event `WriteBlocked` on the promotion, with
/// the server's words: it blocks promotions, and must not do so silently.
pub fn error_policy(
    object: Arc<DynamicObject>,
    error: &ReconcileError,
    ctx: Arc<Context>,
) -> Action {
    let ReconcileError::Write(e) = error;
    ctx.metrics.reconciled("error");
    ctx.metrics.error(e.reason());
    let name = object.metadata.name.clone().unwrap_or_default();
    let failures = {
        let mut all = ctx
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = all.entry(name.clone()).or_insert(0);
        *n = n.saturating_add(1);
        *n
    };
    let retry = retry_after(e.failure(), failures);
    match e.failure() {
        Some(Failure::Conflict) => {
            debug!(promotion = %name, error = %e, retry = ?retry, "conflict: deciding again");
            Action::requeue(retry)
        }
        Some(Failure::NotFound) => {
            debug!(promotion = %name, error = %e, "gone meanwhile");
            Action::await_change()
        }
        _ if blocks(e) => {
            warn!(promotion = %name, error = %e, "write blocked");
            let ctx2 = ctx.clone();
            let note = format!("promotion-controller could not write: {e}");
            tokio::spawn(async move {
                ctx2.publish(&object, "Warning", "WriteBlocked", note).await;
            });
            Action::requeue(retry)
        }
        _ => {
            warn!(promotion = %name, error = %e, retry = ?retry, "reconcile failed");
            Action::requeue(retry)
        }
    }
}

/// When to retry after the `failures`-th failure in a row: doubling from 200 ms for a conflict
/// (another writer; the next try reads afresh) and from 2 s for anything else, up to 10 s and
/// 5 minutes — a webhook or API server outage is not hammered, and a short one is soon over.
fn retry_after(failure: Option<Failure>, failures: u32) -> Duration {
    let (first, cap) = match failure {
        Some(Failure::Conflict) => (Duration::from_millis(200), Duration::from_secs(10)),
        _ => (Duration::from_secs(2), Duration::from_secs(300)),
    };
    let doubled = first.saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    doubled.min(cap)
}

/// A failure that stops the rollout until someone acts or the server recovers: anything the
/// server answered but a conflict or a missing object, and a write fenced off (a profile that is
/// not ours).
fn blocks(e: &WriteError) -> bool {
    match e {
        WriteError::Fenced { .. } => true,
        _ => !matches!(
            e.failure(),
            None | Some(Failure::Conflict) | Some(Failure::NotFound)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_reconciles_back_off_and_conflicts_retry_sooner() {
        let other = Some(Failure::Unavailable);
        let secs = |f, n| retry_after(f, n).as_millis();
        assert_eq!(
            [1, 2, 3, 4].map(|n| secs(other, n)),
            [2000, 4000, 8000, 16000]
        );
        assert_eq!(secs(other, 40), 300_000);
        assert_eq!(secs(None, 1), 2000);
        let conflict = Some(Failure::Conflict);
        assert_eq!([1, 2].map(|n| secs(conflict, n)), [200, 400]);
        assert_eq!(secs(conflict, 40), 10_000);
    }

    #[test]
    fn a_deadline_that_passed_during_the_reconcile_is_looked_at_at_once() {
        let now = Utc::now();
        let resync = Duration::from_secs(600);
        let second = chrono::Duration::seconds(1);
        assert_eq!(
            requeue_after(Some(now - second), now, resync),
            Duration::ZERO
        );
        assert_eq!(
            requeue_after(Some(now + second), now, resync),
            Duration::from_secs(1)
        );
        assert_eq!(
            requeue_after(Some(now + chrono::Duration::hours(2)), now, resync),
            resync
        );
        assert_eq!(requeue_after(None, now, resync), resync);
    }
}
