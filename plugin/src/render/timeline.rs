//! `plan --timeline`: when each stage would start, soak, wait for a window or an approval, and
//! complete, from the reconcile decision run on a simulated clock
//! (`promotion_shared::reconcile::simulate`), assuming every cluster deploys at once and every
//! health check passes.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use promotion_shared::abort::Aborted;
use promotion_shared::fleet::Cluster;
use promotion_shared::pause::Paused;
use promotion_shared::reconcile::simulate::{simulate, Step, StepKind, Timeline};
use promotion_shared::reconcile::Options;

use crate::duration;
use crate::error::{Error, Result};
use crate::render::{table, Style, Tone};
use crate::view::API_VERSION;

/// `--approve-at STAGE=TIME`: TIME is RFC 3339, or `+DURATION` after the start.
pub fn parse_approval(text: &str, start: DateTime<Utc>) -> Result<(String, DateTime<Utc>)> {
    let usage = |why: &str| {
        Error::Usage(format!(
            "--approve-at {text:?}: {why} (STAGE=2026-03-02T15:00:00Z or STAGE=+2h)"
        ))
    };
    let (stage, time) = text
        .split_once('=')
        .ok_or_else(|| usage("expected STAGE=TIME"))?;
    if stage.is_empty() {
        return Err(usage("the stage is empty"));
    }
    let at = match time.strip_prefix('+') {
        Some(offset) => {
            let d = duration::parse(offset).map_err(|e| usage(&e))?;
            let d = chrono::Duration::from_std(d).map_err(|_| usage("the offset is too large"))?;
            start + d
        }
        None => DateTime::parse_from_rfc3339(time)
            .map_err(|e| usage(&format!("not an RFC 3339 time: {e}")))?
            .with_timezone(&Utc),
    };
    Ok((stage.to_string(), at))
}

/// `-o json|yaml`: the timeline with its identity.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineDocument<'a> {
    api_version: &'static str,
    kind: &'static str,
    name: &'a str,
    window_time_zone: String,
    /// The promotion is paused: the timeline stops at the pause (its last step), and nothing
    /// after it is estimated.
    #[serde(skip_serializing_if = "Option::is_none")]
    paused: Option<&'a Paused>,
    /// The current rollout is aborted: the timeline stops at the abort, as at a pause; what
    /// it is, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    aborted: Option<String>,
    #[serde(flatten)]
    timeline: &'a Timeline,
}

pub fn document<'a>(
    name: &'a str,
    zone: chrono_tz::Tz,
    timeline: &'a Timeline,
    paused: Option<&'a Paused>,
    aborted: Option<&Aborted>,
) -> TimelineDocument<'a> {
    TimelineDocument {
        api_version: API_VERSION,
        kind: "PromotionTimeline",
        name,
        window_time_zone: zone.name().to_string(),
        paused,
        aborted: aborted.map(Aborted::describe),
        timeline,
    }
}

/// What holds the rollout of `stored` where it is: its pause, and an abort of the current
/// rollout (an abort of an earlier rollout holds nothing). The timeline stops at either.
pub fn holds(stored: &Value) -> (Option<Paused>, Option<Aborted>) {
    let paused = promotion_shared::pause::paused(stored);
    let aborted = promotion_shared::abort::aborted(stored).filter(|a| {
        promotion_shared::rollout::identity_of(stored).map_or(true, |i| a.applies_to(&i.id))
    });
    (paused, aborted)
}

/// The rollout of `stored` (a ClusterPromotion as the API server stores it) over `fleet`.
pub fn compute(
    stored: &Value,
    fleet: &[Cluster],
    start: DateTime<Utc>,
    approvals: &[(String, DateTime<Utc>)],
    zone: chrono_tz::Tz,
) -> Result<Timeline> {
    let stages: Vec<&str> = stored
        .pointer("/spec/stages")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(|s| s.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    for (stage, _) in approvals {
        if !stages.contains(&stage.as_str()) {
            return Err(Error::Usage(format!(
                "--approve-at {stage}=…: the promotion has no stage {stage:?} (stages: {})",
                stages.join(", ")
            )));
        }
    }
    Ok(simulate(
        stored,
        fleet,
        start,
        approvals,
        &Options { window_zone: zone },
    ))
}

fn when(t: DateTime<Utc>, zone: chrono_tz::Tz) -> String {
    t.with_timezone(&zone)
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// What holds the rollout, in a timeline's words: `paused: …`, `aborted: …`.
fn held(paused: Option<&Paused>, aborted: Option<&Aborted>) -> Option<&'static str> {
    match (aborted, paused) {
        (Some(_), _) => Some("aborted: nothing starts until it is retried"),
        (None, Some(_)) => Some("paused: nothing starts until it is resumed"),
        (None, None) => None,
    }
}

fn what(step: &Step, zone: chrono_tz::Tz, held: Option<&str>) -> (String, Tone) {
    let until = |label: &str| match step.until {
        Some(t) => format!("{label} until {}", when(t, zone)),
        None => label.to_string(),
    };
    match step.what {
        StepKind::Starts => (
            format!(
                "starts ({} {})",
                step.clusters.unwrap_or(0),
                if step.clusters == Some(1) {
                    "cluster"
                } else {
                    "clusters"
                }
            ),
            Tone::Active,
        ),
        StepKind::Deployed => ("deployed".into(), Tone::Active),
        StepKind::Soaks => (until("soaks"), Tone::Waiting),
        StepKind::WaitsForWindow => (until("waits for its promotion window"), Tone::Waiting),
        StepKind::WaitsForApproval => ("waits for an approval".into(), Tone::Waiting),
        StepKind::Approved => ("approved".into(), Tone::Good),
        StepKind::Passes => ("passes its trigger".into(), Tone::Good),
        StepKind::Completes => ("complete".into(), Tone::Good),
        // The simulated controller honours the pause and the abort: where nothing moves, that
        // holds it.
        StepKind::Blocked if held.is_some() => {
            (held.unwrap_or_default().to_string(), Tone::Waiting)
        }
        StepKind::Blocked => (
            "blocked: nothing moves without someone acting".into(),
            Tone::Bad,
        ),
    }
}

/// The human form: one row per step, then the outcome; for a paused promotion the steps stop at
/// the pause and the outcome says so.
pub fn render(
    name: &str,
    timeline: &Timeline,
    zone: chrono_tz::Tz,
    style: &Style,
    paused: Option<&Paused>,
    aborted: Option<&Aborted>,
) -> String {
    let held = held(paused, aborted);
    let rows: Vec<Vec<String>> = timeline
        .steps
        .iter()
        .map(|s| {
            let (text, tone) = what(s, zone, held);
            vec![
                when(s.time, zone),
                s.stage.clone(),
                style.paint(&text, tone),
            ]
        })
        .collect();
    let mut out = format!(
        "Timeline of {name} (assuming every cluster deploys at once and every check passes; \
         times in {})\n",
        zone.name()
    );
    out.push_str(&table::render(&["TIME", "STAGE", "EVENT"], &rows, false));
    match timeline.completes {
        Some(t) if timeline.already_complete => out.push_str(&format!(
            "Complete since {}: the status shows every stage passed in this rollout\n",
            when(t, zone)
        )),
        Some(t) => out.push_str(&format!(
            "Complete at {} ({} after the start)\n",
            when(t, zone),
            duration::human(t - timeline.start)
        )),
        None if aborted.is_some() => out.push_str(&format!(
            "No estimate past the abort: the timeline stops at the abort ({name}'s rollout is {}; \
             no stage starts until `kubectl promotion retry {name}`, then plan again)\n",
            aborted.map(Aborted::describe).unwrap_or_default()
        )),
        None if paused.is_some() => out.push_str(&format!(
            "No estimate past the pause: the timeline stops at the pause ({name} is {}; no stage \
             starts until `kubectl promotion resume {name}`, then plan again)\n",
            paused.map(Paused::describe).unwrap_or_default()
        )),
        None => {
            let waiting = timeline
                .steps
                .iter()
                .rev()
                .find(|s| s.what != StepKind::Blocked)
                .filter(|s| s.what == StepKind::WaitsForApproval);
            match waiting {
                Some(s) => out.push_str(&format!(
                    "Does not complete: {} waits for an approval (explore with --approve-at \
                     {}=TIME)\n",
                    s.stage, s.stage
                )),
                None => out.push_str(
                    "Does not complete: the last stage reached is blocked \
                     (promotion-controller reconcile --dry-run says why)\n",
                ),
            }
        }
    }
    out
}
