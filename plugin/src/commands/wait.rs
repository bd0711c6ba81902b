//! `wait NAME --for=complete|approval|stage=S --timeout D`.
//!
//! Exit 0 when the condition holds, 2 when the pipeline fails first, 3 on timeout, 1 on any other
//! error, so a CI script can tell "rollout broke" from "took too long" from "tool broke".

use std::time::Duration;

use clap::Args;
use promotion_shared::pipeline::{Phase, StageState};

use super::{note, warn, Ctx};
use crate::cluster::fetch;
use crate::cluster::kube_client::Kube;
use crate::cluster::watch::Follower;
use crate::duration;
use crate::error::{exit::wait as exit, Error, Result};
use crate::view::{self, Description};

#[derive(Args, Debug)]
#[command(
    about = "Wait until a pipeline completes, awaits approval, or reaches a stage",
    after_help = "\
Conditions:
  --for=complete      the last stage is done
  --for=approval      a stage waits for manual approval (to notify an approver from CI)
  --for=stage=NAME    the pipeline has reached stage NAME
  --for=paused        the promotion is paused (kubectl promotion pause)
  --for=aborted       the current rollout is aborted or rolled back (kubectl promotion abort,
                      rollback)
  --for=rolled-back   every stage runs the revision the rollout was rolled back to, deployed

A condition holds only for the current rollout: while Sveltos has not picked up the latest
change (the status still describes the previous rollout), `wait` keeps waiting. Failures Sveltos
retries (a feature `Failed`) keep it waiting too, unless --fail-fast; a failure Sveltos gave up on
(`FailedNonRetriable`) or a refusal (licence) ends it with exit 2. A paused promotion (no stage
starts until `kubectl promotion resume`) is said once on stderr and the wait goes on; a pipeline
complete or failed for good beneath the pause ends it as unpaused. An aborted rollout (nothing
starts until `kubectl promotion retry`) is said once on stderr too, and the wait goes on. What you may not read
(ClusterProfiles, ClusterSummaries) is said once on stderr and the wait goes on from the rest,
as `describe` shows it: a failure only those show cannot end it.

Exit status: 0 the condition holds; 2 the pipeline failed first; 3 the timeout elapsed;
1 any other error. Follows watch events (re-listing when a watch drops), not polling.
--timeout bounds the whole command: connecting and reading count, so a server that does not
answer ends it with exit 3 too, naming the request that got no answer.

Examples:
  kubectl promotion wait kyverno-rollout --for=complete --timeout=30m
  kubectl promotion wait kyverno-rollout --for=approval --timeout=1h && notify-approvers
  kubectl promotion wait kyverno-rollout --for=stage=production --timeout=0   # check once"
)]
pub struct WaitArgs {
    /// ClusterPromotion name
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Condition: complete, approval, stage=NAME, paused, aborted or rolled-back
    #[arg(long = "for", value_name = "CONDITION", value_parser = parse_condition)]
    pub condition: WaitFor,
    /// How long the command may take, connecting included (e.g. 30s, 10m, 1h); 0 checks once
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration::parse_flag)]
    pub timeout: Duration,
    /// Stop (exit 2) at the first failed cluster, even one Sveltos retries
    #[arg(long)]
    pub fail_fast: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitFor {
    Complete,
    Approval,
    Stage(String),
    Paused,
    Aborted,
    RolledBack,
}

impl std::fmt::Display for WaitFor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaitFor::Complete => write!(f, "complete"),
            WaitFor::Approval => write!(f, "approval"),
            WaitFor::Stage(s) => write!(f, "stage={s}"),
            WaitFor::Paused => write!(f, "paused"),
            WaitFor::Aborted => write!(f, "aborted"),
            WaitFor::RolledBack => write!(f, "rolled-back"),
        }
    }
}

fn parse_condition(text: &str) -> Result<WaitFor, String> {
    match text {
        "complete" | "completed" => Ok(WaitFor::Complete),
        "approval" | "awaiting-approval" => Ok(WaitFor::Approval),
        "paused" => Ok(WaitFor::Paused),
        "aborted" => Ok(WaitFor::Aborted),
        "rolled-back" => Ok(WaitFor::RolledBack),
        _ => match text.strip_prefix("stage=") {
            Some(s) if !s.is_empty() => Ok(WaitFor::Stage(s.to_string())),
            _ => Err(
                "expected complete, approval, paused, aborted, rolled-back or stage=NAME".into(),
            ),
        },
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Reached(String),
    Failed(String),
    /// Not yet; says what the pipeline is doing.
    Pending(String),
    /// Cannot happen in this rollout (e.g. waiting for an approval of a complete pipeline).
    Impossible(String),
}

/// Judge the condition against the computed view. `fail_fast`: a failure Sveltos retries ends
/// the wait too.
pub fn evaluate(cond: &WaitFor, d: &Description, fail_fast: bool) -> Verdict {
    let doing = doing(d);
    if let WaitFor::Stage(s) = cond {
        if !d.stages.iter().any(|st| &st.view.name == s) {
            let names: Vec<&str> = d.stages.iter().map(|s| s.view.name.as_str()).collect();
            return Verdict::Impossible(format!(
                "{:?} has no stage {s:?} (stages: {})",
                d.name,
                names.join(", ")
            ));
        }
    }
    if cond == &WaitFor::Paused {
        if let Some(p) = &d.paused {
            return Verdict::Reached(format!("{} {}", d.name, p.pause.describe()));
        }
    }
    match (cond, &d.aborted) {
        (WaitFor::Aborted, Some(a)) => {
            return Verdict::Reached(format!("{} {}", d.name, a.abort.describe()));
        }
        (WaitFor::RolledBack, Some(a)) if d.phase == Phase::RolledBack => {
            return Verdict::Reached(format!("{} {}", d.name, a.abort.describe()));
        }
        _ => {}
    }
    // A pause holds the pipeline where it is; what its stages show (failed, complete) still
    // answers the condition.
    let phase = d.paused.as_ref().map_or(&d.phase, |p| &p.stages_phase);
    match phase {
        // The status is the previous rollout's: nothing in it answers the condition.
        Phase::Stale => return Verdict::Pending(doing),
        // Nothing starts any more: no condition of the rollout can be reached.
        Phase::Deleting => return Verdict::Impossible(doing),
        Phase::Failed | Phase::Blocked => return Verdict::Failed(doing),
        Phase::Degraded if fail_fast => return Verdict::Failed(doing),
        _ => {}
    }
    match cond {
        WaitFor::Stage(s) => {
            let stage = d.stages.iter().find(|st| &st.view.name == s);
            match stage {
                Some(st) if st.view.state != StageState::NotStarted => {
                    Verdict::Reached(format!("stage {s} reached: {}", st.view.state.label()))
                }
                _ if *phase == Phase::Complete => {
                    Verdict::Impossible(format!("{} is complete without reaching {s}", d.name))
                }
                _ => Verdict::Pending(doing),
            }
        }
        WaitFor::Complete if *phase == Phase::Complete => {
            Verdict::Reached(format!("{} complete", d.name))
        }
        WaitFor::Complete => Verdict::Pending(doing),
        WaitFor::Approval => match d.stages.iter().find(|s| s.approve_unblocks.is_some()) {
            Some(stage) => Verdict::Reached(format!(
                "stage {} awaits approval (unblocks {}): kubectl promotion approve {} --stage {}",
                stage.view.name,
                stage.approve_unblocks.as_deref().unwrap_or_default(),
                d.name,
                stage.view.name
            )),
            None if *phase == Phase::Complete => Verdict::Impossible(format!(
                "{} is complete: no stage will await approval in this rollout",
                d.name
            )),
            None => Verdict::Pending(doing),
        },
        // Not paused yet (a pause is possible at any time, a complete pipeline's included).
        WaitFor::Paused => Verdict::Pending(doing),
        // Not aborted yet, or not every stage runs the revision yet.
        WaitFor::Aborted | WaitFor::RolledBack => Verdict::Pending(doing),
    }
}

/// "at staging: soaking until T" / the empty-status note / the stale reason.
fn doing(d: &Description) -> String {
    if let Some(since) = &d.deleting {
        return format!("{} is being deleted (since {since})", d.name);
    }
    if let Some(why) = &d.stale {
        return format!(
            "{} has not picked up the latest change yet ({why})",
            d.reconciler
        );
    }
    if let Some(n) = &d.note {
        return format!("status empty: {n}");
    }
    if let Some(why) = view::unknown_because(d) {
        return format!("phase unknown: {why}");
    }
    match d
        .stages
        .iter()
        .rev()
        .find(|s| s.view.state != StageState::NotStarted)
    {
        Some(s) => match &s.view.state {
            StageState::Failed { message, .. } => {
                format!("stage {} {}: {message}", s.view.name, s.view.state.label())
            }
            StageState::Blocked { message } => message.clone(),
            state => format!("at stage {}: {}", s.view.name, state.label()),
        },
        None => "not started".into(),
    }
}

pub async fn run(ctx: &Ctx, args: &WaitArgs) -> Result<u8> {
    within(
        ctx,
        args.timeout,
        format!("waiting for {}", args.condition),
        async {
            let kube = ctx.kube().await?;
            wait_for(
                ctx,
                &kube,
                &args.name,
                &args.condition,
                args.timeout,
                args.fail_fast,
            )
            .await
        },
    )
    .await
}

/// Run `work`, a whole command, until `timeout` after the command started: connecting, reading
/// and following all count, so that a server that does not answer ends it as a condition that
/// does not come does ([`Error::TimedOut`], exit 3), saying which request got no answer. With
/// `--timeout=0` (check once) only the client's request timeouts bound it.
pub async fn within(
    ctx: &Ctx,
    timeout: Duration,
    doing: String,
    work: impl std::future::Future<Output = Result<u8>>,
) -> Result<u8> {
    if timeout.is_zero() {
        return work.await;
    }
    match tokio::time::timeout_at(ctx.deadline(timeout), work).await {
        Ok(result) => result,
        Err(_) => Err(Error::TimedOut {
            after: duration::format(timeout),
            doing,
            pending: ctx.in_flight.describe(),
        }),
    }
}

/// Wait for `cond`; returns the exit code (0, 2 or 3) or an error (exit 1).
pub async fn wait_for(
    ctx: &Ctx,
    kube: &Kube,
    name: &str,
    cond: &WaitFor,
    timeout: Duration,
    fail_fast: bool,
) -> Result<u8> {
    if timeout.is_zero() {
        // kubectl wait --timeout=0: check once.
        let d = Description::build(&fetch::state(kube, name).await?)?;
        warn_unread(ctx, &d, &mut Vec::new());
        say_pause(ctx, cond, &d, &mut None);
        say_abort(ctx, cond, &d, &mut None);
        return conclude(ctx, cond, evaluate(cond, &d, fail_fast), timeout);
    }
    // The command's deadline, so that `approve --wait` waits only what is left of --timeout.
    let deadline = ctx.deadline(timeout);
    let mut follower = Follower::start(kube, name).await?;
    let mut last = String::new();
    let mut warned = Vec::new();
    let mut pause = None;
    let mut abort = None;
    loop {
        let Some(state) = follower.next_until(Some(deadline)).await? else {
            return conclude(ctx, cond, Verdict::Pending(last), timeout);
        };
        let d = Description::build(&state.snapshot(Err(String::new())))?;
        warn_unread(ctx, &d, &mut warned);
        say_pause(ctx, cond, &d, &mut pause);
        say_abort(ctx, cond, &d, &mut abort);
        match evaluate(cond, &d, fail_fast) {
            Verdict::Pending(doing) => {
                if doing != last {
                    note(ctx, &format!("waiting for {cond}: {doing}"));
                    last = doing;
                }
            }
            verdict => return conclude(ctx, cond, verdict, timeout),
        }
    }
}

/// Say once that the promotion is paused (again when the pause changes, and when it is resumed):
/// the wait goes on, and nothing starts until someone resumes it. `said`: the pause said last.
fn say_pause(ctx: &Ctx, cond: &WaitFor, d: &Description, said: &mut Option<String>) {
    if cond == &WaitFor::Paused {
        return;
    }
    let now = d.paused.as_ref().map(|p| p.explain(&d.name));
    if &now == said {
        return;
    }
    match &now {
        Some(pause) => note(
            ctx,
            &format!("{} is paused {pause}; still waiting for {cond}", d.name),
        ),
        None => note(ctx, &format!("{} was resumed", d.name)),
    }
    *said = now;
}

/// Say once that the rollout is aborted (again when the abort changes, and when it is retried):
/// the wait goes on, and nothing of the rollout starts until someone retries it. `said`: the
/// abort said last.
fn say_abort(ctx: &Ctx, cond: &WaitFor, d: &Description, said: &mut Option<String>) {
    if matches!(cond, WaitFor::Aborted | WaitFor::RolledBack) {
        return;
    }
    let now = d.aborted.as_ref().map(|a| a.explain(&d.name));
    if &now == said {
        return;
    }
    match &now {
        Some(abort) => note(
            ctx,
            &format!("{}'s rollout is {abort}; still waiting for {cond}", d.name),
        ),
        None if said.is_some() => note(ctx, &format!("{} was retried", d.name)),
        None => {}
    }
    *said = now;
}

/// Say once what could not be read: the wait goes on from the rest, as `describe` shows it,
/// and a failure only the unread objects show cannot end it.
fn warn_unread(ctx: &Ctx, d: &Description, warned: &mut Vec<String>) {
    for w in &d.warnings {
        if !warned.contains(w) {
            warn(ctx, w);
            warned.push(w.clone());
        }
    }
}

fn conclude(ctx: &Ctx, cond: &WaitFor, verdict: Verdict, timeout: Duration) -> Result<u8> {
    match verdict {
        Verdict::Reached(msg) => {
            ctx.write_out(&format!("{msg}\n"))?;
            Ok(exit::OK)
        }
        Verdict::Failed(msg) => {
            eprintln!(
                "{} pipeline failed before {cond}: {msg}",
                ctx.err.paint("error:", crate::render::Tone::Bad)
            );
            Ok(exit::PIPELINE_FAILED)
        }
        Verdict::Pending(doing) => {
            let doing = if doing.is_empty() {
                String::new()
            } else {
                format!(" (still {doing})")
            };
            eprintln!(
                "{} timed out after {} waiting for {cond}{doing}",
                ctx.err.paint("error:", crate::render::Tone::Bad),
                duration::format(timeout)
            );
            Ok(exit::TIMEOUT)
        }
        Verdict::Impossible(msg) => Err(Error::Refused(msg)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_parse() {
        assert_eq!(parse_condition("complete"), Ok(WaitFor::Complete));
        assert_eq!(parse_condition("approval"), Ok(WaitFor::Approval));
        assert_eq!(
            parse_condition("stage=prod"),
            Ok(WaitFor::Stage("prod".into()))
        );
        assert!(parse_condition("stage=").is_err());
        assert!(parse_condition("ready").is_err());
    }
    use crate::view::fixtures::profile;
    use crate::view::Snapshot;
    use serde_json::{json, Value};

    fn object(status: Value) -> Value {
        json!({
            "metadata": {"name": "p"},
            "spec": {"stages": [
                {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                 "trigger": {"auto": {}}},
                {"name": "staging", "trigger": {"manual": {}}},
                {"name": "prod"}
            ]},
            "status": status
        })
    }

    fn d(status: Value, summaries: Vec<Value>) -> Description {
        let object = object(status);
        Description::build(&Snapshot {
            profiles: Ok(vec![profile(&object, "dev", &[])]),
            object,
            summaries: Ok(summaries),
            events: Err(String::new()),
            owners: Default::default(),
        })
        .unwrap()
    }

    fn awaiting() -> Description {
        d(
            json!({"stages": [
                {"name": "dev", "lastSuccessfulAppliedTime": "t"},
                {"name": "staging", "lastSuccessfulAppliedTime": "t",
                 "currentStatusDescription": "Paused: Awaiting Manual Approval (2026-02-16T07:38:02Z)"}]}),
            vec![],
        )
    }

    fn cluster_with(status: &str) -> Value {
        json!({
            "metadata": {"name": "s", "namespace": "n",
                         "labels": {"projectsveltos.io/cluster-profile-name": "p-dev"}},
            "spec": {"clusterNamespace": "n", "clusterName": "c1"},
            "status": {"featureSummaries": [{"featureID": "Helm", "status": status,
                                             "failureMessage": "boom"}]}
        })
    }

    #[test]
    fn approval_condition() {
        match evaluate(&WaitFor::Approval, &awaiting(), false) {
            Verdict::Reached(m) => assert!(m.contains("unblocks staging → prod")),
            v => panic!("{v:?}"),
        }
        assert!(matches!(
            evaluate(&WaitFor::Complete, &awaiting(), false),
            Verdict::Pending(m) if m == "at stage staging: awaiting approval"
        ));
    }

    #[test]
    fn stage_condition() {
        assert!(matches!(
            evaluate(&WaitFor::Stage("staging".into()), &awaiting(), false),
            Verdict::Reached(_)
        ));
        assert!(matches!(
            evaluate(&WaitFor::Stage("prod".into()), &awaiting(), false),
            Verdict::Pending(_)
        ));
        assert!(matches!(
            evaluate(&WaitFor::Stage("qa".into()), &awaiting(), false),
            Verdict::Impossible(m) if m.contains("stages: dev, staging, prod")
        ));
    }

    #[test]
    fn a_failure_sveltos_gave_up_on_ends_the_wait() {
        let failed = d(
            json!({"stages": [{"name": "dev"}]}),
            vec![cluster_with("FailedNonRetriable")],
        );
        match evaluate(&WaitFor::Complete, &failed, false) {
            Verdict::Failed(m) => assert!(m.contains("boom"), "{m}"),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn a_failure_sveltos_retries_waits_unless_fail_fast() {
        let retrying = d(
            json!({"stages": [{"name": "dev"}]}),
            vec![cluster_with("Failed")],
        );
        assert_eq!(retrying.phase, Phase::Degraded);
        match evaluate(&WaitFor::Complete, &retrying, false) {
            Verdict::Pending(m) => assert!(m.contains("Sveltos retries"), "{m}"),
            v => panic!("{v:?}"),
        }
        assert!(matches!(
            evaluate(&WaitFor::Complete, &retrying, true),
            Verdict::Failed(_)
        ));
    }

    #[test]
    fn a_stale_status_answers_no_condition() {
        // Complete as far as the status says, but the first stage's profile still has the
        // previous spec: the change has not been picked up.
        let object = object(json!({"stages": [
            {"name": "dev", "lastSuccessfulAppliedTime": "t"},
            {"name": "staging", "lastSuccessfulAppliedTime": "t"},
            {"name": "prod", "lastSuccessfulAppliedTime": "t"}]}));
        let mut old = profile(&object, "dev", &[]);
        old["spec"]["helmCharts"] = json!([{"releaseName": "r", "releaseNamespace": "n"}]);
        let d = Description::build(&Snapshot {
            object,
            profiles: Ok(vec![old]),
            summaries: Ok(vec![]),
            events: Err(String::new()),
            owners: Default::default(),
        })
        .unwrap();
        assert_eq!(d.phase, Phase::Stale);
        for cond in [
            WaitFor::Complete,
            WaitFor::Approval,
            WaitFor::Stage("prod".into()),
        ] {
            match evaluate(&cond, &d, false) {
                Verdict::Pending(m) => assert!(m.contains("not picked up"), "{m}"),
                v => panic!("{cond}: {v:?}"),
            }
        }
    }

    #[test]
    fn complete_pipeline() {
        let done = d(
            json!({"stages": [
                {"name": "dev", "lastSuccessfulAppliedTime": "t"},
                {"name": "staging", "lastSuccessfulAppliedTime": "t"},
                {"name": "prod", "lastSuccessfulAppliedTime": "t",
                 "currentStatusDescription": "All matching clusters are successfully deployed. (2026-02-16T07:38:02Z)"}]}),
            vec![],
        );
        assert!(matches!(
            evaluate(&WaitFor::Complete, &done, false),
            Verdict::Reached(_)
        ));
        assert!(matches!(
            evaluate(&WaitFor::Approval, &done, false),
            Verdict::Impossible(_)
        ));
    }

    #[test]
    fn a_pause_answers_paused_and_holds_no_other_condition_it_hides() {
        use promotion_shared::pause::PAUSED_ANNOTATION;
        assert_eq!(parse_condition("paused"), Ok(WaitFor::Paused));
        let paused = |status: Value| {
            let mut object = object(status);
            object["metadata"]["annotations"] = json!({PAUSED_ANNOTATION: "INC-1"});
            Description::build(&Snapshot::offline(object)).unwrap()
        };
        let at_gate = paused(json!({"stages": [
            {"name": "dev", "lastSuccessfulAppliedTime": "t"},
            {"name": "staging", "lastSuccessfulAppliedTime": "t",
             "currentStatusDescription": "Paused: Awaiting Manual Approval (2026-02-16T07:38:02Z)"}]}));
        assert_eq!(at_gate.phase, Phase::Paused);
        match evaluate(&WaitFor::Paused, &at_gate, false) {
            Verdict::Reached(m) => assert!(
                m.starts_with("p paused (who paused it is not recorded"),
                "{m}"
            ),
            v => panic!("{v:?}"),
        }
        assert!(matches!(
            evaluate(&WaitFor::Complete, &at_gate, false),
            Verdict::Pending(m) if m == "at stage staging: awaiting approval"
        ));
        // Complete beneath the pause: the pipeline is complete.
        let done = paused(json!({"stages": [
            {"name": "dev", "lastSuccessfulAppliedTime": "t"},
            {"name": "staging", "lastSuccessfulAppliedTime": "t"},
            {"name": "prod", "lastSuccessfulAppliedTime": "t",
             "currentStatusDescription": "All matching clusters are successfully deployed. (2026-02-16T07:38:02Z)"}]}));
        assert!(matches!(
            evaluate(&WaitFor::Complete, &done, false),
            Verdict::Reached(_)
        ));
        // Not paused: --for=paused waits, even for a complete pipeline.
        assert!(matches!(
            evaluate(&WaitFor::Paused, &awaiting(), false),
            Verdict::Pending(_)
        ));
    }

    #[test]
    fn durations_print_like_flags() {
        assert_eq!(
            crate::duration::format(std::time::Duration::from_secs(300)),
            "5m"
        );
        assert_eq!(
            crate::duration::format(std::time::Duration::from_millis(1500)),
            "1500ms"
        );
        assert_eq!(
            crate::duration::format(std::time::Duration::from_secs(45)),
            "45s"
        );
    }
}
