//! Go `time.ParseDuration` and robfig/cron v1.2.0 `ParseStandard`, ported step by step so that
//! lint gives the verdicts Sveltos gets at runtime (a typo fails at `kubectl apply`, not hours
//! later). The messages are ours (with hints); the verdicts are Go's, checked against Go's and
//! robfig/cron's own test tables and the cases of `lint-parity.md` (`shared/tests/schedule_parity.rs`).

use go_text::duration::parse_go_duration;
use serde_json::Value;

use super::{FieldPath, Finding};

/// A non-negative Go duration as a [`std::time::Duration`], for command-line flags.
pub fn parse_std_duration(s: &str) -> Result<std::time::Duration, String> {
    let ns = parse_go_duration(s.trim())?;
    let ns = u64::try_from(ns).map_err(|_| format!("duration {s:?} must not be negative"))?;
    Ok(std::time::Duration::from_nanos(ns))
}

/// robfig/cron v1.2.0 `ParseStandard`: five fields, or a descriptor ([`crate::cron`] parses it).
pub fn parse_cron_standard(spec: &str) -> Result<(), String> {
    crate::cron::Schedule::parse(spec).map(|_| ())
}

/// Lint's code for a `promotionWindow` on the last stage ([`last_stage_window`]).
pub const LAST_STAGE_WINDOW: &str = "trigger-last-stage-window";

/// How the stage before the last one lets the pipeline move on: where a window that is meant to
/// hold back the last stage's deployment has to go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreviousGate<'a> {
    /// The last stage is the only one: it starts when the rollout does.
    None,
    /// The stage before, `name`, with an `auto` trigger or none (which promotes at once).
    Auto(&'a str),
    /// The stage before, `name`, with a `manual` trigger (which has no window).
    Manual(&'a str),
}

/// What a `promotionWindow` on the last stage `stage` does, and what to do instead: lint's info
/// and `plan`'s hazard say the same words. A window is evaluated only when the pipeline leaves
/// its stage (the last step of the auto trigger), and leaving the last stage is completing
/// (docs/reference/promotion-controller.md §12.1, §12.4, §14.1): the stage's clusters get the
/// change when the stage before it lets the pipeline move on, whatever this window says.
/// `previous_index` is that stage's index in `spec.stages`.
pub fn last_stage_window_note(
    stage: &str,
    from: &str,
    to: &str,
    previous: PreviousGate<'_>,
    previous_index: usize,
) -> String {
    let starts = match previous {
        PreviousGate::None => "when the rollout starts".to_string(),
        PreviousGate::Auto(before) | PreviousGate::Manual(before) => {
            format!("as soon as stage {before} lets the pipeline move on")
        }
    };
    let fix = match previous {
        PreviousGate::None => format!(
            "no window can hold back the only stage: it is deployed when the promotion is \
             applied; to deploy {stage} only inside the window, apply the promotion inside it"
        ),
        PreviousGate::Auto(before) => format!(
            "to deploy {stage} only inside the window, move it to stage {before}'s trigger \
             (spec.stages[{previous_index}].trigger.auto.promotionWindow)"
        ),
        PreviousGate::Manual(before) => format!(
            "to deploy {stage} only inside the window, approve stage {before} inside it (a \
             manual trigger has no window), or make it auto with this window \
             (spec.stages[{previous_index}].trigger.auto.promotionWindow)"
        ),
    };
    format!(
        "the window (from {from:?} to {to:?}) is on the last stage, {stage}: a window holds back \
         leaving its stage, and leaving the last stage is completing, so it does not hold back \
         {stage}'s deployment — its clusters get the change {starts}, inside the window or not — \
         and only delays marking the promotion complete until the window opens; {fix}"
    )
}

/// The info finding for a `promotionWindow` on the last stage of `object` (a ClusterPromotion
/// as JSON), if it has one. The window is valid as written and gates something (completion),
/// so this is an info for `lint`, not a warning: it never fails a run.
pub fn last_stage_window(object: &Value) -> Option<Finding> {
    let stages = object.pointer("/spec/stages")?.as_array()?;
    let last = stages.len().checked_sub(1)?;
    let window = stages[last].pointer("/trigger/auto/promotionWindow")?;
    let text = |key: &str| {
        window
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let name = |i: usize| stages[i].get("name").and_then(Value::as_str).unwrap_or("?");
    let previous = match last.checked_sub(1) {
        None => PreviousGate::None,
        Some(i) if stages[i].pointer("/trigger/manual").is_some() => PreviousGate::Manual(name(i)),
        Some(i) => PreviousGate::Auto(name(i)),
    };
    let path = FieldPath::root("spec")
        .key("stages")
        .index(last)
        .key("trigger")
        .key("auto")
        .key("promotionWindow");
    Some(Finding::info(
        LAST_STAGE_WINDOW,
        &path,
        last_stage_window_note(
            name(last),
            &text("from"),
            &text("to"),
            previous,
            last.saturating_sub(1),
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn promotion(stages: Value) -> Value {
        serde_json::json!({
            "apiVersion": "config.projectsveltos.io/v1beta1",
            "kind": "ClusterPromotion",
            "metadata": {"name": "web"},
            "spec": {"profileSpec": {}, "stages": stages}
        })
    }

    fn window() -> Value {
        serde_json::json!({"from": "0 9 * * 1", "to": "0 17 * * 5"})
    }

    #[test]
    fn a_window_on_the_last_stage_is_an_info_naming_where_it_belongs() {
        let p = promotion(serde_json::json!([
            {"name": "staging", "trigger": {"auto": {"delay": "1h"}}},
            {"name": "prod", "trigger": {"auto": {"promotionWindow": window()}}}
        ]));
        let f = last_stage_window(&p).expect("an info");
        assert_eq!(f.severity, super::super::Severity::Info);
        assert_eq!(f.code, LAST_STAGE_WINDOW);
        assert_eq!(f.path, "spec.stages[1].trigger.auto.promotionWindow");
        for part in [
            "from \"0 9 * * 1\" to \"0 17 * * 5\"",
            "does not hold back prod's deployment",
            "as soon as stage staging lets the pipeline move on",
            "only delays marking the promotion complete until the window opens",
            "spec.stages[0].trigger.auto.promotionWindow",
        ] {
            assert!(f.message.contains(part), "{part}: {}", f.message);
        }
        // lint says it; the webhook's rules (validate) do not, so no admission warning repeats it.
        let crd = crd_schema::Crd::embedded();
        assert!(super::super::lint(crd, &p).contains(&f));
        assert!(super::super::validate(&p)
            .iter()
            .all(|f| f.code != LAST_STAGE_WINDOW));
    }

    #[test]
    fn a_window_before_the_last_stage_is_what_gates_it() {
        let p = promotion(serde_json::json!([
            {"name": "staging", "trigger": {"auto": {"promotionWindow": window()}}},
            {"name": "prod"}
        ]));
        assert_eq!(last_stage_window(&p), None);
    }

    #[test]
    fn the_fix_depends_on_the_stage_before() {
        let after_manual = promotion(serde_json::json!([
            {"name": "staging", "trigger": {"manual": {}}},
            {"name": "prod", "trigger": {"auto": {"promotionWindow": window()}}}
        ]));
        let f = last_stage_window(&after_manual).expect("an info");
        assert!(
            f.message
                .contains("approve stage staging inside it (a manual trigger has no window)"),
            "{}",
            f.message
        );
        let alone = promotion(serde_json::json!([
            {"name": "prod", "trigger": {"auto": {"promotionWindow": window()}}}
        ]));
        let f = last_stage_window(&alone).expect("an info");
        assert_eq!(f.path, "spec.stages[0].trigger.auto.promotionWindow");
        assert!(
            f.message
                .contains("its clusters get the change when the rollout starts")
                && f.message.contains("no window can hold back the only stage"),
            "{}",
            f.message
        );
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("5m"), Ok(300_000_000_000));
        assert_eq!(parse_go_duration("1h30m"), Ok(5_400_000_000_000));
        assert_eq!(parse_go_duration("1.5h"), Ok(5_400_000_000_000));
        assert_eq!(parse_go_duration("0"), Ok(0));
        assert_eq!(parse_go_duration("-2s"), Ok(-2_000_000_000));
        assert_eq!(parse_go_duration(".5s"), Ok(500_000_000));
        assert!(parse_go_duration("300µs").is_ok());
        assert_eq!(parse_go_duration("1.h"), Ok(3_600_000_000_000));
        for bad in [
            "",
            "1d",
            "5",
            "m",
            ".s",
            "1h 2m",
            "5 m",
            "10x",
            "-",
            "9999999999999h",
        ] {
            assert!(parse_go_duration(bad).is_err(), "{bad} should be rejected");
        }
        assert!(parse_go_duration("1d").unwrap_err().contains("24h"));
    }

    #[test]
    fn cron_standard() {
        for ok in [
            "0 9 * * 1-5",
            "*/15 * * * *",
            "0 17 * * mon-fri",
            "0 0 1 jan,jul *",
            "5 4 * * sun",
            "0 9-17/2 * * *",
            "? * * * ?",
            "@daily",
            "@every 1h30m",
            ", * * * *",
            "1,,2 * * * *",
            "*/4294967296 * * * *",
            "+5 * * * *",
        ] {
            assert!(
                parse_cron_standard(ok).is_ok(),
                "{ok}: {:?}",
                parse_cron_standard(ok)
            );
        }
        for bad in [
            "",
            "61 * * * *",
            "0 24 * * *",
            "0 0 0 * *",
            "0 0 * 13 *",
            "0 0 * * 7",
            "* * * *",
            "0 0 * * * *",
            "5-1 * * * *",
            "*/0 * * * *",
            "1-2-3 * * * *",
            "@fortnightly",
            "@every 1d",
            "@every  5m",
            "@every 5m ",
            "x * * * *",
        ] {
            assert!(
                parse_cron_standard(bad).is_err(),
                "{bad} should be rejected"
            );
        }
    }
}
