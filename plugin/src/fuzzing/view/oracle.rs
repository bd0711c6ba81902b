//! An oracle for `describe`'s stage states, approvals and phase that does not share code with
//! what it checks: a deliberately naive re-derivation from the raw JSON of the input (the
//! promotion object, and the ClusterProfiles and ClusterSummaries as read), written from the two
//! documents that say what a status means, not from `view/` or `promotion_shared::pipeline`. It
//! uses no type, constant or function of either; every string it looks for is spelled out here as
//! the documents quote it. Where the documents leave a case open, the oracle answers
//! "undetermined" (`None`) and asserts nothing.
//!
//! The documents: `STATES.md` is `examples/STATES.md` (the states the examples must get,
//! and the approval bookkeeping); `§n` is a section of `docs/reference/sveltos-clusterpromotion.md`.
//!
//! What each check comes from:
//! - **Reached** (every stage): a stage is reached exactly when an entry of `status.stages` has
//!   its name (§1.6: "Only stages that have been reached, appended in order"; STATES.md: "not
//!   started — not in `status.stages`"). Two spec stages of one name are refused by the API server
//!   (§1.2, list-map key `name`), so the documents do not say which of them an entry is; for those
//!   the oracle applies the rule `view/` states in its module docs (only the first can be reached,
//!   since Sveltos finds a status by name) and leaves every other answer about such a promotion
//!   undetermined. `list`'s count of reached stages is the count of these.
//! - **Promoted**: a reached stage whose next stage is reached (STATES.md: "promoted — a later
//!   stage is in `status.stages`"). A reached stage with a later stage reached but not the next is
//!   a status Sveltos never writes (§1.6 appends in order): undetermined.
//! - The rules below are for the **frontier**: reached, and no later stage reached.
//! - **Blocked**: its `failureMessage` is exactly `license is required to manage ClusterPromotion`
//!   (§3.1: Sveltos writes it and "the reconcile stops"), whatever else the status or the
//!   clusters say; and then the phase is blocked, stale or not, because the licence check comes
//!   before the restart check (§3.3 step 1 before step 2). A longer message starting so is not
//!   the documented text: undetermined.
//! - **Failed**: known only from the stage's ClusterSummaries, a `featureSummaries[].status` of
//!   `Failed` or `FailedNonRetriable` (STATES.md, intro and kyverno-failed-dev.yaml). So a stage
//!   is never failed offline (no ClusterSummaries read: "provisioning (from the promotion
//!   alone)"), nor when no ClusterSummary labelled `projectsveltos.io/cluster-profile-name=
//!   <promotion>-<stage>` (§4, the lookup chain; §3.2, the profile name) has such a feature. It
//!   is failed when the stage is not provisioned (kyverno-failed-dev.yaml's case) and the failing
//!   summaries are unmistakably its own: the ClusterProfile `<promotion>-<stage>` read once,
//!   with the promotion-name label, the stage-name annotation and an owner reference naming this
//!   ClusterPromotion and its uid (§3.2), every failing summary of that profile carrying a `spec`
//!   (§4) and no other promotion's name label (§3.2: summaries copy the profile's labels). It
//!   fails for good (phase `failed`, else `degraded`) exactly when a feature is
//!   `FailedNonRetriable` (§2.1's enum; §4: "A template error or maxConsecutiveFailures gives
//!   FailedNonRetriable"). A provisioned stage with a failing summary is not a case the documents
//!   settle: undetermined. The rules after this one apply only when the stage cannot be failed.
//! - **Taken**: a reached stage whose ClusterProfile `<promotion>-<stage>` was read and is not
//!   this promotion's (its promotion-name label, stage-name annotation or ClusterPromotion owner
//!   reference names another, §3.2) deploys what that profile holds: it is failed for good,
//!   whatever the rules here say, unless it is blocked; and then the phase is failed.
//! - **Provisioning**: no `lastSuccessfulAppliedTime` (§1.6: "once it is set, the stage counts as
//!   provisioned"; STATES.md, kyverno-failed-dev.yaml). An empty string is not a time:
//!   undetermined.
//! - A provisioned frontier is read from `currentStatusDescription`, `"<text> (<UTC time>)"`
//!   (§3.5; a description without the time is read whole), and the trigger (§1.2; `trigger: {}`
//!   and a trigger with both `auto` and `manual` are refused by the CRD, §1.2, so undetermined):
//!   - `Delayed: Waiting for Time Window: <T>` is **soaking** until `<T>` (§3.5: "the soak delay";
//!     STATES.md, kyverno-rollout-auto.yaml: "soaking until …"), `Running Post-Promotion Health
//!     Checks` or `Awaiting Health Checks to Pass` is **running health checks**, `Window Closed:
//!     Waiting for Next Schedule (<T>).` is **waiting for the window** until `<T>` (§3.5), when
//!     the stage has a trigger and no `approved: true` (§3.3 steps 5–6: the delay, the checks and
//!     the window come before the approval; with `approved: true` STATES.md calls the approval
//!     pending while §3.3 would still soak, so that is undetermined; without a trigger Sveltos
//!     never soaks, §3.3 step 4);
//!   - `Paused: Awaiting Manual Approval` with a manual trigger and `approved` not `true` is
//!     **awaiting approval** (§3.3 step 6, §3.5; on the last stage too, §3.8);
//!   - `Successfully provisioned` on the last stage is **complete** (§3.5: "trigger satisfied,
//!     moving on"; §3.3 step 4: no next stage, "ClusterPromotion is complete");
//!   - a manual trigger with `approved: true` on a stage that is not the last is **approved and
//!     pending** (STATES.md: "approved: true on a stage that is provisioned and whose next stage
//!     is not reached yet is an approval pending");
//!   - no trigger on the last stage is **complete** (§3.3 step 4: "No trigger means advance", and
//!     with no next stage the promotion is complete), unless the description says otherwise;
//!   - `All matching clusters are successfully deployed.` or `No matching clusters found for
//!     ClusterProfile <p>. Deployment considered complete.` is **provisioned**, waiting for its
//!     trigger to be evaluated (§3.5: "stage just became provisioned"), when none of the rules
//!     above applies;
//!   - anything else: undetermined.
//! - **Approval** of each stage's manual gate (§1.2, STATES.md): none without `trigger.manual`;
//!   `approved` absent or not `true` is **not approved** (§1.2 three-valued, §3.3 step 6);
//!   `approved: true` with the next stage reached is **consumed**, with the next stage not reached
//!   and the stage provisioned is **pending** (STATES.md). On the last stage, or a stage not
//!   provisioned, undetermined.
//! - **The gate offered**: when the status is current (the oracle does not judge staleness; it
//!   takes the view's word for it) and the frontier awaits approval, `describe` names that stage
//!   and approving it unblocks `<stage> → <next>` (STATES.md, kyverno-manual-gate.yaml:
//!   "approving it unblocks staging → production"; on the last stage only the `<stage> → ` part).
//! - **Phase**: not started exactly when `status.stages` is empty or absent, with a note
//!   (STATES.md, payment-four-stages.yaml); blocked with a blocked frontier (above). Otherwise,
//!   when the status is current and is one Sveltos writes (§1.6: the spec's first stages in order,
//!   names unique), the phase follows the frontier: complete, failed, degraded and awaiting
//!   approval from those states, progressing from any other state the oracle determines.
//! - **Profile name**: the ClusterProfile `describe` shows for a stage is `<promotion>-<stage>`
//!   (§3.2); `status.currentStageName` is shown as written (§1.6).

use serde_json::Value;

use promotion_shared::pipeline::{Approval, Phase, StageState};

use crate::view::{Description, SnapshotRef};

const LICENCE: &str = "license is required to manage ClusterPromotion";
const SOAKING: &str = "Delayed: Waiting for Time Window: ";
const RUNNING_CHECKS: &str = "Running Post-Promotion Health Checks";
const AWAITING_CHECKS: &str = "Awaiting Health Checks to Pass";
const WINDOW: &str = "Window Closed: Waiting for Next Schedule (";
const PAUSED: &str = "Paused: Awaiting Manual Approval";
const PROMOTED: &str = "Successfully provisioned";
const ALL_DEPLOYED: &str = "All matching clusters are successfully deployed.";
const NO_MATCHING: &str = "No matching clusters found for ClusterProfile ";
const NO_MATCHING_END: &str = " Deployment considered complete.";
const PROFILE_LABEL: &str = "projectsveltos.io/cluster-profile-name";
const PROMOTION_LABEL: &str = "config.projectsveltos.io/promotionname";
const STAGE_ANNOTATION: &str = "config.projectsveltos.io/stagename";

/// A stage's state, without the details the documents do not fix (messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    NotStarted,
    Provisioning,
    Provisioned,
    Soaking,
    HealthChecks,
    Window,
    AwaitingApproval,
    ApprovedPending,
    Promoted,
    Complete,
    Failed { for_good: bool },
    Blocked,
}

impl State {
    /// The class of the view's state (a plain mapping of names; the time a soak or a window
    /// lasts until is compared apart, [`until`]).
    fn of(s: &StageState) -> State {
        match s {
            StageState::NotStarted => State::NotStarted,
            StageState::Provisioning => State::Provisioning,
            StageState::Provisioned => State::Provisioned,
            StageState::Soaking { .. } => State::Soaking,
            StageState::RunningHealthChecks => State::HealthChecks,
            StageState::WaitingForWindow { .. } | StageState::CompletesWhenWindowOpens { .. } => {
                State::Window
            }
            StageState::AwaitingApproval => State::AwaitingApproval,
            StageState::ApprovedPending => State::ApprovedPending,
            StageState::Promoted => State::Promoted,
            StageState::Complete => State::Complete,
            StageState::Failed { retriable, .. } => State::Failed {
                for_good: !retriable,
            },
            StageState::Blocked { .. } => State::Blocked,
        }
    }
}

/// What the oracle expects of one stage of `spec.stages`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageExpectation {
    pub name: String,
    pub reached: bool,
    /// Its ClusterProfile was read and is another's ([`taken`]; `None`: undetermined).
    pub taken: Option<bool>,
    /// `None`: undetermined.
    pub state: Option<State>,
    /// Until when the stage soaks or waits for its window (`Some(None)`: the description gives
    /// no time; `None`: undetermined).
    pub until: Option<Option<String>>,
    /// The view must not call the stage failed (no failing ClusterSummary could be its own).
    pub cannot_fail: bool,
    /// `None`: undetermined.
    pub approval: Option<Approval>,
}

/// What the oracle expects of the whole description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expectation {
    pub has_status: bool,
    pub stages: Vec<StageExpectation>,
    /// The phase when the status is current (`None`: undetermined).
    pub phase: Option<Phase>,
    /// The phase whatever the view says of staleness (not started, blocked).
    pub phase_even_if_stale: Option<Phase>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Trigger {
    None,
    Auto,
    Manual {
        approved: bool,
    },
    /// `trigger: {}` or both `auto` and `manual`: refused by the CRD (§1.2).
    Refused,
}

/// What a provisioned stage's description says (§3.5).
#[derive(PartialEq, Eq)]
enum Said {
    Soaking(String),
    HealthChecks,
    Window(Option<String>),
    Paused,
    Promoted,
    Deployed,
    /// No description, or another text.
    Other,
}

/// Whether the description may say the stage is held before its trigger is satisfied (soaking,
/// health checks, window), in whatever form: the rules that need it not to only apply when it
/// starts with none of those texts, however it ends.
fn may_hold(description: Option<&str>) -> bool {
    description.is_some_and(|d| {
        [
            SOAKING.trim_end(),
            RUNNING_CHECKS,
            AWAITING_CHECKS,
            WINDOW.trim_end_matches(" ("),
        ]
        .iter()
        .any(|p| d.starts_with(p))
    })
}

fn may_pause(description: Option<&str>) -> bool {
    description.is_some_and(|d| d.starts_with(PAUSED))
}

/// Both hashes of `status`, when both are non-empty strings.
fn status_rollout(object: &Value) -> Option<promotion_shared::rollout::RolloutId> {
    let hash = |key: &str| {
        present(object.pointer(&format!("/status/{key}")))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    Some(promotion_shared::rollout::RolloutId {
        stages_hash: hash("stagesHash")?,
        profile_spec_hash: hash("profileSpecHash")?,
    })
}

/// The webhook's approval records are present (they may name the approval's rollout).
fn has_approval_record(object: &Value) -> bool {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(promotion_shared::admission::APPROVALS_ANNOTATION))
        .is_some()
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// `"<text> (YYYY-MM-DDTHH:MM:SSZ)"` → `"<text>"`; any other description is read whole.
fn text_of(description: &str) -> &str {
    let Some(open) = description.len().checked_sub(23) else {
        return description;
    };
    let Some(suffix) = description.get(open..) else {
        return description;
    };
    // ` (2026-02-16T07:38:02Z)`: separators at these offsets, digits everywhere else inside.
    let b = suffix.as_bytes();
    let separators = [
        (6, b'-'),
        (9, b'-'),
        (12, b'T'),
        (15, b':'),
        (18, b':'),
        (21, b'Z'),
    ];
    let time_like = b.starts_with(b" (")
        && b[22] == b')'
        && (2..22).all(|i| match separators.iter().find(|(at, _)| *at == i) {
            Some((_, c)) => b[i] == *c,
            None => b[i].is_ascii_digit(),
        });
    if time_like {
        &description[..open]
    } else {
        description
    }
}

fn said(description: Option<&str>) -> Said {
    let Some(text) = description.map(text_of) else {
        return Said::Other;
    };
    if let Some(rest) = text.strip_prefix(SOAKING) {
        return Said::Soaking(rest.to_string());
    }
    if text == RUNNING_CHECKS || text == AWAITING_CHECKS {
        return Said::HealthChecks;
    }
    if let Some(rest) = text.strip_prefix(WINDOW) {
        return Said::Window(rest.strip_suffix(").").map(str::to_string));
    }
    if text == PAUSED {
        return Said::Paused;
    }
    if text == PROMOTED {
        return Said::Promoted;
    }
    if text == ALL_DEPLOYED || (text.starts_with(NO_MATCHING) && text.ends_with(NO_MATCHING_END)) {
        return Said::Deployed;
    }
    Said::Other
}

/// A time the documents would write: one word (anything else the oracle does not read).
fn a_time(s: &str) -> Option<Option<String>> {
    if s.is_empty() {
        Some(None)
    } else if s.chars().any(char::is_whitespace) || s.contains('(') || s.contains(')') {
        None
    } else {
        Some(Some(s.to_string()))
    }
}

fn trigger(stage: &Value) -> Trigger {
    let Some(t) = present(stage.get("trigger")) else {
        return Trigger::None;
    };
    let auto = present(t.get("auto"));
    let manual = present(t.get("manual"));
    match (auto, manual) {
        (Some(_), None) => Trigger::Auto,
        (None, Some(m)) => Trigger::Manual {
            approved: m.get("approved") == Some(&Value::Bool(true)),
        },
        _ => Trigger::Refused,
    }
}

/// Whether a stage's ClusterSummaries could make it failed, and whether they certainly do.
enum Failure {
    Impossible,
    Certain { for_good: bool },
    Unsettled,
}

fn failed_features(summary: &Value) -> impl Iterator<Item = &str> {
    summary
        .pointer("/status/featureSummaries")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.get("status").and_then(Value::as_str))
        .filter(|s| *s == "Failed" || *s == "FailedNonRetriable")
}

fn failure(
    object: &Value,
    stage: &str,
    profiles: Option<&[Value]>,
    summaries: Option<&[Value]>,
) -> Failure {
    let promotion = str_at(object, "/metadata/name").unwrap_or_default();
    let profile_name = format!("{promotion}-{stage}");
    let failing: Vec<&Value> = summaries
        .unwrap_or_default()
        .iter()
        .filter(|s| {
            str_at(s, &format!("/metadata/labels/{}", esc(PROFILE_LABEL))) == Some(&profile_name)
        })
        .filter(|s| failed_features(s).next().is_some())
        .collect();
    if failing.is_empty() {
        return Failure::Impossible;
    }
    let uid = str_at(object, "/metadata/uid");
    let named: Vec<&Value> = profiles
        .unwrap_or_default()
        .iter()
        .filter(|p| str_at(p, "/metadata/name") == Some(&profile_name))
        .collect();
    let ours = |p: &Value| {
        str_at(p, &format!("/metadata/labels/{}", esc(PROMOTION_LABEL))) == Some(promotion)
            && str_at(
                p,
                &format!("/metadata/annotations/{}", esc(STAGE_ANNOTATION)),
            ) == Some(stage)
            && p.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|r| {
                    str_at(r, "/kind") == Some("ClusterPromotion")
                        && str_at(r, "/name") == Some(promotion)
                        && uid.is_some()
                        && str_at(r, "/uid") == uid
                })
    };
    let summary_ours = |s: &Value| {
        s.get("spec").is_some_and(Value::is_object)
            && str_at(s, &format!("/metadata/labels/{}", esc(PROMOTION_LABEL)))
                .is_none_or(|p| p == promotion)
    };
    if named.len() == 1 && ours(named[0]) && failing.iter().all(|s| summary_ours(s)) {
        Failure::Certain {
            for_good: failing
                .iter()
                .any(|s| failed_features(s).any(|f| f == "FailedNonRetriable")),
        }
    } else {
        Failure::Unsettled
    }
}

/// Whether the ClusterProfile `<promotion>-<stage>` was read and is not this promotion's: its
/// promotion-name label names another (or none), its stage-name annotation another stage, or an
/// owner reference of kind ClusterPromotion names another promotion or this name with another
/// uid (§3.2: Sveltos labels, annotates and owns the profiles it generates).
/// `None` when the documents do not settle it (two profiles of that name were read, which no
/// API server lists).
fn taken(object: &Value, stage: &str, profiles: Option<&[Value]>) -> Option<bool> {
    let promotion = str_at(object, "/metadata/name").unwrap_or_default();
    let uid = str_at(object, "/metadata/uid");
    let wanted = format!("{promotion}-{stage}");
    let named: Vec<&Value> = profiles
        .unwrap_or_default()
        .iter()
        .filter(|p| str_at(p, "/metadata/name") == Some(wanted.as_str()))
        .collect();
    let profile = match named.as_slice() {
        [] => return Some(false),
        [one] => *one,
        _ => return None,
    };
    let label = str_at(
        profile,
        &format!(
            "/metadata/labels/{}",
            esc("config.projectsveltos.io/promotionname")
        ),
    );
    let annotation = str_at(
        profile,
        &format!(
            "/metadata/annotations/{}",
            esc("config.projectsveltos.io/stagename")
        ),
    );
    let owners = profile
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array);
    let owned = owners.is_none_or(|refs| {
        refs.iter().any(|r| {
            str_at(r, "/kind") == Some("ClusterPromotion")
                && str_at(r, "/name") == Some(promotion)
                && match (uid, str_at(r, "/uid")) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                }
        })
    });
    Some(label != Some(promotion) || annotation.is_some_and(|a| a != stage) || !owned)
}

/// A JSON pointer token for a key with `/` in it (RFC 6901).
fn esc(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The oracle's expectation for the promotion `object`, with the ClusterProfiles and
/// ClusterSummaries read (`None`: not read).
pub fn expect(
    object: &Value,
    profiles: Option<&[Value]>,
    summaries: Option<&[Value]>,
) -> Expectation {
    let spec: Vec<&Value> = object
        .pointer("/spec/stages")
        .and_then(Value::as_array)
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    let names: Vec<String> = spec
        .iter()
        .map(|s| str_at(s, "/name").unwrap_or_default().to_string())
        .collect();
    let entries: Vec<&Value> = object
        .pointer("/status/stages")
        .and_then(Value::as_array)
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    let entry_names: Vec<&str> = entries
        .iter()
        .map(|e| str_at(e, "/name").unwrap_or_default())
        .collect();
    let has_status = !entries.is_empty();
    let unique = names
        .iter()
        .enumerate()
        .all(|(i, n)| !names[..i].contains(n));
    let reached: Vec<bool> = names
        .iter()
        .enumerate()
        .map(|(i, n)| !names[..i].contains(n) && entry_names.contains(&n.as_str()))
        .collect();

    let stages: Vec<StageExpectation> = (0..names.len())
        .map(|i| {
            let name = &names[i];
            let last = i + 1 == names.len();
            let next_reached = reached.get(i + 1).copied().unwrap_or(false);
            let later_reached = reached[i + 1..].iter().any(|r| *r);
            let mine: Vec<&Value> = entries
                .iter()
                .zip(&entry_names)
                .filter(|(_, n)| **n == name.as_str())
                .map(|(e, _)| *e)
                .collect();
            // One entry of this name, so the documents say which entry is the stage's.
            let entry = (mine.len() == 1 && reached[i]).then(|| mine[0]);
            let applied = entry.map(|e| present(e.get("lastSuccessfulAppliedTime")));
            let provisioned = match applied {
                Some(Some(Value::String(t))) if !t.is_empty() => Some(true),
                Some(None) => Some(false),
                _ => None,
            };
            let trig = trigger(spec[i]);
            let fail = if reached[i] {
                failure(object, name, profiles, summaries)
            } else {
                Failure::Impossible
            };
            // The stage's ClusterProfile is another's (a name collision or a leftover of a
            // deleted namesake): it deploys what that profile holds, so the stage fails for good
            // whatever its status says, unless Sveltos refuses the promotion (blocked).
            // With repeated stage names the documents do not say which stage a profile is for.
            let taken = match (reached[i], unique) {
                (false, _) => Some(false),
                (true, true) => taken(object, name, profiles),
                (true, false) => None,
            };
            let cannot_fail = matches!(fail, Failure::Impossible) && taken == Some(false);

            let (state, until) = if !unique {
                (None, None)
            } else if !reached[i] {
                (Some(State::NotStarted), None)
            } else if next_reached {
                (Some(State::Promoted), None)
            } else if later_reached {
                (None, None)
            } else {
                entry.map_or((None, None), |e| {
                    frontier(e, trig, last, provisioned, &fail)
                })
            };

            let approval = if !unique {
                None
            } else {
                match trig {
                    Trigger::None | Trigger::Auto => Some(Approval::NotRequired),
                    Trigger::Refused => None,
                    Trigger::Manual { approved: false } => Some(Approval::NotApproved),
                    Trigger::Manual { approved: true } if last => None,
                    Trigger::Manual { approved: true } if next_reached => {
                        // Used only by the rollout the status describes: a status without
                        // hashes is believed; with hashes, it must be the spec's rollout when no
                        // record says which rollout the approval was given in (a record's
                        // rollout is left undetermined here).
                        match status_rollout(object) {
                            None => Some(Approval::Consumed),
                            Some(_) if has_approval_record(object) => None,
                            Some(status) => {
                                let spec = promotion_shared::rollout::identity_of(object)
                                    .ok()
                                    .map(|i| i.id);
                                (spec.as_ref() == Some(&status)).then_some(Approval::Consumed)
                            }
                        }
                    }
                    Trigger::Manual { approved: true } => {
                        (provisioned == Some(true)).then_some(Approval::Pending)
                    }
                }
            };
            // A licence text the Blocked rule leaves undetermined may still block the stage.
            let licence = mine.iter().any(|e| {
                present(e.get("failureMessage"))
                    .and_then(Value::as_str)
                    .is_some_and(|m| m.starts_with(LICENCE))
            });
            let (state, until) = match (state, taken) {
                (Some(State::Blocked), _) => (Some(State::Blocked), until),
                (_, Some(true)) if licence => (None, None),
                (_, Some(true)) => (Some(State::Failed { for_good: true }), None),
                (_, None) => (None, None),
                (state, Some(false)) => (state, until),
            };
            StageExpectation {
                name: name.clone(),
                reached: reached[i],
                taken,
                state,
                until,
                cannot_fail,
                approval,
            }
        })
        .collect();

    let blocked = stages.iter().any(|s| s.state == Some(State::Blocked));
    let phase_even_if_stale = if !has_status {
        Some(Phase::NotStarted)
    } else if blocked {
        Some(Phase::Blocked)
    } else {
        None
    };
    // A status Sveltos writes: the spec's first stages, in order, names unique (§1.6).
    let as_written = unique
        && entry_names.len() <= names.len()
        && entry_names
            .iter()
            .zip(&names)
            .all(|(e, n)| *e == n.as_str());
    let any_taken = stages
        .iter()
        .any(|s| s.taken == Some(true) && s.state != Some(State::Blocked));
    let taken_unsettled = stages.iter().any(|s| s.taken.is_none());
    let phase = phase_even_if_stale.clone().or_else(|| {
        if any_taken {
            // A licence refusal anywhere blocks the promotion first (see Blocked).
            let refused = entries.iter().any(|e| {
                present(e.get("failureMessage"))
                    .and_then(Value::as_str)
                    .is_some_and(|m| m.starts_with(LICENCE))
            });
            return (!refused).then_some(Phase::Failed);
        }
        if taken_unsettled {
            return None;
        }
        if !as_written {
            return None;
        }
        let frontier = stages.get(entry_names.len().checked_sub(1)?)?;
        Some(match frontier.state.as_ref()? {
            State::Complete => Phase::Complete,
            State::Failed { for_good: true } => Phase::Failed,
            State::Failed { for_good: false } => Phase::Degraded,
            State::AwaitingApproval => Phase::AwaitingApproval,
            State::NotStarted | State::Promoted | State::Blocked => return None,
            _ => Phase::Progressing,
        })
    });
    Expectation {
        has_status,
        stages,
        phase,
        phase_even_if_stale,
    }
}

/// The state of a reached stage with no later stage reached, from its status entry, and until
/// when it soaks or waits for its window (see [`StageExpectation::until`]).
fn frontier(
    entry: &Value,
    trig: Trigger,
    last: bool,
    provisioned: Option<bool>,
    fail: &Failure,
) -> (Option<State>, Option<Option<String>>) {
    match frontier_state(entry, trig, last, provisioned, fail) {
        Some((state, until)) => (Some(state), until),
        None => (None, None),
    }
}

fn frontier_state(
    entry: &Value,
    trig: Trigger,
    last: bool,
    provisioned: Option<bool>,
    fail: &Failure,
) -> Option<(State, Option<Option<String>>)> {
    let state = |s: State| Some((s, None));
    let failure_message = present(entry.get("failureMessage")).and_then(Value::as_str);
    if failure_message == Some(LICENCE) {
        return state(State::Blocked);
    }
    if failure_message.is_some_and(|m| m.starts_with(LICENCE)) {
        return None;
    }
    match (fail, provisioned?) {
        (Failure::Impossible, false) => return state(State::Provisioning),
        (Failure::Certain { for_good }, false) => {
            return state(State::Failed {
                for_good: *for_good,
            })
        }
        (Failure::Impossible, true) => {}
        _ => return None,
    }
    let description = present(entry.get("currentStatusDescription")).and_then(Value::as_str);
    let said = said(description);
    let approved = trig == Trigger::Manual { approved: true };
    if trig == Trigger::Refused {
        return None;
    }
    let has_trigger = trig != Trigger::None;
    match &said {
        Said::Soaking(rest) if has_trigger && !approved => {
            return Some((State::Soaking, a_time(rest.trim())));
        }
        Said::HealthChecks if has_trigger && !approved => return state(State::HealthChecks),
        Said::Window(rest) if has_trigger && !approved => {
            return Some((
                State::Window,
                rest.as_deref().and_then(|t| a_time(t.trim())),
            ));
        }
        Said::Paused if trig == (Trigger::Manual { approved: false }) => {
            return state(State::AwaitingApproval)
        }
        Said::Promoted if last => return state(State::Complete),
        _ => {}
    }
    if approved && !last && !may_hold(description) {
        return state(State::ApprovedPending);
    }
    if trig == Trigger::None && last && !may_hold(description) && !may_pause(description) {
        return state(State::Complete);
    }
    if said == Said::Deployed && !approved && !(trig == Trigger::None && last) {
        return state(State::Provisioned);
    }
    None
}

/// Until when the view says a stage soaks or waits for its window.
fn until(s: &StageState) -> Option<&Option<String>> {
    match s {
        StageState::Soaking { until }
        | StageState::WaitingForWindow { until }
        | StageState::CompletesWhenWindowOpens { until } => Some(until),
        _ => None,
    }
}

/// Assert that the description `d`, built from `snap`, agrees with the oracle wherever the
/// oracle decides.
pub fn check(snap: SnapshotRef<'_>, d: &Description) {
    let object = snap.object;
    // ClusterSummaries are attributed to stages through the profiles: without the profiles,
    // the summaries say nothing.
    let summaries = snap.summaries.ok().filter(|_| snap.profiles.is_ok());
    let e = expect(object, snap.profiles.ok(), summaries);
    // Reads tried and refused (not `describe -f`): a stage still provisioning may be failing
    // unseen, so the view's phase is unknown where the oracle's is progressing.
    let known = snap.profiles.is_ok() && snap.summaries.is_ok();
    let offline = matches!((snap.profiles, snap.summaries), (Err(""), Err("")));
    let refused = !known && !offline;
    let provisioning = e
        .stages
        .iter()
        .any(|s| s.state == Some(State::Provisioning));
    assert_eq!(
        d.stages.len(),
        e.stages.len(),
        "stages in the spec and the view"
    );
    for (i, (detail, want)) in d.stages.iter().zip(&e.stages).enumerate() {
        let v = &detail.view;
        let got = State::of(&v.state);
        assert_eq!(
            got != State::NotStarted,
            want.reached,
            "oracle: stage {i} ({:?}) is {:?}, and it is {}reached in status.stages",
            want.name,
            v.state,
            if want.reached { "" } else { "not " }
        );
        if let Some(state) = &want.state {
            assert_eq!(
                &got,
                state,
                "oracle: stage {i} ({:?}) is {:?}, the documents say {state:?}; spec {}, status {}",
                want.name,
                v.state,
                object
                    .pointer(&format!("/spec/stages/{i}"))
                    .unwrap_or(&Value::Null),
                object.pointer("/status").unwrap_or(&Value::Null),
            );
        }
        if let Some(time) = &want.until {
            assert_eq!(
                until(&v.state),
                Some(time),
                "oracle: until when stage {i} ({:?}) waits",
                want.name
            );
        }
        if want.cannot_fail {
            assert!(
                !matches!(got, State::Failed { .. }),
                "oracle: stage {i} ({:?}) failed, and no ClusterSummary read says so",
                want.name
            );
        }
        if let Some(approval) = want.approval {
            assert_eq!(
                v.approval, approval,
                "oracle: the approval of stage {i} ({:?})",
                want.name
            );
        }
        if let Some(profile) = &detail.cluster_profile {
            let promotion = str_at(object, "/metadata/name").unwrap_or_default();
            assert_eq!(
                *profile,
                format!("{promotion}-{}", want.name),
                "oracle: stage {i}'s ClusterProfile"
            );
        }
    }

    // The oracle knows nothing of pauses: it decides the phase the stages show, which a pause
    // hides ([`crate::view::PauseView::stages_phase`]).
    let shown = d.paused.as_ref().map_or(&d.phase, |p| &p.stages_phase);
    assert_eq!(
        *shown == Phase::NotStarted,
        !e.has_status,
        "oracle: phase {shown:?}, and status.stages is {}empty",
        if e.has_status { "not " } else { "" }
    );
    assert_eq!(d.note.is_some(), !e.has_status, "oracle: note {:?}", d.note);
    if let Some(phase) = &e.phase_even_if_stale {
        assert_eq!(shown, phase, "oracle: the phase");
    }
    if d.stale.is_none() {
        if let Some(phase) = &e.phase {
            let phase = match phase {
                Phase::Progressing if refused && provisioning => &Phase::Unknown,
                phase => phase,
            };
            assert_eq!(shown, phase, "oracle: the phase of a current status");
        }
        // The view offers the first stage awaiting approval: the oracle's must have none
        // undetermined before it.
        let awaiting = e
            .stages
            .iter()
            .enumerate()
            .find(|(_, s)| s.state == Some(State::AwaitingApproval))
            .filter(|(i, _)| e.stages[..*i].iter().all(|s| s.state.is_some()));
        if let Some((i, stage)) = awaiting {
            assert_eq!(
                d.awaiting_approval.as_deref(),
                Some(stage.name.as_str()),
                "oracle: the stage awaiting approval"
            );
            let unblocks = d.stages[i].approve_unblocks.as_deref().unwrap_or_default();
            match e.stages.get(i + 1) {
                Some(next) => assert_eq!(
                    unblocks,
                    format!("{} → {}", stage.name, next.name),
                    "oracle: what approving stage {i} unblocks"
                ),
                None => assert!(
                    unblocks.starts_with(&format!("{} → ", stage.name)),
                    "oracle: what approving the last stage unblocks: {unblocks:?}"
                ),
            }
        }
    }
    assert_eq!(
        d.current_stage.as_deref(),
        str_at(object, "/status/currentStageName"),
        "oracle: status.currentStageName"
    );
}

/// `list`'s count of reached stages is the oracle's.
pub fn reached_stages(object: &Value) -> usize {
    expect(object, None, None)
        .stages
        .iter()
        .filter(|s| s.reached)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn promotion(stages: Value, status: Value) -> Value {
        json!({"metadata": {"name": "p", "uid": "u"}, "spec": {"stages": stages},
               "status": status})
    }

    #[test]
    fn descriptions_lose_only_a_time() {
        assert_eq!(text_of("Paused (2026-02-16T07:38:02Z)"), "Paused");
        assert_eq!(
            text_of("Paused (abcdefghijklmnopqrst)"),
            "Paused (abcdefghijklmnopqrst)"
        );
        assert_eq!(text_of("short"), "short");
        assert_eq!(text_of("é (2026-02-16T07:38:02Z)"), "é");
    }

    #[test]
    fn the_examples_of_states_md() {
        // kyverno-manual-gate.yaml: dev promoted, staging awaiting approval, production not
        // started.
        let o = promotion(
            json!([{"name": "dev"},
                   {"name": "staging", "trigger": {"manual": {"approved": false}}},
                   {"name": "production"}]),
            json!({"stages": [
                {"name": "dev", "lastSuccessfulAppliedTime": "2026-02-16T07:27:41Z"},
                {"name": "staging", "lastSuccessfulAppliedTime": "2026-02-16T07:38:02Z",
                 "currentStatusDescription": "Paused: Awaiting Manual Approval (2026-02-16T07:38:02Z)"}]}),
        );
        let e = expect(&o, None, None);
        let states: Vec<_> = e.stages.iter().map(|s| s.state.clone()).collect();
        assert_eq!(
            states,
            [
                Some(State::Promoted),
                Some(State::AwaitingApproval),
                Some(State::NotStarted)
            ]
        );
        assert_eq!(e.phase, Some(Phase::AwaitingApproval));
        assert_eq!(e.stages[1].approval, Some(Approval::NotApproved));

        // kyverno-failed-dev.yaml: provisioning offline, failed once a summary says so.
        let o = promotion(
            json!([{"name": "dev"}, {"name": "staging"}]),
            json!({"stages": [{"name": "dev",
                "failureMessage": "ClusterSummary p-dev-sveltos-dev01 is not yet provisioned."}]}),
        );
        assert_eq!(
            expect(&o, None, None).stages[0].state,
            Some(State::Provisioning)
        );
        let profile = json!({"metadata": {"name": "p-dev",
            "labels": {PROMOTION_LABEL: "p"}, "annotations": {STAGE_ANNOTATION: "dev"},
            "ownerReferences": [{"kind": "ClusterPromotion", "name": "p", "uid": "u"}]}});
        let summary = json!({"metadata": {"labels": {PROFILE_LABEL: "p-dev"}}, "spec": {},
            "status": {"featureSummaries": [{"featureID": "Helm", "status": "Failed"}]}});
        let e = expect(&o, Some(&[profile]), Some(std::slice::from_ref(&summary)));
        assert_eq!(e.stages[0].state, Some(State::Failed { for_good: false }));
        assert_eq!(e.phase, Some(Phase::Degraded));
        // The same summary without its profile could be anyone's: undetermined.
        let e = expect(&o, Some(&[]), Some(&[summary]));
        assert_eq!(e.stages[0].state, None);
        assert!(!e.stages[0].cannot_fail);
    }

    #[test]
    fn approvals_and_the_licence() {
        let stages = json!([{"name": "dev", "trigger": {"manual": {"approved": true}}},
                            {"name": "prod", "trigger": {"manual": {"approved": true}}}]);
        let o = promotion(
            stages.clone(),
            json!({"stages": [{"name": "dev", "lastSuccessfulAppliedTime": "t"}]}),
        );
        let e = expect(&o, None, None);
        assert_eq!(e.stages[0].state, Some(State::ApprovedPending));
        assert_eq!(e.stages[0].approval, Some(Approval::Pending));
        assert_eq!(e.stages[1].approval, None);
        let o = promotion(
            stages,
            json!({"stages": [{"name": "dev"}, {"name": "prod", "failureMessage": LICENCE}]}),
        );
        let e = expect(&o, None, None);
        assert_eq!(e.stages[0].approval, Some(Approval::Consumed));
        assert_eq!(e.stages[1].state, Some(State::Blocked));
        assert_eq!(e.phase_even_if_stale, Some(Phase::Blocked));
    }
}
