//! Arbitrary text through the Go duration parser and the robfig/cron parser, on their own and as
//! the fields of a ClusterPromotion the engine judges.
//!
//! Invariants:
//! - neither parser panics, and a rejection says why;
//! - an accepted duration fits Go's `time.Duration` (int64 nanoseconds) and has the input's sign;
//!   Go's own formatting of it (`Duration.String`) parses back to the same value;
//! - `parse_std_duration` accepts exactly the non-negative Go durations, with the same value;
//! - `@every D` is accepted when `D` is a Go duration, and only when `D` trimmed is one;
//! - the engine reports `duration-invalid` at a `delay` the parser rejects and nothing at one it
//!   accepts as non-negative, `cron-invalid` at `promotionWindow.from` exactly when the cron
//!   parser rejects it, and nothing else on an otherwise valid promotion.

use serde_json::json;

use crate::validation::{parse_cron_standard, parse_go_duration, parse_std_duration, validate};

pub const DELAY_PATH: &str = "spec.stages[0].trigger.auto.delay";
pub const FROM_PATH: &str = "spec.stages[0].trigger.auto.promotionWindow.from";

/// What happened to one input, for the statistics of the bounded run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub duration: bool,
    pub cron: bool,
}

pub fn check(input: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(input);
    let text = text.as_ref();
    let duration = check_duration(text);
    let cron = check_cron(text);
    check_engine(text, duration, cron.is_ok());
    Outcome {
        duration: duration.is_some(),
        cron: cron.is_ok(),
    }
}

/// The nanoseconds of an accepted duration.
fn check_duration(text: &str) -> Option<i128> {
    let parsed = parse_go_duration(text);
    let std = parse_std_duration(text);
    let ns = match parsed {
        Ok(ns) => ns,
        Err(e) => {
            assert!(!e.is_empty(), "empty error for {text:?}");
            if text.trim() == text {
                assert!(std.is_err(), "{text:?}: std accepts what Go rejects");
            }
            return None;
        }
    };
    assert!(
        (i128::from(i64::MIN)..=i128::from(i64::MAX)).contains(&ns),
        "{text:?} = {ns} ns does not fit a time.Duration"
    );
    match text.as_bytes().first() {
        Some(b'-') => assert!(ns <= 0, "{text:?} = {ns}"),
        _ => assert!(ns >= 0, "{text:?} = {ns}"),
    }
    match std {
        Ok(d) => assert_eq!(i128::try_from(d.as_nanos()).ok(), Some(ns), "{text:?}"),
        Err(e) => assert!(ns < 0, "{text:?} = {ns} ns, std refuses it: {e}"),
    }
    round_trip(text, ns);
    Some(ns)
}

fn round_trip(text: &str, ns: i128) {
    let Ok(ns) = i64::try_from(ns) else {
        return;
    };
    let shown = go_text::duration::format(ns);
    assert_eq!(
        parse_go_duration(&shown),
        Ok(i128::from(ns)),
        "{text:?} = {ns} ns, shown as {shown:?}"
    );
}

fn check_cron(text: &str) -> Result<(), String> {
    let verdict = parse_cron_standard(text);
    if let Err(e) = &verdict {
        assert!(!e.is_empty(), "empty error for {text:?}");
    }
    if let Some(d) = text.strip_prefix("@every ") {
        if parse_go_duration(d).is_ok() {
            assert!(verdict.is_ok(), "{text:?}: {verdict:?}");
        }
        if verdict.is_ok() {
            assert!(parse_go_duration(d.trim()).is_ok(), "{text:?}");
        }
    }
    verdict
}

fn check_engine(text: &str, duration: Option<i128>, cron_ok: bool) {
    let promotion = json!({
        "apiVersion": "config.projectsveltos.io/v1beta1",
        "kind": "ClusterPromotion",
        "metadata": {"name": "fuzz"},
        "spec": {
            "stages": [
                {"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}},
                 "trigger": {"auto": {"delay": text,
                                      "promotionWindow": {"from": text, "to": "0 18 * * 1-5"}}}},
                {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}
            ]
        }
    });
    let findings = validate(&promotion);
    let at_delay: Vec<_> = findings.iter().filter(|f| f.path == DELAY_PATH).collect();
    match duration {
        None => assert!(
            at_delay
                .iter()
                .any(|f| f.code == "duration-invalid" && f.is_error()),
            "{text:?}: {findings:?}"
        ),
        Some(ns) if ns >= 0 => assert!(at_delay.is_empty(), "{text:?}: {at_delay:?}"),
        // Negative durations: Go accepts them; whether lint should is a design question
        // (lint-parity.md D1), not an invariant.
        Some(_) => {}
    }
    let from_invalid = findings
        .iter()
        .any(|f| f.path == FROM_PATH && f.code == "cron-invalid");
    assert_eq!(from_invalid, !cron_ok, "{text:?}: {findings:?}");
    let others: Vec<_> = findings
        .iter()
        .filter(|f| f.path != DELAY_PATH && f.path != FROM_PATH)
        .collect();
    assert!(others.is_empty(), "{text:?}: {others:?}");
}
