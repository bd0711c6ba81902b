//! The dashboard's view models: what a page shows, computed from `describe`'s model
//! ([`Description`]) and what was read with it. Nothing here fetches; the pages render these and
//! nothing else, so that the page and the terminal say the same things.

use serde_json::Value;

use promotion_shared::pipeline::{Phase, StageState, TriggerKind};

use crate::render::{self, Tone};
use crate::view::approver::CallerFacts;
use crate::view::history::HistoryRow;
use crate::view::{Description, StageDetail};

/// One promotion on the fleet page: its pipeline, gate, phase and next step.
#[derive(Clone, Debug, PartialEq)]
pub struct Card {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub phase: &'static str,
    /// The phase's colour class (the terminal's tones).
    pub phase_tone: &'static str,
    pub stages: Vec<StageBox>,
    /// `staging → production`: what approving the gate that waits unblocks.
    pub gate: Option<String>,
    pub next_step: Option<String>,
    /// The frontier stage's message, the pause or the abort (`list`'s MESSAGE).
    pub message: Option<String>,
    /// Who runs the promotion, as `describe` names it.
    pub reconciled_by: String,
    /// promotion-controller cannot act on it now, and how to fix that.
    pub blocked: Option<String>,
    /// The time of the last write to the promotion the watch saw (the API server's stamp).
    pub changed: Option<String>,
}

/// One stage of a pipeline, as a box.
#[derive(Clone, Debug, PartialEq)]
pub struct StageBox {
    pub name: String,
    pub state: String,
    pub symbol: &'static str,
    pub tone: &'static str,
    /// `auto`, `manual` or empty.
    pub trigger: &'static str,
    /// `3/5 provisioned, 1 failed`, or what the stage will reach when it starts.
    pub clusters: Option<String>,
    pub current: bool,
}

/// The colour class of a tone, shared by the stylesheet.
pub fn tone_class(tone: Tone) -> &'static str {
    match tone {
        Tone::Good => "good",
        Tone::Active => "active",
        Tone::Waiting => "waiting",
        Tone::Bad => "bad",
        Tone::Dim => "dim",
        Tone::Strong | Tone::Plain => "plain",
    }
}

impl Card {
    pub fn of(d: &Description, object: &Value, changed: Option<String>) -> Card {
        let row = super::super::list::row(d);
        let labels = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        Card {
            name: d.name.clone(),
            labels,
            phase: d.phase.label(),
            phase_tone: tone_class(render::phase_tone(&d.phase)),
            stages: d
                .stages
                .iter()
                .map(|s| StageBox::of(s, d.current_stage.as_deref()))
                .collect(),
            gate: row.approve_unblocks.clone(),
            next_step: d.next_step.clone(),
            message: row.message,
            reconciled_by: d.reconciled_by.clone(),
            blocked: d
                .reconciler_blocked
                .as_ref()
                .map(|b| format!("{}: {}", b.problem, b.fix)),
            changed,
        }
    }
}

impl StageBox {
    pub fn of(s: &StageDetail, current: Option<&str>) -> StageBox {
        let (symbol, tone) = symbol_of(&s.view.state);
        let clusters = match (&s.cluster_counts, &s.will_reach) {
            (Some(c), _) if s.view.state != StageState::NotStarted => {
                let mut text = format!("{}/{} provisioned", c.provisioned, c.total);
                if c.failed > 0 {
                    text.push_str(&format!(", {} failed", c.failed));
                }
                if c.previous_spec > 0 {
                    text.push_str(&format!(", {} on the previous spec", c.previous_spec));
                }
                Some(text)
            }
            (_, Some(r)) => Some(format!("will reach {}", plural(r.clusters, "cluster"))),
            _ => None,
        };
        StageBox {
            name: s.view.name.clone(),
            state: s.view.state.label(),
            symbol,
            tone: tone_class(tone),
            trigger: match s.view.trigger.kind {
                TriggerKind::Auto => "auto",
                TriggerKind::Manual => "manual",
                _ => "",
            },
            clusters,
            current: current == Some(s.view.name.as_str()),
        }
    }
}

/// The terminal's symbol of a state and its tone, in glyphs the common web fonts have: the
/// terminal's "॥" (waiting for a person) is missing from most, and shows as a box.
pub fn symbol_of(state: &StageState) -> (&'static str, Tone) {
    match render::state_symbol(state) {
        ("॥", tone) => ("‖", tone),
        other => other,
    }
}

pub fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// What a button of the promotion page does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionKind {
    Approve,
    Revoke,
    Pause,
    Resume,
    Abort,
    Rollback,
    Retry,
}

impl ActionKind {
    pub const ALL: [ActionKind; 7] = [
        ActionKind::Approve,
        ActionKind::Revoke,
        ActionKind::Pause,
        ActionKind::Resume,
        ActionKind::Abort,
        ActionKind::Rollback,
        ActionKind::Retry,
    ];

    /// The path segment of its POST, and the CLI command it runs.
    pub fn path(self) -> &'static str {
        match self {
            ActionKind::Approve => "approve",
            ActionKind::Revoke => "revoke",
            ActionKind::Pause => "pause",
            ActionKind::Resume => "resume",
            ActionKind::Abort => "abort",
            ActionKind::Rollback => "rollback",
            ActionKind::Retry => "retry",
        }
    }

    pub fn of_path(path: &str) -> Option<ActionKind> {
        ActionKind::ALL.into_iter().find(|a| a.path() == path)
    }

    fn takes_reason(self) -> bool {
        !matches!(self, ActionKind::Resume | ActionKind::Retry)
    }
}

/// One action the page offers: enabled, or shown disabled with why.
#[derive(Clone, Debug, PartialEq)]
pub struct Action {
    pub kind: ActionKind,
    /// The stage it acts on (approve, revoke).
    pub stage: Option<String>,
    pub label: String,
    /// What will happen, asked before it is sent.
    pub confirm: String,
    /// `Err`: why the caller may not (RBAC or the published rules), as `describe` words it.
    pub allowed: Result<(), String>,
    pub takes_reason: bool,
}

/// What the caller may do, as the server says (asked once per page or stream).
#[derive(Clone, Debug)]
pub struct Rights {
    /// May patch this promotion (SelfSubjectAccessReview).
    pub rbac: Result<bool, String>,
    pub caller: CallerFacts,
}

/// The actions the promotion page offers for `d`, each the CLI command of the same name.
pub fn actions(d: &Description, rights: &Rights) -> Vec<Action> {
    let name = &d.name;
    if d.deleting.is_some() {
        return Vec::new();
    }
    let patch = match &rights.rbac {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!(
            "RBAC does not let you patch clusterpromotion {name:?}"
        )),
        // Not known: the server decides when it is sent.
        Err(_) => Ok(()),
    };
    let steer = patch.clone().and_then(|()| rollback_group(rights));
    let mut out = Vec::new();
    for s in d.stages.iter().filter(|s| s.approve_unblocks.is_some()) {
        let unblocks = s.approve_unblocks.clone().unwrap_or_default();
        let allowed = match &d.approval_right {
            Some(r) if r.may_approve == Some(false) => {
                Err(format!("{} (who may: {})", r.reasons.join("; "), r.who_may))
            }
            _ => patch.clone(),
        };
        out.push(Action {
            kind: ActionKind::Approve,
            stage: Some(s.view.name.clone()),
            label: format!("Approve {}", s.view.name),
            confirm: format!(
                "Approve stage {} of {name}? This unblocks {unblocks}: the next stage starts \
                 on the reconciler's next pass. Your identity and reason are recorded.",
                s.view.name
            ),
            allowed,
            takes_reason: ActionKind::Approve.takes_reason(),
        });
    }
    for s in d.stages.iter().filter(|s| s.revocable) {
        let allowed = match &s.revoke_right {
            Some(r) if r.may_revoke == Some(false) => {
                Err(format!("{} (who may: {})", r.reasons.join("; "), r.who_may))
            }
            _ => patch.clone(),
        };
        out.push(Action {
            kind: ActionKind::Revoke,
            stage: Some(s.view.name.clone()),
            label: format!("Revoke approval of {}", s.view.name),
            confirm: format!(
                "Withdraw the approval of stage {} of {name} before it is used? The gate waits \
                 for a new approval.",
                s.view.name
            ),
            allowed,
            takes_reason: ActionKind::Revoke.takes_reason(),
        });
    }
    let finished = matches!(d.phase, Phase::Complete);
    match &d.paused {
        None if !finished => out.push(Action {
            kind: ActionKind::Pause,
            stage: None,
            label: "Pause".into(),
            confirm: format!(
                "Pause {name}? No stage starts and no approval is used until it is resumed; \
                 what is deployed stays deployed."
            ),
            allowed: patch.clone(),
            takes_reason: true,
        }),
        None => {}
        Some(_) => out.push(Action {
            kind: ActionKind::Resume,
            stage: None,
            label: "Resume".into(),
            confirm: format!("Resume {name}? The rollout goes on from where it was paused."),
            allowed: patch.clone(),
            takes_reason: false,
        }),
    }
    match &d.aborted {
        None if !finished => {
            out.push(Action {
                kind: ActionKind::Abort,
                stage: None,
                label: "Abort".into(),
                confirm: format!(
                    "Abort the current rollout of {name}? It is held where it is (nothing is \
                     undeployed) until it is retried."
                ),
                allowed: steer.clone(),
                takes_reason: true,
            });
            out.push(Action {
                kind: ActionKind::Rollback,
                stage: None,
                label: "Roll back".into(),
                confirm: format!(
                    "Roll {name} back? Every stage the rollout changed is set back at once to \
                     the last revision that completed, without waiting for gates."
                ),
                allowed: steer,
                takes_reason: true,
            });
        }
        None => {}
        Some(_) => out.push(Action {
            kind: ActionKind::Retry,
            stage: None,
            label: "Retry".into(),
            confirm: format!(
                "Retry {name}? The abort request is removed: an abort resumes where it stopped, \
                 a rollback starts again from the first stage, through every gate."
            ),
            allowed: steer,
            takes_reason: false,
        }),
    }
    out
}

/// The published rules may limit abort, rollback and retry to some groups (the webhook enforces
/// it; said here before the button is pressed).
fn rollback_group(rights: &Rights) -> Result<(), String> {
    let Ok(Some(rules)) = &rights.caller.rules else {
        return Ok(());
    };
    if rules.rollback_groups.is_empty() {
        return Ok(());
    }
    let Ok(user) = &rights.caller.identity else {
        return Ok(());
    };
    let groups = user.groups.clone().unwrap_or_default();
    if groups.iter().any(|g| rules.rollback_groups.contains(g)) {
        return Ok(());
    }
    Err(format!(
        "only members of {} may abort, roll back or retry (the published rollback-groups); you \
         are in {}",
        rules.rollback_groups.join(", "),
        if groups.is_empty() {
            "no group".to_string()
        } else {
            groups.join(", ")
        }
    ))
}

/// Everything the promotion page shows.
#[derive(Clone, Debug)]
pub struct PromotionPage {
    pub card: Card,
    pub description: Description,
    /// The rollout history (`kubectl promotion history`), or why it cannot be read.
    pub history: Result<Vec<HistoryRow>, String>,
    /// `plan --timeline`'s table, or why it cannot be computed.
    pub timeline: Result<String, String>,
    /// Empty with `--read-only`.
    pub actions: Vec<Action>,
    pub read_only: bool,
}
