//! One reconcile of a ClusterPromotion as a pure function: from a snapshot of the promotion, its
//! ClusterProfiles, their ClusterSummaries and the fleet, at `now`, what the reconciler writes
//! ([`Decision`]): profiles to apply (full bodies) or delete, the status, the approvals it
//! consumes, its Events and when it must look again.
//!
//! It is addon-controller v1.13.0's `Reconcile` (`docs/reference/promotion-controller.md`
//! §3–§16, every status string verbatim), with the defects the decision itself can fix fixed:
//! - D1: a restart whose profile could not be applied is not lost: the hashes are written in the
//!   same status as the restart, and a promotion with no current stage restarts;
//! - D3: approvals are consumed by name ([`Decision::consume_approvals`]), never by rewriting
//!   `spec.stages`, so no other stage's `automaticReset: false` is touched;
//! - D4, D13, D15: see [`deployed`];
//! - D5: a manual gate is honoured only once the stage's health checks pass, as for `auto`;
//! - D6: a completed promotion stays complete (upstream re-pauses a manual last stage and
//!   re-creates pre-verification profiles on every later reconcile); the last stage's own gate
//!   is still honoured, as the last sign-off (the plugin approves it as `→ complete`);
//! - D7: a restart removes every stage's pre-verification profile, not only the first's;
//! - D10: a generated profile of a stage the current rollout has reached that is missing or was
//!   edited is applied again (the rollout identity says its spec is the current one);
//! - D11: a post-delay check is appended unless the very same check is there (upstream compares
//!   names only);
//! - D12: a window schedule that never fires is an error, not a hung worker ([`crate::window`]);
//! - D14: stale-profile clean-up and deletion touch only profiles owned by this promotion's UID;
//! - D16: deadlines wake the reconciler exactly ([`Decision::wake_at`]) instead of a 2-minute poll.
//!
//! Kept: D2 and D8 are fixed by the runtime (the consumption and the promotion are one guarded
//! write; owner references are dropped before the finalizer); D9 does not apply (no licence);
//! D17 and D18 are Sveltos' own status semantics, which the plugin and users read as they are.

pub mod adoption;
pub mod bodies;
pub mod deployed;
pub mod simulate;
mod status_edit;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::fleet::Cluster;
use crate::model::{
    preserved_for, preverification_profile_name, profile_belongs_to, stage_profile_name,
    ClusterPromotion, Stage, ValidateHealth, FINALIZER, PRESERVED_FOR_ANNOTATION,
    PROMOTION_NAME_LABEL, VERIFICATION_LABEL,
};
use crate::pipeline::Phase;
use crate::rollout::{identity, RolloutId};
use crate::status::descriptions;
use crate::tree::tree_of;
use crate::window::{self, WindowState};

use crate::promoting::{self, Promoting};
use bodies::{preverification_profile, stage_profile, PROFILE_API_VERSION, PROFILE_KIND};
use deployed::Deployment;
use status_edit::Status;

/// What one reconcile reads.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The ClusterPromotion as the API server stores it.
    pub promotion: Value,
    /// ClusterProfiles (those of other promotions are ignored).
    pub profiles: Vec<Value>,
    /// ClusterSummaries (those of other profiles are ignored).
    pub summaries: Vec<Value>,
    /// SveltosClusters and CAPI Clusters, when they were read (shared: a controller hands the
    /// same fleet to every promotion's reconcile).
    pub fleet: Option<std::sync::Arc<[Cluster]>>,
    /// The promotion's rollout history, read only while a rollback is requested
    /// ([`crate::abort`]): the revision it goes back to.
    pub revisions: Vec<crate::history::Revision>,
}

/// How the decision reads the clock's wall time.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The zone promotion windows are evaluated in, and soak and window times are written in.
    /// Upstream uses the controller process's local zone, which is UTC in Sveltos' distroless
    /// image; UTC is the default so that a window means the same on every installation.
    pub window_zone: chrono_tz::Tz,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            window_zone: chrono_tz::UTC,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FinalizerChange {
    Add,
    Remove,
}

/// An object to delete.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectKey {
    pub api_version: String,
    pub kind: String,
    pub name: String,
}

/// An Event about the promotion. Upstream's three have type `Normal` and reason `Sveltos`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    #[serde(rename = "type")]
    pub event_type: &'static str,
    pub reason: &'static str,
    pub message: String,
    /// The step of a stage the Event reports, for readers of decisions (the `plan --timeline`
    /// simulation) that must not parse messages.
    #[serde(skip)]
    pub step: Option<(StageStep, String)>,
}

/// A stage's step an Event reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageStep {
    /// Its profile is applied: the stage starts.
    Started,
    /// Counted deployed (Sveltos provisioned it, or it matches no cluster).
    Deployed,
}

/// What one reconcile does.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// Server-side apply bodies, in order.
    pub apply: Vec<Value>,
    pub delete: Vec<ObjectKey>,
    /// The whole new `status`, when it changes.
    pub status: Option<Value>,
    /// Stages whose `approved` this reconcile uses (and, with `automaticReset`, clears).
    pub consume_approvals: Vec<String>,
    /// The indices in `spec.stages` of the approvals used that reset automatically: the ones the
    /// commit removes (`crate::patch::commit`).
    pub clear_approvals: Vec<usize>,
    pub events: Vec<Event>,
    /// The next deadline (soak end, window opening); `None`: only a change wakes it.
    pub wake_at: Option<DateTime<Utc>>,
    pub explanation: String,
    /// The promotion's finalizer to add or remove.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finalizer: Option<FinalizerChange>,
    /// The rollout this decision works for (the spec's hashes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutId>,
    /// The step committed together with the consumption of an approval that resets
    /// automatically: written in the same guarded patch that removes `approved`, before the
    /// status ([`promoting`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub promoting: Option<Promoting>,
    /// The committed-step annotation found on the promotion, to remove once the status is
    /// written (its exact text guards the removal): the step is done, or it is not this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clear_promoting: Option<String>,
    /// Where the promotion stands once this decision is carried out, from what it read (the
    /// ClusterSummaries included: a failing stage is `degraded`, or `failed` for good); `None`
    /// while it is being deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// ClusterSummaries a stage judged deployed counts on although their history is unknown
    /// (`deployed::unconfirmed`): deployed as upstream judges it, unconfirmed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unconfirmed: Vec<String>,
    /// The controller's own annotations to set (`Some`) or remove (`None`): an automatic
    /// rollback's request and its note of a failing stage ([`crate::on_failure`]).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub annotations: std::collections::BTreeMap<String, Option<String>>,
    /// Why a gate waits, when its description does not say (folded into the explanation).
    #[serde(skip)]
    note: Option<String>,
    /// The note of a failing stage is still true ([`Reconcile::on_failure`]).
    #[serde(skip)]
    failing: bool,
}

impl Decision {
    fn new() -> Self {
        Decision {
            apply: Vec::new(),
            delete: Vec::new(),
            status: None,
            consume_approvals: Vec::new(),
            clear_approvals: Vec::new(),
            events: Vec::new(),
            wake_at: None,
            explanation: String::new(),
            finalizer: None,
            rollout: None,
            promoting: None,
            clear_promoting: None,
            phase: None,
            unconfirmed: Vec::new(),
            annotations: std::collections::BTreeMap::new(),
            note: None,
            failing: false,
        }
    }

    fn event(&mut self, message: String, step: Option<(StageStep, &str)>) {
        self.events.push(Event {
            event_type: "Normal",
            reason: "Sveltos",
            message,
            step: step.map(|(s, stage)| (s, stage.to_string())),
        });
    }

    fn warning(&mut self, reason: &'static str, message: String) {
        self.warning_on(reason, message, None);
    }

    fn warning_on(
        &mut self,
        reason: &'static str,
        message: String,
        step: Option<(StageStep, &str)>,
    ) {
        self.events.push(Event {
            event_type: "Warning",
            reason,
            message,
            step: step.map(|(s, stage)| (s, stage.to_string())),
        });
    }

    fn delete_profile(&mut self, name: String) {
        let key = ObjectKey {
            api_version: PROFILE_API_VERSION.into(),
            kind: PROFILE_KIND.into(),
            name,
        };
        if !self.delete.contains(&key) {
            self.delete.push(key);
        }
    }
}

/// What one reconcile of `snapshot` at `now` does.
pub fn decide(snapshot: &Snapshot, now: DateTime<Utc>, options: &Options) -> Decision {
    let mut d = Decision::new();
    let promotion = match ClusterPromotion::decode(&snapshot.promotion) {
        Ok(p) => p,
        Err(e) => {
            d.explanation = format!("the promotion cannot be read as a ClusterPromotion: {e}");
            d.phase = Some(Phase::Failed);
            return d;
        }
    };
    let aborted = crate::abort::aborted(&snapshot.promotion)
        .filter(|a| identity(&tree_of(&snapshot.promotion)).is_ok_and(|i| a.applies_to(&i.id)));
    let r = Reconcile {
        snapshot,
        promotion: &promotion,
        now: now.with_nanosecond0(),
        options,
        hold: Hold::of(
            crate::pause::paused(&snapshot.promotion).as_ref(),
            aborted.as_ref(),
        ),
        aborted,
    };
    if promotion.metadata.deletion_timestamp.is_some() {
        r.delete(&mut d);
    } else {
        r.live(&mut d);
        // The note of a failing stage goes once that stage no longer fails (or the rollout it
        // was about is no longer the one rolling).
        let noted = snapshot
            .promotion
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(crate::on_failure::FAILING_ANNOTATION))
            .is_some();
        if noted && !d.failing {
            d.annotations
                .entry(crate::on_failure::FAILING_ANNOTATION.to_string())
                .or_insert(None);
        }
    }
    d
}

trait Truncate {
    fn with_nanosecond0(self) -> Self;
}

impl Truncate for DateTime<Utc> {
    /// Status times are whole seconds (`metav1.Time`).
    fn with_nanosecond0(self) -> Self {
        self - Duration::nanoseconds(i64::from(self.timestamp_subsec_nanos()))
    }
}

/// `2006-01-02T15:04:05Z07:00` in the window zone: how upstream writes soak and window times.
fn zoned(t: DateTime<Utc>, zone: chrono_tz::Tz) -> String {
    t.with_timezone(&zone)
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

struct Reconcile<'a> {
    snapshot: &'a Snapshot,
    promotion: &'a ClusterPromotion,
    now: DateTime<Utc>,
    options: &'a Options,
    /// While paused, or while this rollout is aborted, no stage starts and no gate passes.
    hold: Option<Hold>,
    /// The abort request of this rollout ([`crate::abort`]).
    aborted: Option<crate::abort::Aborted>,
}

/// What holds the rollout where it is: a pause ([`crate::pause`]) or an abort of this rollout
/// ([`crate::abort`]; it wins: a retry, not a resume, releases it).
struct Hold {
    phase: Phase,
    /// "the promotion", "the rollout".
    subject: &'static str,
    /// "paused by alice at T: \"bad chart\"".
    what: String,
    /// What releases it: "resumed", "retried".
    verb: &'static str,
}

impl Hold {
    fn of(
        paused: Option<&crate::pause::Paused>,
        aborted: Option<&crate::abort::Aborted>,
    ) -> Option<Hold> {
        if let Some(a) = aborted {
            return Some(Hold {
                phase: Phase::Aborted,
                subject: "the rollout",
                what: a.describe(),
                verb: "retried",
            });
        }
        paused.map(|p| Hold {
            phase: Phase::Paused,
            subject: "the promotion",
            what: p.describe(),
            verb: "resumed",
        })
    }
}

/// What a stage's trigger says.
enum Gate {
    Pass,
    Wait {
        description: String,
        wake: Option<DateTime<Utc>>,
    },
    Error(String),
}

impl<'a> Reconcile<'a> {
    fn name(&self) -> &str {
        self.promotion.name()
    }

    fn uid(&self) -> Option<&str> {
        self.promotion.metadata.uid.as_deref()
    }

    fn profile(&self, name: &str) -> Option<&'a Value> {
        self.snapshot.profiles.iter().find(|p| {
            p.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
                && profile_belongs_to(
                    p,
                    self.promotion.name(),
                    self.promotion.metadata.uid.as_deref(),
                )
        })
    }

    /// The profiles labelled with this promotion's name that it owns (by UID when both have
    /// one: a re-created promotion of the same name does not adopt or delete another's, D14).
    fn owned_profiles(&self) -> Vec<&'a Value> {
        self.snapshot
            .profiles
            .iter()
            .filter(|p| {
                p.pointer("/metadata/labels")
                    .and_then(|l| l.get(PROMOTION_NAME_LABEL))
                    .and_then(Value::as_str)
                    == Some(self.name())
                    && profile_belongs_to(p, self.name(), self.uid())
                    && (owner_referenced(p)
                        || preserved_for(p).is_some_and(|u| Some(u) == self.uid()))
            })
            .collect()
    }

    fn live(&self, d: &mut Decision) {
        let stages = &self.promotion.spec.stages;
        if !self
            .promotion
            .metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|x| x == FINALIZER))
        {
            d.finalizer = Some(FinalizerChange::Add);
        }
        // §6: generated profiles of stages that are gone.
        let expected: Vec<String> = stages
            .iter()
            .flat_map(|s| {
                [
                    stage_profile_name(self.name(), &s.name),
                    preverification_profile_name(self.name(), &s.name),
                ]
            })
            .collect();
        for p in self.owned_profiles() {
            let name = p
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !expected.iter().any(|e| e == name) {
                d.delete_profile(name.to_string());
            }
        }
        let Some(first) = stages.first() else {
            d.explanation = "the promotion has no stages: nothing to do".into();
            d.phase = Some(Phase::NotStarted);
            return;
        };
        let id = match identity(&tree_of(&self.snapshot.promotion)) {
            Ok(i) => i.id,
            Err(e) => {
                d.explanation = format!(
                    "the spec cannot be decoded as Sveltos decodes it ({} is not {}): nothing is \
                     done until it is fixed",
                    e.path, e.expected
                );
                d.phase = Some(Phase::Failed);
                return;
            }
        };
        d.rollout = Some(id.clone());
        if let Some(n) = self
            .aborted
            .as_ref()
            .and_then(crate::abort::Aborted::rollback_to)
        {
            self.roll_back(d, &id, n);
            return;
        }
        let mut status = Status::new(self.promotion.status.clone().unwrap_or_default(), self.now);
        let recorded = RolloutId::in_status(&self.snapshot.promotion);
        let current = status
            .current_stage()
            .filter(|c| stages.iter().any(|s| &s.name == c))
            .map(str::to_string);
        let Some(current) = current.filter(|_| recorded.as_ref() == Some(&id)) else {
            if let Some(hold) = &self.hold {
                d.explanation = format!(
                    "the spec's rollout starts at {} when {} is {}: it is {}",
                    first.name, hold.subject, hold.verb, hold.what
                );
                d.phase = Some(hold.phase.clone());
                return;
            }
            self.restart(d, &mut status, first, &id, recorded.as_ref());
            d.phase = Some(Phase::Progressing);
            d.status = status.changed();
            d.clear_promoting = promoting::recorded(&self.snapshot.promotion).1;
            return;
        };
        self.repair(d, &status, &current);
        // A pre-verification profile verifies the current stage's rollout alone. Another
        // stage's is a leftover of a crash between a status write and the deletion that follows
        // it (a restart's, D7; a promotion's): deleted, as no later pass would otherwise.
        for stage in stages.iter().filter(|s| s.name != current) {
            let pre = preverification_profile_name(self.name(), &stage.name);
            if self.profile(&pre).is_some() {
                d.delete_profile(pre);
            }
        }
        let (committed, text) = promoting::recorded(&self.snapshot.promotion);
        let committed = committed.filter(|p| p.stage == current && p.rollout == id);
        let promoted = self.advance(d, &mut status, &current, committed.as_ref());
        if let Some(hold) = self
            .hold
            .as_ref()
            .filter(|h| d.phase.as_ref() != Some(&h.phase))
        {
            d.explanation.push_str(&format!(
                " ({} is {}: no stage starts until it is {})",
                hold.subject, hold.what, hold.verb
            ));
            d.phase = Some(hold.phase.clone());
        }
        if !d.unconfirmed.is_empty() {
            d.explanation.push_str(&format!(
                " (deployed as Sveltos reports it, unconfirmed for ClusterSummary {}: their \
                 status predates what this controller has seen of them, and their managed fields \
                 cannot order it after their spec)",
                d.unconfirmed.join(", ")
            ));
        }
        d.status = status.changed();
        // Kept only while its step is still to be done: it stands for an approval already used.
        if promoted || committed.is_none() {
            d.clear_promoting = text;
        }
    }

    /// §8, with D1 and D7 fixed.
    fn restart(
        &self,
        d: &mut Decision,
        status: &mut Status,
        first: &Stage,
        id: &RolloutId,
        recorded: Option<&RolloutId>,
    ) {
        d.apply.push(stage_profile(
            self.promotion,
            &self.snapshot.promotion,
            first,
            &[],
        ));
        for stage in &self.promotion.spec.stages {
            let pre = preverification_profile_name(self.name(), &stage.name);
            if self.profile(&pre).is_some() {
                d.delete_profile(pre);
            }
        }
        // Upstream says "(Restart)" also of a promotion's very first rollout; here only a new
        // rollout restarts, and the first is announced with upstream's plain string.
        d.event(
            match recorded {
                None => format!("Provisioning stage {}", first.name),
                Some(_) => format!("Provisioning stage {} (Restart)", first.name),
            },
            Some((StageStep::Started, &first.name)),
        );
        status.reset();
        status.add_stage(&first.name);
        status.describe(&first.name, descriptions::PROVISIONING);
        status.set_hashes(id);
        let why = match recorded {
            None => "first reconcile of this spec".to_string(),
            Some(_) => {
                "the spec starts a new rollout (its hashes differ from the status')".to_string()
            }
        };
        d.explanation = format!(
            "{why}: {} is provisioned with it first; nothing else blocks",
            first.name
        );
    }

    /// A rollback of the rollout `id` to revision `n` ([`crate::abort`]): revision `n`'s stage
    /// profile applied to every stage whose profile differs from it, at once; each stage counted
    /// rolled back only once it is deployed as [`deployed`] judges it, against that profile. The
    /// status says so per stage and names no current stage, so that a retry starts the rollout
    /// again from its first stage. Nothing is stored as progress: each reconcile judges again
    /// from what is stored, so a crash or a new leader finishes it.
    fn roll_back(&self, d: &mut Decision, id: &RolloutId, n: i64) {
        let by = self
            .aborted
            .as_ref()
            .map(crate::abort::Aborted::by)
            .unwrap_or_default();
        let refuse = |d: &mut Decision, why: String| {
            d.warning(
                "RollbackRefused",
                format!("the rollback to revision {n} {by} is refused: {why}"),
            );
            d.explanation = format!(
                "the rollback to revision {n} is refused: {why}; the rollout stays aborted where \
                 it is"
            );
            d.phase = Some(Phase::Aborted);
        };
        let target = match crate::history::rollback_target(&self.snapshot.revisions, id, Some(n)) {
            Ok(t) => t,
            Err(why) => return refuse(d, why),
        };
        let mut stored = self.snapshot.promotion.clone();
        stored["spec"]["profileSpec"] = target.data.get("profileSpec").cloned().unwrap_or_default();
        stored["spec"]["stages"] = target.data.get("stages").cloned().unwrap_or_default();
        let promotion = match ClusterPromotion::decode(&stored) {
            Ok(p) => p,
            Err(e) => return refuse(d, format!("its data cannot be read: {e}")),
        };
        let snapshot = Snapshot {
            promotion: stored,
            revisions: Vec::new(),
            ..self.snapshot.clone()
        };
        let r = Reconcile {
            snapshot: &snapshot,
            promotion: &promotion,
            now: self.now,
            options: self.options,
            hold: None,
            aborted: None,
        };
        let mut status = Status::new(self.promotion.status.clone().unwrap_or_default(), self.now);
        let before = status.status.clone();
        status.reset();
        status.set_hashes(id);
        let rolled_back = format!("{}{n}", descriptions::ROLLED_BACK);
        let (mut done, mut rolling) = (Vec::new(), Vec::new());
        for stage in &promotion.spec.stages {
            let name = stage_profile_name(self.name(), &stage.name);
            // A stage no rollout ever reached has no profile: nothing to set back.
            let Some(have) = r.profile(&name) else {
                continue;
            };
            let post = post_delay(stage);
            let want = stage_profile(&promotion, &snapshot.promotion, stage, post);
            let deployed = if same_profile(have, &want) {
                match r.deployment(d, stage, !post.is_empty()) {
                    Deployment::Deployed(_) => None,
                    Deployment::NotDeployed(why) => Some(why),
                }
            } else {
                d.apply.push(want);
                Some(format!(
                    "ClusterProfile {name} is being set back to revision {n}"
                ))
            };
            let description = match &deployed {
                None => rolled_back.clone(),
                Some(_) => format!("{}{n}", descriptions::ROLLING_BACK),
            };
            // An entry that already says so keeps its times (when the stage was first seen
            // rolled back): the status changes only when a stage's state does.
            let earlier = before
                .stages
                .iter()
                .flatten()
                .find(|s| s.name == stage.name)
                .filter(|s| {
                    s.current_status_description
                        .as_deref()
                        .is_some_and(|t| crate::status::strip_timestamp(t) == description)
                })
                .cloned();
            status.add_stage(&stage.name);
            status.check(&stage.name, deployed.is_none(), deployed.clone());
            status.describe(&stage.name, &description);
            if let Some(earlier) = earlier {
                for s in status.status.stages.iter_mut().flatten() {
                    if s.name == stage.name {
                        s.last_update_reconciled_time = earlier.last_update_reconciled_time.clone();
                        s.last_successful_applied_time =
                            earlier.last_successful_applied_time.clone();
                    }
                }
            }
            match deployed {
                None => done.push(stage.name.clone()),
                Some(why) => rolling.push(format!("{}: {why}", stage.name)),
            }
        }
        // `add_stage` makes each stage current and stamps a promotion time: a rollback names
        // neither (a retry starts from the first stage).
        status.status.current_stage_name = None;
        status.status.last_promotion_time = None;
        for stage in &promotion.spec.stages {
            let pre = preverification_profile_name(self.name(), &stage.name);
            if self.profile(&pre).is_some() {
                d.delete_profile(pre);
            }
        }
        let was_done = crate::abort::all_rolled_back(
            before
                .stages
                .iter()
                .flatten()
                .map(|s| s.current_status_description.as_deref()),
            n,
        );
        if rolling.is_empty() {
            if !was_done {
                d.event(
                    format!("Rolled back to revision {n}: {} run it", done.join(", ")),
                    None,
                );
            }
            d.phase = Some(Phase::RolledBack);
            d.explanation = format!(
                "rolled back to revision {n} {by}: {} run it (the spec is still the aborted \
                 rollout's; `kubectl promotion retry` starts it again from its first stage)",
                if done.is_empty() {
                    "no stage has a profile, so none".to_string()
                } else {
                    done.join(", ")
                }
            );
        } else {
            if !d.apply.is_empty() {
                d.warning(
                    "RollingBack",
                    format!(
                        "Rolling back to revision {n} {by}: {}",
                        d.apply
                            .iter()
                            .map(|b| named(b).to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
            d.phase = Some(Phase::RollingBack);
            d.explanation = format!("rolling back to revision {n} {by}: {}", rolling.join("; "));
        }
        d.status = status.changed();
    }

    /// D10: the generated profile of each stage the current rollout has reached, applied again
    /// when it is missing or differs from what the stage received.
    fn repair(&self, d: &mut Decision, status: &Status, current: &str) {
        let stages = &self.promotion.spec.stages;
        let Some(upto) = stages.iter().position(|s| s.name == current) else {
            return;
        };
        for (i, stage) in stages.iter().enumerate().take(upto + 1) {
            let name = stage_profile_name(self.name(), &stage.name);
            // Post-delay checks are in a stage's profile once its soak is over (upstream appends
            // them then), and stay for good once it is promoted.
            let checks_reached = i < upto || self.soaked(status, stage);
            let post = if checks_reached {
                post_delay(stage)
            } else {
                &[]
            };
            let want = stage_profile(self.promotion, &self.snapshot.promotion, stage, post);
            let differs = match self.profile(&name) {
                None => true,
                Some(have) => !same_profile(have, &want),
            };
            if differs {
                d.apply.push(want);
            }
        }
    }

    /// §12 R7–R8 and §13–§14. `committed`: this very step was committed by an earlier
    /// reconcile (its approval is already used). Whether the stage was promoted (or the
    /// promotion completed).
    fn advance(
        &self,
        d: &mut Decision,
        status: &mut Status,
        current: &str,
        committed: Option<&Promoting>,
    ) -> bool {
        let stages = &self.promotion.spec.stages;
        let Some(index) = stages.iter().position(|s| s.name == current) else {
            return false;
        };
        let stage = &stages[index];
        let next = stages.get(index + 1);
        let profile_name = stage_profile_name(self.name(), current);
        if !status.provisioned(current) {
            match self.deployment(d, stage, false) {
                Deployment::NotDeployed(why) => {
                    let (failing, names) = self.failures(&profile_name);
                    // One Warning per new failure (the stage's failure message changes), so that
                    // alerting on Events sees a failing stage without one per reconcile.
                    let before = status
                        .stage(current)
                        .and_then(|s| s.failure_message.clone());
                    if failing.is_some() && before.as_deref() != Some(why.as_str()) {
                        d.warning("StageFailing", self.failing_warning(current, &profile_name));
                    }
                    status.check(current, false, Some(why.clone()));
                    let on_failure =
                        failing.map(|_| self.on_failure(d, current, &profile_name, &why));
                    d.explanation = match failing {
                        None => format!("{current} is being deployed: {why}"),
                        Some(kind) => format!(
                            "{current} is failing to deploy: {} {} ({}); {why}",
                            crate::plan::hazards::plural(
                                names.len(),
                                "ClusterSummary",
                                "ClusterSummaries"
                            ),
                            names
                                .iter()
                                .map(|f| f.summary.as_str())
                                .collect::<Vec<_>>()
                                .join(", "),
                            match kind {
                                deployed::Failing::Retrying => "Failed: Sveltos retries",
                                deployed::Failing::ForGood => {
                                    "FailedNonRetriable: Sveltos retries only once the spec or \
                                     the cluster changes"
                                }
                            }
                        ),
                    };
                    if let Some(Some(text)) = on_failure {
                        d.explanation.push_str(&format!(" ({text})"));
                    }
                    d.phase = Some(self.deploying(&profile_name));
                    return false;
                }
                Deployment::Deployed(msg) => {
                    if msg.starts_with(deployed::NO_MATCHING_CLUSTERS) {
                        d.warning_on(
                            "StageMatchesNoCluster",
                            self.no_cluster_warning(stage),
                            Some((StageStep::Deployed, current)),
                        );
                    } else {
                        d.event(
                            format!("Stage {current} provisioned"),
                            Some((StageStep::Deployed, current)),
                        );
                    }
                    status.check(current, true, None);
                    status.describe(current, &msg);
                }
            }
        } else if next.is_none() && status.satisfied(current) {
            d.explanation = format!(
                "complete: the last stage, {current}, has its trigger satisfied for this rollout"
            );
            d.phase = Some(Phase::Complete);
            return true;
        }
        match self.gate(d, status, stage, &profile_name, committed) {
            Gate::Pass => {}
            Gate::Wait { description, wake } => {
                d.phase = Some(match description.as_str() {
                    descriptions::AWAITING_APPROVAL => Phase::AwaitingApproval,
                    descriptions::AWAITING_CHECKS => self.deploying(&profile_name),
                    _ => Phase::Progressing,
                });
                status.describe(current, &description);
                d.wake_at = wake;
                // Upstream's words for the check after the soak name health checks even for a
                // stage that has none: then it is its deployment that is confirmed again.
                let waits = if description == descriptions::AWAITING_CHECKS
                    && !self.has_health_checks(stage)
                {
                    "its deployment to be confirmed again after the soak (it has no health \
                     checks)"
                        .to_string()
                } else {
                    crate::status::in_plain_words(&description)
                };
                d.explanation = match d.note.take() {
                    Some(note) => format!("{current} waits: {waits}: {note}"),
                    None => format!("{current} waits: {waits}; nothing else blocks"),
                };
                return false;
            }
            Gate::Error(why) => {
                d.phase = Some(Phase::Failed);
                d.warning("TriggerError", format!("stage {current}: {why}"));
                d.explanation = format!("{current} cannot advance: {why}");
                return false;
            }
        }
        if let Some(hold) = &self.hold {
            // The gate would pass: nothing is used or started while held (a step committed
            // before the hold stays committed, to be carried out on resume or retry).
            d.consume_approvals.clear();
            d.clear_approvals.clear();
            d.promoting = None;
            d.phase = Some(hold.phase.clone());
            d.explanation = format!(
                "{current} may advance, but {} is {}: {} when it is {}",
                hold.subject,
                hold.what,
                match next {
                    Some(next) => format!("{} starts", next.name),
                    None => "it completes".to_string(),
                },
                hold.verb
            );
            return false;
        }
        status.check(current, true, None);
        status.describe(current, descriptions::PROMOTED);
        let pre = preverification_profile_name(self.name(), current);
        // Applied and removed in one pass upstream; here a profile not yet created is not.
        d.apply.retain(|b| named(b) != pre);
        if self.profile(&pre).is_some() {
            d.delete_profile(pre);
        }
        match next {
            Some(next) => {
                d.apply.push(stage_profile(
                    self.promotion,
                    &self.snapshot.promotion,
                    next,
                    &[],
                ));
                let next_pre = preverification_profile_name(self.name(), &next.name);
                if self.profile(&next_pre).is_some() {
                    d.delete_profile(next_pre);
                }
                status.add_stage(&next.name);
                d.event(
                    format!("Provisioning stage {}", next.name),
                    Some((StageStep::Started, &next.name)),
                );
                d.explanation = format!("{current} is done: promoting to {}", next.name);
                d.phase = Some(Phase::Progressing);
            }
            None => {
                d.explanation =
                    format!("{current} is done: the promotion is complete for this rollout");
                d.phase = Some(Phase::Complete);
            }
        }
        true
    }

    /// A stage of the current rollout fails ([`crate::on_failure`]): with `on-failure:
    /// rollback`, past the threshold, note since when; once the grace is over, ask for the
    /// rollback to the newest completed revision. What it adds to the explanation, if anything.
    fn on_failure(
        &self,
        d: &mut Decision,
        stage: &str,
        profile_name: &str,
        why: &str,
    ) -> Option<String> {
        use crate::on_failure::{Failing, Policy, FAILING_ANNOTATION};
        let policy = match Policy::of(&self.snapshot.promotion) {
            Ok(p) => p,
            Err((key, e)) => return Some(format!("{key} cannot be read ({e}): halted")),
        };
        if !policy.rollback {
            return None;
        }
        let id = d.rollout.clone()?;
        let failed = self.failures(profile_name).1;
        let clusters: std::collections::BTreeSet<&str> =
            failed.iter().map(|f| f.cluster.as_str()).collect();
        let total = deployed::summaries_of(profile_name, &self.snapshot.summaries).len();
        if !policy.threshold.reached(clusters.len(), total) {
            return Some(format!(
                "{} of {total} clusters failing, below the threshold of {} for an automatic \
                 rollback",
                clusters.len(),
                policy.threshold.describe()
            ));
        }
        d.failing = true;
        let noted = Failing::of(&self.snapshot.promotion)
            .filter(|n| n.rollout() == id && n.stage == stage)
            .and_then(|n| DateTime::parse_from_rfc3339(&n.since).ok())
            .map(|t| t.with_timezone(&Utc));
        let grace = Duration::nanoseconds(i64::try_from(policy.grace_ns).unwrap_or(i64::MAX));
        let Some(since) = noted else {
            // Noted now; acted on at a later reconcile, which reads the history first.
            let note = Failing {
                stages_hash: id.stages_hash.clone(),
                profile_spec_hash: id.profile_spec_hash.clone(),
                stage: stage.to_string(),
                since: zoned(self.now, chrono_tz::UTC),
            };
            d.annotations
                .insert(FAILING_ANNOTATION.to_string(), Some(note.to_annotation()));
            let due = (self.now + grace).max(self.now + Duration::seconds(1));
            d.wake_at = Some(d.wake_at.map_or(due, |w| w.min(due)));
            return Some(format!(
                "on-failure rollback: rolled back at {} if it still fails",
                zoned(due, chrono_tz::UTC)
            ));
        };
        let due = since + grace;
        if self.now < due {
            d.wake_at = Some(d.wake_at.map_or(due, |w| w.min(due)));
            return Some(format!(
                "on-failure rollback: failing since {}, rolled back at {} if it still fails",
                zoned(since, chrono_tz::UTC),
                zoned(due, chrono_tz::UTC)
            ));
        }
        match crate::history::rollback_target(&self.snapshot.revisions, &id, None) {
            Ok(target) => {
                let reason = format!(
                    "automatic rollback: stage {stage} failed on {} of {total} clusters for \
                     {}: {why}",
                    clusters.len(),
                    policy.grace
                );
                let request = crate::abort::AbortRequest {
                    stages_hash: id.stages_hash.clone(),
                    profile_spec_hash: id.profile_spec_hash.clone(),
                    rollback_to: Some(target.number),
                    reason: Some(reason.clone()),
                };
                d.annotations.insert(
                    crate::abort::ABORT_ANNOTATION.to_string(),
                    Some(request.to_annotation()),
                );
                d.annotations.insert(FAILING_ANNOTATION.to_string(), None);
                d.failing = false;
                d.warning(
                    crate::on_failure::AUTOMATIC_ROLLBACK,
                    format!("Rolling back to revision {}: {reason}", target.number),
                );
                Some(format!(
                    "on-failure rollback: rolling back to revision {}",
                    target.number
                ))
            }
            Err(e) => {
                d.warning(
                    "AutomaticRollbackImpossible",
                    format!(
                        "stage {stage} has failed for {}, but {e}: halted",
                        policy.grace
                    ),
                );
                Some(format!("on-failure rollback impossible ({e}): halted"))
            }
        }
    }

    /// The stage is provisioned and its delay (if any) is over.
    fn soaked(&self, status: &Status, stage: &Stage) -> bool {
        let Some(applied) = status
            .stage(&stage.name)
            .and_then(|s| s.last_successful_applied_time.as_deref())
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        else {
            return false;
        };
        let delay = stage.trigger.as_ref().and_then(|t| {
            t.auto
                .as_ref()
                .and_then(|a| a.delay.as_deref())
                .or_else(|| t.manual.as_ref().and_then(|m| m.delay.as_deref()))
        });
        let ns = delay
            .map(|d| go_text::duration::parse_go_duration(d).unwrap_or(0))
            .unwrap_or(0);
        applied.with_timezone(&Utc) + Duration::nanoseconds(i64::try_from(ns).unwrap_or(i64::MAX))
            <= self.now
    }

    /// The phase of a stage that is not deployed yet: failing clusters make it `degraded`
    /// (Sveltos retries) or `failed` (for good).
    fn deploying(&self, profile_name: &str) -> Phase {
        match self.failures(profile_name).0 {
            Some(deployed::Failing::ForGood) => Phase::Failed,
            Some(deployed::Failing::Retrying) => Phase::Degraded,
            None => Phase::Progressing,
        }
    }

    /// How the stage's ClusterSummaries fail, if they do ([`deployed::failures`]).
    /// Whether the stage's profile carries health checks: the promotion's own, or the stage's
    /// post-delay ones.
    fn has_health_checks(&self, stage: &Stage) -> bool {
        !post_delay(stage).is_empty()
            || self
                .snapshot
                .promotion
                .pointer("/spec/profileSpec/validateHealths")
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty())
    }

    /// The Warning about a stage whose clusters fail: each failing cluster with its feature's
    /// message (the first few; the count of the rest).
    fn failing_warning(&self, stage: &str, profile_name: &str) -> String {
        const SHOWN: usize = 3;
        let failures: Vec<String> = self
            .failures(profile_name)
            .1
            .iter()
            .map(deployed::Failed::describe)
            .collect();
        let mut text = format!(
            "Stage {stage} is failing: {}",
            failures
                .iter()
                .take(SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        );
        if failures.len() > SHOWN {
            text.push_str(&format!(" (and {} more)", failures.len() - SHOWN));
        }
        text
    }

    /// The Warning about a stage that matches no cluster: it counts as deployed with nothing
    /// deployed. With the fleet known, the selector typo `plan` would name.
    fn no_cluster_warning(&self, stage: &Stage) -> String {
        let selector = stage
            .cluster_selector
            .as_ref()
            .map(crate::selector::to_string)
            .unwrap_or_default();
        let mut text = format!(
            "Stage {} matches no cluster (selector {selector}): it counts as deployed with \
             nothing deployed",
            stage.name
        );
        if let Some(fleet) = self.snapshot.fleet.as_deref() {
            let plan = crate::plan::plan(self.promotion, fleet);
            for hazard in plan.hazards.iter().filter(|h| {
                h.code == crate::plan::hazards::HazardCode::SelectorTypo
                    && h.stages.iter().any(|s| s == &stage.name)
            }) {
                text.push_str(&format!("; {}", hazard.message));
            }
        }
        text
    }

    fn failures(&self, profile_name: &str) -> (Option<deployed::Failing>, Vec<deployed::Failed>) {
        let found = deployed::summaries_of(profile_name, &self.snapshot.summaries);
        deployed::failures(self.profile(profile_name), &found)
    }

    /// Whether the stage is deployed; when it is, and some of its ClusterSummaries report a
    /// deployment whose history is unknown, the decision says so ([`Decision::unconfirmed`]).
    fn deployment(&self, d: &mut Decision, stage: &Stage, checks: bool) -> Deployment {
        let name = stage_profile_name(self.name(), &stage.name);
        // The ClusterSummaries are compared with the profile as this controller last saw it. Seen
        // before the write of this rollout's spec reached the cache (the reconcile that follows
        // a restart's status write may run before the profile's watch event arrives), it is the
        // previous rollout's, which the ClusterSummaries report deployed: not this rollout's.
        if let Some(have) = self.profile(&name) {
            let post = if checks { post_delay(stage) } else { &[] };
            let want = stage_profile(self.promotion, &self.snapshot.promotion, stage, post);
            if !same_spec(have, &want) {
                return Deployment::NotDeployed(format!(
                    "ClusterProfile {name} does not have this rollout's spec yet: it is being \
                     applied."
                ));
            }
        }
        let deployment = deployed::check(
            &name,
            stage,
            self.profile(&name),
            &self.snapshot.summaries,
            self.snapshot.fleet.as_deref(),
            checks,
        );
        if let Deployment::Deployed(_) = &deployment {
            let found: Vec<Value> = deployed::summaries_of(&name, &self.snapshot.summaries)
                .into_iter()
                .map(deployed::retained_form)
                .collect();
            let found: Vec<&Value> = found.iter().collect();
            let unconfirmed = deployed::unconfirmed(&found);
            if let Some(until) = deployed::unconfirmed_until(&found).filter(|u| self.now < *u) {
                // A status of unknown history, this soon after a spec update, may be the
                // previous spec's: wait for Sveltos to answer, or for the grace to pass.
                d.wake_at = Some(d.wake_at.map_or(until, |w| w.min(until)));
                return Deployment::NotDeployed(format!(
                    "ClusterSummaries {} report Provisioned, but this controller has not seen \
                     them since their spec changed: waiting until {} for Sveltos to report the \
                     current spec.",
                    unconfirmed.join(", "),
                    until.to_rfc3339()
                ));
            }
            for summary in unconfirmed {
                if !d.unconfirmed.contains(&summary) {
                    d.unconfirmed.push(summary);
                }
            }
        }
        deployment
    }

    /// `canAutoAdvance` / `canManualAdvance` (§12.1, §12.6), D5 fixed.
    fn gate(
        &self,
        d: &mut Decision,
        status: &mut Status,
        stage: &Stage,
        profile_name: &str,
        committed: Option<&Promoting>,
    ) -> Gate {
        let Some(trigger) = &stage.trigger else {
            return Gate::Pass;
        };
        let (delay, manual) = match (&trigger.auto, &trigger.manual) {
            (Some(auto), _) => (auto.delay.as_deref(), None),
            (None, Some(manual)) => (manual.delay.as_deref(), Some(manual)),
            (None, None) => return Gate::Pass,
        };
        if let Some(delay) = delay {
            let Some(applied) = status
                .stage(&stage.name)
                .and_then(|s| s.last_successful_applied_time.as_deref())
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            else {
                return Gate::Error(format!(
                    "LastSuccessfulAppliedTime not set for stage {}",
                    stage.name
                ));
            };
            let ns = match go_text::duration::parse_go_duration(delay) {
                Ok(ns) => ns,
                Err(e) => return Gate::Error(e),
            };
            let ready = applied.with_timezone(&Utc)
                + Duration::nanoseconds(i64::try_from(ns).unwrap_or(i64::MAX));
            if self.now < ready {
                return Gate::Wait {
                    description: format!(
                        "{}{}",
                        descriptions::SOAKING,
                        zoned(ready, self.options.window_zone)
                    ),
                    wake: Some(ready),
                };
            }
        }
        if let Some(body) = preverification_profile(self.promotion, &self.snapshot.promotion, stage)
        {
            d.apply.push(body);
        }
        let post = post_delay(stage);
        if !post.is_empty() {
            let want = stage_profile(self.promotion, &self.snapshot.promotion, stage, post);
            let included = self.profile(profile_name).is_some_and(|have| {
                let have = have
                    .pointer("/spec/validateHealths")
                    .and_then(Value::as_array);
                let want = want
                    .pointer("/spec/validateHealths")
                    .and_then(Value::as_array);
                want.is_none_or(|w| have.is_some_and(|h| w.iter().all(|c| h.contains(c))))
            });
            if !included {
                if !d.apply.iter().any(|b| named(b) == profile_name) {
                    d.apply.push(want);
                }
                return Gate::Wait {
                    description: descriptions::RUNNING_CHECKS.to_string(),
                    wake: None,
                };
            }
        }
        if let Deployment::NotDeployed(why) = self.deployment(d, stage, !post.is_empty()) {
            // A stage that deployed and now fails (at its gate, after its soak) is as much a
            // failure for the failure policy as one failing to deploy.
            let on_failure = self
                .failures(profile_name)
                .0
                .and_then(|_| self.on_failure(d, &stage.name, profile_name, &why));
            d.note = Some(match on_failure {
                Some(text) => format!("{why} ({text})"),
                None => why.clone(),
            });
            status.check(&stage.name, false, Some(why));
            return Gate::Wait {
                description: descriptions::AWAITING_CHECKS.to_string(),
                wake: None,
            };
        }
        if let Some(manual) = manual {
            if committed.is_some() {
                // The approval was used for this step by the reconcile that committed it.
                return Gate::Pass;
            }
            if !manual.is_approved() {
                return Gate::Wait {
                    description: descriptions::AWAITING_APPROVAL.to_string(),
                    wake: None,
                };
            }
            if manual.resets_automatically() {
                let other = d.rollout.as_ref().and_then(|current| {
                    crate::admission::recorded_for_another_rollout(
                        &self.snapshot.promotion,
                        &stage.name,
                        current,
                    )
                });
                if let Some(other) = other {
                    d.note = Some(format!(
                        "the approval of {} was recorded for another rollout (stagesHash {}, \
                         profileSpecHash {}) and is not used for this one, which needs its own",
                        stage.name, other.stages_hash, other.profile_spec_hash
                    ));
                    return Gate::Wait {
                        description: descriptions::AWAITING_APPROVAL.to_string(),
                        wake: None,
                    };
                }
            }
            d.consume_approvals.push(stage.name.clone());
            if manual.resets_automatically() {
                let stages = &self.promotion.spec.stages;
                d.clear_approvals
                    .extend(stages.iter().position(|s| std::ptr::eq(s, stage)));
                d.promoting = d.rollout.clone().map(|rollout| Promoting {
                    stage: stage.name.clone(),
                    rollout,
                });
            }
            return Gate::Pass;
        }
        if let Some(window) = trigger
            .auto
            .as_ref()
            .and_then(|a| a.promotion_window.as_ref())
        {
            let now = self.now.with_timezone(&self.options.window_zone);
            match window::state(&window.from, &window.to, &now) {
                Err(e) => return Gate::Error(e),
                Ok(WindowState::Open { .. }) => {}
                // Upstream waits for "0001-01-01T00:00:00Z" for ever; a window that never
                // opens is said to be one, like one that never closes (D12).
                Ok(WindowState::Closed { opens: None }) => {
                    return Gate::Error(format!(
                        "the window's from schedule {:?} never fires within five years: the \
                         stage is never promoted",
                        window.from
                    ));
                }
                Ok(WindowState::Closed { opens }) => {
                    let opens = opens.map(|t| t.with_timezone(&Utc));
                    // The window reads open from the second after its opening (upstream:
                    // `prevOpen < now`): waking at the opening itself would find it closed.
                    let wake = opens.map(|t| t + Duration::seconds(1));
                    return Gate::Wait {
                        description: format!(
                            "{}{}).",
                            descriptions::WINDOW_CLOSED,
                            opens
                                .map(|t| zoned(t, self.options.window_zone))
                                .unwrap_or_else(|| "0001-01-01T00:00:00Z".into())
                        ),
                        wake,
                    };
                }
            }
        }
        Gate::Pass
    }

    /// §16, with D8 (preserve really preserves) and D14 (only this UID's profiles) fixed.
    fn delete(&self, d: &mut Decision) {
        let has_finalizer = self
            .promotion
            .metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|x| x == FINALIZER));
        if !has_finalizer {
            d.explanation = "being deleted; our finalizer is gone: nothing to do".into();
            return;
        }
        let owned = self.owned_profiles();
        let preserve = self.promotion.spec.preserve_cluster_profiles_on_delete == Some(true);
        if preserve {
            // Stage profiles carry no owner reference while preserve is set (the garbage
            // collector cannot take them, whoever removes the finalizer); one applied before the
            // flag was set is released here (D8). Pre-verification profiles verify a rollout
            // that ends with the promotion: they go.
            let mut waiting = 0;
            for p in &owned {
                let verification = p
                    .pointer("/metadata/labels")
                    .and_then(|l| l.get(VERIFICATION_LABEL))
                    .is_some();
                if verification {
                    waiting += 1;
                    if p.pointer("/metadata/deletionTimestamp").is_none() {
                        d.delete_profile(named(p).to_string());
                    }
                } else if owner_referenced(p) {
                    waiting += 1;
                    d.apply.push(orphaned(p, self.uid()));
                }
            }
            if waiting == 0 {
                d.finalizer = Some(FinalizerChange::Remove);
                d.explanation = "being deleted with preserveClusterProfilesOnDelete: its stage \
                                 profiles name it as owner no longer, so the finalizer goes"
                    .into();
            } else {
                d.explanation = format!(
                    "being deleted with preserveClusterProfilesOnDelete: {waiting} profile(s) are \
                     released from its ownership (stage profiles) or deleted (pre-verification) first"
                );
            }
            return;
        }
        let owned: Vec<&Value> = owned.into_iter().filter(|p| owner_referenced(p)).collect();
        if owned.is_empty() {
            d.finalizer = Some(FinalizerChange::Remove);
            d.explanation =
                "being deleted: its ClusterProfiles are gone, so the finalizer goes".into();
            return;
        }
        for p in &owned {
            if p.pointer("/metadata/deletionTimestamp").is_none() {
                d.delete_profile(named(p).to_string());
            }
        }
        d.explanation = format!(
            "being deleted: waiting for {} ClusterProfile(s) to be removed",
            owned.len()
        );
    }
}

/// The apply body that releases a profile: name, labels and annotations (with the promotion's
/// UID as [`PRESERVED_FOR_ANNOTATION`]), no owner references (applied with the same field manager,
/// this removes the owner reference it set).
fn orphaned(profile: &Value, uid: Option<&str>) -> Value {
    let mut meta = serde_json::Map::new();
    if let Some(m) = profile.get("metadata") {
        for key in ["name", "labels", "annotations"] {
            if let Some(v) = m.get(key) {
                meta.insert(key.into(), v.clone());
            }
        }
    }
    if let Some(uid) = uid {
        let annotations = meta
            .entry("annotations")
            .or_insert_with(|| serde_json::json!({}));
        if let Some(a) = annotations.as_object_mut() {
            a.insert(PRESERVED_FOR_ANNOTATION.into(), uid.into());
        }
    }
    serde_json::json!({
        "apiVersion": PROFILE_API_VERSION,
        "kind": PROFILE_KIND,
        "metadata": meta,
        "spec": profile.get("spec").cloned().unwrap_or_else(|| serde_json::json!({})),
    })
}

/// Whether a profile has an owner reference (the garbage collector deletes it with its owner).
fn owner_referenced(profile: &Value) -> bool {
    profile
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| !refs.is_empty())
}

fn named(body: &Value) -> &str {
    body.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn post_delay(stage: &Stage) -> &[ValidateHealth] {
    let Some(t) = &stage.trigger else {
        return &[];
    };
    t.auto
        .as_ref()
        .and_then(|a| a.post_delay_health_checks.as_deref())
        .or_else(|| {
            t.manual
                .as_ref()
                .and_then(|m| m.post_delay_health_checks.as_deref())
        })
        .unwrap_or(&[])
}

/// Whether a stored profile already is what `want` applies: its labels, stage annotation, owner
/// and spec ([`same_spec`]).
fn same_profile(have: &Value, want: &Value) -> bool {
    let labels_ok = want
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .is_some_and(|w| {
            w.iter()
                .all(|(k, v)| have.pointer("/metadata/labels").and_then(|l| l.get(k)) == Some(v))
        });
    // The owner reference and the annotations (stage, preserved-for) as the body writes them:
    // turning preserveClusterProfilesOnDelete on or off changes the first.
    let owners = |v: &Value| {
        v.pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .map(|refs| {
                refs.iter()
                    .map(|r| {
                        (
                            r.get("kind").cloned(),
                            r.get("name").cloned(),
                            r.get("uid").cloned(),
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    let annotations_ok = want
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_none_or(|w| {
            w.iter().all(|(k, v)| {
                have.pointer("/metadata/annotations").and_then(|a| a.get(k)) == Some(v)
            })
        });
    let preserved_ok = preserved_for(have) == preserved_for(want);
    labels_ok
        && annotations_ok
        && preserved_ok
        && owners(have) == owners(want)
        && same_spec(have, want)
}

/// Whether a stored profile's spec is `want`'s, compared as Sveltos hashes a profile spec, with
/// the CRD's top-level defaults on both sides, and the selector as the stage hash writes it.
pub(crate) fn same_spec(have: &Value, want: &Value) -> bool {
    let spec_json = |v: &Value| {
        let mut spec = v.get("spec").cloned().unwrap_or(Value::Null);
        let selector = spec
            .as_object_mut()
            .and_then(|m| m.remove("clusterSelector"))
            .unwrap_or(Value::Null);
        let spec = crate::freshness::with_defaults(spec);
        let object = serde_json::json!({"spec": {"profileSpec": spec,
            "stages": [{"name": "s", "clusterSelector": selector}]}});
        let tree = tree_of(&object);
        (
            crate::rollout::profile_spec_json(&tree)
                .map(|(j, _)| j)
                .ok(),
            crate::rollout::stages_json(&tree).map(|(j, _)| j).ok(),
            // validateHealths order matters for the profile (appended checks), not for the hash.
            v.pointer("/spec/validateHealths").cloned(),
        )
    };
    spec_json(have) == spec_json(want)
}

impl Status {
    fn satisfied(&self, stage: &str) -> bool {
        crate::status::trigger_satisfied(
            self.stage(stage)
                .and_then(|s| s.current_status_description.as_deref()),
        )
    }
}
